"""KIP-848 consumer groups: states, the member-epoch rules and the reconciliation, as data.

Theory of operation (Kafka's GroupMetadataManager.consumerGroupHeartbeat, ConsumerGroup,
ConsumerGroupMember, CurrentAssignmentBuilder):

* Three epochs. The *group epoch* is bumped whenever what the assignor must see changes
  (a member joins or leaves, a subscription changes, a subscribed topic's partition count
  changes). The *assignment epoch* is the group epoch the current target assignment was
  computed for. Each member's *member epoch* is the assignment epoch it has reconciled to.
* Group state is derived, never set: ``Empty`` (no members), ``Assigning`` (group epoch >
  assignment epoch: the next heartbeat computes the target), ``Reconciling`` (some member is
  not Stable at the assignment epoch), ``Stable``.
* A member converges on its target in steps (``reconcile``, CurrentAssignmentBuilder): first
  it gives up what it must revoke (``UNREVOKED_PARTITIONS``, epoch kept), then it gets the
  target epoch and every new partition nobody else still owns; partitions still owned by
  another member (the *partition epoch* is not -1) wait (``UNRELEASED_PARTITIONS``).
* A heartbeat's member epoch is checked against the member's (``EPOCH_RULES``): equal passes;
  the previous epoch passes when the member owns only what it is assigned (its answer to
  the last bump was lost); anything else is FENCED_MEMBER_EPOCH and the member rejoins.

No I/O; frozen results; imports only errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Hashable

from kproto.errors import ErrorCode

__all__ = ["ConsumerGroupState", "MemberState", "Assignment", "Reconciled", "reconcile", "derive_state",
           "EpochCheck", "EPOCH_RULES", "check_member_epoch", "JOIN_EPOCH", "LEAVE_EPOCH",
           "STATIC_LEAVE_EPOCH"]

JOIN_EPOCH = 0                 # a member (re)joins
LEAVE_EPOCH = -1               # a member leaves (LEAVE_GROUP_MEMBER_EPOCH)
STATIC_LEAVE_EPOCH = -2        # a static member leaves and will come back (LEAVE_GROUP_STATIC_MEMBER_EPOCH)

#: topic id -> partitions
Assignment = Mapping[Hashable, frozenset[int]]


class ConsumerGroupState(Enum):
    """The value is the name Kafka reports (ListGroups, ConsumerGroupDescribe)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(Enum):
    """The value is the byte in ConsumerGroupCurrentMemberAssignmentValue.state (MemberState.java)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


def derive_state(n_members: int, group_epoch: int, assignment_epoch: int,
                 members: Callable[[], list[tuple[MemberState, int]]]) -> ConsumerGroupState:
    """ConsumerGroup.maybeUpdateGroupState; ``members`` lists (state, member epoch)."""
    if n_members == 0:
        return ConsumerGroupState.EMPTY
    if group_epoch > assignment_epoch:
        return ConsumerGroupState.ASSIGNING
    for state, epoch in members():
        if state is not MemberState.STABLE or epoch != assignment_epoch:
            return ConsumerGroupState.RECONCILING
    return ConsumerGroupState.STABLE


# --- the member epoch a heartbeat carries ----------------------------------------------------

class EpochCheck(Enum):
    EQUAL = "received == member epoch"
    PREVIOUS_OWNING_SUBSET = "received == previous epoch, owned partitions a subset of the assignment"
    PREVIOUS_OTHERWISE = "received == previous epoch, owned unknown or not a subset"
    GREATER = "received > member epoch"
    SMALLER = "received < member epoch, not the previous one"


#: GroupMetadataManager.throwIfMemberEpochIsInvalid, as a table
EPOCH_RULES: dict[EpochCheck, ErrorCode] = {
    EpochCheck.EQUAL: ErrorCode.NONE,
    EpochCheck.PREVIOUS_OWNING_SUBSET: ErrorCode.NONE,
    EpochCheck.PREVIOUS_OTHERWISE: ErrorCode.FENCED_MEMBER_EPOCH,
    EpochCheck.GREATER: ErrorCode.FENCED_MEMBER_EPOCH,
    EpochCheck.SMALLER: ErrorCode.FENCED_MEMBER_EPOCH,
}


def classify_epoch(received: int, member_epoch: int, previous_epoch: int,
                   owned: Assignment | None, assigned: Assignment) -> EpochCheck:
    if received == member_epoch:
        return EpochCheck.EQUAL
    if received > member_epoch:
        return EpochCheck.GREATER
    if received == previous_epoch:
        if owned is not None and all(parts <= assigned.get(t, frozenset()) for t, parts in owned.items()):
            return EpochCheck.PREVIOUS_OWNING_SUBSET
        return EpochCheck.PREVIOUS_OTHERWISE
    return EpochCheck.SMALLER


def check_member_epoch(received: int, member_epoch: int, previous_epoch: int, owned: Assignment | None,
                       assigned: Assignment) -> tuple[ErrorCode, str | None]:
    """The error (and Kafka's message) for a heartbeat's member epoch."""
    check = classify_epoch(received, member_epoch, previous_epoch, owned, assigned)
    error = EPOCH_RULES[check]
    if error is ErrorCode.NONE:
        return error, None
    which = "greater" if check is EpochCheck.GREATER else "smaller"
    return error, (f"The consumer group member has a {which} member epoch ({received}) than the one known by "
                   f"the group coordinator ({member_epoch}). The member must abandon all its partitions and rejoin.")


# --- reconciliation (CurrentAssignmentBuilder) ------------------------------------------------

@dataclass(frozen=True, slots=True)
class Reconciled:
    """A member's state, epochs and partitions after a reconciliation step."""

    state: MemberState
    member_epoch: int
    previous_member_epoch: int
    assigned: dict[Hashable, frozenset[int]]
    pending_revocation: dict[Hashable, frozenset[int]]


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """ownsRevokedPartitions: unknown ownership counts as owning."""
    if owned is None:
        return True
    return any(parts & partitions.get(t, frozenset()) for t, parts in owned.items())


def reconcile(state: MemberState, member_epoch: int, previous_epoch: int, assigned: Assignment,
              pending_revocation: Assignment, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[Hashable, int], int], owned: Assignment | None) -> Reconciled | None:
    """CurrentAssignmentBuilder.build: the member's next step, or None when it stays as it is.
    ``partition_epoch(topic, p)`` is the epoch of the member owning it elsewhere (-1: free);
    ``owned`` is what the heartbeat says the member owns (None: not sent). Raises
    ``ValueError`` for an UNKNOWN member that still owns partitions (FENCED_MEMBER_EPOCH)."""
    if state is MemberState.STABLE:
        if member_epoch == target_epoch:
            return None
        epoch = member_epoch
    elif state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, pending_revocation):
            return None
        epoch = member_epoch + 1
    elif state is MemberState.UNRELEASED_PARTITIONS:
        epoch = member_epoch
    else:
        if owned is None or any(owned.values()):
            raise ValueError("The consumer group member is in a unknown state. "
                             "The member must abandon all its partitions and rejoin.")
        epoch = target_epoch

    new_assigned: dict[Hashable, frozenset[int]] = {}
    revoke: dict[Hashable, frozenset[int]] = {}
    grant: dict[Hashable, frozenset[int]] = {}
    unreleased = False
    for topic in {*target, *assigned}:
        want = target.get(topic, frozenset())
        have = assigned.get(topic, frozenset())
        keep = have & want
        new = want - keep
        free = frozenset(p for p in new if partition_epoch(topic, p) == -1)
        unreleased = unreleased or free != new
        if keep:
            new_assigned[topic] = keep
        if have - keep:
            revoke[topic] = have - keep
        if free:
            grant[topic] = free
    if revoke and _owns_any(owned, revoke):
        # updateMemberEpoch(epoch): the previous epoch becomes the current one
        return Reconciled(MemberState.UNREVOKED_PARTITIONS, epoch, member_epoch, new_assigned, revoke)
    for topic, parts in grant.items():
        new_assigned[topic] = new_assigned.get(topic, frozenset()) | parts
    new_state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return Reconciled(new_state, target_epoch, member_epoch, new_assigned, {})
