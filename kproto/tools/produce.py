"""``kproto produce``: kafka-console-producer.sh (ConsoleProducer and
LineMessageReader, trunk 1eb76443) over kproto's own client.

    printf 'k1:v1\\nk2:v2\\n' | kproto produce --bootstrap-server H:P --topic orders \\
        --property parse.key=true --property key.separator=:
    kproto produce --bootstrap-server H:P --topic copy --json --file dump.jsonl

Lines are read from stdin (or ``--file``); ``--json`` reads ``kproto consume
--json``'s lines (key, value, headers, partition, timestamp kept). A record
goes to ``--partition``, else its JSON partition, else murmur2 of its key
(Kafka's BuiltInPartitioner.partitionForKey), else one partition per batch
(the sticky partitioner's choice, round robin here). The last line on stderr
says what was delivered and what failed. Differences from Kafka: batches are
sent one request at a time (``--sync``: one record per request); retries are
not made; ``--partition``, ``--json`` and ``--file`` are kproto's.

``--key-format/--value-format avro|protobuf|json-schema`` with ``--schema-registry URL``
read each key/value as JSON (the JSON text of a line, or the ``key``/``value`` of a ``--json``
record) and write it in Confluent's wire format with ``--key-schema/--value-schema FILE``
registered under ``<topic>-key``/``<topic>-value``, else that subject's latest version."""

from __future__ import annotations

import dataclasses
import sys
from typing import IO, Iterator

import click

from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help
from kproto.tools.schema_registry import FORMATS, encoder, serdes

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BATCH_RECORDS = 1000
BATCH_BYTES = 1 << 20


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (a signed int32)."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail, extra = length & ~3, length % 4
    if extra >= 3:
        h ^= data[tail + 2] << 16
    if extra >= 2:
        h ^= data[tail + 1] << 8
    if extra >= 1:
        h ^= data[tail]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class LineReader:
    """LineMessageReader: [headers<delimiter>][key<separator>]value per line."""

    def __init__(self, props: dict[str, str]) -> None:
        true = lambda name: props.get(name, "false").strip().lower() == "true"  # noqa: E731
        self.parse_key, self.parse_headers, self.ignore_error = true("parse.key"), true("parse.headers"), \
            true("ignore.error")
        self.key_sep = props.get("key.separator", "\t")
        self.h_delim = props.get("headers.delimiter", "\t")
        self.h_sep = props.get("headers.separator", ",")
        self.h_key_sep = props.get("headers.key.separator", ":")
        self.null_marker = props.get("null.marker")
        pairs = [("headers.delimiter", self.h_delim, "headers.separator", self.h_sep),
                 ("headers.delimiter", self.h_delim, "headers.key.separator", self.h_key_sep),
                 ("headers.separator", self.h_sep, "headers.key.separator", self.h_key_sep)]
        if self.null_marker is not None:
            pairs += [("null.marker", self.null_marker, n, v) for n, v in (
                ("key.separator", self.key_sep), ("headers.separator", self.h_sep),
                ("headers.delimiter", self.h_delim), ("headers.key.separator", self.h_key_sep))]
        for a, av, b, bv in pairs:
            if self.parse_headers or a == "null.marker":
                if av == bv:
                    raise UsageProblem(f"{a} and {b} may not be equal")

    def _split(self, enabled: bool, line: str, sep: str, what: str, n: int) -> tuple[str | None, str]:
        if not enabled:
            return None, line
        head, found, rest = line.partition(sep)
        if not found:
            if self.ignore_error:
                return None, line
            raise click.ClickException(f"No {what} found on line number {n}: '{line}'")
        return head, rest

    def _bytes(self, s: str | None) -> bytes | None:
        return None if s is None or s == self.null_marker else s.encode()

    def record(self, line: str, n: int):
        from kproto.records import NewRecord
        headers_text, rest = self._split(self.parse_headers, line, self.h_delim, "headers delimiter", n)
        key, value = self._split(self.parse_key, rest, self.key_sep, "key separator", n)
        headers = []
        if headers_text:
            for pair in headers_text.split(self.h_sep):
                k, found, v = pair.partition(self.h_key_sep)
                if not found:
                    raise click.ClickException(
                        f"No header key separator found in pair '{pair}' on line number {n}")
                if k == self.null_marker:
                    raise click.ClickException(f"Header keys should not be equal to the null marker "
                                               f"'{self.null_marker}' as they can't be null")
                headers.append((k, self._bytes(v)))
        return NewRecord(self._bytes(key) if self.parse_key else None, self._bytes(value), tuple(headers), None)


def _lines(stream: IO[bytes]) -> Iterator[str]:
    for raw in stream:
        yield raw.decode("utf-8", "surrogateescape").rstrip("\n").removesuffix("\r")


@click.command("produce", cls=OneLineCommand, epilog=exit_status_help(
    "nothing delivered, or an error", partial="some records failed"))
@click.option("--bootstrap-server", required=True, help="The server(s) to connect to (HOST:PORT,...).")
@click.option("--topic", required=True, help="The topic to produce to.")
@click.option("--partition", type=int, help="Send every record to this partition.")
@click.option("--file", "path", type=click.Path(dir_okay=False), help="Read this file instead of stdin.")
@click.option("--json", "as_json", is_flag=True, help="Read kproto consume --json lines.")
@click.option("--property", "properties", multiple=True,
              help="Line reader property key=value (parse.key, key.separator, parse.headers, null.marker ...).")
@click.option("--compression-codec", type=click.Choice(list(CODECS)), is_flag=False, flag_value="gzip",
              default="none", help="Compression codec (alone: gzip).")
@click.option("--request-required-acks", default="-1", help="acks: -1/all, 0 or 1.")
@click.option("--request-timeout-ms", type=int, default=1500, help="The ack timeout of the producer requests.")
@click.option("--sync", is_flag=True, help="One record per request, each waiting for its answer.")
@click.option("--producer-property", multiple=True, help="Client property key=value (acks, compression.type ...).")
@click.option("--producer.config", "producer_config", type=click.Path(), help="Client properties file.")
@click.option("--key-format", type=click.Choice(FORMATS), default="raw",
              help="Encode JSON keys in Confluent's wire format through --schema-registry.")
@click.option("--value-format", type=click.Choice(FORMATS), default="raw",
              help="Encode JSON values in Confluent's wire format through --schema-registry.")
@click.option("--schema-registry", help="The Schema Registry's URL (Confluent's REST API).")
@click.option("--key-schema", type=click.Path(dir_okay=False, exists=True),
              help="Register this schema under <topic>-key (default: the subject's latest version).")
@click.option("--value-schema", type=click.Path(dir_okay=False, exists=True),
              help="Register this schema under <topic>-value (default: the subject's latest version).")
def produce(bootstrap_server, topic, partition, path, as_json, properties, compression_codec,
            request_required_acks, request_timeout_ms, sync, producer_property, producer_config,
            key_format, value_format, schema_registry, key_schema, value_schema) -> None:
    """Send lines (or consume --json records) to a topic like kafka-console-producer.sh."""
    from kproto.tools.consume import parse_properties_args
    key_serde, value_serde = serdes(schema_registry, key_format, value_format, UsageProblem)
    for serde, schema_file, what in ((key_serde, key_schema, "key"), (value_serde, value_schema, "value")):
        if serde is None:
            if schema_file is not None:
                raise UsageProblem(f"--{what}-schema needs --{what}-format")
            continue
        serde.use_schema(f"{topic}-{what}", schema_file)       # TopicNameStrategy, as Confluent's serializers
    props = parse_properties_args(properties, "--property")
    config: dict[str, str] = {}
    if producer_config:
        from kproto.client.transport import load_client_properties
        config = load_client_properties(producer_config)
    config.update(parse_properties_args(producer_property, "--producer-property"))
    acks_text = config.pop("acks", request_required_acks)
    acks = {"all": -1}.get(acks_text.strip().lower(), None)
    if acks is None:
        if acks_text.strip() not in ("-1", "0", "1"):
            raise UsageProblem(f"Invalid value {acks_text} for configuration acks: String must be one of: all, -1, 0, 1")
        acks = int(acks_text)
    codec = CODECS.get(config.pop("compression.type", compression_codec))
    if codec is None:
        raise UsageProblem("Invalid compression.type (none, gzip, snappy, lz4, zstd)")
    reader = None if as_json else LineReader(props)
    stream = open(path, "rb") if path else sys.stdin.buffer
    try:
        delivered, failed, partitions = _produce(bootstrap_server, config, topic, partition, stream, reader,
                                                 codec, acks, request_timeout_ms, sync,
                                                 encoder(key_serde), encoder(value_serde))
    finally:
        if path:
            stream.close()
    what = "acknowledged" if acks else "sent (acks=0)"
    click.echo(f"{delivered} records {what} to {topic} ({len(partitions)} partitions), {failed} failed", err=True)
    if failed:
        sys.exit(ExitStatus.PARTIAL if delivered else ExitStatus.ERROR)


def _text_encoder(encode):
    """A registry format over a line's key or value: its text is JSON."""
    if encode is None:
        return lambda b, where: b
    import json

    def from_text(b: bytes | None, where: str) -> bytes | None:
        if b is None:
            return None
        try:
            return encode(json.loads(b), where)
        except ValueError as e:
            raise click.ClickException(f"{where}: not JSON ({e})") from None
    return from_text


def _produce(bootstrap, config, topic, fixed_partition, stream, reader, codec, acks, timeout_ms, sync,
             key_encoder=None, value_encoder=None):
    from kproto.client.data import DataClient
    from kproto.client.transport import BrokerClient
    from kproto.errors import ErrorCode
    from kproto.records import build_record_batch
    data = DataClient(BrokerClient(bootstrap, config=config))
    try:
        count = data.partition_count(topic)
        if fixed_partition is not None and not 0 <= fixed_partition < count:
            raise UsageProblem(f"--partition {fixed_partition}: topic {topic} has {count} partitions")
        pending: dict[int, list] = {}
        pending_bytes = 0
        sticky = 0
        delivered = failed = 0
        used: set[int] = set()

        def flush() -> None:
            nonlocal delivered, failed, pending_bytes, sticky
            if not pending:
                return
            batches = {(topic, p): build_record_batch(rs, compression=codec) for p, rs in pending.items()}
            results = data.produce(batches, acks=acks, timeout_ms=timeout_ms)
            for p, rs in pending.items():
                r = results.get((topic, p))
                if r is None or r.error != ErrorCode.NONE:
                    failed += len(rs)
                    why = r.message or r.error.name if r else "no answer"
                    click.echo(f"kproto: error: {len(rs)} records to {topic}-{p} failed: {why}", err=True)
                else:
                    delivered += len(rs)
                    used.add(p)
            pending.clear()
            pending_bytes = 0
            sticky = (sticky + 1) % count

        if reader is None:
            from kproto.tools.console_format import parse_json_record
        key_text, value_text = _text_encoder(key_encoder), _text_encoder(value_encoder)
        for n, line in enumerate(_lines(stream), 1):
            if reader is None:
                if not line.strip():
                    continue
                p, rec = parse_json_record(line, n, key_encoder, value_encoder)
            else:
                p, rec = None, reader.record(line, n)
                if key_encoder or value_encoder:
                    rec = dataclasses.replace(rec, key=key_text(rec.key, f"line {n} key"),
                                              value=value_text(rec.value, f"line {n} value"))
            if fixed_partition is not None:
                p = fixed_partition
            elif p is None:
                p = partition_for_key(rec.key, count) if rec.key is not None else sticky
            elif p >= count:
                raise click.ClickException(f"line {n}: partition {p} but topic {topic} has {count} partitions")
            pending.setdefault(p, []).append(rec)
            pending_bytes += len(rec.key or b"") + len(rec.value or b"")
            if sync or pending_bytes >= BATCH_BYTES or sum(map(len, pending.values())) >= BATCH_RECORDS:
                flush()
        flush()
        return delivered, failed, used
    finally:
        data.close()
        data.client.close()
