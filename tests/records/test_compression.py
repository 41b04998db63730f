"""Codecs: interop with kafka-python's codecs both ways, exact framing bytes, bombs, garbage."""

from __future__ import annotations

import gzip
import io
import os
import struct

import lz4.block
import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kc

from kproto.compression import (
    XERIAL_MAGIC, CompressionType, compress, decompress,
)
from kproto.errors import DecompressionError, UsageError

CODECS = list(CompressionType)
SAMPLES = [b"", b"x", b"hello kafka " * 1000, os.urandom(70_000), bytes(200_000)]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1, 2])
@settings(max_examples=30, deadline=None)
@given(data=st.binary(max_size=5000))
def test_round_trip(codec, magic, data):
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


@pytest.mark.parametrize("data", SAMPLES, ids=lambda d: f"{len(d)}B")
def test_kafka_python_reads_ours(data):
    assert kc.gzip_decode(compress(CompressionType.GZIP, data)) == data
    if data:   # kafka-python 3.0.12 cannot read a header-only xerial stream, even its own
        assert kc.snappy_decode(compress(CompressionType.SNAPPY, data)) == data
    assert kc.lz4_decode(compress(CompressionType.LZ4, data)) == data
    assert kc.lz4_decode_old_kafka(compress(CompressionType.LZ4, data, magic=0)) == data
    assert kc.zstd_decode(compress(CompressionType.ZSTD, data)) == data


@pytest.mark.parametrize("data", SAMPLES, ids=lambda d: f"{len(d)}B")
def test_we_read_kafka_pythons(data):
    assert decompress(CompressionType.GZIP, kc.gzip_encode(data)) == data
    assert decompress(CompressionType.SNAPPY, kc.snappy_encode(data, xerial_compatible=True)) == data
    assert decompress(CompressionType.SNAPPY, kc.snappy_encode(data)) == data      # raw snappy
    assert decompress(CompressionType.LZ4, kc.lz4_encode(data)) == data
    assert decompress(CompressionType.LZ4, kc.lz4_encode_old_kafka(data), magic=0) == data
    assert decompress(CompressionType.ZSTD, kc.zstd_encode(data)) == data


def test_lz4_frame_headers_exact():
    data = b"kproto" * 100
    # magic 0: the pre-0.10 checksum hashed the frame magic too, as kafka-python's old-kafka writer does
    assert compress(CompressionType.LZ4, data, magic=0)[:7] == kc.lz4_encode_old_kafka(data)[:7]
    assert compress(CompressionType.LZ4, data, magic=0)[:7] == bytes.fromhex("04224d1860401a")
    # magic >= 1: FLG 0x60 (independent blocks, no checksums), BD 0x40 (64 KiB), correct HC
    assert compress(CompressionType.LZ4, data, magic=2)[:7] == bytes.fromhex("04224d18604082")


def test_lz4_header_checksum_checked_for_magic_1_only():
    framed = bytearray(compress(CompressionType.LZ4, b"abc" * 50, magic=2))
    framed[6] ^= 0xFF
    with pytest.raises(DecompressionError, match="header checksum"):
        decompress(CompressionType.LZ4, bytes(framed), magic=1)
    assert decompress(CompressionType.LZ4, bytes(framed), magic=0) == b"abc" * 50


def test_lz4_dependent_blocks_rejected():
    framed = bytearray(compress(CompressionType.LZ4, b"abc", magic=0))
    framed[4] &= ~0x20 & 0xFF
    with pytest.raises(DecompressionError, match="dependent block"):
        decompress(CompressionType.LZ4, bytes(framed), magic=0)


def test_xerial_header_exact_and_redpanda_variant():
    out = compress(CompressionType.SNAPPY, b"abc")
    assert out[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    # Redpanda wrote the version fields little-endian (kafka-python#2414): only the magic counts.
    redpanda = XERIAL_MAGIC + struct.pack("<ii", 1, 1) + out[16:]
    assert decompress(CompressionType.SNAPPY, redpanda) == b"abc"


def _zero_stream(codec: CompressionType, total: int) -> bytes:
    """``total`` zero bytes compressed without allocating them all at once."""
    chunk = bytes(1 << 20)
    if codec == CompressionType.GZIP:
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:
            for _ in range(total // len(chunk)):
                f.write(chunk)
        return buf.getvalue()
    if codec == CompressionType.ZSTD:
        c = zstandard.ZstdCompressor().compressobj()
        return b"".join(c.compress(chunk) for _ in range(total // len(chunk))) + c.flush()
    if codec == CompressionType.SNAPPY:
        block = snappy.compress(bytes(32 * 1024))
        n = total // (32 * 1024)
        return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(block)) + block) * n
    block = lz4.block.compress(bytes(64 * 1024), store_size=False)
    n = total // (64 * 1024)
    header = compress(CompressionType.LZ4, b"")[:7]
    return header + (struct.pack("<I", len(block)) + block) * n + b"\x00" * 4


@pytest.mark.parametrize("codec", [c for c in CODECS if c])
def test_bomb_is_an_error_not_an_oom(codec):
    bomb = _zero_stream(codec, 1 << 30)          # 1 GiB of zeros
    assert len(bomb) < 64 << 20
    with pytest.raises(DecompressionError, match="cap of 1048576"):
        decompress(codec, bomb, max_size=1 << 20)


@pytest.mark.parametrize("codec", [c for c in CODECS if c])
def test_a_bomb_allocates_at_most_the_cap_plus_one_step(codec):
    """No second copy: Python-level allocations (tracemalloc sees every bytes and
    bytearray the codecs hand back) stay within the cap plus one streaming step."""
    import tracemalloc
    from kproto.compression import _ZSTD_STEP
    cap = 16 << 20
    bomb = _zero_stream(codec, 256 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(DecompressionError, match=f"cap of {cap}"):
            decompress(codec, bomb, max_size=cap)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # bytearray growth over-allocates by 1/8; one step (at most zstd's) may be in flight
    assert peak < cap * 9 // 8 + _ZSTD_STEP + len(bomb), peak


def test_declared_sizes_are_checked_before_allocating():
    import tracemalloc
    n = 200 << 20
    varint = bytes([(n >> s & 0x7F) | (0x80 if n >> s + 7 else 0) for s in range(0, 28, 7)])
    declared_200mb = varint + b"\x00" * 690        # a raw snappy block of 694 bytes that says 200 MB
    c = zstandard.ZstdCompressor().compressobj(size=n)     # the frame header declares n
    zstd_200mb = b"".join(c.compress(bytes(1 << 20)) for _ in range(200)) + c.flush()
    assert zstandard.frame_content_size(zstd_200mb) == n
    tracemalloc.start()
    try:
        for codec, data in [(CompressionType.SNAPPY, declared_200mb), (CompressionType.ZSTD, zstd_200mb)]:
            with pytest.raises(DecompressionError, match="cap of 1048576"):
                decompress(codec, data, max_size=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    # Within the default cap (256 MB), a size the bytes cannot hold is refused or
    # streamed, never allocated: issue 10's 694-byte snappy batch declaring 200 MB.
    from kproto.compression import _ZSTD_MAX_RATIO, _ZSTD_STEP
    for codec, data, message, most in [
            (CompressionType.SNAPPY, declared_200mb, "a block of 694 bytes cannot hold the 209715200 bytes", 1 << 20),
            # the stream path decodes what the 694 bytes really hold, then finds the frame cut
            (CompressionType.ZSTD, zstd_200mb[:694], "zstd: truncated frame", 694 * _ZSTD_MAX_RATIO + _ZSTD_STEP)]:
        tracemalloc.start()
        try:
            with pytest.raises(DecompressionError, match=message):
                decompress(codec, data)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < most, (codec, peak)
    # an lz4 frame declaring its content size (FLG bit 3) past the cap
    sized = lz4.frame.compress(b"x" * 100, store_size=True, block_linked=False)
    with pytest.raises(DecompressionError, match="cap of 50"):
        decompress(CompressionType.LZ4, sized, max_size=50)
    assert decompress(CompressionType.LZ4, sized, max_size=100) == b"x" * 100


@pytest.mark.parametrize("codec", [c for c in CODECS if c])
@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300))
def test_garbage_raises_only_decompression_error(codec, data):
    try:
        decompress(codec, data)
    except DecompressionError:
        pass


@pytest.mark.parametrize("codec", [c for c in CODECS if c])
def test_truncated_streams_fail(codec):
    full = compress(codec, os.urandom(5000) + b"tail" * 1000)
    for cut in (1, 7, len(full) // 2, len(full) - 1):
        try:
            out = decompress(codec, full[:cut])
        except DecompressionError:
            continue
        assert len(out) < 9000   # never a silent full result


def test_codec_names():
    assert CompressionType.from_name("ZSTD") is CompressionType.ZSTD
    assert CompressionType.LZ4.name_lower == "lz4"
    with pytest.raises(UsageError):
        CompressionType.from_name("brotli")
    with pytest.raises(DecompressionError, match="unknown compression codec 6"):
        decompress(6, b"")
