"""The C accelerator is the schema's translation: current, loaded, and equal to the Python one.

The comparisons load kproto._crecords whatever KPROTO_NO_EXTENSIONS says, and skip
only when it is switched off and not built either (tests/records/codec_check.c_codec)."""

import gc
import sys
from pathlib import Path

from kproto import accel, records
from generators import c as codegen_c
from tests.records.codec_check import c_codec


def test_committed_c_source_matches_the_schema():
    committed = Path(codegen_c.OUTPUT).read_text()
    assert committed == codegen_c.generate(), "run `python -m generators.c` and rebuild"


def test_accelerator_is_loaded():
    # `make test` builds it; a silent fallback to Python would hide a broken build.
    if accel.DISABLED:
        assert records._decode_records_c is None
    else:
        assert records._decode_records_c is not None


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.errors import CorruptRecordError
from kproto.records import NewRecord, build_record_batch

record_st = st.builds(
    NewRecord, key=st.none() | st.binary(max_size=30), value=st.none() | st.binary(max_size=300),
    headers=st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3),
    timestamp=st.none() | st.integers(-2**40, 2**42))


@settings(max_examples=200, deadline=None)
@given(st.lists(record_st, max_size=30), st.integers(-2**40, 2**42))
def test_c_and_python_encoders_write_the_same_bytes(recs, base_ts):
    c_module = c_codec()
    py = bytes(records._encode_records_py(bytearray(), recs, base_ts, 123))
    c, max_ts = c_module.encode_records(recs, base_ts, 123)
    assert c == py
    assert max_ts == max((123 if r.timestamp is None else r.timestamp for r in recs), default=-1)
    dec_py = records._decode_records_py(py, 0, len(py), len(recs), 7, base_ts, None)
    dec_c = c_module.decode_records(py, len(recs), 7, base_ts, None)
    assert dec_c == dec_py


@pytest.mark.parametrize("bad", [
    NewRecord(b"k", b"v", [(None, b"x")]), NewRecord(b"k", b"v", [("h", 5)]), NewRecord(5, b"v"),
    NewRecord(b"k", b"v", [("h",)]), NewRecord(b"k", b"v", (), 2**70),
])
def test_unencodable_records_fail_alike(bad, monkeypatch):
    for encoder in (c_codec().encode_records, None):
        monkeypatch.setattr(records, "_encode_records_c", encoder)
        with pytest.raises(CorruptRecordError):
            build_record_batch([bad])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 50))
def test_c_and_python_decoders_fail_alike(buf, count):
    c_module = c_codec()
    outcomes = []
    for fn in (lambda: c_module.decode_records(buf, count, 0, 0, None),
               lambda: records._decode_records_py(buf, 0, len(buf), count, 0, 0, None)):
        try:
            outcomes.append(("ok", fn()))
        except CorruptRecordError as e:
            outcomes.append(("error", e.position, e.path))
    assert outcomes[0] == outcomes[1]


@given(st.binary(max_size=300), st.integers(0, 7))
@settings(max_examples=300, deadline=None)
def test_crc32c_equals_the_crc32c_package(data, skip):
    """The extension's CRC-32C (SSE 4.2 and the table both) is the package's, at any alignment."""
    import crc32c as package
    module = c_codec()
    view = memoryview(data)[min(skip, len(data)):]
    want = package.crc32c(bytes(view))
    assert (module.crc32c(view), module.crc32c(view, False)) == (want, want)


def _fails_alike(buf: bytes, count: int) -> tuple:
    c_module = c_codec()
    outcomes = []
    for fn in (lambda: c_module.decode_records(buf, count, 0, 0, None),
               lambda: records._decode_records_py(buf, 0, len(buf), count, 0, 0, None)):
        with pytest.raises(CorruptRecordError) as e:
            fn()
        outcomes.append((str(e.value), e.value.position, e.value.path))
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


def test_counts_beyond_the_bytes_fail_alike_without_allocating_them():
    # The C decoder sizes its list and header tuple from min(count, bytes left + 1):
    # a count of 2**31 - 1 allocates nothing it was not sent, and fails where Python does.
    body = records._encode_records_py(bytearray(), [NewRecord(b"k", b"v", [("h", b"x")], 5)], 5, 0)
    assert _fails_alike(bytes(body), 2**31 - 1)[1] == len(body)
    # one record whose header count says 1,000,000 (zigzag varint) with one header's bytes
    rec = bytes([0, 0, 0, 0, 0]) + bytes([0x80, 0x89, 0x7A]) + bytes([2]) + b"h" + bytes([1])
    _fails_alike(bytes([len(rec) * 2]) + rec, 1)
    # and with no header bytes at all: the key's length is read from past the record
    rec = bytes([0, 0, 0, 0, 0, 2])
    _fails_alike(bytes([len(rec) * 2]) + rec + bytes([2, 0]), 1)


def test_header_keys_decode_equal_when_shared():
    # Short ASCII header keys are decoded once and shared (csrc/records.c decode_text);
    # the rest as before: every key equal to the Python decoder's.
    heads = [("trace-id", b"1"), ("trace-id", None), ("é", b"2"), ("", b"3"), ("k" * 65, b"4"), ("a" * 64, None)]
    recs = [NewRecord(b"k", b"v", heads, 1), NewRecord(None, None, heads[::-1], 2)]
    body = bytes(records._encode_records_py(bytearray(), recs, 1, 0))
    for _ in range(2):      # the second pass hits the cache
        got, _end = c_codec().decode_records(body, 2, 0, 1, None)
        assert got == records._decode_records_py(body, 0, len(body), 2, 0, 1, None)[0]
        assert [h for r in got for h in r.headers] == heads + heads[::-1]
    with pytest.raises(CorruptRecordError, match="UnicodeDecodeError"):
        bad = bytes(records._encode_records_py(bytearray(), [NewRecord(b"k", b"v", [("ab", b"")], 1)], 1, 0))
        c_codec().decode_records(bad.replace(b"ab", b"a\xff"), 1, 0, 1, None)


def test_records_freed_and_reused_stay_whole_and_collectable():
    # csrc/records.c gives Record its own dealloc and hands freed records back to the
    # decoder: every reused record equals the Python decoder's, the survivors of earlier
    # decodes keep their values, Record's reference count comes back to where it was,
    # and a record is still tracked by the garbage collector (a cycle through one is freed).
    c_module = c_codec()
    recs = [NewRecord(b"k%d" % i, b"v" * i, [("h", b"%d" % i)] * (i % 3), 1000 + i) for i in range(50)]
    body = bytes(records._encode_records_py(bytearray(), recs, 1000, 0))
    want = records._decode_records_py(body, 0, len(body), 50, 2**40, 1000, None)[0]
    gc.collect()
    before = sys.getrefcount(records.Record)
    kept, whole = [], []
    for _ in range(5):
        got, _end = c_module.decode_records(body, 50, 2**40, 1000, None)
        whole.append(got == want and all(gc.is_tracked(r) for r in got))
        kept += got[::7]
        del got
    assert whole == [True] * 5 and kept == want[::7] * 5
    made = [records.Record(1, 2, b"k", b"v"), records.LegacyRecord(1, 2, b"k", b"v", (), 0, 1, 5, 0)]
    cyclic = c_module.decode_records(body, 1, 0, 1000, None)[0][0]
    object.__setattr__(cyclic, "key", [cyclic])
    del kept, made, cyclic
    gc.collect()
    after = sys.getrefcount(records.Record)     # outside the assert: its rewriting holds a reference
    assert after == before
    assert c_module.decode_records(body, 50, 2**40, 1000, None)[0] == want


class _Slots:
    __slots__ = ("key", "value", "headers", "timestamp")

    def __init__(self, key, value, headers, timestamp):
        self.key, self.value, self.headers, self.timestamp = key, value, headers, timestamp


class _Props:
    def __init__(self, key):
        self._key = key
        self.value, self.headers, self.timestamp = b"v", (), 3

    @property
    def key(self):
        return self._key + b"!"


def test_the_encoder_reads_any_record_type_as_getattr_does():
    # Slots are read directly for plain slot classes (a per-type cache checked by
    # the type's version tag), attributes otherwise: every type encodes as in Python.
    c_module = c_codec()
    kinds = [NewRecord(b"a", b"b", [("h", b"x")], 1), records.Record(0, 1, b"a", b"b", (("h", b"x"),)),
             _Slots(b"a", bytearray(b"b"), [("h", memoryview(b"x"))], 1), _Props(b"a")]
    for recs in (kinds, kinds[::-1], kinds * 3):
        assert c_module.encode_records(recs, 1, 9)[0] == bytes(records._encode_records_py(bytearray(), recs, 1, 9))
    recs = [_Slots(b"a", b"b", (), 1)]
    slot = _Slots.__dict__["key"]
    _Slots.key = property(lambda self: b"changed")       # the type changes after it was cached
    try:
        assert c_module.encode_records(recs, 1, 9)[0] == bytes(records._encode_records_py(bytearray(), recs, 1, 9))
        assert b"changed" in c_module.encode_records(recs, 1, 9)[0]
    finally:
        _Slots.key = slot
    assert b"changed" not in c_module.encode_records(recs, 1, 9)[0]
    unset = _Slots.__new__(_Slots)
    with pytest.raises(AttributeError):
        c_module.encode_records([unset], 1, 9)
