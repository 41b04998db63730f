"""A three-broker kproto cluster with real clients, real processes and real SIGKILL
(issue 27, docs/cluster.md): replication, acks=all, failover, rejoining the ISR.

Every wait is on the event itself (Metadata showing a leader or an ISR, a number of
acknowledged records); timeouts are only safety nets. Node 1 is the quorum's one
voter here and is never killed: a quorum of one has no other controller to fail
over to (tests/e2e/test_cluster_raft.py kills the active one of three).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, KafkaError as CKError, KafkaException, Producer, TopicPartition
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTopicPartition

from kproto.client.admin import Admin
from kproto.client.data import DataClient
from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode
from kproto.log.checkpoint import read_offset_checkpoint
from kproto.records import NewRecord, build_record_batch, iter_batches
from kproto.schemas import protocol as P
from kproto.testing import Cluster
from tests.e2e.helpers import produce_across_leader_kill
from tests.helpers import until


@pytest.fixture
def cluster(tmp_path):
    with Cluster(brokers=3, data_dir=tmp_path / "cluster") as c:
        yield c
        running = [i for i, b in c.nodes.items() if b.running]
    # every node still running shut down cleanly (exit status 0: checkpoints written)
    assert {i: c.nodes[i].returncode for i in running} == dict.fromkeys(running, 0)


def create(cluster: Cluster, topic: str, assignment: list[list[int]], **configs) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    new = NewTopic(topic, len(assignment), replica_assignment=assignment, config={k.replace("_", "."): str(v)
                                                                    for k, v in configs.items()})
    admin.create_topics([new])[topic].result(timeout=60)
    for p, replicas in enumerate(assignment):
        cluster.wait_for_isr(topic, p, replicas)


def consume_all(cluster: Cluster, topic: str, partition: int, end: int) -> list[bytes]:
    """Every record of the partition below offset ``end``, from its leader."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, partition, 0)])
    out: list[bytes] = []
    try:
        while len(out) < end:
            m = c.poll(30)
            assert m is not None, f"no record after {len(out)} of {end}"
            assert m.error() is None, m.error()
            out.append(m.value())
    finally:
        c.close()
    return out


def segment_bytes(cluster: Cluster, node: int, topic: str, partition: int) -> bytes:
    d = cluster.nodes[node].data_dir / f"{topic}-{partition}"
    return b"".join(p.read_bytes() for p in sorted(d.glob("*.log")))


def test_replicated_topic_every_replica_holds_the_leaders_batches(cluster):
    create(cluster, "rep", [[2, 3, 1]], min_insync_replicas=2)
    md = cluster.partition("rep", 0)
    assert (md.leader, md.replicas, set(md.isr), md.offline_replicas) == (2, (2, 3, 1), {1, 2, 3}, ())
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5})
    acked = []
    for i in range(500):
        p.produce("rep", value=b"%d" % i, partition=0,
                  on_delivery=lambda e, m: acked.append(m.offset()) if e is None else None)
    assert p.flush(60) == 0
    assert sorted(acked) == list(range(500))
    assert consume_all(cluster, "rep", 0, 500) == [b"%d" % i for i in range(500)]
    # acks=all answered once the ISR had the records: a follower may still lack the HW's
    # update, never the records, so every replica's segments are the leader's bytes
    leader = segment_bytes(cluster, 2, "rep", 0)
    assert sum(b.next_offset - b.base_offset for b in iter_batches(leader)) == 500
    assert segment_bytes(cluster, 3, "rep", 0) == leader
    assert segment_bytes(cluster, 1, "rep", 0) == leader


def test_consumers_read_only_below_the_high_watermark(tmp_path):
    """A follower that stopped fetching holds the HW back (it stays in the ISR for
    replica.lag.time.max.ms, its session lives broker.session.timeout.ms, both a
    generous 60 s here): an acks=1 write is in the leader's log, but consumers see
    nothing past the HW until the follower resumes and has fetched it."""
    config = {"broker.session.timeout.ms": 60000, "replica.lag.time.max.ms": 60000}
    with Cluster(brokers=3, data_dir=tmp_path / "cluster", config=config) as cluster, \
            BrokerClient(cluster.bootstrap_servers) as client:
        create(cluster, "hw", [[2, 3, 1]])
        data = DataClient(client)
        cluster.pause(3)
        result = data.produce({("hw", 0): build_record_batch([NewRecord(value=b"x")])}, acks=1)[("hw", 0)]
        assert (result.error, result.base_offset) == (ErrorCode.NONE, 0)
        assert sum(1 for _ in iter_batches(segment_bytes(cluster, 2, "hw", 0))) == 1     # in the leader's log
        fetched = data.fetch({("hw", 0): 0}, max_wait_ms=0)[("hw", 0)]
        assert (fetched.error, fetched.high_watermark, fetched.records) == (ErrorCode.NONE, 0, b"")
        cluster.resume(3)                   # it fetches again, and the HW moves
        fetched = data.fetch({("hw", 0): 0}, max_wait_ms=60000)[("hw", 0)]
        assert (fetched.error, fetched.high_watermark) == (ErrorCode.NONE, 1)
        assert [r.value for b in iter_batches(fetched.records) for r in b] == [b"x"]
        data.close()


def test_leader_sigkill_loses_no_acknowledged_record_and_the_node_rejoins(cluster):
    create(cluster, "fail", [[2, 3, 1]], min_insync_replicas=2)
    acked = produce_across_leader_kill(cluster, "fail")
    records = consume_all(cluster, "fail", 0, len(acked))
    # every acknowledged record exactly once (the idempotent producer's retries deduplicated
    # by the new leader, which replicated the producer state), in the order they were sent
    assert sorted(records, key=int) == records
    assert len(set(records)) == len(records)
    assert set(acked) <= set(records)
    # the killed node restarts, truncates to where its epoch ended on the new leader, and
    # rejoins the ISR; one more acks=all write reaches the whole ISR, so every replica's
    # segments then hold the same batches, byte for byte
    cluster.start(2)
    cluster.wait_for_isr("fail", 0, [1, 2, 3])
    assert cluster.leader("fail", 0) == 3
    with BrokerClient(cluster.bootstrap_servers) as client:
        data = DataClient(client)
        last = data.produce({("fail", 0): build_record_batch([NewRecord(value=b"last")])}, acks=-1)[("fail", 0)]
        assert last.error == ErrorCode.NONE
        data.close()
    leader = segment_bytes(cluster, 3, "fail", 0)
    assert segment_bytes(cluster, 2, "fail", 0) == leader
    assert segment_bytes(cluster, 1, "fail", 0) == leader
    # each replica's leader-epoch-checkpoint (LeaderEpochCheckpointFile) names where epoch 1 began
    epoch_one = next(b.base_offset for b in iter_batches(leader) if b.partition_leader_epoch == 1)
    for node in (1, 2, 3):
        path = cluster.nodes[node].data_dir / "fail-0" / "leader-epoch-checkpoint"
        assert path.read_text() == f"0\n2\n0 0\n1 {epoch_one}\n", node


def test_two_of_three_killed_gives_not_enough_replicas_and_no_acknowledged_write(cluster):
    create(cluster, "min", [[2, 3, 1]], min_insync_replicas=2)
    cluster.kill(2)
    cluster.kill(3)
    assert cluster.wait_for_isr("min", 0, [1]) == (1,)
    assert cluster.leader("min", 0) == 1
    with BrokerClient(cluster.bootstrap_servers) as client:
        data = DataClient(client)
        result = data.produce({("min", 0): build_record_batch([NewRecord(value=b"no")])}, acks=-1)[("min", 0)]
        assert result.error == ErrorCode.NOT_ENOUGH_REPLICAS
        assert result.message is None       # as Kafka: the reason is in the leader's log only
        assert ("The size of the current ISR Set(1) is insufficient to satisfy the min.isr requirement of 2 "
                "for partition min-0") in cluster.nodes[1].log_text()
        fetched = data.fetch({("min", 0): 0}, max_wait_ms=0)[("min", 0)]
        assert (fetched.high_watermark, fetched.records) == (0, b"")
        data.close()
    # a real client: the write is never acknowledged (librdkafka retries NOT_ENOUGH_REPLICAS
    # until its message timeout)
    failed = []
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "message.timeout.ms": 3000})
    p.produce("min", value=b"no", partition=0, on_delivery=lambda e, m: failed.append(e))
    p.flush(30)
    assert len(failed) == 1 and failed[0] is not None
    assert failed[0].code() in (CKError.NOT_ENOUGH_REPLICAS, CKError._MSG_TIMED_OUT)
    with BrokerClient(cluster.bootstrap_servers) as client:
        fetched = DataClient(client).fetch({("min", 0): 0}, max_wait_ms=0)[("min", 0)]
        assert fetched.log_start_offset == 0 and fetched.high_watermark == 0


def test_one_consumer_group_across_nodes(cluster):
    """Members bootstrapped from different nodes find one coordinator (the leader of the
    group's __consumer_offsets partition) and split the partitions."""
    create(cluster, "grp", [[2, 3, 1], [3, 1, 2]])
    consumers = [Consumer({"bootstrap.servers": cluster.nodes[n].bootstrap_servers, "group.id": "g1",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False}) for n in (2, 3)]
    try:
        for c in consumers:
            c.subscribe(["grp"])
        deadline = time.monotonic() + 120       # safety nets: the loops end on the events
        while any(not c.assignment() for c in consumers):     # both members in, one partition each
            assert time.monotonic() < deadline, [c.assignment() for c in consumers]
            for c in consumers:
                c.poll(0.2)
        # written once the group is stable, so no rebalance hands a partition over mid-way
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        for i in range(20):
            p.produce("grp", value=b"%d" % i, partition=i % 2)
        assert p.flush(60) == 0
        seen: dict[int, list[bytes]] = {0: [], 1: []}
        while sum(map(len, seen.values())) < 20:
            assert time.monotonic() < deadline, seen
            for c in consumers:
                m = c.poll(0.2)
                if m is not None and m.error() is None:
                    seen[m.partition()].append(m.value())
        assignments = [{tp.partition for tp in c.assignment()} for c in consumers]
        assert sorted(map(sorted, assignments)) == [[0], [1]]
        assert seen == {0: [b"%d" % i for i in range(0, 20, 2)], 1: [b"%d" % i for i in range(1, 20, 2)]}
        for c in consumers:
            c.commit(asynchronous=False)
        committed = consumers[0].committed([TopicPartition("grp", 0), TopicPartition("grp", 1)], timeout=30)
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 10), (1, 10)]
    finally:
        for c in consumers:
            c.close()


def test_only_the_leader_answers_produce_fetch_and_list_offsets(cluster):
    """ReplicaManager.getPartitionOrError and Partition.checkCurrentLeaderEpoch, over raw frames."""
    create(cluster, "led", [[2, 3, 1]])
    batch = build_record_batch([NewRecord(value=b"v")])

    def ask(node: int, epoch: int = -1) -> tuple[int, int, int]:
        with BrokerClient(cluster.nodes[node].bootstrap_servers) as c:
            produced = c.request(P.produce.API.key, {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
                {"name": "led", "partition_data": [{"index": 0, "records": batch}]}]}).responses[0]
            fetched = c.request(P.fetch.API.key, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "topics": [{"topic": "led", "partitions": [{
                    "partition": 0, "current_leader_epoch": epoch, "fetch_offset": 0, "last_fetched_epoch": -1,
                    "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
                "forgotten_topics_data": [], "rack_id": ""}).responses[0]
            listed = c.request(P.list_offsets.API.key, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "led", "partitions": [
                {"partition_index": 0, "current_leader_epoch": epoch, "timestamp": -1}]}]}).topics[0]
        return (produced.partition_responses[0].error_code, fetched.partitions[0].error_code,
                listed.partitions[0].error_code)

    assert ask(3) == (ErrorCode.NOT_LEADER_OR_FOLLOWER,) * 3
    assert ask(1) == (ErrorCode.NOT_LEADER_OR_FOLLOWER,) * 3
    assert ask(2) == (0, 0, 0)
    # the leader's epoch moves on a failover; a client still at the old one is fenced
    cluster.stop(2)                 # controlled shutdown: the leadership moves at once
    assert cluster.wait_for_leader("led", 0, not_in={2}) == 3
    assert cluster.partition("led", 0).leader_epoch == 1
    assert ask(3, epoch=0)[1:] == (ErrorCode.FENCED_LEADER_EPOCH,) * 2
    assert ask(3, epoch=2)[1:] == (ErrorCode.UNKNOWN_LEADER_EPOCH,) * 2
    assert ask(3, epoch=1) == (0, 0, 0)


def test_create_partitions_through_the_controller(cluster):
    """CreatePartitions checked by the broker in the controller's words, then made by the
    controller (PartitionRecords): every replica hosts the new partitions, which take records."""
    create(cluster, "grow", [[2, 3, 1]])
    admin = AdminClient({"bootstrap.servers": cluster.nodes[2].bootstrap_servers})
    admin.create_partitions([NewPartitions("grow", 3)])["grow"].result(timeout=60)
    topic = cluster.metadata(["grow"]).topics["grow"]
    assert sorted((q.partition, len(q.replicas)) for q in topic.partitions) == [(0, 3), (1, 3), (2, 3)]
    for q in (1, 2):
        cluster.wait_for_isr("grow", q, [1, 2, 3])
    # a new partition's ISR is whole from its PartitionRecord on: each node makes its log when it applies it
    until(lambda: all((b.data_dir / f"grow-{q}").is_dir() for b in cluster.nodes.values() for q in range(3)),
          what="every node hosting grow-0..2")
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    p.produce("grow", value=b"two", partition=2)
    assert p.flush(60) == 0
    assert consume_all(cluster, "grow", 2, 1) == [b"two"]
    with pytest.raises(KafkaException) as e:
        admin.create_partitions([NewPartitions("grow", 4, replica_assignment=[[1, 7]])])["grow"].result(timeout=30)
    assert (e.value.args[0].code(), e.value.args[0].str()) == (
        CKError.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker 7, but no such broker "
                                            "is registered.")
    with pytest.raises(KafkaException) as e:
        admin.create_partitions([NewPartitions("grow", 2)])["grow"].result(timeout=30)
    assert (e.value.args[0].code(), e.value.args[0].str()) == (
        CKError.INVALID_PARTITIONS, "The topic grow currently has 3 partition(s); 2 would not be an increase.")


def test_delete_topics_through_the_controller_on_every_replica(cluster):
    """DeleteTopics forwarded to the controller (a RemoveTopicRecord): every node drops the
    topic and its logs; a topic of the same name starts afresh; internal and unknown topics
    are refused."""
    create(cluster, "gone", [[2, 3, 1]])
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(3):
        p.produce("gone", value=b"old-%d" % i, partition=0)
    assert p.flush(60) == 0
    admin = AdminClient({"bootstrap.servers": cluster.nodes[3].bootstrap_servers})
    admin.delete_topics(["gone"])["gone"].result(timeout=60)
    assert "gone" not in cluster.metadata().topics
    # every node deletes its log once it applies the RemoveTopicRecord, not before the answer
    until(lambda: not any((b.data_dir / "gone-0").exists() for b in cluster.nodes.values()),
          what="every node deleting gone-0")
    create(cluster, "gone", [[3, 1, 2]])
    p.produce("gone", value=b"new", partition=0)
    assert p.flush(60) == 0
    assert consume_all(cluster, "gone", 0, 1) == [b"new"]
    with BrokerClient(cluster.bootstrap_servers) as client:
        results = Admin(client).delete_topics(["__consumer_offsets", "never"])
    assert {n: (r.error, r.message) for n, r in results.items()} == {
        "__consumer_offsets": (ErrorCode.INVALID_REQUEST, "Topic __consumer_offsets is a kafka internal topic and "
                                                         "is not allowed to be marked for deletion."),
        "never": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")}


def test_a_lagging_follower_leaves_the_isr_and_rejoins_when_caught_up(tmp_path):
    """The leader's own rules, not fencing (sessions of 60 s here): a follower that has not
    caught up for replica.lag.time.max.ms is shrunk out by AlterPartition, and expanded back
    in once it reaches the HW (Partition.maybeShrinkIsr / maybeExpandIsr)."""
    config = {"broker.session.timeout.ms": 60000, "replica.lag.time.max.ms": 2000}
    with Cluster(brokers=3, data_dir=tmp_path / "cluster", config=config) as cluster, \
            BrokerClient(cluster.bootstrap_servers) as client:
        create(cluster, "lag", [[2, 3, 1]], min_insync_replicas=2)
        data = DataClient(client)
        cluster.pause(3)
        # an idle follower at the leader's end is caught up (Replica.isCaughtUp): a write makes it lag
        one = data.produce({("lag", 0): build_record_batch([NewRecord(value=b"a")])}, acks=1)[("lag", 0)]
        assert (one.error, one.base_offset) == (ErrorCode.NONE, 0)
        assert set(cluster.wait_for_isr("lag", 0, [2, 1])) == {1, 2}
        assert cluster.partition("lag", 0).offline_replicas == ()       # not fenced: its session lives
        ok = data.produce({("lag", 0): build_record_batch([NewRecord(value=b"b")])}, acks=-1)[("lag", 0)]
        assert (ok.error, ok.base_offset) == (ErrorCode.NONE, 1)        # the ISR {1, 2} has it
        cluster.resume(3)
        cluster.wait_for_isr("lag", 0, [1, 2, 3])
        data.close()
    assert segment_bytes(cluster, 3, "lag", 0) == segment_bytes(cluster, 2, "lag", 0)
    # stopped cleanly: the leader checkpointed its HW (ReplicaManager.checkpointHighWatermarks)
    hw = read_offset_checkpoint(cluster.nodes[2].data_dir / "replication-offset-checkpoint")
    assert hw[("lag", 0)] == 2


def test_the_controller_restarts_and_failover_works_after(cluster):
    create(cluster, "ctl", [[2, 3, 1]])
    cluster.stop(1)
    cluster.start(1)            # replays its metadata log; the brokers reconnect
    cluster.wait_for(lambda md: len(md.brokers) == 3 or None, "every broker unfenced again")
    cluster.wait_for_isr("ctl", 0, [1, 2, 3])
    cluster.kill(2)
    assert cluster.wait_for_leader("ctl", 0, not_in={2}) == 3
    with BrokerClient(cluster.bootstrap_servers) as client:
        data = DataClient(client)
        ok = data.produce({("ctl", 0): build_record_batch([NewRecord(value=b"after")])}, acks=-1)[("ctl", 0)]
        assert ok.error == ErrorCode.NONE
        data.close()


def test_kafka_python_and_aiokafka_follow_a_new_leader(cluster):
    """Both clients read the cluster's Metadata, write acks=all to the leader, and after its
    SIGKILL find the new one (their retries: NOT_LEADER_OR_FOLLOWER, a closed connection)."""
    create(cluster, "clients", [[3, 2, 1]], min_insync_replicas=2)
    kp = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=50, retry_backoff_ms=200,
                       request_timeout_ms=30000)

    async def aio_send(values: list[bytes]) -> None:
        p = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=True,
                             request_timeout_ms=30000)
        await p.start()
        try:
            for v in values:
                await p.send_and_wait("clients", v, partition=0)
        finally:
            await p.stop()

    for i in range(5):
        kp.send("clients", b"kp-%d" % i, partition=0).get(timeout=60)
    asyncio.run(aio_send([b"aio-%d" % i for i in range(5)]))
    cluster.kill(3)
    assert cluster.wait_for_leader("clients", 0, not_in={3}) == 2
    for i in range(5, 10):
        kp.send("clients", b"kp-%d" % i, partition=0).get(timeout=120)
    kp.close()
    asyncio.run(aio_send([b"aio-%d" % i for i in range(5, 10)]))
    want = [b"kp-%d" % i for i in range(5)] + [b"aio-%d" % i for i in range(5)] + \
        [b"kp-%d" % i for i in range(5, 10)] + [b"aio-%d" % i for i in range(5, 10)]
    k = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                      consumer_timeout_ms=30000)
    k.assign([KTopicPartition("clients", 0)])
    got = []
    for m in k:
        got.append(m.value)
        if len(got) == len(want):
            break
    k.close()
    assert got == want

    async def aio_read() -> list[bytes]:
        c = AIOKafkaConsumer("clients", bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest")
        await c.start()
        out: list[bytes] = []
        try:
            while len(out) < len(want):
                batch = await asyncio.wait_for(c.getmany(timeout_ms=1000), 60)
                out += [m.value for msgs in batch.values() for m in msgs]
        finally:
            await c.stop()
        return out
    assert asyncio.run(aio_read()) == want
