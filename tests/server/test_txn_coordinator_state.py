"""The transaction state table against the running coordinator.

``REQUEST_OUTCOMES`` says, for every (transaction state, classified request or
timer), the answer, whether a ``__transaction_state`` record is written first,
the state once it is, and the markers ordered next. The sweep puts transaction
"t" in each state with real requests (the two states Kafka never rests in come
from a loaded log), fires each event and checks the coordinator does what the
table says; a random simulation of producers, zombies, timeouts, a slow log and
failing marker writes checks the coordinator's invariants.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kproto.errors import ErrorCode
from kproto.server.txn_coordinator import (
    REQUEST_OUTCOMES, VALID_PREVIOUS_STATES, AddOffsetsToTxnRequest, AddPartitionsToTxnRequest,
    DescribeTransactionsRequest, EndTxnRequest, InitProducerIdRequest, ListTransactionsRequest, Pending,
    TransactionResult, TransactionState, TxnEvent,
)
from kproto.server.txn_coordinator.state import can_transition
from kproto.schemas import transaction_log as TL
from tests.server.helpers import TxnHarness as Harness
from tests.server.helpers import loaded_txn_record as loaded_record

E = ErrorCode
S = TransactionState

# Kafka 3.x's answers (transaction.version 0), written out from TransactionCoordinator.scala
# (handleInitProducerId / handleAddPartitionsToTransaction / endTransaction / handleDescribeTransactions,
# abortTimedOutTransactions) and TransactionStateManager.scala (timedOutTransactions, shouldExpire),
# independently of the module's table: <error code>, "w" when a __transaction_state record is written
# first, ">X" the state once it is (E O PC PA CC CA D F), "!C"/"!A" the markers ordered next.
# Dead and PrepareEpochFence at rest throw IllegalStateException in Kafka (-1, UNKNOWN_SERVER_ERROR).
KAFKA_3X = """
                      Empty   Ongoing   PrepareCommit PrepareAbort CompleteCommit CompleteAbort Dead  PrepareEpochFence
INIT_PRODUCER_ID      0w>E    51w>PA!A  51            51           0w>E           0w>E          -1    -1
ADD_PARTITIONS        0w>O    0w        51            51           0w>O           0w>O          -1    -1
ADD_PARTITIONS_AGAIN  0w>O    0         51            51           0w>O           0w>O          -1    -1
END_TXN_COMMIT        48      0w>PC!C   51            48           0              48            -1    -1
END_TXN_ABORT         48      0w>PA!A   48            51           48             0             -1    -1
DESCRIBE              0       0         0             0            0              0             105   0
TIMEOUT               0       0w>PA!A   0             0            0              0             0     0
EXPIRE                0w>D    0         0             0            0w>D           0w>D          0     0
"""
SHORT = {"E": S.EMPTY, "O": S.ONGOING, "PC": S.PREPARE_COMMIT, "PA": S.PREPARE_ABORT, "CC": S.COMPLETE_COMMIT,
         "CA": S.COMPLETE_ABORT, "D": S.DEAD, "F": S.PREPARE_EPOCH_FENCE}


def parse_cell(cell: str, state: TransactionState):
    markers = None
    if "!" in cell:
        cell, m = cell.split("!")
        markers = TransactionResult.COMMIT if m == "C" else TransactionResult.ABORT
    cell, _, target = cell.partition(">")
    appends = cell.endswith("w")
    return E(int(cell.rstrip("w"))), appends, SHORT[target] if target else state, markers


def test_the_table_says_what_kafka_does():
    header, *lines = KAFKA_3X.strip().splitlines()
    states = [S(name) for name in header.split()]
    assert states == list(TransactionState)
    rows = [line.split() for line in lines]
    assert [r[0] for r in rows] == [e.name for e in TxnEvent]
    for name, *cells in rows:
        for state, cell in zip(states, cells, strict=True):
            o = REQUEST_OUTCOMES[state][TxnEvent[name]]
            assert (o.answer, o.appends, o.next_state, o.markers) == parse_cell(cell, state), (name, state)


def test_the_table_is_total_and_only_uses_valid_transitions():
    assert set(REQUEST_OUTCOMES) == set(TransactionState)
    for state, row in REQUEST_OUTCOMES.items():
        assert set(row) == set(TxnEvent)
        for event, o in row.items():
            assert o.next_state is state or can_transition(state, o.next_state), (state, event)
            assert o.markers is None or o.appends
    # Kafka's validPreviousStates, verbatim
    assert VALID_PREVIOUS_STATES[S.PREPARE_ABORT] == {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT,
                                                      S.COMPLETE_ABORT}     # the last three: TV2
    assert VALID_PREVIOUS_STATES[S.DEAD] == {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}
    assert not can_transition(S.PREPARE_COMMIT, S.PREPARE_ABORT)
    assert [s.id for s in TransactionState] == list(range(8))
    assert {s.id: s.value for s in TransactionState} == TL.TRANSACTION_STATES


# --- a harness: the server's loop around the coordinator --------------------------------------

PARTS = (("a", 0), ("a", 1))


class Fixture:
    """Transaction "t" in ``state``, its producer at (pid, epoch)."""

    def __init__(self, state: TransactionState, event: TxnEvent) -> None:
        timeout = 500 if event is TxnEvent.TIMEOUT else 10**8
        expiry = 1_000 if event is TxnEvent.EXPIRE else 10**9
        self.h = h = Harness(transactional_id_expiration_ms=expiry)
        if state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            p = h.c.partition_for("t")
            h.c.load_partition(p, [loaded_record("t", state, timeout=timeout)], h.now)
            self.pid, self.epoch = 1000, 0
        else:
            r = h.init(timeout=timeout)
            assert r.error_code == E.NONE
            self.pid, self.epoch = r.producer_id, r.producer_epoch
            if state is not S.EMPTY:
                assert self.add(PARTS).error_code == E.NONE
            if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
                h.auto_markers = state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
                commit = state in (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)
                assert self.end(commit).error_code == E.NONE
                h.auto_markers = True
        assert h.state() is state
        h.auto_markers = False
        self.marker_count = len(h.markers)

    def add(self, partitions):
        return self.h.send(AddPartitionsToTxnRequest(transactional_id="t", producer_id=self.pid,
                                                     producer_epoch=self.epoch, partitions=partitions))

    def end(self, commit: bool):
        return self.h.send(EndTxnRequest(transactional_id="t", producer_id=self.pid, producer_epoch=self.epoch,
                                         committed=commit))

    def request(self, event: TxnEvent):
        if event is TxnEvent.INIT_PRODUCER_ID:
            return InitProducerIdRequest(transactional_id="t", transaction_timeout_ms=60_000,
                                         producer_id=self.pid, producer_epoch=self.epoch)
        if event is TxnEvent.ADD_PARTITIONS:
            return AddPartitionsToTxnRequest(transactional_id="t", producer_id=self.pid, producer_epoch=self.epoch,
                                             partitions=(("b", 0),))
        if event is TxnEvent.ADD_PARTITIONS_AGAIN:
            return AddPartitionsToTxnRequest(transactional_id="t", producer_id=self.pid, producer_epoch=self.epoch,
                                             partitions=PARTS[:1])
        if event in (TxnEvent.END_TXN_COMMIT, TxnEvent.END_TXN_ABORT):
            return EndTxnRequest(transactional_id="t", producer_id=self.pid, producer_epoch=self.epoch,
                                 committed=event is TxnEvent.END_TXN_COMMIT)
        if event is TxnEvent.DESCRIBE:
            return DescribeTransactionsRequest(transactional_ids=("t",))
        return None                                     # timers


def answer_of(response) -> ErrorCode:
    if hasattr(response, "transaction_states"):
        return response.transaction_states[0].error_code
    return response.error_code


def check(state: TransactionState, event: TxnEvent) -> None:
    fx = Fixture(state, event)
    h, expected = fx.h, REQUEST_OUTCOMES[state][event]
    meta = h.c.transaction("t")
    partitions_before = tuple(sorted(meta.topic_partitions))
    request = fx.request(event)
    if request is None:
        h.auto_append = False
        h.advance(700 if event is TxnEvent.TIMEOUT else 1_200)
        assert bool(h.held) == expected.appends, (state, event)
        h.release()
    else:
        response = h.c.handle(request, h.now)
        assert isinstance(response, Pending) == expected.appends, (state, event, response)
        h.pump()
        if isinstance(response, Pending):
            response = h.done.pop(response)
        assert answer_of(response) == expected.answer, (state, event, response)
    assert h.state() is (None if expected.next_state is S.DEAD and expected.appends else expected.next_state), \
        (state, event, h.state())
    new = h.markers[fx.marker_count:]
    if expected.markers is None:
        assert new == [], (state, event, new)
    else:
        assert [(m.result, m.partitions) for m in new] == [(expected.markers, partitions_before)], (state, event)
        meta = h.c.transaction("t")
        assert new[0].producer_epoch == meta.producer_epoch
        # an abort forced on the producer (timeout, new instance) fences its epoch
        fenced = event in (TxnEvent.TIMEOUT, TxnEvent.INIT_PRODUCER_ID)
        assert meta.producer_epoch == fx.epoch + (1 if fenced else 0)


@pytest.mark.parametrize("state", list(TransactionState), ids=lambda s: s.value)
@pytest.mark.parametrize("event", list(TxnEvent), ids=lambda e: e.name)
def test_every_pair(state, event):
    check(state, event)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=st.sampled_from(list(TransactionState)), event=st.sampled_from(list(TxnEvent)))
def test_sweep_states_and_events(state, event):
    check(state, event)


# --- random interleavings -----------------------------------------------------------------

TXN_IDS = ("t0", "t1")
TOPICS = (("a", 0), ("a", 1), ("b", 0))
ALLOWED = {
    "InitProducerId": {E.NONE, E.CONCURRENT_TRANSACTIONS, E.PRODUCER_FENCED, E.NOT_COORDINATOR,
                       E.COORDINATOR_NOT_AVAILABLE},
    "AddPartitionsToTxn": {E.NONE, E.CONCURRENT_TRANSACTIONS, E.PRODUCER_FENCED, E.INVALID_PRODUCER_ID_MAPPING,
                           E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE},
    "EndTxn": {E.NONE, E.CONCURRENT_TRANSACTIONS, E.PRODUCER_FENCED, E.INVALID_PRODUCER_ID_MAPPING,
               E.INVALID_TXN_STATE, E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE},
}
ALLOWED["AddOffsetsToTxn"] = ALLOWED["AddPartitionsToTxn"]


class Producer:
    """One instance of a transactional producer; a later instance with the same id makes it a zombie."""

    def __init__(self, txn_id: str) -> None:
        self.txn_id = txn_id
        self.pid = self.epoch = -1
        self.busy = False


class Interleavings(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(transactional_id_expiration_ms=5_000)
        self.producers = [Producer(TXN_IDS[i % 2]) for i in range(4)]
        self.waiting: dict[Pending, tuple[Producer, str, tuple]] = {}
        self.latest: dict[str, tuple[int, int] | None] = {}      # the pair last handed out per id
        self.epochs: dict[tuple[str, int], int] = {}

    def send(self, p: Producer, request, what: str, extra=()) -> None:
        r = self.h.c.handle(request, self.h.now)
        if isinstance(r, Pending):
            p.busy = True
            self.waiting[r] = (p, what, extra)
        else:
            self.deliver(p, r, what, extra)
        self.collect()

    def collect(self) -> None:
        self.h.pump()
        for handle, response in list(self.h.done.items()):
            del self.h.done[handle]
            p, what, extra = self.waiting.pop(handle)
            p.busy = False
            self.deliver(p, response, what, extra, parked=True)

    def deliver(self, p: Producer, response, what: str, sent, parked: bool = False) -> None:
        error = response.error_code
        api = type(response).__name__.removesuffix("Response")
        assert error in ALLOWED[api], (api, response)
        if api == "InitProducerId":
            if error is E.NONE:
                p.pid, p.epoch = response.producer_id, response.producer_epoch
                self.latest[p.txn_id] = (p.pid, p.epoch)
            elif error is E.CONCURRENT_TRANSACTIONS and parked:
                self.latest[p.txn_id] = None         # answered after the fence was written
        elif error is E.NONE:
            # a zombie never succeeds: only the pair handed out last may add or end
            assert self.latest.get(p.txn_id) == sent, (api, p.txn_id, sent, self.latest.get(p.txn_id))

    def _producer(self, i: int) -> Producer | None:
        p = self.producers[i]
        return None if p.busy else p

    @rule(i=st.integers(0, 3), remember=st.booleans())
    def init(self, i, remember):
        if (p := self._producer(i)) is None:
            return
        pid, epoch = (p.pid, p.epoch) if remember and p.pid >= 0 else (-1, -1)
        self.send(p, InitProducerIdRequest(transactional_id=p.txn_id, transaction_timeout_ms=2_000,
                                           producer_id=pid, producer_epoch=epoch), "init")

    @rule(i=st.integers(0, 3), parts=st.sets(st.sampled_from(TOPICS), min_size=1, max_size=2))
    def add(self, i, parts):
        if (p := self._producer(i)) is None or p.pid < 0:
            return
        self.send(p, AddPartitionsToTxnRequest(transactional_id=p.txn_id, producer_id=p.pid, producer_epoch=p.epoch,
                                               partitions=tuple(sorted(parts))), "add", (p.pid, p.epoch))

    @rule(i=st.integers(0, 3))
    def add_offsets(self, i):
        if (p := self._producer(i)) is None or p.pid < 0:
            return
        self.send(p, AddOffsetsToTxnRequest(transactional_id=p.txn_id, producer_id=p.pid, producer_epoch=p.epoch,
                                            group_id="g"), "add", (p.pid, p.epoch))

    @rule(i=st.integers(0, 3), commit=st.booleans())
    def end(self, i, commit):
        if (p := self._producer(i)) is None or p.pid < 0:
            return
        self.send(p, EndTxnRequest(transactional_id=p.txn_id, producer_id=p.pid, producer_epoch=p.epoch,
                                   committed=commit), "end", (p.pid, p.epoch))

    @rule()
    def describe_and_list(self):
        d = self.h.c.handle(DescribeTransactionsRequest(transactional_ids=TXN_IDS), self.h.now)
        listed = self.h.c.handle(ListTransactionsRequest(), self.h.now)
        known = {t.transactional_id for t in listed.transaction_states}
        for t in d.transaction_states:
            assert (t.error_code is E.NONE) == (t.transactional_id in known)

    @rule(hold=st.booleans(), error=st.sampled_from([E.NONE, E.NOT_LEADER_OR_FOLLOWER, E.REQUEST_TIMED_OUT]))
    def log(self, hold, error):
        self.h.auto_append = not hold
        if not hold:
            self.h.release(error)
            self.collect()

    @rule(hold=st.booleans(), fail_b=st.booleans())
    def markers(self, hold, fail_b):
        self.h.auto_markers = not hold
        if not hold:
            self.h.write_markers(lambda tp: fail_b and tp[0] == "b")
            self.collect()

    @rule(ms=st.sampled_from([1, 100, 1_000, 2_100, 6_000]))
    def advance(self, ms):
        self.h.advance(ms)
        self.collect()

    @invariant()
    def transactions_are_consistent(self):
        for txn_id in TXN_IDS:
            meta = self.h.c.transaction(txn_id)
            if meta is None:
                continue
            assert meta.state not in (S.DEAD, S.PREPARE_EPOCH_FENCE)     # pending only, never at rest
            if meta.state is S.EMPTY:
                assert not meta.topic_partitions     # the start time stays in memory, as in Kafka
            elif meta.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
                assert not meta.topic_partitions
            else:
                assert meta.topic_partitions
            if meta.pending_state is not None:
                assert self.h.held or self.h.c._outbox or meta.pending_state is S.PREPARE_EPOCH_FENCE
            key = (txn_id, meta.producer_id)
            assert meta.producer_epoch >= self.epochs.get(key, -1), "epochs never go back"
            self.epochs[key] = meta.producer_epoch
        for m in self.h.markers:
            assert m.partitions and m.producer_epoch >= 0

    def settle(self) -> None:
        for _ in range(5):
            self.h.release()
            self.h.write_markers()
            self.h.advance(1_000)
            self.collect()

    def teardown(self):
        # with the log and the markers working and time running on, everything settles ...
        self.h.auto_append = self.h.auto_markers = True
        self.settle()
        assert not self.waiting, self.waiting
        # ... once a restart reloads what a NOT_COORDINATOR append left preparing (Kafka: the next leader)
        for partition, records in self.h.log.items():
            self.h.c.begin_load(partition, self.h.now)
            self.h.c.load_partition(partition, records, self.h.now)
        self.settle()
        for txn_id in TXN_IDS:
            meta = self.h.c.transaction(txn_id)
            if meta is not None:
                assert meta.pending_state is None
                assert meta.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.ONGOING), meta
        # every order was written in full in the end
        written = defaultdict(set)
        for m, parts in self.h.written:
            written[(m.transactional_id, m.producer_id, m.producer_epoch, m.result)].update(parts)
        for m in self.h.markers:
            assert set(m.partitions) <= written[(m.transactional_id, m.producer_id, m.producer_epoch, m.result)]


TestInterleavings = Interleavings.TestCase
TestInterleavings.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
