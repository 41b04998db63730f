"""KIP-848 consumer groups with a real client: confluent-kafka with ``group.protocol=consumer``
against kproto and Apache Kafka 4.4 (the ``broker`` fixture).

Each scenario checks what a user observes (records consumed, none twice, through members
leaving, joining, restarting and a classic group turning into a consumer group); both
brokers must give the same. The coordinator itself: tests/server/test_consumer_groups_kip848.py.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest
from confluent_kafka import Consumer, Producer

from tests.components import KAFKA, KPROTO, Peer
from tests.helpers import create_topic, until_served

pytestmark = pytest.mark.brokers(KPROTO, KAFKA)


def _topic(bs: str, name: str, partitions: int, records: int) -> None:
    create_topic(bs, name, partitions=partitions)
    until_served(bs, name)
    p = Producer({"bootstrap.servers": bs})
    for i in range(records):
        p.produce(name, value=f"{name}-{i}".encode(), partition=i % partitions)
    assert p.flush(30) == 0


@contextmanager
def _consumer(bs: str, group: str, **extra):
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, **extra})
    try:
        yield c
    finally:
        c.close()


def _drain(consumers, seen: list, want: int, timeout: float = 90.0) -> None:
    """Poll every consumer in turn, committing each record before the next poll (so a
    partition that moves is resumed after the last record consumed: no duplicates).
    ``timeout`` is a safety net: the caller's assertions say what was missing."""
    deadline = time.monotonic() + timeout
    while len(seen) < want and time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen.append(m.value())
                c.commit(message=m, asynchronous=False)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_three_members_consume_300_exactly_once_through_leave_and_join(broker, assignor):
    bootstrap = broker.bootstrap
    topic, group = Peer.unique(f"k848-{assignor}"), Peer.unique("g")
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


def test_regex_subscription_picks_up_a_new_topic(broker):
    bootstrap = broker.bootstrap
    prefix = Peer.unique("re") + "-"
    _topic(bootstrap, prefix + "a", 1, 5)
    seen: list = []
    with _consumer(bootstrap, Peer.unique("g"), **{"topic.metadata.refresh.interval.ms": 1000}) as c:
        c.subscribe([f"^{prefix}.*"])
        _drain([c], seen, 5)
        _topic(bootstrap, prefix + "b", 1, 5)
        _drain([c], seen, 10, timeout=120)
    assert sorted(seen) == sorted([f"{prefix}a-{i}".encode() for i in range(5)]
                                  + [f"{prefix}b-{i}".encode() for i in range(5)])


def test_static_member_restarts_and_resumes(broker):
    bootstrap = broker.bootstrap
    topic, group = Peer.unique("k848s"), Peer.unique("g")
    _topic(bootstrap, topic, 2, 20)
    seen: list = []
    with _consumer(bootstrap, group, **{"group.instance.id": "static-1"}) as c:
        c.subscribe([topic])
        _drain([c], seen, 10)
    with _consumer(bootstrap, group, **{"group.instance.id": "static-1"}) as c:
        c.subscribe([topic])
        _drain([c], seen, 20)
    assert len(seen) == 20 and len(set(seen)) == 20


def test_online_upgrade_of_an_empty_classic_group(broker):
    bootstrap = broker.bootstrap
    topic, group = Peer.unique("k848u"), Peer.unique("g")
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
