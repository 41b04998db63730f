"""The group coordinator, driven request by request with a fake clock.

Every test owns its clock (``Harness.now``) and its log (``Harness.log``): the
coordinator never reads time or touches a file. ``Harness.send`` delivers the
response of a request when it is ready by the end of the call (after the
records it produced were "appended"), else the ``Pending`` handle; later
responses are collected by ``Harness.pump`` into ``Harness.done``.
"""

from __future__ import annotations

import re

from kproto.schemas import consumer_offsets as CO
from kproto.server.coordinator import (
    DeleteGroupsRequest, DescribeGroupsRequest, GroupCoordinator, GroupState, LeaveGroupRequest,
    ListGroupsRequest, MemberIdentity, OffsetCommitRequest, OffsetCommitRequestPartition,
    OffsetCommitRequestTopic, Pending,
)
from kproto.server.coordinator.persistence import parse_key, parse_offset_value
from tests.server.helpers import (
    assignment, commit_errors, DELAY, E, fetched, Harness, protocols, REBALANCE, SESSION, subscription,
)

# --- JoinGroup ----------------------------------------------------------------------------

def test_first_join_needs_member_id_then_leader_after_initial_delay():
    h = Harness(uuids=True)
    first = h.join(client="app")
    assert first.error_code == E.MEMBER_ID_REQUIRED
    assert re.fullmatch(r"app-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first.member_id)
    assert (first.generation_id, first.leader, first.protocol_name, first.members) == (-1, "", None, ())
    assert h.state() is GroupState.EMPTY                 # a pending id does not start a rebalance

    pending = h.join(first.member_id, client="app")
    assert isinstance(pending, Pending)
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert h.c.next_deadline() == DELAY                  # the initial rebalance delay, not the timeout
    h.advance(DELAY - 1)
    assert pending not in h.done
    h.advance(1)
    joined = h.result(pending)
    assert joined.error_code == E.NONE
    assert (joined.generation_id, joined.member_id, joined.leader) == (1, first.member_id, first.member_id)
    assert (joined.protocol_type, joined.protocol_name) == ("consumer", "range")
    assert [(m.member_id, m.metadata) for m in joined.members] == [(first.member_id, subscription("t"))]
    assert h.state() is GroupState.COMPLETING_REBALANCE


def test_initial_delay_is_extended_while_members_arrive_but_not_past_rebalance_timeout():
    h = Harness(group_initial_rebalance_delay_ms=100)
    a = h.new_member("a", rebalance=250)                 # t=0: wait 100, 150 left
    h.advance(50)
    b = h.new_member("b", rebalance=250)                 # t=50: a new member, so wait again at t=100
    h.advance(50)
    assert a not in h.done and h.c.next_deadline() == 200
    h.advance(50)
    c = h.new_member("c", rebalance=250)                 # t=150
    h.advance(50)
    assert not h.done and h.c.next_deadline() == 250     # t=200: only 50 left of the timeout
    h.advance(49)
    assert not h.done
    h.advance(1)
    results = [h.result(x) for x in (a, b, c)]           # t=250 = the rebalance timeout
    assert {r.generation_id for r in results} == {1}
    assert h.now == 250


def test_initial_delay_without_newcomers_completes_once():
    h = Harness(group_initial_rebalance_delay_ms=100)
    a = h.new_member("a")
    h.advance(99)
    assert not h.done
    h.advance(1)
    assert h.result(a).generation_id == 1


def test_three_members_leader_gets_everyone_followers_get_nothing():
    h = Harness()
    handles = [h.new_member(f"c{i}", protos=protocols("range", topics=(f"t{i}",))) for i in range(3)]
    h.advance(DELAY)
    assert not h.done                                    # others joined during the delay: wait once more
    h.advance(DELAY)
    leader, *followers = [h.result(x) for x in handles]
    ids = [leader.member_id] + [f.member_id for f in followers]
    assert ids == ["c0-u1", "c1-u2", "c2-u3"]
    assert leader.leader == "c0-u1" and all(f.leader == "c0-u1" for f in followers)
    assert [(m.member_id, m.group_instance_id, m.metadata) for m in leader.members] == [
        (ids[i], None, subscription(f"t{i}")) for i in range(3)]
    assert all(f.members == () for f in followers)
    assert {r.generation_id for r in [leader, *followers]} == {1}


def test_protocol_type_and_common_protocol_selection():
    h = Harness()
    a = h.new_member("a", protos=protocols("range", "roundrobin"))
    b = h.new_member("b", protos=protocols("sticky", "roundrobin"))
    assert h.join(client="x", protocol_type="connect").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(client="x", protos=protocols("cooperative-sticky")).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    h.advance(2 * DELAY)                                  # the delay is extended once: others joined
    # the only protocol both support
    assert h.result(a).protocol_name == h.result(b).protocol_name == "roundrobin"


def test_invalid_group_id_and_session_timeout():
    h = Harness(group_min_session_timeout_ms=100, group_max_session_timeout_ms=1000)
    assert h.join(group="").error_code == E.INVALID_GROUP_ID
    assert h.join(session=99).error_code == E.INVALID_SESSION_TIMEOUT
    assert h.join(session=1001).error_code == E.INVALID_SESSION_TIMEOUT
    assert h.join("nobody").error_code == E.UNKNOWN_MEMBER_ID      # member id for a group that does not exist
    assert h.heartbeat("", 0, group="").value == E.INVALID_GROUP_ID


def test_old_clients_join_without_member_id_round_trip():
    h = Harness()
    pending = h.join(client="old", require_known_member_id=False)   # JoinGroup v0-3
    assert isinstance(pending, Pending)
    h.advance(DELAY)
    assert h.result(pending).member_id == "old-u1"


def test_pending_member_id_expires_after_session_timeout():
    h = Harness()
    first = h.join(client="slow")
    h.advance(SESSION)
    assert h.join(first.member_id, client="slow").error_code == E.UNKNOWN_MEMBER_ID


def test_group_max_size():
    h = Harness(group_max_size=1)
    h.stable_group(1)
    refused = h.join(client="extra", require_known_member_id=False)
    assert (refused.error_code, refused.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")


# --- SyncGroup ------------------------------------------------------------------------------

def test_sync_group_hands_the_leaders_assignment_to_every_member():
    h = Harness(auto_append=False)
    handles = [h.new_member(f"c{i}") for i in range(3)]
    h.advance(2 * DELAY)                                  # the delay is extended once: others joined
    ids = [h.result(x).member_id for x in handles]
    leader, f1, f2 = ids
    s1 = h.sync(f1, 1)
    assert isinstance(s1, Pending) and h.state() is GroupState.COMPLETING_REBALANCE
    s0 = h.sync(leader, 1, {leader: assignment("t", 0), f1: assignment("t", 1)})   # f2 forgotten
    assert isinstance(s0, Pending)
    [append] = h.held                                    # the assignment goes to the log first
    assert not h.done and h.state() is GroupState.COMPLETING_REBALANCE
    assert append.partition == h.c.partition_for("g")
    h.release()
    assert h.state() is GroupState.STABLE
    assert h.result(s0).assignment == assignment("t", 0)
    r1 = h.result(s1)
    assert (r1.error_code, r1.assignment, r1.protocol_type, r1.protocol_name) == (
        E.NONE, assignment("t", 1), "consumer", "range")
    late = h.sync(f2, 1)                                 # Stable: answered at once
    assert (late.error_code, late.assignment) == (E.NONE, b"")
    value = CO.GroupMetadataValue.parse(append.records[0][1])
    assert value.version == 3
    assert {m.member_id: m.assignment for m in value.data.members} == {
        leader: assignment("t", 0), f1: assignment("t", 1), f2: b""}


def test_sync_group_errors():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    assert h.sync(a, gen + 1).error_code == E.ILLEGAL_GENERATION
    assert h.sync("stranger", gen).error_code == E.UNKNOWN_MEMBER_ID
    assert h.sync(b, gen, protocol_name="roundrobin").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(b, gen, protocol_type="connect").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(b, gen, group="nope").error_code == E.UNKNOWN_MEMBER_ID
    h.join(a)                                            # leader rejoins: rebalance
    assert h.sync(b, gen).error_code == E.REBALANCE_IN_PROGRESS


def test_failed_assignment_append_restarts_the_rebalance():
    h = Harness(auto_append=False)
    a, b = h.new_member("a"), h.new_member("b")
    h.advance(2 * DELAY)                                  # the delay is extended once: others joined
    a_id, b_id = h.result(a).member_id, h.result(b).member_id
    sb = h.sync(b_id, 1)
    sa = h.sync(a_id, 1, {a_id: b"x", b_id: b"y"})
    h.release(E.NOT_LEADER_OR_FOLLOWER)
    assert h.result(sa).error_code == h.result(sb).error_code == E.NOT_COORDINATOR
    assert h.state() is GroupState.PREPARING_REBALANCE


def test_follower_that_never_syncs_is_removed_after_the_rebalance_timeout():
    h = Harness()
    a, b = h.new_member("a", session=3 * REBALANCE), h.new_member("b", session=3 * REBALANCE)
    h.advance(2 * DELAY)                                  # the delay is extended once: others joined
    a_id, b_id = h.result(a).member_id, h.result(b).member_id
    assert h.sync(a_id, 1, {a_id: b"x"}).error_code == E.NONE
    h.advance(REBALANCE - 1)
    assert h.state() is GroupState.STABLE
    assert h.heartbeat(a_id, 1) == E.NONE
    h.advance(1)
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert [m for m in h.c.group("g").members] == [a_id]
    assert h.heartbeat(b_id, 1) == E.UNKNOWN_MEMBER_ID


# --- Heartbeat and sessions -------------------------------------------------------------

def test_member_that_stops_heartbeating_is_expired_and_the_group_rebalances():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    for _ in range(4):                                   # b keeps its session, a goes quiet
        h.advance(SESSION // 4)
        if h.now < SESSION:
            assert h.heartbeat(b, gen) == E.NONE
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert list(h.c.group("g").members) == [b]
    assert h.heartbeat(b, gen) == E.REBALANCE_IN_PROGRESS
    assert h.heartbeat(a, gen) == E.UNKNOWN_MEMBER_ID
    rejoined = h.join(b)                                 # the only member left rejoined: done at once
    assert (rejoined.error_code, rejoined.generation_id, rejoined.leader) == (E.NONE, gen + 1, b)
    assert [m.member_id for m in rejoined.members] == [b]


def test_requests_with_the_old_generation_are_illegal_after_a_rebalance():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    ja = h.join(a)                                       # the leader asks for a rebalance
    jb = h.join(b)                                       # the last to rejoin: answered at once
    assert h.result(ja).generation_id == jb.generation_id == gen + 1
    assert h.heartbeat(b, gen) == E.ILLEGAL_GENERATION
    assert h.sync(b, gen).error_code == E.ILLEGAL_GENERATION
    late = h.commit({("t", 0): 5}, generation=gen, member_id=b)
    assert commit_errors(late) == {("t", 0): E.ILLEGAL_GENERATION}
    assert h.heartbeat(b, gen + 1) == E.NONE             # CompletingRebalance: heartbeats are fine (Kafka 3.x)


def test_rejoin_with_unchanged_metadata_in_stable_returns_the_current_generation():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    again = h.join(b)
    assert (again.error_code, again.generation_id, again.leader, again.members) == (E.NONE, gen, a, ())
    assert h.state() is GroupState.STABLE
    changed = h.join(b, protos=protocols("range", topics=("other",)))
    assert isinstance(changed, Pending) and h.state() is GroupState.PREPARING_REBALANCE


def test_new_member_parked_too_long_is_dropped():
    h = Harness(new_member_join_timeout_ms=5_000)
    (a,), gen = h.stable_group(1)
    newcomer = h.new_member("late")                       # a never rejoins but keeps heartbeating
    for _ in range(2):
        h.advance(SESSION // 2)
        assert h.heartbeat(a, gen) == E.REBALANCE_IN_PROGRESS
    h.advance(REBALANCE)                                  # rebalance timeout: a is dropped, late leads
    joined = h.result(newcomer)
    assert (joined.error_code, joined.generation_id, joined.leader) == (E.NONE, gen + 1, joined.member_id)


# --- static membership --------------------------------------------------------------------

def test_static_member_restart_keeps_its_assignment_without_rebalance():
    h = Harness()
    (i0_old, i1), gen = h.stable_group(2, statics=True)
    assert (i0_old, i1) == ("i0-u1", "i1-u2")
    restarted = h.join(instance="i0", client="c0")        # the leader restarts: unknown member id
    assert restarted.error_code == E.NONE
    assert restarted.member_id == "i0-u3" and restarted.generation_id == gen
    assert restarted.leader == i0_old                     # the old id: it must not re-assign
    assert restarted.members == () and not restarted.skip_assignment
    assert h.state() is GroupState.STABLE
    assert h.c.group("g").leader_id == "i0-u3"
    assert h.sync("i0-u3", gen, group_instance_id="i0").assignment == assignment("t", 0)
    assert h.heartbeat(i0_old, gen, instance="i0") == E.FENCED_INSTANCE_ID
    assert h.heartbeat(i1, gen, instance="i1") == E.NONE
    # the group was re-written with the new member id
    value = CO.GroupMetadataValue.parse(h.log[h.c.partition_for("g")][-1][1]).data
    assert [(m.member_id, m.group_instance_id) for m in value.members] == [("i1-u2", "i1"), ("i0-u3", "i0")]


def test_static_leader_restart_with_skip_assignment():
    h = Harness()
    (i0, i1), gen = h.stable_group(2, statics=True)
    back = h.join(instance="i0", client="c0", support_skipping_assignment=True)   # JoinGroup v9
    assert (back.leader, back.member_id, back.skip_assignment) == ("i0-u3", "i0-u3", True)
    assert [m.member_id for m in back.members] == ["i1-u2", "i0-u3"]


def test_static_member_with_changed_protocols_triggers_rebalance_and_fencing():
    h = Harness()
    (i0, i1), gen = h.stable_group(2, statics=True)
    assert h.join("i1-wrong", instance="i1").error_code == E.FENCED_INSTANCE_ID
    assert h.join("whoever", instance="i9").error_code == E.UNKNOWN_MEMBER_ID
    moved = h.join(instance="i1", client="c1", protos=protocols("roundrobin"))
    assert moved.error_code == E.INCONSISTENT_GROUP_PROTOCOL            # no protocol in common with i0
    changed = h.join(instance="i1", client="c1", protos=protocols("range", topics=("t", "u")))
    assert changed.error_code == E.NONE and h.state() is GroupState.STABLE  # same protocol selected


def test_static_member_rejoining_during_completing_rebalance_forces_a_new_one():
    h = Harness()
    a = h.join(instance="i0", client="c0")
    b = h.join(instance="i1", client="c1")
    h.advance(2 * DELAY)                                  # the delay is extended once: others joined
    h.result(a), h.result(b)
    assert h.state() is GroupState.COMPLETING_REBALANCE
    again = h.join(instance="i1", client="c1")
    assert isinstance(again, Pending) and h.state() is GroupState.PREPARING_REBALANCE


def test_static_members_stay_through_a_rebalance_they_miss():
    h = Harness()
    (i0, i1), gen = h.stable_group(2, statics=True, session=3 * REBALANCE)
    j = h.join(i0, instance="i0", session=3 * REBALANCE)  # leader rejoins, i1 does not
    h.advance(REBALANCE)
    assert h.result(j).generation_id == gen + 1
    assert set(h.c.group("g").members) == {i0, i1}       # a dynamic member would have been dropped


# --- LeaveGroup -----------------------------------------------------------------------------

def test_leave_group_triggers_a_rebalance():
    h = Harness()
    (a, b, c), gen = h.stable_group(3)
    left = h.send(LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id=c),)))   # v0-2 shape
    assert left.error_code == E.NONE and [m.error_code for m in left.members] == [E.NONE]
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(a, gen) == E.REBALANCE_IN_PROGRESS
    ja = h.join(a)
    assert isinstance(ja, Pending)                        # b has not rejoined yet
    jb = h.join(b)
    assert h.result(ja).generation_id == jb.generation_id == gen + 1


def test_batch_leave_by_member_id_and_instance_id():
    h = Harness()
    (i0, i1), gen = h.stable_group(2, statics=True)
    pending_id = h.join(client="newbie").member_id
    left = h.send(LeaveGroupRequest(group_id="g", members=(
        MemberIdentity(group_instance_id="i1"),                        # admin removal by instance id
        MemberIdentity(member_id=pending_id),                          # a pending member
        MemberIdentity(member_id="ghost"),
        MemberIdentity(member_id="i0-wrong", group_instance_id="i0"),
    )))
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in left.members] == [
        ("", "i1", E.NONE), (pending_id, None, E.NONE), ("ghost", None, E.UNKNOWN_MEMBER_ID),
        ("i0-wrong", "i0", E.FENCED_INSTANCE_ID)]
    assert list(h.c.group("g").members) == [i0] and not h.c.group("g").pending_members
    unknown = h.send(LeaveGroupRequest(group_id="nope", members=(MemberIdentity(member_id="x"),)))
    assert (unknown.error_code, unknown.members[0].error_code) == (E.NONE, E.UNKNOWN_MEMBER_ID)


def test_everyone_leaving_makes_the_group_empty_and_writes_it():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    h.send(LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id=a), MemberIdentity(member_id=b))))
    assert h.state() is GroupState.EMPTY
    group = h.c.group("g")
    assert (group.generation_id, group.protocol_name, group.leader_id) == (gen + 1, None, None)
    last = CO.GroupMetadataValue.parse(h.log[h.c.partition_for("g")][-1][1])
    assert (last.data.generation, last.data.protocol, last.data.leader, list(last.data.members)) == (
        gen + 1, None, None, [])
    assert last.data.current_state_timestamp == h.now


# --- OffsetCommit / OffsetFetch ---------------------------------------------------------------

def test_member_commits_check_generation_and_member():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    ok = h.commit({("t", 0): 10, ("t", 1): 20}, generation=gen, member_id=a, metadata="m")
    assert commit_errors(ok) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    assert commit_errors(h.commit({("t", 0): 11}, generation=gen - 1, member_id=a)) == {("t", 0): E.ILLEGAL_GENERATION}
    assert commit_errors(h.commit({("t", 0): 11}, generation=gen, member_id="x")) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert commit_errors(h.commit({("t", 0): 11})) == {("t", 0): E.UNKNOWN_MEMBER_ID}   # simple commit, group in use
    ja, _ = h.join(a), h.join(b)
    h.result(ja)                                            # CompletingRebalance now
    assert commit_errors(h.commit({("t", 0): 11}, generation=gen + 1, member_id=a)) == {
        ("t", 0): E.REBALANCE_IN_PROGRESS}
    assert fetched(h.fetch()) == {("t", 0): (10, -1, "m"), ("t", 1): (20, -1, "m")}


def test_commits_of_the_previous_generation_pass_while_preparing_rebalance():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    h.join(a)
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert commit_errors(h.commit({("t", 0): 3}, generation=gen, member_id=b)) == {("t", 0): E.NONE}


def test_simple_commits():
    h = Harness()
    assert commit_errors(h.commit({("t", 0): 5}, group="nope", generation=3)) == {("t", 0): E.ILLEGAL_GENERATION}
    assert h.c.group("nope") is None
    r = h.commit({("t", 0): 5, ("u", 2): 7}, group="solo", metadata="meta")
    assert commit_errors(r) == {("t", 0): E.NONE, ("u", 2): E.NONE}
    group = h.c.group("solo")
    assert (group.state, group.protocol_type, group.generation_id) == (GroupState.EMPTY, None, 0)
    assert fetched(h.fetch("solo")) == {("t", 0): (5, -1, "meta"), ("u", 2): (7, -1, "meta")}
    # the empty group id is allowed for offsets (old clients)
    assert commit_errors(h.commit({("t", 0): 1}, group="")) == {("t", 0): E.NONE}


def test_commit_is_answered_and_visible_only_once_appended():
    h = Harness(auto_append=False)
    r = h.commit({("t", 0): 5}, group="solo")
    assert isinstance(r, Pending)
    assert h.fetch("solo").topics == ()
    assert fetched(h.fetch("solo", {"t": (0,)})) == {("t", 0): (-1, -1, "")}
    [append] = h.held
    key, value = append.records[0]
    assert parse_key(key).topic == "t" and parse_offset_value(value).committed_offset == 5
    h.release()
    assert commit_errors(h.result(r)) == {("t", 0): E.NONE}
    assert fetched(h.fetch("solo")) == {("t", 0): (5, -1, "")}
    r2 = h.commit({("t", 0): 6}, group="solo")
    h.release(E.NOT_LEADER_OR_FOLLOWER)
    assert commit_errors(h.result(r2)) == {("t", 0): E.NOT_COORDINATOR}
    assert fetched(h.fetch("solo")) == {("t", 0): (5, -1, "")}


def test_commit_metadata_size_limit_and_leader_epoch():
    h = Harness(offset_metadata_max_bytes=4)
    r = h.send(OffsetCommitRequest(group_id="solo", topics=(OffsetCommitRequestTopic(name="t", partitions=(
        OffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata="abcd",
                                     committed_leader_epoch=7),
        OffsetCommitRequestPartition(partition_index=1, committed_offset=1, committed_metadata="abcde"),
        OffsetCommitRequestPartition(partition_index=2, committed_offset=1, committed_metadata=None),
    )),)))
    assert commit_errors(r) == {("t", 0): E.NONE, ("t", 1): E.OFFSET_METADATA_TOO_LARGE, ("t", 2): E.NONE}
    assert fetched(h.fetch("solo")) == {("t", 0): (1, 7, "abcd"), ("t", 2): (1, -1, "")}


def test_offset_fetch_all_or_some():
    h = Harness()
    h.commit({("b", 1): 11, ("a", 0): 1, ("b", 0): 10}, group="solo", metadata="x")
    everything = h.fetch("solo")
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in everything.topics] == [
        ("a", [0]), ("b", [0, 1])]
    some = h.fetch("solo", {"b": (1, 5), "zzz": (0,)})
    assert [(t.name, [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in t.partitions])
            for t in some.topics] == [("b", [(1, 11, "x", E.NONE), (5, -1, "", E.NONE)]),
                                      ("zzz", [(0, -1, "", E.NONE)])]
    assert h.fetch("unknown").topics == ()
    assert fetched(h.fetch("unknown", {"t": (0,)})) == {("t", 0): (-1, -1, "")}


# --- ListGroups / DescribeGroups / DeleteGroups ---------------------------------------------

def test_list_groups_with_states_filter():
    h = Harness()
    h.stable_group(2, group="busy")
    h.commit({("t", 0): 1}, group="solo")
    everything = h.send(ListGroupsRequest())
    assert everything.error_code == E.NONE
    assert {(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in everything.groups} == {
        ("busy", "consumer", "Stable", "classic"), ("solo", "", "Empty", "classic")}
    assert [g.group_id for g in h.send(ListGroupsRequest(states_filter=("stable",))).groups] == ["busy"]
    assert [g.group_id for g in h.send(ListGroupsRequest(states_filter=("Empty", "Dead"))).groups] == ["solo"]
    assert h.send(ListGroupsRequest(types_filter=("consumer",))).groups == ()


def test_describe_groups_fields():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    [d] = h.send(DescribeGroupsRequest(groups=("g",))).groups
    assert (d.error_code, d.group_id, d.group_state, d.protocol_type, d.protocol_data) == (
        E.NONE, "g", "Stable", "consumer", "range")
    assert [(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment)
            for m in d.members] == [
        (a, None, "c0", "/127.0.0.1", subscription("t"), assignment("t", 0)),
        (b, None, "c1", "/127.0.0.1", subscription("t"), assignment("t", 1))]
    h.join(a)
    [d] = h.send(DescribeGroupsRequest(groups=("g",))).groups
    assert (d.group_state, d.protocol_data) == ("PreparingRebalance", "")
    assert [(m.member_metadata, m.member_assignment) for m in d.members] == [(b"", b""), (b"", b"")]
    unknown_v5, = h.send(DescribeGroupsRequest(groups=("nope",), api_version=5)).groups
    assert (unknown_v5.error_code, unknown_v5.group_state, unknown_v5.error_message) == (E.NONE, "Dead", None)
    unknown_v6, = h.send(DescribeGroupsRequest(groups=("nope",), api_version=6)).groups
    assert (unknown_v6.error_code, unknown_v6.group_state, unknown_v6.error_message) == (
        E.GROUP_ID_NOT_FOUND, "Dead", "Group nope not found.")


def test_delete_groups():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    h.commit({("t", 0): 9}, generation=gen, member_id=a)
    h.commit({("t", 0): 1, ("t", 1): 2}, group="solo")
    r = h.send(DeleteGroupsRequest(groups_names=("g", "missing", "solo")))
    assert [(x.group_id, x.error_code) for x in r.results] == [
        ("g", E.NON_EMPTY_GROUP), ("missing", E.GROUP_ID_NOT_FOUND), ("solo", E.NONE)]
    # the simple group never wrote GroupMetadata (generation 0): offset tombstones only
    solo_log = h.log[h.c.partition_for("solo")][-2:]
    assert [(parse_key(k), v) for k, v in solo_log] == [
        (parse_key(solo_log[0][0]), None), (parse_key(solo_log[1][0]), None)]
    assert {(parse_key(k).topic, parse_key(k).partition) for k, _ in solo_log} == {("t", 0), ("t", 1)}
    assert h.c.group("solo") is None and h.fetch("solo").topics == ()

    h.send(LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id=a), MemberIdentity(member_id=b))))
    assert h.state() is GroupState.EMPTY
    r = h.send(DeleteGroupsRequest(groups_names=("g",)))
    assert [(x.group_id, x.error_code) for x in r.results] == [("g", E.NONE)]
    tail = h.log[h.c.partition_for("g")][-2:]
    assert [type(parse_key(k)).__name__ for k, _ in tail] == ["OffsetKey", "GroupKey"]
    assert [v for _, v in tail] == [None, None]
    assert [x.error_code for x in h.send(DeleteGroupsRequest(groups_names=("g",))).results] == [
        E.GROUP_ID_NOT_FOUND]


def test_delete_groups_waits_for_its_tombstones():
    h = Harness(auto_append=False)
    r = h.commit({("t", 0): 1}, group="solo")
    h.release()
    h.result(r)
    d = h.send(DeleteGroupsRequest(groups_names=("solo",)))
    assert isinstance(d, Pending) and h.c.group("solo") is None
    h.release()
    assert [x.error_code for x in h.result(d).results] == [E.NONE]


# --- offset retention -----------------------------------------------------------------------

def test_offsets_of_an_empty_group_expire_after_retention_counted_from_empty():
    minute = 60_000
    h = Harness(offsets_retention_minutes=10, offsets_retention_check_interval_ms=minute)
    (a,), gen = h.stable_group(1, session=2 * minute)
    h.commit({("t", 0): 4}, generation=gen, member_id=a)
    for _ in range(15):                                     # in use for 15 minutes: offsets stay
        h.advance(minute)
        assert h.heartbeat(a, gen) == E.NONE
    h.send(LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id=a),)))
    became_empty = h.now
    assert h.state() is GroupState.EMPTY and h.c.group("g").current_state_timestamp == became_empty
    h.advance(5 * minute)                                   # the commit is 20 minutes old now
    assert fetched(h.fetch()) == {("t", 0): (4, -1, "")}
    h.advance(became_empty + 10 * minute - 1 - h.now)
    assert h.c.group("g") is not None
    h.advance(minute)                                       # the first check 10 minutes after Empty
    assert h.c.group("g") is None
    tail = h.log[h.c.partition_for("g")][-2:]
    assert [(type(parse_key(k)).__name__, v) for k, v in tail] == [("OffsetKey", None), ("GroupKey", None)]


def test_offsets_of_a_simple_group_expire_from_their_commit_time():
    minute = 60_000
    h = Harness(offsets_retention_minutes=10, offsets_retention_check_interval_ms=minute)
    h.commit({("t", 0): 1}, group="solo")
    h.advance(5 * minute)
    h.commit({("t", 1): 2}, group="solo")
    h.advance(5 * minute)                                   # t=10min: (t,0) is 10 minutes old
    assert fetched(h.fetch("solo")) == {("t", 1): (2, -1, "")}
    h.advance(5 * minute)
    assert h.c.group("solo") is None
    assert [v for _, v in h.log[h.c.partition_for("solo")][-1:]] == [None]


def test_explicit_retention_writes_value_v1_and_expires_at_its_time():
    h = Harness(offsets_retention_check_interval_ms=1_000)
    h.commit({("t", 0): 1}, group="solo", retention_time_ms=2_500)
    key, value = h.log[h.c.partition_for("solo")][-1]
    parsed = CO.OffsetCommitValue.parse(value)
    assert (parsed.version, parsed.data.expire_timestamp) == (1, 2_500)
    h.advance(2_000)
    assert fetched(h.fetch("solo")) == {("t", 0): (1, -1, "")}
    h.advance(1_000)
    assert h.fetch("solo").topics == ()


def test_stable_consumer_group_expires_offsets_of_topics_nobody_reads():
    minute = 60_000
    h = Harness(offsets_retention_minutes=10, offsets_retention_check_interval_ms=minute)
    (a,), gen = h.stable_group(1, session=2 * minute)
    h.commit({("t", 0): 1, ("gone", 0): 2}, generation=gen, member_id=a)
    for _ in range(12):
        h.advance(minute)
        assert h.heartbeat(a, gen) == E.NONE
    assert fetched(h.fetch()) == {("t", 0): (1, -1, "")}


# --- loading, ownership -------------------------------------------------------------------

def test_requests_while_a_partition_loads():
    h = Harness()
    (a, b), gen = h.stable_group(2)
    p = h.c.partition_for("g")
    h.c.begin_load(p, h.now)
    assert h.join(client="x").error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.heartbeat(a, gen) == E.NONE                   # answered blindly
    assert h.sync(a, gen).error_code == E.REBALANCE_IN_PROGRESS
    assert h.fetch().error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.send(ListGroupsRequest()).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert commit_errors(h.commit({("t", 0): 1})) == {("t", 0): E.COORDINATOR_LOAD_IN_PROGRESS}
    h.c.load_partition(p, h.log[p], h.now)
    assert h.state() is GroupState.STABLE
    assert h.heartbeat(a, gen) == E.NONE


def test_groups_of_partitions_not_owned_are_not_coordinated_here():
    h = Harness()
    ja = h.new_member("a")
    p = h.c.partition_for("g")
    h.c.unload_partition(p, h.now)
    h.pump()
    assert h.result(ja).error_code == E.NOT_COORDINATOR     # parked join released
    assert h.join(client="x").error_code == E.NOT_COORDINATOR
    other = next(g for g in (f"g{i}" for i in range(100)) if h.c.partition_for(g) != p)
    assert h.join(client="x", group=other).error_code == E.MEMBER_ID_REQUIRED
    only = GroupCoordinator(owned_partitions=[p])
    assert only.handle(DescribeGroupsRequest(groups=(other,)), 0).groups[0].error_code == E.NOT_COORDINATOR
