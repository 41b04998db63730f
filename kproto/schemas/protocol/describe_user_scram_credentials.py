"""DescribeUserScramCredentials (key 50): describe users' SCRAM credentials.

Ledger: v0 supported; v0+ flexible. kproto's broker answers every one
(handlers: kproto/server/handlers/scram.py).

    v0   first version
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DescribeUserScramCredentials Request v0 (flexible):
      users COMPACT_NULLABLE_ARRAY of UserName
        name COMPACT_STRING
        TAG_BUFFER
      TAG_BUFFER

    DescribeUserScramCredentials Response v0 (flexible):
      throttle_time_ms INT32
      error_code INT16
      error_message COMPACT_NULLABLE_STRING
      results COMPACT_ARRAY of DescribeUserScramCredentialsResult
        user COMPACT_STRING
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        credential_infos COMPACT_ARRAY of CredentialInfo
          mechanism INT8
          iterations INT32
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DescribeUserScramCredentials{Request,Response}.json.
Definitions as generated from: kafka-python 3.0.12; hand-maintained since the broker answers it.
"""

from kproto.schemas.message import (
    INT8, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

USER_NAME = Struct(
    "UserName",
    Field("name", STRING, doc="the user name"),
)

REQUEST = Struct(
    "DescribeUserScramCredentialsRequest",
    Field("users", ArrayOf(USER_NAME), nullable="0+",
          doc="the users to describe, or null/empty to describe all users"),
)

CREDENTIAL_INFO = Struct(
    "CredentialInfo",
    Field("mechanism", INT8, doc="the SCRAM mechanism"),
    Field("iterations", INT32, doc="the number of iterations used in the SCRAM credential"),
)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESULT = Struct(
    "DescribeUserScramCredentialsResult",
    Field("user", STRING, doc="the user name"),
    Field("error_code", INT16, doc="the user-level error code"),
    Field("error_message", STRING, nullable="0+", doc="the user-level error message, if any"),
    Field("credential_infos", ArrayOf(CREDENTIAL_INFO),
          doc="the mechanism and related information associated with the user's SCRAM credentials"),
)

RESPONSE = Struct(
    "DescribeUserScramCredentialsResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("error_code", INT16,
          doc="the message-level error code, 0 except for user authorization or infrastructure "
              "issues"),
    Field("error_message", STRING, nullable="0+", doc="the message-level error message, if any"),
    Field("results", ArrayOf(DESCRIBE_USER_SCRAM_CREDENTIALS_RESULT),
          doc="the results for descriptions, one per user"),
)

API = ApiSpec("DescribeUserScramCredentials", key=50, min_version=0, max_version=0, flexible_from=0,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 0))
request = API.request
response = API.response
