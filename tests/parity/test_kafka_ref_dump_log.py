"""`kproto dump-log` diffed against Apache Kafka's own DumpLogSegments on the same files.

Both tools read segments written by Kafka's broker (tests/kafka_ref.py, one start
per module) and by kproto's broker, after the same clients produced to each:
confluent-kafka with every codec, kafka-python, aiokafka, a committed and an
aborted transaction, a compacted topic, a group's offset commit. Each broker is
stopped before the dump, so its logs are flushed and its indexes trimmed. The
outputs are compared whole; the differences allowed are listed in README
("Apache Kafka as the reference") and applied by ``allowed`` below, nowhere else.
"""

from __future__ import annotations

import asyncio
import difflib
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kproto.testing
from kproto.schemas import consumer_offsets as CO
from kproto.schemas import transaction_log as TL
from kproto.server.coordinator.consumer_groups import (
    ResolvedRegularExpression, group_tombstones, regular_expression_record,
)
from kproto.tools.main import cli
from tests.records.helpers import v2_batch
from tests.tools.helpers import write_segment
from tests.kafka_ref import KafkaUnavailable, unavailable

DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
HEADERS = [("h1", b"v1"), ("h2", None)]


def create_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(f"cf-{c}", 1, 1) for c in CODECS]
    topics += [NewTopic(t, 1, 1) for t in ("kafka-python", "aiokafka", "txn")]
    topics.append(NewTopic("compacted", 1, 1, config={"cleanup.policy": "compact"}))
    for f in admin.create_topics(topics).values():
        f.result(timeout=60)


def produce_confluent(bootstrap: str) -> None:
    for codec in CODECS:
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 50,
                      "enable.idempotence": codec != "none"})
        for i in range(4):
            p.produce(f"cf-{codec}", key=b"k%d" % i if i != 2 else None,
                      value=b"value %d " % i * 3 if i != 3 else None, headers=HEADERS)
        p.produce(f"cf-{codec}", key="ключ".encode(), value="значение".encode())
        assert p.flush(60) == 0
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(6):
        p.produce("compacted", key=b"key-%d" % (i % 2), value=b"v%d" % i)
        p.flush(60)


def produce_kafka_python(bootstrap: str) -> None:
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip", linger_ms=20)
    for i in range(3):
        p.send("kafka-python", key=b"kp%d" % i, value=b"kafka-python %d" % i, headers=[("h", b"x")])
    p.flush(60)
    p.close()


def produce_aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type="lz4")
        await p.start()
        try:
            for i in range(3):
                await p.send_and_wait("aiokafka", key=b"aio%d" % i, value=b"aiokafka %d" % i)
        finally:
            await p.stop()
    asyncio.run(run())


def produce_transactions(bootstrap: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "ref-txn", "linger.ms": 5})
    p.init_transactions(60)
    for value, commit in ((b"committed", True), (b"aborted", False)):
        p.begin_transaction()
        p.produce("txn", key=b"t", value=value)
        p.flush(60)
        (p.commit_transaction if commit else p.abort_transaction)(60)


def commit_offsets(bootstrap: str) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ref-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["cf-none"])
    msg = None
    while msg is None or msg.error():
        msg = c.poll(30)
    c.commit(message=msg, asynchronous=False)
    c.close()


def workload(bootstrap: str) -> None:
    create_topics(bootstrap)
    produce_confluent(bootstrap)
    produce_kafka_python(bootstrap)
    produce_aiokafka(bootstrap)
    produce_transactions(bootstrap)
    commit_offsets(bootstrap)


@pytest.fixture(scope="module")
def kafka_logs(kafka_ref, tmp_path_factory) -> Path:
    """Kafka's log dir after the workload and a clean shutdown."""
    try:
        with kafka_ref.broker(tmp_path_factory.mktemp("kafka-broker")) as b:
            workload(b.bootstrap)
    except KafkaUnavailable as e:
        unavailable(e)
    return b.log_dir


@pytest.fixture(scope="module")
def kproto_logs(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("kproto-broker") / "data"
    with kproto.testing.broker(config={"transaction.state.log.num.partitions": "1"}, data_dir=data) as b:
        workload(b.bootstrap_servers)
    return data


def segment_files(log_dir: Path, partition: str, *suffixes: str) -> list[str]:
    files = sorted(str(p) for s in suffixes for p in (log_dir / partition).glob(f"*{s}"))
    assert files, f"no {suffixes} in {log_dir / partition}"
    return files


def user_files(log_dir: Path, *suffixes: str) -> list[str]:
    topics = [f"cf-{c}" for c in CODECS] + ["kafka-python", "aiokafka", "txn", "compacted"]
    return [f for t in topics for f in segment_files(log_dir, f"{t}-0", *suffixes)]


def kproto_dump(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["dump-log", *args], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def assert_same(kafka_ref, files: list[str], *flags: str) -> None:
    files_arg = ",".join(files)
    kafka = kafka_ref.run_tool(DUMP_LOG, *flags, "--files", files_arg)
    code, out, err = kproto_dump(*flags, "--files", files_arg)
    assert kafka.returncode == 0, kafka.stderr
    diff = "\n".join(difflib.unified_diff(kafka.stdout.splitlines(), out.splitlines(),
                                          "kafka-dump-log", "kproto dump-log", lineterm=""))
    assert out == kafka.stdout, diff
    assert (code, err) == (0, kafka.stderr)


SOURCES = ["kafka_logs", "kproto_logs"]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("flags", [(), ("--deep-iteration",), ("--print-data-log",)])
def test_log_segments(kafka_ref, request, source, flags):
    assert_same(kafka_ref, user_files(request.getfixturevalue(source), ".log"), *flags)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("flags", [(), ("--verify-index-only",), ("--index-sanity-check",)])
def test_index_files(kafka_ref, request, source, flags):
    assert_same(kafka_ref, user_files(request.getfixturevalue(source), ".index", ".timeindex"), *flags)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("max_bytes", ["0", "100", "500"])
def test_max_bytes(kafka_ref, request, source, max_bytes):
    assert_same(kafka_ref, user_files(request.getfixturevalue(source), ".log"),
                "--print-data-log", "--max-bytes", max_bytes)


@pytest.mark.parametrize("source", SOURCES)
def test_offsets_decoder(kafka_ref, request, source):
    log_dir = request.getfixturevalue(source)
    assert_same(kafka_ref, segment_files(log_dir, "__consumer_offsets-0", ".log"), "--offsets-decoder")


@pytest.mark.parametrize("source", SOURCES)
def test_transaction_log_decoder(kafka_ref, request, source):
    log_dir = request.getfixturevalue(source)
    assert_same(kafka_ref, segment_files(log_dir, "__transaction_state-0", ".log"), "--transaction-log-decoder")


def test_cluster_metadata_decoder(kafka_ref, kafka_logs):
    files = segment_files(kafka_logs, "__cluster_metadata-0", ".log", ".checkpoint")
    assert_same(kafka_ref, files, "--cluster-metadata-decoder")


def _txn_value(status: int, partitions, version: int = 0) -> bytes:
    return TL.TransactionLogValue.build({"version": version, "data": {
        "producer_id": 1, "producer_epoch": 0, "transaction_timeout_ms": 60000,
        "transaction_status": status, "transaction_partitions": partitions,
        "transaction_last_update_timestamp_ms": 1700000000500,
        "transaction_start_timestamp_ms": 1700000000400, "previous_producer_id": 7}})


def test_transaction_log_decoder_odd_records(kafka_ref, tmp_path):
    """Records Kafka's broker never writes, through both tools: a v1 value with a
    tagged field, a tombstone, an unknown record type, an unknown status id, a
    value version no schema has (a missing key is left out: Kafka's tool stops on it)."""
    key = TL.TransactionLogKey.build({"version": 0, "data": {"transactional_id": "txn"}})
    records = [
        (key, _txn_value(0, None)),
        (key, _txn_value(1, [{"topic": "t", "partition_ids": [1, 0]}, {"topic": "u", "partition_ids": [0]}])),
        (key, _txn_value(4, [], version=1)),
        (key, None),
        (b"\x00\x01\x00\x01x", b""),
        (key, _txn_value(9, None)),
        (key, _txn_value(0, None)[:-3]),                   # cut short: Kafka's reason is "null"
        (key, b"\x00\x09\x00"),
        (b"\x00", b"\x00\x00"),
    ]
    path = write_segment(tmp_path, v2_batch(0, [(1, k, v, []) for k, v in records]))
    assert_same(kafka_ref, [str(path)], "--transaction-log-decoder")


def test_offsets_decoder_odd_records(kafka_ref, tmp_path):
    """The same for --offsets-decoder: unknown type, tombstone, unreadable key and value,
    a value cut short."""
    key = CO.RecordKey.build({"version": 1, "data": {"group": "g", "topic": "t", "partition": 0}})
    commit = CO.OffsetCommitValue.build({"version": 3, "data": {
        "offset": 42, "leader_epoch": 5, "metadata": "", "commit_timestamp": 1700000000000}})
    records = [
        (key, commit),
        (key, commit[:-3]),                                # cut short: Kafka's reason is "null"
        (key, None),
        (b"\x00\x63\x00\x01g", b"\x00\x00"),
        (key, b"\x00\x09\x00"),
        (b"\x00", b"\x00\x00"),
        (key, b"\x00"),
    ]
    path = write_segment(tmp_path, v2_batch(0, [(1, k, v, []) for k, v in records]))
    assert_same(kafka_ref, [str(path)], "--offsets-decoder")


def test_remote_log_metadata_decoder_records(kafka_ref, tmp_path):
    """--remote-log-metadata-decoder over each record type (TxnIndexEmpty set and not) and
    every way one fails to deserialize: Kafka 4.4's lines (its toStrings, its
    "Error at offset N, skipping." reasons), both tools on the same file."""
    from kproto.schemas.cluster_metadata import build_metadata_record
    from kproto.schemas.remote_log_metadata_records import REMOTE_LOG_METADATA_RECORDS as RR
    tip = {"name": "foo", "id": uuid.UUID(int=0x1234567890ABCDEF1234567890ABCDEF), "partition": 0}
    segment = {"topic_id_partition": tip, "id": uuid.UUID(int=0xFEDCBA0987654321FEDCBA0987654321)}
    full = {"remote_log_segment_id": segment, "start_offset": 0, "end_offset": 100, "broker_id": 1,
            "max_timestamp_ms": 5, "event_timestamp_ms": 6, "segment_size_in_bytes": 1000,
            "segment_leader_epochs": [{"leader_epoch": 3, "offset": 50}, {"leader_epoch": 1, "offset": 0}],
            "custom_metadata": None, "remote_log_segment_state": 0}
    update = {"remote_log_segment_id": segment, "broker_id": 0, "event_timestamp_ms": 0,
              "custom_metadata": b"\0\1\2\3", "remote_log_segment_state": 1}
    delete = {"topic_id_partition": tip, "broker_id": 0, "event_timestamp_ms": 0, "remote_partition_delete_state": 0}
    snapshot = {"segment_id": segment["id"], "start_offset": 1, "end_offset": 2, "broker_id": 3, "max_timestamp_ms": 4,
                "event_timestamp_ms": 5, "segment_leader_epochs": [{"leader_epoch": 0, "offset": 1}],
                "segment_size_in_bytes": 9, "custom_metadata": b"x", "remote_log_segment_state": 2}

    def rec(key: int, data: dict) -> bytes:
        return build_metadata_record(key, 0, data, RR)
    values = [
        rec(0, full), rec(0, {**full, "custom_metadata": b"abc", "remote_log_segment_state": 3,
                              "txn_index_empty": True}),
        rec(0, {**full, "segment_leader_epochs": []}), rec(0, {**full, "start_offset": -1}),
        rec(0, {**full, "end_offset": -5}), rec(0, {**full, "remote_log_segment_state": 9}),
        rec(1, update), rec(1, {**update, "custom_metadata": None, "remote_log_segment_state": 7}),
        rec(2, delete), rec(2, {**delete, "remote_partition_delete_state": 5}),
        rec(3, snapshot), rec(3, {**snapshot, "txn_index_empty": True}),
        b"corrupted", b"", b"\x01\x09\x00", b"\x01\x02\x01", b"\x00", rec(2, delete) + b"zz", rec(2, delete)[:-3],
        None,
    ]
    path = write_segment(tmp_path, v2_batch(0, [(1, None, v, []) for v in values]))
    assert_same(kafka_ref, [str(path)], "--remote-log-metadata-decoder")


def test_share_group_state_decoder_records(kafka_ref, tmp_path):
    """--share-group-state-decoder over the records kproto's share coordinator writes (a
    snapshot, an update, a tombstone) and odd ones: Kafka 4.4 reads kproto's records, both
    tools print the same lines (a missing key is left out: Kafka's tool stops on it)."""
    from kproto.server.share.partition import StateBatch
    from kproto.server.share.persistence import ShareState, snapshot_record, tombstone, update_record
    key = ("gs1", uuid.UUID(int=7), 3)
    batches = (StateBatch(0, 4, 2, 1), StateBatch(5, 9, 0, 3))
    snapshot = snapshot_record(key, ShareState(2, 1, 5, 0, batches, create_timestamp=1700000000000,
                                                write_timestamp=1700000000500))
    records = [
        snapshot, update_record(key, 2, 5, -1, batches[1:]), tombstone(key),
        (b"\x00\x07\x00\x01g", b"\x00\x00"),                 # an unknown record type
        (snapshot[0], b"\x00\x09\x00"),                       # a value version no schema has
        (snapshot[0], snapshot[1][:-5]),                      # a value cut short
        (b"\x00", b"\x00\x00"),                               # a key too short for its type
    ]
    path = write_segment(tmp_path, v2_batch(0, [(1, k, v, []) for k, v in records]))
    assert_same(kafka_ref, [str(path)], "--share-group-state-decoder")


@pytest.mark.parametrize("flags", [("--cluster-metadata-decoder",),
                                   ("--cluster-metadata-decoder", "--skip-record-metadata")])
def test_metadata_records_and_snapshot(kafka_ref, tmp_path, flags):
    """The inputs of test_kafka_parity_dump_log's testDumpMetadataRecords and
    testDumpMetadataSnapshot ports (a log with a bogus record between the records, a
    KRaft snapshot with its control records) through both tools."""
    from tests.parity.test_kafka_parity_dump_log import BOGUS_METADATA, metadata_records, metadata_snapshot
    values = metadata_records() + [BOGUS_METADATA] + metadata_records()
    log = write_segment(tmp_path, v2_batch(0, [(1, None, v, []) for v in values]))
    assert_same(kafka_ref, [str(log), str(metadata_snapshot(tmp_path))], *flags)


def test_offsets_decoder_regular_expression_records(kafka_ref, tmp_path):
    """ConsumerGroupRegularExpression (type 16) as kproto's coordinator writes it, and its
    tombstone, through both tools."""
    resolved = ResolvedRegularExpression(frozenset({"orders-eu", "orders-us"}), -4123456789012345678, 1700000000123)
    records = [regular_expression_record("g", "orders-.*", resolved),
               regular_expression_record("g", "", ResolvedRegularExpression(frozenset(), 0, 0)),
               *group_tombstones("g", ["orders-.*"])[1:2]]
    path = write_segment(tmp_path, v2_batch(0, [(1, k, v, []) for k, v in records]))
    assert_same(kafka_ref, [str(path)], "--offsets-decoder")


def test_offsets_decoder_streams_group_records(kafka_ref, tmp_path):
    """The KIP-1071 streams-group records (types 17, 19-23) as kproto's coordinator writes them
    for a word count's group, and their tombstones, through both tools."""
    from tests.server.helpers import StreamsDriver
    d = StreamsDriver()
    d.owning("m1", 1, d.hb("m1", 0))
    d.hb("m2", 0, user_endpoint=("localhost", 8080), client_tags=(("zone", "a"),))
    d.hb("m2", -1)
    path = write_segment(tmp_path, v2_batch(0, [(1, k, v, []) for k, v in d.log[0]]))
    assert_same(kafka_ref, [str(path)], "--offsets-decoder")
