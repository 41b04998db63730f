"""Idempotent producer state per partition, sans-I/O (Kafka's ProducerStateManager).

For each producer id the broker keeps its epoch and the metadata of its last
five batches. An appended batch is checked against it *before* the log
append:

* an older epoch is fenced (INVALID_PRODUCER_EPOCH);
* a newer epoch must start again at sequence 0;
* a batch whose (first, last) sequence matches a cached one is a retry: it is
  acknowledged with the offsets it got the first time and not appended again;
* otherwise the first sequence must follow the last one (wrapping past
  Int.MAX to 0), else OUT_OF_ORDER_SEQUENCE_NUMBER.

State is rebuilt by replaying batch headers (``replay``) when a log loads.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kproto.errors import ErrorCode, KafkaError

NO_PRODUCER_ID = -1
NUM_BATCHES_TO_RETAIN = 5      # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
INT32_MAX = 2**31 - 1


class OutOfOrderSequenceError(KafkaError):
    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def next_sequence(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


class ProducerStateManager:
    """One per partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """Validate a batch before it is appended. Returns the cached metadata if
        it is a duplicate (the caller acknowledges without appending), None if
        it may be appended; raises a KafkaError otherwise."""
        if producer_id == NO_PRODUCER_ID or first_seq < 0:
            return None
        entry = self.producers.get(producer_id)
        if entry is None:
            return None      # unknown producer: state expired or new; Kafka accepts the sequence
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last seen epoch {entry.epoch}")
        if epoch > entry.epoch:
            if first_seq != 0:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {producer_id} at epoch {epoch}: "
                    f"{first_seq} (request epoch), 0 (expected)")
            return None
        for b in entry.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        if entry.batches and first_seq != next_sequence(entry.last_seq):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {producer_id} at offset ? in partition: "
                f"{first_seq} (incoming seq. number), {entry.last_seq} (current end sequence number)")
        return None

    def update(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int) -> None:
        """Record a batch that was appended (or replayed from the log)."""
        if producer_id == NO_PRODUCER_ID:
            return
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = self.producers[producer_id] = ProducerEntry(epoch)
        if first_seq >= 0:
            entry.batches.append(BatchMetadata(first_seq, last_seq, first_offset, last_offset, timestamp))

    def replay(self, batches) -> None:
        """Rebuild from batch headers (kproto.records.RecordBatch), oldest first."""
        for b in batches:
            if getattr(b, "magic", 2) == 2 and b.producer_id != NO_PRODUCER_ID and not b.is_control:
                self.update(b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence,
                            b.base_offset, b.last_offset, b.max_timestamp)


class ProducerIdManager:
    """Hands out producer ids for InitProducerId; the next id survives restarts
    through whatever the caller persists (``next_id``)."""

    def __init__(self, next_id: int = 1000) -> None:
        self.next_id = next_id

    def allocate(self) -> int:
        pid = self.next_id
        self.next_id += 1
        return pid
