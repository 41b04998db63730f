"""Internal-log records from Kafka's definitions: KRaft __cluster_metadata,
__consumer_offsets types 3-15 (KIP-848, KIP-932), __share_group_state.

* bytes written by hand from Kafka's framing (MetadataRecordSerde,
  CoordinatorRecordSerde) decode to the values they spell;
* ``kproto dump-log --cluster-metadata-decoder`` on a segment like
  DumpLogSegmentsTest.testDumpMetadataRecords' (two RegisterBrokerRecords, a
  TopicRecord, a PartitionChangeRecord, then a bogus frame) prints Kafka's
  payloads and its "skipping" line;
* every record type and version round-trips (hypothesis, from the tables).
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto import schemas
from kproto.errors import DecodeError
from kproto.schemas import cluster_metadata as CM
from kproto.schemas import consumer_offsets as CO
from kproto.schemas import group_records as GR
from kproto.schemas import metadata_records as MR
from tests.records.helpers import v2_batch
from tests.schemas.helpers import plain, values
from tests.schemas.helpers import PROTOCOL_SETTINGS as SETTINGS
from tests.tools.helpers import run_dump_log as run
from tests.tools.helpers import write_segment as write

TOPIC_ID = uuid.UUID("523e709f-f16a-4d78-ab10-04af559458d7")   # Kafka: Uj5wn_FqTXirEASvVZRY1w


def test_kafka_uuid_text():
    assert CM.kafka_uuid(TOPIC_ID) == "Uj5wn_FqTXirEASvVZRY1w"   # DumpLogSegmentsTest's topicId


def test_topic_record_bytes_by_hand():
    # frame 1, type 2 (TopicRecord), version 0; name compact "foo"; topic id; empty tag buffer
    value = bytes.fromhex("01" "02" "00" "04" + b"foo".hex() + TOPIC_ID.hex + "00")
    assert CM.parse_metadata_record(value) == (2, 0, {"name": "foo", "topic_id": TOPIC_ID})
    assert CM.build_metadata_record(2, 0, {"name": "foo", "topic_id": TOPIC_ID}) == value


def test_partition_record_bytes_by_hand():
    # PartitionRecord v0 (type 3): partition_id, topic_id, replicas, isr, removing, adding,
    # leader, leader_epoch, partition_epoch, then tags
    value = bytes.fromhex(
        "01" "03" "00" "00000001" + TOPIC_ID.hex + "03" "00000001" "00000002"
        "02" "00000001" "01" "01" "00000001" "00000005" "00000007" "00")
    record_type, version, data = CM.parse_metadata_record(value)
    assert (record_type, version) == (3, 0)
    assert (data.partition_id, data.replicas, data.isr, data.removing_replicas, data.adding_replicas,
            data.leader, data.leader_epoch, data.partition_epoch) == (1, [1, 2], [1], [], [], 1, 5, 7)


@pytest.mark.parametrize("value, reason", [
    (bytes.fromhex("904e904e"), "Could not deserialize metadata record due to unknown frame version "
                                "10000(only frame version 1 is supported)"),
    (bytes.fromhex("00"), "Could not deserialize metadata record with frame version 0. Note that "
                          "upgrades from the preview release of KRaft in 2.8 to newer versions are not supported."),
    (bytes.fromhex("01" "6300"), "Unknown metadata id 99"),
    (bytes.fromhex("01" "02" "09"), "Can't read version 9 of TopicRecord"),
    (bytes.fromhex("01"), "Error while reading type"),
])
def test_bad_frames_name_kafkas_reason(value, reason):
    with pytest.raises(DecodeError) as e:
        CM.parse_metadata_record(value)
    assert e.value.reason == reason and e.value.position is not None


def test_garbage_after_the_record():
    value = CM.build_metadata_record(2, 0, {"name": "foo", "topic_id": TOPIC_ID})
    with pytest.raises(DecodeError, match="1 bytes left") as e:
        CM.parse_metadata_record(value + b"\x00")
    assert e.value.position == len(value)


def test_dump_log_cluster_metadata_decoder(tmp_path):
    """As DumpLogSegmentsTest.testDumpMetadataRecords, with the payloads checked whole."""
    recs = [CM.build_metadata_record(0, 0, {"broker_id": 0, "broker_epoch": 10}),
            CM.build_metadata_record(0, 0, {"broker_id": 1, "broker_epoch": 20}),
            CM.build_metadata_record(2, 0, {"name": "test-topic", "topic_id": TOPIC_ID}),
            CM.build_metadata_record(5, 0, {"topic_id": TOPIC_ID, "leader": 1, "partition_id": 0,
                                            "isr": [0, 1, 2]}),
            bytes.fromhex("904e904e")]
    path = write(tmp_path, v2_batch(0, [(1, None, v, []) for v in recs]))
    code, out, err = run("--cluster-metadata-decoder", "--skip-record-metadata", "--files", str(path))
    assert (code, err) == (0, "")
    payloads = [line.split("payload: ", 1)[1] for line in out.splitlines() if "payload: " in line]
    assert payloads[2] == ('{"type":"TOPIC_RECORD","version":0,"data":{"name":"test-topic",'
                           '"topicId":"Uj5wn_FqTXirEASvVZRY1w"}}')
    assert payloads[0].startswith('{"type":"REGISTER_BROKER_RECORD","version":0,"data":{"brokerId":0,'
                                  '"incarnationId":"AAAAAAAAAAAAAAAAAAAAAA","brokerEpoch":10,')
    # its tagged fields (replicas, removingReplicas, ...) are at their defaults: the
    # JsonConverter leaves them out (checked against Kafka 4.4 in test_kafka_ref_dump_log)
    assert payloads[3] == ('{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,'
                           '"topicId":"Uj5wn_FqTXirEASvVZRY1w","isr":[0,1,2],"leader":1}}')
    assert payloads[4] == ("Error at 4, skipping. Could not deserialize metadata record due to unknown "
                           "frame version 10000(only frame version 1 is supported)")
    assert "key:" not in out     # metadata records have no keys


def test_consumer_group_record_bytes_by_hand():
    # key type 3 (ConsumerGroupMetadataKey v3: group_id string); value v0 (flexible): epoch, tags
    key = bytes.fromhex("0003" "0001") + b"g"
    value = bytes.fromhex("0000" "00000005" "00")
    assert schemas.parse(CO.RecordKey, key).data == {"group_id": "g"}
    assert schemas.parse(CO.value_schema(3), value).data == {"epoch": 5, "metadata_hash": 0}
    # Kafka 4.1+ (KIP-1101): MetadataHash, tagged field 0 (int64), omitted when 0
    tagged = bytes.fromhex("0000" "00000005" "01" "00" "08" "fffffffffffffffe")
    assert schemas.parse(CO.value_schema(3), tagged).data == {"epoch": 5, "metadata_hash": -2}
    assert CO.value_schema(3).build({"version": 0, "data": {"epoch": 5, "metadata_hash": -2}}) == tagged
    assert CO.value_schema(3).build({"version": 0, "data": {"epoch": 5, "metadata_hash": 0}}) == value
    assert CO.KEY_TYPES[15] == "ShareGroupStatePartitionMetadata"


def test_regular_expression_record_bytes_by_hand():
    # type 16: group_id, regular_expression (int16 strings); value v0: compact []string, 2 int64, tags
    key = bytes.fromhex("0010" "0001") + b"g" + bytes.fromhex("0004") + b"t.*x"
    value = bytes.fromhex("0000" "02" "03") + b"tx" + bytes.fromhex(
        "0000000000000007" "0000018bcfe56800" "00")
    assert schemas.parse(CO.RecordKey, key).data == {"group_id": "g", "regular_expression": "t.*x"}
    assert schemas.parse(CO.value_schema(16), value).data == {
        "topics": ["tx"], "version": 7, "timestamp": 1700000000000}
    assert CO.KEY_TYPES[16] == "ConsumerGroupRegularExpression"


RECORD_CASES = [pytest.param(m, v, id=f"{m.name}-v{v}")
                for m in [*MR.METADATA_RECORDS.values(), *MR.CONTROL_RECORDS.values(),
                          *(x for _, k, val in GR.RECORD_TYPES.values() for x in (k, val)),
                          *(x for _, k, val in GR.SHARE_STATE_TYPES.values() for x in (k, val)),
                          CO.CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
                          CO.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE]
                for v in m.versions()]


@pytest.mark.parametrize("message, version", RECORD_CASES)
@SETTINGS
@given(data=st.data())
def test_record_round_trip(message, version, data):
    value = data.draw(values(message.spec, version, message.is_flexible(version)))
    raw = schemas.build(message.struct(version), value)
    again = schemas.parse(message.struct(version), raw)
    assert schemas.build(message.struct(version), again) == raw
    assert plain(again) == plain(schemas.parse(message.struct(version), raw))


@pytest.mark.parametrize("record_type", sorted(MR.METADATA_RECORDS))
def test_every_metadata_record_type_frames(record_type):
    message = MR.METADATA_RECORDS[record_type]
    version = message.versions()[-1]
    default = message.spec.defaults()
    framed = CM.build_metadata_record(record_type, version, default)
    assert CM.parse_metadata_record(framed)[:2] == (record_type, version)
    assert CM.TYPE_NAMES[record_type].endswith("_RECORD")
