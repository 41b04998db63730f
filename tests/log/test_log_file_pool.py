"""The bound on open segment files (kproto.log.file_pool): LRU eviction and
reopen by the current path, pins that keep a region's descriptor open through
eviction, rename and delete, and a clear error when a file cannot reopen.
Open descriptors are counted in /proc/self/fd, not taken from the pool."""

import os
from pathlib import Path

import pytest

from kproto.errors import KafkaError
from kproto.log import UnifiedLog
from kproto.log.file_pool import FilePool, default_pool
from kproto.log.index import OffsetIndex
from kproto.log.segment import FileRecords
from kproto.records import NewRecord, build_record_batch
from kproto.topic_config import LogConfig


def open_under(d: Path) -> list[str]:
    """Names of the files under ``d`` this process holds open."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(d) + "/"):
            out.append(target[len(str(d)) + 1:])
    return sorted(out)


def test_least_recently_used_file_is_closed_and_reopens_by_path(tmp_path):
    pool = FilePool(2)
    a, b, c = (FileRecords(tmp_path / f"{n}.log", pool) for n in "abc")
    assert open_under(tmp_path) == ["b.log", "c.log"]
    a.append(b"first")                   # reopens a, closes b (now the least recently used)
    assert open_under(tmp_path) == ["a.log", "c.log"]
    c.read(0, 1)
    b.append(b"second")                  # c was used after a: a goes
    assert open_under(tmp_path) == ["b.log", "c.log"]
    assert (a.read(0, 5), b.read(0, 6)) == (b"first", b"second")
    assert pool.open_count == 2 and open_under(tmp_path) == ["a.log", "b.log"]


def test_a_pinned_file_is_not_evicted_and_closes_at_its_last_unpin(tmp_path):
    pool = FilePool(1)
    a = FileRecords(tmp_path / "a.log", pool)
    a.append(b"region")
    fd = a.pin()
    b = FileRecords(tmp_path / "b.log", pool)       # over the cap: a is pinned, so it stays
    assert open_under(tmp_path) == ["a.log", "b.log"]
    assert os.pread(fd, 6, 0) == b"region"
    a.unpin()
    FileRecords(tmp_path / "c.log", pool)
    assert open_under(tmp_path) == ["c.log"]
    assert b.read(0, 1) == b""


def test_the_last_unpin_brings_the_pool_back_under_its_cap(tmp_path):
    pool = FilePool(2)
    files = [FileRecords(tmp_path / f"{n}.log", pool) for n in "abcd"]
    for f in files:                  # four regions in flight: all four stay open
        f.pin()
    assert open_under(tmp_path) == ["a.log", "b.log", "c.log", "d.log"]
    for f in files[:3]:
        f.unpin()
    # d is still pinned: the pool evicts what it may (the least recently used) to hold 2
    assert open_under(tmp_path) == ["c.log", "d.log"]
    files[3].unpin()
    assert open_under(tmp_path) == ["c.log", "d.log"] and pool.open_count == 2


def test_rename_then_reopen_reads_the_renamed_file(tmp_path):
    pool = FilePool(1)
    a = FileRecords(tmp_path / "00.log", pool)
    a.append(b"kept")
    FileRecords(tmp_path / "other.log", pool)       # a closed by eviction
    a.rename_to(tmp_path / "00.log.deleted")
    assert a.read(0, 4) == b"kept"
    assert open_under(tmp_path) == ["00.log.deleted"]


def test_a_region_of_a_deleted_segment_stays_readable_until_unpinned(tmp_path):
    pool = FilePool(4)
    a = FileRecords(tmp_path / "00.log", pool)
    a.append(b"in flight")
    fd = a.pin()
    a.delete()
    assert not (tmp_path / "00.log").exists()
    assert os.pread(fd, 9, 0) == b"in flight"
    assert os.readlink(f"/proc/self/fd/{fd}") == f"{tmp_path}/00.log (deleted)"
    a.unpin()
    assert open_under(tmp_path) == [] and pool.open_count == 0
    with pytest.raises(OSError, match="is closed"):
        a.read(0, 1)


def test_an_index_written_across_evictions_holds_every_entry(tmp_path):
    pool = FilePool(1)
    idx = OffsetIndex(tmp_path / "00.index", 0, 80, pool)
    other = FileRecords(tmp_path / "00.log", pool)
    for i in range(5):
        idx.append(i * 10, i * 100)
        other.append(b"x")               # evicts the index each time
    idx.close()
    assert (tmp_path / "00.index").read_bytes() == b"".join(
        (i * 10).to_bytes(4, "big") + (i * 100).to_bytes(4, "big") for i in range(5))


@pytest.fixture
def tiny_default_pool():
    default_pool().resize(3)
    yield default_pool()
    default_pool().resize(None)


def test_a_segment_removed_under_the_log_is_a_storage_error(tmp_path, tiny_default_pool):
    log = UnifiedLog.open(tmp_path / "t-0", LogConfig())
    log.append(build_record_batch([NewRecord(b"k", b"v", (), 1)]))
    other = UnifiedLog.open(tmp_path / "u-0", LogConfig())      # its 3 files evict t-0's
    (tmp_path / "t-0" / "00000000000000000000.log").unlink()
    with pytest.raises(KafkaError) as e:
        log.read(0, 1000)
    assert e.value.error_code.name == "KAFKA_STORAGE_ERROR"
    assert str(e.value) == (
        f"Error while reading the log for t-0 in dir {tmp_path}: [Errno 2] cannot open segment file "
        f"{tmp_path}/t-0/00000000000000000000.log: No such file or directory")
    assert len(open_under(tmp_path)) <= 3
    other.close()
