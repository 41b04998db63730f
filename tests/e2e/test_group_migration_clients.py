"""The online migration of a running classic group to a KIP-848 consumer group and back, with
real clients (confluent-kafka) on kproto and Apache Kafka 4.4 (the ``broker`` fixture): both
brokers must show the same group types and the same records, each consumed once.

Two ``group.protocol=classic`` consumers share a topic; a ``group.protocol=consumer`` one joins
(the classic group becomes a consumer group, the classic members stay in it through
JoinGroup/SyncGroup/Heartbeat); it leaves again (the group is classic again). The coordinator
request by request: tests/server/test_group_migration.py."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, Producer
from confluent_kafka.admin import AdminClient

from tests.components import KAFKA, KPROTO, Peer
from tests.helpers import create_topic, until_served

pytestmark = pytest.mark.brokers(KPROTO, KAFKA)


def _produce(bs: str, topic: str, start: int, n: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bs})
    for i in range(start, start + n):
        p.produce(topic, value=f"{topic}-{i}".encode(), partition=i % partitions)
    assert p.flush(30) == 0


def _consumer(bs: str, group: str, protocol: str) -> Consumer:
    return Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": protocol,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})


def _drain(consumers, seen: list, want: int, until=lambda: True, timeout: float = 120.0) -> None:
    """Poll every consumer in turn, committing each record before the next poll, until ``want``
    records were seen and ``until()`` holds (``timeout`` is only a safety net)."""
    deadline = time.monotonic() + timeout
    while (len(seen) < want or not until()) and time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen.append(m.value())
                c.commit(message=m, asynchronous=False)


def _group_type(bs: str, group: str) -> ConsumerGroupType:
    admin = AdminClient({"bootstrap.servers": bs})
    return admin.describe_consumer_groups([group])[group].result(timeout=30).type


def test_classic_group_upgrades_when_a_consumer_member_joins_and_downgrades_when_it_leaves(broker):
    bs = broker.bootstrap
    topic, group = Peer.unique("mig"), Peer.unique("g")
    create_topic(bs, topic, partitions=3)
    until_served(bs, topic)
    seen: list = []
    _produce(bs, topic, 0, 90, 3)
    a, b = _consumer(bs, group, "classic"), _consumer(bs, group, "classic")
    try:
        for c in (a, b):
            c.subscribe([topic])
        _drain([a, b], seen, 90)
        assert _group_type(bs, group) is ConsumerGroupType.CLASSIC

        member = _consumer(bs, group, "consumer")
        member.subscribe([topic])
        _produce(bs, topic, 90, 90, 3)
        # the consumer-protocol member gets its share: the group is a consumer group now
        _drain([a, b, member], seen, 180, until=lambda: bool(member.assignment()))
        assert member.assignment() and _group_type(bs, group) is ConsumerGroupType.CONSUMER

        member.close()       # the last consumer-protocol member leaves: classic again
        deadline = time.monotonic() + 60
        while _group_type(bs, group) is not ConsumerGroupType.CLASSIC and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _group_type(bs, group) is ConsumerGroupType.CLASSIC
        _produce(bs, topic, 180, 90, 3)
        _drain([a, b], seen, 270)
    finally:
        a.close()
        b.close()
    assert sorted(seen) == sorted(f"{topic}-{i}".encode() for i in range(270))


def test_a_static_classic_member_restarts_inside_a_consumer_group(broker):
    """A static classic consumer (``group.instance.id``) in a group a consumer-protocol member
    upgraded closes (a static member sends no LeaveGroup) and starts again: its JoinGroup with
    no member id replaces its old member (GroupMetadataManager.replaceMember), it gets its
    partitions back and the group stays a consumer group; every record is consumed once."""
    bs = broker.bootstrap
    topic, group = Peer.unique("mig-static"), Peer.unique("g")
    create_topic(bs, topic, partitions=3)
    until_served(bs, topic)
    seen: list = []

    def static_consumer() -> Consumer:
        c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "classic",
                      "group.instance.id": "static-1", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([topic])
        return c

    _produce(bs, topic, 0, 60, 3)
    a, s = _consumer(bs, group, "classic"), static_consumer()
    a.subscribe([topic])
    member = None
    try:
        _drain([a, s], seen, 60)
        member = _consumer(bs, group, "consumer")
        member.subscribe([topic])
        _produce(bs, topic, 60, 60, 3)
        _drain([a, s, member], seen, 120, until=lambda: bool(member.assignment()))
        assert _group_type(bs, group) is ConsumerGroupType.CONSUMER
        s.close()
        s = static_consumer()
        _produce(bs, topic, 120, 60, 3)
        _drain([a, s, member], seen, 180, until=lambda: bool(s.assignment()))
        assert s.assignment() and _group_type(bs, group) is ConsumerGroupType.CONSUMER
    finally:
        for c in (a, s, member):
            if c is not None:
                c.close()
    assert sorted(seen) == sorted(f"{topic}-{i}".encode() for i in range(180))
