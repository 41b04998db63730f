"""CreateTopics (key 19): create topics with partitions, replicas and configs.

Ledger: v0-7 supported; v5+ flexible.

    v0   topics (name, num_partitions, replication_factor, assignments, configs), timeout_ms
    v1   request + validate_only; response + error_message
    v2   response + throttle_time_ms
    v3   same as v2 (the broker answers before throttling)
    v4   -1 partitions / replication factor = broker defaults (KIP-464)
    v5   flexible; response returns partitions, replication factor and configs
         (KIP-525), tag topic_config_error_code
    v6   same as v5 (THROTTLING_QUOTA_EXCEEDED may be answered, KIP-599)
    v7   response + topic_id (KIP-516)
    not supported: nothing newer exists in Kafka 4.x's definitions.

Kafka 4.0 removed v0-1 (aiokafka uses 0-3). kafka-python sends this to the
controller named by Metadata.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    CreateTopics Request v7 (flexible):
      topics COMPACT_ARRAY of CreatableTopic
        name COMPACT_STRING
        num_partitions INT32
        replication_factor INT16
        assignments COMPACT_ARRAY of CreatableReplicaAssignment
          partition_index INT32
          broker_ids COMPACT_ARRAY of INT32
          TAG_BUFFER
        configs COMPACT_ARRAY of CreatableTopicConfig
          name COMPACT_STRING
          value COMPACT_NULLABLE_STRING
          TAG_BUFFER
        TAG_BUFFER
      timeout_ms INT32
      validate_only BOOLEAN
      TAG_BUFFER

    CreateTopics Response v7 (flexible):
      throttle_time_ms INT32
      topics COMPACT_ARRAY of CreatableTopicResult
        name COMPACT_STRING
        topic_id UUID
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        num_partitions INT32
        replication_factor INT16
        configs COMPACT_NULLABLE_ARRAY of CreatableTopicConfigs
          name COMPACT_STRING
          value COMPACT_NULLABLE_STRING
          read_only BOOLEAN
          config_source INT8
          is_sensitive BOOLEAN
          TAG_BUFFER
        TAG_BUFFER {
          [0] topic_config_error_code INT16
        }
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/CreateTopics{Request,Response}.json;
KIP-4, KIP-464, KIP-525, KIP-599.
"""

from kproto.schemas.message import (
    BOOL, INT8, INT16, INT32, STRING, UUID, ApiSpec, ArrayOf, Field, Struct,
)

CREATABLE_REPLICA_ASSIGNMENT = Struct(
    "CreatableReplicaAssignment",
    Field("partition_index", INT32, doc="partition number"),
    Field("broker_ids", ArrayOf(INT32), doc="replica brokers, leader first"),
)

CREATABLE_TOPIC_CONFIG = Struct(
    "CreatableTopicConfig",
    Field("name", STRING, doc="config key"),
    Field("value", STRING, nullable="0+", doc="config value, null for the default"),
)

CREATABLE_TOPIC = Struct(
    "CreatableTopic",
    Field("name", STRING, doc="topic name"),
    Field("num_partitions", INT32, doc="partition count, -1 = broker default"),
    Field("replication_factor", INT16, doc="replicas per partition, -1 = broker default"),
    Field("assignments", ArrayOf(CREATABLE_REPLICA_ASSIGNMENT),
          doc="manual placement; empty to let the broker choose"),
    Field("configs", ArrayOf(CREATABLE_TOPIC_CONFIG), doc="topic config overrides"),
)

REQUEST = Struct(
    "CreateTopicsRequest",
    Field("topics", ArrayOf(CREATABLE_TOPIC), doc="topics to create"),
    Field("timeout_ms", INT32, default=60000, doc="how long to wait for creation"),
    Field("validate_only", BOOL, "1+", default=False, doc="check only, create nothing"),
)

CREATABLE_TOPIC_CONFIGS = Struct(
    "CreatableTopicConfigs",
    Field("name", STRING, "5+", doc="config key"),
    Field("value", STRING, "5+", nullable="5+", doc="effective value, null if sensitive"),
    Field("read_only", BOOL, "5+", doc="cannot be changed"),
    Field("config_source", INT8, "5+", default=-1, doc="where the value comes from"),
    Field("is_sensitive", BOOL, "5+", doc="value is a secret"),
)

CREATABLE_TOPIC_RESULT = Struct(
    "CreatableTopicResult",
    Field("name", STRING, doc="topic name"),
    Field("topic_id", UUID, "7+", doc="id of the new topic"),
    Field("error_code", INT16, doc="0 if created"),
    Field("error_message", STRING, "1+", nullable="0+", doc="text for error_code"),
    Field("topic_config_error_code", INT16, "5+", tag=0,
          doc="why the configs could not be returned"),
    Field("num_partitions", INT32, "5+", default=-1, doc="partition count used"),
    Field("replication_factor", INT16, "5+", default=-1, doc="replication factor used"),
    Field("configs", ArrayOf(CREATABLE_TOPIC_CONFIGS), "5+", nullable="5+",
          doc="the topic's effective configs"),
)

RESPONSE = Struct(
    "CreateTopicsResponse",
    Field("throttle_time_ms", INT32, "2+", doc="quota throttle applied, in ms"),
    Field("topics", ArrayOf(CREATABLE_TOPIC_RESULT), doc="one result per topic"),
)

API = ApiSpec("CreateTopics", key=19, min_version=0, max_version=7, flexible_from=5,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 7))
request = API.request
response = API.response
