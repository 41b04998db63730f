"""FindCoordinator (key 10): which broker coordinates a group or transaction.

Ledger: v0-6 supported; v3+ flexible.

    v0   key (a group id); response error_code, node_id, host, port
    v1   request + key_type (0 group, 1 transaction); response + throttle_time_ms,
         error_message
    v2   same as v1 (the broker answers before throttling)
    v3   flexible
    v4   batched: coordinator_keys / coordinators replace the single key (KIP-699)
    v5   same as v4 (TRANSACTION_ABORTABLE may be answered, KIP-890)
    v6   key_type 2 = share group, key "group:topicId:partition" (KIP-932)
    not supported: nothing newer exists in Kafka 4.x's definitions.

librdkafka probes v0 for its group consumer (and for LZ4!) and sends <= 2;
kafka-python sends up to 6 (batched form).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    FindCoordinator Request v6 (flexible):
      key_type INT8
      coordinator_keys COMPACT_ARRAY of COMPACT_STRING
      TAG_BUFFER

    FindCoordinator Response v6 (flexible):
      throttle_time_ms INT32
      coordinators COMPACT_ARRAY of Coordinator
        key COMPACT_STRING
        node_id INT32
        host COMPACT_STRING
        port INT32
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/FindCoordinator{Request,Response}.json;
KIP-98, KIP-699, KIP-932.
"""

from kproto.schemas.message import (
    INT8, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "FindCoordinatorRequest",
    Field("key", STRING, "0-3", doc="group id or transactional id"),
    Field("key_type", INT8, "1+", doc="0 group, 1 transaction, 2 share group"),
    Field("coordinator_keys", ArrayOf(STRING), "4+", doc="keys to look up (v4+)"),
)

COORDINATOR = Struct(
    "Coordinator",
    Field("key", STRING, "4+", doc="the key looked up"),
    Field("node_id", INT32, "4+", doc="coordinator's broker id"),
    Field("host", STRING, "4+", doc="coordinator's host"),
    Field("port", INT32, "4+", doc="coordinator's port"),
    Field("error_code", INT16, "4+", doc="0 if found"),
    Field("error_message", STRING, "4+", nullable="4+", doc="text for error_code"),
)

RESPONSE = Struct(
    "FindCoordinatorResponse",
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("error_code", INT16, "0-3", doc="0 if found"),
    Field("error_message", STRING, "1-3", nullable="1-3", doc="text for error_code"),
    Field("node_id", INT32, "0-3", doc="coordinator's broker id"),
    Field("host", STRING, "0-3", doc="coordinator's host"),
    Field("port", INT32, "0-3", doc="coordinator's port"),
    Field("coordinators", ArrayOf(COORDINATOR), "4+", doc="one answer per key (v4+)"),
)

API = ApiSpec("FindCoordinator", key=10, min_version=0, max_version=6, flexible_from=3,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 6))
request = API.request
response = API.response
