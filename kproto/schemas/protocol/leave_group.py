"""LeaveGroup (key 13): members leave a classic group.

Ledger: v0-5 supported; v4+ flexible.

    v0   group_id, member_id; response error_code
    v1   response + throttle_time_ms
    v2   same as v1 (the broker answers before throttling)
    v3   batched: members (member_id + group_instance_id) replace member_id;
         response + per-member results (KIP-345)
    v4   flexible
    v5   members + reason (KIP-800)
    not supported: nothing newer exists in Kafka 4.x's definitions.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    LeaveGroup Request v5 (flexible):
      group_id COMPACT_STRING
      members COMPACT_ARRAY of MemberIdentity
        member_id COMPACT_STRING
        group_instance_id COMPACT_NULLABLE_STRING
        reason COMPACT_NULLABLE_STRING
        TAG_BUFFER
      TAG_BUFFER

    LeaveGroup Response v5 (flexible):
      throttle_time_ms INT32
      error_code INT16
      members COMPACT_ARRAY of MemberResponse
        member_id COMPACT_STRING
        group_instance_id COMPACT_NULLABLE_STRING
        error_code INT16
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/LeaveGroup{Request,Response}.json;
KIP-345, KIP-800.
"""

from kproto.schemas.message import INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct

MEMBER_IDENTITY = Struct(
    "MemberIdentity",
    Field("member_id", STRING, "3+", doc="member leaving"),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None,
          doc="its static id, null if dynamic"),
    Field("reason", STRING, "5+", nullable="5+", default=None, doc="why it leaves"),
)

REQUEST = Struct(
    "LeaveGroupRequest",
    Field("group_id", STRING, doc="the group"),
    Field("member_id", STRING, "0-2", doc="member leaving (v0-2)"),
    Field("members", ArrayOf(MEMBER_IDENTITY), "3+", doc="members leaving (v3+)"),
)

MEMBER_RESPONSE = Struct(
    "MemberResponse",
    Field("member_id", STRING, "3+", doc="member id"),
    Field("group_instance_id", STRING, "3+", nullable="3+", doc="its static id, null if dynamic"),
    Field("error_code", INT16, "3+", doc="0 if it left"),
)

RESPONSE = Struct(
    "LeaveGroupResponse",
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("error_code", INT16, doc="group-level error, 0 if none"),
    Field("members", ArrayOf(MEMBER_RESPONSE), "3+", doc="per-member results (v3+)"),
)

API = ApiSpec("LeaveGroup", key=13, min_version=0, max_version=5, flexible_from=4,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 5))
request = API.request
response = API.response
