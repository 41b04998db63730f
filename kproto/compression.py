"""Kafka's compression codecs, as its brokers and Java clients frame them.

    gzip    a GZIP stream (concatenated members accepted, as GZIPInputStream does)
    snappy  xerial framing (SnappyOutputStream) for every magic: a 16-byte header
            (82 'SNAPPY' 00, int32 version, int32 min-compatible) then
            (int32 BE length, raw snappy block)*; a payload without the 8-byte
            magic is read as one raw block, as snappy-java does
    lz4     an LZ4 frame, independent 64 KiB blocks, no checksums (KIP-57);
            magic 0 writes the *broken* header checksum of pre-0.10 clients,
            which hashed the frame magic too (KAFKA-3160), and reads without
            checking it
    zstd    a standard frame, read as a stream (Java producers omit the content size)

Every decompression is capped (``max_size``): a compression bomb is a
``DecompressionError``, not an out-of-memory. No codec error escapes as
anything else.
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from enum import IntEnum

import lz4.block
import snappy
import xxhash
import zstandard

from kproto.errors import DecompressionError, UsageError

DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024


class CompressionType(IntEnum):
    """Codec ids: attribute bits 0-2 of every magic."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def name_lower(self) -> str:
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> "CompressionType":
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise UsageError(f"unknown compression type {name!r} (none, gzip, snappy, lz4, zstd)") from None


def compress(codec: CompressionType | int, data: bytes | bytearray | memoryview, *, magic: int = 2) -> bytes:
    codec = CompressionType(codec)
    if codec == CompressionType.GZIP:
        return gzip.compress(bytes(data), compresslevel=6, mtime=0)
    if codec == CompressionType.SNAPPY:
        return _xerial_compress(bytes(data))
    if codec == CompressionType.LZ4:
        return _lz4_compress(bytes(data), broken_checksum=magic == 0)
    if codec == CompressionType.ZSTD:
        return _ZSTD_C.compress(bytes(data))
    return bytes(data)


def decompress(codec: CompressionType | int, data: bytes | bytearray | memoryview, *, magic: int = 2,
               max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    try:
        codec = CompressionType(codec)
    except ValueError:
        raise DecompressionError(f"unknown compression codec {codec}") from None
    data = bytes(data)
    if codec == CompressionType.GZIP:
        return _gzip_decompress(data, max_size)
    if codec == CompressionType.SNAPPY:
        return _snappy_decompress(data, max_size)
    if codec == CompressionType.LZ4:
        return _lz4_decompress(data, max_size, check_header=magic != 0)
    if codec == CompressionType.ZSTD:
        return _zstd_decompress(data, max_size)
    return data


def _too_big(codec: str, max_size: int) -> DecompressionError:
    return DecompressionError(f"{codec}: decompressed size exceeds the cap of {max_size} bytes")


# --- gzip -------------------------------------------------------------------

def _gzip_decompress(data: bytes, max_size: int) -> bytes:
    out = bytearray()
    try:
        while True:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk = d.decompress(data, max_size + 1 - len(out))
            out += chunk
            while d.unconsumed_tail and len(out) <= max_size:
                out += d.decompress(d.unconsumed_tail, max_size + 1 - len(out))
            if len(out) > max_size:
                raise _too_big("gzip", max_size)
            if not d.eof:
                raise DecompressionError("gzip: truncated stream")
            data = d.unused_data
            if not data.strip(b"\x00"):     # trailing padding after the last member
                return bytes(out)
    except zlib.error as e:
        raise DecompressionError(f"gzip: {e}") from None


# --- snappy -----------------------------------------------------------------

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024      # snappy-java's default block size


def _xerial_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    for i in range(0, len(data), _XERIAL_BLOCK):
        block = snappy.compress(data[i:i + _XERIAL_BLOCK])
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def _snappy_length(block: bytes) -> int:
    """The uncompressed length a raw snappy block declares (its leading uvarint)."""
    value = shift = 0
    for i, b in enumerate(block[:5]):
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value
        shift += 7
    raise DecompressionError("snappy: invalid block length header")


def _snappy_block(block: bytes, budget: int, max_size: int) -> bytes:
    if _snappy_length(block) > budget:
        raise _too_big("snappy", max_size)
    try:
        return snappy.decompress(block)
    except Exception as e:   # python-snappy raises several unrelated types
        raise DecompressionError(f"snappy: {e or type(e).__name__}") from None


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return _snappy_block(data, max_size, max_size)
    # Only the magic is checked: Redpanda writes the version fields little-endian.
    pos, out = 16, bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise DecompressionError("snappy: truncated xerial block header")
        (n,) = struct.unpack_from(">i", data, pos)
        if n < 0 or pos + 4 + n > len(data):
            raise DecompressionError(f"snappy: xerial block length {n} runs past the data")
        out += _snappy_block(data[pos + 4:pos + 4 + n], max_size - len(out), max_size)
        pos += 4 + n
    return bytes(out)


# --- lz4 --------------------------------------------------------------------

LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG = 0x60           # version 01, independent blocks, no checksums, no content size
_LZ4_BD = 0x40            # 64 KiB max block
_LZ4_BLOCK = 64 * 1024
_LZ4_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}


def _lz4_hc(header: bytes) -> int:
    return (xxhash.xxh32_intdigest(header, 0) >> 8) & 0xFF


def _lz4_compress(data: bytes, *, broken_checksum: bool) -> bytes:
    descriptor = bytes([_LZ4_FLG, _LZ4_BD])
    hc = _lz4_hc(LZ4_MAGIC + descriptor if broken_checksum else descriptor)
    out = bytearray(LZ4_MAGIC + descriptor + bytes([hc]))
    for i in range(0, len(data), _LZ4_BLOCK):
        chunk = data[i:i + _LZ4_BLOCK]
        block = lz4.block.compress(chunk, store_size=False)
        if len(block) >= len(chunk):      # incompressible: stored, high bit set
            out += struct.pack("<I", len(chunk) | 0x80000000) + chunk
        else:
            out += struct.pack("<I", len(block)) + block
    out += b"\x00\x00\x00\x00"
    return bytes(out)


def _lz4_decompress(data: bytes, max_size: int, *, check_header: bool) -> bytes:
    if len(data) < 7 or not data.startswith(LZ4_MAGIC):
        raise DecompressionError("lz4: not an LZ4 frame (bad magic)")
    flg, bd = data[4], data[5]
    if flg >> 6 != 1:
        raise DecompressionError(f"lz4: unsupported frame version {flg >> 6}")
    if not flg & 0x20:
        raise DecompressionError("lz4: dependent block stream is unsupported")
    if flg & 0x02 or bd & 0x8F:
        raise DecompressionError("lz4: reserved bits set in the frame descriptor")
    block_max = _LZ4_BLOCK_SIZES.get((bd >> 4) & 0x07)
    if block_max is None:
        raise DecompressionError(f"lz4: unsupported block size id {(bd >> 4) & 0x07}")
    pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if pos >= len(data):
        raise DecompressionError("lz4: truncated frame descriptor")
    if check_header and data[pos] != _lz4_hc(data[4:pos]):
        raise DecompressionError("lz4: frame header checksum mismatch")
    pos += 1
    block_checksum = bool(flg & 0x10)
    out = bytearray()
    while True:
        if pos + 4 > len(data):
            raise DecompressionError("lz4: truncated block header")
        (size,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if size == 0:
            return bytes(out)     # end mark; a content checksum may follow, unchecked (as Kafka)
        stored, size = size & 0x80000000, size & 0x7FFFFFFF
        if size > block_max or pos + size > len(data):
            raise DecompressionError(f"lz4: block of {size} bytes runs past the frame")
        block = data[pos:pos + size]
        pos += size + (4 if block_checksum else 0)
        if len(out) + (size if stored else 0) > max_size:
            raise _too_big("lz4", max_size)
        if stored:
            out += block
        else:
            try:
                out += lz4.block.decompress(block, uncompressed_size=block_max)
            except lz4.block.LZ4BlockError as e:
                raise DecompressionError(f"lz4: {e}") from None
        if len(out) > max_size:
            raise _too_big("lz4", max_size)


# --- zstd -------------------------------------------------------------------

_ZSTD_C = zstandard.ZstdCompressor(level=3)
_ZSTD_D = zstandard.ZstdDecompressor()


def _zstd_decompress(data: bytes, max_size: int) -> bytes:
    # Fed in 4 KiB slices: a slice can inflate to at most ~128 MiB (RLE blocks),
    # so the cap holds within that margin; eof tells a cut frame from a whole one.
    out = bytearray()
    pos, n = 0, len(data)
    try:
        while pos < n:
            d = _ZSTD_D.decompressobj()
            while pos < n and not d.eof:
                chunk = data[pos:pos + 4096]
                out += d.decompress(chunk)
                pos += len(chunk)
                if len(out) > max_size:
                    raise _too_big("zstd", max_size)
            if not d.eof:
                raise DecompressionError("zstd: truncated frame")
            rest = d.unused_data          # the next frame (Kafka allows several)
            if rest:
                pos -= len(rest)
    except zstandard.ZstdError as e:
        raise DecompressionError(f"zstd: {e}") from None
    return bytes(out)
