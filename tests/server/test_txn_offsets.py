"""TxnOffsetCommit in the group coordinator: pending until the transaction's marker,
written as the producer's transactional batch, replayed only when committed.

Rules: GroupCoordinator.handleTxnCommitOffsets / validateOffsetCommit(isTransactional),
GroupMetadata.prepareTxnOffsetCommit / completePendingTxnOffsetCommit /
hasPendingOffsetCommitsForTopicPartition, GroupMetadataManager.getOffsets (requireStable),
all at Kafka trunk 1eb76443.
"""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.records import RecordBatch, build_control_batch, iter_batches
from kproto.server.coordinator import (
    GroupCoordinator, OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    Append, OffsetFetchRequest, OffsetFetchRequestTopic, TxnOffsetCommitRequest,
)
from kproto.server.coordinator.offsets import OffsetAndMetadata
from kproto.server.coordinator.persistence import offset_commit_key, offset_commit_value
from kproto.server.runtime.state_topic import LoggedRecord, TxnMarker, append_batch, records_from_log
from tests.server.helpers import fetched, Harness

E = ErrorCode
PID, EPOCH = 4000, 3


def txn_commit(offset: int, **kw) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(
        transactional_id="tx", group_id="g", producer_id=PID, producer_epoch=EPOCH,
        topics=(OffsetCommitRequestTopic(name="t", partitions=(
            OffsetCommitRequestPartition(partition_index=0, committed_offset=offset),)),), **kw)


def _topics():
    return (OffsetFetchRequestTopic(name="t", partition_indexes=(0,)),)


def error_of(response) -> ErrorCode:
    return response.topics[0].partitions[0].error_code


def test_pending_until_commit_marker_then_visible():
    h = Harness(auto_append=False)
    r = h.c.handle(txn_commit(42), h.now)
    h.pump()
    [append] = h.held
    assert (append.producer_id, append.producer_epoch) == (PID, EPOCH)
    [batch] = iter_batches(append_batch(append))
    assert isinstance(batch, RecordBatch) and batch.is_transactional and not batch.is_control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (PID, EPOCH, -1)
    h.release()
    assert error_of(h.done.pop(r)) == E.NONE
    assert fetched(h.send(OffsetFetchRequest(group_id="g"))) == {}
    stable = h.send(OffsetFetchRequest(group_id="g", topics=None, require_stable=True))
    assert stable.topics == ()                         # no committed offsets to list yet
    asked = h.send(OffsetFetchRequest(group_id="g", topics=_topics(), require_stable=True))
    assert asked.topics[0].partitions[0].error_code == E.UNSTABLE_OFFSET_COMMIT
    unstable_ok = h.send(OffsetFetchRequest(group_id="g", topics=_topics()))
    assert unstable_ok.topics[0].partitions[0].committed_offset == -1
    assert h.c.complete_txn_offsets(h.c.partition_for("g"), PID, committed=True) == 1
    assert fetched(h.send(OffsetFetchRequest(group_id="g"))) == {("t", 0): (42, -1, "")}


def test_abort_marker_drops_them():
    h = Harness()
    h.send(OffsetCommitRequest(group_id="g", topics=(OffsetCommitRequestTopic(name="t", partitions=(
        OffsetCommitRequestPartition(partition_index=0, committed_offset=7),)),)))
    assert error_of(h.send(txn_commit(42))) == E.NONE
    other_partition = (h.c.partition_for("g") + 1) % 50
    assert h.c.complete_txn_offsets(other_partition, PID, committed=True) == 0      # not this group's
    assert h.c.complete_txn_offsets(h.c.partition_for("g"), PID, committed=False) == 0
    assert fetched(h.send(OffsetFetchRequest(group_id="g"))) == {("t", 0): (7, -1, "")}
    assert not h.c.group("g").pending_txn_offsets


def test_member_checks_are_offset_commits_but_anonymous_commits_pass():
    h = Harness()
    ids, generation = h.stable_group(2)
    # OffsetCommit from outside the group is refused; a transactional one (old producers) is not
    plain = h.send(OffsetCommitRequest(group_id="g", topics=txn_commit(1).topics))
    assert error_of(plain) == E.UNKNOWN_MEMBER_ID
    assert error_of(h.send(txn_commit(1))) == E.NONE
    assert error_of(h.send(txn_commit(2, generation_id=generation, member_id=ids[1]))) == E.NONE
    assert error_of(h.send(txn_commit(3, generation_id=generation + 1, member_id=ids[1]))) == E.ILLEGAL_GENERATION
    assert error_of(h.send(txn_commit(4, generation_id=generation, member_id="nobody"))) == E.UNKNOWN_MEMBER_ID


def test_failed_append_leaves_nothing_pending():
    h = Harness(auto_append=False)
    r = h.c.handle(txn_commit(42), h.now)
    h.pump()
    h.release(E.NOT_LEADER_OR_FOLLOWER)
    assert error_of(h.done.pop(r)) == E.NOT_COORDINATOR
    assert not h.c.group("g").pending_txn_offsets


def test_reload_applies_committed_transactional_offsets_only():
    h = Harness(auto_append=False)
    for offset, producer in ((10, PID), (20, PID + 1)):
        h.c.handle(TxnOffsetCommitRequest(transactional_id="tx", group_id="g", producer_id=producer,
                                          producer_epoch=EPOCH, topics=txn_commit(offset).topics), h.now)
    h.pump()
    log = b"".join(append_batch(a, base_offset=i) for i, a in enumerate(h.held))
    log += build_control_batch(1, producer_id=PID, producer_epoch=EPOCH, base_offset=2)       # COMMIT
    log += build_control_batch(0, producer_id=PID + 1, producer_epoch=EPOCH, base_offset=3)   # ABORT
    c = GroupCoordinator()
    c.load_partition(c.partition_for("g"), records_from_log(log), 0)
    assert c.group("g").offsets[("t", 0)].committed_offset == 10



# --- reload: GroupMetadataManager.loadGroupsAndOffsets keeps pendingOffsets per producer id,
# applies them on that producer's COMMIT control batch (unless the loaded offset was appended
# later: CommitRecordMetadataAndOffset.olderThan), drops them on any other control batch, and
# loads the rest as the groups' pendingTransactionalOffsetCommits (loadGroup/initializeOffsets).

def _txn_batch(producer: int, base: int, *offsets: tuple[int, int]) -> bytes:
    """A TxnOffsetCommit batch of ``producer`` for group g: (partition of t, offset) pairs."""
    return append_batch(Append(id=0, partition=0, timestamp_ms=0, producer_id=producer, producer_epoch=EPOCH,
                               records=tuple((offset_commit_key("g", "t", p), offset_commit_value(_offset(o)))
                                             for p, o in offsets)), base_offset=base)


def _regular_batch(base: int, partition: int, offset: int) -> bytes:
    return append_batch(Append(id=0, partition=0, timestamp_ms=0, records=(
        (offset_commit_key("g", "t", partition), offset_commit_value(_offset(offset))),)), base_offset=base)


def _offset(o: int) -> OffsetAndMetadata:
    return OffsetAndMetadata(committed_offset=o, committed_leader_epoch=-1, metadata="", commit_timestamp_ms=0)


def _reloaded(log: bytes) -> Harness:
    h = Harness()
    assert h.c.load_partition(h.c.partition_for("g"), records_from_log(log), 0) == ("g",)
    return h


def _stable_errors(h: Harness) -> dict[int, ErrorCode]:
    asked = OffsetFetchRequest(group_id="g", require_stable=True, topics=(
        OffsetFetchRequestTopic(name="t", partition_indexes=(0, 1, 2)),))
    return {p.partition_index: p.error_code for p in h.send(asked).topics[0].partitions}


def _pending(h: Harness) -> dict[int, dict[tuple[str, int], int]]:
    return {pid: {tp: o.committed_offset for tp, o in offsets.items()}
            for pid, offsets in h.c.group("g").pending_txn_offsets.items()}


def test_reload_commit_applies_abort_drops_and_no_marker_stays_pending():
    log = (_txn_batch(PID, 0, (0, 10)) + _txn_batch(PID + 1, 1, (1, 20))
           + _txn_batch(PID + 2, 2, (2, 30), (0, 31))
           + build_control_batch(1, producer_id=PID, producer_epoch=EPOCH, base_offset=3)        # COMMIT
           + build_control_batch(0, producer_id=PID + 1, producer_epoch=EPOCH, base_offset=4))  # ABORT
    h = _reloaded(log)
    assert fetched(h.send(OffsetFetchRequest(group_id="g"))) == {("t", 0): (10, -1, "")}
    assert _pending(h) == {PID + 2: {("t", 2): 30, ("t", 0): 31}}
    assert _stable_errors(h) == {0: E.UNSTABLE_OFFSET_COMMIT, 1: E.NONE, 2: E.UNSTABLE_OFFSET_COMMIT}
    # the transaction coordinator's marker, written after its own reload, completes them
    assert h.c.complete_txn_offsets(h.c.partition_for("g"), PID + 2, committed=True) == 2
    assert fetched(h.send(OffsetFetchRequest(group_id="g"))) == {("t", 0): (31, -1, ""), ("t", 2): (30, -1, "")}
    assert _stable_errors(h) == {0: E.NONE, 1: E.NONE, 2: E.NONE}


def test_reload_of_a_group_with_only_pending_offsets_then_abort():
    h = _reloaded(_txn_batch(PID, 0, (0, 10)))
    assert h.c.group("g").state.name == "EMPTY" and not h.c.group("g").offsets
    assert _pending(h) == {PID: {("t", 0): 10}}
    assert h.c.complete_txn_offsets(h.c.partition_for("g"), PID, committed=False) == 0
    assert fetched(h.send(OffsetFetchRequest(group_id="g"))) == {}
    assert _stable_errors(h) == {0: E.NONE, 1: E.NONE, 2: E.NONE}


def test_reload_keeps_a_regular_commit_appended_after_the_transactional_one():
    later = _txn_batch(PID, 0, (0, 10)) + _regular_batch(1, 0, 15) + build_control_batch(
        1, producer_id=PID, producer_epoch=EPOCH, base_offset=2)
    assert fetched(_reloaded(later).send(OffsetFetchRequest(group_id="g"))) == {("t", 0): (15, -1, "")}
    earlier = _regular_batch(0, 0, 5) + _txn_batch(PID, 1, (0, 10)) + build_control_batch(
        1, producer_id=PID, producer_epoch=EPOCH, base_offset=2)
    assert fetched(_reloaded(earlier).send(OffsetFetchRequest(group_id="g"))) == {("t", 0): (10, -1, "")}


def test_a_transactional_tombstone_takes_back_the_producers_pending_offset():
    log = _txn_batch(PID, 0, (0, 10), (1, 11)) + append_batch(Append(
        id=0, partition=0, timestamp_ms=0, producer_id=PID, producer_epoch=EPOCH,
        records=((offset_commit_key("g", "t", 1), None),)), base_offset=2)
    assert _pending(_reloaded(log)) == {PID: {("t", 0): 10}}


def test_records_from_log_carries_the_producer_and_the_markers():
    log = _regular_batch(0, 0, 5) + _txn_batch(PID, 1, (0, 10)) + build_control_batch(
        0, producer_id=PID, producer_epoch=EPOCH, base_offset=2)
    regular, txn, marker = records_from_log(log, file="00.log")
    assert isinstance(regular, LoggedRecord) and regular.producer_id == -1
    assert isinstance(txn, LoggedRecord) and txn.producer_id == PID and txn.where.endswith("offset 1")
    first, second = len(_regular_batch(0, 0, 5)), len(_txn_batch(PID, 1, (0, 10)))
    assert marker == TxnMarker(PID, False, f"00.log @ byte {first + second}, offset 2")


def test_an_unverified_commit_is_answered_and_leaves_nothing_pending():
    """handleTxnCommitOffsets' postVerificationCallback: the transaction coordinator's error
    answers every partition (NETWORK_EXCEPTION as COORDINATOR_LOAD_IN_PROGRESS), nothing is
    written, no group is made, and stable fetches answer normally."""
    h = Harness(auto_append=False)
    for verdict, answer in ((E.INVALID_PRODUCER_ID_MAPPING, E.INVALID_PRODUCER_ID_MAPPING),
                            (E.INVALID_PRODUCER_EPOCH, E.INVALID_PRODUCER_EPOCH),
                            (E.INVALID_TXN_STATE, E.INVALID_TXN_STATE),
                            (E.NETWORK_EXCEPTION, E.COORDINATOR_LOAD_IN_PROGRESS)):
        assert error_of(h.c.handle(txn_commit(42, verification=verdict), h.now)) == answer
        h.pump()
    assert h.held == [] and h.c.group("g") is None
    asked = h.send(OffsetFetchRequest(group_id="g", topics=_topics(), require_stable=True))
    assert (error_of(asked), asked.topics[0].partitions[0].committed_offset) == (E.NONE, -1)
