"""``kproto producer-perf-test`` and ``kproto consumer-perf-test``:
kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh (Kafka 4.4's
org.apache.kafka.tools.ProducerPerformance and ConsumerPerformance) over
kproto's own client, with their flags and their output lines, so the parsers
of Kafka's system tests (kafkatest services/performance) read them.

    kproto producer-perf-test --bootstrap-server H:P --topic t --num-records 100000 \\
        --record-size 100 --throughput -1 --command-property acks=1
    kproto consumer-perf-test --bootstrap-server H:P --topic t --num-records 100000

Differences from Kafka's: the producer sends one Produce request at a time
(batches of ``batch.size`` per partition, a request when ``linger.ms`` passed
or every partition has a full batch; retriable errors sent again until
``delivery.timeout.ms``); transactions are refused. The consumer is a classic-group member of ``--group`` (kproto.client.group,
the range assignor): it starts at the group's committed offsets (else earliest,
``--from-latest``: latest) and commits its positions at the end, as Kafka's
consumer with enable.auto.commit does on close."""

from __future__ import annotations

import random
import re
import sys
import time

import click

from kproto.tools.main import OneLineCommand, UsageProblem, exit_status_help

MB = 1024 * 1024


def _props(values: tuple[str, ...], config_files: tuple[str | None, ...], flag: str) -> dict[str, str]:
    """Config files first, then ``k=v`` words (ProducerPerformance.readProps: the words win)."""
    from kproto.client.transport import load_client_properties
    out: dict[str, str] = {}
    for path in config_files:
        if path:
            out.update(load_client_properties(path))
    for v in values:
        for word in v.split():
            pieces = word.split("=")
            if len(pieces) != 2:
                raise UsageProblem(f"Invalid property: {word}")
            out[pieces[0]] = pieces[1]
    return out


def _bootstrap(given: str | None, props: dict[str, str]) -> str:
    bootstrap = given or props.get("bootstrap.servers")
    if not bootstrap:
        raise UsageProblem("--bootstrap-server or bootstrap.servers in the properties is required")
    return bootstrap


# --- producer ------------------------------------------------------------------------------

class Stats:
    """ProducerPerformance.Stats: totals, a latency sample (at most 500 000,
    every ``numRecords / min(numRecords, 500000)``-th), a window line every
    ``reporting_interval`` ms."""

    def __init__(self, num_records: int, reporting_interval: int, *, echo=None) -> None:
        self.start = self.window_start = _now_ms()
        self.sampling = num_records // min(num_records, 500_000)
        self.latencies: list[int] = []
        self.reporting_interval = reporting_interval
        self.iteration = self.count = self.bytes = self.total_latency = self.max_latency = 0
        self.window_count = self.window_bytes = self.window_total = self.window_max = 0
        self.echo = echo

    def record(self, latency: int, size: int, now: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency
        self.max_latency = max(self.max_latency, latency)
        self.window_count += 1
        self.window_bytes += size
        self.window_total += latency
        self.window_max = max(self.window_max, latency)
        if self.iteration % self.sampling == 0:
            self.latencies.append(latency)
        self.iteration += 1
        if self.echo is not None and now - self.window_start >= self.reporting_interval:
            elapsed = max(_now_ms() - self.window_start, 1)
            self.echo(f"{self.window_count} records sent, {1000.0 * self.window_count / elapsed:.1f} records/sec "
                      f"({1000.0 * self.window_bytes / elapsed / MB:.2f} MB/sec), "
                      f"{self.window_total / self.window_count:.1f} ms avg latency, "
                      f"{float(self.window_max):.1f} ms max latency.")
            self.window_start = _now_ms()
            self.window_count = self.window_bytes = self.window_total = self.window_max = 0

    def total_line(self, label: str = "") -> str:
        elapsed = max(_now_ms() - self.start, 1)
        lat = sorted(self.latencies)
        pct = [lat[int(p * len(lat))] if lat else 0 for p in (0.5, 0.95, 0.99, 0.999)]
        avg = self.total_latency / self.count if self.count else float("nan")
        return (f"{self.count}{label} records sent, {1000.0 * self.count / elapsed:f} records/sec "
                f"({1000.0 * self.bytes / elapsed / MB:.2f} MB/sec), {avg:.2f} ms avg latency, "
                f"{float(self.max_latency):.2f} ms max latency, {pct[0]} ms 50th, {pct[1]} ms 95th, "
                f"{pct[2]} ms 99th, {pct[3]} ms 99.9th.")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class VariadicCommand(OneLineCommand):
    """argparse4j's ``nargs("+")`` (ProducerPerformance's ``--command-property a=1 b=2``):
    the words after such a flag, up to the next ``-`` word, each become one occurrence of it."""

    variadic = ("--command-property", "--producer-props")

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out: list[str] = []
        flag = None
        for word in args:
            if word in self.variadic:
                flag = word
                continue
            if flag is not None and not word.startswith("-"):
                out += [flag, word]
                continue
            if flag is not None and out[-2:-1] != [flag]:
                out.append(flag)            # no value: click says the option needs one
            flag = None
            out.append(word)
        if flag is not None and out[-2:-1] != [flag]:
            out.append(flag)
        return super().parse_args(ctx, out)


@click.command("producer-perf-test", cls=VariadicCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the broker refused or could not be reached (one line on stderr)",
                                       partial="some records failed (each failure one line on stderr)"))
@click.option("--bootstrap-server", help="The server(s) to connect to (over bootstrap.servers in the properties).")
@click.option("--topic", required=True, help="Produce records to this topic.")
@click.option("--num-records", type=int, required=True, help="Number of records to produce.")
@click.option("--payload-delimiter", default="\\n", show_default=True,
              help="The delimiter of --payload-file's payloads.")
@click.option("--throughput", type=float, required=True,
              help="Throttle to *approximately* THROUGHPUT records/sec; -1: no throttling.")
@click.option("--producer-props", "--command-property", "command_property", multiple=True,
              help="Producer properties PROP=VALUE (acks, batch.size, linger.ms, compression.type, client.id).")
@click.option("--producer.config", "producer_config", type=click.Path(dir_okay=False),
              help="(DEPRECATED) Producer config properties file.")
@click.option("--command-config", type=click.Path(dir_okay=False), help="Producer config properties file.")
@click.option("--print-metrics", is_flag=True, help="Accepted; kproto has no client metrics to print.")
@click.option("--transactional-id", help="Refused: kproto's perf producer is not transactional.")
@click.option("--transaction-duration-ms", type=int, help="Refused: kproto's perf producer is not transactional.")
@click.option("--warmup-records", type=int, default=0, show_default=True,
              help="Records left out of the steady-state summary line.")
@click.option("--reporting-interval", type=int, default=5000, show_default=True,
              help="Interval in milliseconds at which to print progress info.")
@click.option("--record-key-range", type=int, help="Keys are integers in [0, KEY-RANGE).")
@click.option("--key-distribution", type=click.Choice(["none", "range", "random"]), default="none",
              show_default=True, help="Null keys, round-robin keys or random keys in [0, KEY-RANGE).")
@click.option("--random-seed", type=int, default=0, show_default=True, help="Seed of keys and payloads.")
@click.option("--record-size", type=int, help="Record size in bytes.")
@click.option("--payload-file", type=click.Path(dir_okay=False), help="UTF-8 file of payloads, one chosen at random.")
@click.option("--payload-monotonic", is_flag=True, help="The payload is a monotonically increasing integer.")
def producer_perf_test(bootstrap_server, topic, num_records, payload_delimiter, throughput, command_property,
                       producer_config, command_config, print_metrics, transactional_id, transaction_duration_ms,
                       warmup_records, reporting_interval, record_key_range, key_distribution, random_seed,
                       record_size, payload_file, payload_monotonic) -> None:
    """Measure producing like kafka-producer-perf-test.sh."""
    if sum((record_size is not None, payload_file is not None, payload_monotonic)) != 1:
        raise UsageProblem("Exactly one of --record-size, --payload-file or --payload-monotonic is required.")
    if num_records <= 0:
        raise UsageProblem("--num-records should be greater than zero.")
    if record_size is not None and record_size <= 0:
        raise UsageProblem("--record-size should be greater than zero.")
    if warmup_records >= num_records:
        raise UsageProblem("The value for --warmup-records must be strictly fewer than the number of records "
                           "in the test, --num-records.")
    if key_distribution != "none" and (record_key_range is None or record_key_range <= 0):
        raise UsageProblem("--record-key-range is required and positive when --key-distribution is "
                           f"'{key_distribution}'.")
    props = _props(command_property, (producer_config, command_config), "--command-property")
    if transactional_id or transaction_duration_ms or "transactional.id" in props:
        raise UsageProblem("kproto producer-perf-test does not produce transactionally")
    payloads: list[bytes] = []
    if payload_file is not None:
        from pathlib import Path
        path = Path(payload_file)
        click.echo(f"Reading payloads from: {path.absolute()}")
        if not path.exists() or path.stat().st_size == 0:
            raise UsageProblem("File does not exist or empty file provided.")
        delimiter = "\n" if payload_delimiter == "\\n" else payload_delimiter
        payloads = [p.encode() for p in path.read_text().split(delimiter)]
        click.echo(f"Number of messages read: {len(payloads)}")
    if warmup_records > 0:
        click.echo(f"Warmup first {warmup_records} records. Steady state results will print after the "
                   "complete test summary.")
    failed = _produce_perf(_bootstrap(bootstrap_server, props), props, topic, num_records, throughput,
                           warmup_records, reporting_interval, record_key_range, key_distribution, random_seed,
                           record_size, payloads, payload_monotonic)
    if failed:
        sys.exit(3)


def _produce_perf(bootstrap, props, topic, num_records, throughput, warmup, reporting_interval, key_range,
                  key_distribution, seed, record_size, payloads, monotonic) -> int:
    from kproto.client.data import DataClient
    from kproto.client.transport import BrokerClient
    from kproto.errors import ErrorCode
    from kproto.records import NewRecord, build_record_batch
    from kproto.tools.produce import CODECS, partition_for_key
    acks = {"all": -1, "-1": -1, "1": 1, "0": 0}.get(props.get("acks", "all"))
    if acks is None:
        raise UsageProblem(f"Invalid value {props['acks']} for configuration acks")
    codec = CODECS.get(props.get("compression.type", "none"))
    if codec is None:
        raise UsageProblem(f"Invalid value {props['compression.type']} for configuration compression.type")
    batch_size = int(props.get("batch.size", 16384))
    linger_ms = int(props.get("linger.ms", 5))
    max_request = int(props.get("max.request.size", 1_048_576))
    timeout_ms = int(props.get("request.timeout.ms", 30_000))
    delivery_timeout_ms = int(props.get("delivery.timeout.ms", 120_000))
    retry_backoff_ms = int(props.get("retry.backoff.ms", 100))
    props.setdefault("client.id", "perf-producer-client")
    rng = random.Random(seed)
    data = DataClient(BrokerClient(bootstrap, config=props))
    try:
        count = data.partition_count(topic)
        stats = Stats(num_records, reporting_interval, echo=click.echo)
        steady = Stats(num_records - warmup, reporting_interval) if warmup else None
        pending: dict[int, list] = {}            # partition -> [(record, send ms, size, index)]
        pending_bytes = {}
        sticky = rng.randrange(count)
        failed = 0
        first_pending = None
        payload = bytearray(record_size or 0)
        start = time.monotonic()

        def flush() -> None:
            """Send what is pending; a retriable error (a new partition's leader not ready yet,
            a moved leader) is sent again until delivery.timeout.ms, as Kafka's producer does."""
            nonlocal failed, first_pending
            batches = {(topic, p): build_record_batch([r[0] for r in rs], compression=codec)
                       for p, rs in pending.items()}
            deadline = time.monotonic() + delivery_timeout_ms / 1000
            while batches:
                results = data.produce(batches, acks=acks, timeout_ms=timeout_ms)
                now = _now_ms()
                again = {}
                for tp in batches:
                    r, rs = results.get(tp), pending[tp[1]]
                    if r is not None and r.error.retriable and time.monotonic() < deadline:
                        data.forget(tp)
                        again[tp] = batches[tp]
                    elif r is None or r.error != ErrorCode.NONE:
                        failed += len(rs)
                        why = (r.message or r.error.name) if r else "no answer"
                        click.echo(f"kproto: error: {len(rs)} records to {tp[0]}-{tp[1]} failed: {why}", err=True)
                    else:
                        for _, sent, size, i in rs:
                            stats.record(now - sent, size, now)
                            if steady is not None and i >= warmup:
                                steady.record(now - sent, size, now)
                batches = again
                if batches:
                    time.sleep(retry_backoff_ms / 1000)
            pending.clear()
            pending_bytes.clear()
            first_pending = None

        for i in range(num_records):
            if payloads:
                value = payloads[rng.randrange(len(payloads))]
            elif monotonic:
                value = str(i).encode()
            else:
                for j in range(len(payload)):
                    payload[j] = 65 + rng.randrange(26)
                value = bytes(payload)
            key = None
            if key_distribution == "range":
                key = str(i % key_range).encode()
            elif key_distribution == "random":
                key = str(rng.randrange(key_range)).encode()
            if steady is not None and i == warmup:
                steady.start = steady.window_start = _now_ms()
            sent = _now_ms()
            if key is not None:
                p = partition_for_key(key, count)
            else:
                p = sticky
                if pending_bytes.get(p, 0) + len(value) > batch_size:    # BuiltInPartitioner: next batch
                    sticky = p = (sticky + 1) % count
            pending.setdefault(p, []).append((NewRecord(key, value, (), sent), sent, len(value), i))
            pending_bytes[p] = pending_bytes.get(p, 0) + len(value) + (len(key) if key else 0)
            if first_pending is None:
                first_pending = sent
            total = sum(pending_bytes.values())
            if (total >= max_request or (len(pending) == count and min(pending_bytes.values()) >= batch_size)
                    or sent - first_pending >= linger_ms):
                flush()
            if throughput > 0:                       # ThroughputThrottler: keep sent / elapsed <= throughput
                ahead = (i + 1) / throughput - (time.monotonic() - start)
                if ahead > 0:
                    if pending:
                        flush()
                    time.sleep(ahead)
        if pending:
            flush()
        click.echo(stats.total_line())
        if steady is not None:
            click.echo(steady.total_line(" steady state"))
        return failed
    finally:
        data.close()
        data.client.close()


# --- consumer ------------------------------------------------------------------------------

def simple_date_format(pattern: str):
    """java.text.SimpleDateFormat's common letters (y M d H m s S), local time, as a function of epoch ms."""
    tokens = re.compile(r"'[^']*'|y+|M+|d+|H+|m+|s+|S+|.", re.S)

    def fmt(ms: int) -> str:
        t = time.localtime(ms / 1000)
        fields = {"y": t.tm_year, "M": t.tm_mon, "d": t.tm_mday, "H": t.tm_hour, "m": t.tm_min, "s": t.tm_sec,
                  "S": ms % 1000}
        out = []
        for tok in tokens.findall(pattern):
            if tok[0] in fields:
                v = fields[tok[0]]
                out.append(str(v % 100).zfill(2) if tok == "yy" else str(v).zfill(len(tok)))
            else:
                out.append(tok.strip("'") if tok.startswith("'") else tok)
        return "".join(out)
    return fmt


HEADER_TAIL = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"


@click.command("consumer-perf-test", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the broker refused or could not be reached (one line on stderr)"))
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--topic", help="The topic to consume from.")
@click.option("--include", help="Regular expression specifying list of topics to include for consumption.")
@click.option("--group", help="The group id to consume on (default perf-consumer-NNNNN).")
@click.option("--num-records", "--messages", "num_records", type=int, required=True,
              help="REQUIRED: The number of records to consume.")
@click.option("--command-property", "--consumer-property", "command_property", multiple=True,
              help="Consumer property prop=val (client.id, isolation.level ...).")
@click.option("--command-config", type=click.Path(dir_okay=False), help="Config properties file.")
@click.option("--consumer.config", "consumer_config", type=click.Path(dir_okay=False),
              help="(DEPRECATED) Consumer config properties file.")
@click.option("--date-format", default="yyyy-MM-dd HH:mm:ss:SSS", show_default=True,
              help="SimpleDateFormat pattern of the time fields.")
@click.option("--fetch-size", type=int, default=1_048_576, show_default=True,
              help="The maximum amount of data to fetch from a single partition per request.")
@click.option("--from-latest", is_flag=True, help="Without a committed offset, start at the latest one.")
@click.option("--hide-header", is_flag=True, help="If set, skips printing the header for the stats.")
@click.option("--print-metrics", is_flag=True, help="Accepted; kproto has no client metrics to print.")
@click.option("--reporting-interval", type=int, default=5000, show_default=True,
              help="Interval in milliseconds at which to print progress info.")
@click.option("--show-detailed-stats", is_flag=True, help="Report stats each reporting interval.")
@click.option("--socket-buffer-size", type=int, default=2_097_152, show_default=True, help="Accepted.")
@click.option("--timeout", type=int, default=10_000, show_default=True,
              help="The maximum allowed time in milliseconds between returned records.")
def consumer_perf_test(bootstrap_server, topic, include, group, num_records, command_property, command_config,
                       consumer_config, date_format, fetch_size, from_latest, hide_header, print_metrics,
                       reporting_interval, show_detailed_stats, socket_buffer_size, timeout) -> None:
    """Measure consuming like kafka-consumer-perf-test.sh."""
    from kproto.tools.consume import EARLIEST, LATEST, BrokerSource
    if (topic is None) == (include is None):
        raise UsageProblem("Exactly one of the following arguments is required: topic, include")
    if num_records <= 0:
        raise UsageProblem("--num-records should be greater than zero.")
    props = _props(command_property, (consumer_config, command_config), "--command-property")
    props.setdefault("client.id", "perf-consumer-client")
    group = group or props.get("group.id") or f"perf-consumer-{random.randrange(100_000)}"
    isolation = 1 if props.get("isolation.level") == "read_committed" else 0
    fmt = simple_date_format(date_format)
    if not hide_header:
        click.echo(("time, threadId" if show_detailed_stats else "start.time, end.time")
                   + ", data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + HEADER_TAIL)
    from kproto.client.data import consumed_records
    from kproto.errors import ErrorCode, error_for
    from kproto.records import iter_batches
    start = _now_ms()
    source = BrokerSource(bootstrap_server, props)
    try:
        from kproto.client.group import GroupMember
        topics = sorted({t for t, _ in source.partitions(topic, include)})
        member = GroupMember(source.data, group, topics,
                             session_timeout_ms=int(props.get("session.timeout.ms", 45_000)),
                             heartbeat_interval_ms=int(props.get("heartbeat.interval.ms", 3_000)))

        def join() -> dict:
            """Join the group; the positions of the partitions it hands over."""
            assigned = member.join()
            positions = source.committed(group, assigned) if assigned else {}
            missing = [tp for tp in assigned if tp not in positions]
            if missing:
                positions.update(source.offsets_for(missing, LATEST if from_latest else EARLIEST, isolation))
            return positions

        positions = join()
        join_ms = join_round = _now_ms() - start
        messages = nbytes = last_messages = last_bytes = 0
        now = last_report = last_consumed = _now_ms()
        while messages < num_records and now - last_consumed <= timeout:
            if member.heartbeat():        # a rebalance: ConsumerPerfRebListener adds its time to the join time
                joined = _now_ms()
                positions = join()
                join_ms += _now_ms() - joined
                join_round += _now_ms() - joined
            if not positions:
                time.sleep(0.1)           # nothing assigned to this member: only heartbeats to send
                now = _now_ms()
                continue
            fetched = source.data.fetch(positions, isolation_level=isolation, max_wait_ms=100,
                                        partition_max_bytes=fetch_size)
            now = _now_ms()
            got = False
            for tp, part in fetched.items():
                if part.error != ErrorCode.NONE:
                    raise error_for(part.error, f"fetching {tp[0]}-{tp[1]}: {part.error.name}")
                for cr in consumed_records(part.records, positions[tp], part.aborted,
                                           read_committed=bool(isolation)):
                    got = True
                    messages += 1
                    r = cr.record
                    nbytes += len(r.key or b"") + len(r.value or b"")
                    positions[tp] = r.offset + 1
                    if now - last_report >= reporting_interval:
                        if show_detailed_stats:
                            click.echo(_progress(fmt, nbytes, last_bytes, messages, last_messages, last_report,
                                                 now, join_round))
                        join_round = 0
                        last_report, last_messages, last_bytes = now, messages, nbytes
                    if messages >= num_records:
                        break
                if messages >= num_records:
                    break
                for batch in iter_batches(part.records, allow_incomplete=True):   # past control batches
                    positions[tp] = max(positions[tp], batch.next_offset)
            if got:
                last_consumed = now
        if messages < num_records:
            click.echo(f"WARNING: Exiting before consuming the expected number of messages: timeout ({timeout} ms) "
                       "exceeded. You can use the --timeout option to increase the timeout.")
        # enable.auto.commit: KafkaConsumer.close commits the positions, then leaves the group
        errors = member.commit(positions) if positions else {}
        bad = next(((tp, e) for tp, e in errors.items() if e), None)
        if bad is not None:
            raise click.ClickException(f"committing offsets of group {group} failed: {bad[0][0]}-{bad[0][1]}: "
                                       f"{bad[1].name}")
        member.leave()
        member.close()
    finally:
        source.close()
    end = _now_ms()
    if not show_detailed_stats:
        elapsed_s = max(end - start, 1) / 1000.0
        fetch_ms = (end - start) - join_ms
        mb = nbytes / MB
        fetch_s = fetch_ms / 1000.0
        click.echo(f"{fmt(start)}, {fmt(end)}, {mb:.4f}, {mb / elapsed_s:.4f}, {messages}, "
                   f"{messages / elapsed_s:.4f}, {join_ms}, {fetch_ms}, {_div(mb, fetch_s)}, "
                   f"{_div(messages, fetch_s)}")


def _div(a: float, b: float) -> str:
    """Java's double division printed with %.4f: x/0 is Infinity, 0/0 NaN."""
    if b:
        return f"{a / b:.4f}"
    return "NaN" if a == 0 else "Infinity"


def _progress(fmt, nbytes, last_bytes, messages, last_messages, start, end, join_round) -> str:
    """ConsumerPerformance.printConsumerProgress (thread id 0)."""
    elapsed = max(end - start, 1)
    mb = nbytes / MB
    interval_mb = (nbytes - last_bytes) / MB
    fetch_ms = end - start - join_round
    fetch_mb_s = 0.0 if fetch_ms <= 0 else 1000.0 * interval_mb / fetch_ms
    fetch_n_s = 0.0 if fetch_ms <= 0 else 1000.0 * (messages - last_messages) / fetch_ms
    return (f"{fmt(end)}, 0, {mb:.4f}, {1000.0 * interval_mb / elapsed:.4f}, {messages}, "
            f"{(messages - last_messages) / elapsed * 1000.0:.4f}, {join_round}, {fetch_ms}, "
            f"{fetch_mb_s:.4f}, {fetch_n_s:.4f}")
