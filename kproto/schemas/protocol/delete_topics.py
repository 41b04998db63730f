"""DeleteTopics (key 20): delete topics by name (or id from v6).

Ledger: v0-6 supported; v4+ flexible.

    v0   topic_names, timeout_ms; response per-topic error codes
    v1   response + throttle_time_ms
    v2   same as v1 (the broker answers before throttling)
    v3   same as v2 (TOPIC_DELETION_DISABLED may be answered)
    v4   flexible
    v5   response + error_message (THROTTLING_QUOTA_EXCEEDED, KIP-599)
    v6   topics (name or topic_id) replaces topic_names (KIP-516)
    not supported: nothing newer exists in Kafka 4.x's definitions.

Kafka 4.0 removed v0.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DeleteTopics Request v6 (flexible):
      topics COMPACT_ARRAY of DeleteTopicState
        name COMPACT_NULLABLE_STRING
        topic_id UUID
        TAG_BUFFER
      timeout_ms INT32
      TAG_BUFFER

    DeleteTopics Response v6 (flexible):
      throttle_time_ms INT32
      responses COMPACT_ARRAY of DeletableTopicResult
        name COMPACT_NULLABLE_STRING
        topic_id UUID
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DeleteTopics{Request,Response}.json;
KIP-516, KIP-599.
"""

from kproto.schemas.message import (
    INT16, INT32, STRING, UUID, ApiSpec, ArrayOf, Field, Struct,
)

DELETE_TOPIC_STATE = Struct(
    "DeleteTopicState",
    Field("name", STRING, "6+", nullable="6+", default=None, doc="topic name, null to use the id"),
    Field("topic_id", UUID, "6+", doc="topic id, zero to use the name"),
)

REQUEST = Struct(
    "DeleteTopicsRequest",
    Field("topics", ArrayOf(DELETE_TOPIC_STATE), "6+", doc="topics to delete (v6+)"),
    Field("topic_names", ArrayOf(STRING), "0-5", doc="topics to delete (v0-5)"),
    Field("timeout_ms", INT32, doc="how long to wait for deletion"),
)

DELETABLE_TOPIC_RESULT = Struct(
    "DeletableTopicResult",
    Field("name", STRING, nullable="6+", doc="topic name"),
    Field("topic_id", UUID, "6+", doc="topic id"),
    Field("error_code", INT16, doc="0 if deleted"),
    Field("error_message", STRING, "5+", nullable="5+", default=None, doc="text for error_code"),
)

RESPONSE = Struct(
    "DeleteTopicsResponse",
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("responses", ArrayOf(DELETABLE_TOPIC_RESULT), doc="one result per topic"),
)

API = ApiSpec("DeleteTopics", key=20, min_version=0, max_version=6, flexible_from=4,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 6))
request = API.request
response = API.response
