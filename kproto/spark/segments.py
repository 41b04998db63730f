"""Segment files as Spark reads them: found under a path, split at batch
boundaries, walked batch by batch (no Spark here: plain pyarrow.fs + kproto).

Paths are local paths or any URI ``pyarrow.fs`` opens (``file://``, ``s3://``,
``gs://``, ``hdfs://`` when libhdfs is there). Nothing is opened for writing:
a copied-off data directory may be read-only, so the log package's
``FileRecords`` (which opens read-write) is not used; batches are still
found by ``kproto.records.iter_batches`` and positions by the pure lookups of
``kproto.log.index``.

The walk tolerates corruption (PERMISSIVE): a batch whose header is broken
becomes a ``Corrupt`` item and the walk resynchronises at the next position
where a whole batch with a valid CRC starts, so the rest of the segment is
still read. What to do with a ``Corrupt`` (raise or emit a row) is the
caller's choice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from kproto.errors import CorruptRecordError, DecodeError, IncompleteBatchError, UsageError
from kproto.log.index import offset_index_lookup, time_index_lookup
from kproto.log.log import parse_topic_partition
from kproto.records import Batch, iter_batches
from kproto.schemas import records as S
from kproto.schemas.index import OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE

_SEGMENT = re.compile(r"^(\d{20})\.log$")
CHUNK = 8 << 20
_MAGICS = (b"\x00", b"\x01", b"\x02")


@dataclass(frozen=True, slots=True)
class SegmentFile:
    uri: str                 # what ``filesystem`` opens again (in an executor)
    path: str                # as the filesystem names it (URI scheme stripped)
    topic: str | None
    partition: int | None
    base_offset: int
    size: int


@dataclass(frozen=True, slots=True)
class Corrupt:
    """Bytes at ``position`` that hold no valid batch; ``skipped`` bytes up to
    where the walk went on."""

    position: int
    error: DecodeError
    skipped: int


def filesystem(uri: str):
    """(pyarrow filesystem, path inside it) for a local path or a URI."""
    from pyarrow import fs
    if "://" in uri:
        try:
            return fs.FileSystem.from_uri(uri)
        except Exception as e:          # pyarrow raises ArrowInvalid / OSError
            raise UsageError(f"{uri}: cannot open: {e}") from None
    import os
    return fs.LocalFileSystem(), os.path.abspath(uri)


def _tp_of_dir(name: str) -> tuple[str | None, int | None]:
    try:
        return parse_topic_partition(name)
    except UsageError:
        return None, None


def find_segments(uri: str) -> tuple[object, list[SegmentFile]]:
    """The ``.log`` segments under ``uri``: a data directory (one level of
    ``topic-partition`` directories), a partition directory, or one file.
    Directories of deleted or future logs (``-delete``, ``-future``) and
    files being swapped or cleaned are not segments."""
    from pyarrow import fs as pafs
    fs, root = filesystem(uri)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise UsageError(f"{uri}: no such file or directory")
    if info.type == pafs.FileType.File:
        infos = [info]
    else:
        infos = fs.get_file_info(pafs.FileSelector(root))
        for sub in [i for i in infos if i.type == pafs.FileType.Directory]:
            infos += fs.get_file_info(pafs.FileSelector(sub.path))
    prefix = _uri_prefix(uri, root)
    out = []
    for f in infos:
        m = _SEGMENT.match(f.base_name)
        if f.type != pafs.FileType.File or not m:
            continue
        parent = f.path.rstrip("/").rsplit("/", 2)[-2] if "/" in f.path else ""
        if parent.endswith(("-delete", "-future")) or "." in parent.rpartition("-")[2]:
            continue
        topic, partition = _tp_of_dir(parent)
        out.append(SegmentFile(prefix + f.path, f.path, topic, partition, int(m.group(1)), f.size))
    out.sort(key=lambda s: (s.topic or "", -1 if s.partition is None else s.partition, s.base_offset))
    return fs, out


def _uri_prefix(uri: str, root: str) -> str:
    """What goes before a filesystem path to make a URI again ("" for a local
    path; "s3://", "file://", "hdfs://host:port")."""
    if "://" not in uri:
        return ""
    stripped = uri.rstrip("/")
    root = root.rstrip("/")
    if root and stripped.endswith(root):
        return stripped[:len(stripped) - len(root)]
    return uri.split("://", 1)[0] + "://"


def read_optional(fs, path: str) -> bytes:
    """A whole small file (an index), or b"" if it is not there."""
    try:
        with fs.open_input_file(path) as f:
            return f.read()
    except (FileNotFoundError, OSError):
        return b""


def index_entries(buf: bytes, entry_size: int, key_of, last_position: int | None = None) -> int:
    """How many entries of a (possibly preallocated, zero-filled) index are
    real: keys strictly increasing and, for the offset index, positions
    inside the segment. Kafka's active segment keeps its index preallocated."""
    n = len(buf) // entry_size
    prev = None
    for i in range(n):
        key, second = key_of(buf, i * entry_size)
        if prev is not None and key <= prev:
            return i
        if last_position is not None and not 0 <= second < last_position:
            return i
        prev = key
    return n


def _offset_entry(buf: bytes, at: int) -> tuple[int, int]:
    return int.from_bytes(buf[at:at + 4], "big"), int.from_bytes(buf[at + 4:at + 8], "big")


def _time_entry(buf: bytes, at: int) -> tuple[int, int]:
    return int.from_bytes(buf[at:at + 8], "big", signed=True), int.from_bytes(buf[at + 8:at + 12], "big")


@dataclass(frozen=True, slots=True)
class SegmentIndexes:
    offsets: bytes
    offset_entries: int
    times: bytes
    time_entries: int

    @classmethod
    def load(cls, fs, seg: SegmentFile) -> "SegmentIndexes":
        stem = seg.path[:-len(".log")]
        off = read_optional(fs, stem + ".index")
        tim = read_optional(fs, stem + ".timeindex")
        return cls(off, index_entries(off, OFFSET_INDEX_ENTRY_SIZE, _offset_entry, seg.size),
                   tim, index_entries(tim, TIME_INDEX_ENTRY_SIZE, _time_entry))

    def position_of(self, base_offset: int, offset: int) -> int:
        """Start of the batch to read from to reach ``offset`` (.index lookup)."""
        return offset_index_lookup(self.offsets, self.offset_entries, base_offset, offset).position

    def offset_for_time(self, base_offset: int, timestamp: int) -> int:
        return time_index_lookup(self.times, self.time_entries, base_offset, timestamp).offset

    def max_indexed_timestamp(self) -> int | None:
        if not self.time_entries:
            return None
        return _time_entry(self.times, (self.time_entries - 1) * TIME_INDEX_ENTRY_SIZE)[0]

    def split_points(self, size: int, max_bytes: int, start: int = 0) -> list[tuple[int, int]]:
        """Byte ranges of at most about ``max_bytes`` from ``start``, cut only at
        positions the .index names (batch starts)."""
        ranges, lo = [], start
        for i in range(self.offset_entries):
            pos = _offset_entry(self.offsets, i * OFFSET_INDEX_ENTRY_SIZE)[1]
            if pos - lo >= max_bytes and pos > lo:
                ranges.append((lo, pos))
                lo = pos
        ranges.append((lo, size))
        return ranges


def _header_size(buf, at: int) -> int | None:
    if len(buf) - at < S.LOG_OVERHEAD:
        return None
    return int.from_bytes(buf[at + S.LENGTH_OFFSET:at + S.LOG_OVERHEAD], "big", signed=True) + S.LOG_OVERHEAD


def walk(f, start: int, end: int, *, chunk: int = CHUNK) -> Iterator[Batch | Corrupt]:
    """The batches in bytes [start, end) of an open pyarrow input file, and a
    ``Corrupt`` wherever the bytes hold none; CRCs are left to the caller."""
    pos = start
    while pos < end:
        buf = f.read_at(min(chunk, end - pos), pos)
        reached = pos
        try:
            for batch in iter_batches(buf, verify_crc=False, position=pos, allow_incomplete=True):
                reached = batch.position + batch.size
                yield batch
        except CorruptRecordError as e:
            bad = reached                   # the batch iter_batches stopped at
            nxt = resync(f, bad + 1, end)
            yield Corrupt(bad, e, nxt - bad)
            pos = nxt
            continue
        if reached > pos:
            pos = reached
            continue
        need = _header_size(buf, 0)
        if need is not None and len(buf) < need <= end - pos:
            chunk = need                  # one batch bigger than the chunk
            continue
        what = f"{end - pos} bytes left" + (f", the batch needs {need}" if need and need > 0 else "")
        nxt = resync(f, pos + 1, end)
        if nxt >= end:                    # nothing valid after it: a cut tail
            yield Corrupt(pos, IncompleteBatchError(f"incomplete batch: {what}", position=pos), end - pos)
            return
        yield Corrupt(pos, CorruptRecordError(f"batch size runs past the valid data: {what}; "
                                              f"next valid batch at byte {nxt}", position=pos), nxt - pos)
        pos = nxt


def resync(f, pos: int, end: int, *, window: int = 1 << 20) -> int:
    """The first position >= ``pos`` where a whole batch with a valid CRC
    starts, or ``end``. Candidates are positions whose magic byte is 0, 1 or 2."""
    while pos < end:
        buf = f.read_at(min(window + 1024, end - pos), pos)
        limit = min(window, len(buf))
        for cand in _candidates(buf, limit):
            size = _header_size(buf, cand)
            if size is None or size < S.LOG_OVERHEAD + S.LEGACY_OVERHEAD[0] or pos + cand + size > end:
                continue
            data = buf[cand:cand + size] if cand + size <= len(buf) else f.read_at(size, pos + cand)
            try:
                next(iter_batches(data, verify_crc=True))
            except (DecodeError, StopIteration):
                continue
            return pos + cand
        pos += limit
    return end


def _candidates(buf: bytes, limit: int) -> Iterator[int]:
    found = []
    for magic in _MAGICS:
        i = buf.find(magic, S.MAGIC_OFFSET)
        while 0 <= i and i - S.MAGIC_OFFSET < limit:
            found.append(i - S.MAGIC_OFFSET)
            i = buf.find(magic, i + 1)
    return iter(sorted(found))
