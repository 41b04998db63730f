"""DescribeGroups (key 15): state, members and assignments of classic groups.

Ledger: v0-6 supported; v5+ flexible.

    v0   groups; response per group: state, protocol, members with metadata/assignment
    v1   response + throttle_time_ms
    v2   same as v1 (the broker answers before throttling)
    v3   request include_authorized_operations; response authorized_operations
    v4   members + group_instance_id (KIP-345)
    v5   flexible
    v6   group + error_message; GROUP_ID_NOT_FOUND for unknown groups (KIP-1043)
    not supported: nothing newer exists in Kafka 4.x's definitions.

Admin-only (kproto tools, kafka-python <= 6, aiokafka 0-3).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DescribeGroups Request v6 (flexible):
      groups COMPACT_ARRAY of COMPACT_STRING
      include_authorized_operations BOOLEAN
      TAG_BUFFER

    DescribeGroups Response v6 (flexible):
      throttle_time_ms INT32
      groups COMPACT_ARRAY of DescribedGroup
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        group_id COMPACT_STRING
        group_state COMPACT_STRING
        protocol_type COMPACT_STRING
        protocol_data COMPACT_STRING
        members COMPACT_ARRAY of DescribedGroupMember
          member_id COMPACT_STRING
          group_instance_id COMPACT_NULLABLE_STRING
          client_id COMPACT_STRING
          client_host COMPACT_STRING
          member_metadata COMPACT_BYTES
          member_assignment COMPACT_BYTES
          TAG_BUFFER
        authorized_operations INT32
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DescribeGroups{Request,Response}.json;
KIP-345, KIP-430, KIP-1043.
"""

from kproto.schemas.message import (
    BOOL, BYTES, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "DescribeGroupsRequest",
    Field("groups", ArrayOf(STRING), doc="group ids to describe"),
    Field("include_authorized_operations", BOOL, "3+",
          doc="ask for each group's authorized-operations bitfield"),
)

DESCRIBED_GROUP_MEMBER = Struct(
    "DescribedGroupMember",
    Field("member_id", STRING, doc="member id"),
    Field("group_instance_id", STRING, "4+", nullable="4+", default=None,
          doc="static member id, null if dynamic"),
    Field("client_id", STRING, doc="client id the member connected with"),
    Field("client_host", STRING, doc="address the member connected from"),
    Field("member_metadata", BYTES, doc="its subscription (JoinGroup metadata)"),
    Field("member_assignment", BYTES, doc="its current assignment"),
)

DESCRIBED_GROUP = Struct(
    "DescribedGroup",
    Field("error_code", INT16, doc="0 if described"),
    Field("error_message", STRING, "6+", nullable="6+", default=None, doc="text for error_code"),
    Field("group_id", STRING, doc="the group"),
    Field("group_state", STRING, doc="Empty, PreparingRebalance, CompletingRebalance, Stable, Dead"),
    Field("protocol_type", STRING, doc="group protocol family, empty if none"),
    Field("protocol_data", STRING, doc="assignor in use (Stable groups only)"),
    Field("members", ArrayOf(DESCRIBED_GROUP_MEMBER), doc="current members"),
    Field("authorized_operations", INT32, "3+", default=-2**31,
          doc="bitfield of allowed ACL operations, -2^31 if not asked"),
)

RESPONSE = Struct(
    "DescribeGroupsResponse",
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("groups", ArrayOf(DESCRIBED_GROUP), doc="one entry per group asked"),
)

API = ApiSpec("DescribeGroups", key=15, min_version=0, max_version=6, flexible_from=5,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 6))
request = API.request
response = API.response
