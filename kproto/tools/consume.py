"""``kproto consume``: kafka-console-consumer.sh (ConsoleConsumer, trunk 1eb76443)
over kproto's own client, plus kcat/rpk ``--format``, ``--json``, time ranges,
filters, and two offline sources: a data directory (``--log-dir``) and a
packet capture (``--capture``).

    kproto consume --bootstrap-server H:P --topic orders --from-beginning \\
        --property print.key=true --max-messages 10
    kproto consume --bootstrap-server H:P --topic orders --json -e | \\
        kproto produce --bootstrap-server H:P --topic copy --json

Output is DefaultMessageFormatter's; ``Processed a total of N messages`` ends
on stderr, as Kafka's does. Differences from Kafka: ``--group`` does not join
the group: the partitions are assigned directly, start at the group's
committed offsets and the positions reached are committed at the end (as a
simple, generation -1 committer); ``-e``/``--exit-at-end`` (kcat's) stops
each partition at its high watermark (last stable offset under
read_committed). ``--key-format/--value-format avro|protobuf|json-schema`` with
``--schema-registry URL`` decode Confluent's wire format (kproto.tools.schema_registry);
the filters still match the bytes as stored."""

from __future__ import annotations

import re
import sys
import time
from datetime import datetime, timezone
from typing import Iterator

import click

from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help
from kproto.tools.schema_registry import FORMATS, serdes

EARLIEST, LATEST = -2, -1


def parse_time(text: str, flag: str) -> int:
    """Epoch ms, or ISO 8601 (UTC when no zone is given) -> epoch ms."""
    if re.fullmatch(r"-?\d+", text.strip()):
        return int(text)
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageProblem(f"{flag}: {text!r} is neither epoch milliseconds nor ISO 8601") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def parse_properties_args(values: tuple[str, ...], flag: str) -> dict[str, str]:
    out = {}
    for v in values:
        k, sep, val = v.partition("=")
        if not sep or not k:
            raise UsageProblem(f"Invalid {flag} {v!r}: expected key=value")
        out[k] = val
    return out


class Filters:
    """--header-filter k=v (each must be present), --key-filter / --value-filter (re.search on bytes)."""

    def __init__(self, headers: tuple[str, ...], key: str | None, value: str | None) -> None:
        self.headers = []
        for h in headers:
            k, sep, v = h.partition("=")
            if not sep:
                raise UsageProblem(f"--header-filter {h!r}: expected key=value")
            self.headers.append((k, v.encode()))
        try:
            self.key = re.compile(key.encode()) if key is not None else None
            self.value = re.compile(value.encode()) if value is not None else None
        except re.error as e:
            raise UsageProblem(f"invalid filter regex: {e}") from None
        self.active = bool(self.headers or self.key or self.value)

    def match(self, r) -> bool:
        if self.key is not None and (r.key is None or not self.key.search(r.key)):
            return False
        if self.value is not None and (r.value is None or not self.value.search(r.value)):
            return False
        return all((k, v) in r.headers for k, v in self.headers)


def _formatter(props: dict[str, str], formatter: str | None, fmt: str | None, as_json: bool):
    from kproto.errors import UsageError
    from kproto.tools import console_format as F
    if sum(x is not None and x is not False for x in (formatter, fmt, as_json or None)) > 1:
        raise UsageProblem("--formatter, --format and --json cannot be used together")
    try:
        if as_json:
            return F.json_formatter
        if fmt is not None:
            return F.format_string_formatter(fmt)
        if formatter is None or formatter in F.DEFAULT_FORMATTERS:
            return F.default_formatter(props)
        if formatter in F.NOOP_FORMATTERS:
            return F.noop_formatter
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    raise UsageProblem(f"unknown formatter {formatter} (kproto has DefaultMessageFormatter and NoOpMessageFormatter)")


# --- sources -------------------------------------------------------------------------------

class BrokerSource:
    def __init__(self, bootstrap: str, config: dict[str, str]) -> None:
        from kproto.client.data import DataClient
        from kproto.client.transport import BrokerClient
        self.data = DataClient(BrokerClient(bootstrap, config=config))
        self.live = True

    def partitions(self, topic: str | None, include: str | None) -> list[tuple[str, int]]:
        from kproto.errors import ErrorCode, error_for
        from kproto.common import is_internal
        md = self.data.refresh(None if topic is None else [topic])
        out = []
        for t in md.topics.values():
            if include is not None and (not re.fullmatch(include, t.name) or is_internal(t.name)):
                continue
            if t.error != ErrorCode.NONE:
                raise error_for(t.error, f"topic {t.name}: {t.error.name}")
            out += [(t.name, p.partition) for p in t.partitions]
        return sorted(out)

    def offsets_for(self, tps, timestamp: int, isolation_level: int) -> dict:
        listed = self.data.admin.list_offsets({tp: timestamp for tp in tps}, isolation_level=isolation_level)
        for tp, lo in listed.items():
            if lo.error:
                from kproto.errors import error_for
                raise error_for(lo.error, f"ListOffsets {tp[0]}-{tp[1]}: {lo.error.name}")
        return {tp: lo.offset for tp, lo in listed.items()}

    def fetch(self, positions, isolation_level: int):
        return self.data.fetch(positions, isolation_level=isolation_level)

    def committed(self, group: str, tps) -> dict:
        return {tp: o.offset for tp, o in self.data.admin.offset_fetch(group, tps).items() if o.offset >= 0}

    def commit(self, group: str, positions) -> None:
        from kproto.client.admin import OffsetAndMetadata
        errors = self.data.admin.offset_commit(group, {tp: OffsetAndMetadata(o) for tp, o in positions.items()})
        bad = {tp: e for tp, e in errors.items() if e}
        if bad:
            (t, p), e = next(iter(bad.items()))
            raise click.ClickException(f"committing offsets of group {group} failed: {t}-{p}: {e.name}")

    def close(self) -> None:
        self.data.close()
        self.data.client.close()


class LogDirSource:
    """A Kafka or kproto data directory, read offline through kproto's log:
    offsets by time from the time indexes, read_committed from the .txnindex."""

    def __init__(self, log_dir: str) -> None:
        from pathlib import Path
        self.root = Path(log_dir)
        if not self.root.is_dir():
            raise click.ClickException(f"{log_dir}: not a directory")
        self.logs = {}
        self.live = False

    def _log(self, tp):
        if tp not in self.logs:
            from kproto.log import UnifiedLog
            self.logs[tp] = UnifiedLog.open(self.root / f"{tp[0]}-{tp[1]}")
        return self.logs[tp]

    def partitions(self, topic: str | None, include: str | None) -> list[tuple[str, int]]:
        from kproto.log.log import parse_topic_partition
        out = []
        for d in self.root.iterdir():
            if not d.is_dir() or "-" not in d.name or d.name.endswith(("-delete", "-future", "-stray")):
                continue
            try:
                t, p = parse_topic_partition(d.name)
            except ValueError:
                continue
            if (topic is not None and t == topic) or (include is not None and re.fullmatch(include, t)):
                out.append((t, p))
        if topic is not None and not out:
            raise click.ClickException(f"no partition of topic {topic} in {self.root}")
        return sorted(out)

    def offsets_for(self, tps, timestamp: int, isolation_level: int) -> dict:
        out = {}
        for tp in tps:
            log = self._log(tp)
            if timestamp == LATEST:
                out[tp] = log.last_stable_offset if isolation_level else log.log_end_offset
                continue
            found = log.offset_for_timestamp(timestamp)
            out[tp] = -1 if found is None else found.offset
        return out

    def fetch(self, positions, isolation_level: int):
        from kproto.client.data import FetchedPartition
        from kproto.errors import ErrorCode
        out = {}
        for tp, offset in positions.items():
            log = self._log(tp)
            upper = log.last_stable_offset if isolation_level else log.log_end_offset
            data = log.read(offset, 1 << 20, max_offset=upper).read() if offset < upper else b""
            aborted = ()
            if isolation_level and data:
                aborted = tuple((a.producer_id, a.first_offset)
                                for a in log.collect_aborted_transactions(offset, upper))
            out[tp] = FetchedPartition(ErrorCode.NONE, log.log_end_offset, log.last_stable_offset,
                                       log.log_start_offset, aborted, data)
        return out

    def close(self) -> None:
        for log in self.logs.values():
            log.close()


# --- the loop ------------------------------------------------------------------------------

class Consumption:
    def __init__(self, source, positions: dict, ends: dict, *, isolation_level: int, exit_at_end: bool,
                 max_messages: int, timeout_ms: int | None, filters: Filters) -> None:
        self.source, self.positions, self.ends = source, positions, ends
        self.isolation_level, self.exit_at_end = isolation_level, exit_at_end
        self.max_messages, self.timeout_ms, self.filters = max_messages, timeout_ms, filters
        self.count = 0

    def chunks(self, *, bare: bool = False) -> Iterator[tuple[str, int, list, object]]:
        """(topic, partition, records, partition state) per partition of each Fetch answer:
        the caller formats and writes a chunk at once (a write per record is most of the
        time of a consume to a pipe, and all of it when stdout is unbuffered). ``bare``:
        ``Record``s rather than ``ConsumedRecord``s (a formatter of values only)."""
        from kproto.client.data import consumed_records
        from kproto.errors import ErrorCode, error_for
        from kproto.records import iter_batches
        from kproto.tools.console_format import PartitionState
        states = {tp: PartitionState() for tp in self.positions}
        active = {tp for tp in self.positions if not (tp in self.ends and self.positions[tp] >= self.ends[tp])}
        last_record = time.monotonic()
        read_committed = bool(self.isolation_level)
        filtering = self.filters.active
        record = (lambda r: r) if bare else (lambda cr: cr.record)  # noqa: E731
        while active:
            fetched = self.source.fetch({tp: self.positions[tp] for tp in sorted(active)}, self.isolation_level)
            got = False
            for tp in sorted(fetched):
                part = fetched[tp]
                if part.error != ErrorCode.NONE:
                    raise error_for(part.error, f"fetching {tp[0]}-{tp[1]} at offset {self.positions[tp]}: "
                                                f"{part.error.name}")
                st = states[tp]
                st.log_start_offset, st.last_stable_offset, st.high_watermark = \
                    part.log_start_offset, part.last_stable_offset, part.high_watermark
                end = self.ends.get(tp)
                rows = list(consumed_records(part.records, self.positions[tp], part.aborted,
                                             read_committed=read_committed, wrap=not bare))
                if end is not None and rows and record(rows[-1]).offset >= end:
                    rows = [cr for cr in rows if record(cr).offset < end]
                if rows:
                    self.positions[tp] = record(rows[-1]).offset + 1
                if filtering:
                    rows = [cr for cr in rows if self.filters.match(record(cr))]
                if 0 <= self.max_messages and self.count + len(rows) >= self.max_messages:
                    rows = rows[:self.max_messages - self.count]
                    self.count += len(rows)
                    if rows:        # what a --group commits: just past the last record printed
                        self.positions[tp] = record(rows[-1]).offset + 1
                        yield tp[0], tp[1], rows, st
                    return
                if rows:
                    got = True
                    self.count += len(rows)
                    yield tp[0], tp[1], rows, st
                # past control batches and aborted data: the next batch's offset
                for batch in iter_batches(part.records, allow_incomplete=True):
                    nxt = batch.next_offset
                    if nxt > self.positions[tp] and (end is None or nxt <= end):
                        self.positions[tp] = nxt
                upto = part.last_stable_offset if read_committed and part.last_stable_offset >= 0 \
                    else part.high_watermark
                if end is not None and self.positions[tp] >= end:
                    active.discard(tp)
                elif (self.exit_at_end or not self.source.live) and self.positions[tp] >= upto:
                    active.discard(tp)
            if got:
                last_record = time.monotonic()
            elif self.timeout_ms is not None and (time.monotonic() - last_record) * 1000 > self.timeout_ms:
                return


@click.command("consume", cls=OneLineCommand, epilog=exit_status_help(
    "error (broker, network, bad data)", partial=None), context_settings={"show_default": True})
@click.option("--bootstrap-server", help="The server(s) to connect to (HOST:PORT,...).")
@click.option("--log-dir", type=click.Path(), help="Read a Kafka/kproto data directory offline instead of a broker.")
@click.option("--capture", type=click.Path(), help="Read the records of the Produce and Fetch exchanges of a pcap/pcapng.")
@click.option("--topic", help="The topic to consume on.")
@click.option("--include", help="Regular expression of the topics to consume (internal topics excluded).")
@click.option("--partition", type=int, help="The partition to consume from (default: all).")
@click.option("--offset", help="earliest, latest or a non-negative offset (needs --partition).")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset when no committed one.")
@click.option("--max-messages", type=int, default=-1, help="Stop after this many records (-1: no limit).")
@click.option("--timeout-ms", type=int, help="Stop when no record arrived for this long.")
@click.option("-e", "--exit-at-end", is_flag=True, help="Stop each partition at its end (kcat -e).")
@click.option("--group", help="Start at this group's committed offsets and commit the positions reached.")
@click.option("--isolation-level", type=click.Choice(["read_uncommitted", "read_committed"]),
              default="read_uncommitted")
@click.option("--formatter-property", "--property", "properties", multiple=True,
              help="Formatter property key=value (print.key=true ...).")
@click.option("--formatter", help="Formatter class (DefaultMessageFormatter or NoOpMessageFormatter).")
@click.option("--format", "fmt", help="kcat/rpk format string, e.g. '%t %p %o %k %s\\n'.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per record (what produce --json reads).")
@click.option("--start-time", help="Start at the first record at or after this time (ISO 8601 or epoch ms).")
@click.option("--end-time", help="Stop before the first record at or after this time (ISO 8601 or epoch ms).")
@click.option("--header-filter", multiple=True, help="Only records with this header key=value (repeatable).")
@click.option("--key-filter", help="Only records whose key matches this regex.")
@click.option("--value-filter", help="Only records whose value matches this regex.")
@click.option("--consumer-property", multiple=True, help="Client property key=value.")
@click.option("--consumer.config", "consumer_config", type=click.Path(), help="Client properties file.")
@click.option("--key-format", type=click.Choice(FORMATS), default="raw",
              help="Decode keys in Confluent's wire format through --schema-registry.")
@click.option("--value-format", type=click.Choice(FORMATS), default="raw",
              help="Decode values in Confluent's wire format through --schema-registry.")
@click.option("--schema-registry", help="The Schema Registry's URL (Confluent's REST API).")
def consume(bootstrap_server, log_dir, capture, topic, include, partition, offset, from_beginning, max_messages,
            timeout_ms, exit_at_end, group, isolation_level, properties, formatter, fmt, as_json, start_time,
            end_time, header_filter, key_filter, value_filter, consumer_property, consumer_config,
            key_format, value_format, schema_registry) -> None:
    """Print the records of a topic like kafka-console-consumer.sh."""
    if sum(x is not None for x in (bootstrap_server, log_dir, capture)) != 1:
        raise UsageProblem("Exactly one of --bootstrap-server, --log-dir, --capture is required.")
    if capture is None and (topic is None) == (include is None):
        raise UsageProblem("Exactly one of --include/--topic is required.")
    if partition is not None and topic is None:
        raise UsageProblem("The topic is required when partition is specified.")
    if from_beginning and offset is not None:
        raise UsageProblem("Options from-beginning and offset cannot be specified together.")
    if offset is not None and partition is None:
        raise UsageProblem("The partition is required when offset is specified.")
    if group is not None and partition is not None:
        raise UsageProblem("Options group and partition cannot be specified together.")
    if group is not None and bootstrap_server is None:
        raise UsageProblem("--group needs --bootstrap-server.")
    if include is not None:
        try:
            re.compile(include)
        except re.error as e:
            raise UsageProblem(f"--include: invalid regular expression: {e}") from None
    start_offset = None
    if offset is not None:
        if offset in ("earliest", "latest"):
            start_offset = EARLIEST if offset == "earliest" else LATEST
        elif offset.isdigit():
            start_offset = int(offset)
        else:
            raise UsageProblem(f"The provided offset value '{offset}' is incorrect. Valid values are "
                               "'earliest', 'latest', or a non-negative long.")
    if start_time is not None and (offset is not None or from_beginning):
        raise UsageProblem("--start-time cannot be used with --offset or --from-beginning.")
    start_ms = parse_time(start_time, "--start-time") if start_time is not None else None
    end_ms = parse_time(end_time, "--end-time") if end_time is not None else None
    props = parse_properties_args(properties, "--property")
    out_format = _formatter(props, formatter, fmt, as_json)
    key_serde, value_serde = serdes(schema_registry, key_format, value_format, UsageProblem)
    if key_serde or value_serde:
        from kproto.tools.schema_registry import decoding_formatter
        out_format = decoding_formatter(out_format, as_json, key_serde, value_serde)
    filters = Filters(header_filter, key_filter, value_filter)
    isolation = 1 if isolation_level == "read_committed" else 0
    out = sys.stdout.buffer
    count = 0
    try:
        if capture is not None:
            from kproto.tools.consume_capture import capture_records
            for t, p, cr, st in capture_records(capture, topic, include, partition, start_ms, end_ms, filters):
                out.write(out_format(t, p, cr, st))
                count += 1
                if 0 <= max_messages <= count:
                    break
        else:
            count = _consume(bootstrap_server, log_dir, topic, include, partition, start_offset, from_beginning,
                             max_messages, timeout_ms, exit_at_end, group, isolation, start_ms, end_ms, filters,
                             out_format, out, consumer_property, consumer_config)
        out.flush()
    except BrokenPipeError:
        click.echo("Unable to write to standard out, closing consumer.", err=True)
        sys.stderr.write(f"Processed a total of {count} messages\n")
        sys.exit(ExitStatus.OK)
    sys.stderr.write(f"Processed a total of {count} messages\n")


def _consume(bootstrap, log_dir, topic, include, partition, start_offset, from_beginning, max_messages,
             timeout_ms, exit_at_end, group, isolation, start_ms, end_ms, filters, out_format, out,
             consumer_property, consumer_config) -> int:
    if bootstrap is not None:
        from kproto.client.transport import load_client_properties
        config = load_client_properties(consumer_config) if consumer_config else {}
        config.update(parse_properties_args(consumer_property, "--consumer-property"))
        source = BrokerSource(bootstrap, config)
    else:
        source = LogDirSource(log_dir)
    consumption = None
    try:
        tps = source.partitions(topic, include)
        if partition is not None:
            if (topic, partition) not in tps:
                raise click.ClickException(f"topic {topic} has no partition {partition}")
            tps = [(topic, partition)]
        positions: dict = {}
        committed = source.committed(group, tps) if group is not None else {}
        if start_ms is not None:
            found = source.offsets_for(tps, start_ms, isolation)
            latest = source.offsets_for(tps, LATEST, isolation)
            positions = {tp: found[tp] if found[tp] >= 0 else latest[tp] for tp in tps}
        elif start_offset is not None and start_offset >= 0:
            positions = {tp: start_offset for tp in tps}
        else:
            spec = start_offset if start_offset is not None else (
                EARLIEST if from_beginning or not source.live else LATEST)
            missing = [tp for tp in tps if tp not in committed]
            positions = dict(committed)
            if missing:
                positions.update(source.offsets_for(missing, spec, isolation))
        ends = {}
        if end_ms is not None:
            found = source.offsets_for(tps, end_ms, isolation)
            latest = source.offsets_for(tps, LATEST, isolation)
            ends = {tp: found[tp] if found[tp] >= 0 else latest[tp] for tp in tps}
        consumption = Consumption(source, positions, ends, isolation_level=isolation, exit_at_end=exit_at_end,
                                  max_messages=max_messages, timeout_ms=timeout_ms, filters=filters)
        values = getattr(out_format, "values", None)
        if values is not None:
            for _, _, rows, _ in consumption.chunks(bare=True):
                out.write(values(rows))
        else:
            for t, p, rows, st in consumption.chunks():
                out.write(b"".join([out_format(t, p, cr, st) for cr in rows]))
        if group is not None:
            source.commit(group, consumption.positions)
        return consumption.count
    except KeyboardInterrupt:
        out.flush()
        sys.stderr.write(f"Processed a total of {consumption.count if consumption else 0} messages\n")
        raise
    finally:
        source.close()
