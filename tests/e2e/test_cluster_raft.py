"""A KRaft quorum of three controllers (issue 27, docs/cluster.md): the active
controller SIGKILLed, another elected, the cluster carries on, the killed one
rejoins and catches up. Real processes, confluent-kafka; every wait is on the
event itself (Metadata naming a controller, a leader, an ISR; acknowledged
records), timeouts only as safety nets."""

from __future__ import annotations

import json
import re
import threading

import pytest
from confluent_kafka import Producer

from kproto.server.cluster import raft as R
from kproto.server.cluster.quorum import QUORUM_STATE_FILE
from kproto.testing import Cluster
from tests.e2e.test_cluster import consume_all, create
from tests.parity.test_kafka_parity_features import QUORUM_COMMAND
from tests.tools.helpers import run_command


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


@pytest.fixture
def quorum_and_observer(tmp_path):
    """Three voters (brokers too) and a fourth node, a broker only: the quorum's observer."""
    with Cluster(brokers=4, controllers=3, data_dir=tmp_path / "cluster") as c:
        yield c


def test_describe_quorum_shows_the_leader_voters_and_observers(quorum_and_observer):
    c = quorum_and_observer
    leader = c.wait_for_controller()
    epoch = election(c, leader).epoch
    bootstrap = c.nodes[4].bootstrap_servers        # the observer forwards to the active controller
    code, out, err = run_command("metadata-quorum", bootstrap, "describe", "--status")
    assert (code, err) == (0, "")
    lines = dict(line.split(":", 1) for line in out.splitlines())
    assert (lines["LeaderId"].strip(), lines["LeaderEpoch"].strip()) == (str(leader), str(epoch))
    voters = json.loads(lines["CurrentVoters"])
    assert [v["id"] for v in voters] == [1, 2, 3]
    assert [v["endpoints"] for v in voters] == [
        [f"CONTROLLER://{h}:{p}"] for _, (h, p) in sorted(c.voter_addresses.items())]
    assert json.loads(lines["CurrentObservers"]) == [{"id": 4}]
    hw = int(lines["HighWatermark"])
    assert hw >= 1
    code, out, err = run_command("metadata-quorum", bootstrap, "describe", "--replication")
    rows = [line.split() for line in out.splitlines()[1:]]
    assert {(int(r[0]), r[-1]) for r in rows} == {(leader, "Leader"), (4, "Observer")} | {
        (v, "Follower") for v in (1, 2, 3) if v != leader}
    assert all(int(r[2]) >= hw - 1 for r in rows)       # everyone has (nearly) the leader's log end
    # the leader SIGKILLed: the observer follows the new leader's name in the voters' answers
    c.kill(leader)
    new = c.wait_for_controller(not_in={leader})

    def observer_caught_up(md):
        code, out, _ = run_command("metadata-quorum", bootstrap, "describe", "--replication")
        rows = {int(r[0]): r for r in (line.split() for line in out.splitlines()[1:])} if code == 0 else {}
        leader_row = next((r for r in rows.values() if r[-1] == "Leader"), None)
        return rows if leader_row is not None and int(leader_row[0]) == new and 4 in rows \
            and rows[4][-1] == "Observer" and int(rows[4][2]) >= int(leader_row[2]) - 1 else None
    rows = c.wait_for(observer_caught_up, "the observer fetching from the new leader")
    assert rows[leader][-1] == "Follower"       # the dead voter stays a voter


def test_kafkas_metadata_quorum_command_reads_the_quorum(quorum_and_observer, kafka_ref):
    """kafka-metadata-quorum.sh describe --status and --replication print what kproto's tool prints."""
    c = quorum_and_observer
    c.wait_for_controller()
    bootstrap = c.nodes[4].bootstrap_servers
    for args in (["--status"], ["--replication"]):
        ours = run_command("metadata-quorum", bootstrap, "describe", *args)
        r = kafka_ref.run_tool(QUORUM_COMMAND, "--bootstrap-server", bootstrap, "describe", *args)
        kafka = (r.returncode, r.stdout, "".join(line + "\n" for line in r.stderr.splitlines()
                                                 if not re.match(r"\[\d{4}-", line)))
        # timestamps and lags move between the two runs
        masks = [(re.compile(r"\b1[6-9]\d{11}\b"), "<ms>"), (re.compile(r"(MaxFollowerLag\w*: +)\d+"), r"\1<n>"),
                 (re.compile(r"(HighWatermark: +)\d+"), r"\1<n>"), (re.compile(r"^(\d+ +\t\S+ *\t)\d+ *\t\d+", re.M),
                                                                     r"\1<n>\t<n>")]
        for pattern, repl in masks:
            ours, kafka = ((o[0], pattern.sub(repl, o[1]), o[2]) for o in (ours, kafka))
        assert ours == kafka
