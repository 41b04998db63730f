"""InitProducerId (key 22): a producer id and epoch for idempotent/transactional producers.

Ledger: v0-6 supported; v2+ flexible; the broker answers v0-5.

    v0   transactional_id (null = idempotent only), transaction_timeout_ms
    v1   same as v0 (the broker answers before throttling)
    v2   flexible
    v3   request + producer_id, producer_epoch: bump the epoch after an error (KIP-360)
    v4   same as v3 (PRODUCER_FENCED may be answered)
    v5   same as v4 (TRANSACTION_ABORTABLE may be answered, KIP-890)
    v6   two-phase commit fields (KIP-939)
    not supported: nothing newer exists in Kafka 4.x's definitions (kio 0.6.5).

The broker stops at v5, as Kafka 4.4's does: v6 (two-phase commit, KIP-939) is
not a released version there (Kafka 4.4 closes the connection of a v6 request).

kafka-python 3.x is idempotent by default, so every producer sends this first.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    InitProducerId Request v6 (flexible):
      transactional_id COMPACT_NULLABLE_STRING
      transaction_timeout_ms INT32
      producer_id INT64
      producer_epoch INT16
      enable2_pc BOOLEAN
      keep_prepared_txn BOOLEAN
      TAG_BUFFER

    InitProducerId Response v6 (flexible):
      throttle_time_ms INT32
      error_code INT16
      producer_id INT64
      producer_epoch INT16
      ongoing_txn_producer_id INT64
      ongoing_txn_producer_epoch INT16
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/InitProducerId{Request,Response}.json;
KIP-98, KIP-360, KIP-588, KIP-939.
"""

from kproto.schemas.message import (
    BOOL, INT16, INT32, INT64, STRING, ApiSpec, Field, Struct,
)

REQUEST = Struct(
    "InitProducerIdRequest",
    Field("transactional_id", STRING, nullable="0+", doc="null for an idempotent-only producer"),
    Field("transaction_timeout_ms", INT32, doc="abort open transactions idle this long"),
    Field("producer_id", INT64, "3+", default=-1, doc="current id when bumping the epoch, else -1"),
    Field("producer_epoch", INT16, "3+", default=-1, doc="current epoch when bumping, else -1"),
    Field("enable2_pc", BOOL, "6+", default=False, doc="two-phase commit with an external manager"),
    Field("keep_prepared_txn", BOOL, "6+", default=False, doc="keep a prepared transaction open"),
)

RESPONSE = Struct(
    "InitProducerIdResponse",
    Field("throttle_time_ms", INT32, doc="quota throttle applied, in ms"),
    Field("error_code", INT16, doc="0 if assigned"),
    Field("producer_id", INT64, default=-1, doc="the producer id"),
    Field("producer_epoch", INT16, doc="its epoch"),
    Field("ongoing_txn_producer_id", INT64, "6+", default=-1, doc="id of a kept prepared txn"),
    Field("ongoing_txn_producer_epoch", INT16, "6+", default=-1, doc="epoch of a kept prepared txn"),
)

API = ApiSpec("InitProducerId", key=22, min_version=0, max_version=6, flexible_from=2,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 5))
request = API.request
response = API.response
