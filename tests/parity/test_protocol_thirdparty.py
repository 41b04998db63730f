"""Every API key and every version, decoded from bytes another codec wrote.

The frames are in kproto/conformance/corpus/protocol/codecs/*.jsonl (made by
tests/fixtures/protocol_codecs.py: kio 0.6.5, kafka-python 3.0.12 and aiokafka
0.14.0 encoding, in-process, one message per API, version and direction) and,
for what real clients and brokers sent, kproto/conformance/corpus/protocol/*.bin
(capture.py: librdkafka, kcat, kafka-python, aiokafka, tansu on loopback).

For each frame kproto must decode the header and body, get the value the
writer was given, and encode that value back to the same bytes.
``test_every_key_and_version`` lists all 93 keys and every version kproto
decodes and names the writers of each; ``UNWRITTEN`` lists, by name, the
(API, version) pairs no other codec here can write, and why; for keys 4-7
tests/parity/test_protocol_wireshark.py checks the other direction (Wireshark's
dissector reads kproto's bytes of every version it knows).
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from kproto import protocol as P
from kproto.schemas.message import present_only
from tests.fixtures.protocol_codecs import from_json
from tests.schemas.helpers import plain

from kproto.conformance import PROTOCOL_DIR as FIXTURES


def _rows() -> list[dict]:
    rows = []
    for path in sorted((FIXTURES / "codecs").glob("*.jsonl")):
        for n, line in enumerate(path.read_text().split("\n")[:-1]):
            rows.append({**json.loads(line), "_where": f"{path.name}:{n + 1}"})
    return rows


ROWS = _rows()

# Default-valued tagged fields some writers put on the wire (Kafka and kproto
# omit them): the value must still match, the bytes are then shorter.
DEFAULT_TAGS = {}

# (api key, version): why no codec available to the tests writes it.
UNWRITTEN = {
    **{(4, v): "LeaderAndIsr left Kafka with ZooKeeper (4.0); no Python codec has it" for v in range(8)},
    **{(5, v): "StopReplica left Kafka with ZooKeeper (4.0); no Python codec has it" for v in range(5)},
    **{(6, v): "UpdateMetadata left Kafka with ZooKeeper (4.0); no Python codec has it" for v in range(9)},
    **{(7, v): "ControlledShutdown left Kafka with ZooKeeper (4.0); no Python codec has it"
       for v in range(4)},
    **{(k, 0): "v0 dropped by Kafka 4.0 (KIP-896); kio starts at v1, kafka-python has no class"
       for k in (38, 39, 40, 41)},
    **{(56, v): "broker-to-controller v0-1 dropped by Kafka 4.0; kio starts at v2" for v in (0, 1)},
    **{(k, 0): "KIP-932 early-access v0 (Kafka 4.0) replaced by v1 in 4.1; kio has v1 only"
       for k in (76, 77, 78, 79)},
    **{kv: "Kafka 4.4 only (its kafka-clients jar); no Python codec here writes it yet"
       for kv in ((42, 3), (88, 1), (89, 1), (28, 6), (18, 5))},
}

# Frames kio 0.6.5 wrote from a definition Kafka 4.4 has since changed (its jar, which
# tests/schemas/test_protocol_definitions.py checks kproto against): a strict xfail each.
SUPERSEDED = {
    ("kio-0.6.5", "BrokerHeartbeat", 2, "request"): "Kafka 4.4 made cordoned_log_dirs nullable, default null",
    ("kio-0.6.5", "StreamsGroupHeartbeat", 0, "response"): "Kafka 4.4 added acceptable_recovery_lag_legacy, ...",
}


# Fields Kafka 4.4 renamed since the writers' definitions: (api, direction) -> {theirs: kproto's}.
RENAMED = {("TxnOffsetCommit", "request"): {"generation_id": "generation_id_or_member_epoch"}}   # KIP-848


def _id(row: dict) -> str:
    return f"{row['api']}-v{row['api_version']}-{row['direction']}-{row['written_by']}"


def decode(row: dict):
    frame = bytes.fromhex(row["frame"])
    key, version = row["api_key"], row["api_version"]
    spec = P.api(key)
    if row["correlation_id"] is None:           # a body alone (aiokafka)
        con = getattr(spec, row["direction"])(version)
        body, _ = P._decode(con, frame)
        return None, body, lambda value: P._encode(con, value)
    if row["direction"] == "request":
        header, body = P.decode_request(frame)
        assert (header.request_api_key, header.request_api_version, header.correlation_id) == \
            (key, version, row["correlation_id"])
        return header, body, lambda value: P.encode_request(key, version, header.correlation_id,
                                                            header.client_id, value)
    header, body = P.decode_response(key, version, frame)
    assert header.correlation_id == row["correlation_id"]
    return header, body, lambda value: P.encode_response(key, version, header.correlation_id, value)


@pytest.mark.parametrize("row", [
    pytest.param(r, marks=[pytest.mark.xfail(strict=True, reason=SUPERSEDED[k])] if k in SUPERSEDED else [])
    for r in ROWS for k in [(r["written_by"], r["api"], r["api_version"], r["direction"])]], ids=_id)
def test_third_party_frame(row):
    header, body, encode = decode(row)
    spec, version = P.api(row["api_key"]), row["api_version"]
    schema = getattr(spec, f"{row['direction']}_schema")
    # the writer's value holds the fields of this version; kproto's, all of them
    value = from_json(row["value"])
    for theirs, ours in RENAMED.get((row["api"], row["direction"]), {}).items():
        if theirs in value:
            value[ours] = value.pop(theirs)
    expected = plain(present_only(schema, version, value))
    assert plain(present_only(schema, version, body)) == expected, row["_where"]
    again = encode(body)
    if (row["written_by"], row["api"], row["api_version"], row["direction"]) in DEFAULT_TAGS:
        assert len(again) < len(bytes.fromhex(row["frame"]))
    else:
        assert again.hex() == row["frame"], row["_where"]


def _captured() -> dict[tuple[int, int], set]:
    out = defaultdict(set)
    for side in FIXTURES.glob("*.json"):
        meta = json.loads(side.read_text())
        out[(meta["api_key"], meta["api_version"])].add(meta["written_by"])
    return out


def test_every_key_and_version():
    """All 89 keys of Kafka 4.x and the ZooKeeper-era 4-7, every version kproto
    decodes: each is written by at least one other codec, request and
    response, or is named in UNWRITTEN with the reason."""
    writers: dict[tuple[int, int, str], set] = defaultdict(set)
    for row in ROWS:
        writers[(row["api_key"], row["api_version"], row["direction"])].add(row["written_by"])
    captured = _captured()
    assert sorted(P.API_KEYS) == [*range(0, 93)]
    missing = []
    for key, spec in P.API_KEYS.items():
        for v in spec.versions:
            sides = [writers[(key, v, kind)] | captured.get((key, v), set())
                     for kind in ("request", "response")]
            if (key, v) in UNWRITTEN:
                assert not any(sides), f"{spec.name} v{v} is written after all: drop it from UNWRITTEN"
            elif not all(sides):
                missing.append(f"{spec.name} v{v}")
    assert not missing, f"no third-party bytes for: {', '.join(missing)}"
    print(f"{len(ROWS)} third-party frames; unwritten: {len(UNWRITTEN)} (API, version) pairs")
