"""Producer state per partition, sans-I/O but for its snapshot files (Kafka's
ProducerStateManager, ProducerAppendInfo, ProducerStateEntry).

For each producer id the log keeps its epoch, the metadata of its last five
batches, the coordinator epoch of its last marker and the first offset of its
open transaction. It serves three purposes:

* idempotence (``find_duplicate`` in the log's append path, before anything
  is written): an older epoch is fenced (INVALID_PRODUCER_EPOCH); a newer epoch
  must start at sequence 0; a batch whose sequences match one of the last five
  is a retry, acknowledged with that batch's offsets and nothing written;
  otherwise the first sequence must follow the last (wrapping past Int.MAX to
  0), else OUT_OF_ORDER_SEQUENCE_NUMBER;
* transactions (``validate`` before, ``on_batch`` after an append): data of an
  open transaction must stay transactional (INVALID_TXN_STATE), a marker from
  an older coordinator epoch is refused (TRANSACTION_COORDINATOR_FENCED); a
  marker completes the producer's transaction (``CompletedTxn``);
* the last stable offset: the first offset of the oldest open transaction.

Snapshots (``<offset>.snapshot``, kproto.schemas.transaction_files) hold each
producer's entry with its last batch only, at the log end offset ``offset``,
so opening a log replays only the batches after the newest one. A snapshot that
fails its checks is skipped (and deleted) with a warning, never fatal.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kproto.fastpath import header_struct
from kproto.errors import CorruptRecordError, ErrorCode, KafkaError
from kproto.records import RecordBatch, control_record, crc32c
from kproto.schemas.transaction_files import (
    PRODUCER_SNAPSHOT_CRC_FROM, PRODUCER_SNAPSHOT_ENTRY_SIZE, PRODUCER_SNAPSHOT_HEADER_SIZE,
    PRODUCER_SNAPSHOT_VERSION, ProducerSnapshotEntry, ProducerSnapshotHeader,
)

__all__ = ["NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "NO_SEQUENCE", "NUM_BATCHES_TO_RETAIN", "SNAPSHOT_SUFFIX",
           "OutOfOrderSequenceError", "InvalidProducerEpochError", "InvalidTxnStateError",
           "TransactionCoordinatorFencedError", "CorruptSnapshotError", "BatchMetadata", "ProducerStateEntry",
           "CompletedTxn", "ProducerStateManager", "next_sequence", "read_snapshot", "write_snapshot",
           "snapshot_path", "list_snapshots"]

log = logging.getLogger("kproto.log")

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NUM_BATCHES_TO_RETAIN = 5      # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
INT32_MAX = 2**31 - 1
SNAPSHOT_SUFFIX = ".snapshot"
_HEADER, _ = header_struct(ProducerSnapshotHeader)
_ENTRY, _ = header_struct(ProducerSnapshotEntry)


class OutOfOrderSequenceError(KafkaError):
    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(KafkaError):
    error_code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(KafkaError):
    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class CorruptSnapshotError(CorruptRecordError):
    """A ``.snapshot`` file that fails Kafka's checks (CorruptSnapshotException)."""


def next_sequence(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


def decrement_sequence(seq: int, delta: int) -> int:
    """DefaultRecordBatch.decrementSequence: sequences wrap past Int.MAX to 0."""
    return seq - delta if seq >= delta else INT32_MAX - (delta - seq) + 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch: Kafka keeps the last sequence and offset and the delta to the first."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def maybe_update_epoch(self, epoch: int) -> None:
        """A new epoch forgets the old epoch's batches (maybeUpdateProducerEpoch)."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self.maybe_update_epoch(epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int          # the marker's offset
    is_aborted: bool


class ProducerStateManager:
    """One per partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns: dict[int, int] = {}       # first offset -> producer id, oldest first
        self.map_end_offset = 0                     # the offset after the last batch applied

    # --- idempotence ------------------------------------------------------------------

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """One data batch against its producer's state: the cached metadata if it
        is a retry of one of the last five batches (ProducerStateEntry.findDuplicateBatch),
        None if it may be appended; a KafkaError otherwise (ProducerAppendInfo.checkProducerEpoch
        / checkSequence)."""
        if producer_id == NO_PRODUCER_ID or first_seq < 0:
            return None
        entry = self.producers.get(producer_id)
        if entry is None or entry.producer_epoch == NO_PRODUCER_EPOCH:
            return None      # unknown producer: state expired or new; Kafka accepts the sequence
        return _check_sequence(producer_id, epoch, first_seq, last_seq, entry.producer_epoch, entry.batches)

    def find_duplicate(self, batches: Iterable) -> BatchMetadata | None:
        """A client append's batches, offsets assigned, before they are written
        (UnifiedLog.analyzeAndValidateProducerState): the metadata of the first one
        that repeats a batch its producer already appended (the log then writes
        nothing and answers with that batch's offsets), else None. A batch the
        producer's state refuses raises, as ``check``. A producer's later batches
        in the same append are checked against its earlier ones there."""
        earlier: dict[int, tuple[int, BatchMetadata]] = {}     # producer id -> (epoch, its last batch here)
        for b in batches:
            if not isinstance(b, RecordBatch) or b.producer_id == NO_PRODUCER_ID or b.is_control \
                    or b.base_sequence < 0:
                continue
            pid = b.producer_id
            if pid in earlier:
                epoch, last = earlier[pid]
                _check_sequence(pid, b.producer_epoch, b.base_sequence, b.last_sequence, epoch, (last,),
                                duplicates=False)
            else:
                duplicate = self.check(pid, b.producer_epoch, b.base_sequence, b.last_sequence)
                if duplicate is not None:
                    return duplicate
            earlier[pid] = (b.producer_epoch, BatchMetadata(b.last_sequence, b.last_offset,
                                                            b.last_offset - b.base_offset, b.max_timestamp))
        return None

    def update(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int) -> None:
        """Record a data batch that is in the log (ProducerAppendInfo.appendDataBatch);
        a batch without sequences (``first_seq`` -1) only moves the epoch."""
        entry = self.producers.setdefault(producer_id, ProducerStateEntry(producer_id))
        if first_seq >= 0:
            entry.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, timestamp)
        else:
            entry.maybe_update_epoch(epoch)
            entry.last_timestamp = timestamp
        self.map_end_offset = max(self.map_end_offset, last_offset + 1)

    # --- transactions -----------------------------------------------------------------

    def validate(self, batch: RecordBatch) -> None:
        """Before an append (ProducerAppendInfo's checks besides sequences)."""
        if batch.producer_id == NO_PRODUCER_ID:
            return
        entry = self.producers.get(batch.producer_id)
        if entry is None:
            return
        if batch.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {batch.producer_id} at offset {batch.base_offset} is {batch.producer_epoch}, "
                f"which is smaller than the last seen epoch {entry.producer_epoch}")
        if batch.is_control:
            marker = _marker(batch)
            if marker is not None and entry.coordinator_epoch > (marker.coordinator_epoch or 0):
                raise TransactionCoordinatorFencedError(
                    f"Invalid coordinator epoch for producerId {batch.producer_id} at offset {batch.base_offset}: "
                    f"{marker.coordinator_epoch} (zombie), {entry.coordinator_epoch} (current)")
        elif entry.current_txn_first_offset is not None and not batch.is_transactional:
            raise InvalidTxnStateError(f"Expected transactional write from producer {batch.producer_id} at "
                                       f"offset {batch.base_offset}")

    def on_batch(self, batch: RecordBatch) -> CompletedTxn | None:
        """Apply a batch that is in the log (appended or replayed), offsets assigned.
        A marker returns the transaction it ends (None if none was open);
        call ``complete_txn`` once the txnindex knows of it."""
        self.map_end_offset = max(self.map_end_offset, batch.next_offset)
        if not isinstance(batch, RecordBatch) or batch.producer_id == NO_PRODUCER_ID:
            return None
        pid = batch.producer_id
        entry = self.producers.setdefault(pid, ProducerStateEntry(pid))
        if batch.is_control:
            marker = _marker(batch)
            if marker is None or marker.type not in (0, 1):
                return None
            first = entry.current_txn_first_offset
            entry.maybe_update_epoch(batch.producer_epoch)
            entry.coordinator_epoch = marker.coordinator_epoch or 0
            entry.current_txn_first_offset = None
            entry.last_timestamp = batch.max_timestamp
            if first is None:
                return None
            return CompletedTxn(pid, first, batch.base_offset, marker.type == 0)
        self.update(pid, batch.producer_epoch, batch.base_sequence, batch.last_sequence, batch.base_offset,
                    batch.last_offset, batch.max_timestamp)
        if batch.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = batch.base_offset
            self.ongoing_txns[batch.base_offset] = pid
            self.ongoing_txns = dict(sorted(self.ongoing_txns.items()))
        return None

    def complete_txn(self, txn: CompletedTxn) -> None:
        self.ongoing_txns.pop(txn.first_offset, None)

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` is done: the oldest other open transaction, else past the marker."""
        for first, pid in self.ongoing_txns.items():
            if pid != completed.producer_id:
                return first
        return completed.last_offset + 1

    @property
    def first_unstable_offset(self) -> int | None:
        return next(iter(self.ongoing_txns), None)

    def replay(self, batches: Iterable) -> list[CompletedTxn]:
        """Rebuild from batches, oldest first; returns the aborted transactions seen."""
        aborted = []
        for b in batches:
            done = self.on_batch(b)
            if done is not None:
                self.complete_txn(done)
                if done.is_aborted:
                    aborted.append(done)
        return aborted

    # --- snapshots --------------------------------------------------------------------

    def snapshot_bytes(self) -> bytes:
        body = bytearray(_HEADER.pack(PRODUCER_SNAPSHOT_VERSION, 0, len(self.producers)))
        for pid, e in self.producers.items():
            last = e.batches[-1] if e.batches else None
            body += _ENTRY.pack(pid, e.producer_epoch, e.last_seq, e.last_data_offset,
                                last.offset_delta if last else 0, e.last_timestamp, e.coordinator_epoch,
                                -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
        body[2:6] = crc32c(bytes(body[PRODUCER_SNAPSHOT_CRC_FROM:])).to_bytes(4, "big")
        return bytes(body)

    def load_entries(self, entries: Iterable[ProducerStateEntry], offset: int) -> None:
        self.producers = {e.producer_id: e for e in entries}
        self.ongoing_txns = dict(sorted((e.current_txn_first_offset, e.producer_id)
                                        for e in self.producers.values() if e.current_txn_first_offset is not None))
        self.map_end_offset = offset


def _check_sequence(producer_id: int, epoch: int, first_seq: int, last_seq: int, current_epoch: int,
                    batches: Iterable[BatchMetadata], *, duplicates: bool = True) -> BatchMetadata | None:
    """A data batch after ``batches`` of epoch ``current_epoch``: the one it repeats
    (if ``duplicates``), None if it follows them, else the error."""
    if epoch < current_epoch:
        raise InvalidProducerEpochError(
            f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last seen epoch "
            f"{current_epoch}")
    if epoch > current_epoch:
        if first_seq != 0:
            raise OutOfOrderSequenceError(
                f"Invalid sequence number for new epoch of producer {producer_id}: {epoch} (request epoch), "
                f"{first_seq} (seq. number), {current_epoch} (current producer epoch)")
        return None
    last = None
    for b in batches:
        if duplicates and b.first_seq == first_seq and b.last_seq == last_seq:
            return b
        last = b
    if last is not None and first_seq != next_sequence(last.last_seq):
        raise OutOfOrderSequenceError(
            f"Out of order sequence number for producer {producer_id}: {first_seq} (incoming seq. number), "
            f"{last.last_seq} (current end sequence number)")
    return None


def _marker(batch: RecordBatch):
    records = batch.records()
    return control_record(records[0]) if records else None


# --- snapshot files -------------------------------------------------------------------

def snapshot_path(dir: Path, offset: int) -> Path:
    return Path(dir) / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def list_snapshots(dir: Path) -> list[tuple[int, Path]]:
    """(offset, path) of the snapshot files in ``dir``, oldest first."""
    out = []
    for p in Path(dir).glob("*" + SNAPSHOT_SUFFIX):
        stem = p.name[:-len(SNAPSHOT_SUFFIX)]
        if len(stem) == 20 and stem.isdigit():
            out.append((int(stem), p))
    return sorted(out)


def read_snapshot(data: bytes, file: str | None = None) -> list[ProducerStateEntry]:
    """ProducerStateManager.readSnapshot, with Kafka's messages."""
    if len(data) < 2:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {len(data)} bytes, no version",
                                   position=0, file=file)
    version = int.from_bytes(data[:2], "big", signed=True)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}", position=0, file=file)
    if len(data) < PRODUCER_SNAPSHOT_HEADER_SIZE:
        raise CorruptSnapshotError("Snapshot failed schema validation: the header is cut short",
                                   position=len(data), file=file)
    _, crc, count = _HEADER.unpack_from(data, 0)
    end = PRODUCER_SNAPSHOT_HEADER_SIZE + count * PRODUCER_SNAPSHOT_ENTRY_SIZE
    if count < 0 or end > len(data):
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {count} entries need {end} bytes, "
                                   f"the file has {len(data)}", position=6, file=file)
    computed = crc32c(bytes(data[PRODUCER_SNAPSHOT_CRC_FROM:]))
    if crc != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                   f"Computed crc: {computed}", position=2, file=file)
    entries = []
    for pos in range(PRODUCER_SNAPSHOT_HEADER_SIZE, end, PRODUCER_SNAPSHOT_ENTRY_SIZE):
        pid, epoch, last_seq, last_offset, delta, ts, coordinator_epoch, txn_first = _ENTRY.unpack_from(data, pos)
        entry = ProducerStateEntry(pid, epoch, coordinator_epoch, ts, None if txn_first < 0 else txn_first)
        if last_offset >= 0:
            entry.batches.append(BatchMetadata(last_seq, last_offset, delta, ts))
        entries.append(entry)
    return entries


def write_snapshot(path: Path, state: ProducerStateManager, *, sync: bool = True) -> None:
    """Write via a temporary file so a crash never leaves half a snapshot under the real name."""
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "wb") as f:
        f.write(state.snapshot_bytes())
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def load_latest_snapshot(dir: Path, max_offset: int) -> tuple[ProducerStateManager, int | None]:
    """The state of the newest readable snapshot at or below ``max_offset`` and
    its offset; unreadable ones are deleted with a warning, as Kafka does."""
    state = ProducerStateManager()
    for offset, path in reversed(list_snapshots(dir)):
        if offset > max_offset:
            continue
        try:
            entries = read_snapshot(path.read_bytes(), str(path))
        except (CorruptSnapshotError, OSError) as e:
            log.warning("Failed to load producer snapshot from '%s': %s", path, e)
            path.unlink(missing_ok=True)
            continue
        state.load_entries(entries, offset)
        return state, offset
    return state, None
