"""GroupCoordinator: Kafka's classic group coordinator as a sans-I/O state machine.

The contract (events in, events out; h11's shape):

* ``handle(request, now_ms)`` takes one request and returns its response, or a
  ``Pending`` handle when the response must wait: a JoinGroup parked until the
  rebalance completes, a follower's SyncGroup until the leader's, and every
  response that needs a log append (OffsetCommit, the leader's SyncGroup, a
  static member's rejoin, DeleteGroups).
* ``take_appends()`` returns the ``__consumer_offsets`` records that requests
  and timers produced, as ``Append``s (partition, key/value pairs, id). Append
  them in order, then call ``append_done(id, now_ms, error)``: only then is a
  response held by the append released (Kafka's appendForGroup callback).
* ``poll(now_ms)`` fires due timers (session expiry, rebalance and sync
  timeouts, the initial rebalance delay, offset retention) and returns every
  ``(Pending, response)`` that became ready; ``next_deadline()`` says when a
  timer is next due. After any call, loop: ``poll``, then append what
  ``take_appends`` returns and report each with ``append_done``; repeat until
  ``take_appends`` comes back empty (a timer fired by ``poll`` may produce
  records; a reported append may release responses).
* Partitions: the coordinator owns every ``__consumer_offsets`` partition
  unless told otherwise; ``begin_load``/``load_partition`` replay a partition's
  records (requests for its groups answer COORDINATOR_LOAD_IN_PROGRESS in
  between), ``unload_partition`` gives it up (NOT_COORDINATOR afterwards).

It never reads a clock, sleeps, or touches a file. Behaviour follows Kafka
3.x's GroupCoordinator.scala (3.2+: heartbeats answer NONE in
CompletingRebalance, members that never send SyncGroup are removed after the
rebalance timeout; JoinGroup v9 skip_assignment for static leaders).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kproto.errors import ErrorCode
from kproto.server.coordinator.append_errors import commit_error
from kproto.server.coordinator.config import CoordinatorConfig
from kproto.server.coordinator.events import (
    DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse, DescribedGroup, DescribedGroupMember,
    DescribeGroupsRequest, DescribeGroupsResponse, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    ListedGroup, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetCommitResponsePartition, OffsetCommitResponseTopic, OffsetFetchRequest, OffsetFetchResponse,
    OffsetFetchResponsePartition, OffsetFetchResponseTopic, Pending, Request, Response, SyncGroupRequest,
    SyncGroupResponse,
)
from kproto.server.coordinator.group import GroupMetadata
from kproto.server.coordinator.membership import GroupMembership, join_error
from kproto.server.coordinator.txn_offsets import TxnOffsetCommitRequest, TxnOffsetCommits, has_pending_txn_offset
from kproto.server.coordinator.offsets import (
    OffsetAndMetadata, TopicPartition, expired_offsets, utf16_length,
)
from kproto.server.coordinator.persistence import group_metadata_key, offset_commit_key, offset_commit_value, replay
from kproto.server.coordinator.state import GroupEvent, GroupState
from kproto.server.runtime.state_topic import LogRecord, partition_for

__all__ = ["GroupCoordinator"]

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

# APIs that accept the empty group id (Kafka keeps it for old offset-only clients and admin)
_EMPTY_ID_OK = frozenset({"OffsetCommit", "OffsetFetch", "DescribeGroups", "DeleteGroups"})


class GroupCoordinator(GroupMembership, TxnOffsetCommits):
    def __init__(self, config: CoordinatorConfig | None = None, *,
                 owned_partitions: Iterable[int] | None = None,
                 uuid_factory: Callable[[], str] | None = None) -> None:
        """``owned_partitions``: the ``__consumer_offsets`` partitions this node
        coordinates (default: all of them, a single-node cluster).
        ``uuid_factory``: the random part of new member ids (default uuid4)."""
        super().__init__(config or CoordinatorConfig())
        n = self.config.offsets_topic_num_partitions
        self.groups: dict[str, GroupMetadata] = {}
        self._owned: set[int] = set(range(n) if owned_partitions is None else owned_partitions)
        self._loading: set[int] = set()
        self._retention_scheduled = False
        if uuid_factory is not None:
            self._uuid = uuid_factory
        self._handlers: dict[type, Callable[[object, Pending, int], None]] = {
            JoinGroupRequest: self._join_group, SyncGroupRequest: self._sync_group,
            HeartbeatRequest: self._heartbeat_request, LeaveGroupRequest: self._leave_group,
            OffsetCommitRequest: self._offset_commit, OffsetFetchRequest: self._offset_fetch,
            TxnOffsetCommitRequest: self._txn_offset_commit,
            ListGroupsRequest: self._list_groups, DescribeGroupsRequest: self._describe_groups,
            DeleteGroupsRequest: self._delete_groups,
        }

    # --- public entry points --------------------------------------------------------

    def handle(self, request: Request, now_ms: int) -> Response | Pending:
        """One request in; its response, or a ``Pending`` that ``poll`` completes later."""
        handler = self._handlers.get(type(request))
        if handler is None:
            raise TypeError(f"not a group coordinator request: {type(request).__name__}")
        now_ms = self._observe(now_ms)
        self._ensure_retention_timer(now_ms)
        handle = self._new_handle(type(request).__name__.removesuffix("Request"))
        handler(request, handle, now_ms)
        return self._ready.pop(handle, handle)

    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id``."""
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def group(self, group_id: str) -> GroupMetadata | None:
        """The group's current metadata, for inspection only (do not mutate)."""
        return self.groups.get(group_id)

    def begin_load(self, partition: int, now_ms: int) -> None:
        """This node became the partition's coordinator: its groups answer
        COORDINATOR_LOAD_IN_PROGRESS until ``load_partition``."""
        now_ms = self._observe(now_ms)
        self._check_partition(partition)
        self._unload_groups(partition, now_ms)
        self._owned.discard(partition)
        self._loading.add(partition)

    def load_partition(self, partition: int, records: Iterable[LogRecord], now_ms: int) -> tuple[str, ...]:
        """Replay the partition's records (``(key, value)`` pairs or Records, in
        log order; see ``persistence.records_from_log``) and own it. Returns the
        ids of the groups loaded. Groups with members come back Stable and their
        members must heartbeat within their session timeout, as in Kafka.
        Transactional offsets whose marker is not in the log yet come back
        pending; ``complete_txn_offsets`` settles them when it is written."""
        now_ms = self._observe(now_ms)
        if partition not in self._loading:
            self.begin_load(partition, now_ms)
        self._ensure_retention_timer(now_ms)
        result = replay(records)
        loaded = []
        for group_id, group in result.groups.items():
            group.offsets = result.offsets.pop(group_id, {})
            group.pending_txn_offsets = result.pending_txn_offsets.pop(group_id, {})
            loaded.append(self._load_group(group, now_ms))
        # offsets (committed or pending in a transaction) without group metadata: a group that
        # only stores offsets
        for group_id in {**result.offsets, **result.pending_txn_offsets}:
            group = GroupMetadata(group_id, EMPTY, current_state_timestamp=now_ms)
            group.offsets = result.offsets.get(group_id, {})
            group.pending_txn_offsets = result.pending_txn_offsets.get(group_id, {})
            loaded.append(self._load_group(group, now_ms))
        self._loading.discard(partition)
        self._owned.add(partition)
        return tuple(loaded)

    def unload_partition(self, partition: int, now_ms: int) -> None:
        """This node no longer coordinates the partition: its groups are dropped,
        parked requests answered NOT_COORDINATOR."""
        now_ms = self._observe(now_ms)
        self._check_partition(partition)
        self._unload_groups(partition, now_ms)
        self._owned.discard(partition)
        self._loading.discard(partition)

    # --- partitions -------------------------------------------------------------------

    def _check_partition(self, partition: int) -> None:
        if not 0 <= partition < self.config.offsets_topic_num_partitions:
            raise ValueError(f"__consumer_offsets has no partition {partition}")

    def _validate_group_status(self, group_id: str | None, api: str) -> ErrorCode | None:
        if group_id is None or (group_id == "" and api not in _EMPTY_ID_OK):
            return ErrorCode.INVALID_GROUP_ID
        partition = self.partition_for(group_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def _load_group(self, group: GroupMetadata, now_ms: int) -> str:
        self.groups[group.group_id] = group
        # onGroupLoaded: restored members must show they are alive
        if group.size > self.config.group_max_size:
            self._prepare_rebalance(group, now_ms)
        for member in group.members.values():
            self._heartbeat(group, member, now_ms)
        return group.group_id

    def _unload_groups(self, partition: int, now_ms: int) -> None:
        for group in [g for g in self.groups.values() if self.partition_for(g.group_id) == partition]:
            group.transition_to(DEAD, now_ms)
            for member in group.members.values():
                self._complete_join(member, join_error(member.member_id, ErrorCode.NOT_COORDINATOR))
                self._complete_sync(member, SyncGroupResponse(error_code=ErrorCode.NOT_COORDINATOR))
            self._forget_group_timers(group)
            del self.groups[group.group_id]

    # --- OffsetCommit -----------------------------------------------------------------

    def _offset_commit(self, req: OffsetCommitRequest, handle: Pending, now_ms: int) -> None:
        def answer_all(error: ErrorCode) -> None:
            self._reply(handle, _commit_response(req, lambda tp: error))

        error = self._validate_group_status(req.group_id, "OffsetCommit")
        if error is not None:
            return answer_all(error)
        group = self.groups.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                # a commit from a generation of a group that no longer exists
                return answer_all(ErrorCode.ILLEGAL_GENERATION)
            group = self._add_group(req.group_id, now_ms)      # offsets only: a "simple" group
        error = self._validate_offset_commit(group, req)
        if error is not None:
            return answer_all(error)
        if group.state in (STABLE, PREPARING):
            self._heartbeat(group, group.members[req.member_id], now_ms)
        self._store_offsets(group, req, handle, now_ms)

    def _validate_offset_commit(self, group: GroupMetadata, req: OffsetCommitRequest) -> ErrorCode | None:
        as_member = req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None
        event = GroupEvent.MEMBER_OFFSET_COMMIT if as_member else GroupEvent.SIMPLE_OFFSET_COMMIT
        if group.state is DEAD:
            return self._rejection(group, event)
        if req.generation_id < 0 and group.state is EMPTY:
            return None              # admin clients and consumers without group management
        if as_member:
            error = self._validate_current_member(group, req.member_id, req.group_instance_id)
            if error is None and req.generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            if error is not None:
                return error
        return self._rejection(group, event)

    def _store_offsets(self, group: GroupMetadata, req: OffsetCommitRequest, handle: Pending,
                       now_ms: int) -> None:
        too_large: set[TopicPartition] = set()
        staged: list[tuple[TopicPartition, OffsetAndMetadata]] = []
        expire = None if req.retention_time_ms == -1 else now_ms + req.retention_time_ms
        for topic in req.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                metadata = p.committed_metadata or ""
                if utf16_length(metadata) > self.config.offset_metadata_max_bytes:
                    too_large.add(tp)
                    continue
                staged.append((tp, OffsetAndMetadata(
                    committed_offset=p.committed_offset, committed_leader_epoch=p.committed_leader_epoch,
                    metadata=metadata, commit_timestamp_ms=now_ms if p.commit_timestamp == -1 else p.commit_timestamp,
                    expire_timestamp_ms=expire)))

        def code(tp: TopicPartition, error: ErrorCode) -> ErrorCode:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE if tp in too_large else error

        if not staged:
            return self._reply(handle, _commit_response(req, lambda tp: code(tp, ErrorCode.NONE)))
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
            self._reply(handle, _commit_response(req, lambda tp: code(tp, error)))

        records = [(offset_commit_key(group.group_id, topic, partition), offset_commit_value(offset))
                   for (topic, partition), offset in staged]
        self._append(self.partition_for(group.group_id), records, now_ms, appended)

    # --- OffsetFetch ------------------------------------------------------------------

    def _offset_fetch(self, req: OffsetFetchRequest, handle: Pending, now_ms: int) -> None:
        error = self._validate_group_status(req.group_id, "OffsetFetch")
        if error is not None:
            return self._reply(handle, OffsetFetchResponse(error_code=error))
        group = self.groups.get(req.group_id)
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
            if req.require_stable and (has_pending_txn_offset(group, tp) or (
                    group is not None and group.pending_offset_commits[tp] > 0)):
                return OffsetFetchResponsePartition(partition_index=tp[1],
                                                    error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT)
            return _fetched(tp[1], offsets.get(tp))

        topics = tuple(
            OffsetFetchResponseTopic(name=topic, partitions=tuple(fetched((topic, p)) for p in partitions))
            for topic, partitions in wanted)
        self._reply(handle, OffsetFetchResponse(error_code=ErrorCode.NONE, topics=topics))

    # --- ListGroups / DescribeGroups / DeleteGroups -------------------------------------

    def _list_groups(self, req: ListGroupsRequest, handle: Pending, now_ms: int) -> None:
        states = {s.lower() for s in req.states_filter}
        classic = not req.types_filter or "classic" in {t.lower() for t in req.types_filter}
        groups = tuple(
            ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "", group_state=g.state.value)
            for g in self.groups.values()
            if classic and g.state is not DEAD and (not states or g.state.value.lower() in states))
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._loading else ErrorCode.NONE
        self._reply(handle, ListGroupsResponse(error_code=error, groups=groups))

    def _describe_groups(self, req: DescribeGroupsRequest, handle: Pending, now_ms: int) -> None:
        self._reply(handle, DescribeGroupsResponse(groups=tuple(
            self._describe(group_id, req.api_version) for group_id in req.groups)))

    def _describe(self, group_id: str, api_version: int) -> DescribedGroup:
        error = self._validate_group_status(group_id, "DescribeGroups")
        if error is not None:
            return DescribedGroup(error_code=error, group_id=group_id, group_state="", protocol_type="",
                                  protocol_data="")
        group = self.groups.get(group_id)
        if group is None:
            if api_version >= 6:
                return DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND, group_id=group_id,
                                      group_state=DEAD.value, protocol_type="", protocol_data="",
                                      error_message=f"Group {group_id} not found.")
            return DescribedGroup(error_code=ErrorCode.NONE, group_id=group_id, group_state=DEAD.value,
                                  protocol_type="", protocol_data="")
        # member metadata and assignments only mean something once Stable
        stable = group.state is STABLE and group.protocol_name is not None
        members = tuple(DescribedGroupMember(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host, member_metadata=m.metadata(group.protocol_name) if stable else b"",
            member_assignment=m.assignment if stable else b"") for m in group.members.values())
        return DescribedGroup(error_code=ErrorCode.NONE, group_id=group_id, group_state=group.state.value,
                              protocol_type=group.protocol_type or "",
                              protocol_data=group.protocol_name if stable else "", members=members)

    def _delete_groups(self, req: DeleteGroupsRequest, handle: Pending, now_ms: int) -> None:
        results: dict[str, ErrorCode] = {}
        deleted: list[GroupMetadata] = []
        for group_id in dict.fromkeys(req.groups_names):
            error = self._validate_group_status(group_id, "DeleteGroups")
            if error is None:
                group = self.groups.get(group_id)
                if group is None:
                    error = ErrorCode.GROUP_ID_NOT_FOUND
                else:
                    error = self._rejection(group, GroupEvent.DELETE_GROUP)
                    if error is None:
                        group.transition_to(DEAD, now_ms)
                        deleted.append(group)
            results[group_id] = error or ErrorCode.NONE
        response = DeleteGroupsResponse(results=tuple(
            DeletableGroupResult(group_id=g, error_code=e) for g, e in results.items()))
        left = 0

        def appended(error: ErrorCode, t: int) -> None:
            # tombstones are best effort in Kafka too (the next cleanup writes them again):
            # the answer only waits for them
            nonlocal left
            left -= 1
            if left == 0:
                self._reply(handle, response)

        append_ids, _ = self._cleanup(deleted, lambda g: list(g.offsets), now_ms, appended)
        left = len(append_ids)
        if not append_ids:
            self._reply(handle, response)

    # --- retention --------------------------------------------------------------------

    def _ensure_retention_timer(self, now_ms: int) -> None:
        if not self._retention_scheduled:
            self._retention_scheduled = True
            self._timers.schedule(("retention",), now_ms + self.config.offsets_retention_check_interval_ms,
                                  self._on_retention_timer)

    def _on_poll(self, now_ms: int) -> None:
        self._ensure_retention_timer(now_ms)

    def _on_retention_timer(self, now_ms: int) -> None:
        self._retention_scheduled = False
        self.expire_offsets(now_ms)
        self._ensure_retention_timer(now_ms)

    def expire_offsets(self, now_ms: int) -> int:
        """Kafka's periodic cleanup (every ``offsets.retention.check.interval.ms``,
        run by ``poll``): drop expired offsets, remove Empty groups left without
        offsets, append the tombstones. Returns the number of offsets expired."""
        retention = self.config.offsets_retention_ms

        def expired(group: GroupMetadata) -> list[TopicPartition]:
            return expired_offsets(
                group.offsets, now_ms=now_ms, retention_ms=retention, protocol_type=group.protocol_type,
                is_empty=group.state is EMPTY, is_stable=group.state is STABLE,
                current_state_timestamp=group.current_state_timestamp,
                subscribed_topics=group.subscribed_topics, pending=+group.pending_offset_commits)

        _, count = self._cleanup(list(self.groups.values()), expired, now_ms)
        return count

    def _cleanup(self, groups: list[GroupMetadata], select: Callable[[GroupMetadata], list[TopicPartition]],
                 now_ms: int, on_done: Callable[[ErrorCode, int], None] | None = None) -> tuple[list[int], int]:
        """GroupMetadataManager.cleanupGroupMetadata: remove the selected offsets;
        an Empty group left without offsets is Dead; Dead groups leave the
        coordinator. Returns the ids of the tombstone appends (one per group,
        ``on_done`` runs for each) and the number of offsets removed."""
        out = []
        count = 0
        for group in groups:
            removed = select(group)
            for tp in removed:
                del group.offsets[tp]
            if group.state is DEAD:
                group.pending_offset_commits.clear()
            if group.state is EMPTY and not group.has_offsets():
                group.transition_to(DEAD, now_ms)
            tombstones: list[tuple[bytes, bytes | None]] = [
                (offset_commit_key(group.group_id, topic, partition), None) for topic, partition in removed]
            if group.state is DEAD and self.groups.get(group.group_id) is group:
                del self.groups[group.group_id]
                self._forget_group_timers(group)
                if group.generation_id > 0:       # generation 0 never wrote GroupMetadata
                    tombstones.append((group_metadata_key(group.group_id), None))
            count += len(removed)
            if tombstones:
                out.append(self._append(self.partition_for(group.group_id), tombstones, now_ms, on_done))
        return out, count


def _commit_response(req: OffsetCommitRequest,
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
