"""DeleteAcls (key 31): delete ACLs matching filters.

Ledger: v0-3 supported; v2+ flexible. kproto's broker answers every one
(handlers: kproto/server/handlers/acls.py).

    v0   first version
    v1   request + filters.pattern_type_filter; response +
         filter_results.matching_acls.pattern_type
    v2   flexible
    v3   same as v2
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DeleteAcls Request v3 (flexible):
      filters COMPACT_ARRAY of DeleteAclsFilter
        resource_type_filter INT8
        resource_name_filter COMPACT_NULLABLE_STRING
        pattern_type_filter INT8
        principal_filter COMPACT_NULLABLE_STRING
        host_filter COMPACT_NULLABLE_STRING
        operation INT8
        permission_type INT8
        TAG_BUFFER
      TAG_BUFFER

    DeleteAcls Response v3 (flexible):
      throttle_time_ms INT32
      filter_results COMPACT_ARRAY of DeleteAclsFilterResult
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        matching_acls COMPACT_ARRAY of DeleteAclsMatchingAcl
          error_code INT16
          error_message COMPACT_NULLABLE_STRING
          resource_type INT8
          resource_name COMPACT_STRING
          pattern_type INT8
          principal COMPACT_STRING
          host COMPACT_STRING
          operation INT8
          permission_type INT8
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DeleteAcls{Request,Response}.json.
Definitions as generated from: apache/kafka@HEAD; kafka-python 3.0.12; hand-maintained since the broker answers it.
"""

from kproto.schemas.message import (
    INT8, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

DELETE_ACLS_FILTER = Struct(
    "DeleteAclsFilter",
    Field("resource_type_filter", INT8, doc="the resource type"),
    Field("resource_name_filter", STRING, nullable="0+",
          doc="the resource name, or null to match any resource name"),
    Field("pattern_type_filter", INT8, "1+", default=3, doc="the pattern type"),
    Field("principal_filter", STRING, nullable="0+",
          doc="the principal filter, or null to accept all principals"),
    Field("host_filter", STRING, nullable="0+", doc="the host filter, or null to accept all hosts"),
    Field("operation", INT8, doc="the ACL operation"),
    Field("permission_type", INT8, doc="the permission type"),
)

REQUEST = Struct(
    "DeleteAclsRequest",
    Field("filters", ArrayOf(DELETE_ACLS_FILTER), doc="the filters to use when deleting ACLs"),
)

DELETE_ACLS_MATCHING_ACL = Struct(
    "DeleteAclsMatchingAcl",
    Field("error_code", INT16, doc="the deletion error code, or 0 if the deletion succeeded"),
    Field("error_message", STRING, nullable="0+",
          doc="the deletion error message, or null if the deletion succeeded"),
    Field("resource_type", INT8, doc="the ACL resource type"),
    Field("resource_name", STRING, doc="the ACL resource name"),
    Field("pattern_type", INT8, "1+", default=3, doc="the ACL resource pattern type"),
    Field("principal", STRING, doc="the ACL principal"),
    Field("host", STRING, doc="the ACL host"),
    Field("operation", INT8, doc="the ACL operation"),
    Field("permission_type", INT8, doc="the ACL permission type"),
)

DELETE_ACLS_FILTER_RESULT = Struct(
    "DeleteAclsFilterResult",
    Field("error_code", INT16, doc="the error code, or 0 if the filter succeeded"),
    Field("error_message", STRING, nullable="0+",
          doc="the error message, or null if the filter succeeded"),
    Field("matching_acls", ArrayOf(DELETE_ACLS_MATCHING_ACL),
          doc="the ACLs which matched this filter"),
)

RESPONSE = Struct(
    "DeleteAclsResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("filter_results", ArrayOf(DELETE_ACLS_FILTER_RESULT), doc="the results for each filter"),
)

API = ApiSpec("DeleteAcls", key=31, min_version=0, max_version=3, flexible_from=2,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 3))
request = API.request
response = API.response
