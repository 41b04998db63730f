"""__consumer_offsets records: partitioning, bytes, and replay into a new coordinator.

Hash values below were computed with OpenJDK 17's ``String.hashCode()`` and
Kafka's ``Utils.abs`` (``n == Integer.MIN_VALUE ? 0 : Math.abs(n)``) on this
machine. Expected record bytes are written out by hand from Kafka's
OffsetCommitKey/OffsetCommitValue/GroupMetadataKey/GroupMetadataValue JSON
schemas (field order, int16 version prefix, int16-length strings, -1 for a null
string, int32-length bytes, int32-count arrays).
"""

from __future__ import annotations

import pytest

from kproto.errors import ErrorCode
from kproto.records import NewRecord, build_control_batch, build_record_batch
from kproto.schemas import consumer_offsets as CO
from kproto.server.coordinator import (
    CoordinatorConfig, DeleteGroupsRequest, DescribeGroupsRequest, GroupCoordinator, GroupState,
    LeaveGroupRequest, ListGroupsRequest, MemberIdentity, OffsetCommitRequest,
    OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetFetchRequest,
)
from kproto.server.coordinator.group import GroupMetadata, MemberMetadata
from kproto.server.coordinator.offsets import OffsetAndMetadata
from kproto.jvm import java_string_hash as java_string_hashcode
from kproto.jvm import kafka_abs
from kproto.server.coordinator.persistence import (
    group_metadata_key, group_metadata_value, offset_commit_key, offset_commit_value, parse_group_value, replay,
)
from kproto.server.runtime.state_topic import append_batch, partition_for, records_from_log
from tests.server.helpers import assignment, DELAY, fetched, Harness, subscription

E = ErrorCode


# --- which partition ---------------------------------------------------------------------

@pytest.mark.parametrize("group_id, java_hash, partition", [
    ("my-group", -1906497762, 12),
    ("", 0, 0),
    ("console-consumer-12345", 158455506, 6),
    ("groupé", -1237460406, 6),                       # Latin-1 range
    ("グループ", 383750870, 20),                        # BMP, outside Latin-1
    ("g\U0001F600", 1871882, 32),                      # a surrogate pair: two UTF-16 code units
    ("polygenelubricants", -2147483648, 0),           # Integer.MIN_VALUE: Utils.abs gives 0
    ("a", 97, 47),
])
def test_partition_for_matches_java_and_kafka(group_id, java_hash, partition):
    assert java_string_hashcode(group_id) == java_hash
    assert partition_for(group_id) == partition
    assert GroupCoordinator().partition_for(group_id) == partition


def test_utils_abs_is_not_to_positive():
    # "my-group" would land on partition 36 with the producer's n & 0x7fffffff
    assert kafka_abs(-1906497762) % 50 == 12 and (-1906497762 & 0x7FFFFFFF) % 50 == 36
    assert kafka_abs(-(1 << 31)) == 0 and kafka_abs(-5) == 5
    assert partition_for("my-group", 7) == 1906497762 % 7


# --- bytes by hand ------------------------------------------------------------------------

def test_offset_records_by_hand():
    assert offset_commit_key("my-group", "t", 0).hex() == (
        "0001" "0008" "6d792d67726f7570" "0001" "74" "00000000")
    v3 = offset_commit_value(OffsetAndMetadata(42, -1, "", 1_700_000_000_000))
    assert v3.hex() == "0003" "000000000000002a" "ffffffff" "0000" "0000018bcfe56800"
    v3_epoch = offset_commit_value(OffsetAndMetadata(7, 5, "md", 1))
    assert v3_epoch.hex() == "0003" "0000000000000007" "00000005" "0002" "6d64" "0000000000000001"
    v1 = offset_commit_value(OffsetAndMetadata(7, 5, "m", 1, expire_timestamp_ms=2))
    assert v1.hex() == "0001" "0000000000000007" "0001" "6d" "0000000000000001" "0000000000000002"
    assert group_metadata_key("g").hex() == "0002" "0001" "67"


def test_group_metadata_value_v3_by_hand():
    group = GroupMetadata("g", GroupState.STABLE, current_state_timestamp=5, generation_id=1,
                          protocol_name="range")
    group.add(MemberMetadata(member_id="m", group_instance_id=None, client_id="c", client_host="h",
                             rebalance_timeout_ms=7, session_timeout_ms=100, protocol_type="consumer",
                             supported_protocols=(("range", b"\x00\x00"),)))
    group.add(MemberMetadata(member_id="s", group_instance_id="i", client_id="c", client_host="h",
                             rebalance_timeout_ms=7, session_timeout_ms=100, protocol_type="consumer",
                             supported_protocols=(("range", b"\x01"),)))
    value = group_metadata_value(group, {"m": b"", "s": b"\xab"})
    assert value.hex() == (
        "0003"                                       # version 3: what Kafka 3.x writes (IBP >= 2.3)
        "0008" "636f6e73756d6572"                    # protocol_type "consumer"
        "00000001"                                   # generation
        "0005" "72616e6765"                          # protocol "range"
        "0001" "6d"                                  # leader "m"
        "0000000000000005"                           # current_state_timestamp
        "00000002"                                   # members
        "0001" "6d" "ffff" "0001" "63" "0001" "68" "00000007" "00000064" "00000002" "0000" "00000000"
        "0001" "73" "0001" "69" "0001" "63" "0001" "68" "00000007" "00000064" "00000001" "01"
        "00000001" "ab")
    back = parse_group_value("g", value)
    assert (back.state, back.generation_id, back.protocol_type, back.protocol_name, back.leader_id,
            back.current_state_timestamp, back.static_members) == (
        GroupState.STABLE, 1, "consumer", "range", "m", 5, {"i": "s"})
    assert [(m.member_id, m.assignment, m.rebalance_timeout_ms) for m in back.members.values()] == [
        ("m", b"", 7), ("s", b"\xab", 7)]


def test_empty_group_value_has_null_protocol_and_leader():
    group = GroupMetadata("g", GroupState.EMPTY, current_state_timestamp=9, generation_id=3,
                          protocol_type="consumer")
    assert group_metadata_value(group, {}).hex() == (
        "0003" "0008" "636f6e73756d6572" "00000003" "ffff" "ffff" "0000000000000009" "00000000")


# --- records written by a running coordinator ---------------------------------------------

def scenario() -> Harness:
    """Groups in every durable shape, with their records in ``h.log``."""
    h = Harness()
    h.appended = []
    take = h.c.take_appends

    def recording():
        appends = take()
        h.appended.extend(appends)
        return appends
    h.c.take_appends = recording

    (i0, i1), gen = h.stable_group(2, statics=True)
    h.send(OffsetCommitRequest(group_id="g", generation_id=gen, member_id=i0, topics=(
        OffsetCommitRequestTopic(name="t", partitions=(
            OffsetCommitRequestPartition(partition_index=0, committed_offset=10, committed_leader_epoch=3,
                                         committed_metadata="first"),
            OffsetCommitRequestPartition(partition_index=1, committed_offset=11))),)))
    h.commit({("t", 0): 12}, generation=gen, member_id=i1, metadata="second")       # last write wins
    h.commit({("a", 0): 1, ("b", 3): 2}, group="solo", metadata="s")
    h.commit({("a", 0): 5}, group="solo", retention_time_ms=10**9)                # value v1
    h.commit({("x", 0): 1}, group="gone")
    h.send(DeleteGroupsRequest(groups_names=("gone",)))
    (e0,), egen = h.stable_group(1, group="emptied")
    h.commit({("t", 0): 3}, group="emptied", generation=egen, member_id=e0)
    h.send(LeaveGroupRequest(group_id="emptied", members=(MemberIdentity(member_id=e0),)))
    assert h.state("emptied") is GroupState.EMPTY
    return h


def snapshot(c: GroupCoordinator, now: int):
    ids = sorted(g.group_id for g in c.handle(ListGroupsRequest(), now).groups)
    described = c.handle(DescribeGroupsRequest(groups=tuple(ids)), now).groups
    groups = {g: c.group(g) for g in ids}
    internals = {g: (x.state, x.generation_id, x.protocol_type, x.protocol_name, x.leader_id,
                     x.current_state_timestamp, dict(x.static_members), dict(x.offsets),
                     [(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                       m.session_timeout_ms, m.supported_protocols, m.assignment) for m in x.members.values()])
                 for g, x in groups.items()}
    return ids, described, internals


def test_every_record_parses_with_the_consumer_offsets_schemas():
    h = scenario()
    records = [r for p in h.log.values() for r in p]
    assert len(records) >= 10
    seen = set()
    for key, value in records:
        k = CO.RecordKey.parse(key)
        assert k.version in (1, 2)                      # never the 0.8.2 key version 0
        if value is not None:
            v = CO.value_schema(k.version).parse(value)
            seen.add((k.version, v.version))
            assert len(CO.value_schema(k.version).build(v)) == len(value)
        else:
            seen.add((k.version, None))
    assert seen == {(1, 3), (1, 1), (1, None), (2, 3)}
    # every record sits in its group's partition
    for partition, recs in h.log.items():
        for key, _ in recs:
            assert partition_for(CO.RecordKey.parse(key).data.group) == partition


def test_replay_gives_identical_groups_and_offsets():
    h = scenario()
    before = snapshot(h.c, h.now)
    fresh = GroupCoordinator(CoordinatorConfig(group_min_session_timeout_ms=10,
                                               group_initial_rebalance_delay_ms=DELAY))
    for partition in range(50):
        fresh.load_partition(partition, h.log.get(partition, []), h.now)
    after = snapshot(fresh, h.now)
    # a group known only by its offsets has no durable state timestamp: Kafka, too,
    # stamps it with the load time
    for snap in (before, after):
        stamp = snap[2]["solo"][5]
        snap[2]["solo"] = snap[2]["solo"][:5] + (None,) + snap[2]["solo"][6:]
    assert stamp == h.now
    assert after == before
    ids, described, internals = after
    assert ids == ["emptied", "g", "solo"]
    assert [d.group_state for d in described] == ["Empty", "Stable", "Empty"]
    assert [len(d.members) for d in described] == [0, 2, 0]
    offsets = {g: x[7] for g, x in internals.items()}
    assert offsets["g"][("t", 0)].metadata == "second" and offsets["g"][("t", 0)].committed_offset == 12
    assert offsets["solo"][("a", 0)].expire_timestamp_ms == 10**9 + offsets["solo"][("a", 0)].commit_timestamp_ms
    assert fresh.group("gone") is None


def test_replayed_members_carry_on_or_expire_like_kafkas():
    h = scenario()
    i0, i1 = list(h.c.group("g").members)
    gen = h.c.group("g").generation_id
    fresh = Harness()
    for partition, records in h.log.items():
        fresh.c.load_partition(partition, records, 0)
    assert fresh.heartbeat(i0, gen, instance="i0") == E.NONE
    assert fresh.sync(i1, gen, group_instance_id="i1").assignment == assignment("t", 1)
    # i1 stops heartbeating; i0 goes on: i1's session ends and the group rebalances
    for _ in range(4):
        fresh.advance(300)
        if fresh.state() is GroupState.STABLE:
            assert fresh.heartbeat(i0, gen, instance="i0") == E.NONE
    assert fresh.state() is GroupState.PREPARING_REBALANCE
    assert list(fresh.c.group("g").members) == [i0]


def test_load_from_log_bytes_including_transactional_commits():
    h = scenario()
    p = h.c.partition_for("solo")
    appends = [a for a in h.appended if a.partition == p]
    log = bytearray()
    offset = 0
    for a in appends:
        log += append_batch(a, base_offset=offset)
        offset += len(a.records)
    # a TxnOffsetCommit that commits and one that aborts
    log += build_record_batch([NewRecord(offset_commit_key("solo", "txn", 0),
                                         offset_commit_value(OffsetAndMetadata(77, -1, "", 5)), timestamp=5)],
                              base_offset=offset, is_transactional=True, producer_id=7, producer_epoch=0)
    log += build_record_batch([NewRecord(offset_commit_key("solo", "txn", 1),
                                         offset_commit_value(OffsetAndMetadata(88, -1, "", 5)), timestamp=5)],
                              base_offset=offset + 1, is_transactional=True, producer_id=8, producer_epoch=0)
    log += build_control_batch(0, producer_id=8, producer_epoch=0, base_offset=offset + 2, timestamp=6)
    log += build_control_batch(1, producer_id=7, producer_epoch=0, base_offset=offset + 3, timestamp=6)
    fresh = GroupCoordinator()
    loaded = fresh.load_partition(p, records_from_log(bytes(log)), h.now)
    assert "solo" in loaded
    assert fetched(fresh.handle(OffsetFetchRequest(group_id="solo"), h.now)) == {
        **fetched(h.fetch("solo")), ("txn", 0): (77, -1, "")}


def test_replay_rules():
    g = "rules"
    old_group = CO.GroupMetadataValue.build({"version": 0, "data": {
        "protocol_type": "consumer", "generation": 4, "protocol": "range", "leader": "m",
        "members": [{"member_id": "m", "client_id": "c", "client_host": "h", "session_timeout": 30_000,
                     "subscription": subscription("t"), "assignment": b"\x01"}]}})
    flexible_offset = CO.OffsetCommitValue.build({"version": 4, "data": {
        "offset": 9, "leader_epoch": 2, "metadata": "f", "commit_timestamp": 3}})
    records = [
        (offset_commit_key(g, "t", 0), offset_commit_value(OffsetAndMetadata(1, -1, "", 1))),
        (offset_commit_key(g, "t", 1), offset_commit_value(OffsetAndMetadata(2, -1, "", 1))),
        (offset_commit_key(g, "t", 0), flexible_offset),                   # last write wins
        (offset_commit_key(g, "t", 1), None),                              # tombstone
        (CO.RecordKey.build({"version": 0, "data": {"group": g, "topic": "u", "partition": 0}}),
         CO.OffsetCommitValue.build({"version": 0, "data": {"offset": 5, "metadata": "", "commit_timestamp": 2}})),
        (b"\x00\x03\x00\x05rules", b"\x00\x00anything"),                  # KIP-848: the consumer-groups part's
        (b"\x00\x0b\x00\x05rules", b"\x00\x00anything"),                  # a share-group record: nobody's
        (group_metadata_key(g), old_group),
        (group_metadata_key("dropped"), old_group),
        (offset_commit_key("dropped", "t", 0), offset_commit_value(OffsetAndMetadata(1, -1, "", 1))),
        (group_metadata_key("dropped"), None),                             # offsets survive the group
    ]
    result = replay(records)
    assert result.skipped == 1 and result.removed_groups == {"dropped"}
    assert result.consumer_records == [(3, b"\x00\x03\x00\x05rules", b"\x00\x00anything")]
    group = result.groups[g]
    member = group.members["m"]
    assert (group.state, group.generation_id, group.current_state_timestamp) == (GroupState.STABLE, 4, None)
    assert (member.rebalance_timeout_ms, member.session_timeout_ms, member.assignment) == (30_000, 30_000, b"\x01")
    assert group.subscribed_topics == frozenset({"t"})
    assert result.offsets[g] == {("t", 0): OffsetAndMetadata(9, 2, "f", 3),
                                 ("u", 0): OffsetAndMetadata(5, -1, "", 2)}
    c = GroupCoordinator()
    c.load_partition(0, records, 100)
    dropped = c.group("dropped")
    assert (dropped.state, dropped.protocol_type, dropped.generation_id) == (GroupState.EMPTY, None, 0)
    assert set(dropped.offsets) == {("t", 0)}


def test_unreadable_records_are_skipped_and_logged_once(caplog):
    good = (offset_commit_key("g", "t", 0), offset_commit_value(OffsetAndMetadata(7, -1, "", 1)))
    records = [(None, b"\x00\x03"), good, (offset_commit_key("g", "t", 1), b"\x00\x03\x00")]
    with caplog.at_level("WARNING", logger="kproto.server.groups"):
        result = replay(records)
    assert result.unreadable == 2
    assert result.offsets == {"g": {("t", 0): OffsetAndMetadata(7, -1, "", 1)}}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("skipping unreadable __consumer_offsets record at record 0: key: ")
    assert lines[1].startswith("skipping unreadable __consumer_offsets record at record 2: ")
