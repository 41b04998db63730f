"""The one helper that proves the fast record path equal to the schema path.

``assert_codec(buf)`` decodes ``buf`` twice — through kproto.records (header
struct + generated record decoder) and through construct's interpreter over
kproto.schemas.records — and requires identical batch headers and identical
Record objects; then it rebuilds every batch through the schema and, for v2,
through the fast builder, and requires identical bytes.
"""

from __future__ import annotations

import pytest
from construct import Container

from kproto import accel, records, schemas
from kproto.records import (
    LegacyRecord, Record, RecordBatch, TimestampType, V2_HEADER_FIELDS, build_record_batch,
    iter_batches, NewRecord,
)
from kproto.schemas import records as S


def _legacy_records_from_schema(c: Container) -> list[LegacyRecord]:
    """The oracle for legacy offsets, written from Kafka's rules (kafka-tools.md 5.3)."""
    codec = c.attributes & S.CODEC_MASK
    ts_type = (TimestampType.NO_TIMESTAMP_TYPE if c.magic == 0 else
               TimestampType.LOG_APPEND_TIME if c.attributes & S.TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME)
    if not codec:
        return [LegacyRecord(c.offset, -1 if c.timestamp is None else c.timestamp, c.key, c.value,
                             (), c.attributes, c.magic, c.crc, ts_type)]
    inner = c.value
    shift = 0
    if c.magic == 1 and c.offset != 0:
        shift = c.offset - inner[-1].offset
    out = []
    for m in inner:
        ts = c.timestamp if (c.magic == 1 and c.attributes & S.TIMESTAMP_TYPE_BIT) else m.timestamp
        out.append(LegacyRecord(m.offset + shift, -1 if ts is None else ts, m.key, m.value, (),
                                m.attributes, m.magic, m.crc, ts_type))
    return out


def schema_decode(buf: bytes) -> list[tuple[tuple, list[Record]]]:
    out = []
    for c in schemas.parse(S.Records, buf):
        if c.magic == 2:
            header = tuple(c[name] for name in V2_HEADER_FIELDS)
            lat = c.max_timestamp if c.attributes & S.TIMESTAMP_TYPE_BIT else None
            recs = [Record(c.base_offset + r.offset_delta,
                           c.base_timestamp + r.timestamp_delta if lat is None else lat,
                           r.key, r.value, tuple((h.key, h.value) for h in r.headers), r.attributes)
                    for r in c.records]
        else:
            header = (c.offset, c.message_size, c.crc, c.magic, c.attributes, c.timestamp)
            recs = _legacy_records_from_schema(c)
        out.append((header, recs))
    return out


def c_codec():
    """kproto._crecords for a test that compares it with the Python path, loaded
    whatever KPROTO_NO_EXTENSIONS says. Skipped only when the switch is set and
    the extension is not built either; otherwise its absence fails the test."""
    module = records._load_accelerator(honour_switch=False)
    if module is None:
        if accel.DISABLED:
            pytest.skip("KPROTO_NO_EXTENSIONS is set and kproto._crecords is not built")
        pytest.fail("kproto._crecords is not built: `python setup.py build_ext --inplace` "
                    "(make test's editable install builds it)", pytrace=False)
    return module


def _both_translations(b: RecordBatch) -> list[Record]:
    """The batch's records through the C and the Python translation of the schema."""
    recs = b.records()
    if records._decode_records_c is not None and b.records_count >= 0:
        body = b.data[S.RECORD_BATCH_OVERHEAD:]
        body = bytes(body) if not b.compression else records.decompress(b.compression, body)
        lat = b.max_timestamp if b.timestamp_type == TimestampType.LOG_APPEND_TIME else None
        py, end = records._decode_records_py(body, 0, len(body), b.records_count, b.base_offset,
                                             b.base_timestamp, lat)
        assert py == recs, "C and Python translations of the record schema differ"
    return recs


def fast_decode(buf: bytes) -> list[tuple[tuple, list[Record]]]:
    out = []
    for b in iter_batches(buf):
        if isinstance(b, RecordBatch):
            header = tuple(getattr(b, name) for name in V2_HEADER_FIELDS)
            out.append((header, _both_translations(b)))
            continue
        else:
            header = (b.offset, b.message_size, b.crc, b.magic, b.attributes, b.timestamp)
        out.append((header, b.records()))
    return out


def assert_codec(buf: bytes, *, exact_rebuild: bool = True) -> list[tuple[tuple, list[Record]]]:
    """Fast path == schema path, as objects; and as bytes on rebuild.

    ``exact_rebuild=False`` for third-party compressed data, whose compressed
    bytes depend on the producer's compressor settings.
    """
    fast = fast_decode(buf)
    slow = schema_decode(buf)
    assert fast == slow, "fast path and schema path decode differently"
    parsed = schemas.parse(S.Records, buf)
    rebuilt = schemas.build(S.Records, parsed)
    # Each batch rebuilt by the schema decodes to the same objects again
    # (recompressed bytes change a batch's length and CRC, so compare records).
    again = fast_decode(rebuilt)
    if exact_rebuild:
        assert again == fast
    else:
        assert [recs for _, recs in again] == [recs for _, recs in fast]
    if exact_rebuild:
        assert rebuilt == bytes(buf), "schema rebuild differs from the input bytes"
    # The fast v2 builder and the schema builder write the same bytes.
    for b in iter_batches(rebuilt):
        if isinstance(b, RecordBatch) and b.records_count and not b.delete_horizon_ms:
            recs = b.records()
            fast_bytes = build_record_batch(
                [NewRecord(r.key, r.value, r.headers, r.timestamp) for r in recs],
                base_offset=b.base_offset, compression=b.compression, timestamp_type=b.timestamp_type,
                log_append_time=b.max_timestamp, is_transactional=b.is_transactional,
                is_control=b.is_control, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                base_sequence=b.base_sequence, partition_leader_epoch=b.partition_leader_epoch,
                last_offset_delta=b.last_offset_delta, max_timestamp=b.max_timestamp)
            if b.timestamp_type == TimestampType.LOG_APPEND_TIME or recs[0].timestamp != b.base_timestamp or any(
                    r.offset - b.base_offset != i for i, r in enumerate(recs)):
                continue   # deltas not derivable from records alone
            assert fast_bytes == bytes(b.data), "fast builder and schema builder differ"
    return fast
