"""SyncGroup (key 14): the leader hands out assignments; every member gets its own.

Ledger: v0-5 supported; v4+ flexible.

    v0   group_id, generation_id, member_id, assignments; response error_code, assignment
    v1   response + throttle_time_ms
    v2   same as v1 (the broker answers before throttling)
    v3   + group_instance_id (static membership, KIP-345)
    v4   flexible
    v5   protocol_type, protocol_name on both sides (checked by the broker, KIP-559)
    not supported: nothing newer exists in Kafka 4.x's definitions.

Followers send an empty assignments list; assignments are raw bytes
(ConsumerProtocolAssignment for the "consumer" protocol).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    SyncGroup Request v5 (flexible):
      group_id COMPACT_STRING
      generation_id INT32
      member_id COMPACT_STRING
      group_instance_id COMPACT_NULLABLE_STRING
      protocol_type COMPACT_NULLABLE_STRING
      protocol_name COMPACT_NULLABLE_STRING
      assignments COMPACT_ARRAY of SyncGroupRequestAssignment
        member_id COMPACT_STRING
        assignment COMPACT_BYTES
        TAG_BUFFER
      TAG_BUFFER

    SyncGroup Response v5 (flexible):
      throttle_time_ms INT32
      error_code INT16
      protocol_type COMPACT_NULLABLE_STRING
      protocol_name COMPACT_NULLABLE_STRING
      assignment COMPACT_BYTES
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/SyncGroup{Request,Response}.json;
KIP-345, KIP-559.
"""

from kproto.schemas.message import (
    BYTES, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

SYNC_GROUP_REQUEST_ASSIGNMENT = Struct(
    "SyncGroupRequestAssignment",
    Field("member_id", STRING, doc="member the assignment is for"),
    Field("assignment", BYTES, doc="its assignment"),
)

REQUEST = Struct(
    "SyncGroupRequest",
    Field("group_id", STRING, doc="the group"),
    Field("generation_id", INT32, doc="generation from JoinGroup"),
    Field("member_id", STRING, doc="member id"),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None,
          doc="static member id, null if dynamic"),
    Field("protocol_type", STRING, "5+", nullable="5+", default=None, doc="group protocol family"),
    Field("protocol_name", STRING, "5+", nullable="5+", default=None, doc="assignor in use"),
    Field("assignments", ArrayOf(SYNC_GROUP_REQUEST_ASSIGNMENT),
          doc="leader: every member's assignment; followers: empty"),
)

RESPONSE = Struct(
    "SyncGroupResponse",
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("error_code", INT16, doc="0 if synced"),
    Field("protocol_type", STRING, "5+", nullable="5+", default=None, doc="group protocol family"),
    Field("protocol_name", STRING, "5+", nullable="5+", default=None, doc="assignor in use"),
    Field("assignment", BYTES, doc="this member's assignment"),
)

API = ApiSpec("SyncGroup", key=14, min_version=0, max_version=5, flexible_from=4,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 5))
request = API.request
response = API.response
