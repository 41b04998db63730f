"""KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe (Kafka 4's
GroupMetadataManager.consumerGroupHeartbeat and its consumer-group half), a part of the group
coordinator beside ``membership`` (classic groups) and ``offset_commits``.

A heartbeat (GroupMetadataManager.consumerGroupHeartbeat):

1. validates the request (throwIfConsumerGroupHeartbeatRequestIsInvalid) and finds or creates
   the group; a group id held by a classic group is converted (``group.consumer.migration.policy``
   permitting; a non-empty one by ``migration.GroupMigration``), else answered GROUP_ID_NOT_FOUND;
2. finds or creates the member (static members by instance id), checks its member epoch
   (``consumer_state.check_member_epoch``), applies the changed fields;
3. bumps the group epoch when a subscription or the subscribed topics' metadata hash
   (KIP-1101, ``metadata_hash``) changed;
4. computes a new target assignment when the group epoch is ahead of the assignment epoch
   (the assignor the members prefer most, else the first of ``group.consumer.assignors``);
5. moves the member one reconciliation step towards its target (``consumer_state.reconcile``);
6. writes what changed as Kafka writes it (ConsumerGroupMemberMetadata, ConsumerGroupMetadata,
   ConsumerGroupTargetAssignmentMember/Metadata, ConsumerGroupCurrentMemberAssignment) and
   answers once the records are appended.

The session timeout (``group.consumer.session.timeout.ms``) and the rebalance timeout of a
member that does not revoke fence the member: its records are tombstoned and the group
epoch bumped. A subscription regex is resolved when it is new or the topics changed, to the
topics its refreshing member may DESCRIBE, and the resolution written
(ConsumerGroupRegularExpression, type 16), so it survives a restart. Loading replays the
records (``replay_consumer_record``).
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kproto.errors import ErrorCode
from kproto.schemas import consumer_offsets as CO
from kproto.server.coordinator.assignors import ASSIGNORS
from kproto.server.coordinator.consumer_state import (
    JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroupState, MemberState, check_member_epoch,
    derive_state, reconcile,
)
from kproto.server.coordinator.context import GroupContext, Handler
from kproto.server.coordinator.group import GroupMetadata
from kproto.server.coordinator.metadata_hash import group_hash, topic_hash
from kproto.server.coordinator.events import (
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, DescribedConsumerGroup, DescribedConsumerGroupMember, DescribedTopicPartitions,
    Pending,
)
from kproto.server.coordinator.offsets import OffsetAndMetadata, TopicPartition
from kproto.server.coordinator.heartbeat import HeartbeatError, heartbeat_exchange
from kproto.server.coordinator.owners import OwnerEpochs, replayed_record
from kproto.server.coordinator.persistence import CONSUMER_GROUP_TYPES as CONSUMER_RECORD_TYPES, group_metadata_key
from kproto.server.coordinator.state import GroupState

__all__ = ["ClassicMemberMetadata", "ConsumerGroup", "ConsumerGroupMember", "ConsumerGroups", "TopicImage", "CONSUMER_RECORD_TYPES"]

#: topic name -> (topic id, partition count): what the coordinator knows of the cluster
TopicImage = Mapping[str, tuple[uuid.UUID, int]]
Parts = dict[Hashable, frozenset[int]]

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
REGULAR_EXPRESSION = 16


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """ResolvedRegularExpression (ConsumerGroupRegularExpressionValue): the topics a subscription
    regex matched, against which topic image (``version``) and when."""

    topics: frozenset[str]
    version: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """ConsumerGroupMemberMetadataValue.ClassicMemberMetadata: a member that joined with the
    classic protocol (JoinGroup) into a consumer group, or came with an upgraded classic group."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]      # (name, metadata), in preference order


@dataclass(eq=False, slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Parts = field(default_factory=dict)
    pending_revocation: Parts = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None


@dataclass(eq=False, slots=True)
class ConsumerGroup(OwnerEpochs):
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)      # instance id -> member id
    target: dict[str, Parts] = field(default_factory=dict)            # member id -> target assignment
    owner_epochs: dict[tuple[Hashable, int], int] = field(default_factory=dict)    # partition -> owner's epoch
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    metadata_hash: int = 0          # KIP-1101: of the subscribed topics, as last written
    # the offsets part's view (as GroupMetadata's)
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    pending_offset_commits: Counter = field(default_factory=Counter)
    pending_txn_offsets: dict[int, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    current_state_timestamp: int | None = None
    # the topics the member that last refreshed the regexes may DESCRIBE (None: all)
    regex_describable: frozenset[str] | None = None
    # each subscribed regex's resolution, as written (ConsumerGroupRegularExpression records)
    resolved_regexes: dict[str, ResolvedRegularExpression] = field(default_factory=dict)

    @property
    def state(self) -> ConsumerGroupState:
        return derive_state(len(self.members), self.group_epoch, self.assignment_epoch,
                            lambda: [(m.state, m.member_epoch) for m in self.members.values()])

    def partition_epoch(self, topic: Hashable, partition: int) -> int:
        return self.owner_epochs.get((topic, partition), -1)

    def _owned(self, m: ConsumerGroupMember) -> list[tuple[Hashable, int]]:
        return [(t, p) for parts in (m.assigned, m.pending_revocation) for t, ps in parts.items() for p in ps]

    def subscribed_topics(self, image: TopicImage) -> set[str]:
        out: set[str] = set()
        for m in self.members.values():
            out.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex is not None:
                out.update(self.regex_topics(m.subscribed_topic_regex, image))
        return out

    def subscribed_regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex is not None}

    def refresh_metadata(self, image: TopicImage) -> bool:
        """The subscribed topics' metadata and its hash (ModernGroup.computeMetadataHash: the
        subscribed topics the cluster has); True when the hash changed."""
        self.subscription_metadata = {t: image[t] for t in sorted(self.subscribed_topics(image)) if t in image}
        new = group_hash({t: topic_hash(tid, t, n) for t, (tid, n) in self.subscription_metadata.items()})
        changed, self.metadata_hash = new != self.metadata_hash, new
        return changed

    def regex_topics(self, pattern: str, topics) -> list[str]:
        """The topics of ``topics`` a subscription regex resolved to (its last refresh)."""
        resolved = self.resolved_regexes.get(pattern)
        return [] if resolved is None else [t for t in topics if t in resolved.topics]

    def refresh_regexes(self, image: TopicImage, version: int, now_ms: int) -> list:
        """GroupMetadataManager.maybeUpdateRegularExpressions / refreshRegularExpressions:
        resolve each subscribed regex that is new or was resolved against another topic image,
        to the topics the refreshing member may DESCRIBE; a record for each resolution that
        changed and a tombstone for each regex no member subscribes to any more
        (maybeDeleteResolvedRegularExpressions). Kafka refreshes at most every
        ``group.consumer.regex.refresh.interval.ms`` (and batches of them 10 s apart); kproto on
        the next heartbeat after the topics changed, so a new topic is picked up at once."""
        records = []
        subscribed = self.subscribed_regexes()
        for pattern in sorted(set(self.resolved_regexes) - subscribed):
            del self.resolved_regexes[pattern]
            records.append((_key(REGULAR_EXPRESSION, group_id=self.group_id, regular_expression=pattern), None))
        allowed = self.regex_describable
        for pattern in sorted(subscribed):
            old = self.resolved_regexes.get(pattern)
            if old is not None and old.version == version:
                continue
            topics = frozenset(t for t in image if regex_matches(pattern, t) and (allowed is None or t in allowed))
            if old is not None and old.topics == topics:
                self.resolved_regexes[pattern] = ResolvedRegularExpression(topics, version, old.timestamp)
                continue
            resolved = self.resolved_regexes[pattern] = ResolvedRegularExpression(topics, version, now_ms)
            records.append(regular_expression_record(self.group_id, pattern, resolved))
        return records

    def all_classic_except(self, member_id: str) -> bool:
        """ConsumerGroup.allMembersUseClassicProtocolExcept."""
        return all(m.uses_classic_protocol for m in self.members.values() if m.member_id != member_id)

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """ConsumerGroup.supportsClassicProtocols: a name every classic member supports."""
        if protocol_type != "consumer":
            return False
        if not self.members:
            return bool(names)
        classic = [{p for p, _ in m.classic.supported_protocols} for m in self.members.values() if m.classic]
        return any(all(n in supported for supported in classic) for n in names)

    def waiting_on_unreleased_partition(self, m: ConsumerGroupMember) -> bool:
        """ConsumerGroup.waitingOnUnreleasedPartition: a target partition another member still owns."""
        if m.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        return any(p not in m.assigned.get(t, ()) and self.partition_epoch(t, p) != -1
                   for t, ps in self.target.get(m.member_id, {}).items() for p in ps)

    def preferred_assignor(self, default: str) -> str:
        """ConsumerGroup.computePreferredServerAssignor: the one most members name."""
        counts = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        return counts.most_common(1)[0][0] if counts else default


# --- regular expressions ---------------------------------------------------------------------

_REGEX_CACHE: dict[str, re.Pattern | None] = {}


def compile_regex(pattern: str) -> re.Pattern | None:
    """Kafka compiles with RE2/J; Python's ``re`` with fullmatch agrees on the common subset
    (``^re-.*``, classes, alternation). RE2 rejects back-references and look-around, which
    ``re`` accepts: those are refused here as RE2 would refuse them."""
    if pattern not in _REGEX_CACHE:
        try:
            compiled = None if re.search(r"\\[1-9]|\(\?[=!<]", pattern) else re.compile(pattern)
        except re.error:
            compiled = None
        _REGEX_CACHE[pattern] = compiled
    return _REGEX_CACHE[pattern]


def regex_matches(pattern: str, topic: str) -> bool:
    compiled = compile_regex(pattern)
    # Kafka never matches internal topics with a subscription regex
    return compiled is not None and not topic.startswith("__") and compiled.fullmatch(topic) is not None


# --- records -----------------------------------------------------------------------------------

def _key(record_type: int, **data) -> bytes:
    return CO.RecordKey.build({"version": record_type, "data": data})


def _value(record_type: int, **data) -> bytes:
    return CO.value_schema(record_type).build({"version": 0, "data": data})


def _parts_list(parts: Parts) -> list[dict]:
    return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0]))]


def member_metadata_record(group_id: str, m: ConsumerGroupMember) -> tuple[bytes, bytes]:
    return (_key(MEMBER_METADATA, group_id=group_id, member_id=m.member_id), _value(
        MEMBER_METADATA, instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex, rebalance_timeout_ms=m.rebalance_timeout_ms,
        server_assignor=m.server_assignor, classic_member_metadata=None if m.classic is None else {
            "session_timeout_ms": m.classic.session_timeout_ms,
            "supported_protocols": [{"name": n, "metadata": d} for n, d in m.classic.supported_protocols]}))


def group_epoch_record(group: ConsumerGroup) -> tuple[bytes, bytes]:
    return _key(GROUP_METADATA, group_id=group.group_id), _value(GROUP_METADATA, epoch=group.group_epoch,
                                                                 metadata_hash=group.metadata_hash)


def target_member_record(group_id: str, member_id: str, parts: Parts) -> tuple[bytes, bytes]:
    return (_key(TARGET_MEMBER, group_id=group_id, member_id=member_id),
            _value(TARGET_MEMBER, topic_partitions=_parts_list(parts)))


def target_epoch_record(group: ConsumerGroup) -> tuple[bytes, bytes]:
    return (_key(TARGET_METADATA, group_id=group.group_id),
            _value(TARGET_METADATA, assignment_epoch=group.assignment_epoch))


def current_assignment_record(group_id: str, m: ConsumerGroupMember) -> tuple[bytes, bytes]:
    return (_key(CURRENT_ASSIGNMENT, group_id=group_id, member_id=m.member_id), _value(
        CURRENT_ASSIGNMENT, member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
        state=m.state.value, assigned_partitions=_parts_list(m.assigned),
        partitions_pending_revocation=_parts_list(m.pending_revocation)))


def member_tombstones(group_id: str, member_id: str) -> list[tuple[bytes, None]]:
    """GroupMetadataManager.removeMember: current assignment, target, then metadata."""
    return [(_key(CURRENT_ASSIGNMENT, group_id=group_id, member_id=member_id), None),
            (_key(TARGET_MEMBER, group_id=group_id, member_id=member_id), None),
            (_key(MEMBER_METADATA, group_id=group_id, member_id=member_id), None)]


def regular_expression_record(group_id: str, pattern: str, r: ResolvedRegularExpression) -> tuple[bytes, bytes]:
    return (_key(REGULAR_EXPRESSION, group_id=group_id, regular_expression=pattern),
            _value(REGULAR_EXPRESSION, topics=sorted(r.topics), version=r.version, timestamp=r.timestamp))


def image_version(image: TopicImage) -> int:
    """The ``version`` a regex is resolved against: Kafka writes its metadata image's offset;
    kproto, with no metadata log, the KIP-1101 hash of the topic image (the same topics after a
    restart: the same version, so the replayed resolution stands)."""
    return group_hash({t: topic_hash(tid, t, n) for t, (tid, n) in image.items()})


def group_tombstones(group_id: str, regexes=()) -> list[tuple[bytes, None]]:
    """ConsumerGroup.createGroupTombstoneRecords less the members': the target assignment epoch,
    the resolved ``regexes``, the partition metadata, the group epoch."""
    return [(_key(TARGET_METADATA, group_id=group_id), None),
            *((_key(REGULAR_EXPRESSION, group_id=group_id, regular_expression=r), None) for r in regexes),
            (_key(PARTITION_METADATA, group_id=group_id), None),
            (_key(GROUP_METADATA, group_id=group_id), None)]


def _parts_from(rows) -> Parts:
    return {r.topic_id: frozenset(r.partitions) for r in rows if r.partitions}


def replay_consumer_record(groups: dict[str, ConsumerGroup], record_type: int, key: bytes,
                           value: bytes | None) -> None:
    """GroupMetadataManager.replay for record types 3-8 and 16, in log order."""
    k, v, group = replayed_record(groups, ConsumerGroup, record_type, key, value)
    if group is None:
        return
    if record_type == REGULAR_EXPRESSION:
        if v is None:
            group.resolved_regexes.pop(k.regular_expression, None)
        else:
            group.resolved_regexes[k.regular_expression] = ResolvedRegularExpression(
                frozenset(v.topics), v.version, v.timestamp)
    elif record_type == GROUP_METADATA:
        if v is None:
            groups.pop(k.group_id, None)
        else:
            group.group_epoch, group.metadata_hash = v.epoch, v.metadata_hash
    elif record_type == PARTITION_METADATA:
        pass        # recomputed from the topics on the next heartbeat (Kafka 4.1+ writes none)
    elif record_type == MEMBER_METADATA:
        group.replay_member_metadata(k.member_id, v, ConsumerGroupMember, _replay_member)
    elif record_type == TARGET_METADATA:
        if v is not None:
            group.assignment_epoch = v.assignment_epoch
    elif record_type == TARGET_MEMBER:
        if v is None:
            group.target.pop(k.member_id, None)
        else:
            group.target[k.member_id] = _parts_from(v.topic_partitions)
    elif record_type == CURRENT_ASSIGNMENT:
        group.replay_current_assignment(k.member_id, v, ConsumerGroupMember, lambda v: (
            _parts_from(v.assigned_partitions), _parts_from(v.partitions_pending_revocation)))


def _replay_member(m: ConsumerGroupMember, v) -> None:
    m.subscribed_topic_names = tuple(v.subscribed_topic_names)
    m.subscribed_topic_regex, m.server_assignor = v.subscribed_topic_regex, v.server_assignor
    c = v.classic_member_metadata
    m.classic = None if c is None else ClassicMemberMetadata(
        c.session_timeout_ms, tuple((p.name, bytes(p.metadata)) for p in c.supported_protocols))


# --- the part ----------------------------------------------------------------------------------

class ConsumerGroups:
    """The consumer groups of the shared ``GroupContext`` (``ctx.consumer_groups``)."""

    def __init__(self, ctx: GroupContext, uuid_factory: Callable[[], str] | None = None) -> None:
        self._ctx = ctx
        self._uuid = uuid_factory or (lambda: str(uuid.uuid4()))
        self.image: TopicImage = {}
        # the online migration (``migration.GroupMigration`` installs them): a non-empty classic
        # group becomes a consumer group -> (the group, its records); a member leaving a group
        # of classic members -> the downgrade's records, or None when the group stays
        self.upgrade: Callable[[GroupMetadata, int], tuple[ConsumerGroup, list]] | None = None
        self.downgrade: Callable[[ConsumerGroup, str, int], list | None] | None = None

    def new_member_id(self) -> str:
        return self._uuid()

    def handlers(self) -> dict[type, Handler]:
        return {ConsumerGroupHeartbeatRequest: self._heartbeat, ConsumerGroupDescribeRequest: self._describe}

    # --- heartbeat -----------------------------------------------------------------------

    def _heartbeat(self, req: ConsumerGroupHeartbeatRequest, handle: Pending, now_ms: int) -> None:
        def step() -> tuple[list, Any]:
            self._validate(req)
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(req, now_ms)
            return self._join_or_heartbeat(req, now_ms)

        heartbeat_exchange(self._ctx, handle, req.group_id, "ConsumerGroupHeartbeat", now_ms, step,
                           lambda error, message: ConsumerGroupHeartbeatResponse(error_code=error, error_message=message))

    def _validate(self, req: ConsumerGroupHeartbeatRequest) -> None:
        """throwIfConsumerGroupHeartbeatRequestIsInvalid (INVALID_REQUEST with Kafka's messages)."""
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        if not req.group_id:
            raise invalid("GroupId can't be empty.")
        if req.api_version >= 1 and not req.member_id.strip():
            raise invalid("MemberId can't be empty.")
        if req.instance_id is not None and not req.instance_id:
            raise invalid("InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            raise invalid("RackId can't be empty.")
        if req.member_epoch > 0 or req.member_epoch == LEAVE_EPOCH:
            if req.api_version == 0 and not req.member_id:
                raise invalid("MemberId can't be empty.")
        elif req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif req.member_epoch == STATIC_LEAVE_EPOCH:
            if req.instance_id is None:
                raise invalid("InstanceId can't be null.")
        else:
            raise invalid(f"MemberEpoch is invalid: {req.member_epoch}")
        if req.server_assignor is not None and req.server_assignor not in self._ctx.config.consumer_group_assignors:
            raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                                 f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                                 f"{', '.join(self._ctx.config.consumer_group_assignors)}.")
        if req.subscribed_topic_regex is not None and compile_regex(req.subscribed_topic_regex) is None:
            raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                 f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular "
                                 "expression")

    def _group(self, group_id: str, create: bool, now_ms: int) -> tuple[ConsumerGroup, list]:
        """getOrMaybeCreateConsumerGroup, with the upgrade of an empty classic group."""
        records: list = []
        group = self._ctx.consumer_groups.get(group_id)
        if group is not None:
            return group, records
        if group_id in self._ctx.streams_groups:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        classic = self._ctx.groups.get(group_id)
        if classic is not None and classic.state is not GroupState.DEAD:
            policy = self._ctx.config.consumer_group_migration_policy.lower()
            if classic.state is not GroupState.EMPTY:
                if create and self.upgrade is not None:
                    return self.upgrade(classic, now_ms)
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            if policy not in ("upgrade", "bidirectional") and classic.protocol_type is not None:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            # an empty classic group becomes a consumer group and keeps its offsets
            # (GroupMetadataManager: the classic group's tombstone, then the new group)
            if not create:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member is not a member of group {group_id}.")
            del self._ctx.groups[group_id]
            group = ConsumerGroup(group_id, current_state_timestamp=now_ms)
            group.offsets, group.pending_txn_offsets = classic.offsets, classic.pending_txn_offsets
            group.pending_offset_commits = classic.pending_offset_commits
            if classic.protocol_type is not None:
                records.append((group_metadata_key(group_id), None))
            self._ctx.consumer_groups[group_id] = group
            return group, records
        if not create:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        group = ConsumerGroup(group_id, current_state_timestamp=now_ms)
        self._ctx.consumer_groups[group_id] = group
        return group, records

    def _join_or_heartbeat(self, req: ConsumerGroupHeartbeatRequest, now_ms: int):
        config = self._ctx.config
        group, records = self._group(req.group_id, req.member_epoch == JOIN_EPOCH, now_ms)
        owned = None if req.topic_partitions is None else {t: frozenset(ps) for t, ps in req.topic_partitions}
        member_id = req.member_id if req.api_version >= 1 or req.member_id else self._uuid()
        existing = group.members.get(member_id)
        static_replaced: ConsumerGroupMember | None = None
        if req.instance_id is not None:
            holder_id = group.static_members.get(req.instance_id)
            holder = group.members.get(holder_id) if holder_id else None
            if req.member_epoch == JOIN_EPOCH:
                if holder is not None and holder.member_id != member_id:
                    # getOrMaybeSubscribeStaticConsumerGroupMember: a holder using the classic
                    # protocol is replaced at once; a consumer-protocol one must have left (-2)
                    if holder.member_epoch != STATIC_LEAVE_EPOCH and holder.classic is None:
                        raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID, (
                            f"Static member {member_id} with instance id {req.instance_id} cannot join the "
                            f"group because the instance id is owned by {holder.member_id} member."))
                    static_replaced = holder
            else:
                if holder is None:
                    raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, (
                        f"Instance id {req.instance_id} is unknown."))
                if holder.member_id != member_id:
                    raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, (
                        f"Static member {member_id} with instance id {req.instance_id} was fenced by member "
                        f"{holder.member_id}."))
        if existing is None and static_replaced is None:
            if req.member_epoch != JOIN_EPOCH:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {req.group_id}.")
            if len(group.members) >= config.consumer_group_max_size:
                raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                     f"The consumer group has reached its maximum capacity of "
                                     f"{config.consumer_group_max_size} members.")
        if existing is not None and req.member_epoch != JOIN_EPOCH:
            error, message = check_member_epoch(req.member_epoch, existing.member_epoch,
                                                existing.previous_member_epoch, owned, existing.assigned)
            if error is not ErrorCode.NONE:
                raise HeartbeatError(error, message)

        # the member as it will be: a copy of the old one with the changed fields
        if static_replaced is not None:
            # the new member id takes the static member's place, its assignment and epochs
            old = static_replaced
            member = ConsumerGroupMember(member_id, **{f: getattr(old, f) for f in (
                "instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
                "subscribed_topic_regex", "rebalance_timeout_ms", "server_assignor", "state",
                "previous_member_epoch", "assigned", "pending_revocation")})
            member.member_epoch = group.assignment_epoch if old.member_epoch == STATIC_LEAVE_EPOCH else old.member_epoch
            records += member_tombstones(group.group_id, old.member_id)
            target = group.target.pop(old.member_id, None)
            group.remove_member(old.member_id)
            if target is not None:
                group.target[member_id] = target
                records.append(target_member_record(group.group_id, member_id, target))
        elif existing is not None and req.member_epoch == JOIN_EPOCH:
            # a rejoin with epoch 0 (the member lost its epoch): it starts over
            member = _copy(existing)
            member.state, member.member_epoch, member.previous_member_epoch = MemberState.STABLE, 0, 0
            member.assigned, member.pending_revocation = {}, {}
        else:
            member = _copy(existing) if existing is not None else ConsumerGroupMember(member_id)
        before = _copy(existing) if existing is not None else None
        if req.instance_id is not None:
            member.instance_id = req.instance_id
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor
        if req.subscribed_topic_names is not None:
            member.subscribed_topic_names = tuple(sorted(req.subscribed_topic_names))
        if req.subscribed_topic_regex is not None:
            member.subscribed_topic_regex = req.subscribed_topic_regex or None
        group.regex_describable = req.describable       # this member refreshes the regexes
        member.client_id, member.client_host = req.client_id, req.client_host

        member, assignment_changed = self.update_member(group, before, member, static_replaced is not None, owned,
                                                        records, now_ms)

        self._schedule_session(group.group_id, member_id, now_ms)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            self._schedule_rebalance_timeout(group.group_id, member_id, member.member_epoch,
                                             member.rebalance_timeout_ms, now_ms)
        else:
            self._ctx.timers.cancel(("consumer-rebalance", group.group_id, member_id))
        full = req.rebalance_timeout_ms != -1 and (
            req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None) and owned is not None
        give = req.member_epoch == JOIN_EPOCH or full or assignment_changed or (
            before is not None and before.assigned != member.assigned)
        response = ConsumerGroupHeartbeatResponse(
            error_code=ErrorCode.NONE, member_id=member_id, member_epoch=member.member_epoch,
            heartbeat_interval_ms=config.consumer_group_heartbeat_interval_ms,
            assignment=tuple((t, tuple(sorted(ps))) for t, ps in sorted(member.assigned.items(), key=lambda kv: str(kv[0])))
            if give else None)
        return records, response

    def update_member(self, group: ConsumerGroup, before: ConsumerGroupMember | None, member: ConsumerGroupMember,
                      replaced: bool, owned: Parts | None, records: list,
                      now_ms: int) -> tuple[ConsumerGroupMember, bool]:
        """Steps 1-3 of consumerGroupHeartbeat (and of classicGroupJoinToConsumerGroup): the
        member's records, the group epoch, the target assignment, one reconciliation step.
        ``before``: the member as it was (None: new); ``replaced``: a static member's new id.
        Returns the member as it is now and whether its assigned partitions changed."""
        metadata_changed = before is None or replaced or any(
            getattr(before, f) != getattr(member, f) for f in (
                "instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
                "subscribed_topic_regex", "rebalance_timeout_ms", "server_assignor", "classic"))
        subscription_changed = before is None or replaced or any(
            getattr(before, f) != getattr(member, f) for f in (
                "subscribed_topic_names", "subscribed_topic_regex", "server_assignor"))
        if metadata_changed:
            records.append(member_metadata_record(group.group_id, member))
        group.put_member(member)
        records += self._refresh_regexes(group, now_ms)

        # the group epoch: a new subscription, or changed metadata of the subscribed topics
        # (Kafka 4.1+ compares the metadata hash, KIP-1101)
        hash_changed = group.refresh_metadata(self.image)
        if subscription_changed and not replaced or hash_changed:
            group.group_epoch += 1
            records.append(group_epoch_record(group))

        # the target assignment
        if group.group_epoch > group.assignment_epoch:
            records += self._assign(group)

        # reconcile the member one step
        target = group.target.get(member.member_id, {})
        try:
            step = reconcile(member.state, member.member_epoch, member.previous_member_epoch, member.assigned,
                             member.pending_revocation, group.assignment_epoch, target, group.partition_epoch,
                             owned)
        except ValueError as e:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, str(e)) from None
        assignment_changed = False
        if step is not None:
            updated = _copy(member)
            updated.state, updated.member_epoch, updated.previous_member_epoch = (
                step.state, step.member_epoch, step.previous_member_epoch)
            updated.assigned, updated.pending_revocation = step.assigned, step.pending_revocation
            assignment_changed = updated.assigned != member.assigned
            group.put_member(updated)
            member = updated
        if step is not None or before is None or replaced:
            records.append(current_assignment_record(group.group_id, member))
        return member, assignment_changed

    def _refresh_regexes(self, group: ConsumerGroup, now_ms: int) -> list:
        """``ConsumerGroup.refresh_regexes`` against the current topics (their version hashed only
        for a group that has regexes)."""
        if not group.resolved_regexes and not group.subscribed_regexes():
            return []
        return group.refresh_regexes(self.image, image_version(self.image), now_ms)

    def _assign(self, group: ConsumerGroup) -> list:
        """TargetAssignmentBuilder: the assignor's result, records for the members whose
        target changed, then the new assignment epoch."""
        records = []
        assignor = group.preferred_assignor(self._ctx.config.consumer_group_assignors[0])
        topics = {tid: n for tid, n in group.subscription_metadata.values()}
        by_name = group.subscription_metadata
        spec = {}
        for m in group.members.values():
            names = set(m.subscribed_topic_names)
            if m.subscribed_topic_regex is not None:
                names.update(group.regex_topics(m.subscribed_topic_regex, by_name))
            spec[m.member_id] = (frozenset(by_name[n][0] for n in names if n in by_name),
                                 group.target.get(m.member_id, {}))
        result = ASSIGNORS[assignor](spec, topics)
        for member_id in sorted(result):
            if group.target.get(member_id, {}) != result[member_id] or member_id not in group.target:
                group.target[member_id] = result[member_id]
                records.append(target_member_record(group.group_id, member_id, result[member_id]))
        group.assignment_epoch = group.group_epoch
        records.append(target_epoch_record(group))
        return records

    # --- leave and fencing ----------------------------------------------------------------

    def _leave(self, req: ConsumerGroupHeartbeatRequest, now_ms: int):
        group = self._ctx.consumer_groups.get(req.group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
        if req.instance_id is not None:
            holder_id = group.static_members.get(req.instance_id)
            if holder_id is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if holder_id != req.member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, (
                    f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member "
                    f"{holder_id}."))
        member = group.members.get(req.member_id)
        if member is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {req.member_id} is not a member of group {req.group_id}.")
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # consumerGroupStaticMemberGroupLeave: the member stays, epoch -2, its partitions kept for it
            updated = _copy(member)
            updated.member_epoch = STATIC_LEAVE_EPOCH
            group.put_member(updated)
            return [current_assignment_record(group.group_id, updated)], ConsumerGroupHeartbeatResponse(
                error_code=ErrorCode.NONE, member_id=req.member_id, member_epoch=STATIC_LEAVE_EPOCH)
        records = self.remove(group, req.member_id, now_ms)
        return records, ConsumerGroupHeartbeatResponse(
            error_code=ErrorCode.NONE, member_id=req.member_id, member_epoch=LEAVE_EPOCH)

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        """GroupMetadataManager.cancelTimers: the session, rebalance, join and sync timeouts."""
        for kind in ("consumer-session", "consumer-rebalance", "consumer-join", "consumer-sync"):
            self._ctx.timers.cancel((kind, group_id, member_id))

    def remove(self, group: ConsumerGroup, member_id: str, now_ms: int) -> list:
        """GroupMetadataManager.consumerGroupFenceMember: tombstones, a group epoch bump; or
        the downgrade to a classic group when only classic members stay (``downgrade``)."""
        if self.downgrade is not None:
            records = self.downgrade(group, member_id, now_ms)
            if records is not None:
                return records
        self.cancel_timers(group.group_id, member_id)
        group.remove_member(member_id)
        group.target.pop(member_id, None)
        group.group_epoch += 1
        regexes = self._refresh_regexes(group, now_ms)
        group.refresh_metadata(self.image)
        return [*member_tombstones(group.group_id, member_id), *regexes, group_epoch_record(group)]

    def _fence(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._ctx.consumer_groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        self._ctx.append(self._ctx.partition_for(group_id), self.remove(group, member_id, now_ms), now_ms)

    def schedule_timeout(self, kind: str, group_id: str, member_id: str, timeout_ms: int, now_ms: int, *,
                         if_absent: bool = False) -> None:
        """A timer that fences the member when it fires (``consumer-session``, and for classic
        members ``consumer-join`` / ``consumer-sync``: scheduleConsumerGroupJoinTimeoutIfAbsent,
        scheduleConsumerGroupSyncTimeout)."""
        key = (kind, group_id, member_id)
        if not if_absent or self._ctx.timers.deadline(key) is None:
            self._ctx.timers.schedule(key, now_ms + max(timeout_ms, 0), lambda t: self._fence(group_id, member_id, t))

    def _schedule_session(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._ctx.consumer_groups.get(group_id)
        m = group.members.get(member_id) if group is not None else None
        timeout = m.classic.session_timeout_ms if m is not None and m.classic is not None else \
            self._ctx.config.consumer_group_session_timeout_ms
        self.schedule_timeout("consumer-session", group_id, member_id, timeout, now_ms)

    def _schedule_rebalance_timeout(self, group_id: str, member_id: str, epoch: int, timeout_ms: int,
                                    now_ms: int) -> None:
        key = ("consumer-rebalance", group_id, member_id)
        if self._ctx.timers.deadline(key) is not None:
            return

        def expire(t: int) -> None:
            group = self._ctx.consumer_groups.get(group_id)
            m = group.members.get(member_id) if group else None
            if m is not None and m.member_epoch == epoch and m.state is MemberState.UNREVOKED_PARTITIONS:
                self._fence(group_id, member_id, t)

        self._ctx.timers.schedule(key, now_ms + max(timeout_ms, 0), expire)

    # --- describe, list, load ------------------------------------------------------------------

    def _describe(self, req: ConsumerGroupDescribeRequest, handle: Pending, now_ms: int) -> None:
        names = {tid: name for name, (tid, _) in self.image.items()}

        def parts(p: Parts) -> tuple[DescribedTopicPartitions, ...]:
            return tuple(DescribedTopicPartitions(topic_id=t, topic_name=names.get(t, ""), partitions=tuple(sorted(ps)))
                         for t, ps in sorted(p.items(), key=lambda kv: names.get(kv[0], "")))

        out = []
        for group_id in req.group_ids:
            error = self._ctx.validate_group_status(group_id, "ConsumerGroupDescribe")
            group = self._ctx.consumer_groups.get(group_id)
            if error is not None:
                out.append(DescribedConsumerGroup(error_code=error, group_id=group_id))
            elif group is None:
                classic = group_id in self._ctx.groups or group_id in self._ctx.streams_groups
                out.append(DescribedConsumerGroup(
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND, group_id=group_id,
                    error_message=f"Group {group_id} is not a consumer group." if classic
                    else f"Group {group_id} not found."))
            else:
                out.append(DescribedConsumerGroup(
                    error_code=ErrorCode.NONE, group_id=group_id, group_state=group.state.value,
                    group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                    assignor_name=group.preferred_assignor(self._ctx.config.consumer_group_assignors[0]),
                    members=tuple(DescribedConsumerGroupMember(
                        member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                        member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                        subscribed_topic_names=m.subscribed_topic_names,
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=parts(m.assigned), target_assignment=parts(group.target.get(m.member_id, {})),
                        member_type=0 if m.uses_classic_protocol else 1)
                        for m in group.members.values())))
        self._ctx.reply(handle, ConsumerGroupDescribeResponse(groups=tuple(out)))

    def loaded(self, group: ConsumerGroup, now_ms: int) -> None:
        """A replayed group: its members' sessions start now (as Kafka's onLoaded)."""
        group.current_state_timestamp = now_ms
        for member_id in group.members:
            self._schedule_session(group.group_id, member_id, now_ms)

    def unload(self, group_id: str) -> None:
        group = self._ctx.consumer_groups.pop(group_id, None)
        if group is not None:
            for member_id in group.members:
                self.cancel_timers(group_id, member_id)

    # --- offsets (ConsumerGroup.validateOffsetCommit / validateOffsetFetch) ---------------------

    @staticmethod
    def validate_offset_commit(group: ConsumerGroup, member_id: str, instance_id: str | None, member_epoch: int,
                               api_version: int, transactional: bool,
                               partitions: list[tuple[str, int]], image: TopicImage) -> ErrorCode | None:
        if member_epoch < 0 and not group.members:
            return None
        if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
            return None
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.classic is not None:
            # a classic member commits with its generation, the member epoch (validateMemberEpoch)
            return None if member_epoch == member.member_epoch else ErrorCode.ILLEGAL_GENERATION
        if not transactional and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch == member.member_epoch:
            return None
        if member_epoch > member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        # an older epoch: only for partitions the member still has, assigned at or before it
        # (Kafka 4.4's createAssignmentEpochValidator; kproto approximates the per-partition
        # assignment epoch with the member's previous epoch)
        for topic, p in partitions:
            tid = image.get(topic, (None, 0))[0]
            if not _owns(member, tid, p) or member_epoch < member.previous_member_epoch:
                return ErrorCode.STALE_MEMBER_EPOCH
        return None

    @staticmethod
    def validate_offset_fetch(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        member = group.members.get(member_id or "")
        classic = member is not None and member.classic is not None     # its epoch is its generation
        return group.offset_fetch_error(member_id, member_epoch, ErrorCode.ILLEGAL_GENERATION if classic
                                        else ErrorCode.STALE_MEMBER_EPOCH)


def _owns(m: ConsumerGroupMember, topic: Hashable, partition: int) -> bool:
    return partition in m.assigned.get(topic, ()) or partition in m.pending_revocation.get(topic, ())


def _copy(m: ConsumerGroupMember) -> ConsumerGroupMember:
    return ConsumerGroupMember(**{f: getattr(m, f) for f in ConsumerGroupMember.__slots__})
