"""kproto.spark's planning and decoding without Spark: segment walks with
resynchronisation, .index splits, read_committed bookkeeping, bounds.

Index semantics follow Kafka's OffsetIndex/TimeIndex (an active segment's
index is preallocated and zero-filled past its entries: AbstractIndex) and
LogSegment.findOffsetByTimestamp; read_committed follows the consumer's
aborted-transaction handling (Fetcher's abortedProducerIds / control batches)
and the last stable offset of an open transaction.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from kproto.errors import CorruptRecordError, IncompleteBatchError, UsageError
from kproto.log import LogManager
from kproto.records import NewRecord, build_control_batch, build_record_batch
from kproto.spark.columns import NAMES
from kproto.spark.plan import log_end_offsets, offset_for_timestamp, parse_options, plan_splits, transactions
from kproto.spark.reader import ReadOptions, Split, read_split
from kproto.spark.segments import Corrupt, SegmentIndexes, find_segments, index_entries, walk
from tests.spark.spark_fixtures import T0, batch_positions, undecompressable_batch


def batches(n: int, per: int = 5, base: int = 0) -> list[bytes]:
    return [build_record_batch([NewRecord(b"k%d" % (base + i * per + j), b"v" * 20, (), T0 + base + i * per + j)
                                for j in range(per)], base_offset=base + i * per) for i in range(n)]


def write(path: Path, *parts: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(parts))
    return path


def walk_file(path: Path):
    import pyarrow.fs as pafs
    with pafs.LocalFileSystem().open_input_file(str(path)) as f:
        return list(walk(f, 0, path.stat().st_size))


def test_walk_resynchronises_after_garbage(tmp_path):
    b = batches(4)
    seg = write(tmp_path / "t-0" / f"{0:020d}.log", b[0], b[1], b"\x02" * 40 + b"junk" * 10, b[2], b[3])
    items = walk_file(seg)
    assert [type(i).__name__ for i in items] == ["RecordBatch", "RecordBatch", "Corrupt", "RecordBatch", "RecordBatch"]
    bad = items[2]
    assert bad.position == len(b[0]) + len(b[1]) and bad.skipped == 80
    assert isinstance(bad.error, CorruptRecordError)
    assert [i.base_offset for i in items if not isinstance(i, Corrupt)] == [0, 5, 10, 15]


def test_walk_reports_a_cut_tail_as_incomplete(tmp_path):
    b = batches(2)
    seg = write(tmp_path / "t-0" / f"{0:020d}.log", b[0], b[1][:30])
    items = walk_file(seg)
    assert isinstance(items[-1], Corrupt) and isinstance(items[-1].error, IncompleteBatchError)
    assert items[-1].position == len(b[0]) and items[-1].skipped == 30


def test_preallocated_index_counts_only_real_entries():
    entries = bytes.fromhex("0000000400000000" "0000000900000100") + bytes(8 * 10)
    key = lambda buf, at: (int.from_bytes(buf[at:at + 4], "big"), int.from_bytes(buf[at + 4:at + 8], "big"))
    assert index_entries(entries, 8, key, 4096) == 2


def test_splits_cut_only_at_index_positions(tmp_path):
    m = LogManager(tmp_path / "d")
    m.set_topic_config("t", {"index.interval.bytes": 100})
    log = m.get_or_create_log("t", 0)
    for raw in batches(20):
        log.append(raw, assign_offsets=False)
    m.close()
    fs, segs = find_segments(str(tmp_path / "d"))
    idx = SegmentIndexes.load(fs, segs[0])
    starts = set(batch_positions(Path(segs[0].path)))
    ranges = idx.split_points(segs[0].size, 300)
    assert len(ranges) > 3 and ranges[0][0] == 0 and ranges[-1][1] == segs[0].size
    assert all(a in starts for a, _ in ranges) and all(z == a2 for (_, z), (a2, _) in zip(ranges, ranges[1:]))
    plan = parse_options({"path": str(tmp_path / "d"), "maxPartitionBytes": "300",
                          "startingOffsets": '{"t":{"0":52}}'}, NAMES)
    splits = plan_splits(plan)
    assert splits[0].start > 0 and splits[0].start in starts
    rows = [r for s in splits for b in read_split(s, plan.options) for r in b.column("offset").to_pylist()]
    assert rows == list(range(52, 100))
    assert log_end_offsets(str(tmp_path / "d")) == {("t", 0): 100}


def test_transactions_and_last_stable_offset(tmp_path):
    seg = write(tmp_path / "t-0" / f"{0:020d}.log",
                build_record_batch([NewRecord(b"a")], base_offset=0, is_transactional=True, producer_id=1, producer_epoch=0),
                build_record_batch([NewRecord(b"b")], base_offset=1, is_transactional=True, producer_id=2, producer_epoch=0),
                build_record_batch([NewRecord(b"c")], base_offset=2, is_transactional=True, producer_id=1, producer_epoch=0),
                build_control_batch(0, producer_id=1, producer_epoch=0, base_offset=3),
                build_control_batch(1, producer_id=2, producer_epoch=0, base_offset=4),
                build_record_batch([NewRecord(b"d")], base_offset=5, is_transactional=True, producer_id=3, producer_epoch=0),
                build_record_batch([NewRecord(b"e")], base_offset=6))
    fs, segs = find_segments(str(seg))
    assert transactions(fs, segs) == ([(1, 0, 3)], 5)
    plan = parse_options({"path": str(seg), "isolationLevel": "read_committed"}, ["offset", "key"])
    got = [r for s in plan_splits(plan) for b in read_split(s, plan.options) for r in b.to_pylist()]
    assert got == [{"offset": 1, "key": b"b"}]


def test_offset_for_timestamp_reads_the_timeindex(tmp_path):
    m = LogManager(tmp_path / "d")
    m.set_topic_config("t", {"index.interval.bytes": 50, "segment.bytes": 600})
    log = m.get_or_create_log("t", 0)
    for raw in batches(30):
        log.append(raw, assign_offsets=False)
    m.close()
    fs, segs = find_segments(str(tmp_path / "d"))
    assert len(segs) > 2
    assert offset_for_timestamp(fs, segs, T0 + 77) == 77
    assert offset_for_timestamp(fs, segs, T0 - 5) == 0
    assert offset_for_timestamp(fs, segs, T0 + 1000) is None


def test_batches_not_needed_are_not_decompressed(tmp_path):
    seg = write(tmp_path / "t-0" / f"{0:020d}.log", undecompressable_batch(0, 10), *batches(2, base=10))
    split = Split(str(seg), "t", 0, 0, seg.stat().st_size)
    full = pa.Table.from_batches(list(read_split(split, ReadOptions(tuple(NAMES)))))
    assert full.column("error").null_count == full.num_rows - 1
    # Offsets only: read from batch headers, the lz4 garbage is never touched.
    offsets = pa.Table.from_batches(list(read_split(split, ReadOptions(("offset", "compression")))))
    assert offsets.column("offset").to_pylist() == list(range(20))
    bounded = Split(str(seg), "t", 0, 0, seg.stat().st_size, start_offset=10)
    assert pa.Table.from_batches(list(read_split(bounded, ReadOptions(tuple(NAMES))))).column("error").null_count == 10
    with pytest.raises(CorruptRecordError, match=rf"{seg} @ byte 61: lz4"):
        list(read_split(split, ReadOptions(tuple(NAMES), failfast=True)))


@pytest.mark.parametrize("options, message", [
    ({}, "kafka-log needs a path"),
    ({"path": "x", "mode": "lenient"}, "option mode must be PERMISSIVE or FAILFAST, not 'LENIENT'"),
    ({"path": "x", "isolationlevel": "serializable"}, "option isolationLevel must be"),
    ({"path": "x", "includecontrol": "yes"}, "option includeControl must be true or false"),
    ({"path": "x", "startingoffsets": '{"t": 3}'}, "option startingOffsets: expected earliest, latest or JSON"),
    ({"path": "x", "columns": "offset,nope"}, "option columns: kafka-log has no column 'nope'"),
    ({"path": "x", "startingtimestamp": "yesterday"}, "option startingTimestamp must be milliseconds"),
])
def test_bad_options(options, message):
    with pytest.raises(UsageError, match=message):
        parse_options(options, NAMES)


def test_missing_path_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such file or directory"):
        plan_splits(parse_options({"path": str(tmp_path / "nope")}, NAMES))
