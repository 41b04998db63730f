"""Opening a partition directory: cleanup, sanity checks, recovery (Kafka's LogLoader).

1. ``.deleted`` and ``.cleaned`` files are removed, ``.swap`` files renamed into
   place (a compaction swap that a crash interrupted), orphaned indexes removed.
2. Each ``.log`` opens as a segment; a missing or insane index gets that
   segment recovered (its indexes rebuilt) at once.
3. After an unclean shutdown every segment from the one holding the recovery
   point onwards is recovered: each batch checked (size within the file, CRC,
   offsets increasing within the segment), the file truncated at the first
   invalid one and, if bytes were lost, every later segment deleted.
4. No segment left: an empty one at the log start offset. A log end below the
   log start offset checkpoint: everything deleted, empty at the start offset.
   The log end is read from the last segment (after its last index entry);
   a tail that does not parse there gets that segment recovered even after
   a clean shutdown.
5. The last segment's indexes grow back to ``segment.index.bytes``; the
   recovery point is the log end after a clean shutdown, else
   min(checkpoint, log end).
6. Producer state: the newest readable ``.snapshot`` at or below the log end
   (and, after an unclean shutdown, the recovery point), then the batches
   after it replayed; aborted transactions found on the way go into the
   ``.txnindex`` of the segment holding their marker (recovery emptied those
   it rebuilt). Snapshots past the log end are deleted.
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from kproto.errors import DecodeError
from kproto.log.producer_state import ProducerStateManager, list_snapshots, load_latest_snapshot
from kproto.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment, segment_path
from kproto.log.txn_index import TXN_INDEX_SUFFIX, AbortedTxn
from kproto.topic_config import LogConfig

log = logging.getLogger("kproto.log")

DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX = ".deleted", ".cleaned", ".swap"


@dataclass
class LoadedLog:
    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    next_offset: int
    # (file, byte it was truncated at, the error found there) of each truncation
    truncations: list[tuple[str, int, str]] = field(default_factory=list)
    producer_state: ProducerStateManager = field(default_factory=ProducerStateManager)


def base_offset_of(path: Path) -> int | None:
    stem = path.name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def new_segment(dir: Path, base_offset: int, config: LogConfig, now: int,
                file_suffix: str = "") -> LogSegment:
    # segment.jitter.ms: a random part of segment.ms, so that segments of many
    # partitions created together do not all roll at once.
    jitter = random.randrange(min(config.segment_jitter_ms, config.segment_ms)) \
        if config.segment_jitter_ms else 0
    return LogSegment(dir, base_offset, index_interval_bytes=config.index_interval_bytes,
                      max_index_size=config.segment_index_bytes, created_ms=now,
                      roll_jitter_ms=jitter, file_suffix=file_suffix)


def _clean_temporary_files(dir: Path) -> None:
    for p in sorted(dir.iterdir()):
        if p.name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX)):
            p.unlink()
        elif p.name.endswith(SWAP_SUFFIX):
            os.replace(p, p.with_name(p.name[:-len(SWAP_SUFFIX)]))


def load_log(dir: Path, config: LogConfig, *, recovery_point: int, log_start_offset: int,
             had_clean_shutdown: bool, now: int) -> LoadedLog:
    dir = Path(dir)
    _clean_temporary_files(dir)
    bases = sorted(b for p in dir.glob("*" + LOG_SUFFIX) if (b := base_offset_of(p)) is not None)
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        for p in dir.glob("*" + suffix):
            if base_offset_of(p) not in bases:
                log.warning("Found an orphaned index file %s, with no corresponding log file.", p)
                p.unlink()

    truncations: list[tuple[str, int, str]] = []

    def recover(seg: LogSegment) -> int:
        truncated, error = seg.recover(config.segment_index_bytes)
        if truncated:
            where = seg.size                # the byte the file now ends at
            reason = str(error) if error is not None else "truncated"
            log.warning("Found invalid messages in log segment %s at byte offset %d: %s",
                        seg.log.path, where, reason)
            log.warning("Truncated %d invalid bytes at the end of segment %s during recovery",
                        truncated, seg.log.path)
            truncations.append((str(seg.log.path), where, reason))
        return truncated

    segments: list[LogSegment] = []
    for base in bases:
        missing = not (segment_path(dir, base, INDEX_SUFFIX).exists()
                       and segment_path(dir, base, TIME_INDEX_SUFFIX).exists())
        seg = new_segment(dir, base, config, now)
        try:
            if missing:
                raise ValueError("missing index")
            seg.sanity_check()
        except (DecodeError, ValueError) as e:    # CorruptIndexError or a missing index: rebuild
            log.warning("Rebuilding the indexes of %s: %s", seg.log.path, e)
            recover(seg)
        segments.append(seg)

    if not had_clean_shutdown and segments:
        first = max((i for i, s in enumerate(segments) if s.base_offset <= recovery_point), default=0)
        for i in range(first, len(segments)):
            if recover(segments[i]):
                for later in segments[i + 1:]:
                    log.warning("Corruption found in segment %d, truncating to offset %d: deleting %s "
                                "(%d bytes)", segments[i].base_offset, segments[i].read_next_offset(),
                                later.log.path, later.size)
                    later.delete()
                del segments[i + 1:]
                break

    if not segments:
        segments.append(new_segment(dir, log_start_offset, config, now))
    try:
        next_offset = segments[-1].read_next_offset()
    except DecodeError:
        # A bad tail that a "clean" shutdown left (Kafka would take the dir
        # offline): recover the last segment rather than refuse the log.
        recover(segments[-1])
        next_offset = segments[-1].read_next_offset()
    if next_offset < log_start_offset:
        for seg in segments:
            seg.delete()
        segments = [new_segment(dir, log_start_offset, config, now)]
        next_offset = log_start_offset
    segments[-1].resize_indexes(config.segment_index_bytes)
    start = max(log_start_offset, segments[0].base_offset)
    recovery = next_offset if had_clean_shutdown else min(recovery_point, next_offset)
    state = rebuild_producer_state(dir, segments, next_offset, snapshot_limit=recovery)
    return LoadedLog(segments, start, recovery, next_offset, truncations, state)


def rebuild_producer_state(dir: Path, segments: list[LogSegment], next_offset: int, *,
                           snapshot_limit: int) -> ProducerStateManager:
    """Step 6 of the module docstring (UnifiedLog.rebuildProducerState)."""
    for offset, path in list_snapshots(dir):
        if offset > next_offset:
            log.warning("Deleting producer snapshot %s past the log end offset %d", path, next_offset)
            path.unlink(missing_ok=True)
    state, from_offset = load_latest_snapshot(dir, min(snapshot_limit, next_offset))
    start = segments[0].base_offset if from_offset is None else from_offset
    for i, seg in enumerate(segments):
        if (segments[i + 1].base_offset if i + 1 < len(segments) else next_offset) <= start:
            continue                                  # wholly before the snapshot
        for batch in seg.batches():
            if batch.base_offset < start:
                continue
            done = state.on_batch(batch)
            if done is None:
                continue
            if done.is_aborted and (seg.txn_index.last_offset is None or seg.txn_index.last_offset < done.last_offset):
                seg.txn_index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset,
                                                state.last_stable_offset(done)))
            state.complete_txn(done)
    state.map_end_offset = next_offset
    return state
