"""The protocol registry: ranges, header rules, exact bytes, errors, KIP-511, tags."""

from __future__ import annotations

import importlib
import pkgutil
import uuid

import pytest

from kproto import framing
from kproto.errors import (
    CorruptRecordError, DecodeError, InvalidRequestError, UnsupportedVersionError,
)
from kproto import protocol as P
from kproto.schemas import build
from kproto.schemas import protocol as schema_protocol
from kproto.schemas.protocol import header as H
from kproto.schemas.message import ArrayOf, Field, MalformedMessageError, Struct

# Every API key and version Kafka has defined: (min, max, first flexible).
# Old versions from apache/kafka trunk of 2024-10 (before KIP-896 dropped them),
# new ones from Kafka 4.4.0's kafka-clients jar, kafka-python 3.0.12 and kio 0.6.5.
RANGES = {
    0: ("Produce", 0, 13, 9), 1: ("Fetch", 0, 18, 12), 2: ("ListOffsets", 0, 11, 6),
    3: ("Metadata", 0, 13, 9), 4: ("LeaderAndIsr", 0, 7, 4), 5: ("StopReplica", 0, 4, 2),
    6: ("UpdateMetadata", 0, 8, 6), 7: ("ControlledShutdown", 0, 3, 3),
    8: ("OffsetCommit", 0, 10, 8), 9: ("OffsetFetch", 0, 10, 6), 10: ("FindCoordinator", 0, 6, 3),
    11: ("JoinGroup", 0, 9, 6), 12: ("Heartbeat", 0, 4, 4), 13: ("LeaveGroup", 0, 5, 4),
    14: ("SyncGroup", 0, 5, 4), 15: ("DescribeGroups", 0, 6, 5), 16: ("ListGroups", 0, 5, 3),
    17: ("SaslHandshake", 0, 1, None), 18: ("ApiVersions", 0, 5, 3), 19: ("CreateTopics", 0, 7, 5),
    20: ("DeleteTopics", 0, 6, 4), 21: ("DeleteRecords", 0, 2, 2), 22: ("InitProducerId", 0, 6, 2),
    23: ("OffsetForLeaderEpoch", 0, 4, 4), 24: ("AddPartitionsToTxn", 0, 5, 3),
    25: ("AddOffsetsToTxn", 0, 4, 3), 26: ("EndTxn", 0, 5, 3), 27: ("WriteTxnMarkers", 0, 2, 1),
    28: ("TxnOffsetCommit", 0, 6, 3), 29: ("DescribeAcls", 0, 3, 2), 30: ("CreateAcls", 0, 3, 2),
    31: ("DeleteAcls", 0, 3, 2), 32: ("DescribeConfigs", 0, 4, 4), 33: ("AlterConfigs", 0, 2, 2),
    34: ("AlterReplicaLogDirs", 0, 2, 2), 35: ("DescribeLogDirs", 0, 5, 2),
    36: ("SaslAuthenticate", 0, 2, 2), 37: ("CreatePartitions", 0, 3, 2),
    38: ("CreateDelegationToken", 0, 3, 2), 39: ("RenewDelegationToken", 0, 2, 2),
    40: ("ExpireDelegationToken", 0, 2, 2), 41: ("DescribeDelegationToken", 0, 3, 2),
    42: ("DeleteGroups", 0, 3, 2), 43: ("ElectLeaders", 0, 2, 2),
    44: ("IncrementalAlterConfigs", 0, 1, 1), 45: ("AlterPartitionReassignments", 0, 1, 0),
    46: ("ListPartitionReassignments", 0, 0, 0), 47: ("OffsetDelete", 0, 0, None),
    48: ("DescribeClientQuotas", 0, 1, 1), 49: ("AlterClientQuotas", 0, 1, 1),
    50: ("DescribeUserScramCredentials", 0, 0, 0), 51: ("AlterUserScramCredentials", 0, 0, 0),
    52: ("Vote", 0, 2, 0), 53: ("BeginQuorumEpoch", 0, 1, 1), 54: ("EndQuorumEpoch", 0, 1, 1),
    55: ("DescribeQuorum", 0, 2, 0), 56: ("AlterPartition", 0, 3, 0),
    57: ("UpdateFeatures", 0, 2, 0), 58: ("Envelope", 0, 0, 0), 59: ("FetchSnapshot", 0, 1, 0),
    60: ("DescribeCluster", 0, 2, 0), 61: ("DescribeProducers", 0, 0, 0),
    62: ("BrokerRegistration", 0, 4, 0), 63: ("BrokerHeartbeat", 0, 2, 0),
    64: ("UnregisterBroker", 0, 0, 0), 65: ("DescribeTransactions", 0, 0, 0),
    66: ("ListTransactions", 0, 2, 0), 67: ("AllocateProducerIds", 0, 0, 0),
    68: ("ConsumerGroupHeartbeat", 0, 1, 0), 69: ("ConsumerGroupDescribe", 0, 1, 0),
    70: ("ControllerRegistration", 0, 0, 0), 71: ("GetTelemetrySubscriptions", 0, 0, 0),
    72: ("PushTelemetry", 0, 0, 0), 73: ("AssignReplicasToDirs", 0, 0, 0),
    74: ("ListConfigResources", 0, 1, 0), 75: ("DescribeTopicPartitions", 0, 0, 0),
    76: ("ShareGroupHeartbeat", 0, 1, 0), 77: ("ShareGroupDescribe", 0, 1, 0),
    78: ("ShareFetch", 0, 2, 0), 79: ("ShareAcknowledge", 0, 2, 0), 80: ("AddRaftVoter", 0, 1, 0),
    81: ("RemoveRaftVoter", 0, 0, 0), 82: ("UpdateRaftVoter", 0, 0, 0),
    83: ("InitializeShareGroupState", 0, 0, 0), 84: ("ReadShareGroupState", 0, 0, 0),
    85: ("WriteShareGroupState", 0, 1, 0), 86: ("DeleteShareGroupState", 0, 0, 0),
    87: ("ReadShareGroupStateSummary", 0, 1, 0), 88: ("StreamsGroupHeartbeat", 0, 1, 0),
    89: ("StreamsGroupDescribe", 0, 1, 0), 90: ("DescribeShareGroupOffsets", 0, 1, 0),
    91: ("AlterShareGroupOffsets", 0, 0, 0), 92: ("DeleteShareGroupOffsets", 0, 0, 0),
}

# What kproto's broker has answered, per the ledgers: a floor, not a copy. The schema's
# ``served`` is the one statement of the versions its handlers answer; serving more (a new
# API, a higher version) needs no edit here, serving less is a regression this table catches.
# KIP-896: by default the broker advertises what Kafka 4.4 does, from 4.4's oldest version
# (test_default_advertises_kafka_4_4s_ranges); the older versions below stay served, and a
# client reaches them by asking for an older Kafka (--kafka-version, emulation.advertised):
# test_versions_below_kafka_4_4_stay_reachable_by_emulation.
SERVED = {
    0: (0, 10), 1: (0, 12), 2: (0, 8), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6), 11: (0, 7),
    12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 18: (0, 4), 19: (0, 7), 20: (0, 6),
    21: (0, 2), 22: (0, 4), 32: (0, 4), 33: (0, 2), 37: (0, 3), 42: (0, 2), 44: (0, 1), 60: (0, 1),
    17: (0, 1), 36: (0, 2), 29: (0, 3), 30: (0, 3), 31: (0, 3), 50: (0, 0), 51: (0, 0),   # security (h17)
    24: (0, 5), 25: (0, 4), 26: (0, 4), 27: (0, 2), 28: (0, 4), 61: (0, 0), 65: (0, 0), 66: (0, 1),  # transactions
    68: (0, 1), 69: (0, 1),                                                      # KIP-848 consumer groups
    76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),     # share groups (KIP-932), Kafka 4.4's versions
}


def test_ranges():
    got = {k: (s.name, s.min_version, s.max_version, s.flexible_from) for k, s in P.API_KEYS.items()}
    assert got == RANGES
    assert list(P.API_KEYS) == sorted(P.API_KEYS)


def test_the_table_read_from_the_handler_modules_is_what_they_register():
    """handlers.table() reads the modules' ``@handles(P.<api>`` lines without importing them;
    importing every module must register exactly those APIs, each in the module named."""
    import pkgutil
    import sys
    from kproto.server import handlers
    table = handlers.table()
    for m in pkgutil.iter_modules(handlers.__path__):
        __import__(f"{handlers.__name__}.{m.name}")
    assert set(handlers._REGISTERED) == set(table)
    for key, api in table.items():
        assert handlers._REGISTERED[key].handle.__module__ == api.module
        assert api.handle is handlers._REGISTERED[key].handle
        assert api.module in sys.modules


def test_served_ranges_are_what_the_handlers_declare():
    """ApiVersions advertises the schemas' ``served`` (the handlers read it), each range
    within what Kafka defines (RANGES), and none below the floor SERVED, group APIs included."""
    from kproto.server import handlers
    served = P.served_versions()
    assert {k: api.versions for k, api in handlers.table().items()} == served
    assert all(RANGES[k][1] <= lo <= hi <= RANGES[k][2] for k, (lo, hi) in served.items()), served
    below = {k: (lo, hi) for k, (lo, hi) in SERVED.items()
             if k not in served or not served[k][0] <= lo <= hi <= served[k][1]}
    assert not below, below



# Served and advertised by kproto though Kafka 4.4's broker advertises them only with a
# client-telemetry receiver plugin configured (measured): kproto keeps what clients push
# (README, "client telemetry").
BEYOND_44 = {71: "GetTelemetrySubscriptions", 72: "PushTelemetry"}


def test_default_advertises_kafka_4_4s_ranges():
    """Without --kafka-version each API kproto serves is advertised as Kafka 4.4's broker
    advertises it (measured: Produce from v0, KAFKA-18659; Fetch from v4, ...), the
    versions KIP-896 removed left out; a newer version of kproto's own is kept."""
    from kproto.server.emulation import current
    from kproto.server.kafka_versions import RELEASES
    kafka = RELEASES["4.4"]
    ours = current(P.served_versions())
    assert set(ours) == set(P.served_versions()) and set(ours) - set(kafka) == BEYOND_44.keys()
    short = {k: (ours[k], kafka[k]) for k in ours if k in kafka and ours[k] != kafka[k]}
    assert short == {}, "kproto advertises another range than Kafka 4.4 for these"
    assert ours[1] == (4, 18) and ours[2] == (1, 11) and ours[8] == (2, 10) and ours[0] == (0, 13)


def test_versions_below_kafka_4_4_stay_reachable_by_emulation():
    """Each version the broker answered before KIP-896 (SERVED) is still advertised, by
    default or as some older Kafka release (``--kafka-version``), and decodable (RANGES)."""
    from kproto.server.emulation import advertised, current
    from kproto.server.kafka_versions import RELEASES
    served = P.served_versions()
    reach: dict[int, set] = {k: set(range(lo, hi + 1)) for k, (lo, hi) in current(served).items()}
    for release in RELEASES:
        for k, (lo, hi) in advertised(release, served).items():
            reach[k].update(range(lo, hi + 1))
    for k, (lo, hi) in SERVED.items():
        assert set(range(lo, hi + 1)) <= reach[k], (k, sorted(set(range(lo, hi + 1)) - reach[k]))
        assert RANGES[k][1] <= lo
    assert advertised("2.8", served)[1] == (0, 12) and advertised("2.8", served)[0] == (0, 9)
    assert advertised("3.9", served)[2] == (0, 9) and advertised("3.9", served)[8] == (0, 9)

def test_every_module_is_registered_once():
    names = {m.name for m in pkgutil.iter_modules(schema_protocol.__path__)} - {"header"}
    modules = {importlib.import_module(f"kproto.schemas.protocol.{n}") for n in names}
    assert {m.API.key for m in modules} == set(P.API_KEYS)
    # the registry's key -> module table (modules load on first use) names each module under its key
    assert {m.API.key: m.__name__.rsplit(".", 1)[1] for m in modules} == P._MODULE_NAMES, \
        "a new API module goes into _MODULE_NAMES in kproto/schemas/protocol/__init__.py"
    assert all(P.API_KEYS[m.API.key] is m.API for m in modules)
    for m in modules:
        assert m.request == m.API.request and m.response == m.API.response
        snake = "".join("_" + c.lower() if c.isupper() else c for c in m.API.name).lstrip("_")
        assert m.__name__.rsplit(".", 1)[1] == snake


def test_an_api_module_loads_on_first_use():
    """A process that touches one API imports that API's module only; the
    mapping still answers for every key (unknown ones as a dict would), and
    ``protocol.<module>`` reaches any API module, as when all were imported."""
    import subprocess
    import sys
    code = ("import sys; from kproto.schemas import protocol as P; "
            "a = P.API_KEYS[0].name, P.API_KEYS.get(3).name, P.API_KEYS.get(9999), 9999 in P.API_KEYS, "
            "1 in P.API_KEYS, P.describe_acls.API.key; "
            "mods = sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('kproto.schemas.protocol.')); "
            "print(a, mods, len(P.API_KEYS), list(P.API_KEYS)[:3])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ("('Produce', 'Metadata', None, False, True, 29) "
                           f"['describe_acls', 'header', 'metadata', 'produce'] {len(RANGES)} [0, 1, 2]")
    with pytest.raises(KeyError):
        P.API_KEYS[9999]
    with pytest.raises(AttributeError):
        P.no_such_api
    assert dict(P.API_KEYS.items()) == {k: P.api(k) for k in RANGES}


@pytest.mark.parametrize("spec", P.API_KEYS.values(), ids=lambda s: s.name)
def test_module_docstring_carries_ledger_and_current_grammar(spec):
    doc = importlib.import_module(f"kproto.schemas.protocol.{P._MODULE_NAMES[spec.key]}").__doc__
    assert f"v{spec.min_version}-{spec.max_version} supported" in doc or \
        (spec.min_version == spec.max_version and f"v{spec.max_version} supported" in doc)
    assert "not supported:" in doc
    assert spec.grammar_block() in doc, "regenerate: replace the block with spec.grammar_block()"


def _all_fields(struct, seen=None):
    seen = set() if seen is None else seen
    if id(struct) in seen:
        return
    seen.add(id(struct))
    for f in struct.fields:
        yield f
        inner = f.type.elem if isinstance(f.type, ArrayOf) else f.type
        if isinstance(inner, Struct):
            yield from _all_fields(inner, seen)


def test_every_field_is_documented():
    for spec in P.API_KEYS.values():
        for f in [*_all_fields(spec.request_schema), *_all_fields(spec.response_schema)]:
            assert f.doc, f"{spec.name}: {f.name} has no doc"


# --- headers ---------------------------------------------------------------------

@pytest.mark.parametrize("spec", P.API_KEYS.values(), ids=lambda s: s.name)
def test_header_versions(spec):
    for v in range(spec.min_version, spec.max_version + 3):  # past max too (KIP-511)
        flexible = spec.flexible_from is not None and v >= spec.flexible_from
        legacy = spec.name == "ControlledShutdown" and v == 0   # the one header v0 body
        assert P.request_header_version(spec.key, v) == (0 if legacy else 2 if flexible else 1)
        expected = 1 if flexible and spec.name != "ApiVersions" else 0
        assert P.response_header_version(spec.key, v) == expected


@pytest.mark.parametrize("version, value, data", [
    (0, {"request_api_key": 3, "request_api_version": 0, "correlation_id": 7},
     "0003 0000 00000007"),
    (1, {"request_api_key": 3, "request_api_version": 1, "correlation_id": 7, "client_id": "ab"},
     "0003 0001 00000007 0002 6162"),
    (1, {"request_api_key": 3, "request_api_version": 1, "correlation_id": 7, "client_id": None},
     "0003 0001 00000007 ffff"),
    # v2: client_id stays an int16-length NULLABLE_STRING, then the tag buffer.
    (2, {"request_api_key": 18, "request_api_version": 3, "correlation_id": -1, "client_id": "ab"},
     "0012 0003 ffffffff 0002 6162 00"),
])
def test_request_header_bytes(version, value, data):
    raw = bytes.fromhex(data.replace(" ", ""))
    assert build(H.request_header(version), value) == raw
    parsed = P._parse(H.request_header(version), raw)
    assert {k: parsed[k] for k in value} == value


def test_response_header_bytes():
    assert build(H.response_header(0), {"correlation_id": 5}) == bytes.fromhex("00000005")
    assert build(H.response_header(1), {"correlation_id": 5}) == bytes.fromhex("0000000500")
    with pytest.raises(ValueError):
        H.request_header(3)


# --- exact frames ------------------------------------------------------------------

def test_metadata_request_frames():
    # v0: [] = all topics; v1+: null = all topics.
    assert P.encode_request(3, 0, 1, "c", {"topics": []}).hex() == \
        "0003" "0000" "00000001" "000163" "00000000"
    frame = P.encode_request(3, 12, 1, "c", {"topics": None, "allow_auto_topic_creation": False})
    assert frame.hex() == "0003" "000c" "00000001" "000163" "00" "00" "00" "00" "00"
    header, body = P.decode_request(frame)
    assert body.topics is None and body.allow_auto_topic_creation is False
    # Fields a version lacks decode to Kafka's defaults: v0 always auto-creates.
    assert P.decode_request(P.encode_request(3, 0, 1, "c", {"topics": []}))[1] \
        .allow_auto_topic_creation is True


def test_frames_fit_the_frame_layer():
    frame = P.encode_request(18, 3, 9, "kproto", {"client_software_name": "kproto",
                                                 "client_software_version": "0.1"})
    reader = framing.FrameReader()
    reader.feed(framing.frame(frame) + framing.frame(frame)[:3])
    assert reader.frames() == [frame]
    header, body = P.decode_request(frame)
    assert header.client_id == "kproto" and body.client_software_name == "kproto"


def test_api_versions_v3_response_has_header_v0_and_no_default_tags():
    body = {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
            "throttle_time_ms": 0}
    frame = P.encode_response(18, 3, 0x0A0B0C0D, body)
    # header v0 (no tag byte), compact array of 1, one entry + its tag byte, throttle, empty tags
    assert frame.hex() == "0a0b0c0d" "0000" "02" "0012" "0000" "0004" "00" "00000000" "00"
    _, decoded = P.decode_response(18, 3, frame)
    assert decoded.finalized_features_epoch == -1 and decoded.zk_migration_ready is False
    # A non-default tag is written (tag 1 = finalized_features_epoch, 8 bytes).
    frame = P.encode_response(18, 3, 1, {**body, "finalized_features_epoch": 5})
    assert frame.endswith(bytes.fromhex("00000000" "01" "01" "08" "0000000000000005"))


def test_kip511_unsupported_version_answer():
    # A client asks ApiVersions v9: the header is still readable (v2: 9 >= 3)...
    request = bytes.fromhex("0012" "0009" "0000002a" "0003" "616263" "00") + b"future body"
    with pytest.raises(UnsupportedVersionError):
        P.decode_request(request)
    header, offset = P.decode_request_header(request)
    assert (header.request_api_version, header.correlation_id, header.client_id, offset) == \
        (9, 42, "abc", 14)
    # ...and the answer is error 35 in a v0 body listing ApiVersions' own range.
    body = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    for asked in (0, 3, 4, 9):
        frame = P.encode_response(18, asked, 42, body)
        assert frame.hex() == "0000002a" "0023" "00000001" "0012" "0000" "0004"
        _, decoded = P.decode_response(18, asked, frame)
        assert decoded.error_code == 35 and decoded.api_keys[0].max_version == 4


def test_highest_common_version():
    assert P.highest_common_version(3, 0, 12) == 12
    assert P.highest_common_version(1, 4, 17) == 17
    assert P.highest_common_version(1, 4, 99) == 18
    assert P.highest_common_version(18, 0, 3) == 3
    assert P.highest_common_version(9, 0, 10, upto=9) == 9      # a client that stops at v9
    with pytest.raises(UnsupportedVersionError, match="kproto v0-9"):
        P.highest_common_version(9, 10, 10, upto=9)
    with pytest.raises(UnsupportedVersionError):
        P.highest_common_version(0, 14, 15)
    with pytest.raises(InvalidRequestError):
        P.highest_common_version(93, 0, 1)


def test_unknown_tags_are_kept_and_written_back():
    # ApiVersions v3 response body: ..., throttle 0, tags {1: epoch 7, 9: ab cd}
    frame = bytes.fromhex("00000001" "0000" "01" "00000000"
                          "02" "01" "08" "0000000000000007" "09" "02" "abcd")
    _, body = P.decode_response(18, 3, frame)
    assert body.finalized_features_epoch == 7 and body["_unknown"] == {9: b"\xab\xcd"}
    assert P.encode_response(18, 3, 1, body) == frame  # kafka-python drops tag 9 (F4)


def test_nested_struct_tags_and_unknown_tags():
    # Produce v10 response: a partition with current_leader (tag 0) and an unknown tag 5.
    value = {"responses": [{"name": "t", "partition_responses": [{
        "index": 0, "error_code": 6, "base_offset": -1, "record_errors": [],
        "current_leader": {"leader_id": 2, "leader_epoch": 9}, "_unknown": {5: b"x"}}]}],
        "throttle_time_ms": 0}
    frame = P.encode_response(0, 10, 3, value)
    _, body = P.decode_response(0, 10, frame)
    part = body.responses[0].partition_responses[0]
    assert part.current_leader == {"leader_id": 2, "leader_epoch": 9}
    assert part["_unknown"] == {5: b"x"}
    assert P.encode_response(0, 10, 3, body) == frame


# --- errors ------------------------------------------------------------------------

def test_truncation_names_position_and_field():
    frame = P.encode_response(3, 1, 7, {"brokers": [{"node_id": 1, "host": "kafka-1", "port": 9092,
                                                     "rack": None}], "topics": []})
    cut = frame[:4 + 4 + 4 + 2 + 3]  # header, count, node_id, host length, 3 of 7 bytes
    with pytest.raises(MalformedMessageError) as e:
        P.decode_response(3, 1, cut)
    assert isinstance(e.value, DecodeError)
    assert e.value.path == "brokers[0].host" and e.value.position == len(cut)


def test_trailing_bytes_are_an_error():
    frame = P.encode_request(12, 0, 1, "c", {"group_id": "g", "generation_id": 1, "member_id": "m"})
    with pytest.raises(MalformedMessageError, match="1 bytes left") as e:
        P.decode_request(frame + b"\x00")
    assert e.value.position == len(frame)


def test_bad_counts_and_lengths():
    with pytest.raises(MalformedMessageError, match="invalid array count"):
        P.decode_request(bytes.fromhex("0003" "0000" "00000001" "ffff" "ffffffff"))  # v0: no null
    with pytest.raises(MalformedMessageError) as e:
        P.decode_request(bytes.fromhex("0003" "0001" "00000001" "ffff" "7fffffff"))
    assert e.value.position is not None


def test_unknown_key_and_unsupported_versions():
    with pytest.raises(InvalidRequestError):
        P.decode_request(bytes.fromhex("03e7" "0000" "00000001" "ffff"))
    with pytest.raises(InvalidRequestError):
        P.request_header_version(999, 0)
    with pytest.raises(UnsupportedVersionError):
        P.decode_request(bytes.fromhex("0003" "0063" "00000001" "ffff" "00"))
    with pytest.raises(UnsupportedVersionError):
        P.encode_request(0, 14, 1, None, {})
    with pytest.raises(UnsupportedVersionError):
        P.decode_response(1, 19, b"")
    with pytest.raises(UnsupportedVersionError):
        P.API_KEYS[3].request(-1)
    with pytest.raises(MalformedMessageError):
        P.decode_request(b"\x00\x03")


def test_build_errors_name_the_field():
    with pytest.raises(CorruptRecordError, match="no field.*allow_auto_topic_creaton"):
        P.encode_request(3, 4, 1, None, {"topics": [], "allow_auto_topic_creaton": False})
    with pytest.raises(CorruptRecordError) as e:
        P.encode_request(3, 0, 1, None, {"topics": None})  # null topics only from v1
    assert e.value.path == "topics"
    with pytest.raises(CorruptRecordError) as e:
        P.encode_request(3, 1, 1, None, {"topics": [{"name": None}]})  # null names only from v10
    assert e.value.path == "topics[0].name"
    with pytest.raises(CorruptRecordError, match="cannot also be in _unknown"):
        P.encode_response(18, 3, 1, {"_unknown": {1: b""}})


def test_missing_fields_take_defaults():
    frame = P.encode_request(1, 4, 1, None, {"topics": [{"topic": "t", "partitions": [
        {"partition": 0, "fetch_offset": 5, "partition_max_bytes": 1024}]}]})
    _, body = P.decode_request(frame)
    assert body.replica_id == -1 and body.max_bytes == 0x7FFFFFFF and body.isolation_level == 0
    assert body.topics[0].partitions[0].current_leader_epoch == -1


def test_spec_validation():
    with pytest.raises(ValueError, match="snake_case"):
        Field("TopicName", P.metadata.STRING)
    with pytest.raises(ValueError, match="tag 0"):
        Struct("X", Field("a", P.metadata.INT32, tag=0), Field("b", P.metadata.INT32, tag=0))
    with pytest.raises(ValueError, match="cannot be nullable"):
        Field("a", P.metadata.INT32, nullable="0+")


def test_nullable_struct_marker():
    # No API in range uses KIP-893 nullable structs yet; the expansion supports them.
    from kproto.schemas.message import INT32, codec
    inner = Struct("Inner", Field("a", INT32, doc="a"))
    outer = Struct("Outer", Field("s", inner, nullable="0+", doc="s"))
    con = codec(outer, 0, True)
    assert build(con, {"s": None}) == b"\xff\x00"
    assert build(con, {"s": {"a": 1}}) == b"\x01\x00\x00\x00\x01\x00\x00"
    assert P._parse(con, b"\x01\x00\x00\x00\x01\x00\x00").s == {"a": 1}
    assert P._parse(con, b"\xff\x00").s is None


def test_uuid_fields():
    tid = uuid.UUID("0123456789abcdef0123456789abcdef")
    frame = P.encode_request(3, 12, 1, None, {"topics": [{"topic_id": tid, "name": None}]})
    assert P.decode_request(frame)[1].topics[0].topic_id == tid
