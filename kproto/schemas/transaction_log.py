"""Records of the ``__transaction_state`` topic (TransactionLog.scala).

    key   => version int16 (0), transactional_id string
    value => version int16, then TransactionLogValue of that version (null = tombstone)

    TransactionLogValue v0 (non-flexible), v1 (flexible, KIP-890 tagged fields):
      producer_id int64, producer_epoch int16, transaction_timeout_ms int32,
      transaction_status int8, transaction_partitions nullable [topic string,
      partition_ids [int32]] (null when the state is Empty),
      transaction_last_update_timestamp_ms int64, transaction_start_timestamp_ms int64
      v1 tags: 0 previous_producer_id int64 (-1), 1 next_producer_id int64 (-1),
               2 client_transaction_version int16 (0)

doc-ref: transaction-coordinator/src/main/resources/common/message/
TransactionLog{Key,Value}.json (@3.9 and trunk); the field table is the
shared ``Message`` form of kproto.schemas.consumer_offsets.
"""

from __future__ import annotations

from construct import Default, Struct, Switch, this

from kproto.schemas.consumer_offsets import Field, Message, _Unsupported, versioned
from kproto.schemas.primitives import Int16, Int64, TaggedFields

__all__ = ["TransactionLogKey", "TransactionLogValue", "TRANSACTION_STATES"]

TRANSACTION_LOG_KEY = Message("TransactionLogKey", "0", "none", (
    Field("transactional_id", "string", "0"),
))

TRANSACTION_LOG_VALUE = Message("TransactionLogValue", "0-1", "1+", (
    Field("producer_id", "int64", "0+", about="producer id in use by the transactional id"),
    Field("producer_epoch", "int16", "0+"),
    Field("transaction_timeout_ms", "int32", "0+"),
    Field("transaction_status", "int8", "0+", about="TRANSACTION_STATES"),
    Field("transaction_partitions", "[]", "0+", nullable="0+", fields=(
        Field("topic", "string", "0+"),
        Field("partition_ids", "[]int32", "0+"),
    )),
    Field("transaction_last_update_timestamp_ms", "int64", "0+"),
    Field("transaction_start_timestamp_ms", "int64", "0+"),
))

# v1's tagged fields (trunk): named where Kafka names them, absent ones None.
_V1_TAGS = {0: ("previous_producer_id", Int64), 1: ("next_producer_id", Int64),
            2: ("client_transaction_version", Int16)}


def _value_v1() -> Struct:
    body = TRANSACTION_LOG_VALUE.struct(1)
    members = [sc for sc in body.subcons if sc.name != "tagged_fields"]
    return Struct(*members, "tagged_fields" / Default(TaggedFields(_V1_TAGS), {}))


TransactionLogKey = versioned((TRANSACTION_LOG_KEY, (0,)))
TransactionLogValue = Struct(
    "version" / Int16,
    "data" / Switch(this.version, {0: TRANSACTION_LOG_VALUE.struct(0), 1: _value_v1()},
                    _Unsupported("TransactionLogValue")),
)

# TransactionState ids (TransactionMetadata.scala), printed by name.
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort",
                      4: "CompleteCommit", 5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}
