"""The internal topics' records as Kafka's tools show them.

``consumer_offsets_record`` is ``kafka-dump-log --offsets-decoder``
(OffsetsMessageParser, Kafka 3.8+), ``transaction_log_record`` is
``--transaction-log-decoder`` (TransactionLog.formatRecordKeyAndValue,
2.5-3.9): each takes a record and returns ``(key, payload)``, a
``JsonValue`` where Kafka prints JSON, text where it prints text, None where
it prints nothing. ``key_version`` is the type tag both topics' keys start
with, read the same way by the group coordinator's loading
(kproto.server.coordinator.persistence).
"""

from __future__ import annotations

import base64
import uuid

from kproto import schemas
from kproto.errors import DecodeError
from kproto.jvm import scala_hash_order, topic_partition_hash
from kproto.schemas import consumer_offsets as CO
from kproto.schemas import transaction_log as TL
from kproto.schemas.message import RECORDS, ArrayOf, Field, Struct

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
    leaderRecoveryState, OffsetCommitValue's topicId); a records field is
    its size, ``<name>SizeInBytes``, as ``write(data, version, false)`` prints it."""
    if isinstance(value, dict):
        fields = {f.name: f for f in spec.fields} if spec is not None else {}
        out = {}
        for k, v in value.items():
            if k.startswith("_") or k == "tagged_fields":
                continue
            f = fields.get(k)
            if f is not None and f.tag is not None and f.tagged_in(version) and v == f.default_value():
                continue
            if f is not None and f.type is RECORDS and v is not None:
                out[camel(k) + "SizeInBytes"] = len(v)
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


def consumer_offsets_record(record):
    """Kafka 3.8+ OffsetsMessageParser: (key, payload) as JsonValue or text."""
    o, key, value = record.offset, record.key, record.value
    if key is None:
        return (f"Failed to decode message at offset {o} using offset topic decoder "
                "(message had a missing key)", None)
    kind = key_version(key)
    if kind is None:
        return f"Error at offset {o}, skipping. Could not read version from key's buffer.", None
    if kind not in CO.KEY_TYPES:
        return f"Unknown record type {kind} at offset {o}, skipping.", None
    schema = CO.value_schema(kind)
    if schema is None:
        return (f"Error at offset {o}, skipping. kproto has no schema for "
                f"{CO.KEY_TYPES[kind]} records (type {kind}).", None)
    try:
        k = schemas.parse(CO.RecordKey, key)
    except DecodeError as e:
        return (f"Error at offset {o}, skipping. Could not read record with version {kind} "
                f"from key's buffer due to: {e.reason}.", None)
    shown_key = JsonValue({"type": str(kind), "data": kafka_json(k.data)})
    if value is None:
        return shown_key, "<DELETE>"
    if key_version(value) is None:
        return f"Error at offset {o}, skipping. Could not read version from value's buffer.", None
    try:
        v = schemas.parse(schema, value)
    except DecodeError as e:
        return (f"Error at offset {o}, skipping. Could not read record with version "
                f"{key_version(value)} from value's buffer due to: {e.reason}.", None)
    data = kafka_json(v.data, CO.value_message(kind).spec, key_version(value))
    if kind == 2 and data.get("protocolType") == "consumer":
        # Kafka decodes each member's embedded protocol bytes, keeping the
        # bytes (base64) when they do not parse.
        for member in data.get("members") or ():
            for name, sub in (("subscription", CO.ConsumerProtocolSubscription),
                              ("assignment", CO.ConsumerProtocolAssignment)):
                try:
                    member[name] = kafka_json(schemas.parse(sub, member[name]).data)
                except DecodeError:
                    pass
    return shown_key, JsonValue({"version": str(v.version), "data": data})


def transaction_log_record(record):
    """TransactionLog.formatRecordKeyAndValue (2.5-3.9)."""
    o, key, value = record.offset, record.key, record.value
    version = None if key is None else key_version(key)
    if version is None:
        return f"Error at offset {o}, skipping. The record has no transaction log key.", None
    if version != 0:
        return f"unknown::version={version}", None
    try:
        txn_id = schemas.parse(TL.TransactionLogKey, key).data.transactional_id
    except DecodeError as e:
        return f"Error at offset {o}, skipping. {e.reason}", None
    shown_key = f"transaction_metadata::transactionalId={txn_id}"
    if value is None:
        return shown_key, "<DELETE>"
    try:
        v = schemas.parse(TL.TransactionLogValue, value).data
    except DecodeError as e:
        value_version = key_version(value)
        if value_version is not None and value_version not in (0, 1):
            reason = f"Unknown version {value_version} from the transaction log message value"
        else:
            reason = e.reason
        return f"Error at offset {o}, skipping. {reason}", None
    state = TL.TRANSACTION_STATES.get(v.transaction_status)
    if state is None:
        return (f"Error at offset {o}, skipping. Unknown transaction state id "
                f"{v.transaction_status} from the transaction status message", None)
    partitions: list[tuple[str, int]] = []
    hints = []
    if state != "Empty":
        for group in v.transaction_partitions or ():
            tps = [(group.topic, p) for p in group.partition_ids]
            hints.append(len(set(tps)))
            partitions += tps
    # TransactionMetadata.topicPartitions is a Scala mutable.HashSet of TopicPartition.
    ordered = scala_hash_order(partitions, topic_partition_hash, hints=hints)
    shown = ",".join(f"{t}-{p}" for t, p in ordered)
    return shown_key, (f"producerId:{v.producer_id},producerEpoch:{v.producer_epoch},state={state},"
                       f"partitions=[{shown}],txnLastUpdateTimestamp="
                       f"{v.transaction_last_update_timestamp_ms},txnTimeoutMs={v.transaction_timeout_ms}")
