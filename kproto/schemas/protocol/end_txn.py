"""EndTxn (key 26): commit or abort a transaction.

Ledger: v0-5 supported; v3+ flexible; the broker answers v0-5.

    v0   first version
    v1   same as v0
    v2   same as v1
    v3   flexible
    v4   same as v3
    v5   response + producer_id, producer_epoch
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

The broker answers v0-5 (kproto.server.handlers.txn): v5 is transactions
version 2 (KIP-890 part 2): the coordinator bumps the epoch and answers the
producer id and epoch of the next transaction; PRODUCER_FENCED becomes
INVALID_PRODUCER_EPOCH before v2.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    EndTxn Request v5 (flexible):
      transactional_id COMPACT_STRING
      producer_id INT64
      producer_epoch INT16
      committed BOOLEAN
      TAG_BUFFER

    EndTxn Response v5 (flexible):
      throttle_time_ms INT32
      error_code INT16
      producer_id INT64
      producer_epoch INT16
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/EndTxn{Request,Response}.json.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, BOOL, STRING, ApiSpec, Field, Struct,
)

REQUEST = Struct(
    "EndTxnRequest",
    Field("transactional_id", STRING, doc="the ID of the transaction to end"),
    Field("producer_id", INT64, doc="the producer ID"),
    Field("producer_epoch", INT16, doc="the current epoch associated with the producer"),
    Field("committed", BOOL, doc="true if the transaction was committed, false if it was aborted"),
)

RESPONSE = Struct(
    "EndTxnResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("error_code", INT16, doc="the error code, or 0 if there was no error"),
    Field("producer_id", INT64, "5+", default=-1, doc="the producer ID"),
    Field("producer_epoch", INT16, "5+", default=-1,
          doc="the current epoch associated with the producer"),
)

API = ApiSpec("EndTxn", key=26, min_version=0, max_version=5, flexible_from=3,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 5))
request = API.request
response = API.response
