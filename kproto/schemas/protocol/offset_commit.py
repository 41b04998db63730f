"""OffsetCommit (key 8): store a group's consumed positions.

Ledger: v0-10 supported; v8+ flexible; the broker answers v0-10 (v2+ unless emulating
an older Kafka: KIP-896).

    v0   group_id, topics (offsets were stored in ZooKeeper)
    v1   + generation_id_or_member_epoch, member_id; per-partition commit_timestamp
    v2   retention_time_ms replaces commit_timestamp (offsets in __consumer_offsets)
    v3   response + throttle_time_ms
    v4   same as v3 (the broker answers before throttling)
    v5   retention_time_ms removed (broker config only)
    v6   + committed_leader_epoch (KIP-320)
    v7   + group_instance_id (static membership, KIP-345)
    v8   flexible
    v9   same as v8; usable with the KIP-848 consumer protocol (member epoch)
    v10  topic_id replaces name (KIP-848): named and given back by
         kproto.server.topic_ids, an unknown id UNKNOWN_TOPIC_ID (nothing committed for it)
    not supported: nothing newer exists in Kafka 4.x's definitions (kio 0.6.5).

Kafka 4.0 removed v0-1; librdkafka's group consumer probes 1..2, aiokafka uses 2-3.
Expiry differs by version: v2-4 carry a retention, v5+ rely on the broker's
offsets.retention.minutes (redpanda #2904).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    OffsetCommit Request v10 (flexible):
      group_id COMPACT_STRING
      generation_id_or_member_epoch INT32
      member_id COMPACT_STRING
      group_instance_id COMPACT_NULLABLE_STRING
      topics COMPACT_ARRAY of OffsetCommitRequestTopic
        topic_id UUID
        partitions COMPACT_ARRAY of OffsetCommitRequestPartition
          partition_index INT32
          committed_offset INT64
          committed_leader_epoch INT32
          committed_metadata COMPACT_NULLABLE_STRING
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

    OffsetCommit Response v10 (flexible):
      throttle_time_ms INT32
      topics COMPACT_ARRAY of OffsetCommitResponseTopic
        topic_id UUID
        partitions COMPACT_ARRAY of OffsetCommitResponsePartition
          partition_index INT32
          error_code INT16
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/OffsetCommit{Request,Response}.json;
KIP-211 (retention), KIP-320, KIP-345, KIP-848.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, STRING, UUID, ApiSpec, ArrayOf, Field, Struct,
)

OFFSET_COMMIT_REQUEST_PARTITION = Struct(
    "OffsetCommitRequestPartition",
    Field("partition_index", INT32, doc="partition number"),
    Field("committed_offset", INT64, doc="next offset to consume"),
    Field("committed_leader_epoch", INT32, "6+", default=-1, doc="epoch of the last consumed record"),
    Field("commit_timestamp", INT64, "1", default=-1, doc="v1: commit time, -1 = broker's now"),
    Field("committed_metadata", STRING, nullable="0+", doc="client's free-form note"),
)

OFFSET_COMMIT_REQUEST_TOPIC = Struct(
    "OffsetCommitRequestTopic",
    Field("name", STRING, "0-9", doc="topic name"),
    Field("topic_id", UUID, "10+", doc="topic id (replaces the name from v10)"),
    Field("partitions", ArrayOf(OFFSET_COMMIT_REQUEST_PARTITION), doc="offsets to commit"),
)

REQUEST = Struct(
    "OffsetCommitRequest",
    Field("group_id", STRING, doc="the group"),
    Field("generation_id_or_member_epoch", INT32, "1+", default=-1,
          doc="classic generation or KIP-848 member epoch; -1 for simple consumers"),
    Field("member_id", STRING, "1+", doc="committing member, empty for simple consumers"),
    Field("group_instance_id", STRING, "7+", nullable="7+", default=None,
          doc="static member id, null if dynamic"),
    Field("retention_time_ms", INT64, "2-4", default=-1,
          doc="how long to keep the offsets, -1 = broker default"),
    Field("topics", ArrayOf(OFFSET_COMMIT_REQUEST_TOPIC), doc="offsets by topic"),
)

OFFSET_COMMIT_RESPONSE_PARTITION = Struct(
    "OffsetCommitResponsePartition",
    Field("partition_index", INT32, doc="partition number"),
    Field("error_code", INT16, doc="0 if stored"),
)

OFFSET_COMMIT_RESPONSE_TOPIC = Struct(
    "OffsetCommitResponseTopic",
    Field("name", STRING, "0-9", doc="topic name"),
    Field("topic_id", UUID, "10+", doc="topic id"),
    Field("partitions", ArrayOf(OFFSET_COMMIT_RESPONSE_PARTITION), doc="per-partition results"),
)

RESPONSE = Struct(
    "OffsetCommitResponse",
    Field("throttle_time_ms", INT32, "3+", doc="quota throttle applied, in ms"),
    Field("topics", ArrayOf(OFFSET_COMMIT_RESPONSE_TOPIC), doc="per-topic results"),
)

API = ApiSpec("OffsetCommit", key=8, min_version=0, max_version=10, flexible_from=8,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 10))
request = API.request
response = API.response
