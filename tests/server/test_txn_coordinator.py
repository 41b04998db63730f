"""The transaction coordinator's rules beyond the state table, and ``__transaction_state``.

Each test names the Kafka rule it pins (TransactionCoordinator.scala,
TransactionMetadata.scala, TransactionStateManager.scala, TransactionLog.scala,
KafkaApis.scala, all at trunk 1eb76443).
"""

from __future__ import annotations

import logging
import struct

import pytest

from kproto.errors import ErrorCode
from kproto.server.runtime.state_topic import partition_for
from kproto.server.txn_coordinator import (
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, DescribeTransactionsRequest, EndTxnRequest,
    InitProducerIdRequest, ListTransactionsRequest, Pending, TransactionResult, TransactionState, fenced_error,
    txn_append_error,
)
from kproto.server.txn_coordinator.metadata import TxnTransitMetadata
from kproto.server.txn_coordinator.persistence import (
    parse_value, replay, transaction_log_key, transaction_log_value, value_version,
)
from tests.server.helpers import TxnHarness as Harness
from tests.server.helpers import loaded_txn_record as loaded_record

E = ErrorCode
S = TransactionState


def begin(h: Harness, txn_id: str = "t", parts=(("a", 0),), timeout: int = 60_000):
    r = h.init(txn_id, timeout)
    assert r.error_code == E.NONE
    a = h.send(AddPartitionsToTxnRequest(transactional_id=txn_id, producer_id=r.producer_id,
                                         producer_epoch=r.producer_epoch, partitions=parts))
    assert a.error_code == E.NONE
    return r.producer_id, r.producer_epoch


def end(h: Harness, pid: int, epoch: int, commit: bool = True, txn_id: str = "t"):
    return h.send(EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit))


# --- InitProducerId ------------------------------------------------------------------------

def test_init_validates_before_touching_state():
    h = Harness(transaction_max_timeout_ms=900_000)
    assert h.init("", 1000).error_code == E.INVALID_REQUEST
    assert h.init("t", 900_001).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init("t", 0).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init("t", 1000, pid=5).error_code == E.INVALID_REQUEST            # id without epoch
    assert h.c.transaction("t") is None
    r = h.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=0))
    assert (r.error_code, r.producer_id, r.producer_epoch) == (E.NONE, 1000, 0)


def test_each_init_bumps_the_epoch_and_fences_the_previous_instance():
    h = Harness()
    first = h.init()
    second = h.init()
    assert (first.producer_id, first.producer_epoch) == (1000, 0)
    assert (second.producer_id, second.producer_epoch) == (1000, 1)
    zombie = h.send(AddPartitionsToTxnRequest(transactional_id="t", producer_id=1000, producer_epoch=0,
                                              partitions=(("a", 0),)))
    assert zombie.error_code == E.PRODUCER_FENCED
    assert fenced_error("AddPartitionsToTxn", 1, zombie.error_code) == E.INVALID_PRODUCER_EPOCH
    assert fenced_error("AddPartitionsToTxn", 2, zombie.error_code) == E.PRODUCER_FENCED
    assert fenced_error("InitProducerId", 3, E.PRODUCER_FENCED) == E.INVALID_PRODUCER_EPOCH
    assert fenced_error("EndTxn", 2, E.PRODUCER_FENCED) == E.PRODUCER_FENCED
    other = h.send(AddPartitionsToTxnRequest(transactional_id="t", producer_id=999, producer_epoch=1,
                                             partitions=(("a", 0),)))
    assert other.error_code == E.INVALID_PRODUCER_ID_MAPPING


def test_kip360_retry_with_the_last_epoch_gets_the_same_answer():
    """prepareIncrementProducerEpoch: expected == current bumps and remembers the last
    epoch; a retry with that last epoch returns the current one without a bump."""
    h = Harness()
    h.init()
    bumped = h.init(pid=1000, epoch=0)
    assert (bumped.producer_epoch, h.c.transaction("t").last_producer_epoch) == (1, 0)
    retry = h.init(pid=1000, epoch=0)
    assert (retry.error_code, retry.producer_epoch) == (E.NONE, 1)
    assert h.init(pid=1000, epoch=7).error_code == E.PRODUCER_FENCED
    assert h.init(pid=4242, epoch=1).error_code == E.PRODUCER_FENCED              # not our producer id


def test_init_during_a_transaction_aborts_it_with_a_fenced_epoch():
    h = Harness(auto_markers=False)
    pid, epoch = begin(h, parts=(("a", 0), ("b", 1)))
    r = h.init()
    assert r.error_code == E.CONCURRENT_TRANSACTIONS
    [order] = h.held_markers
    assert (order.result, order.producer_epoch, order.partitions) == (
        TransactionResult.ABORT, epoch + 1, (("a", 0), ("b", 1)))
    assert h.init().error_code == E.CONCURRENT_TRANSACTIONS                       # markers still on the way
    assert end(h, pid, epoch).error_code == E.PRODUCER_FENCED                     # the zombie
    h.write_markers()
    assert h.state() is S.COMPLETE_ABORT
    again = h.init()
    assert (again.error_code, again.producer_epoch) == (E.NONE, epoch + 2)


def test_exhausted_epoch_rotates_the_producer_id():
    """An epoch of Short.MaxValue - 1 is exhausted: the next InitProducerId gets a new id at epoch 0."""
    h = Harness()
    p = h.c.partition_for("t")
    h.c.load_partition(p, [loaded_record("t", S.COMPLETE_COMMIT, pid=77, epoch=32766, partitions=())], h.now)
    r = h.init(pid=77, epoch=32766)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (E.NONE, 1000, 0)
    meta = h.c.transaction("t")
    assert (meta.previous_producer_id, meta.last_producer_epoch) == (77, 32766)
    # a retry of that call with the old pair still succeeds (isValidProducerId, rule 3)
    assert h.init(pid=77, epoch=32766).error_code == E.NONE


# --- AddPartitions / AddOffsets / EndTxn --------------------------------------------------

def test_add_offsets_adds_the_groups_offsets_partition():
    h = Harness(offsets_topic_num_partitions=50)
    r = h.init()
    a = h.send(AddOffsetsToTxnRequest(transactional_id="t", producer_id=r.producer_id,
                                      producer_epoch=r.producer_epoch, group_id="my-group"))
    assert a.error_code == E.NONE
    assert h.c.transaction("t").topic_partitions == {("__consumer_offsets", partition_for("my-group", 50))}


def test_commit_writes_markers_to_every_partition_then_completes():
    h = Harness(auto_markers=False)
    pid, epoch = begin(h, parts=(("b", 2), ("a", 0)))
    h.send(AddPartitionsToTxnRequest(transactional_id="t", producer_id=pid, producer_epoch=epoch,
                                     partitions=(("a", 1),)))
    assert h.c.transaction("t").txn_start_timestamp == 0
    h.advance(5)
    assert end(h, pid, epoch).error_code == E.NONE
    [order] = h.held_markers
    assert (order.transactional_id, order.producer_id, order.producer_epoch, order.coordinator_epoch) == (
        "t", pid, epoch, 0)
    assert order.partitions == (("a", 0), ("a", 1), ("b", 2))
    assert end(h, pid, epoch).error_code == E.CONCURRENT_TRANSACTIONS              # a retry, not done yet
    h.write_markers(fail=lambda tp: tp == ("b", 2))
    assert h.state() is S.PREPARE_COMMIT and h.held_markers == []
    h.advance(99)
    assert h.held_markers == []
    h.advance(1)                                                                    # marker_retry_backoff_ms
    [retry] = h.held_markers
    assert retry.partitions == (("b", 2),)
    h.write_markers()
    assert h.state() is S.COMPLETE_COMMIT
    assert end(h, pid, epoch).error_code == E.NONE                                  # retry after completion
    assert end(h, pid, epoch, commit=False).error_code == E.INVALID_TXN_STATE


# --- transaction version 2 (KIP-890 part 2) ------------------------------------------------

def add_v2(h: Harness, pid: int, epoch: int, parts=(("a", 0),)):
    """What a Produce v12 (AddPartitionsToTxnManager's addPartition) asks the coordinator."""
    return h.send(AddPartitionsToTxnRequest(transactional_id="t", producer_id=pid, producer_epoch=epoch,
                                            partitions=parts, client_transaction_version=2))


def end_v2(h: Harness, pid: int, epoch: int, commit: bool = True):
    return h.send(EndTxnRequest(transactional_id="t", producer_id=pid, producer_epoch=epoch, committed=commit,
                                client_transaction_version=2))


def test_v2_end_txn_bumps_the_epoch_and_the_markers_carry_it():
    h = Harness()
    r = h.init()
    pid, epoch = r.producer_id, r.producer_epoch
    assert add_v2(h, pid, epoch).error_code == E.NONE
    assert h.c.transaction("t").client_transaction_version == 2
    done = end_v2(h, pid, epoch)
    assert (done.error_code, done.producer_id, done.producer_epoch) == (E.NONE, pid, epoch + 1)
    [order] = h.markers
    assert (order.producer_id, order.producer_epoch, order.partitions) == (pid, epoch + 1, (("a", 0),))
    meta = h.c.transaction("t")
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch) == (S.COMPLETE_COMMIT, epoch + 1, epoch)
    # the retry with the epoch before the bump: the same answer, nothing written
    assert end_v2(h, pid, epoch) == done and len(h.markers) == 1
    assert end_v2(h, pid, epoch, commit=False).error_code == E.INVALID_TXN_STATE
    assert end_v2(h, pid, epoch + 1).error_code == E.INVALID_TXN_STATE          # no transaction open
    assert end_v2(h, pid, epoch + 2).error_code == E.PRODUCER_FENCED
    assert add_v2(h, pid, epoch).error_code == E.PRODUCER_FENCED                 # the old epoch is gone
    # an abort with no transaction open bumps the epoch: PrepareAbort straight from CompleteCommit
    bumped = end_v2(h, pid, epoch + 1, commit=False)
    assert (bumped.error_code, bumped.producer_epoch) == (E.NONE, epoch + 2)
    assert len(h.markers) == 1 and h.state() is S.COMPLETE_ABORT                 # no marker to write


def test_v2_retry_while_the_markers_are_out_waits():
    h = Harness(auto_markers=False)
    r = h.init()
    pid, epoch = r.producer_id, r.producer_epoch
    add_v2(h, pid, epoch)
    assert end_v2(h, pid, epoch).producer_epoch == epoch + 1
    assert end_v2(h, pid, epoch).error_code == E.CONCURRENT_TRANSACTIONS
    assert end_v2(h, pid, epoch + 1).error_code == E.PRODUCER_FENCED       # not a retry: the next EndTxn
    assert add_v2(h, pid, epoch + 1).error_code == E.CONCURRENT_TRANSACTIONS
    h.write_markers()
    assert add_v2(h, pid, epoch + 1).error_code == E.NONE


def test_v2_epoch_overflow_rotates_the_producer_id_after_the_markers():
    """At the last client epoch the bump allocates the next id (nextProducerId): the markers
    carry Short.MaxValue, then the transaction completes on the new id at epoch 0; a retry of
    that EndTxn with the old pair is answered the new one (retryOnOverflow)."""
    h = Harness(auto_markers=False)
    p = h.c.partition_for("t")
    h.c.load_partition(p, [loaded_record("t", S.COMPLETE_COMMIT, pid=77, epoch=32766, partitions=())], h.now)
    assert add_v2(h, 77, 32766).error_code == E.NONE
    done = end_v2(h, 77, 32766)
    assert (done.error_code, done.producer_id, done.producer_epoch) == (E.NONE, 77, 32767)
    [order] = h.held_markers
    assert (order.producer_id, order.producer_epoch) == (77, 32767)
    assert h.c.transaction("t").next_producer_id == 1000
    h.write_markers()
    meta = h.c.transaction("t")
    assert (meta.state, meta.producer_id, meta.producer_epoch, meta.previous_producer_id) == (
        S.COMPLETE_COMMIT, 1000, 0, 77)
    again = end_v2(h, 77, 32766)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (E.NONE, 1000, 0)
    assert add_v2(h, 1000, 0).error_code == E.NONE


def test_v2_init_during_a_transaction_fences_then_the_abort_bumps_again():
    """The coordinator's own abort uses the finalized transaction.version: with 2 the fence's
    bump is followed by the abort's (Kafka's PrepareEpochFence then prepareAbortOrCommit)."""
    h = Harness()
    h.c._transaction_version = lambda: 2
    r = h.init()
    pid, epoch = r.producer_id, r.producer_epoch
    add_v2(h, pid, epoch)
    assert h.init().error_code == E.CONCURRENT_TRANSACTIONS
    assert h.markers[-1].producer_epoch == epoch + 2
    again = h.init()
    assert (again.error_code, again.producer_id, again.producer_epoch) == (E.NONE, pid, epoch + 3)


def test_failed_append_drops_the_transition_and_maps_the_error():
    h = Harness(auto_append=False)
    h.auto_append = True
    r = h.init()
    h.auto_append = False
    pending = h.c.handle(AddPartitionsToTxnRequest(transactional_id="t", producer_id=r.producer_id,
                                                   producer_epoch=r.producer_epoch, partitions=(("a", 0),)), h.now)
    assert isinstance(pending, Pending)
    assert h.init().error_code == E.CONCURRENT_TRANSACTIONS
    h.pump()
    h.release(E.NOT_LEADER_OR_FOLLOWER)
    assert h.done.pop(pending).error_code == E.NOT_COORDINATOR
    meta = h.c.transaction("t")
    assert (meta.state, meta.pending_state, meta.topic_partitions) == (S.EMPTY, None, set())
    assert [txn_append_error(e) for e in (E.REQUEST_TIMED_OUT, E.KAFKA_STORAGE_ERROR, E.MESSAGE_TOO_LARGE)] == [
        E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR, E.UNKNOWN_SERVER_ERROR]


# --- timers ---------------------------------------------------------------------------------

def test_timed_out_transaction_is_aborted_and_its_producer_fenced():
    """abortTimedOutTransactions runs every cleanup interval and aborts when start + timeout < now."""
    h = Harness()
    pid, epoch = begin(h, timeout=1_000)
    h.advance(1_000)                           # start + timeout == now: not yet
    assert h.state() is S.ONGOING
    h.advance(100)
    assert h.state() is S.COMPLETE_ABORT
    assert h.written[-1][0].result is TransactionResult.ABORT
    assert h.written[-1][0].producer_epoch == epoch + 1
    assert end(h, pid, epoch).error_code == E.PRODUCER_FENCED


def test_idle_transactional_ids_expire_with_a_tombstone():
    h = Harness(transactional_id_expiration_ms=1_000)
    pid, epoch = begin(h)
    assert end(h, pid, epoch).error_code == E.NONE
    h.advance(900)
    assert h.c.transaction("t") is not None
    h.advance(200)
    assert h.c.transaction("t") is None
    assert h.log[h.c.partition_for("t")][-1] == (transaction_log_key("t"), None)
    assert h.send(DescribeTransactionsRequest(transactional_ids=("t",))).transaction_states[0].error_code == \
        E.TRANSACTIONAL_ID_NOT_FOUND


# --- ownership, describe, list -----------------------------------------------------------

def test_partitions_it_does_not_own_or_is_loading():
    h = Harness()
    p = h.c.partition_for("t")
    h.c.begin_load(p, h.now)
    assert h.init().error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.send(ListTransactionsRequest()).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    h.c.unload_partition(p, h.now)
    assert h.init().error_code == E.NOT_COORDINATOR
    h.c.load_partition(p, [], h.now, coordinator_epoch=3)
    pid, epoch = begin(h)
    h.auto_markers = False
    end(h, pid, epoch)
    assert h.held_markers[0].coordinator_epoch == 3


def test_describe_and_list():
    h = Harness()
    h.now = 10
    begin(h, "t1", parts=(("b", 1), ("a", 3), ("a", 1)))
    h.init("t2")
    d = h.send(DescribeTransactionsRequest(transactional_ids=("t1", "nope", "")))
    t1, nope, empty = d.transaction_states
    assert (t1.transaction_state, t1.transaction_start_time_ms, t1.topics) == (
        "Ongoing", 10, (("a", (1, 3)), ("b", (1,))))
    assert (nope.error_code, empty.error_code) == (E.TRANSACTIONAL_ID_NOT_FOUND, E.INVALID_REQUEST)
    everything = h.send(ListTransactionsRequest())
    assert [(t.transactional_id, t.transaction_state) for t in everything.transaction_states] == [
        ("t1", "Ongoing"), ("t2", "Empty")]
    only = h.send(ListTransactionsRequest(state_filters=("Ongoing", "Bogus"), producer_id_filters=(1000,)))
    assert only.unknown_state_filters == ("Bogus",)
    assert [t.transactional_id for t in only.transaction_states] == ["t1"]
    h.now = 1_000
    longer = h.send(ListTransactionsRequest(duration_filter=989))
    assert [t.transactional_id for t in longer.transaction_states] == ["t1", "t2"]   # Empty: start -1
    assert [t.transactional_id for t in h.send(ListTransactionsRequest(duration_filter=990)).transaction_states] \
        == ["t2"]


# --- __transaction_state ----------------------------------------------------------------

def test_records_have_kafkas_layout():
    """TransactionLogKey/Value v0 (TransactionLog{Key,Value}.json): int16 version, then the
    fields in order; partitions grouped by topic, null for Empty, in Java's hash orders (a-2
    before a-0: TopicPartition hashes 1120 and 1058 fall in buckets 0 and 2)."""
    assert transaction_log_key("tx") == b"\x00\x00" + b"\x00\x02tx"
    ongoing = TxnTransitMetadata(producer_id=4000, previous_producer_id=4000, producer_epoch=3,
                                 last_producer_epoch=-1, txn_timeout_ms=60_000, state=S.ONGOING,
                                 topic_partitions=frozenset({("b", 0), ("a", 2), ("a", 0)}),
                                 txn_start_timestamp=1_700_000_000_000, txn_last_update_timestamp=1_700_000_000_001)
    expected = (struct.pack(">hqhib", 0, 4000, 3, 60_000, 1) + struct.pack(">i", 2)
                + b"\x00\x01a" + struct.pack(">iii", 2, 2, 0) + b"\x00\x01b" + struct.pack(">ii", 1, 0)
                + struct.pack(">qq", 1_700_000_000_001, 1_700_000_000_000))
    assert transaction_log_value(ongoing) == expected
    empty = TxnTransitMetadata(4000, 4000, 4, 3, 60_000, S.EMPTY, frozenset(), -1, 5)
    assert transaction_log_value(empty) == struct.pack(">hqhibiqq", 0, 4000, 4, 60_000, 0, -1, 5, -1)
    meta = parse_value("tx", expected)
    assert (meta.producer_id, meta.producer_epoch, meta.state, meta.topic_partitions, meta.txn_start_timestamp) == (
        4000, 3, S.ONGOING, {("a", 0), ("a", 2), ("b", 0)}, 1_700_000_000_000)
    dead = TxnTransitMetadata(4000, 4000, 4, 3, 60_000, S.DEAD, frozenset(), -1, 5)
    assert transaction_log_value(dead) is None


def test_records_at_transaction_version_2_have_kafkas_flexible_layout():
    """TransactionLogValue v1 (written from transaction.version 1): compact strings and arrays,
    then the tagged fields that differ from their defaults: PreviousProducerId (tag 0),
    NextProducerId (tag 1, -1 here: omitted), ClientTransactionVersion (tag 2)."""
    commit = TxnTransitMetadata(4001, 4000, 3, 2, 60_000, S.PREPARE_COMMIT, frozenset({("b", 0)}),
                                1_700_000_000_000, 1_700_000_000_001, client_transaction_version=2)
    expected = (struct.pack(">hqhib", 1, 4001, 3, 60_000, 2) + b"\x02" + b"\x02b" + b"\x02" + struct.pack(">i", 0)
                + b"\x00" + struct.pack(">qq", 1_700_000_000_001, 1_700_000_000_000)
                + b"\x02" + b"\x00\x08" + struct.pack(">q", 4000) + b"\x02\x02" + struct.pack(">h", 2))
    assert transaction_log_value(commit, value_version(2)) == expected
    meta = parse_value("tx", expected)
    assert (meta.previous_producer_id, meta.next_producer_id, meta.client_transaction_version) == (4000, -1, 2)
    assert value_version(0) == 0 and value_version(1) == 1


def test_replay_skips_unreadable_records_and_keeps_the_rest(caplog):
    good = loaded_record("t", S.ONGOING, partitions=(("a", 0),))
    later = loaded_record("t", S.PREPARE_COMMIT, partitions=(("a", 0),))
    records = [
        good,
        (None, b"x"),                                            # no key
        (b"\x00\x07junk", b""),                                  # a key version nobody wrote
        (transaction_log_key("u"), b"\x00\x00\x00"),             # truncated value
        (transaction_log_key("v"), good[1][:16] + b"\x09" + good[1][17:]),   # state id 9
        (transaction_log_key("w"), b"\x00\x05" + good[1][2:]),   # value version 5
        later,
        (transaction_log_key("gone"), good[1]), (transaction_log_key("gone"), None),
    ]
    with caplog.at_level(logging.WARNING, logger="kproto.server.transactions"):
        result = replay(records, partition=7)
    assert list(result.transactions) == ["t"]
    assert result.transactions["t"].state is S.PREPARE_COMMIT
    assert len(result.skipped) == 5
    assert result.skipped[0] == "__transaction_state-7 record 1: skipped an unreadable record: the record has no key"
    assert "record 4" in result.skipped[3] and "Unknown transaction state id 9" in result.skipped[3]
    assert len(caplog.records) == 5


def test_load_resends_markers_of_a_transaction_caught_preparing():
    h = Harness()
    pid, epoch = begin(h, parts=(("a", 0), ("b", 0)))
    h.auto_markers = False
    end(h, pid, epoch, commit=False)
    p = h.c.partition_for("t")
    records = list(h.log[p])
    restarted = Harness()
    restarted.c.load_partition(p, records, 0)
    restarted.pump()
    [order] = [w[0] for w in restarted.written]
    assert (order.result, order.partitions, order.producer_epoch) == (
        TransactionResult.ABORT, (("a", 0), ("b", 0)), epoch)
    assert restarted.state() is S.COMPLETE_ABORT


@pytest.mark.parametrize("committed", [True, False])
def test_a_reloaded_producer_continues_where_it_was(committed):
    """After a restart the same producer bumps its epoch (KIP-360); an open transaction is fenced."""
    h = Harness()
    pid, epoch = begin(h)
    if committed:
        end(h, pid, epoch)
    p = h.c.partition_for("t")
    restarted = Harness()
    restarted.c.load_partition(p, h.log[p], 0)
    nxt = restarted.init(pid=pid, epoch=epoch)
    assert (nxt.error_code, nxt.producer_id, nxt.producer_epoch) == (
        (E.NONE, pid, epoch + 1) if committed else (E.CONCURRENT_TRANSACTIONS, -1, -1))


def test_verify_only_says_which_partitions_are_in_the_transaction():
    """handleVerifyPartitionsInTransaction (AddPartitionsToTxn v4+, KIP-890): no state change."""
    h = Harness()
    pid, epoch = begin(h, parts=(("a", 0),))

    def verify(p=pid, e=epoch, txn="t"):
        return h.send(AddPartitionsToTxnRequest(transactional_id=txn, producer_id=p, producer_epoch=e,
                                                partitions=(("a", 0), ("b", 0)), verify_only=True))
    assert verify().verified == ((("a", 0), E.NONE), (("b", 0), E.TRANSACTION_ABORTABLE))
    assert h.c.transaction("t").topic_partitions == {("a", 0)}
    assert {e for _, e in verify(e=epoch + 1).verified} == {E.PRODUCER_FENCED}
    assert {e for _, e in verify(p=1).verified} == {E.INVALID_PRODUCER_ID_MAPPING}
    assert {e for _, e in verify(txn="").verified} == {E.INVALID_REQUEST}
    h.auto_markers = False
    end(h, pid, epoch)
    assert {e for _, e in verify().verified} == {E.CONCURRENT_TRANSACTIONS}
