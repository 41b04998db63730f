"""Kafka's transaction files in a partition directory (all big-endian, no padding).

    <base>.txnindex   entries of AbortedTxn (34 bytes), append-only, not preallocated:
                      version int16 (0), producer_id int64, first_offset int64,
                      last_offset int64 (the ABORT marker), last_stable_offset int64
    <offset>.snapshot producer state at log end offset <offset> (ProducerSnapshot.json v1):
                      version int16 (1), crc uint32 (CRC32C of everything from byte 6),
                      count int32, then count ProducerEntry (46 bytes):
                      producer_id int64, epoch int16, last_sequence int32, last_offset int64
                      (-1: no batch), offset_delta int32, timestamp int64,
                      coordinator_epoch int32, current_txn_first_offset int64 (-1: none)

doc-ref: storage/src/main/java/org/apache/kafka/storage/internals/log/AbortedTxn.java,
TransactionIndex.java, ProducerStateManager.java; storage/src/main/resources/message/
ProducerSnapshot.json (trunk 1eb76443; the layouts are unchanged since 0.11).
"""

from construct import Struct

from kproto.schemas.primitives import Int16, Int32, Int64, UInt32

__all__ = ["AbortedTxnEntry", "ABORTED_TXN_SIZE", "ABORTED_TXN_VERSION", "ProducerSnapshotHeader",
           "PRODUCER_SNAPSHOT_HEADER_SIZE", "PRODUCER_SNAPSHOT_VERSION", "PRODUCER_SNAPSHOT_CRC_FROM",
           "ProducerSnapshotEntry", "PRODUCER_SNAPSHOT_ENTRY_SIZE"]

AbortedTxnEntry = Struct(
    "version" / Int16,
    "producer_id" / Int64,
    "first_offset" / Int64,
    "last_offset" / Int64,
    "last_stable_offset" / Int64,
)
ABORTED_TXN_SIZE = 34
ABORTED_TXN_VERSION = 0

ProducerSnapshotHeader = Struct(
    "version" / Int16,
    "crc" / UInt32,
    "count" / Int32,
)
PRODUCER_SNAPSHOT_HEADER_SIZE = 10
PRODUCER_SNAPSHOT_VERSION = 1
PRODUCER_SNAPSHOT_CRC_FROM = 6          # the CRC covers the count and the entries

ProducerSnapshotEntry = Struct(
    "producer_id" / Int64,
    "epoch" / Int16,
    "last_sequence" / Int32,
    "last_offset" / Int64,
    "offset_delta" / Int32,
    "timestamp" / Int64,
    "coordinator_epoch" / Int32,
    "current_txn_first_offset" / Int64,
)
PRODUCER_SNAPSHOT_ENTRY_SIZE = 46
