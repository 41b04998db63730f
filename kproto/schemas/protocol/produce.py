"""Produce (key 0): append record batches to partitions.

Ledger: v0-13 supported; v9+ flexible; the broker answers v0-13.

    v0   acks, timeout_ms, topic_data (message sets, magic 0)
    v1   response + throttle_time_ms (magic 0/1 accepted from v2)
    v2   response + log_append_time_ms
    v3   request + transactional_id; record batches (magic 2) only from here
    v4   same as v3 (KAFKA_STORAGE_ERROR may be answered)
    v5   response + log_start_offset
    v6   same as v5
    v7   same as v6 (zstd allowed, KIP-110)
    v8   response + record_errors, error_message (KIP-467)
    v9   flexible
    v10  response tags: current_leader (partition), node_endpoints (KIP-951)
    v11  same as v10 (transaction-V2 error codes may be answered, KIP-890)
    v12  same as v11 (implicit AddPartitionsToTxn, KIP-890 part 2)
    v13  topic_id replaces name (KIP-516)
    not supported: nothing newer exists in Kafka 4.x's definitions (kio 0.6.5).

The broker answers v3-13 (v0-2 only as an older Kafka, ``--kafka-version``): v11's
TRANSACTION_ABORTABLE is handed on from transaction verification, v13's topic ids are
named and given back by kproto.server.topic_ids (an unknown one UNKNOWN_TOPIC_ID); v12's
implicit AddPartitionsToTxn needs transaction V2, which kproto does not finalize, so a
transactional v12+ batch for a partition not added is refused INVALID_TXN_STATE.

Kafka 4.0 rejects v0-2 but still advertises them, because librdkafka <= 2.11.0
drops compression unless Produce's minimum is 0 (KAFKA-18659, librdkafka #4956).
records is raw bytes (a v0/v1 message set or v2 record batches); decode it
with kproto.records.iter_batches. acks=0 requests get no response at all.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    Produce Request v13 (flexible):
      transactional_id COMPACT_NULLABLE_STRING
      acks INT16
      timeout_ms INT32
      topic_data COMPACT_ARRAY of TopicProduceData
        topic_id UUID
        partition_data COMPACT_ARRAY of PartitionProduceData
          index INT32
          records COMPACT_RECORDS
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

    Produce Response v13 (flexible):
      responses COMPACT_ARRAY of TopicProduceResponse
        topic_id UUID
        partition_responses COMPACT_ARRAY of PartitionProduceResponse
          index INT32
          error_code INT16
          base_offset INT64
          log_append_time_ms INT64
          log_start_offset INT64
          record_errors COMPACT_ARRAY of BatchIndexAndErrorMessage
            batch_index INT32
            batch_index_error_message COMPACT_NULLABLE_STRING
            TAG_BUFFER
          error_message COMPACT_NULLABLE_STRING
          TAG_BUFFER {
            [0] current_leader LeaderIdAndEpoch
              leader_id INT32
              leader_epoch INT32
              TAG_BUFFER
          }
        TAG_BUFFER
      throttle_time_ms INT32
      TAG_BUFFER {
        [0] node_endpoints COMPACT_ARRAY of NodeEndpoint
          node_id INT32
          host COMPACT_STRING
          port INT32
          rack COMPACT_NULLABLE_STRING
          TAG_BUFFER
      }

doc-ref: clients/src/main/resources/common/message/Produce{Request,Response}.json;
KIP-98 (transactions), KIP-467, KIP-951.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, RECORDS, STRING, UUID, ApiSpec, ArrayOf, Field, Struct,
)

PARTITION_PRODUCE_DATA = Struct(
    "PartitionProduceData",
    Field("index", INT32, doc="partition number"),
    Field("records", RECORDS, nullable="0+", doc="the batches to append, raw"),
)

TOPIC_PRODUCE_DATA = Struct(
    "TopicProduceData",
    Field("name", STRING, "0-12", doc="topic name"),
    Field("topic_id", UUID, "13+", doc="topic id (replaces the name from v13)"),
    Field("partition_data", ArrayOf(PARTITION_PRODUCE_DATA), doc="per-partition data"),
)

REQUEST = Struct(
    "ProduceRequest",
    Field("transactional_id", STRING, "3+", nullable="3+", default=None,
          doc="transactional producer id, null if not transactional"),
    Field("acks", INT16, doc="0 = no answer, 1 = leader, -1 = all in-sync replicas"),
    Field("timeout_ms", INT32, doc="how long to wait for the acks"),
    Field("topic_data", ArrayOf(TOPIC_PRODUCE_DATA), doc="per-topic data"),
)

BATCH_INDEX_AND_ERROR_MESSAGE = Struct(
    "BatchIndexAndErrorMessage",
    Field("batch_index", INT32, "8+", doc="index of the record that failed, within the batch"),
    Field("batch_index_error_message", STRING, "8+", nullable="8+", default=None,
          doc="why that record failed"),
)

LEADER_ID_AND_EPOCH = Struct(
    "LeaderIdAndEpoch",
    Field("leader_id", INT32, "10+", default=-1, doc="current leader, -1 if unknown"),
    Field("leader_epoch", INT32, "10+", default=-1, doc="its epoch, -1 if unknown"),
)

PARTITION_PRODUCE_RESPONSE = Struct(
    "PartitionProduceResponse",
    Field("index", INT32, doc="partition number"),
    Field("error_code", INT16, doc="0 if appended"),
    Field("base_offset", INT64, doc="offset given to the first record"),
    Field("log_append_time_ms", INT64, "2+", default=-1,
          doc="broker timestamp if the topic uses LogAppendTime, else -1"),
    Field("log_start_offset", INT64, "5+", default=-1, doc="partition's log start offset"),
    Field("record_errors", ArrayOf(BATCH_INDEX_AND_ERROR_MESSAGE), "8+",
          doc="records that made the batch fail"),
    Field("error_message", STRING, "8+", nullable="8+", default=None,
          doc="text for error_code, null if none"),
    Field("current_leader", LEADER_ID_AND_EPOCH, "10+", tag=0,
          doc="new leader, sent with NOT_LEADER_OR_FOLLOWER"),
)

TOPIC_PRODUCE_RESPONSE = Struct(
    "TopicProduceResponse",
    Field("name", STRING, "0-12", doc="topic name"),
    Field("topic_id", UUID, "13+", doc="topic id"),
    Field("partition_responses", ArrayOf(PARTITION_PRODUCE_RESPONSE), doc="per-partition results"),
)

NODE_ENDPOINT = Struct(
    "NodeEndpoint",
    Field("node_id", INT32, "10+", doc="broker id"),
    Field("host", STRING, "10+", doc="broker host"),
    Field("port", INT32, "10+", doc="broker port"),
    Field("rack", STRING, "10+", nullable="10+", default=None, doc="broker rack, null if none"),
)

RESPONSE = Struct(
    "ProduceResponse",
    Field("responses", ArrayOf(TOPIC_PRODUCE_RESPONSE), doc="per-topic results"),
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("node_endpoints", ArrayOf(NODE_ENDPOINT), "10+", tag=0,
          doc="addresses of the leaders named in current_leader"),
)

API = ApiSpec("Produce", key=0, min_version=0, max_version=13, flexible_from=9,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 13))
request = API.request
response = API.response
