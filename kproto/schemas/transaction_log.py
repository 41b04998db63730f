"""Records of the ``__transaction_state`` topic (TransactionLog.scala).

    key   => version int16 (0), transactional_id string
    value => version int16, then TransactionLogValue of that version (null = tombstone)

    TransactionLogValue v0 (non-flexible), v1 (flexible, KIP-890 tagged fields):
      producer_id int64, producer_epoch int16, transaction_timeout_ms int32,
      transaction_status int8, transaction_partitions nullable [topic string,
      partition_ids [int32]] (null when the state is Empty),
      transaction_last_update_timestamp_ms int64, transaction_start_timestamp_ms int64
      v1 tags: 0 previous_producer_id int64 (-1), 1 next_producer_id int64 (-1),
               2 client_transaction_version int16 (0), 3 next_producer_epoch int16 (-1)
    (fields in the order of Kafka 4.4's schema file, which its JsonConverter writes:
    the tagged ids and epoch sit next to producer_id and producer_epoch)

doc-ref: transaction-coordinator/src/main/resources/common/message/
TransactionLog{Key,Value}.json (@3.9 and trunk); the field tree uses
kproto.schemas.message, like every other Kafka message in kproto.
"""

from __future__ import annotations

from kproto.schemas.message import (
    INT8, INT16, INT32, INT64, STRING, ArrayOf, Field, Message, Struct, versioned,
)

__all__ = ["TransactionLogKey", "TransactionLogValue", "TRANSACTION_STATES", "KEY_TYPES"]

TRANSACTION_LOG_KEY = Message(Struct("TransactionLogKey",
    Field("transactional_id", STRING, "0"),
), "0")

TRANSACTION_LOG_VALUE = Message(Struct("TransactionLogValue",
    Field("producer_id", INT64, doc="producer id in use by the transactional id"),
    # v1's tagged fields (KIP-890); written in tag order whatever their place here
    Field("previous_producer_id", INT64, "1+", default=-1, tag=0),
    Field("next_producer_id", INT64, "1+", default=-1, tag=1),
    Field("producer_epoch", INT16),
    Field("next_producer_epoch", INT16, "1+", default=-1, tag=3),
    Field("transaction_timeout_ms", INT32),
    Field("transaction_status", INT8, doc="TRANSACTION_STATES"),
    Field("transaction_partitions", ArrayOf(Struct("PartitionsSchema",
        Field("topic", STRING),
        Field("partition_ids", ArrayOf(INT32)),
    )), nullable="0+"),
    Field("transaction_last_update_timestamp_ms", INT64),
    Field("transaction_start_timestamp_ms", INT64),
    Field("client_transaction_version", INT16, "1+", default=0, tag=2),
), "0-1", "1+")

TransactionLogKey = versioned((TRANSACTION_LOG_KEY, (0,)))
TransactionLogValue = versioned((TRANSACTION_LOG_VALUE, None))

# Record types by key version (TransactionCoordinatorRecordSerde.apiMessageKeyFor).
KEY_TYPES = {0: "TransactionLog"}

# TransactionState ids (TransactionMetadata.scala), printed by name.
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort",
                      4: "CompleteCommit", 5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}
