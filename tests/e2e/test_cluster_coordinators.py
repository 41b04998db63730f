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
from kproto.common import GROUP_METADATA_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.server.runtime.state_topic import partition_for
from kproto.testing import Cluster

OFFSETS_PARTITIONS = 5


@pytest.fixture
def cluster(tmp_path):
    with Cluster(brokers=3, data_dir=tmp_path / "cluster",
                 config={"offsets.topic.num.partitions": OFFSETS_PARTITIONS}) as c:
        yield c
        running = [i for i, b in c.nodes.items() if b.running]
    assert {i: c.nodes[i].returncode for i in running} == dict.fromkeys(running, 0)


def find_coordinator(servers: str, group: str):
    with BrokerClient(servers) as client:
        r = client.request(P.find_coordinator.API.key, {"key_type": 0, "coordinator_keys": [group], "key": group})
    return r.coordinators[0] if "coordinators" in r else r


def wait_for_coordinator(cluster: Cluster, group: str, not_in=(), timeout: float = 120):
    """FindCoordinator's answer once it names a live node outside ``not_in`` (the topic is
    created by the first FindCoordinator, COORDINATOR_NOT_AVAILABLE meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        a = find_coordinator(cluster.bootstrap_servers, group)
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
