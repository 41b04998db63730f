"""``kproto dump-log``: Kafka's ``kafka-dump-log.sh`` (DumpLogSegments), line for line.

The same lines as Kafka's tool (diffed against Kafka 4.4 by
tests/parity/test_kafka_ref_dump_log.py); where it differs (it goes on past input Kafka
throws on, one error line per problem, exit 4; named key/value decoders) and what
it adds (``--json``, ``--explain``) is docs/dump-log.md. Segments are read
through mmap and printed as they are read, so memory stays flat whatever the
file size.
"""

from __future__ import annotations

import mmap
import os
import re
import sys
from contextlib import contextmanager

import click

from kproto import fastpath
from kproto.errors import (
    CorruptRecordError, DecodeError, IncompleteBatchError, KprotoError, UsageError,
)
from kproto.jvm import java_string_hash, scala_hash_order
from kproto.log.index import offset_index_lookup
from kproto.records import control_record, iter_batches
from kproto.schemas import records as S
from kproto.schemas.index import (
    OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE, OffsetIndexEntry, TimeIndexEntry,
)
from kproto.tools.dump_log import lines as L
from kproto.tools import render as R
from kproto.tools.dump_log.decoders import (
    cluster_metadata_record, consumer_offsets_record, remote_log_metadata_record, share_group_state_record,
    transaction_log_record,
)
from kproto.tools.dump_log.txn import dump_producer_snapshot, dump_txn_index
from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

__all__ = ["dump_log"]

INT_MAX = 2**31 - 1
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
PROGRESS_MIN_SIZE = 64 << 20      # progress bar on a terminal for files above this
RELEASE_EVERY = 16 << 20          # drop printed pages of the mapping this often
HEADER_UP_TO_MAGIC = S.MAGIC_OFFSET + 1   # 17: FileLogInputStream's quiet-stop threshold
# Index entries are read with struct layouts derived from the schemas.
_OFFSET_ENTRY, _ = fastpath.header_struct(OffsetIndexEntry)   # relative_offset, position
_TIME_ENTRY, _ = fastpath.header_struct(TimeIndexEntry)       # timestamp, relative_offset
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_BASE_OFFSET = re.compile(r"^[+-]?\d+$")


# --- the run --------------------------------------------------------------------------------

class _ScalaMap:
    """A Scala mutable.HashMap[String, _] as Kafka's summaries use it: every
    put is remembered, so the iteration order can be reproduced."""

    def __init__(self) -> None:
        self.puts: list[str] = []
        self.values: dict[str, list] = {}

    def prepend(self, key: str, pair) -> None:       # Scala `list ::= pair; map.put(...)`
        self.values.setdefault(key, []).insert(0, pair)
        self.puts.append(key)

    def append(self, key: str, pair) -> None:        # ArrayBuffer += pair, put once
        if key not in self.values:
            self.values[key] = []
            self.puts.append(key)
        self.values[key].append(pair)

    def items(self):
        return [(k, self.values[k]) for k in scala_hash_order(self.puts, java_string_hash)]


class _Run:
    def __init__(self, opts: dict) -> None:
        self.opts = opts
        self.out = R.LineWriter()
        self.status = ExitStatus.OK
        self.failed = 0
        self.index_mismatches = _ScalaMap()
        self.time_mismatches = _ScalaMap()
        self.out_of_order = _ScalaMap()
        self.not_found = _ScalaMap()
        self.gaps = _ScalaMap()
        self.as_json = opts["json"]

    # -- reporting -----------------------------------------------------------------

    def error(self, e: Exception, shown: str) -> None:
        if isinstance(e, DecodeError):
            if e.file is None:
                e.file = shown
            self.status = max(self.status, ExitStatus.CORRUPT)
            msg = str(e)
        else:
            self.failed += 1
            self.status = max(self.status, ExitStatus.ERROR)
            msg = str(e) if isinstance(e, (KprotoError, OSError)) else f"{type(e).__name__}: {e}"
        self.out.flush()
        R.err(f"kproto: error: {msg}")

    def header(self, text: str | None, **fields) -> None:
        """A non-batch line: Kafka's text, or under --json an object with ``fields``."""
        if self.as_json:
            self.out.append(R.jackson_json(fields))
        elif text is not None:
            self.out.append(text)

    # -- files ---------------------------------------------------------------------

    def run(self, files: list[str]) -> int:
        for arg in files:
            shown = R.java_file(arg)
            name = os.path.basename(shown)
            suffix = name[name.rfind("."):] if "." in name else ""
            handler = {".log": self.dump_log, ".checkpoint": self.dump_log, ".index": self.dump_index,
                       ".timeindex": self.dump_time_index,
                       ".txnindex": lambda a, s, _: dump_txn_index(self, a, s),
                       ".snapshot": lambda a, s, _: dump_producer_snapshot(self, a, s)}.get(suffix)
            if not self.as_json:
                self.out.append(f"Dumping {shown}")
            if handler is None:
                self.out.flush()
                R.err(f"Ignoring unknown file {shown}")
                continue
            try:
                handler(arg, shown, name)
            except BrokenPipeError:
                raise
            except (KprotoError, OSError) as e:
                self.error(e, shown)
        self.out.flush()
        lines = L.summary_lines(self.index_mismatches.items(), self.time_mismatches.items(),
                                self.out_of_order.items(), self.not_found.items(), self.gaps.items())
        if lines:
            R.err("\n".join(lines))
            if self.opts["verify_index_only"] and (self.index_mismatches.puts or self.time_mismatches.puts
                                                   or self.out_of_order.puts or self.not_found.puts):
                self.status = max(self.status, ExitStatus.CORRUPT)
        if self.status == ExitStatus.ERROR and 0 < self.failed < len(files):
            return ExitStatus.PARTIAL
        return int(self.status)

    # -- .log ------------------------------------------------------------------------

    def dump_log(self, arg: str, shown: str, name: str) -> None:
        if name.endswith(".log"):
            base = _base_offset(name, shown)
            self.header(f"Log starting offset: {base}", file=shown, logStartingOffset=base)
        elif name == "bootstrap.checkpoint":
            self.header("KRaft bootstrap snapshot", file=shown, kraftBootstrapSnapshot=True)
        else:
            m = _SNAPSHOT_NAME.match(name)
            if not m:
                raise UsageError(f"{shown}: not a snapshot file name (<offset>-<epoch>.checkpoint)")
            offset, epoch = int(m.group(1)), int(m.group(2))
            self.header(f"Snapshot end offset: {offset}, epoch: {epoch}", file=shown,
                        snapshotEndOffset=offset, epoch=epoch)
        with _mapped(arg) as (mm, mv):
            self._walk_log(mm, mv, shown, name)

    def _walk_log(self, mm, mv, shown: str, name: str) -> None:
        out = self.out
        max_bytes = self.opts["max_bytes"]
        limit = min(len(mv), max_bytes)
        view = mv[:limit]
        printer = self._printer()
        progress = _progress(limit, shown)
        tick = RELEASE_EVERY if progress is None else min(RELEASE_EVERY, 8 << 20)
        next_tick = tick
        released = 0
        batches = iter_batches(view, verify_crc=False)
        batch = None
        valid_bytes = 0
        try:
            while True:
                try:
                    batch = next(batches)
                except (StopIteration, IncompleteBatchError):
                    break
                except CorruptRecordError as e:
                    if not _quiet_tail(view, valid_bytes, e):
                        self.error(e, shown)
                        return
                    break
                if batch.position >= next_tick:
                    next_tick = batch.position + tick
                    if progress is not None:
                        progress.update(batch.position)
                    released = _release(mm, released, batch.position)
                problem = self._batch(batch, printer)
                if problem is not None:
                    if problem.position is None:
                        problem.position = batch.position
                    self.error(problem, shown)
                valid_bytes += batch.size
                out.maybe_flush()
            trailing = limit - valid_bytes
            if trailing > 0 and max_bytes == INT_MAX:
                self.header(f"Found {trailing} invalid bytes at the end of {name}",
                            file=shown, invalidBytes=trailing)
        finally:
            batches.close()
            batch = view = None
            if progress is not None:
                progress.close()
            out.flush()
            for a, b in printer.gaps:
                self.gaps.prepend(R.java_absolute_path(shown), (a, b))

    def _batch(self, batch, printer: L.RecordPrinter) -> DecodeError | None:
        """Print one batch (and its records, or its explanation); return the
        problem found in it, if any."""
        position = batch.position
        v2 = batch.magic == 2
        try:
            codec = batch.compression.name_lower
        except CorruptRecordError as e:
            return e.at(position=position + S.ATTRIBUTES_OFFSET[batch.magic])
        valid = batch.is_valid()
        problem = None if valid else CorruptRecordError(
            f"crc mismatch (stored {batch.crc}, computed {batch.compute_crc()})",
            position=position + S.CRC_OFFSET[batch.magic], path="crc")
        deep, append = self.opts["deep"], self.out.append
        try:
            if self.as_json:
                d = L.batch_json(batch, position, codec, valid)
                try:
                    if deep:
                        d["records"] = printer.json(batch, batch.records(), valid)
                finally:
                    append(R.jackson_json(d))
            elif self.opts["explain"]:
                from kproto.tools.dump_log.explain import explain
                append(L.batch_line(batch, position, codec, valid))
                lines, error = explain(S.RecordBatch if v2 else S.LegacyMessage, batch.data,
                                       position=position)
                self.out.lines.extend(lines)
                if error is not None:
                    raise error
            else:
                append(L.batch_line(batch, position, codec, valid))
                if deep:
                    printer.lines(append, batch, batch.records(), valid)
        except DecodeError as e:
            return problem or e
        return problem

    def _printer(self) -> L.RecordPrinter:
        opts = self.opts
        parser = None
        if opts["offsets_decoder"]:
            parser = consumer_offsets_record
        elif opts["transaction_log_decoder"]:
            parser = transaction_log_record
        elif opts["cluster_metadata_decoder"]:
            parser = cluster_metadata_record
        elif opts["remote_log_metadata_decoder"]:
            parser = remote_log_metadata_record
        elif opts["share_group_state_decoder"]:
            parser = share_group_state_record
        if parser is not None:
            parser = (R.json_parser if self.as_json else R.text_parser)(parser)
        return L.RecordPrinter(
            data=opts["print_data"], skip_metadata=opts["skip_record_metadata"],
            kdec=R.plain_decoder(opts["key_decoder"] or "utf8", self.as_json),
            vdec=R.plain_decoder(opts["value_decoder"] or "utf8", self.as_json),
            parser=parser, control_record=control_record, block=None if self.as_json else self.out.block)

    # -- .index / .timeindex -------------------------------------------------------------

    def dump_index(self, arg: str, shown: str, name: str) -> None:
        opts = self.opts
        base = _base_offset(name, shown)
        abs_path = R.java_absolute_path(arg)
        log_path = os.path.join(os.path.dirname(abs_path), name.split(".")[0] + ".log")
        with _mapped(log_path) as (_, log), _mapped(arg) as (_, idx):
            entries = len(idx) // OFFSET_INDEX_ENTRY_SIZE
            if entries == 0:
                self.header(f"{shown} is empty.", file=shown, empty=True)
                return
            if opts["index_sanity_check"]:
                last = base + _OFFSET_ENTRY.unpack_from(idx, (entries - 1) * OFFSET_INDEX_ENTRY_SIZE)[0]
                if last < base:
                    raise CorruptRecordError(
                        f"Corrupt index found, index file {abs_path} has non-zero size but the last "
                        f"offset is {last} which is less than the base offset {base}",
                        position=(entries - 1) * OFFSET_INDEX_ENTRY_SIZE)
                if len(idx) % OFFSET_INDEX_ENTRY_SIZE:
                    raise CorruptRecordError(
                        f"Index file {abs_path} is corrupt, found {len(idx)} bytes which is neither "
                        f"positive nor a multiple of {OFFSET_INDEX_ENTRY_SIZE}")
                self.header(f"{shown} passed sanity check.", file=shown, sanityCheck="passed")
                return
            self.header(None, file=shown)
            append = self.out.append
            for i in range(entries):
                rel, position = _OFFSET_ENTRY.unpack_from(idx, i * OFFSET_INDEX_ENTRY_SIZE)
                offset = base + rel
                if offset == base and i > 0:
                    break     # the zero-filled tail of a preallocated index
                last = _last_offset_at(log, position, opts["max_message_size"])
                if last is None:
                    self.error(CorruptRecordError(
                        f"no complete batch at log position {position} within --max-message-size "
                        f"{opts['max_message_size']}", position=i * OFFSET_INDEX_ENTRY_SIZE, path=f"entries[{i}]"), shown)
                elif last != offset:
                    self.index_mismatches.prepend(abs_path, (offset, last))
                if not opts["verify_index_only"]:
                    append(R.jackson_json({"offset": offset, "position": position}) if self.as_json
                           else L.index_line(offset, position))
                self.out.maybe_flush()

    def dump_time_index(self, arg: str, shown: str, name: str) -> None:
        opts = self.opts
        base = _base_offset(name, shown)
        abs_path = R.java_absolute_path(arg)
        stem = os.path.join(os.path.dirname(abs_path), name.split(".")[0])
        with _mapped(stem + ".log") as (_, log), _mapped(stem + ".index") as (_, idx), \
                _mapped(arg) as (_, tidx):
            entries = len(tidx) // TIME_INDEX_ENTRY_SIZE
            if opts["index_sanity_check"]:
                _time_index_sanity(tidx, entries, base, abs_path)
                self.header(f"{shown} passed sanity check.", file=shown, sanityCheck="passed")
                return
            self.header(None, file=shown)
            append = self.out.append
            prev = -1
            for i in range(entries):
                timestamp, rel = _TIME_ENTRY.unpack_from(tidx, i * TIME_INDEX_ENTRY_SIZE)
                offset = base + rel
                if offset == base and i > 0:
                    break
                position = _index_lookup(idx, base, offset)
                try:
                    batch = _first_batch_reaching(log, position, offset)
                    if batch is None:
                        self.not_found.append(abs_path, (offset, -1))
                    elif batch.last_offset != offset:
                        self.not_found.append(abs_path, (offset, batch.last_offset))
                    else:
                        max_ts = max([r.timestamp for r in batch.records()], default=-1)
                        max_ts = max(max_ts, -1)
                        if max_ts != timestamp:
                            self.time_mismatches.append(abs_path, (timestamp, max_ts))
                        if prev >= timestamp:
                            self.out_of_order.append(abs_path, (timestamp, prev))
                except DecodeError as e:
                    self.error(e.at(file=R.java_file(stem + ".log")), shown)
                if not opts["verify_index_only"]:
                    append(R.jackson_json({"timestamp": timestamp, "offset": offset}) if self.as_json
                           else L.time_index_line(timestamp, offset))
                prev = timestamp
                self.out.maybe_flush()


# --- helpers --------------------------------------------------------------------------------

@contextmanager
def _mapped(path: str):
    """The file as (mmap or None, memoryview); released on exit."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            yield None, memoryview(b"")
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        mv = memoryview(mm)
        try:
            yield mm, mv
        finally:
            mv.release()
            try:
                mm.close()
            except BufferError:   # a slice still referenced somewhere: the GC closes it
                pass


def _release(mm, released: int, position: int) -> int:
    """Let the kernel drop the pages already printed (MADV_DONTNEED on a
    read-only file mapping), so resident memory stays flat."""
    if mm is None or not hasattr(mm, "madvise"):
        return released
    upto = (position // mmap.PAGESIZE) * mmap.PAGESIZE
    if upto > released:
        try:
            mm.madvise(mmap.MADV_DONTNEED, released, upto - released)
        except (OSError, ValueError, AttributeError):
            return released
    return max(upto, released)


class _Progress:
    def __init__(self, total: int, label: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                            console=Console(stderr=True), transient=True,
                            redirect_stdout=False, redirect_stderr=False)
        self.task = self.bar.add_task(os.path.basename(label), total=total)
        self.bar.start()

    def update(self, done: int) -> None:
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        self.bar.stop()


def _progress(size: int, label: str) -> _Progress | None:
    """A bar on stderr for big files, when stderr is a terminal and stdout is
    not (a bar redrawn between the lines of a dump on the same terminal
    would garble both)."""
    if size <= PROGRESS_MIN_SIZE or not _isatty(sys.stderr) or _isatty(sys.stdout):
        return None
    return _Progress(size, label)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _base_offset(name: str, shown: str) -> int:
    head = name.split(".")[0]
    if not _BASE_OFFSET.match(head):
        raise UsageError(f"{shown}: the file name does not start with a base offset "
                         "(<20 digits>.log, .index, .timeindex)")
    return int(head)


def _all_zero(view, start: int, end: int) -> bool:
    step = 1 << 20
    zeros = bytes(min(step, max(end - start, 0)))
    for i in range(start, end, step):
        chunk = view[i:min(end, i + step)]
        if chunk != zeros[:len(chunk)]:
            return False
    return True


def _quiet_tail(view, valid_bytes: int, e: CorruptRecordError) -> bool:
    """Whether iteration stopping here is Kafka's quiet end (the tail then
    counts as invalid bytes) rather than corruption."""
    remaining = len(view) - valid_bytes
    if remaining <= HEADER_UP_TO_MAGIC:
        return True       # FileLogInputStream: position >= end - 17 ends the walk
    length = int.from_bytes(view[valid_bytes + S.LENGTH_OFFSET:valid_bytes + S.LOG_OVERHEAD], "big", signed=True)
    if e.path == "magic" and valid_bytes + S.LOG_OVERHEAD + length > len(view):
        return True       # Kafka checks the size against the end before the magic
    return e.path == "batch_length" and length < 14 and _all_zero(view, valid_bytes, len(view))


def _last_offset_at(log, position: int, max_size: int) -> int | None:
    """The last offset of the batch at ``position``, as Kafka's
    ``fileRecords.slice(position, maxMessageSize).batches.iterator.next``."""
    if position < 0 or position > len(log):
        return None
    try:
        for batch in iter_batches(log[position:position + max_size], verify_crc=False):
            return batch.last_offset
    except DecodeError:
        return None
    return None


def _first_batch_reaching(log, position: int, offset: int):
    """The first batch from ``position`` whose last offset is >= ``offset``."""
    if position < 0 or position > len(log):
        raise CorruptRecordError(f"indexed position {position} is past the end of the log",
                                 position=position)
    try:
        for batch in iter_batches(log[position:], verify_crc=False, position=position):
            if batch.last_offset >= offset:
                return batch
    except IncompleteBatchError:
        return None
    return None


def _index_lookup(idx, base: int, target: int) -> int:
    """OffsetIndex.lookup(target).position over every entry the file holds."""
    return offset_index_lookup(idx, len(idx) // OFFSET_INDEX_ENTRY_SIZE, base, target).position


def _time_index_sanity(tidx, entries: int, base: int, abs_path: str) -> None:
    """TimeIndex.sanityCheck @3.9."""
    if entries:
        last_ts, last_rel = _TIME_ENTRY.unpack_from(tidx, (entries - 1) * TIME_INDEX_ENTRY_SIZE)
        last_offset = base + last_rel
        first_ts = _TIME_ENTRY.unpack_from(tidx, 0)[0]
        where = (entries - 1) * TIME_INDEX_ENTRY_SIZE
        if last_ts < first_ts:
            raise CorruptRecordError(
                f"Corrupt time index found, time index file ({abs_path}) has non-zero size but the "
                f"last timestamp is {last_ts} which is less than the first timestamp {first_ts}",
                position=where)
        if last_offset < base:
            raise CorruptRecordError(
                f"Corrupt time index found, time index file ({abs_path}) has non-zero size but the "
                f"last offset is {last_offset} which is less than the first offset {base}",
                position=where)
    if len(tidx) % TIME_INDEX_ENTRY_SIZE:
        raise CorruptRecordError(
            f"Time index file {abs_path} is corrupt, found {len(tidx)} bytes which is neither "
            f"positive nor a multiple of {TIME_INDEX_ENTRY_SIZE}")


# --- the command ----------------------------------------------------------------------------

_DECODERS = click.Choice(["utf8", "hex", "base64", "json"])

HELP = """Dump log segments and index files like kafka-dump-log.sh.

\b
The text of Kafka 3.3-3.9's DumpLogSegments (Scala), line for line, for .log
and .checkpoint segments, .index and .timeindex files. Options behave as
Kafka's: --print-data-log implies --deep-iteration, and any decoder option
turns on --print-data-log. Where Kafka would stop with a stack trace, kproto
reports the problem in one line and goes on (exit 4).
"""

EPILOG = exit_status_help(
    "a file could not be read (missing, unsupported name or kind, a name without a base offset)",
    ok='everything read; also a short or zero-filled segment tail, which prints Kafka\'s "Found N invalid '
       'bytes at the end of <file>" line',
    partial="partial: some files could not be read, others were dumped",
    corrupt="corruption found (CRC mismatch, a bad record inside a complete batch, an index entry pointing "
            "nowhere; with --verify-index-only also any index mismatch): everything valid is printed, then "
            "one line per problem on stderr: kproto: error: <file> @ byte N: <field path>: <reason>")


@click.command("dump-log", cls=OneLineCommand, help=HELP, epilog=EPILOG,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--files", "files", multiple=True, metavar="FILE1,FILE2,...",
              help="REQUIRED: comma-separated data and index files to dump (repeatable).")
@click.option("--print-data-log", is_flag=True,
              help="Print record keys and payloads (implies --deep-iteration).")
@click.option("--deep-iteration", is_flag=True, help="Iterate records inside batches.")
@click.option("--verify-index-only", is_flag=True,
              help="Check .index/.timeindex entries against the log without printing them.")
@click.option("--index-sanity-check", is_flag=True,
              help="Run Kafka's index sanity check only and print whether it passed.")
@click.option("--max-message-size", type=click.IntRange(min=0), default=DEFAULT_MAX_MESSAGE_SIZE,
              show_default=True, help="Bytes read at each .index position.")
@click.option("--max-bytes", type=click.IntRange(min=0), default=INT_MAX, show_default=True,
              help="Read only the first N bytes of each .log (no invalid-bytes line then).")
@click.option("--offsets-decoder", is_flag=True,
              help="Decode __consumer_offsets records (Kafka 4.x JSON).")
@click.option("--transaction-log-decoder", is_flag=True,
              help="Decode __transaction_state records (Kafka 4.x JSON).")
@click.option("--cluster-metadata-decoder", is_flag=True,
              help="Decode KRaft __cluster_metadata records.")
@click.option("--remote-log-metadata-decoder", is_flag=True,
              help="Decode __remote_log_metadata records (TopicBasedRemoteLogMetadataManager).")
@click.option("--share-group-state-decoder", is_flag=True,
              help="Decode __share_group_state records (Kafka 4.x JSON).")
@click.option("--skip-record-metadata", is_flag=True,
              help="Print only keys and payloads on record lines.")
@click.option("--key-decoder", type=_DECODERS, is_flag=False, flag_value="utf8", default=None,
              help="How to print keys (utf8 if given without a value).")
@click.option("--value-decoder", type=_DECODERS, is_flag=False, flag_value="utf8", default=None,
              help="How to print payloads (utf8 if given without a value).")
@click.option("--json", "as_json", is_flag=True,
              help="JSON lines: one object per batch (records nested) or index entry.")
@click.option("--explain", is_flag=True,
              help="After each batch line, an annotated hex view of the batch, field by field.")
def dump_log(files, print_data_log, deep_iteration, verify_index_only, index_sanity_check,
             max_message_size, max_bytes, offsets_decoder, transaction_log_decoder,
             cluster_metadata_decoder, remote_log_metadata_decoder, share_group_state_decoder,
             skip_record_metadata, key_decoder, value_decoder, as_json, explain) -> None:
    if not files:                                           # CommandLineUtils.checkRequiredArgs
        raise UsageProblem('Missing required argument "[files]"')
    if as_json and explain:
        raise UsageProblem("--json and --explain cannot be combined")
    paths = [p for arg in files for p in arg.split(",") if p]
    print_data = (print_data_log or offsets_decoder or transaction_log_decoder or cluster_metadata_decoder
                  or remote_log_metadata_decoder or share_group_state_decoder
                  or key_decoder is not None or value_decoder is not None)
    opts = dict(print_data=print_data, deep=deep_iteration or print_data,
                verify_index_only=verify_index_only, index_sanity_check=index_sanity_check,
                max_message_size=max_message_size, max_bytes=max_bytes,
                offsets_decoder=offsets_decoder, transaction_log_decoder=transaction_log_decoder,
                cluster_metadata_decoder=cluster_metadata_decoder,
                remote_log_metadata_decoder=remote_log_metadata_decoder,
                share_group_state_decoder=share_group_state_decoder,
                skip_record_metadata=skip_record_metadata, key_decoder=key_decoder,
                value_decoder=value_decoder, json=as_json, explain=explain)
    try:
        status = _Run(opts).run(paths)
    except BrokenPipeError:
        # `kproto dump-log … | head`: the reader has gone; stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = ExitStatus.OK
    click.get_current_context().exit(status)
