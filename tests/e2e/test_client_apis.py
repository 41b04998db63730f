"""APIs Kafka 4 serves to clients beyond the classic set (DescribeTopicPartitions,
OffsetDelete, DescribeLogDirs, OffsetForLeaderEpoch), each asked of kproto's broker and of
Apache Kafka's with the same frames or the same client calls: the same answers."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import GroupIdNotFoundError

from kproto.errors import ErrorCode
from kproto.records import NewRecord, build_record_batch
from kproto.schemas import protocol as P
from kproto.security.acl import SUPPORTED_OPERATIONS, ResourceType as R
from tests.components import KAFKA, KPROTO, Peer
from tests.helpers import produce_raw, request_raw, until, until_served

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
    # Kafka's broker may lead the new partition a moment after Metadata names it: a
    # NOT_LEADER_OR_FOLLOWER answer appended nothing, so the batch is sent again.
    until(lambda: produce_raw(broker.bootstrap, topic, 1, records).error_code == 0,
          what="the new partition's leader taking the batch")
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


def in_log_dir(bootstrap: str, topic: str, partitions: int) -> None:
    """Wait until DescribeLogDirs shows the topic's partitions: Kafka's broker creates a new
    partition's log a moment after Metadata names it."""
    def there() -> bool:
        r = request_raw(bootstrap, P.describe_log_dirs.API.key, 4, {"topics": [
            {"topic": topic, "partitions": list(range(partitions))}]})
        return sum(len(t.partitions) for d in r.results for t in d.topics) == partitions
    until(there, what=f"{topic}'s logs")


def test_describe_log_dirs_of_named_partitions(broker):
    """A request naming partitions answers those only (a missing one is left out)."""
    topic = create(broker.bootstrap, Peer.unique("ldirs"), 2)
    in_log_dir(broker.bootstrap, topic, 2)
    body = {"topics": [{"topic": topic, "partitions": [1, 7]}, {"topic": topic + "-none", "partitions": [0]}]}
    r = request_raw(broker.bootstrap, P.describe_log_dirs.API.key, 4, body)
    assert r.error_code == 0 and len(r.results) == 1
    assert [(t.name, [(p.partition_index, p.partition_size, p.offset_lag, p.is_future_key) for p in t.partitions])
            for t in r.results[0].topics] == [(topic, [(1, 0, 0, False)])]



def test_alter_replica_log_dirs_on_one_log_dir(broker):
    """ReplicaManager.alterReplicaLogDirs on a broker with one log dir: moving a replica to
    the dir it is in succeeds and does nothing; another path is LOG_DIR_NOT_FOUND (checked
    first), a partition the broker has not UNKNOWN_TOPIC_OR_PARTITION; a topic whose future
    dir name would pass 255 characters INVALID_TOPIC_EXCEPTION. Partitions named twice: the last wins."""
    topic = create(broker.bootstrap, Peer.unique("aldirs"), 2)
    long_topic = create(broker.bootstrap, Peer.unique("l" * 236), 1)     # 245 characters
    in_log_dir(broker.bootstrap, topic, 2)
    here = request_raw(broker.bootstrap, P.describe_log_dirs.API.key, 4, {"topics": None}).results[0].log_dir
    body = {"dirs": [
        {"path": here + "-elsewhere", "topics": [{"name": topic, "partitions": [0, 1]},
                                                 {"name": topic + "-none", "partitions": [0]}]},
        {"path": here, "topics": [{"name": topic, "partitions": [1, 5]}, {"name": long_topic, "partitions": [0]},
                                  {"name": topic + "-gone", "partitions": [3]}]}]}
    for version in (1, 2):
        r = request_raw(broker.bootstrap, P.alter_replica_log_dirs.API.key, version, body)
        got = {(t.topic_name, p.partition_index, p.error_code) for t in r.results for p in t.partitions}
        assert got == {(topic, 0, ErrorCode.LOG_DIR_NOT_FOUND), (topic, 1, 0),
                       (topic, 5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                       (topic + "-none", 0, ErrorCode.LOG_DIR_NOT_FOUND),
                       (long_topic, 0, ErrorCode.INVALID_TOPIC_EXCEPTION),
                       (topic + "-gone", 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}
        assert sorted(t.topic_name for t in r.results) == sorted([topic, topic + "-none", long_topic, topic + "-gone"])
    # nothing moved: the partition is still there, in the same dir
    after = request_raw(broker.bootstrap, P.describe_log_dirs.API.key, 4, {"topics": [{"topic": topic, "partitions": [1]}]})
    assert [(d.log_dir, [t.name for t in d.topics]) for d in after.results] == [(here, [topic])]

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
    # Kafka's broker can list the leader before its ReplicaManager has the partition
    # (BrokerMetadataPublisher updates the cache first): the produce is retried until taken.
    until(lambda: produce_raw(broker.bootstrap, topic, 0, batch).error_code == 0, what=f"{topic}-0 takes a produce")
    assert end_offsets(broker.bootstrap, topic, [(0, -1, 0), (0, 0, 0), (1, -1, 0), (0, -1, 3), (0, -1, -1),
                                                 (0, -1, -2), (0, 1, 0), (9, -1, 0)]) == [
        (0, 0, 0, 3), (0, 0, 0, 3), (1, 0, 0, 0), (0, 0, -1, -1), (0, 0, -1, -1),
        (0, 0, -2, 0), (0, ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1), (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]


def delete_offsets(bootstrap: str, group: str, partitions: list[tuple[str, int]]) -> dict:
    """kafka-python's delete_group_offsets (OffsetDelete v0): {(topic, partition): error name}."""
    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        out = a.delete_group_offsets(group, [TopicPartition(t, p) for t, p in partitions])
    finally:
        a.close()
    return {(tp.topic, tp.partition): e.__name__ for tp, e in out.items()}


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    a = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [CTopicPartition(topic, p) for p in range(partitions)])
    (result,) = a.list_consumer_group_offsets([request]).values()
    return [tp.offset for tp in sorted(result.result(timeout=30).topic_partitions, key=lambda tp: tp.partition)]


def commit_as_admin(bootstrap: str, group: str, offsets: list[CTopicPartition]) -> None:
    """confluent-kafka's alter_consumer_group_offsets, again while a partition answers an error
    (Kafka's partitions of a topic just created may not be led yet)."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 60
    while True:
        (f,) = a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, offsets)]).values()
        errors = [str(tp.error) for tp in f.result(timeout=30).topic_partitions if tp.error is not None]
        if not errors:
            return
        assert time.monotonic() < deadline, errors
        time.sleep(0.2)


def test_offset_delete_of_an_empty_group(broker):
    """OffsetMetadataManager.deleteOffsets on a group of admin commits (Empty): each named
    partition NONE, whether it had an offset or not, and only the named ones lose theirs;
    a partition or topic the broker lacks is UNKNOWN_TOPIC_OR_PARTITION
    (KafkaApis.handleOffsetDeleteRequest); an unknown group GROUP_ID_NOT_FOUND."""
    topic = create(broker.bootstrap, Peer.unique("odel"), 2)
    group = Peer.unique("odel-g")
    commit_as_admin(broker.bootstrap, group, [CTopicPartition(topic, 0, 5), CTopicPartition(topic, 1, 7)])
    assert delete_offsets(broker.bootstrap, group, [(topic, 0), (topic, 5), (topic + "-none", 0)]) == {
        (topic, 0): "NoError", (topic, 5): "UnknownTopicOrPartitionError",
        (topic + "-none", 0): "UnknownTopicOrPartitionError"}
    assert committed(broker.bootstrap, group, topic, 2) == [-1001, 7]
    assert delete_offsets(broker.bootstrap, group, [(topic, 0), (topic, 1)]) == {
        (topic, 0): "NoError", (topic, 1): "NoError"}
    assert committed(broker.bootstrap, group, topic, 2) == [-1001, -1001]
    with pytest.raises(GroupIdNotFoundError):
        delete_offsets(broker.bootstrap, Peer.unique("odel-none"), [(topic, 0)])


def test_offset_delete_of_a_subscribed_topic(broker):
    """A consumer group with a live member (ClassicGroup.validateOffsetDelete lets a
    ``consumer`` group through): its subscribed topic answers GROUP_SUBSCRIBED_TO_TOPIC on
    each partition and keeps its offset; another topic's partitions NONE."""
    topic = create(broker.bootstrap, Peer.unique("odel-s"), 1)
    other = create(broker.bootstrap, Peer.unique("odel-o"), 1)
    group = Peer.unique("odel-sg")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "session.timeout.ms": 45000})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while not c.assignment():
            assert time.monotonic() < deadline, "no assignment"
            c.poll(0.2)
        c.commit(offsets=[CTopicPartition(topic, 0, 3)], asynchronous=False)
        assert delete_offsets(broker.bootstrap, group, [(topic, 0), (other, 0)]) == {
            (topic, 0): "GroupSubscribedToTopicError", (other, 0): "NoError"}
        assert committed(broker.bootstrap, group, topic, 1) == [3]
    finally:
        c.close()
