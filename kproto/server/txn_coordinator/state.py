"""Transaction states and the table of what each request does in each state.

Theory of operation (Kafka's TransactionMetadata.scala / TransactionCoordinator.scala,
transactions version 0/1: the epoch is bumped by InitProducerId and fencing only):

* ``Empty`` -- a producer id and epoch, no transaction. InitProducerId bumps
  the epoch; the first AddPartitionsToTxn/AddOffsetsToTxn starts a transaction.
* ``Ongoing`` -- partitions were added; records flow. EndTxn prepares the
  commit or abort; the transaction timeout, or an InitProducerId from a new
  instance of the producer, fences the epoch and aborts it.
* ``PrepareCommit`` / ``PrepareAbort`` -- the decision is in ``__transaction_state``;
  COMMIT/ABORT markers are being written to every partition of the transaction.
  Everything but a retry of the same EndTxn waits (CONCURRENT_TRANSACTIONS).
* ``CompleteCommit`` / ``CompleteAbort`` -- every marker is written; the next
  transaction may begin.
* ``Dead`` -- the transactional id expired (``transactional.id.expiration.ms``)
  and its tombstone is being written.
* ``PrepareEpochFence`` -- a fence in flight: the epoch is bumped on the way to
  ``PrepareAbort``. Like ``Dead`` it is a *pending* state in Kafka, never one
  a transaction rests in; it is seen at rest only in a log written by someone
  else, where Kafka fails the request (IllegalStateException: UNKNOWN_SERVER_ERROR).

Two tables live here and nowhere else:

``VALID_PREVIOUS_STATES``
    every state change the coordinator may make (Kafka's ``validPreviousStates``);
    ``TransactionMetadata.prepare_transition`` enforces it.
``REQUEST_OUTCOMES``
    for every (state, ``TxnEvent``) pair: the answer, the state once the
    ``__transaction_state`` record (if any) is appended, whether such a record
    is written first (``appends``: the answer waits for it), and which markers
    follow (``markers``). It is total; tests sweep every pair against the
    running coordinator.

A ``TxnEvent`` is a request *after* the coordinator has checked who sent it:
requests for an unknown transactional id or another producer id answer
INVALID_PRODUCER_ID_MAPPING, an older epoch PRODUCER_FENCED, and a transaction
with a state change already in flight CONCURRENT_TRANSACTIONS, before the
state matters, in that order, as Kafka checks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kproto.errors import ErrorCode

__all__ = ["TransactionState", "TransactionResult", "TxnEvent", "Outcome", "VALID_PREVIOUS_STATES",
           "REQUEST_OUTCOMES", "outcome_for", "can_transition", "state_from_id"]


class TransactionState(Enum):
    """The value is the name Kafka reports (DescribeTransactions, ListTransactions)."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @property
    def id(self) -> int:
        """``TransactionStatus`` in ``__transaction_state`` (TransactionState.id)."""
        return _IDS[self]


_IDS = {s: i for i, s in enumerate(TransactionState)}
_BY_ID = {i: s for s, i in _IDS.items()}


def state_from_id(state_id: int) -> TransactionState:
    """Kafka's ``TransactionState.fromId``; ValueError for an id it does not know."""
    try:
        return _BY_ID[state_id]
    except KeyError:
        raise ValueError(f"Unknown transaction state id {state_id} from the transaction status message") from None


class TransactionResult(Enum):
    """What markers say; the value is the control record type (ControlRecordType)."""

    ABORT = 0
    COMMIT = 1


EMPTY = TransactionState.EMPTY
ONGOING = TransactionState.ONGOING
PREPARE_COMMIT = TransactionState.PREPARE_COMMIT
PREPARE_ABORT = TransactionState.PREPARE_ABORT
COMPLETE_COMMIT = TransactionState.COMPLETE_COMMIT
COMPLETE_ABORT = TransactionState.COMPLETE_ABORT
DEAD = TransactionState.DEAD
FENCE = TransactionState.PREPARE_EPOCH_FENCE

# target state -> the states it may be entered from (TransactionMetadata.scala validPreviousStates)
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    # InitProducerId: a new id, or an epoch bump between transactions
    EMPTY: frozenset({EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    # AddPartitionsToTxn / AddOffsetsToTxn
    ONGOING: frozenset({ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    # EndTxn(commit)
    PREPARE_COMMIT: frozenset({ONGOING}),
    # EndTxn(abort), or the abort that completes a fence; transaction version 2 may abort
    # with no transaction open (an epoch bump only)
    PREPARE_ABORT: frozenset({ONGOING, FENCE, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    # every marker written
    COMPLETE_COMMIT: frozenset({PREPARE_COMMIT}),
    COMPLETE_ABORT: frozenset({PREPARE_ABORT}),
    # transactional.id.expiration.ms ran out with no transaction open
    DEAD: frozenset({EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT}),
    # the transaction timed out, or a new producer instance called InitProducerId
    FENCE: frozenset({ONGOING}),
}

def can_transition(source: TransactionState, target: TransactionState) -> bool:
    return source in VALID_PREVIOUS_STATES[target]


class TxnEvent(Enum):
    """A request or timer, classified by who sent it (see the module docstring)."""

    INIT_PRODUCER_ID = "InitProducerId from the current producer (or one that does not know its epoch)"
    ADD_PARTITIONS = "AddPartitionsToTxn/AddOffsetsToTxn with a partition not in the transaction"
    ADD_PARTITIONS_AGAIN = "AddPartitionsToTxn repeating the partitions of the current or last transaction"
    END_TXN_COMMIT = "EndTxn(commit) from the current epoch"
    END_TXN_ABORT = "EndTxn(abort) from the current epoch"
    DESCRIBE = "DescribeTransactions"
    TIMEOUT = "transaction.timeout.ms ran out (the periodic abort sweep)"
    EXPIRE = "transactional.id.expiration.ms ran out (the periodic expiration sweep)"


@dataclass(frozen=True, slots=True)
class Outcome:
    """``answer`` is the error the request gets (``NONE`` for success and for
    timers); ``next_state`` the transaction's state once the record is appended;
    ``appends`` says a ``__transaction_state`` record is written first and the
    answer waits for it; ``markers`` the markers then written to every
    partition of the transaction (None: none)."""

    answer: ErrorCode
    next_state: TransactionState
    appends: bool = False
    markers: TransactionResult | None = None


def _table() -> dict[TransactionState, dict[TxnEvent, Outcome]]:
    E = TxnEvent
    NONE = ErrorCode.NONE
    WAIT = ErrorCode.CONCURRENT_TRANSACTIONS
    INVALID = ErrorCode.INVALID_TXN_STATE
    ILLEGAL = ErrorCode.UNKNOWN_SERVER_ERROR      # Kafka: IllegalStateException, "should never happen"
    COMMIT, ABORT = TransactionResult.COMMIT, TransactionResult.ABORT

    def ok(state, appends=False, markers=None):
        return Outcome(NONE, state, appends, markers)

    def no(code, state):
        return Outcome(code, state)

    def between(state):
        """Empty and the two Complete states: no transaction open."""
        return {
            E.INIT_PRODUCER_ID: ok(EMPTY, appends=True),              # the epoch is bumped
            E.ADD_PARTITIONS: ok(ONGOING, appends=True),
            E.ADD_PARTITIONS_AGAIN: ok(ONGOING, appends=True),        # the last set was cleared
            E.END_TXN_COMMIT: ok(state) if state is COMPLETE_COMMIT else no(INVALID, state),
            E.END_TXN_ABORT: ok(state) if state is COMPLETE_ABORT else no(INVALID, state),
            E.DESCRIBE: ok(state),
            E.TIMEOUT: ok(state),
            E.EXPIRE: ok(DEAD, appends=True),              # isExpirationAllowed: a tombstone
        }

    def preparing(state, result):
        """The decision is written; markers are on their way."""
        same = E.END_TXN_COMMIT if result is COMMIT else E.END_TXN_ABORT
        other = E.END_TXN_ABORT if result is COMMIT else E.END_TXN_COMMIT
        return {
            E.INIT_PRODUCER_ID: no(WAIT, state),
            E.ADD_PARTITIONS: no(WAIT, state),
            E.ADD_PARTITIONS_AGAIN: no(WAIT, state),
            same: no(WAIT, state),                                     # a retry: not done yet
            other: no(INVALID, state),
            E.DESCRIBE: ok(state),
            E.TIMEOUT: ok(state),
            E.EXPIRE: ok(state),
        }

    def illegal(state, describe):
        """At rest only in a foreign log: Kafka fails every state change."""
        return {**{e: no(ILLEGAL, state) for e in E}, E.DESCRIBE: describe,
                E.TIMEOUT: ok(state), E.EXPIRE: ok(state)}

    table = {
        EMPTY: between(EMPTY),
        ONGOING: {
            # fence the old instance: abort with a bumped epoch, let the new one retry
            E.INIT_PRODUCER_ID: Outcome(WAIT, PREPARE_ABORT, appends=True, markers=ABORT),
            E.ADD_PARTITIONS: ok(ONGOING, appends=True),
            E.ADD_PARTITIONS_AGAIN: ok(ONGOING),                       # nothing to write
            E.END_TXN_COMMIT: ok(PREPARE_COMMIT, appends=True, markers=COMMIT),
            E.END_TXN_ABORT: ok(PREPARE_ABORT, appends=True, markers=ABORT),
            E.DESCRIBE: ok(ONGOING),
            E.TIMEOUT: ok(PREPARE_ABORT, appends=True, markers=ABORT),  # through PrepareEpochFence
            E.EXPIRE: ok(ONGOING),
        },
        PREPARE_COMMIT: preparing(PREPARE_COMMIT, COMMIT),
        PREPARE_ABORT: preparing(PREPARE_ABORT, ABORT),
        COMPLETE_COMMIT: between(COMPLETE_COMMIT),
        COMPLETE_ABORT: between(COMPLETE_ABORT),
        DEAD: illegal(DEAD, no(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, DEAD)),
        FENCE: illegal(FENCE, ok(FENCE)),
    }
    for state, row in table.items():
        missing = set(TxnEvent) - set(row)
        assert not missing, f"{state}: no outcome for {missing}"
        for event, outcome in row.items():
            assert outcome.next_state is state or can_transition(state, outcome.next_state), (state, event)
            assert not outcome.markers or outcome.appends, (state, event)
    return table


REQUEST_OUTCOMES: dict[TransactionState, dict[TxnEvent, Outcome]] = _table()


def outcome_for(state: TransactionState, event: TxnEvent) -> Outcome:
    return REQUEST_OUTCOMES[state][event]
