"""One input split of a segment, decoded into Arrow record batches.

Everything a task needs travels in a ``Split`` (plain, picklable data); the
task opens the file itself, so a split runs the same in the driver's process
(``local[*]``) and in a cluster's executors. Batches outside the offset
bounds, aborted transactional batches under read_committed and control
batches not asked for are skipped from their headers alone: they are never
decompressed. When no record-level column is selected, a batch whose offsets
are contiguous is not decoded either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kproto.compression import CompressionType
from kproto.errors import CorruptRecordError, DecodeError
from kproto.records import RecordBatch
from kproto.spark.columns import ARROW_TYPES, RECORD_COLUMNS, arrow_schema
from kproto.spark.segments import Corrupt, filesystem, walk

BATCH_ROWS = 65536
_CODECS = pa.array([c.name_lower for c in sorted(CompressionType)])


@dataclass(frozen=True, slots=True)
class Split:
    """Bytes [start, end) of one segment, and the offsets [start_offset,
    end_offset) wanted from them (None: unbounded)."""

    uri: str
    topic: str | None
    partition: int | None
    start: int
    end: int
    start_offset: int | None = None
    end_offset: int | None = None
    # (producer id, first offset, last offset) of aborted transactions: only
    # for read_committed.
    aborted: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ReadOptions:
    columns: tuple[str, ...]
    failfast: bool = False
    include_control: bool = False
    read_committed: bool = False
    batch_rows: int = BATCH_ROWS


class _Rows:
    """Columns being filled: record-level lists, batch-level values once per
    batch with the batch's row count (expanded with numpy at flush)."""

    def __init__(self, split: Split, columns: tuple[str, ...]) -> None:
        self.split, self.columns = split, columns
        self.schema = arrow_schema(list(columns))
        want = set(columns)
        self.want_kv = {"key", "value"} & want
        self.want_ts = "timestamp" in want
        self.want_headers = "headers" in want
        self.need_records = bool(RECORD_COLUMNS & want)
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self.keys: list = []
        self.values: list = []
        self.offsets: list = []
        self.stamps: list = []
        self.header_counts: list = []
        self.header_keys: list = []
        self.header_values: list = []
        self.counts: list[int] = []
        self.batch: dict[str, list] = {k: [] for k in (
            "base_offset", "magic", "compression", "producer_id", "producer_epoch", "base_sequence",
            "is_transactional", "is_control", "crc_valid", "position", "timestampType", "error")}

    def _batch_values(self, n: int, *values) -> None:
        self.counts.append(n)
        self.rows += n
        for col, v in zip(self.batch.values(), values):
            col.append(v)

    def add_records(self, batch, records: list, crc_ok: bool, error: str | None) -> None:
        if self.want_kv:
            self.keys += [r.key for r in records]
            self.values += [r.value for r in records]
        first, n = records[0].offset, len(records)
        if records[-1].offset - first == n - 1:
            self.offsets += range(first, first + n)          # contiguous: no per-record reads
        else:
            self.offsets += [r.offset for r in records]
        if self.want_ts:
            self.stamps += [r.timestamp for r in records]     # -1 (none, magic 0) -> null
        if self.want_headers:
            counts = [len(r.headers) for r in records]
            self.header_counts += counts
            if any(counts):
                self.header_keys += [k for r in records for k, _ in r.headers]
                self.header_values += [v for r in records for _, v in r.headers]
        self._add_batch(batch, n, first, crc_ok, error)

    def add_offsets(self, batch: RecordBatch, first: int, last: int, crc_ok: bool, error: str | None) -> None:
        """A batch's rows from its header alone (contiguous offsets)."""
        self.offsets += range(first, last + 1)
        self._add_batch(batch, last - first + 1, first, crc_ok, error)

    def _add_batch(self, batch, n: int, first: int | None, crc_ok: bool, error: str | None) -> None:
        if isinstance(batch, RecordBatch):
            self._batch_values(n, batch.base_offset, 2, batch.attributes & 7, batch.producer_id,
                               batch.producer_epoch, batch.base_sequence, batch.is_transactional,
                               batch.is_control, crc_ok, batch.position, batch.timestamp_type, error)
        else:
            self._batch_values(n, batch.offset if first is None else first, batch.magic,
                               batch.attributes & 7, -1, -1, -1, False, False, crc_ok, batch.position,
                               batch.timestamp_type, error)

    def add_error(self, position: int, error: DecodeError, batch=None) -> None:
        """One row standing for bytes that held no valid batch (PERMISSIVE)."""
        if self.want_kv:
            self.keys.append(None)
            self.values.append(None)
        self.offsets.append(None)
        if self.want_ts:
            self.stamps.append(None)
        if self.want_headers:
            self.header_counts.append(0)
        error.at(file=error.file or self.split.uri)
        if batch is None:
            self._batch_values(1, None, None, None, None, None, None, None, None, False, position, None,
                               str(error))
        else:
            self._add_batch(batch, 1, None, batch.is_valid(), str(error))

    # -- to Arrow ---------------------------------------------------------------------

    def flush(self) -> pa.RecordBatch:
        n, counts = self.rows, np.asarray(self.counts, dtype=np.int64)
        out = []
        for name in self.columns:
            out.append(self._column(name, n, counts))
        self._reset()
        return pa.RecordBatch.from_arrays(out, schema=self.schema)

    def _column(self, name: str, n: int, counts: np.ndarray) -> pa.Array:
        t = ARROW_TYPES[name]
        if name == "key":
            return pa.array(self.keys, t)
        if name == "value":
            return pa.array(self.values, t)
        if name in ("topic", "segment"):
            v = self.split.topic if name == "topic" else self.split.uri
            return _constant(v, n, t)
        if name == "partition":
            return _constant(self.split.partition, n, t)
        if name == "offset":
            return pa.array(self.offsets, t)
        if name == "timestamp":
            ms = pa.array(self.stamps, pa.int64())
            ms = pc.if_else(pc.equal(ms, -1), pa.scalar(None, pa.int64()), ms)
            return pc.multiply(ms, 1000).cast(t)
        if name == "headers":
            offsets = np.zeros(len(self.header_counts) + 1, dtype=np.int32)
            np.cumsum(self.header_counts, out=offsets[1:])
            items = pa.StructArray.from_arrays(
                [pa.array(self.header_keys, pa.string()), pa.array(self.header_values, pa.binary())],
                fields=list(t.value_type))
            return pa.ListArray.from_arrays(pa.array(offsets), items, type=t)
        values = self.batch[name]
        if name == "compression":
            if None in values:
                return pa.array(np.repeat(np.array([None if v is None else _CODECS[v].as_py()
                                                    for v in values], dtype=object), counts), t)
            idx = pa.array(np.repeat(np.asarray(values, dtype=np.int32), counts))
            return pa.DictionaryArray.from_arrays(idx, _CODECS).dictionary_decode()
        if name == "error" and all(v is None for v in values):
            return pa.nulls(n, t)
        if None in values or name == "error":
            return pa.array(np.repeat(np.array(values, dtype=object), counts), t)
        return pa.array(np.repeat(np.asarray(values), counts), t)


def _constant(value, n: int, t: pa.DataType) -> pa.Array:
    if value is None:
        return pa.nulls(n, t)
    if t == pa.string():
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)),
                                              pa.array([value])).dictionary_decode()
    return pa.array(np.full(n, value), t)


def _aborted_lookup(aborted) -> dict[int, list[tuple[int, int]]]:
    out: dict[int, list[tuple[int, int]]] = {}
    for pid, first, last in aborted:
        out.setdefault(pid, []).append((first, last))
    return out


def read_split(split: Split, opts: ReadOptions) -> Iterator[pa.RecordBatch]:
    """The rows of ``split`` as Arrow record batches of about ``batch_rows``."""
    rows = _Rows(split, opts.columns)
    aborted = _aborted_lookup(split.aborted) if opts.read_committed else {}
    lo, hi = split.start_offset, split.end_offset
    fs, path = filesystem(split.uri)
    with fs.open_input_file(path) as f:
        for item in walk(f, split.start, split.end):
            if isinstance(item, Corrupt):
                if opts.failfast:
                    raise item.error.at(file=item.error.file or split.uri)
                rows.add_error(item.position, item.error)
            elif _read_batch(item, rows, opts, lo, hi, aborted, split.uri) is False:
                break
            if rows.rows >= opts.batch_rows:
                yield rows.flush()
    if rows.rows:
        yield rows.flush()


def _read_batch(batch, rows: _Rows, opts: ReadOptions, lo, hi, aborted, uri: str) -> bool | None:
    """Add ``batch``'s wanted rows; False once past the end offset."""
    v2 = isinstance(batch, RecordBatch)
    if lo is not None and batch.last_offset < lo:
        return None
    if v2:
        if hi is not None and batch.base_offset >= hi:
            return False
        if batch.is_control and not opts.include_control:
            return None
        if batch.is_transactional and not batch.is_control and aborted and _is_aborted(batch, aborted):
            return None
    crc_ok = batch.is_valid()
    crc_error = None
    if not crc_ok:
        err = CorruptRecordError(f"crc mismatch (stored {batch.crc}, computed {batch.compute_crc()})",
                                 position=batch.position + (17 if v2 else 12), path="crc", file=uri)
        if opts.failfast:
            raise err
        crc_error = str(err)
    if v2 and not rows.need_records and batch.records_count == batch.last_offset_delta + 1:
        first = batch.base_offset if lo is None else max(lo, batch.base_offset)
        last = batch.last_offset if hi is None else min(hi - 1, batch.last_offset)
        rows.add_offsets(batch, first, last, crc_ok, crc_error)
        return None
    try:
        records = batch.records()
    except DecodeError as e:
        if opts.failfast:
            raise e.at(file=e.file or uri) from None
        rows.add_error(batch.position, e, batch)
        return None
    if (lo is not None and records and records[0].offset < lo) or \
            (hi is not None and records and records[-1].offset >= hi):
        records = [r for r in records if (lo is None or r.offset >= lo) and (hi is None or r.offset < hi)]
    if records:
        rows.add_records(batch, records, crc_ok, crc_error)
    if not v2 and hi is not None and records and records[-1].offset >= hi - 1:
        return False
    return None


def _is_aborted(batch: RecordBatch, aborted: dict[int, list[tuple[int, int]]]) -> bool:
    return any(first <= batch.base_offset <= last for first, last in aborted.get(batch.producer_id, ()))
