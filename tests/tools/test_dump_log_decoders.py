"""--offsets-decoder and --transaction-log-decoder, and the schemas behind them.

Record bytes are built with kproto.schemas.consumer_offsets / transaction_log;
those schemas are checked against hand-computed bytes and, for the consumer
embedded protocol, against kafka-python's own encoder. The expected decoder
output for the GroupMetadataValue v4 record is the string Kafka's own
DumpLogSegmentsTest asserts (kafka-tools.md §1.5).
"""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription

from kproto import schemas
from kproto.schemas import consumer_offsets as CO
from kproto.schemas import transaction_log as TL
from kproto import jvm
from kproto.tools import render as R
from tests.records.helpers import v2_batch
from tests.tools.helpers import run_dump_log as run
from tests.tools.helpers import write_segment as write


def ock(group, topic, partition, version=1):
    return CO.RecordKey.build({"version": version, "data": {"group": group, "topic": topic,
                                                            "partition": partition}})


# --- schema bytes ----------------------------------------------------------------------------

def test_offset_commit_bytes_by_hand():
    assert ock("g", "t", 0).hex() == "0001" "0001" "67" "0001" "74" "00000000"
    assert CO.OffsetCommitValue.build({"version": 3, "data": {
        "offset": 42, "leader_epoch": 5, "metadata": "", "commit_timestamp": 1700000000000}}).hex() == (
        "0003" "000000000000002a" "00000005" "0000" "0000018bcfe56800")
    assert CO.OffsetCommitValue.build({"version": 1, "data": {
        "offset": 7, "metadata": "m", "commit_timestamp": 1, "expire_timestamp": 2}}).hex() == (
        "0001" "0000000000000007" "0001" "6d" "0000000000000001" "0000000000000002")
    # v4: compact string (length + 1) and an empty tagged-field section.
    assert CO.OffsetCommitValue.build({"version": 4, "data": {
        "offset": 7, "metadata": "m", "commit_timestamp": 1}}).hex() == (
        "0004" "0000000000000007" "ffffffff" "026d" "0000000000000001" "00")
    assert CO.RecordKey.build({"version": 2, "data": {"group": "group"}}).hex() == "0002" "0005" "67726f7570"


def _member(**over):
    m = {"member_id": "m", "client_id": "c", "client_host": "h", "session_timeout": 100,
         "subscription": b"\x00\x00", "assignment": b""}
    m.update(over)
    return m


def test_group_metadata_bytes_by_hand():
    v0 = CO.GroupMetadataValue.build({"version": 0, "data": {
        "protocol_type": "consumer", "generation": 1, "protocol": "range", "leader": None,
        "members": [_member()]}})
    assert v0.hex() == ("0000" "0008" "636f6e73756d6572" "00000001" "0005" "72616e6765" "ffff"
                        "00000001" "0001" "6d" "0001" "63" "0001" "68" "00000064"
                        "00000002" "0000" "00000000")
    v4 = CO.GroupMetadataValue.build({"version": 4, "data": {
        "protocol_type": "consumer", "generation": 1, "protocol": "range", "leader": None,
        "current_state_timestamp": 5, "members": [_member(rebalance_timeout=7)]}})
    assert v4.hex() == ("0004" "09" "636f6e73756d6572" "00000001" "06" "72616e6765" "00"
                        "0000000000000005" "02"
                        "026d" "00" "0263" "0268" "00000007" "00000064" "03" "0000" "01" "00"
                        "00")
    back = schemas.parse(CO.GroupMetadataValue, v4)
    assert back.version == 4 and back.data.members[0].group_instance_id is None
    assert back.data.members[0].rebalance_timeout == 7


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_consumer_protocol_matches_kafka_python(version):
    sub = {"topics": ["foo", "bar"], "user_data": b"ud", "owned_partitions": [
        {"topic": "foo", "partitions": [0, 2]}], "generation_id": 9, "rack_id": "r1"}
    theirs = KpSubscription(version=version, topics=["foo", "bar"], user_data=b"ud",
                            owned_partitions=[("foo", [0, 2])], generation_id=9,
                            rack_id="r1").encode()
    ours_data = {k: v for k, v in sub.items()
                 if k in [f.name for f in CO.CONSUMER_PROTOCOL_SUBSCRIPTION.spec.fields
                          if f.present(version)]}
    assert CO.ConsumerProtocolSubscription.build({"version": version, "data": ours_data}) == theirs
    parsed = schemas.parse(CO.ConsumerProtocolSubscription, theirs).data
    assert parsed.topics == ["foo", "bar"] and parsed.user_data == b"ud"
    assign = KpAssignment(version=version, assigned_partitions=[("foo", [1])], user_data=None).encode()
    assert CO.ConsumerProtocolAssignment.build({"version": version, "data": {
        "assigned_partitions": [{"topic": "foo", "partitions": [1]}], "user_data": None}}) == assign


def test_transaction_log_bytes_by_hand():
    assert TL.TransactionLogKey.build({"version": 0, "data": {"transactional_id": "tx"}}).hex() == \
        "0000" "0002" "7478"
    value = TL.TransactionLogValue.build({"version": 0, "data": {
        "producer_id": 1, "producer_epoch": 0, "transaction_timeout_ms": 60000,
        "transaction_status": 1, "transaction_partitions": [{"topic": "t", "partition_ids": [0]}],
        "transaction_last_update_timestamp_ms": 5, "transaction_start_timestamp_ms": 4}})
    assert value.hex() == ("0000" "0000000000000001" "0000" "0000ea60" "01"
                           "00000001" "0001" "74" "00000001" "00000000"
                           "0000000000000005" "0000000000000004")


# --- --offsets-decoder ---------------------------------------------------------------------

def _records_line_tails(out: str) -> list[str]:
    return [line.split("headerKeys: [] ", 1)[1] for line in out.splitlines() if line.startswith("| ")]


def test_offsets_decoder(tmp_path):
    sub = KpSubscription(version=3, topics=["foo"], user_data=None, owned_partitions=[("foo", [0])],
                         generation_id=0, rack_id="rack").encode()
    assignment = KpAssignment(version=3, assigned_partitions=[("foo", [0])], user_data=None).encode()
    group_value = CO.GroupMetadataValue.build({"version": 4, "data": {
        "protocol_type": "consumer", "generation": 10, "protocol": "range", "leader": "member",
        "current_state_timestamp": -1, "members": [{
            "member_id": "member", "group_instance_id": "instance", "client_id": "client",
            "client_host": "host", "rebalance_timeout": 1000, "session_timeout": 100,
            "subscription": sub, "assignment": assignment}]}})
    connect_value = CO.GroupMetadataValue.build({"version": 0, "data": {
        "protocol_type": "connect", "generation": 1, "protocol": None, "leader": None,
        "members": [_member(subscription=b"\x01\x02", assignment=b"\xff")]}})
    records = [
        (ock("g", "t", 0), CO.OffsetCommitValue.build({"version": 3, "data": {
            "offset": 42, "leader_epoch": 5, "metadata": "", "commit_timestamp": 1700000000000}})),
        (ock("g", "t", 1, version=0), CO.OffsetCommitValue.build({"version": 1, "data": {
            "offset": 7, "metadata": "m", "commit_timestamp": 1, "expire_timestamp": 2}})),
        (CO.RecordKey.build({"version": 2, "data": {"group": "group"}}), group_value),
        (CO.RecordKey.build({"version": 2, "data": {"group": "kc"}}), connect_value),
        (ock("g", "t", 0), None),
        (b"\x00\x63\x00\x01g", b"\x00\x00"),
        (b"\x00\x03\x00\x01g", b"\x00\x00" b"\x00\x00\x00\x05" b"\x00"),   # KIP-848 group epoch 5
        (ock("g", "t", 0), b"\x00\x09\x00"),
    ]
    path = write(tmp_path, v2_batch(0, [(1, k, v, []) for k, v in records]))
    code, out, err = run("--files", str(path), "--offsets-decoder")
    assert (code, err) == (0, "")
    assert _records_line_tails(out) == [
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} '
        'payload: {"version":"3","data":{"offset":42,"leaderEpoch":5,"metadata":"","commitTimestamp":1700000000000}}',
        'key: {"type":"0","data":{"group":"g","topic":"t","partition":1}} '
        'payload: {"version":"1","data":{"offset":7,"metadata":"m","commitTimestamp":1,"expireTimestamp":2}}',
        # Kafka's DumpLogSegmentsTest expectation, byte for byte:
        'key: {"type":"2","data":{"group":"group"}} '
        'payload: {"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host","rebalanceTimeout":1000,'
        '"sessionTimeout":100,"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"generationId":0,"rackId":"rack"},"assignment":'
        '{"assignedPartitions":[{"topic":"foo","partitions":[0]}],"userData":null}}]}}',
        # Not the consumer protocol: the bytes stay, base64 (Jackson BinaryNode).
        'key: {"type":"2","data":{"group":"kc"}} '
        'payload: {"version":"0","data":{"protocolType":"connect","generation":1,"protocol":null,'
        '"leader":null,"members":[{"memberId":"m","clientId":"c","clientHost":"h",'
        '"sessionTimeout":100,"subscription":"AQI=","assignment":"/w=="}]}}',
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: <DELETE>',
        "key: Unknown record type 99 at offset 5, skipping.",
        'key: {"type":"3","data":{"groupId":"g"}} payload: {"version":"0","data":{"epoch":5}}',
        # Kafka 4.4 (measured: tests/parity/test_kafka_ref_dump_log.py) checks the value's version first
        "key: Error at offset 7, skipping. Found an unknown record version 9 for 1 type",
    ]
    # keySize/valueSize are the raw sizes, as always.
    line = out.splitlines()[3]
    assert f"keySize: {len(records[0][0])} valueSize: {len(records[0][1])} " in line


def test_offsets_decoder_json_nests_objects(tmp_path):
    import json
    path = write(tmp_path, v2_batch(0, [(1, ock("g", "t", 0), None, [])]))
    _, out, _ = run("--files", str(path), "--offsets-decoder", "--json")
    rec = json.loads(out.splitlines()[1])["records"][0]
    assert rec["key"] == {"type": "1", "data": {"group": "g", "topic": "t", "partition": 0}}
    assert rec["payload"] == "<DELETE>"


# --- --transaction-log-decoder ---------------------------------------------------------------

def txn_value(status, partitions, version=0):
    return TL.TransactionLogValue.build({"version": version, "data": {
        "producer_id": 1, "producer_epoch": 0, "transaction_timeout_ms": 60000,
        "transaction_status": status, "transaction_partitions": partitions,
        "transaction_last_update_timestamp_ms": 1700000000500,
        "transaction_start_timestamp_ms": 1700000000400}})


def test_transaction_log_decoder(tmp_path):
    key = TL.TransactionLogKey.build({"version": 0, "data": {"transactional_id": "txn"}})
    records = [
        (key, txn_value(0, None)),
        (key, txn_value(1, [{"topic": "t", "partition_ids": [0, 1]},
                            {"topic": "output-topic", "partition_ids": [0]}])),
        (key, txn_value(4, [], version=1)),
        (key, None),
        (b"\x00\x01\x00\x01x", b""),
        (key, txn_value(9, None)),
    ]
    path = write(tmp_path, v2_batch(0, [(1, k, v, []) for k, v in records]))
    code, out, err = run("--files", str(path), "--transaction-log-decoder")
    assert (code, err) == (0, "")
    key_json = 'key: {"type":"0","data":{"transactionalId":"txn"}}'
    times = '"transactionLastUpdateTimestampMs":1700000000500,"transactionStartTimestampMs":1700000000400'

    def value(version: str, status: str, partitions: str) -> str:
        return (f'payload: {{"version":"{version}","data":{{"producerId":1,"producerEpoch":0,'
                f'"transactionTimeoutMs":60000,"transactionStatus":"{status}",'
                f'"transactionPartitions":{partitions},{times}}}}}')
    ongoing = '[{"topic":"t","partitionIds":[0,1]},{"topic":"output-topic","partitionIds":[0]}]'
    # Kafka 4.4's TransactionLogMessageParser: JSON in the schema's order, the
    # status by name (its id when no state has it), partitions in stored order.
    assert _records_line_tails(out) == [
        f'{key_json} {value("0", "Empty", "null")}',
        f'{key_json} {value("0", "Ongoing", ongoing)}',
        f'{key_json} {value("1", "CompleteCommit", "[]")}',
        f"{key_json} payload: <DELETE>",
        "key: Unknown record type 1 at offset 4, skipping.",
        f'{key_json} {value("0", "9", "null")}',
    ]


# --- rendering helpers -------------------------------------------------------------------------

def test_java_and_scala_helpers():
    assert jvm.java_string_hash("hello") == 99162322
    assert jvm.java_string_hash("output-topic") == -1218349725
    assert R.optional_long(None) == "OptionalLong.empty" and R.optional_long(5) == "OptionalLong[5]"
    assert R.java_file("a//b/") == "a/b" and R.java_file("./x.log") == "./x.log"
    assert R.jackson_json({"k": "a\x01\n\u00e9"}) == '{"k":"a\\u0001\\n\u00e9"}'
    assert R.jackson_json({"k": "\\u0001"}) == '{"k":"\\\\u0001"}'
    # The 12th put finds size + 1 >= 0.75 * 16 and grows the table to 32 buckets.
    keys = [str(i) for i in range(13)]
    order = jvm.scala_hash_order(keys, jvm.java_string_hash)
    assert order == sorted(keys, key=lambda k: (jvm.java_string_hash(k) & 31, jvm.java_string_hash(k)))
