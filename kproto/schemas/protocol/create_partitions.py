"""CreatePartitions (key 37): add partitions to existing topics.

Ledger: v0-3 supported; v2+ flexible.

    v0   topics (name, new total count, optional assignments), timeout_ms, validate_only
    v1   same as v0 (the broker answers before throttling)
    v2   flexible
    v3   same as v2 (THROTTLING_QUOTA_EXCEEDED may be answered, KIP-599)
    not supported: nothing newer exists in Kafka 4.x's definitions.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    CreatePartitions Request v3 (flexible):
      topics COMPACT_ARRAY of CreatePartitionsTopic
        name COMPACT_STRING
        count INT32
        assignments COMPACT_NULLABLE_ARRAY of CreatePartitionsAssignment
          broker_ids COMPACT_ARRAY of INT32
          TAG_BUFFER
        TAG_BUFFER
      timeout_ms INT32
      validate_only BOOLEAN
      TAG_BUFFER

    CreatePartitions Response v3 (flexible):
      throttle_time_ms INT32
      results COMPACT_ARRAY of CreatePartitionsTopicResult
        name COMPACT_STRING
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/CreatePartitions{Request,Response}.json;
KIP-195, KIP-599.
"""

from kproto.schemas.message import (
    BOOL, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

CREATE_PARTITIONS_ASSIGNMENT = Struct(
    "CreatePartitionsAssignment",
    Field("broker_ids", ArrayOf(INT32), doc="replica brokers of one new partition"),
)

CREATE_PARTITIONS_TOPIC = Struct(
    "CreatePartitionsTopic",
    Field("name", STRING, doc="topic name"),
    Field("count", INT32, doc="partition count wanted after the change"),
    Field("assignments", ArrayOf(CREATE_PARTITIONS_ASSIGNMENT), nullable="0+",
          doc="placement of the new partitions, null to let the broker choose"),
)

REQUEST = Struct(
    "CreatePartitionsRequest",
    Field("topics", ArrayOf(CREATE_PARTITIONS_TOPIC), doc="topics to grow"),
    Field("timeout_ms", INT32, doc="how long to wait for the change"),
    Field("validate_only", BOOL, doc="check only, change nothing"),
)

CREATE_PARTITIONS_TOPIC_RESULT = Struct(
    "CreatePartitionsTopicResult",
    Field("name", STRING, doc="topic name"),
    Field("error_code", INT16, doc="0 if grown"),
    Field("error_message", STRING, nullable="0+", default=None, doc="text for error_code"),
)

RESPONSE = Struct(
    "CreatePartitionsResponse",
    Field("throttle_time_ms", INT32, doc="quota throttle applied, in ms"),
    Field("results", ArrayOf(CREATE_PARTITIONS_TOPIC_RESULT), doc="one result per topic"),
)

API = ApiSpec("CreatePartitions", key=37, min_version=0, max_version=3, flexible_from=2,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 3))
request = API.request
response = API.response
