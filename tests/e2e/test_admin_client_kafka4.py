"""confluent-kafka's AdminClient on the admin APIs kproto added for Kafka 4 (ElectLeaders,
DeleteRecords, DescribeCluster, Metadata-based describe_topics, offsets of a KIP-848 group),
each call made of kproto's broker and of Apache Kafka 4.4's (the ``broker`` fixture): the same
outcome. The Java Admin covers what confluent-kafka lacks (describeFeatures, updateFeatures and
describeMetadataQuorum through Kafka's FeatureCommand and MetadataQuorumCommand:
tests/parity/test_kafka_parity_features.py; describeTopics over DescribeTopicPartitions,
deleteRecords, share groups and delegation tokens: tests/e2e/test_java_client.py,
tests/e2e/test_delegation_tokens.py; DescribeLogDirs and OffsetDelete: LogDirsCommand and
ConsumerGroupCommand in tests/parity/test_kafka_ref_tools.py)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import (
    Consumer, ConsumerGroupTopicPartitions, ElectionType, KafkaException, Producer, TopicCollection,
    TopicPartition as TP,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from kproto.schemas import protocol as P
from tests.components import KAFKA, KPROTO, Peer
from tests.e2e.test_client_apis import create
from tests.helpers import request_raw

pytestmark = pytest.mark.brokers(KPROTO, KAFKA)

NOT_NEEDED = (84, "Leader election not needed for topic partition.")


def _error(e) -> tuple[int, str] | None:
    if e is None:
        return None
    err = e if hasattr(e, "code") else e.args[0]
    return err.code(), err.str()


def test_elect_leaders_on_one_node(broker):
    """ReplicationControlManager.electLeaders on a one-node cluster: every leader is already its
    partition's preferred (and only) replica, so preferred and unclean elections alike answer
    ELECTION_NOT_NEEDED; a partition or topic the cluster lacks UNKNOWN_TOPIC_OR_PARTITION with
    Kafka's message; all partitions (null) lists no partition at all."""
    bs = broker.bootstrap
    topic = create(bs, Peer.unique("elect"), 2)
    admin = AdminClient({"bootstrap.servers": bs})
    for election in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        out = admin.elect_leaders(election, [TP(topic, 0), TP(topic, 5), TP(topic + "-none", 0)]).result(timeout=30)
        assert {(tp.topic, tp.partition): _error(e) for tp, e in out.items()} == {
            (topic, 0): NOT_NEEDED, (topic, 5): (3, f"No such partition as {topic}-5"),
            (topic + "-none", 0): (3, f"No such topic as {topic}-none")}
        assert admin.elect_leaders(election, None).result(timeout=30) == {}
    # the frame: null asks for every partition, each topic is listed with none of them
    r = request_raw(bs, P.elect_leaders.API.key, 2, {"election_type": 0, "topic_partitions": None,
                                                       "timeout_ms": 1000})
    results = {x.topic: list(x.partition_result) for x in r.replica_election_results}
    assert r.error_code == 0 and results[topic] == [] and not any(results.values())


def test_describe_cluster_and_topics(broker):
    bs = broker.bootstrap
    topic = create(bs, Peer.unique("describe"), 3)
    admin = AdminClient({"bootstrap.servers": bs})
    cluster = admin.describe_cluster().result(timeout=30)
    assert len(cluster.nodes) == 1 and cluster.controller is not None and cluster.cluster_id
    (d,) = admin.describe_topics(TopicCollection([topic])).values()
    d = d.result(timeout=30)
    assert (d.name, d.is_internal, len(d.partitions)) == (topic, False, 3)
    assert d.topic_id is not None
    assert [(p.id, p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr]) for p in d.partitions] == [
        (i, cluster.nodes[0].id, [cluster.nodes[0].id], [cluster.nodes[0].id]) for i in range(3)]
    (missing,) = admin.describe_topics(TopicCollection([topic + "-none"])).values()
    with pytest.raises(KafkaException) as e:
        missing.result(timeout=30)
    assert e.value.args[0].code() == 3


def test_delete_records(broker):
    bs = broker.bootstrap
    topic = create(bs, Peer.unique("delrec"), 1)
    p = Producer({"bootstrap.servers": bs})
    for i in range(5):
        p.produce(topic, value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": bs})
    (f,) = admin.delete_records([TP(topic, 0, 3)]).values()
    assert f.result(timeout=30).low_watermark == 3
    (f,) = admin.list_offsets({TP(topic, 0): OffsetSpec.earliest()}).values()
    assert f.result(timeout=30).offset == 3
    (f,) = admin.delete_records([TP(topic, 0, 9)]).values()
    with pytest.raises(KafkaException) as e:
        f.result(timeout=30)
    assert e.value.args[0].code() == 1          # OFFSET_OUT_OF_RANGE: beyond the high watermark


def test_offsets_of_a_consumer_protocol_group(broker):
    """list_consumer_group_offsets and alter_consumer_group_offsets on a KIP-848 group: read while
    it has a member; an admin commit (no member, epoch -1) to the group with a member is
    UNKNOWN_MEMBER_ID (ConsumerGroup.validateOffsetCommit), to the group left empty accepted."""
    bs = broker.bootstrap
    topic, group = create(bs, Peer.unique("cg-offsets"), 2), Peer.unique("g")
    p = Producer({"bootstrap.servers": bs})
    for i in range(6):
        p.produce(topic, value=b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": bs})
    request = [ConsumerGroupTopicPartitions(group, [TP(topic, 0), TP(topic, 1)])]

    def offsets() -> list[int]:
        (f,) = admin.list_consumer_group_offsets(request).values()
        return [tp.offset for tp in sorted(f.result(timeout=30).topic_partitions, key=lambda tp: tp.partition)]

    def alter(offsets_: list[int]) -> list:
        (f,) = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
            group, [TP(topic, i, o) for i, o in enumerate(offsets_)])]).values()
        try:
            return [None if tp.error is None else tp.error.code() for tp in f.result(timeout=30).topic_partitions]
        except KafkaException as e:
            return [e.args[0].code()]

    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        seen, deadline = 0, time.monotonic() + 90
        while seen < 6 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen += 1
        assert seen == 6
        c.commit(asynchronous=False)
        assert offsets() == [3, 3]
        assert alter([1, 1]) == [25, 25]         # UNKNOWN_MEMBER_ID on each partition
        assert offsets() == [3, 3]
    finally:
        c.close()
    deadline = time.monotonic() + 60
    while (errors := alter([1, 2])) != [None, None] and time.monotonic() < deadline:
        time.sleep(0.2)                          # the member's leave is appended
    assert errors == [None, None]
    assert offsets() == [1, 2]
