"""AddOffsetsToTxn (key 25): add a group's offsets to an ongoing transaction.

Ledger: v0-4 supported; v3+ flexible; the broker answers v0-4.

    v0   first version
    v1   same as v0
    v2   same as v1
    v3   flexible
    v4   same as v3
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

The broker answers v0-4 (kproto.server.handlers.txn): every version there is;
PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH before v2.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    AddOffsetsToTxn Request v4 (flexible):
      transactional_id COMPACT_STRING
      producer_id INT64
      producer_epoch INT16
      group_id COMPACT_STRING
      TAG_BUFFER

    AddOffsetsToTxn Response v4 (flexible):
      throttle_time_ms INT32
      error_code INT16
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/AddOffsetsToTxn{Request,Response}.json.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, STRING, ApiSpec, Field, Struct,
)

REQUEST = Struct(
    "AddOffsetsToTxnRequest",
    Field("transactional_id", STRING, doc="the transactional id corresponding to the transaction"),
    Field("producer_id", INT64, doc="current producer id in use by the transactional id"),
    Field("producer_epoch", INT16, doc="current epoch associated with the producer id"),
    Field("group_id", STRING, doc="the unique group identifier"),
)

RESPONSE = Struct(
    "AddOffsetsToTxnResponse",
    Field("throttle_time_ms", INT32,
          doc="duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("error_code", INT16, doc="the response error code, or 0 if there was no error"),
)

API = ApiSpec("AddOffsetsToTxn", key=25, min_version=0, max_version=4, flexible_from=3,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 4))
request = API.request
response = API.response
