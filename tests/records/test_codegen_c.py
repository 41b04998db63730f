"""The C accelerator is the schema's translation: current, loaded, and equal to the Python one.

The comparisons load kproto._crecords whatever KPROTO_NO_EXTENSIONS says, and skip
only when it is switched off and not built either (tests/records/codec_check.c_codec)."""

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
    c = c_module.encode_records(recs, base_ts, 123)
    assert c == py
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
