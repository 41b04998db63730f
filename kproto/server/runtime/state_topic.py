"""A coordinator's state topic (``__consumer_offsets``, ``__transaction_state``):
which partition a key lives in, the records a coordinator's ``Append`` becomes,
and the records of the log read back for replay, each with where it was read.

A record that cannot be read is skipped and logged once with its file, byte
position and offset: a broker never refuses to start over one bad record.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from kproto.errors import DecodeError
from kproto.jvm import java_string_hash, kafka_abs
from kproto.records import Batch, NewRecord, Record, build_record_batch, control_record, iter_batches
from kproto.server.runtime.core import Append

__all__ = ["LogRecord", "LoggedRecord", "TxnMarker", "append_batch", "key_value", "partition_for",
           "records_from_batches", "records_from_log", "records_from_segments", "where_read"]

log = logging.getLogger("kproto.server.runtime")


@lru_cache(maxsize=4096)     # asked several times per request of a transaction or group
def partition_for(key: str, num_partitions: int = 50) -> int:
    """The state-topic partition of a group id or transactional id:
    ``Utils.abs(key.hashCode()) % partitions`` (GroupMetadataManager.partitionFor,
    TransactionStateManager.partitionFor). Java's String.hashCode over UTF-16
    code units with int32 wrap-around, and ``Utils.abs``, which maps
    Integer.MIN_VALUE to 0 (it is *not* the producer's ``n & 0x7fffffff``)."""
    return kafka_abs(java_string_hash(key)) % num_partitions


class LoggedRecord(NamedTuple):
    """A record with where it was read (``file @ byte N, offset M``), for the
    one line that reports it if it cannot be loaded; ``producer_id`` is its
    batch's when the batch is transactional (a TxnOffsetCommit), else -1."""

    key: bytes | None
    value: bytes | None
    where: str
    producer_id: int = -1


class TxnMarker(NamedTuple):
    """A COMMIT (``committed``) or ABORT control record of ``producer_id``."""

    producer_id: int
    committed: bool
    where: str


# A record of the log as loading takes it: (key, value), a kproto.records.Record, a LoggedRecord
# or a transaction's marker.
LogRecord = tuple[bytes | None, bytes | None] | Record | LoggedRecord | TxnMarker


def key_value(record: LogRecord) -> tuple[bytes | None, bytes | None]:
    """The key and value of any record form a replay accepts."""
    if isinstance(record, tuple) and not isinstance(record, LoggedRecord):
        return record
    return record.key, record.value


def where_read(record: LogRecord, index: int) -> str:
    """Where ``record`` was read, for the line that reports it unreadable."""
    if isinstance(record, LoggedRecord):
        return record.where
    if isinstance(record, Record):
        return f"offset {record.offset}"
    return f"record {index}"


def records_from_log(buf: bytes | bytearray | memoryview, file: str = "") -> Iterator[LoggedRecord]:
    """``records_from_batches`` over the batches in ``buf``."""
    return records_from_batches(iter_batches(buf), file=file)


def records_from_batches(batches: Iterable[Batch], file: str = "") -> Iterator[LoggedRecord | TxnMarker]:
    """The records of a state topic's log (any batch magic) in log order, for
    a coordinator's replay: those of a transactional batch (TxnOffsetCommit)
    carry its producer id, a control batch becomes a TxnMarker. A batch whose
    records do not decode is logged and skipped; one the iterator cannot read
    ends ``batches``."""
    return records_from_segments([(file, batches)])


def records_from_segments(segments: Iterable[tuple[str, Iterable[Batch]]]) -> Iterator[LoggedRecord | TxnMarker]:
    """``records_from_batches`` over several files' batches, in order:
    ``(file name, batches)`` pairs, one per segment."""
    for file, batches in segments:
        it = iter(batches)
        while True:
            try:
                batch = next(it)
            except StopIteration:
                break
            except DecodeError as e:
                log.warning("skipping the rest of %s: unreadable batch: %s", file or "the state topic", e)
                break
            where = f"{file + ' ' if file else ''}@ byte {batch.position}"
            producer_id = batch.producer_id if getattr(batch, "is_transactional", False) else -1
            try:
                records = [LoggedRecord(r.key, r.value, f"{where}, offset {r.offset}", producer_id)
                           for r in batch]
            except DecodeError as e:
                log.warning("skipping unreadable batch at %s, offset %d: %s",
                            where, batch.base_offset, e)
                continue
            if getattr(batch, "is_control", False):
                # Kafka reads the first control record of the batch (there is only ever one)
                for record in records[:1]:
                    try:
                        committed = control_record(record).type == 1
                    except DecodeError as e:
                        log.warning("skipping unreadable control record at %s: %s", record.where, e)
                        continue
                    yield TxnMarker(batch.producer_id, committed, record.where)
            else:
                yield from records


def append_batch(append: Append, base_offset: int = 0) -> bytes:
    """``append`` as one RecordBatch v2 (CreateTime, uncompressed), the way the
    coordinator's records reach the log; transactional when it has a producer."""
    records = [NewRecord(key=k, value=v, timestamp=append.timestamp_ms) for k, v in append.records]
    if append.producer_id < 0:
        return build_record_batch(records, base_offset=base_offset)
    return build_record_batch(records, base_offset=base_offset, producer_id=append.producer_id,
                              producer_epoch=append.producer_epoch, is_transactional=True)
