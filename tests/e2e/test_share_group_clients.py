"""KIP-932 share groups with a real client: confluent-kafka 2.16's ShareConsumer against
kproto's broker (issue 25): records split between members with none delivered twice,
release / lock-timeout redelivery, reject, the delivery-count limit, the share-partition
start offset surviving a restart (read back from ``__share_group_state``), a share group's
id refusing JoinGroup, and group configs. kproto-only: they read kproto's state topic and
restart it. The share coordinator itself: tests/server/test_share_groups.py."""

from __future__ import annotations

import time

import confluent_kafka as ck
import confluent_kafka.admin  # noqa: F401
import pytest

import kproto.testing
from kproto.client.transport import BrokerClient
from kproto.common import SHARE_GROUP_STATE_TOPIC_NAME
from kproto.schemas import protocol as P
from kproto.server.share import persistence

# -- confluent-kafka's ShareConsumer -----------------------------------------------------

LOCK_MS = 1000
CONFIG = {"share.coordinator.state.topic.num.partitions": "1",
          "group.share.min.record.lock.duration.ms": str(LOCK_MS),
          "group.share.record.lock.duration.ms": str(LOCK_MS),
          "group.share.delivery.count.limit": "3"}
DEADLINE_S = 60         # a safety net only: every wait below ends on its event


def _topic(bs: str, name: str, partitions: int) -> None:
    admin = ck.admin.AdminClient({"bootstrap.servers": bs})
    admin.create_topics([ck.admin.NewTopic(name, partitions, 1)])[name].result()


def _produce(bs: str, topic: str, n: int, partitions: int) -> None:
    p = ck.Producer({"bootstrap.servers": bs})
    for i in range(n):
        p.produce(topic, value=b"%d" % i, partition=i % partitions)
    assert p.flush(30) == 0


def _consumer(bs: str, group: str, topic: str, **conf) -> ck.ShareConsumer:
    c = ck.ShareConsumer({"bootstrap.servers": bs, "group.id": group, **conf})
    c.subscribe([topic])
    return c


def _wait_assigned(broker, group: str, members: int) -> None:
    """Until ShareGroupDescribe shows ``members`` members, each with partitions at the
    group's epoch (their share partitions then exist, initialized at the log end: share.auto.offset.reset latest)."""
    end = time.monotonic() + DEADLINE_S
    with BrokerClient(broker.bootstrap_servers) as client:
        while time.monotonic() < end:
            d = client.request(P.share_group_describe.API.key,
                               {"group_ids": [group], "include_authorized_operations": False}).groups[0]
            if len(d.members) == members and all(m.assignment.topic_partitions and m.member_epoch == d.group_epoch
                                                 for m in d.members):
                return      # each member has heartbeated since the last assignment: it knows its partitions
    raise AssertionError(f"{group}: {members} members never got partitions")


def _share_state(bs: str, group: str) -> dict[int, int]:
    """partition -> share-partition start offset, replayed from what __share_group_state holds."""
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": "state-reader", "enable.auto.commit": False})
    tp = ck.TopicPartition(SHARE_GROUP_STATE_TOPIC_NAME, 0, 0)
    _, high = c.get_watermark_offsets(tp, timeout=30)
    c.assign([tp])
    records = []
    end = time.monotonic() + DEADLINE_S
    while len(records) < high and time.monotonic() < end:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            records.append((m.key(), m.value()))
    c.close()
    return {k[2]: s.start_offset for k, s in persistence.replay(records).states.items() if k[0] == group}


def _poll_until(consumers, want, on_message=lambda c, m: None) -> list:
    """Poll every consumer in turn until ``want(got)``; got: (consumer index, partition, offset, value)."""
    got: list = []
    end = time.monotonic() + DEADLINE_S
    while not want(got):
        assert time.monotonic() < end, f"gave up with {len(got)} records"
        for i, c in enumerate(consumers):
            for m in c.poll(0.2):
                assert m.error() is None, m.error()
                got.append((i, m.partition(), m.offset(), m.value()))
                on_message(c, m)
    return got


@pytest.fixture
def share_broker(tmp_path):
    with kproto.testing.broker(config=CONFIG, data_dir=tmp_path / "data") as b:
        yield b


@pytest.mark.parametrize("mode", ["implicit", "explicit"])
def test_two_share_consumers_split_200_records(share_broker, mode):
    bs = share_broker.bootstrap_servers
    _topic(bs, "split", 2)
    explicit = mode == "explicit"
    consumers = [_consumer(bs, "g-split", "split", **{"share.acknowledgement.mode": mode}) for _ in range(2)]
    try:
        for c in consumers:
            c.poll(0.1)
        _wait_assigned(share_broker, "g-split", 2)
        _produce(bs, "split", 200, 2)
        got = _poll_until(consumers, lambda g: len(g) >= 200,
                          (lambda c, m: c.acknowledge(m)) if explicit else (lambda c, m: None))
        for c in consumers:
            c.commit_sync()
    finally:
        for c in consumers:
            c.close()
    assert sorted((p, o) for _, p, o, _ in got) == sorted((i % 2, i // 2) for i in range(200))   # each once
    # Which consumer took which record is not asserted: a member's long-polling ShareFetch may
    # still hold the partition it is about to hand over (Kafka's partition leaders do not check
    # assignments either); that no record went to both is the property.
    assert _share_state(bs, "g-split") == {0: 100, 1: 100}                      # all acknowledged: the SPSO is at the end


def test_released_and_unacknowledged_records_are_redelivered_rejected_ones_archived(share_broker):
    bs = share_broker.bootstrap_servers
    _topic(bs, "redo", 1)
    a = _consumer(bs, "g-redo", "redo", **{"share.acknowledgement.mode": "explicit"})
    b = None
    try:
        a.poll(0.1)
        _wait_assigned(share_broker, "g-redo", 1)
        _produce(bs, "redo", 3, 1)

        def ack(consumer, m):
            # 0: released, 1: rejected, 2: never acknowledged (a stops polling)
            if m.offset() in (0, 1):
                consumer.acknowledge(m, ck.AcknowledgeType.RELEASE if m.offset() == 0 else ck.AcknowledgeType.REJECT)

        first = _poll_until([a], lambda g: len(g) >= 3, ack)
        a.commit_sync()
        # b gets 0 at once and 2 once a's lock on it runs out; 1 is archived
        b = _consumer(bs, "g-redo", "redo")
        again = _poll_until([b], lambda g: {o for *_, o, _ in g} >= {0, 2})
        b.commit_sync()
    finally:
        for c in (a, b):
            if c is not None:
                c.close()
    assert sorted(o for *_, o, _ in first) == [0, 1, 2]
    assert sorted(o for *_, o, _ in again) == [0, 2]
    assert _share_state(bs, "g-redo") == {0: 3}


def test_delivery_count_limit_archives_and_state_survives_a_restart(tmp_path):
    data = tmp_path / "data"
    with kproto.testing.broker(config=CONFIG, data_dir=data) as b:
        bs = b.bootstrap_servers
        _topic(bs, "limit", 1)
        c = _consumer(bs, "g-limit", "limit", **{"share.acknowledgement.mode": "explicit"})
        try:
            c.poll(0.1)
            _wait_assigned(b, "g-limit", 1)
            _produce(bs, "limit", 2, 1)

            def release_zero(consumer, m):
                consumer.acknowledge(m, ck.AcknowledgeType.RELEASE if m.offset() == 0 else
                                     ck.AcknowledgeType.ACCEPT)

            # offset 0 released at each of its 3 deliveries (the limit), then archived
            got = _poll_until([c], lambda g: sum(1 for *_, o, _ in g if o == 0) >= 3, release_zero)
            c.commit_sync()
        finally:
            c.close()
        assert sorted(o for _, _, o, _ in got) == [0, 0, 0, 1]
        _produce(bs, "limit", 2, 1)         # offsets 2, 3: left in flight at shutdown
        assert _share_state(bs, "g-limit") == {0: 2}
    with kproto.testing.broker(config=CONFIG, data_dir=data) as b:
        c = _consumer(b.bootstrap_servers, "g-limit", "limit")
        try:
            got = _poll_until([c], lambda g: len(g) >= 2)
            c.commit_sync()
        finally:
            c.close()
        assert sorted(o for _, _, o, _ in got) == [2, 3]    # from the persisted SPSO, not the log end


def test_a_share_group_id_is_not_a_classic_group(share_broker):
    bs = share_broker.bootstrap_servers
    _topic(bs, "kinds", 1)
    c = _consumer(bs, "g-kinds", "kinds")
    try:
        c.poll(0.1)
        _wait_assigned(share_broker, "g-kinds", 1)
        classic = ck.Consumer({"bootstrap.servers": bs, "group.id": "g-kinds", "auto.offset.reset": "earliest"})
        classic.subscribe(["kinds"])
        try:
            errors = []
            end = time.monotonic() + DEADLINE_S
            while not errors and time.monotonic() < end:
                m = classic.poll(0.2)
                if m is not None and m.error() is not None:
                    errors.append(m.error().code())
        finally:
            classic.close()
    finally:
        c.close()
    assert errors == [ck.KafkaError.INCONSISTENT_GROUP_PROTOCOL]


def test_group_config_share_auto_offset_reset_earliest(share_broker):
    bs = share_broker.bootstrap_servers
    _topic(bs, "early", 1)
    _produce(bs, "early", 5, 1)             # before the group exists
    admin = ck.admin.AdminClient({"bootstrap.servers": bs})
    group = ck.admin.ConfigResource(ck.admin.ResourceType.GROUP, "g-early")

    def alter(name: str, value: str):
        resource = ck.admin.ConfigResource(ck.admin.ResourceType.GROUP, "g-early", incremental_configs=[
            ck.admin.ConfigEntry(name, value, incremental_operation=ck.admin.AlterConfigOpType.SET)])
        return admin.incremental_alter_configs([resource])[resource]

    with pytest.raises(ck.KafkaException, match="share.record.lock.duration.ms must be greater than or equal to 1000"):
        alter("share.record.lock.duration.ms", "999").result()
    with pytest.raises(ck.KafkaException, match="Unknown group config name: share.nope"):
        alter("share.nope", "1").result()
    alter("share.auto.offset.reset", "earliest").result()
    described = admin.describe_configs([group])[group].result()
    assert described["share.auto.offset.reset"].value == "earliest"
    assert described["share.record.lock.duration.ms"].value == str(LOCK_MS)      # the broker's, a default
    c = _consumer(bs, "g-early", "early")
    try:
        got = _poll_until([c], lambda g: len(g) >= 5)
        c.commit_sync()
    finally:
        c.close()
    assert sorted(o for *_, o, _ in got) == [0, 1, 2, 3, 4]
