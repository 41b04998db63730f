"""Log compaction for ``cleanup.policy=compact`` (Kafka's LogCleaner / Cleaner).

A pass over one log:

1. the cleanable range is [log start, first uncleanable offset): the active
   segment and any segment with data newer than ``min.compaction.lag.ms`` stay
   dirty; the *dirty* part starts at the cleaner checkpoint;
2. a scan of the whole log finds aborted transactions and each producer's
   last batch (headers and control records only);
3. the offset map holds, for each key in the dirty part, its last offset
   (aborted data and control batches excluded);
4. each segment of the cleanable range is rewritten (``.cleaned``, then
   swapped in) keeping a record iff it is its key's last and not an expired
   tombstone; batches keep their base offset, last offset delta, producer
   fields and their records' offsets.

Outcomes as Kafka 3.1+ (reference 5.5): a v2 batch first rewritten with a
tombstone (or an empty transaction's marker) gets the delete-horizon flag and
``base_timestamp = now + delete.retention.ms``; a later pass drops those once
``now >= horizon``. A batch whose records all go but which is its (unexpired)
producer's last keeps a 61-byte header-only batch (codec none, count 0,
base timestamp -1, max timestamp kept, no horizon). Aborted transactional
data is removed; its ABORT marker stays until no data of that transaction
remains, COMMIT markers of empty transactions likewise age out by horizon.

The filter (``filter_batch``) is pure; ``LogCleaner`` does the file work.
Segments are rewritten one to one (Kafka may also merge small neighbours).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

from kproto import schemas
from kproto.topic_config import LogConfig
from kproto.log.loader import CLEANED_SUFFIX, new_segment
from kproto.log.log import UnifiedLog
from kproto.log.segment import LogSegment
from kproto.records import (
    Batch, LegacyBatch, RecordBatch, TimestampType, build_record_batch, control_record,
)
from kproto.schemas import records as S

DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86400000   # producer.id.expiration.ms
CONTROL_ABORT, CONTROL_COMMIT = 0, 1


class BatchRetention(enum.Enum):
    DELETE = "delete"                # drop the batch whatever its records
    DELETE_EMPTY = "delete_empty"    # drop it if no record is kept
    RETAIN_EMPTY = "retain_empty"    # keep a header-only batch if no record is kept


@dataclass
class CleanerStats:
    segments_cleaned: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0


@dataclass(frozen=True)
class CleanResult:
    first_dirty_offset: int
    end_offset: int                  # the next pass's first dirty offset (cleaner-offset-checkpoint)
    stats: CleanerStats


# --- pure parts -------------------------------------------------------------------------

def filter_batch(batch: Batch, keep: Callable[[object], bool], *, retention: BatchRetention,
                 contains_marker_for_empty_txn: bool, now: int, delete_retention_ms: int
                 ) -> tuple[bytes, int]:
    """MemoryRecords.filterTo for one batch: (bytes to write, records kept).
    The original bytes when nothing changes; b"" when the batch goes."""
    if retention == BatchRetention.DELETE:
        return b"", 0
    records = batch.records()
    kept = [r for r in records if keep(r)]
    v2 = isinstance(batch, RecordBatch)
    if kept:
        tombstones = any(r.value is None for r in kept)
        set_horizon = v2 and (tombstones or contains_marker_for_empty_txn) and batch.delete_horizon_ms is None
        if len(kept) == len(records) and not set_horizon:
            return bytes(batch.data), len(kept)
        if not v2:
            return _legacy_rebuild(batch, kept), len(kept)
        horizon = now + delete_retention_ms if set_horizon else batch.delete_horizon_ms
        return _v2_rebuild(batch, kept, horizon), len(kept)
    if retention == BatchRetention.RETAIN_EMPTY:
        if not v2:
            raise ValueError("Empty batches are only supported for magic v2 and above")
        lat = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
        return build_record_batch(
            [], base_offset=batch.base_offset, last_offset_delta=batch.last_offset_delta,
            max_timestamp=batch.max_timestamp, timestamp_type=batch.timestamp_type,
            log_append_time=batch.max_timestamp if lat else None,
            is_transactional=batch.is_transactional, is_control=batch.is_control,
            producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence, partition_leader_epoch=batch.partition_leader_epoch), 0
    return b"", 0


def _v2_rebuild(batch: RecordBatch, kept: list, horizon: int | None) -> bytes:
    # Through the schema: build_record_batch numbers records 0..n-1, but kept
    # records must keep their offset deltas.
    base_ts = horizon if horizon is not None else kept[0].timestamp
    attributes = batch.attributes & ~S.DELETE_HORIZON_BIT
    if horizon is not None:
        attributes |= S.DELETE_HORIZON_BIT
    return schemas.build(S.RecordBatch, dict(
        base_offset=batch.base_offset, partition_leader_epoch=batch.partition_leader_epoch, magic=2,
        attributes=attributes, last_offset_delta=batch.last_offset_delta, base_timestamp=base_ts,
        max_timestamp=batch.max_timestamp, producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
        records=[dict(attributes=0, timestamp_delta=r.timestamp - base_ts,
                      offset_delta=r.offset - batch.base_offset, key=r.key, value=r.value,
                      headers=[dict(key=k, value=v) for k, v in r.headers]) for r in kept]))


def _legacy_rebuild(batch: LegacyBatch, kept: list) -> bytes:
    # Only a wrapper can lose some records (a plain message is kept or dropped
    # whole). v1 inner offsets are relative to the first kept record.
    wrapper = schemas.parse(S.LegacyMessage, batch.data, position=batch.position)
    by_offset = {r.offset: r for r in kept}
    records = batch.records()
    inner = [m for m, r in zip(wrapper.value, records) if r.offset in by_offset]
    base = kept[0].offset
    for m, r in zip(inner, kept):
        m.offset = r.offset - base if batch.magic == 1 else r.offset
    lat = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    ts = batch.max_timestamp if lat else max((r.timestamp for r in kept), default=-1)
    wrapper.offset = kept[-1].offset
    if wrapper.magic == 1:
        wrapper.timestamp = ts
    wrapper.value = inner
    return schemas.build(S.MessageSet, [wrapper])       # recompressed


@dataclass
class _LastRecord:
    last_data_offset: int | None
    epoch: int
    timestamp: int


@dataclass(frozen=True)
class LogScan:
    """What compaction needs from the whole log, read once."""

    aborted: list[tuple[int, int, int]]          # (producer id, first offset, marker offset)
    last_records: dict[int, _LastRecord]         # producer id -> its last batch


def control_type(batch: RecordBatch) -> int | None:
    records = batch.records()
    return control_record(records[0]).type if records else None


def scan_log(batches) -> LogScan:
    """Aborted transactions (what a .txnindex holds) and each producer's last batch."""
    ongoing: dict[int, int] = {}
    aborted: list[tuple[int, int, int]] = []
    last: dict[int, _LastRecord] = {}
    for b in batches:
        if not isinstance(b, RecordBatch) or b.producer_id < 0:
            continue
        pid = b.producer_id
        prev = last.get(pid)
        if b.is_control:
            kind = control_type(b)
            first = ongoing.pop(pid, b.base_offset)
            if kind == CONTROL_ABORT:
                aborted.append((pid, first, b.last_offset))
            last[pid] = _LastRecord(prev.last_data_offset if prev else None, b.producer_epoch, b.max_timestamp)
        else:
            if b.is_transactional:
                ongoing.setdefault(pid, b.base_offset)
            last[pid] = _LastRecord(b.last_offset, b.producer_epoch, b.max_timestamp)
    return LogScan(sorted(aborted, key=lambda a: a[1]), last)


class CleanedTransactionMetadata:
    """Which transactional batches and markers a pass may discard (Kafka's
    CleanedTransactionMetadata), fed batches in offset order."""

    def __init__(self, aborted: list[tuple[int, int, int]]) -> None:
        self._aborted = list(aborted)
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, bool] = {}      # pid -> saw a batch of it

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][1] <= offset:
            pid = self._aborted.pop(0)[0]
            self._ongoing_aborted[pid] = False

    def on_batch_read(self, batch: Batch) -> bool:
        self._consume_aborted_up_to(batch.last_offset)
        if not isinstance(batch, RecordBatch):
            return False
        if batch.is_control:
            kind = control_type(batch)
            pid = batch.producer_id
            if kind is None:
                return True                        # already emptied by a previous pass
            if kind == CONTROL_ABORT:
                saw = self._ongoing_aborted.pop(pid, None)
                return not saw                     # keep the marker while its data remains
            if kind == CONTROL_COMMIT:
                if pid in self._ongoing_committed:
                    self._ongoing_committed.discard(pid)
                    return False
                return True
            return False
        if batch.is_transactional:
            if batch.producer_id in self._ongoing_aborted:
                self._ongoing_aborted[batch.producer_id] = True
                return True
            self._ongoing_committed.add(batch.producer_id)
        return False


# --- the pass --------------------------------------------------------------------------

class LogCleaner:
    """Cleans compacted logs. ``clean`` does one pass; the caller keeps the
    returned ``end_offset`` (LogManager stores it in cleaner-offset-checkpoint)."""

    def __init__(self, *, producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS) -> None:
        self.producer_id_expiration_ms = producer_id_expiration_ms

    @staticmethod
    def first_uncleanable_offset(log: UnifiedLog, first_dirty: int, now: int) -> int:
        segments = log.segments
        lag = log.config.min_compaction_lag_ms
        for seg in segments[:-1]:
            if seg.base_offset >= first_dirty and lag > 0 and seg.largest_timestamp > now - lag:
                return seg.base_offset
        return segments[-1].base_offset

    def dirty_ratio(self, log: UnifiedLog, first_dirty: int, now: int) -> float:
        end = self.first_uncleanable_offset(log, first_dirty, now)
        clean = sum(s.size for s in log.segments if s.base_offset < min(first_dirty, end))
        dirty = sum(s.size for s in log.segments if first_dirty <= s.base_offset < end)
        return dirty / (clean + dirty) if clean + dirty else 0.0

    def clean(self, log: UnifiedLog, *, first_dirty_offset: int = 0, now: int | None = None) -> CleanResult:
        now = log.clock() if now is None else now
        config: LogConfig = log.config
        segments = log.segments
        first_dirty = max(first_dirty_offset, log.log_start_offset)
        end = self.first_uncleanable_offset(log, first_dirty, now)
        stats = CleanerStats()
        if first_dirty >= end:
            return CleanResult(first_dirty, max(first_dirty_offset, first_dirty), stats)
        scan = scan_log(b for seg in segments for b in seg.batches())
        aborted_data = self._aborted_batches(segments, scan)
        offset_map = self._build_offset_map(segments, first_dirty, end, aborted_data)
        active = {pid: r for pid, r in scan.last_records.items()
                  if now - r.timestamp < self.producer_id_expiration_ms}
        clean_section = [s for s in segments if s.base_offset < first_dirty]
        legacy_horizon = (clean_section[-1].last_modified_ms - config.delete_retention_ms
                          if clean_section else 0)
        txn = CleanedTransactionMetadata(scan.aborted)
        for seg in segments:
            if seg.base_offset >= end:
                break
            self._clean_segment(log, seg, offset_map, active, txn, now,
                                seg.last_modified_ms > legacy_horizon, stats)
        return CleanResult(first_dirty, end, stats)

    @staticmethod
    def _aborted_batches(segments, scan: LogScan) -> set[int]:
        """Base offsets of transactional data batches of aborted transactions."""
        out: set[int] = set()
        spans = {}
        for pid, first, last in scan.aborted:
            spans.setdefault(pid, []).append((first, last))
        for seg in segments:
            for b in seg.batches():
                if isinstance(b, RecordBatch) and b.is_transactional and not b.is_control:
                    if any(f <= b.base_offset < l for f, l in spans.get(b.producer_id, ())):
                        out.add(b.base_offset)
        return out

    @staticmethod
    def _build_offset_map(segments, start: int, end: int, aborted: set[int]) -> dict[bytes, int]:
        offset_map: dict[bytes, int] = {}
        for seg in segments:
            if seg.base_offset >= end:
                break
            for b in seg.batches():
                if b.last_offset < start or (isinstance(b, RecordBatch) and
                                             (b.is_control or b.base_offset in aborted)):
                    continue
                for r in b.records():
                    if r.key is not None and start <= r.offset < end:
                        offset_map[r.key] = r.offset
        return offset_map

    def _clean_segment(self, log: UnifiedLog, seg: LogSegment, offset_map: dict[bytes, int],
                       active: dict[int, _LastRecord], txn: CleanedTransactionMetadata, now: int,
                       retain_legacy_deletes: bool, stats: CleanerStats) -> None:
        config = log.config
        out: list[bytes] = []
        changed = False
        for batch in seg.batches():
            can_discard = txn.on_batch_read(batch)
            horizon = batch.delete_horizon_ms if isinstance(batch, RecordBatch) else None
            is_control = isinstance(batch, RecordBatch) and batch.is_control
            discard_records = (can_discard and horizon is not None and horizon <= now) if is_control \
                else can_discard
            retention = (BatchRetention.RETAIN_EMPTY if self._is_last_of_producer(batch, active)
                         else BatchRetention.DELETE if discard_records else BatchRetention.DELETE_EMPTY)

            def keep(record, batch=batch, horizon=horizon, discard=discard_records, control=is_control):
                if discard:
                    return False
                if control:
                    return True
                if record.key is None:
                    return False
                if record.offset < offset_map.get(record.key, -1):
                    return False
                if record.value is not None:
                    return True
                if isinstance(batch, RecordBatch):
                    return horizon is None or now < horizon
                return retain_legacy_deletes

            data, kept = filter_batch(batch, keep, retention=retention,
                                      contains_marker_for_empty_txn=can_discard and is_control,
                                      now=now, delete_retention_ms=config.delete_retention_ms)
            stats.bytes_read += batch.size
            stats.records_read += batch.records_count if isinstance(batch, RecordBatch) else 1
            stats.records_retained += kept
            changed |= data != bytes(batch.data)
            if data:
                out.append(data)
        if not changed:
            return
        cleaned = new_segment(log.dir, seg.base_offset, config, now, file_suffix=CLEANED_SUFFIX)
        for data in out:
            cleaned.append(data)
        cleaned.on_become_inactive()
        cleaned.flush()
        cleaned.set_last_modified(seg.last_modified_ms)    # retention.ms keeps counting from the original
        if log.replace_segment(seg, cleaned):
            stats.segments_cleaned += 1
            stats.bytes_written += cleaned.size

    @staticmethod
    def _is_last_of_producer(batch: Batch, active: dict[int, _LastRecord]) -> bool:
        if not isinstance(batch, RecordBatch) or batch.producer_id < 0:
            return False
        last = active.get(batch.producer_id)
        if last is None:
            return False
        if last.last_data_offset is not None:
            return batch.last_offset == last.last_data_offset
        return batch.is_control and batch.producer_epoch == last.epoch
