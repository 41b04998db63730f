"""``df.write.format("kafka-log").save(dir)``: rows back into Kafka segments.

Two steps, as Spark's file committers do it:

* ``stage`` (in each task): the task's rows, grouped by topic-partition and
  ordered by offset, are encoded and compressed into magic-2 batches and
  written to a staging directory beside the output (never inside it: a Kafka
  data directory may hold only ``topic-partition`` directories);
* ``commit`` (once, on the driver): the staged batches of every
  topic-partition are appended in offset order through ``kproto.log``'s
  LogManager, which writes the segments, ``.index``, ``.timeindex``,
  ``partition.metadata`` and checkpoints exactly as the broker does.

Rows of one original batch (same ``base_offset`` and producer fields) become
one batch again, keeping codec, producer id/epoch, sequence, transactional
and control flags; a batch that lost records to a filter is cut where its
offsets jump (each part keeps its offsets and gets the sequence it had).
Without an ``offset`` column the log assigns offsets, as on produce.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pyarrow as pa

from kproto.compression import CompressionType
from kproto.errors import UsageError
from kproto.records import NewRecord, TimestampType, build_record_batch, iter_batches, sequence_at

MAX_BATCH_RECORDS = 1000
_BATCH_FIELDS = ("base_offset", "producer_id", "producer_epoch", "base_sequence", "is_transactional",
                 "is_control", "compression", "timestampType")


@dataclass(frozen=True)
class WriteOptions:
    path: str
    job: str
    topic: str | None = None              # when the rows have no topic column
    compression: str | None = None        # overrides the rows' compression column
    segment_bytes: int | None = None
    max_batch_records: int = MAX_BATCH_RECORDS

    @property
    def staging(self) -> Path:
        return Path(f"{os.path.abspath(self.path).rstrip('/')}.kproto-staging-{self.job}")


def write_options(options: dict, path: str | None) -> WriteOptions:
    if not path:
        raise UsageError("kafka-log needs a directory: df.write.format('kafka-log').save(DIR)")
    if "://" in path and not path.startswith("file://"):
        raise UsageError(f"{path}: kafka-log writes local directories only")
    codec = options.get("compression")
    if codec:
        CompressionType.from_name(codec)
    seg = options.get("segmentbytes")
    return WriteOptions(path.removeprefix("file://"), uuid.uuid4().hex, topic=options.get("topic"),
                        compression=codec, segment_bytes=int(seg) if seg else None,
                        max_batch_records=int(options.get("maxbatchrecords", MAX_BATCH_RECORDS)))


@dataclass(frozen=True)
class Staged:
    topic: str
    partition: int
    path: str
    first_offset: int | None          # None: offsets to be assigned by the log
    last_offset: int | None


def _column(table: pa.Table, name: str, default=None) -> list:
    if name in table.column_names:
        return table.column(name).to_pylist()
    return [default] * table.num_rows


def stage(batches: Iterable[pa.RecordBatch], opts: WriteOptions, task: str) -> list[Staged]:
    """Encode one task's rows into staged batch files (one per topic-partition)."""
    batches = list(batches)
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    names = set(table.column_names)
    if "value" not in names and "key" not in names:
        raise UsageError("kafka-log: rows need a value (or key) column")
    if "topic" not in names and not opts.topic:
        raise UsageError("kafka-log: rows need a topic column or the topic option")
    topics = _column(table, "topic", opts.topic)
    parts = _column(table, "partition", 0)
    # A PERMISSIVE read's error rows (offset null, error set) stand for bytes
    # that held no record: nothing to write.
    not_records = {i for i, (o, e) in enumerate(zip(_column(table, "offset", 0), _column(table, "error")))
                   if o is None and e is not None}
    rows_by_tp: dict[tuple[str, int], list[int]] = {}
    for i, (t, p) in enumerate(zip(topics, parts)):
        if i in not_records:
            continue
        if t is None:
            t = opts.topic
        if t is None:
            raise UsageError(f"kafka-log: row {i} has a null topic")
        rows_by_tp.setdefault((t, 0 if p is None else p), []).append(i)
    cols = {n: _column(table, n) for n in ("key", "value", "offset", "timestamp", "headers", *_BATCH_FIELDS)}
    out = []
    for (topic, partition), rows in rows_by_tp.items():
        keep_offsets = all(cols["offset"][i] is not None for i in rows)
        if keep_offsets:
            rows.sort(key=lambda i: cols["offset"][i])
        data = b"".join(_encode(rows, cols, opts, keep_offsets))
        where = opts.staging / f"{topic}-{partition}" / f"{task}.batches"
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_bytes(data)
        first = cols["offset"][rows[0]] if keep_offsets else None
        last = cols["offset"][rows[-1]] if keep_offsets else None
        out.append(Staged(topic, partition, str(where), first, last))
    return out


def _runs(rows: list[int], cols: dict, opts: WriteOptions, keep_offsets: bool) -> Iterable[list[int]]:
    """Rows cut into batches: same batch fields, contiguous offsets, at most
    ``max_batch_records`` unless they came from one original batch."""
    run: list[int] = []
    meta = None
    original = "base_offset" in cols and any(cols["base_offset"][i] is not None for i in rows)
    for i in rows:
        m = tuple(cols[f][i] for f in _BATCH_FIELDS)
        gap = keep_offsets and run and cols["offset"][i] != cols["offset"][run[-1]] + 1
        full = not original and len(run) >= opts.max_batch_records
        if run and (m != meta or gap or full):
            yield run
            run = []
        run.append(i)
        meta = m
    if run:
        yield run


def _encode(rows: list[int], cols: dict, opts: WriteOptions, keep_offsets: bool) -> Iterable[bytes]:
    for run in _runs(rows, cols, opts, keep_offsets):
        first = run[0]
        codec = opts.compression or cols["compression"][first] or "none"
        records = [NewRecord(cols["key"][i], cols["value"][i],
                             [(h["key"], h["value"]) for h in cols["headers"][i] or ()],
                             None if cols["timestamp"][i] is None else _millis(cols["timestamp"][i]))
                   for i in run]
        base = cols["offset"][first] if keep_offsets else 0
        seq = cols["base_sequence"][first]
        if seq is not None and cols["base_offset"][first] is not None:
            seq = sequence_at(seq, base - cols["base_offset"][first])
        lat = cols["timestampType"][first] == TimestampType.LOG_APPEND_TIME
        stamps = [r.timestamp for r in records if r.timestamp is not None]
        yield build_record_batch(
            records, base_offset=base, compression=CompressionType.from_name(codec),
            timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
            log_append_time=max(stamps) if lat and stamps else None,
            is_transactional=bool(cols["is_transactional"][first]), is_control=bool(cols["is_control"][first]),
            producer_id=_or(cols["producer_id"][first], -1), producer_epoch=_or(cols["producer_epoch"][first], -1),
            base_sequence=_or(seq, -1))


def _or(value, default):
    return default if value is None else value


def _millis(ts) -> int:
    """A timestamp column value (datetime, or microseconds) in epoch ms."""
    if isinstance(ts, int):
        return ts // 1000
    return int(ts.timestamp() * 1000) if ts.tzinfo else int(ts.replace(tzinfo=_utc()).timestamp() * 1000)


def _utc():
    from datetime import timezone
    return timezone.utc


def commit(staged: list[Staged], opts: WriteOptions, overwrite: bool) -> dict[tuple[str, int], int]:
    """Append every staged file to its log in offset order; returns the
    batch count per topic-partition. The staging directory is removed."""
    from kproto.log import LogManager
    by_tp: dict[tuple[str, int], list[Staged]] = {}
    for s in staged:
        by_tp.setdefault((s.topic, s.partition), []).append(s)
    written: dict[tuple[str, int], int] = {}
    manager = LogManager(Path(opts.path))
    try:
        topics = {t for t, _ in by_tp}
        for topic in sorted(topics):
            if overwrite and manager.has_topic(topic):
                manager.delete_topic(topic)
            if opts.segment_bytes:
                manager.set_topic_config(topic, {"segment.bytes": opts.segment_bytes})
        for (topic, partition), files in sorted(by_tp.items()):
            files.sort(key=lambda s: -1 if s.first_offset is None else s.first_offset)
            for a, b in zip(files, files[1:]):
                if a.last_offset is not None and b.first_offset is not None and b.first_offset <= a.last_offset:
                    raise UsageError(f"kafka-log: {topic}-{partition} has rows for offsets "
                                     f"{b.first_offset}..{a.last_offset} in two tasks")
            log = manager.get_or_create_log(topic, partition)
            written[(topic, partition)] = _append(log, files)
    finally:
        manager.close()
        shutil.rmtree(opts.staging, ignore_errors=True)
    return written


def _append(log, files: list[Staged]) -> int:
    count = 0
    for s in files:
        data = Path(s.path).read_bytes()
        for batch in iter_batches(data):
            keep = s.first_offset is not None
            starts_late = keep and batch.base_offset > log.log_end_offset and log.size == 0
            if starts_late:
                log.roll(batch.base_offset)            # a log that starts past 0
            log.append(batch.data, assign_offsets=not keep)
            if starts_late:
                log.maybe_increment_log_start_offset(batch.base_offset)
            count += 1
    return count


def abort(opts: WriteOptions) -> None:
    shutil.rmtree(opts.staging, ignore_errors=True)
