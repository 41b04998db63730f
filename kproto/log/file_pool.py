"""One bound on the segment files a process holds open (``log.max.open.files``).

A segment keeps three files (``.log``, ``.index``, ``.timeindex``); a client
that creates thousands of partitions would otherwise use up RLIMIT_NOFILE and
leave the acceptor failing with EMFILE. Each such file is a ``PooledFile``: it
opens through a ``FilePool``, which past its cap closes the least recently used
one; the next use reopens it by its current path (renames keep the path
current). The entries of the indexes live in memory, so a closed index costs
nothing until its next write.

Pins. A use (a ``pread``, a ``pwrite``) pins the file for the length of the
system call, and a fetch region pins it until the response is written: a
pinned file is never closed, so its descriptor number cannot be reused for
another file under a reader, and a file deleted or closed while pinned is
closed at its last unpin (an unlinked ``.deleted`` segment stays readable for
the regions already handed out). Produce appends run in a worker thread while
fetches read on the event loop, so a pin is a ``list.append`` (atomic under the
GIL) made *before* the descriptor is read, and eviction clears the descriptor
*before* it looks for pins (it puts it back if it finds one): a use either sees
the descriptor it pinned stay open, or sees -1 and reopens under the lock. The
hot path is that append, an ``OrderedDict.move_to_end`` and a ``pop``.

While many regions are pinned the pool may hold more than its cap (each
in-flight fetch region holds one descriptor); it never evicts a pinned file.
The unpin that leaves a file free evicts back down to the cap, so once no
region is in flight the pool holds at most ``max_open``.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from collections import OrderedDict
from pathlib import Path

__all__ = ["FilePool", "PooledFile", "default_pool", "default_max_open_files"]


def default_max_open_files() -> int:
    """Half the soft RLIMIT_NOFILE (the other half for connections), at least 16."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(soft // 2, 16)


def _cap(max_open: int | None) -> int:
    """``log.max.open.files``: None or negative means the default."""
    return default_max_open_files() if max_open is None or max_open < 0 else max(max_open, 1)


class FilePool:
    """An LRU of open ``PooledFile`` descriptors, at most ``max_open`` unpinned."""

    def __init__(self, max_open: int | None = None) -> None:
        self.max_open = _cap(max_open)
        self.lock = threading.Lock()
        self._lru: OrderedDict[PooledFile, None] = OrderedDict()   # every file with an open fd

    @property
    def open_count(self) -> int:
        return len(self._lru)

    def _open(self, f: PooledFile, flags: int) -> int:
        """Open ``f`` by its path (under ``lock``), evicting to stay under the cap."""
        self._evict(self.max_open - 1)
        try:
            fd = os.open(f.path, flags, 0o644)
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE) or not self._evict(len(self._lru) - 1):
                raise OSError(e.errno, f"cannot open segment file {f.path}: {e.strerror}") from None
            fd = os.open(f.path, flags, 0o644)
        f._fd = fd
        self._lru[f] = None
        return fd

    def _evict(self, keep: int, spare: "PooledFile | None" = None) -> bool:
        """Close least recently used unpinned files, ``spare`` aside, until ``keep``
        remain open; True when at least one was closed."""
        lru, closed = self._lru, False
        for _ in range(len(lru)):
            if len(lru) <= keep:
                break
            # popitem, not next(iter()): a pin() in the other thread may move_to_end
            # meanwhile, which would break an iterator (its KeyError path waits on the lock)
            f, _ = lru.popitem(last=False)
            fd, f._fd = f._fd, -1        # first hide it, then look for pins (see the module doc)
            if f._pins or f is spare:
                f._fd = fd
                lru[f] = None
                continue
            os.close(fd)
            closed = True
        return closed

    def _close(self, f: PooledFile) -> None:
        """Close ``f``'s fd now (under ``lock``), unless pinned: then at its last unpin."""
        fd, f._fd = f._fd, -1            # hide, then look for pins, as _evict
        if fd < 0:
            return
        if f._pins:
            f._fd = fd
            return
        self._lru.pop(f, None)
        os.close(fd)

    def resize(self, max_open: int | None) -> None:
        """A new cap (None or negative: the default from RLIMIT_NOFILE); evicts at once."""
        with self.lock:
            self.max_open = _cap(max_open)
            self._evict(self.max_open)


_DEFAULT: FilePool | None = None


def default_pool() -> FilePool:
    """The process's pool: the broker sets its cap from ``log.max.open.files``;
    tools (recovery, dump-log, the Spark reader) use the default cap."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = FilePool()
    return _DEFAULT


class PooledFile:
    """A file whose descriptor the pool may close between uses.

    ``pin()`` returns an open descriptor that stays open until ``unpin()``;
    ``close()`` and ``delete()`` are final (a pinned descriptor closes at its
    last unpin)."""

    def __init__(self, path: Path, pool: FilePool | None = None) -> None:
        self.path = Path(path)
        self.pool = pool or default_pool()
        self._fd = -1
        self._pins: list[None] = []      # one item per pin; list.append/pop are atomic
        self._closed = False
        with self.pool.lock:
            self.pool._open(self, os.O_RDWR | os.O_CREAT)

    @property
    def closed(self) -> bool:
        return self._closed

    def pin(self) -> int:
        self._pins.append(None)
        fd = self._fd
        if fd >= 0:
            try:
                self.pool._lru.move_to_end(self)
                return fd
            except KeyError:     # closed meanwhile by close()/delete()
                pass
        return self._reopen()

    def _reopen(self) -> int:
        with self.pool.lock:
            if self._closed:
                self._unpin_locked()
                raise OSError(errno.EBADF, f"segment file {self.path} is closed")
            if self._fd >= 0:
                return self._fd
            try:
                # Never O_CREAT: a file removed under the log is an error, not a new empty file.
                return self.pool._open(self, os.O_RDWR)
            except OSError:
                self._unpin_locked()
                raise

    def unpin(self) -> None:
        self._pins.pop()
        pool = self.pool
        if self._pins:
            return
        if self._closed:
            with pool.lock:
                pool._close(self)
        elif len(pool._lru) > pool.max_open:
            # Pins held the pool over its cap; the last unpin brings it back under
            # (this file aside: it was used just now), so the bound holds at rest.
            with pool.lock:
                pool._evict(pool.max_open, self)

    def _unpin_locked(self) -> None:
        self._pins.pop()
        if self._closed and not self._pins:
            self.pool._close(self)

    # -- the system calls, each under a pin ------------------------------------------

    def pread(self, length: int, position: int) -> bytes:
        fd = self.pin()
        try:
            return os.pread(fd, length, position)
        finally:
            self.unpin()

    def pwrite(self, data: bytes | bytearray | memoryview, position: int) -> int:
        """Write all of ``data`` at ``position``; returns its length."""
        fd = self.pin()
        try:
            written = os.pwrite(fd, data, position)
            if written < len(data):          # a short write: the rest, without copying
                view = memoryview(data)
                while written < len(view):
                    written += os.pwrite(fd, view[written:], position + written)
            return written
        finally:
            self.unpin()

    def ftruncate(self, length: int) -> None:
        fd = self.pin()
        try:
            os.ftruncate(fd, length)
        finally:
            self.unpin()

    def file_size(self) -> int:
        fd = self.pin()
        try:
            return os.fstat(fd).st_size
        finally:
            self.unpin()

    def fsync(self) -> None:
        fd = self.pin()
        try:
            os.fsync(fd)
        finally:
            self.unpin()

    # -- life ------------------------------------------------------------------------

    def close(self) -> None:
        with self.pool.lock:
            self._closed = True
            self.pool._close(self)

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = Path(path)

    def delete(self) -> None:
        """Close and unlink; a pinned descriptor keeps reading the unlinked file."""
        PooledFile.close(self)        # not a subclass's close: nothing to tidy in a file going away
        self.path.unlink(missing_ok=True)
