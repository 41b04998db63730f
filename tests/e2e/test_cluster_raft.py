"""A KRaft quorum of three controllers (issue 27, docs/cluster.md): the active
controller SIGKILLed, another elected, the cluster carries on, the killed one
rejoins and catches up. Real processes, confluent-kafka; every wait is on the
event itself (Metadata naming a controller, a leader, an ISR; acknowledged
records), timeouts only as safety nets."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.server.cluster import raft as R
from kproto.server.cluster.quorum import QUORUM_STATE_FILE
from kproto.testing import Cluster
from tests.e2e.test_cluster import consume_all, create


@pytest.fixture
def quorum(tmp_path):
    with Cluster(brokers=3, controllers=3, data_dir=tmp_path / "cluster") as c:
        yield c


def metadata_log(cluster: Cluster, node: int) -> bytes:
    d = cluster.nodes[node].data_dir / "__cluster_metadata-0"
    return b"".join(p.read_bytes() for p in sorted(d.glob("*.log")))


def election(cluster: Cluster, node: int) -> R.ElectionState:
    return R.parse_quorum_state((cluster.nodes[node].data_dir / "__cluster_metadata-0" / QUORUM_STATE_FILE)
                                .read_text())


def test_active_controller_sigkilled_another_is_elected_and_the_cluster_carries_on(quorum):
    first = quorum.wait_for_controller()
    epoch = election(quorum, first).epoch
    # every voter's quorum-state names the leader of the epoch
    quorum.wait_for(lambda md: all(election(quorum, i) == R.ElectionState(epoch, first, election(quorum, i).voted_id)
                                   for i in (1, 2, 3)) or None, "every voter following the leader")
    others = [i for i in (1, 2, 3) if i != first]
    # a topic whose partition survives the controller's node: replicas on the other two
    create(quorum, "before", [others])
    p = Producer({"bootstrap.servers": quorum.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5})
    acked: list[int] = []
    failed: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        i = 0
        while not stop.is_set():
            p.produce("before", value=b"%d" % i, partition=0,
                      on_delivery=lambda e, m: acked.append(m.offset()) if e is None else failed.append(str(e)))
            i += 1
            p.poll(0.01)
        p.flush(60)

    t = threading.Thread(target=produce)
    t.start()
    try:
        quorum.wait_for(lambda md: len(acked) >= 50 or None, "50 acknowledged records")
        quorum.kill(first)
        second = quorum.wait_for_controller(not_in={first})
        assert second in others
        assert election(quorum, second).epoch > epoch and election(quorum, second).leader_id == second
        # a topic created through the new active controller works
        create(quorum, "after", [others])
        after = Producer({"bootstrap.servers": quorum.bootstrap_servers, "acks": "all"})
        got = []
        after.produce("after", value=b"x", on_delivery=lambda e, m: got.append((e, m.offset())))
        assert after.flush(60) == 0 and got == [(None, 0)]
        # the producer kept producing through the failover
        n = len(acked)
        quorum.wait_for(lambda md: len(acked) >= n + 50 or None, "50 more acknowledged records")
    finally:
        stop.set()
        t.join(120)
    assert failed == []
    assert sorted(acked) == list(range(len(acked)))
    assert consume_all(quorum, "before", 0, len(acked)) == [b"%d" % i for i in range(len(acked))]
    # the killed voter restarts, follows the new leader and catches up the metadata log
    quorum.start(first)
    quorum.wait_for(lambda md: len(md.brokers) == 3 or None, "the restarted node unfenced")
    quorum.wait_for(lambda md: metadata_log(quorum, first)[:len(metadata_log(quorum, second))]
                    == metadata_log(quorum, second) or None, "the restarted voter's metadata log caught up")
    assert election(quorum, first).leader_id == quorum.wait_for_controller()
