"""WriteTxnMarkers (key 27): the transaction coordinator writes commit/abort markers to partition
leaders.

Ledger: v0-2 supported; v1+ flexible; the broker answers v0-2.

    v0   first version
    v1   flexible
    v2   request + markers.transaction_version
    not supported: nothing else in Kafka's definitions (up to Kafka 4.x as in kio 0.6.5).

The broker answers v0-2 (kproto.server.handlers.txn): the transaction
coordinator's own marker path, open to admin tools (abortTransaction).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    WriteTxnMarkers Request v2 (flexible):
      markers COMPACT_ARRAY of WritableTxnMarker
        producer_id INT64
        producer_epoch INT16
        transaction_result BOOLEAN
        topics COMPACT_ARRAY of WritableTxnMarkerTopic
          name COMPACT_STRING
          partition_indexes COMPACT_ARRAY of INT32
          TAG_BUFFER
        coordinator_epoch INT32
        transaction_version INT8
        TAG_BUFFER
      TAG_BUFFER

    WriteTxnMarkers Response v2 (flexible):
      markers COMPACT_ARRAY of WritableTxnMarkerResult
        producer_id INT64
        topics COMPACT_ARRAY of WritableTxnMarkerTopicResult
          name COMPACT_STRING
          partitions COMPACT_ARRAY of WritableTxnMarkerPartitionResult
            partition_index INT32
            error_code INT16
            TAG_BUFFER
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/WriteTxnMarkers{Request,Response}.json.
"""

from kproto.schemas.message import (
    INT8, INT16, INT32, INT64, BOOL, STRING, ApiSpec, ArrayOf, Field, Struct,
)

WRITABLE_TXN_MARKER_TOPIC = Struct(
    "WritableTxnMarkerTopic",
    Field("name", STRING, doc="the topic name"),
    Field("partition_indexes", ArrayOf(INT32),
          doc="the indexes of the partitions to write transaction markers for"),
)

WRITABLE_TXN_MARKER = Struct(
    "WritableTxnMarker",
    Field("producer_id", INT64, doc="the current producer ID"),
    Field("producer_epoch", INT16, doc="the current epoch associated with the producer ID"),
    Field("transaction_result", BOOL,
          doc="the result of the transaction to write to the partitions (false = ABORT, true = "
              "COMMIT)"),
    Field("topics", ArrayOf(WRITABLE_TXN_MARKER_TOPIC),
          doc="each topic that we want to write transaction marker(s) for"),
    Field("coordinator_epoch", INT32,
          doc="epoch associated with the transaction state partition hosted by this transaction "
              "coordinator"),
    Field("transaction_version", INT8, "2+",
          doc="transaction version of the marker. Ex: 0/1 = legacy (TV0/TV1), 2 = TV2 etc"),
)

REQUEST = Struct(
    "WriteTxnMarkersRequest",
    Field("markers", ArrayOf(WRITABLE_TXN_MARKER), doc="the transaction markers to be written"),
)

WRITABLE_TXN_MARKER_PARTITION_RESULT = Struct(
    "WritableTxnMarkerPartitionResult",
    Field("partition_index", INT32, doc="the partition index"),
    Field("error_code", INT16, doc="the error code, or 0 if there was no error"),
)

WRITABLE_TXN_MARKER_TOPIC_RESULT = Struct(
    "WritableTxnMarkerTopicResult",
    Field("name", STRING, doc="the topic name"),
    Field("partitions", ArrayOf(WRITABLE_TXN_MARKER_PARTITION_RESULT),
          doc="the results by partition"),
)

WRITABLE_TXN_MARKER_RESULT = Struct(
    "WritableTxnMarkerResult",
    Field("producer_id", INT64, doc="the current producer ID in use by the transactional ID"),
    Field("topics", ArrayOf(WRITABLE_TXN_MARKER_TOPIC_RESULT), doc="the results by topic"),
)

RESPONSE = Struct(
    "WriteTxnMarkersResponse",
    Field("markers", ArrayOf(WRITABLE_TXN_MARKER_RESULT), doc="the results for writing makers"),
)

API = ApiSpec("WriteTxnMarkers", key=27, min_version=0, max_version=2, flexible_from=1,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 2))
request = API.request
response = API.response
