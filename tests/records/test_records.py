"""Record codecs: third-party fixtures, fast path == schema path, interop both ways."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto import records as R
from kproto.compression import CompressionType
from kproto.records import NewRecord, build_message_set, build_record_batch, iter_batches
from kproto.schemas import records as S
from tests.records.codec_check import assert_codec

from kproto.conformance import RECORDS_DIR as FIXTURES  # the corpus ships in the package
FIXTURE_NAMES = sorted(p.stem for p in FIXTURES.glob("*.bin"))
CODECS = list(CompressionType)


def load(name: str) -> tuple[bytes, dict]:
    return (FIXTURES / f"{name}.bin").read_bytes(), json.loads((FIXTURES / f"{name}.json").read_text())


def hexed(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def test_fixtures_present():
    # The conformance suite below is only as good as its third-party bytes.
    assert len(FIXTURE_NAMES) >= 30


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_decodes_to_producer_inputs(name):
    data, expected = load(name)
    batches = list(iter_batches(data))
    assert len(batches) == len(expected["batches"])
    for batch, exp in zip(batches, expected["batches"]):
        assert batch.magic == exp["magic"]
        assert batch.compression.name.lower() == exp["codec"]
        # Fixtures record v0's absent timestamp type as null; Kafka names it NoTimestampType.
        assert R.TimestampType.NAMES[batch.timestamp_type] == (exp["timestamp_type"] or "NoTimestampType")
        if batch.magic == 2:
            assert batch.base_offset == exp["base_offset"]
            for key in ("is_transactional", "is_control", "producer_id", "producer_epoch",
                        "base_sequence", "partition_leader_epoch", "max_timestamp"):
                if key in exp:
                    assert getattr(batch, key) == exp[key], key
        else:
            assert batch.offset == exp["base_offset"]
        got = [{"offset": r.offset, "timestamp": None if r.timestamp == -1 and batch.magic == 0 else r.timestamp,
                "key": hexed(r.key), "value": hexed(r.value),
                "headers": [[k, hexed(v)] for k, v in r.headers]} for r in batch.records()]
        want = [{k: rec[k] for k in ("offset", "timestamp", "key", "value", "headers")}
                for rec in exp["records"]]
        assert got == want
        for r, rec in zip(batch.records(), exp["records"]):
            if "control" in rec:
                c = R.control_record(r)
                assert (c.type_name, c.version, c.coordinator_epoch) == (
                    rec["control"]["type"], rec["control"]["version"], rec["control"]["coordinator_epoch"])


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_fast_path_equals_schema_path(name):
    data, expected = load(name)
    compressed = any(b["codec"] != "none" for b in expected["batches"])
    assert_codec(data, exact_rebuild=not compressed)


@pytest.mark.parametrize("name", [n for n in FIXTURE_NAMES if load(n)[1]["batches"]
                                  and all(b["codec"] == "none" and b["magic"] == 2 for b in load(n)[1]["batches"])])
def test_uncompressed_v2_reencodes_byte_identical(name):
    """kproto's builder writes the producer's bytes again, given the same inputs."""
    data, _ = load(name)
    out = b""
    for b in iter_batches(data):
        recs = b.records()
        if b.is_control or b.timestamp_type or any(r.offset - b.base_offset != i for i, r in enumerate(recs)):
            out += bytes(b.data)   # not derivable from inputs alone; covered by assert_codec
            continue
        out += build_record_batch(
            [NewRecord(r.key, r.value, r.headers, r.timestamp) for r in recs], base_offset=b.base_offset,
            is_transactional=b.is_transactional, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
            base_sequence=b.base_sequence, partition_leader_epoch=b.partition_leader_epoch)
    assert out == data


# --- kproto's encodings read by independent decoders ----------------------

record_st = st.builds(
    NewRecord,
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=200),
    headers=st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=4),
    timestamp=st.integers(min_value=0, max_value=2**41),
)


def _kafka_python_decode(data: bytes):
    from kafka.record.memory_records import MemoryRecords
    out = []
    mr = MemoryRecords(data)
    while mr.has_next():
        batch = mr.next_batch()
        for r in batch:
            out.append((r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]))
    return out


def _aiokafka_decode(data: bytes):
    from aiokafka.record.memory_records import MemoryRecords
    out = []
    mr = MemoryRecords(data)
    while mr.has_next():
        batch = mr.next_batch()
        for r in batch:
            out.append((r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]))
    return out


def _ours(data: bytes, *, with_headers: bool = True):
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers) if with_headers else [])
            for b in iter_batches(data) for r in b.records()]


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=st.lists(record_st, min_size=1, max_size=20), base=st.integers(0, 2**40))
def test_v2_built_by_kproto_read_by_kafka_python_and_aiokafka(codec, recs, base):
    data = build_record_batch(recs, base_offset=base, compression=codec, producer_id=7,
                              producer_epoch=1, base_sequence=3)
    want = [(base + i, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for i, r in enumerate(recs)]
    assert _ours(data) == want
    assert _kafka_python_decode(data) == want
    assert _aiokafka_decode(data) == want
    assert_codec(data)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [c for c in CODECS if c != CompressionType.ZSTD])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=st.lists(record_st, min_size=1, max_size=10), base=st.integers(0, 2**40))
def test_legacy_built_by_kproto_read_by_kafka_python(magic, codec, recs, base):
    data = build_message_set(recs, magic=magic, base_offset=base, compression=codec)
    ts = (lambda r: -1) if magic == 0 else (lambda r: r.timestamp)
    want = [(base + i, ts(r), r.key, r.value, []) for i, r in enumerate(recs)]
    assert _ours(data) == want
    kp = [(o, -1 if t is None else t, k, v, h) for o, t, k, v, h in _kafka_python_decode(data)]
    assert kp == want
    if not (magic == 0 and codec == CompressionType.LZ4):   # aiokafka refuses v0 lz4
        ak = [(o, -1 if t is None else t, k, v, h) for o, t, k, v, h in _aiokafka_decode(data)]
        assert ak == want
    assert_codec(data)


def test_control_batch_round_trip():
    data = R.build_control_batch(1, producer_id=4000, producer_epoch=3, coordinator_epoch=7,
                                 base_offset=42, timestamp=1700000000000)
    (batch,) = iter_batches(data)
    assert batch.is_control and batch.is_transactional and batch.base_sequence == -1
    (rec,) = batch.records()
    assert R.control_record(rec) == R.ControlRecord(0, 1, 7)
    assert data[21:23] == b"\x00\x30"
    assert_codec(data)


def test_header_fields_and_derived_values():
    data = build_record_batch([NewRecord(b"k", b"v", [], 1000), NewRecord(None, b"w", [("a", None)], 990)],
                              base_offset=5, producer_id=9, producer_epoch=2, base_sequence=2**31 - 1)
    (b,) = iter_batches(data)
    assert (b.base_offset, b.last_offset, b.records_count, b.base_timestamp, b.max_timestamp) == (5, 6, 2, 1000, 1000)
    assert b.last_sequence == 0     # wraps past Int.MAX to 0, as Kafka does
    assert b.size == len(data) and b.batch_length == len(data) - 12
    assert [r.timestamp for r in b.records()] == [1000, 990]


def test_empty_header_only_batch():
    """Compaction leaves 61-byte batches with count 0; readers accept them."""
    data = build_record_batch([], base_offset=10, last_offset_delta=4, max_timestamp=1234,
                              producer_id=1, producer_epoch=0, base_sequence=0)
    (b,) = iter_batches(data)
    assert len(data) == 61 and b.records_count == 0 and b.last_offset == 14 and b.records() == []
    assert_codec(data)


def test_fast_decoder_is_generated_from_the_schema():
    src = R._decode_records_py.__source__
    # Every field of the record schema appears, in schema order.
    names = ["attributes", "timestamp_delta", "offset_delta", "key", "value", "headers"]
    positions = [src.index(f"_{n}") for n in names]
    assert positions == sorted(positions)


def test_byte_offset_table_is_kafkas():
    # DefaultRecordBatch.java (BASE_OFFSET_OFFSET .. RECORDS_OFFSET) and
    # LegacyRecord.java (CRC_OFFSET .. KEY_SIZE_OFFSET_V1, relative to the end of
    # LOG_OVERHEAD = 12) at Kafka trunk, Oct 2024; the table is derived from the schema.
    assert S.V2_OFFSETS == {
        "base_offset": 0, "batch_length": 8, "partition_leader_epoch": 12, "magic": 16, "crc": 17,
        "attributes": 21, "last_offset_delta": 23, "base_timestamp": 27, "max_timestamp": 35,
        "producer_id": 43, "producer_epoch": 51, "base_sequence": 53, "records_count": 57, "records": 61}
    for magic, key_size_offset in ((0, 6), (1, 14)):
        o = S.LEGACY_OFFSETS[magic]
        assert (o["crc"], o["magic"], o["attributes"], o["key"]) == (12 + 0, 12 + 4, 12 + 5, 12 + key_size_offset)
    assert S.LEGACY_OFFSETS[1]["timestamp"] == 12 + 6
    assert (S.LOG_OVERHEAD, S.RECORD_BATCH_OVERHEAD, S.LEGACY_OVERHEAD) == (12, 61, {0: 14, 1: 22})
