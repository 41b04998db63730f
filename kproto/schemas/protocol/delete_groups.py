"""DeleteGroups (key 42): remove empty groups and their committed offsets.

Ledger: v0-3 supported; v2+ flexible.

    v0   groups_names; response throttle_time_ms, per-group results
    v1   same as v0 (the broker answers before throttling)
    v2   flexible
    v3   response + results.error_message (null unless the broker has a cause to give)
    not supported: nothing newer exists in Kafka 4.4's definitions.

A group with members is refused with NON_EMPTY_GROUP.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DeleteGroups Request v3 (flexible):
      groups_names COMPACT_ARRAY of COMPACT_STRING
      TAG_BUFFER

    DeleteGroups Response v3 (flexible):
      throttle_time_ms INT32
      results COMPACT_ARRAY of DeletableGroupResult
        group_id COMPACT_STRING
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DeleteGroups{Request,Response}.json; KIP-229.
"""

from kproto.schemas.message import INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct

REQUEST = Struct(
    "DeleteGroupsRequest",
    Field("groups_names", ArrayOf(STRING), doc="group ids to delete"),
)

DELETABLE_GROUP_RESULT = Struct(
    "DeletableGroupResult",
    Field("group_id", STRING, doc="the group"),
    Field("error_code", INT16, doc="0 if deleted"),
    Field("error_message", STRING, "3+", nullable="3+", default=None, doc="the cause of the error, or null"),
)

RESPONSE = Struct(
    "DeleteGroupsResponse",
    Field("throttle_time_ms", INT32, doc="quota throttle applied, in ms"),
    Field("results", ArrayOf(DELETABLE_GROUP_RESULT), doc="one result per group"),
)

API = ApiSpec("DeleteGroups", key=42, min_version=0, max_version=3, flexible_from=2,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 3))
request = API.request
response = API.response
