"""OffsetDelete in the group coordinator (OffsetMetadataManager.deleteOffsets,
ClassicGroup.validateOffsetDelete / isSubscribedToTopic), sans-I/O."""

from __future__ import annotations

from kproto.server.coordinator import OffsetDeleteRequest, OffsetFetchRequestTopic, Pending
from kproto.server.coordinator.persistence import parse_key
from tests.server.helpers import E, Harness, fetched


def delete(h: Harness, group: str, **topics: tuple[int, ...]):
    return h.send(OffsetDeleteRequest(group_id=group, topics=tuple(
        OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items())))


def errors(response) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def test_offsets_of_an_empty_group_go_with_tombstones():
    h = Harness()
    h.commit({("t", 0): 1, ("t", 1): 2, ("u", 0): 3}, group="solo")
    r = delete(h, "solo", t=(0, 5))
    assert (r.error_code, errors(r)) == (E.NONE, {("t", 0): E.NONE, ("t", 5): E.NONE})
    assert fetched(h.fetch("solo")) == {("t", 1): (2, -1, ""), ("u", 0): (3, -1, "")}
    (key, value), = h.log[h.c.partition_for("solo")][-1:]
    assert (parse_key(key).group, parse_key(key).topic, parse_key(key).partition, value) == ("solo", "t", 0, None)
    before = len(h.log[h.c.partition_for("solo")])
    assert errors(delete(h, "solo", t=(0,))) == {("t", 0): E.NONE}     # nothing left: nothing written
    assert len(h.log[h.c.partition_for("solo")]) == before


def test_unknown_dead_and_non_consumer_groups():
    h = Harness()
    assert delete(h, "missing", t=(0,)).error_code == E.GROUP_ID_NOT_FOUND
    assert delete(h, "", t=(0,)).error_code == E.INVALID_GROUP_ID
    h.stable_group(1, group="conn", protocol_type="connect")
    r = delete(h, "conn", t=(0,))
    assert (r.error_code, r.topics) == (E.NON_EMPTY_GROUP, ())


def test_a_consumer_group_keeps_the_offsets_of_its_subscribed_topics():
    h = Harness()
    (a,), gen = h.stable_group(1)                   # subscribed to "t"
    h.commit({("t", 0): 4, ("u", 0): 5}, generation=gen, member_id=a)
    r = delete(h, "g", t=(0, 1), u=(0,))
    assert (r.error_code, errors(r)) == (E.NONE, {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC,
                                                  ("t", 1): E.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): E.NONE})
    assert fetched(h.fetch()) == {("t", 0): (4, -1, "")}


def test_answered_once_the_tombstones_are_appended():
    h = Harness(auto_append=False)
    h.result(_released(h, h.commit({("t", 0): 1}, group="solo")))
    d = delete(h, "solo", t=(0,))
    assert isinstance(d, Pending) and fetched(h.fetch("solo")) == {("t", 0): (1, -1, "")}
    h.release()
    assert errors(h.result(d)) == {("t", 0): E.NONE} and fetched(h.fetch("solo")) == {}


def _released(h: Harness, pending):
    h.release()
    return pending
