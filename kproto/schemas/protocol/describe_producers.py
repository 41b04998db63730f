"""DescribeProducers (key 61): describe the active producers of partitions.

Ledger: v0 supported; v0+ flexible; the broker answers v0.

    v0   first version
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

The broker answers v0 (kproto.server.handlers.txn), from each partition's
producer state.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DescribeProducers Request v0 (flexible):
      topics COMPACT_ARRAY of TopicRequest
        name COMPACT_STRING
        partition_indexes COMPACT_ARRAY of INT32
        TAG_BUFFER
      TAG_BUFFER

    DescribeProducers Response v0 (flexible):
      throttle_time_ms INT32
      topics COMPACT_ARRAY of TopicResponse
        name COMPACT_STRING
        partitions COMPACT_ARRAY of PartitionResponse
          partition_index INT32
          error_code INT16
          error_message COMPACT_NULLABLE_STRING
          active_producers COMPACT_ARRAY of ProducerState
            producer_id INT64
            producer_epoch INT32
            last_sequence INT32
            last_timestamp INT64
            coordinator_epoch INT32
            current_txn_start_offset INT64
            TAG_BUFFER
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DescribeProducers{Request,Response}.json.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, STRING, ApiSpec, ArrayOf, Field, Struct,
)

TOPIC_REQUEST = Struct(
    "TopicRequest",
    Field("name", STRING, doc="the topic name"),
    Field("partition_indexes", ArrayOf(INT32),
          doc="the indexes of the partitions to list producers for"),
)

REQUEST = Struct(
    "DescribeProducersRequest",
    Field("topics", ArrayOf(TOPIC_REQUEST), doc="the topics to list producers for"),
)

PRODUCER_STATE = Struct(
    "ProducerState",
    Field("producer_id", INT64, doc="the producer id"),
    Field("producer_epoch", INT32, doc="the producer epoch"),
    Field("last_sequence", INT32, default=-1, doc="the last sequence number sent by the producer"),
    Field("last_timestamp", INT64, default=-1, doc="the last timestamp sent by the producer"),
    Field("coordinator_epoch", INT32, doc="the current epoch of the producer group"),
    Field("current_txn_start_offset", INT64, default=-1,
          doc="the current transaction start offset of the producer"),
)

PARTITION_RESPONSE = Struct(
    "PartitionResponse",
    Field("partition_index", INT32, doc="the partition index"),
    Field("error_code", INT16, doc="the partition error code, or 0 if there was no error"),
    Field("error_message", STRING, nullable="0+", default=None,
          doc="the partition error message, which may be null if no additional details are "
              "available"),
    Field("active_producers", ArrayOf(PRODUCER_STATE),
          doc="the active producers for the partition"),
)

TOPIC_RESPONSE = Struct(
    "TopicResponse",
    Field("name", STRING, doc="the topic name"),
    Field("partitions", ArrayOf(PARTITION_RESPONSE), doc="each partition in the response"),
)

RESPONSE = Struct(
    "DescribeProducersResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("topics", ArrayOf(TOPIC_RESPONSE), doc="each topic in the response"),
)

API = ApiSpec("DescribeProducers", key=61, min_version=0, max_version=0, flexible_from=0,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 0))
request = API.request
response = API.response
