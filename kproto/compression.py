"""Kafka's compression codecs, framed as its brokers and Java clients frame them.

    gzip    a GZIP stream (level 6, mtime 0); further members are read, trailing
            bytes that are no gzip header are ignored (java.util.zip.GZIPInputStream)
    snappy  xerial framing (SnappyOutputStream) for every magic: a 16-byte header
            (82 'SNAPPY' 00, int32 BE version 1, int32 BE min-compatible 1) then
            (int32 BE length, raw snappy block)*; a payload without the 8-byte
            magic is read as one raw block, as snappy-java does
    lz4     an LZ4 frame, independent 64 KiB blocks, no checksums (KIP-57);
            magic 0 writes the *broken* header checksum of pre-0.10 clients,
            which hashed the frame magic too (KAFKA-3160), and reads without
            checking it
    zstd    a standard frame, read as a stream: Java producers omit the content
            size and a payload may hold several frames

Every decompression is capped (``max_size``) and stops as soon as the output
would pass the cap, so a compression bomb is a ``DecompressionError``, not an
out-of-memory. Output goes into one buffer, never a list joined at the end:
streams (gzip, zstd without a declared size, lz4 blocks) are decoded in steps
of at most ``_STEP`` bytes (zstd: ``_ZSTD_STEP``) appended to a bytearray, and a size declared in a
header (snappy blocks, lz4 content size, a zstd frame's) is checked against the
cap before anything is allocated; peak memory is the output plus one step. No
codec library's exception escapes as anything else.
"""

from __future__ import annotations

import struct
import threading
import zlib
from enum import IntEnum

import cramjam          # python-snappy >= 0.7 is a thin shim over it; used directly for
import lz4.block        # decompress_raw_len (cap check before allocating) and _into
import lz4.frame
import xxhash
import zstandard

from kproto.errors import DecompressionError, UsageError

DEFAULT_MAX_DECOMPRESSED_SIZE: int = 256 * 1024 * 1024   # cap, so a bomb is an error not an OOM
_STEP = 1 << 20             # output per streaming step: the most held twice at any time


class CompressionType(IntEnum):
    """Kafka's codec ids: attribute bits 0-2 of every magic."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def name_lower(self) -> str:
        """The name kafka-dump-log prints (``compresscodec: lz4``) and configs use."""
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> "CompressionType":
        try:
            return cls[name.strip().upper()]
        except (KeyError, AttributeError):
            raise UsageError(f"unknown compression type {name!r} "
                             "(expected none, gzip, snappy, lz4 or zstd)") from None


def compress(codec: CompressionType | int, data: bytes | bytearray | memoryview, *,
             magic: int = 2) -> bytes:
    codec = CompressionType(codec)
    if codec == CompressionType.GZIP:
        return zlib.compress(data, 6, 31)      # wbits 31: gzip wrapper, mtime 0 -> deterministic
    if codec == CompressionType.SNAPPY:
        return _xerial_compress(data)
    if codec == CompressionType.LZ4:
        return _lz4_compress(data, broken_hc=magic == 0)
    if codec == CompressionType.ZSTD:
        return _zstd_c().compress(data)
    return bytes(data)


def decompress(codec: CompressionType | int, data: bytes | bytearray | memoryview, *,
               magic: int = 2, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes | bytearray:
    """``data`` decompressed, at most ``max_size`` bytes (DecompressionError past
    it or on any bad input); a bytearray where building it in place saved a copy."""
    try:
        codec = CompressionType(codec)
    except ValueError:
        raise DecompressionError(f"unknown compression codec {codec}") from None
    data = bytes(data)         # no copy for bytes; the parsers below slice and compare it
    if codec == CompressionType.GZIP:
        return _gzip_decompress(data, max_size)
    if codec == CompressionType.SNAPPY:
        return _snappy_decompress(data, max_size)
    if codec == CompressionType.LZ4:
        return _lz4_decompress(data, max_size, check_hc=magic != 0)
    if codec == CompressionType.ZSTD:
        return _zstd_decompress(data, max_size)
    return data


def _too_big(codec: str, max_size: int) -> DecompressionError:
    return DecompressionError(f"{codec}: decompressed size exceeds the cap of {max_size} bytes")


# --- gzip -------------------------------------------------------------------

def _gzip_decompress(data: bytes, max_size: int) -> bytearray:
    out = bytearray()
    try:
        while True:
            d = zlib.decompressobj(31)
            pending: bytes | memoryview = data
            while True:
                # max_length bounds what zlib allocates per step; one byte over
                # the budget is enough to know the cap is passed.
                chunk = d.decompress(pending, min(_STEP, max_size - len(out) + 1))
                out += chunk
                if len(out) > max_size:
                    raise _too_big("gzip", max_size)
                pending = d.unconsumed_tail
                if d.eof or (not pending and not chunk):
                    break
            if not d.eof:
                raise DecompressionError("gzip: truncated stream")
            data = d.unused_data
            # GZIPInputStream reads a following member and ignores anything else.
            if not data.startswith(b"\x1f\x8b"):
                return out
    except zlib.error as e:
        raise DecompressionError(f"gzip: {e}") from None


# --- snappy -----------------------------------------------------------------

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024      # snappy-java's default block size
_snappy = cramjam.snappy
_BE_I32 = struct.Struct(">i")


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    out = [XERIAL_HEADER]
    for i in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(_snappy.compress_raw(view[i:i + _XERIAL_BLOCK]))
        out += (_BE_I32.pack(len(block)), block)
    return b"".join(out)


# Snappy's densest element is a 3-byte copy of 64 bytes: no block yields more.
_SNAPPY_MAX_RATIO = 22


def _snappy_len(block: memoryview, budget: int, max_size: int) -> int:
    """The length a raw block declares, checked against the budget and against
    what its bytes can hold, before anything is allocated."""
    try:
        n = _snappy.decompress_raw_len(block)
    except Exception as e:      # cramjam.DecompressionError and friends
        raise DecompressionError(f"snappy: {e}") from None
    if n > budget:
        raise _too_big("snappy", max_size)
    if n > len(block) * _SNAPPY_MAX_RATIO:
        raise DecompressionError(f"snappy: a block of {len(block)} bytes cannot hold the {n} bytes it declares")
    return n


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    if not data:
        return b""      # snappy-java reads an empty stream as empty
    view = memoryview(data)
    if not data.startswith(XERIAL_MAGIC):
        blocks = [(view, _snappy_len(view, max_size, max_size))]
    else:
        # Only the magic is checked: Redpanda wrote the versions little-endian
        # (kafka-python#2414). First pass: block bounds and declared sizes,
        # so the cap is enforced before any output is allocated.
        blocks, total, pos, end = [], 0, 16, len(data)
        if end < 16:
            raise DecompressionError("snappy: truncated xerial header")
        while pos < end:
            if pos + 4 > end:
                raise DecompressionError("snappy: truncated xerial block length")
            (n,) = _BE_I32.unpack_from(data, pos)
            if n < 0 and data.startswith(XERIAL_MAGIC, pos) and pos + 16 <= end:
                pos += 16           # concatenated xerial streams, as snappy-java accepts
                continue
            if n <= 0 or pos + 4 + n > end:
                raise DecompressionError(f"snappy: xerial block length {n} at byte {pos} "
                                         "runs past the data")
            block = view[pos + 4:pos + 4 + n]
            size = _snappy_len(block, max_size - total, max_size)
            blocks.append((block, size))
            total += size
            pos += 4 + n
    out = bytearray(sum(size for _, size in blocks))
    target = memoryview(out)
    at = 0
    try:
        for block, size in blocks:
            _snappy.decompress_raw_into(block, target[at:at + size])
            at += size
    except Exception as e:
        raise DecompressionError(f"snappy: {e}") from None
    finally:
        target.release()
    return out


# --- lz4 --------------------------------------------------------------------

LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_LE_U32 = struct.Struct("<I")


def _lz4_hc(descriptor: bytes | memoryview) -> int:
    return (xxhash.xxh32_intdigest(descriptor) >> 8) & 0xFF


def _lz4_compress(data: bytes | bytearray | memoryview, *, broken_hc: bool) -> bytes:
    # lz4.frame with these settings writes exactly Kafka's header:
    # FLG 0x60 (v01, independent blocks, no checksums, no size), BD 0x40 (64 KiB).
    frame = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                               content_checksum=False, block_checksum=False, store_size=False)
    if not broken_hc:
        return frame
    hc = _lz4_hc(frame[:6])     # KAFKA-3160: magic bytes hashed too
    return frame[:6] + bytes((hc,)) + frame[7:]


def _lz4_decompress(data: bytes, max_size: int, *, check_hc: bool) -> bytes:
    # Kafka's Lz4BlockInputStream rules: rejects what it rejects, skips what it skips.
    if len(data) < 7 or not data.startswith(LZ4_MAGIC):
        raise DecompressionError("lz4: not an LZ4 frame (bad magic)")
    flg, bd = data[4], data[5]
    if flg & 0x03 or bd & 0x8F:
        raise DecompressionError("lz4: reserved bits set in the frame descriptor")
    if not flg & 0x20:
        raise DecompressionError("lz4: dependent block stream is unsupported")
    if flg >> 6 != 1:
        raise DecompressionError(f"lz4: frame version {flg >> 6} is unsupported")
    block_max = _LZ4_BLOCK_MAX.get(bd >> 4)
    if block_max is None:
        raise DecompressionError(f"lz4: block size id {bd >> 4} is unsupported (4-7)")
    pos = 14 if flg & 0x08 else 6           # content size: only checked against the cap; covered by HC
    if pos >= len(data):
        raise DecompressionError("lz4: truncated frame descriptor")
    if flg & 0x08 and int.from_bytes(data[6:14], "little") > max_size:
        raise _too_big("lz4", max_size)
    if check_hc and data[pos] != _lz4_hc(data[4:pos]):
        raise DecompressionError("lz4: frame header checksum mismatch")
    pos += 1
    block_checksum = flg & 0x10
    view = memoryview(data)
    out = bytearray()
    end = len(data)
    while True:
        if pos + 4 > end:
            raise DecompressionError("lz4: truncated frame (no end mark)")
        (size,) = _LE_U32.unpack_from(data, pos)
        pos += 4
        if size == 0:       # end mark; a content checksum may follow, unchecked as in Kafka
            return out
        stored, size = size & 0x80000000, size & 0x7FFFFFFF
        if size > block_max:
            raise DecompressionError(f"lz4: block size {size} exceeds the maximum {block_max}")
        if pos + size + (4 if block_checksum else 0) > end:
            raise DecompressionError("lz4: truncated block")
        block = view[pos:pos + size]
        pos += size
        if block_checksum:
            if xxhash.xxh32_intdigest(block) != _LE_U32.unpack_from(data, pos)[0]:
                raise DecompressionError("lz4: block checksum mismatch")
            pos += 4
        budget = max_size - len(out)
        if stored:
            if size > budget:
                raise _too_big("lz4", max_size)
            out += block
        else:
            out += _lz4_block(block, block_max, budget, max_size)


def _lz4_block(block: memoryview, block_max: int, budget: int, max_size: int) -> bytes:
    # Decode into at most the budget (+1 so an empty budget still decodes an
    # empty block): lz4 fails if the block needs more, so nothing past the cap
    # is allocated; only then decode in full to tell "too big" from "corrupt".
    limit = min(block_max, budget + 1)
    try:
        chunk = lz4.block.decompress(block, uncompressed_size=limit)
    except (lz4.block.LZ4BlockError, ValueError) as e:
        if limit < block_max:
            try:
                lz4.block.decompress(block, uncompressed_size=block_max)
            except (lz4.block.LZ4BlockError, ValueError):
                pass
            else:
                raise _too_big("lz4", max_size) from None
        raise DecompressionError(f"lz4: corrupt block ({e})") from None
    if len(chunk) > budget:
        raise _too_big("lz4", max_size)
    return chunk


# --- zstd -------------------------------------------------------------------

# Not thread safe (the C code drops the GIL mid-call), so one pair per thread.
_zstd_local = threading.local()
_ZSTD_LEVEL = 3             # Java's (zstd-jni) default
# A zstd block yields at most 128 KiB and takes at least 4 bytes (RLE), so n
# input bytes give at most n * 32768 bytes: feeding budget >> 15 at a time
# keeps output within about a block of the cap.
_ZSTD_MIN_FEED = 32
_ZSTD_STEP = _STEP << 3     # output bound per feed: decompressobj cannot stop mid-feed
_ZSTD_MAX_RATIO = 1 << 15


def _zstd_c() -> zstandard.ZstdCompressor:
    c = getattr(_zstd_local, "c", None)
    if c is None:
        c = _zstd_local.c = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
    return c


def _zstd_d() -> zstandard.ZstdDecompressor:
    d = getattr(_zstd_local, "d", None)
    if d is None:
        d = _zstd_local.d = zstandard.ZstdDecompressor()
    return d


def _zstd_decompress(data: bytes, max_size: int) -> bytes:
    dctx = _zstd_d()
    try:
        # Fast path: one frame that declares its size (kproto's, librdkafka's).
        size = zstandard.frame_content_size(data)
        if size > max_size:
            raise _too_big("zstd", max_size)
        # A declared size is trusted for the allocation only if the frame's bytes
        # could hold it (a block yields at most 128 KiB from a 4-byte RLE block);
        # else the capped stream path finds out what the frame really holds.
        if 0 < size <= len(data) * _ZSTD_MAX_RATIO:     # 0 is returned unchecked by zstandard
            return dctx.decompress(data, allow_extra_data=False)
    except zstandard.ZstdError:
        pass                    # no size, several frames, or bad: the stream path decides
    view = memoryview(data)
    out = bytearray()
    pos, end = 0, len(data)
    try:
        while pos < end:        # one decompressobj per frame: eof marks the frame's end
            d = dctx.decompressobj()
            while not d.eof:
                if pos >= end:
                    raise DecompressionError("zstd: truncated frame")
                feed = view[pos:pos + max(_ZSTD_MIN_FEED, min(_ZSTD_STEP, max_size - len(out)) >> 15)]
                pos += len(feed)
                out += d.decompress(feed)
                if len(out) > max_size:
                    raise _too_big("zstd", max_size)
            pos -= len(d.unused_data)       # the next frame starts in the last feed
    except (zstandard.ZstdError, ValueError) as e:
        raise DecompressionError(f"zstd: {e}") from None
    if not end:
        raise DecompressionError("zstd: empty payload")
    return out
