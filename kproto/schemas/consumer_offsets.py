"""Records of the ``__consumer_offsets`` topic and the consumer embedded protocol.

Framing (GroupCoordinatorRecordSerde / CoordinatorRecordSerde)::

    key   => version int16, then the key struct      (the key version IS the record type)
    value => version int16, then the value struct    (null value = tombstone)

    key version 0, 1  OffsetCommitKey    -> OffsetCommitValue  v0-4
    key version 2     GroupMetadataKey   -> GroupMetadataValue v0-4
    key version 3-8   KIP-848 consumer-group records (not described here)

Fields are Kafka's JSON schema names in snake_case, with Kafka's version
ranges (doc-ref: group-coordinator/src/main/resources/common/message/
{OffsetCommitKey,OffsetCommitValue,GroupMetadataKey,GroupMetadataValue}.json
and clients/.../message/ConsumerProtocol{Subscription,Assignment}.json).
Flexible versions (4+ for both values) use compact encodings and end every
struct with a tagged-fields section.

``Message`` below is a small field table in Kafka's own shape (name, type,
versions, nullable versions, default) from which one construct ``Struct`` per
version is derived; ``versioned`` puts the int16 version in front. The table
is the single description: parse, build and the dump-log JSON all come from it.
Fields that have a default in Kafka may be left out when building.
"""

from __future__ import annotations

from dataclasses import dataclass

from construct import Construct, Default, StreamError, Struct, Switch, this
from construct.core import ExplicitError

from kproto.schemas.primitives import (
    Array, Bytes, CompactArray, CompactBytes, CompactNullableBytes, CompactNullableString,
    CompactString, Int8, Int16, Int32, Int64, NullableBytes, NullableString, String,
    TaggedFields,
)

__all__ = [
    "Field", "Message", "versioned", "OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey",
    "GroupMetadataValue", "ConsumerProtocolSubscription", "ConsumerProtocolAssignment",
    "RecordKey", "value_schema", "KEY_TYPES",
]


# --- a Kafka message spec, as data -------------------------------------------------

def _range(spec: str | None) -> tuple[int, int] | None:
    """Kafka's version range syntax: "3+", "1", "0-4", "none"."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 1 << 15
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


@dataclass(frozen=True)
class Field:
    """One field: Kafka's ``name``/``type``/``versions``/``nullableVersions``/``default``.

    ``type`` is a primitive name (int8..int64, string, bytes), ``[]<primitive>``
    or ``[]`` with ``fields`` for an array of structs.
    """

    name: str
    type: str
    versions: str = "0+"
    nullable: str | None = None
    default: object = ...
    fields: tuple["Field", ...] = ()
    about: str = ""

    def present(self, version: int) -> bool:
        lo, hi = _range(self.versions)
        return lo <= version <= hi

    def nullable_in(self, version: int) -> bool:
        r = _range(self.nullable)
        return r is not None and r[0] <= version <= r[1]


_FIXED = {"int8": Int8, "int16": Int16, "int32": Int32, "int64": Int64}


def _type(f: Field, version: int, flexible: bool) -> Construct:
    nullable = f.nullable_in(version)
    if f.type.startswith("[]"):
        elem_type = f.type[2:]
        if f.fields:
            elem = _struct(f.fields, version, flexible)
        else:
            elem = _type(Field(f.name, elem_type), version, flexible)
        return (CompactArray if flexible else Array)(elem, nullable=nullable)
    if f.type in _FIXED:
        return _FIXED[f.type]
    if f.type == "string":
        if flexible:
            return CompactNullableString if nullable else CompactString
        return NullableString if nullable else String
    if f.type == "bytes":
        if flexible:
            return CompactNullableBytes if nullable else CompactBytes
        return NullableBytes if nullable else Bytes
    raise TypeError(f"{f.name}: unsupported type {f.type}")


def _struct(fields: tuple[Field, ...], version: int, flexible: bool) -> Struct:
    members = []
    for f in fields:
        if not f.present(version):
            continue
        con = _type(f, version, flexible)
        if f.default is not ...:
            con = Default(con, f.default)
        members.append(f.name / con)
    if flexible:
        members.append("tagged_fields" / Default(TaggedFields(), {}))
    return Struct(*members)


@dataclass(frozen=True)
class Message:
    """A versioned Kafka message: ``struct(v)`` is the body of version ``v``."""

    name: str
    valid: str
    flexible: str
    fields: tuple[Field, ...]

    def versions(self) -> range:
        lo, hi = _range(self.valid)
        return range(lo, hi + 1)

    def is_flexible(self, version: int) -> bool:
        r = _range(self.flexible)
        return r is not None and r[0] <= version <= r[1]

    def struct(self, version: int) -> Struct:
        if version not in self.versions():
            raise ValueError(f"{self.name} has no version {version}")
        return _struct(self.fields, version, self.is_flexible(version))


class _Unsupported(Construct):
    """The Switch default: a version the message does not define.
    Kafka's generated readers say "Can't read version N of <Message>"."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.message = name

    def _parse(self, stream, context, path):
        raise StreamError(f"Can't read version {context.version} of {self.message}", path=path)

    def _build(self, obj, stream, context, path):
        raise StreamError(f"Can't write version {context.version} of {self.message}", path=path)

    def _sizeof(self, context, path):
        raise ExplicitError("no fixed size", path=path)


def versioned(*cases: tuple[Message, tuple[int, ...] | None]) -> Struct:
    """``version int16`` then the body that version selects. Each case is a
    message and the version numbers that select it (None: its own versions,
    each selecting its own body); keys use explicit numbers because the key
    version is the record type."""
    table = {}
    names = []
    for message, numbers in cases:
        names.append(message.name)
        if numbers is None:
            table.update({v: message.struct(v) for v in message.versions()})
        else:
            body = message.struct(message.versions()[0])
            table.update({v: body for v in numbers})
    return Struct("version" / Int16, "data" / Switch(this.version, table, _Unsupported("/".join(names))))


# --- consumer embedded protocol (clients/.../ConsumerProtocol*.json) ----------------

_TOPIC_PARTITION = (
    Field("topic", "string", "0+"),
    Field("partitions", "[]int32", "0+"),
)

CONSUMER_PROTOCOL_SUBSCRIPTION = Message("ConsumerProtocolSubscription", "0-3", "none", (
    Field("topics", "[]string", "0+", about="topics the member wants"),
    Field("user_data", "bytes", "0+", nullable="0+", default=None, about="assignor user data"),
    Field("owned_partitions", "[]", "1+", default=[], fields=_TOPIC_PARTITION,
          about="partitions the member owns (KIP-429)"),
    Field("generation_id", "int32", "2+", default=-1, about="the member's generation (KIP-792)"),
    Field("rack_id", "string", "3+", nullable="3+", default=None, about="the member's rack (KIP-881)"),
))

CONSUMER_PROTOCOL_ASSIGNMENT = Message("ConsumerProtocolAssignment", "0-3", "none", (
    Field("assigned_partitions", "[]", "0+", fields=_TOPIC_PARTITION),
    Field("user_data", "bytes", "0+", nullable="0+", default=None),
))

ConsumerProtocolSubscription = versioned((CONSUMER_PROTOCOL_SUBSCRIPTION, None))
ConsumerProtocolAssignment = versioned((CONSUMER_PROTOCOL_ASSIGNMENT, None))


# --- __consumer_offsets records ---------------------------------------------------------

OFFSET_COMMIT_KEY = Message("OffsetCommitKey", "0", "none", (
    Field("group", "string", "0+", about="the consumer group id"),
    Field("topic", "string", "0+"),
    Field("partition", "int32", "0+"),
))

GROUP_METADATA_KEY = Message("GroupMetadataKey", "0", "none", (
    Field("group", "string", "0+", about="the group id"),
))

OFFSET_COMMIT_VALUE = Message("OffsetCommitValue", "0-4", "4+", (
    Field("offset", "int64", "0+"),
    Field("leader_epoch", "int32", "3+", default=-1, about="-1: none (KIP-320)"),
    Field("metadata", "string", "0+"),
    Field("commit_timestamp", "int64", "0+"),
    Field("expire_timestamp", "int64", "1", default=-1, about="v1 only (KIP-211 removed it)"),
))

GROUP_METADATA_VALUE = Message("GroupMetadataValue", "0-4", "4+", (
    Field("protocol_type", "string", "0+"),
    Field("generation", "int32", "0+"),
    Field("protocol", "string", "0+", nullable="0+"),
    Field("leader", "string", "0+", nullable="0+"),
    Field("current_state_timestamp", "int64", "2+", default=-1),
    Field("members", "[]", "0+", fields=(
        Field("member_id", "string", "0+"),
        Field("group_instance_id", "string", "3+", nullable="3+", default=None, about="KIP-345"),
        Field("client_id", "string", "0+"),
        Field("client_host", "string", "0+"),
        Field("rebalance_timeout", "int32", "1+", default=-1),
        Field("session_timeout", "int32", "0+"),
        Field("subscription", "bytes", "0+", about="ConsumerProtocolSubscription for protocol_type consumer"),
        Field("assignment", "bytes", "0+", about="ConsumerProtocolAssignment for protocol_type consumer"),
    )),
))

OffsetCommitKey = versioned((OFFSET_COMMIT_KEY, (0, 1)))
GroupMetadataKey = versioned((GROUP_METADATA_KEY, (2,)))
OffsetCommitValue = versioned((OFFSET_COMMIT_VALUE, None))
GroupMetadataValue = versioned((GROUP_METADATA_VALUE, None))

# Any key of the topic that kproto describes; the version picks the record type.
RecordKey = versioned((OFFSET_COMMIT_KEY, (0, 1)), (GROUP_METADATA_KEY, (2,)))

# Record types by key version (CoordinatorRecordSerde.apiMessageKeyFor @3.9).
KEY_TYPES = {0: "OffsetCommit", 1: "OffsetCommit", 2: "GroupMetadata",
             3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata",
             5: "ConsumerGroupMemberMetadata", 6: "ConsumerGroupTargetAssignmentMetadata",
             7: "ConsumerGroupTargetAssignmentMember", 8: "ConsumerGroupCurrentMemberAssignment"}

_VALUES = {0: OffsetCommitValue, 1: OffsetCommitValue, 2: GroupMetadataValue}


def value_schema(key_version: int) -> Struct | None:
    """The value schema for a record type, or None where kproto has none (3-8)."""
    return _VALUES.get(key_version)
