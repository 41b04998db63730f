"""Validation and offset assignment of appended records (Kafka's LogValidator).

Sans-I/O: bytes in, rewritten bytes out. What an append changes, and where:

* v2 batch: base offset (bytes 0-7, outside the CRC), the partition leader
  epoch when the log stamps one (12-15, outside the CRC), and for
  ``message.timestamp.type=LogAppendTime`` the max timestamp and attribute bit
  3, after which the CRC-32C is recomputed. A topic ``compression.type`` other
  than ``producer`` rebuilds the batch with that codec.
* legacy messages (v0/v1): converted to one v2 batch (Kafka 3+'s toMagic is
  always 2): keys, values and timestamps kept (v0 has none: -1, CreateTime),
  the topic's ``compression.type`` as codec (``producer``: the source codec),
  producer id, epoch and sequence -1.

Wire-facing failures are KafkaError subclasses (CORRUPT_MESSAGE,
MESSAGE_TOO_LARGE, INVALID_RECORD, INVALID_TIMESTAMP); the DecodeError that
found a corrupt batch is chained and its text kept (it names the byte).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Any, Callable

from kproto.fastpath import header_struct
from kproto.compression import CompressionType
from kproto.errors import (
    CorruptMessageError, DecodeError, DecompressionError, ErrorCode, InvalidRecordError, KafkaError,
    MessageTooLargeError,
)
from kproto.topic_config import LONG_MAX, LogConfig
from kproto.records import (
    Batch, LegacyBatch, RecordBatch, TimestampType, build_record_batch, crc32c, iter_batches,
)
from kproto.schemas import records as S

NO_TIMESTAMP = -1


def _field_offsets(schema, upto: str | None = None) -> dict[str, tuple[int, struct.Struct]]:
    """Byte offset and packer of each fixed header field, from the schema."""
    packed, names = header_struct(schema, upto=upto)
    out, at = {}, 0
    for name, code in zip(names, packed.format.lstrip(">")):
        fmt = struct.Struct(">" + code)
        out[name] = (at, fmt)
        at += fmt.size
    return out


V2_FIELDS = _field_offsets(S.RecordBatchHeader)


def put(buf: bytearray, fields: dict[str, tuple[int, struct.Struct]], name: str, value: int) -> None:
    at, fmt = fields[name]
    fmt.pack_into(buf, at, value)


class AppendOrigin(enum.Enum):
    """Who appends (Kafka's AppendOrigin): clients may not write control batches;
    replication keeps the offsets it is given."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


class InvalidTimestampError(KafkaError):
    error_code = ErrorCode.INVALID_TIMESTAMP


class RecordBatchTooLargeError(KafkaError):
    error_code = ErrorCode.RECORD_LIST_TOO_LARGE


class RecordValidationError(KafkaError):
    """Kafka's RecordValidationException: records rejected one by one; the
    Produce response carries ``record_errors`` (batch index, message) and this
    error's text as ``error_message``."""

    def __init__(self, message: str, record_errors: list[tuple[int, str]], *, error_code: ErrorCode) -> None:
        super().__init__(message, error_code=error_code)
        self.record_errors = record_errors

    @classmethod
    def of(cls, errors: list[tuple[int, str, bool]]) -> "RecordValidationError":
        """LogValidator.processRecordErrors: INVALID_TIMESTAMP if any timestamp failed."""
        record_errors = [(i, text) for i, text, _ in errors]
        if any(is_time for _, _, is_time in errors):
            return cls("One or more records have been rejected due to invalid timestamp", record_errors,
                       error_code=ErrorCode.INVALID_TIMESTAMP)
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{text}')" for i, text in record_errors[:3])
        return cls(f"One or more records have been rejected due to {len(errors)} record errors in total, "
                   f"and only showing the first three errors at most: [{shown}]", record_errors,
                   error_code=ErrorCode.INVALID_RECORD)


def _record_text(record: Any) -> str:
    """DefaultRecord.toString, for messages naming a record."""
    key = "null" if record.key is None else len(record.key)
    value = "null" if record.value is None else len(record.value)
    return (f"DefaultRecord(offset={record.offset}, timestamp={record.timestamp}, key={key} bytes, "
            f"value={value} bytes)")


@dataclass(frozen=True, slots=True)
class ValidatedRecords:
    """What an append writes: the rewritten bytes and their offsets/timestamps."""

    records: bytes | bytearray
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int          # the time stamped, or -1
    record_count: int             # messages, for flush.messages
    batch_count: int


def analyze(records: bytes | bytearray | memoryview, *, max_message_bytes: int,
            topic_partition: str = "") -> list[Batch]:
    """Kafka's analyzeAndValidateRecords: every batch whole, CRC-valid and
    within max.message.bytes."""
    try:
        batches = list(iter_batches(records, verify_crc=True))
    except DecodeError as e:
        raise CorruptMessageError(f"Record is corrupt in the append to {topic_partition}: {e}") from e
    for b in batches:
        if b.size > max_message_bytes:
            raise MessageTooLargeError(
                f"The record batch size in the append to {topic_partition} is {b.size} bytes which "
                f"exceeds the maximum configured value of {max_message_bytes}.")
    return batches


def validate_and_assign_offsets(
    records: bytes | bytearray | memoryview, *, next_offset: int, config: LogConfig, now: int,
    assign_offsets: bool = True, leader_epoch: int | None = None,
    origin: AppendOrigin = AppendOrigin.CLIENT, topic_partition: str = "",
) -> ValidatedRecords:
    """Validate ``records`` and give them offsets from ``next_offset`` (the log
    end offset). With ``assign_offsets=False`` the offsets are kept and must
    start at or after ``next_offset`` and increase."""
    batches = analyze(records, max_message_bytes=config.max_message_bytes,
                      topic_partition=topic_partition)
    if not batches:
        return ValidatedRecords(b"", -1, -1, NO_TIMESTAMP, -1, NO_TIMESTAMP, 0, 0)
    for b in batches[1:]:
        if b.magic != batches[0].magic:
            raise InvalidRecordError(f"Batch magic {b.magic} is not the same as the first batch's magic "
                                     f"byte {batches[0].magic} in topic partition {topic_partition}.")
    if not assign_offsets:
        return _check_given_offsets(records, batches, next_offset, topic_partition)
    v = _Validator(config, now, leader_epoch, origin, topic_partition)
    lat = now if config.log_append_time else NO_TIMESTAMP
    if isinstance(batches[0], LegacyBatch):
        data, n, ts = v.convert_legacy(batches, next_offset)
        last = next_offset + n - 1
        return ValidatedRecords(data, next_offset, last, ts, last, lat, n, 1)
    parts = []
    offset = next_offset
    max_ts, offset_of_max, count = NO_TIMESTAMP, -1, 0
    for batch in batches:
        data, n, ts = v.batch(batch, offset)     # n >= 1 offsets taken
        parts.append(data)
        last = offset + n - 1
        if ts > max_ts:
            max_ts, offset_of_max = ts, last
        count += n
        offset = last + 1
    out = parts[0] if len(parts) == 1 else b"".join(parts)     # one batch: no copy
    return ValidatedRecords(out, next_offset, offset - 1, max_ts, offset_of_max, lat, count, len(batches))


def _check_given_offsets(records, batches: list[Batch], next_offset: int,
                         tp: str) -> ValidatedRecords:
    first = batches[0].base_offset
    if first < next_offset:
        raise InvalidRecordError(
            f"Unexpected offset in append to {tp}. First offset {first} is less than the next "
            f"offset {next_offset}.")
    last = -1
    max_ts, offset_of_max, count = NO_TIMESTAMP, -1, 0
    for b in batches:
        if b.last_offset <= last:
            raise InvalidRecordError(f"Out of order offsets found in append to {tp}: "
                                     f"{[x.last_offset for x in batches]}")
        last = b.last_offset
        if b.max_timestamp > max_ts:
            max_ts, offset_of_max = b.max_timestamp, b.last_offset
        count += b.records_count if isinstance(b, RecordBatch) else 1
    return ValidatedRecords(bytes(records), first, last, max_ts, offset_of_max, NO_TIMESTAMP, count,
                            len(batches))


class _Validator:
    def __init__(self, config: LogConfig, now: int, leader_epoch: int | None,
                 origin: AppendOrigin, tp: str) -> None:
        self.config, self.now, self.leader_epoch, self.origin, self.tp = config, now, leader_epoch, origin, tp
        diff = config.message_timestamp_difference_max_ms
        # The deprecated difference bound stands in for unset before/after bounds.
        self.before = config.message_timestamp_before_max_ms
        self.after = config.message_timestamp_after_max_ms
        if diff != LONG_MAX:
            self.before = diff if self.before == LONG_MAX else self.before
            self.after = diff if self.after == LONG_MAX else self.after
        target = config.compression_type
        self.target = (None if target == "producer" else
                       CompressionType.NONE if target == "uncompressed" else CompressionType.from_name(target))

    def _records(self, batch: Batch) -> list:
        """Every record of the batch, decompressed and decoded (through the C
        decoder when built): lengths, varints, headers and the record count are
        checked on the way. A codec that fails is CORRUPT_MESSAGE; records that
        do not fit their structure are INVALID_RECORD, as Kafka's DefaultRecord
        reader answers."""
        return self._read(batch.records)

    def _read(self, reader: Callable[[], Any]) -> Any:
        try:
            return reader()
        except DecompressionError as e:
            raise CorruptMessageError(f"Record is corrupt in the append to {self.tp}: {e}") from e
        except DecodeError as e:
            raise InvalidRecordError(f"Found invalid record structure in topic partition {self.tp}: {e}") from e

    def _check_records(self, batch: Batch, records: list) -> None:
        """LogValidator.validateRecord over the batch: all errors collected, then
        one RecordValidationError (INVALID_TIMESTAMP if any timestamp failed)."""
        errors: list[tuple[int, str, bool]] = []
        check_keys = self.config.compact and not getattr(batch, "is_control", False)
        check_time = self.before != LONG_MAX or self.after != LONG_MAX
        create_time = not self.config.log_append_time
        lat_batch = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
        if not (check_keys or check_time or lat_batch):
            return
        for i, record in enumerate(records):
            if check_keys and record.key is None:
                errors.append((i, "Compacted topic cannot accept message without key in topic "
                                  f"partition {self.tp}.", False))
                continue
            ts = record.timestamp
            if create_time and ts != NO_TIMESTAMP:
                if check_time and (self.now - ts > self.before or ts - self.now > self.after):
                    errors.append((i, f"Timestamp {ts} of message with offset {record.offset} is out of "
                                      f"range. The timestamp should be within [{self.now - self.before}, "
                                      f"{self.now + self.after}]", True))
            elif lat_batch:
                errors.append((i, f"Invalid timestamp type in message {_record_text(record)}. Producer "
                                  "should not set timestamp type to LogAppendTime.", True))
        if errors:
            raise RecordValidationError.of(errors)

    def batch(self, batch: RecordBatch, offset: int) -> tuple[bytes, int, int]:
        """(bytes to write, records, max timestamp) for one v2 batch at ``offset``."""
        count = batch.records_count
        if self.origin == AppendOrigin.CLIENT:
            # LogValidator.validateBatch, client appends only
            where = f" in topic partition {self.tp}."
            if batch.last_offset_delta < 0:
                raise InvalidRecordError(f"Batch has an invalid offset range: [{batch.base_offset}, "
                                         f"{batch.last_offset}]{where}")
            if count <= 0:
                raise InvalidRecordError(f"Invalid reported count for record batch: {count}{where}")
            if count != batch.last_offset_delta + 1:
                raise InvalidRecordError(f"Inconsistent batch offset range [{batch.base_offset}, "
                                         f"{batch.last_offset}] and count of records {count}{where}")
            if batch.is_control:
                raise InvalidRecordError(f"Clients are not allowed to write control records{where}")
            if batch.producer_id >= 0 and batch.base_sequence < 0:
                raise InvalidRecordError(f"Invalid sequence number {batch.base_sequence} in record batch "
                                         f"with producerId {batch.producer_id}{where}")
        span = batch.last_offset_delta + 1           # offsets the batch takes
        lat = self.config.log_append_time
        # Every record is read, whatever the topic asks (Kafka's LogValidator):
        # a batch with a valid CRC can still hold garbage. In place, the C walk
        # reads them without building any; the full decode runs only to
        # recompress or to word the error for a record the walk flagged.
        in_place = self.target is None or self.target == batch.compression or batch.is_control
        walk = self._read(batch.walk) if in_place else None
        if walk is not None and self._walk_is_clean(batch, walk):
            max_ts = batch.max_timestamp
            if batch.compression and not lat:
                max_ts = walk.max_timestamp
            return self._stamp_v2(batch, offset, max_ts, lat), span, self.now if lat else max_ts
        records = self._records(batch)
        if self.origin == AppendOrigin.CLIENT:
            base = batch.base_offset
            for i, r in enumerate(records):
                if r.offset - base != i:
                    raise InvalidRecordError(f"Inner record offset delta {r.offset - base} doesn't match "
                                             f"expected {i} in topic partition {self.tp}.")
        self._check_records(batch, records)
        if not in_place and records:
            data = build_record_batch(
                records, base_offset=offset, compression=self.target,
                timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
                log_append_time=self.now if lat else None, is_transactional=batch.is_transactional,
                producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence,
                partition_leader_epoch=(batch.partition_leader_epoch if self.leader_epoch is None
                                        else self.leader_epoch))
            return data, span, self.now if lat else max(r.timestamp for r in records)
        # In place: an uncompressed batch keeps the producer's max timestamp; a
        # compressed one gets the records' (Kafka's setMaxTimestamp after the walk).
        max_ts = batch.max_timestamp
        if batch.compression and records and not lat:
            max_ts = max(r.timestamp for r in records)
        return self._stamp_v2(batch, offset, max_ts, lat), span, self.now if lat else max_ts

    def _walk_is_clean(self, batch: RecordBatch, walk) -> bool:
        """Whether the walk shows nothing _check_records or the offset check would refuse."""
        if walk.first_bad_offset_delta >= 0 and self.origin == AppendOrigin.CLIENT:
            return False
        if self.config.compact and walk.null_keys and not batch.is_control:
            return False
        if batch.timestamp_type == TimestampType.LOG_APPEND_TIME:
            return False
        if (self.before != LONG_MAX or self.after != LONG_MAX) and batch.records_count and \
                not self.config.log_append_time and (walk.min_timestamp == NO_TIMESTAMP or
                                                     self.now - walk.min_timestamp > self.before or
                                                     walk.max_timestamp - self.now > self.after):
            return False
        return True

    def _stamp_v2(self, batch: RecordBatch, offset: int, max_ts: int, lat: bool) -> bytes:
        """The batch with its base offset (and leader epoch) set; for LogAppendTime
        the attribute bit, max timestamp and CRC rewritten."""
        out = bytearray(batch.data)
        put(out, V2_FIELDS, "base_offset", offset)
        if self.leader_epoch is not None:
            put(out, V2_FIELDS, "partition_leader_epoch", self.leader_epoch)
        if lat:
            attributes, max_ts = batch.attributes | S.TIMESTAMP_TYPE_BIT, self.now
        else:
            attributes = batch.attributes & ~S.TIMESTAMP_TYPE_BIT
        if (attributes, max_ts) != (batch.attributes, batch.max_timestamp):
            put(out, V2_FIELDS, "attributes", attributes)
            put(out, V2_FIELDS, "max_timestamp", max_ts)
            put(out, V2_FIELDS, "crc", crc32c(memoryview(out)[V2_FIELDS["attributes"][0]:]))
        return out

    # -- legacy ----------------------------------------------------------------------

    def convert_legacy(self, batches: list[LegacyBatch], offset: int) -> tuple[bytes, int, int]:
        """(one v2 batch, records, max timestamp) from v0/v1 messages at ``offset``
        (LogValidator.convertAndAssignOffsetsNonCompressed and, for a compressed
        source or target, buildRecordsAndAssignOffsets)."""
        source = CompressionType.NONE      # UnifiedLog.analyzeAndValidateRecords: the last codec seen
        for b in batches:
            source = b.compression or source
        if source and len(batches) > 1:    # getFirstBatchAndMaybeValidateNoMoreBatches
            raise InvalidRecordError("Compressed outer record has more than one batch")
        records = []
        for b in batches:
            found = self._records(b)
            self._check_records(b, found)
            records.extend(found)
        lat = self.config.log_append_time
        data = build_record_batch(
            records, base_offset=offset, compression=source if self.target is None else self.target,
            timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
            log_append_time=self.now if lat else None,
            partition_leader_epoch=-1 if self.leader_epoch is None else self.leader_epoch)
        return data, len(records), self.now if lat else max(r.timestamp for r in records)
