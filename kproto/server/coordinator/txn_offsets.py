"""TxnOffsetCommit: offsets committed inside a transaction (GroupCoordinator.handleTxnCommitOffsets,
GroupMetadata.prepareTxnOffsetCommit / completePendingTxnOffsetCommit).

The offsets are written to ``__consumer_offsets`` at once, in a *transactional*
batch of the producer (``Append.producer_id``), but stay pending: OffsetFetch
does not return them (and answers UNSTABLE_OFFSET_COMMIT when asked for stable
offsets) until the transaction's marker reaches that ``__consumer_offsets``
partition and the server calls ``complete_txn_offsets``: COMMIT makes them the
group's offsets, ABORT drops them. Loading replays them the same way
(``persistence.replay``); those whose marker is not in the log yet are loaded
pending, and the transaction coordinator, which orders the markers of a
transaction it reloads in PrepareCommit/PrepareAbort, settles them.

The commit is verified first (GroupCoordinator.handleTxnCommitOffsets, KIP-890): the
server asks the transaction coordinator whether the producer's open transaction has the
group's ``__consumer_offsets`` partition (AddOffsetsToTxn) and passes its error in
``verification``; so offsets are pending only in a transaction the coordinator will end,
and its marker (commit, abort, or the abort of a timed-out or fenced transaction) settles them.

Validation is OffsetCommit's (validateOffsetCommit with isTransactional): a
Dead group answers COORDINATOR_NOT_AVAILABLE, a member's commit must carry its
member id and generation; unlike OffsetCommit, a commit with no member id is
accepted from a group that has members (old producers send none).
"""

from __future__ import annotations

from dataclasses import dataclass

from kproto.errors import ErrorCode
from kproto.server.coordinator.append_errors import commit_error
from kproto.server.coordinator.events import OffsetCommitRequestTopic, Pending
from kproto.server.coordinator.group import GroupMetadata
from kproto.server.coordinator.offsets import OffsetAndMetadata, TopicPartition, utf16_length
from kproto.server.coordinator.persistence import offset_commit_key, offset_commit_value
from kproto.server.coordinator.state import GroupState

__all__ = ["TxnOffsetCommitRequest", "TxnOffsetCommits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOffsetCommitRequest:
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[OffsetCommitRequestTopic, ...]
    generation_id: int = -1                   # v3+ (KIP-447)
    member_id: str = ""
    group_instance_id: str | None = None
    #: the transaction coordinator's verdict on the producer's transaction (KIP-890 verification,
    #: TxnService.verify): anything but NONE answers every partition, nothing is stored
    verification: ErrorCode = ErrorCode.NONE


class TxnOffsetCommits:
    """GroupCoordinator's TxnOffsetCommit handling (a mixin: it uses the
    coordinator's groups, runtime and member checks). The response is an
    OffsetCommitResponse, whose shape TxnOffsetCommit's shares."""

    def _txn_offset_commit(self, req: TxnOffsetCommitRequest, handle: Pending, now_ms: int) -> None:
        from kproto.server.coordinator.coordinator import _commit_response

        def answer_all(error: ErrorCode) -> None:
            self._reply(handle, _commit_response(req, lambda tp: error))

        error = self._validate_group_status(req.group_id, "TxnOffsetCommit")
        if error is not None:
            return answer_all(error)
        if req.verification is not ErrorCode.NONE:      # handleTxnCommitOffsets' postVerificationCallback
            return answer_all(commit_error(req.verification))
        group = self.groups.get(req.group_id) or self._add_group(req.group_id, now_ms)
        error = self._validate_txn_commit(group, req)
        if error is not None:
            return answer_all(error)
        staged: list[tuple[TopicPartition, OffsetAndMetadata]] = []
        too_large: set[TopicPartition] = set()
        for topic in req.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                metadata = p.committed_metadata or ""
                if utf16_length(metadata) > self.config.offset_metadata_max_bytes:
                    too_large.add(tp)
                    continue
                staged.append((tp, OffsetAndMetadata(
                    committed_offset=p.committed_offset, committed_leader_epoch=p.committed_leader_epoch,
                    metadata=metadata, commit_timestamp_ms=now_ms)))

        def code(tp: TopicPartition, error: ErrorCode) -> ErrorCode:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE if tp in too_large else error

        if not staged:
            return self._reply(handle, _commit_response(req, lambda tp: code(tp, ErrorCode.NONE)))
        pending = group.pending_txn_offsets.setdefault(req.producer_id, {})
        pending.update(staged)                               # prepareTxnOffsetCommit

        def appended(error: ErrorCode, t: int) -> None:
            error = commit_error(error)
            if error is not ErrorCode.NONE:                  # failPendingTxnOffsetCommit
                mine = group.pending_txn_offsets.get(req.producer_id, {})
                for tp, offset in staged:
                    if mine.get(tp) is offset:
                        del mine[tp]
                if not mine:
                    group.pending_txn_offsets.pop(req.producer_id, None)
            self._reply(handle, _commit_response(req, lambda tp: code(tp, error)))

        records = [(offset_commit_key(group.group_id, topic, partition), offset_commit_value(offset))
                   for (topic, partition), offset in staged]
        self._append(self.partition_for(group.group_id), records, now_ms, appended,
                     producer=(req.producer_id, req.producer_epoch))

    def _validate_txn_commit(self, group: GroupMetadata, req: TxnOffsetCommitRequest) -> ErrorCode | None:
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and group.state is GroupState.EMPTY:
            return None
        if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
            error = self._validate_current_member(group, req.member_id, req.group_instance_id)
            if error is None and req.generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            return error
        return None

    def complete_txn_offsets(self, offsets_partition: int, producer_id: int, committed: bool) -> int:
        """A COMMIT (``committed``) or ABORT marker of ``producer_id`` reached
        ``__consumer_offsets``-``offsets_partition``: apply or drop the pending
        offsets of its groups. Returns how many offsets became visible."""
        applied = 0
        for group in list(self.groups.values()):
            if self.partition_for(group.group_id) != offsets_partition:
                continue
            pending = group.pending_txn_offsets.pop(producer_id, None)
            if not pending or not committed or group.state is GroupState.DEAD:
                continue
            for tp, offset in pending.items():
                group.offsets.pop(tp, None)
                group.offsets[tp] = offset
                applied += 1
        return applied


    def pending_txn_producers(self) -> set[tuple[int, int]]:
        """(``__consumer_offsets`` partition, producer id) of every transaction with offsets pending."""
        return {(self.partition_for(g.group_id), pid) for g in self.groups.values() for pid in g.pending_txn_offsets}


def has_pending_txn_offset(group: GroupMetadata | None, tp: TopicPartition) -> bool:
    return group is not None and any(tp in offsets for offsets in group.pending_txn_offsets.values())

