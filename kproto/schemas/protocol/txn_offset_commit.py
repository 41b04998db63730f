"""TxnOffsetCommit (key 28): commit consumer offsets inside a transaction.

Ledger: v0-5 supported; v3+ flexible; the broker answers v0-4.

    v0   first version
    v1   same as v0
    v2   request + topics.partitions.committed_leader_epoch
    v3   flexible; request + generation_id, member_id, group_instance_id
    v4   same as v3
    v5   same as v4
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

The broker answers v0-4 (kproto.server.handlers.txn): v5 belongs to
transactions version 2 (KIP-890 part 2), which its coordinator does not do.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    TxnOffsetCommit Request v5 (flexible):
      transactional_id COMPACT_STRING
      group_id COMPACT_STRING
      producer_id INT64
      producer_epoch INT16
      generation_id INT32
      member_id COMPACT_STRING
      group_instance_id COMPACT_NULLABLE_STRING
      topics COMPACT_ARRAY of TxnOffsetCommitRequestTopic
        name COMPACT_STRING
        partitions COMPACT_ARRAY of TxnOffsetCommitRequestPartition
          partition_index INT32
          committed_offset INT64
          committed_leader_epoch INT32
          committed_metadata COMPACT_NULLABLE_STRING
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

    TxnOffsetCommit Response v5 (flexible):
      throttle_time_ms INT32
      topics COMPACT_ARRAY of TxnOffsetCommitResponseTopic
        name COMPACT_STRING
        partitions COMPACT_ARRAY of TxnOffsetCommitResponsePartition
          partition_index INT32
          error_code INT16
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/TxnOffsetCommit{Request,Response}.json.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, STRING, ApiSpec, ArrayOf, Field, Struct,
)

TXN_OFFSET_COMMIT_REQUEST_PARTITION = Struct(
    "TxnOffsetCommitRequestPartition",
    Field("partition_index", INT32, doc="the index of the partition within the topic"),
    Field("committed_offset", INT64, doc="the message offset to be committed"),
    Field("committed_leader_epoch", INT32, "2+", default=-1,
          doc="the leader epoch of the last consumed record"),
    Field("committed_metadata", STRING, nullable="0+",
          doc="any associated metadata the client wants to keep"),
)

TXN_OFFSET_COMMIT_REQUEST_TOPIC = Struct(
    "TxnOffsetCommitRequestTopic",
    Field("name", STRING, doc="the topic name"),
    Field("partitions", ArrayOf(TXN_OFFSET_COMMIT_REQUEST_PARTITION),
          doc="the partitions inside the topic that we want to commit offsets for"),
)

REQUEST = Struct(
    "TxnOffsetCommitRequest",
    Field("transactional_id", STRING, doc="the ID of the transaction"),
    Field("group_id", STRING, doc="the ID of the group"),
    Field("producer_id", INT64, doc="the current producer ID in use by the transactional ID"),
    Field("producer_epoch", INT16, doc="the current epoch associated with the producer ID"),
    Field("generation_id", INT32, "3+", default=-1, doc="the generation of the consumer"),
    Field("member_id", STRING, "3+", doc="the member ID assigned by the group coordinator"),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None,
          doc="the unique identifier of the consumer instance provided by end user"),
    Field("topics", ArrayOf(TXN_OFFSET_COMMIT_REQUEST_TOPIC),
          doc="each topic that we want to commit offsets for"),
)

TXN_OFFSET_COMMIT_RESPONSE_PARTITION = Struct(
    "TxnOffsetCommitResponsePartition",
    Field("partition_index", INT32, doc="the partition index"),
    Field("error_code", INT16, doc="the error code, or 0 if there was no error"),
)

TXN_OFFSET_COMMIT_RESPONSE_TOPIC = Struct(
    "TxnOffsetCommitResponseTopic",
    Field("name", STRING, doc="the topic name"),
    Field("partitions", ArrayOf(TXN_OFFSET_COMMIT_RESPONSE_PARTITION),
          doc="the responses for each partition in the topic"),
)

RESPONSE = Struct(
    "TxnOffsetCommitResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("topics", ArrayOf(TXN_OFFSET_COMMIT_RESPONSE_TOPIC), doc="the responses for each topic"),
)

API = ApiSpec("TxnOffsetCommit", key=28, min_version=0, max_version=5, flexible_from=3,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 5))
request = API.request
response = API.response
