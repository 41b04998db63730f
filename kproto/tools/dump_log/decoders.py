"""dump-log's decoders: a record of an internal topic as Kafka's DumpLogSegments
prints it (Kafka 4.x). Each ``*_record`` takes a record and returns ``(key,
payload)``: a ``JsonValue`` where Kafka prints JSON, text where it prints text,
None where it prints nothing.

- ``consumer_offsets_record``: ``--offsets-decoder`` (OffsetsMessageParser)
- ``transaction_log_record``: ``--transaction-log-decoder`` (TransactionLogMessageParser)
- ``share_group_state_record``: ``--share-group-state-decoder`` (ShareGroupStateMessageParser)
- ``cluster_metadata_record``: ``--cluster-metadata-decoder`` (ClusterMetadataLogMessageParser):
  payload ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``, no key, and
  ``Error at <offset>, skipping. <reason>`` for a bad frame
- ``remote_log_metadata_record``: ``--remote-log-metadata-decoder`` (RemoteMetadataLogMessageParser):
  payload the record as its RemoteLogMetadata's ``toString``, no key, and
  ``Error at offset <offset>, skipping. <reason>`` for one that does not deserialize
- ``share_group_state_record``: ``--share-group-state-decoder`` (ShareGroupStateMessageParser)
- ``kraft_control_json``: a KRaft control record's JSON (printControlRecord)

The offsets, transaction and share-group state ones are CoordinatorRecordMessageParser
over CoordinatorRecordSerde.
"""

from __future__ import annotations

import io

from construct import ConstructError

from kproto import schemas
from kproto.errors import DecodeError
from kproto.schemas import consumer_offsets as CO
from kproto.schemas import share_group_state as SGS
from kproto.schemas import transaction_log as TL
from kproto.schemas.cluster_metadata import TYPE_NAMES, parse_metadata_record, read_frame
from kproto.schemas.internal_records import kafka_json, kafka_uuid, key_version
from kproto.schemas.message import exact
from kproto.schemas.metadata_records import CONTROL_RECORDS, METADATA_RECORDS
from kproto.schemas.remote_log_metadata_records import REMOTE_LOG_METADATA_RECORDS
from kproto.tools.render import JsonValue

__all__ = ["consumer_offsets_record", "transaction_log_record", "cluster_metadata_record",
           "remote_log_metadata_record", "share_group_state_record", "kraft_control_json"]


def _java_reason(e: DecodeError) -> str:
    """The message of the exception Kafka's generated reader throws: a read past the
    end is a BufferUnderflowException, whose message is null (Kafka 4.4, measured)."""
    return "null" if e.reason.startswith("stream read less than specified amount") else e.reason


def _coordinator_record(record, key_types: dict, value_schema, value_message, key_schema, value_data=None):
    """DumpLogSegments.CoordinatorRecordMessageParser.parse (Kafka 4.x) over
    CoordinatorRecordSerde.deserialize: (key, payload) as JsonValue or text.
    ``value_data`` adjusts the value's JSON (TransactionLogMessageParser)."""
    o, key, value = record.offset, record.key, record.value
    if key is None:
        # Kafka throws this and the dump stops; kproto prints it in the key slot and goes on.
        return (f"Failed to decode message at offset {o} using the specified decoder "
                "(message had a missing key)", None)
    kind = key_version(key)
    if kind is None:
        return f"Error at offset {o}, skipping. Could not read version from key's buffer.", None
    if kind not in key_types:
        return f"Unknown record type {kind} at offset {o}, skipping.", None
    schema = value_schema(kind)
    if schema is None:
        return (f"Error at offset {o}, skipping. kproto has no schema for "
                f"{key_types[kind]} records (type {kind}).", None)
    try:
        k = schemas.parse(key_schema, key)
    except DecodeError as e:
        return (f"Error at offset {o}, skipping. Could not read record with version {kind} "
                f"from key's buffer due to: {_java_reason(e)}.", None)
    shown_key = JsonValue({"type": str(kind), "data": kafka_json(k.data)})
    if value is None:
        return shown_key, "<DELETE>"
    value_version = key_version(value)
    if value_version is None:
        return f"Error at offset {o}, skipping. Could not read version from value's buffer.", None
    if value_version not in value_message(kind).versions():
        # Deserializer.UnknownRecordVersionException, checked before reading
        return (f"Error at offset {o}, skipping. Found an unknown record version {value_version} "
                f"for {kind} type", None)
    try:
        v = schemas.parse(schema, value)
    except DecodeError as e:
        return (f"Error at offset {o}, skipping. Could not read record with version "
                f"{value_version} from value's buffer due to: {_java_reason(e)}.", None)
    data = kafka_json(v.data, value_message(kind).spec, value_version)
    if value_data is not None:
        value_data(kind, data)
    return shown_key, JsonValue({"version": str(v.version), "data": data})


def _consumer_protocols(kind: int, data: dict) -> None:
    """OffsetsMessageParser: a consumer group's member subscription and
    assignment bytes decoded, kept as bytes (base64) when they do not parse."""
    if kind == 2 and data.get("protocolType") == "consumer":
        for member in data.get("members") or ():
            for name, sub in (("subscription", CO.ConsumerProtocolSubscription),
                              ("assignment", CO.ConsumerProtocolAssignment)):
                try:
                    member[name] = kafka_json(schemas.parse(sub, member[name]).data)
                except DecodeError:
                    pass


def consumer_offsets_record(record):
    """``--offsets-decoder``: DumpLogSegments.OffsetsMessageParser (Kafka 4.x)."""
    return _coordinator_record(record, CO.KEY_TYPES, CO.value_schema, CO.value_message, CO.RecordKey,
                               _consumer_protocols)


def _transaction_state_name(kind: int, data: dict) -> None:
    """TransactionLogMessageParser.valueAsJson: the status by its
    TransactionState.stateName, the bare id when no state has it."""
    status = data["transactionStatus"]
    data["transactionStatus"] = TL.TRANSACTION_STATES.get(status, str(status))


def transaction_log_record(record):
    """``--transaction-log-decoder``: DumpLogSegments.TransactionLogMessageParser (Kafka 4.x)."""
    return _coordinator_record(record, TL.KEY_TYPES, lambda kind: TL.TransactionLogValue,
                               lambda kind: TL.TRANSACTION_LOG_VALUE, TL.TransactionLogKey,
                               _transaction_state_name)


def share_group_state_record(record):
    """``--share-group-state-decoder``: DumpLogSegments.ShareGroupStateMessageParser (Kafka 4.x)."""
    return _coordinator_record(record, SGS.KEY_TYPES, SGS.value_schema, SGS.value_message, SGS.RecordKey)


def cluster_metadata_record(record):
    """kafka-dump-log --cluster-metadata-decoder: (None, payload)."""
    try:
        record_type, version, data = parse_metadata_record(record.value or b"")
    except DecodeError as e:
        return None, f"Error at {record.offset}, skipping. {e.reason}"
    return None, JsonValue({"type": TYPE_NAMES[record_type], "version": version,
                            "data": kafka_json(data, METADATA_RECORDS[record_type].spec, version)})


# RemoteLogSegmentState and RemotePartitionDeleteState by id (storage/api .../storage/*State.java).
_SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                   3: "DELETE_SEGMENT_FINISHED"}
_PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                            2: "DELETE_PARTITION_FINISHED"}


class _NotDeserialized(Exception):
    """What RemoteLogMetadataSerde throws: its message is the line's reason."""


def _topic_id_partition(t) -> str:
    return f"{kafka_uuid(t.id)}:{t.name}-{t.partition}"          # TopicIdPartition.toString


def _segment_id(e) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(e.topic_id_partition)}, id={kafka_uuid(e.id)}}}"


def _custom_metadata(value) -> str:
    """Optional<CustomMetadata>.toString."""
    return "Optional.empty" if value is None else f"Optional[CustomMetadata{{{len(value)} bytes}}]"


def _segment_state(data) -> str:
    state = _SEGMENT_STATES.get(data.remote_log_segment_state)
    if state is None:           # forId answers null, the constructor's requireNonNull throws
        raise _NotDeserialized("state can not be null")
    return state


def _leader_epochs(data) -> str:
    """The segment's leader epochs as a TreeMap's toString; the constructors' checks."""
    epochs = {e.leader_epoch: e.offset for e in data.segment_leader_epochs}
    if not epochs:
        raise _NotDeserialized("segmentLeaderEpochs can not be null or empty")
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(epochs.items())) + "}"


def _remote_log_metadata_text(api_key: int, d) -> str:
    """RemoteLogMetadataSerde.deserialize(...).toString() for each record type
    (RemoteLogSegmentMetadata, ...Update, RemotePartitionDeleteMetadata, ...Snapshot)."""
    if api_key == 0:
        state = _segment_state(d)
        if d.start_offset < 0:
            raise _NotDeserialized(f"Unexpected start offset = {d.start_offset}. "
                                   "StartOffset for a remote segment cannot be negative")
        if d.end_offset < d.start_offset:
            raise _NotDeserialized(f"Unexpected end offset = {d.end_offset}. EndOffset for a remote segment "
                                   f"cannot be less than startOffset = {d.start_offset}")
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(d.remote_log_segment_id)}, "
                f"startOffset={d.start_offset}, endOffset={d.end_offset}, brokerId={d.broker_id}, "
                f"maxTimestampMs={d.max_timestamp_ms}, eventTimestampMs={d.event_timestamp_ms}, "
                f"segmentLeaderEpochs={_leader_epochs(d)}, segmentSizeInBytes={d.segment_size_in_bytes}, "
                f"customMetadata={_custom_metadata(d.custom_metadata)}, state={state}, "
                f"txnIdxEmpty={str(d.txn_index_empty).lower()}}}")
    if api_key == 1:
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(d.remote_log_segment_id)}, "
                f"customMetadata={_custom_metadata(d.custom_metadata)}, state={_segment_state(d)}, "
                f"eventTimestampMs={d.event_timestamp_ms}, brokerId={d.broker_id}}}")
    if api_key == 2:
        state = _PARTITION_DELETE_STATES.get(d.remote_partition_delete_state)
        if state is None:
            raise _NotDeserialized("null")           # Objects.requireNonNull without a message
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_topic_id_partition(d.topic_id_partition)}, "
                f"state={state}, eventTimestampMs={d.event_timestamp_ms}, brokerId={d.broker_id}}}")
    state = _segment_state(d)
    return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={kafka_uuid(d.segment_id)}, "
            f"startOffset={d.start_offset}, endOffset={d.end_offset}, maxTimestampMs={d.max_timestamp_ms}, "
            f"segmentLeaderEpochs={_leader_epochs(d)}, segmentSizeInBytes={d.segment_size_in_bytes}, "
            f"customMetadata={_custom_metadata(d.custom_metadata)}, state={state}, "
            f"txnIdxEmpty={str(d.txn_index_empty).lower()}}}")


def _remote_log_metadata(value: bytes | None):
    """RemoteLogMetadataSerde.deserialize: AbstractApiMessageSerde.read's reasons (Kafka 4.4, measured)."""
    if value is None:           # Kafka 4.4 reads record.value().remaining(): a helpful NullPointerException
        raise _NotDeserialized('Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
                               '"org.apache.kafka.common.record.internal.Record.value()" is null')
    try:
        api_key, version, pos = read_frame(value)
    except DecodeError as e:
        raise _NotDeserialized(e.reason) from None
    message = REMOTE_LOG_METADATA_RECORDS.get(api_key)
    if message is None:         # MetadataRecordType.fromId, wrapped: the cause's toString
        raise _NotDeserialized("org.apache.kafka.common.errors.UnsupportedVersionException: "
                               f"Unknown metadata id {api_key}")
    if version not in message.versions():
        raise _NotDeserialized(f"Failed to deserialize record with type {api_key}")
    body = io.BytesIO(value[pos:])
    try:
        data = message.struct(version).parse_stream(body)
    except (ConstructError, DecodeError):
        raise _NotDeserialized(f"Failed to deserialize record with type {api_key}") from None
    left = len(value) - pos - body.tell()
    if left:
        raise _NotDeserialized(f"Found {left} byte(s) of garbage after {api_key}")
    return _remote_log_metadata_text(api_key, data)


def remote_log_metadata_record(record):
    """kafka-dump-log --remote-log-metadata-decoder (RemoteMetadataLogMessageParser,
    Kafka 4.4): (None, payload), the payload the record's toString or
    "Error at offset <offset>, skipping. <reason>"."""
    try:
        return None, _remote_log_metadata(record.value)
    except _NotDeserialized as e:
        return None, f"Error at offset {record.offset}, skipping. {e}"


def kraft_control_json(control_type: int, value: bytes | None) -> dict | None:
    """A KRaft control record's value (LeaderChange, SnapshotHeader/Footer, KRaftVersion,
    Voters) as its JsonConverter writes it, as DumpLogSegments.printControlRecord
    (Kafka 4.x) prints it; None for another type or a value that does not parse."""
    message = CONTROL_RECORDS.get(control_type)
    if message is None or value is None or len(value) < 2:
        return None
    # ControlRecordUtils: the message's own first field, "version", picks its schema version
    version = int.from_bytes(value[:2], "big", signed=True)
    if version not in message.versions():
        return None
    try:
        data = schemas.parse(exact(message.struct(version)), value)
    except DecodeError:
        return None
    return kafka_json(data, message.spec, version)
