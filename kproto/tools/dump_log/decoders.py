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
- ``kraft_control_json``: a KRaft control record's JSON (printControlRecord)

The first three are CoordinatorRecordMessageParser over CoordinatorRecordSerde.
"""

from __future__ import annotations

from kproto import schemas
from kproto.errors import DecodeError
from kproto.schemas import consumer_offsets as CO
from kproto.schemas import share_group_state as SGS
from kproto.schemas import transaction_log as TL
from kproto.schemas.cluster_metadata import TYPE_NAMES, parse_metadata_record
from kproto.schemas.internal_records import kafka_json, key_version
from kproto.schemas.message import exact
from kproto.schemas.metadata_records import CONTROL_RECORDS, METADATA_RECORDS
from kproto.tools.render import JsonValue

__all__ = ["consumer_offsets_record", "transaction_log_record", "share_group_state_record", "cluster_metadata_record",
           "kraft_control_json"]


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
                f"from key's buffer due to: {e.reason}.", None)
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
                f"{value_version} from value's buffer due to: {e.reason}.", None)
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
