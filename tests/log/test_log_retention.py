"""Retention: by time, by size, by log start offset; whole segments; readers
keep their snapshot while segments go."""

from __future__ import annotations

import threading

import pytest

from kproto.errors import OffsetOutOfRangeError
from kproto.log import LogConfig, UnifiedLog
from kproto.records import iter_batches
from tests.helpers import Clock
from tests.log.helpers import one_batch

SEGMENTS = [0, 2, 4]        # 90-byte batches, segment.bytes 180: two per segment


def six_batches(tmp_path, **props) -> UnifiedLog:
    config = {"segment.bytes": "180"}
    config.update({k.replace("_", "."): str(v) for k, v in props.items()})
    log = UnifiedLog.open(tmp_path / "r-0", LogConfig.from_props(config), clock=Clock(2000))
    for i in range(6):
        log.append(one_batch(i))                 # timestamps 1000, 1010, ... 1050
    assert [s.base_offset for s in log.segments] == SEGMENTS
    return log


def names(log: UnifiedLog) -> list[str]:
    return sorted(p.name for p in log.dir.iterdir())


def test_retention_ms_by_largest_timestamp(tmp_path):
    log = six_batches(tmp_path, retention_ms=100)
    assert log.delete_old_segments(now=1110) == 0        # 1110 - 1010 is not > 100
    assert log.delete_old_segments(now=1111) == 1
    assert [s.base_offset for s in log.segments] == [2, 4] and log.log_start_offset == 2
    # Renamed now, removed after file.delete.delay.ms (60 s by default).
    assert f"{0:020d}.log.deleted" in names(log)
    with pytest.raises(OffsetOutOfRangeError, match="range 2 to 6"):
        log.read(1, 100)
    assert log.delete_pending_segments(now=1111 + 59_999) == 0
    assert log.delete_pending_segments(now=1111 + 60_000) == 1
    assert not [n for n in names(log) if n.startswith(f"{0:020d}")]


def test_every_segment_expired_rolls_then_deletes(tmp_path):
    log = six_batches(tmp_path, retention_ms=100, file_delete_delay_ms=0)
    assert log.delete_old_segments(now=10_000) == 3
    assert [s.base_offset for s in log.segments] == [6]
    assert (log.log_start_offset, log.log_end_offset) == (6, 6)
    # the newest producer snapshot stays, taken when the log rolled to 6
    assert names(log) == [f"{6:020d}{s}" for s in (".index", ".log", ".snapshot", ".timeindex")]
    assert log.read(6, 100).length == 0
    assert log.append(one_batch(9))[0] == 6


def test_retention_bytes(tmp_path):
    log = six_batches(tmp_path, retention_bytes=300, file_delete_delay_ms=0)
    # 540 bytes, 240 too many: the first segment (180) fits in the excess, the second does not.
    assert log.delete_old_segments(now=2000) == 1
    assert [s.base_offset for s in log.segments] == [2, 4] and log.size == 360
    assert log.delete_old_segments(now=2000) == 0


def test_log_start_offset_breach_and_no_time_retention_for_compact(tmp_path):
    log = six_batches(tmp_path, cleanup_policy="compact", retention_ms=1, file_delete_delay_ms=0)
    assert log.delete_old_segments(now=10**9) == 0       # retention.ms only with delete
    assert log.maybe_increment_log_start_offset(3)
    assert log.delete_old_segments(now=10**9) == 1       # 0..1 wholly below 3
    assert [s.base_offset for s in log.segments] == [2, 4] and log.log_start_offset == 3
    s = log.read(3, 1000)
    assert (s.position, [b.base_offset for b in iter_batches(s.read())]) == (90, [3])
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 1000)
    with pytest.raises(OffsetOutOfRangeError, match="larger than the high watermark 6"):
        log.maybe_increment_log_start_offset(7)


def test_a_fetch_slice_survives_the_deletion_of_its_segment(tmp_path):
    log = six_batches(tmp_path, retention_ms=100)
    slice_ = log.read(0, 1000)
    expected = slice_.read()
    assert log.delete_old_segments(now=10_000) == 3
    assert slice_.read() == expected and len(expected) == 180


def test_readers_during_appends_and_retention(tmp_path):
    log = six_batches(tmp_path, retention_bytes=400)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                start = log.log_start_offset
                try:
                    data = log.read(start, 1 << 16).read()
                except OffsetOutOfRangeError:
                    continue                      # retention moved the start meanwhile
                offsets = [b.base_offset for b in iter_batches(data)]
                assert offsets == sorted(offsets) and all(o >= start for o in offsets)
        except BaseException as e:                # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(200):
            log.append(one_batch(i % 10, ts=1000 + i))
            log.delete_old_segments(now=2000)
    finally:
        stop.set()
        t.join(10)
    assert errors == []
    # Whole segments only: what is left minus its oldest segment fits in retention.bytes.
    assert log.log_end_offset == 206 and log.size - log.segments[0].size < 400 <= log.size
