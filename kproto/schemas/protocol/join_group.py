"""JoinGroup (key 11): enter a classic consumer group and learn the leader.

Ledger: v0-9 supported; v6+ flexible; the broker answers v0-9.

    v0   group_id, session_timeout_ms, member_id, protocol_type, protocols
    v1   + rebalance_timeout_ms (v0 members: use the session timeout)
    v2   response + throttle_time_ms
    v3   same as v2 (the broker answers before throttling)
    v4   a new member must rejoin with the id it is given (MEMBER_ID_REQUIRED, KIP-394)
    v5   + group_instance_id (static membership, KIP-345)
    v6   flexible
    v7   response + protocol_type; protocol_name nullable (KIP-559)
    v8   request + reason (KIP-800)
    v9   response + skip_assignment (KIP-814)
    not supported: nothing newer exists in Kafka 4.x's definitions (kio 0.6.5).

The broker answers v0-9: v8's reason is only logged by Kafka (GroupMetadataManager), and
v9's skip_assignment is the coordinator's (static leader rejoining, KIP-814).

Member metadata and assignments are raw bytes here; for the "consumer"
protocol they are ConsumerProtocolSubscription/Assignment
(kproto.schemas.consumer_offsets).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    JoinGroup Request v9 (flexible):
      group_id COMPACT_STRING
      session_timeout_ms INT32
      rebalance_timeout_ms INT32
      member_id COMPACT_STRING
      group_instance_id COMPACT_NULLABLE_STRING
      protocol_type COMPACT_STRING
      protocols COMPACT_ARRAY of JoinGroupRequestProtocol
        name COMPACT_STRING
        metadata COMPACT_BYTES
        TAG_BUFFER
      reason COMPACT_NULLABLE_STRING
      TAG_BUFFER

    JoinGroup Response v9 (flexible):
      throttle_time_ms INT32
      error_code INT16
      generation_id INT32
      protocol_type COMPACT_NULLABLE_STRING
      protocol_name COMPACT_NULLABLE_STRING
      leader COMPACT_STRING
      skip_assignment BOOLEAN
      member_id COMPACT_STRING
      members COMPACT_ARRAY of JoinGroupResponseMember
        member_id COMPACT_STRING
        group_instance_id COMPACT_NULLABLE_STRING
        metadata COMPACT_BYTES
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/JoinGroup{Request,Response}.json;
KIP-62, KIP-345, KIP-394, KIP-559, KIP-800, KIP-814.
"""

from kproto.schemas.message import (
    BOOL, BYTES, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

JOIN_GROUP_REQUEST_PROTOCOL = Struct(
    "JoinGroupRequestProtocol",
    Field("name", STRING, doc="assignor name, e.g. range"),
    Field("metadata", BYTES, doc="subscription for that assignor"),
)

REQUEST = Struct(
    "JoinGroupRequest",
    Field("group_id", STRING, doc="the group"),
    Field("session_timeout_ms", INT32, doc="member is dropped after this long without heartbeats"),
    Field("rebalance_timeout_ms", INT32, "1+", default=-1,
          doc="how long the coordinator waits for members to rejoin"),
    Field("member_id", STRING, doc="member id, empty on first join"),
    Field("group_instance_id", STRING, "5+", nullable="5+", default=None,
          doc="static member id, null if dynamic"),
    Field("protocol_type", STRING, doc="group protocol family, e.g. consumer"),
    Field("protocols", ArrayOf(JOIN_GROUP_REQUEST_PROTOCOL), doc="assignors, preferred first"),
    Field("reason", STRING, "8+", nullable="8+", default=None, doc="why the member (re)joins"),
)

JOIN_GROUP_RESPONSE_MEMBER = Struct(
    "JoinGroupResponseMember",
    Field("member_id", STRING, doc="member id"),
    Field("group_instance_id", STRING, "5+", nullable="5+", default=None,
          doc="its static id, null if dynamic"),
    Field("metadata", BYTES, doc="its subscription for the chosen assignor"),
)

RESPONSE = Struct(
    "JoinGroupResponse",
    Field("throttle_time_ms", INT32, "2+", doc="quota throttle applied, in ms"),
    Field("error_code", INT16, doc="0 if joined"),
    Field("generation_id", INT32, default=-1, doc="group generation, -1 on error"),
    Field("protocol_type", STRING, "7+", nullable="7+", default=None, doc="group protocol family"),
    Field("protocol_name", STRING, nullable="7+", doc="assignor chosen by the coordinator"),
    Field("leader", STRING, doc="leader's member id"),
    Field("skip_assignment", BOOL, "9+", default=False,
          doc="leader need not assign (the broker does, KIP-814)"),
    Field("member_id", STRING, doc="this member's id"),
    Field("members", ArrayOf(JOIN_GROUP_RESPONSE_MEMBER),
          doc="every member, sent to the leader only"),
)

API = ApiSpec("JoinGroup", key=11, min_version=0, max_version=9, flexible_from=6,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 9))
request = API.request
response = API.response
