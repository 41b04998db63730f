"""The internal topics' records as Kafka's tools show them.

``consumer_offsets_record`` is ``kafka-dump-log --offsets-decoder``
and ``transaction_log_record`` is ``--transaction-log-decoder``, both
Kafka 4.x's CoordinatorRecordMessageParser: each takes a record and returns
``(key, payload)``, a ``JsonValue`` where Kafka prints JSON, text where it
prints text, None where it prints nothing. ``key_version`` is the type tag both topics' keys start
with, read the same way by the group coordinator's loading
(kproto.server.coordinator.persistence).
"""

from __future__ import annotations

import base64
import uuid

from kproto import schemas
from kproto.errors import DecodeError
from kproto.schemas import consumer_offsets as CO
from kproto.schemas import transaction_log as TL
from kproto.schemas.message import ArrayOf, Field, Struct

__all__ = ["JsonValue", "key_version", "camel", "kafka_json", "kafka_uuid", "consumer_offsets_record",
           "transaction_log_record"]


class JsonValue:
    """A decoder result that is JSON: text output prints it Jackson-style, JSON output nests it."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value


def key_version(buf: bytes) -> int | None:
    """The int16 an internal record's key (or value) starts with: its type
    (or schema version); None when fewer than two bytes are there."""
    if len(buf) < 2:
        return None
    return int.from_bytes(buf[:2], "big", signed=True)


def camel(name: str) -> str:
    """Kafka's JSON field name for a kproto (snake_case) field name."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def kafka_json(value, spec: Struct | None = None, version: int = 0):
    """A parsed construct value as Kafka's generated JsonConverter writes it:
    camelCase keys in schema order, UUIDs as Uuid.toString(), bytes as base64
    (on dumping), private and unknown-tag entries left out. Given the value's
    ``spec`` and ``version``, a tagged field still at its default is left out
    too: the generated ``<Message>JsonConverter.write`` writes a tagged field
    only when it differs from its default (e.g. PartitionRecord's
    leaderRecoveryState, OffsetCommitValue's topicId)."""
    if isinstance(value, dict):
        fields = {f.name: f for f in spec.fields} if spec is not None else {}
        out = {}
        for k, v in value.items():
            if k.startswith("_") or k == "tagged_fields":
                continue
            f = fields.get(k)
            if f is not None and f.tag is not None and f.tagged_in(version) and v == f.default_value():
                continue
            out[camel(k)] = kafka_json(v, _inner(f), version)
        return out
    if isinstance(value, list):
        return [kafka_json(v, spec, version) for v in value]
    if isinstance(value, uuid.UUID):
        return kafka_uuid(value)
    return value


def _inner(f: Field | None) -> Struct | None:
    t = f.type if f is not None else None
    t = t.elem if isinstance(t, ArrayOf) else t
    return t if isinstance(t, Struct) else None


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
