"""RecordBatch.walk (the C walk append validation uses, generated from the same
schema as the decoder) accepts exactly what records() accepts, fails at the
same byte, and reports what records() would show."""

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto import accel
from kproto.compression import CompressionType
from kproto.errors import CorruptRecordError, DecodeError
from kproto.records import NewRecord, RecordsWalk, build_record_batch, iter_batches

if accel.DISABLED:    # the one reading of KPROTO_NO_EXTENSIONS
    pytest.skip("the walk is the C accelerator's", allow_module_level=True)

record_st = st.builds(
    NewRecord, key=st.none() | st.binary(max_size=20), value=st.none() | st.binary(max_size=100),
    headers=st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=6)), max_size=3),
    timestamp=st.integers(0, 2**41))


def expected(batch) -> RecordsWalk:
    recs = batch.records()
    bad = next((i for i, r in enumerate(recs) if r.offset - batch.base_offset != i), -1)
    stamps = [r.timestamp for r in recs]
    return RecordsWalk(bad, sum(r.key is None for r in recs), min(stamps, default=-1), max(stamps, default=-1))


def outcome(fn):
    try:
        return fn()
    except DecodeError as e:
        return ("error", type(e).__name__, e.position)


@settings(max_examples=150, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=20), st.sampled_from(list(CompressionType)))
def test_walk_summarises_what_records_decodes(recs, codec):
    batch = next(iter_batches(build_record_batch(recs, compression=codec)))
    assert batch.walk() == expected(batch)


@settings(max_examples=300, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=8), st.data())
def test_walk_fails_where_records_fails(recs, data):
    raw = bytearray(build_record_batch(recs))
    kind = data.draw(st.sampled_from(["flip", "cut", "count"]))
    if kind == "flip":
        at = data.draw(st.integers(61, len(raw) - 1))
        raw[at] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "cut":
        raw = raw[:data.draw(st.integers(62, len(raw)))]
        struct.pack_into(">i", raw, 8, len(raw) - 12)
    else:
        struct.pack_into(">i", raw, 57, data.draw(st.integers(0, 12)))
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    batch = next(iter_batches(bytes(raw)))
    walked = outcome(batch.walk)
    decoded = outcome(lambda: expected(batch))
    assert walked == decoded


def test_walk_errors_name_the_byte():
    raw = bytearray(build_record_batch([NewRecord(b"k", b"v"), NewRecord(b"k2", b"v2")]))
    struct.pack_into(">i", raw, 57, 3)          # three records said, two there
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    batch = next(iter_batches(bytes(raw)))
    with pytest.raises(CorruptRecordError) as e:
        batch.walk()
    assert e.value.position == len(raw) and "truncated" in str(e.value)
