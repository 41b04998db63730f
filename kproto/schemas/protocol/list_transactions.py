"""ListTransactions (key 66): list transactions, optionally filtered.

Ledger: v0-2 supported; v0+ flexible; the broker answers v0-2.

    v0   first version
    v1   request + duration_filter
    v2   request + transactional_id_pattern
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

The broker answers v0-2 (kproto.server.handlers.txn): v2's transactional_id_pattern
(KIP-1152) keeps the ids it matches whole; one that does not compile is
INVALID_REGULAR_EXPRESSION.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    ListTransactions Request v2 (flexible):
      state_filters COMPACT_ARRAY of COMPACT_STRING
      producer_id_filters COMPACT_ARRAY of INT64
      duration_filter INT64
      transactional_id_pattern COMPACT_NULLABLE_STRING
      TAG_BUFFER

    ListTransactions Response v2 (flexible):
      throttle_time_ms INT32
      error_code INT16
      unknown_state_filters COMPACT_ARRAY of COMPACT_STRING
      transaction_states COMPACT_ARRAY of TransactionState
        transactional_id COMPACT_STRING
        producer_id INT64
        transaction_state COMPACT_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/ListTransactions{Request,Response}.json.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, STRING, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "ListTransactionsRequest",
    Field("state_filters", ArrayOf(STRING),
          doc="the transaction states to filter by: if empty, all transactions are returned; if "
              "non-empty, then only transactions matching one of the filtered states will be "
              "returned"),
    Field("producer_id_filters", ArrayOf(INT64),
          doc="the producerIds to filter by: if empty, all transactions will be returned; if non-"
              "empty, only transactions which match one of the filtered producerIds will be "
              "returned"),
    Field("duration_filter", INT64, "1+", default=-1,
          doc="duration (in millis) to filter by: if < 0, all transactions will be returned; "
              "otherwise, only transactions running longer than this duration will be returned"),
    Field("transactional_id_pattern", STRING, "2+", nullable="2+", default=None,
          doc="the transactional ID regular expression pattern to filter by: if it is empty or "
              "null, all transactions are returned; Otherwise then only the transactions matching"
              " the given regular expression will be returned"),
)

TRANSACTION_STATE = Struct(
    "TransactionState",
    Field("transactional_id", STRING, doc="the transactional id"),
    Field("producer_id", INT64, doc="the producer id"),
    Field("transaction_state", STRING, doc="the current transaction state of the producer"),
)

RESPONSE = Struct(
    "ListTransactionsResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("error_code", INT16, doc="the error code, or 0 if there was no error"),
    Field("unknown_state_filters", ArrayOf(STRING),
          doc="set of state filters provided in the request which were unknown to the transaction"
              " coordinator"),
    Field("transaction_states", ArrayOf(TRANSACTION_STATE),
          doc="the current state of the transaction for the transactional id"),
)

API = ApiSpec("ListTransactions", key=66, min_version=0, max_version=2, flexible_from=0,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 2))
request = API.request
response = API.response
