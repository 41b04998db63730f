"""Compaction outcomes (reference 5.5): which records, batches and markers a
pass keeps, and the exact headers of rewritten batches."""

from __future__ import annotations

import os
import struct

from kproto.log import AppendOrigin, LogCleaner, LogConfig, LogManager, UnifiedLog
from kproto.records import (
    CompressionType, NewRecord, RecordBatch, build_control_batch, build_message_set,
    build_record_batch, iter_batches,
)
from tests.helpers import Clock

ABORT, COMMIT = 0, 1


def compacted(tmp_path, clock=None, **props) -> UnifiedLog:
    config = {"cleanup.policy": "compact", "delete.retention.ms": "1000", "file.delete.delay.ms": "0"}
    config.update({k.replace("_", "."): str(v) for k, v in props.items()})
    return UnifiedLog.open(tmp_path / "c-0", LogConfig.from_props(config), clock=clock or Clock(10_000))


def rec(key: bytes, value: bytes | None, ts: int = 1000) -> NewRecord:
    return NewRecord(key, value, (), ts)


def append_segment(log: UnifiedLog, *batches: bytes, origin=AppendOrigin.CLIENT,
                   assign_offsets: bool = True) -> None:
    for b in batches:
        log.append(b, origin=origin, assign_offsets=assign_offsets)
    log.roll()


def all_batches(log: UnifiedLog) -> list:
    return [b for seg in log.segments for b in seg.batches(verify_crc=True)]


def contents(log: UnifiedLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in all_batches(log) for r in b.records()]


def test_keeps_the_last_record_per_key(tmp_path):
    log = compacted(tmp_path)
    append_segment(log, build_record_batch([rec(b"a", b"1"), rec(b"b", b"1")]))
    append_segment(log, build_record_batch([rec(b"a", b"2")]))
    append_segment(log, build_record_batch([rec(b"c", b"1"), rec(b"b", b"2")]))
    log.append(build_record_batch([rec(b"a", b"3")]))          # active: not cleaned
    untouched = (log.dir / f"{3:020d}.log").read_bytes()
    result = LogCleaner().clean(log, now=10_000)
    assert (result.first_dirty_offset, result.end_offset) == (0, 5)
    assert result.stats.segments_cleaned == 1                  # 3 is kept byte for byte, 2 too
    assert [s.base_offset for s in log.segments] == [0, 2, 3, 5]
    assert log.segments[0].size == 0 and os.path.getsize(log.dir / f"{0:020d}.index") == 0
    assert contents(log) == [(2, b"a", b"2"), (3, b"c", b"1"), (4, b"b", b"2"), (5, b"a", b"3")]
    assert (log.dir / f"{3:020d}.log").read_bytes() == untouched
    # Reads skip the emptied segment.
    assert [b.base_offset for b in iter_batches(log.read(0, 1 << 20).read())] == [2]
    assert log.log_start_offset == 0 and log.log_end_offset == 6


def test_rewritten_batch_keeps_base_offset_and_record_offsets(tmp_path):
    log = compacted(tmp_path)
    original = build_record_batch([rec(b"a", b"1", 100), rec(b"b", b"1", 300), rec(b"a", b"2", 200),
                                   rec(b"c", b"1", 150)], compression=CompressionType.GZIP,
                                  partition_leader_epoch=4)
    append_segment(log, original)
    append_segment(log, build_record_batch([rec(b"b", b"2", 400)]))
    log.append(build_record_batch([rec(b"x", b"", 500)]))
    LogCleaner().clean(log, now=10_000)
    [batch] = list(log.segments[0].batches(verify_crc=True))
    assert isinstance(batch, RecordBatch)
    assert (batch.base_offset, batch.last_offset_delta, batch.records_count) == (0, 3, 2)
    assert (batch.base_timestamp, batch.max_timestamp) == (200, 300)   # max kept from the original
    assert batch.compression == CompressionType.GZIP and batch.partition_leader_epoch == 4
    assert batch.delete_horizon_ms is None
    assert [(r.offset, r.key, r.value, r.timestamp) for r in batch.records()] == [
        (2, b"a", b"2", 200), (3, b"c", b"1", 150)]
    assert log.read(1, 100).position == 0          # offset 1 is gone: its batch still answers


def test_tombstone_gets_a_delete_horizon_then_goes(tmp_path):
    log = compacted(tmp_path)
    append_segment(log, build_record_batch([rec(b"a", b"1", 1000)]))
    append_segment(log, build_record_batch([rec(b"a", None, 1100), rec(b"b", b"1", 1200)]))
    log.append(build_record_batch([rec(b"z", b"1", 1300)]))
    cleaner = LogCleaner()
    cleaner.clean(log, now=5000)
    [batch] = list(log.segments[1].batches(verify_crc=True))
    # Horizon = now + delete.retention.ms, stored as the base timestamp, flag bit 6.
    assert batch.attributes == 0x40 and batch.delete_horizon_ms == 6000 == batch.base_timestamp
    assert batch.max_timestamp == 1200
    assert [(r.offset, r.key, r.value, r.timestamp) for r in batch.records()] == [
        (1, b"a", None, 1100), (2, b"b", b"1", 1200)]
    flagged = log.segments[1].log.read(0, batch.size)
    cleaner.clean(log, now=5999)                     # before the horizon: nothing changes
    assert log.segments[1].log.read(0, batch.size) == flagged
    cleaner.clean(log, now=6000)
    [batch] = list(log.segments[1].batches(verify_crc=True))
    assert [(r.offset, r.key) for r in batch.records()] == [(2, b"b")]
    assert (batch.base_offset, batch.last_offset_delta, batch.delete_horizon_ms) == (1, 1, 6000)
    assert contents(log) == [(2, b"b", b"1"), (3, b"z", b"1")]


def test_emptied_batch_of_an_active_producer_keeps_its_header(tmp_path):
    log = compacted(tmp_path)
    append_segment(log, build_record_batch([rec(b"a", b"1", 1000), rec(b"a", b"2", 1001)], producer_id=7,
                                           producer_epoch=2, base_sequence=5, partition_leader_epoch=3))
    append_segment(log, build_record_batch([rec(b"a", b"3", 1002)]))
    log.append(build_record_batch([rec(b"x", b"1", 1003)]))
    LogCleaner().clean(log, now=2000)
    data = log.segments[0].log.read(0, 1000)
    assert data == build_record_batch([], base_offset=0, last_offset_delta=1, max_timestamp=1001,
                                      producer_id=7, producer_epoch=2, base_sequence=5,
                                      partition_leader_epoch=3)
    [batch] = list(iter_batches(data))
    assert (batch.size, batch.records_count, batch.base_timestamp, batch.max_timestamp) == (61, 0, -1, 1001)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_offset) == (7, 2, 5, 1)
    assert contents(log) == [(2, b"a", b"3"), (3, b"x", b"1")]


def test_emptied_batch_of_an_expired_producer_goes(tmp_path):
    log = compacted(tmp_path)
    append_segment(log, build_record_batch([rec(b"a", b"1", 1000)], producer_id=7, producer_epoch=0,
                                           base_sequence=0))
    append_segment(log, build_record_batch([rec(b"a", b"2", 1001)]))
    log.append(build_record_batch([rec(b"x", b"1", 1002)]))
    LogCleaner(producer_id_expiration_ms=5000).clean(log, now=6000)     # 6000 - 1000 >= 5000
    assert log.segments[0].size == 0


def test_aborted_transaction_and_its_marker(tmp_path):
    log = compacted(tmp_path)
    txn = dict(producer_id=5, producer_epoch=0, is_transactional=True)
    append_segment(log, build_record_batch([rec(b"a", b"aborted")], base_sequence=0, **txn),
                   build_control_batch(ABORT, producer_id=5, producer_epoch=0, timestamp=1000),
                   origin=AppendOrigin.COORDINATOR)
    append_segment(log, build_record_batch([rec(b"b", b"committed")], base_sequence=1, **txn),
                   build_control_batch(COMMIT, producer_id=5, producer_epoch=0, timestamp=1000),
                   origin=AppendOrigin.COORDINATOR)
    log.append(build_record_batch([rec(b"x", b"1")]))
    cleaner = LogCleaner()

    def shape():
        return [(b.base_offset, b.is_control, b.records_count, b.delete_horizon_ms) for b in all_batches(log)]

    cleaner.clean(log, now=10_000)
    # Aborted data goes; its ABORT marker stays while data of the transaction was seen.
    assert shape() == [(1, True, 1, None), (2, False, 1, None), (3, True, 1, None), (4, False, 1, None)]
    cleaner.clean(log, now=10_000)
    # No data left: the marker gets a delete horizon ...
    assert shape() == [(1, True, 1, 11_000), (2, False, 1, None), (3, True, 1, None), (4, False, 1, None)]
    cleaner.clean(log, now=11_000)
    # ... and goes once it has passed. The committed transaction's marker stays.
    assert shape() == [(2, False, 1, None), (3, True, 1, None), (4, False, 1, None)]
    assert contents(log)[0] == (2, b"b", b"committed")


def test_min_compaction_lag_keeps_recent_segments_dirty(tmp_path):
    log = compacted(tmp_path, min_compaction_lag_ms=5000)
    append_segment(log, build_record_batch([rec(b"a", b"1", 1000)]))
    append_segment(log, build_record_batch([rec(b"a", b"2", 9000)]))
    log.append(build_record_batch([rec(b"x", b"1", 9500)]))
    result = LogCleaner().clean(log, now=10_000)
    assert result.end_offset == 1 and contents(log)[0] == (0, b"a", b"1")
    log.update_config(LogConfig.from_props({"cleanup.policy": "compact", "file.delete.delay.ms": "0"}))
    assert LogCleaner().clean(log, now=10_000).end_offset == 2
    assert contents(log)[0] == (1, b"a", b"2")


def test_legacy_wrapper_keeps_its_last_records(tmp_path):
    log = compacted(tmp_path)
    # A log an older broker wrote: a replica's appends keep the v1 messages
    # (a leader's convert them to v2).
    append_segment(log, build_message_set([rec(b"a", b"1"), rec(b"b", b"1"), rec(b"a", b"2"), rec(b"c", b"1")],
                                          magic=1, compression=CompressionType.GZIP),
                   origin=AppendOrigin.REPLICATION, assign_offsets=False)
    append_segment(log, build_message_set([rec(b"b", b"2")], magic=1, base_offset=4),
                   origin=AppendOrigin.REPLICATION, assign_offsets=False)
    log.append(build_message_set([rec(b"x", b"1")], magic=1, base_offset=5), assign_offsets=False)
    LogCleaner().clean(log, now=10_000)
    [wrapper] = list(log.segments[0].batches(verify_crc=True))
    assert wrapper.offset == 3 and wrapper.compression == CompressionType.GZIP
    assert [(r.offset, r.key, r.value) for r in wrapper.records()] == [(2, b"a", b"2"), (3, b"c", b"1")]


def test_a_reader_keeps_the_segment_it_started_on(tmp_path):
    log = compacted(tmp_path, file_delete_delay_ms=60_000)
    append_segment(log, build_record_batch([rec(b"a", b"1")]))
    append_segment(log, build_record_batch([rec(b"a", b"2")]))
    log.append(build_record_batch([rec(b"x", b"1")]))
    before = log.read(0, 1000)
    old_bytes = before.read()
    LogCleaner().clean(log, now=10_000)
    assert sorted(p.name for p in log.dir.glob("*.deleted")) == [
        f"{0:020d}{s}.deleted" for s in (".index", ".log", ".timeindex")]
    assert before.read() == old_bytes and before.path.endswith(".log")
    assert log.read(0, 1000).read()[:8] == struct.pack(">q", 1)
    assert log.delete_pending_segments(now=10_000 + 60_000) == 1
    assert list(log.dir.glob("*.deleted")) == []


def test_manager_cleans_by_dirty_ratio_and_checkpoints(tmp_path):
    mgr = LogManager(tmp_path / "data", clock=Clock(10_000))
    log = mgr.create_topic("c", 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.9"})[0]
    append_segment(log, build_record_batch([rec(b"a", b"1")]))
    append_segment(log, build_record_batch([rec(b"a", b"2")]))
    log.append(build_record_batch([rec(b"x", b"1")]))
    assert mgr.clean_logs() == 1                   # all dirty: ratio 1.0
    assert (tmp_path / "data" / "cleaner-offset-checkpoint").read_text() == "0\n1\nc 0 2\n"
    assert mgr.clean_logs() == 0                   # nothing dirty since
    mgr.close()
