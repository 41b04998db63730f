"""KIP-932 share groups on a 3-node kproto cluster, as Kafka 4 splits them: membership on
the group's coordinator, each share partition on its topic partition's leader, its state
in ``__share_group_state`` on the share coordinator of its key (FindCoordinator key type
2), reached through the state APIs. confluent-kafka's ShareConsumer; the partition leader
is SIGKILLed and its successor reads the share partition back: what was acknowledged is
not delivered again, what was not is. The same scenario runs on Apache Kafka 4.4's 3-node
cluster (``peer_cluster``) with the same literal expectations."""

from __future__ import annotations

import time

import confluent_kafka as ck
import confluent_kafka.admin  # noqa: F401
import pytest

from kproto.client.transport import BrokerClient
from kproto.common import SHARE_GROUP_STATE_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.server.share import persistence
from kproto.testing import Cluster

PARTITIONS = 3
PER_PARTITION = 10
SHARE_KEY_TYPE = 2          # FindCoordinator: a share partition's key "group:topicId:partition"
DEADLINE_S = 120            # a safety net only: every wait below ends on its event
CONFIG = {"offsets.topic.num.partitions": 5, "share.coordinator.state.topic.num.partitions": 5,
          "group.share.record.lock.duration.ms": 15000}


@pytest.fixture
def cluster(tmp_path):
    with Cluster(brokers=3, data_dir=tmp_path / "cluster", config=CONFIG) as c:
        yield c


def _consumer(bs: str, group: str, topic: str) -> ck.ShareConsumer:
    c = ck.ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    return c


def _coordinator(bs: str, key: str, key_type: int):
    return _request(bs, P.find_coordinator, {"key_type": key_type, "coordinator_keys": [key], "key": key}).coordinators[0]


def _request(bs: str, api, body: dict):
    with BrokerClient(bs, timeout_s=10) as client:
        return client.request(api.API.key, body)


def described(cluster, group: str) -> dict[int, tuple[int, int]]:
    """partition -> (share-partition start offset, lag) (-1: not known yet), as the group's
    coordinator describes them (DescribeShareGroupOffsets; each from its key's share
    coordinator); {} while the coordinator is not known or moving."""
    try:
        c = _coordinator(cluster.bootstrap_servers, group, 0)
        if c.error_code:
            return {}
        r = _request(f"{c.host}:{c.port}", P.describe_share_group_offsets, {"groups": [
            {"group_id": group, "topics": [{"topic_name": "work", "partitions": list(range(PARTITIONS))}]}]})
    except (ConnectionError, OSError):
        return {}          # a node going down: ask again
    g = r.groups[0]
    return {} if g.error_code else {p.partition_index: (p.start_offset, p.lag) for t in g.topics
                                    for p in t.partitions if not p.error_code}


def start_offsets(cluster, group: str) -> dict[int, int]:
    return {q: start for q, (start, _) in described(cluster, group).items()}


def wait_lags(cluster, group: str, want: dict[int, int]) -> None:
    """Until each partition's lag (records from the share-partition start offset on not yet
    acknowledged or archived: KIP-1226) is ``want``'s. Kafka moves a start offset past
    acknowledged records lazily (they count as delivery-complete meanwhile), kproto at once:
    the lag is what both say alike."""
    end = time.monotonic() + DEADLINE_S
    while (lags := {q: lag for q, (_, lag) in described(cluster, group).items()}) != want:
        assert time.monotonic() < end, (lags, want)


def _poll_until(consumers, want, on_message) -> list:
    """Poll every consumer in turn until ``want(got)``; got: (partition, offset)."""
    got: list = []
    end = time.monotonic() + DEADLINE_S
    while not want(got):
        assert time.monotonic() < end, f"gave up with {sorted(got)}"
        for c in consumers:
            for m in c.poll(0.2):
                assert m.error() is None, m.error()
                got.append((m.partition(), m.offset()))
                on_message(c, m)
    return got


def _produce(bs: str, topic: str) -> None:
    p = ck.Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(PARTITIONS * PER_PARTITION):
        p.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)
    assert p.flush(60) == 0


def scenario(cluster, group: str) -> tuple[str, dict[int, int]]:
    """Two members split an RF=3 topic's records, acknowledge some, the leader of a partition
    is SIGKILLed, a new member gets exactly what was not acknowledged; every expectation is
    literal, so both clusters passing is their agreeing. -> the group coordinator's address
    and the share partitions' final start offsets."""
    bs = cluster.bootstrap_servers
    admin = ck.admin.AdminClient({"bootstrap.servers": bs})
    # led by nodes 2 and 3 (the first replica), which the test may kill
    assignment = [[2, 3, 1], [3, 1, 2], [2, 1, 3]]
    admin.create_topics([ck.admin.NewTopic("work", PARTITIONS, replica_assignment=assignment)])["work"].result(timeout=60)
    for q in range(PARTITIONS):
        cluster.wait_for_isr("work", q, [1, 2, 3])
        assert cluster.leader("work", q) == assignment[q][0]
    topic_id = cluster.metadata(["work"]).topics["work"].topic_id
    consumers = [_consumer(bs, group, "work") for _ in range(2)]
    late = None
    try:
        # share.auto.offset.reset latest: a share partition starts at the log end when it is
        # initialized, which a client does not see (kproto: at its leader's first fetch; Kafka
        # describes none before the first acknowledgement). A warm-up record goes to each
        # partition until one is delivered there (and acknowledged); then every share
        # partition is complete up to its log end: ``base``
        warm, end = set(), time.monotonic() + DEADLINE_S
        p = ck.Producer({"bootstrap.servers": bs, "acks": "all"})
        while len(warm) < PARTITIONS:
            assert time.monotonic() < end, warm
            for q in set(range(PARTITIONS)) - warm:
                p.produce("work", value=b"warm-up", partition=q)
            assert p.flush(60) == 0
            for c in consumers:
                for m in c.poll(0.5):
                    assert m.error() is None, m.error()
                    warm.add(m.partition())
                    c.acknowledge(m)
        watermarks = ck.Consumer({"bootstrap.servers": bs, "group.id": "watermarks"})
        base = {q: watermarks.get_watermark_offsets(ck.TopicPartition("work", q), timeout=30)[1]
                for q in range(PARTITIONS)}
        watermarks.close()
        end = time.monotonic() + DEADLINE_S
        while {q: lag for q, (_, lag) in described(cluster, group).items()} != dict.fromkeys(range(PARTITIONS), 0):
            assert time.monotonic() < end, (described(cluster, group), base)
            for c in consumers:
                for m in c.poll(0.2):
                    c.acknowledge(m)        # a warm-up record produced after its partition's start
                c.commit_sync()

        # 1. two members split the records, each delivered once, all acknowledged
        _produce(bs, "work")
        first = _poll_until(consumers, lambda g: len(g) >= PARTITIONS * PER_PARTITION, lambda c, m: c.acknowledge(m))
        for c in consumers:
            c.commit_sync()
        assert sorted(first) == [(q, base[q] + i) for q in range(PARTITIONS) for i in range(PER_PARTITION)]
        wait_lags(cluster, group, dict.fromkeys(range(PARTITIONS), 0))

        # 2. each member takes one poll's records, acknowledges the even offsets and stops
        # polling: the odd ones stay acquired, unacknowledged (explicit mode allows no next
        # poll); what no member took stays available
        _produce(bs, "work")
        second = [(q, base[q] + i) for q in range(PARTITIONS) for i in range(PER_PARTITION, 2 * PER_PARTITION)]
        taken, acked = [], set()
        for c in consumers:
            end = time.monotonic() + DEADLINE_S
            while not (batch := c.poll(0.2)):
                assert time.monotonic() < end, "no records"
            for m in batch:
                assert m.error() is None, m.error()
                taken.append((m.partition(), m.offset()))
                if (m.offset() - base[m.partition()]) % 2 == 0:
                    c.acknowledge(m)
                    acked.add((m.partition(), m.offset()))
            c.commit_sync()
        assert len(taken) == len(set(taken)) and set(taken) <= set(second)
        # each share partition lags by what was not acknowledged, as persisted
        wait_lags(cluster, group, {q: sum(1 for pq, o in second if pq == q and (pq, o) not in acked)
                                   for q in range(PARTITIONS)})

        # 3. the leader of a partition holding both dies (node 1, the controller, is never
        # killed; it leads none of the topic's partitions); the members go, their records
        # released where their leader lives, read back from the share coordinator where not
        mixed = [q for q in range(PARTITIONS) if {(o - base[q]) % 2 for pq, o in taken if pq == q} == {0, 1}]
        assert mixed, taken
        victim_partition = mixed[0]
        victim = cluster.leader("work", victim_partition)
        assert victim != 1
        cluster.kill(victim)
        cluster.wait_for_leader("work", victim_partition, not_in=[victim], timeout=DEADLINE_S)
        for c in consumers:
            c.close()
        consumers = []
        late = _consumer(bs, group, "work")
        rest = sorted(set(second) - acked)
        again = _poll_until([late], lambda g: set(g) >= set(rest), lambda c, m: c.acknowledge(m))
        late.commit_sync()
        assert sorted(again) == rest            # the acknowledged ones never again, the others once
        wait_lags(cluster, group, dict.fromkeys(range(PARTITIONS), 0))

        # the share coordinator of each key is its __share_group_state partition's leader, as
        # every live node says; the group's offsets are described by its group coordinator
        live = [b.bootstrap_servers for i, b in cluster.nodes.items() if i != victim]
        state_partitions = len(cluster.metadata([SHARE_GROUP_STATE_TOPIC_NAME]).topics[
            SHARE_GROUP_STATE_TOPIC_NAME].partitions)
        for q in range(PARTITIONS):
            key = persistence.coordinator_key((group, topic_id, q))
            named = {_coordinator(bs_, key, SHARE_KEY_TYPE).node_id for bs_ in live}
            assert named == {cluster.leader(SHARE_GROUP_STATE_TOPIC_NAME, persistence.partition_for_key(
                (group, topic_id, q), state_partitions))}
        c = _coordinator(live[0], group, 0)
        return f"{c.host}:{c.port}", {q: base[q] + 2 * PER_PARTITION for q in range(PARTITIONS)}
    finally:
        for c in [*consumers, late]:
            if c is not None:
                c.close()


def test_share_consumers_split_records_and_a_dead_leaders_successor_redelivers_only_unacknowledged(cluster):
    coordinator, done = scenario(cluster, "shared")
    # what a cluster does not serve yet is refused whole, nothing changed
    altered = _request(coordinator, P.alter_share_group_offsets, {"group_id": "shared", "topics": [
        {"topic_name": "work", "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
    assert (altered.error_code, altered.error_message) == (
        ErrorCode.INVALID_REQUEST, "AlterShareGroupOffsets is not served by a kproto cluster yet (docs/cluster.md)")
    # kproto moves each start offset past what is acknowledged at once: at the log end now
    assert start_offsets(cluster, "shared") == done


def test_the_same_scenario_on_kproto_and_kafka(peer_cluster):
    """tests/conftest.py's peer_cluster: kproto's 3 nodes, then Apache Kafka's (default share
    configs: 50 __share_group_state partitions, 30 s acquisition locks)."""
    scenario(peer_cluster, "shared-peer")
