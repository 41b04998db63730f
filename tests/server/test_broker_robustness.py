"""What a hostile or careless client must not be able to do to the broker
(issue 10), each through real clients: create, delete or grow internal topics,
append to them, or get corrupt batches with a valid CRC acknowledged."""

from __future__ import annotations

import os
import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaError as CKError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from crc32c import crc32c

from kproto.client.admin import Admin
from kproto.client.transport import BrokerClient
from kproto.compression import CompressionType
from kproto.errors import ErrorCode
from kproto.records import NewRecord, build_record_batch
from tests.components import kproto_broker
from tests.helpers import produce_raw
from tests.helpers import create_topic as create

INTERNAL = ["__consumer_offsets", "__transaction_state"]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with kproto_broker(tmp_path_factory.mktemp("robust"), "group.initial.rebalance.delay.ms=0") as bootstrap:
        yield bootstrap


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def commit_offset(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """A committed offset, which makes the broker create __consumer_offsets as Kafka does."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


def committed(bootstrap: str, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    finally:
        c.close()




# --- (a) internal topics: the broker sizes and owns them -------------------------------

@pytest.mark.parametrize("topic", INTERNAL)
def test_create_topics_of_an_internal_topic_is_refused(broker, topic):
    # ControllerApis.createTopics' answer for an internal topic (INVALID_REQUEST, its text)
    a = admin(broker)      # must outlive the future
    with pytest.raises(Exception) as e:
        a.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=10)
    err = e.value.args[0]
    assert err.code() == CKError.INVALID_REQUEST
    assert err.str() == f"Creation of internal topic {topic} is prohibited."


def test_internal_topic_cannot_be_deleted_or_grown_and_restart_works(tmp_path):
    data = tmp_path / "data"
    with kproto_broker(tmp_path, "offsets.topic.num.partitions=4", data_dir=data) as bs:
        create(bs, "t")
        commit_offset(bs, "g", "t", 42)
        a = admin(bs)
        with pytest.raises(Exception) as e:
            a.delete_topics(["__consumer_offsets"], operation_timeout=10)["__consumer_offsets"].result(10)
        assert e.value.args[0].code() == CKError.INVALID_REQUEST
        with pytest.raises(Exception) as e:
            a.create_partitions([NewPartitions("__consumer_offsets", 8)])["__consumer_offsets"].result(10)
        assert e.value.args[0].code() == CKError.INVALID_REQUEST
        # the texts, in the versions that carry error_message (librdkafka asks older ones)
        with BrokerClient(bs) as client:
            ours = Admin(client)
            assert ours.delete_topics(["__consumer_offsets"])["__consumer_offsets"][1:] == (
                ErrorCode.INVALID_REQUEST, "Topic __consumer_offsets is a kafka internal topic and is not "
                                           "allowed to be marked for deletion.")
            assert ours.create_partitions({"__consumer_offsets": 8})["__consumer_offsets"][1:] == (
                ErrorCode.INVALID_REQUEST, "The number of partitions for the internal topic __consumer_offsets "
                                           "cannot be changed.")
        assert len(a.list_topics(timeout=10).topics["__consumer_offsets"].partitions) == 4
    with kproto_broker(tmp_path, "offsets.topic.num.partitions=4", data_dir=data) as bs:
        assert committed(bs, "g", "t") == 42


def test_a_partially_created_offsets_topic_does_not_stop_startup(tmp_path):
    """A data dir from an older broker holding __consumer_offsets with 1 partition
    (what CreateTopics used to allow): start-up loads what is there."""
    from kproto.log import LogManager
    data = tmp_path / "data"
    LogManager(data).create_topic("__consumer_offsets", 1, internal=True)[0].close()
    with kproto_broker(tmp_path, data_dir=data) as bs:
        create(bs, "t")
        for g in ("g1", "g2", "g3"):     # groups hashing to partitions that are missing on disk
            commit_offset(bs, g, "t", 7)
            assert committed(bs, g, "t") == 7


# --- (b) no client appends to internal topics; replay survives bad records ------------------

def test_produce_to_an_internal_topic_is_refused(broker):
    create(broker, "x-internal")
    commit_offset(broker, "g-internal", "x-internal", 1)     # __consumer_offsets exists
    errors = []
    p = Producer({"bootstrap.servers": broker, "acks": "all", "retries": 0})
    for partition in (0, 7, 49):
        p.produce("__consumer_offsets", key=b"k", value=b"not an offset commit", partition=partition,
                  on_delivery=lambda err, msg: errors.append(err))
    p.flush(20)
    assert [e.code() for e in errors] == [CKError.TOPIC_EXCEPTION] * 3
    # ReplicaManager.appendToLocalLog's text, seen through the raw response
    reply = produce_raw(broker, "__consumer_offsets", 0, build_record_batch([NewRecord(b"k", b"v")]))
    assert (reply.error_code, reply.error_message) == (ErrorCode.INVALID_TOPIC_EXCEPTION,
                                                       "Cannot append to internal topic __consumer_offsets")


def test_startup_skips_unreadable_offsets_records_and_logs_each_once(tmp_path):
    from kproto.log import AppendOrigin, LogManager
    from kproto.server.runtime.state_topic import partition_for
    data = tmp_path / "data"
    with kproto_broker(tmp_path, data_dir=data) as bs:
        create(bs, "t")
        commit_offset(bs, "good", "t", 5)
    p = partition_for("good", 50)
    mgr = LogManager(data)
    plog = mgr.get_log("__consumer_offsets", p)
    end_before = plog.active_segment.size
    # what an older kproto let a client append: records that are no offset commit
    plog.append(build_record_batch([NewRecord(b"\x00\x01\x00", b"x"), NewRecord(b"\x00\x01junk", b"\xff" * 9)]),
                origin=AppendOrigin.COORDINATOR)
    mgr.close()
    with kproto_broker(tmp_path, data_dir=data, port=None) as bs:
        assert committed(bs, "good", "t") == 5
        commit_offset(bs, "good", "t", 6)
        assert committed(bs, "good", "t") == 6
    log_text = "".join(f.read_text() for f in tmp_path.glob("kproto-*.log"))
    segment = data / f"__consumer_offsets-{p}" / "00000000000000000000.log"
    warnings = [line for line in log_text.splitlines() if "skipping unreadable __consumer_offsets record" in line]
    assert len(warnings) == 2, log_text
    assert f"{segment} @ byte {end_before}, offset 1" in warnings[0]
    assert f"{segment} @ byte {end_before}, offset 2" in warnings[1]


# --- (c) every record of every batch is validated -------------------------------------------




def recrc(batch: bytes | bytearray) -> bytes:
    """The batch with batch_length and CRC-32C fixed: only records-level damage remains."""
    out = bytearray(batch)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def garbage_snappy() -> bytes:
    good = build_record_batch([NewRecord(b"k", b"v" * 100)], compression=CompressionType.SNAPPY)
    return recrc(good[:61] + bytes(range(7, 107)))


def random_records() -> bytes:
    good = build_record_batch([NewRecord(b"k", b"v")])
    return recrc(good[:61] + os.urandom(40))


def count_says_five_holds_one() -> bytes:
    out = bytearray(build_record_batch([NewRecord(b"k", b"v")]))
    struct.pack_into(">i", out, 23, 4)      # last_offset_delta
    struct.pack_into(">i", out, 57, 5)      # records_count
    return recrc(out)


@pytest.mark.parametrize("make, code", [
    (garbage_snappy, ErrorCode.CORRUPT_MESSAGE),
    (random_records, ErrorCode.INVALID_RECORD),
    (count_says_five_holds_one, ErrorCode.INVALID_RECORD),
])
def test_corrupt_batches_with_a_valid_crc_are_refused_and_consumers_carry_on(broker, make, code):
    topic = f"corrupt-{make.__name__}"
    create(broker, topic)
    reply = produce_raw(broker, topic, 0, make())
    assert reply.error_code == code and reply.base_offset == -1, reply
    assert reply.error_message
    good = build_record_batch([NewRecord(b"a", b"1"), NewRecord(b"b", b"2")])
    assert produce_raw(broker, topic, 0, good + make()).error_code == code    # nothing of the request kept
    p = Producer({"bootstrap.servers": broker, "acks": "all"})
    for i in range(3):
        p.produce(topic, key=b"k%d" % i, value=b"good-%d" % i, partition=0)
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": broker, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 20
    while len(got) < 3 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.offset(), m.value()))
    c.close()
    assert got == [(0, b"good-0"), (1, b"good-1"), (2, b"good-2")]


def test_record_errors_name_each_rejected_record(broker):
    create(broker, "compacted", **{"cleanup.policy": "compact"})
    batch = build_record_batch([NewRecord(b"k", b"v"), NewRecord(None, b"v"), NewRecord(b"k", b"v"),
                                NewRecord(None, b"w")])
    reply = produce_raw(broker, "compacted", 0, batch)
    text = "Compacted topic cannot accept message without key in topic partition compacted-0."
    assert reply.error_code == ErrorCode.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in reply.record_errors] == [(1, text), (3, text)]
    assert reply.error_message == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first "
        f"three errors at most: [RecordError(batchIndex=1, message='{text}'), "
        f"RecordError(batchIndex=3, message='{text}')]")
    # a real producer sees the partition's error on each record of the batch
    errors = []
    p = Producer({"bootstrap.servers": broker, "acks": "all", "retries": 0, "linger.ms": 1000})  # one batch
    p.produce("compacted", key=b"k", value=b"v", on_delivery=lambda err, msg: errors.append(err))
    p.produce("compacted", value=b"keyless", on_delivery=lambda err, msg: errors.append(err))
    p.flush(20)
    assert {e.code() for e in errors} == {CKError.INVALID_RECORD}
