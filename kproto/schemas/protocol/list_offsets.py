"""ListOffsets (key 2): offsets by timestamp (earliest, latest, max timestamp...).

Ledger: v0-11 supported; v6+ flexible.

    v0   request max_num_offsets; response old_style_offsets (a list)
    v1   one offset per partition: response timestamp + offset
    v2   request + isolation_level; response + throttle_time_ms
    v3   same as v2
    v4   request current_leader_epoch; response leader_epoch (KIP-320)
    v5   same as v4 (OFFSET_NOT_AVAILABLE may be answered)
    v6   flexible
    v7   timestamp -3 = max timestamp (KIP-734)
    v8   timestamp -4 = earliest local offset (KIP-405)
    v9   timestamp -5 = latest tiered offset (KIP-1005)
    v10  request + timeout_ms (KIP-1075)
    v11  a timestamp for the earliest offset not yet uploaded (KIP-1023)
    not supported: nothing newer exists in Kafka 4.x's definitions.

Timestamps: -1 latest, -2 earliest, then the KIP-specific negatives above.
Kafka 4.0 removed v0; aiokafka uses 0-3, librdkafka 2.0.2 <= 2.

The broker answers v1-11 (v0 only as an older Kafka, ``--kafka-version``). Without
tiered storage (UnifiedLog.fetchOffsetByTimestamp, remote log disabled): -4 is the log
start, -5 (latest tiered, v9) and -6 (earliest pending upload, v11) find no offset (-1);
v10's timeout_ms bounds a remote lookup, which never happens here.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    ListOffsets Request v11 (flexible):
      replica_id INT32
      isolation_level INT8
      topics COMPACT_ARRAY of ListOffsetsTopic
        name COMPACT_STRING
        partitions COMPACT_ARRAY of ListOffsetsPartition
          partition_index INT32
          current_leader_epoch INT32
          timestamp INT64
          TAG_BUFFER
        TAG_BUFFER
      timeout_ms INT32
      TAG_BUFFER

    ListOffsets Response v11 (flexible):
      throttle_time_ms INT32
      topics COMPACT_ARRAY of ListOffsetsTopicResponse
        name COMPACT_STRING
        partitions COMPACT_ARRAY of ListOffsetsPartitionResponse
          partition_index INT32
          error_code INT16
          timestamp INT64
          offset INT64
          leader_epoch INT32
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/ListOffsets{Request,Response}.json;
KIP-79, KIP-98, KIP-320, KIP-734.
"""

from kproto.schemas.message import (
    INT8, INT16, INT32, INT64, STRING, ApiSpec, ArrayOf, Field, Struct,
)

LIST_OFFSETS_PARTITION = Struct(
    "ListOffsetsPartition",
    Field("partition_index", INT32, doc="partition number"),
    Field("current_leader_epoch", INT32, "4+", default=-1, doc="leader epoch known, -1 to skip"),
    Field("timestamp", INT64, doc="wanted time in ms, or -1 latest, -2 earliest, ..."),
    Field("max_num_offsets", INT32, "0", default=1, doc="v0: how many offsets to list"),
)

LIST_OFFSETS_TOPIC = Struct(
    "ListOffsetsTopic",
    Field("name", STRING, doc="topic name"),
    Field("partitions", ArrayOf(LIST_OFFSETS_PARTITION), doc="partitions to look up"),
)

REQUEST = Struct(
    "ListOffsetsRequest",
    # Kafka's JSON has no default (0, a broker id); every client sends -1
    # (consumer). -1 here so an omitted field cannot impersonate broker 0.
    Field("replica_id", INT32, default=-1, doc="broker id of a follower, -1 for consumers"),
    Field("isolation_level", INT8, "2+", doc="0 read_uncommitted, 1 read_committed"),
    Field("topics", ArrayOf(LIST_OFFSETS_TOPIC), doc="topics to look up"),
    Field("timeout_ms", INT32, "10+", doc="how long to wait for tiered-storage lookups"),
)

LIST_OFFSETS_PARTITION_RESPONSE = Struct(
    "ListOffsetsPartitionResponse",
    Field("partition_index", INT32, doc="partition number"),
    Field("error_code", INT16, doc="0 if found"),
    Field("old_style_offsets", ArrayOf(INT64), "0", doc="v0: the offsets found"),
    Field("timestamp", INT64, "1+", default=-1, doc="timestamp of the offset found, -1 if none"),
    Field("offset", INT64, "1+", default=-1, doc="the offset found, -1 if none"),
    Field("leader_epoch", INT32, "4+", default=-1, doc="epoch of that offset"),
)

LIST_OFFSETS_TOPIC_RESPONSE = Struct(
    "ListOffsetsTopicResponse",
    Field("name", STRING, doc="topic name"),
    Field("partitions", ArrayOf(LIST_OFFSETS_PARTITION_RESPONSE), doc="per-partition results"),
)

RESPONSE = Struct(
    "ListOffsetsResponse",
    Field("throttle_time_ms", INT32, "2+", doc="quota throttle applied, in ms"),
    Field("topics", ArrayOf(LIST_OFFSETS_TOPIC_RESPONSE), doc="per-topic results"),
)

API = ApiSpec("ListOffsets", key=2, min_version=0, max_version=11, flexible_from=6,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 11))
request = API.request
response = API.response
