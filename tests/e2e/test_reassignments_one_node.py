"""AlterPartitionReassignments and ListPartitionReassignments on one node: kproto answers
what Kafka 4.4's controller answers for a one-broker cluster, each case run against both
(node 1 on each). The cluster's reassignments: tests/e2e/test_cluster_reassign.py."""

from __future__ import annotations

import pytest

from kproto.client.admin import Admin, NewTopic
from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode as E
from kproto.schemas import protocol as P
from tests.components import KAFKA, KPROTO

pytestmark = pytest.mark.brokers(KPROTO, KAFKA)

NOT_REGISTERED = "The manual partition assignment includes broker {}, but no such broker is registered."
CASES = [
    ([1], E.NONE, None),                                   # the partition as it is: done at once
    ([2], E.INVALID_REPLICA_ASSIGNMENT, NOT_REGISTERED.format(2)),
    ([-1], E.INVALID_REPLICA_ASSIGNMENT, NOT_REGISTERED.format(-1)),
    ([1, 1], E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker 1 more than once."),
    ([], E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."),
    (None, E.NO_REASSIGNMENT_IN_PROGRESS, None),           # a cancel with nothing to cancel
]


def _alter(client: BrokerClient, topic: str, partitions: list[tuple[int, list[int] | None]], **extra):
    r = client.request(P.alter_partition_reassignments.API.key, {
        "timeout_ms": 30000, "allow_replication_factor_change": True, **extra,
        "topics": [{"name": topic, "partitions": [{"partition_index": p, "replicas": rs} for p, rs in partitions]}]})
    assert (r.error_code, r.error_message) == (0, None)
    return [(p.partition_index, p.error_code, p.error_message) for t in r.responses for p in t.partitions]


def test_one_node_answers_reassignments_as_kafka(broker):
    topic = broker.unique("reassign")
    with BrokerClient(broker.bootstrap) as client:
        assert Admin(client).create_topics([NewTopic(topic, 2, 1)])[topic].error == E.NONE
        for replicas, error, message in CASES:
            assert _alter(client, topic, [(0, replicas)]) == [(0, error, message)], replicas
        assert _alter(client, topic, [(9, [1]), (9, None)]) == [
            (9, E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:9.")] * 2
        missing = broker.unique("missing")
        assert _alter(client, missing, [(0, [1])]) == [
            (0, E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {missing}.")]
        # asked not to change the replication factor, and naming another broker: the unknown
        # broker is refused first, and the flag echoed
        r = client.request(P.alter_partition_reassignments.API.key, {
            "timeout_ms": 30000, "allow_replication_factor_change": False,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "replicas": [1, 2]}]}]})
        assert r.allow_replication_factor_change is False
        assert r.responses[0].partitions[0].error_message == NOT_REGISTERED.format(2)
        for wanted in (None, [{"name": topic, "partition_indexes": [0, 7]}, {"name": missing, "partition_indexes": [0]}]):
            listed = client.request(P.list_partition_reassignments.API.key, {"timeout_ms": 30000, "topics": wanted})
            assert (listed.error_code, listed.error_message, list(listed.topics)) == (0, None, [])
