"""Metadata (key 3): brokers, topics, partitions and their leaders.

Ledger: v0-13 supported; v9+ flexible.

    v0   topics=[] means every topic
    v1   topics=null means every topic, [] none; response + rack, controller_id, is_internal
    v2   response + cluster_id
    v3   response + throttle_time_ms
    v4   request + allow_auto_topic_creation
    v5   response + offline_replicas
    v6   same as v5 (the broker answers before throttling)
    v7   response + leader_epoch
    v8   authorized-operation bitfields, on request
    v9   flexible
    v10  topic ids (request topic_id; names nullable; Kafka did not serve by id until v12)
    v11  cluster-level authorized operations dropped (moved to DescribeCluster, KIP-700)
    v12  lookup by topic id; response topic name nullable
    v13  response + top-level error_code
    not supported: nothing newer exists in Kafka 4.x's definitions.

librdkafka 2.0.2 sends <= 4, librdkafka 2.16 <= 13 (<= 10 when it asks for
cluster authorized operations), kafka-python <= 13, aiokafka 0-5.

The broker answers v0-13: v13's top-level error_code (KIP-1102) is Kafka's for
REBOOTSTRAP_REQUIRED, which a single node never asks for: 0.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    Metadata Request v13 (flexible):
      topics COMPACT_NULLABLE_ARRAY of MetadataRequestTopic
        topic_id UUID
        name COMPACT_NULLABLE_STRING
        TAG_BUFFER
      allow_auto_topic_creation BOOLEAN
      include_topic_authorized_operations BOOLEAN
      TAG_BUFFER

    Metadata Response v13 (flexible):
      throttle_time_ms INT32
      brokers COMPACT_ARRAY of MetadataResponseBroker
        node_id INT32
        host COMPACT_STRING
        port INT32
        rack COMPACT_NULLABLE_STRING
        TAG_BUFFER
      cluster_id COMPACT_NULLABLE_STRING
      controller_id INT32
      topics COMPACT_ARRAY of MetadataResponseTopic
        error_code INT16
        name COMPACT_NULLABLE_STRING
        topic_id UUID
        is_internal BOOLEAN
        partitions COMPACT_ARRAY of MetadataResponsePartition
          error_code INT16
          partition_index INT32
          leader_id INT32
          leader_epoch INT32
          replica_nodes COMPACT_ARRAY of INT32
          isr_nodes COMPACT_ARRAY of INT32
          offline_replicas COMPACT_ARRAY of INT32
          TAG_BUFFER
        topic_authorized_operations INT32
        TAG_BUFFER
      error_code INT16
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/Metadata{Request,Response}.json;
KIP-320 (leader epoch), KIP-430 (authorized operations), KIP-516 (topic ids), KIP-700.
"""

from kproto.schemas.message import (
    BOOL, INT16, INT32, STRING, UUID, ApiSpec, ArrayOf, Field, Struct,
)

_NO_OPS = -2**31  # authorized-operations bitfield "not requested"

METADATA_REQUEST_TOPIC = Struct(
    "MetadataRequestTopic",
    Field("topic_id", UUID, "10+", doc="topic to describe by id (zero: use the name)"),
    Field("name", STRING, nullable="10+", doc="topic to describe by name"),
)

REQUEST = Struct(
    "MetadataRequest",
    Field("topics", ArrayOf(METADATA_REQUEST_TOPIC), nullable="1+",
          doc="topics to describe; null = all (v1+), [] = all in v0, none from v1"),
    Field("allow_auto_topic_creation", BOOL, "4+", default=True,
          doc="let the broker create missing topics, if it is configured to"),
    Field("include_cluster_authorized_operations", BOOL, "8-10",
          doc="ask for the cluster's authorized-operations bitfield"),
    Field("include_topic_authorized_operations", BOOL, "8+",
          doc="ask for each topic's authorized-operations bitfield"),
)

METADATA_RESPONSE_BROKER = Struct(
    "MetadataResponseBroker",
    Field("node_id", INT32, doc="broker id"),
    Field("host", STRING, doc="advertised host name"),
    Field("port", INT32, doc="advertised port"),
    Field("rack", STRING, "1+", nullable="1+", default=None, doc="rack, null if unassigned"),
)

METADATA_RESPONSE_PARTITION = Struct(
    "MetadataResponsePartition",
    Field("error_code", INT16, doc="partition-level error, 0 if none"),
    Field("partition_index", INT32, doc="partition number"),
    Field("leader_id", INT32, doc="leader broker id, -1 if none"),
    Field("leader_epoch", INT32, "7+", default=-1, doc="leader epoch, -1 if unknown"),
    Field("replica_nodes", ArrayOf(INT32), doc="brokers holding a replica"),
    Field("isr_nodes", ArrayOf(INT32), doc="replicas in sync with the leader"),
    Field("offline_replicas", ArrayOf(INT32), "5+", doc="replicas on offline log dirs"),
)

METADATA_RESPONSE_TOPIC = Struct(
    "MetadataResponseTopic",
    Field("error_code", INT16, doc="topic-level error, 0 if none"),
    Field("name", STRING, nullable="12+", doc="topic name; null for an unknown id"),
    Field("topic_id", UUID, "10+", doc="topic id; zero for an unknown name"),
    Field("is_internal", BOOL, "1+", default=False, doc="internal topic (__consumer_offsets...)"),
    Field("partitions", ArrayOf(METADATA_RESPONSE_PARTITION), doc="the topic's partitions"),
    Field("topic_authorized_operations", INT32, "8+", default=_NO_OPS,
          doc="bitfield of allowed ACL operations, -2^31 if not asked"),
)

RESPONSE = Struct(
    "MetadataResponse",
    Field("throttle_time_ms", INT32, "3+", doc="quota throttle applied, in ms"),
    Field("brokers", ArrayOf(METADATA_RESPONSE_BROKER), doc="live brokers"),
    Field("cluster_id", STRING, "2+", nullable="2+", default=None, doc="cluster id, null if unknown"),
    Field("controller_id", INT32, "1+", default=-1,
          doc="controller's broker id (kafka-python sends CreateTopics there)"),
    Field("topics", ArrayOf(METADATA_RESPONSE_TOPIC), doc="the topics asked for"),
    Field("cluster_authorized_operations", INT32, "8-10", default=_NO_OPS,
          doc="bitfield of allowed cluster operations, -2^31 if not asked"),
    Field("error_code", INT16, "13+", doc="top-level error, 0 if none"),
)

API = ApiSpec("Metadata", key=3, min_version=0, max_version=13, flexible_from=9,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 13))
request = API.request
response = API.response
