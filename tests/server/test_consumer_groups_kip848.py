"""KIP-848 consumer groups (issue 25), sans I/O: the epoch and reconciliation tables,
the assignors, the group.consumer.* configs, and the coordinator driven request by
request. Real clients with ``group.protocol=consumer``: tests/e2e/test_consumer_group_clients.py.
"""

from __future__ import annotations

import uuid

import pytest

from kproto import schemas
from kproto.errors import ErrorCode
from kproto.schemas import consumer_offsets as CO
from kproto.server.coordinator import CoordinatorConfig, GroupCoordinator
from kproto.server.coordinator.assignors import range_assign, uniform
from kproto.server.coordinator.consumer_groups import ResolvedRegularExpression, image_version
from kproto.server.coordinator.consumer_state import (
    EPOCH_RULES, EpochCheck, MemberState, check_member_epoch, classify_epoch, reconcile,
)
from kproto.server.coordinator.events import (
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, JoinGroupRequest,
    JoinGroupRequestProtocol, ListGroupsRequest, OffsetCommitRequest, OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from tests.server.helpers import ConsumerGroupDriver

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


# --- the tables -----------------------------------------------------------------------------------

def test_epoch_rules_match_an_independent_grid():
    """throwIfMemberEpochIsInvalid, written out by hand: (received, member, previous, owned subset?)."""
    grid = {  # received, member epoch, previous epoch, owned ⊆ assigned -> error
        (5, 5, 4, True): ErrorCode.NONE, (5, 5, 4, False): ErrorCode.NONE,
        (4, 5, 4, True): ErrorCode.NONE, (4, 5, 4, False): ErrorCode.FENCED_MEMBER_EPOCH,
        (6, 5, 4, True): ErrorCode.FENCED_MEMBER_EPOCH, (3, 5, 4, True): ErrorCode.FENCED_MEMBER_EPOCH,
    }
    assigned = {T1: frozenset({0})}
    for (received, epoch, previous, subset), want in grid.items():
        owned = {T1: frozenset({0})} if subset else {T1: frozenset({0, 1})}
        assert check_member_epoch(received, epoch, previous, owned, assigned)[0] is want, (received, subset)
    assert set(EPOCH_RULES) == set(EpochCheck)
    assert classify_epoch(4, 5, 4, None, assigned) is EpochCheck.PREVIOUS_OTHERWISE


def free(topic, p):
    return -1


def test_reconcile_revokes_before_it_assigns():
    # a Stable member at epoch 1 owning 0,1,2 gets target {0} at epoch 2: revoke 1,2 first
    step = reconcile(MemberState.STABLE, 1, 0, {T1: frozenset({0, 1, 2})}, {}, 2, {T1: frozenset({0})}, free,
                     {T1: frozenset({0, 1, 2})})
    assert (step.state, step.member_epoch, step.previous_member_epoch) == (MemberState.UNREVOKED_PARTITIONS, 1, 1)
    assert step.assigned == {T1: frozenset({0})} and step.pending_revocation == {T1: frozenset({1, 2})}
    # still owning them: nothing moves
    assert reconcile(step.state, 1, 1, step.assigned, step.pending_revocation, 2, {T1: frozenset({0})}, free,
                     {T1: frozenset({0, 1})}) is None
    # revoked: the target epoch
    done = reconcile(step.state, 1, 1, step.assigned, step.pending_revocation, 2, {T1: frozenset({0})}, free,
                     {T1: frozenset({0})})
    assert (done.state, done.member_epoch, done.assigned) == (MemberState.STABLE, 2, {T1: frozenset({0})})


def test_reconcile_waits_for_partitions_owned_elsewhere():
    step = reconcile(MemberState.STABLE, 1, 0, {}, {}, 2, {T1: frozenset({0, 1})},
                     lambda t, p: 1 if p == 1 else -1, {})
    assert (step.state, step.member_epoch, step.assigned) == (
        MemberState.UNRELEASED_PARTITIONS, 2, {T1: frozenset({0})})
    released = reconcile(step.state, 2, 1, step.assigned, {}, 2, {T1: frozenset({0, 1})}, free, None)
    assert (released.state, released.assigned) == (MemberState.STABLE, {T1: frozenset({0, 1})})
    with pytest.raises(ValueError):
        reconcile(MemberState.UNKNOWN, 0, 0, {}, {}, 2, {}, free, {T1: frozenset({0})})


@pytest.mark.parametrize("n_members,partitions", [(1, 3), (3, 3), (3, 10), (4, 3), (2, 7)])
def test_assignors_cover_every_partition_once_and_balance(n_members, partitions):
    members = {f"m{i}": (frozenset({T1}), {}) for i in range(n_members)}
    for assign in (uniform, range_assign):
        out = assign(members, {T1: partitions})
        got = sorted(p for a in out.values() for p in a.get(T1, ()))
        assert got == list(range(partitions))
        counts = sorted(len(a.get(T1, ())) for a in out.values())
        assert counts[-1] - counts[0] <= 1


def test_range_gives_consecutive_ranges_and_uniform_is_sticky():
    members = {m: (frozenset({T1}), {}) for m in ("a", "b", "c")}
    assert range_assign(members, {T1: 7}) == {"a": {T1: frozenset({0, 1, 2})}, "b": {T1: frozenset({3, 4})},
                                              "c": {T1: frozenset({5, 6})}}
    before = {"a": {T1: frozenset({0, 3})}, "b": {T1: frozenset({1, 4})}, "c": {T1: frozenset({2, 5})}}
    after = uniform({"a": (frozenset({T1}), before["a"]), "b": (frozenset({T1}), before["b"])}, {T1: 6})
    assert before["a"][T1] <= after["a"][T1] and before["b"][T1] <= after["b"][T1]
    assert len(after["a"][T1]) == len(after["b"][T1]) == 3


def test_config_defaults_and_validation():
    c = CoordinatorConfig()
    assert (c.consumer_group_session_timeout_ms, c.consumer_group_heartbeat_interval_ms) == (45_000, 5_000)
    assert c.consumer_group_assignors[0] == "uniform" and c.consumer_group_migration_policy == "bidirectional"
    with pytest.raises(ValueError, match="group.consumer.heartbeat.interval.ms must be less than"):
        CoordinatorConfig(consumer_group_heartbeat_interval_ms=45_000, consumer_group_max_heartbeat_interval_ms=60_000,
                          consumer_group_session_timeout_ms=45_000)
    with pytest.raises(ValueError, match="group.consumer.session.timeout.ms must be greater than or equal"):
        CoordinatorConfig(consumer_group_session_timeout_ms=1000)


# --- the coordinator, sans I/O --------------------------------------------------------------------

Driver = ConsumerGroupDriver


def owned(r: ConsumerGroupHeartbeatResponse):
    return tuple((t, tuple(ps)) for t, ps in r.assignment)


def test_two_members_converge_and_the_group_becomes_stable():
    d = Driver()
    a = d.hb("a", 0)
    assert (a.error_code, a.member_epoch, owned(a)) == (ErrorCode.NONE, 1, ((T1, (0, 1, 2)),))
    b = d.hb("b", 0)
    assert (b.member_epoch, b.assignment) == (2, ())       # what it gets is still a's
    a = d.hb("a", 1)                                       # told to revoke: keeps 2 of 3
    assert a.member_epoch == 1 and len(owned(a)[0][1]) == 2
    a = d.hb("a", 1, topic_partitions=owned(a))
    assert a.member_epoch == 2
    b = d.hb("b", 2)
    assert len(owned(b)[0][1]) == 1
    assert d.c.consumer_group("g").state.value == "Stable"
    listed = d.send(ListGroupsRequest()).groups
    assert [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed] == [
        ("g", "consumer", "Stable", "consumer")]
    described = d.send(ConsumerGroupDescribeRequest(group_ids=("g",))).groups[0]
    assert (described.group_epoch, described.assignment_epoch, described.assignor_name) == (2, 2, "uniform")


def test_heartbeat_errors_as_kafka_answers():
    d = Driver()
    assert d.hb("x", 3).error_code is ErrorCode.GROUP_ID_NOT_FOUND
    d.hb("a", 0)
    r = d.hb("zz", 1)
    assert (r.error_code, r.error_message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Member zz is not a member of group g.")
    assert d.hb("a", 7).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    r = d.hb("a", 0, server_assignor="sticky")
    assert (r.error_code, r.error_message) == (
        ErrorCode.UNSUPPORTED_ASSIGNOR, "ServerAssignor sticky is not supported. Supported assignors: uniform, range.")
    assert d.hb("", 0).error_message == "MemberId can't be empty."
    assert d.hb("b", 0, topic_partitions=((T1, (0,)),)).error_message == \
        "TopicPartitions must be empty when (re-)joining."
    assert d.hb("b", 0, subscribed_topic_regex="(").error_code is ErrorCode.INVALID_REGULAR_EXPRESSION


def test_static_member_leave_and_rejoin_keeps_its_partitions():
    d = Driver()
    d.hb("a", 0, instance_id="i1")
    left = d.hb("a", -2, instance_id="i1")
    assert left.member_epoch == -2
    taken = d.hb("b", 0, instance_id="i1")
    assert (taken.error_code, taken.member_epoch, owned(taken)) == (ErrorCode.NONE, 1, ((T1, (0, 1, 2)),))
    other = d.hb("c", 0, instance_id="i1")
    assert other.error_code is ErrorCode.UNRELEASED_INSTANCE_ID


def test_offset_commit_checks_the_member_epoch():
    d = Driver()
    d.hb("a", 0)

    def commit(member, epoch, version=9):
        r = d.send(OffsetCommitRequest(group_id="g", member_id=member, generation_id=epoch, api_version=version,
                                      topics=(OffsetCommitRequestTopic(name="t", partitions=(
                                          OffsetCommitRequestPartition(partition_index=0, committed_offset=5),)),)))
        return r.topics[0].partitions[0].error_code

    assert commit("a", 1) is ErrorCode.NONE
    assert commit("a", 2) is ErrorCode.STALE_MEMBER_EPOCH
    assert commit("nobody", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert commit("a", 1, version=8) is ErrorCode.UNSUPPORTED_VERSION


def test_records_replay_into_the_same_group():
    d = Driver()
    d.hb("a", 0, instance_id="i1")
    d.hb("b", 0)
    types = [int.from_bytes(k[:2], "big") for k, _ in d.log[0]]
    assert types[:4] == [5, 3, 7, 6] and 8 in types
    c = GroupCoordinator(CoordinatorConfig(offsets_topic_num_partitions=1))
    c.begin_load(0, 0)
    assert c.load_partition(0, d.log[0], 0) == ("g",)
    g, h = c.consumer_group("g"), d.c.consumer_group("g")
    assert (g.group_epoch, g.assignment_epoch, g.static_members) == (h.group_epoch, h.assignment_epoch, {"i1": "a"})
    assert {m: (x.member_epoch, x.assigned) for m, x in g.members.items()} == {
        m: (x.member_epoch, x.assigned) for m, x in h.members.items()}
    assert g.target == h.target


def test_a_group_id_is_one_type():
    d = Driver()
    d.hb("a", 0)
    join = d.send(JoinGroupRequest(group_id="g", session_timeout_ms=10_000, protocol_type="consumer",
                                  protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)))
    # a classic member may join a non-empty consumer group (classicGroupJoinToConsumerGroup): first its id
    assert join.error_code is ErrorCode.MEMBER_ID_REQUIRED
    join = d.send(JoinGroupRequest(group_id="g", session_timeout_ms=10_000, protocol_type="connect",
                                  protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)))
    assert join.error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # an empty classic group (offsets only) converts, offsets kept
    d.send(OffsetCommitRequest(group_id="old", topics=(OffsetCommitRequestTopic(name="t", partitions=(
        OffsetCommitRequestPartition(partition_index=0, committed_offset=7),)),)))
    r = d.send(ConsumerGroupHeartbeatRequest(group_id="old", member_id="m", member_epoch=0, rebalance_timeout_ms=1,
                                            subscribed_topic_names=("t",), topic_partitions=()))
    assert r.error_code is ErrorCode.NONE
    assert d.c.consumer_group("old").offsets[("t", 0)].committed_offset == 7 and d.c.group("old") is None


def regex_records(log) -> list:
    """The ConsumerGroupRegularExpression records (type 16) of ``log``: (regex, value or None)."""
    out = []
    for k, v in log:
        if int.from_bytes(k[:2], "big") == 16:
            key = schemas.parse(CO.RecordKey, k).data
            value = None if v is None else schemas.parse(CO.value_schema(16), v).data
            out.append((key.group_id, key.regular_expression, None if value is None else (
                list(value.topics), value.version, value.timestamp)))
    return out


def test_a_regex_resolution_is_written_replayed_and_tombstoned():
    """GroupMetadataManager: a new regex is resolved to the topics the member may DESCRIBE and
    written as a ConsumerGroupRegularExpression record; replayed, it stands (the same topics,
    the same version) until the topics change; the last subscriber leaving tombstones it."""
    d = Driver()
    image = {"t": (T1, 3), "acl-a": (uuid.UUID(int=11), 1), "acl-b": (uuid.UUID(int=12), 1)}
    d.c.update_topics(image)
    version = image_version(image)
    d.now = 1000
    r = d.hb("a", 0, subscribed_topic_names=None, subscribed_topic_regex="acl-.*",
             describable=frozenset({"acl-a"}))
    assert owned(r) == ((uuid.UUID(int=11), (0,)),)
    assert regex_records(d.log[0]) == [("g", "acl-.*", (["acl-a"], version, 1000))]

    c = Driver()
    c.c.update_topics(image)
    c.c.begin_load(0, 0)
    assert c.c.load_partition(0, d.log[0], 0) == ("g",)
    assert c.c.consumer_group("g").resolved_regexes["acl-.*"] == ResolvedRegularExpression(
        frozenset({"acl-a"}), version, 1000)
    # a heartbeat without a principal's view: the replayed resolution stands, nothing is rewritten
    c.now = 2000
    r = c.hb("a", 1)
    assert r.error_code is ErrorCode.NONE and r.member_epoch == 1
    assert regex_records(c.log[0]) == []
    assert c.c.consumer_group("g").subscription_metadata == {"acl-a": (uuid.UUID(int=11), 1)}
    # a new topic: the next heartbeat refreshes with its member's view
    image["acl-c"] = (uuid.UUID(int=13), 2)
    c.c.update_topics(image)
    r = c.hb("a", 1, describable=frozenset({"acl-a", "acl-c"}))
    assert regex_records(c.log[0]) == [("g", "acl-.*", (["acl-a", "acl-c"], image_version(image), 2000))]
    # the last subscriber leaves: a tombstone
    c.hb("a", -1)
    assert regex_records(c.log[0])[-1] == ("g", "acl-.*", None)
    assert c.c.consumer_group("g").resolved_regexes == {}
