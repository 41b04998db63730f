"""``kproto serve --kafka-version 4.0 .. 4.4``: each 4.x release's API table and features.

The tables (kproto/server/kafka_versions.py) come from each release's jars; the facts
asserted here were measured on Kafka 4.0.2, 4.1.2, 4.2.2, 4.3.1 and 4.4.0's brokers
(ApiVersions v3 and v4 of a freshly formatted KRaft node); tests/parity/
test_kafka_parity_versions.py diffs 4.0's against the broker itself.
"""

from __future__ import annotations

import socket

import pytest

import kproto.testing
from kproto.schemas import protocol as P
from kproto.server.emulation import advertised, release
from kproto.server.kafka_versions import FRESH_FEATURES, RELEASES, SUPPORTED_FEATURES
from kproto import protocol
from kproto.framing import frame
from tests.helpers import request_raw

PRODUCE, FETCH, API_VERSIONS, CONSUMER_GROUP_HEARTBEAT, DESCRIBE_TOPIC_PARTITIONS = 0, 1, 18, 68, 75
SHARE_GROUP_HEARTBEAT, STREAMS_GROUP_HEARTBEAT, TELEMETRY = 76, 88, (71, 72)


def test_kafka_4_releases_have_tables():
    for name in ("4.0", "4.1", "4.2", "4.3", "4.4"):
        assert release(name) == name and release(name + ".1") == name
    r = RELEASES
    # Produce from v0 in every 4.x (KAFKA-18659, measured from 4.0.2 on); Fetch from v4 (KIP-896)
    assert [r[v][PRODUCE] for v in ("4.0", "4.1", "4.4")] == [(0, 12), (0, 13), (0, 13)]
    assert [r[v][FETCH] for v in ("4.0", "4.1", "4.4")] == [(4, 17), (4, 18), (4, 18)]
    assert r["4.0"][2] == (1, 10) and r["4.2"][2] == (1, 11)                 # ListOffsets
    assert r["4.3"][API_VERSIONS] == (0, 4) and r["4.4"][API_VERSIONS] == (0, 5)
    # KIP-848 consumer groups served by default from 4.0 (GA), never before
    assert all(CONSUMER_GROUP_HEARTBEAT in r[v] for v in ("4.0", "4.1", "4.2", "4.3", "4.4"))
    assert CONSUMER_GROUP_HEARTBEAT not in r["3.9"]
    # share groups (KIP-932): unstable in 4.0, advertised by a default 4.1 broker on
    assert SHARE_GROUP_HEARTBEAT not in r["4.0"] and r["4.1"][SHARE_GROUP_HEARTBEAT] == (1, 1)
    # streams groups (KIP-1071): from 4.2
    assert STREAMS_GROUP_HEARTBEAT not in r["4.1"] and r["4.2"][STREAMS_GROUP_HEARTBEAT] == (0, 0)
    assert r["4.4"][STREAMS_GROUP_HEARTBEAT] == (0, 1)
    # telemetry (3.7 on): only with a ClientTelemetry metrics reporter, so never by default
    assert not any(k in r[v] for v in ("3.7", "3.8", "3.9", "4.0", "4.1", "4.2", "4.3", "4.4") for k in TELEMETRY)


def test_kafka_4_features_per_release():
    s, f = SUPPORTED_FEATURES, FRESH_FEATURES
    assert s["4.0"] == {"eligible.leader.replicas.version": (0, 1), "group.version": (0, 1),
                        "kraft.version": (0, 1), "metadata.version": (7, 25), "transaction.version": (0, 2)}
    assert f["4.0"] == {"group.version": 1, "metadata.version": 25, "transaction.version": 2}
    assert "share.version" not in s["4.0"] and s["4.1"]["share.version"] == (0, 1) and s["4.4"]["share.version"] == (0, 2)
    assert "streams.version" not in s["4.1"] and s["4.2"]["streams.version"] == (0, 1)
    assert [f[v]["metadata.version"] for v in ("4.0", "4.1", "4.2", "4.3", "4.4")] == [25, 27, 29, 30, 33]
    assert "share.version" not in f["4.1"] and f["4.2"]["share.version"] == 1 and f["4.4"]["share.version"] == 2
    assert set(s) == set(f) == {"4.0", "4.1", "4.2", "4.3", "4.4"}      # 3.x: features.KRAFT_3X_FEATURES


def features(bootstrap: str, version: int) -> tuple:
    r = request_raw(bootstrap, API_VERSIONS, version, {"client_software_name": "t", "client_software_version": "1"})
    return ({x.api_key: (x.min_version, x.max_version) for x in r.api_keys},
            {x.name: (x.min_version, x.max_version) for x in r.supported_features},
            r.finalized_features_epoch,
            {x.name: (x.min_version_level, x.max_version_level) for x in r.finalized_features})


@pytest.mark.parametrize("version, supported, finalized", [
    # Kafka 4.0.2's broker, v4, as measured (4.1.2 and 4.3.1 likewise)
    ("4.0", {"eligible.leader.replicas.version": (0, 1), "group.version": (0, 1), "kraft.version": (0, 1),
             "metadata.version": (7, 25), "transaction.version": (0, 2)},
     {"group.version": (1, 1), "metadata.version": (25, 25), "transaction.version": (2, 2)}),
    ("4.1", {"eligible.leader.replicas.version": (0, 1), "group.version": (0, 1), "kraft.version": (0, 1),
             "metadata.version": (7, 27), "share.version": (0, 1), "transaction.version": (0, 2)},
     {"eligible.leader.replicas.version": (1, 1), "group.version": (1, 1), "metadata.version": (27, 27),
      "transaction.version": (2, 2)}),
    ("4.3", {"eligible.leader.replicas.version": (0, 1), "group.version": (0, 1), "kraft.version": (0, 1),
             "metadata.version": (7, 30), "share.version": (0, 1), "streams.version": (0, 1),
             "transaction.version": (0, 2)},
     {"eligible.leader.replicas.version": (1, 1), "group.version": (1, 1), "metadata.version": (30, 30),
      "share.version": (1, 1), "streams.version": (1, 1), "transaction.version": (2, 2)}),
])
def test_emulated_4_x_advertises_that_releases_features(tmp_path, version, supported, finalized):
    """A fresh data directory under --kafka-version 4.x finalizes what a freshly formatted 4.x
    cluster did; ApiVersions v4 lists that release's SupportedFeatures, v3 only those whose
    oldest level is above 0 (KIP-1022, as Kafka 4.0.2 .. 4.3.1 answer v3)."""
    with kproto.testing.broker(data_dir=tmp_path / "data", in_process=True, kafka_version=version) as b:
        apis, got_supported, epoch, got_finalized = features(b.bootstrap_servers, 4)
        assert (got_supported, got_finalized) == (supported, finalized)
        assert apis == advertised(version, P.served_versions())
        _, v3_supported, v3_epoch, v3_finalized = features(b.bootstrap_servers, 3)
        assert v3_supported == {"metadata.version": supported["metadata.version"]}
        assert (v3_epoch, v3_finalized) == (epoch, finalized)


def test_emulated_releases_before_3_3_write_no_features(tmp_path):
    """2.8's broker had no features to list (KIP-584's fields were new in 2.7, metadata.version
    came in 3.3): the tagged fields are absent, so a client decodes the defaults."""
    with kproto.testing.broker(data_dir=tmp_path / "data", in_process=True, kafka_version="2.8") as b:
        apis, supported, epoch, finalized = features(b.bootstrap_servers, 3)
    assert (supported, epoch, finalized) == ({}, -1, {})
    assert apis[PRODUCE] == (0, 9) and CONSUMER_GROUP_HEARTBEAT not in apis


@pytest.mark.parametrize("version, v3, v4, finalized", [
    # measured on Kafka 3.3.2 and 3.9.1 (KRaft): metadata.version (1, 7) and (1, 21); 3.9's v4 adds
    # kraft.version 0-1; kproto's metadata.version starts at 7
    ("3.3", {"metadata.version": (7, 7)}, {"metadata.version": (7, 7)}, {"metadata.version": (7, 7)}),
    ("3.9", {"metadata.version": (7, 21)}, {"metadata.version": (7, 21), "kraft.version": (0, 1)},
     {"metadata.version": (21, 21)}),
])
def test_emulated_3_x_lists_metadata_version(tmp_path, version, v3, v4, finalized):
    with kproto.testing.broker(data_dir=tmp_path / "data", in_process=True, kafka_version=version) as b:
        _, got_v3, _, got_finalized = features(b.bootstrap_servers, 3)
        got_v4 = features(b.bootstrap_servers, 4)[1] if version == "3.9" else got_v3   # ApiVersions v4 from 3.9
    assert (got_v3, got_v4, got_finalized) == (v3, v4, finalized)


def test_default_v3_leaves_out_features_from_level_0(tmp_path):
    """Without emulation as Kafka 4.4: at v3 only metadata.version (the others start at 0)."""
    with kproto.testing.broker(data_dir=tmp_path / "data", in_process=True) as b:
        _, v3, _, finalized = features(b.bootstrap_servers, 3)
        _, v4, _, _ = features(b.bootstrap_servers, 4)
    assert v3 == {"metadata.version": (7, 33)} and v4["share.version"] == (0, 2)
    assert finalized["share.version"] == (2, 2)


def closed_on(bootstrap: str, api_key: int, version: int, body: dict) -> bool:
    """Send one request; True when the broker closes the connection without an answer."""
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(frame(protocol.encode_request(api_key, version, 7, "t", body)))
        return s.recv(4) == b""


SHARE_HEARTBEAT = {"group_id": "g", "member_id": "m" * 22, "member_epoch": 0, "rack_id": None,
                   "subscribed_topic_names": ["t"]}
CONSUMER_HEARTBEAT = {"group_id": "g", "member_id": "m" * 22, "member_epoch": 0, "instance_id": None,
                      "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"],
                      "server_assignor": None, "topic_partitions": []}


def test_unadvertised_group_apis_close_the_connection(tmp_path):
    """A ShareGroupHeartbeat to an emulated 4.0 (share groups unstable there) and a
    ConsumerGroupHeartbeat to an emulated 3.9 are APIs that release's broker did not
    advertise: the connection closes, as Kafka's does for an API it does not serve;
    4.1 advertises and answers ShareGroupHeartbeat."""
    with kproto.testing.broker(data_dir=tmp_path / "d40", in_process=True, kafka_version="4.0") as b:
        assert SHARE_GROUP_HEARTBEAT not in features(b.bootstrap_servers, 4)[0]
        assert closed_on(b.bootstrap_servers, SHARE_GROUP_HEARTBEAT, 1, SHARE_HEARTBEAT)
        assert not closed_on(b.bootstrap_servers, CONSUMER_GROUP_HEARTBEAT, 0, CONSUMER_HEARTBEAT)
    with kproto.testing.broker(data_dir=tmp_path / "d39", in_process=True, kafka_version="3.9") as b:
        assert closed_on(b.bootstrap_servers, CONSUMER_GROUP_HEARTBEAT, 0, CONSUMER_HEARTBEAT)
    with kproto.testing.broker(data_dir=tmp_path / "d41", in_process=True, kafka_version="4.1") as b:
        assert features(b.bootstrap_servers, 4)[0][SHARE_GROUP_HEARTBEAT] == (1, 1)
        assert not closed_on(b.bootstrap_servers, SHARE_GROUP_HEARTBEAT, 1, SHARE_HEARTBEAT)


def test_emulated_4_0_refuses_features_4_0_did_not_support(tmp_path):
    """UpdateFeatures checks against what the emulated release supports: 4.0 had no
    share.version and metadata.version up to 25 (4.0-IV3)."""
    def update(bootstrap: str, feature: str, level: int):
        r = request_raw(bootstrap, 57, 1, {"timeout_ms": 30000, "validate_only": True, "feature_updates": [
            {"feature": feature, "max_version_level": level, "upgrade_type": 1}]})
        return r.error_code, r.error_message

    with kproto.testing.broker(data_dir=tmp_path / "data", in_process=True, kafka_version="4.0") as b:
        share, mv, group = (update(b.bootstrap_servers, "share.version", 1),
                            update(b.bootstrap_servers, "metadata.version", 26),
                            update(b.bootstrap_servers, "group.version", 1))
    assert share[0] == mv[0] == 95      # INVALID_UPDATE_VERSION
    assert share[1].endswith("Invalid update version 1 for feature share.version. Local controller 1 does not "
                             "support this feature."), share
    assert mv[1].endswith("Invalid update version 26 for feature metadata.version. Local controller 1 only "
                          "supports versions 7-25"), mv
    assert group == (0, None)
