"""Heartbeat (key 12): a classic group member says it is alive.

Ledger: v0-4 supported; v4+ flexible.

    v0   group_id, generation_id, member_id; response error_code
    v1   response + throttle_time_ms
    v2   same as v1 (the broker answers before throttling)
    v3   + group_instance_id (static membership, KIP-345)
    v4   flexible
    not supported: nothing newer exists in Kafka 4.x's definitions.

REBALANCE_IN_PROGRESS in the answer is how members learn they must rejoin.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    Heartbeat Request v4 (flexible):
      group_id COMPACT_STRING
      generation_id INT32
      member_id COMPACT_STRING
      group_instance_id COMPACT_NULLABLE_STRING
      TAG_BUFFER

    Heartbeat Response v4 (flexible):
      throttle_time_ms INT32
      error_code INT16
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/Heartbeat{Request,Response}.json; KIP-345.
"""

from kproto.schemas.message import INT16, INT32, STRING, ApiSpec, Field, Struct

REQUEST = Struct(
    "HeartbeatRequest",
    Field("group_id", STRING, doc="the group"),
    Field("generation_id", INT32, doc="generation the member belongs to"),
    Field("member_id", STRING, doc="member id"),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None,
          doc="static member id, null if dynamic"),
)

RESPONSE = Struct(
    "HeartbeatResponse",
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("error_code", INT16, doc="0, or why the member must rejoin"),
)

API = ApiSpec("Heartbeat", key=12, min_version=0, max_version=4, flexible_from=4,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 4))
request = API.request
response = API.response
