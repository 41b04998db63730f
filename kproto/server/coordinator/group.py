"""GroupMetadata and MemberMetadata: one classic group's membership and offsets.

Plain bookkeeping (Kafka's GroupMetadata.scala / MemberMetadata.scala); the
decisions live in the coordinator. A member parked in JoinGroup or SyncGroup
holds the ``Pending`` handle its response will be delivered to.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kproto.errors import KprotoError
from kproto.schemas.consumer_offsets import CONSUMER_PROTOCOL_SUBSCRIPTION
from kproto.server.coordinator.events import JoinGroupResponseMember, Pending
from kproto.server.coordinator.offsets import OffsetAndMetadata, TopicPartition
from kproto.server.coordinator.state import GroupState, can_transition

__all__ = ["MemberMetadata", "GroupMetadata", "DelayedJoin", "IllegalStateError", "subscription_topics"]

Protocols = tuple[tuple[str, bytes], ...]


class IllegalStateError(KprotoError):
    """A transition the state table forbids: a coordinator bug, never a client error."""


@dataclass(slots=True, eq=False)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: Protocols         # (name, metadata), in the member's preference order
    assignment: bytes = b""
    awaiting_join: Pending | None = None
    awaiting_sync: Pending | None = None
    is_new: bool = False                    # joined, not yet through a completed rebalance

    @property
    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.supported_protocols:
            if name == protocol:
                return data
        raise IllegalStateError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Protocols) -> bool:
        return self.supported_protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        return next(name for name, _ in self.supported_protocols if name in candidates)

    def expires_on_session_timeout(self) -> bool:
        """Kafka's ``!hasSatisfiedHeartbeat`` when a heartbeat deadline passes:
        a member parked in a rebalance is alive by definition, unless it is new
        (then the deadline is the new-member join timeout)."""
        return self.is_new or not (self.is_awaiting_join or self.is_awaiting_sync)


@dataclass(slots=True)
class DelayedJoin:
    """The rebalance timer of a PreparingRebalance group. An initial delayed
    join (group was Empty) never completes early and is extended while new
    members keep arriving, up to the rebalance timeout (InitialDelayedJoin)."""

    initial: bool
    delay_ms: int
    remaining_ms: int = 0


@dataclass(eq=False)
class GroupMetadata:
    group_id: str
    state: GroupState
    current_state_timestamp: int | None
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)        # instance id -> member id
    pending_members: set[str] = field(default_factory=set)              # ids handed out by MEMBER_ID_REQUIRED
    pending_sync_members: set[str] = field(default_factory=set)         # joined, SyncGroup not seen yet
    supported_protocols: Counter = field(default_factory=Counter)       # protocol -> members supporting it
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    pending_offset_commits: Counter = field(default_factory=Counter)    # partition -> commits being appended
    # producer id -> offsets of its open transaction (TxnOffsetCommit), applied by its COMMIT marker
    pending_txn_offsets: dict[int, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    subscribed_topics: frozenset[str] | None = None
    new_member_added: bool = False
    delayed_join: DelayedJoin | None = None

    # --- queries ---------------------------------------------------------------------

    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.is_awaiting_join)

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join == len(self.members) and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(+self.pending_offset_commits) or bool(self.pending_txn_offsets)

    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        """May a member with these protocols join? An Empty group takes any
        non-empty type and set; otherwise the type must match and one protocol
        must be supported by every current member."""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols[p] == len(self.members) for p in protocols))

    def select_protocol(self) -> str:
        """Each member votes for its preferred protocol among those all support;
        the most votes win (ties: the first voted, for determinism)."""
        if not self.members:
            raise IllegalStateError("cannot select a protocol for an empty group")
        candidates = {p for p, n in self.supported_protocols.items() if n == len(self.members)}
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return votes.most_common(1)[0][0]

    def current_member_metadata(self) -> tuple[JoinGroupResponseMember, ...]:
        """What the leader gets in its JoinGroup response."""
        if self.state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE) or self.protocol_name is None:
            raise IllegalStateError(f"no member metadata for group in state {self.state.value}")
        return tuple(JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                             metadata=m.metadata(self.protocol_name))
                     for m in self.members.values())

    # --- changes ---------------------------------------------------------------------

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if not can_transition(self.state, state):
            raise IllegalStateError(f"group {self.group_id!r}: {self.state.value} -> {state.value} "
                                    f"is not a valid transition")
        self.state = state
        self.current_state_timestamp = now_ms

    def add(self, member: MemberMetadata, awaiting_join: Pending | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise IllegalStateError(f"static member {member.group_instance_id} is already a member")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(name for name, _ in member.supported_protocols)
        member.awaiting_join = awaiting_join
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(name for name, _ in member.supported_protocols)
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: MemberMetadata, protocols: Protocols, rebalance_timeout_ms: int,
                      session_timeout_ms: int, awaiting_join: Pending | None) -> None:
        self.supported_protocols.subtract(name for name, _ in member.supported_protocols)
        member.supported_protocols = protocols
        self.supported_protocols.update(name for name, _ in protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.awaiting_join = awaiting_join

    def replace_static_member(self, group_instance_id: str, old_member_id: str,
                              new_member_id: str) -> MemberMetadata:
        """A static member came back with a new member id: same member, new id.
        The caller fences whatever the old id had parked. As in Kafka, a
        pending SyncGroup stays recorded under the old id (a restart between
        JoinGroup and SyncGroup ends in a rebalance when the sync times out)."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """The topics a ``consumer`` group subscribes to, from each member's
        ConsumerProtocolSubscription (read as its v0 prefix, like Kafka);
        None when unknown (not a consumer group, or metadata that does not parse)."""
        if self.protocol_type != "consumer":
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = subscription_topics(m.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return frozenset(topics)


_SUBSCRIPTION_V0 = CONSUMER_PROTOCOL_SUBSCRIPTION.struct(0)


def subscription_topics(metadata: bytes) -> list[str] | None:
    """The topics of a ConsumerProtocolSubscription of any version, read as the
    v0 prefix every version starts with (after the int16 version); None if
    it does not parse."""
    if len(metadata) < 2:
        return None
    try:
        return list(_SUBSCRIPTION_V0.parse(metadata[2:]).topics)
    except Exception:        # construct raises many types on bad input; unknown topics is the answer
        return None
