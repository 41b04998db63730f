"""ListGroups (key 16): the groups a broker coordinates.

Ledger: v0-5 supported; v3+ flexible.

    v0   empty request; response error_code, groups (id, protocol_type)
    v1   response + throttle_time_ms
    v2   same as v1 (the broker answers before throttling)
    v3   flexible
    v4   request states_filter; response + group_state (KIP-518)
    v5   request types_filter; response + group_type (KIP-848)
    not supported: nothing newer exists in Kafka 4.x's definitions.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    ListGroups Request v5 (flexible):
      states_filter COMPACT_ARRAY of COMPACT_STRING
      types_filter COMPACT_ARRAY of COMPACT_STRING
      TAG_BUFFER

    ListGroups Response v5 (flexible):
      throttle_time_ms INT32
      error_code INT16
      groups COMPACT_ARRAY of ListedGroup
        group_id COMPACT_STRING
        protocol_type COMPACT_STRING
        group_state COMPACT_STRING
        group_type COMPACT_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/ListGroups{Request,Response}.json;
KIP-518, KIP-848.
"""

from kproto.schemas.message import INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct

REQUEST = Struct(
    "ListGroupsRequest",
    Field("states_filter", ArrayOf(STRING), "4+", doc="only groups in these states; empty = all"),
    Field("types_filter", ArrayOf(STRING), "5+", doc="only groups of these types; empty = all"),
)

LISTED_GROUP = Struct(
    "ListedGroup",
    Field("group_id", STRING, doc="the group"),
    Field("protocol_type", STRING, doc="group protocol family, empty if none"),
    Field("group_state", STRING, "4+", doc="its state"),
    Field("group_type", STRING, "5+", doc="classic, consumer, share..."),
)

RESPONSE = Struct(
    "ListGroupsResponse",
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("error_code", INT16, doc="0 if listed"),
    Field("groups", ArrayOf(LISTED_GROUP), doc="the groups"),
)

API = ApiSpec("ListGroups", key=16, min_version=0, max_version=5, flexible_from=3,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 5))
request = API.request
response = API.response
