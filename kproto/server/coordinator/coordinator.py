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

from collections.abc import Callable, Iterable, Mapping

import logging

from kproto.errors import DecodeError, ErrorCode
from kproto.server.coordinator.config import CoordinatorConfig
from kproto.server.coordinator.context import GroupContext, Handler, rejection
from kproto.server.coordinator.events import (
    DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse, Pending, Request, Response,
)
from kproto.server.coordinator.migration import GroupMigration
from kproto.server.coordinator.consumer_groups import (
    ConsumerGroup, ConsumerGroups, TopicImage, group_tombstones, replay_consumer_record,
)
from kproto.server.coordinator.events import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest,
    SyncGroupResponse,
)
from kproto.server.coordinator.group import GroupMetadata
from kproto.server.coordinator.membership import GroupMembership, join_error
from kproto.server.coordinator.offset_commits import GroupOffsets
from kproto.server.coordinator.offsets import TopicPartition
from kproto.server.coordinator.persistence import offset_commit_key, replay
from kproto.server.coordinator.state import GroupEvent, GroupState
from kproto.server.coordinator.streams_groups import (
    StreamsGroup, StreamsGroups, group_tombstones as streams_group_tombstones, replay_streams_record,
)
from kproto.server.coordinator.persistence import STREAMS_GROUP_TYPES
from kproto.server.runtime.core import CoordinatorRuntime
from kproto.server.runtime.state_topic import LogRecord

__all__ = ["GroupCoordinator"]

log = logging.getLogger("kproto.server.groups")


class GroupCoordinator(CoordinatorRuntime):
    """Kafka's GroupCoordinatorShard for classic groups: it owns the partitions and
    the retention timer, and composes two parts over one ``GroupContext``:
    ``GroupMembership`` (GroupMetadataManager) and ``GroupOffsets``
    (OffsetMetadataManager, transactional offsets included). DeleteGroups and the
    offset cleanup need both, so they are here."""

    def __init__(self, config: CoordinatorConfig | None = None, *,
                 owned_partitions: Iterable[int] | None = None,
                 uuid_factory: Callable[[], str] | None = None) -> None:
        """``owned_partitions``: the ``__consumer_offsets`` partitions this node
        coordinates (default: all of them, a single-node cluster).
        ``uuid_factory``: the random part of new member ids (default uuid4)."""
        super().__init__(config or CoordinatorConfig())
        n = self.config.offsets_topic_num_partitions
        self._ctx = GroupContext(config=self.config, reply=self._reply, append=self._append, timers=self._timers,
                                 owned=set(range(n) if owned_partitions is None else owned_partitions))
        self._membership = GroupMembership(self._ctx, uuid_factory)
        self._consumer = ConsumerGroups(self._ctx, uuid_factory)
        self._streams = StreamsGroups(self._ctx)
        self._offsets = GroupOffsets(self._ctx, self._membership.heartbeat, self._consumer)
        self._migration = GroupMigration(self._ctx, self._membership, self._consumer)
        self._in_consumer_group = self._migration.handlers()
        self._retention_scheduled = False
        classic = self._membership.handlers()
        for request_type in (JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest):
            classic[request_type] = self._classic_guard(classic[request_type])
        self._handlers: dict[type, Handler] = {
            **classic, **self._offsets.handlers(), **self._consumer.handlers(), **self._streams.handlers(),
            DeleteGroupsRequest: self._delete_groups}

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
        return self._ctx.partition_for(group_id)

    def validate_group_status(self, group_id: str | None, api: str) -> ErrorCode | None:
        """INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR or None: whether
        ``group_id``'s partition is coordinated here (share groups' membership asks too)."""
        return self._ctx.validate_group_status(group_id, api)

    def update_topics(self, image: TopicImage) -> None:
        """The cluster's topics (name -> (topic id, partitions)), as Kafka's onNewMetadataImage:
        consumer groups see a changed subscribed topic on their next heartbeat."""
        self._consumer.image = dict(image)
        self._streams.update_image(self._consumer.image)

    def use_group_configs(self, group_config: Callable[[str], Mapping[str, str]]) -> None:
        """Where a group's config overrides come from (the GROUP config resources; Kafka's
        GroupConfigManager): read at each use, so an alteration applies from the next heartbeat."""
        self._ctx.group_config = group_config

    def streams_group(self, group_id: str) -> StreamsGroup | None:
        """A KIP-1071 group, for inspection only (do not mutate)."""
        return self._ctx.streams_groups.get(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """A KIP-848 group, for inspection only (do not mutate)."""
        return self._ctx.consumer_groups.get(group_id)

    # --- one group id, one type ---------------------------------------------------------

    def _classic_guard(self, handler: Handler) -> Handler:
        """Classic requests to a KIP-848 group id (GroupMetadataManager.classicGroupJoin and
        siblings): an empty consumer group becomes a classic one on JoinGroup when
        ``group.consumer.migration.policy`` allows a downgrade (else INCONSISTENT_GROUP_PROTOCOL;
        SyncGroup/Heartbeat/LeaveGroup to it: UNKNOWN_MEMBER_ID); a non-empty one takes the
        request as a classic member's (``GroupMigration``)."""
        def guarded(req, handle: Pending, now_ms: int) -> None:
            if req.group_id in self._ctx.streams_groups:
                # GroupMetadataManager.classicGroupJoin: a streams group id is not a classic group
                return refuse(req, handle)
            group = self._ctx.consumer_groups.get(req.group_id)
            if group is None or self._ctx.validate_group_status(req.group_id, "JoinGroup") is not None:
                return handler(req, handle, now_ms)
            if group.members:
                return self._in_consumer_group[type(req)](req, handle, now_ms)
            policy = self.config.consumer_group_migration_policy.lower()
            if isinstance(req, JoinGroupRequest) and policy in ("downgrade", "bidirectional"):
                self._consumer.unload(req.group_id)
                classic = self._ctx.add_group(req.group_id, now_ms)
                classic.offsets, classic.pending_txn_offsets = group.offsets, group.pending_txn_offsets
                classic.pending_offset_commits = group.pending_offset_commits
                self._append(self.partition_for(req.group_id),
                             group_tombstones(req.group_id, group.resolved_regexes), now_ms)
                return handler(req, handle, now_ms)
            return refuse(req, handle)

        def refuse(req, handle: Pending) -> None:
            if isinstance(req, JoinGroupRequest):
                return self._reply(handle, join_error(req.member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            error = ErrorCode.UNKNOWN_MEMBER_ID
            if isinstance(req, SyncGroupRequest):
                return self._reply(handle, SyncGroupResponse(error_code=error))
            if isinstance(req, HeartbeatRequest):
                return self._reply(handle, HeartbeatResponse(error_code=error))
            return self._reply(handle, LeaveGroupResponse(error_code=error))
        return guarded

    def group(self, group_id: str) -> GroupMetadata | None:
        """The group's current metadata, for inspection only (do not mutate)."""
        return self._ctx.groups.get(group_id)

    def begin_load(self, partition: int, now_ms: int) -> None:
        """This node became the partition's coordinator: its groups answer
        COORDINATOR_LOAD_IN_PROGRESS until ``load_partition``."""
        now_ms = self._observe(now_ms)
        self._check_partition(partition)
        self._unload_groups(partition, now_ms)
        self._ctx.owned.discard(partition)
        self._ctx.loading.add(partition)

    def load_partition(self, partition: int, records: Iterable[LogRecord], now_ms: int) -> tuple[str, ...]:
        """Replay the partition's records (``(key, value)`` pairs or Records, in
        log order; see ``persistence.records_from_log``) and own it. Returns the
        ids of the groups loaded. Groups with members come back Stable and their
        members must heartbeat within their session timeout, as in Kafka.
        Transactional offsets whose marker is not in the log yet come back
        pending; ``complete_txn_offsets`` settles them when it is written."""
        now_ms = self._observe(now_ms)
        if partition not in self._ctx.loading:
            self.begin_load(partition, now_ms)
        self._ensure_retention_timer(now_ms)
        result = replay(records)
        loaded = []
        consumer: dict[str, ConsumerGroup] = {}
        streams: dict[str, StreamsGroup] = {}
        for record_type, key, value in result.consumer_records:
            try:
                if record_type in STREAMS_GROUP_TYPES:
                    replay_streams_record(streams, record_type, key, value)
                else:
                    replay_consumer_record(consumer, record_type, key, value)
            except DecodeError as e:
                log.warning("skipping unreadable __consumer_offsets record (type %d): %s", record_type, e)
        for group_id, sgroup in streams.items():
            sgroup.offsets = result.offsets.pop(group_id, {})
            sgroup.pending_txn_offsets = result.pending_txn_offsets.pop(group_id, {})
            result.groups.pop(group_id, None)
            self._ctx.streams_groups[group_id] = sgroup
            self._streams.loaded(sgroup, now_ms)
            loaded.append(group_id)
        for group_id, cgroup in consumer.items():
            cgroup.offsets = result.offsets.pop(group_id, {})
            cgroup.pending_txn_offsets = result.pending_txn_offsets.pop(group_id, {})
            result.groups.pop(group_id, None)
            self._ctx.consumer_groups[group_id] = cgroup
            self._consumer.loaded(cgroup, now_ms)
            loaded.append(group_id)
        for group_id, group in result.groups.items():
            group.offsets = result.offsets.pop(group_id, {})
            group.pending_txn_offsets = result.pending_txn_offsets.pop(group_id, {})
            loaded.append(self._membership.load_group(group, now_ms))
        # offsets (committed or pending in a transaction) without group metadata: a group that
        # only stores offsets
        for group_id in {**result.offsets, **result.pending_txn_offsets}:
            group = GroupMetadata(group_id, GroupState.EMPTY, current_state_timestamp=now_ms)
            group.offsets = result.offsets.get(group_id, {})
            group.pending_txn_offsets = result.pending_txn_offsets.get(group_id, {})
            loaded.append(self._membership.load_group(group, now_ms))
        self._ctx.loading.discard(partition)
        self._ctx.owned.add(partition)
        return tuple(loaded)

    def unload_partition(self, partition: int, now_ms: int) -> None:
        """This node no longer coordinates the partition: its groups are dropped,
        parked requests answered NOT_COORDINATOR."""
        now_ms = self._observe(now_ms)
        self._check_partition(partition)
        self._unload_groups(partition, now_ms)
        self._ctx.owned.discard(partition)
        self._ctx.loading.discard(partition)

    def complete_txn_offsets(self, offsets_partition: int, producer_id: int, committed: bool) -> int:
        """A COMMIT (``committed``) or ABORT marker of ``producer_id`` reached
        ``__consumer_offsets``-``offsets_partition``: apply or drop the pending
        offsets of its groups. Returns how many offsets became visible."""
        return self._offsets.complete_txn_offsets(offsets_partition, producer_id, committed)

    def pending_txn_producers(self) -> set[tuple[int, int]]:
        """(``__consumer_offsets`` partition, producer id) of every transaction with offsets pending."""
        return self._offsets.pending_txn_producers()

    # --- partitions -------------------------------------------------------------------

    def _check_partition(self, partition: int) -> None:
        if not 0 <= partition < self.config.offsets_topic_num_partitions:
            raise ValueError(f"__consumer_offsets has no partition {partition}")

    def _unload_groups(self, partition: int, now_ms: int) -> None:
        for group in [g for g in self._ctx.groups.values() if self.partition_for(g.group_id) == partition]:
            self._membership.unload_group(group, now_ms)
        for group_id in [g for g in self._ctx.consumer_groups if self.partition_for(g) == partition]:
            self._consumer.unload(group_id)
        for group_id in [g for g in self._ctx.streams_groups if self.partition_for(g) == partition]:
            self._streams.unload(group_id)

    # --- DeleteGroups -------------------------------------------------------------------

    def _delete_groups(self, req: DeleteGroupsRequest, handle: Pending, now_ms: int) -> None:
        """GroupCoordinatorShard.deleteGroups: every offset, then the group."""
        results: dict[str, ErrorCode] = {}
        deleted: list[GroupMetadata] = []
        for group_id in dict.fromkeys(req.groups_names):
            error = self._ctx.validate_group_status(group_id, "DeleteGroups")
            if error is None and group_id in self._ctx.consumer_groups:
                error = self._delete_consumer_group(group_id, now_ms)
            elif error is None and group_id in self._ctx.streams_groups:
                error = self._delete_streams_group(group_id, now_ms)
            elif error is None:
                group = self._ctx.groups.get(group_id)
                if group is None:
                    error = ErrorCode.GROUP_ID_NOT_FOUND
                else:
                    error = rejection(group, GroupEvent.DELETE_GROUP)
                    if error is None:
                        group.transition_to(GroupState.DEAD, now_ms)
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

    def _delete_consumer_group(self, group_id: str, now_ms: int) -> ErrorCode | None:
        """ConsumerGroup.validateDeleteGroup (members: NON_EMPTY_GROUP), then its offsets' and
        records' tombstones (GroupMetadataManager.createGroupTombstoneRecords)."""
        group = self._ctx.consumer_groups[group_id]
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        records = [(offset_commit_key(group_id, *tp), None) for tp in group.offsets]
        self._consumer.unload(group_id)
        self._append(self.partition_for(group_id), records + group_tombstones(group_id, group.resolved_regexes), now_ms)
        return None

    def _delete_streams_group(self, group_id: str, now_ms: int) -> ErrorCode | None:
        """StreamsGroup.validateDeleteGroup, then its offsets' and records' tombstones."""
        group = self._ctx.streams_groups[group_id]
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        records = [(offset_commit_key(group_id, *tp), None) for tp in group.offsets]
        self._streams.unload(group_id)
        self._append(self.partition_for(group_id), records + streams_group_tombstones(group_id), now_ms)
        return None

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
        _, count = self._cleanup(list(self._ctx.groups.values()),
                                 lambda group: self._offsets.expired(group, now_ms), now_ms)
        return count

    def _cleanup(self, groups: list[GroupMetadata], select: Callable[[GroupMetadata], list[TopicPartition]],
                 now_ms: int, on_done: Callable[[ErrorCode, int], None] | None = None) -> tuple[list[int], int]:
        """GroupCoordinatorShard.cleanupGroupMetadata: remove the selected offsets
        (the offsets part), then the group if nothing keeps it (membership). Returns
        the ids of the tombstone appends (one per group, ``on_done`` runs for each)
        and the number of offsets removed."""
        out = []
        count = 0
        for group in groups:
            removed = select(group)
            tombstones = self._offsets.delete_offsets(group, removed)
            tombstones += self._membership.maybe_delete_group(group, now_ms)
            count += len(removed)
            if tombstones:
                out.append(self._append(self.partition_for(group.group_id), tombstones, now_ms, on_done))
        return out, count
