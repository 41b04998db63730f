"""The same client scenarios against kproto's 3-node cluster and Apache Kafka 4.4's (issue 27).

Both clusters are laid out alike (tests/kafka_ref.py KafkaCluster, kproto.testing.Cluster):
node 1 is a broker and the one controller, nodes 2-3 brokers; node 1 is never killed
(neither has a quorum to elect another controller). Each test runs on both; the
expectations are literal, so what passes on both is what agrees. Topics take explicit
assignments (KRaft's StripedReplicaPlacer is random) except where placement itself is
compared, then only what is deterministic. Every wait is on the event (Metadata showing a
leader or an ISR, a line from a client); timeouts are safety nets.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from confluent_kafka import Consumer, KafkaError as CKError, Producer, TopicPartition

from kproto.client.data import DataClient
from kproto.client.transport import BrokerClient
from kproto.common import GROUP_METADATA_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.records import NewRecord, build_record_batch
from kproto.schemas import protocol as P
from kproto.server.runtime.state_topic import partition_for
from tests.conftest import PEER_CLUSTER_CONFIG
from tests import java_client
from tests.e2e.helpers import produce_across_leader_kill
from tests.helpers import create_in_cluster as create, describe_on_both as describe_both
from tests.helpers import replication_throttles, until
from tests.tools.helpers import run_command

OFFSETS_PARTITIONS = int(PEER_CLUSTER_CONFIG["offsets.topic.num.partitions"])


@pytest.fixture
def cluster(peer_cluster):
    """tests/conftest.py's peer_cluster: kproto's 3 nodes, then Kafka's; healed after each test."""
    return peer_cluster


def test_a_consumer_group_survives_its_coordinators_death(cluster):
    """The group's __consumer_offsets partition led by node 2 or 3: that node SIGKILLed, the
    same consumer goes on reading and committing on the partition's next leader. First in the
    module: before any kill, the offsets partitions' leaders are spread over the nodes."""
    with BrokerClient(cluster.bootstrap_servers) as client:       # creates __consumer_offsets
        deadline = time.monotonic() + 120
        while client.request(P.find_coordinator.API.key, {"key_type": 0, "coordinator_keys": ["probe"],
                                                          "key": "probe"}).coordinators[0].error_code:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    offsets = cluster.wait_for(lambda md: (lambda t: t if t and all(q.leader >= 0 for q in t.partitions) else None)(
        md.topics.get(GROUP_METADATA_TOPIC_NAME)), "__consumer_offsets led")
    movable = {q.partition: q.leader for q in offsets.partitions if q.leader != 1}
    assert movable, offsets
    group = next(g for g in (f"g{i}" for i in range(1000)) if partition_for(g, OFFSETS_PARTITIONS) in movable)
    coordinator = movable[partition_for(group, OFFSETS_PARTITIONS)]
    create(cluster, "grouped", [[1, 2, 3]])           # the data's leader stays up
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    seen: list[bytes] = []

    def read(n: int) -> None:
        deadline = time.monotonic() + 120
        while len(seen) < n:
            assert time.monotonic() < deadline, seen
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                seen.append(m.value())
        c.commit(asynchronous=False)
    try:
        c.subscribe(["grouped"])
        for i in range(10):
            p.produce("grouped", value=b"%d" % i, partition=0)
        assert p.flush(60) == 0
        read(10)
        cluster.kill(coordinator)
        for i in range(10, 20):
            p.produce("grouped", value=b"%d" % i, partition=0)
        assert p.flush(60) == 0
        read(20)
        assert seen == [b"%d" % i for i in range(20)]
        assert [(tp.partition, tp.offset) for tp in c.committed([TopicPartition("grouped", 0)], timeout=60)] == [(0, 20)]
    finally:
        c.close()
    assert cluster.leader(GROUP_METADATA_TOPIC_NAME, partition_for(group, OFFSETS_PARTITIONS)) not in (coordinator, -1)


def test_describe_a_replicated_topic(kafka_ref, cluster):
    """Explicit placement: every line as printed. Default placement: what StripedReplicaPlacer
    fixes (each partition on the three brokers, led by its first replica, all in sync)."""
    create(cluster, "placed", [[2, 3, 1], [3, 1, 2]], min_insync_replicas=2)
    out = describe_both(kafka_ref, cluster, "--topic", "placed")
    head, *lines = out.splitlines()
    assert head.split("\t")[0] == "Topic: placed" and head.split("\t")[2:] == [
        "PartitionCount: 2", "ReplicationFactor: 3", "Configs: min.insync.replicas=2"]
    assert lines == [
        "\tTopic: placed\tPartition: 0\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1\tElr: \tLastKnownElr: ",
        "\tTopic: placed\tPartition: 1\tLeader: 3\tReplicas: 3,1,2\tIsr: 3,1,2\tElr: \tLastKnownElr: "]
    create(cluster, "striped", partitions=6, replication=3, min_insync_replicas=2)
    head, *lines = describe_both(kafka_ref, cluster, "--topic", "striped").splitlines()
    assert head.split("\t")[2:] == ["PartitionCount: 6", "ReplicationFactor: 3", "Configs: min.insync.replicas=2"]
    for line in lines:
        f = dict(field.split(": ", 1) for field in line.strip("\t").split("\t"))
        replicas = f["Replicas"].split(",")
        assert (sorted(replicas), f["Leader"], sorted(f["Isr"].split(",")), f["Elr"], f["LastKnownElr"]) == (
            ["1", "2", "3"], replicas[0], ["1", "2", "3"], "", ""), line


def test_acks_all_with_one_broker_down_then_not_enough_replicas_with_two(cluster):
    """min.insync.replicas=2 of RF 3: a follower down, acks=all is still acknowledged; the
    leader down too, the last replica leads and refuses NOT_ENOUGH_REPLICAS, which a client
    without retries reports as is (a raw Produce: no error message, as Kafka)."""
    create(cluster, "minisr", [[2, 3, 1]], min_insync_replicas=2)
    cluster.kill(3)
    cluster.wait_for_isr("minisr", 0, [2, 1])
    delivered = []
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "message.timeout.ms": 60000})
    p.produce("minisr", value=b"one-down", partition=0, on_delivery=lambda e, m: delivered.append((e, m.offset())))
    assert p.flush(90) == 0
    assert delivered == [(None, 0)]
    cluster.kill(2)
    assert cluster.wait_for_leader("minisr", 0, not_in={2}) == 1
    assert cluster.wait_for_isr("minisr", 0, [1]) == (1,)
    # the exact error a client sees: librdkafka without retries reports the broker's error itself
    failed = []
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "retries": 0,
                  "enable.idempotence": False, "message.timeout.ms": 60000})
    p.produce("minisr", value=b"two-down", partition=0, on_delivery=lambda e, m: failed.append(e))
    p.flush(90)
    assert [(e.code(), e.str(), e.retriable()) for e in failed] == [
        (CKError.NOT_ENOUGH_REPLICAS, "Broker: Not enough in-sync replicas", False)]
    with BrokerClient(cluster.bootstrap_servers) as client:
        data = DataClient(client)
        result = data.produce({("minisr", 0): build_record_batch([NewRecord(value=b"raw")])}, acks=-1)[("minisr", 0)]
        assert (result.error, result.message, result.base_offset) == (ErrorCode.NOT_ENOUGH_REPLICAS, None, -1)
        data.close()


def test_idempotent_producer_across_a_leader_sigkill_loses_and_duplicates_nothing(cluster):
    create(cluster, "failover", [[2, 3, 1]], min_insync_replicas=2)
    acked = produce_across_leader_kill(cluster, "failover")
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check", "enable.auto.commit": False})
    c.assign([TopicPartition("failover", 0, 0)])
    records: list[bytes] = []
    _, end = c.get_watermark_offsets(TopicPartition("failover", 0), timeout=30)
    while len(records) < end:
        m = c.poll(30)
        assert m is not None and m.error() is None, (len(records), end, m and m.error())
        records.append(m.value())
    c.close()
    assert records == sorted(records, key=int)            # in the order sent
    assert len(set(records)) == len(records)               # none twice
    assert set(acked) <= set(records)                      # none acknowledged lost


LISTINGS = ("--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions",
            "--at-min-isr-partitions")


def third_broker_down(cluster, suffix: str) -> None:
    """Node 3 SIGKILLed under three topics: RF 3 left at its minimum (2 of 3 in sync), RF 2
    under it, RF 1 without a leader; returns once the controller has fenced it."""
    create(cluster, f"rf3{suffix}", [[2, 3, 1]], min_insync_replicas=2)
    create(cluster, f"rf2{suffix}", [[3, 2]], min_insync_replicas=2)
    create(cluster, f"rf1{suffix}", [[3]])
    cluster.kill(3)
    cluster.wait_for_isr(f"rf3{suffix}", 0, [2, 1])
    cluster.wait_for_leader(f"rf2{suffix}", 0)
    cluster.wait_for(lambda md: cluster.partition(f"rf1{suffix}", 0, md).leader == -1 or None,
                     "the RF 1 partition without a leader")


def test_partition_listings_by_both_tools_while_a_broker_is_down(kafka_ref, cluster):
    """TopicCommand's four filters while a broker is down: kproto's tool prints what Kafka's
    prints, on either cluster (the partitions' state itself: the next test)."""
    third_broker_down(cluster, "t")
    for flag in LISTINGS:
        describe_both(kafka_ref, cluster, flag)


def test_partition_listings_while_a_broker_is_down(kafka_ref, cluster):
    third_broker_down(cluster, "")
    got = {flag: sorted(line for line in describe_both(kafka_ref, cluster, flag).splitlines()
                        if re.match(r"\tTopic: rf\d\t", line)) for flag in LISTINGS}
    rf3 = "\tTopic: rf3\tPartition: 0\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,1\tElr: \tLastKnownElr: "
    rf2 = "\tTopic: rf2\tPartition: 0\tLeader: 2\tReplicas: 3,2\tIsr: 2\tElr: 3\tLastKnownElr: "
    rf1 = "\tTopic: rf1\tPartition: 0\tLeader: none\tReplicas: 3\tIsr: \tElr: 3\tLastKnownElr: 3"
    assert got == {
        "--under-replicated-partitions": [rf1, rf2, rf3],
        "--unavailable-partitions": [rf1],
        "--under-min-isr-partitions": [rf1, rf2],
        "--at-min-isr-partitions": [rf3],
    }


def test_java_client_produces_and_consumes_across_a_leader_kill(kafka_ref, cluster):
    create(cluster, "java", [[3, 2, 1]], min_insync_replicas=2)
    proc = java_client.start(kafka_ref, "failover", bootstrap=cluster.bootstrap_servers, topic="java", count=50)
    events = []
    try:
        for line in proc.stdout:                       # until every first record is acknowledged
            events.append(json.loads(line))
            if events[-1]["event"] in ("waiting", "error"):
                break
        assert events[-1]["event"] == "waiting", (events[-1:], type(cluster).__name__)
        cluster.kill(3)
        assert cluster.wait_for_leader("java", 0, not_in={3}) == 2
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out = java_client.outcome(proc, events)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (out.returncode, out.error) == (0, None), out.stderr[-2000:]
    assert [(e["key"], e["offset"]) for e in out.of("produced")] == [(f"k{i}", i) for i in range(100)]
    assert [(e["offset"], e["key"], e["value"]) for e in out.of("consumed")] == [
        (i, f"k{i}", f"v{i}") for i in range(100)]


REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def test_reassign_with_a_throttle_by_both_tools_sets_and_clears_the_same_throttles(kafka_ref, cluster, tmp_path):
    """kafka-reassign-partitions.sh --execute --throttle and kproto's, each moving its own topic's
    partition 0 from 1,2 to 2,3: the same lines, the same configs set (the current replicas as
    leaders, the new one as follower, the rate on every broker of the move), then --verify
    clears them alike once done. Both clusters, both tools: the configs are read back through
    librdkafka and waited for (a broker applies them from the metadata log)."""
    bs = cluster.bootstrap_servers
    rate = {"leader.replication.throttled.rate": "1048576", "follower.replication.throttled.rate": "1048576"}

    def run(tool: str, *args: str) -> str:
        if tool == "kafka":
            k = kafka_ref.run_tool(REASSIGN, "--bootstrap-server", bs, *args)
            assert k.returncode == 0, k.stderr
            return k.stdout
        status, out, err = run_command("reassign-partitions", bs, *args)
        assert (status, err) == (0, ""), err
        return out

    printed = {}
    for tool, topic in (("kproto", "thrk"), ("kafka", "thrj")):
        create(cluster, topic, [[1, 2], [2, 1]])
        plan = tmp_path / f"{topic}.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0,
                                                                   "replicas": [2, 3]}]}))
        executed = run(tool, "--execute", "--reassignment-json-file", str(plan), "--throttle", "1048576")
        until(lambda: replication_throttles(bs, [topic], [1, 2, 3]) == {
            topic: {"leader.replication.throttled.replicas": "0:1,0:2",
                    "follower.replication.throttled.replicas": "0:3"}, 1: rate, 2: rate, 3: rate},
              what=f"the throttles {tool}'s tool set")
        cluster.wait_for(lambda md: cluster.partition(topic, 0, md).replicas == (2, 3) or None, f"{topic}-0 moved")
        verified = until(lambda: (lambda out: out if "is completed" in out else None)(
            run(tool, "--verify", "--reassignment-json-file", str(plan))), what=f"{topic}-0 verified")
        until(lambda: replication_throttles(bs, [topic], [1, 2, 3]) == {topic: {}, 1: {}, 2: {}, 3: {}},
              what=f"the throttles {tool}'s tool cleared")
        printed[tool] = (executed.replace(topic, "TOPIC"), verified.replace(topic, "TOPIC"))
    assert printed["kproto"] == printed["kafka"]
    assert printed["kproto"][0].splitlines()[-3:] == [
        "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle "
        "is removed.", "The inter-broker throttle limit was set to 1048576 B/s",
        "Successfully started partition reassignment for TOPIC-0"]
    assert printed["kproto"][1] == ("Status of partition reassignment:\n"
                                    "Reassignment of partition TOPIC-0 is completed.\n\n"
                                    "Clearing broker-level throttles on brokers 1,2,3\n"
                                    "Clearing topic-level throttles on topic TOPIC\n")
