"""Kafka's record formats: MessageSet v0/v1 and RecordBatch v2.

RecordBatch v2 (DefaultRecordBatch.java)::

    RecordBatch =>
      base_offset            int64    # byte 0
      batch_length           int32    # byte 8: bytes after this field
      partition_leader_epoch int32    # byte 12, outside the CRC so a broker can stamp it
      magic                  int8     # byte 16: 2
      crc                    uint32   # byte 17: CRC-32C of bytes 21..end
      attributes             int16    # byte 21
      last_offset_delta      int32
      base_timestamp         int64
      max_timestamp          int64
      producer_id            int64
      producer_epoch         int16
      base_sequence          int32
      records_count          int32    # byte 57
      records                [Record] # byte 61, compressed as one block per the codec

    attributes (int16): bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
      bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional, bit 5 control,
      bit 6 delete horizon set (KIP-534; the horizon is stored in base_timestamp).

    Record =>
      length varint, attributes int8 (unused), timestamp_delta varlong,
      offset_delta varint, key varbytes, value varbytes, headers [Header]
    Header => key varstring (UTF-8, never null), value varbytes

Legacy message (LegacyRecord.java), one per entry of a MessageSet::

    offset int64, message_size int32, crc uint32 (CRC-32 of magic..end),
    magic int8 (0|1), attributes int8 (bits 0-2 codec, bit 3 LogAppendTime in v1),
    timestamp int64 (v1 only), key bytes, value bytes

A compressed legacy message is a wrapper: its value is the compressed bytes of
a nested message set (v0: inner offsets absolute; v1: inner offsets relative,
the wrapper carries the absolute offset of the last inner message).

Lengths, counts and CRCs are derived on build: callers never supply them.
"""

from __future__ import annotations

import io
import zlib

from construct import (
    Check, ChecksumError, Const, Construct, Container, If, IfThenElse, LazyBound,
    Prefixed, Rebuild, StreamError, Struct, Terminated, len_, stream_read,
    stream_write, this,
)
from construct import Array as CountedArray
from construct.core import ExplicitError, evaluate

from kproto import compression
from kproto.errors import DecompressionError
from kproto.schemas.primitives import (
    Int8, Int16, Int32, Int64, NullableBytes, UInt32, VarArray, VarBytes, VarInt,
    VarLong, VarString,
)

# Attribute bits of RecordBatch v2.
CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40
# Byte offsets inside a batch (V2_OFFSETS, LEGACY_OFFSETS and the constants
# named from them) are derived from the header structs below.


def field_offsets(schema: Struct, *, then: str, **context) -> dict[str, int]:
    """The byte offset of each named field of a fixed-size header ``schema``
    (``context`` settles what sizes depend on, e.g. ``magic=1``), and of what
    follows it under the name ``then``: one table instead of literals."""
    out, at = {}, 0
    for sub in schema.subcons:
        if sub.name:
            out[sub.name] = at
        at += sub.sizeof(**context)
    out[then] = at
    return out


class Frame(Construct):
    """A length-prefixed, checksummed unit: a v2 batch or a legacy message.

    Kafka writes the CRC *before* the bytes it covers, and the length before
    both, so neither construct's ``Prefixed`` nor ``Checksum`` fits. On parse
    the whole unit is read by its length field, the CRC is verified (unless the
    context says ``verify_crc=False``), then the struct is parsed from exactly
    those bytes; on build the struct is built with zero placeholders and the
    length and CRC are patched in.
    """

    def __init__(self, subcon: Construct, *, crc_at: int, crc_from: int, crc_func) -> None:
        super().__init__()
        self.subcon = subcon
        self.crc_at = crc_at
        self.crc_from = crc_from
        self.crc_func = crc_func

    def _parse(self, stream, context, path):
        head = stream_read(stream, LOG_OVERHEAD, path)
        length = int.from_bytes(head[LENGTH_OFFSET:], "big", signed=True)
        if length < 0:
            raise StreamError(f"negative length {length}", path=path)
        data = head + stream_read(stream, length, path)
        if len(data) < self.crc_from:
            raise StreamError(f"length {length} too small for a header", path=path)
        params = context.get("_params") or {}
        if params.get("verify_crc", True):
            stored = int.from_bytes(data[self.crc_at:self.crc_at + 4], "big")
            computed = self.crc_func(data[self.crc_from:])
            if stored != computed:
                raise ChecksumError(f"crc mismatch (stored {stored}, computed {computed})", path=path)
        return self.subcon._parsereport(io.BytesIO(data), context, path)

    def _build(self, obj, stream, context, path):
        inner = io.BytesIO()
        obj = self.subcon._build(obj, inner, context, path)
        data = bytearray(inner.getvalue())
        data[LENGTH_OFFSET:LOG_OVERHEAD] = (len(data) - LOG_OVERHEAD).to_bytes(4, "big", signed=True)
        data[self.crc_at:self.crc_at + 4] = self.crc_func(data[self.crc_from:]).to_bytes(4, "big")
        stream_write(stream, bytes(data), len(data), path)
        return obj

    def _sizeof(self, context, path):
        raise ExplicitError("a frame has no fixed size", path=path)


class Compressed(Construct):
    """The rest of the unit, compressed as one block by ``codec`` (a context expression).

    On parse it reads to the end of the enclosing frame, decompresses (size
    capped, see kproto.compression) and parses ``subcon`` from the result.
    """

    def __init__(self, subcon: Construct, codec, magic) -> None:
        super().__init__()
        self.subcon = subcon
        self.codec = codec
        self.magic = magic

    def _parse(self, stream, context, path):
        codec = evaluate(self.codec, context)
        if codec == compression.CompressionType.NONE:
            return self._whole(self.subcon._parsereport(stream, context, path), stream, path)
        raw = stream.read()
        try:
            data = compression.decompress(codec, raw, magic=evaluate(self.magic, context))
        except (DecompressionError, ValueError) as e:
            raise StreamError(str(e), path=path) from None
        inner = io.BytesIO(data)
        return self._whole(self.subcon._parsereport(inner, context, path), inner, path)

    def _build(self, obj, stream, context, path):
        codec = evaluate(self.codec, context)
        inner = io.BytesIO()
        obj = self.subcon._build(obj, inner, context, path)
        data = inner.getvalue()
        if codec != compression.CompressionType.NONE:
            data = compression.compress(codec, data, magic=evaluate(self.magic, context))
        stream_write(stream, data, len(data), path)
        return obj

    @staticmethod
    def _whole(obj, stream, path):
        if stream.read(1):   # Kafka: "records still remaining"
            raise StreamError("bytes remain after the last record", path=path)
        return obj

    def _sizeof(self, context, path):
        raise ExplicitError("compressed data has no fixed size", path=path)


class UntilEof(Construct):
    """Elements until the stream ends. Unlike construct's GreedyRange, a
    malformed element is an error, not the silent end of the list."""

    def __init__(self, subcon: Construct) -> None:
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream, context, path):
        items = []
        while stream.read(1):
            stream.seek(-1, io.SEEK_CUR)
            items.append(self.subcon._parsereport(stream, context, f"{path} -> [{len(items)}]"))
        return items

    def _build(self, obj, stream, context, path):
        for i, item in enumerate(obj):
            self.subcon._build(item, stream, context, f"{path} -> [{i}]")
        return obj

    def _sizeof(self, context, path):
        raise ExplicitError("no fixed size", path=path)


def crc32c(data) -> int:
    """CRC-32C by the crc32c package, imported on first use: it takes ~30 ms
    to import, which ``kproto decode`` spares (kproto.records prefers the C
    extension's)."""
    from crc32c import crc32c as package_crc32c
    return package_crc32c(data)


# --- RecordBatch v2 -------------------------------------------------------

Header = Struct(
    "key" / VarString,
    "value" / VarBytes,
)

RecordBody = Struct(
    "attributes" / Int8,
    "timestamp_delta" / VarLong,
    "offset_delta" / VarInt,
    "key" / VarBytes,
    "value" / VarBytes,
    "headers" / VarArray(Header),
    Terminated,   # Kafka: "record still has remaining bytes"
)
Record = Prefixed(VarInt, RecordBody)

RecordBatchHeader = Struct(
    "base_offset" / Int64,
    "batch_length" / Rebuild(Int32, 0),      # patched by Frame
    "partition_leader_epoch" / Int32,
    "magic" / Const(2, Int8),
    "crc" / Rebuild(UInt32, 0),              # patched by Frame
    "attributes" / Int16,
    "last_offset_delta" / Int32,
    "base_timestamp" / Int64,
    "max_timestamp" / Int64,
    "producer_id" / Int64,
    "producer_epoch" / Int16,
    "base_sequence" / Int32,
    "records_count" / Rebuild(Int32, len_(this.records)),
)

#: name -> byte offset in a RecordBatch v2; "records" is where the records start.
V2_OFFSETS = field_offsets(RecordBatchHeader, then="records")
# What every magic starts with: base_offset/offset then the length of the rest.
LENGTH_OFFSET = V2_OFFSETS["batch_length"]
LOG_OVERHEAD = V2_OFFSETS["partition_leader_epoch"]      # offset + length
MAGIC_OFFSET = V2_OFFSETS["magic"]     # the same place in every magic: how a reader dispatches
RECORD_BATCH_OVERHEAD = V2_OFFSETS["records"]
V2_CRC_FROM = V2_OFFSETS["attributes"]                    # the CRC covers attributes..end

RecordBatch = Frame(
    Struct(
        *RecordBatchHeader.subcons,
        Check(this.records_count >= 0),
        "records" / Compressed(
            CountedArray(this.records_count, Record),
            codec=this.attributes & CODEC_MASK, magic=2,
        ),
    ),
    crc_at=V2_OFFSETS["crc"], crc_from=V2_CRC_FROM, crc_func=crc32c,
)

# Control records (key and value of each record in a control batch).
ControlRecordKey = Struct("version" / Int16, "type" / Int16)
EndTxnMarker = Struct("version" / Int16, "coordinator_epoch" / Int32)
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

# --- MessageSet v0/v1 -----------------------------------------------------

LegacyMessageHeader = Struct(
    "offset" / Int64,
    "message_size" / Rebuild(Int32, 0),      # patched by Frame
    "crc" / Rebuild(UInt32, 0),              # patched by Frame
    "magic" / Int8,
    Check((this.magic == 0) | (this.magic == 1)),
    "attributes" / Int8,
    "timestamp" / If(this.magic == 1, Int64),
)

#: magic -> name -> byte offset in a legacy message; "key" is where the key's length starts.
LEGACY_OFFSETS = {magic: field_offsets(LegacyMessageHeader, then="key", magic=magic) for magic in (0, 1)}
LEGACY_CRC_FROM = LEGACY_OFFSETS[0]["magic"]              # the CRC covers magic..end
#: crc..value lengths of an empty message (null key and value: two int32 -1s).
LEGACY_OVERHEAD = {magic: o["key"] - LOG_OVERHEAD + 2 * 4 for magic, o in LEGACY_OFFSETS.items()}
#: magic -> byte offset of the CRC.
CRC_OFFSET = {2: V2_OFFSETS["crc"], 1: LEGACY_OFFSETS[1]["crc"], 0: LEGACY_OFFSETS[0]["crc"]}
#: magic -> byte offset of the attributes.
ATTRIBUTES_OFFSET = {2: V2_OFFSETS["attributes"], 1: LEGACY_OFFSETS[1]["attributes"],
                     0: LEGACY_OFFSETS[0]["attributes"]}
assert LENGTH_OFFSET == LEGACY_OFFSETS[0]["message_size"] and MAGIC_OFFSET == LEGACY_OFFSETS[0]["magic"]

LegacyMessage = Frame(
    Struct(
        *LegacyMessageHeader.subcons,
        "key" / NullableBytes,
        "value" / IfThenElse(
            this.attributes & CODEC_MASK,
            # A wrapper: the value is a compressed inner message set.
            Prefixed(Int32, Compressed(
                UntilEof(LazyBound(lambda: LegacyMessage)),
                codec=this.attributes & CODEC_MASK, magic=this.magic,
            )),
            NullableBytes,
        ),
        Terminated,
    ),
    crc_at=LEGACY_OFFSETS[0]["crc"], crc_from=LEGACY_CRC_FROM, crc_func=zlib.crc32,
)

MessageSet = UntilEof(LegacyMessage)


class ByMagic(Construct):
    """One batch of any magic, dispatched on byte 16 of *each* batch (as Kafka's
    FileLogInputStream does; a fetch buffer may mix magics after an upgrade)."""

    def _parse(self, stream, context, path):
        start = stream.tell()
        head = stream_read(stream, MAGIC_OFFSET + 1, path)
        stream.seek(start)
        magic = head[MAGIC_OFFSET]
        if magic == 2:
            return RecordBatch._parsereport(stream, context, path)
        if magic in (0, 1):
            return LegacyMessage._parsereport(stream, context, path)
        raise StreamError(f"unknown magic {magic}", path=path)

    def _build(self, obj, stream, context, path):
        con = RecordBatch if obj["magic"] == 2 else LegacyMessage
        return con._build(obj, stream, context, path)

    def _sizeof(self, context, path):
        raise ExplicitError("no fixed size", path=path)


# A log segment or a fetch response's records field: batches of any magic.
Records = UntilEof(ByMagic())

__all__ = [
    "field_offsets", "V2_OFFSETS", "LEGACY_OFFSETS", "CRC_OFFSET", "ATTRIBUTES_OFFSET", "Header", "Record", "RecordBody", "RecordBatch", "RecordBatchHeader", "ControlRecordKey",
    "EndTxnMarker", "LegacyMessage", "LegacyMessageHeader", "MessageSet", "Records",
    "Container",
]
