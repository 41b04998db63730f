"""Kafka's primitive types as construct classes.

The protocol guide's vocabulary (https://kafka.apache.org/protocol#protocol_types):

    INT8..INT64, UINT32       big-endian two's complement (UINT16, UINT32 unsigned)
    FLOAT64                   IEEE 754 binary64, big-endian
    VARINT, VARLONG           zigzag, base-128, at most 5 / 10 bytes
    UNSIGNED_VARINT           base-128, at most 5 bytes
    STRING, NULLABLE_STRING   int16 length (-1 = null), UTF-8
    BYTES, NULLABLE_BYTES     int32 length (-1 = null)
    COMPACT_*                 unsigned varint length + 1 (0 = null)
    ARRAY, COMPACT_ARRAY      int32 count (-1 = null) / unsigned varint count + 1
    UUID                      16 bytes
    TAGGED_FIELDS             unsigned varint count, then (tag, size, bytes) each

Every class raises construct's own errors (with construct's path) so that one
wrapper, ``kproto.schemas.parse``, can turn any failure into a
``DecodeError`` with byte position and field path.

Varints are bounded (Kafka's ByteUtils rejects a sixth / eleventh byte), unlike
construct's ``VarInt``, which would read a 20-byte varint into a 134-bit int.
"""

from __future__ import annotations

import uuid as _uuid

from construct import (
    Construct, Flag, Float64b, Int8sb, Int16sb, Int16ub, Int32sb, Int32ub, Int64sb,
    IntegerError, StreamError, stream_read, stream_write,
)
from construct.core import ExplicitError

Int8 = Int8sb
Int16 = Int16sb
Int32 = Int32sb
Int64 = Int64sb
UInt16 = Int16ub
UInt32 = Int32ub
Float64 = Float64b
Boolean = Flag


class UnsignedVarInt(Construct):
    """Base-128 little-endian groups, high bit = continuation, at most ``max_bytes``."""

    def __init__(self, max_bytes: int = 5) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self.max_value = (1 << (32 if max_bytes <= 5 else 64)) - 1

    def _parse(self, stream, context, path):
        value = shift = 0
        for _ in range(self.max_bytes):
            b = stream_read(stream, 1, path)[0]
            value |= (b & 0x7F) << shift
            if b < 0x80:
                if value > self.max_value:
                    raise IntegerError(f"varint value {value} out of range for {self.max_bytes} bytes", path=path)
                return value
            shift += 7
        raise IntegerError(f"varint longer than {self.max_bytes} bytes", path=path)

    def _build(self, obj, stream, context, path):
        if not isinstance(obj, int) or obj < 0 or obj > self.max_value:
            raise IntegerError(f"value {obj!r} not an unsigned varint of {self.max_bytes} bytes", path=path)
        data = encode_uvarint(obj)
        stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context, path):
        raise ExplicitError("varint has no fixed size", path=path)


class ZigZagVarInt(Construct):
    """Signed zigzag varint: VARINT (32-bit, 5 bytes) or VARLONG (64-bit, 10 bytes)."""

    def __init__(self, bits: int) -> None:
        super().__init__()
        self.bits = bits
        self.unsigned = UnsignedVarInt(5 if bits == 32 else 10)
        self.min = -(1 << (bits - 1))
        self.max = (1 << (bits - 1)) - 1

    def _parse(self, stream, context, path):
        v = self.unsigned._parse(stream, context, path)
        return (v >> 1) ^ -(v & 1)

    def _build(self, obj, stream, context, path):
        if not isinstance(obj, int) or not self.min <= obj <= self.max:
            raise IntegerError(f"value {obj!r} out of range for a {self.bits}-bit varint", path=path)
        data = encode_uvarint(zigzag(obj, self.bits))
        stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context, path):
        raise ExplicitError("varint has no fixed size", path=path)


def zigzag(value: int, bits: int = 64) -> int:
    return (value << 1) ^ (value >> (bits - 1))


def encode_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


UVarInt = UnsignedVarInt(5)
VarInt = ZigZagVarInt(32)
VarLong = ZigZagVarInt(64)


class Deferred:
    """``length`` bytes that the encoder does not hold: ``Sized`` writes their
    length prefix and records where they go (``at``, a position in the built
    bytes) without writing them, so a broker can send a segment file region
    there (sendfile) instead of copying it through Python."""

    __slots__ = ("length", "at")

    def __init__(self, length: int) -> None:
        self.length = length
        self.at = -1


def null_where_required(rule: str | None, context, path: str) -> bool:
    """A null length or count where the schema allows none: let through (and
    noted as ``(path, rule)`` in the parse's ``null_warnings`` list) only by a
    lenient codec (``rule`` set) parsed with such a list, which is what a
    capture decoder does: it shows what a broker sent, spec or not."""
    params = context.get("_params") if rule is not None else None
    sink = params.get("null_warnings") if params else None
    if sink is None:
        return False
    sink.append((path, rule))
    return True


class Sized(Construct):
    """A length-prefixed byte string or text, Kafka style.

    ``length`` is the prefix construct; ``compact`` stores length + 1 (so 0 is
    null); ``nullable`` allows the null marker (-1, or 0 when compact);
    ``text`` decodes UTF-8; ``null_rule`` (lenient codecs only, see
    ``null_where_required``) lets a null through where it is not allowed.
    """

    def __init__(self, length: Construct, *, nullable: bool, compact: bool = False,
                 text: bool = False, null_rule: str | None = None) -> None:
        super().__init__()
        self.length = length
        self.nullable = nullable
        self.compact = compact
        self.text = text
        self.null_rule = null_rule

    def _parse(self, stream, context, path):
        n = self.length._parsereport(stream, context, path)
        if self.compact:
            n -= 1
        if n < 0:
            if n == -1 and (self.nullable or null_where_required(self.null_rule, context, path)):
                return None
            raise IntegerError(f"invalid length {n}", path=path)
        data = stream_read(stream, n, path)
        if self.text:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise StreamError(f"invalid UTF-8: {e.reason} at {e.start}", path=path) from None
        return data

    def _build(self, obj, stream, context, path):
        if obj is None:
            if not self.nullable:
                raise IntegerError("null where a value is required", path=path)
            self.length._build(0 if self.compact else -1, stream, context, path)
            return obj
        if isinstance(obj, Deferred):
            self.length._build(obj.length + 1 if self.compact else obj.length, stream, context, path)
            obj.at = stream.tell()
            return obj
        data = obj.encode("utf-8") if self.text else bytes(obj)
        self.length._build(len(data) + 1 if self.compact else len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context, path):
        raise ExplicitError("length-prefixed field has no fixed size", path=path)


String = Sized(Int16, nullable=False, text=True)
NullableString = Sized(Int16, nullable=True, text=True)
Bytes = Sized(Int32, nullable=False)
NullableBytes = Sized(Int32, nullable=True)
CompactString = Sized(UVarInt, nullable=False, compact=True, text=True)
CompactNullableString = Sized(UVarInt, nullable=True, compact=True, text=True)
CompactBytes = Sized(UVarInt, nullable=False, compact=True)
CompactNullableBytes = Sized(UVarInt, nullable=True, compact=True)
# Record-level fields: zigzag varint length, -1 = null.
VarBytes = Sized(VarInt, nullable=True)
VarString = Sized(VarInt, nullable=False, text=True)


class KArray(Construct):
    """ARRAY / COMPACT_ARRAY / record-level varint arrays: a count, then elements.

    A count below -1 (or null where not nullable) is an error, never an empty
    list; ``null_rule`` as for ``Sized``.
    """

    def __init__(self, count: Construct, subcon: Construct, *, nullable: bool = False,
                 compact: bool = False, null_rule: str | None = None) -> None:
        super().__init__()
        self.count = count
        self.subcon = subcon
        self.nullable = nullable
        self.compact = compact
        self.null_rule = null_rule

    def _parse(self, stream, context, path):
        n = self.count._parsereport(stream, context, path)
        if self.compact:
            n -= 1
        if n < 0:
            if n == -1 and (self.nullable or null_where_required(self.null_rule, context, path)):
                return None
            raise IntegerError(f"invalid array count {n}", path=path)
        sub = self.subcon
        return [sub._parsereport(stream, context, f"{path} -> [{i}]") for i in range(n)]

    def _build(self, obj, stream, context, path):
        if obj is None:
            if not self.nullable:
                raise IntegerError("null array where a value is required", path=path)
            self.count._build(0 if self.compact else -1, stream, context, path)
            return obj
        self.count._build(len(obj) + 1 if self.compact else len(obj), stream, context, path)
        for i, item in enumerate(obj):
            self.subcon._build(item, stream, context, f"{path} -> [{i}]")
        return obj

    def _sizeof(self, context, path):
        raise ExplicitError("array has no fixed size", path=path)


def Array(subcon: Construct, *, nullable: bool = False, null_rule: str | None = None) -> KArray:
    return KArray(Int32, subcon, nullable=nullable, null_rule=null_rule)


def CompactArray(subcon: Construct, *, nullable: bool = False, null_rule: str | None = None) -> KArray:
    return KArray(UVarInt, subcon, nullable=nullable, compact=True, null_rule=null_rule)


def VarArray(subcon: Construct) -> KArray:
    """Record headers: zigzag varint count."""
    return KArray(VarInt, subcon)


class Uuid(Construct):
    def _parse(self, stream, context, path):
        return _uuid.UUID(bytes=stream_read(stream, 16, path))

    def _build(self, obj, stream, context, path):
        stream_write(stream, (obj or _uuid.UUID(int=0)).bytes, 16, path)
        return obj

    def _sizeof(self, context, path):
        return 16


UUID = Uuid()


class TaggedFields(Construct):
    """TAGGED_FIELDS (KIP-482): count, then (tag, size, value) in ascending tag order.

    Every tag comes back raw under ``"_unknown"`` ({tag: bytes}) and is written
    back on build: kproto.schemas.message names the tags a message defines, and
    a tool that rewrites traffic must not drop what it does not understand.
    """

    def _parse(self, stream, context, path):
        from construct import Container
        unknown = {}
        count = UVarInt._parse(stream, context, path)
        last = -1
        for _ in range(count):
            tag = UVarInt._parse(stream, context, path)
            if tag <= last:
                raise IntegerError(f"tagged field {tag} out of order", path=path)
            last = tag
            size = UVarInt._parse(stream, context, path)
            unknown[tag] = stream_read(stream, size, path)
        return Container(_unknown=unknown)

    def _build(self, obj, stream, context, path):
        items = (obj or {}).get("_unknown") or {}
        out = bytearray(encode_uvarint(len(items)))
        for tag in sorted(items):
            out += encode_uvarint(tag) + encode_uvarint(len(items[tag])) + items[tag]
        stream_write(stream, bytes(out), len(out), path)
        return obj

    def _sizeof(self, context, path):
        raise ExplicitError("tagged fields have no fixed size", path=path)
