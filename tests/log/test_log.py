"""kproto.log: appends, offset assignment, reads, indexes, rolls, offsets by time.

Most logs here hold one-record batches of exactly 90 bytes (key ``kN``, a
20-byte value, timestamp 1000 + 10 * i), so positions, index entries and roll
points can be computed by hand: batch i sits at byte 90 * i.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from kproto.errors import (
    CorruptMessageError, ErrorCode, InvalidRecordError, KafkaError, MessageTooLargeError,
    OffsetOutOfRangeError,
)
from kproto.log import AppendOrigin, LogConfig, UnifiedLog
from kproto.log.index import TimestampOffset
from kproto.log.validator import RecordValidationError
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kproto.records import (
    CompressionType, NewRecord, TimestampType, build_control_batch, build_message_set,
    Batch, build_record_batch, iter_batches,
)

BATCH = 90     # bytes of one_batch(i) for i < 10


from tests.helpers import Clock
from tests.log.helpers import index_entries, one_batch, time_entries

def make_log(tmp_path: Path, clock: Clock | None = None, name: str = "t-0", **props) -> UnifiedLog:
    config = LogConfig.from_props({k.replace("_", "."): v for k, v in props.items()})
    return UnifiedLog.open(tmp_path / name, config, clock=clock or Clock())


def files(log: UnifiedLog) -> list[str]:
    return sorted(os.listdir(log.dir))


def test_batch_size_assumption():
    assert len(one_batch(0)) == BATCH and len(one_batch(9)) == BATCH


# --- append and read back ---------------------------------------------------------------

def test_append_assigns_offsets_and_reads_back_byte_identical(tmp_path):
    log = make_log(tmp_path)
    a = build_record_batch([NewRecord(b"a", b"1", (), 5), NewRecord(b"b", b"2", (("h", b"x"),), 6)],
                           base_offset=777)
    b = build_record_batch([NewRecord(None, b"3", (), 7)], compression=CompressionType.GZIP, base_offset=3)
    assert log.append(a) == (0, 1, -1)
    assert log.append(b) == (2, 2, -1)
    assert log.log_end_offset == log.high_watermark == 3
    data = log.read(0, 1 << 20).read()
    assert data == struct.pack(">q", 0) + a[8:] + struct.pack(">q", 2) + b[8:]
    batches = list(iter_batches(data))
    assert [(x.base_offset, x.last_offset) for x in batches] == [(0, 1), (2, 2)]
    assert [(r.offset, r.key, r.value, r.headers) for r in batches[0].records()] == [
        (0, b"a", b"1", ()), (1, b"b", b"2", (("h", b"x"),))]
    assert batches[1].records()[0].offset == 2


def test_kafka_python_batches_round_trip(tmp_path):
    built = []
    for codec in (0, 1, 2, 3, 4):
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                                  batch_size=1 << 20)
        for i in range(3):
            builder.append(i, timestamp=2000 + i, key=b"key%d" % i, value=b"value%d" % codec, headers=[("h", b"v")])
        built.append(bytes(builder.build()))
    log = make_log(tmp_path)
    offsets = [log.append(b)[:2] for b in built]
    assert offsets == [(0, 2), (3, 5), (6, 8), (9, 11), (12, 14)]
    data = log.read(0, 1 << 20).read()
    expected = b"".join(struct.pack(">q", 3 * i) + b[8:] for i, b in enumerate(built))
    assert data == expected
    recs = [r for x in iter_batches(data) for r in x.records()]
    assert [(r.offset, r.key, r.value, r.timestamp) for r in recs[3:6]] == [
        (3, b"key0", b"value1", 2000), (4, b"key1", b"value1", 2001), (5, b"key2", b"value1", 2002)]


def test_kafka_python_legacy_messages_become_one_v2_batch(tmp_path):
    """LogValidator (Kafka 3+, toMagic 2): v0/v1 messages are converted to one
    RecordBatch v2; keys, values and timestamps kept (v0: -1, CreateTime), the
    source codec kept under compression.type=producer, no producer id."""
    log = make_log(tmp_path)
    plain = LegacyRecordBatchBuilder(magic=0, compression_type=0, batch_size=1 << 20)
    for i in range(3):
        plain.append(i, timestamp=None, key=b"k", value=b"v%d" % i)
    wrapped = LegacyRecordBatchBuilder(magic=1, compression_type=1, batch_size=1 << 20)
    for i in range(2):
        wrapped.append(i, timestamp=5000 + i, key=b"w" if i else None, value=b"x%d" % i)
    assert log.append(bytes(plain.build())) == (0, 2, -1)
    assert log.append(bytes(wrapped.build()), leader_epoch=4) == (3, 4, -1)
    data = log.read(0, 1 << 20).read()
    assert data == build_record_batch(
        [NewRecord(b"k", b"v%d" % i, (), -1) for i in range(3)]) + build_record_batch(
        [NewRecord(None, b"x0", (), 5000), NewRecord(b"w", b"x1", (), 5001)], base_offset=3,
        compression=CompressionType.GZIP, partition_leader_epoch=4)
    first, second = iter_batches(data)             # CRCs verified
    assert (first.magic, first.compression, first.max_timestamp, first.producer_id) == (2, 0, -1, -1)
    assert (second.magic, second.compression, second.max_timestamp) == (2, CompressionType.GZIP, 5001)
    assert [(r.offset, r.timestamp, r.key, r.value) for b in (first, second) for r in b.records()] == [
        (0, -1, b"k", b"v0"), (1, -1, b"k", b"v1"), (2, -1, b"k", b"v2"),
        (3, 5000, None, b"x0"), (4, 5001, b"w", b"x1")]


def test_legacy_messages_take_the_topic_codec(tmp_path):
    """compression.type other than producer: the converted batch uses it
    (BrokerCompressionType.targetCompression), a gzip v0 wrapper becomes an
    uncompressed v2 batch, and plain v1 messages a compressed one."""
    log = make_log(tmp_path, compression_type="uncompressed")
    log.append(build_message_set([NewRecord(b"a", b"1"), NewRecord(b"b", b"2")], magic=0,
                                 compression=CompressionType.GZIP, base_offset=50))
    [batch] = list(iter_batches(log.read(0, 1 << 20).read()))
    assert (batch.magic, batch.compression) == (2, CompressionType.NONE)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()] == [
        (0, -1, b"a", b"1"), (1, -1, b"b", b"2")]
    log = make_log(tmp_path, name="t-1", compression_type="lz4")
    log.append(build_message_set([NewRecord(b"a", b"1", (), 7), NewRecord(None, None, (), 8)], magic=1))
    [batch] = list(iter_batches(log.read(0, 1 << 20).read()))
    assert (batch.magic, batch.compression, batch.max_timestamp) == (2, CompressionType.LZ4, 8)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()] == [
        (0, 7, b"a", b"1"), (1, 8, None, None)]


def test_more_than_one_compressed_legacy_wrapper_is_refused(tmp_path):
    """LogValidator.getFirstBatchAndMaybeValidateNoMoreBatches."""
    log = make_log(tmp_path)
    wrapper = build_message_set([NewRecord(b"a", b"1")], compression=CompressionType.GZIP)
    with pytest.raises(InvalidRecordError, match="Compressed outer record has more than one batch"):
        log.append(wrapper + wrapper)
    with pytest.raises(InvalidRecordError, match="Compressed outer record has more than one batch"):
        log.append(build_message_set([NewRecord(b"a", b"1")]) + wrapper)
    assert log.log_end_offset == 0 and log.active_segment.size == 0


def test_log_append_time_rewrites_v2_header_and_crc(tmp_path):
    clock = Clock(123456)
    log = make_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    original = build_record_batch([NewRecord(b"a", b"1", (), 5), NewRecord(b"b", b"2", (), 9)])
    assert log.append(original) == (0, 1, 123456)
    data = log.read(0, 1000).read()
    [batch] = list(iter_batches(data))          # CRC verified
    assert batch.attributes == 0x08 and batch.max_timestamp == 123456
    assert batch.base_timestamp == 5
    assert [r.timestamp for r in batch.records()] == [123456, 123456]
    expected = bytearray(original)
    expected[21:23] = b"\x00\x08"
    expected[35:43] = struct.pack(">q", 123456)
    expected[17:21] = struct.pack(">I", crc32c(bytes(expected[21:])))
    assert data == bytes(expected)


def test_log_append_time_on_converted_v1_messages(tmp_path):
    log = make_log(tmp_path, Clock(777), message_timestamp_type="LogAppendTime")
    msg = build_message_set([NewRecord(b"k", b"v", (), 5)], magic=1)
    assert log.append(msg) == (0, 0, 777)
    data = log.read(0, 1000).read()
    assert data == build_record_batch([NewRecord(b"k", b"v", (), 5)],
                                      timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=777)
    assert next(iter_batches(data)).records()[0].timestamp == 777


def test_leader_epoch_is_stamped_outside_the_crc(tmp_path):
    log = make_log(tmp_path)
    original = one_batch(0)
    log.append(original, leader_epoch=7)
    data = log.read(0, 1000).read()
    assert data[12:16] == struct.pack(">i", 7) and data[16:] == original[16:]
    assert next(iter_batches(data)).partition_leader_epoch == 7


def test_topic_compression_rebuilds_batches(tmp_path):
    log = make_log(tmp_path, compression_type="gzip")
    log.append(build_record_batch([NewRecord(b"a", b"1" * 100, (), 5), NewRecord(b"b", b"2", (), 6)],
                                  producer_id=9, producer_epoch=1, base_sequence=4))
    [batch] = list(iter_batches(log.read(0, 10000).read()))
    assert batch.compression == CompressionType.GZIP
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 1, 4)
    assert [(r.offset, r.key, r.timestamp) for r in batch.records()] == [(0, b"a", 5), (1, b"b", 6)]


def test_replicated_append_keeps_offsets(tmp_path):
    log = make_log(tmp_path)
    assert log.append(one_batch(0, base_offset=10), assign_offsets=False) == (10, 10, -1)
    assert log.log_end_offset == 11
    assert [s.base_offset for s in log.segments] == [0]     # a gap is allowed inside a segment
    assert log.read(4, 1000).read()[:8] == struct.pack(">q", 10)
    with pytest.raises(InvalidRecordError, match="First offset 5 is less than the next offset 11"):
        log.append(one_batch(1, base_offset=5), assign_offsets=False)


@pytest.mark.parametrize("mutate, error, message", [
    (lambda b: b[:20] + bytes([b[20] ^ 1]) + b[21:], CorruptMessageError, "crc mismatch"),
    (lambda b: b[:-1], CorruptMessageError, "incomplete batch"),
    (lambda b: b + b"\x00" * 5, CorruptMessageError, "incomplete batch"),
])
def test_append_rejects_corrupt_input(tmp_path, mutate, error, message):
    log = make_log(tmp_path)
    with pytest.raises(error, match=message) as e:
        log.append(mutate(one_batch(0)))
    assert e.value.error_code == ErrorCode.CORRUPT_MESSAGE
    assert log.log_end_offset == 0 and log.active_segment.size == 0


def test_append_rejects_oversized_keyless_and_control(tmp_path):
    log = make_log(tmp_path, max_message_bytes=89, cleanup_policy="compact")
    with pytest.raises(MessageTooLargeError, match="is 90 bytes which exceeds the maximum configured value of 89"):
        log.append(one_batch(0))
    log.update_config(LogConfig.from_props({"cleanup.policy": "compact"}))
    # LogValidator.validateKey: a per-record error, reported with its batch index
    with pytest.raises(RecordValidationError, match="rejected due to 1 record errors") as e:
        log.append(build_record_batch([NewRecord(b"k", b"v", (), 1), NewRecord(None, b"v", (), 1)]))
    assert e.value.error_code == ErrorCode.INVALID_RECORD
    assert e.value.record_errors == [(1, "Compacted topic cannot accept message without key in topic "
                                         "partition t-0.")]
    marker = build_control_batch(1, producer_id=3, producer_epoch=0)
    with pytest.raises(InvalidRecordError, match="Clients are not allowed to write control records"):
        log.append(marker)
    assert log.append(marker, origin=AppendOrigin.COORDINATOR) == (0, 0, -1)


def test_timestamp_bounds(tmp_path):
    log = make_log(tmp_path, Clock(10_000), message_timestamp_before_max_ms=1000,
                   message_timestamp_after_max_ms=500)
    with pytest.raises(RecordValidationError, match="rejected due to invalid timestamp") as e:
        log.append(one_batch(0, ts=8999))
    assert e.value.error_code == ErrorCode.INVALID_TIMESTAMP
    assert e.value.record_errors == [(0, "Timestamp 8999 of message with offset 0 is out of range. "
                                         "The timestamp should be within [9000, 10500]")]
    assert log.append(one_batch(0, ts=9000)) == (0, 0, -1)
    assert log.append(one_batch(1, ts=10500)) == (1, 1, -1)


def test_empty_append(tmp_path):
    log = make_log(tmp_path)
    assert log.append(b"") == (-1, -1, -1)
    assert log.log_end_offset == 0


# --- reads -------------------------------------------------------------------------------

def test_read_whole_batches_with_max_bytes(tmp_path):
    log = make_log(tmp_path)
    for i in range(5):
        log.append(one_batch(i))
    s = log.read(1, 200)
    assert (s.position, s.length) == (90, 180) and s.path.endswith("00000000000000000000.log")
    s = log.read(1, 179)
    assert (s.position, s.length) == (90, 90)
    s = log.read(1, 10)                          # the first batch even if larger
    assert (s.position, s.length) == (90, 90)
    assert log.read(1, 10, min_one_message=False).length == 0
    assert log.read(3, 1 << 20).length == 180
    assert log.read(2, 1 << 20, max_offset=4).length == 180
    empty = log.read(5, 100)
    assert empty.length == 0 and empty.read() == b""
    with pytest.raises(OffsetOutOfRangeError, match="range 0 to 5"):
        log.read(6, 100)


def expected_read(batches: list[Batch], offset: int, max_bytes: int, max_offset: int, min_one: bool) -> tuple:
    """(position, length) as a walk over every batch gives it: the batch holding ``offset``,
    then whole batches up to ``max_bytes`` (the first even if larger), below ``max_offset``."""
    first = next(b for b in batches if b.last_offset >= offset)
    length = 0
    for b in batches[batches.index(first):]:
        if b.last_offset >= max_offset or (length + b.size > max_bytes and not (length == 0 and min_one)):
            break
        length += b.size
    return first.position, length


def test_read_ends_on_the_whole_batch_the_index_finds(tmp_path):
    # batches of 1-4 records of different sizes, an index entry every ~2 batches: every start
    # offset, size limit and high watermark gives the slice a walk over every batch gives
    log = make_log(tmp_path, index_interval_bytes=150)
    for i in range(40):
        log.append(build_record_batch([NewRecord(None, b"v" * (7 * i % 50), (), 1)] * (1 + i % 4)))
    batches = list(iter_batches(log.segments[0].log.read(0, log.segments[0].size)))
    assert len(log.segments[0].offset_index._buf) // 8 > 10
    end = log.log_end_offset
    limits = sorted({0, 1, 60, 199, 200, 1000, 5000, 1 << 20} | {b.position + b.size for b in batches[:6]}
                    | {b.position + b.size - 1 for b in batches[:6]})
    for offset in range(0, end, 3):
        for limit in limits:
            for min_one in (True, False):
                for max_offset in (end, offset + 5):
                    s = log.read(offset, limit, min_one_message=min_one,
                                 max_offset=None if max_offset == end else max_offset)
                    want = expected_read(batches, offset, limit, max_offset, min_one)
                    got = (s.position, s.length) if s.length else (want[0], 0)
                    assert got == want, (offset, limit, min_one, max_offset)


def test_read_does_not_read_the_records_it_sends(tmp_path, monkeypatch):
    # a fetch's slice goes out with sendfile: finding its ends reads headers near both ends, not the MBs between
    log = make_log(tmp_path)
    for i in range(200):
        log.append(build_record_batch([NewRecord(None, b"%05d" % i + b"x" * 95, (), 1)] * 100))
    seg = log.segments[0]
    read = []
    monkeypatch.setattr(type(seg.log), "read", lambda self, position, length: read.append(length) or
                        self.pread(length, position))
    s = log.read(50, 1_000_000)
    whole = sum(b.size for b in iter_batches(seg.log.pread(seg.size, 0)))
    assert s.length <= 1_000_000 < s.length + whole // 200 and s.position == 0
    assert sum(read) < 200_000, read


def test_read_steps_over_large_batches_unread(tmp_path, monkeypatch):
    log = make_log(tmp_path, index_interval_bytes=1 << 30)     # no index entry: every header walked
    for i in range(4):
        log.append(build_record_batch([NewRecord(None, b"%04d" % i + b"y" * 1020, (), 1)] * 1000))
    seg = log.segments[0]
    size = seg.size // 4
    read = []
    monkeypatch.setattr(type(seg.log), "read", lambda self, position, length: read.append(length) or
                        self.pread(length, position))
    found = [log.read(2500, 10), log.read(0, 3 * size - 1)]      # batches of ~1 MB: 1 then 2 whole
    assert [(s.position, s.length) for s in found] == [(2 * size, size), (0, 2 * size)]
    assert sum(read) < 4 * 65536 + 1000, read                     # a window at each end, headers between


def test_read_offset_inside_a_batch_starts_at_the_batch(tmp_path):
    log = make_log(tmp_path)
    log.append(build_record_batch([NewRecord(b"a", b"1", (), 1)] * 4))
    log.append(one_batch(1))
    s = log.read(2, 1 << 20)
    assert s.position == 0
    assert [b.base_offset for b in iter_batches(s.read())] == [0, 4]


def test_read_crosses_to_the_next_segment_and_sendfile(tmp_path):
    import socket
    log = make_log(tmp_path, segment_bytes=180)
    for i in range(4):
        log.append(one_batch(i))
    assert [s.base_offset for s in log.segments] == [0, 2]
    s = log.read(2, 1000)
    assert s.path.endswith("00000000000000000002.log") and (s.position, s.length) == (0, 180)
    a, b = socket.socketpair()
    try:
        assert s.sendfile(a.fileno()) == 180
        assert b.recv(1000) == s.read()
    finally:
        a.close()
        b.close()


# --- indexes ------------------------------------------------------------------------------

def test_index_and_timeindex_bytes(tmp_path):
    log = make_log(tmp_path, index_interval_bytes=100, segment_index_bytes=100)
    for i in range(7):
        log.append(one_batch(i))
    base = log.dir / "00000000000000000000"
    # Preallocated while active: 100 rounded down to 12 and 8 entries, zero-filled.
    assert os.path.getsize(f"{base}.index") == 96 and os.path.getsize(f"{base}.timeindex") == 96
    # An entry once > 100 bytes passed since the last one: before batches 2, 4, 6.
    expected_index = struct.pack(">iiiiii", 2, 180, 4, 360, 6, 540)
    expected_time = struct.pack(">qiqiqi", 1020, 2, 1040, 4, 1060, 6)
    assert Path(f"{base}.index").read_bytes() == expected_index + bytes(96 - 24)
    assert Path(f"{base}.timeindex").read_bytes() == expected_time + bytes(96 - 36)
    log.close()
    # Closing trims; the time index is unchanged (1060 is already the max).
    assert Path(f"{base}.index").read_bytes() == expected_index
    assert Path(f"{base}.timeindex").read_bytes() == expected_time


def test_timeindex_only_for_a_new_max_and_final_entry_on_roll(tmp_path):
    log = make_log(tmp_path, index_interval_bytes=0)
    for i, ts in enumerate([500, 400, 450, 600, 550]):
        log.append(one_batch(i, ts=ts))
    log.roll()
    base = log.dir / "00000000000000000000"
    assert index_entries(Path(f"{base}.index")) == [(1, 90), (2, 180), (3, 270), (4, 360)]
    # Entries at batches 1..4 carry the max so far: 500@0, 500@0 (no new max), 500@0, 600@3;
    # the roll appends nothing newer.
    assert time_entries(Path(f"{base}.timeindex")) == [(500, 0), (600, 3)]
    # The first record whose timestamp is >= the target, not the closest one.
    assert log.offset_for_timestamp(450) == TimestampOffset(500, 0)
    assert log.offset_for_timestamp(501) == TimestampOffset(600, 3)
    assert log.offset_for_timestamp(601) is None


def test_offset_for_timestamp_across_segments(tmp_path):
    log = make_log(tmp_path, segment_bytes=270, index_interval_bytes=100)
    for i in range(8):
        log.append(one_batch(i))                 # timestamps 1000, 1010, ... 1070
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert log.offset_for_timestamp(0) == TimestampOffset(1000, 0)
    assert log.offset_for_timestamp(1031) == TimestampOffset(1040, 4)
    assert log.offset_for_timestamp(1070) == TimestampOffset(1070, 7)
    assert log.offset_for_timestamp(1071) is None
    assert log.offset_for_timestamp(-1) == TimestampOffset(-1, 8)
    assert log.offset_for_timestamp(-2) == TimestampOffset(-1, 0)
    assert log.offset_for_timestamp(-3) == TimestampOffset(1070, 7)


def test_offset_for_timestamp_inside_a_batch(tmp_path):
    log = make_log(tmp_path)
    log.append(build_record_batch([NewRecord(b"a", b"", (), t) for t in (10, 30, 20, 40)]))
    assert log.offset_for_timestamp(25) == TimestampOffset(30, 1)
    assert log.offset_for_timestamp(35) == TimestampOffset(40, 3)


# --- rolls ----------------------------------------------------------------------------------

def test_roll_on_segment_bytes(tmp_path):
    log = make_log(tmp_path, segment_bytes=300)
    for i in range(7):
        log.append(one_batch(i))
    # Rolls when size > 300 - 90: after 3 batches.
    assert [(s.base_offset, s.size) for s in log.segments] == [(0, 270), (3, 270), (6, 90)]
    # each roll takes a producer snapshot at the new base offset (UnifiedLog.roll)
    assert files(log) == sorted([f"{b:020d}{s}" for b in (0, 3, 6) for s in (".index", ".log", ".timeindex")]
                                + ["00000000000000000003.snapshot", "00000000000000000006.snapshot"])
    # Rolled segments were trimmed and flushed: the recovery point is the last roll.
    assert os.path.getsize(log.dir / "00000000000000000000.index") == 0
    assert log.recovery_point == 6


def test_roll_on_segment_ms_by_record_timestamps(tmp_path):
    log = make_log(tmp_path, segment_ms=1000)
    log.append(one_batch(0, ts=5000))
    log.append(one_batch(1, ts=6000))            # waited 1000: not more than segment.ms
    assert len(log.segments) == 1
    log.append(one_batch(2, ts=6001))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_on_segment_ms_by_clock_without_timestamps(tmp_path):
    clock = Clock(0)
    log = make_log(tmp_path, clock, segment_ms=1000)
    v0 = build_message_set([NewRecord(b"k", b"v")], magic=0)
    clock.now = 500
    log.append(v0)
    clock.now = 1000
    log.append(v0)
    assert len(log.segments) == 1
    clock.now = 1001
    log.append(v0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_on_full_time_index(tmp_path):
    # 36 bytes: 4 offset entries, 3 time entries of which one stays for the roll.
    log = make_log(tmp_path, index_interval_bytes=100, segment_index_bytes=36)
    for i in range(7):
        log.append(one_batch(i))
    assert [s.base_offset for s in log.segments] == [0, 5]
    base = log.dir / "00000000000000000000"
    assert index_entries(Path(f"{base}.index")) == [(2, 180), (4, 360)]
    assert time_entries(Path(f"{base}.timeindex")) == [(1020, 2), (1040, 4)]


def test_roll_on_full_offset_index(tmp_path):
    # Equal timestamps: the time index keeps one entry, the offset index (4 entries) fills.
    log = make_log(tmp_path, index_interval_bytes=0, segment_index_bytes=36)
    for i in range(7):
        log.append(one_batch(i, ts=7))
    assert [s.base_offset for s in log.segments] == [0, 5]
    assert index_entries(log.dir / "00000000000000000000.index") == [(1, 90), (2, 180), (3, 270), (4, 360)]
    assert time_entries(log.dir / "00000000000000000000.timeindex") == [(7, 0)]


# --- flush policy -----------------------------------------------------------------------------

def test_flush_messages(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    log = make_log(tmp_path, flush_messages=3)
    log.append(one_batch(0))
    log.append(one_batch(1))
    assert log.recovery_point == 0 and synced == []
    log.append(one_batch(2))
    assert log.recovery_point == 3 and len(synced) == 3      # .log, .index, .timeindex


def test_flush_ms(tmp_path):
    clock = Clock(0)
    log = make_log(tmp_path, clock, flush_ms=100)
    log.append(one_batch(0))
    assert log.recovery_point == 0
    assert not log.flush_if_due(99)
    assert log.flush_if_due(100) and log.recovery_point == 1
    clock.now = 250
    log.append(one_batch(1))                     # 250 ms since the last flush: flushed on append
    assert log.recovery_point == 2


def test_append_may_sync_announces_rolls_and_due_flushes(tmp_path, monkeypatch):
    # On "no" the produce handler appends on the event loop: no fsync may follow.
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    log = make_log(tmp_path, segment_bytes=300)
    said = []
    for i in range(7):
        said.append(log.append_may_sync(BATCH))
        before = len(synced)
        log.append(one_batch(i))
        assert said[-1] == (len(synced) > before)
    assert said == [False, False, False, True, False, False, True]     # the rolls at offsets 3 and 6
    assert log.recovery_point == 6
    clock = Clock(0)
    timed = make_log(tmp_path, clock, name="t-1", flush_ms=100)
    assert not timed.append_may_sync(BATCH)
    clock.now = 100
    assert timed.append_may_sync(BATCH)
    counted = make_log(tmp_path, name="t-2", flush_messages=1000)
    assert not counted.append_may_sync(BATCH)        # 90 bytes hold 90 records at most
    assert counted.append_may_sync(1000)
    # A segment that cannot be read: "maybe", and the append itself answers.
    reopened = make_log(tmp_path, name="t-0", segment_bytes=300)
    reopened.close()
    assert reopened.append_may_sync(BATCH)
    with pytest.raises(KafkaError):
        reopened.append(one_batch(7))


def test_closed_log_refuses_appends(tmp_path):
    log = make_log(tmp_path)
    log.close()
    with pytest.raises(KafkaError) as e:
        log.append(one_batch(0))
    assert e.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR


def test_failed_appends_are_logged_once_per_partition_per_episode(tmp_path, monkeypatch, caplog):
    """A disk that refuses writes fails every append (KAFKA_STORAGE_ERROR); the
    broker log gets one ERROR line per partition naming the file and the OS
    error, and another only after an append to that partition has succeeded."""
    logs = [make_log(tmp_path, name=f"t-{p}") for p in (0, 1)]
    broken: set[int] = set()

    def disk(log: UnifiedLog, p: int) -> None:
        real = log.active_segment.log.pwrite

        def pwrite(data, position):
            if p in broken:
                raise OSError(errno.EROFS, os.strerror(errno.EROFS))
            return real(data, position)
        monkeypatch.setattr(log.active_segment.log, "pwrite", pwrite)

    for p, log in enumerate(logs):
        disk(log, p)

    def errors() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and r.name == "kproto.log"]

    def append(p: int, times: int = 1) -> None:
        for _ in range(times):
            with pytest.raises(KafkaError) as e:
                logs[p].append(one_batch(0))
            assert e.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert str(e.value).endswith("[Errno 30] Read-only file system")

    def line(p: int) -> str:
        return (f"Error while appending records for t-{p} to {tmp_path}/t-{p}/{0:020d}.log: [Errno 30] "
                f"Read-only file system (KAFKA_STORAGE_ERROR to every append until one succeeds; those "
                f"failures are not logged)")

    with caplog.at_level(logging.ERROR, logger="kproto.log"):
        broken.update({0, 1})
        append(0, 3)
        append(1, 2)
        assert errors() == [line(0), line(1)]
        broken.discard(0)
        assert logs[0].append(one_batch(0))[:2] == (0, 0)      # episode over for t-0 only
        append(1)
        broken.add(0)
        append(0, 2)
        assert errors() == [line(0), line(1), line(0)]
    assert [log.log_end_offset for log in logs] == [1, 0]
    assert [log.active_segment.size for log in logs] == [BATCH, 0]


def test_truncate_fully_and_start_at(tmp_path):
    """A KRaft follower that installed the leader's snapshot: no segment left, the log
    empty at the snapshot's end offset, past its own end."""
    log = make_log(tmp_path, segment_bytes=180, index_interval_bytes=0)
    for i in range(5):
        log.append(one_batch(i))
    log.truncate_fully_and_start_at(40)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (40, 40, 40)
    assert [s.base_offset for s in log.segments] == [40]
    assert sorted(p.name for p in tmp_path.glob("*/*.log")) == ["00000000000000000040.log"]
    assert log.append(one_batch(9)) == (40, 40, -1)


def test_truncate_to(tmp_path):
    log = make_log(tmp_path, segment_bytes=180, index_interval_bytes=0)
    for i in range(5):
        log.append(one_batch(i))
    assert log.truncate_to(3)
    assert log.log_end_offset == 3 and [s.base_offset for s in log.segments] == [0, 2]
    assert log.active_segment.size == 90
    assert log.append(one_batch(9)) == (3, 3, -1)
    assert [b.base_offset for b in iter_batches(log.read(2, 1000).read())] == [2, 3]
