"""`kproto groups --reset-offsets` against the rest of Kafka's ResetConsumerGroupOffsetTest.

Each test mirrors one test of apache/kafka trunk 1eb76443 (/work/.mirror/apache+kafka/repo),
tools/src/test/java/org/apache/kafka/tools/consumer/group/ResetConsumerGroupOffsetTest.java
(RCGOT.java), run against the kproto broker and tansu; the other 15 of its 25 methods are in
test_kafka_parity_groups.py, whose set-up this module shares: where Kafka's consumers read the
records, commit and leave (produceConsumeAndShutdown, consumerGroupClosable +
awaitConsumerProgress), the group commits the same offsets through kproto's Admin and is
left Empty, the broker state those leave. Kafka asserts on the plan
(``service.resetOffsets()``) and the committed offsets (``committedOffsets``); here the plan
is the printed table (reset_text) and the committed offsets are read back with OffsetFetch.
resetAndAssertOffsets runs each case three times, as RCGOT.java does: without --dry-run or
--execute (a dry run, with Kafka 4.4's WARN line on stderr), with --dry-run, and with
--execute; the first two leave the prior offsets committed.

RCGOT.java builds on a fresh cluster per test; the two --all-groups cases assert on every
group the broker has, so they get a broker of their own (``fresh``: kproto's and tansu's).
The others also run against Kafka 4.4's broker, with the same assertions.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Producer

from kproto.client.admin import NewTopic
from kproto.tools.groups.command import DRY_RUN_WARNING
from tests import components
from tests.helpers import admin, commit, committed, until_served
from tests.parity.test_kafka_parity_groups import group_id, produce, two_partition_topic
from tests.tools.helpers import kg, reset_text


pytestmark = pytest.mark.brokers("kproto", "tansu", "kafka")


def topic_name() -> str:
    return "foo-" + uuid.uuid4().hex[:10]             # RCGOT.java generateRandomTopic


def generate_ids(name: str) -> list[str]:
    return [name + "1", name + "2"]                   # RCGOT.java generateIds


def topic_with_records(bs: str, n: int = 100, partitions: int = 1) -> str:
    topic = topic_name()
    with admin(bs) as a:
        assert a.create_topics([NewTopic(topic, partitions, 1)])[topic].error == 0
    until_served(bs, topic)         # Kafka's broker leads the partitions once its metadata log got there
    produce(bs, topic, n)
    return topic


def of_topic(offsets: dict, topic: str) -> dict:
    """RCGOT.java committedOffsets / partitionToOffsets: the entries of one topic."""
    return {tp: o for tp, o in offsets.items() if tp[0] == topic}


def same_rows(out: str, expected: str) -> bool:
    """The same table, rows in any order: Kafka prints HashMaps, and RCGOT.java compares maps."""
    head, want = expected.split("\n")[:2], sorted(expected.split("\n")[2:])
    return out.split("\n")[:2] == head and sorted(out.split("\n")[2:]) == want


def reset_and_assert(bs: str, args: list[str], plan: dict[str, dict], topics: list[str]) -> None:
    """RCGOT.java resetAndAssertOffsets(args, expectedOffset, dryRun, topics) for the three runs
    (no action flag, --dry-run, --execute): every group's plan for ``topics`` is ``plan``'s,
    the table prints it, and only --execute commits it."""
    for action in ((), ("--dry-run",), ("--execute",)):
        prior = {g: committed(bs, g) for g in plan}
        status, out, err = kg(bs, "--reset-offsets", *args, *action)
        assert (status, err) == (0, DRY_RUN_WARNING + "\n" if not action else ""), action
        rows = [(g, t, p, o) for g, offsets in plan.items() for (t, p), o in offsets.items()]
        assert same_rows(out, reset_text(rows, groups=tuple(plan))), action
        for g, offsets in plan.items():
            for t in topics:
                want = of_topic(offsets, t) if action == ("--execute",) else of_topic(prior[g], t)
                assert of_topic(committed(bs, g), t) == want, (action, g, t)


@pytest.fixture
def fresh(broker, tmp_path):
    """A broker of the module's kind with no groups yet."""
    kind, _ = broker
    start = components.kproto_broker if kind == components.KPROTO else components.tansu
    with start(tmp_path) as bs:
        yield bs


def test_reset_offsets_existing_topic(broker):
    """RCGOT.java testResetOffsetsExistingTopic: "new.group" has committed nothing;
    --topic <100 records> --to-offset 50 plans 50 and --execute commits it."""
    _, bs = broker
    topic = topic_with_records(bs)
    reset_and_assert(bs, ["--group", "new.group", "--topic", topic, "--to-offset", "50"],
                     {"new.group": {(topic, 0): 50}}, [topic])


def test_reset_offsets_existing_topic_selected_groups(broker):
    """RCGOT.java testResetOffsetsExistingTopicSelectedGroups: two groups (<topic>1,
    <topic>2) that consumed all 100 records, both named with --group."""
    _, bs = broker
    topic = topic_with_records(bs)
    groups = generate_ids(topic)
    for g in groups:
        commit(bs, g, {(topic, 0): 100})
    args = [a for g in groups for a in ("--group", g)] + ["--topic", topic, "--to-offset", "50"]
    reset_and_assert(bs, args, {g: {(topic, 0): 50} for g in groups}, [topic])


@pytest.mark.brokers("kproto", "tansu")
def test_reset_offsets_existing_topic_all_groups(broker, fresh):
    """RCGOT.java testResetOffsetsExistingTopicAllGroups: three groups that consumed
    all 100 records, reset with --all-groups."""
    bs = fresh
    topic = topic_with_records(bs)
    groups = [group_id() for _ in range(3)]
    for g in groups:
        commit(bs, g, {(topic, 0): 100})
    reset_and_assert(bs, ["--all-groups", "--topic", topic, "--to-offset", "50"],
                     {g: {(topic, 0): 50} for g in groups}, [topic])


@pytest.mark.brokers("kproto", "tansu")
def test_reset_offsets_all_topics_all_groups(broker, fresh):
    """RCGOT.java testResetOffsetsAllTopicsAllGroups: two topics (named after a
    group id, as Kafka's test names them) of 100 records, two groups (named after a
    topic) that consumed both; --all-groups --all-topics --to-offset 50."""
    bs = fresh
    topics, groups = generate_ids(group_id()), generate_ids(topic_name())
    for t in topics:
        with admin(bs) as a:
            assert a.create_topics([NewTopic(t, 1, 1)])[t].error == 0
        produce(bs, t, 100)
    for g in groups:
        commit(bs, g, {(t, 0): 100 for t in topics})
    reset_and_assert(bs, ["--all-groups", "--all-topics", "--to-offset", "50"],
                     {g: {(t, 0): 50 for t in topics} for g in groups}, topics)


def produce_at(bs: str, topic: str, n: int, stamp_ms: int) -> None:
    """n records, one per batch, each with CreateTime ``stamp_ms``."""
    producer = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for i in range(n):
        producer.produce(topic, value=b"m%d" % i, partition=0, timestamp=stamp_ms)
        assert producer.flush(20) == 0


@pytest.mark.brokers("kproto", "kafka")
def test_reset_offsets_to_zoned_date_time(broker):
    """RCGOT.java testResetOffsetsToZonedDateTime: 50 records, a checkpoint, 50 more;
    --to-datetime <checkpoint with its zone offset> (format yyyy-MM-dd'T'HH:mm:ss.SSSXXX)
    resets to 50. Kafka takes the checkpoint between two sends; here the records carry
    timestamps 5 s either side of it, so no clock tick decides the answer. The zone is
    +05:30, not the machine's, so the offset is applied. (Not tansu: tansu 0.6's
    ListOffsets by timestamp varies between runs, see test_kafka_parity_groups.)"""
    _, bs = broker
    topic, group = topic_name(), group_id()
    with admin(bs) as a:
        assert a.create_topics([NewTopic(topic, 1, 1)])[topic].error == 0
    until_served(bs, topic)
    checkpoint_ms = time.time_ns() // 1_000_000 - 60_000
    produce_at(bs, topic, 50, checkpoint_ms - 5_000)
    produce_at(bs, topic, 50, checkpoint_ms + 5_000)
    commit(bs, group, {(topic, 0): 100})
    zone = timezone(timedelta(hours=5, minutes=30))
    stamp = datetime.fromtimestamp(checkpoint_ms / 1000, zone).isoformat(timespec="milliseconds")
    assert stamp.endswith("+05:30")
    status, out, err = kg(bs, "--reset-offsets", "--group", group, "--all-topics", "--to-datetime", stamp,
                          "--execute")
    assert (status, out, err) == (0, reset_text([(group, topic, 0, 50)]), "")
    assert committed(bs, group) == {(topic, 0): 50}


def test_reset_offsets_to_earliest_on_one_topic(broker):
    """RCGOT.java testResetOffsetsToEarliestOnOneTopic: --topic <t> --to-earliest --execute."""
    _, bs = broker
    topic, group = topic_with_records(bs), group_id()
    commit(bs, group, {(topic, 0): 100})
    status, out, err = kg(bs, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert (status, out, err) == (0, reset_text([(group, topic, 0, 0)]), "")
    assert committed(bs, group) == {(topic, 0): 0}


def test_reset_offsets_to_earliest_on_one_topic_and_partition(broker):
    """RCGOT.java testResetOffsetsToEarliestOnOneTopicAndPartition: --topic <t>:1 over a
    2-partition topic resets partition 1 and leaves partition 0's committed offset."""
    _, bs = broker
    topic, group = two_partition_topic(bs, "foo-"), group_id()
    commit(bs, group, {(topic, 0): 5, (topic, 1): 5})
    status, out, err = kg(bs, "--reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-earliest",
                          "--execute")
    assert (status, out, err) == (0, reset_text([(group, topic, 1, 0)]), "")
    assert committed(bs, group) == {(topic, 0): 5, (topic, 1): 0}


def test_reset_offsets_to_earliest_on_topics(broker):
    """RCGOT.java testResetOffsetsToEarliestOnTopics: --topic t1 --topic t2, each with
    100 records consumed: both reset to 0."""
    _, bs = broker
    t1, t2, group = topic_with_records(bs), topic_with_records(bs), group_id()
    commit(bs, group, {(t1, 0): 100, (t2, 0): 100})
    status, out, err = kg(bs, "--reset-offsets", "--group", group, "--topic", t1, "--topic", t2, "--to-earliest",
                          "--execute")
    assert (status, err) == (0, "")
    assert same_rows(out, reset_text([(group, t1, 0, 0), (group, t2, 0, 0)]))
    assert committed(bs, group) == {(t1, 0): 0, (t2, 0): 0}


def test_reset_offsets_to_earliest_on_topics_and_partitions(broker):
    """RCGOT.java testResetOffsetsToEarliestOnTopicsAndPartitions: --topic t1:1 --topic
    t2:1 over two 2-partition topics: partition 1 of each reset, partition 0 kept."""
    _, bs = broker
    t1, t2, group = two_partition_topic(bs, "foo-"), two_partition_topic(bs, "foo-"), group_id()
    prior = {(t, p): 5 for t in (t1, t2) for p in (0, 1)}
    commit(bs, group, prior)
    status, out, err = kg(bs, "--reset-offsets", "--group", group, "--topic", f"{t1}:1", "--topic", f"{t2}:1",
                          "--to-earliest", "--execute")
    assert (status, err) == (0, "")
    assert same_rows(out, reset_text([(group, t1, 1, 0), (group, t2, 1, 0)]))
    assert committed(bs, group) == {**prior, (t1, 1): 0, (t2, 1): 0}


def test_reset_with_unrecognized_new_consumer_option(broker):
    """RCGOT.java testResetWithUnrecognizedNewConsumerOption: --new-consumer (gone since
    Kafka 2.x) is refused by the option parser before anything is reset. Kafka's
    joptsimple throws UnrecognizedOptionException ("new-consumer is not a recognized
    option", a stack trace, exit 1); kproto prints the one usage line and exits 2, as
    for every bad flag (README: exit statuses)."""
    _, bs = broker
    group = group_id()
    status, out, err = kg(bs, "--new-consumer", "--reset-offsets", "--group", group, "--all-topics",
                          "--to-offset", "2", "--export")
    assert (status, out, err) == (2, "", "No such option '--new-consumer'.\n")
    assert committed(bs, group) == {}


@pytest.mark.brokers("kproto")
def test_reset_without_action_prints_kafkas_warning(broker, kafka_ref):
    """resetAndAssertOffsets' first run (neither --dry-run nor --execute), by Kafka 4.4's
    own ConsumerGroupCommand and by kproto's on the same broker and input: the same
    plan on stdout and the same WARN line on stderr, and nothing committed."""
    from tests.parity.test_kafka_ref_tools import kafka_tool
    _, bs = broker
    topic = topic_with_records(bs)
    args = ["--reset-offsets", "--group", "new.group-warn", "--topic", topic, "--to-offset", "50"]
    kafka = kafka_tool(kafka_ref, "groups", bs, args)
    assert kafka == (0, reset_text([("new.group-warn", topic, 0, 50)]), DRY_RUN_WARNING + "\n")
    assert kg(bs, *args) == kafka
    assert committed(bs, "new.group-warn") == {}
