"""Fetch (key 1): read record batches from partitions.

Ledger: v0-18 supported; v12+ flexible; the broker answers v0-18.

    v0   replica_id, max_wait_ms, min_bytes, topics
    v1   response + throttle_time_ms (v2: magic 1 allowed)
    v3   request + max_bytes (partition order matters from here)
    v4   request + isolation_level; response + last_stable_offset,
         aborted_transactions (magic 2 from here)
    v5   + log_start_offset (both sides)
    v6   same as v5
    v7   fetch sessions (KIP-227): session_id, session_epoch,
         forgotten_topics_data; response + error_code, session_id
    v8   same as v7
    v9   request + current_leader_epoch (KIP-320)
    v10  same as v9 (zstd data, KIP-110)
    v11  request + rack_id; response + preferred_read_replica (KIP-392)
    v12  flexible; last_fetched_epoch; tags cluster_id (request),
         diverging_epoch, current_leader, snapshot_id (response)
    v13  topic ids replace topic names (KIP-516)
    v14  same as v13
    v15  replica_state tag replaces replica_id (KIP-903)
    v16  response tag node_endpoints (KIP-951)
    v17  request tag replica_directory_id (KIP-853; followers only)
    v18  request tag high_watermark (KIP-1166; followers only)
    not supported: nothing newer exists in Kafka 4.x's definitions (kio 0.6.5).

The broker answers v4-18 (v0-3 only as an older Kafka, ``--kafka-version``): v13+'s
topic ids are named and given back by kproto.server.topic_ids (an unknown one
UNKNOWN_TOPIC_ID); v15's replica_state and v17-18's tags are a follower's, which this
single node never has (consumers send replica id -1); v16's node_endpoints go with a
current_leader it never moves.

Kafka 4.0 removed v0-3. librdkafka 2.16 fetches by topic id (v13+) when
Metadata gave it ids, else stays at v12. records is raw bytes; decode it
with kproto.records.iter_batches (a trailing batch may be cut short).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    Fetch Request v18 (flexible):
      max_wait_ms INT32
      min_bytes INT32
      max_bytes INT32
      isolation_level INT8
      session_id INT32
      session_epoch INT32
      topics COMPACT_ARRAY of FetchTopic
        topic_id UUID
        partitions COMPACT_ARRAY of FetchPartition
          partition INT32
          current_leader_epoch INT32
          fetch_offset INT64
          last_fetched_epoch INT32
          log_start_offset INT64
          partition_max_bytes INT32
          TAG_BUFFER {
            [0] replica_directory_id UUID
            [1] high_watermark INT64
          }
        TAG_BUFFER
      forgotten_topics_data COMPACT_ARRAY of ForgottenTopic
        topic_id UUID
        partitions COMPACT_ARRAY of INT32
        TAG_BUFFER
      rack_id COMPACT_STRING
      TAG_BUFFER {
        [0] cluster_id COMPACT_NULLABLE_STRING
        [1] replica_state ReplicaState
          replica_id INT32
          replica_epoch INT64
          TAG_BUFFER
      }

    Fetch Response v18 (flexible):
      throttle_time_ms INT32
      error_code INT16
      session_id INT32
      responses COMPACT_ARRAY of FetchableTopicResponse
        topic_id UUID
        partitions COMPACT_ARRAY of PartitionData
          partition_index INT32
          error_code INT16
          high_watermark INT64
          last_stable_offset INT64
          log_start_offset INT64
          aborted_transactions COMPACT_NULLABLE_ARRAY of AbortedTransaction
            producer_id INT64
            first_offset INT64
            TAG_BUFFER
          preferred_read_replica INT32
          records COMPACT_RECORDS
          TAG_BUFFER {
            [0] diverging_epoch EpochEndOffset
              epoch INT32
              end_offset INT64
              TAG_BUFFER
            [1] current_leader LeaderIdAndEpoch
              leader_id INT32
              leader_epoch INT32
              TAG_BUFFER
            [2] snapshot_id SnapshotId
              end_offset INT64
              epoch INT32
              TAG_BUFFER
          }
        TAG_BUFFER
      TAG_BUFFER {
        [0] node_endpoints COMPACT_ARRAY of NodeEndpoint
          node_id INT32
          host COMPACT_STRING
          port INT32
          rack COMPACT_NULLABLE_STRING
          TAG_BUFFER
      }

doc-ref: clients/src/main/resources/common/message/Fetch{Request,Response}.json;
KIP-74, KIP-227, KIP-320, KIP-392, KIP-516, KIP-595, KIP-903, KIP-951.
"""

from kproto.schemas.message import (
    INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, ApiSpec, ArrayOf, Field, Struct,
)

REPLICA_STATE = Struct(
    "ReplicaState",
    Field("replica_id", INT32, "15+", default=-1, doc="follower's broker id, -1 for consumers"),
    Field("replica_epoch", INT64, "15+", default=-1, doc="follower's broker epoch"),
)

FETCH_PARTITION = Struct(
    "FetchPartition",
    Field("partition", INT32, doc="partition number"),
    Field("current_leader_epoch", INT32, "9+", default=-1,
          doc="leader epoch the fetcher knows, for fencing; -1 to skip"),
    Field("fetch_offset", INT64, doc="first offset wanted"),
    Field("last_fetched_epoch", INT32, "12+", default=-1,
          doc="epoch of the last batch fetched, for divergence checks"),
    Field("log_start_offset", INT64, "5+", default=-1, doc="follower's log start offset"),
    Field("partition_max_bytes", INT32, doc="byte budget for this partition"),
    Field("replica_directory_id", UUID, "17+", tag=0, doc="follower's log directory id"),
    Field("high_watermark", INT64, "18+", default=2**63 - 1, tag=1,
          doc="follower's high watermark"),
)

FETCH_TOPIC = Struct(
    "FetchTopic",
    Field("topic", STRING, "0-12", doc="topic name"),
    Field("topic_id", UUID, "13+", doc="topic id"),
    Field("partitions", ArrayOf(FETCH_PARTITION), doc="partitions to read"),
)

FORGOTTEN_TOPIC = Struct(
    "ForgottenTopic",
    Field("topic", STRING, "7-12", doc="topic name"),
    Field("topic_id", UUID, "13+", doc="topic id"),
    Field("partitions", ArrayOf(INT32), "7+", doc="partitions to drop from the session"),
)

REQUEST = Struct(
    "FetchRequest",
    Field("cluster_id", STRING, "12+", nullable="12+", default=None, tag=0,
          doc="cluster the sender expects (KRaft), null if any"),
    Field("replica_id", INT32, "0-14", default=-1, doc="follower's broker id, -1 for consumers"),
    Field("replica_state", REPLICA_STATE, "15+", tag=1, doc="follower identity (v15+)"),
    Field("max_wait_ms", INT32, doc="longest the broker may wait for min_bytes"),
    Field("min_bytes", INT32, doc="answer once this many bytes are ready"),
    Field("max_bytes", INT32, "3+", default=0x7FFFFFFF, doc="byte budget for the whole response"),
    Field("isolation_level", INT8, "4+", doc="0 read_uncommitted, 1 read_committed"),
    Field("session_id", INT32, "7+", doc="fetch session id, 0 for none"),
    Field("session_epoch", INT32, "7+", default=-1, doc="fetch session epoch, -1 for none"),
    Field("topics", ArrayOf(FETCH_TOPIC), doc="topics to read"),
    Field("forgotten_topics_data", ArrayOf(FORGOTTEN_TOPIC), "7+",
          doc="partitions to remove from an incremental session"),
    Field("rack_id", STRING, "11+", default="", doc="consumer's rack, for nearest-replica reads"),
)

EPOCH_END_OFFSET = Struct(
    "EpochEndOffset",
    Field("epoch", INT32, "12+", default=-1, doc="largest epoch not diverging"),
    Field("end_offset", INT64, "12+", default=-1, doc="end offset of that epoch"),
)

LEADER_ID_AND_EPOCH = Struct(
    "LeaderIdAndEpoch",
    Field("leader_id", INT32, "12+", default=-1, doc="current leader, -1 if unknown"),
    Field("leader_epoch", INT32, "12+", default=-1, doc="its epoch, -1 if unknown"),
)

SNAPSHOT_ID = Struct(
    "SnapshotId",
    Field("end_offset", INT64, default=-1, doc="snapshot end offset"),
    Field("epoch", INT32, default=-1, doc="snapshot epoch"),
)

ABORTED_TRANSACTION = Struct(
    "AbortedTransaction",
    Field("producer_id", INT64, "4+", doc="producer of the aborted transaction"),
    Field("first_offset", INT64, "4+", doc="first offset of that transaction"),
)

PARTITION_DATA = Struct(
    "PartitionData",
    Field("partition_index", INT32, doc="partition number"),
    Field("error_code", INT16, doc="0 if the read worked"),
    Field("high_watermark", INT64, doc="offset after the last committed record"),
    Field("last_stable_offset", INT64, "4+", default=-1,
          doc="offset below which every transaction is decided"),
    Field("log_start_offset", INT64, "5+", default=-1, doc="first offset still in the log"),
    Field("diverging_epoch", EPOCH_END_OFFSET, "12+", tag=0,
          doc="where the fetcher's log diverges from the leader's"),
    Field("current_leader", LEADER_ID_AND_EPOCH, "12+", tag=1,
          doc="new leader, sent with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH"),
    Field("snapshot_id", SNAPSHOT_ID, "12+", tag=2,
          doc="snapshot to fetch when the offset is below the log start (KRaft)"),
    Field("aborted_transactions", ArrayOf(ABORTED_TRANSACTION), "4+", nullable="4+",
          doc="aborted transactions in the returned range (read_committed)"),
    Field("preferred_read_replica", INT32, "11+", default=-1,
          doc="replica to fetch from next, -1 for the leader"),
    Field("records", RECORDS, nullable="0+", doc="record batches, raw; may end with a partial batch"),
)

FETCHABLE_TOPIC_RESPONSE = Struct(
    "FetchableTopicResponse",
    Field("topic", STRING, "0-12", doc="topic name"),
    Field("topic_id", UUID, "13+", doc="topic id"),
    Field("partitions", ArrayOf(PARTITION_DATA), doc="per-partition data"),
)

NODE_ENDPOINT = Struct(
    "NodeEndpoint",
    Field("node_id", INT32, "16+", doc="broker id"),
    Field("host", STRING, "16+", doc="broker host"),
    Field("port", INT32, "16+", doc="broker port"),
    Field("rack", STRING, "16+", nullable="16+", default=None, doc="broker rack, null if none"),
)

RESPONSE = Struct(
    "FetchResponse",
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("error_code", INT16, "7+", doc="top-level (session) error, 0 if none"),
    Field("session_id", INT32, "7+", default=0, doc="fetch session id, 0 if none"),
    Field("responses", ArrayOf(FETCHABLE_TOPIC_RESPONSE), doc="per-topic data"),
    Field("node_endpoints", ArrayOf(NODE_ENDPOINT), "16+", tag=0,
          doc="addresses of the leaders named in current_leader"),
)

API = ApiSpec("Fetch", key=1, min_version=0, max_version=18, flexible_from=12,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 18))
request = API.request
response = API.response
