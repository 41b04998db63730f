"""Share groups on one node, sans-I/O, on the shared coordinator runtime.

Kafka splits this three ways: the group coordinator keeps share-group
membership (GroupMetadataManager), each partition leader keeps its share
partitions (SharePartitionManager / SharePartition), and the share coordinator
persists their state in ``__share_group_state`` (ShareCoordinatorShard), the
leaders reaching it through the inter-broker state APIs. kproto is one node:
``ShareCoordinator`` holds all three and its share partitions write their
state straight into its store (``write_state``), which is also what the
state APIs (InitializeShareGroupState ... ReadShareGroupStateSummary) use.
Membership is kept in memory only (Kafka also writes it to ``__consumer_offsets``;
members rejoin after a restart); share-partition state is persisted and replayed.

On a node of a cluster (``clustered``) the three roles are split as Kafka splits
them, one object per node still: ``groups`` holds the share groups whose
``__consumer_offsets`` partition this node leads, ``partitions`` the share
partitions of the topic partitions it leads (installed by the service once
their state was read from the share coordinator: ``install``), ``states`` the
``__share_group_state`` partitions it leads (``owned``). A share partition's
writes go out as ``take_state_writes`` (the service sends them to the share
coordinator, DefaultStatePersister, and reports ``append_done``), not into
``states``.

Timers (the runtime's): each member's session, and each share partition's
earliest acquisition lock.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from kproto.errors import ErrorCode
from kproto.log.manager import LEADER_EPOCH
from kproto.server.runtime.core import CoordinatorRuntime, Pending
from kproto.server.runtime.state_topic import LogRecord
from kproto.server.share.config import ShareConfig
from kproto.server.share.group import ShareGroup, ShareMember, simple_assign
from kproto.server.share.partition import SharePartition, StateBatch
from kproto.server.share.persistence import (
    ShareKey, ShareState, merge, partition_for_key, replay, snapshot_record, tombstone, update_record,
)

__all__ = ["Catalog", "ShareCoordinator", "Acknowledge", "AckBatch", "StateOp", "StateRequest"]

LEAVE_EPOCH = -1


class Catalog(Protocol):
    """What the coordinator reads of the broker's topics (no side effects)."""

    def topic_id(self, topic: str) -> uuid.UUID | None: ...
    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...
    def partition_count(self, topic: str) -> int: ...
    def log_offsets(self, topic: str, partition: int) -> tuple[int, int]: ...
    def group_config(self, group_id: str) -> dict[str, str]: ...


@dataclass(frozen=True)
class AckBatch:
    topic_id: uuid.UUID
    partition: int
    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


@dataclass(frozen=True)
class Acknowledge:
    """Acknowledgements of one ShareFetch or ShareAcknowledge; answered, once the
    changed states are written, with {(topic id, partition): error code}."""

    group_id: str
    member_id: str
    batches: tuple[AckBatch, ...]


@dataclass(frozen=True)
class StateOp:
    """One share partition's part of a share-group state API (InitializeShareGroupState,
    ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState,
    ReadShareGroupStateSummary: ``kind`` initialize / read / write / delete / summary)."""

    kind: str
    key: ShareKey
    state_epoch: int = 0
    leader_epoch: int = -1
    start_offset: int = -1
    delivery_complete_count: int = -1
    batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True)
class StateRequest:
    """Answered, once what it changed is written, with one dict per op: ``error_code``,
    ``error_message`` and, for read and summary, the state."""

    ops: tuple[StateOp, ...]


class ShareCoordinator(CoordinatorRuntime):
    def __init__(self, config: ShareConfig, catalog: Catalog, *, clustered: bool = False) -> None:
        super().__init__(config)
        self.catalog = catalog
        self.clustered = clustered
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[ShareKey, SharePartition] = {}
        self.states: dict[ShareKey, ShareState] = {}
        self.owned: set[int] = set()    # __share_group_state partitions served here (a cluster's)
        self._state_writes: list[tuple[int, StateOp]] = []      # a cluster's share-partition writes
        self._released = False        # records became AVAILABLE since take_released()

    # -- loading (the shell) --------------------------------------------------------------

    def begin_load(self, partition: int, now_ms: int) -> None:
        pass

    def load_partition(self, partition: int, records: Iterable[LogRecord], now_ms: int) -> list[ShareKey]:
        loaded = replay(records, partition=partition)
        self.states.update(loaded.states)
        self.owned.add(partition)
        if not self.clustered:      # a cluster's groups are the group coordinator's, elsewhere
            for group_id, _, _ in loaded.states:
                self.share_group(group_id)      # its offsets outlive its members (Kafka keeps the group too)
        return list(loaded.states)

    def unload_partition(self, partition: int, now_ms: int) -> None:
        """Another node serves this ``__share_group_state`` partition now (ShareCoordinatorShard
        unloaded): its states go; their requests answer NOT_COORDINATOR."""
        self.owned.discard(partition)
        n = self.config.state_topic_num_partitions
        for key in [k for k in self.states if partition_for_key(k, n) == partition]:
            del self.states[key]

    def drop_share_partitions(self, topic_id: uuid.UUID, partition: int) -> None:
        """This node stopped (or started) leading the topic partition: its share partitions
        go, to be read again from the share coordinator by its next leader."""
        for key in [k for k in self.partitions if k[1:] == (topic_id, partition)]:
            del self.partitions[key]

    def drop_groups(self, coordinated_here) -> None:
        """The group coordinator moved: the share groups ``coordinated_here(group id)`` says
        false for go (their members rejoin at the new coordinator)."""
        for group_id in [g for g in self.groups if not coordinated_here(g)]:
            for member_id in self.groups.pop(group_id).members:
                self._timers.cancel(("session", group_id, member_id))

    def take_state_writes(self) -> list[tuple[int, StateOp]]:
        """(append id, write) of a cluster's share partitions: send each to the share
        coordinator, then report ``append_done(append id, ...)``."""
        out, self._state_writes = self._state_writes, []
        return out

    def handle(self, request, now_ms: int):
        now_ms = self._observe(now_ms)
        if isinstance(request, Acknowledge):
            return self._acknowledge(request, now_ms)
        if isinstance(request, StateRequest):
            return self._state_request(request, now_ms)
        raise TypeError(f"not a share-coordinator request: {request!r}")

    def take_released(self) -> bool:
        """True once after records became available again (a waiting fetch may retry)."""
        out, self._released = self._released, False
        return out

    # -- membership (ShareGroupHeartbeat, ShareGroupDescribe) -----------------------------

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed_topic_names: list[str] | None, client_id: str, client_host: str, now_ms: int) -> dict:
        now_ms = self._observe(now_ms)
        cfg: ShareConfig = self.config

        def error(code: ErrorCode, message: str | None = None) -> dict:
            return {"error_code": code, "error_message": message, "member_id": None, "member_epoch": 0,
                    "heartbeat_interval_ms": 0, "assignment": None}

        if not member_id:
            return error(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if member_epoch < LEAVE_EPOCH:
            return error(ErrorCode.INVALID_REQUEST, f"MemberEpoch is {member_epoch}, but must be greater than "
                                                    "or equal to -1.")
        group = self.groups.get(group_id)
        if member_epoch == LEAVE_EPOCH:
            if group is not None and member_id in group.members:
                self._remove_member(group, member_id, now_ms)
            return {"error_code": 0, "error_message": None, "member_id": member_id, "member_epoch": LEAVE_EPOCH,
                    "heartbeat_interval_ms": 0, "assignment": None}
        if member_epoch == 0 and not subscribed_topic_names:
            return error(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        member = group.members.get(member_id)
        if member is None:
            if member_epoch != 0:
                return error(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            if len(group.members) >= cfg.max_size:
                return error(ErrorCode.GROUP_MAX_SIZE_REACHED,
                             f"The share group has reached its maximum capacity of {cfg.max_size} members.")
            member = group.members[member_id] = ShareMember(member_id, 0, client_id, client_host, rack_id,
                                                            tuple(subscribed_topic_names))
            changed = True
        else:
            if member_epoch not in (0, member.member_epoch):
                return error(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The share group member has a smaller member epoch ({member_epoch}) than the one "
                             f"known by the group coordinator ({member.member_epoch}).")
            changed = subscribed_topic_names is not None and tuple(subscribed_topic_names) != \
                member.subscribed_topic_names
            if changed:
                member.subscribed_topic_names = tuple(subscribed_topic_names)
        if changed or self._metadata_changed(group):
            self._rebalance(group, now_ms)
        self._timers.schedule(("session", group_id, member_id), now_ms + cfg.session_timeout_ms,
                              lambda t, g=group_id, m=member_id: self._session_expired(g, m, t))
        send = member.member_epoch != group.group_epoch or member_epoch == 0
        member.member_epoch = group.group_epoch
        assignment = None
        if send:
            assignment = {"topic_partitions": [
                {"topic_id": self.catalog.topic_id(t), "partitions": list(ps)}
                for t, ps in sorted(member.assignment.items()) if self.catalog.topic_id(t) is not None]}
        return {"error_code": 0, "error_message": None, "member_id": member_id,
                "member_epoch": member.member_epoch, "heartbeat_interval_ms": cfg.heartbeat_interval_ms,
                "assignment": assignment}

    def _metadata_changed(self, group: ShareGroup) -> bool:
        """A subscribed topic appeared or grew since the assignment was computed."""
        have = {(t, p) for m in group.members.values() for t, ps in m.assignment.items() for p in ps}
        want = {(t, p) for t in group.subscribed_topics() for p in range(self.catalog.partition_count(t))}
        return not want <= have

    def _rebalance(self, group: ShareGroup, now_ms: int) -> None:
        group.group_epoch += 1
        counts = {t: self.catalog.partition_count(t) for t in group.subscribed_topics()}
        for member_id, assignment in simple_assign(
                {m.member_id: m.subscribed_topic_names for m in group.members.values()}, counts).items():
            group.members[member_id].assignment = assignment
            for topic, ps in assignment.items():
                for p in ps:
                    self.share_partition(group.group_id, topic, p, now_ms)
        group.assignment_epoch = group.group_epoch

    def _remove_member(self, group: ShareGroup, member_id: str, now_ms: int) -> None:
        del group.members[member_id]
        self._timers.cancel(("session", group.group_id, member_id))
        self.release_member(group.group_id, member_id, now_ms)
        self._rebalance(group, now_ms)

    def _session_expired(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is not None and member_id in group.members:
            self._remove_member(group, member_id, now_ms)

    def share_group(self, group_id: str) -> ShareGroup:
        """The group, created empty when absent (GroupMetadataManager.getOrMaybeCreateShareGroup)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group

    def is_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    def describe(self, group_id: str) -> dict:
        group = self.groups.get(group_id)
        if group is None:
            return {"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": f"Group {group_id} not found.",
                    "group_id": group_id, "group_state": "Dead", "group_epoch": -1, "assignment_epoch": -1,
                    "assignor_name": "", "members": [], "authorized_operations": -2147483648}
        return {"error_code": 0, "error_message": None, "group_id": group_id, "group_state": group.state,
                "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
                "assignor_name": "simple", "authorized_operations": -2147483648, "members": [
                    {"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                     "client_id": m.client_id, "client_host": m.client_host,
                     "subscribed_topic_names": list(m.subscribed_topic_names),
                     "assignment": {"topic_partitions": [
                         {"topic_id": self.catalog.topic_id(t), "topic_name": t, "partitions": list(ps)}
                         for t, ps in sorted(m.assignment.items())]}}
                    for m in group.members.values()]}

    # -- share partitions (SharePartitionManager) ------------------------------------------

    def share_partition(self, group_id: str, topic: str, partition: int, now_ms: int) -> SharePartition | None:
        """The group's share partition, loaded from its persisted state or initialized
        at the log end (share.auto.offset.reset latest, the default) and persisted."""
        topic_id = self.catalog.topic_id(topic)
        if topic_id is None:
            return None
        key = (group_id, topic_id, partition)
        sp = self.partitions.get(key)
        if sp is not None or self.clustered:
            return sp       # a cluster's are installed once read from the share coordinator
        cfg: ShareConfig = self.config
        state = self.states.get(key)
        if state is None or state.start_offset < 0:
            log_start, log_end = self.catalog.log_offsets(topic, partition)
            reset = self.catalog.group_config(group_id).get("share.auto.offset.reset", cfg.auto_offset_reset)
            start = log_start if reset == "earliest" else log_end       # by_duration: not yet, read as latest
            group = self.groups.get(group_id)
            self.initialize_state(key, 0 if group is None else group.group_epoch, start, now_ms)
            state = self.states[key]
        return self.install(key, state.state_epoch, LEADER_EPOCH, state.start_offset, state.state_batches)

    def install(self, key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int,
                batches: Iterable[StateBatch]) -> SharePartition:
        """The share partition from its state (SharePartition.maybeInitialize), at the topic
        partition's ``leader_epoch``, which its writes carry."""
        cfg: ShareConfig = self.config
        sp = self.partitions[key] = SharePartition(
            start_offset, list(batches), delivery_count_limit=cfg.delivery_count_limit,
            max_record_locks=cfg.partition_max_record_locks, state_epoch=state_epoch, leader_epoch=leader_epoch)
        return sp

    def acquire(self, group_id: str, member_id: str, topic: str, partition: int,
                batches: list[tuple[int, int]], max_records: int, now_ms: int) -> list[tuple[int, int, int]]:
        now_ms = self._observe(now_ms)
        sp = self.share_partition(group_id, topic, partition, now_ms)
        if sp is None:
            return []
        acquired = sp.acquire(member_id, batches, max_records, now_ms, self.lock_duration_ms(group_id))
        self._schedule_lock(group_id, topic, partition, sp)
        return acquired

    def lock_duration_ms(self, group_id: str) -> int:
        """share.record.lock.duration.ms: the group's config, else the broker's."""
        value = self.catalog.group_config(group_id).get("share.record.lock.duration.ms")
        return self.config.record_lock_duration_ms if value is None else int(value)

    def _schedule_lock(self, group_id: str, topic: str, partition: int, sp: SharePartition) -> None:
        deadline = sp.next_lock_deadline()
        timer = ("lock", group_id, topic, partition)
        if deadline is None:
            self._timers.cancel(timer)
        elif self._timers.deadline(timer) != deadline:
            self._timers.schedule(timer, deadline, lambda t: self._locks_due(group_id, topic, partition, t))

    def _locks_due(self, group_id: str, topic: str, partition: int, now_ms: int) -> None:
        sp = self.share_partition(group_id, topic, partition, now_ms)
        if sp is not None and sp.expire_locks(now_ms):
            self._released = True
            self._persist(group_id, topic, partition, sp, now_ms)
        if sp is not None:
            self._schedule_lock(group_id, topic, partition, sp)

    def release_member(self, group_id: str, member_id: str, now_ms: int) -> None:
        for (g, topic_id, p), sp in list(self.partitions.items()):
            if g == group_id and sp.release_member(member_id):
                self._released = True
                topic = self.catalog.topic_name(topic_id)
                self._persist(group_id, topic, p, sp, now_ms)
                self._schedule_lock(group_id, topic, p, sp)

    def _acknowledge(self, req: Acknowledge, now_ms: int) -> Pending | dict:
        results: dict[tuple[uuid.UUID, int], ErrorCode] = {}
        changed: dict[tuple[uuid.UUID, int], SharePartition] = {}
        for b in req.batches:
            tp = (b.topic_id, b.partition)
            topic = self.catalog.topic_name(b.topic_id)
            sp = None if topic is None else self.partitions.get((req.group_id, b.topic_id, b.partition))
            if sp is None:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if topic is None else ErrorCode.INVALID_RECORD_STATE
                continue
            code = sp.acknowledge(req.member_id, b.first_offset, b.last_offset, list(b.acknowledge_types), now_ms,
                                  self.lock_duration_ms(req.group_id))
            if results.get(tp, ErrorCode.NONE) == ErrorCode.NONE:
                results[tp] = code
            if code == ErrorCode.NONE:
                changed[tp] = sp
                if any(t == 2 for t in b.acknowledge_types):
                    self._released = True
        waiting = {}
        for tp, sp in changed.items():
            topic = self.catalog.topic_name(tp[0])
            self._schedule_lock(req.group_id, topic, tp[1], sp)
            waiting[self._persist(req.group_id, topic, tp[1], sp, now_ms)] = tp

        def fail(out: dict, tp, error: ErrorCode) -> None:
            for t in changed:
                out[t] = error
        return self._answer_after(waiting, results, fail, "ShareAcknowledge")

    def _persist(self, group_id: str, topic: str, partition: int, sp: SharePartition, now_ms: int) -> int:
        key = (group_id, self.catalog.topic_id(topic), partition)
        if self.clustered:      # to the share coordinator (DefaultStatePersister.writeState)
            append_id = next(self._ids)
            self._state_writes.append((append_id, StateOp(
                "write", key, sp.state_epoch, sp.leader_epoch, sp.start_offset, sp.delivery_complete_count(),
                tuple(sp.state_batches()))))
            return append_id
        return self.write_state(key, sp.state_epoch, sp.leader_epoch, sp.start_offset, sp.state_batches(), now_ms,
                                delivery_complete_count=sp.delivery_complete_count())

    # -- the share coordinator's store (the state APIs) -------------------------------------
    # ``states`` is the one copy of what __share_group_state holds; a live SharePartition is
    # a cache over it, dropped whenever the state APIs change its key from outside.

    def initialize_state(self, key: ShareKey, state_epoch: int, start_offset: int, now_ms: int) -> int:
        """A ShareSnapshot of a fresh state (ShareCoordinatorShard.initializeState)."""
        old = self.states.get(key)
        state = ShareState(snapshot_epoch=0 if old is None else old.snapshot_epoch + 1, state_epoch=state_epoch,
                           leader_epoch=0, start_offset=start_offset, delivery_complete_count=0,
                           create_timestamp=now_ms, write_timestamp=now_ms)
        self.states[key] = state
        self._drop_live(key)
        return self._append(partition_for_key(key, self.config.state_topic_num_partitions),
                            [snapshot_record(key, state)], now_ms)

    def write_state(self, key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: list[StateBatch], now_ms: int, *, delivery_complete_count: int = -1) -> int:
        """A write as ShareCoordinatorShard.writeState: a ShareUpdate, or a ShareSnapshot of
        the merged state every ``snapshot_update_records_per_snapshot`` updates (keeping the
        first snapshot's create timestamp)."""
        old = self.states.get(key) or ShareState(state_epoch=state_epoch, create_timestamp=now_ms)
        start, merged = merge(old, start_offset, batches)
        partition = partition_for_key(key, self.config.state_topic_num_partitions)
        if key not in self.states or old.updates_since_snapshot >= self.config.snapshot_update_records_per_snapshot:
            new = ShareState(old.snapshot_epoch + (key in self.states), state_epoch, leader_epoch, start, merged,
                             0, delivery_complete_count, old.create_timestamp, now_ms)
            record = snapshot_record(key, new)
        else:
            new = replace(old, leader_epoch=leader_epoch, start_offset=start, state_batches=merged,
                          updates_since_snapshot=old.updates_since_snapshot + 1,
                          delivery_complete_count=delivery_complete_count)
            record = update_record(key, old.snapshot_epoch, leader_epoch, start_offset, batches,
                                   delivery_complete_count)
        self.states[key] = new
        return self._append(partition, [record], now_ms)

    def _drop_live(self, key: ShareKey) -> None:
        """One node's state APIs change what its live share partition caches; a cluster's
        come from that partition's leader (or its admin), which owns its copy."""
        if not self.clustered:
            self.partitions.pop(key, None)

    def delete_state(self, key: ShareKey, now_ms: int) -> int | None:
        self._drop_live(key)
        if self.states.pop(key, None) is None:
            return None
        return self._append(partition_for_key(key, self.config.state_topic_num_partitions), [tombstone(key)], now_ms)

    def _state_error(self, op: StateOp) -> tuple[ErrorCode, str] | None:
        """ShareCoordinatorShard.maybeGet*StateError: the request's own fields, an
        uninitialized partition, the recorded epochs, then the topic in the metadata image
        (messages as Kafka 4.4 answers them, measured)."""
        group_id, topic_id, partition = op.key
        if self.clustered and partition_for_key(op.key, self.config.state_topic_num_partitions) not in self.owned:
            return ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR.description
        invalid = ErrorCode.INVALID_REQUEST
        if partition < 0:
            return invalid, "The partition id cannot be a negative number."
        if op.kind in ("read", "write") and op.leader_epoch < 0:
            return invalid, "The leader epoch cannot be a negative number."
        if op.kind in ("write", "initialize") and op.state_epoch < 0:
            return invalid, "The state epoch cannot be a negative number."
        old = self.states.get(op.key)
        if old is None and op.kind in ("read", "write"):
            return invalid, f"{op.kind.capitalize()} operation on uninitialized share partition not allowed."
        if op.kind in ("read", "write") and op.leader_epoch < old.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH.description
        if op.kind in ("write", "initialize") and old is not None and op.state_epoch < old.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_STATE_EPOCH.description
        topic = self.catalog.topic_name(topic_id)
        if topic is None or partition >= self.catalog.partition_count(topic):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.description
        return None

    def _state_op(self, op: StateOp, now_ms: int) -> tuple[dict, int | None]:
        """-> (the op's answer, the append it waits for)."""
        error = self._state_error(op)
        if error is not None:
            return {"error_code": error[0], "error_message": error[1]}, None
        ok = {"error_code": ErrorCode.NONE, "error_message": None}
        state = self.states.get(op.key)
        if op.kind == "initialize":
            return ok, self.initialize_state(op.key, op.state_epoch, op.start_offset, now_ms)
        if op.kind == "delete":
            return ok, self.delete_state(op.key, now_ms)
        if op.kind == "write":
            self._drop_live(op.key)         # the live copy yields to the written state
            return ok, self.write_state(op.key, op.state_epoch, op.leader_epoch, op.start_offset, list(op.batches),
                                        now_ms, delivery_complete_count=op.delivery_complete_count)
        if state is None:
            # never initialized: start offset -1 (ShareCoordinatorShard.readStateSummary)
            return {**ok, "state_epoch": 0, "leader_epoch": 0, "start_offset": -1, "delivery_complete_count": -1,
                    "state_batches": []}, None
        out = {**ok, "state_epoch": state.state_epoch, "leader_epoch": state.leader_epoch,
               "start_offset": state.start_offset, "delivery_complete_count": state.delivery_complete_count,
               "state_batches": [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                                  "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                                 for b in state.state_batches]}
        if op.kind == "read" and op.leader_epoch > state.leader_epoch:
            # readStateAndMaybeUpdateLeaderEpoch: the new leader's epoch is recorded
            return out, self.write_state(op.key, state.state_epoch, op.leader_epoch, -1, [], now_ms,
                                         delivery_complete_count=state.delivery_complete_count)
        return out, None

    def _state_request(self, req: StateRequest, now_ms: int) -> Pending | list[dict]:
        answers, waiting = [], {}
        for i, op in enumerate(req.ops):
            answer, append_id = self._state_op(op, now_ms)
            answers.append(answer)
            if append_id is not None:
                waiting[append_id] = i
        return self._answer_after(waiting, answers, lambda out, i, error: out[i].update(
            error_code=error, error_message=error.description), "ShareGroupState")

    def _answer_after(self, waiting: dict[int, object], out, fail, api: str) -> Pending | object:
        """``out`` once every append in ``waiting`` (append id -> what it was for) is written;
        ``fail(out, what, error)`` for each that failed."""
        if not waiting:
            return out
        handle = self._new_handle(api)
        outstanding = set(waiting)

        def done(append_id: int, error: ErrorCode, t: int) -> None:
            outstanding.discard(append_id)
            if error != ErrorCode.NONE:
                fail(out, waiting[append_id], error)
            if not outstanding:
                self._reply(handle, out)

        for append_id in waiting:
            self._append_callbacks[append_id] = lambda e, t, a=append_id: done(a, e, t)
        return handle

    def check_state_epoch(self, key: ShareKey, state_epoch: int) -> ErrorCode:
        old = self.states.get(key)
        return ErrorCode.FENCED_STATE_EPOCH if old is not None and state_epoch < old.state_epoch else ErrorCode.NONE
