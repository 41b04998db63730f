"""`kproto topics` against the TopicCommandTest methods that need several brokers.

Each test mirrors one test of tools/src/test/java/org/apache/kafka/tools/TopicCommandTest.java
(TCT.java; apache/kafka trunk, /work/.mirror/apache+kafka/repo) that
tests/parity/test_kafka_parity_topics.py could not run on one node. Kafka's tests run 6
brokers (ids 0-5, racks rack1-3); these run on ``peer_cluster`` (tests/conftest.py): 3
nodes, ids 1-3, of kproto's cluster and of Apache Kafka 4.4's, so broker ids and counts
are scaled to those (each test says how), node 1 (the one controller) is never the broker
stopped, and every output is also printed by Kafka's TopicCommand on the same cluster and
diffed (tests/helpers.py describe_on_both).

testCreateAlterTopicWithRackAware runs on kproto's cluster only, with Kafka's 6 brokers and
racks (its own ``Cluster``): six more Kafka JVMs next to the module's three are too heavy for
the machines these tests run on, and Kafka's placer starts at random offsets, so its output
is not one to diff, only to check the same way (checkReplicaDistribution).
testDescribeUnderReplicatedPartitionsWhenReassignmentIsInProgress keeps its reassignment in
flight by stopping the target broker instead of throttling replication to 1 byte: a fetch
under the quota is answered in full, so a throttle holds a small partition back only after
its first fetch, while a stopped broker cannot catch up at all.
"""

from __future__ import annotations

import uuid
from collections import Counter

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.testing import Cluster
from tests.e2e.test_cluster_reassign import alter, ongoing
from tests.helpers import create_in_cluster as create, describe_on_both
from tests.tools.helpers import topics_ok as ok

#: TCT.java generate(): brokers 0-5 (1-6 here) in three racks
RACKS = {1: "rack1", 2: "rack2", 3: "rack2", 4: "rack1", 5: "rack3", 6: "rack3"}


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


def check_replica_distribution(assignment: list[list[int]], partitions: int, replication: int) -> None:
    """TCT.java checkReplicaDistribution with all three checks: no broker twice in a partition,
    every partition on ``replication`` racks, preferred leaders and replicas even over the brokers."""
    assert len(assignment) == partitions and all(len(set(r)) == len(r) == replication for r in assignment)
    assert [len({RACKS[b] for b in r}) for r in assignment] == [replication] * partitions
    assert sorted(Counter(r[0] for r in assignment).values()) == [partitions // len(RACKS)] * len(RACKS)
    assert sorted(Counter(b for r in assignment for b in r).values()) == \
        [partitions * replication // len(RACKS)] * len(RACKS)


def test_create_alter_topic_with_rack_aware(tmp_path):
    """TCT.java testCreateAlterTopicWithRackAware: 18 partitions of RF 3 over 6 brokers in 3
    racks are rack aware with even leaders and replicas; `--alter --partitions 36` keeps it so.
    kproto's cluster only (module docstring)."""
    topic = name()
    with Cluster(brokers=6, data_dir=tmp_path, node_config={b: {"broker.rack": r} for b, r in RACKS.items()}) as c:
        c.wait_for(lambda md: len(md.brokers) == 6 or None, "six brokers unfenced")
        assert {b.node_id: b.rack for b in c.metadata().brokers} == RACKS
        create(c, topic, partitions=18, replication=3)
        check_replica_distribution(replicas(c, topic), 18, 3)
        assert ok(c.bootstrap_servers, "--alter", "--partitions", "36", "--topic", topic) == ""
        c.wait_for(lambda md: len(md.topics[topic].partitions) == 36 or None, "36 partitions")
        check_replica_distribution(replicas(c, topic), 36, 3)


def test_describe_under_replicated_partitions_when_reassignment_is_in_progress(kafka_ref, peer_cluster):
    """TCT.java testDescribeUnderReplicatedPartitionsWhenReassignmentIsInProgress: a partition
    of RF 1 with records, reassigned to another broker that cannot catch up (here: stopped, node
    3; there: replication throttled to 1 byte) is listed by `--describe --topic` (2 rows) but
    not by `--under-replicated-partitions` (its adding replica does not count); once the
    target can catch up (here started; there unthrottled) the reassignment completes."""
    topic = name()
    create(peer_cluster, topic, [[2]])
    producer = Producer({"bootstrap.servers": peer_cluster.bootstrap_servers})
    for i in range(20):
        producer.produce(topic, key=f"key{i}", value=f"value{i}")
    assert producer.flush(60) == 0
    peer_cluster.stop(3)
    peer_cluster.wait_for(lambda md: 3 not in {b.node_id for b in md.brokers} or None, "node 3 fenced")
    assert alter(peer_cluster, topic, 0, [3]) == (0, None)
    assert ongoing(peer_cluster)[(topic, 0)] == ([3, 2], [3], [2])
    # ListPartitionReassignments is the controller's answer; Metadata, each broker's image a moment later
    peer_cluster.wait_for(lambda md: (lambda p: p if p is not None and tuple(p.replicas) == (3, 2) else None)(
        peer_cluster.partition(topic, 0, md)), "the reassignment's replicas in every node's Metadata")
    rows = describe_on_both(kafka_ref, peer_cluster, "--topic", topic).splitlines()
    assert len(rows) == 2 and rows[0].startswith(f"Topic: {topic}\t"), rows
    assert rows[1] == (f"\tTopic: {topic}\tPartition: 0\tLeader: 2\tReplicas: 3,2\tIsr: 2\tAdding Replicas: 3"
                       f"\tRemoving Replicas: 2\tElr: \tLastKnownElr: "), rows
    under = describe_on_both(kafka_ref, peer_cluster, "--under-replicated-partitions").splitlines()
    assert [r for r in under if r.startswith(f"\tTopic: {topic}\t")] == []   # the module's other topics may be
    peer_cluster.start(3)
    peer_cluster.wait_for(lambda md: peer_cluster.partition(topic, 0, md).replicas == (3,) or None,
                          "the reassignment completed", timeout=120)
    assert (topic, 0) not in ongoing(peer_cluster)
