"""One partition's log (Kafka's UnifiedLog over LocalLog): a directory
``<topic>-<partition>`` of segments, the last one active.

Concurrency: appends, rolls, retention and segment swaps hold the log's lock;
reads take no lock. They work on a snapshot (the segment tuple and the log
end's position, both replaced whole, never mutated), so a read that started
before a retention pass keeps reading the segments it saw. A deleted segment
is renamed ``.deleted`` and removed after ``file.delete.delay.ms`` (as Kafka's
asyncDeleteSegment), readable meanwhile (the file pool reopens it by its new
name); a FetchSlice being sent pins its file open even past the removal.

Single node: the high watermark is the log end offset. The last stable offset
(LSO) is the first offset of the oldest open transaction, else the high
watermark; read_committed fetches stop there (``read(max_offset=...)``) and
learn the aborted transactions in range from the segments' ``.txnindex``
(``collect_aborted_transactions``). Producer state is snapshotted at every roll
and at close (``<offset>.snapshot``) so that opening a log replays only the
batches after the newest snapshot.
"""

from __future__ import annotations

import bisect
import logging
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from kproto.common import now_ms
from kproto.errors import ErrorCode, KafkaError, KprotoError, OffsetOutOfRangeError, UsageError
from kproto.topic_config import LogConfig
from kproto.log.index import NO_TIMESTAMP, TimestampOffset
from kproto.log.loader import DELETED_SUFFIX, LoadedLog, load_log, new_segment, rebuild_producer_state
from kproto.log.producer_state import ProducerStateManager, list_snapshots, snapshot_path, write_snapshot
from kproto.log.segment import FetchSlice, LogSegment
from kproto.log.txn_index import AbortedTxn
from kproto.records import RecordBatch, iter_batches
from kproto.log.validator import (
    AppendOrigin, RecordBatchTooLargeError, validate_and_assign_offsets,
)

Clock = Callable[[], int]

log = logging.getLogger("kproto.log")

# ListOffsets special timestamps (ListOffsetsRequest)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4


class KafkaStorageError(KafkaError):
    """A file operation failed, or the log is closed (KAFKA_STORAGE_ERROR)."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class LogAppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    log_append_time: int      # -1 unless message.timestamp.type=LogAppendTime (a duplicate: its batch's time)


class LogOffsetMetadata(NamedTuple):
    """An offset and where it sits: the segment base and byte position."""

    message_offset: int
    segment_base_offset: int
    relative_position: int


def parse_topic_partition(dir_name: str) -> tuple[str, int]:
    """``<topic>-<partition>`` -> (topic, partition) (Log.parseTopicPartitionName)."""
    topic, sep, partition = dir_name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise UsageError(f"Found directory {dir_name}, '{dir_name}' is not in the form of "
                         f"topic-partition or topic-partition.uniqueId-delete (if marked for deletion).")
    return topic, int(partition)


class UnifiedLog:
    """A partition's log. Open with ``UnifiedLog.open``."""

    def __init__(self, dir: Path, config: LogConfig, loaded: LoadedLog, clock: Clock) -> None:
        self.dir = Path(dir)
        self.topic, self.partition = parse_topic_partition(self.dir.name)
        self.config = config
        self.clock = clock
        self._lock = threading.RLock()
        self._segments: tuple[LogSegment, ...] = tuple(loaded.segments)
        self._bases: tuple[int, ...] = tuple(s.base_offset for s in loaded.segments)
        active = loaded.segments[-1]
        self._end = LogOffsetMetadata(loaded.next_offset, active.base_offset, active.size)
        self.log_start_offset = loaded.log_start_offset
        self.recovery_point = loaded.recovery_point
        self.truncations = loaded.truncations
        self.producer_state: ProducerStateManager = loaded.producer_state
        self._last_flush_ms = clock()
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._closed = False
        self._append_failing = False      # logged the failure of this episode already
        # A replicated partition's high watermark, set by its leader's or follower's state
        # (Partition.maybeIncrementLeaderHW, ReplicaFetcherThread); None: a standalone log,
        # whose every appended record is committed, so its HW is its LEO.
        self._high_watermark: int | None = None

    @classmethod
    def open(cls, dir: Path, config: LogConfig | None = None, *, recovery_point: int = 0,
             log_start_offset: int = 0, had_clean_shutdown: bool = True,
             clock: Clock = now_ms) -> "UnifiedLog":
        """Open (creating if needed) the log in ``dir``, recovering it after an
        unclean shutdown from ``recovery_point`` on (see kproto.log.loader)."""
        dir = Path(dir)
        parse_topic_partition(dir.name)
        dir.mkdir(parents=True, exist_ok=True)
        config = config or LogConfig()
        loaded = load_log(dir, config, recovery_point=recovery_point, log_start_offset=log_start_offset,
                          had_clean_shutdown=had_clean_shutdown, now=clock())
        return cls(dir, config, loaded, clock)

    # -- state -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """A snapshot of the segments, oldest first."""
        return self._segments

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self._end.message_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self._end

    @property
    def high_watermark(self) -> int:
        hw = self._high_watermark
        return self._end.message_offset if hw is None else min(hw, self._end.message_offset)

    def update_high_watermark(self, offset: int) -> None:
        """Set the HW of a replicated log (UnifiedLog.updateHighWatermark): clamped to the
        log start and end offsets, as Kafka's is."""
        self._high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)

    @property
    def last_stable_offset(self) -> int:
        first_unstable = self.producer_state.first_unstable_offset
        hw = self.high_watermark
        if first_unstable is None:
            return hw
        # never below the log start offset (UnifiedLog.maybeIncrementFirstUnstableOffset):
        # DeleteRecords may pass an open transaction's first offset
        return min(max(first_unstable, self.log_start_offset), hw)

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    def _set_segments(self, segments: list[LogSegment]) -> None:
        self._bases = tuple(s.base_offset for s in segments)
        self._segments = tuple(segments)

    def _update_end(self, offset: int) -> None:
        active = self._segments[-1]
        self._end = LogOffsetMetadata(offset, active.base_offset, active.size)

    @contextmanager
    def _storage(self, action: str) -> Iterator[None]:
        # Kafka turns an IOException into KafkaStorageException; so do we.
        try:
            yield
        except OSError as e:
            raise KafkaStorageError(f"Error while {action} for {self.name} in dir {self.dir.parent}: "
                                    f"{e}") from e

    # -- append ------------------------------------------------------------------------

    def append(self, records: bytes | bytearray | memoryview, *, assign_offsets: bool = True,
               leader_epoch: int | None = None,
               origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo:
        """Validate ``records`` (whole batches, CRCs, sizes, config rules), give
        them offsets from the log end and append them, rolling first if due.

        Returns (first offset, last offset, log append time or -1); an empty
        input appends nothing and returns (-1, -1, -1).

        A client's idempotent batch that repeats one of the last five its
        producer appended (a retry) writes nothing: the result is that batch's
        (first offset, last offset, timestamp), as Kafka's
        UnifiedLog.append answers the duplicate found by
        analyzeAndValidateProducerState. A batch out of sequence or of a fenced
        epoch raises OutOfOrderSequenceError / InvalidProducerEpochError."""
        with self._lock, self._storage("appending records"):
            self._check_open()
            try:
                info = self._append(records, assign_offsets, leader_epoch, origin)
            except (OSError, KafkaStorageError) as e:
                cause = e if isinstance(e, OSError) else e.__cause__
                if isinstance(cause, OSError):
                    self._log_append_failure(cause)
                raise
            if info.first_offset >= 0:
                self._append_failing = False
            return info

    def _log_append_failure(self, e: OSError) -> None:
        """Once per episode: a full or read-only disk fails every append until
        the operator acts, each answered KAFKA_STORAGE_ERROR; one line says why
        (Kafka's LogDirFailureChannel logs the IOException at ERROR)."""
        if self._append_failing:
            return
        self._append_failing = True
        file = e.filename or self.active_segment.log.path
        reason = f"[Errno {e.errno}] {e.strerror}" if e.strerror else str(e)
        log.error("Error while appending records for %s to %s: %s (KAFKA_STORAGE_ERROR to every append "
                  "until one succeeds; those failures are not logged)", self.name, file, reason)

    def _append(self, records: bytes | bytearray | memoryview, assign_offsets: bool,
                leader_epoch: int | None, origin: AppendOrigin) -> LogAppendInfo:
        """The append itself, under the lock; OSErrors left to the caller."""
        now = self.clock()
        v = validate_and_assign_offsets(
            records, next_offset=self.log_end_offset, config=self.config, now=now,
            assign_offsets=assign_offsets, leader_epoch=leader_epoch, origin=origin,
            topic_partition=self.name)
        if not v.batch_count:
            return LogAppendInfo(-1, -1, -1)
        if len(v.records) > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {len(v.records)} bytes in append to partition {self.name} "
                f"which exceeds the maximum configured segment size of {self.config.segment_bytes}.")
        batches = list(iter_batches(v.records, verify_crc=False))
        state = self.producer_state
        if origin is AppendOrigin.CLIENT:
            duplicate = state.find_duplicate(batches)
            if duplicate is not None:
                return LogAppendInfo(duplicate.first_offset, duplicate.last_offset, duplicate.timestamp)
        if origin is not AppendOrigin.REPLICATION:
            for b in batches:
                if isinstance(b, RecordBatch):
                    state.validate(b)
        segment = self._maybe_roll(len(v.records), v.max_timestamp, v.first_offset, v.last_offset, now)
        segment.append(v.records, batches)
        for b in batches:
            done = state.on_batch(b) if isinstance(b, RecordBatch) else None
            if done is not None:
                if done.is_aborted:
                    segment.txn_index.append(AbortedTxn(done.producer_id, done.first_offset,
                                                        done.last_offset, state.last_stable_offset(done)))
                state.complete_txn(done)
        state.map_end_offset = v.last_offset + 1
        self._update_end(v.last_offset + 1)
        self._maybe_flush(now)
        return LogAppendInfo(v.first_offset, v.last_offset, v.log_append_time)

    def _maybe_roll(self, size: int, max_timestamp: int, first_offset: int, last_offset: int,
                    now: int) -> LogSegment:
        segment = self.active_segment
        if segment.should_roll(messages_size=size, max_timestamp=max_timestamp, max_offset=last_offset,
                               now=now, segment_bytes=self.config.segment_bytes,
                               segment_ms=self.config.segment_ms):
            return self.roll(first_offset)
        return segment

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the log end (or ``expected_next_offset``
        when a replicated append leaves a gap). The old one gets its final time
        index entry, trimmed indexes, and is flushed."""
        with self._lock, self._storage("rolling the log"):
            self._check_open()
            now = self.clock()
            new_base = max(self.log_end_offset, expected_next_offset or 0)
            active = self.active_segment
            segments = list(self._segments)
            if active.size == 0:
                if active.base_offset == new_base:
                    return active
                segments.pop()
                active.delete()                 # an empty segment is replaced, not kept
            else:
                active.on_become_inactive()
            segments.append(new_segment(self.dir, new_base, self.config, now))
            self._set_segments(segments)
            self._update_end(self.log_end_offset)
            if active.size:
                self.flush(new_base)
                self._take_producer_snapshot()
            return self.active_segment

    def _take_producer_snapshot(self) -> None:
        """ProducerStateManager.takeSnapshot: the state at the log end, unless taken already."""
        path = snapshot_path(self.dir, self.log_end_offset)
        if not path.exists():
            write_snapshot(path, self.producer_state)

    # -- flush ---------------------------------------------------------------------------

    def flush(self, offset: int | None = None) -> None:
        """fsync the segments holding [recovery point, offset) and advance the
        recovery point to ``offset`` (default: the log end)."""
        with self._lock, self._storage("flushing the log"):
            offset = self.log_end_offset if offset is None else offset
            if offset <= self.recovery_point:
                return
            i = max(bisect.bisect_right(self._bases, self.recovery_point) - 1, 0)
            for seg in self._segments[i:]:
                if seg.base_offset >= offset:
                    break
                seg.flush()
            self.recovery_point = offset
            self._last_flush_ms = self.clock()

    def _flush_due(self, now: int, end_offset: int) -> bool:
        # flush.messages counts unflushed messages (offsets) past the recovery point.
        return (end_offset - self.recovery_point >= self.config.flush_messages
                or now - self._last_flush_ms >= self.config.flush_ms)

    def _maybe_flush(self, now: int) -> None:
        if self._flush_due(now, self.log_end_offset):
            self.flush()

    def append_may_sync(self, size: int) -> bool:
        """Whether appending ``size`` bytes of records may fsync: the flush policy
        comes due, or the active segment rolls (which flushes it). A bound, not a
        promise: at most ``size`` records, stamped now (a roll on the records' own
        timestamps can still come unannounced)."""
        now = self.clock()
        end = self.log_end_offset + size
        if self._flush_due(now, end):
            return True
        try:    # should_roll may read the segment's first batch
            return self.active_segment.should_roll(
                messages_size=size, max_timestamp=now, max_offset=end, now=now,
                segment_bytes=self.config.segment_bytes, segment_ms=self.config.segment_ms)
        except (OSError, KprotoError):      # the append meets it again, and answers it
            return True

    def flush_if_due(self, now: int | None = None) -> bool:
        """LogManager.flushDirtyLogs: flush when flush.ms has passed since the last flush."""
        now = self.clock() if now is None else now
        if now - self._last_flush_ms >= self.config.flush_ms and self.log_end_offset > self.recovery_point:
            self.flush()
            return True
        return False

    # -- reads ---------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_message: bool = True) -> FetchSlice:
        """Whole batches from the batch holding ``offset``: up to ``max_bytes``,
        but the first batch even if larger (``min_one_message``), from one
        segment, below ``max_offset`` (default the high watermark).

        An offset at the log end gives an empty slice; outside
        [log start, log end] raises OffsetOutOfRangeError."""
        end, segments, bases = self._end, self._segments, self._bases
        upper = end.message_offset if max_offset is None else min(max_offset, end.message_offset)
        if offset > end.message_offset or offset < self.log_start_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {offset} for partition {self.name}, but we only have "
                f"log segments in the range {self.log_start_offset} to {end.message_offset}.")
        if offset >= upper:
            return FetchSlice(None, 0, 0, "", offset)
        i = max(bisect.bisect_right(bases, offset) - 1, 0)
        with self._storage("reading the log"):
            for seg in segments[i:]:
                if seg.base_offset >= upper:
                    break
                max_position = end.relative_position if seg.base_offset == end.segment_base_offset else None
                # below the log end only the high watermark or LSO needs looking up: no batch
                # before the end position holds the log end offset
                found = seg.read(offset, max_bytes, max_position=max_position,
                                 max_offset=upper if upper < end.message_offset else None,
                                 min_one_message=min_one_message)
                if found is not None:
                    return found
        return FetchSlice(None, 0, 0, "", offset)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start_offset, upper_bound_offset)
        (LocalLog.collectAbortedTransactions), for a read_committed fetch."""
        segments, bases = self._segments, self._bases
        i = max(bisect.bisect_right(bases, start_offset) - 1, 0)
        out: list[AbortedTxn] = []
        for seg in segments[i:]:
            found = seg.txn_index.collect_aborted_txns(start_offset, upper_bound_offset)
            out.extend(found.aborted)
            if found.is_complete:
                break
        return out

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """ListOffsets: the first offset whose record timestamp is >= ``timestamp``
        (None if none), or for -1 / -2 / -4 the log end / start, for -3 the
        record with the largest timestamp."""
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return TimestampOffset(NO_TIMESTAMP, self.log_start_offset)
        if timestamp == LATEST_TIMESTAMP:     # for consumers, the HW (UnifiedLog.fetchOffsetByTimestamp)
            return TimestampOffset(NO_TIMESTAMP, self.high_watermark)
        segments = self._segments
        if timestamp == MAX_TIMESTAMP:
            seg = max(segments, key=lambda s: s.max_timestamp_so_far)
            if seg.max_timestamp_so_far < 0:
                return None
            return seg.find_offset_by_timestamp(seg.max_timestamp_so_far, self.log_start_offset)
        if timestamp < 0:
            return None
        for seg in segments:
            if seg.max_timestamp_so_far >= timestamp:
                return seg.find_offset_by_timestamp(timestamp, self.log_start_offset)
        return None

    # -- truncation, start offset, retention ---------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Drop every offset >= ``offset`` (a follower's truncation). True if anything went."""
        with self._lock, self._storage("truncating the log"):
            self._check_open()
            if offset >= self.log_end_offset:
                return False
            now = self.clock()
            if offset <= self.log_start_offset:
                for seg in self._segments:
                    seg.delete()
                self._set_segments([new_segment(self.dir, offset, self.config, now)])
                self.log_start_offset = offset
            else:
                keep = [s for s in self._segments if s.base_offset < offset]
                for seg in self._segments[len(keep):]:
                    seg.delete()
                keep[-1].truncate_to(offset, now)
                keep[-1].resize_indexes(self.config.segment_index_bytes)
                self._set_segments(keep)
            self._update_end(offset)
            self.recovery_point = min(self.recovery_point, offset)
            for snapshot_offset, path in list_snapshots(self.dir):
                if snapshot_offset > offset:
                    path.unlink(missing_ok=True)
            self.producer_state = rebuild_producer_state(self.dir, list(self._segments), offset,
                                                         snapshot_limit=offset)
            return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and start empty at ``offset`` (UnifiedLog.truncateFullyAndStartAt:
        a KRaft follower that installed the leader's snapshot)."""
        with self._lock, self._storage("truncating the log fully"):
            self._check_open()
            for seg in self._segments:
                seg.delete()
            self._set_segments([new_segment(self.dir, offset, self.config, self.clock())])
            self.log_start_offset = offset
            self._update_end(offset)
            self.recovery_point = offset
            self._high_watermark = offset
            for _, path in list_snapshots(self.dir):
                path.unlink(missing_ok=True)
            self.producer_state = rebuild_producer_state(self.dir, list(self._segments), offset,
                                                         snapshot_limit=offset)

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords / retention: raise the log start offset (never past the
        high watermark; UnifiedLog.maybeIncrementLogStartOffset). Reads below it
        are out of range at once; the segments wholly below it go with
        ``delete_log_start_offset_breached_segments`` (retention passes call it)."""
        with self._lock:
            self._check_open()
            if offset > self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {offset} of partition {self.name} "
                    f"since it is larger than the high watermark {self.high_watermark}")
            if offset <= self.log_start_offset:
                return False
            self.log_start_offset = offset
            return True

    def delete_old_segments(self, now: int | None = None) -> int:
        """One retention pass (UnifiedLog.deleteOldSegments): with cleanup.policy
        delete, segments past retention.ms (by their largest timestamp) and
        beyond retention.bytes; always segments wholly below the log start
        offset. Whole segments, oldest first. When every segment is due the log
        rolls first, so the active segment itself is never deleted. Returns the
        number deleted."""
        now = self.clock() if now is None else now
        deleted = 0
        with self._lock, self._storage("deleting old segments"):
            self._check_open()
            if self.config.delete:
                if self.config.retention_ms >= 0:
                    deleted += self._delete_where(lambda seg, nxt: now - seg.largest_timestamp > self.config.retention_ms, now)
                deleted += self._delete_retention_size_breached(now)
            deleted += self.delete_log_start_offset_breached_segments(now)
            self.delete_pending_segments(now)
        return deleted

    def delete_log_start_offset_breached_segments(self, now: int | None = None) -> int:
        """The segments wholly below the log start offset (those whose next
        segment starts at or below it), as Kafka's deleteLogStartOffsetBreachedSegments;
        the active segment always stays. Returns the number deleted."""
        now = self.clock() if now is None else now
        with self._lock, self._storage("deleting segments below the log start offset"):
            self._check_open()
            return self._delete_where(
                lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset, now)

    def _delete_retention_size_breached(self, now: int) -> int:
        if self.config.retention_bytes < 0 or self.size < self.config.retention_bytes:
            return 0
        excess = [self.size - self.config.retention_bytes]

        def over(seg: LogSegment, nxt: LogSegment | None) -> bool:
            if excess[0] - seg.size >= 0:
                excess[0] -= seg.size
                return True
            return False
        return self._delete_where(over, now)

    def _delete_where(self, predicate: Callable[[LogSegment, LogSegment | None], bool], now: int) -> int:
        segments = list(self._segments)
        deletable = []
        for i, seg in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            last_and_empty = nxt is None and seg.size == 0
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if self.high_watermark >= upper and not last_and_empty and predicate(seg, nxt):
                deletable.append(seg)
            else:
                break
        if not deletable:
            return 0
        if len(deletable) == len(segments):
            self.roll()
        self._remove_segments(deletable, now)
        self.maybe_increment_log_start_offset(self._segments[0].base_offset)
        return len(deletable)

    def _remove_segments(self, doomed: list[LogSegment], now: int) -> None:
        """Take segments out of the log: renamed .deleted now, closed and removed
        after file.delete.delay.ms."""
        gone = {id(s) for s in doomed}
        self._set_segments([s for s in self._segments if id(s) not in gone])
        first = self._segments[0].base_offset
        for offset, path in list_snapshots(self.dir)[:-1]:     # always keep the newest one
            if offset < first:
                path.unlink(missing_ok=True)
        for seg in doomed:
            seg.change_suffix("", DELETED_SUFFIX)
            self._pending_deletes.append((now + self.config.file_delete_delay_ms, seg))

    def delete_pending_segments(self, now: int | None = None, *, force: bool = False) -> int:
        """Close and remove the ``.deleted`` segments whose delay has passed."""
        now = self.clock() if now is None else now
        with self._lock:
            due = [(t, s) for t, s in self._pending_deletes if force or t <= now]
            self._pending_deletes = [(t, s) for t, s in self._pending_deletes if not (force or t <= now)]
        for _, seg in due:
            seg.delete()
        return len(due)

    def replace_segment(self, old: LogSegment, cleaned: LogSegment) -> bool:
        """Swap a compacted copy (files ``.cleaned``) in for ``old``, as Kafka's
        replaceSegments: cleaned -> .swap, old -> .deleted, .swap -> final
        names. A crash between the steps is repaired by the loader. False (and
        the copy deleted) if ``old`` left the log meanwhile."""
        with self._lock:
            if old not in self._segments or old is self.active_segment:
                cleaned.delete()
                return False
            now = self.clock()
            cleaned.change_suffix(".cleaned", ".swap")
            i = self._segments.index(old)
            old.change_suffix("", DELETED_SUFFIX)
            self._pending_deletes.append((now + self.config.file_delete_delay_ms, old))
            cleaned.change_suffix(".swap", "")
            segments = list(self._segments)
            segments[i] = cleaned
            self._set_segments(segments)
            return True

    # -- life --------------------------------------------------------------------------

    def update_config(self, config: LogConfig) -> None:
        with self._lock:
            self.config = config

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"The log for partition {self.name} is closed")

    def close(self) -> None:
        """Flush and close every segment (trimming indexes, the final time index
        entry written): what a clean shutdown leaves."""
        with self._lock:
            if self._closed:
                return
            self.flush()
            with self._storage("writing the producer snapshot"):
                self._take_producer_snapshot()
            self.delete_pending_segments(force=True)
            for seg in self._segments:
                seg.close()
            self._closed = True

    def delete(self) -> None:
        """Close and remove the whole partition directory."""
        with self._lock:
            if not self._closed:
                self.delete_pending_segments(force=True)
                for seg in self._segments:
                    seg.close()
                self._closed = True
        shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"UnifiedLog({self.name}, start={self.log_start_offset}, end={self.log_end_offset}, "
                f"segments={len(self._segments)})")
