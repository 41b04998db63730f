"""Replication throttling on a three-node kproto cluster (issue 27): the leader sends no
records to a throttled replica out of the ISR once its leader.replication.throttled.rate is
exceeded (ReplicaManager.shouldLeaderThrottle), and ``kproto reassign-partitions --execute
--throttle`` sets the throttles that ``--verify`` clears once the move is done. Nothing
here depends on timing: the leader's quota window is made long enough (100 windows of 1 s)
that what it recorded is still in its rate at the next fetch, and every wait is on the
event (Metadata, a described config, the tool's line); timeouts are safety nets."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from kproto.errors import ErrorCode as E
from kproto.testing import Cluster
from tests.e2e.test_cluster import create
from tests.e2e.test_cluster_reassign import alter, produce, wait_for_replicas
from tests.helpers import fetch_raw, replication_throttles, until
from tests.tools.helpers import run_command

SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
WARNING = ("Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
           "throttle is removed.")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Cluster(brokers=3, data_dir=tmp_path_factory.mktemp("throttle"),
                 config={"auto.leader.rebalance.enable": "false", "replication.quota.window.num": "100"}) as c:
        yield c


def configure(cluster: Cluster, kind, name: str, *ops: tuple[str, str | None, AlterConfigOpType]) -> None:
    a = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    res = ConfigResource(kind, name, incremental_configs=[ConfigEntry(k, v, incremental_operation=op)
                                                          for k, v, op in ops])
    a.incremental_alter_configs([res])[res].result(timeout=30)


def test_the_leader_sends_no_records_to_a_throttled_replica_out_of_the_isr(cluster):
    create(cluster, "capped", [[1, 2]])
    produce(cluster, "capped", 100)
    cluster.stop(3)
    leader = cluster.nodes[1].bootstrap_servers
    try:
        # 3 is added and cannot catch up: a replica out of the ISR, its fetches made here
        assert alter(cluster, "capped", 0, [1, 2, 3]) == (E.NONE, None)
        wait_for_replicas(cluster, "capped", 0, (1, 2, 3))
        assert len(fetch_raw(leader, "capped", 0, 0, replica_id=3).records) > 0     # no throttle yet
        configure(cluster, ConfigResource.Type.TOPIC, "capped", ("leader.replication.throttled.replicas", "0:1", SET))
        configure(cluster, ConfigResource.Type.BROKER, "1", ("leader.replication.throttled.rate", "1", SET))
        until(lambda: replication_throttles(leader, ["capped"], [1]) == {
            "capped": {"leader.replication.throttled.replicas": "0:1"},
            1: {"leader.replication.throttled.rate": "1"}}, what="the throttle applied on the leader")
        # under its quota, the leader sends (and counts) the bytes; then it is over 1 B/s
        first = fetch_raw(leader, "capped", 0, 0, replica_id=3)
        assert (first.error_code, first.high_watermark) == (0, 100) and len(first.records) > 0
        second = fetch_raw(leader, "capped", 0, 0, replica_id=3)
        assert (second.error_code, second.high_watermark, second.log_start_offset, len(second.records or b"")) == (
            0, 100, 0, 0)
        # a consumer is not throttled by it
        assert fetch_raw(leader, "capped", 0, 0).records == first.records
        # the list no longer naming this leader's replica: sent again
        configure(cluster, ConfigResource.Type.TOPIC, "capped", ("leader.replication.throttled.replicas", "0:2", SET))
        until(lambda: replication_throttles(leader, ["capped"], [])["capped"] == {
            "leader.replication.throttled.replicas": "0:2"}, what="the list changed on the leader")
        assert fetch_raw(leader, "capped", 0, 0, replica_id=3).records == first.records
    finally:
        configure(cluster, ConfigResource.Type.BROKER, "1", ("leader.replication.throttled.rate", None, DELETE))
        cluster.start(3)
    cluster.wait_for_isr("capped", 0, [1, 2, 3])


def test_reassign_with_a_throttle_sets_the_throttles_and_verify_clears_them(cluster, tmp_path):
    create(cluster, "moved", [[1, 2], [2, 1]])
    produce(cluster, "moved", 10)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "moved", "partition": 0, "replicas": [2, 3]}]}))
    bs = cluster.bootstrap_servers
    status, out, err = run_command("reassign-partitions", bs, "--execute", "--reassignment-json-file", str(plan),
                                   "--throttle", "1048576")
    assert (status, err) == (0, "")
    assert out.splitlines()[-3:] == [WARNING, "The inter-broker throttle limit was set to 1048576 B/s",
                                     "Successfully started partition reassignment for moved-0"]
    # the current replicas throttled as leaders, the new one as follower, every broker moved from or to
    rate = {"leader.replication.throttled.rate": "1048576", "follower.replication.throttled.rate": "1048576"}
    until(lambda: replication_throttles(bs, ["moved"], [1, 2, 3]) == {
        "moved": {"leader.replication.throttled.replicas": "0:1,0:2",
                  "follower.replication.throttled.replicas": "0:3"}, 1: rate, 2: rate, 3: rate},
          what="the throttles described")
    wait_for_replicas(cluster, "moved", 0, (2, 3))
    status, out, err = run_command("reassign-partitions", bs, "--verify", "--reassignment-json-file", str(plan))
    assert (status, out, err) == (0, "Status of partition reassignment:\n"
                                     "Reassignment of partition moved-0 is completed.\n\n"
                                     "Clearing broker-level throttles on brokers 1,2,3\n"
                                     "Clearing topic-level throttles on topic moved\n", "")
    until(lambda: replication_throttles(bs, ["moved"], [1, 2, 3]) == {"moved": {}, 1: {}, 2: {}, 3: {}},
          what="the throttles cleared")
