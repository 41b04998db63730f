"""CreateAcls (key 30): create ACLs.

Ledger: v0-3 supported; v2+ flexible. kproto's broker answers every one
(handlers: kproto/server/handlers/acls.py).

    v0   first version
    v1   request + creations.resource_pattern_type
    v2   flexible
    v3   same as v2
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    CreateAcls Request v3 (flexible):
      creations COMPACT_ARRAY of AclCreation
        resource_type INT8
        resource_name COMPACT_STRING
        resource_pattern_type INT8
        principal COMPACT_STRING
        host COMPACT_STRING
        operation INT8
        permission_type INT8
        TAG_BUFFER
      TAG_BUFFER

    CreateAcls Response v3 (flexible):
      throttle_time_ms INT32
      results COMPACT_ARRAY of AclCreationResult
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/CreateAcls{Request,Response}.json.
Definitions as generated from: apache/kafka@HEAD; kafka-python 3.0.12; hand-maintained since the broker answers it.
"""

from kproto.schemas.message import (
    INT8, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

ACL_CREATION = Struct(
    "AclCreation",
    Field("resource_type", INT8, doc="the type of the resource"),
    Field("resource_name", STRING, doc="the resource name for the ACL"),
    Field("resource_pattern_type", INT8, "1+", default=3, doc="the pattern type for the ACL"),
    Field("principal", STRING, doc="the principal for the ACL"),
    Field("host", STRING, doc="the host for the ACL"),
    Field("operation", INT8, doc="the operation type for the ACL (read, write, etc.)"),
    Field("permission_type", INT8, doc="the permission type for the ACL (allow, deny, etc.)"),
)

REQUEST = Struct(
    "CreateAclsRequest",
    Field("creations", ArrayOf(ACL_CREATION), doc="the ACLs that we want to create"),
)

ACL_CREATION_RESULT = Struct(
    "AclCreationResult",
    Field("error_code", INT16, doc="the result error, or zero if there was no error"),
    Field("error_message", STRING, nullable="0+",
          doc="the result message, or null if there was no error"),
)

RESPONSE = Struct(
    "CreateAclsResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("results", ArrayOf(ACL_CREATION_RESULT), doc="the results for each ACL creation"),
)

API = ApiSpec("CreateAcls", key=30, min_version=0, max_version=3, flexible_from=2,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 3))
request = API.request
response = API.response
