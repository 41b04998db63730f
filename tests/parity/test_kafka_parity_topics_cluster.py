"""`kproto topics` against the TopicCommandTest methods that need several brokers.

Each test mirrors one test of tools/src/test/java/org/apache/kafka/tools/TopicCommandTest.java
(TCT.java; apache/kafka trunk, /work/.mirror/apache+kafka/repo) that
tests/parity/test_kafka_parity_topics.py could not run on one node. Kafka's tests run 6
brokers (ids 0-5, racks rack1-3); these run on ``peer_cluster`` (tests/conftest.py): 3
nodes, ids 1-3, of kproto's cluster and of Apache Kafka 4.4's, so broker ids and counts
are scaled to those (each test says how), node 1 (the one controller) is never the broker
stopped, and every output is also printed by Kafka's TopicCommand on the same cluster and
diffed (tests/helpers.py describe_on_both).

Not ported: testCreateAlterTopicWithRackAware (per-node ``broker.rack`` over 6 brokers in
3 racks; kproto's controller places replicas rack-unaware: docs/cluster.md) and
testDescribeUnderReplicatedPartitionsWhenReassignmentIsInProgress (a throttled partition
reassignment; AlterPartitionReassignments is another piece of issue 27).
"""

from __future__ import annotations

import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import create_in_cluster as create, describe_on_both
from tests.tools.helpers import topics_ok as ok


def name() -> str:
    """TestUtils.randomString(10): a fresh topic per test."""
    return "t" + uuid.uuid4().hex[:9]


def replicas(cluster, topic: str) -> list[list[int]]:
    t = cluster.metadata([topic]).topics[topic]
    return [list(p.replicas) for p in sorted(t.partitions, key=lambda p: p.partition)]


def test_create_with_default_partitions(peer_cluster):
    """TCT.java testCreateWithDefaultPartitions: NewTopic(name, 1 partition, replication 2)
    (defaultNumPartitions is 1) has 1 partition of 2 replicas."""
    topic = name()
    admin = AdminClient({"bootstrap.servers": peer_cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(timeout=60)
    peer_cluster.wait_for_leader(topic, 0)
    placed = replicas(peer_cluster, topic)
    assert len(placed) == 1 and len(placed[0]) == 2 and len(set(placed[0])) == 2, placed


def test_create_with_replica_assignment(peer_cluster):
    """TCT.java testCreateWithReplicaAssignment: {0: [5, 4], 1: [3, 2], 2: [1, 0]} on brokers
    0-5, here {0: [3, 2], 1: [2, 1], 2: [1, 3]} on 1-3: described as given, in order."""
    topic = name()
    create(peer_cluster, topic, [[3, 2], [2, 1], [1, 3]])
    assert replicas(peer_cluster, topic) == [[3, 2], [2, 1], [1, 3]]


def test_alter_assignment(kafka_ref, peer_cluster):
    """TCT.java testAlterAssignment: 2 partitions of RF 2, then `--alter --replica-assignment
    5:3,3:1,4:2 --partitions 3` (here 3:1,1:2,2:3): the new partition 2 has the third
    entry's replicas (4,2 there, 2,3 here); the existing two are not moved."""
    topic = name()
    create(peer_cluster, topic, partitions=2, replication=2)
    before = replicas(peer_cluster, topic)
    assert ok(peer_cluster.bootstrap_servers, "--alter", "--topic", topic, "--replica-assignment", "3:1,1:2,2:3",
              "--partitions", "3") == ""
    peer_cluster.wait_for_isr(topic, 2, [2, 3])
    assert replicas(peer_cluster, topic) == before + [[2, 3]]
    lines = describe_on_both(kafka_ref, peer_cluster, "--topic", topic).splitlines()
    assert lines[3] == f"\tTopic: {topic}\tPartition: 2\tLeader: 2\tReplicas: 2,3\tIsr: 2,3\tElr: \tLastKnownElr: "


def test_describe_unavailable_partitions(kafka_ref, peer_cluster):
    """TCT.java testDescribeUnavailablePartitions: 6 partitions of RF 1, broker 0 shut down
    (here node 3, SIGTERM: a controlled shutdown): `--describe --topic T --unavailable-partitions`
    lists the stopped broker's partitions, `Leader: none\tReplicas: 0\tIsr:` (3 here)."""
    topic = name()
    create(peer_cluster, topic, partitions=6, replication=1)
    on_three = [p for p, r in enumerate(replicas(peer_cluster, topic)) if r == [3]]
    assert on_three, replicas(peer_cluster, topic)       # striped over the 3 brokers
    peer_cluster.stop(3)
    for p in on_three:
        peer_cluster.wait_for(lambda md, p=p: peer_cluster.partition(topic, p, md).leader == -1 or None,
                              f"{topic}-{p} without a leader")
    rows = describe_on_both(kafka_ref, peer_cluster, "--topic", topic, "--unavailable-partitions").splitlines()
    assert [int(r.split("\tPartition: ")[1].split("\t")[0]) for r in rows] == on_three
    assert all(r.startswith(f"\tTopic: {topic}\t") and "\tLeader: none\tReplicas: 3\tIsr:" in r for r in rows), rows


def test_describe_under_replicated_partitions(kafka_ref, peer_cluster):
    """TCT.java testDescribeUnderReplicatedPartitions: 1 partition of RF 6 (here 3, every
    broker), broker 0 shut down (here 3) and a leader elected: `--describe
    --under-replicated-partitions` lists the topic's partition."""
    topic = name()
    create(peer_cluster, topic, [[1, 2, 3]])
    peer_cluster.stop(3)
    peer_cluster.wait_for_isr(topic, 0, [1, 2])
    rows = [r for r in describe_on_both(kafka_ref, peer_cluster, "--under-replicated-partitions").splitlines()
            if r.startswith(f"\tTopic: {topic}\t")]      # the module's earlier topics too: one cluster
    assert len(rows) == 1 and rows[0].startswith(f"\tTopic: {topic}\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\t"), rows


def test_describe_under_min_isr_partitions_mixed(kafka_ref, peer_cluster):
    """TCT.java testDescribeUnderMinIsrPartitionsMixed: with broker 0 down (here 3), of an RF 6
    topic with min.insync.replicas=6 (here RF 3, min 3), an RF 6 one without (RF 3), one whose
    only replica is broker 0 (3) and one on brokers 1,2,3 (1,2), `--describe
    --under-min-isr-partitions --exclude-internal` lists exactly the first and the offline one."""
    suffix = uuid.uuid4().hex[:6]
    under, not_under, offline, full = (f"{t}-{suffix}" for t in (
        "under-min-isr-topic", "not-under-min-isr-topic", "offline-topic", "fully-replicated-topic"))
    create(peer_cluster, under, [[1, 2, 3]], min_insync_replicas=3)
    create(peer_cluster, not_under, [[1, 2, 3]])
    create(peer_cluster, offline, [[3]])
    create(peer_cluster, full, [[1, 2]])
    peer_cluster.stop(3)
    peer_cluster.wait_for_isr(under, 0, [1, 2])
    peer_cluster.wait_for(lambda md: peer_cluster.partition(offline, 0, md).leader == -1 or None,
                          f"{offline}-0 without a leader")
    rows = [r for r in describe_on_both(kafka_ref, peer_cluster, "--under-min-isr-partitions",
                                        "--exclude-internal").splitlines() if suffix in r]
    # in TopicCommand's order (a HashMap's: tests/tools describe_order), whichever comes first
    assert sorted(r.split("\t")[1] for r in rows) == [f"Topic: {offline}", f"Topic: {under}"], rows
