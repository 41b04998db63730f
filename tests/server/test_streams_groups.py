"""KIP-1071 streams groups on the group coordinator (kproto.server.coordinator.streams_groups):
topology configuration and its statuses, the sticky task assignor, the heartbeat's epochs and
reconciliation, leave and session timeout, the records and their replay, one type per group id."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kproto.errors import ErrorCode, InvalidConfigError
from kproto.schemas import consumer_offsets as CO
from kproto.server.config import BrokerConfig
from kproto.server.coordinator import CoordinatorConfig, GroupCoordinator, JoinGroupRequest, JoinGroupRequestProtocol
from kproto.server.coordinator.consumer_state import MemberState
from kproto.server.coordinator.streams_groups import (
    Status, StreamsGroupDescribeRequest, StreamsGroupHeartbeatRequest, Subtopology, TopicInfo, Topology,
    assign_tasks, configure_topology,
)
from kproto.server.coordinator.events import ConsumerGroupHeartbeatRequest, ListGroupsRequest
from kproto.server.share.group_config import check_group_configs
from tests.server.helpers import INTERNAL, WORD_COUNT, StreamsDriver, T

def tasks(r: dict, kind: str = "active") -> dict[str, list[int]] | None:
    """The answer's tasks of a kind (None: unchanged since the last answer)."""
    rows = r[f"{kind}_tasks"]
    return None if rows is None else {t["subtopology_id"]: t["partitions"] for t in rows}


# --- the topology ---------------------------------------------------------------------------

def test_missing_source_topics_are_a_status():
    c = configure_topology(WORD_COUNT, {})
    assert c.statuses == ((Status.MISSING_SOURCE_TOPICS, "Source topics words are missing."),)
    assert not c.ready and c.creatable == {}


def test_internal_topics_take_their_partition_counts_from_the_topology():
    c = configure_topology(WORD_COUNT, {"words": (T, 6)})
    assert c.tasks == {"0": 6, "1": 6}
    assert c.creatable == {"app-cl": TopicInfo("app-cl", 6, 0, (("cleanup.policy", "compact"),)),
                           "app-rep": TopicInfo("app-rep", 6)}
    assert c.statuses == ((Status.MISSING_INTERNAL_TOPICS, "Internal topics are missing: app-rep, app-cl"),)


def test_an_internal_topic_with_other_partitions_is_incorrectly_partitioned():
    c = configure_topology(WORD_COUNT, {"words": (T, 4), "app-rep": (T, 4), "app-cl": (T, 2)})
    assert c.statuses == ((Status.INCORRECTLY_PARTITIONED_TOPICS,
                           "Existing topic app-cl has different number of partitions: expected 4, found 2"),)


def test_copartitioned_source_topics_must_agree():
    join = Topology(1, (Subtopology("0", source_topics=("a", "b"), copartition_groups=(((0, 1), (), ()),)),))
    c = configure_topology(join, {"a": (T, 2), "b": (T, 3)})
    assert c.statuses == ((Status.INCORRECTLY_PARTITIONED_TOPICS,
                           "Following topics do not have the same number of partitions: [a, b]"),)
    assert configure_topology(join, {"a": (T, 3), "b": (T, 3)}).tasks == {"0": 3}


# --- the assignor -----------------------------------------------------------------------------

def test_sticky_assignor_balances_and_keeps_tasks():
    first = assign_tasks({"a": ("p1", {}), "b": ("p2", {})}, {"0": 3, "1": 3}, 0)
    assert sorted(sum(len(ps) for ps in t.values()) for t in first.values()) == [3, 3]
    # a third member takes a share; a and b keep all they can of theirs
    second = assign_tasks({"a": ("p1", first["a"]), "b": ("p2", first["b"]), "c": ("p3", {})}, {"0": 3, "1": 3}, 0)
    assert [sum(len(ps) for ps in second[m].values()) for m in "abc"] == [2, 2, 2]
    for m in "ab":
        assert all(ps <= first[m].get(k, frozenset()) for k, ps in second[m].items())


def test_standbys_go_to_other_processes():
    out = assign_tasks({"a": ("p1", {}), "b": ("p2", {})}, {"0": 2}, 1, {"0"})
    for m, other in (("a", "b"), ("b", "a")):
        assert out[m][("standby", "0")] == out[other][("active", "0")]
    # one process: nowhere to put a standby
    solo = assign_tasks({"a": ("p1", {}), "b": ("p1", {})}, {"0": 2}, 1, {"0"})
    assert not any(k[0] == "standby" for t in solo.values() for k in t)
    # a stateless subtopology (no state changelog topic) has no standbys (StickyTaskAssignor)
    stateless = assign_tasks({"a": ("p1", {}), "b": ("p2", {})}, {"0": 2, "1": 2}, 1, {"1"})
    assert {k for t in stateless.values() for k in t if k[0] == "standby"} == {("standby", "1")}


# --- the heartbeat ----------------------------------------------------------------------------

def test_a_member_joins_before_the_internal_topics_exist():
    d = StreamsDriver(internal=False)
    r = d.hb("m1", 0)
    assert (r["error_code"], r["member_epoch"], r["status"]) == (ErrorCode.NONE, 1, [
        {"status_code": 3, "status_detail": "Internal topics are missing: app-rep, app-cl"}])
    assert sorted(r["creatable"]) == ["app-cl", "app-rep"]
    assert tasks(r) == {}
    assert d.c.streams_group("app").state.value == "NotReady"
    d.c.update_topics({"words": (T, 4), **INTERNAL})
    r = d.owning("m1", 1, r)
    assert (r["member_epoch"], r["status"], r["creatable"]) == (2, [], {})
    assert tasks(r) == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    assert d.c.streams_group("app").state.value == "Stable"


def test_a_new_group_waits_the_initial_rebalance_delay():
    d = StreamsDriver(streams_group_initial_rebalance_delay_ms=3000)
    r1 = d.hb("m1", 0)
    delayed = [{"status_code": 5, "status_detail": "Assignment delayed due to the configured initial rebalance delay."}]
    assert (r1["member_epoch"], r1["status"], tasks(r1)) == (1, delayed, {})
    r2 = d.hb("m2", 0)
    assert (r2["member_epoch"], r2["status"], tasks(r2)) == (2, delayed, {})
    d.advance(2999)
    assert d.owning("m1", 1)["status"] == delayed
    d.advance(1)                                # the delay ran out: epoch 3 assigns both
    r1 = d.owning("m1", 1)
    r2 = d.owning("m2", 2)
    assert (r1["member_epoch"], r1["status"], r2["member_epoch"]) == (3, [], 3)
    assert sorted(sum(len(ps) for ps in tasks(r).values()) for r in (r1, r2)) == [4, 4]


def test_a_second_member_waits_for_revoked_tasks():
    d = StreamsDriver()
    r1 = d.hb("m1", 0)
    r1 = d.owning("m1", r1["member_epoch"], r1)
    r2 = d.hb("m2", 0)
    assert (r2["member_epoch"], tasks(r2)) == (2, {})           # all m1's still: unreleased
    r1 = d.owning("m1", 1, r1)
    assert r1["member_epoch"] == 1 and sum(map(len, tasks(r1).values())) == 4     # m1 must revoke 4
    assert d.c.streams_group("app").members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    r1 = d.owning("m1", 1, r1)                                  # it did
    assert r1["member_epoch"] == 2
    r2 = d.owning("m2", 2, r2)
    mine, theirs = tasks(d.assigned["m1"]), tasks(r2)
    assert sum(map(len, theirs.values())) == 4
    assert all(not set(mine.get(s, [])) & set(ps) for s, ps in theirs.items())


def test_a_stale_epoch_is_fenced_and_an_unknown_member_refused():
    d = StreamsDriver()
    r = d.hb("m1", 0)
    assert d.hb("m1", r["member_epoch"] + 1)["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    assert d.hb("nobody", 3)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("kw, message", [
    ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided in first request."),
    ({"topology": Topology(1, (Subtopology("0", source_topics=("words",), copartition_groups=(((0, 1), (), ()),)),))},
     "Subtopology 0 has a copartition group with an index out of range."),
    ({"topology": Topology(1, (Subtopology("0", source_topics=("words",)), Subtopology("0")))},
     "Subtopology ids must be unique."),
    ({"topology": None}, "Topology must be non-null when joining the streams group."),
    ({"process_id": None}, "ProcessId can't be null."),
])
def test_a_join_without_what_it_needs_is_invalid(kw, message):
    r = StreamsDriver().hb("m1", 0, **kw)
    assert (r["error_code"], r["error_message"]) == (ErrorCode.INVALID_REQUEST, message)


def test_a_member_leaving_gives_its_tasks_back():
    d = StreamsDriver()
    r1 = d.owning("m1", 1, d.hb("m1", 0))
    r2 = d.hb("m2", 0)
    r1 = d.owning("m1", 1, d.owning("m1", 1, r1))
    r2 = d.owning("m2", 2, r2)
    left = d.hb("m2", -1)
    assert (left["error_code"], left["member_epoch"]) == (ErrorCode.NONE, -1)
    group = d.c.streams_group("app")
    assert list(group.members) == ["m1"] and group.group_epoch == 3
    r1 = d.owning("m1", 2, r1)
    assert (r1["member_epoch"], tasks(r1)) == (3, {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]})


def test_a_silent_member_is_fenced_after_the_session_timeout():
    d = StreamsDriver()
    d.hb("m1", 0)
    d.advance(CoordinatorConfig().streams_group_session_timeout_ms - 1)
    assert "m1" in d.c.streams_group("app").members
    d.advance(1)
    assert d.c.streams_group("app").members == {}
    assert d.c.streams_group("app").state.value == "Empty"


def test_a_member_that_does_not_revoke_is_fenced_after_its_rebalance_timeout():
    """scheduleStreamsGroupRebalanceTimeout: the timer starts when the member enters
    UNREVOKED_TASKS; heartbeats that still report the tasks keep the session alive but do not
    move the timer; at the member's rebalance timeout (30 s here) it is fenced."""
    d = StreamsDriver()
    r1 = d.owning("m1", 1, d.hb("m1", 0))
    d.hb("m2", 0)
    r1 = d.owning("m1", 1, r1)                  # told to revoke 4 tasks: the timer starts now
    group = d.c.streams_group("app")
    assert group.members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    d.advance(20_000)
    stuck = d.hb("m1", 1, active_tasks=(("0", (0, 1, 2, 3)), ("1", (0, 1, 2, 3))), standby_tasks=(), warmup_tasks=())
    assert (stuck["error_code"], stuck["member_epoch"]) == (ErrorCode.NONE, 1)
    d.advance(9_999)
    assert "m1" in group.members
    d.advance(1)
    assert list(group.members) == ["m2"] and group.group_epoch == 3
    gone = d.hb("m1", 1)
    assert (gone["error_code"], gone["error_message"]) == (ErrorCode.UNKNOWN_MEMBER_ID,
                                                           "Member m1 is not a member of group app.")
    r2 = d.owning("m2", 2)
    assert (r2["member_epoch"], tasks(r2)) == (3, {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]})


def test_a_loaded_member_with_tasks_to_revoke_gets_its_rebalance_timeout_again():
    """onLoaded: a replayed member in UNREVOKED_TASKS has its rebalance timeout armed anew."""
    d = StreamsDriver()
    r1 = d.owning("m1", 1, d.hb("m1", 0))
    d.hb("m2", 0)
    d.owning("m1", 1, r1)
    loaded = StreamsDriver()
    loaded.c = GroupCoordinator(CoordinatorConfig(offsets_topic_num_partitions=1))
    loaded.c.update_topics({"words": (T, 4), **INTERNAL})
    assert loaded.c.load_partition(0, d.log[0], 0) == ("app",)
    assert loaded.c.streams_group("app").members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    loaded.advance(29_999)
    assert "m1" in loaded.c.streams_group("app").members
    loaded.advance(1)
    assert sorted(loaded.c.streams_group("app").members) == ["m2"]


def test_a_member_that_revokes_in_time_is_not_fenced():
    d = StreamsDriver()
    r1 = d.owning("m1", 1, d.hb("m1", 0))
    d.hb("m2", 0)
    r1 = d.owning("m1", 1, r1)
    d.advance(29_999)
    r1 = d.owning("m1", 1, r1)                  # revoked: epoch 2, the timer cancelled
    assert r1["member_epoch"] == 2
    d.advance(10_000)
    assert sorted(d.c.streams_group("app").members) == ["m1", "m2"]

def test_a_static_member_rejoins_with_its_tasks():
    """getOrMaybeCreateStaticStreamsGroupMember: after a leave with epoch -2 the instance's new
    member id takes its place at once, with its tasks and target, and no rebalance."""
    d = StreamsDriver()
    r1 = d.owning("m1", 1, d.hb("m1", 0, instance_id="i1"))
    r2 = d.hb("m2", 0)
    r1 = d.owning("m1", 1, d.owning("m1", 1, r1))
    r2 = d.owning("m2", 2, r2)
    mine = tasks(d.assigned["m1"])
    left = d.hb("m1", -2, instance_id="i1")
    assert (left["error_code"], left["member_epoch"], left["status"]) == (ErrorCode.NONE, -2, [])
    group = d.c.streams_group("app")
    assert (group.members["m1"].member_epoch, group.group_epoch) == (-2, 2)
    back = d.hb("m1b", 0, instance_id="i1", process_id="process-m1", client_id="client-m1")
    assert (back["error_code"], back["member_epoch"], tasks(back)) == (ErrorCode.NONE, 2, mine)
    assert sorted(group.members) == ["m1b", "m2"] and group.static_members == {"i1": "m1b"}
    assert group.group_epoch == 2
    types = [(CO.RecordKey.parse(k).version, v is None) for k, v in d.log[0][-6:]]
    assert types == [(22, True), (21, True), (19, True), (19, False), (21, False), (22, False)]


def test_a_held_instance_id_is_unreleased_and_another_member_fenced():
    d = StreamsDriver()
    d.hb("m1", 0, instance_id="i1")
    r = d.hb("m1b", 0, instance_id="i1")
    assert (r["error_code"], r["error_message"]) == (ErrorCode.UNRELEASED_INSTANCE_ID, (
        "Static member m1b with instance id i1 cannot join the group because the instance id is owned by m1 member."))
    r = d.hb("m1b", 1, instance_id="i1")
    assert (r["error_code"], r["error_message"]) == (ErrorCode.FENCED_INSTANCE_ID,
                                                     "Static member m1b with instance id i1 was fenced by member m1.")
    r = d.hb("m1", 1, instance_id="i2")
    assert (r["error_code"], r["error_message"]) == (ErrorCode.UNKNOWN_MEMBER_ID, "Instance id i2 is unknown.")
    r = d.hb("m1b", -2, instance_id="i1")
    assert (r["error_code"], r["error_message"]) == (ErrorCode.FENCED_INSTANCE_ID,
                                                     "Static member m1b with instance id i1 was fenced by member m1.")
    assert list(d.c.streams_group("app").members) == ["m1"]


def test_a_static_member_leaving_with_minus_one_is_removed():
    d = StreamsDriver()
    d.hb("m1", 0, instance_id="i1")
    assert d.hb("m1", -1, instance_id="i1")["member_epoch"] == -1
    group = d.c.streams_group("app")
    assert (group.members, group.static_members) == ({}, {})
    assert d.hb("m1b", 0, instance_id="i1")["error_code"] == ErrorCode.NONE

def test_group_configs_override_the_broker_streams_settings():
    """GroupMetadataManager.streamsGroupSessionTimeoutMs / streamsGroupHeartbeatIntervalMs:
    a group's ``streams.*`` overrides, read at each use."""
    d = StreamsDriver()
    overrides: dict[str, dict[str, str]] = {"app": {"streams.session.timeout.ms": "50000",
                                                    "streams.heartbeat.interval.ms": "7000"}}
    d.c.use_group_configs(lambda g: overrides.get(g, {}))
    r = d.hb("m1", 0)
    assert r["heartbeat_interval_ms"] == 7000
    d.advance(49_999)
    assert "m1" in d.c.streams_group("app").members
    d.advance(1)
    assert d.c.streams_group("app").members == {}
    del overrides["app"]
    assert d.hb("m2", 0)["heartbeat_interval_ms"] == 5000


def test_a_changed_standby_count_reassigns():
    """streamsGroupAssignmentConfigs: ``num.standby.replicas`` is kept in the group metadata
    record (LastAssignmentConfigs); a heartbeat seeing another value bumps the group epoch."""
    d = StreamsDriver()
    overrides: dict[str, str] = {}
    d.c.use_group_configs(lambda g: overrides)
    r1 = d.owning("m1", 1, d.hb("m1", 0))
    r2 = d.hb("m2", 0)
    r1 = d.owning("m1", 1, d.owning("m1", 1, r1))
    r2 = d.owning("m2", 2, r2)
    group = d.c.streams_group("app")
    assert (group.group_epoch, group.last_assignment_configs) == (2, {"num.standby.replicas": "0"})
    overrides["streams.num.standby.replicas"] = "1"
    r1 = d.owning("m1", 2, r1)
    assert (group.group_epoch, group.last_assignment_configs) == (3, {"num.standby.replicas": "1"})
    assert (r1["member_epoch"], tasks(r1, "standby")) == (3, tasks(r2))
    value = CO.value_schema(17).parse(next(v for k, v in reversed(d.log[0]) if CO.RecordKey.parse(k).version == 17))
    assert [(c.key, c.value) for c in value.data.last_assignment_configs] == [("num.standby.replicas", "1")]


@pytest.mark.parametrize("configs, message", [
    ({"streams.session.timeout.ms": "44999"}, "streams.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
    ({"streams.session.timeout.ms": "0"}, "Invalid value 0 for configuration streams.session.timeout.ms: "
                                          "Value must be at least 1"),
    ({"streams.heartbeat.interval.ms": "15001"},
     "streams.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
    ({"streams.num.standby.replicas": "3"}, "streams.num.standby.replicas must be less than or equal to 2"),
    ({"streams.num.standby.replicas": "-1"}, "Invalid value -1 for configuration streams.num.standby.replicas: "
                                             "Value must be at least 0"),
    ({"streams.num.standby.replicas": "x"}, "Invalid value x for configuration streams.num.standby.replicas: "
                                            "Not a number of type INT"),
    ({"streams.assignment.interval.ms": "15001"},
     "streams.assignment.interval.ms must be in the range 0 to 15000 inclusive."),
    ({"streams.task.offset.interval.ms": "1000"}, "streams.task.offset.interval.ms must be greater than or equal to 15000"),
    ({"streams.num.warmup.replicas": "21"}, "streams.num.warmup.replicas must be less than or equal to 20"),
    ({"streams.initial.rebalance.delay.ms": "-1"}, "Invalid value -1 for configuration "
                                                   "streams.initial.rebalance.delay.ms: Value must be at least 0"),
    ({"streams.acceptable.recovery.lag": "x"}, "Invalid value x for configuration streams.acceptable.recovery.lag: "
                                               "Not a number of type LONG"),
    ({"streams.assignor.offload.enable": "maybe"}, "Invalid value maybe for configuration "
                                                   "streams.assignor.offload.enable: Expected value to be either true or false"),
    ({"streams.rack.aware.assignment.tags": "zone,zone"},
     "streams.rack.aware.assignment.tags must not contain duplicate tag keys."),
    ({"streams.rack.aware.assignment.tags": "zone,,rack"},
     "Configuration 'streams.rack.aware.assignment.tags' values must not be empty."),
    ({"streams.assignor.name": "foo"},
     "streams.assignor.name 'foo' is not a registered task assignor. Registered assignors are: [sticky]."),
])
def test_streams_group_configs_are_checked_as_kafka_does(configs, message):
    with pytest.raises(InvalidConfigError) as e:
        check_group_configs(configs, BrokerConfig.from_props().values)
    assert str(e.value) == message


def test_a_streams_session_timeout_must_exceed_the_heartbeat_interval():
    values = {**BrokerConfig.from_props().values, "group.streams.min.session.timeout.ms": 1000}
    check_group_configs({"streams.session.timeout.ms": "6000"}, values)      # over the 5000 default
    with pytest.raises(InvalidConfigError) as e:
        check_group_configs({"streams.session.timeout.ms": "5000"}, values)
    assert str(e.value) == "streams.session.timeout.ms must be greater than streams.heartbeat.interval.ms"

def test_records_replay_into_the_same_group():
    d = StreamsDriver()
    d.owning("m1", 1, d.hb("m1", 0))
    d.hb("m2", 0)
    types = [CO.RecordKey.parse(k).version for k, _ in d.log[0]]
    assert set(types) == {17, 19, 20, 21, 22, 23}
    before = d.c.streams_group("app")
    c = GroupCoordinator(CoordinatorConfig(offsets_topic_num_partitions=1))
    c.update_topics({"words": (T, 4), **INTERNAL})
    assert c.load_partition(0, d.log[0], 0) == ("app",)
    after = c.streams_group("app")
    assert (after.group_epoch, after.assignment_epoch, after.topology, after.target) == (
        before.group_epoch, before.assignment_epoch, before.topology, before.target)
    assert {m: (x.member_epoch, x.state, x.assigned, x.process_id) for m, x in after.members.items()} == \
        {m: (x.member_epoch, x.state, x.assigned, x.process_id) for m, x in before.members.items()}


def test_a_group_id_is_one_type():
    d = StreamsDriver()
    d.hb("m1", 0)
    r = d.send(ConsumerGroupHeartbeatRequest(group_id="app", member_id="c1", member_epoch=0, rebalance_timeout_ms=1,
                                             subscribed_topic_names=("words",), topic_partitions=()))
    assert (r.error_code, r.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group app is not a consumer group.")
    j = d.send(JoinGroupRequest(group_id="app", session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
                                protocol_type="consumer", protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)))
    assert j.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    d.send(ConsumerGroupHeartbeatRequest(group_id="cg", member_id="c1", member_epoch=0, rebalance_timeout_ms=1,
                                         subscribed_topic_names=("words",), topic_partitions=()))
    r = d.send(StreamsGroupHeartbeatRequest(group_id="cg", member_id="m", member_epoch=0, rebalance_timeout_ms=1,
                                            topology=WORD_COUNT, process_id="p"))
    assert (r["error_code"], r["error_message"]) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group cg is not a streams group.")
    listed = d.send(ListGroupsRequest(states_filter=(), types_filter=("streams",)))
    assert [(g.group_id, g.group_type, g.protocol_type) for g in listed.groups] == [("app", "streams", "streams")]


def test_describe():
    d = StreamsDriver()
    d.owning("m1", 1, d.hb("m1", 0))
    out = d.send(StreamsGroupDescribeRequest(group_ids=("app", "none")))
    app, none = out["groups"]
    assert (app["group_state"], app["group_epoch"], app["assignment_epoch"]) == ("Stable", 1, 1)
    assert app["topology"]["subtopologies"][1]["repartition_source_topics"][0]["name"] == "app-rep"
    [m] = app["members"]
    assert (m["member_id"], m["member_epoch"], m["client_id"], m["process_id"]) == ("m1", 1, "client-m1", "process-m1")
    assert m["assignment"]["active_tasks"] == [{"subtopology_id": "0", "partitions": [0, 1, 2, 3]},
                                               {"subtopology_id": "1", "partitions": [0, 1, 2, 3]}]
    assert (none["error_code"], none["error_message"]) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group none not found.")


def test_config_bounds():
    with pytest.raises(ValueError, match="group.streams.num.standby.replicas must be less than or equal to"):
        CoordinatorConfig(streams_group_num_standby_replicas=3)
    with pytest.raises(ValueError, match="group.streams.session.timeout.ms must be greater than or equal to"):
        CoordinatorConfig(streams_group_session_timeout_ms=1000)


@settings(max_examples=200, deadline=None)
@given(members=st.dictionaries(st.sampled_from("abcdefg"), st.sampled_from(["p1", "p2", "p3"]), min_size=1),
       tasks=st.dictionaries(st.sampled_from(["0", "1", "2"]), st.integers(0, 6)),
       standbys=st.integers(0, 2), seed=st.randoms(use_true_random=False))
def test_sticky_assignor_invariants(members, tasks, standbys, seed):
    """Every task active exactly once, active counts within one of each other, standbys only on
    other processes and never twice per process; a second run from its own result is a no-op."""
    previous = {m: {} for m in members}
    for s_id, n in tasks.items():
        for p in range(n):
            m = seed.choice(sorted(members))
            previous[m][("active", s_id)] = previous[m].get(("active", s_id), frozenset()) | {p}
    spec = {m: (proc, previous[m]) for m, proc in members.items()}
    out = assign_tasks(spec, tasks, standbys)
    active = [(k[1], p) for t in out.values() for k, ps in t.items() if k[0] == "active" for p in ps]
    assert sorted(active) == sorted((s_id, p) for s_id, n in tasks.items() for p in range(n))
    loads = [sum(len(ps) for k, ps in t.items() if k[0] == "active") for t in out.values()]
    assert max(loads) - min(loads) <= 1
    owner_process = {(k[1], p): members[m] for m, t in out.items() for k, ps in t.items() if k[0] == "active"
                     for p in ps}
    seen = set()
    for m, t in out.items():
        for k, ps in t.items():
            if k[0] == "standby":
                for p in ps:
                    assert members[m] != owner_process[(k[1], p)]
                    assert (k[1], p, members[m]) not in seen
                    seen.add((k[1], p, members[m]))
    assert assign_tasks({m: (proc, out[m]) for m, proc in members.items()}, tasks, standbys) == out


def test_a_member_without_a_rack_aware_tag_hears_missing_client_tags():
    """GroupMetadataManager.streamsGroupHeartbeat: with ``streams.rack.aware.assignment.tags`` set,
    a v1+ heartbeat of a member lacking one of them carries MISSING_CLIENT_TAGS (a v0 one does
    not); the tags are in the assignment configs, so setting them reassigns."""
    d = StreamsDriver()
    overrides = {"streams.rack.aware.assignment.tags": "zone,rack"}
    d.c.use_group_configs(lambda g: overrides)
    missing = (6, "Missing required client tags for rack-aware standby assignment: [rack]. Configure them via "
                  "'client.tag.<tagKey>' in your Streams config.")
    r = d.hb("m1", 0, client_tags=(("zone", "a"),))
    assert [(s["status_code"], s["status_detail"]) for s in r["status"]] == [missing]
    assert d.hb("m1", r["member_epoch"], version=0)["status"] == []
    r = d.hb("m2", 0, client_tags=(("zone", "b"), ("rack", "r1")))
    assert r["status"] == []
    group = d.c.streams_group("app")
    assert group.last_assignment_configs == {"num.standby.replicas": "0", "rack.aware.assignment.tags": "zone,rack"}
    epoch = group.group_epoch
    del overrides["streams.rack.aware.assignment.tags"]
    d.hb("m2", group.members["m2"].member_epoch)
    assert (group.group_epoch, group.last_assignment_configs) == (epoch + 1, {"num.standby.replicas": "0"})
