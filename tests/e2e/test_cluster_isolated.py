"""Kafka's isolated mode (issue 27, docs/cluster.md): three controller-only nodes
(``process.roles=controller``, ids 3000..) and two brokers fetching the metadata
from them as observers. A topic is created, produced and consumed; the active
controller SIGKILLed, another takes over and a new topic works. Real processes,
confluent-kafka; every wait is on the event itself (DescribeQuorum naming a
leader, an ISR, acknowledged records), timeouts only as safety nets."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kproto.client.admin import Admin
from kproto.client.transport import BrokerClient
from kproto.testing import Cluster
from tests.e2e.test_cluster import consume_all, create

CONTROLLERS = [3000, 3001, 3002]


@pytest.fixture
def isolated(tmp_path):
    # two brokers: the internal topics on both (Kafka's default of 3 replicas cannot be placed)
    with Cluster(brokers=2, controllers=3, isolated=True, data_dir=tmp_path / "cluster",
                 config={"offsets.topic.replication.factor": 2, "transaction.state.log.replication.factor": 2}) as c:
        yield c


def produce(cluster: Cluster, topic: str, values: list[bytes]) -> list[int]:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    got: list = []
    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=lambda e, m: got.append((e, m.offset())))
    assert p.flush(60) == 0
    assert [e for e, _ in got] == [None] * len(values)
    return [o for _, o in got]


def test_controllers_only_serve_the_quorum_and_survive_the_active_ones_crash(isolated):
    c = isolated
    assert sorted(c.nodes) == [1, 2, *CONTROLLERS] and c.controller_only == set(CONTROLLERS)
    first = c.wait_for_active_controller()
    assert first in CONTROLLERS
    md = c.metadata()
    # the controllers never register as brokers; Metadata names a broker as the controller
    # (Kafka: a random alive broker, since a client cannot reach a controller-only node)
    assert sorted(b.node_id for b in md.brokers) == [1, 2] and md.controller_id in (1, 2)
    for i in CONTROLLERS:      # no client listener, no broker logs: the metadata log only
        assert c.nodes[i].listeners == {}
        assert [p.name for p in c.nodes[i].data_dir.iterdir() if p.is_dir()] == ["__cluster_metadata-0"]
    with BrokerClient(c.bootstrap_servers, timeout_s=10) as client:
        q = Admin(client).describe_quorum().topics[0].partitions[0]
    assert [v.replica_id for v in q.current_voters] == CONTROLLERS
    assert sorted(o.replica_id for o in q.observers) == [1, 2]

    create(c, "before", [[1, 2]])
    assert produce(c, "before", [b"a", b"b", b"c"]) == [0, 1, 2]
    assert consume_all(c, "before", 0, 3) == [b"a", b"b", b"c"]

    c.kill(first)
    second = c.wait_for_active_controller(not_in={first})
    assert second in CONTROLLERS
    create(c, "after", [[2, 1]])
    assert produce(c, "after", [b"x"]) == [0]
    assert consume_all(c, "after", 0, 1) == [b"x"]
    assert produce(c, "before", [b"d"]) == [3]
    # the killed controller restarts and follows the new leader
    c.start(first)
    assert c.wait_for_active_controller() == second
