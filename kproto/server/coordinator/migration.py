"""The online migration between classic and consumer groups (KIP-848), and classic members
inside a consumer group: Kafka 4's GroupMetadataManager.convertToConsumerGroup,
convertToClassicGroup and the classicGroup*ToConsumerGroup handlers.

* Upgrade: a ConsumerGroupHeartbeat joining a non-empty classic group of the ``consumer``
  protocol type (``group.consumer.migration.policy`` upgrade or bidirectional) turns it into a
  consumer group: the group epoch and every member epoch are the classic generation, each
  member keeps its last assignment as its current and target assignment (Stable), and its
  JoinGroup protocols and session timeout as ClassicMemberMetadata. Parked JoinGroup/SyncGroup
  requests are answered REBALANCE_IN_PROGRESS. The records: the GroupMetadata tombstone, then
  ConsumerGroup.createConsumerGroupRecords.
* Classic members in a consumer group keep speaking JoinGroup/SyncGroup/Heartbeat/LeaveGroup:
  a JoinGroup is a full heartbeat (subscription, owned partitions from the embedded consumer
  protocol) answered with the member epoch as generation and no leader; SyncGroup hands out
  the member's assigned partitions; Heartbeat answers REBALANCE_IN_PROGRESS while the member
  is behind the group epoch, must revoke, or may collect released partitions, so it rejoins.
* Downgrade: when the member leaving (or fenced) is the last one not using the classic
  protocol (policy downgrade or bidirectional), the group becomes a Stable classic group of
  generation = group epoch, each member assigned its target assignment, and rebalances.
* Static members across protocols (getOrMaybeSubscribeStaticConsumerGroupMember): a classic
  JoinGroup with no member id and a held ``group.instance.id`` replaces the holder, whatever
  its protocol (replaceMember: epoch 0, its assignment kept); when that was the last
  consumer-protocol member the group is downgraded at once, Stable, without a rebalance. A
  consumer heartbeat replaces a classic holder without waiting for its leave.
* The upgrade is refused (GROUP_ID_NOT_FOUND, Kafka's messages) when a member's embedded
  protocol is malformed or its assignment carries a custom assignor's user data; a member that
  never synced (no assignment bytes) comes over with nothing assigned, as in Kafka 4.4.
"""

from __future__ import annotations

from kproto import schemas
from kproto.errors import DecodeError, ErrorCode
from kproto.schemas import consumer_offsets as CO
from kproto.server.coordinator.consumer_groups import (
    CURRENT_ASSIGNMENT, MEMBER_METADATA, TARGET_MEMBER, ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember,
    ConsumerGroups, HeartbeatError, Parts, TopicImage, _copy, _key, current_assignment_record, group_epoch_record,
    group_tombstones, member_metadata_record, member_tombstones, target_epoch_record, target_member_record,
)
from kproto.server.coordinator.consumer_state import MemberState
from kproto.server.coordinator.context import GroupContext, Handler
from kproto.server.coordinator.events import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    LeaveGroupResponseMember, Pending, SyncGroupRequest, SyncGroupResponse,
)
from kproto.server.coordinator.group import GroupMetadata, MemberMetadata
from kproto.server.coordinator.membership import GroupMembership
from kproto.server.coordinator.persistence import group_metadata_key, group_metadata_value
from kproto.server.coordinator.state import GroupState

__all__ = ["GroupMigration", "parse_subscription", "parse_assignment", "serialize_assignment"]

_HIGHEST = 3      # ConsumerProtocolSubscription / ConsumerProtocolAssignment


def _read(schema, data: bytes):
    """ConsumerProtocol.deserialize*: a version newer than known is read as the newest."""
    if len(data) < 2:
        raise DecodeError("Buffer underflow while parsing consumer protocol's header")
    if int.from_bytes(data[:2], "big", signed=True) > _HIGHEST:
        data = _HIGHEST.to_bytes(2, "big") + bytes(data[2:])
    return schemas.parse(schema, bytes(data))


def parse_subscription(metadata: bytes):
    """ConsumerProtocolSubscription (topics, owned_partitions, rack_id ...)."""
    return _read(CO.ConsumerProtocolSubscription, metadata).data


class CustomAssignorError(Exception):
    """An assignment carrying user data, which a consumer group would lose (fromClassicGroup's
    UnsupportedVersionException "userData from a custom assignor would be lost")."""


def parse_assignment(data: bytes, image: TopicImage, *, refuse_user_data: bool = False) -> Parts:
    """ConsumerGroup.toTopicPartitionMap: topic names to ids, topics unknown to the cluster dropped;
    no bytes (a member that never synced) assign nothing. ``refuse_user_data``: an assignment
    with user data raises ``CustomAssignorError`` (the upgrade's check)."""
    if not data:
        return {}
    assignment = _read(CO.ConsumerProtocolAssignment, data).data
    if refuse_user_data and assignment.user_data:
        raise CustomAssignorError()
    out: dict = {}
    for t in assignment.assigned_partitions:
        if t.topic in image and t.partitions:
            out[image[t.topic][0]] = out.get(image[t.topic][0], frozenset()) | frozenset(t.partitions)
    return out


def serialize_assignment(parts: Parts, image: TopicImage, protocol_metadata: bytes) -> bytes:
    """ConsumerProtocol.serializeAssignment of toConsumerProtocolAssignment, in the version of the
    member's subscription (the first protocol it joined with)."""
    names = {tid: name for name, (tid, _) in image.items()}
    version = max(0, min(int.from_bytes(protocol_metadata[:2], "big", signed=True), _HIGHEST)) \
        if len(protocol_metadata) >= 2 else 0
    return CO.ConsumerProtocolAssignment.build({"version": version, "data": {
        "assigned_partitions": [{"topic": names[t], "partitions": sorted(ps)}
                                for t, ps in sorted(parts.items(), key=lambda kv: names.get(kv[0], ""))
                                if t in names],
        "user_data": None}})


def _owned(subscription, image: TopicImage) -> Parts:
    out: dict = {}
    for t in getattr(subscription, "owned_partitions", None) or ():
        if t.topic in image and t.partitions:
            out[image[t.topic][0]] = frozenset(t.partitions)
    return out


class GroupMigration:
    """Installs the upgrade and downgrade into ``ConsumerGroups`` and answers the classic
    requests to a non-empty consumer group (``handlers``)."""

    def __init__(self, ctx: GroupContext, membership: GroupMembership, consumer: ConsumerGroups) -> None:
        self._ctx = ctx
        self._membership = membership
        self._consumer = consumer
        consumer.upgrade = self.upgrade
        consumer.downgrade = self.downgrade

    def _policy(self) -> str:
        return self._ctx.config.consumer_group_migration_policy.lower()

    def handlers(self) -> dict[type, Handler]:
        return {JoinGroupRequest: self._join, SyncGroupRequest: self._sync, HeartbeatRequest: self._heartbeat,
                LeaveGroupRequest: self._leave}

    # --- classic -> consumer ---------------------------------------------------------------

    def upgrade(self, classic: GroupMetadata, now_ms: int) -> tuple[ConsumerGroup, list]:
        """validateOnlineUpgrade, then convertToConsumerGroup."""
        group_id = classic.group_id
        why = None
        if self._policy() not in ("upgrade", "bidirectional"):
            why = "online upgrade is disabled"
        elif classic.protocol_type != "consumer":
            why = "the group does not use the consumer embedded protocol"
        elif classic.size > self._ctx.config.consumer_group_max_size:
            why = "the group size exceeds the consumer group maximum size"
        if why is not None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot upgrade classic group {group_id} to consumer group because {why}.")
        image = self._consumer.image
        group = ConsumerGroup(group_id, group_epoch=classic.generation_id, assignment_epoch=classic.generation_id,
                              current_state_timestamp=now_ms)
        try:
            for m in classic.members.values():
                # fromClassicGroup: the assignment, then the subscription
                assigned = parse_assignment(m.assignment, image, refuse_user_data=True)
                protocol = classic.protocol_name or m.supported_protocols[0][0]
                sub = parse_subscription(m.metadata(protocol))
                member = ConsumerGroupMember(
                    m.member_id, instance_id=m.group_instance_id, rack_id=getattr(sub, "rack_id", None),
                    client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=tuple(sorted(sub.topics)), rebalance_timeout_ms=m.rebalance_timeout_ms,
                    state=MemberState.STABLE, member_epoch=classic.generation_id,
                    previous_member_epoch=classic.generation_id, assigned=assigned,
                    classic=ClassicMemberMetadata(m.session_timeout_ms, m.supported_protocols))
                group.target[m.member_id] = assigned
                group.put_member(member)
        except DecodeError:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, (
                f"Cannot upgrade classic group {group_id} to consumer group because the embedded consumer "
                "protocol is malformed.")) from None
        except CustomAssignorError:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, (
                f"Cannot upgrade classic group {group_id} to consumer group because an unsupported custom "
                "assignor is in use. Please refer to the documentation or switch to a default assignor before "
                "re-attempting the upgrade.")) from None
        group.refresh_metadata(image)       # fromClassicGroup computes the metadata hash too
        self._membership.release_group(classic)
        group.offsets, group.pending_txn_offsets = classic.offsets, classic.pending_txn_offsets
        group.pending_offset_commits = classic.pending_offset_commits
        self._ctx.consumer_groups[group_id] = group
        # classicGroup.createGroupTombstoneRecords, then consumerGroup.createConsumerGroupRecords
        records: list = [(group_metadata_key(group_id), None)]
        records += [member_metadata_record(group_id, m) for m in group.members.values()]
        records.append(group_epoch_record(group))
        records += [target_member_record(group_id, mid, group.target[mid]) for mid in group.members]
        records.append(target_epoch_record(group))
        records += [current_assignment_record(group_id, m) for m in group.members.values()]
        for m in group.members.values():
            self._consumer.schedule_timeout("consumer-session", group_id, m.member_id, m.classic.session_timeout_ms,
                                            now_ms)
        return group, records

    # --- consumer -> classic ---------------------------------------------------------------

    def downgrade(self, group: ConsumerGroup, leaving: str, now_ms: int) -> list | None:
        """validateOnlineDowngradeWithFencedMember, then convertToClassicGroup: the records, or
        None when the group stays a consumer group."""
        if not group.all_classic_except(leaving) or len(group.members) <= 1 or \
                self._policy() not in ("downgrade", "bidirectional") or \
                len(group.members) - 1 > self._ctx.config.group_max_size:
            return None
        return self._convert_to_classic(group, leaving, now_ms)

    def downgrade_after_replacement(self, group: ConsumerGroup, now_ms: int) -> list | None:
        """validateOnlineDowngradeWithReplacedMember, then convertToClassicGroup with the joining
        member: a static member's classic JoinGroup replaced the last consumer-protocol member
        (``group`` has the joining member already). The classic group stays Stable: no rebalance."""
        if not group.all_classic_except("") or self._policy() not in ("downgrade", "bidirectional") or \
                len(group.members) > self._ctx.config.group_max_size:
            return None
        return self._convert_to_classic(group, None, now_ms)

    def _convert_to_classic(self, group: ConsumerGroup, leaving: str | None, now_ms: int) -> list:
        """convertToClassicGroup: the records; a rebalance follows when a member left."""
        group_id = group.group_id
        image = self._consumer.image
        classic = GroupMetadata(group_id, GroupState.STABLE, current_state_timestamp=now_ms,
                                generation_id=group.group_epoch, protocol_type="consumer")
        for m in group.members.values():
            if m.member_id != leaving:
                classic.add(MemberMetadata(
                    m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                    m.classic.session_timeout_ms, "consumer", m.classic.supported_protocols))
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        assignment = {}
        for m in classic.members.values():
            m.assignment = assignment[m.member_id] = serialize_assignment(
                group.target.get(m.member_id, {}), image, m.metadata(classic.protocol_name))
        # ConsumerGroup.createGroupTombstoneRecords, then ClassicGroup.createClassicGroupRecords
        members = list(group.members)
        records: list = [(_key(CURRENT_ASSIGNMENT, group_id=group_id, member_id=mid), None) for mid in members]
        records += [(_key(TARGET_MEMBER, group_id=group_id, member_id=mid), None) for mid in members]
        tombstones = group_tombstones(group_id, group.resolved_regexes)   # target epoch, regexes, partition metadata, group epoch
        records.append(tombstones[0])
        records += [(_key(MEMBER_METADATA, group_id=group_id, member_id=mid), None) for mid in members]
        records += tombstones[1:]
        records.append((group_metadata_key(group_id), group_metadata_value(classic, assignment)))
        self._consumer.unload(group_id)
        classic.offsets, classic.pending_txn_offsets = group.offsets, group.pending_txn_offsets
        classic.pending_offset_commits = group.pending_offset_commits
        self._membership.adopt_group(classic, now_ms, rebalance=leaving is not None)
        return records

    # --- classic requests to a consumer group ------------------------------------------------

    def _member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """validateConsumerGroupMember, then throwIfMemberDoesNotUseClassicProtocol."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
        else:
            holder = group.static_members.get(instance_id)
            member = group.members.get(holder) if holder is not None else None
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
            if member.member_id != member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID)
        if member.classic is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
        return member

    def _join(self, req: JoinGroupRequest, handle: Pending, now_ms: int) -> None:
        """classicGroupJoinToConsumerGroup."""
        def fail(error: ErrorCode, member_id: str = "") -> None:
            self._ctx.reply(handle, JoinGroupResponse(error_code=error, member_id=member_id))

        cfg = self._ctx.config
        if not cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms:
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id)
        group: ConsumerGroup = self._ctx.consumer_groups[req.group_id]
        unknown = req.member_id == ""
        member_id = self._consumer.new_member_id() if unknown else req.member_id
        if member_id not in group.members and len(group.members) >= cfg.consumer_group_max_size:
            return fail(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id)
        protocols = tuple((p.name, bytes(p.metadata)) for p in req.protocols)
        if not group.supports_classic_protocols(req.protocol_type, {n for n, _ in protocols}):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if unknown and req.require_known_member_id and req.group_instance_id is None:
            return fail(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        replaced = None
        if req.group_instance_id is not None:
            # getOrMaybeSubscribeStaticConsumerGroupMember: a static member joining with no member id
            # replaces the instance id's holder, whichever protocol that one uses; with a member id
            # it must be the holder
            holder = group.static_members.get(req.group_instance_id)
            if not unknown and holder is None:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            if not unknown and holder != member_id:
                return fail(ErrorCode.FENCED_INSTANCE_ID, member_id)
            if unknown and holder is not None:
                replaced = group.members[holder]
        try:
            sub = parse_subscription(protocols[0][1])
        except DecodeError:
            # deserializeSubscription's IllegalStateException
            return fail(ErrorCode.UNKNOWN_SERVER_ERROR, member_id)
        records: list = []
        if replaced is not None:
            self._replace(group, replaced, member_id, records)
        existing = group.members.get(member_id)
        member = _copy(existing) if existing is not None else ConsumerGroupMember(member_id)
        if req.group_instance_id is not None:
            member.instance_id = req.group_instance_id
        if getattr(sub, "rack_id", None) is not None:
            member.rack_id = sub.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.subscribed_topic_names = tuple(sorted(set(sub.topics)))
        member.client_id, member.client_host = req.client_id, req.client_host
        member.classic = ClassicMemberMetadata(req.session_timeout_ms, protocols)
        try:
            member, _ = self._consumer.update_member(group, existing, member, False,
                                                     _owned(sub, self._consumer.image), records, now_ms)
        except HeartbeatError as e:
            return fail(e.error, member_id)
        response = JoinGroupResponse(error_code=ErrorCode.NONE, generation_id=member.member_epoch,
                                     protocol_type="consumer", protocol_name=protocols[0][0], member_id=member_id)
        rebalance_timeout = req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else req.session_timeout_ms
        # the last consumer-protocol member replaced by this classic one: back to a classic group
        downgraded = None if replaced is None else self.downgrade_after_replacement(group, now_ms)
        if downgraded is not None:
            records += downgraded

        def done(error: ErrorCode = ErrorCode.NONE, t: int = now_ms) -> None:
            if error is not ErrorCode.NONE:
                return fail(ErrorCode.NOT_COORDINATOR if error in (
                    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    else ErrorCode.UNKNOWN_SERVER_ERROR, member_id)
            self._ctx.timers.cancel(("consumer-join", req.group_id, member_id))
            if downgraded is None:      # a classic group's timers are the classic group's
                self._consumer.schedule_timeout("consumer-session", req.group_id, member_id,
                                                req.session_timeout_ms, t)
                self._consumer.schedule_timeout("consumer-sync", req.group_id, member_id, rebalance_timeout, t)
            self._ctx.reply(handle, response)

        if not records:
            return done()
        self._ctx.append(self._ctx.partition_for(req.group_id), records, now_ms, done)

    def _replace(self, group: ConsumerGroup, old: ConsumerGroupMember, member_id: str, records: list) -> None:
        """replaceMember: the static member ``old`` becomes ``member_id``, at epoch 0 with its
        assignment; its records tombstoned, the new member's written."""
        new = _copy(old)
        new.member_id, new.member_epoch, new.previous_member_epoch = member_id, 0, 0
        self._consumer.cancel_timers(group.group_id, old.member_id)
        target = group.target.pop(old.member_id, {})
        group.remove_member(old.member_id)
        group.put_member(new)
        group.target[member_id] = target
        records += member_tombstones(group.group_id, old.member_id)
        records += [member_metadata_record(group.group_id, new), target_member_record(group.group_id, member_id, target),
                    current_assignment_record(group.group_id, new)]

    def _sync(self, req: SyncGroupRequest, handle: Pending, now_ms: int) -> None:
        """classicGroupSyncToConsumerGroup."""
        group: ConsumerGroup = self._ctx.consumer_groups[req.group_id]
        try:
            member = self._member(group, req.member_id, req.group_instance_id)
            if req.generation_id != member.member_epoch:
                raise HeartbeatError(ErrorCode.ILLEGAL_GENERATION)
            protocol = member.classic.supported_protocols[0]
            if req.protocol_type is not None and req.protocol_type != "consumer" or \
                    req.protocol_name is not None and req.protocol_name != protocol[0]:
                raise HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            self._throw_if_rebalance_in_progress(group, member, now_ms)
        except HeartbeatError as e:
            return self._ctx.reply(handle, SyncGroupResponse(error_code=e.error))
        self._ctx.timers.cancel(("consumer-sync", req.group_id, member.member_id))
        self._consumer.schedule_timeout("consumer-session", req.group_id, member.member_id,
                                        member.classic.session_timeout_ms, now_ms)
        self._ctx.reply(handle, SyncGroupResponse(
            error_code=ErrorCode.NONE, protocol_type=req.protocol_type, protocol_name=req.protocol_name,
            assignment=serialize_assignment(member.assigned, self._consumer.image, protocol[1])))

    def _throw_if_rebalance_in_progress(self, group: ConsumerGroup, member: ConsumerGroupMember, now_ms: int) -> None:
        # a new group epoch: rejoin, unless the member rejoined already and still revokes
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._consumer.schedule_timeout("consumer-join", group.group_id, member.member_id,
                                            member.rebalance_timeout_ms, now_ms, if_absent=True)
            raise HeartbeatError(ErrorCode.REBALANCE_IN_PROGRESS)

    def _heartbeat(self, req: HeartbeatRequest, handle: Pending, now_ms: int) -> None:
        """classicGroupHeartbeatToConsumerGroup."""
        group: ConsumerGroup = self._ctx.consumer_groups[req.group_id]
        try:
            member = self._member(group, req.member_id, req.group_instance_id)
            if req.generation_id != member.member_epoch:
                raise HeartbeatError(ErrorCode.ILLEGAL_GENERATION)
        except HeartbeatError as e:
            return self._ctx.reply(handle, HeartbeatResponse(error_code=e.error))
        self._consumer.schedule_timeout("consumer-session", req.group_id, member.member_id,
                                        member.classic.session_timeout_ms, now_ms)
        error = ErrorCode.NONE
        if member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS or (
                member.state is MemberState.UNRELEASED_PARTITIONS and not group.waiting_on_unreleased_partition(member)):
            error = ErrorCode.REBALANCE_IN_PROGRESS
            self._consumer.schedule_timeout("consumer-join", group.group_id, member.member_id,
                                            member.rebalance_timeout_ms, now_ms, if_absent=True)
        self._ctx.reply(handle, HeartbeatResponse(error_code=error))

    def _leave(self, req: LeaveGroupRequest, handle: Pending, now_ms: int) -> None:
        """classicGroupLeaveToConsumerGroup: the members leave, the group epoch is bumped once."""
        group: ConsumerGroup = self._ctx.consumer_groups[req.group_id]
        results, records = [], []
        for identity in req.members:
            member_id, instance_id = identity.member_id, identity.group_instance_id
            try:
                if instance_id is None:
                    member = self._member(group, member_id, None)
                else:
                    holder = group.static_members.get(instance_id)
                    member = group.members.get(holder) if holder is not None else None
                    if member is None:
                        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
                    if member_id and member.member_id != member_id:
                        raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID)
                    if member.classic is None:
                        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
                    member_id = member.member_id
            except HeartbeatError as e:
                results.append(LeaveGroupResponseMember(member_id=member_id, group_instance_id=instance_id, error_code=e.error))
                continue
            self._consumer.cancel_timers(group.group_id, member_id)
            group.remove_member(member_id)
            group.target.pop(member_id, None)
            records += member_tombstones(group.group_id, member_id)
            results.append(LeaveGroupResponseMember(member_id=member_id, group_instance_id=instance_id,
                                                    error_code=ErrorCode.NONE))
        response = LeaveGroupResponse(error_code=ErrorCode.NONE, members=tuple(results))
        if not records:
            return self._ctx.reply(handle, response)
        group.refresh_metadata(self._consumer.image)
        group.group_epoch += 1
        records.append(group_epoch_record(group))
        self._ctx.append(self._ctx.partition_for(req.group_id), records, now_ms,
                         lambda error, t: self._ctx.reply(handle, response))

