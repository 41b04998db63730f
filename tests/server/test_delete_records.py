"""DeleteRecords (key 21) on the reference broker: the log start offset moves
(ReplicaManager.deleteRecords -> UnifiedLog.maybeIncrementLogStartOffset), the
segments wholly below it go, ListOffsets EARLIEST and Fetch follow it, and it
survives a kill -9. Real clients: confluent-kafka's AdminClient.delete_records
(as its test_delete_records does it), kafka-python's KafkaAdminClient.delete_records;
sarama's DeleteRecords as raw v0/v1/v2 frames written byte by byte here."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import struct

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition, OFFSET_BEGINNING, OFFSET_END
from confluent_kafka.admin import AdminClient, OffsetSpec
from construct import Container

from kproto.errors import ErrorCode
from kproto.records import NewRecord, build_record_batch, iter_batches
from kproto.schemas import protocol as P
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import guarded
from kproto.testing import FIXTURE_DEFAULTS, Broker
from tests.helpers import create_topic, exchange_raw, fetch_raw, produce_raw, request_raw
from tests.tools.helpers import run_command, run_dump_log

# 95-byte batches of two records, two to a segment: segments 0 (0-3), 4 (4-7), 8 (8-9, active)
TOPIC_CONFIG = {"segment.bytes": "190", "file.delete.delay.ms": "0"}


def two_records(first: int) -> bytes:
    return build_record_batch([NewRecord(b"k%d" % i, b"value-%02d" % i, (), 1000) for i in (first, first + 1)])


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("delrec")
    with Broker(base / "data", FIXTURE_DEFAULTS, log_path=base / "broker.log") as b:
        yield b


def ten_records(b: Broker, topic: str) -> None:
    create_topic(b.bootstrap_servers, topic, **TOPIC_CONFIG)
    for first in range(0, 10, 2):
        assert produce_raw(b.bootstrap_servers, topic, 0, two_records(first)).error_code == 0
    assert segment_bases(b, topic) == [0, 4, 8]


def segment_bases(b: Broker, topic: str) -> list[int]:
    return sorted(int(p.name[:20]) for p in (b.data_dir / f"{topic}-0").glob("*.log"))


def admin(b: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap_servers})


def earliest_latest(a: AdminClient, topic: str) -> tuple[int, int]:
    tp = TopicPartition(topic, 0)
    return tuple(a.list_offsets({tp: spec})[tp].result(timeout=10).offset
                 for spec in (OffsetSpec.earliest(), OffsetSpec.latest()))


def consume_all(b: Broker, topic: str, expect: int) -> list[tuple[int, bytes]]:
    """From the beginning, as a consumer with no committed offset starts."""
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": f"g-{topic}", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = []
    try:
        while True:
            m = c.poll(10)
            assert m is not None, f"nothing after {got}"
            if m.error():
                assert m.error().code() == -191, m.error()      # _PARTITION_EOF
                if len(got) >= expect:
                    return got
                continue
            got.append((m.offset(), m.value()))
    finally:
        c.close()


# --- confluent-kafka (librdkafka) ----------------------------------------------------------------

def test_confluent_delete_records_then_earliest_and_consume(broker):
    """confluent-kafka's test_delete_records: delete_records, then list_offsets
    earliest, then a consumer from the beginning gets the records from there on."""
    ten_records(broker, "cf")
    a = admin(broker)
    tp = TopicPartition("cf", 0, 5)
    deleted = a.delete_records([tp], request_timeout=10)[tp].result(timeout=10)
    assert deleted.low_watermark == 5
    assert earliest_latest(a, "cf") == (5, 10)
    assert segment_bases(broker, "cf") == [4, 8]            # 0-3 wholly below 5; 4-7 holds 5
    # the batch holding 4 and 5 is still sent whole; the client drops offset 4
    assert consume_all(broker, "cf", 5) == [(i, b"value-%02d" % i) for i in range(5, 10)]
    below = fetch_raw(broker.bootstrap_servers, "cf", 0, fetch_offset=4)
    assert (below.error_code, below.log_start_offset, below.high_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, 5, 10)
    at = fetch_raw(broker.bootstrap_servers, "cf", 0, fetch_offset=5)
    assert (at.error_code, at.log_start_offset) == (0, 5)
    assert [b.base_offset for b in iter_batches(bytes(at.records))] == [4, 6]
    # kafka-dump-log reads the files: the remaining segments, old batch 4 included, as Kafka's shows them
    status, out, err = run_dump_log("--files", str(broker.data_dir / "cf-0" / f"{4:020d}.log"))
    assert status == 0 and [line.split()[1] for line in out.splitlines() if line.startswith("baseOffset")] == \
        ["4", "6"]


def test_export_reads_the_segments_that_remain(broker):
    """kproto export lists the segment files (kproto.spark.segments): a deleted
    segment waiting out file.delete.delay.ms as ``.log.deleted`` is not one."""
    from kproto.spark.segments import find_segments
    create_topic(broker.bootstrap_servers, "exp", **{"segment.bytes": "190"})      # delay: 60 s
    for first in range(0, 10, 2):
        assert produce_raw(broker.bootstrap_servers, "exp", 0, two_records(first)).error_code == 0
    a = admin(broker)
    tp = TopicPartition("exp", 0, 5)
    assert a.delete_records([tp], request_timeout=10)[tp].result(timeout=10).low_watermark == 5
    part = broker.data_dir / "exp-0"
    assert (part / f"{0:020d}.log.deleted").exists()
    _, segments = find_segments(str(part))
    assert sorted((s.topic, s.partition, s.base_offset) for s in segments) == [("exp", 0, 4), ("exp", 0, 8)]


def test_confluent_delete_to_the_high_watermark_and_errors(broker):
    ten_records(broker, "cf-end")
    a = admin(broker)
    tp = TopicPartition("cf-end", 0, OFFSET_END)           # -1: DeleteRecordsRequest.HIGH_WATERMARK
    assert a.delete_records([tp], request_timeout=10)[tp].result(timeout=10).low_watermark == 10
    assert earliest_latest(a, "cf-end") == (10, 10)
    assert segment_bases(broker, "cf-end") == [8]          # the active segment stays
    # (an unknown topic never reaches the broker: librdkafka finds no leader for it)
    tp = TopicPartition("cf-end", 0, 11)
    with pytest.raises(KafkaException) as e:
        a.delete_records([tp], request_timeout=10)[tp].result(timeout=10)
    assert e.value.args[0].code() == ErrorCode.OFFSET_OUT_OF_RANGE
    assert earliest_latest(a, "cf-end") == (10, 10)


def test_kafka_python_admin_delete_records(broker):
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KTP
    from kafka.errors import OffsetOutOfRangeError
    ten_records(broker, "kp")
    k = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        got = k.delete_records({KTP("kp", 0): 3})
        assert got[KTP("kp", 0)]["low_watermark"] == 3 and got[KTP("kp", 0)]["error_code"] == 0
        with pytest.raises(OffsetOutOfRangeError):
            k.delete_records({KTP("kp", 0): 42})
    finally:
        k.close()
    assert earliest_latest(admin(broker), "kp") == (3, 10)


# --- raw frames, as sarama writes them -----------------------------------------------------------

def _str(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def _compact_str(s: str) -> bytes:
    return bytes([len(s) + 1]) + s.encode()


def delete_records_frame(version: int, topics: list[tuple[str, list[tuple[int, int]]]], timeout_ms: int = 5000) -> bytes:
    """DeleteRecords v0/v1 (and v2, flexible) written field by field from
    DeleteRecordsRequest.json, not through kproto's codec. Counts stay below 127."""
    header = struct.pack(">hhi", 21, version, 77) + _str("sarama")
    if version < 2:
        body = struct.pack(">i", len(topics)) + b"".join(
            _str(name) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">iq", p, o) for p, o in parts)
            for name, parts in topics) + struct.pack(">i", timeout_ms)
    else:
        header += b"\0"                                      # request header v2: tagged fields
        body = bytes([len(topics) + 1]) + b"".join(
            _compact_str(name) + bytes([len(parts) + 1]) + b"".join(struct.pack(">iq", p, o) + b"\0" for p, o in parts)
            + b"\0" for name, parts in topics) + struct.pack(">i", timeout_ms) + b"\0"
    return struct.pack(">i", len(header + body)) + header + body


def delete_records_answer(version: int, topics: list[tuple[str, list[tuple[int, int, int]]]]) -> bytes:
    """The response bytes (after the size), written the same way: correlation id, throttle 0."""
    if version < 2:
        return struct.pack(">ii", 77, 0) + struct.pack(">i", len(topics)) + b"".join(
            _str(name) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">iqh", *p) for p in parts)
            for name, parts in topics)
    return struct.pack(">i", 77) + b"\0" + struct.pack(">i", 0) + bytes([len(topics) + 1]) + b"".join(
        _compact_str(name) + bytes([len(parts) + 1]) + b"".join(struct.pack(">iqh", *p) + b"\0" for p in parts)
        + b"\0" for name, parts in topics) + b"\0"


@pytest.mark.parametrize("version", [0, 1, 2])
def test_raw_delete_records_every_version(broker, version):
    """Before, the broker closed the connection (an API it did not serve). Now:
    the low watermark, or -1 and the error; a partition named twice is answered
    once, for the last offset (Kafka collects the request into a map)."""
    topic = f"raw-{version}"
    ten_records(broker, topic)
    request = delete_records_frame(version, [(topic, [(0, 2), (0, 4), (1, 0)]), ("raw-none", [(0, 0)])])
    assert exchange_raw(broker.bootstrap_servers, request) == delete_records_answer(version, [
        (topic, [(0, 4, 0), (1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
        ("raw-none", [(0, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])])
    request = delete_records_frame(version, [(topic, [(0, 11)]), ("__consumer_offsets", [(0, 0)])])
    assert exchange_raw(broker.bootstrap_servers, request) == delete_records_answer(version, [
        (topic, [(0, -1, ErrorCode.OFFSET_OUT_OF_RANGE)]),
        ("__consumer_offsets", [(0, -1, ErrorCode.INVALID_TOPIC_EXCEPTION)])])
    request = delete_records_frame(version, [(topic, [(0, 1)])])          # below the start: nothing moves
    assert exchange_raw(broker.bootstrap_servers, request) == delete_records_answer(version, [(topic, [(0, 4, 0)])])
    assert earliest_latest(admin(broker), topic) == (4, 10)


def test_compacted_topic_refuses_with_policy_violation(broker):
    create_topic(broker.bootstrap_servers, "compacted", **{"cleanup.policy": "compact"})
    assert produce_raw(broker.bootstrap_servers, "compacted", 0, two_records(0)).error_code == 0
    request = delete_records_frame(1, [("compacted", [(0, 1)])])
    assert exchange_raw(broker.bootstrap_servers, request) == delete_records_answer(1, [
        ("compacted", [(0, -1, ErrorCode.POLICY_VIOLATION)])])


def test_api_versions_advertises_v0_to_v2(broker):
    keys = request_raw(broker.bootstrap_servers, P.api_versions.API.key, 3, {
        "client_software_name": "t", "client_software_version": "1"}).api_keys
    assert [(k.min_version, k.max_version) for k in keys if k.api_key == 21] == [(0, 2)]


# --- persistence --------------------------------------------------------------------------------

def test_the_start_offset_survives_a_kill(tmp_path):
    """log-start-offset-checkpoint is written before the answer: after SIGKILL (no
    clean shutdown) the broker starts with the start offset it answered."""
    with Broker(tmp_path / "data", FIXTURE_DEFAULTS, log_path=tmp_path / "broker.log") as b:
        ten_records(b, "keep")
        tp, a = TopicPartition("keep", 0, 6), admin(b)      # the client must outlive its futures
        assert a.delete_records([tp], request_timeout=10)[tp].result(timeout=10).low_watermark == 6
        os.killpg(b.pid, signal.SIGKILL)
        b.stop()
        assert not (b.data_dir / ".kafka_cleanshutdown").exists()
        assert (b.data_dir / "log-start-offset-checkpoint").read_text() == "0\n1\nkeep 0 6\n"
        b.start()
        assert earliest_latest(admin(b), "keep") == (6, 10)
        assert fetch_raw(b.bootstrap_servers, "keep", 0, fetch_offset=5).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert consume_all(b, "keep", 4) == [(i, b"value-%02d" % i) for i in range(6, 10)]


# --- authorization ------------------------------------------------------------------------------

class _Security:
    def __init__(self, *allowed) -> None:
        self.allowed_set = set(allowed)

    def allowed(self, ctx, op, rtype, name) -> bool:
        return (op, rtype, name) in self.allowed_set


def test_delete_needs_delete_on_the_topic():
    """KafkaApis.handleDeleteRecordsRequest: filterByAuthorized(DELETE, TOPIC); the
    others get TOPIC_AUTHORIZATION_FAILED and low watermark -1, unseen by the handler."""
    seen = []

    async def handler(broker, header, body):
        seen.append([t.name for t in body.topics])
        return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "low_watermark": 7, "error_code": 0} for p in t.partitions]}
            for t in body.topics]}
    body = Container(topics=[Container(name="mine", partitions=[Container(partition_index=0, offset=7)]),
                             Container(name="theirs", partitions=[Container(partition_index=0, offset=1),
                                                                  Container(partition_index=2, offset=1)])],
                     timeout_ms=1000)
    broker = Container(security=_Security((O.DELETE, R.TOPIC, "mine"), (O.WRITE, R.TOPIC, "theirs")))
    header = Container(request_api_key=P.delete_records.API.key, request_api_version=2)
    out = asyncio.run(guarded(broker, header, body, handler))
    assert seen == [["mine"]]
    assert out["topics"] == [
        {"name": "mine", "partitions": [{"partition_index": 0, "low_watermark": 7, "error_code": 0}]},
        {"name": "theirs", "partitions": [
            {"partition_index": 0, "low_watermark": -1, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED},
            {"partition_index": 2, "low_watermark": -1, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}]}]


# --- kproto delete-records (kafka-delete-records.sh) --------------------------------------------

def delete_records_tool(bootstrap: str | None, tmp_path, plan: object, *args: str):
    path = tmp_path / "plan.json"
    path.write_text(plan if isinstance(plan, str) else json.dumps(plan))
    return run_command("delete-records", bootstrap, "--offset-json-file", str(path), *args)


def test_tool_deletes_and_prints_kafkas_lines(broker, tmp_path):
    ten_records(broker, "tool")
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=PLAINTEXT\nclient.id=delete-records-test\n")
    plan = {"partitions": [{"topic": "tool", "partition": 0, "offset": 3}], "version": 1}
    assert delete_records_tool(broker.bootstrap_servers, tmp_path, plan, "--command-config", str(config)) == (
        0, "Executing records delete operation\nRecords delete operation completed:\n"
           "partition: tool-0\tlow_watermark: 3\n", "")
    assert earliest_latest(admin(broker), "tool") == (3, 10)


def test_tool_prints_each_partitions_error_and_exits_3(broker, tmp_path):
    ten_records(broker, "tool-mixed")
    plan = {"partitions": [{"topic": "tool-mixed", "partition": 0, "offset": 11}]}      # no version: 1
    status, out, err = delete_records_tool(broker.bootstrap_servers, tmp_path, plan)
    assert (status, err) == (3, "")
    assert out == ("Executing records delete operation\nRecords delete operation completed:\n"
                   "partition: tool-mixed-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
                   "The requested offset is not within the range of offsets maintained by the server.\n")
    plan = {"partitions": [{"topic": "tool-none", "partition": 2, "offset": 1},
                           {"topic": "tool-mixed", "partition": 1, "offset": 1},
                           {"topic": "tool-mixed", "partition": 0, "offset": -1}], "version": 1}
    status, out, err = delete_records_tool(broker.bootstrap_servers, tmp_path, plan)
    unknown = ("org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
               "This server does not host this topic-partition.")
    # HashMap<TopicPartition> order: buckets of 31 * (31 + partition) + topic.hashCode()
    assert (status, err) == (3, "") and out.splitlines()[2:] == [
        f"partition: tool-mixed-1\terror: {unknown}", "partition: tool-mixed-0\tlow_watermark: 10",
        f"partition: tool-none-2\terror: {unknown}"]


@pytest.mark.parametrize("plan, message", [
    ("{not json", "The input string is not a valid JSON"),
    ([], "Expected JSON object, received []"),
    ({"version": 2, "partitions": []}, "Not supported version field value 2"),
    ({"version": "1", "partitions": []}, 'Expected `Integer` value, received "1"'),
    ({"version": 1}, "Missing partitions field"),
    ({"partitions": {"topic": "t"}}, 'Expected JSON array, received {"topic":"t"}'),
    ({"partitions": [{"topic": "t", "partition": 0}]}, "No such field exists: `offset`"),
    ({"partitions": [{"topic": "t", "partition": "0", "offset": 1}]}, 'Expected `Integer` value, received "0"'),
    ({"partitions": [{"topic": "t", "partition": 0, "offset": 1.5}]}, "Expected `Long` value, received 1.5"),
    ({"partitions": [{"topic": 7, "partition": 0, "offset": 1}]}, "Expected `String` value, received 7"),
    ({"partitions": [{"topic": "t", "partition": 0, "offset": 3}, {"topic": "b", "partition": 1, "offset": 1},
                     {"topic": "t", "partition": 0, "offset": 4}, {"topic": "b", "partition": 1, "offset": 2}]},
     "Offset json file contains duplicate topic partitions: b-1,t-0"),
])
def test_tool_refuses_a_bad_file_in_kafkas_words_before_connecting(tmp_path, plan, message):
    """DeleteRecordsCommand's own checks: nothing is sent (the broker address is unused)."""
    assert delete_records_tool("127.0.0.1:1", tmp_path, plan) == (1, "", message + "\n")


def test_tool_usage_and_connection_errors_are_one_line(tmp_path):
    plan = {"partitions": []}
    assert delete_records_tool(None, tmp_path, plan) == (2, "", 'Missing required argument "[bootstrap-server]"\n')
    assert run_command("delete-records", "127.0.0.1:1") == (
        2, "", 'Missing required argument "[offset-json-file]"\n')
    status, out, err = delete_records_tool("127.0.0.1:1", tmp_path, plan)
    assert (status, out) == (1, "") and err.startswith("kproto: error: cannot connect to 127.0.0.1:1") \
        and err.count("\n") == 1
    status, out, err = run_command("delete-records", "127.0.0.1:1", "--offset-json-file", str(tmp_path / "none"))
    assert (status, out, err) == (1, "", f"cannot read {tmp_path / 'none'}: No such file or directory\n")
