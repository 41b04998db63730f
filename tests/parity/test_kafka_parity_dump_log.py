"""`kproto dump-log` against the expectations of Kafka's own DumpLogSegments tests.

Each test mirrors one test of
core/src/test/scala/unit/kafka/tools/DumpLogSegmentsTest.scala (apache/kafka trunk
1eb76443, mirrored at /work/.mirror/apache+kafka/repo) and sets up the same
scenario through kproto's own log (kproto.log.UnifiedLog, index.interval.bytes=128
as ``createTestLog`` does), then asserts what Kafka's test asserts about the
output. Where the test does not pin a string, the format line of
core/src/main/scala/kafka/tools/DumpLogSegments.scala is cited instead
(``DLS.scala:N`` below).

Ledger (19 methods, all ported): testBatchAndRecordMetadataOutput, testPrintDataLog,
testDumpIndexMismatches, testDumpTimeIndexErrors, testDumpEmptyIndex,
testPrintDataLogPartialBatches, testOffsetsMessageParser, the nine
testDumpRemoteLogMetadata* (Empty, OneRecordOneBatch, MultipleRecordsOneBatch,
MultipleRecordsMultipleBatches, NonZeroStartingOffset, WithCorruption, IoException,
NoFilesFlag, NoSuchFileException), testDumpMetadataRecords, testDumpMetadataSnapshot,
testShareGroupStateMessageParser. Where Kafka 4.4's tool prints otherwise than trunk
1eb76443's test expects (the share-state JSON's "version", the missing-key message, the
remote decoder's "Error at offset N, skipping."), the test pins 4.4's measured text and
test_kafka_ref_dump_log diffs both tools on the same inputs. Deliberate differences: a
usage error is one line and exit 2 (Kafka: exit 1 and its usage); an unreadable or missing
file is one line on stderr, exit 1 (Kafka: a stack trace).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from kproto.compression import CompressionType
from kproto.topic_config import LogConfig
from kproto.log.log import UnifiedLog
from kproto.log.validator import AppendOrigin
from kproto.records import NewRecord, build_control_batch, build_record_batch
from kproto.tools.main import cli

SEGMENT = "00000000000000000000"
NOW = 1_700_000_000_000


def dump(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["dump-log", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def create_test_log(tmp_path: Path) -> UnifiedLog:
    """DumpLogSegmentsTest.createTestLog: index.interval.bytes=128."""
    return UnifiedLog.open(tmp_path / "kafka-0", LogConfig.from_props({"index.interval.bytes": "128"}))


def batch(records, **kw) -> bytes:
    return build_record_batch([NewRecord(k, v, (), ts) for ts, k, v in records], **kw)


# DumpLogSegmentsTest.addSimpleRecords: four batches (keys and values, keys only,
# values only, neither), appended as leader at epoch 0, flushed but not closed.
SIMPLE_BATCHES = [
    ([(NOW + i * 2, b"message key %d" % i, b"message value %d" % i) for i in range(0, 10)], True, True),
    ([(NOW + i * 3, b"message key %d" % i, None) for i in range(10, 30)], True, False),
    ([(NOW + i * 5, None, b"message value %d" % i) for i in range(30, 50)], False, True),
    ([(NOW + i * 7, None, None) for i in range(50, 60)], False, False),
]


@pytest.fixture
def simple_log(tmp_path):
    log = create_test_log(tmp_path)
    for records, _, _ in SIMPLE_BATCHES:
        log.append(batch(records), leader_epoch=0)
    log.flush()    # not closed: the indexes keep their zero-filled, untrimmed tail
    yield log
    log.close()


def log_file(log: UnifiedLog, suffix: str = ".log") -> str:
    return str(log.dir / f"{SEGMENT}{suffix}")


# --- DumpLogSegmentsTest.testPrintDataLog -------------------------------------------------

def _verify_records_in_output(out: str, check_keys_and_values: bool) -> None:
    """DumpLogSegmentsTest.testPrintDataLog / verifyRecordsInOutput, line by line."""
    lines = out.split("\n")
    if lines[-1] == "":
        lines.pop()       # Java's split drops trailing empty strings
    assert len(lines) > 2, f"Data not printed: {out}"
    total = sum(len(r) for r, _, _ in SIMPLE_BATCHES)
    tail = iter(lines[len(lines) - total - len(SIMPLE_BATCHES):])
    offset = 0
    for records, has_keys, has_values in SIMPLE_BATCHES:
        line = next(tail)
        assert line.startswith(f"baseOffset: {offset} lastOffset: "), line
        for _ in records:
            line = next(tail)
            assert line.startswith(f"| offset: {offset}"), line     # RecordIndent = "|"
            if check_keys_and_values:
                suffix = "headerKeys: []"
                if has_keys:
                    suffix += f" key: message key {offset}"
                if has_values:
                    suffix += f" payload: message value {offset}"
                assert line.endswith(suffix), line
            offset += 1


@pytest.mark.parametrize("args, check", [
    # "records are printed with --print-data-log even if --deep-iteration is not specified"
    (["--print-data-log"], True),
    (["--print-data-log", "--deep-iteration"], True),
    # "... with --value-decoder / --key-decoder even if --print-data-log is not specified";
    # Kafka names a class (--value-decoder-class org.apache.kafka.tools.api.StringDecoder),
    # kproto the decoder (utf8 is StringDecoder: UTF-8).
    (["--value-decoder", "utf8"], True),
    (["--key-decoder", "utf8"], True),
    # "... with --deep-iteration even if --print-data-log is not specified"
    (["--deep-iteration"], False),
])
def test_print_data_log(simple_log, args, check):
    code, out, err = dump(*args, "--files", log_file(simple_log))
    assert (code, err) == (0, "")
    _verify_records_in_output(out, check)


def test_print_data_log_not_by_default(simple_log):
    """testPrintDataLog / verifyNoRecordsInOutput: no record lines without a flag."""
    code, out, _ = dump("--files", log_file(simple_log))
    assert code == 0
    assert not re.search(r"offset: [0-9]* isvalid", out, re.S)
    # DLS.scala:356 (batch line) only: one per batch, no "| " record line.
    assert sum(line.startswith("baseOffset: ") for line in out.splitlines()) == len(SIMPLE_BATCHES)
    assert not any(line.startswith("|") for line in out.splitlines())


# --- DumpLogSegmentsTest.testDumpIndexMismatches / testDumpTimeIndexErrors -----------------

def test_dump_index_mismatches(simple_log):
    """dumpIndex(verifyOnly = true) of a log written as leader finds no mismatch:
    nothing is reported on stderr ("Mismatches in :", DLS.scala:95)."""
    code, out, err = dump("--verify-index-only", "--files", log_file(simple_log, ".index"))
    assert code == 0
    assert err == ""
    assert out == f"Dumping {log_file(simple_log, '.index')}\n"      # DLS.scala:73


def test_dump_time_index_errors(simple_log):
    """dumpTimeIndex(verifyOnly = true): no timestamp mismatch, no out-of-order
    timestamp, no shallow offset not found (DLS.scala:398, 406, 413)."""
    code, out, err = dump("--verify-index-only", "--files", log_file(simple_log, ".timeindex"))
    assert code == 0
    assert err == ""
    assert out == f"Dumping {log_file(simple_log, '.timeindex')}\n"


def test_index_has_entries_at_interval_128(simple_log):
    """The two tests above only test something if the indexes have entries. With
    index.interval.bytes=128, Kafka's LogSegment.append indexes an append once
    more than 128 bytes went in since the last entry (checked before the append):
    not the first batch, then each of the others, at the batch's position with its
    last offset; the time index with its largest timestamp (DLS.scala:176, :230)."""
    _, log_out, _ = dump("--files", log_file(simple_log))
    positions = [int(re.search(r" position: (\d+) ", line).group(1))
                 for line in log_out.splitlines() if line.startswith("baseOffset")]
    last_offsets = [29, 49, 59]
    max_timestamps = [max(ts for ts, _, _ in records) for records, _, _ in SIMPLE_BATCHES[1:]]
    _, out, _ = dump("--files", log_file(simple_log, ".index"))
    assert out.splitlines()[1:] == [f"offset: {o} position: {p}" for o, p in zip(last_offsets, positions[1:])]
    _, out, _ = dump("--files", log_file(simple_log, ".timeindex"))
    assert out.splitlines()[1:] == [f"timestamp: {t} offset: {o}" for t, o in zip(max_timestamps, last_offsets)]


# --- DumpLogSegmentsTest.testDumpEmptyIndex ------------------------------------------------

def test_dump_empty_index(tmp_path):
    """An empty .index prints "$indexFile is empty." (DLS.scala:150); Kafka's
    test calls dumpIndex directly, main prints "Dumping $file" first (DLS.scala:73)."""
    log = create_test_log(tmp_path)
    log.close()
    index = Path(log_file(log, ".index"))
    index.write_bytes(b"")
    code, out, err = dump("--verify-index-only", "--files", str(index))
    assert (code, err) == (0, "")
    assert out == f"Dumping {index}\n{index} is empty.\n"


# --- DumpLogSegmentsTest.testPrintDataLogPartialBatches --------------------------------------

def test_print_data_log_partial_batches(simple_log):
    """--max-bytes set to the sum of the first half of the batches' sizes
    dumps exactly that many batches."""
    _, out, _ = dump("--files", log_file(simple_log))
    sizes = [int(re.match(r".+?size:\s(\d+).+", line).group(1))
             for line in out.splitlines() if line.startswith("baseOffset")]
    partial = len(SIMPLE_BATCHES) // 2
    code, partial_out, _ = dump("--max-bytes", str(sum(sizes[:partial])), "--files", log_file(simple_log))
    assert code == 0
    assert sum(line.startswith("baseOffset") for line in partial_out.splitlines()) == partial


# --- DumpLogSegmentsTest.testBatchAndRecordMetadataOutput ------------------------------------

def _fields(line: str) -> dict[str, str]:
    """DumpLogSegmentsTest.parseMetadataFields: alternating "name:" value tokens."""
    tokens = line.split()
    assert all(t.endswith(":") for t in tokens[::2]), line
    return {t[:-1]: v for t, v in zip(tokens[::2], tokens[1::2])}


def test_batch_and_record_metadata_output(tmp_path):
    log = create_test_log(tmp_path)
    gzip = CompressionType.GZIP
    # (batch bytes, leader epoch, origin) as appended by the Kafka test
    appends = [
        (batch([(NOW, None, b"a"), (NOW, None, b"b")]), 0),
        (batch([(NOW, b"c", b"1"), (NOW, None, b"d")], compression=gzip), 3),
        (batch([(NOW, b"e", None), (NOW, None, b"f"), (NOW, None, b"g")]), 3),
        (batch([(NOW, None, b"h")], producer_id=29342342, producer_epoch=15, base_sequence=234123), 3),
        (batch([(NOW, None, b"i"), (NOW, None, b"j")], compression=gzip, is_transactional=True,
               producer_id=98323, producer_epoch=99, base_sequence=266), 5),
    ]
    for data, epoch in appends:
        log.append(data, leader_epoch=epoch)
    log.append(build_control_batch(1, producer_id=98323, producer_epoch=99, coordinator_epoch=100,
                                   timestamp=NOW), leader_epoch=7, origin=AppendOrigin.COORDINATOR)
    log.flush()
    code, out, err = dump("--deep-iteration", "--files", log_file(log))
    log.close()
    assert (code, err) == (0, "")

    # What the test reads back from the log: (base, last, count, epoch, txn, control,
    # pid, pepoch, base seq, codec), and each record's (offset, keySize, valueSize, sequence).
    want = [
        ((0, 1, 2, 0, "false", "false", -1, -1, -1, "none"), [(0, -1, 1, -1), (1, -1, 1, -1)]),
        ((2, 3, 2, 3, "false", "false", -1, -1, -1, "gzip"), [(2, 1, 1, -1), (3, -1, 1, -1)]),
        ((4, 6, 3, 3, "false", "false", -1, -1, -1, "none"),
         [(4, 1, -1, -1), (5, -1, 1, -1), (6, -1, 1, -1)]),
        ((7, 7, 1, 3, "false", "false", 29342342, 15, 234123, "none"), [(7, -1, 1, 234123)]),
        ((8, 9, 2, 5, "true", "false", 98323, 99, 266, "gzip"), [(8, -1, 1, 266), (9, -1, 1, 267)]),
        ((10, 10, 1, 7, "true", "true", 98323, 99, -1, "none"), [(10, 4, 6, -1)]),
    ]
    lines = iter(out.splitlines()[2:])       # after "Dumping ..." and "Log starting offset: 0"
    for (base, last, count, epoch, txn, control, pid, pepoch, seq, codec), records in want:
        b = _fields(next(lines))
        assert (b["baseOffset"], b["lastOffset"], b["count"], b["partitionLeaderEpoch"]) == \
            (str(base), str(last), str(count), str(epoch))
        assert (b["isTransactional"], b["isControl"]) == (txn, control)
        assert (b["producerId"], b["producerEpoch"], b["baseSequence"]) == (str(pid), str(pepoch), str(seq))
        assert b["compresscodec"] == codec
        for offset, key_size, value_size, sequence in records:
            line = next(lines)
            assert line.startswith("| "), line
            r = _fields(line[2:].split(" endTxnMarker:")[0])
            assert (r["offset"], r["keySize"], r["valueSize"]) == (str(offset), str(key_size), str(value_size))
            assert r["CreateTime"] == str(NOW)          # record.timestamp under batch.timestampType
            assert r["sequence"] == str(sequence)
            # Batch-only fields never appear on a record line.
            for name in ("baseOffset", "lastOffset", "partitionLeaderEpoch", "producerId", "producerEpoch",
                         "baseSequence", "isTransactional", "isControl", "compresscodec"):
                assert name not in r
    assert next(lines, None) is None
    # DLS.scala:317: the COMMIT marker's suffix.
    assert out.splitlines()[-1].endswith(" endTxnMarker: COMMIT coordinatorEpoch: 100")


# --- DumpLogSegmentsTest.testOffsetsMessageParser ---------------------------------------------
# Kafka feeds single records to OffsetsMessageParser.parse; here each record is
# appended to a log at offset 0 and dumped with --offsets-decoder, whose record
# line ends "key: <key> payload: <payload>" (DLS.scala:338-341).

def _offsets_dump(tmp_path: Path, key: bytes | None, value: bytes | None) -> tuple[int, str, str]:
    log = create_test_log(tmp_path)
    log.append(batch([(NOW, key, value)]), leader_epoch=0)
    log.close()
    return dump("--offsets-decoder", "--files", log_file(log))


def _key_payload(out: str) -> str:
    line = next(line for line in out.splitlines() if line.startswith("| "))
    return line.split("headerKeys: [] ", 1)[1]


def _group_metadata_value(subscription: bytes, assignment: bytes) -> bytes:
    from kproto.schemas import consumer_offsets as CO
    return CO.GroupMetadataValue.build({"version": 4, "data": {
        "protocol_type": "consumer", "generation": 10, "protocol": "range", "leader": "member",
        "current_state_timestamp": -1, "members": [{
            "member_id": "member", "group_instance_id": "instance", "client_id": "client",
            "client_host": "host", "rebalance_timeout": 1000, "session_timeout": 100,
            "subscription": subscription, "assignment": assignment}]}})


GROUP_KEY = b"\x00\x02\x00\x05group"       # GroupMetadataKey: version 2, string "group"


def test_offsets_message_parser_group_metadata(tmp_path):
    """ConsumerProtocolSubscription v3 / Assignment v3 bytes decode to nested JSON."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
    sub = ConsumerProtocolSubscription(version=3, topics=["foo"], user_data=None,
                                       owned_partitions=[("foo", [0])], generation_id=0,
                                       rack_id="rack").encode()
    assignment = ConsumerProtocolAssignment(version=3, assigned_partitions=[("foo", [0])],
                                            user_data=None).encode()
    code, out, _ = _offsets_dump(tmp_path, GROUP_KEY, _group_metadata_value(sub, assignment))
    assert code == 0
    assert _key_payload(out) == (
        'key: {"type":"2","data":{"group":"group"}} '
        'payload: {"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":{"topics":["foo"],'
        '"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}')


def test_offsets_message_parser_undecodable_protocol_bytes(tmp_path):
    """Subscription/assignment bytes that are not the consumer protocol stay base64."""
    code, out, _ = _offsets_dump(tmp_path, GROUP_KEY, _group_metadata_value(b"Subscription", b"Assignment"))
    assert code == 0
    assert _key_payload(out) == (
        'key: {"type":"2","data":{"group":"group"}} '
        'payload: {"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":"U3Vic2NyaXB0aW9u",'
        '"assignment":"QXNzaWdubWVudA=="}]}}')


def test_offsets_message_parser_unknown_record_type(tmp_path):
    """A key of version 32767: "Unknown record type 32767 at offset 0, skipping." as the key."""
    code, out, _ = _offsets_dump(tmp_path, b"\x7f\xff\x00\x05group", b"\x00\x00\x00\x00\x00\x0a")
    assert code == 0
    assert _key_payload(out) == "key: Unknown record type 32767 at offset 0, skipping."


def test_offsets_message_parser_missing_key(tmp_path):
    """Kafka 4.4's message (CoordinatorRecordMessageParser.parse), word for word. Kafka throws it and the dump stops;
    kproto prints it in the key slot and goes on (one bad record loses nothing)."""
    code, out, err = _offsets_dump(tmp_path, None, b"\x00\x00")
    assert (code, err) == (0, "")
    assert _key_payload(out) == ("key: Failed to decode message at offset 0 using the specified decoder "
                                 "(message had a missing key)")


# --- DumpLogSegmentsTest.testDumpRemoteLogMetadata* -------------------------------------------
# RemoteLogMetadataSerde's records (framed as KRaft metadata records) appended to a log
# without keys, dumped with --remote-log-metadata-decoder: each record line's payload is
# the RemoteLogMetadata's toString (DLS RemoteMetadataLogMessageParser). The tests count
# batches ("baseOffset:") and records ("payload:") as Kafka's batchCount/recordCount do.

TOPIC_ID = uuid.UUID(bytes=base64.urlsafe_b64decode("Uj5wn_FqTXirEASvVZRY1w=="))
SEGMENT_ID = uuid.UUID(bytes=base64.urlsafe_b64decode("_ty6CYdlQyH-3LoJh2VDIQ=="))
TOPIC_ID_PARTITION = {"name": "foo", "id": TOPIC_ID, "partition": 0}


def remote_metadata(api_key: int, data: dict) -> bytes:
    from kproto.schemas.cluster_metadata import build_metadata_record
    from kproto.schemas.remote_log_metadata_records import REMOTE_LOG_METADATA_RECORDS
    return build_metadata_record(api_key, 0, data, REMOTE_LOG_METADATA_RECORDS)


# new RemotePartitionDeleteMetadata(topicIdPartition, DELETE_PARTITION_MARKED, time.milliseconds (0), 0)
DELETE_MARKED = remote_metadata(2, {"topic_id_partition": TOPIC_ID_PARTITION, "broker_id": 0,
                                    "event_timestamp_ms": 0, "remote_partition_delete_state": 0})
# new RemoteLogSegmentMetadataUpdate(segmentId, 0, Optional.of(CustomMetadata([0, 1, 2, 3])),
#                                    COPY_SEGMENT_FINISHED, 0)
UPDATE_FINISHED = remote_metadata(1, {
    "remote_log_segment_id": {"topic_id_partition": TOPIC_ID_PARTITION, "id": SEGMENT_ID}, "broker_id": 0,
    "event_timestamp_ms": 0, "custom_metadata": b"\x00\x01\x02\x03", "remote_log_segment_state": 1})
EXPECTED_DELETE = ("RemotePartitionDeleteMetadata{topicPartition=Uj5wn_FqTXirEASvVZRY1w:foo-0, "
                   "state=DELETE_PARTITION_MARKED, eventTimestampMs=0, brokerId=0}")
EXPECTED_UPDATE = ("RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition="
                   "Uj5wn_FqTXirEASvVZRY1w:foo-0, id=_ty6CYdlQyH-3LoJh2VDIQ}, customMetadata=Optional["
                   "CustomMetadata{4 bytes}], state=COPY_SEGMENT_FINISHED, eventTimestampMs=0, brokerId=0}")


def remote_log(tmp_path: Path, *batches: list[bytes]) -> UnifiedLog:
    """LogTestUtils.createLog, then one appendAsLeader (epoch 0) per batch of values."""
    log = create_test_log(tmp_path)
    for values in batches:
        log.append(batch([(NOW, None, v) for v in values]), leader_epoch=0)
    log.flush()
    return log


def payloads(out: str) -> list[str]:
    return [line.split(" payload: ", 1)[1] for line in out.splitlines() if " payload: " in line]


def test_dump_remote_log_metadata_empty(tmp_path):
    """testDumpRemoteLogMetadataEmpty: an empty log: no batch, no record, its start offset."""
    log = remote_log(tmp_path)
    code, out, err = dump("--remote-log-metadata-decoder", "--files", log_file(log))
    log.close()
    assert (code, out, err) == (0, f"Dumping {log_file(log)}\nLog starting offset: 0\n", "")


def test_dump_remote_log_metadata_one_record_one_batch(tmp_path):
    """testDumpRemoteLogMetadataOneRecordOneBatch."""
    log = remote_log(tmp_path, [DELETE_MARKED])
    code, out, err = dump("--remote-log-metadata-decoder", "--files", log_file(log))
    log.close()
    assert (code, err) == (0, "")
    assert out.count("baseOffset:") == 1 and out.count("payload:") == 1
    assert out.splitlines()[1] == "Log starting offset: 0"
    assert payloads(out) == [EXPECTED_DELETE]


def test_dump_remote_log_metadata_multiple_records_one_batch(tmp_path):
    """testDumpRemoteLogMetadataMultipleRecordsOneBatch."""
    log = remote_log(tmp_path, [UPDATE_FINISHED, DELETE_MARKED])
    code, out, err = dump("--remote-log-metadata-decoder", "--files", log_file(log))
    log.close()
    assert (code, err) == (0, "")
    assert out.count("baseOffset:") == 1 and out.count("payload:") == 2
    assert out.splitlines()[1] == "Log starting offset: 0"
    assert payloads(out) == [EXPECTED_UPDATE, EXPECTED_DELETE]


def test_dump_remote_log_metadata_multiple_records_multiple_batches(tmp_path):
    """testDumpRemoteLogMetadataMultipleRecordsMultipleBatches."""
    log = remote_log(tmp_path, [UPDATE_FINISHED, DELETE_MARKED], [UPDATE_FINISHED, DELETE_MARKED])
    code, out, err = dump("--remote-log-metadata-decoder", "--files", log_file(log))
    log.close()
    assert (code, err) == (0, "")
    assert out.count("baseOffset:") == 2 and out.count("payload:") == 4
    assert out.splitlines()[1] == "Log starting offset: 0"
    assert payloads(out) == [EXPECTED_UPDATE, EXPECTED_DELETE] * 2


def test_dump_remote_log_metadata_non_zero_starting_offset(tmp_path):
    """testDumpRemoteLogMetadataNonZeroStartingOffset: the record at offset 0, a roll,
    the same record at offset 1 in the second segment, which is dumped."""
    log = remote_log(tmp_path, [DELETE_MARKED])
    log.roll()
    log.append(batch([(NOW, None, DELETE_MARKED)]), leader_epoch=0)
    log.flush()
    second = str(log.dir / "00000000000000000001.log")
    code, out, err = dump("--remote-log-metadata-decoder", "--files", second)
    log.close()
    assert (code, err) == (0, "")
    assert out.count("baseOffset:") == 1 and out.count("payload:") == 1
    assert out.splitlines()[1] == "Log starting offset: 1"
    assert payloads(out) == [EXPECTED_DELETE]


def test_dump_remote_log_metadata_with_corruption(tmp_path):
    """testDumpRemoteLogMetadataWithCorruption: a value that is not a framed record
    ("corrupted": frame version 99). Kafka 4.4's line, measured."""
    log = remote_log(tmp_path, [b"corrupted"])
    code, out, err = dump("--remote-log-metadata-decoder", "--files", log_file(log))
    log.close()
    assert (code, err) == (0, "")
    assert out.count("baseOffset:") == 1 and out.count("payload:") == 1
    assert out.splitlines()[1] == "Log starting offset: 0"
    assert payloads(out) == ["Error at offset 0, skipping. Could not deserialize metadata record due to unknown "
                             "frame version 99(only frame version 1 is supported)"]


def _dump_unprivileged(*args: str) -> tuple[int, str, str]:
    """``dump`` by a user the file's mode denies: this process if it is not root;
    else a forked child that drops to uid/gid 65534 (nobody) first (root reads
    any file), the modules it needs imported before the fork."""
    if os.geteuid() != 0:
        return dump(*args)
    dump("--help")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:       # the child: drop root, dump, report, leave without running pytest's exit handlers
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, json.dumps(dump(*args)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        answer = f.read()
    os.waitpid(pid, 0)
    code, out, err = json.loads(answer)
    return code, out, err


def test_dump_remote_log_metadata_io_exception():
    """testDumpRemoteLogMetadataIoException: the segment's mode is -w------- (Kafka:
    AccessDeniedException). kproto: the lines up to the read, then the error as one
    line, exit 1, as for a missing file."""
    folder = Path(tempfile.mkdtemp())       # not under pytest's 0700 base: others may pass through
    try:
        folder.chmod(0o711)
        log = remote_log(folder, [DELETE_MARKED])
        log.close()
        path = Path(log_file(log))
        log.dir.chmod(0o711)
        path.chmod(0o200)
        code, out, err = _dump_unprivileged("--remote-log-metadata-decoder", "--files", str(path))
    finally:
        shutil.rmtree(folder)
    assert (code, out) == (1, f"Dumping {path}\nLog starting offset: 0\n")
    assert err == f"kproto: error: [Errno 13] Permission denied: '{path}'\n"


def test_dump_remote_log_metadata_no_files_flag():
    """testDumpRemoteLogMetadataNoFilesFlag: Kafka's message; kproto exits 2 with it alone
    (Kafka exits 1 and prints its usage after it)."""
    assert dump("--remote-log-metadata-decoder") == (2, "", 'Missing required argument "[files]"\n')


def test_dump_remote_log_metadata_no_such_file_exception():
    """testDumpRemoteLogMetadataNoSuchFileException (Kafka: NoSuchFileException after the
    same two lines, measured)."""
    path = "/tmp/nosuchfile/00000000000000000000.log"
    assert dump("--remote-log-metadata-decoder", "--files", path) == (
        1, f"Dumping {path}\nLog starting offset: 0\n",
        f"kproto: error: [Errno 2] No such file or directory: '{path}'\n")


# --- DumpLogSegmentsTest.testShareGroupStateMessageParser ----------------------------------
# Kafka feeds single records to ShareGroupStateMessageParser.parse; here each is appended
# to a log at offset 0 and dumped with --share-group-state-decoder (as _offsets_dump does).

def _share_dump(tmp_path: Path, key: bytes | None, value: bytes | None) -> tuple[int, str, str]:
    log = create_test_log(tmp_path)
    log.append(batch([(NOW, key, value)]), leader_epoch=0)
    log.close()
    return dump("--share-group-state-decoder", "--files", log_file(log))


def _share_records():
    from kproto.server.share.partition import StateBatch
    from kproto.server.share.persistence import ShareState, snapshot_record, tombstone, update_record
    key = ("gs1", TOPIC_ID, 0)
    return (snapshot_record(key, ShareState(0, 0, 0, 0, (StateBatch(0, 4, 2, 1),), create_timestamp=0, write_timestamp=0)),
            update_record(key, 0, 0, 0, [StateBatch(0, 4, 2, 1)]), tombstone(key))


SHARE_KEY_JSON = '{"type":"%d","data":{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w","partition":0}}'


def test_share_group_state_message_parser_missing_key(tmp_path):
    """The key is mandatory: Kafka 4.4's message (CoordinatorRecordMessageParser; trunk 1eb76443 said
    "using share group state topic decoder"), which kproto prints in the key slot and goes on."""
    code, out, err = _share_dump(tmp_path, None, None)
    assert (code, err) == (0, "")
    assert _key_payload(out) == ("key: Failed to decode message at offset 0 using the specified decoder "
                                 "(message had a missing key)")


def test_share_group_state_message_parser_snapshot(tmp_path):
    """ShareSnapshot: key type 0, the value as Kafka 4.4's JSON prints it ("version", where
    trunk 1eb76443 printed "type"; 4.4's create and write timestamps, here 0)."""
    (key, value), _, _ = _share_records()
    code, out, _ = _share_dump(tmp_path, key, value)
    assert code == 0
    assert _key_payload(out) == (
        "key: " + SHARE_KEY_JSON % 0 + ' payload: {"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,'
        '"leaderEpoch":0,"startOffset":0,"createTimestamp":0,"writeTimestamp":0,"stateBatches":'
        '[{"firstOffset":0,"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}')


def test_share_group_state_message_parser_update(tmp_path):
    """ShareUpdate: key type 1."""
    _, (key, value), _ = _share_records()
    code, out, _ = _share_dump(tmp_path, key, value)
    assert code == 0
    assert _key_payload(out) == (
        "key: " + SHARE_KEY_JSON % 1 + ' payload: {"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,'
        '"startOffset":0,"stateBatches":[{"firstOffset":0,"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}')


def test_share_group_state_message_parser_tombstone(tmp_path):
    """A valid key with a tombstone: "<DELETE>"."""
    _, _, (key, value) = _share_records()
    code, out, _ = _share_dump(tmp_path, key, value)
    assert code == 0
    assert _key_payload(out) == "key: " + SHARE_KEY_JSON % 0 + " payload: <DELETE>"


def test_share_group_state_message_parser_unknown_record_type(tmp_path):
    """An unknown record type (key version 32767): skipped, as --offsets-decoder does."""
    code, out, _ = _share_dump(tmp_path, b"\x7f\xff\x00\x03gs1", b"\x00\x00")
    assert code == 0
    assert _key_payload(out) == "key: Unknown record type 32767 at offset 0, skipping."


# --- DumpLogSegmentsTest.testDumpMetadataRecords / testDumpMetadataSnapshot ------------------

def metadata_records() -> list[bytes]:
    """The four records both tests write: RegisterBrokerRecord (0, epoch 10) and (1, 20),
    TopicRecord test-topic, PartitionChangeRecord (leader 1, partition 0, isr 0,1,2), v0."""
    from kproto.schemas.cluster_metadata import build_metadata_record
    return [build_metadata_record(0, 0, {"broker_id": 0, "broker_epoch": 10, "rack": None}),   # Java's default
            build_metadata_record(0, 0, {"broker_id": 1, "broker_epoch": 20, "rack": None}),
            build_metadata_record(2, 0, {"name": "test-topic", "topic_id": TOPIC_ID}),
            build_metadata_record(5, 0, {"topic_id": SEGMENT_ID, "leader": 1, "partition_id": 0, "isr": [0, 1, 2]})]


METADATA_PAYLOADS = [
    '{"type":"REGISTER_BROKER_RECORD","version":0,"data":{"brokerId":0,"incarnationId":"AAAAAAAAAAAAAAAAAAAAAA",'
    '"brokerEpoch":10,"endPoints":[],"features":[],"rack":null,"fenced":true}}',
    '{"type":"REGISTER_BROKER_RECORD","version":0,"data":{"brokerId":1,"incarnationId":"AAAAAAAAAAAAAAAAAAAAAA",'
    '"brokerEpoch":20,"endPoints":[],"features":[],"rack":null,"fenced":true}}',
    '{"type":"TOPIC_RECORD","version":0,"data":{"name":"test-topic","topicId":"Uj5wn_FqTXirEASvVZRY1w"}}',
    '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,"topicId":"_ty6CYdlQyH-3LoJh2VDIQ",'
    '"isr":[0,1,2],"leader":1}}',
]
BOGUS_METADATA = b"\x90\x4e\x90\x4e"       # writeUnsignedVarint(10000) twice: frame version 10000


def test_dump_metadata_records(tmp_path):
    """testDumpMetadataRecords: the records at leader epoch 1, dumped with
    --cluster-metadata-decoder (with and without --skip-record-metadata); then a bogus
    record and the four again at epoch 2: the bogus one is skipped, the rest decode."""
    log = create_test_log(tmp_path)
    log.append(batch([(NOW, None, v) for v in metadata_records()]), leader_epoch=1)
    log.flush()
    code, out, err = dump("--cluster-metadata-decoder", "--files", log_file(log))
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == "Log starting offset: 0"
    assert payloads(out) == METADATA_PAYLOADS            # TOPIC_RECORD, REGISTER_BROKER_RECORD
    code, out, err = dump("--cluster-metadata-decoder", "--skip-record-metadata", "--files", log_file(log))
    assert (code, err) == (0, "")
    # --skip-record-metadata: "| payload: ..." (no key; Kafka 4.4, measured: trunk's DLS.scala:338-341
    # printed " payload: ...")
    assert [line for line in out.splitlines() if "payload: " in line] == ["| payload: " + p for p in METADATA_PAYLOADS]
    log.append(batch([(NOW, None, BOGUS_METADATA)]), leader_epoch=2)
    log.append(batch([(NOW, None, v) for v in metadata_records()]), leader_epoch=2)
    log.flush()
    code, out, err = dump("--cluster-metadata-decoder", "--skip-record-metadata", "--files", log_file(log))
    log.close()
    assert (code, err) == (0, "")
    # ClusterMetadataLogMessageParser: "Error at <offset>, skipping. <reason>" (no "offset" word)
    assert [line for line in out.splitlines() if "payload: " in line] == ["| payload: " + p for p in METADATA_PAYLOADS] + [
        "| payload: Error at 4, skipping. Could not deserialize metadata record due to unknown frame version "
        "10000(only frame version 1 is supported)"] + ["| payload: " + p for p in METADATA_PAYLOADS]


def kraft_control(control_type: int, data: dict) -> tuple[bytes, bytes]:
    """A KRaft control record (ControlRecordType 3-6): its key and value."""
    from kproto import schemas
    from kproto.schemas import records as S
    from kproto.schemas.metadata_records import CONTROL_RECORDS
    return (S.ControlRecordKey.build({"version": 0, "type": control_type}),
            schemas.build(CONTROL_RECORDS[control_type].struct(0), {"version": 0, **data}))


def metadata_snapshot(log_dir: Path) -> Path:
    """What RecordsSnapshotWriter (KRaft version 1, voters 1-3) writes for snapshot
    (0, 0): a control batch with the SnapshotHeader (lastContainedLogTimestamp 10000),
    KRaftVersion and KRaftVoters records, the four records, a control batch with the
    SnapshotFooter."""
    voters = [{"voter_id": i, "voter_directory_id": uuid.UUID(int=i), "k_raft_version_feature": {
        "min_supported_version": 0, "max_supported_version": 1},
        "endpoints": [{"name": "LISTENER", "host": "localhost", "port": 9990 + i}]} for i in (1, 2, 3)]
    header = [kraft_control(3, {"last_contained_log_timestamp": 10000}), kraft_control(5, {"k_raft_version": 1}),
              kraft_control(6, {"voters": voters})]
    data = build_record_batch([NewRecord(k, v, (), NOW) for k, v in header], is_control=True,
                              partition_leader_epoch=0)
    data += build_record_batch([NewRecord(None, v, (), NOW) for v in metadata_records()], base_offset=3,
                               partition_leader_epoch=0)
    key, value = kraft_control(4, {})
    data += build_record_batch([NewRecord(key, value, (), NOW)], is_control=True, base_offset=7,
                               partition_leader_epoch=0)
    path = log_dir / "00000000000000000000-0000000000.checkpoint"
    path.write_bytes(data)
    return path


def test_dump_metadata_snapshot(tmp_path):
    """testDumpMetadataSnapshot: the snapshot's end offset and epoch, its records, its
    control records with their JSON; --skip-record-metadata leaves the control records out."""
    path = metadata_snapshot(tmp_path)
    code, out, err = dump("--cluster-metadata-decoder", "--files", str(path))
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [f"Dumping {path}", "Snapshot end offset: 0, epoch: 0"]
    assert payloads(out) == METADATA_PAYLOADS
    for label in ("SnapshotHeader", "SnapshotFooter", "KRaftVersion", "KRaftVoters"):
        assert f" {label} {{" in out, label               # DumpLogSegments.printControlRecord
    assert '"lastContainedLogTimestamp":10000' in out
    code, out, err = dump("--cluster-metadata-decoder", "--skip-record-metadata", "--files", str(path))
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == "Snapshot end offset: 0, epoch: 0"
    assert [line for line in out.splitlines() if "payload: " in line] == ["| payload: " + p for p in METADATA_PAYLOADS]
    for absent in ("SnapshotHeader", "SnapshotFooter", "KRaftVersion", "KRaftVoters", "lastContainedLogTimestamp"):
        assert absent not in out, absent
