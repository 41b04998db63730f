"""Classic group states and the table of what each request does in each state.

Theory of operation (Kafka's GroupMetadata.scala / ClassicGroupState.java):

* ``Empty`` -- no members; offsets may remain (also the state of groups that
  only store offsets). A join from a new member starts a rebalance.
* ``PreparingRebalance`` -- JoinGroups are parked until every known member
  has rejoined or the rebalance timeout fires.
* ``CompletingRebalance`` -- the rebalance is done, the new generation waits
  for the leader's SyncGroup; followers' SyncGroups are parked.
* ``Stable`` -- the assignment is known; heartbeats and commits flow.
* ``Dead`` -- the group is being removed (deleted, expired or unloaded).

Two tables live here and nowhere else:

``VALID_PREVIOUS_STATES``
    every state change the coordinator may make, as Kafka's
    ``validPreviousStates``; ``GroupMetadata.transition_to`` enforces it.
``REQUEST_OUTCOMES``
    for every (state, ``GroupEvent``) pair, the answer a request gets from a
    group in that state and the state the group is in right after it. It is
    total: a pair is either accepted (answer ``NONE`` or parked) or rejected
    with the Kafka error code. The coordinator reads its rejections from this
    table; tests sweep every pair against the running coordinator.

A ``GroupEvent`` is a request *after* the coordinator has checked who sent it
(group id, member id, instance id, generation): e.g. "a heartbeat from a
member of the current generation". Requests that fail those checks are
answered before the group state matters (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
ILLEGAL_GENERATION, ...), exactly as Kafka orders its checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kproto.errors import ErrorCode

__all__ = ["GroupState", "GroupEvent", "Outcome", "VALID_PREVIOUS_STATES", "REQUEST_OUTCOMES",
           "outcome_for", "can_transition"]


class GroupState(Enum):
    """The value is the name Kafka reports (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

# target state -> the states it may be entered from (GroupMetadata.scala validPreviousStates)
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    # a join from a new or changed member, a leave or an expiry
    PREPARING: frozenset({STABLE, COMPLETING, EMPTY}),
    # the rebalance completed with members
    COMPLETING: frozenset({PREPARING}),
    # the leader's assignment was written to the log
    STABLE: frozenset({COMPLETING}),
    # the rebalance completed and nobody is left
    EMPTY: frozenset({PREPARING}),
    # deleted, last offsets expired, or partition unloaded
    DEAD: frozenset({STABLE, PREPARING, COMPLETING, EMPTY, DEAD}),
}


def can_transition(source: GroupState, target: GroupState) -> bool:
    return source in VALID_PREVIOUS_STATES[target]


class GroupEvent(Enum):
    """A request, classified by who sent it (see the module docstring)."""

    JOIN_UNKNOWN_MEMBER = "JoinGroup v4+ from a dynamic member without a member id"
    JOIN_NEW_MEMBER = "JoinGroup adding a member (pending id, new static or pre-v4 member)"
    JOIN_LEADER_UNCHANGED = "JoinGroup from the leader with its current protocols"
    JOIN_FOLLOWER_UNCHANGED = "JoinGroup from a follower with its current protocols"
    JOIN_CHANGED = "JoinGroup from a member with changed protocols"
    SYNC_LEADER = "SyncGroup from the leader of the current generation"
    SYNC_FOLLOWER = "SyncGroup from a follower of the current generation"
    HEARTBEAT = "Heartbeat from a member of the current generation"
    LEAVE_GROUP = "LeaveGroup of a member"
    MEMBER_OFFSET_COMMIT = "OffsetCommit from a member of the current generation"
    SIMPLE_OFFSET_COMMIT = "OffsetCommit with generation -1 and no member id"
    OFFSET_FETCH = "OffsetFetch"
    DESCRIBE_GROUP = "DescribeGroups"
    DELETE_GROUP = "DeleteGroups"


@dataclass(frozen=True, slots=True)
class Outcome:
    """``answer`` is the error code the request gets (``NONE`` when accepted);
    ``parked`` says the response waits (for the rebalance, the leader's
    SyncGroup or the log append); ``next_state`` is the group's state right
    after the event, before any completion it may trigger."""

    answer: ErrorCode
    next_state: GroupState
    parked: bool = False


def _table() -> dict[GroupState, dict[GroupEvent, Outcome]]:
    E = GroupEvent
    NONE = ErrorCode.NONE
    UNKNOWN_MEMBER = ErrorCode.UNKNOWN_MEMBER_ID
    REBALANCING = ErrorCode.REBALANCE_IN_PROGRESS
    GONE = ErrorCode.COORDINATOR_NOT_AVAILABLE   # Dead: let the client find the coordinator again

    def ok(state, parked=False):
        return Outcome(NONE, state, parked)

    def no(code, state):
        return Outcome(code, state)

    table = {
        # action: respond normally to join group from new members; everything
        # else from a (former) member gets UNKNOWN_MEMBER_ID; offsets stay readable.
        EMPTY: {
            E.JOIN_UNKNOWN_MEMBER: no(ErrorCode.MEMBER_ID_REQUIRED, EMPTY),
            E.JOIN_NEW_MEMBER: ok(PREPARING, parked=True),
            E.JOIN_LEADER_UNCHANGED: no(UNKNOWN_MEMBER, EMPTY),
            E.JOIN_FOLLOWER_UNCHANGED: no(UNKNOWN_MEMBER, EMPTY),
            E.JOIN_CHANGED: no(UNKNOWN_MEMBER, EMPTY),
            E.SYNC_LEADER: no(UNKNOWN_MEMBER, EMPTY),
            E.SYNC_FOLLOWER: no(UNKNOWN_MEMBER, EMPTY),
            E.HEARTBEAT: no(UNKNOWN_MEMBER, EMPTY),
            E.LEAVE_GROUP: no(UNKNOWN_MEMBER, EMPTY),
            E.MEMBER_OFFSET_COMMIT: no(UNKNOWN_MEMBER, EMPTY),
            E.SIMPLE_OFFSET_COMMIT: ok(EMPTY, parked=True),          # until appended
            E.OFFSET_FETCH: ok(EMPTY),
            E.DESCRIBE_GROUP: ok(EMPTY),
            E.DELETE_GROUP: ok(DEAD, parked=True),                   # until tombstones appended
        },
        # action: park joins until all known members rejoined; heartbeat and
        # sync get REBALANCE_IN_PROGRESS; commits of the previous generation pass.
        PREPARING: {
            E.JOIN_UNKNOWN_MEMBER: no(ErrorCode.MEMBER_ID_REQUIRED, PREPARING),
            E.JOIN_NEW_MEMBER: ok(PREPARING, parked=True),
            E.JOIN_LEADER_UNCHANGED: ok(PREPARING, parked=True),
            E.JOIN_FOLLOWER_UNCHANGED: ok(PREPARING, parked=True),
            E.JOIN_CHANGED: ok(PREPARING, parked=True),
            E.SYNC_LEADER: no(REBALANCING, PREPARING),
            E.SYNC_FOLLOWER: no(REBALANCING, PREPARING),
            E.HEARTBEAT: no(REBALANCING, PREPARING),                 # the session is extended all the same
            E.LEAVE_GROUP: ok(PREPARING),
            E.MEMBER_OFFSET_COMMIT: ok(PREPARING, parked=True),
            E.SIMPLE_OFFSET_COMMIT: no(UNKNOWN_MEMBER, PREPARING),
            E.OFFSET_FETCH: ok(PREPARING),
            E.DESCRIBE_GROUP: ok(PREPARING),
            E.DELETE_GROUP: no(ErrorCode.NON_EMPTY_GROUP, PREPARING),
        },
        # action: park follower syncs until the leader's; commits get
        # REBALANCE_IN_PROGRESS; a changed join or a leave restarts the rebalance.
        COMPLETING: {
            E.JOIN_UNKNOWN_MEMBER: no(ErrorCode.MEMBER_ID_REQUIRED, COMPLETING),
            E.JOIN_NEW_MEMBER: ok(PREPARING, parked=True),
            E.JOIN_LEADER_UNCHANGED: ok(COMPLETING),                 # the current generation again
            E.JOIN_FOLLOWER_UNCHANGED: ok(COMPLETING),
            E.JOIN_CHANGED: ok(PREPARING, parked=True),
            E.SYNC_LEADER: ok(STABLE, parked=True),                  # once the assignment is appended
            E.SYNC_FOLLOWER: ok(COMPLETING, parked=True),            # until the leader's sync
            E.HEARTBEAT: ok(COMPLETING),                             # Kafka >= 3.2 (KAFKA-13766)
            E.LEAVE_GROUP: ok(PREPARING),
            E.MEMBER_OFFSET_COMMIT: no(REBALANCING, COMPLETING),
            E.SIMPLE_OFFSET_COMMIT: no(UNKNOWN_MEMBER, COMPLETING),
            E.OFFSET_FETCH: ok(COMPLETING),
            E.DESCRIBE_GROUP: ok(COMPLETING),
            E.DELETE_GROUP: no(ErrorCode.NON_EMPTY_GROUP, COMPLETING),
        },
        # action: normal heartbeats and commits; sync returns the assignment;
        # the leader's join or a changed join, a leave or an expiry rebalances.
        STABLE: {
            E.JOIN_UNKNOWN_MEMBER: no(ErrorCode.MEMBER_ID_REQUIRED, STABLE),
            E.JOIN_NEW_MEMBER: ok(PREPARING, parked=True),
            E.JOIN_LEADER_UNCHANGED: ok(PREPARING, parked=True),
            E.JOIN_FOLLOWER_UNCHANGED: ok(STABLE),
            E.JOIN_CHANGED: ok(PREPARING, parked=True),
            E.SYNC_LEADER: ok(STABLE),
            E.SYNC_FOLLOWER: ok(STABLE),
            E.HEARTBEAT: ok(STABLE),
            E.LEAVE_GROUP: ok(PREPARING),
            E.MEMBER_OFFSET_COMMIT: ok(STABLE, parked=True),
            E.SIMPLE_OFFSET_COMMIT: no(UNKNOWN_MEMBER, STABLE),
            E.OFFSET_FETCH: ok(STABLE),
            E.DESCRIBE_GROUP: ok(STABLE),
            E.DELETE_GROUP: no(ErrorCode.NON_EMPTY_GROUP, STABLE),
        },
        # action: everything that needs the group answers COORDINATOR_NOT_AVAILABLE
        # so the client rediscovers the coordinator; reads see no group.
        DEAD: {
            **{e: no(GONE, DEAD) for e in E},
            E.OFFSET_FETCH: ok(DEAD),
            E.DESCRIBE_GROUP: ok(DEAD),
            E.DELETE_GROUP: no(ErrorCode.GROUP_ID_NOT_FOUND, DEAD),
        },
    }
    for state, row in table.items():
        missing = set(GroupEvent) - set(row)
        assert not missing, f"{state}: no outcome for {missing}"
        for event, outcome in row.items():
            assert outcome.next_state is state or can_transition(state, outcome.next_state), (state, event)
    return table


REQUEST_OUTCOMES: dict[GroupState, dict[GroupEvent, Outcome]] = _table()


def outcome_for(state: GroupState, event: GroupEvent) -> Outcome:
    return REQUEST_OUTCOMES[state][event]
