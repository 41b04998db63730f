"""APIs Kafka 4 serves to clients beyond the classic set (DescribeTopicPartitions,
OffsetDelete, DescribeLogDirs, OffsetForLeaderEpoch), each asked of kproto's broker and of
Apache Kafka's with the same frames or the same client calls: the same answers."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from kproto.errors import ErrorCode
from kproto.records import NewRecord, build_record_batch
from kproto.schemas import protocol as P
from kproto.security.acl import SUPPORTED_OPERATIONS, ResourceType as R
from tests.components import KAFKA, KPROTO, Peer
from tests.helpers import produce_raw, request_raw, until_served

pytestmark = pytest.mark.brokers(KPROTO, KAFKA)
ALL_TOPIC_OPERATIONS = sum(1 << op for op in SUPPORTED_OPERATIONS[R.TOPIC])


def create(bootstrap: str, name: str, partitions: int) -> str:
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
    until_served(bootstrap, name)
    return name


def describe_partitions(bootstrap: str, names: list[str], limit: int, cursor: tuple[str, int] | None = None):
    body = {"topics": [{"name": n} for n in names], "response_partition_limit": limit,
            "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]}}
    return request_raw(bootstrap, P.describe_topic_partitions.API.key, 0, body)


def pages(response) -> tuple[list[tuple], tuple | None]:
    """(each topic as (error, name, is_internal, partition indexes, leader epochs, operations), next cursor)."""
    topics = [(t.error_code, t.name, t.is_internal, [p.partition_index for p in t.partitions],
               {(p.leader_epoch, tuple(p.replica_nodes), tuple(p.isr_nodes), p.eligible_leader_replicas is None)
                for p in t.partitions}, t.topic_authorized_operations) for t in response.topics]
    c = response.next_cursor
    return topics, None if c is None else (c.topic_name, c.partition_index)


def test_describe_topic_partitions_pages_by_cursor(broker):
    """KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse: topics sorted by name,
    cut after ``response_partition_limit`` partitions; the cursor resumes mid-topic or at
    the next topic's partition 0."""
    a = create(broker.bootstrap, Peer.unique("dtp-a"), 3)
    b = a.replace("dtp-a", "dtp-b")
    create(broker.bootstrap, b, 2)
    ok = {(0, (1,), (1,), False)}     # leader epoch 0, node 1 the one replica, in sync; ELR []
    topics, cursor = pages(describe_partitions(broker.bootstrap, [b, a], 2))
    assert (topics, cursor) == ([(0, a, False, [0, 1], ok, ALL_TOPIC_OPERATIONS)], (a, 2))
    topics, cursor = pages(describe_partitions(broker.bootstrap, [b, a], 1, cursor))
    assert (topics, cursor) == ([(0, a, False, [2], ok, ALL_TOPIC_OPERATIONS)], (b, 0))
    topics, cursor = pages(describe_partitions(broker.bootstrap, [b, a], 5, cursor))
    assert (topics, cursor) == ([(0, b, False, [0, 1], ok, ALL_TOPIC_OPERATIONS)], None)
    # a limit below 1 is 1; a topic missing or unnamed-able answers its error and takes no room
    missing = a.replace("dtp-a", "dtp-0")
    topics, cursor = pages(describe_partitions(broker.bootstrap, [a, missing, "bad/name"], 0))
    assert (topics, cursor) == ([(ErrorCode.INVALID_TOPIC_EXCEPTION, "bad/name", False, [], set(), ALL_TOPIC_OPERATIONS),
                                 (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, missing, False, [], set(), ALL_TOPIC_OPERATIONS),
                                 (0, a, False, [0], ok, ALL_TOPIC_OPERATIONS)], (a, 1))


def test_describe_topic_partitions_rejects_a_cursor_outside_the_request(broker):
    """DescribeTopicPartitionsRequestHandler: the cursor's topic must be one of the named
    topics, its partition not negative; else every named topic answers INVALID_REQUEST."""
    a = create(broker.bootstrap, Peer.unique("dtp-c"), 1)
    r = describe_partitions(broker.bootstrap, [a], 10, (a + "x", 0))
    assert pages(r) == ([(ErrorCode.INVALID_REQUEST, a, False, [], set(), -2147483648)], None)
    r = describe_partitions(broker.bootstrap, [a], 10, (a, -1))
    assert pages(r) == ([(ErrorCode.INVALID_REQUEST, a, False, [], set(), -2147483648)], None)


def test_describe_log_dirs_through_kafka_python(broker):
    """kafka-python's describe_log_dirs (DescribeLogDirs, every partition): one absolute
    directory, no error, each partition's size in bytes, offset lag 0, no future replica."""
    topic = create(broker.bootstrap, Peer.unique("ldirs"), 2)
    records = build_record_batch([NewRecord(b"k", b"v" * 100)])
    assert produce_raw(broker.bootstrap, topic, 1, records).error_code == 0
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        ((node,),) = [[(b["broker"], len(b["log_dirs"]))] for b in a.describe_log_dirs()]
        (result,) = a.describe_log_dirs()[0]["log_dirs"]
    finally:
        a.close()
    assert node == (1, 1)
    assert result["error_code"] == 0 and result["log_dir"].startswith("/") and result["is_cordoned"] is False
    assert 0 < result["usable_bytes"] <= result["total_bytes"]
    (mine,) = [t for t in result["topics"] if t["name"] == topic]
    assert sorted(mine["partitions"], key=lambda p: p["partition_index"]) == [
        {"partition_index": 0, "partition_size": 0, "offset_lag": 0, "is_future_key": False},
        {"partition_index": 1, "partition_size": len(records), "offset_lag": 0, "is_future_key": False}]


def test_describe_log_dirs_of_named_partitions(broker):
    """A request naming partitions answers those only (a missing one is left out)."""
    topic = create(broker.bootstrap, Peer.unique("ldirs"), 2)
    body = {"topics": [{"topic": topic, "partitions": [1, 7]}, {"topic": topic + "-none", "partitions": [0]}]}
    r = request_raw(broker.bootstrap, P.describe_log_dirs.API.key, 4, body)
    assert r.error_code == 0 and len(r.results) == 1
    assert [(t.name, [(p.partition_index, p.partition_size, p.offset_lag, p.is_future_key) for p in t.partitions])
            for t in r.results[0].topics] == [(topic, [(1, 0, 0, False)])]


def end_offsets(bootstrap: str, topic: str, asks: list[tuple[int, int, int]]) -> list[tuple[int, int, int, int]]:
    """OffsetForLeaderEpoch v4 for (partition, current leader epoch, leader epoch) each:
    (partition, error, leader epoch, end offset) each."""
    body = {"replica_id": -1, "topics": [{"topic": topic, "partitions": [
        {"partition": p, "current_leader_epoch": c, "leader_epoch": e} for p, c, e in asks]}]}
    (t,) = request_raw(bootstrap, P.offset_for_leader_epoch.API.key, 4, body).topics
    return [(p.partition, p.error_code, p.leader_epoch, p.end_offset) for p in t.partitions]


def test_offset_for_leader_epoch_from_the_epoch_cache(broker):
    """LeaderEpochFileCache.endOffsetFor on a partition led by one leader since creation
    (epoch 0): the current epoch ends at the log end offset, a later one is unknown, an
    earlier one ends where epoch 0 starts; Partition.checkCurrentLeaderEpoch fences."""
    topic = create(broker.bootstrap, Peer.unique("ofle"), 2)
    batch = build_record_batch([NewRecord(b"k", b"v"), NewRecord(b"k", b"w"), NewRecord(b"k", b"x")])
    assert produce_raw(broker.bootstrap, topic, 0, batch).error_code == 0
    assert end_offsets(broker.bootstrap, topic, [(0, -1, 0), (0, 0, 0), (1, -1, 0), (0, -1, 3), (0, -1, -1),
                                                 (0, -1, -2), (0, 1, 0), (9, -1, 0)]) == [
        (0, 0, 0, 3), (0, 0, 0, 3), (1, 0, 0, 0), (0, 0, -1, -1), (0, 0, -1, -1),
        (0, 0, -2, 0), (0, ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1), (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]
