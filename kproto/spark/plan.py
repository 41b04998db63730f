"""Planning a kafka-log read on the driver: options, bounds, splits.

Options follow Spark's Kafka source where it has one (``startingOffsets``,
``endingOffsets`` in its JSON form with -2 earliest and -1 latest,
``startingTimestamp``); Spark hands them over lower-cased, so they are
looked up that way. A partition missing from an offsets JSON reads from its
start (or to its end).

Splits are one per segment, or per byte range of a segment cut at batch
starts named by its ``.index`` once a range reaches ``maxPartitionBytes``;
the first segment of a bounded read starts at the ``.index`` position of
the starting offset, and segments wholly outside the bounds are not planned.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kproto.errors import DecodeError, UsageError
from kproto.records import RecordBatch, control_record
from kproto.spark.columns import NAMES
from kproto.spark.reader import ReadOptions, Split
from kproto.spark.segments import Corrupt, SegmentFile, SegmentIndexes, find_segments, walk

EARLIEST, LATEST = -2, -1
MAX_PARTITION_BYTES = 64 << 20
_ABORT, _COMMIT = 0, 1

TopicPartition = tuple[str | None, int | None]


@dataclass
class Bounds:
    """What options and pushed filters allow: offsets [lo, hi) for every
    partition, topics and partitions to keep."""

    lo: int | None = None
    hi: int | None = None
    topics: set[str] | None = None
    topic_prefix: str | None = None
    partitions: set[int] | None = None

    def narrow(self, lo: int | None = None, hi: int | None = None) -> None:
        if lo is not None:
            self.lo = lo if self.lo is None else max(self.lo, lo)
        if hi is not None:
            self.hi = hi if self.hi is None else min(self.hi, hi)

    def keep_topics(self, names: Iterable[str]) -> None:
        names = set(names)
        self.topics = names if self.topics is None else self.topics & names

    def keep_partitions(self, ids: Iterable[int]) -> None:
        ids = set(ids)
        self.partitions = ids if self.partitions is None else self.partitions & ids

    def admits(self, topic: str | None, partition: int | None) -> bool:
        if self.topics is not None and topic not in self.topics:
            return False
        if self.topic_prefix is not None and not (topic or "").startswith(self.topic_prefix):
            return False
        return self.partitions is None or partition in self.partitions


@dataclass
class ReadPlan:
    paths: list[str]
    options: ReadOptions
    starting: dict | str = "earliest"
    ending: dict | str = "latest"
    starting_timestamp: int | None = None
    topics: set[str] | None = None
    topic_pattern: re.Pattern | None = None
    max_partition_bytes: int = MAX_PARTITION_BYTES
    bounds: Bounds = field(default_factory=Bounds)


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = options.get(name.lower())
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise UsageError(f"option {name} must be true or false, not {text!r}")
    return text.strip().lower() == "true"


def _offsets_option(options: Mapping[str, str], name: str, default: str) -> dict | str:
    text = options.get(name.lower(), default).strip()
    if text in ("earliest", "latest"):
        return text
    try:
        parsed = json.loads(text)
        return {str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in parsed.items()}
    except (ValueError, AttributeError, TypeError):
        raise UsageError(f"option {name}: expected earliest, latest or JSON like "
                         f'{{"topic":{{"0":23,"1":-2}}}}, not {text!r}') from None


def parse_options(options: Mapping[str, str], columns: list[str]) -> ReadPlan:
    """The reader's options, checked: one-line ``UsageError``s naming the option.
    Keys in any case (Spark hands them over lower-cased)."""
    options = {k.lower(): v for k, v in options.items()}
    paths = json.loads(options["paths"]) if options.get("paths") else []
    if options.get("path"):
        paths.append(options["path"])
    if not paths:
        raise UsageError("kafka-log needs a path: spark.read.format('kafka-log').load(PATH)")
    mode = options.get("mode", "PERMISSIVE").upper()
    if mode not in ("PERMISSIVE", "FAILFAST"):
        raise UsageError(f"option mode must be PERMISSIVE or FAILFAST, not {mode!r}")
    isolation = options.get("isolationlevel", "read_uncommitted").lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise UsageError(f"option isolationLevel must be read_uncommitted or read_committed, not {isolation!r}")
    picked = options.get("columns")
    if picked:
        wanted = [c.strip() for c in picked.split(",") if c.strip()]
        missing = [c for c in wanted if c not in NAMES]
        if missing:
            raise UsageError(f"option columns: kafka-log has no column {missing[0]!r}")
        columns = [c for c in columns if c in wanted]
    opts = ReadOptions(tuple(columns), failfast=mode == "FAILFAST",
                       include_control=_flag(options, "includeControl", False),
                       read_committed=isolation == "read_committed")
    plan = ReadPlan(paths, opts, starting=_offsets_option(options, "startingOffsets", "earliest"),
                    ending=_offsets_option(options, "endingOffsets", "latest"))
    if options.get("startingtimestamp"):
        try:
            plan.starting_timestamp = int(options["startingtimestamp"])
        except ValueError:
            raise UsageError(f"option startingTimestamp must be milliseconds since the epoch, "
                             f"not {options['startingtimestamp']!r}") from None
    if options.get("topics"):
        plan.topics = {t.strip() for t in options["topics"].split(",") if t.strip()}
    if options.get("topicpattern"):
        try:
            plan.topic_pattern = re.compile(options["topicpattern"])
        except re.error as e:
            raise UsageError(f"option topicPattern: {e}") from None
    if options.get("maxpartitionbytes"):
        plan.max_partition_bytes = max(int(options["maxpartitionbytes"]), 1)
    return plan


def _wanted(plan: ReadPlan, topic: str | None, partition: int | None) -> bool:
    if plan.topics is not None and topic not in plan.topics:
        return False
    if plan.topic_pattern is not None and not (topic and plan.topic_pattern.fullmatch(topic)):
        return False
    return plan.bounds.admits(topic, partition)


def _bound(spec: dict | str, tp: TopicPartition, *, start: bool) -> int | None:
    """None: unbounded; LATEST as a start: nothing to read."""
    name = "startingOffsets" if start else "endingOffsets"
    if isinstance(spec, str):
        value = EARLIEST if spec == "earliest" else LATEST
    else:
        value = spec.get(tp[0] or "", {}).get(tp[1] if tp[1] is not None else -1)
        if value is None:
            return None
    if value == (EARLIEST if start else LATEST):
        return None
    if value == LATEST:
        return LATEST
    if value < 0:
        raise UsageError(f"{name}: {value} for {tp[0]}-{tp[1]} is not an offset"
                         + ("" if start else " (-2, earliest, is not an ending offset)"))
    return value


def plan_splits(plan: ReadPlan) -> list[Split]:
    """Every split to read, in topic, partition, offset order."""
    by_tp: dict[TopicPartition, tuple[object, list[SegmentFile]]] = {}
    for path in plan.paths:
        fs, segments = find_segments(path)
        for seg in segments:
            if _wanted(plan, seg.topic, seg.partition):
                by_tp.setdefault((seg.topic, seg.partition), (fs, []))[1].append(seg)
    splits: list[Split] = []
    for tp, (fs, segments) in sorted(by_tp.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or 0)):
        segments.sort(key=lambda s: s.base_offset)
        splits += _partition_splits(plan, fs, tp, segments)
    return splits


def _partition_splits(plan: ReadPlan, fs, tp: TopicPartition, segments: list[SegmentFile]) -> list[Split]:
    lo = _bound(plan.starting, tp, start=True)
    hi = _bound(plan.ending, tp, start=False)
    if lo == LATEST:
        return []
    if plan.starting_timestamp is not None:
        found = offset_for_timestamp(fs, segments, plan.starting_timestamp)
        if found is None:
            return []
        lo = found if lo is None else max(lo, found)
    b = plan.bounds
    lo = b.lo if lo is None else (lo if b.lo is None else max(lo, b.lo))
    hi = b.hi if hi is None else (hi if b.hi is None else min(hi, b.hi))
    aborted: tuple = ()
    if plan.options.read_committed:
        aborted_list, stable = transactions(fs, segments)
        aborted = tuple(aborted_list)
        if stable is not None:
            hi = stable if hi is None else min(hi, stable)
    if lo is not None and hi is not None and lo >= hi:
        return []
    out = []
    for i, seg in enumerate(segments):
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if lo is not None and nxt is not None and nxt <= lo:
            continue
        if hi is not None and seg.base_offset >= hi:
            break
        idx = SegmentIndexes.load(fs, seg)
        start = idx.position_of(seg.base_offset, lo) if lo is not None and lo > seg.base_offset else 0
        if start >= seg.size:
            start = 0                      # an index that does not fit its segment: read it all
        for a, z in idx.split_points(seg.size, plan.max_partition_bytes, start):
            out.append(Split(seg.uri, seg.topic, seg.partition, a, z, lo, hi, aborted))
    return out


def _batches(fs, seg: SegmentFile, start: int = 0):
    with fs.open_input_file(seg.path) as f:
        for item in walk(f, start, seg.size):
            if not isinstance(item, Corrupt):
                yield item


def offset_for_timestamp(fs, segments: list[SegmentFile], timestamp: int) -> int | None:
    """ListOffsets by time: the first offset whose record timestamp is >=
    ``timestamp``. As LogSegment.findOffsetByTimestamp: from the position the
    .index gives for the .timeindex entry at or below ``timestamp``, the first
    batch whose max timestamp reaches it, the first record in it that does."""
    for seg in segments:
        idx = SegmentIndexes.load(fs, seg)
        near = idx.offset_for_time(seg.base_offset, timestamp)
        start = idx.position_of(seg.base_offset, near)
        for batch in _batches(fs, seg, start if start < seg.size else 0):
            if batch.max_timestamp < timestamp:
                continue
            try:
                records = batch.records()
            except DecodeError:
                continue
            for r in records:
                if r.timestamp >= timestamp:
                    return r.offset
    return None


def transactions(fs, segments: list[SegmentFile]) -> tuple[list[tuple[int, int, int]], int | None]:
    """Aborted transactions (producer id, first offset, marker offset) from the
    partition's control batches, and the last stable offset when a
    transaction is still open (no marker yet), as read_committed needs them.
    Only headers are read, and the one record of each control batch."""
    aborted, open_txns = [], {}
    for seg in segments:
        for batch in _batches(fs, seg):
            if not isinstance(batch, RecordBatch) or not batch.is_transactional:
                continue
            if not batch.is_control:
                open_txns.setdefault(batch.producer_id, batch.base_offset)
                continue
            try:
                marker = control_record(batch.records()[0])
            except (DecodeError, IndexError):
                continue
            first = open_txns.pop(batch.producer_id, None)
            if marker.type == _ABORT and first is not None:
                aborted.append((batch.producer_id, first, batch.base_offset))
    return aborted, min(open_txns.values()) if open_txns else None


def log_end_offsets(uri: str) -> dict[TopicPartition, int]:
    """Each partition's log end offset: the next offset after the last batch
    of its last segment, walked from that segment's last .index entry."""
    fs, segments = find_segments(uri)
    last: dict[TopicPartition, SegmentFile] = {}
    for seg in segments:
        tp = (seg.topic, seg.partition)
        if tp not in last or seg.base_offset > last[tp].base_offset:
            last[tp] = seg
    ends = {}
    for tp, seg in last.items():
        start = SegmentIndexes.load(fs, seg).position_of(seg.base_offset, 2**63 - 1)
        end = seg.base_offset
        for batch in _batches(fs, seg, start if start < seg.size else 0):
            end = batch.next_offset
        ends[tp] = end
    return ends
