"""The reference broker with real, unmodified clients: librdkafka (confluent-kafka
and Debian's kcat), kafka-python and aiokafka. No mocks."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.framing import frame
from kproto import protocol
from kproto.log.manager import LEADER_EPOCH
from kproto.records import control_record, iter_batches
from tests.components import KAFKA, KPROTO, kproto_broker, require_executable
from tests.helpers import admin, produce_raw, until_served
from tests.helpers import commit as commit_offsets
from tests.records.helpers import v2_batch

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


# Each test below runs against kproto's broker and Apache Kafka's (the conftest `broker`
# fixture); those that read kproto's data dir or restart it start their own.
pytestmark = pytest.mark.brokers(KPROTO, KAFKA)


def create(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})    # must outlive the future
    fs = admin.create_topics([NewTopic(name, partitions, 1, config=configs)], operation_timeout=10)
    fs[name].result(timeout=10)
    until_served(bootstrap, name)       # Kafka's broker serves it once its metadata log got there


def produce_ck(bootstrap: str, topic: str, messages: list[tuple], **conf) -> None:
    logger = conf.pop("logger", None)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **conf},
                 **({} if logger is None else {"logger": logger}))
    errors = []
    report = lambda err, msg: errors.append(err) if err is not None else None
    for key, value, headers, ts, partition in messages:
        p.produce(topic, key=key, value=value, headers=headers, timestamp=ts, partition=partition,
                  on_delivery=report)
    assert p.flush(20) == 0
    assert errors == []


def consume_ck(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 20) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append((m.key(), m.value(), m.headers() or [], m.timestamp()[1], m.partition(), m.offset()))
    c.close()
    return got


def messages(n: int, partitions: int, tag: str) -> list[tuple]:
    return [(f"{tag}-k{i}".encode(), f"{tag}-value-{i}".encode() * (1 + i % 7),
             [("h1", b"a"), ("h2", None), ("h1", f"{i}".encode())], 1700000000000 + i, i % partitions)
            for i in range(n)]


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_round_trip_every_codec(broker, codec):
    bs = broker.bootstrap
    topic = broker.unique(f"ck-{codec}")
    create(bs, topic, 3)
    sent = messages(300, 3, codec)
    produce_ck(bs, topic, sent, **{"compression.type": codec})
    got = consume_ck(bs, topic, 3, len(sent))
    assert sorted(g[:5] for g in got) == sorted((k, v, h, ts, p) for k, v, h, ts, p in sent)
    # offsets are dense per partition, from 0
    for p in range(3):
        assert sorted(g[5] for g in got if g[4] == p) == list(range(100))


# KIP-896: Kafka 4.0 removed Produce v0-v2 (and so MessageSet v0/v1 from clients); a broker
# closes the connection of a request at a version it does not serve. kproto keeps them.
NO_OLD_PRODUCE = "Kafka 4 removed Produce v0-v2 (KIP-896): it closes the old producer's connection"


@pytest.mark.differs(KAFKA, NO_OLD_PRODUCE)
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_librdkafka_legacy_producer_read_by_a_current_consumer(broker, codec):
    """librdkafka told the broker is 0.9 (no ApiVersions) sends Produce v1 with
    MessageSet v0 (gzip: one compressed wrapper). The broker converts it to
    RecordBatch v2, as Kafka 3+ does: a default consumer reads every key and
    value (librdkafka test 0052's setting; stored as v0 they read as NULL), and
    no timestamp (-1, CreateTime)."""
    bs = broker.bootstrap
    topic = broker.unique(f"legacy-v0-{codec}")
    create(bs, topic)
    debug: list[str] = []

    class Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            debug.append(record.getMessage())
    lines = logging.getLogger(f"librdkafka-{topic}")
    lines.addHandler(Lines())
    lines.setLevel(logging.DEBUG)
    sent = [(b"k%d" % i if i % 3 else None, b"value-%d" % i * (1 + i % 5), [], 1700000000000 + i, 0)
            for i in range(50)]
    produce_ck(bs, topic, [m[:2] + (None,) + m[3:] for m in sent], logger=lines, debug="msg",
               **{"api.version.request": False, "broker.version.fallback": "0.9.0.0",
                  "compression.type": codec})
    assert any("ApiVersion 1, MsgVersion 0" in line for line in debug), debug[:20]
    got = consume_ck(bs, topic, 1, len(sent))
    assert [(k, v, ts, offset) for k, v, _, ts, _, offset in got] == [
        (k, v, -1, i) for i, (k, v, *_) in enumerate(sent)]


@pytest.mark.differs(KAFKA, NO_OLD_PRODUCE)
@pytest.mark.parametrize("codec", [None, "gzip"])
def test_kafka_python_v1_messages_read_by_a_current_consumer(broker, codec):
    """kafka-python told the broker is 0.10.1 sends Produce v2 with MessageSet
    v1: converted to v2, the records keep their timestamps (CreateTime)."""
    bs = broker.bootstrap
    import kafka
    topic = broker.unique(f"legacy-v1-{codec}")
    create(bs, topic)
    producer = kafka.KafkaProducer(bootstrap_servers=bs, api_version=(0, 10, 1), compression_type=codec)
    sent = [(b"k%d" % i if i % 3 else None, b"value-%d" % i, 1600000000000 + i) for i in range(20)]
    for key, value, ts in sent:
        producer.send(topic, key=key, value=value, timestamp_ms=ts, partition=0)
    producer.flush(timeout=20)
    producer.close()
    got = consume_ck(bs, topic, 1, len(sent))
    assert [(k, v, ts, offset) for k, v, _, ts, _, offset in got] == [
        (k, v, ts, i) for i, (k, v, ts) in enumerate(sent)]


def test_every_appended_batch_carries_the_partition_leader_epoch(tmp_path):
    """UnifiedLog.appendAsLeader stamps the partition's leader epoch on every
    batch: a client's (whatever it sent: 7 here), the transaction markers, the
    coordinators' own records. It is the epoch Metadata reports."""
    data = tmp_path / "data"
    with kproto_broker(tmp_path, data_dir=data) as bs:
        create(bs, "epochs")
        reply = produce_raw(bs, "epochs", 0, v2_batch(0, [(1700000000000, b"k", b"v", [])], leader_epoch=7))
        assert (reply.error_code, reply.base_offset) == (0, 0)
        p = Producer({"bootstrap.servers": bs, "transactional.id": "epochs-txn", "linger.ms": 5})
        p.init_transactions(15)
        for end in (p.commit_transaction, p.abort_transaction):
            p.begin_transaction()
            p.produce("epochs", value=end.__name__.encode(), partition=0)
            assert p.flush(15) == 0
            end(15)
        del p
        commit_offsets(bs, "epochs-group", {("epochs", 0): 1})
        c = Consumer({"bootstrap.servers": bs, "group.id": "unused"})
        deadline = time.monotonic() + 20       # the markers land after EndTxn answers
        while c.get_watermark_offsets(TopicPartition("epochs", 0), timeout=10)[1] < 5:
            assert time.monotonic() < deadline
        c.close()
        with admin(bs) as a:
            [partition] = a.metadata(["epochs"]).topics["epochs"].partitions
    assert partition.leader_epoch == LEADER_EPOCH == 0
    stored: dict[str, list] = {}
    for path in sorted(data.glob("*/*.log")):     # the old timestamp rolls epochs-0 at offset 1
        stored.setdefault(path.parent.name, []).extend(iter_batches(path.read_bytes()))
    assert [(b.base_offset, b.is_control, b.partition_leader_epoch) for b in stored["epochs-0"]] == [
        (0, False, 0), (1, False, 0), (2, True, 0), (3, False, 0), (4, True, 0)]
    assert [control_record(b.records()[0]).type_name for b in stored["epochs-0"] if b.is_control] == [
        "COMMIT", "ABORT"]
    internal = [b for name, batches in stored.items() if name.startswith("__") for b in batches]
    assert {n.rsplit("-", 1)[0] for n, batches in stored.items() if batches} == {
        "epochs", "__transaction_state", "__consumer_offsets"}
    assert {b.partition_leader_epoch for b in internal} == {0}


def test_idempotent_producer(broker):
    bs, topic = broker.bootstrap, broker.unique("idem")
    create(bs, topic, 2)
    sent = messages(200, 2, "idem")
    produce_ck(bs, topic, sent, **{"enable.idempotence": True, "compression.type": "lz4"})
    got = consume_ck(bs, topic, 2, len(sent))
    assert len(got) == 200 and len({(g[4], g[5]) for g in got}) == 200


def test_kcat_metadata_produce_consume(broker):
    bs, topic = broker.bootstrap, broker.unique("kcat-topic")
    kcat = require_executable("kcat", "apt-get install kcat (make test does)")
    run = lambda *a, **kw: subprocess.run([kcat, "-b", bs, *a], capture_output=True, text=True,
                                          timeout=30, **kw)
    out = run("-P", "-t", topic, "-K:", input="a:1\nb:2\nc:3\n")
    assert out.returncode == 0, out.stderr
    meta = run("-L", "-t", topic)
    assert meta.returncode == 0 and f'topic "{topic}" with 1 partitions' in meta.stdout
    assert "broker 1 at " + bs in meta.stdout
    got = run("-C", "-t", topic, "-e", "-f", "%k=%s@%o\n")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == ["a=1@0", "b=2@1", "c=3@2"]


def test_kafka_python_producer_consumer_and_admin(broker):
    bs, topic = broker.bootstrap, broker.unique("kp")
    import kafka
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.admin import NewTopic as KNewTopic
    admin = KafkaAdminClient(bootstrap_servers=bs)
    admin.create_topics([KNewTopic(topic, 2, 1, topic_configs={"cleanup.policy": "compact",
                                                                "retention.ms": "123456"})])
    until_served(bs, topic)             # its configs came in the same metadata batch
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    configs = described["topic"][topic] if isinstance(described, dict) else None
    assert configs["cleanup.policy"]["value"] == "compact"
    assert configs["cleanup.policy"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    producer = kafka.KafkaProducer(bootstrap_servers=bs, compression_type="gzip")
    for i in range(20):
        producer.send(topic, key=b"key%d" % (i % 4), value=b"v%d" % i, headers=[("x", b"y")],
                      timestamp_ms=1600000000000 + i, partition=i % 2)
    producer.flush()
    consumer = kafka.KafkaConsumer(bootstrap_servers=bs, auto_offset_reset="earliest",
                                   consumer_timeout_ms=5000, group_id=None)
    consumer.assign([kafka.TopicPartition(topic, 0), kafka.TopicPartition(topic, 1)])
    got = sorted((m.value, m.key, m.headers, m.timestamp) for m in consumer)
    assert got == sorted((b"v%d" % i, b"key%d" % (i % 4), [("x", b"y")], 1600000000000 + i) for i in range(20))
    admin.close()


def test_aiokafka_producer_consumer(broker):
    bs, topic = broker.bootstrap, broker.unique("aio")
    import aiokafka

    async def run():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bs, compression_type="zstd")
        await producer.start()
        for i in range(30):
            await producer.send_and_wait(topic, key=b"k", value=b"aio-%d" % i, headers=[("n", b"%d" % i)],
                                         timestamp_ms=1650000000000 + i)
        await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bs, auto_offset_reset="earliest",
                                             enable_auto_commit=False, group_id=None)
        await consumer.start()
        consumer.assign([aiokafka.TopicPartition(topic, 0)])
        got = []
        try:
            while len(got) < 30:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 20)
                for msgs in batch.values():
                    got += [(m.offset, m.value, list(m.headers), m.timestamp) for m in msgs]
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(run())       # "aio-..." is auto-created by the producer's metadata request
    assert got == [(i, b"aio-%d" % i, [("n", b"%d" % i)], 1650000000000 + i) for i in range(30)]


def test_nothing_lost_across_a_restart(tmp_path):
    data = tmp_path / "data"
    sent = messages(500, 2, "restart")
    with kproto_broker(tmp_path, data_dir=data) as bootstrap:
        create(bootstrap, "durable", 2, **{"segment.bytes": "2048"})
        produce_ck(bootstrap, "durable", sent, **{"compression.type": "snappy", "batch.size": 1000})
    with kproto_broker(tmp_path, data_dir=data) as bootstrap:
        got = consume_ck(bootstrap, "durable", 2, len(sent))
        more = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    assert sorted(g[:5] for g in got) == sorted(sent)
    assert len(more["durable"].partitions) == 2
    assert len(list(data.glob("durable-0/*.log"))) > 1      # rolled at segment.bytes


# --- bad input: Kafka's behaviour, and the broker keeps serving -------------------------

def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.split(":")
    s = socket.create_connection((host, int(port)), timeout=5)
    return s


def _roundtrip(s: socket.socket, payload: bytes) -> bytes | None:
    s.sendall(frame(payload))
    size = s.recv(4)
    if not size:
        return None
    n = int.from_bytes(size, "big")
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def _api_versions_ok(bootstrap: str) -> bool:
    with _connect(bootstrap) as s:
        reply = _roundtrip(s, protocol.encode_request(18, 3, 7, "probe", {"client_software_name": "t",
                                                                           "client_software_version": "1"}))
    _, body = protocol.decode_response(18, 3, reply)
    return body.error_code == 0 and any(k.api_key == 0 for k in body.api_keys)


@pytest.mark.parametrize("payload", [
    b"\x00\x03\x00",                                            # truncated header
    b"\x00\x03\x00\x0c\x00\x00\x00\x01\x00\x01x\x00\xff\xff\xff",  # Metadata v12 with a cut body
    b"\x7f\x00\x00\x00\x00\x00\x00\x01\xff\xff",                # unknown API key
    protocol.encode_request(3, 1, 1, "c", {"topics": None})[:4].replace(b"\x00\x01", b"\x00\x63", 1)
    + b"\x00\x00\x00\x01\xff\xff",                               # Metadata v99
])
def test_bad_frames_close_only_their_connection(broker, payload):
    bs = broker.bootstrap
    with _connect(bs) as bystander:
        with _connect(bs) as s:
            assert _roundtrip(s, payload) is None      # Kafka closes the connection
        assert _api_versions_ok(bs)
        reply = _roundtrip(bystander, protocol.encode_request(18, 0, 1, None, {}))
        assert protocol.decode_response(18, 0, reply)[1].error_code == 0


def test_api_versions_newer_than_ours_answers_error_35_in_v0(broker):
    bs = broker.bootstrap
    with _connect(bs) as s:
        reply = _roundtrip(s, b"\x00\x12\x00\x63\x00\x00\x00\x05\x00\x01c\x00")
    header, body = protocol.decode_response(18, 99, reply)
    assert header.correlation_id == 5 and body.error_code == 35
    # the versions each serves: Kafka 4.4 has ApiVersions v5, kproto up to v4
    served = (0, 5) if broker.kind == KAFKA else protocol.api(18).served
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}[18] == served


def test_oversized_frame_is_refused(tmp_path):
    with kproto_broker(tmp_path, "socket.request.max.bytes=1024") as bootstrap:
        with _connect(bootstrap) as s:
            s.sendall((4096).to_bytes(4, "big") + b"\x00" * 64)
            assert s.recv(4) == b""
        assert _api_versions_ok(bootstrap)
