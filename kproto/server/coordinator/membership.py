"""JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the rebalances they drive.

Kafka 3.x's classic GroupCoordinator.scala, request by request, with its
purgatories replaced by timers:

* member expiration (DelayedHeartbeat): a member's session deadline, or the
  new-member join timeout while it has never completed a rebalance; a pending
  member id (MEMBER_ID_REQUIRED) expires after the session timeout;
* the rebalance (DelayedJoin / InitialDelayedJoin): completes when every known
  member has rejoined (never early for the initial delay) or when it fires;
* pending sync (DelayedSync): members that got a JoinGroup response but send no
  SyncGroup within the rebalance timeout are removed and the group rebalances.

Where Kafka drops a parked request's callback and lets the client time out, a
response is given instead, so that no ``Pending`` handle is left dangling: a
JoinGroup/SyncGroup superseded by a newer one from the same member gets
REBALANCE_IN_PROGRESS; a member removed (LeaveGroup) while parked in SyncGroup
gets UNKNOWN_MEMBER_ID.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from kproto.errors import ErrorCode
from kproto.server.coordinator.events import (
    DescribedGroup, DescribedGroupMember, DescribeGroupsRequest, DescribeGroupsResponse, HeartbeatRequest,
    HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    LeaveGroupResponseMember, ListedGroup, ListGroupsRequest, ListGroupsResponse, Pending, SyncGroupRequest,
    SyncGroupResponse,
)
from kproto.server.coordinator.group import DelayedJoin, GroupMetadata, IllegalStateError, MemberMetadata
from kproto.server.coordinator.append_errors import store_group_error
from kproto.server.coordinator.persistence import group_metadata_key, group_metadata_value
from kproto.server.coordinator.context import GroupContext, Handler, rejection, validate_current_member
from kproto.server.coordinator.state import VALID_PREVIOUS_STATES, GroupEvent, GroupState, outcome_for

__all__ = ["GroupMembership"]

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD


def join_error(member_id: str, error: ErrorCode) -> JoinGroupResponse:
    return JoinGroupResponse(error_code=error, member_id=member_id)


def _protocols(req: JoinGroupRequest) -> tuple[tuple[str, bytes], ...]:
    return tuple((p.name, bytes(p.metadata)) for p in req.protocols)


class GroupMembership:
    """Kafka's GroupMetadataManager for classic groups: JoinGroup, SyncGroup,
    Heartbeat, LeaveGroup, ListGroups, DescribeGroups and the timers they drive,
    over the groups of the shared ``GroupContext``. ``GroupOffsets`` uses
    ``heartbeat`` (a member's commit keeps it alive); the coordinator uses
    ``load_group``/``unload_group``, ``maybe_delete_group`` and ``handlers``."""

    def __init__(self, ctx: GroupContext, uuid_factory: Callable[[], str] | None = None) -> None:
        """``uuid_factory``: the random part of new member ids (default uuid4)."""
        self._ctx = ctx
        self._uuid = uuid_factory or (lambda: str(uuid.uuid4()))

    def handlers(self) -> dict[type, Handler]:
        """The requests this part answers, with their handler ``(request, handle, now_ms)``."""
        return {JoinGroupRequest: self._join_group, SyncGroupRequest: self._sync_group,
                HeartbeatRequest: self._heartbeat_request, LeaveGroupRequest: self._leave_group,
                ListGroupsRequest: self._list_groups, DescribeGroupsRequest: self._describe_groups}

    # --- loading (GroupMetadataManager.onLoaded / onUnloaded) ---------------------------

    def load_group(self, group: GroupMetadata, now_ms: int) -> str:
        """A group replayed from the log joins the coordinator: restored members must show they are alive."""
        self._ctx.groups[group.group_id] = group
        if group.size > self._ctx.config.group_max_size:
            self._prepare_rebalance(group, now_ms)
        for member in group.members.values():
            self.heartbeat(group, member, now_ms)
        return group.group_id

    def unload_group(self, group: GroupMetadata, now_ms: int) -> None:
        """The group's partition moved away: it is Dead here, parked requests answer NOT_COORDINATOR."""
        group.transition_to(DEAD, now_ms)
        for member in group.members.values():
            self._complete_join(member, join_error(member.member_id, ErrorCode.NOT_COORDINATOR))
            self._complete_sync(member, SyncGroupResponse(error_code=ErrorCode.NOT_COORDINATOR))
        self.forget_group_timers(group)
        del self._ctx.groups[group.group_id]

    def maybe_delete_group(self, group: GroupMetadata, now_ms: int) -> list[tuple[bytes, bytes | None]]:
        """After its offsets were cleaned up (GroupCoordinatorShard.cleanupGroupMetadata):
        an Empty group left without offsets is Dead, and a Dead group leaves the
        coordinator. Returns its GroupMetadata tombstone, if it ever wrote one."""
        if group.state is EMPTY and not group.has_offsets():
            group.transition_to(DEAD, now_ms)
        if group.state is not DEAD or self._ctx.groups.get(group.group_id) is not group:
            return []
        del self._ctx.groups[group.group_id]
        self.forget_group_timers(group)
        # generation 0 never wrote GroupMetadata
        return [(group_metadata_key(group.group_id), None)] if group.generation_id > 0 else []

    # --- the online migration (GroupMetadataManager.convertToConsumerGroup / convertToClassicGroup)

    def release_group(self, group: GroupMetadata) -> None:
        """The group becomes a consumer group: parked JoinGroup/SyncGroup requests are answered
        REBALANCE_IN_PROGRESS (completeAllJoinFutures / completeAllSyncFutures), so their
        members rejoin the consumer group; its timers stop and it leaves the classic groups."""
        for member in group.members.values():
            self._supersede(member)
        self.forget_group_timers(group)
        del self._ctx.groups[group.group_id]

    def adopt_group(self, group: GroupMetadata, now_ms: int, *, rebalance: bool = True) -> None:
        """A consumer group downgraded to this Stable classic group: its members' sessions
        start now and, when a member left, a rebalance begins (convertToClassicGroup's
        prepareRebalance; not after a static member's replacement)."""
        self._ctx.groups[group.group_id] = group
        for member in group.members.values():
            self.heartbeat(group, member, now_ms)
        if rebalance:
            self._prepare_rebalance(group, now_ms)

    # --- parked responses (maybeInvokeJoinCallback / maybeInvokeSyncCallback) --------

    def _complete_join(self, member: MemberMetadata, response: JoinGroupResponse) -> None:
        if member.awaiting_join is not None:
            handle, member.awaiting_join = member.awaiting_join, None
            self._ctx.reply(handle, response)

    def _complete_sync(self, member: MemberMetadata, response: SyncGroupResponse) -> bool:
        if member.awaiting_sync is None:
            return False
        handle, member.awaiting_sync = member.awaiting_sync, None
        self._ctx.reply(handle, response)
        return True

    def _supersede(self, member: MemberMetadata) -> None:
        self._complete_join(member, join_error(member.member_id, ErrorCode.REBALANCE_IN_PROGRESS))
        self._complete_sync(member, SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS))

    def _join_result(self, group: GroupMetadata, member: MemberMetadata, *, leader: str | None = None,
                     with_members: bool | None = None, skip_assignment: bool = False) -> JoinGroupResponse:
        if with_members is None:
            with_members = group.is_leader(member.member_id)
        return JoinGroupResponse(
            error_code=ErrorCode.NONE, generation_id=group.generation_id,
            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
            leader=(group.leader_id if leader is None else leader) or "", skip_assignment=skip_assignment,
            member_id=member.member_id, members=group.current_member_metadata() if with_members else ())

    # --- timers ----------------------------------------------------------------------

    def _schedule_member_expiration(self, group: GroupMetadata, member_id: str, timeout_ms: int,
                                    now_ms: int, *, pending: bool = False) -> None:
        self._ctx.timers.schedule(("member", group.group_id, member_id), now_ms + timeout_ms,
                              lambda t: self._on_expire_member(group, member_id, pending, t))

    def _cancel_member_expiration(self, group: GroupMetadata, member_id: str) -> None:
        self._ctx.timers.cancel(("member", group.group_id, member_id))

    def heartbeat(self, group: GroupMetadata, member: MemberMetadata, now_ms: int) -> None:
        """completeAndScheduleNextHeartbeatExpiration: the session starts again."""
        self._schedule_member_expiration(group, member.member_id, member.session_timeout_ms, now_ms)

    def forget_group_timers(self, group: GroupMetadata) -> None:
        self._ctx.timers.cancel(("join", group.group_id))
        self._ctx.timers.cancel(("sync", group.group_id))
        for member_id in [*group.members, *group.pending_members]:
            self._cancel_member_expiration(group, member_id)
        group.delayed_join = None

    def _on_expire_member(self, group: GroupMetadata, member_id: str, pending: bool, now_ms: int) -> None:
        if group.state is DEAD:
            return
        if pending:
            if group.is_pending_member(member_id):
                self._remove_pending_member_and_update_group(group, member_id, now_ms)
            return
        member = group.members.get(member_id)
        if member is not None and member.expires_on_session_timeout():
            self._remove_member_and_update_group(group, member, now_ms)

    # --- JoinGroup --------------------------------------------------------------------

    def _join_group(self, req: JoinGroupRequest, handle: Pending, now_ms: int) -> None:
        error = self._ctx.validate_group_status(req.group_id, "JoinGroup")
        if error is not None:
            return self._ctx.reply(handle, join_error(req.member_id, error))
        cfg = self._ctx.config
        if not cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms:
            return self._ctx.reply(handle, join_error(req.member_id, ErrorCode.INVALID_SESSION_TIMEOUT))
        unknown = req.member_id == ""
        group = self._ctx.groups.get(req.group_id)
        if group is None:
            if not unknown:
                return self._ctx.reply(handle, join_error(req.member_id, ErrorCode.UNKNOWN_MEMBER_ID))
            group = self._ctx.add_group(req.group_id, now_ms)
        if not self._accept_joining_member(group, req.member_id):
            if group.remove(req.member_id) is not None:
                self._cancel_member_expiration(group, req.member_id)
            self._ctx.reply(handle, join_error("", ErrorCode.GROUP_MAX_SIZE_REACHED))
        elif unknown:
            self._new_member_join(group, req, handle, now_ms)
        else:
            self._current_member_join(group, req, handle, now_ms)
        if group.state is PREPARING:
            self._try_complete_join(group, now_ms)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """group.max.size: members already parked in a rebalance are kept; new ones
        only while there is room (counting parked members while rebalancing)."""
        limit = self._ctx.config.group_max_size
        if group.state in (EMPTY, DEAD):
            return True
        if group.state is PREPARING:
            member = group.members.get(member_id)
            return (member is not None and member.is_awaiting_join) or group.num_awaiting_join < limit
        return group.has(member_id) or group.size < limit

    def _new_member_join(self, group: GroupMetadata, req: JoinGroupRequest, handle: Pending,
                         now_ms: int) -> None:
        protocols = _protocols(req)
        if group.state is DEAD:
            return self._ctx.reply(handle, join_error("", rejection(group, GroupEvent.JOIN_NEW_MEMBER)))
        if not group.supports_protocols(req.protocol_type, {name for name, _ in protocols}):
            return self._ctx.reply(handle, join_error("", ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        instance_id = req.group_instance_id
        new_member_id = f"{req.client_id if instance_id is None else instance_id}-{self._uuid()}"
        if instance_id is not None:
            old_member_id = group.static_members.get(instance_id)
            if old_member_id is not None:
                self._update_static_member_and_rebalance(group, old_member_id, new_member_id, req, handle, now_ms)
            else:
                self._add_member_and_rebalance(group, new_member_id, req, handle, now_ms)
        elif req.require_known_member_id:
            # KIP-394: hand out the id, remember it for a session, let the client come back with it
            group.pending_members.add(new_member_id)
            self._schedule_member_expiration(group, new_member_id, req.session_timeout_ms, now_ms, pending=True)
            self._ctx.reply(handle, join_error(new_member_id, ErrorCode.MEMBER_ID_REQUIRED))
        else:
            self._add_member_and_rebalance(group, new_member_id, req, handle, now_ms)

    def _current_member_join(self, group: GroupMetadata, req: JoinGroupRequest, handle: Pending,
                             now_ms: int) -> None:
        protocols = _protocols(req)
        member_id = req.member_id
        if group.state is DEAD:
            return self._ctx.reply(handle, join_error(member_id, rejection(group, GroupEvent.JOIN_CHANGED)))
        if not group.supports_protocols(req.protocol_type, {name for name, _ in protocols}):
            return self._ctx.reply(handle, join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        if group.is_pending_member(member_id):
            if req.group_instance_id is not None:
                # pending ids are only given to dynamic members (Kafka: IllegalStateException)
                return self._ctx.reply(handle, join_error(member_id, ErrorCode.UNKNOWN_SERVER_ERROR))
            return self._add_member_and_rebalance(group, member_id, req, handle, now_ms)
        error = validate_current_member(group, member_id, req.group_instance_id)
        if error is not None:
            return self._ctx.reply(handle, join_error(member_id, error))
        member = group.members[member_id]
        if not member.matches(protocols):
            event = GroupEvent.JOIN_CHANGED
        elif group.is_leader(member_id):
            event = GroupEvent.JOIN_LEADER_UNCHANGED
        else:
            event = GroupEvent.JOIN_FOLLOWER_UNCHANGED
        outcome = outcome_for(group.state, event)
        if outcome.answer is not ErrorCode.NONE:                # Empty: a stale member id
            return self._ctx.reply(handle, join_error(member_id, outcome.answer))
        if outcome.parked:
            return self._update_member_and_rebalance(group, member, req, handle, now_ms)
        # the current generation again: a lost JoinGroup response, or a follower
        # with nothing new (CompletingRebalance: the leader gets the members again)
        self._ctx.reply(handle, self._join_result(group, member, with_members=(
            group.state is COMPLETING and group.is_leader(member_id))))

    def _rebalance_timeout(self, req: JoinGroupRequest) -> int:
        return req.session_timeout_ms if req.rebalance_timeout_ms < 0 else req.rebalance_timeout_ms

    def _add_member_and_rebalance(self, group: GroupMetadata, member_id: str, req: JoinGroupRequest,
                                  handle: Pending, now_ms: int) -> None:
        member = MemberMetadata(member_id=member_id, group_instance_id=req.group_instance_id,
                                client_id=req.client_id, client_host=req.client_host,
                                rebalance_timeout_ms=self._rebalance_timeout(req),
                                session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
                                supported_protocols=_protocols(req), is_new=True)
        if group.state is PREPARING and group.generation_id == 0:
            group.new_member_added = True                   # extends the initial delay
        group.add(member, handle)
        # a new member cannot heartbeat while parked: bound its wait instead of its session
        self._schedule_member_expiration(group, member_id, self._ctx.config.new_member_join_timeout_ms, now_ms)
        self._maybe_prepare_rebalance(group, now_ms)

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     req: JoinGroupRequest, handle: Pending, now_ms: int) -> None:
        self._supersede(member)
        group.update_member(member, _protocols(req), self._rebalance_timeout(req), req.session_timeout_ms, handle)
        self._maybe_prepare_rebalance(group, now_ms)

    def _update_static_member_and_rebalance(self, group: GroupMetadata, old_member_id: str,
                                            new_member_id: str, req: JoinGroupRequest, handle: Pending,
                                            now_ms: int) -> None:
        """A static member restarted (new member id, same instance id). Stable and
        the protocol choice unchanged: no rebalance, the group is re-written with
        the new id and the member keeps its assignment (KIP-345)."""
        instance_id = req.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        member = group.members[old_member_id]
        # the previous incarnation may still have a request parked: fence it
        self._complete_join(member, join_error(old_member_id, ErrorCode.FENCED_INSTANCE_ID))
        self._complete_sync(member, SyncGroupResponse(error_code=ErrorCode.FENCED_INSTANCE_ID))
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        self._cancel_member_expiration(group, old_member_id)
        self.heartbeat(group, member, now_ms)
        old = (member.supported_protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, _protocols(req), self._rebalance_timeout(req), req.session_timeout_ms, handle)

        if group.state is STABLE:
            if group.protocol_name != group.select_protocol():
                return self._maybe_prepare_rebalance(group, now_ms)
            assignment = {m.member_id: m.assignment for m in group.members.values()}

            def stored(error: ErrorCode, t: int) -> None:
                if member.awaiting_join is not handle or group.state is not STABLE:
                    # fenced by a newer incarnation, unloaded, or swept into a rebalance
                    # that answers the join itself
                    return
                if error is not ErrorCode.NONE:
                    # undo: the old member id stays the group's
                    group.update_member(member, *old, None)
                    group.replace_static_member(instance_id, new_member_id, old_member_id)
                    self._cancel_member_expiration(group, new_member_id)
                    self.heartbeat(group, member, t)
                    self._ctx.reply(handle, JoinGroupResponse(
                        error_code=error, generation_id=group.generation_id,
                        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                        leader=current_leader or "", member_id=""))
                elif req.support_skipping_assignment:
                    # JoinGroup v9+: the leader learns it leads but must not re-assign
                    leads = group.is_leader(new_member_id)
                    self._complete_join(member, self._join_result(group, member, skip_assignment=leads))
                else:
                    # older clients: the old leader id, so the member never thinks it leads
                    self._complete_join(member, self._join_result(
                        group, member, leader=current_leader or "", with_members=False))
            self._store_group(group, assignment, now_ms, stored)
        elif group.state is COMPLETING:
            # the leader may have assigned to the old member id: assign again
            self._prepare_rebalance(group, now_ms)
        elif group.state is not PREPARING:
            raise IllegalStateError(f"static member {instance_id} rejoined group {group.group_id} "
                                    f"in state {group.state.value}")

    # --- the rebalance ----------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, now_ms: int) -> None:
        if group.state in VALID_PREVIOUS_STATES[PREPARING]:
            self._prepare_rebalance(group, now_ms)

    def _prepare_rebalance(self, group: GroupMetadata, now_ms: int) -> None:
        if group.state is COMPLETING:
            # members parked in SyncGroup must rejoin
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms)
        self._remove_sync_expiration(group)
        delay = self._ctx.config.group_initial_rebalance_delay_ms
        if group.state is EMPTY:
            delayed = DelayedJoin(True, delay, max(group.rebalance_timeout_ms - delay, 0))
        else:
            delayed = DelayedJoin(False, group.rebalance_timeout_ms)
        group.transition_to(PREPARING, now_ms)
        self._watch_join(group, delayed, now_ms)

    def _watch_join(self, group: GroupMetadata, delayed: DelayedJoin, now_ms: int) -> None:
        group.delayed_join = delayed
        self._ctx.timers.schedule(("join", group.group_id), now_ms + delayed.delay_ms,
                              lambda t: self._on_join_timer(group, delayed, t))
        self._try_complete_join(group, now_ms)

    def _try_complete_join(self, group: GroupMetadata, now_ms: int) -> None:
        delayed = group.delayed_join
        if delayed is not None and not delayed.initial and group.has_all_members_joined():
            self._ctx.timers.cancel(("join", group.group_id))
            group.delayed_join = None
            self._on_complete_join(group, now_ms)

    def _on_join_timer(self, group: GroupMetadata, delayed: DelayedJoin, now_ms: int) -> None:
        if group.delayed_join is not delayed:
            return
        group.delayed_join = None
        if delayed.initial and group.new_member_added and delayed.remaining_ms != 0:
            # members are still arriving: wait again, never past the rebalance timeout
            group.new_member_added = False
            self._watch_join(group, DelayedJoin(
                True, min(self._ctx.config.group_initial_rebalance_delay_ms, delayed.remaining_ms),
                max(delayed.remaining_ms - delayed.delay_ms, 0)), now_ms)
        else:
            self._on_complete_join(group, now_ms)

    def _on_complete_join(self, group: GroupMetadata, now_ms: int) -> None:
        for member in group.not_yet_rejoined_members():
            if not member.is_static_member:          # static members keep their place until their session ends
                group.remove(member.member_id)
                self._cancel_member_expiration(group, member.member_id)
        if group.state is DEAD:
            return
        if not self._maybe_elect_new_joined_leader(group) and group.members:
            # nobody rejoined (only static members left): wait for them or their expiry
            return self._watch_join(group, DelayedJoin(False, group.rebalance_timeout_ms), now_ms)
        group.init_next_generation(now_ms)
        if group.state is EMPTY:
            return self._store_group(group, {}, now_ms)
        metadata = group.current_member_metadata()
        for member in list(group.members.values()):
            leads = group.is_leader(member.member_id)
            self._complete_join(member, JoinGroupResponse(
                error_code=ErrorCode.NONE, generation_id=group.generation_id,
                protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                leader=group.leader_id or "", member_id=member.member_id, members=metadata if leads else ()))
            self.heartbeat(group, member, now_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._schedule_pending_sync(group, now_ms)

    @staticmethod
    def _maybe_elect_new_joined_leader(group: GroupMetadata) -> bool:
        """Keep the leader if it rejoined, else any member that did; False if none."""
        if group.leader_id is None:
            return False
        if group.members[group.leader_id].is_awaiting_join:
            return True
        for member in group.members.values():
            if member.is_awaiting_join:
                group.leader_id = member.member_id
                return True
        return False

    def _schedule_pending_sync(self, group: GroupMetadata, now_ms: int) -> None:
        generation = group.generation_id
        self._ctx.timers.schedule(("sync", group.group_id), now_ms + group.rebalance_timeout_ms,
                              lambda t: self._on_expire_pending_sync(group, generation, t))

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        self._maybe_complete_sync_expiration(group)

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.pending_sync_members.clear()
        self._maybe_complete_sync_expiration(group)

    def _maybe_complete_sync_expiration(self, group: GroupMetadata) -> None:
        if group.state in (DEAD, EMPTY, PREPARING) or not group.pending_sync_members:
            self._ctx.timers.cancel(("sync", group.group_id))

    def _on_expire_pending_sync(self, group: GroupMetadata, generation: int, now_ms: int) -> None:
        if generation != group.generation_id or group.state not in (COMPLETING, STABLE):
            return
        if group.pending_sync_members:
            for member_id in list(group.pending_sync_members):
                group.remove(member_id)
                self._cancel_member_expiration(group, member_id)
            self._prepare_rebalance(group, now_ms)

    def _store_group(self, group: GroupMetadata, assignment: Mapping[str, bytes], now_ms: int,
                     on_done: Callable[[ErrorCode, int], None] | None = None) -> None:
        """Append the group's GroupMetadata record; ``on_done`` runs once appended."""
        record = (group_metadata_key(group.group_id), group_metadata_value(group, assignment))
        callback = None if on_done is None else (lambda e, t: on_done(store_group_error(e), t))
        self._ctx.append(self._ctx.partition_for(group.group_id),
                     [record], now_ms, callback)

    # --- SyncGroup --------------------------------------------------------------------

    def _sync_group(self, req: SyncGroupRequest, handle: Pending, now_ms: int) -> None:
        error = self._ctx.validate_group_status(req.group_id, "SyncGroup")
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # the rebalance state was lost with the load: rejoin (old clients do not know 14 here)
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None:
            return self._ctx.reply(handle, SyncGroupResponse(error_code=error))
        group = self._ctx.groups.get(req.group_id)
        if group is None:
            return self._ctx.reply(handle, SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        error = self._validate_sync(group, req)
        if error is not None:
            return self._ctx.reply(handle, SyncGroupResponse(error_code=error))
        leads = group.is_leader(req.member_id)
        error = rejection(group, GroupEvent.SYNC_LEADER if leads else GroupEvent.SYNC_FOLLOWER)
        if error is not None:
            return self._ctx.reply(handle, SyncGroupResponse(error_code=error))
        member = group.members[req.member_id]
        if group.state is COMPLETING:
            self._supersede(member)
            member.awaiting_sync = handle
            self._remove_pending_sync_member(group, member.member_id)
            if leads:
                self._store_assignment(group, req, now_ms)
        else:                                                   # Stable: the current assignment
            self._remove_pending_sync_member(group, member.member_id)
            self._ctx.reply(handle, SyncGroupResponse(error_code=ErrorCode.NONE, protocol_type=group.protocol_type,
                                                  protocol_name=group.protocol_name,
                                                  assignment=member.assignment))
            self.heartbeat(group, member, now_ms)

    def _validate_sync(self, group: GroupMetadata, req: SyncGroupRequest) -> ErrorCode | None:
        if group.state is DEAD:
            return rejection(group, GroupEvent.SYNC_FOLLOWER)
        error = validate_current_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if req.protocol_type is not None and req.protocol_type != group.protocol_type:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if req.protocol_name is not None and req.protocol_name != group.protocol_name:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _store_assignment(self, group: GroupMetadata, req: SyncGroupRequest, now_ms: int) -> None:
        """The leader's assignment goes to the log first; members get it once appended."""
        assignment = {a.member_id: bytes(a.assignment) for a in req.assignments}
        for member_id in group.members:
            assignment.setdefault(member_id, b"")          # members the leader forgot get nothing
        generation = group.generation_id

        def stored(error: ErrorCode, t: int) -> None:
            # the group may have moved on while the record was being appended
            if group.state is not COMPLETING or generation != group.generation_id:
                return
            if error is not ErrorCode.NONE:
                self._reset_and_propagate_assignment_error(group, error, t)
                self._maybe_prepare_rebalance(group, t)
            else:
                for member in group.members.values():
                    member.assignment = assignment[member.member_id]
                self._propagate_assignment(group, ErrorCode.NONE, t)
                group.transition_to(STABLE, t)
        self._store_group(group, assignment, now_ms, stored)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode,
                                              now_ms: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error, now_ms)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode, now_ms: int) -> None:
        ok = error is ErrorCode.NONE
        for member in group.members.values():
            response = SyncGroupResponse(error_code=error, protocol_type=group.protocol_type if ok else None,
                                         protocol_name=group.protocol_name if ok else None,
                                         assignment=member.assignment)
            if self._complete_sync(member, response):
                # its session may have lapsed while it waited: start it again
                self.heartbeat(group, member, now_ms)

    # --- Heartbeat --------------------------------------------------------------------

    def _heartbeat_request(self, req: HeartbeatRequest, handle: Pending, now_ms: int) -> None:
        error = self._ctx.validate_group_status(req.group_id, "Heartbeat")
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            error = ErrorCode.NONE                               # Kafka answers blindly while loading
        if error is not None:
            return self._ctx.reply(handle, HeartbeatResponse(error_code=error))
        group = self._ctx.groups.get(req.group_id)
        if group is None:
            return self._ctx.reply(handle, HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        if group.state is DEAD:
            error = rejection(group, GroupEvent.HEARTBEAT)
        else:
            error = validate_current_member(group, req.member_id, req.group_instance_id)
            if error is None and req.generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            if error is None:
                error = rejection(group, GroupEvent.HEARTBEAT)
                if group.state is not EMPTY:
                    # even REBALANCE_IN_PROGRESS keeps the member alive
                    self.heartbeat(group, group.members[req.member_id], now_ms)
        self._ctx.reply(handle, HeartbeatResponse(error_code=error or ErrorCode.NONE))

    # --- LeaveGroup -------------------------------------------------------------------

    def _leave_group(self, req: LeaveGroupRequest, handle: Pending, now_ms: int) -> None:
        error = self._ctx.validate_group_status(req.group_id, "LeaveGroup")
        if error is not None:
            return self._ctx.reply(handle, LeaveGroupResponse(error_code=error))
        group = self._ctx.groups.get(req.group_id)
        if group is None:
            return self._ctx.reply(handle, LeaveGroupResponse(error_code=ErrorCode.NONE, members=tuple(
                LeaveGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                         error_code=ErrorCode.UNKNOWN_MEMBER_ID) for m in req.members)))
        if group.state is DEAD:
            return self._ctx.reply(handle, LeaveGroupResponse(
                error_code=rejection(group, GroupEvent.LEAVE_GROUP)))
        results = []
        for identity in req.members:
            error = self._leave_one(group, identity.member_id, identity.group_instance_id, now_ms)
            results.append(LeaveGroupResponseMember(member_id=identity.member_id,
                                                    group_instance_id=identity.group_instance_id,
                                                    error_code=error))
        self._ctx.reply(handle, LeaveGroupResponse(error_code=ErrorCode.NONE, members=tuple(results)))

    def _leave_one(self, group: GroupMetadata, member_id: str, group_instance_id: str | None,
                   now_ms: int) -> ErrorCode:
        if member_id == "":
            # administrative removal by instance id (LeaveGroup v3+)
            current = None if group_instance_id is None else group.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_member_and_update_group(group, group.members[current], now_ms)
            return ErrorCode.NONE
        if group.is_pending_member(member_id):
            self._cancel_member_expiration(group, member_id)
            self._remove_pending_member_and_update_group(group, member_id, now_ms)
            return ErrorCode.NONE
        error = validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        self._remove_member_and_update_group(group, group.members[member_id], now_ms)
        return ErrorCode.NONE

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata,
                                        now_ms: int) -> None:
        # a member parked in JoinGroup learns it is out and may join again
        self._complete_join(member, join_error("", ErrorCode.UNKNOWN_MEMBER_ID))
        self._complete_sync(member, SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self._cancel_member_expiration(group, member.member_id)
        if group.state in (STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group, now_ms)
        elif group.state is PREPARING:
            self._try_complete_join(group, now_ms)

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str,
                                                now_ms: int) -> None:
        group.remove(member_id)
        if group.state is PREPARING:
            self._try_complete_join(group, now_ms)

    # --- ListGroups / DescribeGroups --------------------------------------------------

    def _list_groups(self, req: ListGroupsRequest, handle: Pending, now_ms: int) -> None:
        states = {s.lower() for s in req.states_filter}
        classic = not req.types_filter or "classic" in {t.lower() for t in req.types_filter}
        consumer = not req.types_filter or "consumer" in {t.lower() for t in req.types_filter}
        streams = not req.types_filter or "streams" in {t.lower() for t in req.types_filter}
        groups = tuple(
            ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "", group_state=g.state.value)
            for g in self._ctx.groups.values()
            if classic and g.state is not DEAD and (not states or g.state.value.lower() in states)) + tuple(
            # KIP-848 groups: type "consumer", protocol type "consumer" (ConsumerGroup.protocolType)
            ListedGroup(group_id=g.group_id, protocol_type="consumer", group_state=g.state.value,
                        group_type="consumer")
            for g in self._ctx.consumer_groups.values()
            if consumer and (not states or g.state.value.lower() in states)) + tuple(
            # KIP-1071 groups: type "streams", protocol type "streams"
            ListedGroup(group_id=g.group_id, protocol_type="streams", group_state=g.state.value,
                        group_type="streams")
            for g in self._ctx.streams_groups.values()
            if streams and (not states or g.state.value.lower() in states))
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._ctx.loading else ErrorCode.NONE
        self._ctx.reply(handle, ListGroupsResponse(error_code=error, groups=groups))

    def _describe_groups(self, req: DescribeGroupsRequest, handle: Pending, now_ms: int) -> None:
        self._ctx.reply(handle, DescribeGroupsResponse(groups=tuple(
            self._describe(group_id, req.api_version) for group_id in req.groups)))

    def _describe(self, group_id: str, api_version: int) -> DescribedGroup:
        error = self._ctx.validate_group_status(group_id, "DescribeGroups")
        if error is not None:
            return DescribedGroup(error_code=error, group_id=group_id, group_state="", protocol_type="",
                                  protocol_data="")
        group = self._ctx.groups.get(group_id)
        if group is None:
            if api_version >= 6:
                # GroupMetadataManager.classicGroup: a consumer group is not a classic one
                what = "is not a classic group" if group_id in self._ctx.consumer_groups or \
                    group_id in self._ctx.streams_groups else "not found"
                return DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND, group_id=group_id,
                                      group_state=DEAD.value, protocol_type="", protocol_data="",
                                      error_message=f"Group {group_id} {what}.")
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
