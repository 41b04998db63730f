"""``kproto verifiable-producer`` and ``kproto verifiable-consumer``: Kafka 4.4's
org.apache.kafka.tools.VerifiableProducer and VerifiableConsumer, the tools
Kafka's system tests drive (kafkatest services/verifiable_producer.py,
verifiable_consumer.py): the same flags and the same JSON event lines on
stdout, one object per line, keys in Kafka's order.

    kproto verifiable-producer --bootstrap-server H:P --topic t --max-messages 1000 --repeating-keys 10
    kproto verifiable-consumer --bootstrap-server H:P --topic t --group-id g --max-messages 1000

The consumer is a real member of a classic group (kproto.client.group:
JoinGroup/SyncGroup/Heartbeat, the range assignor, commits with its
generation). SIGTERM and Ctrl-C stop both cleanly, as Kafka's shutdown hooks
do (``shutdown_requested`` ... ``shutdown_complete``). Differences from Kafka:
``--group-protocol consumer`` (KIP-848) and assignors other than the range
assignor are refused; the producer sends one Produce request at a time."""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

import click

from kproto.tools.main import OneLineCommand, UsageProblem, exit_status_help

RANGE_ASSIGNORS = ("org.apache.kafka.clients.consumer.RangeAssignor", "range")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def emit(name: str, **fields: Any) -> None:
    """One event line as Jackson writes it: {"timestamp":...,"name":...,fields...}, no spaces."""
    line = json.dumps({"timestamp": _now_ms(), "name": name, **fields}, separators=(",", ":"), ensure_ascii=False)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class StopFlag:
    """SIGTERM/SIGINT set it; the loops look at it between requests (a request is never cut)."""

    def __init__(self) -> None:
        self.set = False
        self._old = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGTERM, signal.SIGINT)}

    def _stop(self, *_: Any) -> None:
        self.set = True

    def restore(self) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


def _text(data: bytes | None) -> str | None:
    """StringDeserializer: UTF-8, malformed bytes replaced."""
    return None if data is None else bytes(data).decode("utf-8", "replace")


def _exception(error) -> str:
    """The class Kafka's client would name for an error code (Class.toString)."""
    from kproto.errors import java_exception_class
    return "class org.apache.kafka.common.errors." + java_exception_class(error)


def _config(bootstrap: str, files: tuple[str | None, ...]) -> dict[str, str]:
    from kproto.client.transport import load_client_properties
    out: dict[str, str] = {}
    for path in files:
        if path:
            out.update(load_client_properties(path))
    return out


# --- producer ------------------------------------------------------------------------------

@click.command("verifiable-producer", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the broker could not be reached (one line on stderr); failed sends are "
                                       "producer_send_error lines", interrupted=False))
@click.option("--bootstrap-server", required=True, metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
              help="REQUIRED: The server(s) to connect to.")
@click.option("--topic", required=True, help="Produce messages to this topic.")
@click.option("--max-messages", type=int, default=-1, show_default=True,
              help="Produce this many messages; -1: until stopped.")
@click.option("--throughput", type=int, default=-1, show_default=True,
              help="If >= 0, throttle to *approximately* THROUGHPUT messages/sec.")
@click.option("--acks", type=int, default=-1, show_default=True, help="Acks required on each produced message.")
@click.option("--producer.config", "producer_config", type=click.Path(dir_okay=False),
              help="(DEPRECATED) Producer config properties file.")
@click.option("--command-config", type=click.Path(dir_okay=False), help="Config properties file.")
@click.option("--message-create-time", type=int, default=-1, show_default=True,
              help="Send messages with creation time starting at this epoch ms.")
@click.option("--value-prefix", type=int, help="Each value is PREFIX.N.")
@click.option("--repeating-keys", type=int, help="Keys 0, 1, ... up to this (exclusive), then 0 again.")
def verifiable_producer(bootstrap_server, topic, max_messages, throughput, acks, producer_config, command_config,
                        message_create_time, value_prefix, repeating_keys) -> None:
    """Produce increasing integers and print JSON for each ack like Kafka's VerifiableProducer."""
    if acks not in (-1, 0, 1):
        raise UsageProblem(f"Invalid value {acks} for configuration acks: String must be one of: all, -1, 0, 1")
    from kproto.client.data import DataClient
    from kproto.client.transport import BrokerClient
    from kproto.errors import ErrorCode
    from kproto.records import NewRecord, build_record_batch
    from kproto.tools.produce import partition_for_key
    stop = StopFlag()
    start = _now_ms()
    config = _config(bootstrap_server, (producer_config, command_config))
    data = DataClient(BrokerClient(bootstrap_server, config=config))
    sent = acked = 0
    try:
        emit("startup_complete")
        md = data.refresh([topic])
        t = md.topics.get(topic)
        count = len(t.partitions) if t is not None and t.error == ErrorCode.NONE else 0
        create_time = None if message_create_time == -1 else message_create_time
        key_counter = 0
        sticky = 0
        pending: dict[int, list[tuple[str | None, str, Any]]] = {}
        first = None

        def flush() -> None:
            nonlocal acked, sticky, first
            if not pending:
                return
            batches = {(topic, p): build_record_batch([r for _, _, r in rs]) for p, rs in pending.items()}
            results = data.produce(batches, acks=acks)
            for p, rs in sorted(pending.items()):
                r = results.get((topic, p))
                if r is None or r.error != ErrorCode.NONE:
                    error = r.error if r is not None else ErrorCode.NETWORK_EXCEPTION
                    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                        data.forget((topic, p))
                    for k, v, _ in rs:
                        emit("producer_send_error", key=k, value=v, topic=topic, exception=_exception(error),
                             message=(r.message if r is not None and r.message else error.description))
                    continue
                for i, (k, v, _) in enumerate(rs):
                    acked += 1
                    emit("producer_send_success", key=k, value=v,
                         offset=-1 if r.base_offset < 0 else r.base_offset + i, topic=topic, partition=p)
            pending.clear()
            sticky = (sticky + 1) % max(count, 1)
            first = None

        i = 0
        while (max_messages < 0 or i < max_messages) and not stop.set:
            key = None
            if repeating_keys is not None:
                key = str(key_counter)
                key_counter = 0 if key_counter + 1 == repeating_keys else key_counter + 1
            value = f"{value_prefix}.{i}" if value_prefix is not None else str(i)
            timestamp = None
            if create_time is not None:
                timestamp = create_time
                create_time += _now_ms() - start     # VerifiableProducer.send, as it is
            sent += 1
            if count == 0:                            # the topic is missing: KafkaProducer times out on it
                emit("producer_send_error", key=key, value=value, topic=topic,
                     exception=_exception(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                     message=f"Topic {topic} not present in metadata.")
            else:
                p = partition_for_key(key.encode(), count) if key is not None else sticky
                pending.setdefault(p, []).append(
                    (key, value, NewRecord(None if key is None else key.encode(), value.encode(), (), timestamp)))
                first = first if first is not None else time.monotonic()
                if sum(map(len, pending.values())) >= 500 or time.monotonic() - first >= 0.005:
                    flush()
            i += 1
            if throughput >= 0:                       # ThroughputThrottler
                ahead = i / throughput - (_now_ms() - start) / 1000 if throughput > 0 else 0.1
                if ahead > 0:
                    flush()
                    time.sleep(ahead)
        flush()
    finally:
        data.close()
        data.client.close()
        emit("shutdown_complete")
        elapsed = _now_ms() - start
        emit("tool_data", sent=sent, acked=acked, target_throughput=throughput,
             avg_throughput=1000 * acked / elapsed if elapsed else float("nan"))
        stop.restore()


# --- consumer ------------------------------------------------------------------------------

def _tps(tps) -> list[dict]:
    return [{"topic": t, "partition": p} for t, p in tps]


@click.command("verifiable-consumer", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the broker could not be reached or refused the group (one line on stderr)",
                                       interrupted=False))
@click.option("--bootstrap-server", required=True, metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
              help="The server(s) to connect to.")
@click.option("--topic", required=True, help="Consumes messages from this topic.")
@click.option("--group-protocol", type=click.Choice(["classic", "consumer"], case_sensitive=False), default="classic",
              show_default=True, help="Group protocol (kproto: classic only).")
@click.option("--group-remote-assignor", help="Only used if the group protocol is consumer.")
@click.option("--group-id", required=True, help="The group id of the consumer group.")
@click.option("--group-instance-id", help="A unique identifier of the consumer instance (static membership).")
@click.option("--max-messages", type=int, default=-1, show_default=True,
              help="Consume this many messages; -1: until stopped.")
@click.option("--session-timeout", type=int, default=45_000, show_default=True, help="session.timeout.ms.")
@click.option("--verbose", is_flag=True, help="Print a record_data line for each record.")
@click.option("--enable-autocommit", is_flag=True, help="Commit every 5 s and at the end instead of after each poll.")
@click.option("--close-timeout", type=int, default=30_000, show_default=True, help="Accepted.")
@click.option("--reset-policy", type=click.Choice(["earliest", "latest", "none"]), default="earliest",
              show_default=True, help="Where to start without a committed offset.")
@click.option("--assignment-strategy", default=RANGE_ASSIGNORS[0], show_default=True,
              help="Only the RangeAssignor.")
@click.option("--consumer.config", "consumer_config", type=click.Path(dir_okay=False),
              help="(DEPRECATED) Consumer config properties file.")
@click.option("--command-config", type=click.Path(dir_okay=False), help="Config properties file.")
def verifiable_consumer(bootstrap_server, topic, group_protocol, group_remote_assignor, group_id, group_instance_id,
                        max_messages, session_timeout, verbose, enable_autocommit, close_timeout, reset_policy,
                        assignment_strategy, consumer_config, command_config) -> None:
    """Consume as a group member and print JSON events like Kafka's VerifiableConsumer."""
    if group_protocol.lower() != "classic":
        raise UsageProblem("kproto verifiable-consumer speaks the classic group protocol only")
    if assignment_strategy not in RANGE_ASSIGNORS:
        raise UsageProblem(f"kproto verifiable-consumer has the RangeAssignor only, not {assignment_strategy}")
    from kproto.client.data import DataClient
    from kproto.client.group import GroupMember
    from kproto.client.transport import BrokerClient
    config = _config(bootstrap_server, (consumer_config, command_config))
    stop = StopFlag()
    data = DataClient(BrokerClient(bootstrap_server, config=config))
    member = GroupMember(data, group_id, [topic], session_timeout_ms=session_timeout,
                         heartbeat_interval_ms=min(3000, session_timeout // 3), group_instance_id=group_instance_id)
    run = _ConsumerRun(data, member, max_messages, verbose, enable_autocommit, reset_policy, stop)
    try:
        emit("startup_complete")
        run.loop()
    finally:
        try:
            if member.generation_id >= 0:
                if enable_autocommit:
                    run.commit(quiet=True)
                emit("partitions_revoked", partitions=_tps(member.assignment))
                member.leave()
        finally:
            member.close()
            data.close()
            data.client.close()
            emit("shutdown_complete")
            if not stop.set:
                emit("shutdown_requested")
            stop.restore()


class _ConsumerRun:
    AUTO_COMMIT_INTERVAL_S = 5.0                      # auto.commit.interval.ms

    def __init__(self, data, member, max_messages, verbose, autocommit, reset_policy, stop) -> None:
        self.data, self.member, self.max_messages, self.verbose = data, member, max_messages, verbose
        self.autocommit, self.reset_policy, self.stop = autocommit, reset_policy, stop
        self.positions: dict = {}
        self.consumed = 0
        self.next_auto_commit = time.monotonic() + self.AUTO_COMMIT_INTERVAL_S

    def finished(self) -> bool:
        return 0 <= self.max_messages <= self.consumed

    def assign(self) -> None:
        assigned = self.member.join()
        emit("partitions_assigned", partitions=_tps(assigned))
        committed = {tp: o.offset for tp, o in self.data.admin.offset_fetch(self.member.group_id, assigned).items()
                     if o.offset >= 0} if assigned else {}
        self.positions = dict(committed)
        missing = [tp for tp in assigned if tp not in committed]
        if missing:
            self._reset(missing)

    def _reset(self, tps) -> None:
        from kproto.errors import KafkaError
        if self.reset_policy == "none":
            raise KafkaError(f"Undefined offset with no reset policy for partitions: "
                             f"{', '.join(f'{t}-{p}' for t, p in tps)}")
        spec = -2 if self.reset_policy == "earliest" else -1
        listed = self.data.admin.list_offsets({tp: spec for tp in tps})
        self.positions.update({tp: lo.offset for tp, lo in listed.items()})

    def commit(self, offsets=None, *, quiet: bool = False) -> None:
        offsets = dict(self.positions if offsets is None else offsets)
        if not offsets:
            return
        errors = self.member.commit(offsets)
        bad = next((e for e in errors.values() if e), None)
        if quiet:
            return
        fields: dict[str, Any] = {"offsets": [{"topic": t, "partition": p, "offset": o}
                                              for (t, p), o in sorted(offsets.items())]}
        if bad is not None:
            fields["error"] = bad.description
        emit("offsets_committed", **fields, success=bad is None)

    def loop(self) -> None:
        from kproto.client.data import consumed_records
        from kproto.errors import ErrorCode, error_for
        from kproto.records import iter_batches
        self.assign()
        while not self.finished():
            if self.stop.set:
                emit("shutdown_requested")
                return
            if self.member.heartbeat():
                if self.autocommit:
                    self.commit(quiet=True)
                emit("partitions_revoked", partitions=_tps(self.member.assignment))
                self.assign()
                continue
            if not self.positions:
                time.sleep(0.1)                      # nothing assigned: only heartbeats to send
                continue
            fetched = self.data.fetch(self.positions, max_wait_ms=100)
            summaries, offsets, total = [], {}, 0
            for tp in sorted(fetched):
                part = fetched[tp]
                if part.error == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self._reset([tp])
                    continue
                if part.error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    self.data.forget(tp)
                    continue
                if part.error != ErrorCode.NONE:
                    raise error_for(part.error, f"fetching {tp[0]}-{tp[1]}: {part.error.name}")
                records = [cr.record for cr in consumed_records(part.records, self.positions[tp], part.aborted)]
                for batch in iter_batches(part.records, allow_incomplete=True):   # past control batches
                    self.positions[tp] = max(self.positions[tp], batch.next_offset)
                if not records:
                    continue
                total += len(records)
                if self.max_messages >= 0:
                    records = records[:max(self.max_messages - self.consumed, 0)]
                    if not records:
                        continue
                    self.positions[tp] = records[-1].offset + 1
                summaries.append({"topic": tp[0], "partition": tp[1], "count": len(records),
                                  "minOffset": records[0].offset, "maxOffset": records[-1].offset})
                offsets[tp] = records[-1].offset + 1
                if self.verbose:
                    for r in records:
                        emit("record_data", key=_text(r.key), value=_text(r.value), topic=tp[0], partition=tp[1],
                             offset=r.offset)
                self.consumed += len(records)
                if self.finished():
                    break
            if total:
                emit("records_consumed", count=total, partitions=summaries)
                if not self.autocommit:
                    self.commit(offsets)
            if self.autocommit and time.monotonic() >= self.next_auto_commit:
                self.commit(quiet=True)
                self.next_auto_commit = time.monotonic() + self.AUTO_COMMIT_INTERVAL_S
