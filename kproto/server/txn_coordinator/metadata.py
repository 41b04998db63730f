"""One transactional id's metadata and its two-step transitions (TransactionMetadata.scala).

A change is *prepared* (``prepare_*`` returns the target as a frozen
``TxnTransitMetadata`` and sets ``pending_state``), written to
``__transaction_state``, and only then *completed* (``complete_transition``).
While a change is pending, other requests answer CONCURRENT_TRANSACTIONS; if
the append fails the pending state is dropped (``abort_transition``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kproto.server.txn_coordinator.state import (
    TransactionState, VALID_PREVIOUS_STATES,
)

__all__ = ["TopicPartition", "TxnTransitMetadata", "TransactionMetadata", "NO_PRODUCER_ID",
           "NO_PRODUCER_EPOCH", "LAST_CLIENT_EPOCH", "TV_2", "supports_epoch_bump", "is_epoch_exhausted", "IllegalTransitionError"]

TopicPartition = tuple[str, int]
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
_SHORT_MAX = 32767
LAST_CLIENT_EPOCH = _SHORT_MAX - 1    # the highest epoch a client may hold (isEpochExhausted)
TV_2 = 2            # TransactionVersion.TV_2: the client bumps no epoch, every EndTxn does (KIP-890 part 2)

EMPTY = TransactionState.EMPTY
ONGOING = TransactionState.ONGOING
PREPARE_COMMIT = TransactionState.PREPARE_COMMIT
PREPARE_ABORT = TransactionState.PREPARE_ABORT
COMPLETE_COMMIT = TransactionState.COMPLETE_COMMIT
COMPLETE_ABORT = TransactionState.COMPLETE_ABORT
DEAD = TransactionState.DEAD
FENCE = TransactionState.PREPARE_EPOCH_FENCE


class IllegalTransitionError(Exception):
    """A transition the table forbids: a coordinator bug, or a foreign log's
    impossible state (Kafka's IllegalStateException)."""


def supports_epoch_bump(client_transaction_version: int) -> bool:
    """TransactionVersion.supportsEpochBump: transaction version 2 or newer."""
    return client_transaction_version >= TV_2


def is_epoch_exhausted(epoch: int) -> bool:
    """Epochs stop one short of Short.MaxValue so a fence can always bump once more."""
    return epoch >= LAST_CLIENT_EPOCH


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """The metadata a transition leads to: what the ``__transaction_state`` record says."""

    producer_id: int
    previous_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    next_producer_id: int = NO_PRODUCER_ID          # TV2: the id an epoch overflow rotates to
    client_transaction_version: int = 0             # the TransactionVersion the client used


@dataclass(eq=False, slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    txn_last_update_timestamp: int
    previous_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    pending_state: TransactionState | None = None
    # a fence whose append failed keeps its bumped epoch: do not bump it twice
    has_failed_epoch_fence: bool = False
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0

    @property
    def supports_epoch_bump(self) -> bool:
        return supports_epoch_bump(self.client_transaction_version)

    @property
    def is_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    # --- prepare --------------------------------------------------------------------

    def prepare_fence_epoch(self) -> TxnTransitMetadata:
        if self.producer_epoch == _SHORT_MAX:
            raise IllegalTransitionError("cannot fence a producer whose epoch is Short.MaxValue")
        epoch = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(FENCE, self.producer_id, epoch, NO_PRODUCER_EPOCH, self.txn_timeout_ms,
                             frozenset(self.topic_partitions), self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    def prepare_increment_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                now_ms: int) -> TxnTransitMetadata | None:
        """InitProducerId between transactions (KIP-360). None: the expected
        epoch is neither the current nor the last one (PRODUCER_FENCED)."""
        if self.is_epoch_exhausted:
            raise IllegalTransitionError(f"no producer epochs left for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch    # a retry of a bump that succeeded
        else:
            return None
        return self._prepare(EMPTY, self.producer_id, epoch, last, timeout_ms, frozenset(), -1, now_ms)

    def prepare_producer_id_rotation(self, producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        if self.state in (ONGOING, PREPARE_ABORT, PREPARE_COMMIT):
            raise IllegalTransitionError("cannot rotate producer ids while a transaction is pending")
        return self._prepare(EMPTY, producer_id, 0, self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, added: frozenset[TopicPartition], now_ms: int,
                               client_transaction_version: int = 0) -> TxnTransitMetadata:
        start = now_ms if self.state in (EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT) else self.txn_start_timestamp
        return self._prepare(ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.topic_partitions | added), start, now_ms,
                             tv=client_transaction_version)

    def prepare_abort_or_commit(self, state: TransactionState, now_ms: int, client_transaction_version: int = 0,
                                next_producer_id: int = NO_PRODUCER_ID, *,
                                no_partition_added: bool = False) -> TxnTransitMetadata:
        """TV2 bumps the epoch (the caller made sure it cannot overflow: ``next_producer_id``
        is the id to rotate to once the markers are written when this bump exhausts it; an
        abort at Short.MaxValue goes through unbumped). ``no_partition_added``: a TV2 abort
        with no transaction open, which starts now."""
        epoch, last = self.producer_epoch, self.last_producer_epoch
        if supports_epoch_bump(client_transaction_version):
            if not (self.producer_epoch == _SHORT_MAX and state is PREPARE_ABORT):
                epoch = self.producer_epoch + 1
            last = self.producer_epoch
        start = now_ms if no_partition_added else self.txn_start_timestamp
        return self._prepare(state, self.producer_id, epoch, last, self.txn_timeout_ms,
                             frozenset(self.topic_partitions), start, now_ms,
                             next_pid=next_producer_id, tv=client_transaction_version)

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        state = COMPLETE_COMMIT if self.state is PREPARE_COMMIT else COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        pid, epoch = self.producer_id, self.producer_epoch
        if self.supports_epoch_bump and self.next_producer_id != NO_PRODUCER_ID:
            pid, epoch = self.next_producer_id, 0      # the bump overflowed: the markers are out, rotate
        # the last epoch stays the one the client last saw (Kafka 4.x's prepareComplete)
        return self._prepare(state, pid, epoch, self.last_producer_epoch, self.txn_timeout_ms, frozenset(),
                             self.txn_start_timestamp, now_ms, tv=self.client_transaction_version)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare(DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    def _prepare(self, state: TransactionState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: frozenset[TopicPartition], start_ms: int, now_ms: int, *,
                 next_pid: int = NO_PRODUCER_ID, tv: int = 0) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransitionError(
                f"preparing a transition to {state.value} while {self.pending_state.value} is pending")
        if producer_id < 0:
            raise IllegalTransitionError(f"illegal new producer id {producer_id}")
        if state is not DEAD and epoch < 0:
            raise IllegalTransitionError(f"illegal new producer epoch {epoch}")
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalTransitionError(
                f"transactional id {self.transactional_id!r}: {self.state.value} -> {state.value} "
                "is not a valid transition")
        self.pending_state = state
        return TxnTransitMetadata(producer_id, self.producer_id, epoch, last_epoch, timeout_ms, state,
                                  partitions, start_ms, now_ms, next_pid, tv)

    # --- complete -------------------------------------------------------------------

    def complete_transition(self, t: TxnTransitMetadata) -> None:
        """The record for ``t`` is in the log: become it (completeTransitionTo)."""
        if self.pending_state is not t.state:
            raise IllegalTransitionError(f"completing {t.state.value} while {self.pending_state} is pending")
        if t.state is EMPTY:
            bump = t.producer_epoch == self.producer_epoch + 1 or (t.producer_epoch == 0 and
                                                                 t.producer_id != self.producer_id)
            if ((self.producer_epoch != t.producer_epoch and not bump) or t.topic_partitions
                    or t.txn_start_timestamp != -1):
                raise IllegalTransitionError(f"unexpected metadata {t}")
            self.txn_timeout_ms = t.txn_timeout_ms
            self.producer_epoch = t.producer_epoch
            self.last_producer_epoch = t.last_producer_epoch
            self.producer_id = t.producer_id
            self.previous_producer_id = t.previous_producer_id
        elif t.state is ONGOING:
            if not self._same_producer(t) or not self.topic_partitions <= t.topic_partitions:
                raise IllegalTransitionError(f"unexpected metadata {t}")
            self.txn_start_timestamp = t.txn_start_timestamp
            self.topic_partitions |= t.topic_partitions
        elif t.state in (PREPARE_ABORT, PREPARE_COMMIT):
            if not self._same_producer(t) or self.topic_partitions != t.topic_partitions:
                raise IllegalTransitionError(f"unexpected metadata {t}")
            # a TV2 abort may start from no transaction (Empty, Complete*): it starts then
            self.txn_start_timestamp = t.txn_start_timestamp
            if supports_epoch_bump(t.client_transaction_version):
                self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
                self.next_producer_id = t.next_producer_id
        elif t.state in (COMPLETE_ABORT, COMPLETE_COMMIT):
            if not self._same_producer(t) or t.txn_start_timestamp == -1:
                raise IllegalTransitionError(f"unexpected metadata {t}")
            self.txn_start_timestamp = t.txn_start_timestamp
            self.topic_partitions.clear()
            self.last_producer_epoch = t.last_producer_epoch
            if supports_epoch_bump(t.client_transaction_version):
                self.producer_epoch = t.producer_epoch
                self.previous_producer_id, self.producer_id = t.previous_producer_id, t.producer_id
                self.next_producer_id = t.next_producer_id
        else:
            # Dead ends in removal from the cache; a fence always continues to PrepareAbort
            raise IllegalTransitionError(f"a transition to {t.state.value} is never completed")
        self.client_transaction_version = t.client_transaction_version
        self.txn_last_update_timestamp = t.txn_last_update_timestamp
        self.pending_state = None
        self.state = t.state

    def abort_transition(self) -> None:
        """The append failed: the change never happened."""
        self.pending_state = None

    def _same_producer(self, t: TxnTransitMetadata) -> bool:
        """validProducerEpoch: with TV2 a Prepare* record carries the bumped epoch (its last
        epoch is the current one) and an overflowed Complete* the next id at epoch 0."""
        tv2 = supports_epoch_bump(t.client_transaction_version)
        if t.txn_timeout_ms != self.txn_timeout_ms:
            return False
        if tv2 and t.state in (COMPLETE_COMMIT, COMPLETE_ABORT) and t.producer_epoch == 0:
            # the overflow: the id was rotated, the last epoch is the one the client last saw
            return t.previous_producer_id == self.producer_id and t.last_producer_epoch == self.last_producer_epoch
        epoch = t.last_producer_epoch if tv2 and t.state in (PREPARE_COMMIT, PREPARE_ABORT) else t.producer_epoch
        return epoch == self.producer_epoch and t.producer_id == self.producer_id
