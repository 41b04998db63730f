"""Records of the ``__consumer_offsets`` topic and the consumer embedded protocol.

Framing (GroupCoordinatorRecordSerde / CoordinatorRecordSerde)::

    key   => version int16, then the key struct      (the key version IS the record type)
    value => version int16, then the value struct    (null value = tombstone)

    key version 0, 1  OffsetCommitKey    -> OffsetCommitValue  v0-4
    key version 2     GroupMetadataKey   -> GroupMetadataValue v0-4
    key version 3-15  KIP-848 consumer-group and KIP-932 share-group records
                      (generated from Kafka's definitions: kproto.schemas.group_records)
    key version 16    ConsumerGroupRegularExpression (Kafka 4.0), below
    key version 17-23 KIP-1071 streams groups (kproto.schemas.group_records)

Fields are Kafka's JSON schema names in snake_case, with Kafka's version
ranges (doc-ref: group-coordinator/src/main/resources/common/message/
{OffsetCommitKey,OffsetCommitValue,GroupMetadataKey,GroupMetadataValue}.json
and clients/.../message/ConsumerProtocol{Subscription,Assignment}.json).
Flexible versions (4+ for both values) use compact encodings and end every
struct with a tagged-fields section.

The tables use kproto.schemas.message, the same field-tree form as the
protocol schemas; parse, build and the dump-log JSON all come from them.
Fields that have a default in Kafka may be left out when building.
"""

from __future__ import annotations

from construct import Construct

from kproto.schemas import group_records
from kproto.schemas.message import (
    BYTES, INT32, INT64, STRING, UUID, ArrayOf, Field, Message, Struct, versioned,
)

__all__ = [
    "OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue",
    "ConsumerProtocolSubscription", "ConsumerProtocolAssignment", "RecordKey", "value_schema", "value_message",
    "KEY_TYPES", "CONSUMER_PROTOCOL_SUBSCRIPTION", "CONSUMER_PROTOCOL_ASSIGNMENT",
]


# --- consumer embedded protocol (clients/.../ConsumerProtocol*.json) ----------------

_TOPIC_PARTITION = Struct("TopicPartition",
    Field("topic", STRING),
    Field("partitions", ArrayOf(INT32)),
)

CONSUMER_PROTOCOL_SUBSCRIPTION = Message(Struct("ConsumerProtocolSubscription",
    Field("topics", ArrayOf(STRING), doc="topics the member wants"),
    Field("user_data", BYTES, nullable="0+", default=None, doc="assignor user data"),
    Field("owned_partitions", ArrayOf(_TOPIC_PARTITION), "1+", doc="partitions the member owns (KIP-429)"),
    Field("generation_id", INT32, "2+", default=-1, doc="the member's generation (KIP-792)"),
    Field("rack_id", STRING, "3+", nullable="3+", default=None, doc="the member's rack (KIP-881)"),
), "0-3")

CONSUMER_PROTOCOL_ASSIGNMENT = Message(Struct("ConsumerProtocolAssignment",
    Field("assigned_partitions", ArrayOf(_TOPIC_PARTITION)),
    Field("user_data", BYTES, nullable="0+", default=None),
), "0-3")

ConsumerProtocolSubscription = versioned((CONSUMER_PROTOCOL_SUBSCRIPTION, None))
ConsumerProtocolAssignment = versioned((CONSUMER_PROTOCOL_ASSIGNMENT, None))


# --- __consumer_offsets records ---------------------------------------------------------

OFFSET_COMMIT_KEY = Message(Struct("OffsetCommitKey",
    Field("group", STRING, doc="the consumer group id"),
    Field("topic", STRING),
    Field("partition", INT32),
), "0")

GROUP_METADATA_KEY = Message(Struct("GroupMetadataKey",
    Field("group", STRING, doc="the group id"),
), "0")

OFFSET_COMMIT_VALUE = Message(Struct("OffsetCommitValue",
    Field("offset", INT64),
    Field("leader_epoch", INT32, "3+", default=-1, doc="-1: none (KIP-320)"),
    Field("metadata", STRING),
    Field("commit_timestamp", INT64),
    Field("expire_timestamp", INT64, "1", default=-1, doc="v1 only (KIP-211 removed it)"),
    Field("topic_id", UUID, "4+", tag=0, doc="the committed topic's id (Kafka 4.x brokers write it)"),
), "0-4", "4+")

GROUP_METADATA_VALUE = Message(Struct("GroupMetadataValue",
    Field("protocol_type", STRING),
    Field("generation", INT32),
    Field("protocol", STRING, nullable="0+", default=None),
    Field("leader", STRING, nullable="0+", default=None),
    Field("current_state_timestamp", INT64, "2+", default=-1),
    Field("members", ArrayOf(Struct("MemberMetadata",
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "3+", nullable="3+", default=None, doc="KIP-345"),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("rebalance_timeout", INT32, "1+", default=-1),
        Field("session_timeout", INT32),
        Field("subscription", BYTES, doc="ConsumerProtocolSubscription for protocol_type consumer"),
        Field("assignment", BYTES, doc="ConsumerProtocolAssignment for protocol_type consumer"),
    ))),
), "0-4", "4+")

# Type 16 (Kafka 4.0, KIP-848 regular-expression subscriptions), after the
# 2024-10 tree the generator reads (doc-ref: group-coordinator/.../
# ConsumerGroupRegularExpression{Key,Value}.json @53364c5; unchanged in Apache Kafka 4.4.0's
# kafka-group-coordinator jar, and dump-log prints them as its DumpLogSegments does).
CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = Message(Struct("ConsumerGroupRegularExpressionKey",
    Field("group_id", STRING, "16", doc="the group id"),
    Field("regular_expression", STRING, "16", doc="the subscribed regular expression"),
), "16")

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = Message(Struct("ConsumerGroupRegularExpressionValue",
    Field("topics", ArrayOf(STRING), doc="the topics the expression matched"),
    Field("version", INT64, doc="the metadata version the topics were matched against"),
    Field("timestamp", INT64, doc="when they were matched, in ms"),
), "0", "0+")

_RECORD_TYPES = {**group_records.RECORD_TYPES, 16: (
    "ConsumerGroupRegularExpression", CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
    CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE)}

OffsetCommitKey = versioned((OFFSET_COMMIT_KEY, (0, 1)))
GroupMetadataKey = versioned((GROUP_METADATA_KEY, (2,)))
OffsetCommitValue = versioned((OFFSET_COMMIT_VALUE, None))
GroupMetadataValue = versioned((GROUP_METADATA_VALUE, None))

# Any key of the topic; the version picks the record type.
RecordKey = versioned((OFFSET_COMMIT_KEY, (0, 1)), (GROUP_METADATA_KEY, (2,)),
                      *((key, (t,)) for t, (_, key, _) in _RECORD_TYPES.items()))

# Record types by key version (CoordinatorRecordSerde.apiMessageKeyFor).
KEY_TYPES = {0: "OffsetCommit", 1: "OffsetCommit", 2: "GroupMetadata",
             **{t: name for t, (name, _, _) in _RECORD_TYPES.items()}}

_VALUES = {0: OffsetCommitValue, 1: OffsetCommitValue, 2: GroupMetadataValue,
           **{t: versioned((value, None)) for t, (_, _, value) in _RECORD_TYPES.items()}}


_VALUE_MESSAGES = {0: OFFSET_COMMIT_VALUE, 1: OFFSET_COMMIT_VALUE, 2: GROUP_METADATA_VALUE,
                   **{t: value for t, (_, _, value) in _RECORD_TYPES.items()}}


def value_message(key_version: int) -> Message | None:
    """The value's message definition for a record type (its fields' tags and defaults)."""
    return _VALUE_MESSAGES.get(key_version)


def value_schema(key_version: int) -> Construct | None:
    """The value schema for a record type, or None for a type kproto does not know."""
    return _VALUES.get(key_version)
