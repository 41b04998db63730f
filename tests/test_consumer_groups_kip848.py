"""KIP-848 consumer groups (issue 25): the sans-I/O tables and coordinator, then
confluent-kafka with ``group.protocol=consumer`` against kproto and Apache Kafka 4.4.

The client scenarios return what a user observes (records consumed, duplicates, committed
offsets, who ended up with what count of partitions); each runs on both brokers and the
outcomes must be equal.
"""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager

import pytest

from kproto.errors import ErrorCode
from kproto.server.coordinator import CoordinatorConfig, GroupCoordinator
from kproto.server.coordinator.assignors import range_assign, uniform
from kproto.server.coordinator.consumer_state import (
    EPOCH_RULES, EpochCheck, MemberState, check_member_epoch, classify_epoch, reconcile,
)
from kproto.server.coordinator.events import (
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, JoinGroupRequest,
    JoinGroupRequestProtocol, ListGroupsRequest, OffsetCommitRequest, OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kproto.server.runtime.core import Pending

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

class Driver:
    def __init__(self, **config):
        self.c = GroupCoordinator(CoordinatorConfig(offsets_topic_num_partitions=1, **config))
        self.log: list[tuple[bytes, bytes | None]] = []
        self.now = 0
        self.c.update_topics({"t": (T1, 3)})

    def ask(self, request):
        r = self.c.handle(request, self.now)
        while appends := self.c.take_appends():
            for a in appends:
                self.log.extend(a.records)
                self.c.append_done(a.id, self.now)
        if isinstance(r, Pending):
            r = dict(self.c.poll(self.now))[r]
        return r

    def hb(self, member_id, epoch, **kw):
        if epoch == 0:
            kw.setdefault("rebalance_timeout_ms", 30_000)
            kw.setdefault("topic_partitions", ())
            kw.setdefault("subscribed_topic_names", ("t",))
        return self.ask(ConsumerGroupHeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **kw))


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
    listed = d.ask(ListGroupsRequest()).groups
    assert [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed] == [
        ("g", "consumer", "Stable", "consumer")]
    described = d.ask(ConsumerGroupDescribeRequest(group_ids=("g",))).groups[0]
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
        r = d.ask(OffsetCommitRequest(group_id="g", member_id=member, generation_id=epoch, api_version=version,
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
    types = [int.from_bytes(k[:2], "big") for k, _ in d.log]
    assert types[:4] == [5, 3, 7, 6] and 8 in types
    c = GroupCoordinator(CoordinatorConfig(offsets_topic_num_partitions=1))
    c.begin_load(0, 0)
    assert c.load_partition(0, d.log, 0) == ("g",)
    g, h = c.consumer_group("g"), d.c.consumer_group("g")
    assert (g.group_epoch, g.assignment_epoch, g.static_members) == (h.group_epoch, h.assignment_epoch, {"i1": "a"})
    assert {m: (x.member_epoch, x.assigned) for m, x in g.members.items()} == {
        m: (x.member_epoch, x.assigned) for m, x in h.members.items()}
    assert g.target == h.target


def test_a_group_id_is_one_type():
    d = Driver()
    d.hb("a", 0)
    join = d.ask(JoinGroupRequest(group_id="g", session_timeout_ms=10_000, protocol_type="consumer",
                                  protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)))
    assert join.error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # an empty classic group (offsets only) converts, offsets kept
    d.ask(OffsetCommitRequest(group_id="old", topics=(OffsetCommitRequestTopic(name="t", partitions=(
        OffsetCommitRequestPartition(partition_index=0, committed_offset=7),)),)))
    r = d.ask(ConsumerGroupHeartbeatRequest(group_id="old", member_id="m", member_epoch=0, rebalance_timeout_ms=1,
                                            subscribed_topic_names=("t",), topic_partitions=()))
    assert r.error_code is ErrorCode.NONE
    assert d.c.consumer_group("old").offsets[("t", 0)].committed_offset == 7 and d.c.group("old") is None


# --- real clients on kproto and Apache Kafka 4.4 -----------------------------------------------------

@pytest.fixture(scope="module", params=["kproto", "kafka"])
def bootstrap(request, tmp_path_factory):
    if request.param == "kproto":
        import kproto.testing
        with kproto.testing.broker(config={"group.initial.rebalance.delay.ms": "0"}) as b:
            yield b.bootstrap_servers
    else:
        ref = request.getfixturevalue("kafka_ref")
        with ref.broker(tmp_path_factory.mktemp("kafka848"), **{
                "group.initial.rebalance.delay.ms": "0",
                "group.coordinator.rebalance.protocols": "classic,consumer"}) as k:
            yield k.bootstrap


def _topic(bs: str, name: str, partitions: int, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bs})       # kept alive until the result is in
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    p = Producer({"bootstrap.servers": bs})
    for i in range(records):
        p.produce(name, value=f"{name}-{i}".encode(), partition=i % partitions)
    assert p.flush(30) == 0


@contextmanager
def _consumer(bs: str, group: str, **extra):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, **extra})
    try:
        yield c
    finally:
        c.close()


def _drain(consumers, seen: list, want: int, timeout: float = 90.0) -> None:
    """Poll every consumer in turn, committing each record before the next poll (so a
    partition that moves is resumed after the last record consumed: no duplicates)."""
    deadline = time.monotonic() + timeout
    while len(seen) < want and time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen.append(m.value())
                c.commit(message=m, asynchronous=False)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_three_members_consume_300_exactly_once_through_leave_and_join(bootstrap, assignor):
    topic, group = f"k848-{assignor}-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    _topic(bootstrap, topic, 6, 300)
    seen: list = []
    extra = {"group.remote.assignor": assignor}
    with _consumer(bootstrap, group, **extra) as a, _consumer(bootstrap, group, **extra) as b:
        with _consumer(bootstrap, group, **extra) as c:
            for x in (a, b, c):
                x.subscribe([topic])
            _drain([a, b, c], seen, 150)
        # c left; d joins
        with _consumer(bootstrap, group, **extra) as d:
            d.subscribe([topic])
            _drain([a, b, d], seen, 300)
    assert len(seen) == 300 and len(set(seen)) == 300


def test_regex_subscription_picks_up_a_new_topic(bootstrap):
    prefix = f"re{uuid.uuid4().hex[:4]}-"
    _topic(bootstrap, prefix + "a", 1, 5)
    seen: list = []
    with _consumer(bootstrap, f"g-{uuid.uuid4().hex[:6]}", **{"topic.metadata.refresh.interval.ms": 1000}) as c:
        c.subscribe([f"^{prefix}.*"])
        _drain([c], seen, 5)
        _topic(bootstrap, prefix + "b", 1, 5)
        _drain([c], seen, 10, timeout=120)
    assert sorted(seen) == sorted([f"{prefix}a-{i}".encode() for i in range(5)]
                                  + [f"{prefix}b-{i}".encode() for i in range(5)])


def test_static_member_restarts_and_resumes(bootstrap):
    topic, group = f"k848s-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    _topic(bootstrap, topic, 2, 20)
    seen: list = []
    with _consumer(bootstrap, group, **{"group.instance.id": "static-1"}) as c:
        c.subscribe([topic])
        _drain([c], seen, 10)
    with _consumer(bootstrap, group, **{"group.instance.id": "static-1"}) as c:
        c.subscribe([topic])
        _drain([c], seen, 20)
    assert len(seen) == 20 and len(set(seen)) == 20


def test_online_upgrade_of_an_empty_classic_group(bootstrap):
    from confluent_kafka import Consumer
    topic, group = f"k848u-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    _topic(bootstrap, topic, 2, 20)
    seen: list = []
    classic = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                        "enable.auto.commit": False})
    classic.subscribe([topic])
    _drain([classic], seen, 10)
    classic.close()
    with _consumer(bootstrap, group) as c:
        c.subscribe([topic])
        _drain([c], seen, 20)
    assert len(seen) == 20 and len(set(seen)) == 20
