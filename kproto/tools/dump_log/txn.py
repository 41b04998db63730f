"""``kproto dump-log`` on ``.txnindex`` and ``.snapshot`` files, as DumpLogSegments prints them.

    .txnindex  version: 0 producerId: P firstOffset: F lastOffset: L lastStableOffset: LSO
    .snapshot  producerId: P producerEpoch: E coordinatorEpoch: C currentTxnFirstOffset: OptionalLong.empty
               lastTimestamp: T firstSequence: F lastSequence: L lastOffset: O offsetDelta: D timestamp: T

(one line each; ``dumpTxnIndex`` / ``dumpProducerIdSnapshot`` of the Scala tool,
3.5-3.9: OptionalLong where 3.4 and older print Scala's None/Some, a space
before ``firstSequence`` and none at the end when the producer has a batch,
a trailing space when it has none). A corrupt snapshot's message goes to
stderr, as Kafka prints it; kproto adds the file and byte and goes on.
"""

from __future__ import annotations

from pathlib import Path

from kproto.errors import CorruptRecordError
from kproto.log.producer_state import read_snapshot
from kproto.log.txn_index import parse_txn_index
from kproto.tools import render as R

__all__ = ["dump_txn_index", "dump_producer_snapshot"]


def dump_txn_index(run, arg: str, shown: str) -> None:
    """``run``: dump-log's _Run (``header`` writes a line, or a JSON object under --json).
    The entries before a bad one are printed, as Kafka's iterator prints them, then the error."""
    data = Path(arg).read_bytes()
    try:
        entries, error = parse_txn_index(data, shown), None
    except CorruptRecordError as e:
        entries, error = parse_txn_index(data[:e.position], shown), e
    for t in entries:
        run.header(f"version: {t.version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
                   f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}",
                   version=t.version, producerId=t.producer_id, firstOffset=t.first_offset,
                   lastOffset=t.last_offset, lastStableOffset=t.last_stable_offset)
    if error is not None:
        raise error


def dump_producer_snapshot(run, arg: str, shown: str) -> None:
    for e in read_snapshot(Path(arg).read_bytes(), shown):
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                f"coordinatorEpoch: {e.coordinator_epoch} "
                f"currentTxnFirstOffset: {R.optional_long(e.current_txn_first_offset)} "
                f"lastTimestamp: {e.last_timestamp} ")
        fields = dict(producerId=e.producer_id, producerEpoch=e.producer_epoch,
                      coordinatorEpoch=e.coordinator_epoch, currentTxnFirstOffset=e.current_txn_first_offset,
                      lastTimestamp=e.last_timestamp)
        if e.batches:
            b = e.batches[0]
            line += (f"firstSequence: {b.first_seq} lastSequence: {b.last_seq} lastOffset: {b.last_offset} "
                     f"offsetDelta: {b.offset_delta} timestamp: {b.timestamp}")
            fields.update(firstSequence=b.first_seq, lastSequence=b.last_seq, lastOffset=b.last_offset,
                          offsetDelta=b.offset_delta, timestamp=b.timestamp)
        run.header(line, **fields)
