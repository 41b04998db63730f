"""OffsetForLeaderEpoch (key 23): end offset of a leader epoch, to detect log truncation.

Ledger: v0-4 supported; v4+ flexible. kproto's broker answers v2-4 (ApiSpec.served):
Kafka 4 no longer serves v0-1 (KIP-896).

    v0   topics/partitions with leader_epoch; response error_code, end_offset
    v1   response + leader_epoch
    v2   request + current_leader_epoch (fencing, KIP-320); response + throttle_time_ms
    v3   request + replica_id (followers: their id; consumers -1; -2, the default,
         is a debug reader allowed past the high watermark)
    v4   flexible
    not supported: nothing newer exists in Kafka 4.x's definitions.

Consumers (librdkafka v2, kafka-python up to v4) send it after a leader change
to validate their position (KIP-320). Kafka 4.0 removed v0-1.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    OffsetForLeaderEpoch Request v4 (flexible):
      replica_id INT32
      topics COMPACT_ARRAY of OffsetForLeaderTopic
        topic COMPACT_STRING
        partitions COMPACT_ARRAY of OffsetForLeaderPartition
          partition INT32
          current_leader_epoch INT32
          leader_epoch INT32
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

    OffsetForLeaderEpoch Response v4 (flexible):
      throttle_time_ms INT32
      topics COMPACT_ARRAY of OffsetForLeaderTopicResult
        topic COMPACT_STRING
        partitions COMPACT_ARRAY of EpochEndOffset
          error_code INT16
          partition INT32
          leader_epoch INT32
          end_offset INT64
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/OffsetForLeaderEpoch{Request,Response}.json;
KIP-101, KIP-279, KIP-320.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, STRING, ApiSpec, ArrayOf, Field, Struct,
)

OFFSET_FOR_LEADER_PARTITION = Struct(
    "OffsetForLeaderPartition",
    Field("partition", INT32, doc="partition number"),
    Field("current_leader_epoch", INT32, "2+", default=-1, doc="leader epoch known, -1 to skip"),
    Field("leader_epoch", INT32, doc="epoch whose end offset is wanted"),
)

OFFSET_FOR_LEADER_TOPIC = Struct(
    "OffsetForLeaderTopic",
    Field("topic", STRING, doc="topic name"),
    Field("partitions", ArrayOf(OFFSET_FOR_LEADER_PARTITION), doc="partitions to look up"),
)

REQUEST = Struct(
    "OffsetForLeaderEpochRequest",
    Field("replica_id", INT32, "3+", default=-2, doc="follower's id; -1 consumer, -2 debug reader"),
    Field("topics", ArrayOf(OFFSET_FOR_LEADER_TOPIC), doc="topics to look up"),
)

EPOCH_END_OFFSET = Struct(
    "EpochEndOffset",
    Field("error_code", INT16, doc="0 if found"),
    Field("partition", INT32, doc="partition number"),
    Field("leader_epoch", INT32, "1+", default=-1, doc="largest epoch <= the one asked"),
    Field("end_offset", INT64, default=-1, doc="end offset of that epoch"),
)

OFFSET_FOR_LEADER_TOPIC_RESULT = Struct(
    "OffsetForLeaderTopicResult",
    Field("topic", STRING, doc="topic name"),
    Field("partitions", ArrayOf(EPOCH_END_OFFSET), doc="per-partition results"),
)

RESPONSE = Struct(
    "OffsetForLeaderEpochResponse",
    Field("throttle_time_ms", INT32, "2+", doc="quota throttle applied, in ms"),
    Field("topics", ArrayOf(OFFSET_FOR_LEADER_TOPIC_RESULT), doc="per-topic results"),
)

API = ApiSpec("OffsetForLeaderEpoch", key=23, min_version=0, max_version=4, flexible_from=4,
              request_schema=REQUEST, response_schema=RESPONSE, served=(2, 4))
request = API.request
response = API.response
