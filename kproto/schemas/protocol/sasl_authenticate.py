"""SaslAuthenticate (key 36): one round of SASL authentication, framed as a Kafka request.

Ledger: v0-2 supported; v2+ flexible. kproto's broker answers every one
(handlers: kproto/server/handlers/sasl.py).

    v0   first version
    v1   response + session_lifetime_ms
    v2   flexible
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    SaslAuthenticate Request v2 (flexible):
      auth_bytes COMPACT_BYTES
      TAG_BUFFER

    SaslAuthenticate Response v2 (flexible):
      error_code INT16
      error_message COMPACT_NULLABLE_STRING
      auth_bytes COMPACT_BYTES
      session_lifetime_ms INT64
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/SaslAuthenticate{Request,Response}.json.
Definitions as generated from: kafka-python 3.0.12; hand-maintained since the broker answers it.
"""

from kproto.schemas.message import (
    INT16, INT64, STRING, BYTES, ApiSpec, Field, Struct,
)

REQUEST = Struct(
    "SaslAuthenticateRequest",
    Field("auth_bytes", BYTES,
          doc="the SASL authentication bytes from the client, as defined by the SASL mechanism"),
)

RESPONSE = Struct(
    "SaslAuthenticateResponse",
    Field("error_code", INT16, doc="the error code, or 0 if there was no error"),
    Field("error_message", STRING, nullable="0+",
          doc="the error message, or null if there was no error"),
    Field("auth_bytes", BYTES,
          doc="the SASL authentication bytes from the server, as defined by the SASL mechanism"),
    Field("session_lifetime_ms", INT64, "1+",
          doc="number of milliseconds after which only re-authentication over the existing "
              "connection to create a new session can occur"),
)

API = ApiSpec("SaslAuthenticate", key=36, min_version=0, max_version=2, flexible_from=2,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 2))
request = API.request
response = API.response
