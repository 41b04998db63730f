"""DescribeAcls (key 29): list ACLs matching a filter.

Ledger: v0-3 supported; v2+ flexible. kproto's broker answers every one
(handlers: kproto/server/handlers/acls.py).

    v0   first version
    v1   request + pattern_type_filter; response + resources.pattern_type
    v2   flexible
    v3   same as v2
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DescribeAcls Request v3 (flexible):
      resource_type_filter INT8
      resource_name_filter COMPACT_NULLABLE_STRING
      pattern_type_filter INT8
      principal_filter COMPACT_NULLABLE_STRING
      host_filter COMPACT_NULLABLE_STRING
      operation INT8
      permission_type INT8
      TAG_BUFFER

    DescribeAcls Response v3 (flexible):
      throttle_time_ms INT32
      error_code INT16
      error_message COMPACT_NULLABLE_STRING
      resources COMPACT_ARRAY of DescribeAclsResource
        resource_type INT8
        resource_name COMPACT_STRING
        pattern_type INT8
        acls COMPACT_ARRAY of AclDescription
          principal COMPACT_STRING
          host COMPACT_STRING
          operation INT8
          permission_type INT8
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DescribeAcls{Request,Response}.json.
Definitions as generated from: apache/kafka@HEAD; kafka-python 3.0.12; hand-maintained since the broker answers it.
"""

from kproto.schemas.message import (
    INT8, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "DescribeAclsRequest",
    Field("resource_type_filter", INT8, doc="the resource type"),
    Field("resource_name_filter", STRING, nullable="0+",
          doc="the resource name, or null to match any resource name"),
    Field("pattern_type_filter", INT8, "1+", default=3, doc="the resource pattern to match"),
    Field("principal_filter", STRING, nullable="0+",
          doc="the principal to match, or null to match any principal"),
    Field("host_filter", STRING, nullable="0+", doc="the host to match, or null to match any host"),
    Field("operation", INT8, doc="the operation to match"),
    Field("permission_type", INT8, doc="the permission type to match"),
)

ACL_DESCRIPTION = Struct(
    "AclDescription",
    Field("principal", STRING, doc="the ACL principal"),
    Field("host", STRING, doc="the ACL host"),
    Field("operation", INT8, doc="the ACL operation"),
    Field("permission_type", INT8, doc="the ACL permission type"),
)

DESCRIBE_ACLS_RESOURCE = Struct(
    "DescribeAclsResource",
    Field("resource_type", INT8, doc="the resource type"),
    Field("resource_name", STRING, doc="the resource name"),
    Field("pattern_type", INT8, "1+", default=3, doc="the resource pattern type"),
    Field("acls", ArrayOf(ACL_DESCRIPTION), doc="the ACLs"),
)

RESPONSE = Struct(
    "DescribeAclsResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("error_code", INT16, doc="the error code, or 0 if there was no error"),
    Field("error_message", STRING, nullable="0+",
          doc="the error message, or null if there was no error"),
    Field("resources", ArrayOf(DESCRIBE_ACLS_RESOURCE),
          doc="each Resource that is referenced in an ACL"),
)

API = ApiSpec("DescribeAcls", key=29, min_version=0, max_version=3, flexible_from=2,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 3))
request = API.request
response = API.response
