"""The record API: batches read lazily from bytes, records decoded on demand,
builders for every magic and codec.

Reading is two-level, like Kafka's FileRecords/MemoryRecords:

* ``iter_batches(buf)`` walks batch headers only (one ``struct`` unpack each,
  derived from the schema's fixed fields) and checks sizes and CRCs: enough
  for offset assignment, index building, fetch and shallow dump-log;
* ``batch.records()`` decodes (and decompresses) on demand through a decoder
  generated from ``kproto.schemas.records.RecordBody`` (see kproto.fastpath.python).

The schema path (``kproto.schemas.parse`` over ``schemas.records``) yields the
same objects; tests/records/codec_check.py proves it on every fixture.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Iterable, Iterator, NamedTuple, Sequence

from construct import Array, Container, Struct

from kproto import accel, fastpath, schemas
from kproto.common import now_ms
from kproto.compression import CompressionType, compress, decompress
from kproto.errors import CorruptRecordError, DecodeError, IncompleteBatchError
from kproto.schemas import records as S

__all__ = [
    "CompressionType", "TimestampType", "Record", "LegacyRecord", "RecordBatch", "LegacyBatch",
    "NewRecord", "ControlRecord", "iter_batches", "build_record_batch", "build_message_set",
    "build_control_batch", "control_record",
]

INT32_MAX = 2**31 - 1


class TimestampType:
    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1
    NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


@dataclass(frozen=True, slots=True)
class Record:
    """One record as users hold it; ``offset`` and ``timestamp`` are absolute.
    ``headers`` are ordered ``(key, value)`` pairs; keys may repeat."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0


@dataclass(frozen=True, slots=True)
class LegacyRecord(Record):
    """A v0/v1 message: a plain one, or an inner message of a wrapper."""

    magic: int = 1
    crc: int = 0
    timestamp_type: int = TimestampType.CREATE_TIME

    @property
    def compression(self) -> CompressionType:
        return CompressionType(self.attributes & S.CODEC_MASK)


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """Key (ControlRecordType) and, for markers, value (EndTransactionMarker)."""

    version: int
    type: int
    coordinator_epoch: int | None = None

    @property
    def type_name(self) -> str:
        return S.CONTROL_TYPES.get(self.type, "UNKNOWN")


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to build; builders derive offsets, deltas, lengths and CRCs."""

    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


def _struct_field(schema: Struct, name: str):
    return next(s for s in schema.subcons if s.name == name).subcon


# --- fast paths derived from the schemas -------------------------------------

_V2_HEADER, V2_HEADER_FIELDS = fastpath.header_struct(S.RecordBatchHeader)
_LEGACY_HEADER, _ = fastpath.header_struct(S.LegacyMessageHeader, upto="attributes")
_V2_CRC = S.V2_OFFSETS["crc"]
_LEGACY_TS = S.LEGACY_OFFSETS[1]["timestamp"]
_RECORD_SLOTS = {f"set_{f}": getattr(Record, f).__set__ for f in Record.__slots__}


def _make_record(target: str, f: dict[str, str]) -> list[str]:
    # A frozen dataclass's __init__ pays object.__setattr__ per field; filling
    # the slots directly is ~2x faster and yields the same object.
    ts = f"base_timestamp + {f['timestamp_delta']} if log_append_time is None else log_append_time"
    return [f"{target} = new(Record)",
            f"set_offset({target}, base_offset + {f['offset_delta']}); set_timestamp({target}, {ts})",
            f"set_key({target}, {f['key']}); set_value({target}, {f['value']})",
            f"set_headers({target}, {f['headers']}); set_attributes({target}, {f['attributes']})"]


_decode_records_py = fastpath.derive_decoder(
    Array(0, S.Record),
    args="count, base_offset, base_timestamp, log_append_time",
    make={id(S.RecordBody): _make_record, id(_struct_field(S.RecordBody, "headers")): "tuple({})"},
    namespace={"new": object.__new__, "Record": Record, **_RECORD_SLOTS},
    name="decode_records",
)


def _load_accelerator(*, honour_switch: bool = True):
    """The C translation of the same schema (generators.c), unless it was
    not built or KPROTO_NO_EXTENSIONS is set (kproto.accel); both are tested
    equal to the schema path."""
    module = accel.load("_crecords", honour_switch=honour_switch)
    if module is not None:
        module.init(Record, CorruptRecordError)
    return module


_accelerator = accel.crecords
if _accelerator is not None:
    _accelerator.init(Record, CorruptRecordError)
_decode_records_c = _accelerator and _accelerator.decode_records
_encode_records_c = _accelerator and _accelerator.encode_records
_walk_records_c = _accelerator and getattr(_accelerator, "walk_records", None)
_records_json_c = _accelerator and getattr(_accelerator, "records_json", None)
#: CRC-32C: the extension's (SSE 4.2 or a table), else the crc32c package's
crc32c = getattr(_accelerator, "crc32c", None) or S.crc32c


class RecordsWalk(NamedTuple):
    """What ``RecordBatch.walk`` found: the first record whose offset delta is
    not its index (-1: none), keys that are null, min/max CreateTime timestamps."""

    first_bad_offset_delta: int
    null_keys: int
    min_timestamp: int
    max_timestamp: int


def _decode_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time):
    if _decode_records_c is not None and pos == 0 and end == len(buf):
        return _decode_records_c(buf, count, base_offset, base_timestamp, log_append_time)
    if isinstance(buf, bytearray):      # decompress may build in place: keys and values stay bytes
        buf = bytes(buf)
    return _decode_records_py(buf, pos, end, count, base_offset, base_timestamp, log_append_time)

_encode_records_py = fastpath.derive_encoder(
    Array(0, S.Record),
    args="base_timestamp, now",
    access={id(S.RecordBody): {
        "attributes": "0",
        "timestamp_delta": "({v}.timestamp if {v}.timestamp is not None else now) - base_timestamp",
        "offset_delta": "{i}",
        "key": "{v}.key", "value": "{v}.value", "headers": "{v}.headers",
    }},
    name="encode_records",
)

_LEGACY_BODY = Struct(
    "key" / _struct_field(S.LegacyMessage.subcon, "key"),
    "value" / _struct_field(S.LegacyMessage.subcon, "value").elsesubcon,
)
_decode_legacy_body = fastpath.derive_decoder(_LEGACY_BODY, args="unused", make={},
                                             name="decode_legacy_body")


# --- batches ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A magic-2 batch header, read without decoding its records."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int = 0                                   # byte position in the source
    data: memoryview | bytes = field(default=b"", repr=False, compare=False)

    @property
    def size(self) -> int:
        return self.batch_length + S.LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> CompressionType:
        return codec_of(self.attributes, self.position)

    @property
    def timestamp_type(self) -> int:
        return TimestampType.LOG_APPEND_TIME if self.attributes & S.TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & S.TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & S.CONTROL_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        # KIP-534: when the flag is set the horizon is stored in base_timestamp.
        return self.base_timestamp if self.attributes & S.DELETE_HORIZON_BIT else None

    @property
    def last_sequence(self) -> int:
        return sequence_at(self.base_sequence, self.last_offset_delta)

    def sequence_of(self, record: Record) -> int:
        return sequence_at(self.base_sequence, record.offset - self.base_offset)

    def compute_crc(self) -> int:
        return crc32c(self.data[S.V2_CRC_FROM:])

    def is_valid(self) -> bool:
        return self.size >= S.RECORD_BATCH_OVERHEAD and self.compute_crc() == self.crc

    def _body(self, copy: bool = True) -> tuple[bytes | bytearray | memoryview, int | None]:
        """The records bytes, decompressed, and their file position (None once
        decompressed); without ``copy`` a plain batch's bytes stay a view."""
        body = self.data[S.RECORD_BATCH_OVERHEAD:]
        base = self.position + S.RECORD_BATCH_OVERHEAD
        if self.records_count < 0:
            raise CorruptRecordError(f"Found invalid record count {self.records_count} in magic v2 batch",
                                     position=self.position + S.V2_OFFSETS["records_count"], path="records_count")
        codec = self.compression
        if codec:
            try:
                return decompress(codec, body, magic=2), None
            except DecodeError as e:
                raise e.at(position=base) from None
        return (bytes(body) if copy else body), base

    def _at(self, e: CorruptRecordError, base: int | None) -> CorruptRecordError:
        e.path = f"records{e.path[2:]}" if e.path else "records"
        return e.at(position=self.position + S.RECORD_BATCH_OVERHEAD if base is None else base + e.position)

    def _check_end(self, end: int, body, base: int | None) -> None:
        if end != len(body):
            raise CorruptRecordError("Incorrect declared batch size, records still remaining in file",
                                     position=self.position + S.RECORD_BATCH_OVERHEAD + (end if base is not None else 0),
                                     path="records")

    def records(self) -> list[Record]:
        """Decode (and decompress) this batch's records."""
        # The C decoder copies keys and values out itself: a plain batch's bytes stay a view.
        body, base = self._body(copy=_decode_records_c is None)
        lat = self.max_timestamp if self.attributes & S.TIMESTAMP_TYPE_BIT else None
        try:
            out, end = _decode_records(body, 0, len(body), self.records_count,
                                       self.base_offset, self.base_timestamp, lat)
        except CorruptRecordError as e:
            raise self._at(e, base)
        self._check_end(end, body, base)
        return out

    def records_json(self) -> bytes | None:
        """``records()`` as the JSON text ``kproto.capture.jsonout`` renders
        them, written by the C accelerator with no object per record; None
        without it. Raises as ``records()`` does."""
        if _records_json_c is None:
            return None
        body, base = self._body(copy=False)
        lat = self.max_timestamp if self.attributes & S.TIMESTAMP_TYPE_BIT else None
        try:
            text, end = _records_json_c(body, self.records_count, self.base_offset, self.base_timestamp, lat)
        except CorruptRecordError as e:
            raise self._at(e, base)
        self._check_end(end, body, base)
        return text

    def walk(self) -> "RecordsWalk | None":
        """Every record read and checked as ``records()`` reads them, none built
        (Kafka's skipKeyValueIterator); None without the C accelerator."""
        if _walk_records_c is None:
            return None
        body, base = self._body(copy=False)
        try:
            end, bad_delta, null_keys, min_ts, max_ts = _walk_records_c(body, self.records_count,
                                                                        self.base_timestamp)
        except CorruptRecordError as e:
            raise self._at(e, base)
        self._check_end(end, body, base)
        return RecordsWalk(bad_delta, null_keys, min_ts, max_ts)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())


def codec_of(attributes: int, position: int | None = None) -> CompressionType:
    try:
        return CompressionType(attributes & S.CODEC_MASK)
    except ValueError:
        raise CorruptRecordError(f"Unknown compression type id: {attributes & S.CODEC_MASK}",
                                 position=position, path="attributes") from None


def sequence_at(base_sequence: int, delta: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: wraps past Int.MAX to 0."""
    if base_sequence < 0:
        return -1
    if base_sequence > INT32_MAX - delta:
        return delta - (INT32_MAX - base_sequence) - 1
    return base_sequence + delta


@dataclass(frozen=True, slots=True)
class LegacyBatch:
    """One top-level v0/v1 message: a plain message or a compressed wrapper."""

    offset: int
    message_size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int | None = None
    position: int = 0
    data: memoryview | bytes = field(default=b"", repr=False, compare=False)

    @property
    def size(self) -> int:
        return self.message_size + S.LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    @property
    def base_offset(self) -> int:
        return self.records()[0].offset if self.attributes & S.CODEC_MASK else self.offset

    @property
    def compression(self) -> CompressionType:
        return codec_of(self.attributes, self.position)

    @property
    def timestamp_type(self) -> int:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType.LOG_APPEND_TIME if self.attributes & S.TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        return -1 if self.timestamp is None else self.timestamp

    def compute_crc(self) -> int:
        return zlib.crc32(self.data[S.LEGACY_CRC_FROM:])

    def is_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def _key_value(self) -> tuple[bytes | None, bytes | None]:
        start = S.LEGACY_OFFSETS[self.magic]["key"]
        (key, value), _ = _decode_legacy_body(bytes(self.data[start:]), 0, self.size - start, None)
        return key, value

    def records(self) -> list[LegacyRecord]:
        key, value = self._key_value()
        codec = self.compression
        ts = -1 if self.timestamp is None else self.timestamp
        if not codec:
            return [LegacyRecord(self.offset, ts, key, value, (), self.attributes,
                                 self.magic, self.crc, self.timestamp_type)]
        if self.magic == 1 and self.codec_is_zstd():
            raise CorruptRecordError("Invalid wrapper compressionType found in legacy deep record iterator",
                                     position=self.position, path="attributes")
        try:
            inner = decompress(codec, value or b"", magic=self.magic)
        except DecodeError as e:
            raise e.at(position=self.position, file=e.file) from None
        messages = []
        try:
            for m in iter_batches(inner):
                if not isinstance(m, LegacyBatch) or m.magic != self.magic:
                    raise CorruptRecordError(
                        f"Compressed message magic {m.magic} does not match wrapper magic {self.magic}")
                if m.compression:
                    raise CorruptRecordError("nested compressed message inside a wrapper")
                messages.append(m)
        except DecodeError as e:
            e.path = "value.inner" + (f".{e.path}" if e.path else "")
            raise e.at(position=self.position) from None
        if not messages:
            raise CorruptRecordError("Found invalid compressed record set with no inner records",
                                     position=self.position, path="value")
        shift = 0
        if self.magic == 1 and self.offset != 0:
            last = messages[-1].offset
            if self.offset < last:
                raise CorruptRecordError(
                    f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{self.offset}' is less than the last inner message offset '{last}' and it is not zero.",
                    position=self.position, path="offset")
            shift = self.offset - last
        log_append = self.magic == 1 and self.attributes & S.TIMESTAMP_TYPE_BIT
        out = []
        for m in messages:
            k, v = m._key_value()
            t = ts if log_append else (-1 if m.timestamp is None else m.timestamp)
            out.append(LegacyRecord(m.offset + shift, t, k, v, (), m.attributes, m.magic, m.crc,
                                    self.timestamp_type))
        return out

    def codec_is_zstd(self) -> bool:
        return self.compression == CompressionType.ZSTD

    def __iter__(self) -> Iterator[LegacyRecord]:
        return iter(self.records())


Batch = RecordBatch | LegacyBatch


def iter_batches(buf: bytes | bytearray | memoryview, *, verify_crc: bool = True,
                 position: int = 0, allow_incomplete: bool = False) -> Iterator[Batch]:
    """Walk the batches in ``buf`` (any mix of magics), reading headers only.

    ``position`` is added to every reported position (a file offset).
    A trailing partial batch raises ``IncompleteBatchError`` after all complete
    ones, or ends the walk quietly with ``allow_incomplete=True`` (a fetch
    response may end mid-batch). Anything else invalid is ``CorruptRecordError``.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    n = len(mv)
    pos = 0
    v2 = _V2_HEADER.unpack_from
    legacy = _LEGACY_HEADER.unpack_from
    while pos < n:
        where = position + pos
        if n - pos < S.MAGIC_OFFSET + 1:
            if allow_incomplete:
                return
            raise IncompleteBatchError(f"incomplete batch: {n - pos} bytes left, header needs {S.MAGIC_OFFSET + 1}",
                                       position=where)
        length = int.from_bytes(mv[pos + S.LENGTH_OFFSET:pos + S.LOG_OVERHEAD], "big", signed=True)
        if length < S.LEGACY_OVERHEAD[0]:
            raise CorruptRecordError(
                f"Found record size {length} smaller than minimum record overhead ({S.LEGACY_OVERHEAD[0]})",
                position=where, path="batch_length")
        magic = mv[pos + S.MAGIC_OFFSET]
        size = length + S.LOG_OVERHEAD
        if magic == 2:
            if size < S.RECORD_BATCH_OVERHEAD:
                raise CorruptRecordError(f"batch size {size} smaller than the v2 header ({S.RECORD_BATCH_OVERHEAD})",
                                         position=where, path="batch_length")
        elif magic in (0, 1):
            if length < S.LEGACY_OVERHEAD[magic]:
                raise CorruptRecordError(
                    f"message size {length} smaller than the v{magic} overhead ({S.LEGACY_OVERHEAD[magic]})",
                    position=where, path="message_size")
        else:
            raise CorruptRecordError(f"unknown magic {magic}", position=where + S.MAGIC_OFFSET, path="magic")
        if pos + size > n:
            if allow_incomplete:
                return
            raise IncompleteBatchError(f"incomplete batch: {n - pos} of {size} bytes", position=where)
        data = mv[pos:pos + size]
        if magic == 2:
            batch = RecordBatch(*v2(mv, pos), where, data)
        else:
            fields = legacy(mv, pos)
            ts = int.from_bytes(mv[pos + _LEGACY_TS:pos + _LEGACY_TS + 8], "big", signed=True) if magic == 1 else None
            batch = LegacyBatch(*fields, ts, where, data)
        if verify_crc and batch.compute_crc() != batch.crc:
            raise CorruptRecordError(
                f"crc mismatch (stored {batch.crc}, computed {batch.compute_crc()})",
                position=where + S.CRC_OFFSET[magic], path="crc")
        yield batch
        pos += size


# --- building -----------------------------------------------------------------

def build_record_batch(
    records: Iterable[NewRecord | Record], *, base_offset: int = 0,
    compression: CompressionType | int = CompressionType.NONE,
    timestamp_type: int = TimestampType.CREATE_TIME, log_append_time: int | None = None,
    is_transactional: bool = False, is_control: bool = False, producer_id: int = -1,
    producer_epoch: int = -1, base_sequence: int = -1, partition_leader_epoch: int = -1,
    delete_horizon_ms: int | None = None, last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """A RecordBatch v2. Offsets deltas are 0..n-1; base timestamp is the first
    record's (or the delete horizon), max timestamp the largest (or the log
    append time). Empty batches need ``last_offset_delta`` and ``max_timestamp``
    (the header-only batches compaction leaves)."""
    recs = list(records)
    now = now_ms()
    base_ts = -1
    if recs:
        base_ts = now if recs[0].timestamp is None else recs[0].timestamp
    if delete_horizon_ms is not None:
        base_ts = delete_horizon_ms
    try:
        if _encode_records_c is not None:
            # the largest timestamp comes from the encoding pass: a Python loop over the
            # records for it cost about as much as the C encode itself (bench_records)
            body, max_ts = _encode_records_c(recs, base_ts, now)
        else:
            body = _encode_records_py(bytearray(), recs, base_ts, now)
            max_ts = max((now if r.timestamp is None else r.timestamp for r in recs), default=-1)
    except (OverflowError, ValueError, AttributeError, TypeError, UnicodeError, IndexError) as e:
        raise CorruptRecordError(f"record cannot be encoded: {e}", path="records") from None
    if max_timestamp is None:
        max_timestamp = max_ts
    attributes = int(compression) & S.CODEC_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= S.TIMESTAMP_TYPE_BIT
        max_timestamp = now if log_append_time is None else log_append_time
    if is_transactional:
        attributes |= S.TRANSACTIONAL_BIT
    if is_control:
        attributes |= S.CONTROL_BIT
    if delete_horizon_ms is not None:
        attributes |= S.DELETE_HORIZON_BIT
    if compression:
        body = compress(compression, body, magic=2)
    if last_offset_delta is None:
        last_offset_delta = len(recs) - 1 if recs else 0
    try:
        header = bytearray(_V2_HEADER.pack(
            base_offset, 0, partition_leader_epoch, 2, 0, attributes, last_offset_delta, base_ts,
            max_timestamp, producer_id, producer_epoch, base_sequence, len(recs)))
    except struct.error as e:
        raise CorruptRecordError(f"batch header field out of range: {e}", path="header") from None
    header += body
    header[S.LENGTH_OFFSET:S.LOG_OVERHEAD] = (len(header) - S.LOG_OVERHEAD).to_bytes(4, "big", signed=True)
    header[_V2_CRC:_V2_CRC + 4] = crc32c(memoryview(header)[S.V2_CRC_FROM:]).to_bytes(4, "big")
    return bytes(header)


def build_message_set(
    records: Iterable[NewRecord | Record], *, magic: int = 1, base_offset: int = 0,
    compression: CompressionType | int = CompressionType.NONE,
    timestamp_type: int = TimestampType.CREATE_TIME, log_append_time: int | None = None,
) -> bytes:
    """A MessageSet v0/v1. Compressed: one wrapper whose offset is the last
    inner absolute offset (broker form); v1 inner offsets relative, v0 absolute;
    the v1 wrapper timestamp is the largest inner one (or the log append time).
    Built through the schema itself: legacy data is rare and never hot."""
    if magic not in (0, 1):
        raise ValueError("magic must be 0 or 1")
    if compression == CompressionType.ZSTD:
        raise ValueError("zstd is not valid in a legacy message set")
    recs = list(records)
    now = now_ms()
    ts_bit = S.TIMESTAMP_TYPE_BIT if magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME else 0

    def message(offset, ts, key, value, attributes):
        return Container(offset=offset, magic=magic, attributes=attributes,
                         timestamp=ts if magic == 1 else None, key=key, value=value)

    stamps = [now if r.timestamp is None else r.timestamp for r in recs]
    if not compression:
        ts_of = (lambda t: now if log_append_time is None else log_append_time) if ts_bit else (lambda t: t)
        msgs = [message(base_offset + i, ts_of(t), r.key, r.value, ts_bit)
                for i, (r, t) in enumerate(zip(recs, stamps))]
        return schemas.build(S.MessageSet, msgs)
    inner = [message(i if magic == 1 else base_offset + i, t, r.key, r.value, 0)
             for i, (r, t) in enumerate(zip(recs, stamps))]
    wrapper_ts = (now if log_append_time is None else log_append_time) if ts_bit else max(stamps, default=-1)
    wrapper = message(base_offset + len(recs) - 1, wrapper_ts, None, inner, int(compression) | ts_bit)
    return schemas.build(S.MessageSet, [wrapper])


def build_control_batch(control_type: int, *, producer_id: int, producer_epoch: int,
                        coordinator_epoch: int = 0, base_offset: int = 0,
                        timestamp: int | None = None, partition_leader_epoch: int = -1) -> bytes:
    """An end-transaction marker batch (ABORT = 0, COMMIT = 1): transactional,
    control, base sequence -1, one record (EndTransactionMarker)."""
    key = S.ControlRecordKey.build({"version": 0, "type": control_type})
    value = S.EndTxnMarker.build({"version": 0, "coordinator_epoch": coordinator_epoch})
    return build_record_batch(
        [NewRecord(key, value, (), timestamp)], base_offset=base_offset, is_transactional=True,
        is_control=True, producer_id=producer_id, producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch)


def control_record(record: Record) -> ControlRecord:
    """Decode a control batch record's key (and marker value)."""
    key = record.key or b""
    if len(key) < 4:
        raise CorruptRecordError(f"Invalid value size found for end control record key. Must have "
                                 f"at least 4 bytes, but found only {len(key)}", path="key")
    # S.ControlRecordKey and S.EndTxnMarker's fields, read directly: every marker appended is read
    # twice (ProducerStateManager's checks), where construct's parse cost ~15 us
    version, control_type = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"invalid control record version {version}", path="key.version")
    epoch = None
    if control_type in (0, 1):
        value = record.value or b""
        if len(value) < 6:
            raise CorruptRecordError(f"Invalid value size found for end transaction marker: {len(value)}",
                                     path="value")
        epoch = _END_TXN_MARKER.unpack_from(value)[1]
    return ControlRecord(version, control_type, epoch)


_CONTROL_KEY = struct.Struct(">hh")        # version, type
_END_TXN_MARKER = struct.Struct(">hi")     # version, coordinator_epoch
