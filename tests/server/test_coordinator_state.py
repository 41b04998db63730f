"""The state table against the running coordinator.

``REQUEST_OUTCOMES`` says, for every (group state, classified request), the
answer and the state right after. The sweep puts a group in each state with
real requests, fires each event and checks the coordinator does what the
table says; a random simulation then checks the coordinator's invariants over
arbitrary interleavings of clients, failures and time.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kproto.errors import ErrorCode
from kproto.server.coordinator import (
    DeleteGroupsRequest, DescribeGroupsRequest, GroupEvent, GroupState, HeartbeatRequest,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, MemberIdentity, OffsetCommitRequest,
    OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetFetchRequest, Pending, REQUEST_OUTCOMES,
    SyncGroupRequest, SyncGroupRequestAssignment, VALID_PREVIOUS_STATES,
)
from kproto.server.coordinator.state import can_transition
from tests.server.helpers import Harness, protocols, REBALANCE

E = ErrorCode
LONG = 10 * REBALANCE          # sessions that do not run out while a fixture is built


# Kafka 3.x's answers, written out from GroupCoordinator.scala independently of the
# module's table: <error code> answered at once, "park" answered later with 0,
# ">X" the state right after (E P C S D). The sweep below checks the running
# coordinator against the module's table; this pins that table.
KAFKA_3X = """
                          Empty   Preparing  Completing  Stable   Dead
JOIN_UNKNOWN_MEMBER       79      79         79          79       15
JOIN_NEW_MEMBER           park>P  park       park>P      park>P   15
JOIN_LEADER_UNCHANGED     25      park       0           park>P   15
JOIN_FOLLOWER_UNCHANGED   25      park       0           0        15
JOIN_CHANGED              25      park       park>P      park>P   15
SYNC_LEADER               25      27         park>S      0        15
SYNC_FOLLOWER             25      27         park        0        15
HEARTBEAT                 25      27         0           0        15
LEAVE_GROUP               25      0          0>P         0>P      15
MEMBER_OFFSET_COMMIT      25      park       27          park     15
SIMPLE_OFFSET_COMMIT      park    25         25          25       15
OFFSET_FETCH              0       0          0           0        0
DESCRIBE_GROUP            0       0          0           0        0
DELETE_GROUP              park>D  68         68          68       69
"""


def test_the_table_says_what_kafka_does():
    states = list(GroupState)
    short = {s.value[0]: s for s in states}
    rows = [line.split() for line in KAFKA_3X.strip().splitlines()[1:]]
    assert {r[0] for r in rows} == {e.name for e in GroupEvent}
    for name, *cells in rows:
        for state, cell in zip(states, cells, strict=True):
            outcome = REQUEST_OUTCOMES[state][GroupEvent[name]]
            head, _, target = cell.partition(">")
            parked = head == "park"
            assert (outcome.answer, outcome.parked, outcome.next_state) == (
                E(0 if parked else int(head)), parked, short[target] if target else state), (name, state)


def test_the_table_is_total_and_only_uses_valid_transitions():
    assert set(REQUEST_OUTCOMES) == set(GroupState)
    for state, row in REQUEST_OUTCOMES.items():
        assert set(row) == set(GroupEvent)
        for event, outcome in row.items():
            assert outcome.next_state is state or state in VALID_PREVIOUS_STATES[outcome.next_state]
            assert not (outcome.parked and outcome.answer is not E.NONE), (state, event)
    assert not can_transition(GroupState.EMPTY, GroupState.STABLE)
    assert all(can_transition(s, GroupState.DEAD) for s in GroupState)


# --- the sweep ------------------------------------------------------------------------------

class Fixture:
    """Group "g" in ``state``; ``a`` leads, ``b`` follows, ``extra`` bystanders."""

    def __init__(self, state: GroupState, *, statics: bool, extra: int) -> None:
        self.h = h = Harness()
        self.statics = statics
        n = 2 + extra + (1 if state is GroupState.PREPARING_REBALANCE else 0)
        if state is GroupState.COMPLETING_REBALANCE:
            handles = [self._first_join(i) for i in range(n)]
            h.settle(handles)
            self.ids = [h.result(x).member_id for x in handles]
        else:
            self.ids, _ = h.stable_group(n, statics=statics, session=LONG)
        if state is GroupState.PREPARING_REBALANCE:
            self._leave(self.ids[-1], n - 1)                # the last member leaves: nobody rejoined yet
        elif state is GroupState.EMPTY:
            h.send(LeaveGroupRequest(group_id="g", members=tuple(
                MemberIdentity(member_id=m, group_instance_id=self.instance(i)) for i, m in enumerate(self.ids))))
        elif state is GroupState.DEAD:
            # the window Kafka guards against: a group being removed is still reachable
            h.c.group("g").transition_to(GroupState.DEAD, h.now)
        self.group = h.c.group("g")
        assert self.group.state is state
        self.generation = self.group.generation_id
        self.a, self.b = self.ids[0], self.ids[1]

    def instance(self, i: int) -> str | None:
        return f"i{i}" if self.statics else None

    def _first_join(self, i: int):
        if self.statics:
            return self.h.join(client=f"c{i}", instance=f"i{i}", session=LONG)
        return self.h.new_member(client=f"c{i}", session=LONG)

    def _leave(self, member_id: str, i: int) -> None:
        left = self.h.send(LeaveGroupRequest(group_id="g", members=(
            MemberIdentity(member_id=member_id, group_instance_id=self.instance(i)),)))
        assert left.members[0].error_code == E.NONE

    def join(self, member_id: str, i: int | None, protos=None) -> JoinGroupRequest:
        return JoinGroupRequest(group_id="g", member_id=member_id, session_timeout_ms=LONG,
                                rebalance_timeout_ms=REBALANCE, protocol_type="consumer",
                                protocols=protos or protocols("range"), client_id="c",
                                group_instance_id=None if i is None else self.instance(i))

    def request(self, event: GroupEvent):
        h, gen = self.h, self.generation
        a, b = (self.a, self.instance(0)), (self.b, self.instance(1))
        if event is GroupEvent.JOIN_UNKNOWN_MEMBER:
            return self.join("", None)
        if event is GroupEvent.JOIN_NEW_MEMBER:
            if self.statics:
                return JoinGroupRequest(group_id="g", session_timeout_ms=LONG, protocol_type="consumer",
                                        protocols=protocols("range"), client_id="c", group_instance_id="i-new")
            first = h.send(self.join("", None))
            member_id = first.member_id if first.error_code == E.MEMBER_ID_REQUIRED else "never-issued"
            return self.join(member_id, None)
        if event is GroupEvent.JOIN_LEADER_UNCHANGED:
            return self.join(self.a, 0)
        if event is GroupEvent.JOIN_FOLLOWER_UNCHANGED:
            return self.join(self.b, 1)
        if event is GroupEvent.JOIN_CHANGED:
            return self.join(self.b, 1, protocols("range", topics=("t", "u")))
        if event is GroupEvent.SYNC_LEADER:
            return SyncGroupRequest(group_id="g", generation_id=gen, member_id=a[0], group_instance_id=a[1],
                                    assignments=tuple(SyncGroupRequestAssignment(member_id=m, assignment=b"x")
                                                      for m in self.ids))
        if event is GroupEvent.SYNC_FOLLOWER:
            return SyncGroupRequest(group_id="g", generation_id=gen, member_id=b[0], group_instance_id=b[1])
        if event is GroupEvent.HEARTBEAT:
            return HeartbeatRequest(group_id="g", generation_id=gen, member_id=a[0], group_instance_id=a[1])
        if event is GroupEvent.LEAVE_GROUP:
            return LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id=b[0], group_instance_id=b[1]),))
        if event in (GroupEvent.MEMBER_OFFSET_COMMIT, GroupEvent.SIMPLE_OFFSET_COMMIT):
            member = event is GroupEvent.MEMBER_OFFSET_COMMIT
            return OffsetCommitRequest(
                group_id="g", generation_id=gen if member else -1, member_id=a[0] if member else "",
                group_instance_id=a[1] if member else None,
                topics=(OffsetCommitRequestTopic(name="t", partitions=(
                    OffsetCommitRequestPartition(partition_index=0, committed_offset=1),)),))
        if event is GroupEvent.OFFSET_FETCH:
            return OffsetFetchRequest(group_id="g")
        if event is GroupEvent.DESCRIBE_GROUP:
            return DescribeGroupsRequest(groups=("g",))
        if event is GroupEvent.DELETE_GROUP:
            return DeleteGroupsRequest(groups_names=("g",))
        raise AssertionError(event)


def answer_of(response) -> ErrorCode:
    """The error the client acts on."""
    name = type(response).__name__
    if name == "LeaveGroupResponse":
        return response.error_code if response.error_code != E.NONE else response.members[0].error_code
    if name == "OffsetCommitResponse":
        return response.topics[0].partitions[0].error_code
    if name == "DescribeGroupsResponse":
        return response.groups[0].error_code
    if name == "DeleteGroupsResponse":
        return response.results[0].error_code
    return response.error_code


def check(state: GroupState, event: GroupEvent, *, statics: bool = False, extra: int = 0) -> None:
    fx = Fixture(state, statics=statics, extra=extra)
    expected = REQUEST_OUTCOMES[state][event]
    request = fx.request(event)
    h, group = fx.h, fx.group
    response = h.c.handle(request, h.now)
    parked = isinstance(response, Pending)
    h.pump()                                              # appends reach the log, nothing else moves
    assert parked == expected.parked, (state, event, response)
    if parked:
        response = h.done.pop(response, None)
    if response is not None:
        assert answer_of(response) == expected.answer, (state, event, response)
    elif event not in (GroupEvent.JOIN_NEW_MEMBER, GroupEvent.JOIN_LEADER_UNCHANGED,
                       GroupEvent.JOIN_FOLLOWER_UNCHANGED, GroupEvent.JOIN_CHANGED, GroupEvent.SYNC_FOLLOWER):
        raise AssertionError(f"{state} {event}: still parked after the log append")
    assert group.state is expected.next_state, (state, event, group.state)


@pytest.mark.parametrize("state", list(GroupState), ids=lambda s: s.value)
@pytest.mark.parametrize("event", list(GroupEvent), ids=lambda e: e.name)
def test_every_pair(state, event):
    check(state, event)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=st.sampled_from(list(GroupState)), event=st.sampled_from(list(GroupEvent)),
       statics=st.booleans(), extra=st.integers(0, 2))
def test_sweep_states_and_events(state, event, statics, extra):
    check(state, event, statics=statics, extra=extra)


# --- random interleavings -----------------------------------------------------------------

ALLOWED = {
    "JoinGroup": {E.NONE, E.MEMBER_ID_REQUIRED, E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID,
                  E.INCONSISTENT_GROUP_PROTOCOL, E.REBALANCE_IN_PROGRESS, E.NOT_COORDINATOR,
                  E.COORDINATOR_NOT_AVAILABLE, E.UNKNOWN_SERVER_ERROR},
    "SyncGroup": {E.NONE, E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS,
                  E.FENCED_INSTANCE_ID, E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE},
    "Heartbeat": {E.NONE, E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS,
                  E.FENCED_INSTANCE_ID},
    "LeaveGroup": {E.NONE, E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID},
    "OffsetCommit": {E.NONE, E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS,
                     E.FENCED_INSTANCE_ID, E.NOT_COORDINATOR, E.REQUEST_TIMED_OUT},   # passed through, as Kafka
    "DeleteGroups": {E.NONE, E.NON_EMPTY_GROUP, E.GROUP_ID_NOT_FOUND},
}


class Client:
    """A consumer that follows the protocol (one request at a time) unless told to misbehave."""

    def __init__(self, i: int) -> None:
        self.i = i
        self.instance = f"i{i}" if i % 2 else None
        self.member_id = ""
        self.generation = -1
        self.needs_join = True
        self.needs_sync = False
        self.in_flight = 0

    @property
    def busy(self) -> bool:
        return self.in_flight > 0


class Interleavings(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(group_initial_rebalance_delay_ms=30)
        self.clients = [Client(i) for i in range(4)]
        self.waiting: dict[Pending, Client | None] = {}
        self.highest_generation = 0
        self.last_group = None

    def deliver(self, client: Client | None, response, parked: bool = False) -> None:
        name = type(response).__name__.removesuffix("Response")
        error = answer_of(response)
        assert error in ALLOWED.get(name, {E.NONE}), response
        if client is None:
            return
        if parked:
            client.in_flight -= 1
        if isinstance(response, JoinGroupResponse):
            if error in (E.NONE, E.MEMBER_ID_REQUIRED):
                client.member_id = response.member_id
            if error is E.NONE:
                client.generation, client.needs_join, client.needs_sync = response.generation_id, False, True
        elif name == "SyncGroup" and error is E.NONE:
            client.needs_sync = False
        if error in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            client.member_id, client.generation, client.needs_join = "", -1, True
        elif error in (E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS):
            client.needs_join = True

    def send(self, request, client: Client | None = None) -> None:
        r = self.h.c.handle(request, self.h.now)
        if isinstance(r, Pending):
            self.waiting[r] = client
            if client is not None:
                client.in_flight += 1
        else:
            self.deliver(client, r)
        self.collect()

    def collect(self) -> None:
        self.h.pump()
        for handle, response in list(self.h.done.items()):
            del self.h.done[handle]
            assert handle in self.waiting, f"{handle} answered twice"
            self.deliver(self.waiting.pop(handle), response, parked=True)

    def _join(self, c: Client, changed: bool = False, skip: bool = False) -> None:
        self.send(JoinGroupRequest(
            group_id="g", member_id=c.member_id, group_instance_id=c.instance, client_id=f"c{c.i}",
            session_timeout_ms=300, rebalance_timeout_ms=500, protocol_type="consumer",
            protocols=protocols("range", topics=("t", "u") if changed else ("t",)),
            support_skipping_assignment=skip), c)

    def _sync(self, c: Client) -> None:
        self.send(SyncGroupRequest(group_id="g", generation_id=c.generation, member_id=c.member_id,
                                   group_instance_id=c.instance, assignments=tuple(
                                       SyncGroupRequestAssignment(member_id=o.member_id, assignment=b"a")
                                       for o in self.clients if o.member_id)), c)

    def _heartbeat(self, c: Client) -> None:
        self.send(HeartbeatRequest(group_id="g", generation_id=c.generation, member_id=c.member_id,
                                   group_instance_id=c.instance), c)

    @rule(i=st.integers(0, 3))
    def step_again(self, i):
        """(weights ``step``: rules are drawn uniformly)"""
        self.step(i)

    @rule(i=st.integers(0, 3))
    def step(self, i):
        """What a well-behaved consumer does next."""
        c = self.clients[i]
        if c.busy:
            return
        if c.needs_join:
            self._join(c)
        elif c.needs_sync:
            self._sync(c)
        else:
            self._heartbeat(c)

    @rule(i=st.integers(0, 3), changed=st.booleans(), skip=st.booleans(), reckless=st.booleans())
    def join(self, i, changed, skip, reckless):
        c = self.clients[i]
        if reckless or not c.busy:                     # reckless: a retry while the first is parked
            self._join(c, changed, skip)

    @rule(i=st.integers(0, 3))
    def sync(self, i):
        if not self.clients[i].busy:
            self._sync(self.clients[i])

    @rule(i=st.integers(0, 3), by_instance=st.booleans())
    def leave(self, i, by_instance):
        c = self.clients[i]
        if c.busy and not by_instance:
            return
        member_id = "" if by_instance and c.instance else c.member_id
        self.send(LeaveGroupRequest(group_id="g", members=(
            MemberIdentity(member_id=member_id, group_instance_id=c.instance),)), None if c.busy else c)

    @rule(i=st.integers(0, 3), simple=st.booleans())
    def commit(self, i, simple):
        c = self.clients[i]
        if c.busy:
            return
        self.send(OffsetCommitRequest(
            group_id="g", generation_id=-1 if simple else c.generation, member_id="" if simple else c.member_id,
            group_instance_id=None if simple else c.instance,
            topics=(OffsetCommitRequestTopic(name="t", partitions=(
                OffsetCommitRequestPartition(partition_index=i, committed_offset=i),)),)), c)

    @rule()
    def delete(self):
        self.send(DeleteGroupsRequest(groups_names=("g",)))

    @rule(hold=st.booleans(), error=st.sampled_from([E.NONE, E.NOT_LEADER_OR_FOLLOWER, E.REQUEST_TIMED_OUT]))
    def log(self, hold, error):
        """Hold the log's appends back, or complete the held ones (maybe failing)."""
        self.h.auto_append = not hold
        if not hold:
            self.h.release(error)
            self.collect()

    @rule(ms=st.sampled_from([1, 30, 100, 299, 300, 500, 1000]))
    def advance(self, ms):
        self.h.advance(ms)
        self.collect()

    @invariant()
    def group_is_consistent(self):
        group = self.h.c.group("g")
        if group is None:
            return
        members = group.members
        if group is not self.last_group:                  # deleted and created again
            self.last_group, self.highest_generation = group, 0
        assert group.generation_id >= self.highest_generation
        self.highest_generation = group.generation_id
        if members:
            assert group.leader_id in members
        else:
            assert group.leader_id is None
            assert group.state in (GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
        assert set(group.static_members.values()) <= set(members)
        assert all(members[m].group_instance_id == i for i, m in group.static_members.items())
        if group.pending_sync_members:
            assert group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
        assert (group.state is GroupState.PREPARING_REBALANCE) == (group.delayed_join is not None)
        for m in members.values():
            assert not (m.is_awaiting_join and m.is_awaiting_sync)
            if m.is_awaiting_sync:
                assert group.state is GroupState.COMPLETING_REBALANCE

    def teardown(self):
        # with the log answering and time running on, every parked request is answered
        self.h.auto_append = True
        for _ in range(20):
            self.h.release()
            self.h.advance(1_000)
            self.collect()
        assert not self.waiting, self.waiting


TestInterleavings = Interleavings.TestCase
TestInterleavings.settings = settings(max_examples=200, stateful_step_count=50, deadline=None)
