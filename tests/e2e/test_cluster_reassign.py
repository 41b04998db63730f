"""Reassignments, leader elections and preferred-leader balancing on a three-node kproto
cluster (issue 27, docs/cluster.md): the controller's records as KRaft writes them
(tests/server/test_cluster_reassignment.py has the rules), seen through Metadata, the
replicas' logs and ListPartitionReassignments. Every wait is on the event (Metadata
showing it); timeouts are safety nets. Node 1 is the controller and never stopped."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode as E
from kproto.schemas import protocol as P
from kproto.testing import Cluster
from tests.e2e.test_cluster import consume_all, create

PREFERRED, UNCLEAN = 0, 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # no balancing here: each election below is asked for (the balancer has its own cluster)
    with Cluster(brokers=3, data_dir=tmp_path_factory.mktemp("reassign"),
                 config={"auto.leader.rebalance.enable": "false"}) as c:
        yield c


def alter(cluster: Cluster, topic: str, partition: int, replicas: list[int] | None) -> tuple[int, str | None]:
    with BrokerClient(cluster.bootstrap_servers) as client:
        r = client.request(P.alter_partition_reassignments.API.key, {
            "timeout_ms": 30000, "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "replicas": replicas}]}]})
    p = r.responses[0].partitions[0]
    return p.error_code, p.error_message


def ongoing(cluster: Cluster) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    with BrokerClient(cluster.bootstrap_servers) as client:
        r = client.request(P.list_partition_reassignments.API.key, {"timeout_ms": 30000, "topics": None})
    assert r.error_code == 0
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in r.topics for p in t.partitions}


def elect(cluster: Cluster, election_type: int, topic: str, partition: int) -> tuple[int, str | None]:
    with BrokerClient(cluster.bootstrap_servers) as client:
        r = client.request(P.elect_leaders.API.key, {"election_type": election_type, "timeout_ms": 30000,
                                                      "topic_partitions": [{"topic": topic, "partitions": [partition]}]})
    p = r.replica_election_results[0].partition_result[0]
    return p.error_code, p.error_message


def wait_for_replicas(cluster: Cluster, topic: str, partition: int, replicas: tuple[int, ...]):
    def check(md):
        p = md.topics[topic].partitions[partition] if topic in md.topics else None
        return p if p is not None and p.replicas == replicas else None
    return cluster.wait_for(check, f"{topic}-{partition} replicas {replicas}")


def produce(cluster: Cluster, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True})
    for i in range(n):
        p.produce(topic, value=b"%d" % i, partition=0)
    assert p.flush(60) == 0


def test_reassignment_in_flight_cancelled_then_completed(cluster):
    create(cluster, "mv", [[1, 2]])
    produce(cluster, "mv", 100)
    cluster.stop(3)                         # the adding replica cannot catch up while it is down
    assert alter(cluster, "mv", 0, [3, 2]) == (E.NONE, None)
    # replicas = target + removing; the leader (1) stays until the target is in the ISR
    md = wait_for_replicas(cluster, "mv", 0, (3, 2, 1))
    assert (md.leader, set(md.isr)) == (1, {1, 2})
    assert ongoing(cluster) == {("mv", 0): ([3, 2, 1], [3], [1])}
    # a cancel drops the adding replica (Kafka keeps the target's order: 2, 1)
    assert alter(cluster, "mv", 0, None) == (E.NONE, None)
    wait_for_replicas(cluster, "mv", 0, (2, 1))
    assert ongoing(cluster) == {}
    assert alter(cluster, "mv", 0, None) == (E.NO_REASSIGNMENT_IN_PROGRESS, None)
    # again, and node 3 comes back: it fetches, joins the ISR, the reassignment completes,
    # node 1 leaves (its log deleted) and the first target replica in the ISR leads
    assert alter(cluster, "mv", 0, [3, 2]) == (E.NONE, None)
    wait_for_replicas(cluster, "mv", 0, (3, 2, 1))
    cluster.start(3)
    md = wait_for_replicas(cluster, "mv", 0, (3, 2))
    assert (md.leader, set(md.isr)) == (3, {2, 3})
    assert ongoing(cluster) == {}
    assert consume_all(cluster, "mv", 0, 100) == [b"%d" % i for i in range(100)]
    node1 = cluster.nodes[1].data_dir / "mv-0"
    cluster.wait_for(lambda md: True if not node1.exists() else None, "node 1's replica of mv-0 deleted")


def test_preferred_and_unclean_elections_through_the_controller(cluster):
    create(cluster, "pref", [[2, 3]])
    assert elect(cluster, PREFERRED, "pref", 0) == (E.ELECTION_NOT_NEEDED, None)
    cluster.stop(2)
    assert cluster.wait_for_leader("pref", 0, not_in={2}) == 3
    cluster.start(2)
    cluster.wait_for_isr("pref", 0, [2, 3])
    assert cluster.leader("pref", 0) == 3           # no balancing in this cluster
    assert elect(cluster, PREFERRED, "pref", 0) == (E.NONE, None)
    assert cluster.wait_for_leader("pref", 0, not_in={3}) == 2
    assert elect(cluster, UNCLEAN, "pref", 0) == (E.ELECTION_NOT_NEEDED, None)
    assert elect(cluster, PREFERRED, "pref", 7) == (E.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as pref-7")
    assert elect(cluster, PREFERRED, "nope", 0) == (E.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope")
    # the ISR's last member goes: offline; the other replica returns but is not in the ISR
    create(cluster, "unc", [[2, 3]])
    cluster.stop(3)
    cluster.wait_for_isr("unc", 0, [2])
    cluster.stop(2)
    cluster.wait_for(lambda md: True if md.topics["unc"].partitions[0].leader == -1 else None, "unc offline")
    cluster.start(3)
    assert elect(cluster, PREFERRED, "unc", 0) == (E.PREFERRED_LEADER_NOT_AVAILABLE, None)
    assert elect(cluster, UNCLEAN, "unc", 0) == (E.NONE, None)
    assert cluster.wait_for_leader("unc", 0) == 3
    cluster.start(2)
    cluster.wait_for_isr("unc", 0, [2, 3])


@pytest.mark.kafka_cluster(brokers=3, config={"auto.leader.rebalance.enable": "true",
                                              "leader.imbalance.check.interval.seconds": "1"})
def test_auto_leader_rebalance_moves_leadership_back_to_the_preferred_replica(kafka_cluster):
    create(kafka_cluster, "bal", [[2, 3]])
    kafka_cluster.stop(2)
    assert kafka_cluster.wait_for_leader("bal", 0, not_in={2}) == 3
    kafka_cluster.start(2)
    # once 2 is back in the ISR, the controller's next check elects it (QuorumController's
    # maybeBalancePartitionLeaders): the event is the leader change itself
    assert kafka_cluster.wait_for_leader("bal", 0, not_in={3}) == 2
