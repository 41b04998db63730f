"""kproto verifiable-producer / verifiable-consumer: the JSON event lines of Kafka 4.4's VerifiableProducer
and VerifiableConsumer (same names, same keys in the same order, same records), diffed against Kafka's tools
on kproto's broker and Kafka's; the consumer is a real classic-group member: two kproto members split a
topic with the range assignor, one stopping hands its partitions to the other, and a kproto member and
Kafka's own VerifiableConsumer share one group."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading

import pytest

from kproto.client.group import assigned_partitions, assignment_bytes, range_assign
from kproto.testing import FIXTURE_DEFAULTS, Broker
from tests import components
from tests.helpers import until
from tests.tools.helpers import run_command
from tests.tools.test_console_tools import create

VP, VC = "org.apache.kafka.tools.VerifiableProducer", "org.apache.kafka.tools.VerifiableConsumer"
KPROTO = [sys.executable, "-m", "kproto.tools.main"]


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def shape(evs: list[dict]) -> list[tuple[str, tuple[str, ...]]]:
    return [(e["name"], tuple(e)) for e in evs]


def without_time(evs: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "timestamp"} for e in evs]


def kproto(command: str, *args: str) -> list[dict]:
    status, out, err = run_command(command, None, *args)
    assert (status, err) == (0, ""), err
    return events(out)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("verifiable")
    with Broker(base / "data", FIXTURE_DEFAULTS, log_path=base / "broker.log") as b:
        yield b


def create_writable(bootstrap: str, topic: str, partitions: int) -> None:
    """Create the topic and wait until each partition's leader answers: both verifiable producers
    send with retries=0, and Kafka's broker answers NOT_LEADER_OR_FOLLOWER until it leads the new
    partition (ListOffsets asks the leader and stores nothing)."""
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient
    create(bootstrap, topic, partitions)
    with BrokerClient(bootstrap) as c:
        until(lambda: not any(lo.error for lo in Admin(c).list_offsets(
            {(topic, p): -1 for p in range(partitions)}).values()), what=f"leaders of {topic}")


def check_against_kafka(kafka_ref, bootstrap: str) -> None:
    create_writable(bootstrap, "v-ours", 3)
    create_writable(bootstrap, "v-theirs", 3)
    args = ["--max-messages", "30", "--repeating-keys", "7", "--value-prefix", "5"]
    ours = kproto("verifiable-producer", "--bootstrap-server", bootstrap, "--topic", "v-ours", *args)
    t = kafka_ref.run_tool(VP, "--bootstrap-server", bootstrap, "--topic", "v-theirs", *args)
    assert t.returncode == 0, t.stderr
    theirs = events(t.stdout)
    # the same events, keys in the same order; the same records at the same partitions and offsets
    assert sorted(set(shape(ours))) == sorted(set(shape(theirs)))
    assert [e["name"] for e in ours][0] == "startup_complete" and [e["name"] for e in ours][-2:] == \
        [e["name"] for e in theirs][-2:] == ["shutdown_complete", "tool_data"]
    sends = lambda evs: sorted((e["key"], e["value"], e["partition"], e["offset"])  # noqa: E731
                               for e in evs if e["name"] == "producer_send_success")
    assert sends(ours) == sends(theirs) and len(sends(ours)) == 30
    produced = {"v-ours": sends(ours), "v-theirs": sends(theirs)}
    assert {k: ours[-1][k] for k in ("sent", "acked", "target_throughput")} == \
        {k: theirs[-1][k] for k in ("sent", "acked", "target_throughput")} == \
        {"sent": 30, "acked": 30, "target_throughput": -1}

    for topic in ("v-ours", "v-theirs"):
        cargs = ["--bootstrap-server", bootstrap, "--topic", topic, "--max-messages", "30", "--verbose"]
        ours = kproto("verifiable-consumer", *cargs, "--group-id", f"ours-{topic}")
        t = kafka_ref.run_tool(VC, *cargs, "--group-id", f"theirs-{topic}")
        assert t.returncode == 0, t.stderr
        theirs = events(t.stdout)
        assert sorted(set(shape(ours))) == sorted(set(shape(theirs)))
        for name in ("partitions_assigned", "partitions_revoked", "shutdown_complete", "shutdown_requested"):
            assert [e["name"] for e in ours].count(name) == [e["name"] for e in theirs].count(name) == 1
        records = lambda evs: sorted((e["key"], e["value"], e["partition"], e["offset"])  # noqa: E731
                                     for e in evs if e["name"] == "record_data")
        assert records(ours) == records(theirs) == produced[topic]
        # the last commit of each partition: one past its last record
        committed = lambda evs: {o["partition"]: o["offset"] for e in evs if e["name"] == "offsets_committed"  # noqa: E731
                                 for o in sorted(e["offsets"], key=lambda o: o["offset"]) if e["success"]}
        ends = {}
        for _, _, p, o in produced[topic]:
            ends[p] = max(ends.get(p, 0), o + 1)
        assert committed(ours) == committed(theirs) == ends


def test_against_kafka_on_kproto_broker(kafka_ref, broker):
    check_against_kafka(kafka_ref, broker.bootstrap_servers)


def test_against_kafka_on_kafka_broker(kafka_ref, tmp_path):
    with kafka_ref.broker(tmp_path / "kafka") as k:
        check_against_kafka(kafka_ref, k.bootstrap)


def test_on_tansu(tmp_path):
    """kproto's verifiable tools on tansu: every record acked, read back and committed one past the
    last. Kafka 4.4's are not diffed here: its Java producer gets no answer from tansu 0.6 (every
    batch expires: "The request has not been sent, or no server response has been received yet")."""
    with components.tansu(tmp_path) as b:
        create_writable(b, "v-tansu", 3)
        evs = kproto("verifiable-producer", "--bootstrap-server", b, "--topic", "v-tansu", "--max-messages", "30",
                     "--repeating-keys", "7", "--value-prefix", "5")
        sent = sorted((e["key"], e["value"], e["partition"], e["offset"])
                      for e in evs if e["name"] == "producer_send_success")
        assert len(sent) == 30 and {k: evs[-1][k] for k in ("sent", "acked")} == {"sent": 30, "acked": 30}
        evs = kproto("verifiable-consumer", "--bootstrap-server", b, "--topic", "v-tansu", "--max-messages", "30",
                     "--verbose", "--group-id", "g-tansu")
        assert sorted((e["key"], e["value"], e["partition"], e["offset"])
                      for e in evs if e["name"] == "record_data") == sent
        committed = {o["partition"]: o["offset"] for e in evs if e["name"] == "offsets_committed" and e["success"]
                     for o in sorted(e["offsets"], key=lambda o: o["offset"])}
        ends: dict = {}
        for _, _, p, o in sent:
            ends[p] = max(ends.get(p, 0), o + 1)
        assert committed == ends


class Member:
    """A verifiable consumer process whose event lines are read as they come."""

    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ}, start_new_session=True)
        self.events: queue.Queue = queue.Queue()
        self.seen: list[dict] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.events.put(json.loads(line))
        self.events.put(None)

    def next(self, name: str, timeout: float = 120.0) -> dict:
        """The next event called ``name`` (others are kept in ``seen``); the timeout is a safety net."""
        while True:
            e = self.events.get(timeout=timeout)
            assert e is not None, f"exited before {name}: {self.proc.stderr.read()}"
            self.seen.append(e)
            if e["name"] == name:
                return e

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=120)


def tps(event: dict) -> set[tuple[str, int]]:
    return {(p["topic"], p["partition"]) for p in event["partitions"]}


def test_group_members_split_and_hand_over(broker, kafka_ref):
    b = broker.bootstrap_servers
    create(b, "v-group", 4)
    kproto("verifiable-producer", "--bootstrap-server", b, "--topic", "v-group", "--max-messages", "40",
           "--repeating-keys", "40")
    common = ["--bootstrap-server", b, "--topic", "v-group", "--group-id", "split", "--session-timeout", "10000"]
    all4 = {("v-group", p) for p in range(4)}
    first = Member(KPROTO + ["verifiable-consumer", *common])
    try:
        assert tps(first.next("partitions_assigned")) == all4
        # Kafka's own VerifiableConsumer joins: the group rebalances, range gives each member two partitions
        second = Member(kafka_ref.tool_command(VC, *common))
        try:
            first.next("partitions_revoked")
            mine, theirs = tps(first.next("partitions_assigned")), tps(second.next("partitions_assigned"))
            assert len(mine) == len(theirs) == 2 and mine | theirs == all4
            assert second.stop() in (0, 143)
            assert [e["name"] for e in second.seen][-1] == "partitions_assigned"
        finally:
            if second.proc.poll() is None:
                second.proc.kill()
        first.next("partitions_revoked")
        assert tps(first.next("partitions_assigned")) == all4
        assert first.stop() == 0
        rest = []
        while (e := first.events.get(timeout=60)) is not None:
            rest.append(e["name"])
        assert rest[-3:] == ["shutdown_requested", "partitions_revoked", "shutdown_complete"]
        consumed = sum(e["count"] for e in first.seen if e["name"] == "records_consumed")
        assert consumed >= 20
    finally:
        if first.proc.poll() is None:
            first.proc.kill()
    # what the group committed: every partition's end, by one member or the other
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient
    with BrokerClient(b) as c:
        offsets = Admin(c).offset_fetch("split")
        ends = Admin(c).list_offsets({tp: -1 for tp in all4})
    assert {tp: o.offset for tp, o in offsets.items()} == {tp: lo.offset for tp, lo in ends.items()}
    assert sum(lo.offset for lo in ends.values()) == 40


def test_range_assignor_is_kafkas():
    # RangeAssignorTest.testTwoConsumersOneTopicThreePartitions / testMultipleConsumersMixedTopics
    assert range_assign({"c1": ["t"], "c2": ["t"]}, {"t": 3}) == {"c1": [("t", 0), ("t", 1)], "c2": [("t", 2)]}
    assert range_assign({"c1": ["t1"], "c2": ["t1", "t2"], "c3": ["t1"]}, {"t1": 3, "t2": 2}) == {
        "c1": [("t1", 0)], "c2": [("t1", 1), ("t2", 0), ("t2", 1)], "c3": [("t1", 2)]}
    assert assigned_partitions(assignment_bytes([("b", 1), ("a", 0), ("b", 0)])) == [("a", 0), ("b", 0), ("b", 1)]


@pytest.mark.parametrize("args, line", [
    (["--group-protocol", "consumer"], "kproto verifiable-consumer speaks the classic group protocol only"),
    (["--assignment-strategy", "org.apache.kafka.clients.consumer.RoundRobinAssignor"],
     "kproto verifiable-consumer has the RangeAssignor only, not org.apache.kafka.clients.consumer.RoundRobinAssignor"),
])
def test_consumer_errors_are_one_line(broker, args, line):
    assert run_command("verifiable-consumer", broker.bootstrap_servers, "--topic", "t", "--group-id", "g", *args) \
        == (2, "", line + "\n")


def test_producer_stops_cleanly_on_sigterm(broker):
    """Unbounded, throttled; SIGTERM: what was sent was acked, then shutdown_complete and tool_data."""
    b = broker.bootstrap_servers
    create(b, "v-term", 1)
    p = Member(KPROTO + ["verifiable-producer", "--bootstrap-server", b, "--topic", "v-term", "--throughput", "200"])
    try:
        for _ in range(5):
            p.next("producer_send_success")
        assert p.stop() == 0
        while (e := p.events.get(timeout=60)) is not None:
            p.seen.append(e)
    finally:
        if p.proc.poll() is None:
            p.proc.kill()
    names = [e["name"] for e in p.seen]
    assert names[0] == "startup_complete" and names[-2:] == ["shutdown_complete", "tool_data"]
    tool = p.seen[-1]
    assert tool["sent"] == tool["acked"] == names.count("producer_send_success") >= 5
    assert tool["target_throughput"] == 200
    offsets = [e["offset"] for e in p.seen if e["name"] == "producer_send_success"]
    assert offsets == list(range(len(offsets)))
