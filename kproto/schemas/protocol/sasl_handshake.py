"""SaslHandshake (key 17): choose the SASL mechanism before authenticating.

Ledger: v0-1 supported; never flexible. kproto's broker answers every one
(handlers: kproto/server/handlers/sasl.py).

    v0   first version
    v1   same as v0
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    SaslHandshake Request v1:
      mechanism STRING

    SaslHandshake Response v1:
      error_code INT16
      mechanisms ARRAY of STRING

doc-ref: clients/src/main/resources/common/message/SaslHandshake{Request,Response}.json.
Definitions as generated from: kafka-python 3.0.12; hand-maintained since the broker answers it.
"""

from kproto.schemas.message import (
    INT16, STRING, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "SaslHandshakeRequest",
    Field("mechanism", STRING, doc="the SASL mechanism chosen by the client"),
)

RESPONSE = Struct(
    "SaslHandshakeResponse",
    Field("error_code", INT16, doc="the error code, or 0 if there was no error"),
    Field("mechanisms", ArrayOf(STRING), doc="the mechanisms enabled in the server"),
)

API = ApiSpec("SaslHandshake", key=17, min_version=0, max_version=1, flexible_from=None,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 1))
request = API.request
response = API.response
