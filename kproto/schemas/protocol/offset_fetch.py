"""OffsetFetch (key 9): read a group's committed positions.

Ledger: v0-10 supported; v6+ flexible; the broker answers v0-10 (v1+ unless emulating
an older Kafka: KIP-896).

    v0   group_id, topics (offsets read from ZooKeeper)
    v1   same layout, offsets read from __consumer_offsets
    v2   topics=null means every partition; response + top-level error_code
    v3   response + throttle_time_ms
    v4   same as v3 (the broker answers before throttling)
    v5   response + committed_leader_epoch
    v6   flexible
    v7   request + require_stable (UNSTABLE_OFFSET_COMMIT while a txn is open)
    v8   several groups per request: groups replaces group_id/topics (KIP-709)
    v9   groups + member_id, member_epoch (KIP-848)
    v10  topic_id replaces name (KIP-848): named and given back by
         kproto.server.topic_ids, an unknown id UNKNOWN_TOPIC_ID (nothing committed for it)
    not supported: nothing newer exists in Kafka 4.x's definitions (kio 0.6.5).

Kafka 4.0 removed v0; librdkafka's group consumer needs v1.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    OffsetFetch Request v10 (flexible):
      groups COMPACT_ARRAY of OffsetFetchRequestGroup
        group_id COMPACT_STRING
        member_id COMPACT_NULLABLE_STRING
        member_epoch INT32
        topics COMPACT_NULLABLE_ARRAY of OffsetFetchRequestTopics
          topic_id UUID
          partition_indexes COMPACT_ARRAY of INT32
          TAG_BUFFER
        TAG_BUFFER
      require_stable BOOLEAN
      TAG_BUFFER

    OffsetFetch Response v10 (flexible):
      throttle_time_ms INT32
      groups COMPACT_ARRAY of OffsetFetchResponseGroup
        group_id COMPACT_STRING
        topics COMPACT_ARRAY of OffsetFetchResponseTopics
          topic_id UUID
          partitions COMPACT_ARRAY of OffsetFetchResponsePartitions
            partition_index INT32
            committed_offset INT64
            committed_leader_epoch INT32
            metadata COMPACT_NULLABLE_STRING
            error_code INT16
            TAG_BUFFER
          TAG_BUFFER
        error_code INT16
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/OffsetFetch{Request,Response}.json;
KIP-447 (require_stable), KIP-709, KIP-848.
"""

from kproto.schemas.message import (
    BOOL, INT16, INT32, INT64, STRING, UUID, ApiSpec, ArrayOf, Field, Struct,
)

OFFSET_FETCH_REQUEST_TOPIC = Struct(
    "OffsetFetchRequestTopic",
    Field("name", STRING, "0-7", doc="topic name"),
    Field("partition_indexes", ArrayOf(INT32), "0-7", doc="partitions to read"),
)

OFFSET_FETCH_REQUEST_TOPICS = Struct(
    "OffsetFetchRequestTopics",
    Field("name", STRING, "8-9", doc="topic name"),
    Field("topic_id", UUID, "10+", doc="topic id"),
    Field("partition_indexes", ArrayOf(INT32), "8+", doc="partitions to read"),
)

OFFSET_FETCH_REQUEST_GROUP = Struct(
    "OffsetFetchRequestGroup",
    Field("group_id", STRING, "8+", doc="the group"),
    Field("member_id", STRING, "9+", nullable="9+", default=None, doc="KIP-848 member, null if none"),
    Field("member_epoch", INT32, "9+", default=-1, doc="KIP-848 member epoch, -1 if none"),
    Field("topics", ArrayOf(OFFSET_FETCH_REQUEST_TOPICS), "8+", nullable="8+",
          doc="what to read, null for everything"),
)

REQUEST = Struct(
    "OffsetFetchRequest",
    Field("group_id", STRING, "0-7", doc="the group"),
    Field("topics", ArrayOf(OFFSET_FETCH_REQUEST_TOPIC), "0-7", nullable="2-7",
          doc="what to read, null for everything (v2+)"),
    Field("groups", ArrayOf(OFFSET_FETCH_REQUEST_GROUP), "8+", doc="groups to read (v8+)"),
    Field("require_stable", BOOL, "7+", default=False,
          doc="fail partitions with pending transactional commits"),
)

OFFSET_FETCH_RESPONSE_PARTITION = Struct(
    "OffsetFetchResponsePartition",
    Field("partition_index", INT32, "0-7", doc="partition number"),
    Field("committed_offset", INT64, "0-7", doc="committed offset, -1 if none"),
    Field("committed_leader_epoch", INT32, "5-7", default=-1, doc="epoch stored with it"),
    Field("metadata", STRING, "0-7", nullable="0-7", doc="client's note stored with it"),
    Field("error_code", INT16, "0-7", doc="0 if read"),
)

OFFSET_FETCH_RESPONSE_TOPIC = Struct(
    "OffsetFetchResponseTopic",
    Field("name", STRING, "0-7", doc="topic name"),
    Field("partitions", ArrayOf(OFFSET_FETCH_RESPONSE_PARTITION), "0-7", doc="per-partition offsets"),
)

OFFSET_FETCH_RESPONSE_PARTITIONS = Struct(
    "OffsetFetchResponsePartitions",
    Field("partition_index", INT32, "8+", doc="partition number"),
    Field("committed_offset", INT64, "8+", doc="committed offset, -1 if none"),
    Field("committed_leader_epoch", INT32, "8+", default=-1, doc="epoch stored with it"),
    Field("metadata", STRING, "8+", nullable="8+", doc="client's note stored with it"),
    Field("error_code", INT16, "8+", doc="0 if read"),
)

OFFSET_FETCH_RESPONSE_TOPICS = Struct(
    "OffsetFetchResponseTopics",
    Field("name", STRING, "8-9", doc="topic name"),
    Field("topic_id", UUID, "10+", doc="topic id"),
    Field("partitions", ArrayOf(OFFSET_FETCH_RESPONSE_PARTITIONS), "8+", doc="per-partition offsets"),
)

OFFSET_FETCH_RESPONSE_GROUP = Struct(
    "OffsetFetchResponseGroup",
    Field("group_id", STRING, "8+", doc="the group"),
    Field("topics", ArrayOf(OFFSET_FETCH_RESPONSE_TOPICS), "8+", doc="per-topic offsets"),
    Field("error_code", INT16, "8+", default=0, doc="group-level error, 0 if none"),
)

RESPONSE = Struct(
    "OffsetFetchResponse",
    Field("throttle_time_ms", INT32, "3+", doc="quota throttle applied, in ms"),
    Field("topics", ArrayOf(OFFSET_FETCH_RESPONSE_TOPIC), "0-7", doc="per-topic offsets (v0-7)"),
    Field("error_code", INT16, "2-7", default=0, doc="group-level error, 0 if none"),
    Field("groups", ArrayOf(OFFSET_FETCH_RESPONSE_GROUP), "8+", doc="per-group offsets (v8+)"),
)

API = ApiSpec("OffsetFetch", key=9, min_version=0, max_version=10, flexible_from=6,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 10))
request = API.request
response = API.response
