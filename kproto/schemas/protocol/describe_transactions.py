"""DescribeTransactions (key 65): describe transactions by transactional id.

Ledger: v0 supported; v0+ flexible; the broker answers v0.

    v0   first version
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

The broker answers v0 (kproto.server.handlers.txn).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DescribeTransactions Request v0 (flexible):
      transactional_ids COMPACT_ARRAY of COMPACT_STRING
      TAG_BUFFER

    DescribeTransactions Response v0 (flexible):
      throttle_time_ms INT32
      transaction_states COMPACT_ARRAY of TransactionState
        error_code INT16
        transactional_id COMPACT_STRING
        transaction_state COMPACT_STRING
        transaction_timeout_ms INT32
        transaction_start_time_ms INT64
        producer_id INT64
        producer_epoch INT16
        topics COMPACT_ARRAY of TopicData
          topic COMPACT_STRING
          partitions COMPACT_ARRAY of INT32
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DescribeTransactions{Request,Response}.json.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, STRING, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "DescribeTransactionsRequest",
    Field("transactional_ids", ArrayOf(STRING),
          doc="array of transactionalIds to include in describe results. If empty, then no "
              "results will be returned"),
)

TOPIC_DATA = Struct(
    "TopicData",
    Field("topic", STRING, doc="the topic name"),
    Field("partitions", ArrayOf(INT32),
          doc="the partition ids included in the current transaction"),
)

TRANSACTION_STATE = Struct(
    "TransactionState",
    Field("error_code", INT16, doc="the error code"),
    Field("transactional_id", STRING, doc="the transactional id"),
    Field("transaction_state", STRING, doc="the current transaction state of the producer"),
    Field("transaction_timeout_ms", INT32, doc="the timeout in milliseconds for the transaction"),
    Field("transaction_start_time_ms", INT64,
          doc="the start time of the transaction in milliseconds"),
    Field("producer_id", INT64, doc="the current producer id associated with the transaction"),
    Field("producer_epoch", INT16, doc="the current epoch associated with the producer id"),
    Field("topics", ArrayOf(TOPIC_DATA),
          doc="the set of partitions included in the current transaction (if active). When a "
              "transaction is preparing to commit or abort, this will include only partitions "
              "which do not have markers"),
)

RESPONSE = Struct(
    "DescribeTransactionsResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("transaction_states", ArrayOf(TRANSACTION_STATE),
          doc="the current state of the transaction"),
)

API = ApiSpec("DescribeTransactions", key=65, min_version=0, max_version=0, flexible_from=0,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 0))
request = API.request
response = API.response
