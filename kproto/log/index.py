"""A segment's sparse indexes: ``.index`` (OffsetIndex) and ``.timeindex`` (TimeIndex).

Entry layouts come from kproto.schemas.index (big-endian, no header). The
lookups are pure functions over the entry bytes; the classes own the file:

* a new file is preallocated to ``segment.index.bytes`` rounded down to the
  entry size (AbstractIndex), zero-filled past the last entry;
* an existing file is taken as full: entries = length // entry size (which
  is why a crashed, untrimmed index must be rebuilt by recovery);
* ``trim_to_valid_size`` (roll, close) cuts the file to its entries and
  ``resize`` grows it back when the segment becomes active again.

Entries live in memory too (a bytearray the lookups read) and are written to
the file with ``pwrite``: the on-disk bytes are Kafka's; no mmap is needed.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from kproto.fastpath import header_struct
from kproto.errors import CorruptRecordError
from kproto.log.file_pool import FilePool, PooledFile
from kproto.schemas.index import (
    OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE, OffsetIndexEntry, TimeIndexEntry,
)

_OFFSET_ENTRY, _ = header_struct(OffsetIndexEntry)   # relative_offset, position
_TIME_ENTRY, _ = header_struct(TimeIndexEntry)       # timestamp, relative_offset
# The search keys: the first field of each entry (and an offset entry's position, its second).
_OFFSET_KEY = struct.Struct(">" + _OFFSET_ENTRY.format.lstrip(">")[0])
_POSITION_KEY = struct.Struct(">4x" + _OFFSET_ENTRY.format.lstrip(">")[1])
_TIME_KEY = struct.Struct(">" + _TIME_ENTRY.format.lstrip(">")[0])
NO_TIMESTAMP = -1


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class CorruptIndexError(CorruptRecordError):
    """An index that fails Kafka's sanityCheck (CorruptIndexException)."""


# --- pure index math ----------------------------------------------------------

WARM_SECTION_BYTES = 8192      # AbstractIndex.warmEntries: 8192 / entrySize entries

def largest_lower_bound_slot(buf: bytes | bytearray, entries: int, entry_size: int,
                             key: struct.Struct, target: int) -> int:
    """The slot of the largest entry whose key is <= target, or -1.

    Kafka's AbstractIndex.indexSlotRangeFor step for step: the last 8 KiB (the
    "warm section", which spares page faults) is searched first, and an exact
    match ends the search. Over sorted entries that is a plain binary search;
    over a corrupt, unsorted index (dump-log reads those) it is the slot Kafka
    finds."""
    unpack = key.unpack_from

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = unpack(buf, mid * entry_size)[0]
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo

    if entries == 0:
        return -1
    first_hot = max(0, entries - 1 - WARM_SECTION_BYTES // entry_size)
    if unpack(buf, first_hot * entry_size)[0] < target:
        return search(first_hot, entries - 1)
    if unpack(buf, 0)[0] > target:
        return -1
    return search(0, first_hot)


def offset_index_lookup(buf: bytes | bytearray, entries: int, base_offset: int,
                        target: int) -> OffsetPosition:
    """OffsetIndex.lookup: largest entry with offset <= target, else (base, 0)."""
    slot = largest_lower_bound_slot(buf, entries, OFFSET_INDEX_ENTRY_SIZE, _OFFSET_KEY,
                                    target - base_offset)
    if slot < 0:
        return OffsetPosition(base_offset, 0)
    rel, pos = _OFFSET_ENTRY.unpack_from(buf, slot * OFFSET_INDEX_ENTRY_SIZE)
    return OffsetPosition(base_offset + rel, pos)


def time_index_lookup(buf: bytes | bytearray, entries: int, base_offset: int,
                      target: int) -> TimestampOffset:
    """TimeIndex.lookup: largest entry with timestamp <= target, else (-1, base)."""
    slot = largest_lower_bound_slot(buf, entries, TIME_INDEX_ENTRY_SIZE, _TIME_KEY, target)
    if slot < 0:
        return TimestampOffset(NO_TIMESTAMP, base_offset)
    ts, rel = _TIME_ENTRY.unpack_from(buf, slot * TIME_INDEX_ENTRY_SIZE)
    return TimestampOffset(ts, base_offset + rel)


# --- files ---------------------------------------------------------------------

class AbstractIndex(PooledFile):
    """An index file; its descriptor comes from the file pool, and is only
    needed to write (lookups read the entries kept in memory)."""

    entry_size = 0

    def __init__(self, path: Path, base_offset: int, max_index_size: int,
                 pool: FilePool | None = None) -> None:
        self.base_offset = base_offset
        newly_created = not Path(path).exists()
        super().__init__(path, pool)
        if newly_created:
            length = max_index_size // self.entry_size * self.entry_size
            self.ftruncate(length)
            self.entries = 0
        else:
            length = self.file_size()
            self.entries = length // self.entry_size
        self.max_entries = length // self.entry_size
        self._buf = bytearray(self.pread(self.entries * self.entry_size, 0))
        self._length = length

    # -- state ----------------------------------------------------------------

    @property
    def size_in_bytes(self) -> int:
        return self.entries * self.entry_size

    @property
    def file_length(self) -> int:
        return self._length

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def entry_bytes(self) -> bytes:
        return bytes(self._buf)

    def _relative(self, offset: int) -> int:
        rel = offset - self.base_offset
        if not 0 <= rel <= 2**31 - 1:
            raise CorruptIndexError(f"offset {offset} does not fit an int32 relative to base "
                                    f"{self.base_offset}", file=str(self.path))
        return rel

    def _write(self, entry: bytes) -> None:
        if self.entries >= self.max_entries:
            self.resize((self.entries + 1) * self.entry_size)
        self.pwrite(entry, self.entries * self.entry_size)
        self._buf += entry
        self.entries += 1

    # -- sizing ---------------------------------------------------------------------

    def resize(self, new_size: int) -> None:
        """AbstractIndex.resize: file length rounded down to whole entries (never
        below the entries held)."""
        length = max(new_size // self.entry_size * self.entry_size, self.size_in_bytes)
        if length != self._length:
            self.ftruncate(length)
            self._length = length
        self.max_entries = length // self.entry_size

    def trim_to_valid_size(self) -> None:
        self.resize(self.size_in_bytes)

    def _truncate_to_entries(self, n: int) -> None:
        self.entries = n
        del self._buf[n * self.entry_size:]
        # Zero the dropped entries so the file reads as Kafka's would.
        tail = self._length - n * self.entry_size
        if tail > 0:
            self.pwrite(bytes(tail), n * self.entry_size)

    def reset(self, max_index_size: int) -> None:
        """Drop every entry and preallocate again (recovery rebuilds from zero)."""
        self._truncate_to_entries(0)
        self.ftruncate(0)
        self._length = 0
        self.resize(max_index_size)

    # -- file life ----------------------------------------------------------------

    def flush(self) -> None:
        self.fsync()

    def close(self) -> None:
        if not self.closed:
            self.trim_to_valid_size()
            super().close()


class OffsetIndex(AbstractIndex):
    """``.index``: (relative offset int32, position int32) entries."""

    entry_size = OFFSET_INDEX_ENTRY_SIZE

    @property
    def last_offset(self) -> int:
        if not self.entries:
            return self.base_offset
        return self.base_offset + _OFFSET_ENTRY.unpack_from(self._buf, self.size_in_bytes - 8)[0]

    def entry(self, n: int) -> OffsetPosition:
        rel, pos = _OFFSET_ENTRY.unpack_from(self._buf, n * self.entry_size)
        return OffsetPosition(self.base_offset + rel, pos)

    def append(self, offset: int, position: int) -> None:
        if self.is_full():
            raise CorruptIndexError(f"Attempt to append to a full index (size = {self.entries}).",
                                    file=str(self.path))
        if self.entries and offset <= self.last_offset:
            raise CorruptIndexError(
                f"Attempt to append an offset ({offset}) to position {self.entries} no larger than "
                f"the last offset appended ({self.last_offset}) to {self.path}.", file=str(self.path))
        self._write(_OFFSET_ENTRY.pack(self._relative(offset), position))

    def lookup(self, target: int) -> OffsetPosition:
        return offset_index_lookup(self._buf, self.entries, self.base_offset, target)

    def lookup_position(self, target: int) -> OffsetPosition:
        """The largest entry whose position is <= ``target``, else (base, 0): a
        batch boundary near a byte limit (Kafka searches the index by position,
        IndexSearchType.VALUE, for OffsetIndex.fetchUpperBoundOffset)."""
        slot = largest_lower_bound_slot(self._buf, self.entries, self.entry_size, _POSITION_KEY, target)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        """Remove the entries whose offset is >= ``offset``."""
        slot = largest_lower_bound_slot(self._buf, self.entries, self.entry_size, _OFFSET_KEY,
                                        offset - self.base_offset)
        if slot < 0:
            n = 0
        else:
            n = slot if self.entry(slot).offset == offset else slot + 1
        self._truncate_to_entries(n)

    def sanity_check(self) -> None:
        if self._length % self.entry_size:
            raise CorruptIndexError(
                f"Index file {self.path} is corrupt, found {self._length} bytes which is neither "
                f"positive nor a multiple of {self.entry_size}.", file=str(self.path))
        if self.entries and self.last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file ({self.path}) has non-zero size but the last offset "
                f"is {self.last_offset} which is less than the base offset {self.base_offset}.",
                file=str(self.path))


class TimeIndex(AbstractIndex):
    """``.timeindex``: (timestamp int64, relative offset int32) entries, written
    only for a new largest timestamp."""

    entry_size = TIME_INDEX_ENTRY_SIZE

    def is_full(self) -> bool:
        # One slot stays free for the entry a roll or close appends.
        return self.entries >= self.max_entries - 1

    def entry(self, n: int) -> TimestampOffset:
        ts, rel = _TIME_ENTRY.unpack_from(self._buf, n * self.entry_size)
        return TimestampOffset(ts, self.base_offset + rel)

    def last_entry(self) -> TimestampOffset:
        if not self.entries:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(self.entries - 1)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        if not skip_full_check and self.is_full():
            raise CorruptIndexError(f"Attempt to append to a full time index (size = {self.entries}).",
                                    file=str(self.path))
        last = self.last_entry()
        if self.entries and offset < last.offset:
            raise CorruptIndexError(
                f"Attempt to append an offset ({offset}) to slot {self.entries} no larger than the "
                f"last offset appended ({last.offset}) to {self.path}.", file=str(self.path))
        if self.entries and timestamp < last.timestamp:
            raise CorruptIndexError(
                f"Attempt to append a timestamp ({timestamp}) to slot {self.entries} no larger than "
                f"the last timestamp appended ({last.timestamp}) to {self.path}.", file=str(self.path))
        if timestamp > last.timestamp:
            self._write(_TIME_ENTRY.pack(timestamp, self._relative(offset)))

    def lookup(self, target: int) -> TimestampOffset:
        return time_index_lookup(self._buf, self.entries, self.base_offset, target)

    def truncate_to(self, offset: int) -> None:
        """Remove the entries whose offset is >= ``offset`` (searched by value)."""
        n = 0
        while n < self.entries and self.entry(n).offset < offset:
            n += 1
        self._truncate_to_entries(n)

    def sanity_check(self) -> None:
        if self._length % self.entry_size:
            raise CorruptIndexError(
                f"Time index file {self.path} is corrupt, found {self._length} bytes which is neither "
                f"positive nor a multiple of {self.entry_size}.", file=str(self.path))
        if self.entries:
            last, first = self.last_entry(), self.entry(0)
            if last.offset < self.base_offset or last.timestamp < first.timestamp:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path}) has non-zero size but "
                    f"the last timestamp is {last.timestamp} which is less than the first timestamp "
                    f"{first.timestamp}", file=str(self.path))
