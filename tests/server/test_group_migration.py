"""The online migration of a non-empty classic group to a KIP-848 consumer group and back
(GroupMetadataManager.convertToConsumerGroup / convertToClassicGroup, the classic members
driven through JoinGroup/SyncGroup/Heartbeat inside the consumer group), sans I/O, request
by request; the records checked as Kafka writes them. Real clients on kproto and Kafka:
tests/e2e/test_group_migration_clients.py."""

from __future__ import annotations

import uuid

from kproto import schemas
from kproto.errors import ErrorCode as E
from kproto.schemas import consumer_offsets as CO
from kproto.server.coordinator import CoordinatorConfig, GroupCoordinator
from kproto.server.coordinator.events import (
    ConsumerGroupDescribeRequest, LeaveGroupRequest, MemberIdentity,
)
from kproto.server.coordinator.state import GroupState
from tests.server.helpers import ConsumerGroupDriver, assignment, protocols

T1 = uuid.UUID(int=1)


class Driver(ConsumerGroupDriver):
    """One ``__consumer_offsets`` partition, topic t with 3 partitions."""

    def records(self, since: int = 0) -> list[tuple[int, str | None, bool]]:
        """(record type, member id, tombstone?) of the log from ``since``."""
        out = []
        for key, value in self.log[0][since:]:
            k = schemas.parse(CO.RecordKey, key)
            out.append((k.version, getattr(k.data, "member_id", None), value is None))
        return out


def upgraded(d: Driver):
    """Two classic members stable at generation 1 (t-0, t-1), then consumer member c joins."""
    (a, b), generation = d.stable_group(2)
    assert generation == 1
    mark = len(d.log[0])
    r = d.hb("c", 0)
    return a, b, r, mark


def test_a_consumer_member_upgrades_a_non_empty_classic_group():
    d = Driver()
    a, b, r, mark = upgraded(d)
    # c gets the free partition at once: the classic members keep what they had
    assert (r.error_code, r.member_epoch, r.assignment) == (E.NONE, 2, ((T1, (2,)),))
    assert d.c.group("g") is None
    g = d.c.consumer_group("g")
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)
    assert {m: (x.member_epoch, x.assigned, x.classic is not None) for m, x in g.members.items()} == {
        a: (1, {T1: frozenset({0})}, True), b: (1, {T1: frozenset({1})}, True), "c": (2, {T1: frozenset({2})}, False)}
    # the GroupMetadata tombstone, createConsumerGroupRecords, then c's heartbeat
    assert d.records(mark) == [
        (2, None, True),
        (5, a, False), (5, b, False), (3, None, False), (7, a, False), (7, b, False), (6, None, False),
        (8, a, False), (8, b, False),
        (5, "c", False), (3, None, False), (7, "c", False), (6, None, False), (8, "c", False)]
    # the classic members' protocols are kept in ConsumerGroupMemberMetadata
    value = schemas.parse(CO.value_schema(5), d.log[0][mark + 1][1]).data
    assert value.classic_member_metadata.session_timeout_ms == 1_000
    assert [(p.name, bytes(p.metadata)) for p in value.classic_member_metadata.supported_protocols] == [
        (p.name, p.metadata) for p in protocols("range")]


def test_classic_members_rejoin_through_the_consumer_group():
    d = Driver()
    a, b, _, _ = upgraded(d)
    assert d.heartbeat(a, 1) is E.REBALANCE_IN_PROGRESS       # member epoch 1 < group epoch 2
    assert d.heartbeat(a, 7) is E.ILLEGAL_GENERATION
    assert d.heartbeat("nobody", 1) is E.UNKNOWN_MEMBER_ID
    assert d.sync(a, 1).error_code is E.REBALANCE_IN_PROGRESS
    joined = d.join(a)
    assert (joined.error_code, joined.generation_id, joined.protocol_type, joined.protocol_name, joined.leader,
            joined.members) == (E.NONE, 2, "consumer", "range", "", ())
    synced = d.sync(a, 2, protocol_type="consumer", protocol_name="range")
    assert (synced.error_code, synced.assignment) == (E.NONE, assignment("t", 0))
    assert d.sync(a, 2, protocol_name="roundrobin").error_code is E.INCONSISTENT_GROUP_PROTOCOL
    assert d.heartbeat(a, 2) is E.NONE
    # a consumer-protocol member is not a classic one
    assert d.heartbeat("c", 2) is E.UNKNOWN_MEMBER_ID
    # a protocol the classic members do not all support
    assert d.join(protos=protocols("roundrobin")).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    assert d.join(b).generation_id == 2
    described = d.send(ConsumerGroupDescribeRequest(group_ids=("g",))).groups[0]
    assert (described.group_state, described.group_epoch) == ("Stable", 2)
    # KIP-1099's member type: 0 classic, 1 consumer protocol
    assert {m.member_id: m.member_type for m in described.members} == {a: 0, b: 0, "c": 1}


def test_a_new_classic_member_joins_the_consumer_group():
    d = Driver()
    a, b, _, _ = upgraded(d)
    first = d.join()
    assert first.error_code is E.MEMBER_ID_REQUIRED
    joined = d.join(first.member_id)
    assert (joined.error_code, joined.generation_id) == (E.NONE, 3)
    g = d.c.consumer_group("g")
    assert g.group_epoch == 3 and sorted(p for t in g.target.values() for ps in t.values() for p in ps) == [0, 1, 2]
    assert g.members[first.member_id].classic.session_timeout_ms == 1_000


def test_the_last_consumer_member_leaving_downgrades_to_classic():
    d = Driver()
    a, b, _, _ = upgraded(d)
    d.join(a), d.join(b)
    mark = len(d.log[0])
    left = d.hb("c", -1)
    assert (left.error_code, left.member_epoch) == (E.NONE, -1)
    assert d.c.consumer_group("g") is None
    classic = d.c.group("g")
    assert (classic.state, classic.generation_id, classic.protocol_type, classic.protocol_name) == (
        GroupState.PREPARING_REBALANCE, 2, "consumer", "range")
    assert set(classic.members) == {a, b}
    # createGroupTombstoneRecords (assignments, targets, target epoch, members, partition metadata,
    # epoch), then the classic group's GroupMetadata with each member's target assignment
    assert d.records(mark) == [
        (8, a, True), (8, b, True), (8, "c", True), (7, a, True), (7, b, True), (7, "c", True), (6, None, True),
        (5, a, True), (5, b, True), (5, "c", True), (4, None, True), (3, None, True), (2, None, False)]
    stored = schemas.parse(CO.GroupMetadataValue, d.log[0][-1][1]).data
    assert (stored.generation, stored.protocol) == (2, "range")
    assert {m.member_id: bytes(m.assignment) for m in stored.members} == {
        a: assignment("t", 0), b: assignment("t", 1)}
    # the classic members rejoin a classic rebalance
    assert d.heartbeat(a, 2) is E.REBALANCE_IN_PROGRESS
    parked, hb = d.join(a), d.join(b)
    ha = d.result(parked)
    assert (ha.error_code, hb.error_code, ha.generation_id, ha.leader) == (E.NONE, E.NONE, 3, a)


def test_classic_leave_keeps_a_consumer_group_and_bumps_the_epoch():
    d = Driver()
    a, b, _, _ = upgraded(d)
    r = d.send(LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id=a), MemberIdentity(member_id="c"))))
    assert [(m.member_id, m.error_code) for m in r.members] == [(a, E.NONE), ("c", E.UNKNOWN_MEMBER_ID)]
    g = d.c.consumer_group("g")
    assert set(g.members) == {b, "c"} and g.group_epoch == 3


def test_the_migration_policy_decides():
    d = Driver(consumer_group_migration_policy="downgrade")
    d.stable_group(2)
    r = d.hb("c", 0)
    assert (r.error_code, r.error_message) == (E.GROUP_ID_NOT_FOUND, (
        "Cannot upgrade classic group g to consumer group because online upgrade is disabled."))
    assert d.c.group("g").state is GroupState.STABLE
    d = Driver(consumer_group_migration_policy="upgrade")
    a, b, _, _ = upgraded(d)
    d.hb("c", -1)                         # no downgrade: the classic members stay in a consumer group
    g = d.c.consumer_group("g")
    assert g is not None and set(g.members) == {a, b} and d.c.group("g") is None


def test_an_upgraded_group_replays_with_its_classic_members():
    d = Driver()
    a, b, _, _ = upgraded(d)
    c = GroupCoordinator(CoordinatorConfig(offsets_topic_num_partitions=1))
    c.begin_load(0, 0)
    assert c.load_partition(0, d.log[0], 0) == ("g",)
    g, h = c.consumer_group("g"), d.c.consumer_group("g")
    assert {m: (x.member_epoch, x.assigned, x.classic) for m, x in g.members.items()} == {
        m: (x.member_epoch, x.assigned, x.classic) for m, x in h.members.items()}


def static_upgraded(d: Driver):
    """Two static classic members (i0, i1) stable at generation 1, then static consumer member c (ic)."""
    (a, b), generation = d.stable_group(2, statics=True)
    assert generation == 1
    r = d.hb("c", 0, instance_id="ic")
    assert (r.error_code, r.member_epoch) == (E.NONE, 2)
    return a, b


def test_a_static_classic_member_rejoining_replaces_its_old_member_id():
    """getOrMaybeSubscribeStaticConsumerGroupMember / replaceMember: a classic JoinGroup with no
    member id and a held instance id takes the old member's place, epoch 0 and assignment kept
    (its records tombstoned, the new member's written); with a member id it must be the holder."""
    d = Driver()
    a, b = static_upgraded(d)
    g = d.c.consumer_group("g")
    a_target = g.target[a]
    assert d.join("someone", instance="i0").error_code is E.FENCED_INSTANCE_ID
    assert d.join("someone", instance="nobody").error_code is E.UNKNOWN_MEMBER_ID
    mark = len(d.log[0])
    r = d.join(instance="i0")
    assert r.error_code is E.NONE and r.member_id not in (a, b, "c")
    new = r.member_id
    assert (r.generation_id, r.protocol_name) == (2, "range")
    assert d.records(mark)[:6] == [(8, a, True), (7, a, True), (5, a, True), (5, new, False), (7, new, False),
                                   (8, new, False)]
    assert set(g.members) == {new, b, "c"} and g.static_members["i0"] == new
    assert g.target[new] == a_target and g.members[new].assigned == a_target
    assert g.members[new].classic is not None
    # the old member id is gone, the new one syncs its partitions
    assert d.heartbeat(a, 2, instance="i0") is E.FENCED_INSTANCE_ID
    synced = d.sync(new, 2, group_instance_id="i0", protocol_type="consumer", protocol_name="range")
    assert (synced.error_code, synced.assignment) == (E.NONE, assignment("t", 0))


def test_a_classic_member_replacing_the_last_consumer_member_downgrades_the_group():
    """convertToClassicGroup with a joining member (validateOnlineDowngradeWithReplacedMember): the
    consumer-protocol static member c is replaced by a classic JoinGroup with its instance id;
    every member is classic then, so the group becomes a Stable classic group of generation =
    group epoch, the joiner holding c's partition, and no rebalance starts."""
    d = Driver()
    a, b = static_upgraded(d)
    mark = len(d.log[0])
    r = d.join(instance="ic")
    assert r.error_code is E.NONE
    new = r.member_id
    assert d.c.consumer_group("g") is None
    classic = d.c.group("g")
    assert (classic.state, classic.generation_id, classic.protocol_name) == (GroupState.STABLE, 2, "range")
    assert set(classic.members) == {a, b, new} and classic.static_members["ic"] == new
    records = d.records(mark)
    assert records[:6] == [(8, "c", True), (7, "c", True), (5, "c", True), (5, new, False), (7, new, False),
                           (8, new, False)]
    assert records[-1] == (2, None, False)
    stored = schemas.parse(CO.GroupMetadataValue, d.log[0][-1][1]).data
    assert {m.member_id: bytes(m.assignment) for m in stored.members} == {
        a: assignment("t", 0), b: assignment("t", 1), new: assignment("t", 2)}
    # a classic group now: its SyncGroup hands the joiner c's partition
    synced = d.sync(new, 2, group_instance_id="ic")
    assert (synced.error_code, synced.assignment) == (E.NONE, assignment("t", 2))
    assert d.heartbeat(a, 2, instance="i0") is E.NONE


def test_a_consumer_member_replaces_a_static_classic_member_at_once():
    """A ConsumerGroupHeartbeat joining with a classic member's instance id replaces it without
    waiting for a leave (UNRELEASED_INSTANCE_ID is for a consumer-protocol holder only)."""
    d = Driver()
    a, b = static_upgraded(d)
    r = d.hb("z", 0, instance_id="i0")
    assert (r.error_code, r.member_id) == (E.NONE, "z")
    g = d.c.consumer_group("g")
    assert a not in g.members and g.static_members["i0"] == "z" and g.members["z"].classic is None
    assert d.hb("y", 0, instance_id="ic").error_code is E.UNRELEASED_INSTANCE_ID


def test_an_upgrade_refuses_a_custom_assignors_user_data():
    """fromClassicGroup: an assignment with user data would lose it (UnsupportedVersionException),
    and convertToConsumerGroup answers GROUP_ID_NOT_FOUND with Kafka's message."""
    d = Driver()
    (a, b), generation = d.stable_group(2)
    d.c.group("g").members[a].assignment = CO.ConsumerProtocolAssignment.build({"version": 0, "data": {
        "assigned_partitions": [{"topic": "t", "partitions": [0]}], "user_data": b"custom"}})
    r = d.hb("c", 0)
    assert (r.error_code, r.error_message) == (E.GROUP_ID_NOT_FOUND, (
        "Cannot upgrade classic group g to consumer group because an unsupported custom assignor is in use. "
        "Please refer to the documentation or switch to a default assignor before re-attempting the upgrade."))
    assert d.c.group("g") is not None and d.c.consumer_group("g") is None
    # malformed bytes: the embedded protocol is malformed; a member that never synced is upgraded
    d.c.group("g").members[a].assignment = b"\x00\x00\x00"
    assert d.hb("c", 0).error_message == (
        "Cannot upgrade classic group g to consumer group because the embedded consumer protocol is malformed.")
    d.c.group("g").members[a].assignment = b""
    r = d.hb("c", 0)
    assert r.error_code is E.NONE and d.c.consumer_group("g").members[a].assigned == {}
