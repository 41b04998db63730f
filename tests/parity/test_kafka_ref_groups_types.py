"""``kproto groups`` over group types (KIP-848 consumer groups beside classic ones) diffed
against Kafka 4.4's ConsumerGroupCommand: ``--list --type``, ``--list --state``, and
``--describe --members --verbose`` / ``--state`` of a consumer-protocol group with a live
member (member epochs, assignments, GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH), each run by
both tools against Kafka's broker and kproto's (tests/parity/test_kafka_ref_tools.py's
``assert_same``, ids masked)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kproto.testing
from tests.kafka_ref import KafkaUnavailable, unavailable
from tests.parity.test_kafka_ref_tools import assert_same, kafka_tool, kproto_tool

TOPIC, CLASSIC, CONSUMER = "typed", "typed-classic", "typed-consumer"


def _stable(bootstrap: str, group: str, timeout: float = 120.0) -> None:
    """Wait for the event (the group Stable with its member assigned); ``timeout`` is a safety net."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = admin.describe_consumer_groups([group])[group].result(timeout=30)
        if d.state is ConsumerGroupState.STABLE and d.members and all(
                m.assignment.topic_partitions for m in d.members):
            return
        time.sleep(0.2)
    raise AssertionError(f"{group} never became Stable")


def seed(bootstrap: str) -> Consumer:
    """Topic ``typed`` (2 partitions, 4 records); an Empty classic group with offsets; a
    consumer group with one live ``group.protocol=consumer`` member (returned, to close)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(timeout=60)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(4):
        p.produce(TOPIC, value=b"v%d" % i, partition=i % 2)
    assert p.flush(60) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": CLASSIC, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([TOPIC])
    got = 0
    while got < 4:
        m = c.poll(30)
        got += m is not None and not m.error()
    c.commit(asynchronous=False)
    c.close()
    live = Consumer({"bootstrap.servers": bootstrap, "group.id": CONSUMER, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    live.subscribe([TOPIC])
    got = 0
    while got < 4:
        m = live.poll(1)
        if m is not None and not m.error():
            got += 1
    live.commit(asynchronous=False)
    _stable(bootstrap, CONSUMER)
    return live


@pytest.fixture(scope="module")
def kafka_bs(kafka_ref, tmp_path_factory) -> str:
    try:
        with kafka_ref.broker(tmp_path_factory.mktemp("kafka-group-types")) as b:
            live = seed(b.bootstrap)
            yield b.bootstrap
            live.close()
    except KafkaUnavailable as e:
        unavailable(e)


@pytest.fixture(scope="module")
def kproto_bs(tmp_path_factory) -> str:
    data = tmp_path_factory.mktemp("kproto-group-types") / "data"
    with kproto.testing.broker(config={"offsets.topic.num.partitions": "1"}, data_dir=data) as b:
        live = seed(b.bootstrap_servers)
        yield b.bootstrap_servers
        live.close()


@pytest.fixture(params=["kafka", "kproto"])
def bs(request) -> str:
    return request.getfixturevalue(f"{request.param}_bs")


CASES = {
    "list-type": ["--list", "--type"],
    "list-type-consumer": ["--list", "--type", "consumer"],
    "list-type-classic": ["--list", "--type", "classic"],
    "list-type-both": ["--list", "--type", "classic,consumer"],
    "list-type-state": ["--list", "--type", "--state"],
    "list-state-stable": ["--list", "--state", "stable"],
    "list-state-empty": ["--list", "--state", "Empty"],
    "describe-members": ["--describe", "--group", CONSUMER, "--members"],
    "describe-members-verbose": ["--describe", "--group", CONSUMER, "--members", "--verbose"],
    "describe-state": ["--describe", "--group", CONSUMER, "--state"],
    "describe-state-verbose": ["--describe", "--group", CONSUMER, "--state", "--verbose"],
    "describe-offsets": ["--describe", "--group", CONSUMER],
    "describe-offsets-verbose": ["--describe", "--group", CONSUMER, "--verbose"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_group_types(kafka_ref, bs, case):
    assert_same(kafka_ref, bs, "groups", CASES[case])


@pytest.mark.parametrize("types", ["share", "nope", "consumer,streams"])
def test_an_unknown_type_is_refused_with_kafkas_message(kafka_ref, bs, types):
    """Kafka prints the message then its usage and exits 1; kproto the message alone, exit 2
    (README: bad flags are one line)."""
    k = kafka_tool(kafka_ref, "groups", bs, ["--list", "--type", types])
    p = kproto_tool("groups", bs, ["--list", "--type", types])
    assert (k[0], k[1], k[2].splitlines()[0]) == (1, "", f"Invalid types list '{types}'. Valid types are: "
                                                         "Consumer, Classic")
    assert p == (2, "", k[2].splitlines()[0] + "\n")
