"""Bad input: every failure is a DecodeError naming position and field, nothing else escapes."""

from __future__ import annotations

import gzip
import zlib

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto import schemas
from kproto.compression import CompressionType, compress
from kproto.errors import CorruptRecordError, DecodeError, IncompleteBatchError
from kproto.records import NewRecord, build_message_set, build_record_batch, iter_batches
from kproto.schemas import records as S

RECS = [NewRecord(b"key-%d" % i, b"value-%d" % i * 3, [("h", b"x")], 1_700_000_000_000 + i) for i in range(5)]
V2 = build_record_batch(RECS, base_offset=100)
V1 = build_message_set(RECS, magic=1, base_offset=100)
V1_GZIP = build_message_set(RECS, magic=1, base_offset=100, compression=CompressionType.GZIP)


def decode_all(buf: bytes) -> list:
    """Both paths; each must raise only DecodeError subclasses."""
    fast = [r for b in iter_batches(buf) for r in b.records()]
    schemas.parse(S.Records, buf)
    return fast


def with_crc(batch: bytearray) -> bytes:
    """Re-stamp length and CRC after a deliberate edit, so the edit itself is what's tested."""
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


@pytest.mark.parametrize("data", [V2, V1, V1_GZIP], ids=["v2", "v1", "v1-gzip"])
def test_truncation_at_every_byte_is_incomplete(data):
    starts = [b.position for b in iter_batches(data)]
    for cut in range(1, len(data)):
        whole = [p for p in starts if p < cut]
        if cut in starts:       # a cut between batches leaves whole batches only
            assert len(list(iter_batches(data[:cut]))) == len(whole)
            continue
        with pytest.raises(IncompleteBatchError) as e:
            list(iter_batches(data[:cut]))
        assert e.value.position == whole[-1]
        # allow_incomplete: the walk just stops, as a consumer's fetch buffer does
        assert len(list(iter_batches(data[:cut], allow_incomplete=True))) == len(whole) - 1


@pytest.mark.parametrize("data", [V2, V1, V1_GZIP], ids=["v2", "v1", "v1-gzip"])
def test_every_single_bit_flip_is_detected_or_harmless(data):
    starts = [b.position for b in iter_batches(data)]
    for i in range(len(data)):
        for bit in (0, 3, 7):
            bad = bytearray(data)
            bad[i] ^= 1 << bit
            try:
                decode_all(bytes(bad))
            except DecodeError as e:
                assert e.position is not None
                continue
            # Only the fields outside the CRC can change without an error:
            # each batch's offset (0-7), and for v2 the partition leader epoch (12-15).
            start = max(p for p in starts if p <= i)
            rel = i - start
            assert rel < 8 or (data[16] == 2 and 12 <= rel < 16), f"flip at byte {i} went unnoticed"


def test_crc_mismatch_names_position_and_field():
    bad = bytearray(V2 + V2)
    bad[len(V2) + 40] ^= 0xFF
    it = iter_batches(bytes(bad), position=4096)
    next(it)
    with pytest.raises(CorruptRecordError) as e:
        next(it)
    assert e.value.position == 4096 + len(V2) + 17
    assert e.value.path == "crc"
    assert "crc mismatch" in str(e.value) and f"@ byte {4096 + len(V2) + 17}" in str(e.value)


def test_wrong_magic():
    bad = bytearray(V2)
    bad[16] = 7
    with pytest.raises(CorruptRecordError, match="unknown magic 7"):
        list(iter_batches(bytes(bad)))
    with pytest.raises(CorruptRecordError):
        schemas.parse(S.Records, bytes(bad))


@pytest.mark.parametrize("length", [-1, 0, 13, -2**31])
def test_negative_or_tiny_length(length):
    bad = bytearray(V2)
    bad[8:12] = length.to_bytes(4, "big", signed=True)
    with pytest.raises(CorruptRecordError, match="smaller than minimum record overhead"):
        list(iter_batches(bytes(bad)))


def test_huge_length_is_incomplete_not_a_huge_allocation():
    bad = bytearray(V2)
    bad[8:12] = (2**31 - 1).to_bytes(4, "big")
    with pytest.raises(IncompleteBatchError):
        list(iter_batches(bytes(bad)))


def test_record_count_larger_than_records_present():
    bad = bytearray(V2)
    bad[57:61] = (6).to_bytes(4, "big")
    (batch,) = iter_batches(with_crc(bad))
    with pytest.raises(CorruptRecordError) as e:
        batch.records()
    assert e.value.position is not None and e.value.path.startswith("records")


def test_record_count_smaller_than_records_present():
    bad = bytearray(V2)
    bad[57:61] = (4).to_bytes(4, "big")
    (batch,) = iter_batches(with_crc(bad))
    with pytest.raises(CorruptRecordError, match="records still remaining"):
        batch.records()


def test_negative_record_count():
    bad = bytearray(V2)
    bad[57:61] = (-3).to_bytes(4, "big", signed=True)
    (batch,) = iter_batches(with_crc(bad))
    with pytest.raises(CorruptRecordError, match="invalid record count -3"):
        batch.records()
    with pytest.raises(CorruptRecordError):
        schemas.parse(S.RecordBatch, with_crc(bad))


def test_overlong_varint_rejected():
    # Record length written as a 6-byte varint: Kafka's ByteUtils refuses a sixth byte.
    header = bytearray(V2[:61])
    header[57:61] = (1).to_bytes(4, "big")
    body = bytes([0x80] * 5 + [0x01]) + b"\x00" * 10
    bad = with_crc(header + body)
    (batch,) = iter_batches(bad)
    with pytest.raises(CorruptRecordError, match="varint longer than 5 bytes") as e:
        batch.records()
    assert e.value.position == 61 + 5
    with pytest.raises(CorruptRecordError, match="varint longer than 5 bytes"):
        schemas.parse(S.RecordBatch, bad)


def test_record_length_past_batch_end():
    header = bytearray(V2[:61])
    header[57:61] = (1).to_bytes(4, "big")
    bad = with_crc(header + b"\x7e" + b"\x00" * 4)      # length 63 in a 5-byte body
    (batch,) = iter_batches(bad)
    with pytest.raises(CorruptRecordError, match="past the end"):
        batch.records()


def test_decompression_failure_names_the_batch():
    header = bytearray(V2[:61])
    header[21:23] = (CompressionType.GZIP).to_bytes(2, "big")
    bad = with_crc(header + b"not gzip at all")
    (batch,) = iter_batches(bad, position=1000)
    with pytest.raises(CorruptRecordError) as e:
        batch.records()
    assert e.value.position == 1061 and "gzip" in str(e.value)


def test_compression_bomb_is_an_error_not_an_oom():
    records = bytes(1)   # a tiny valid prefix; the rest is zeros that inflate hugely
    bomb = gzip.compress(records + bytes(300 * 1024 * 1024), compresslevel=9, mtime=0)
    header = bytearray(V2[:61])
    header[21:23] = (CompressionType.GZIP).to_bytes(2, "big")
    (batch,) = iter_batches(with_crc(header + bomb))
    with pytest.raises(CorruptRecordError, match="cap"):
        batch.records()


def test_legacy_crc_mismatch():
    bad = bytearray(V1)
    bad[30] ^= 1
    with pytest.raises(CorruptRecordError, match="crc mismatch"):
        list(iter_batches(bytes(bad)))


def test_legacy_wrapper_with_mismatched_inner_magic():
    inner = build_message_set(RECS[:2], magic=0)
    value = compress(CompressionType.GZIP, inner, magic=1)
    msg = bytearray((0).to_bytes(8, "big") + bytes(8) + bytes([1, CompressionType.GZIP])
                    + (0).to_bytes(8, "big") + (-1).to_bytes(4, "big", signed=True)
                    + len(value).to_bytes(4, "big") + value)
    msg[8:12] = (len(msg) - 12).to_bytes(4, "big")
    msg[12:16] = zlib.crc32(bytes(msg[16:])).to_bytes(4, "big")
    (wrapper,) = iter_batches(bytes(msg))
    with pytest.raises(CorruptRecordError, match="does not match wrapper magic"):
        wrapper.records()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300) | st.builds(lambda data, i, b: data[:i] + bytes([b]) + data[i + 1:],
                                           st.sampled_from([V2, V1, V1_GZIP]), st.integers(0, 400),
                                           st.integers(0, 255)))
def test_random_and_mutated_buffers_raise_only_decode_errors(buf):
    for verify in (True, False):
        try:
            for b in iter_batches(buf, verify_crc=verify):
                b.records()
        except DecodeError:
            pass
    try:
        schemas.parse(S.Records, buf, verify_crc=False)
    except DecodeError:
        pass
