"""Consumer groups on the reference broker with real clients: librdkafka
(confluent-kafka, kcat -G), kafka-python and aiokafka. No mocks.

The invariant checked after every rebalance is the coordinator's own record
of the generation (DescribeGroups): each partition assigned to exactly one
member. Commits are read back through kproto's admin client and survive a
broker restart (they live in __consumer_offsets).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from kproto.client.admin import Admin, NewTopic, OffsetAndMetadata
from kproto.client.transport import BrokerClient
from kproto.schemas.consumer_offsets import ConsumerProtocolAssignment
from tests.components import KAFKA, KPROTO, kproto_broker, require_executable
from tests.helpers import until_served

FAST = ("group.initial.rebalance.delay.ms=0",)


def admin_call(bootstrap: str, fn):
    with BrokerClient(bootstrap) as client:
        admin = Admin(client)
        try:
            return fn(admin)
        finally:
            admin.close()


def create(bootstrap: str, topic: str, partitions: int) -> None:
    result = admin_call(bootstrap, lambda a: a.create_topics([NewTopic(topic, partitions, 1)]))
    assert result[topic].error == 0, result
    until_served(bootstrap, topic)      # Kafka's broker serves it once its metadata log got there


def produce(bootstrap: str, topic: str, n: int, tag: str) -> set[bytes]:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = {f"{tag}-{i}".encode() for i in range(n)}
    for v in sorted(values):
        p.produce(topic, key=v, value=v)
    assert p.flush(20) == 0
    return values


def assignments(bootstrap: str, group: str) -> tuple[str, dict[str, set[tuple[str, int]]]]:
    """(state, member id -> its partitions) as the coordinator holds them."""
    described = admin_call(bootstrap, lambda a: a.describe_groups([group]))[group]
    out = {}
    for m in described.members:
        parts = set()
        if m.assignment:
            for tp in ConsumerProtocolAssignment.parse(m.assignment).data.assigned_partitions:
                parts |= {(tp.topic, p) for p in tp.partitions}
        out[m.member_id] = parts
    return described.state, out


def wait_stable(bootstrap: str, group: str, members: int, partitions: set, consumers=(),
                timeout: float = 40) -> dict:
    """Poll ``consumers`` until the group is Stable with ``members`` members
    whose assignments are disjoint and cover ``partitions``."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.05)
        state, owned = assignments(bootstrap, group)
        last = (state, owned)
        if state == "Stable" and len(owned) == members:
            every = [tp for parts in owned.values() for tp in parts]
            assert len(every) == len(set(every)), f"a partition has two owners: {owned}"
            if set(every) == partitions:
                return owned
    raise AssertionError(f"group {group} not stable with {members} members: {last}")


def ck_consumer(bootstrap: str, group: str, **conf) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                     "enable.auto.commit": False, **conf})


MEMBER_SCRIPT = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    bootstrap, group, topic, out = sys.argv[1:5]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "enable.auto.commit": False})
    c.subscribe([topic])
    with open(out, "a", buffering=1) as f:
        while True:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                f.write(m.value().decode() + "\\n")
                c.commit(m, asynchronous=False)
""")


def test_three_members_six_partitions_leave_kill_and_restart(tmp_path):
    topic, group = "orders", "g3"
    partitions = {(topic, p) for p in range(6)}
    data = tmp_path / "data"
    with kproto_broker(tmp_path, *FAST, data_dir=data) as bs:
        create(bs, topic, 6)
        script = tmp_path / "member.py"
        script.write_text(MEMBER_SCRIPT)
        seen_by_child = tmp_path / "child.txt"
        child = subprocess.Popen([sys.executable, str(script), bs, group, topic, str(seen_by_child)],
                                 start_new_session=True)
        try:
            c1, c2 = ck_consumer(bs, group), ck_consumer(bs, group)
            for c in (c1, c2):
                c.subscribe([topic])
            owned = wait_stable(bs, group, 3, partitions, (c1, c2))
            assert sorted(len(p) for p in owned.values()) == [2, 2, 2]

            # Steady state: every message consumed exactly once across the three.
            sent = produce(bs, topic, 600, "steady")
            got: list[bytes] = []
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                for c in (c1, c2):
                    m = c.poll(0.05)
                    if m is not None and m.error() is None:
                        got.append(m.value())
                        c.commit(m, asynchronous=False)
                child_got = seen_by_child.read_text().split() if seen_by_child.exists() else []
                if len(got) + len(child_got) >= 600:
                    break
            child_got = [v.encode() for v in seen_by_child.read_text().split()]
            everything = got + child_got
            assert len(everything) == len(set(everything)) == 600
            assert set(everything) == sent

            # A member leaves: the other two take its partitions, nobody twice.
            c2.close()
            owned = wait_stable(bs, group, 2, partitions, (c1,))
            # A member is killed: its session expires, the survivor owns everything.
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            owned = wait_stable(bs, group, 1, partitions, (c1,), timeout=60)
            assert list(owned.values()) == [partitions]
            committed = admin_call(bs, lambda a: a.offset_fetch(group))
            assert sum(o.offset for o in committed.values()) == 600
            c1.close()
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
    # Commits live in __consumer_offsets: a restart reads them back.
    with kproto_broker(tmp_path, *FAST, data_dir=data) as bs:
        again = admin_call(bs, lambda a: a.offset_fetch(group))
        assert again == committed
        state, _ = assignments(bs, group)
        assert state == "Empty"


@pytest.fixture(scope="module")
def broker_dir(tmp_path_factory):
    """(bootstrap, data dir) of one broker shared by the tests below."""
    tmp = tmp_path_factory.mktemp("groups")
    with kproto_broker(tmp, *FAST, data_dir=tmp / "data") as bootstrap:
        yield bootstrap, tmp / "data"


def committed(bootstrap: str, group: str) -> dict:
    return {tp: o.offset for tp, o in admin_call(bootstrap, lambda a: a.offset_fetch(group)).items()}


@pytest.mark.brokers(KPROTO, KAFKA)
def test_kafka_python_group_consumes_and_commits(broker):
    bs = broker.bootstrap
    topic = broker.unique("kp-topic")
    group = broker.unique("kp-group")
    from kafka import KafkaConsumer
    create(bs, topic, 2)
    sent = produce(bs, topic, 50, "kp")
    consumer = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=15000)
    got = set()
    for m in consumer:
        got.add(m.value)
        if len(got) == 50:
            break
    consumer.commit()
    consumer.close()
    assert got == sent
    assert sum(committed(bs, group).values()) == 50


@pytest.mark.brokers(KPROTO, KAFKA)
def test_aiokafka_group_consumes_and_commits(broker):
    bs = broker.bootstrap
    topic = broker.unique("aio-topic")
    group = broker.unique("aio-group")
    from aiokafka import AIOKafkaConsumer
    create(bs, topic, 3)
    sent = produce(bs, topic, 60, "aio")

    async def run() -> set:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bs, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        got = set()
        try:
            async with asyncio.timeout(30):
                async for m in consumer:
                    got.add(m.value)
                    if len(got) == 60:
                        break
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == sent
    assert sum(committed(bs, group).values()) == 60


@pytest.mark.brokers(KPROTO, KAFKA)
def test_kcat_balanced_consumer_commits(broker, tmp_path):
    bs = broker.bootstrap
    topic = broker.unique("kcat-topic")
    group = broker.unique("kcat-group")
    kcat = require_executable("kcat", "apt-get install kcat")
    create(bs, topic, 2)
    sent = produce(bs, topic, 20, "kc")
    out = tmp_path / "kcat.out"
    with open(out, "w") as sink:
        proc = subprocess.Popen([kcat, "-b", bs, "-G", group, topic, "-u", "-f", "%s\\n",
                                 "-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true",
                                 "-X", "auto.commit.interval.ms=200"],
                                stdout=sink, stderr=subprocess.DEVNULL)
    got: set[bytes] = set()
    try:
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            time.sleep(0.2)
            got = {line.encode() for line in out.read_text().split()}
        deadline = time.monotonic() + 10
        while sum(committed(bs, group).values()) < 20 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)     # kcat leaves the group and commits on SIGINT
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert got == sent
    assert sum(committed(bs, group).values()) == 20


def test_offsets_topic_is_readable_by_dump_log(broker_dir):
    """The coordinator's records are ordinary batches in __consumer_offsets that
    dump-log's --offsets-decoder renders (the same as Kafka's tool would)."""
    broker, data_dir = broker_dir
    create(broker, "dumped", 1)
    admin_call(broker, lambda a: a.offset_commit("dump-me", {("dumped", 0): OffsetAndMetadata(7, "note")}))
    md = admin_call(broker, lambda a: a.metadata(["__consumer_offsets"]))
    topic = md.topics["__consumer_offsets"]
    assert topic.is_internal and len(topic.partitions) == 50
    from kproto.server.runtime.state_topic import partition_for
    part = partition_for("dump-me", 50)
    seg = sorted((data_dir / f"__consumer_offsets-{part}").glob("*.log"))[0]
    out = subprocess.run([str(Path(sys.executable).parent / "kproto"), "dump-log", "--files", str(seg),
                          "--offsets-decoder"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert ('key: {"type":"1","data":{"group":"dump-me","topic":"dumped","partition":0}} '
            'payload: {"version":"3","data":{"offset":7,"leaderEpoch":-1,"metadata":"note",'
            in out.stdout), out.stdout


@pytest.mark.brokers(KPROTO, KAFKA)
def test_offset_commit_for_a_missing_topic_or_partition(broker):
    """KafkaApis.handleOffsetCommitRequest: partitions the broker does not have answer
    UNKNOWN_TOPIC_OR_PARTITION (3) and are not stored; the others are committed, their
    results after the errors (OffsetCommitResponse.Builder.merge). librdkafka's 0030."""
    bs = broker.bootstrap
    known = broker.unique("oc-known")
    missing = broker.unique("oc-nonexistent")
    raw = broker.unique("oc-raw")
    raw_none = broker.unique("oc-raw-none")
    ck = broker.unique("oc-ck")
    from confluent_kafka import KafkaError, KafkaException, TopicPartition
    from kproto.schemas import protocol as P
    create(bs, known, 2)
    with BrokerClient(bs) as client:
        r = client.request(P.offset_commit.API.key, {
            "group_id": raw, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "retention_time_ms": -1, "topics": [
                {"name": known, "partitions": [
                    {"partition_index": i, "committed_offset": 5, "committed_leader_epoch": -1,
                     "committed_metadata": ""} for i in (0, 7, 1)]},
                {"name": missing, "partitions": [
                    {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                     "committed_metadata": ""}]}]}, version=8)
        assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
            (known, [(7, 3), (0, 0), (1, 0)]), (missing, [(0, 3)])]
        r = client.request(P.offset_commit.API.key, {
            "group_id": raw_none, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "retention_time_ms": -1, "topics": [{"name": missing, "partitions": [
                {"partition_index": 2, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]}, version=2)
        assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
            (missing, [(2, 3)])]
    assert committed(bs, raw) == {(known, 0): 5, (known, 1): 5}
    assert committed(bs, raw_none) == {}

    c = Consumer({"bootstrap.servers": bs, "group.id": ck, "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as e:      # librdkafka raises the partition's error
            c.commit(offsets=[TopicPartition("nonexistent", 0, 5), TopicPartition(known, 1, 9)],
                     asynchronous=False)
        assert e.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, e.value
    finally:
        c.close()
    assert committed(bs, ck) == {(known, 1): 9}
