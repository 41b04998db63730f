"""The coordinators of a kproto cluster follow their state partitions' leaders
(docs/cluster.md): ``__consumer_offsets`` is created through the controller and
replicated like any topic, FindCoordinator names the leader of the group's
partition, and a SIGKILLed coordinator's groups and offsets are served by the
partition's next leader. Three ``kproto serve`` processes, real clients."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.client.transport import BrokerClient
from kproto.common import GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.server.runtime.state_topic import partition_for
from kproto.testing import Cluster

OFFSETS_PARTITIONS = 5


@pytest.fixture
def cluster(tmp_path):
    with Cluster(brokers=3, data_dir=tmp_path / "cluster",
                 config={"offsets.topic.num.partitions": OFFSETS_PARTITIONS,
                         "transaction.state.log.num.partitions": OFFSETS_PARTITIONS}) as c:
        yield c
        running = [i for i, b in c.nodes.items() if b.running]
    assert {i: c.nodes[i].returncode for i in running} == dict.fromkeys(running, 0)


def find_coordinator(servers: str, key: str, key_type: int = 0):
    with BrokerClient(servers) as client:
        r = client.request(P.find_coordinator.API.key, {"key_type": key_type, "coordinator_keys": [key], "key": key})
    return r.coordinators[0] if "coordinators" in r else r


def wait_for_coordinator(cluster: Cluster, key: str, not_in=(), timeout: float = 120, key_type: int = 0):
    """FindCoordinator's answer once it names a live node outside ``not_in`` (the topic is
    created by the first FindCoordinator, COORDINATOR_NOT_AVAILABLE meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        a = find_coordinator(cluster.bootstrap_servers, key, key_type)
        if a.error_code == 0 and a.node_id not in not_in:
            return a
        assert a.error_code in (0, ErrorCode.COORDINATOR_NOT_AVAILABLE), a
        assert time.monotonic() < deadline, a
        time.sleep(0.1)


def consume(consumer: Consumer, n: int, timeout: float = 120) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, f"{len(out)} of {n} records"
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            out.append((m.partition(), m.offset()))
    return out


def test_offsets_topic_is_the_controllers_and_find_coordinator_names_the_partitions_leader(cluster):
    a = wait_for_coordinator(cluster, "g")
    p = partition_for("g", OFFSETS_PARTITIONS)
    md = cluster.metadata([GROUP_METADATA_TOPIC_NAME])
    topic = md.topics[GROUP_METADATA_TOPIC_NAME]
    assert len(topic.partitions) == OFFSETS_PARTITIONS
    # offsets.topic.replication.factor: Kafka's default 3 on a node of a cluster
    assert all(len(q.replicas) == 3 for q in topic.partitions)
    assert a.node_id == cluster.leader(GROUP_METADATA_TOPIC_NAME, p)
    assert f"{a.host}:{a.port}" == cluster.nodes[a.node_id].bootstrap_servers
    # every node answers the same
    assert {find_coordinator(b.bootstrap_servers, "g").node_id for b in cluster.nodes.values()} == {a.node_id}


def test_group_reforms_on_the_new_coordinator_and_its_offsets_survive_a_sigkill(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("work", 3, replication_factor=3)])["work"].result(timeout=60)
    for q in range(3):
        cluster.wait_for_isr("work", q, [1, 2, 3])
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(60):
        p.produce("work", value=b"%d" % i, partition=i % 3)
    assert p.flush(60) == 0
    wait_for_coordinator(cluster, "probe")          # creates __consumer_offsets
    for q in range(OFFSETS_PARTITIONS):
        cluster.wait_for_isr(GROUP_METADATA_TOPIC_NAME, q, [1, 2, 3])
    # a group coordinated off the controller's node (node 1 is never killed: docs/cluster.md)
    group = next(g for g in (f"group-{i}" for i in range(100))
                 if cluster.leader(GROUP_METADATA_TOPIC_NAME, partition_for(g, OFFSETS_PARTITIONS)) != 1)
    offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
    old = wait_for_coordinator(cluster, group).node_id
    assert old == cluster.leader(GROUP_METADATA_TOPIC_NAME, offsets_partition) != 1

    conf = {"bootstrap.servers": cluster.nodes[1].bootstrap_servers, "group.id": group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 6000}
    first = Consumer(conf)
    first.subscribe(["work"])
    before = consume(first, 30)
    first.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in first.committed(
        [TopicPartition("work", q) for q in range(3)], timeout=30)}
    # what was consumed per partition is exactly below the committed offsets (none committed:
    # OFFSET_INVALID, -1001)
    assert committed == {q: 1 + max((o for pq, o in before if pq == q), default=-1002) for q in range(3)}

    cluster.kill(old)
    new = cluster.wait_for_leader(GROUP_METADATA_TOPIC_NAME, offsets_partition, not_in=[old], timeout=120)
    assert wait_for_coordinator(cluster, group, not_in=[old]).node_id == new

    # the same member goes on with the group on its new coordinator: everything past the
    # commit, nothing before it again
    after = consume(first, 60 - sum(max(o, 0) for o in committed.values()))
    first.commit(asynchronous=False)
    assert set(after).isdisjoint(before)
    assert sorted(before + after) == sorted((q, o) for q in range(3) for o in range(20))
    assert {tp.partition: tp.offset for tp in first.committed(
        [TopicPartition("work", q) for q in range(3)], timeout=30)} == dict.fromkeys(range(3), 20)
    first.close()

    # and a new member of the group starts from the offsets the new coordinator loaded
    second = Consumer(conf)
    try:
        assert {tp.partition: tp.offset for tp in second.committed(
            [TopicPartition("work", q) for q in range(3)], timeout=30)} == dict.fromkeys(range(3), 20)
    finally:
        second.close()


def off_the_controller(cluster: Cluster, topic: str, prefix: str) -> str:
    """A key whose state partition is led by a node other than the controller's (node 1 is
    never killed: docs/cluster.md)."""
    return next(k for k in (f"{prefix}-{i}" for i in range(100))
                if cluster.leader(topic, partition_for(k, OFFSETS_PARTITIONS)) not in (1, -1))


def read_all(cluster: Cluster, topic: str, partitions: int, isolation: str = "read_committed") -> list[bytes]:
    """Every record a consumer of ``isolation`` sees up to each partition's end."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "reader",
                  "isolation.level": isolation, "enable.auto.commit": False})
    try:
        ends = {q: c.get_watermark_offsets(TopicPartition(topic, q), timeout=30)[1] for q in range(partitions)}
        c.assign([TopicPartition(topic, q, 0) for q in range(partitions)])
        out: list[bytes] = []
        deadline = time.monotonic() + 120
        while any(c.position([TopicPartition(topic, q)])[0].offset < end for q, end in ends.items() if end > 0):
            assert time.monotonic() < deadline, (out, ends)
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m.value())
        return out
    finally:
        c.close()


def test_transactions_commit_and_abort_and_survive_the_coordinators_sigkill(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("tx", 3, replication_factor=3)])["tx"].result(timeout=60)
    wait_for_coordinator(cluster, "probe", key_type=1)      # creates __transaction_state
    for q in range(OFFSETS_PARTITIONS):
        cluster.wait_for_isr(TRANSACTION_STATE_TOPIC_NAME, q, [1, 2, 3])
    for q in range(3):
        cluster.wait_for_isr("tx", q, [1, 2, 3])
    txn_id = off_the_controller(cluster, TRANSACTION_STATE_TOPIC_NAME, "txn")
    state_partition = partition_for(txn_id, OFFSETS_PARTITIONS)
    old = wait_for_coordinator(cluster, txn_id, key_type=1).node_id
    assert old == cluster.leader(TRANSACTION_STATE_TOPIC_NAME, state_partition) != 1

    p = Producer({"bootstrap.servers": cluster.nodes[1].bootstrap_servers, "transactional.id": txn_id})
    p.init_transactions(60)

    def transaction(tag: str, commit: bool) -> None:
        p.begin_transaction()
        for i in range(9):
            p.produce("tx", value=b"%s-%d" % (tag.encode(), i), partition=i % 3)
        assert p.flush(60) == 0         # written before the end (an abort purges what is unsent)
        if commit:
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)

    transaction("committed1", True)
    transaction("aborted", False)
    cluster.kill(old)
    new = cluster.wait_for_leader(TRANSACTION_STATE_TOPIC_NAME, state_partition, not_in=[old], timeout=120)
    assert wait_for_coordinator(cluster, txn_id, not_in=[old], key_type=1).node_id == new
    transaction("committed2", True)         # the same producer, on the new coordinator
    transaction("aborted2", False)

    seen = read_all(cluster, "tx", 3)
    assert sorted(seen) == sorted(b"%s-%d" % (t, i) for t in (b"committed1", b"committed2") for i in range(9))
    # the aborted ones are in the logs, ended by ABORT markers on every partition's leader
    everything = read_all(cluster, "tx", 3, "read_uncommitted")
    assert sorted(everything) == sorted(b"%s-%d" % (t, i) for t in (b"committed1", b"committed2", b"aborted",
                                                                     b"aborted2") for i in range(9))


def test_metadata_auto_creates_a_topic_through_the_controller(tmp_path):
    """A producer's Metadata for a missing topic has the controller create it with the
    broker's num.partitions and default.replication.factor (AutoTopicCreationManager):
    LEADER_NOT_AVAILABLE until it is there, then every replica hosts it."""
    with Cluster(brokers=3, data_dir=tmp_path / "cluster",
                 config={"num.partitions": 2, "default.replication.factor": 3}) as cluster:
        p = Producer({"bootstrap.servers": cluster.nodes[2].bootstrap_servers, "acks": "all"})
        for i in range(4):
            p.produce("auto", value=b"%d" % i, partition=i % 2)
        assert p.flush(60) == 0
        topic = cluster.metadata(["auto"]).topics["auto"]
        assert sorted(len(q.replicas) for q in topic.partitions) == [3, 3]
        for q in range(2):
            cluster.wait_for_isr("auto", q, [1, 2, 3])
        assert all((b.data_dir / f"auto-{q}").is_dir() for b in cluster.nodes.values() for q in range(2))
