"""AddPartitionsToTxn (key 24): add partitions to an ongoing transaction.

Ledger: v0-5 supported; v3+ flexible; the broker answers v0-5.

    v0   first version
    v1   same as v0
    v2   same as v1
    v3   flexible
    v4   request + transactions, transactions.transactional_id, transactions.producer_id,
         transactions.producer_epoch, transactions.verify_only, transactions.topics,
         transactions.topics.name, transactions.topics.partitions; -
         v3_and_below_transactional_id, v3_and_below_producer_id, v3_and_below_producer_epoch,
         v3_and_below_topics, v3_and_below_topics.name, v3_and_below_topics.partitions;
         response + error_code, results_by_transaction,
         results_by_transaction.transactional_id, results_by_transaction.topic_results,
         results_by_transaction.topic_results.name,
         results_by_transaction.topic_results.results_by_partition,
         results_by_transaction.topic_results.results_by_partition.partition_index,
         results_by_transaction.topic_results.results_by_partition.partition_error_code; -
         results_by_topic_v3_and_below, results_by_topic_v3_and_below.name,
         results_by_topic_v3_and_below.results_by_partition,
         results_by_topic_v3_and_below.results_by_partition.partition_index,
         results_by_topic_v3_and_below.results_by_partition.partition_error_code
    v5   same as v4
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

The broker answers v0-5: v0-3 are the producer's form, v4-5 the batched
broker form with verify_only (KIP-890), each transaction added or checked
(kproto.server.handlers.txn).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    AddPartitionsToTxn Request v5 (flexible):
      transactions COMPACT_ARRAY of AddPartitionsToTxnTransaction
        transactional_id COMPACT_STRING
        producer_id INT64
        producer_epoch INT16
        verify_only BOOLEAN
        topics COMPACT_ARRAY of AddPartitionsToTxnTopic
          name COMPACT_STRING
          partitions COMPACT_ARRAY of INT32
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

    AddPartitionsToTxn Response v5 (flexible):
      throttle_time_ms INT32
      error_code INT16
      results_by_transaction COMPACT_ARRAY of AddPartitionsToTxnResult
        transactional_id COMPACT_STRING
        topic_results COMPACT_ARRAY of AddPartitionsToTxnTopicResult
          name COMPACT_STRING
          results_by_partition COMPACT_ARRAY of AddPartitionsToTxnPartitionResult
            partition_index INT32
            partition_error_code INT16
            TAG_BUFFER
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/AddPartitionsToTxn{Request,Response}.json.
"""

from kproto.schemas.message import (
    INT16, INT32, INT64, BOOL, STRING, ApiSpec, ArrayOf, Field, Struct,
)

ADD_PARTITIONS_TO_TXN_TOPIC = Struct(
    "AddPartitionsToTxnTopic",
    Field("name", STRING, doc="the name of the topic"),
    Field("partitions", ArrayOf(INT32), doc="the partition indexes to add to the transaction"),
)

ADD_PARTITIONS_TO_TXN_TRANSACTION = Struct(
    "AddPartitionsToTxnTransaction",
    Field("transactional_id", STRING, "4+",
          doc="the transactional id corresponding to the transaction"),
    Field("producer_id", INT64, "4+", doc="current producer id in use by the transactional id"),
    Field("producer_epoch", INT16, "4+", doc="current epoch associated with the producer id"),
    Field("verify_only", BOOL, "4+",
          doc="boolean to signify if we want to check if the partition is in the transaction "
              "rather than add it"),
    Field("topics", ArrayOf(ADD_PARTITIONS_TO_TXN_TOPIC), "4+",
          doc="the partitions to add to the transaction"),
)

REQUEST = Struct(
    "AddPartitionsToTxnRequest",
    Field("transactions", ArrayOf(ADD_PARTITIONS_TO_TXN_TRANSACTION), "4+",
          doc="list of transactions to add partitions to"),
    Field("v3_and_below_transactional_id", STRING, "0-3",
          doc="the transactional id corresponding to the transaction"),
    Field("v3_and_below_producer_id", INT64, "0-3",
          doc="current producer id in use by the transactional id"),
    Field("v3_and_below_producer_epoch", INT16, "0-3",
          doc="current epoch associated with the producer id"),
    Field("v3_and_below_topics", ArrayOf(ADD_PARTITIONS_TO_TXN_TOPIC), "0-3",
          doc="the partitions to add to the transaction"),
)

ADD_PARTITIONS_TO_TXN_PARTITION_RESULT = Struct(
    "AddPartitionsToTxnPartitionResult",
    Field("partition_index", INT32, doc="the partition indexes"),
    Field("partition_error_code", INT16, doc="the response error code"),
)

ADD_PARTITIONS_TO_TXN_TOPIC_RESULT = Struct(
    "AddPartitionsToTxnTopicResult",
    Field("name", STRING, doc="the topic name"),
    Field("results_by_partition", ArrayOf(ADD_PARTITIONS_TO_TXN_PARTITION_RESULT),
          doc="the results for each partition"),
)

ADD_PARTITIONS_TO_TXN_RESULT = Struct(
    "AddPartitionsToTxnResult",
    Field("transactional_id", STRING, "4+",
          doc="the transactional id corresponding to the transaction"),
    Field("topic_results", ArrayOf(ADD_PARTITIONS_TO_TXN_TOPIC_RESULT), "4+",
          doc="the results for each topic"),
)

RESPONSE = Struct(
    "AddPartitionsToTxnResponse",
    Field("throttle_time_ms", INT32,
          doc="duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("error_code", INT16, "4+", doc="the response top level error code"),
    Field("results_by_transaction", ArrayOf(ADD_PARTITIONS_TO_TXN_RESULT), "4+",
          doc="results categorized by transactional ID"),
    Field("results_by_topic_v3_and_below", ArrayOf(ADD_PARTITIONS_TO_TXN_TOPIC_RESULT), "0-3",
          doc="the results for each topic"),
)

API = ApiSpec("AddPartitionsToTxn", key=24, min_version=0, max_version=5, flexible_from=3,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 5))
request = API.request
response = API.response
