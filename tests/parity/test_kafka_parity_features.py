"""Finalized features and UpdateFeatures (kproto.features, kproto.server.handlers.features)
against Apache Kafka 4.4's broker and its FeatureCommand (kafka-features.sh).

A Kafka broker of this module's own (the session's shared one must keep its features)
and a kproto broker, each freshly formatted. ApiVersions' feature fields and DescribeQuorum
are compared through kproto's codecs; then the same FeatureCommand lines run through Kafka's
tool and ``kproto features`` against both brokers, step by step (each step changes what the
next one sees), and their output must be equal with the epoch masked: Kafka's epoch is its
metadata log's offset, kproto's counts the updates (kproto.features).

Both finalize transaction.version 2 when fresh (KIP-890 part 2, kproto.server.txn_coordinator).
"""

from __future__ import annotations

import re

import pytest

from tests.components import kproto_broker
from tests.helpers import request_raw, until
from tests.kafka_ref import KafkaUnavailable, unavailable
from tests.tools.helpers import run_command

FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"

# The steps, in order: describe, refused changes, a downgrade and its undo, release versions.
STEPS = [
    ["describe"],
    ["upgrade", "--feature", "group.version=3"],
    ["upgrade", "--feature", "group.version=0"],
    ["upgrade", "--feature", "nope.version=1"],
    ["upgrade", "--feature", "transaction.version=-1"],
    ["disable", "--feature", "nope.version"],
    ["disable", "--feature", "metadata.version"],
    ["downgrade", "--feature", "transaction.version=0", "--dry-run"],
    ["downgrade", "--feature", "transaction.version=0"],
    ["describe"],
    ["upgrade", "--feature", "transaction.version=1", "--feature", "group.version=1"],
    ["downgrade", "--feature", "group.version=0"],
    ["downgrade", "--feature", "share.version=0", "--unsafe"],
    ["downgrade", "--metadata", "3.9"],
    ["downgrade", "--metadata", "3.9", "--unsafe"],
    ["upgrade", "--metadata", "4.4"],
    ["upgrade", "--metadata", "9.9"],
    ["downgrade", "--release-version", "3.9"],
    ["downgrade", "--feature", "kraft.version=0", "--dry-run"],
    ["upgrade", "--release-version", "3.3-IV3"],
    ["downgrade", "--release-version", "4.0"],
    ["disable", "--feature", "share.version", "--dry-run"],
    ["disable", "--feature", "share.version"],
    ["upgrade"],
    ["upgrade", "--feature", "a=1", "--feature", "a=2"],
    ["upgrade", "--feature", "a"],
    ["upgrade", "--feature", "a=x"],
    ["upgrade", "--release-version", "4.4", "--feature", "a=1"],
    ["describe"],
    ["version-mapping"],
    ["version-mapping", "--release-version", "4.0"],
    ["version-mapping", "--release-version", "3.9"],
]
EPOCH = re.compile(r"Epoch: \d+")


@pytest.fixture(scope="module")
def brokers(kafka_ref, tmp_path_factory):
    """(Kafka's bootstrap, kproto's bootstrap), both fresh."""
    try:
        with kafka_ref.broker(tmp_path_factory.mktemp("kafka-features")) as kafka, \
                kproto_broker(tmp_path_factory.mktemp("kproto-features")) as kproto:
            yield kafka.bootstrap, kproto
    except KafkaUnavailable as e:
        unavailable(e)


def kafka_tool(kafka_ref, bootstrap: str, args: list[str]) -> tuple[int, str, str]:
    """Kafka's tool, its epoch masked."""
    r = kafka_ref.run_tool(FEATURE_COMMAND, "--bootstrap-server", bootstrap, *args)
    err = "".join(line + "\n" for line in r.stderr.splitlines() if not re.match(r"\[\d{4}-", line))
    return r.returncode, EPOCH.sub("Epoch: <n>", r.stdout), err


def kproto_tool(bootstrap: str, args: list[str]) -> tuple[int, str, str]:
    code, out, err = run_command("features", bootstrap, *args)
    return code, EPOCH.sub("Epoch: <n>", out), err


def features(bootstrap: str) -> tuple:
    """ApiVersions' (supported, finalized)."""
    r = request_raw(bootstrap, 18, 4, {"client_software_name": "t", "client_software_version": "1"})
    supported = {f.name: (f.min_version, f.max_version) for f in r.supported_features}
    return supported, {f.name: (f.min_version_level, f.max_version_level) for f in r.finalized_features}


def test_api_versions_features_as_kafka(brokers):
    """A fresh cluster: the same supported ranges and finalized levels (kraft.version 0 is not listed)."""
    kafka, kproto = brokers
    assert features(kproto) == features(kafka)
    supported, finalized = features(kproto)
    assert supported["metadata.version"] == (7, 33) and supported["share.version"] == (0, 2)
    assert finalized["transaction.version"] == (2, 2) and "kraft.version" not in finalized
    assert supported["transaction.version"] == (0, 2)


def test_update_features_raw_as_kafka(brokers):
    """UpdateFeatures v0-2 answers, error codes and texts (validate_only: nothing changes)."""
    def answers(bootstrap: str) -> list:
        out = []
        for version, updates in [
                (2, [("transaction.version", 1, 4)]), (2, [("transaction.version", 1, 0)]),
                (2, [("metadata.version", 0, 3)]), (2, [("metadata.version", 7, 2)]),
                (2, [("x", 0, 2)]), (2, [("x", 1, 1)]), (2, [("transaction.version", 1, 2)]),
                (1, [("transaction.version", 2, 1), ("group.version", 1, 1)]),
                (1, [("group.version", 3, 1)]), (0, [("transaction.version", 0, 2)]),
                (2, [])]:
            body = {"timeout_ms": 30000, "validate_only": True, "feature_updates": [
                {"feature": n, "max_version_level": lv, "upgrade_type": t, "allow_downgrade": t != 1}
                for n, lv, t in updates]}
            r = request_raw(bootstrap, 57, version, body)
            out.append((version, r.error_code, r.error_message,
                        [(x.feature, x.error_code, x.error_message) for x in r.get("results") or []]))
        return out
    kafka, kproto = brokers
    got = answers(kproto)
    assert got == answers(kafka)
    assert got[0][1:3] == (95, "The update failed for all features since the following feature had an error: "
                               "Invalid update version 1 for feature transaction.version. The controller does "
                               "not support the given upgrade type.")
    assert got[7] == (1, 0, None, [("transaction.version", 0, "NONE"), ("group.version", 0, "NONE")])
    assert got[8][2].endswith("Invalid update version 3 for feature group.version. Local controller 1 only "
                              "supports versions 0-1")


def test_describe_quorum_as_kafka(brokers):
    """One voter, the leader, in epoch 1; another partition is not hosted. Offsets and times differ."""
    def quorum(bootstrap: str, topic: str = "__cluster_metadata", version: int = 2):
        r = request_raw(bootstrap, 55, version, {"topics": [{"topic_name": topic,
                                                             "partitions": [{"partition_index": 0}]}]})
        p = r.topics[0].partitions[0]
        voters = [(v.replica_id, v.replica_directory_id, v.log_end_offset == p.high_watermark)
                  for v in p.current_voters]
        return (r.error_code, r.error_message, p.error_code, p.error_message, p.leader_id, p.leader_epoch,
                voters, list(p.observers), [n.node_id for n in r.nodes])
    kafka, kproto = brokers
    for version in (0, 1, 2):
        assert quorum(kproto, version=version) == quorum(kafka, version=version)
    assert quorum(kproto, "foo") == quorum(kafka, "foo")
    assert quorum(kproto, "foo")[2:4] == (3, "This server does not host this topic-partition.")


def test_feature_command_as_kafka(kafka_ref, brokers):
    """Every step of STEPS prints the same through both tools, on each tool's broker."""
    kafka, kproto = brokers

    def applied() -> None:
        # Kafka's broker describes the finalized levels of its metadata image, which follows the
        # controller's commit of UpdateFeatures (kproto's answers after applying): wait for them
        until(lambda: features(kafka) == features(kproto), what="Kafka's broker at the committed feature levels")
    for args in STEPS:
        if args[0] == "describe":
            applied()
        k = kafka_tool(kafka_ref, kafka, args)
        p = kproto_tool(kproto, args)
        assert p == k, (args, k, p)
    applied()
    assert features(kproto) == features(kafka)


def test_features_survive_a_restart(tmp_path):
    """features.json keeps the finalized levels and their epoch."""
    with kproto_broker(tmp_path) as bs:
        assert run_command("features", bs, "downgrade", "--feature", "transaction.version=1")[0] == 0
        before = request_raw(bs, 18, 4, {"client_software_name": "t", "client_software_version": "1"})
    with kproto_broker(tmp_path, data_dir=tmp_path / "kproto-data") as bs:
        after = request_raw(bs, 18, 4, {"client_software_name": "t", "client_software_version": "1"})
    assert after.finalized_features_epoch == before.finalized_features_epoch == 2
    assert {f.name: f.max_version_level for f in after.finalized_features}["transaction.version"] == 1


QUORUM_COMMAND = "org.apache.kafka.tools.MetadataQuorumCommand"
# What must differ between the brokers and between the runs: the cluster id, the listener the
# voter is reached on (Kafka's CONTROLLER listener, kproto's client one), the offsets (Kafka's
# metadata log, kproto's features epoch), the timestamps and their "ms ago".
QUORUM_MASKS = [
    (re.compile(r"(ClusterId: +)\S+"), r"\1<id>"),
    (re.compile(r'"\w+://127\.0\.0\.1:\d+"'), '"<endpoint>"'),
    (re.compile(r"(HighWatermark: +)\d+"), r"\1<offset>"),
    (re.compile(r"^(1 +\t\S+ *\t)\d+ *\t", re.M), r"\1<offset>\t"),
    (re.compile(r"\b1[6-9]\d{11}\b"), "<ms>            "),
    (re.compile(r"\b\d+ (ms|s|m|h) ago *\t"), "<ago>\t"),
]


def quorum_masked(result: tuple[int, str, str]) -> tuple[int, str, str]:
    code, out, err = result
    for pattern, repl in QUORUM_MASKS:
        out = pattern.sub(repl, out)
    return code, out, err


@pytest.mark.parametrize("args", [["--status"], ["--replication"], ["--replication", "--human-readable"], [],
                                  ["--status", "--replication"], ["--status", "--human-readable"]])
def test_metadata_quorum_command_as_kafka(kafka_ref, brokers, args):
    """kafka-metadata-quorum.sh describe, both tools on both brokers, masked alike."""
    outputs = []
    for bootstrap in brokers:
        r = kafka_ref.run_tool(QUORUM_COMMAND, "--bootstrap-server", bootstrap, "describe", *args)
        err = "".join(line + "\n" for line in r.stderr.splitlines() if not re.match(r"\[\d{4}-", line))
        outputs.append(quorum_masked((r.returncode, r.stdout, err)))
        outputs.append(quorum_masked(run_command("metadata-quorum", bootstrap, "describe", *args)))
    assert outputs[1:] == outputs[:1] * 3, outputs
    if args == ["--status"]:
        assert "LeaderId:               1\nLeaderEpoch:            1\n" in outputs[0][1]
