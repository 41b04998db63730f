"""One log segment: ``<base>.log`` with its ``.index``, ``.timeindex`` and
``.txnindex`` (Kafka's FileRecords + LogSegment).

Files are named by the segment's base offset as 20 zero-padded digits. The
``.log`` is read with ``pread`` and walked with ``kproto.records.iter_batches``
(headers only unless a CRC check is asked for), a fetch's slice found from the
batch headers near its ends alone (``LogSegment.read``); the indexes are written
sparsely: an entry once more than ``index.interval.bytes`` were appended
since the last one, per batch, holding the batch's last offset and start
position (as LogSegment.append and LogSegment.recover both do, so an index
rebuilt by recovery equals the one appends wrote).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from kproto.errors import CorruptRecordError, DecodeError, IncompleteBatchError
from kproto.log.file_pool import FilePool, PooledFile
from kproto.log.index import NO_TIMESTAMP, OffsetIndex, TimeIndex, TimestampOffset
from kproto.log.txn_index import TXN_INDEX_SUFFIX, TransactionIndex
from kproto.records import Batch, iter_batches
from kproto.schemas import records as S

LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX = ".log", ".index", ".timeindex"
INT32_MAX = 2**31 - 1
_CHUNK = 64 * 1024
_V2_LAST = S.V2_OFFSETS["last_offset_delta"] + 4     # a v2 header up to its last offset delta


def filename_prefix(offset: int) -> str:
    """LogFileUtils.filenamePrefixFromOffset: 20 digits, zero-padded."""
    return f"{offset:020d}"


def segment_path(dir: Path, base_offset: int, suffix: str, extra: str = "") -> Path:
    return Path(dir) / f"{filename_prefix(base_offset)}{suffix}{extra}"


class FileRecords(PooledFile):
    """A ``.log`` file: append at the end, read at any position. Its descriptor
    comes from the file pool (kproto.log.file_pool)."""

    def __init__(self, path: Path, pool: FilePool | None = None) -> None:
        super().__init__(path, pool)
        self.size = self.file_size()

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end; on an OSError nothing counts as written
        (``size`` is unchanged; the caller cuts the file back to it)."""
        written = self.pwrite(data, self.size)
        self.size += written
        return written

    def read(self, position: int, length: int) -> bytes:
        return self.pread(length, position)

    def batches(self, start: int = 0, end: int | None = None, *,
                verify_crc: bool = False) -> Iterator[Batch]:
        """The batches in [start, end), read in chunks. A trailing partial batch
        raises IncompleteBatchError; an invalid one CorruptRecordError; both
        name this file and the byte."""
        end = self.size if end is None else end
        pos, chunk = start, _CHUNK
        try:
            while pos < end:
                buf = self.read(pos, min(chunk, end - pos))
                reached = pos
                for batch in iter_batches(buf, verify_crc=verify_crc, position=pos, allow_incomplete=True):
                    reached = batch.position + batch.size
                    yield batch
                if reached > pos:
                    pos = reached
                    continue
                # Not even one whole batch in the chunk (iter_batches raised on
                # anything corrupt): a batch bigger than the chunk, or a cut tail.
                need = int.from_bytes(buf[S.LENGTH_OFFSET:S.LOG_OVERHEAD], "big", signed=True) \
                    + S.LOG_OVERHEAD if len(buf) >= S.LOG_OVERHEAD else end + 1
                if len(buf) < need and pos + need <= end:
                    chunk = need
                    continue
                raise IncompleteBatchError(
                    f"incomplete batch: {end - pos} bytes left in the file"
                    + (f", the batch needs {need}" if need <= end else ""), position=pos)
        except DecodeError as e:
            raise e.at(file=str(self.path)) from None

    def truncate_to(self, size: int) -> int:
        removed = self.size - size
        if removed > 0:
            self.ftruncate(size)
            self.size = size
        return max(removed, 0)

    def flush(self) -> None:
        self.fsync()


@dataclass(frozen=True)
class FetchSlice:
    """A region of a segment file holding whole batches: what a fetch sends.

    ``records`` is the segment's file. A fetch sends the region after its
    handler returns: ``pin()`` gives the descriptor and keeps it open (through
    pool eviction, a retention or compaction rename, even a delete) until
    ``unpin()``, which the server calls once the region is written or dropped."""

    records: FileRecords | None
    position: int
    length: int
    path: str = ""
    first_offset: int = -1

    def pin(self) -> int:
        if self.records is None:
            raise ValueError("an empty slice has no file")
        return self.records.pin()

    def unpin(self) -> None:
        self.records.unpin()

    def read(self) -> bytes:
        if self.records is None or self.length == 0:
            return b""
        return self.records.read(self.position, self.length)

    def sendfile(self, out_fd: int) -> int:
        """Send the region to a socket (os.sendfile); returns bytes sent."""
        sent = 0
        if self.length == 0:
            return 0
        fd = self.pin()
        try:
            while sent < self.length:
                n = os.sendfile(out_fd, fd, self.position + sent, self.length - sent)
                if n == 0:
                    break
                sent += n
        finally:
            self.unpin()
        return sent

    def __len__(self) -> int:
        return self.length


class LogSegment:
    """A segment: append, index, look up, recover, roll, delete."""

    def __init__(self, dir: Path, base_offset: int, *, index_interval_bytes: int,
                 max_index_size: int, created_ms: int, roll_jitter_ms: int = 0,
                 file_suffix: str = "") -> None:
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self.roll_jitter_ms = roll_jitter_ms
        self.log = FileRecords(segment_path(dir, base_offset, LOG_SUFFIX, file_suffix))
        self.offset_index = OffsetIndex(segment_path(dir, base_offset, INDEX_SUFFIX, file_suffix),
                                        base_offset, max_index_size)
        self.time_index = TimeIndex(segment_path(dir, base_offset, TIME_INDEX_SUFFIX, file_suffix),
                                    base_offset, max_index_size)
        # aborted transactions whose ABORT marker is here; the log's producer state fills it
        self.txn_index = TransactionIndex(segment_path(dir, base_offset, TXN_INDEX_SUFFIX, file_suffix),
                                          base_offset)
        self.bytes_since_last_index_entry = 0
        self._max_ts = self.time_index.last_entry()      # (max timestamp so far, its batch's last offset)
        self._rolling_based_timestamp: int | None = None

    # -- state ------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.log.size

    @property
    def max_timestamp_so_far(self) -> int:
        return self._max_ts.timestamp

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        return self._max_ts.offset

    @property
    def last_modified_ms(self) -> int:
        return int(os.stat(self.log.path).st_mtime * 1000)

    @property
    def largest_timestamp(self) -> int:
        """For retention: the largest record timestamp, else the file's mtime."""
        return self.max_timestamp_so_far if self.max_timestamp_so_far > 0 else self.last_modified_ms

    def read_next_offset(self) -> int:
        """The offset after the last batch: scan from the last index entry."""
        start = self.offset_index.lookup(self.offset_index.last_offset).position \
            if self.offset_index.entries else 0
        next_offset = self.base_offset
        for batch in self.log.batches(start):
            next_offset = batch.next_offset
        return next_offset

    def batches(self, start: int = 0, *, verify_crc: bool = False) -> Iterator[Batch]:
        return self.log.batches(start, verify_crc=verify_crc)

    # -- appending ---------------------------------------------------------------------

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def append(self, records: bytes, batches: list[Batch] | None = None) -> None:
        """Append validated batches (their offsets already assigned)."""
        if not records:
            return
        if batches is None:
            batches = list(iter_batches(records, verify_crc=False))
        if not self.can_convert_to_relative_offset(batches[-1].last_offset):
            raise CorruptRecordError(
                f"offset {batches[-1].last_offset} does not fit segment {self.base_offset}",
                file=str(self.log.path))
        position = self.log.size
        saved = (self._max_ts, self.bytes_since_last_index_entry, self._rolling_based_timestamp)
        if position == 0:
            self._rolling_based_timestamp = batches[0].max_timestamp
        try:
            self.log.append(records)
            for batch in batches:
                self._index_batch(batch, position)
                position += batch.size
        except OSError:
            # Disk full or read-only mid-append: take back what was written, so
            # the log holds whole batches only and the next append reuses the space.
            self._max_ts, self.bytes_since_last_index_entry, self._rolling_based_timestamp = saved
            with contextlib.suppress(OSError):
                self.offset_index.truncate_to(batches[0].base_offset)
                self.time_index.truncate_to(batches[0].base_offset)
            with contextlib.suppress(OSError):
                self.log.ftruncate(self.log.size)
            raise

    def _index_batch(self, batch: Batch, position: int) -> None:
        if batch.max_timestamp > self._max_ts.timestamp:
            self._max_ts = TimestampOffset(batch.max_timestamp, batch.last_offset)
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(batch.last_offset, position)
            self.time_index.maybe_append(*self._max_ts)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += batch.size

    def should_roll(self, *, messages_size: int, max_timestamp: int, max_offset: int,
                    now: int, segment_bytes: int, segment_ms: int) -> bool:
        """LogSegment.shouldRoll: size, age (by record timestamps when the
        segment's first batch has one, else wall clock), a full index, or an
        offset too far from the base."""
        waited = self.time_waited_for_roll(now, max_timestamp)
        return (self.size > segment_bytes - messages_size
                or (self.size > 0 and waited > segment_ms - self.roll_jitter_ms)
                or self.offset_index.is_full() or self.time_index.is_full()
                or not self.can_convert_to_relative_offset(max_offset))

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        if self._rolling_based_timestamp is None and self.size:
            first = next(self.log.batches(0), None)
            self._rolling_based_timestamp = first.max_timestamp if first else None
        t = self._rolling_based_timestamp
        return message_timestamp - t if t is not None and t >= 0 else now - self.created_ms

    # -- lookups -----------------------------------------------------------------------

    def translate_offset(self, offset: int, start_position: int = 0) -> tuple[int, int] | None:
        """(position, size) of the first batch whose last offset is >= ``offset``."""
        start = max(self.offset_index.lookup(offset).position, start_position)
        for position, size, last_offset in self._headers(start):
            if last_offset >= offset:
                return position, size
        return None

    def _headers(self, pos: int) -> Iterator[tuple[int, int, int]]:
        """(position, size, last offset) of each batch from the boundary ``pos``, from the
        headers alone: a window at a time, a batch longer than the window stepped over
        unread (and then only the next header read). Bad sizes raise CorruptRecordError,
        a cut tail IncompleteBatchError."""
        end, window = self.log.size, _CHUNK
        while pos < end:
            buf = self.log.read(pos, min(window, end - pos))
            at = 0
            while len(buf) - at > S.MAGIC_OFFSET:
                length = int.from_bytes(buf[at + S.LENGTH_OFFSET:at + S.LOG_OVERHEAD], "big", signed=True)
                magic, size = buf[at + S.MAGIC_OFFSET], length + S.LOG_OVERHEAD
                if length < S.LEGACY_OVERHEAD[0] or magic > 2 or (magic == 2 and size < S.RECORD_BATCH_OVERHEAD):
                    raise CorruptRecordError(f"batch of {size} bytes, magic {magic}: not a batch",
                                             position=pos + at, path="batch_length", file=str(self.log.path))
                if pos + at + size > end:
                    raise IncompleteBatchError(f"incomplete batch: {end - pos - at} bytes left in the file, "
                                               f"the batch needs {size}", position=pos + at, file=str(self.log.path))
                if magic < 2:       # a legacy message (or wrapper) carries its last offset
                    last = int.from_bytes(buf[at:at + 8], "big", signed=True)
                elif len(buf) - at >= _V2_LAST:
                    last = int.from_bytes(buf[at:at + 8], "big", signed=True) + int.from_bytes(
                        buf[at + _V2_LAST - 4:at + _V2_LAST], "big", signed=True)
                else:               # the header goes on past the window: read from here
                    break
                yield pos + at, size, last
                at += size
            if at == 0:
                if window < _CHUNK:
                    window = _CHUNK
                    continue
                raise IncompleteBatchError(f"incomplete batch: {end - pos} bytes left in the file",
                                           position=pos, file=str(self.log.path))
            # past a batch longer than the window the next is likely long too: read its header only
            window = S.RECORD_BATCH_OVERHEAD if at > len(buf) else _CHUNK
            pos += at

    def read(self, start_offset: int, max_size: int, *, max_position: int | None = None,
             max_offset: int | None = None, min_one_message: bool = True) -> FetchSlice | None:
        """Whole batches from the one holding ``start_offset``, up to ``max_size``
        bytes; the first batch always when ``min_one_message``. None when the
        segment holds nothing at or after ``start_offset``.

        The records themselves are never read: the offset index finds both
        ends (LogSegment.read translates the start offset and slices up to the
        size), and only the batch headers between the index entry nearest the
        size limit and the limit are walked, so the whole batches end there."""
        end = self.log.size if max_position is None else max_position
        found = self.translate_offset(start_offset)
        if found is None or found[0] >= end:
            return None
        start, first_size = found
        if max_offset is not None:
            # Kafka stops at the batch holding max_offset (the high watermark or
            # last stable offset, both batch boundaries in practice).
            stop = self.translate_offset(max_offset, start)
            if stop is not None:
                end = min(end, stop[0])
        if end - start <= max_size:
            length = end - start
        else:
            near = max(self.offset_index.lookup_position(start + max_size).position, start)
            length = self._last_boundary(near, start + max_size) - start
            if length == 0 and min_one_message:
                length = first_size
        return FetchSlice(self.log, start, length, str(self.log.path), start_offset)

    def _last_boundary(self, pos: int, limit: int) -> int:
        """The last batch boundary at or before ``limit`` (< the segment's size),
        walking the batch headers from the boundary ``pos``."""
        for position, size, _ in self._headers(pos):
            if position + size > limit:
                return position
        return limit

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> TimestampOffset | None:
        """First record at or after ``starting_offset`` whose timestamp >= ``timestamp``."""
        indexed = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(indexed.offset, starting_offset)).position
        for batch in self.log.batches(position):
            if batch.max_timestamp >= timestamp:
                for record in batch.records():
                    if record.timestamp >= timestamp and record.offset >= starting_offset:
                        return TimestampOffset(record.timestamp, record.offset)
        return None

    # -- recovery ------------------------------------------------------------------------

    def recover(self, max_index_size: int) -> tuple[int, DecodeError | None]:
        """LogSegment.recover: check every batch (size, CRC, offsets increasing
        and within the segment), rebuild both indexes, truncate the file at the
        first invalid batch. Returns (bytes truncated, the error found)."""
        self.offset_index.reset(max_index_size)
        self.time_index.reset(max_index_size)
        self.txn_index.reset()             # rebuilt as the log replays its producer state
        self.bytes_since_last_index_entry = 0
        self._max_ts = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        self._rolling_based_timestamp = None
        valid, error, expected = 0, None, self.base_offset
        try:
            for batch in self.log.batches(0, verify_crc=True):
                first = batch.base_offset if batch.magic == 2 else batch.last_offset
                if first < expected or not self.can_convert_to_relative_offset(batch.last_offset):
                    raise CorruptRecordError(
                        f"batch offsets {first}..{batch.last_offset} out of order (expected >= "
                        f"{expected}) or outside segment {self.base_offset}",
                        position=batch.position, path="base_offset", file=str(self.log.path))
                self._index_batch(batch, valid)
                valid += batch.size
                expected = batch.next_offset
        except DecodeError as e:
            error = e
        truncated = self.log.truncate_to(valid)
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(*self._max_ts, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        return truncated, error

    def truncate_to(self, offset: int, now: int) -> int:
        """Drop everything at or after ``offset``; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self.log.truncate_to(found[0])
        self.bytes_since_last_index_entry = 0
        self._max_ts = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        for batch in self.log.batches(0):
            if batch.max_timestamp > self._max_ts.timestamp:
                self._max_ts = TimestampOffset(batch.max_timestamp, batch.last_offset)
        if self.log.size == 0:     # an emptied segment ages from now, as a new one
            self.created_ms = now
            self._rolling_based_timestamp = None
        return removed

    # -- file life --------------------------------------------------------------------

    def on_become_inactive(self) -> None:
        """Roll: the final time index entry, then trim both indexes and the log."""
        self.time_index.maybe_append(*self._max_ts, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.truncate_to(self.log.size)

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def sanity_check(self) -> None:
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            path = self.log.path.with_suffix(suffix)
            if not path.exists():
                raise CorruptRecordError(f"missing index file {path}", file=str(path))
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        self.txn_index.sanity_check()

    def flush(self) -> None:
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        if not self.log.closed:
            self.time_index.maybe_append(*self._max_ts, skip_full_check=True)
        self.offset_index.close()
        self.time_index.close()
        self.log.close()

    def files(self) -> list:
        return [self.log, self.offset_index, self.time_index, self.txn_index]

    def change_suffix(self, old: str, new: str) -> None:
        """Rename all the files, e.g. '' -> '.deleted' or '.cleaned' -> '.swap'."""
        for f in self.files():
            name = f.path.name
            if old:
                if not name.endswith(old):
                    raise ValueError(f"{name} does not end in {old}")
                name = name[:-len(old)]
            f.rename_to(f.path.with_name(name + new))

    def set_last_modified(self, ms: int) -> None:
        os.utime(self.log.path, ns=(ms * 1_000_000, ms * 1_000_000))

    def delete(self) -> None:
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self.log.delete()

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size})"
