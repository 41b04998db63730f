"""OffsetCommit, TxnOffsetCommit and OffsetFetch: the group's committed offsets
(Kafka's OffsetMetadataManager beside GroupMetadataManager).

A commit is validated (a member's must carry its member id and generation), its
records are appended, and only once appended do the offsets become the group's.

TxnOffsetCommit (GroupCoordinator.handleTxnCommitOffsets, GroupMetadata.prepareTxnOffsetCommit /
completePendingTxnOffsetCommit): the offsets are written to ``__consumer_offsets``
at once, in a *transactional* batch of the producer (``Append.producer_id``), but
stay pending: OffsetFetch does not return them (and answers UNSTABLE_OFFSET_COMMIT
when asked for stable offsets) until the transaction's marker reaches that
``__consumer_offsets`` partition and the server calls ``complete_txn_offsets``:
COMMIT makes them the group's offsets, ABORT drops them. Loading replays them the
same way (``persistence.replay``); those whose marker is not in the log yet are
loaded pending, and the transaction coordinator, which orders the markers of a
transaction it reloads in PrepareCommit/PrepareAbort, settles them.

The transactional commit is verified first (KIP-890): the server asks the
transaction coordinator whether the producer's open transaction has the group's
``__consumer_offsets`` partition (AddOffsetsToTxn) and passes its error in
``verification``; so offsets are pending only in a transaction the coordinator
will end, and its marker (commit, abort, or the abort of a timed-out or fenced
transaction) settles them. Its validation is OffsetCommit's (validateOffsetCommit
with isTransactional): a Dead group answers COORDINATOR_NOT_AVAILABLE, a member's
commit must carry its member id and generation; unlike OffsetCommit, a commit with
no member id is accepted from a group that has members (old producers send none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kproto.errors import ErrorCode
from kproto.server.coordinator.append_errors import commit_error
from kproto.server.coordinator.consumer_groups import ConsumerGroup, ConsumerGroups
from kproto.server.coordinator.streams_groups import StreamsGroups
from kproto.server.coordinator.context import GroupContext, Handler, rejection, validate_current_member
from kproto.server.coordinator.events import (
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitResponse, OffsetCommitResponsePartition,
    OffsetCommitResponseTopic, OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse,
    OffsetFetchResponsePartition, OffsetFetchResponseTopic, Pending, TxnOffsetCommitRequest,
)
from kproto.server.coordinator.group import GroupMetadata, MemberMetadata
from kproto.server.coordinator.offsets import OffsetAndMetadata, TopicPartition, expired_offsets, utf16_length
from kproto.server.coordinator.persistence import offset_commit_key, offset_commit_value
from kproto.server.coordinator.state import GroupEvent, GroupState

__all__ = ["GroupOffsets"]

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

#: what the offsets need from membership: a member's commit restarts its session
#: (GroupMembership.heartbeat, completeAndScheduleNextHeartbeatExpiration)
Heartbeat = Callable[[GroupMetadata, MemberMetadata, int], None]


class GroupOffsets:
    """The committed and transactionally pending offsets of the groups in the shared
    ``GroupContext``; ``heartbeat`` is membership's, called for a member's commit."""

    def __init__(self, ctx: GroupContext, heartbeat: Heartbeat, consumer_groups: ConsumerGroups | None = None) -> None:
        self._ctx = ctx
        self._heartbeat = heartbeat
        self._consumer = consumer_groups

    def _consumer_commit_error(self, group: ConsumerGroup, req: OffsetCommitRequest | TxnOffsetCommitRequest,
                               transactional: bool) -> ErrorCode | None:
        """A KIP-848 group's commit: its member id and member epoch (ConsumerGroup.validateOffsetCommit)."""
        image = self._consumer.image if self._consumer is not None else {}
        return ConsumerGroups.validate_offset_commit(
            group, req.member_id, req.group_instance_id, req.generation_id,
            getattr(req, "api_version", 9), transactional,
            [(t.name, p.partition_index) for t in req.topics for p in t.partitions], image)

    def handlers(self) -> dict[type, Handler]:
        """The requests this part answers, with their handler ``(request, handle, now_ms)``."""
        return {OffsetCommitRequest: self._offset_commit, TxnOffsetCommitRequest: self._txn_offset_commit,
                OffsetFetchRequest: self._offset_fetch, OffsetDeleteRequest: self._offset_delete}

    # --- OffsetCommit -----------------------------------------------------------------

    def _offset_commit(self, req: OffsetCommitRequest, handle: Pending, now_ms: int) -> None:
        def answer_all(error: ErrorCode) -> None:
            self._ctx.reply(handle, _commit_response(req, lambda tp: error))

        error = self._ctx.validate_group_status(req.group_id, "OffsetCommit")
        if error is not None:
            return answer_all(error)
        consumer_group = self._ctx.consumer_groups.get(req.group_id)
        if consumer_group is not None:
            error = self._consumer_commit_error(consumer_group, req, transactional=False)
            if error is not None:
                return answer_all(error)
            return self._store_offsets(consumer_group, req, handle, now_ms)
        streams_group = self._ctx.streams_groups.get(req.group_id)
        if streams_group is not None:
            error = StreamsGroups.validate_offset_commit(streams_group, req.member_id, req.generation_id)
            if error is not None:
                return answer_all(error)
            return self._store_offsets(streams_group, req, handle, now_ms)
        group = self._ctx.groups.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                # a commit from a generation of a group that no longer exists
                return answer_all(ErrorCode.ILLEGAL_GENERATION)
            group = self._ctx.add_group(req.group_id, now_ms)      # offsets only: a "simple" group
        error = _validate_offset_commit(group, req)
        if error is not None:
            return answer_all(error)
        if group.state in (STABLE, PREPARING):
            self._heartbeat(group, group.members[req.member_id], now_ms)
        self._store_offsets(group, req, handle, now_ms)

    def _store_offsets(self, group: GroupMetadata, req: OffsetCommitRequest, handle: Pending,
                       now_ms: int) -> None:
        expire = None if req.retention_time_ms == -1 else now_ms + req.retention_time_ms
        staged, code = self._stage(req, lambda p: OffsetAndMetadata(
            committed_offset=p.committed_offset, committed_leader_epoch=p.committed_leader_epoch,
            metadata=p.committed_metadata or "",
            commit_timestamp_ms=now_ms if p.commit_timestamp == -1 else p.commit_timestamp,
            expire_timestamp_ms=expire))
        if not staged:
            return self._ctx.reply(handle, _commit_response(req, lambda tp: code(tp, ErrorCode.NONE)))
        for tp, _ in staged:
            group.pending_offset_commits[tp] += 1

        def appended(error: ErrorCode, t: int) -> None:
            error = commit_error(error)
            for tp, offset in staged:
                if group.pending_offset_commits[tp] > 0:
                    group.pending_offset_commits[tp] -= 1
                if error is ErrorCode.NONE and group.state is not DEAD:
                    group.offsets.pop(tp, None)
                    group.offsets[tp] = offset
            self._ctx.reply(handle, _commit_response(req, lambda tp: code(tp, error)))

        self._ctx.append(self._ctx.partition_for(group.group_id), _records(group, staged), now_ms, appended)

    def _stage(self, req: OffsetCommitRequest | TxnOffsetCommitRequest,
               offset: Callable[[OffsetCommitRequestPartition], OffsetAndMetadata],
               ) -> tuple[list[tuple[TopicPartition, OffsetAndMetadata]], Callable[[TopicPartition, ErrorCode], ErrorCode]]:
        """The request's offsets to store, and each partition's answer given the append's
        error: metadata over ``offset.metadata.max.bytes`` is not stored, answered
        OFFSET_METADATA_TOO_LARGE."""
        too_large: set[TopicPartition] = set()
        staged: list[tuple[TopicPartition, OffsetAndMetadata]] = []
        for topic in req.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if utf16_length(p.committed_metadata or "") > self._ctx.config.offset_metadata_max_bytes:
                    too_large.add(tp)
                else:
                    staged.append((tp, offset(p)))

        def code(tp: TopicPartition, error: ErrorCode) -> ErrorCode:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE if tp in too_large else error

        return staged, code

    # --- TxnOffsetCommit ----------------------------------------------------------------

    def _txn_offset_commit(self, req: TxnOffsetCommitRequest, handle: Pending, now_ms: int) -> None:
        def answer_all(error: ErrorCode) -> None:
            self._ctx.reply(handle, _commit_response(req, lambda tp: error))

        error = self._ctx.validate_group_status(req.group_id, "TxnOffsetCommit")
        if error is not None:
            return answer_all(error)
        if req.verification is not ErrorCode.NONE:      # handleTxnCommitOffsets' postVerificationCallback
            return answer_all(commit_error(req.verification))
        consumer_group = self._ctx.consumer_groups.get(req.group_id)
        if consumer_group is not None:
            group = consumer_group
            error = self._consumer_commit_error(consumer_group, req, transactional=True)
        elif req.group_id in self._ctx.streams_groups:
            group = self._ctx.streams_groups[req.group_id]
            error = None if req.generation_id < 0 and not req.member_id else \
                StreamsGroups.validate_offset_commit(group, req.member_id, req.generation_id)
        else:
            group = self._ctx.groups.get(req.group_id) or self._ctx.add_group(req.group_id, now_ms)
            error = _validate_txn_commit(group, req)
        if error is not None:
            return answer_all(error)
        staged, code = self._stage(req, lambda p: OffsetAndMetadata(
            committed_offset=p.committed_offset, committed_leader_epoch=p.committed_leader_epoch,
            metadata=p.committed_metadata or "", commit_timestamp_ms=now_ms))
        if not staged:
            return self._ctx.reply(handle, _commit_response(req, lambda tp: code(tp, ErrorCode.NONE)))
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
            self._ctx.reply(handle, _commit_response(req, lambda tp: code(tp, error)))

        self._ctx.append(self._ctx.partition_for(group.group_id), _records(group, staged), now_ms, appended,
                         producer=(req.producer_id, req.producer_epoch))

    def complete_txn_offsets(self, offsets_partition: int, producer_id: int, committed: bool) -> int:
        """A COMMIT (``committed``) or ABORT marker of ``producer_id`` reached
        ``__consumer_offsets``-``offsets_partition``: apply or drop the pending
        offsets of its groups. Returns how many offsets became visible."""
        applied = 0
        for group in list(self._ctx.groups.values()):
            if self._ctx.partition_for(group.group_id) != offsets_partition:
                continue
            pending = group.pending_txn_offsets.pop(producer_id, None)
            if not pending or not committed or group.state is DEAD:
                continue
            for tp, offset in pending.items():
                group.offsets.pop(tp, None)
                group.offsets[tp] = offset
                applied += 1
        return applied

    def pending_txn_producers(self) -> set[tuple[int, int]]:
        """(``__consumer_offsets`` partition, producer id) of every transaction with offsets pending."""
        return {(self._ctx.partition_for(g.group_id), pid)
                for g in self._ctx.groups.values() for pid in g.pending_txn_offsets}

    # --- OffsetFetch ------------------------------------------------------------------

    def _offset_fetch(self, req: OffsetFetchRequest, handle: Pending, now_ms: int) -> None:
        error = self._ctx.validate_group_status(req.group_id, "OffsetFetch")
        if error is not None:
            return self._ctx.reply(handle, OffsetFetchResponse(error_code=error))
        group = self._ctx.groups.get(req.group_id)
        consumer_group = self._ctx.consumer_groups.get(req.group_id)
        if consumer_group is not None:
            error = ConsumerGroups.validate_offset_fetch(consumer_group, req.member_id, req.member_epoch)
            if error is not None:
                return self._ctx.reply(handle, OffsetFetchResponse(error_code=error))
            group = consumer_group
        streams_group = self._ctx.streams_groups.get(req.group_id)
        if streams_group is not None:
            error = StreamsGroups.validate_offset_fetch(streams_group, req.member_id, req.member_epoch)
            if error is not None:
                return self._ctx.reply(handle, OffsetFetchResponse(error_code=error))
            group = streams_group
        offsets = {} if group is None or group.state is DEAD else group.offsets
        if req.topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(offsets):
                by_topic.setdefault(topic, []).append(partition)
            wanted = list(by_topic.items())
        else:
            wanted = [(t.name, list(t.partition_indexes)) for t in req.topics]

        def fetched(tp: TopicPartition) -> OffsetFetchResponsePartition:
            # require_stable (v7+, KIP-447): an offset a transaction or an append may still change
            if req.require_stable and group is not None and (
                    any(tp in pending for pending in group.pending_txn_offsets.values())
                    or group.pending_offset_commits[tp] > 0):
                return OffsetFetchResponsePartition(partition_index=tp[1],
                                                    error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT)
            return _fetched(tp[1], offsets.get(tp))

        topics = tuple(
            OffsetFetchResponseTopic(name=topic, partitions=tuple(fetched((topic, p)) for p in partitions))
            for topic, partitions in wanted)
        self._ctx.reply(handle, OffsetFetchResponse(error_code=ErrorCode.NONE, topics=topics))

    # --- OffsetDelete -------------------------------------------------------------------

    def _offset_delete(self, req: OffsetDeleteRequest, handle: Pending, now_ms: int) -> None:
        """OffsetMetadataManager.deleteOffsets: an unknown or Dead group is GROUP_ID_NOT_FOUND, a
        group with members NON_EMPTY_GROUP unless it is a ``consumer`` group
        (ClassicGroup.validateOffsetDelete); then a topic its members subscribe to (or any topic
        while their subscriptions are unknown: isSubscribedToTopic) is GROUP_SUBSCRIBED_TO_TOPIC
        on each partition, and every other partition NONE, a tombstone written where an offset
        (committed or transactionally pending) exists. The offsets go once it is appended."""
        def fail(error: ErrorCode) -> None:
            self._ctx.reply(handle, OffsetDeleteResponse(error_code=error))

        error = self._ctx.validate_group_status(req.group_id, "OffsetDelete")
        if error is not None:
            return fail(error)
        group = self._ctx.groups.get(req.group_id)
        if group is None or group.state is DEAD:
            return fail(ErrorCode.GROUP_ID_NOT_FOUND)
        consumer = group.protocol_type == "consumer"
        if group.state is not EMPTY and not consumer:
            return fail(ErrorCode.NON_EMPTY_GROUP)
        removed: list[TopicPartition] = []
        topics = []
        for t in req.topics:
            subscribed = (consumer if group.subscribed_topics is None else t.name in group.subscribed_topics)
            error = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if subscribed else ErrorCode.NONE
            if not subscribed:
                removed += [(t.name, p) for p in t.partition_indexes if (t.name, p) in group.offsets or any(
                    (t.name, p) in pending for pending in group.pending_txn_offsets.values())]
            topics.append(OffsetCommitResponseTopic(name=t.name, partitions=tuple(
                OffsetCommitResponsePartition(partition_index=p, error_code=error) for p in t.partition_indexes)))
        response = OffsetDeleteResponse(error_code=ErrorCode.NONE, topics=tuple(topics))
        removed = list(dict.fromkeys(removed))
        if not removed:
            return self._ctx.reply(handle, response)

        def appended(error: ErrorCode, t: int) -> None:
            error = commit_error(error)
            if error is not ErrorCode.NONE:
                return fail(error)
            for tp in removed:              # the tombstone's replay: committed and pending alike
                group.offsets.pop(tp, None)
                for pending in group.pending_txn_offsets.values():
                    pending.pop(tp, None)
            self._ctx.reply(handle, response)

        self._ctx.append(self._ctx.partition_for(group.group_id),
                         [(offset_commit_key(group.group_id, *tp), None) for tp in removed], now_ms, appended)

    # --- cleanup (OffsetMetadataManager.cleanupExpiredOffsets / deleteAllOffsets) ---------

    def expired(self, group: GroupMetadata, now_ms: int) -> list[TopicPartition]:
        """The group's offsets whose retention has passed at ``now_ms`` (none being appended)."""
        return expired_offsets(
            group.offsets, now_ms=now_ms, retention_ms=self._ctx.config.offsets_retention_ms,
            protocol_type=group.protocol_type, is_empty=group.state is EMPTY, is_stable=group.state is STABLE,
            current_state_timestamp=group.current_state_timestamp,
            subscribed_topics=group.subscribed_topics, pending=+group.pending_offset_commits)

    @staticmethod
    def delete_offsets(group: GroupMetadata, removed: Iterable[TopicPartition]) -> list[tuple[bytes, bytes | None]]:
        """Remove ``removed`` from the group's offsets; their tombstones. A Dead group's
        commits still being appended will not be applied either."""
        tombstones: list[tuple[bytes, bytes | None]] = []
        for tp in removed:
            del group.offsets[tp]
            tombstones.append((offset_commit_key(group.group_id, *tp), None))
        if group.state is DEAD:
            group.pending_offset_commits.clear()
        return tombstones


def _validate_offset_commit(group: GroupMetadata, req: OffsetCommitRequest) -> ErrorCode | None:
    as_member = req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None
    event = GroupEvent.MEMBER_OFFSET_COMMIT if as_member else GroupEvent.SIMPLE_OFFSET_COMMIT
    if group.state is DEAD:
        return rejection(group, event)
    if req.generation_id < 0 and group.state is EMPTY:
        return None              # admin clients and consumers without group management
    if as_member:
        error = validate_current_member(group, req.member_id, req.group_instance_id)
        if error is None and req.generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if error is not None:
            return error
    return rejection(group, event)


def _validate_txn_commit(group: GroupMetadata, req: TxnOffsetCommitRequest) -> ErrorCode | None:
    if group.state is DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if req.generation_id < 0 and group.state is EMPTY:
        return None
    if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
        error = validate_current_member(group, req.member_id, req.group_instance_id)
        if error is None and req.generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        return error
    return None


def _records(group: GroupMetadata, staged: list[tuple[TopicPartition, OffsetAndMetadata]]
             ) -> list[tuple[bytes, bytes | None]]:
    return [(offset_commit_key(group.group_id, topic, partition), offset_commit_value(offset))
            for (topic, partition), offset in staged]


def _commit_response(req: OffsetCommitRequest | TxnOffsetCommitRequest,
                     code: Callable[[TopicPartition], ErrorCode]) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=tuple(
        OffsetCommitResponseTopic(name=t.name, partitions=tuple(
            OffsetCommitResponsePartition(partition_index=p.partition_index,
                                          error_code=code((t.name, p.partition_index)))
            for p in t.partitions))
        for t in req.topics))


def _fetched(partition: int, offset: OffsetAndMetadata | None) -> OffsetFetchResponsePartition:
    if offset is None:
        return OffsetFetchResponsePartition(partition_index=partition)
    return OffsetFetchResponsePartition(partition_index=partition, committed_offset=offset.committed_offset,
                                        committed_leader_epoch=offset.committed_leader_epoch,
                                        metadata=offset.metadata)
