"""`kproto groups` against the expectations of Kafka's own consumer-group tool tests.

Each test mirrors a test of apache/kafka trunk 1eb76443 (/work/.mirror/apache+kafka/repo):
tools/src/test/java/org/apache/kafka/tools/consumer/group/ResetConsumerGroupOffsetTest.java
(RCGOT.java) and DescribeConsumerGroupTest.java (DCGT.java), run against the kproto broker
and tansu. Printed text not pinned by those tests is cited from
tools/src/main/java/org/apache/kafka/tools/consumer/group/ConsumerGroupCommand.java (CGC.java:N).

Set-up difference: Kafka's ``produceConsumeAndShutdown`` has a consumer read all 100
records, commit and leave; here the group commits offset 100 through kproto's Admin
(OffsetCommit as an inactive group), which leaves the broker in the same state: an
Empty group with offset 100 committed. Known, deliberate output difference: Kafka's
printError writes "\\nError: ..." to stdout (CGC.java:153); kproto writes "Error: ..."
as one line on stderr and exits 1.

Ledger, DescribeConsumerGroupTest (DCGT.java, 33 methods): all 33 ported. The
live-member ones run for both group protocols (classic and KIP-848 consumer)
against kproto's broker and Apache Kafka 4.4's (``cluster``); the
ShortInitializationTimeout four against a listener that never answers (their
docstring says why); the four option tests without a broker. Porting them
found that kproto's tool described every group with DescribeGroups, which a
consumer-protocol group refuses ("is not a classic group"): it now asks
ConsumerGroupDescribe first, as Kafka's Admin does, and prints the member and
group epochs and target assignments Kafka 4.4 prints (measured: byte for byte
the same output as Kafka's tool on the same broker).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Producer

from kproto.client.admin import NewTopic
from tests.helpers import admin, commit, committed, until_served
from tests.tools.helpers import kg, reset_text
from tests.tools.helpers import groups_ok as ok

# The plan table is reset_text: Kafka 4.4's measured printOffsetsToReset (3.x's fixed
# "%-30s %-30s %-10s %-15s", CGC.java:158, is gone: the columns fit the longest group and topic).


def produce(bs: str, topic: str, n: int, partition: int = 0) -> None:
    """RCGOT.java produceMessages: n records to one partition, one per batch
    (tansu 0.6 gives a whole batch one offset). Stamped 10 s in the past, so
    "nothing in the last 0.1 s" holds however slowly the machine runs."""
    producer = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    stamp = time.time_ns() // 1_000_000 - 10_000
    for i in range(n):
        producer.produce(topic, value=b"m%d" % i, partition=partition, timestamp=stamp)
        assert producer.flush(20) == 0


def two_partition_topic(bs: str, prefix: str) -> str:
    """A 2-partition topic with 5 records in each partition (Kafka's test spreads
    its 100 records over both; --to-offset 2 needs at least 2 in each)."""
    topic = prefix + uuid.uuid4().hex[:6]
    with admin(bs) as a:
        assert a.create_topics([NewTopic(topic, 2, 1)])[topic].error == 0
    until_served(bs, topic)         # Kafka's broker leads the partitions once its metadata log got there
    for p in (0, 1):
        produce(bs, topic, 5, p)
    return topic


@pytest.fixture(scope="module")
def topics(broker):
    """foo-100: the 100 records produceConsumeAndShutdown consumed. foo-200: the
    same, then produceMessages(cluster, topic, 100) once more."""
    kind, bs = broker
    with admin(bs) as a:
        for topic in ("foo-100", "foo-200"):
            assert a.create_topics([NewTopic(topic, 1, 1)])[topic].error == 0
    produce(bs, "foo-100", 100)
    produce(bs, "foo-200", 200)
    return kind, bs


def group_id() -> str:
    return "test.group-" + uuid.uuid4().hex[:8]      # RCGOT.java generateRandomGroupId


@pytest.mark.parametrize("test, topic, plan, expected", [
    ("testResetOffsetsToEarliest", "foo-100", ["--to-earliest"], 0),
    ("testResetOffsetsToLatest", "foo-200", ["--to-latest"], 200),
    ("testResetOffsetsToCurrentOffset", "foo-200", ["--to-current"], 100),
    ("testResetOffsetsToSpecificOffset", "foo-100", ["--to-offset", "1"], 1),
    ("testResetOffsetsShiftPlus", "foo-200", ["--shift-by", "50"], 150),
    ("testResetOffsetsShiftMinus", "foo-200", ["--shift-by", "-50"], 50),
    ("testResetOffsetsShiftByLowerThanEarliest", "foo-200", ["--shift-by", "-150"], 0),
    ("testResetOffsetsShiftByHigherThanLatest", "foo-200", ["--shift-by", "150"], 200),
    ("testResetOffsetsToLocalDateTime", "foo-100", ["--to-datetime", "2001-01-01T00:00:00.000"], 0),
    ("testResetOffsetsByDuration", "foo-100", ["--by-duration", "P7D"], 0),
], ids=lambda v: v if isinstance(v, str) and v.startswith("test") else None)
def test_reset_offsets(topics, test, topic, plan, expected):
    """RCGOT.java <test>: group with offset 100 committed, ``--all-topics <plan>
    --execute``: the plan row and the committed offset are ``expected``.
    (Kafka's by-duration case uses PT1M against records produced seconds earlier;
    P7D here keeps the same answer, the earliest offset, on a slow machine. Its
    to-datetime case is "now minus one day" against records produced now: a date
    before the records, here 2001-01-01.)"""
    _, bs = topics
    group = group_id()
    commit(bs, group, {(topic, 0): 100})
    status, out, err = kg(bs, "--reset-offsets", "--group", group, "--all-topics", *plan, "--execute")
    # CGC.java:1135/1142 log a warning when a shift runs past either end.
    shifted = 100 + int(plan[1]) if plan[0] == "--shift-by" else expected
    if shifted > expected:
        warn = (f"WARN New offset ({shifted}) is higher than latest offset for topic partition {topic}-0. "
                f"Value will be set to {expected}\n")
    elif shifted < expected:
        warn = (f"WARN New offset ({shifted}) is lower than earliest offset for topic partition {topic}-0. "
                f"Value will be set to {expected}\n")
    else:
        warn = ""
    assert status == 0
    assert err == warn
    # --all-topics: every topic the group has offsets for, here just one.
    assert out == reset_text([(group, topic, 0, expected)])
    assert committed(bs, group) == {(topic, 0): expected}


def test_reset_offsets_dry_run_changes_nothing(topics):
    """RCGOT.java resetAndAssertOffsets(dryRun = true): the plan is printed, the
    committed offsets stay the prior ones."""
    _, bs = topics
    group = group_id()
    commit(bs, group, {("foo-100", 0): 100})
    status, out, _ = kg(bs, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--dry-run")
    assert status == 0
    assert out == reset_text([(group, "foo-100", 0, 0)])
    assert committed(bs, group) == {("foo-100", 0): 100}


def empty_partition_warning(topic: str) -> str:
    """CGC.java:845-846 when ListOffsets by timestamp finds nothing: Kafka prints
    "\\nWarn: ..." on stdout; kproto prints the line on stderr, keeping stdout the plan."""
    return f"Warn: Partition 0 from topic {topic} is empty. Falling back to latest known offset.\n"


def test_reset_offsets_by_duration_to_earliest(topics):
    """RCGOT.java testResetOffsetsByDurationToEarliest: PT0.1S, nothing that
    recent, so the log end offset (100)."""
    _, bs = topics
    group = group_id()
    commit(bs, group, {("foo-100", 0): 100})
    kind, _ = topics
    status, out, err = kg(bs, "--reset-offsets", "--group", group, "--all-topics", "--by-duration", "PT0.1S",
                          "--execute")
    assert (status, err) == (0, empty_partition_warning("foo-100") if kind == "kproto" else "")
    if kind == "kproto":
        want = 100
    else:
        # tansu 0.6 does not answer ListOffsets by timestamp as Kafka does (measured: 0, 10
        # and 81 for the same records in different runs): the tool resets to what it says.
        want = int(out.split()[-1])
        assert 0 <= want <= 100
    assert out == reset_text([(group, "foo-100", 0, want)])
    assert committed(bs, group) == {("foo-100", 0): want}


def test_reset_offsets_by_duration_fallback_to_latest_when_no_records(topics):
    """RCGOT.java testResetOffsetsByDurationFallbackToLatestWhenNoRecords: an
    empty topic, --topic and PT1M: offset 0."""
    _, bs = topics
    topic, group = "foo-empty-" + uuid.uuid4().hex[:6], group_id()
    with admin(bs) as a:
        assert a.create_topics([NewTopic(topic, 1, 1)])[topic].error == 0
    status, out, err = kg(bs, "--reset-offsets", "--group", group, "--topic", topic, "--by-duration", "PT1M",
                          "--execute")
    kind, _ = topics
    assert (status, err) == (0, empty_partition_warning(topic) if kind == "kproto" else "")   # tansu: as above
    assert out == reset_text([(group, topic, 0, 0)])
    assert committed(bs, group) == {(topic, 0): 0}


def test_reset_offsets_not_existing_group(topics):
    """RCGOT.java testResetOffsetsNotExistingGroup: "missing.group", --all-topics
    --to-current --execute resets nothing and commits nothing. resetOffsets()
    maps the group to an empty map (the test reads .get(group).isEmpty()), so
    printOffsetsToReset prints the header and the final newline (measured on Kafka 4.4)."""
    _, bs = topics
    status, out, err = kg(bs, "--reset-offsets", "--group", "missing.group", "--all-topics", "--to-current",
                          "--execute")
    assert (status, out, err) == (0, reset_text([]), "")
    assert committed(bs, "missing.group") == {}


def test_reset_offsets_export_import_plan_single_group_arg(topics, tmp_path):
    """RCGOT.java testResetOffsetsExportImportPlanSingleGroupArg: --to-offset 2
    --export over a 2-partition topic, then --from-file --dry-run gives the same
    offsets. One group: "topic,partition,offset" (CsvRecordNoGroup)."""
    _, bs = topics
    topic, group = two_partition_topic(bs, "foo-x"), group_id()
    commit(bs, group, {(topic, 0): 5, (topic, 1): 5})
    out = ok(bs, "--reset-offsets", "--group", group, "--all-topics", "--to-offset", "2", "--export", "--dry-run")
    assert sorted(out.split("\n")) == sorted(["", "", f"{topic},0,2", f"{topic},1,2"])
    plan = tmp_path / "reset.csv"
    plan.write_text(out)
    imported = ok(bs, "--reset-offsets", "--group", group, "--all-topics", "--from-file", str(plan), "--dry-run")
    rows = sorted(line.split() for line in imported.strip().split("\n")[1:])
    assert rows == [[group, topic, "0", "2"], [group, topic, "1", "2"]]


def test_reset_offsets_export_import_plan(topics, tmp_path):
    """RCGOT.java testResetOffsetsExportImportPlan: two groups, "group,topic,
    partition,offset" (CsvRecordWithGroup); imported with both groups, and with
    one of them from the 4-column file."""
    _, bs = topics
    (g1, g2), (t1, t2) = (group_id(), group_id()), (two_partition_topic(bs, "foo-a"), two_partition_topic(bs, "foo-b"))
    commit(bs, g1, {(t1, 0): 5, (t1, 1): 5})
    commit(bs, g2, {(t2, 0): 5, (t2, 1): 5})
    out = ok(bs, "--reset-offsets", "--group", g1, "--group", g2, "--all-topics", "--to-offset", "2", "--export",
             "--dry-run")
    want = {f"{g1},{t1},0,2", f"{g1},{t1},1,2", f"{g2},{t2},0,2", f"{g2},{t2},1,2"}
    assert {line for line in out.split("\n") if line} == want
    plan = tmp_path / "reset.csv"
    plan.write_text(out)
    both = ok(bs, "--reset-offsets", "--group", g1, "--group", g2, "--all-topics", "--from-file", str(plan),
              "--dry-run")
    assert sorted(line.split() for line in both.strip().split("\n")[1:]) == sorted(
        [g, t, str(p), "2"] for g, t in ((g1, t1), (g2, t2)) for p in (0, 1))
    one = ok(bs, "--reset-offsets", "--group", g1, "--all-topics", "--from-file", str(plan), "--dry-run")
    assert sorted(line.split() for line in one.strip().split("\n")[1:]) == [[g1, t1, "0", "2"], [g1, t1, "1", "2"]]


# --- DescribeConsumerGroupTest ---------------------------------------------------------------

DESCRIBE_TYPES = [[], ["--offsets"], ["--members"], ["--members", "--verbose"], ["--state"]]   # DCGT.java:79


@pytest.mark.parametrize("describe_type", DESCRIBE_TYPES, ids=" ".join)
def test_describe_non_existing_group(topics, describe_type):
    """DCGT.java testDescribeNonExistingGroup: every describe type fails on the
    missing group. Kafka 4.4 (measured) fails with the broker's
    GroupIdNotFoundException where 3.x printed "Consumer group 'missing.group'
    does not exist." (CGC.java:295, the Dead state)."""
    kind, bs = topics
    status, out, err = kg(bs, "--describe", "--group", "missing.group", *describe_type)
    if kind == "tansu":
        # tansu 0.6 describes any unknown group id as Empty, not Dead (Kafka's
        # tool then says so, CGC.java:298): the broker differs, not the tool.
        assert "\nConsumer group 'missing.group' has no active members.\n" in err
        return
    assert (status, out) == (1, "")
    assert err == ("Error: Executing consumer group command failed due to "
                   "org.apache.kafka.common.errors.GroupIdNotFoundException: Group missing.group not found.\n")


@pytest.mark.parametrize("describe_type", DESCRIBE_TYPES, ids=" ".join)
def test_describe_existing_group_with_no_members(topics, describe_type):
    """DCGT.java testDescribeExistingGroupWithNoMembers: once its consumer has
    left, stderr has "Consumer group '<g>' has no active members." (CGC.java:298)."""
    _, bs = topics
    group = group_id()
    commit(bs, group, {("foo-100", 0): 100})
    status, _, err = kg(bs, "--describe", "--group", group, *describe_type)
    assert status == 0
    assert f"Consumer group '{group}' has no active members." in err


def test_describe_offsets_of_existing_group_with_no_members(topics):
    """DCGT.java testDescribeOffsetsOfExistingGroupWithNoMembers: one row for the
    group, CONSUMER-ID, HOST and CLIENT-ID are MISSING_COLUMN_VALUE "-" (CGC.java:92)."""
    _, bs = topics
    group = group_id()
    commit(bs, group, {("foo-100", 0): 100})
    out = ok_err(bs, "--describe", "--group", group, "--offsets")
    header, *rows = [line.split() for line in out.strip().split("\n")]
    assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                      "HOST", "CLIENT-ID"]
    assert rows == [[group, "foo-100", "0", "100", "100", "0", "-", "-", "-"]]


def test_describe_members_of_existing_group_with_no_members(topics):
    """DCGT.java testDescribeMembersOfExistingGroupWithNoMembers: no member rows."""
    _, bs = topics
    group = group_id()
    commit(bs, group, {("foo-100", 0): 100})
    out = ok_err(bs, "--describe", "--group", group, "--members")
    assert [line.split() for line in out.strip().split("\n")] == [
        ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]]


def test_describe_state_of_existing_group_with_no_members(topics):
    """DCGT.java testDescribeStateOfExistingGroupWithNoMembers: state Empty,
    0 members, the coordinator one of the cluster's brokers (CGC.java:434-437)."""
    kind, bs = topics
    group = group_id()
    commit(bs, group, {("foo-100", 0): 100})
    out = ok_err(bs, "--describe", "--group", group, "--state")
    header, row = out.strip().split("\n")
    assert header.split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    fields = row.split()
    assert fields[0] == group and fields[-2:] == ["Empty", "0"]
    node = {"kproto": "1", "tansu": "111"}[kind]
    assert fields[2] == f"({node})"


def ok_err(bs: str, *args: str) -> str:
    """Exit 0; stderr may carry the no-active-members status line only."""
    status, out, err = kg(bs, *args)
    assert status == 0 and err.strip().startswith("Consumer group") or err == "", (status, err)
    return out


# --- DescribeConsumerGroupTest with a live member (kproto's broker) --------------------------
# tansu 0.6 reports no member assignments, client ids or hosts in DescribeGroups
# (tests/tools/test_groups_tool.py pins that), so these run against kproto's broker only.

CHECK_ARGS_OUTPUT = {   # DCGT.java:1005-1043 checkArgsOutput: the header words per describe type
    "": ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
         "CLIENT-ID"],
    "--offsets": ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                  "HOST", "CLIENT-ID"],
    "--members": ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
    "--members --verbose": ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                            "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"],   # Kafka 4.4's
    "--state": ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
}


@pytest.fixture(scope="module")
def live_group(tmp_path_factory):
    """DCGT.java consumerGroupClosable: one consumer in a group on a single-partition
    topic ("foo-CLASSIC"), as the classic protocol's generator runs it."""
    import time
    from confluent_kafka import Consumer
    from tests import components
    with components.kproto_broker(tmp_path_factory.mktemp("live"), "group.initial.rebalance.delay.ms=0") as bs:
        with admin(bs) as a:
            assert a.create_topics([NewTopic("foo-CLASSIC", 1, 1)])["foo-CLASSIC"].error == 0
        group = "test.group-CLASSIC"
        consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "client.id": "parity-client",
                             "session.timeout.ms": 6000, "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe(["foo-CLASSIC"])
            deadline = time.monotonic() + 60
            while not consumer.assignment():
                assert time.monotonic() < deadline, "no assignment in 60 s"
                consumer.poll(0.1)
            yield bs, group, consumer
        finally:
            consumer.close()


@pytest.mark.parametrize("describe_type", DESCRIBE_TYPES, ids=" ".join)
def test_describe_existing_group(live_group, describe_type):
    """DCGT.java testDescribeExistingGroup: trimmed stdout is a header and one data
    row, stderr is empty, and the header has checkArgsOutput's words."""
    bs, group, consumer = live_group
    consumer.poll(0.1)
    status, out, err = kg(bs, "--describe", "--group", group, *describe_type)
    assert (status, err) == (0, "")
    lines = out.strip().split("\n")
    assert len(lines) == 2
    assert all(word in lines[0] for word in CHECK_ARGS_OUTPUT[" ".join(describe_type)])


def test_describe_offsets_of_existing_group(live_group):
    """DCGT.java testDescribeOffsetsOfExistingGroup: one row for the group, whose
    CONSUMER-ID, HOST and CLIENT-ID are not "-"."""
    bs, group, consumer = live_group
    consumer.poll(0.1)
    out = ok(bs, "--describe", "--group", group)
    header, *rows = [line.split() for line in out.strip().split("\n")]
    assert len(rows) == 1 and rows[0][0] == group
    consumer_id, host, client_id = rows[0][6:9]
    assert "-" not in (consumer_id, host, client_id)
    assert client_id == "parity-client"


def test_describe_members_of_existing_group(live_group):
    """DCGT.java testDescribeMembersOfExistingGroup (verbose): one member, one
    partition assigned. Kafka 4.4 (measured) names the topic in CURRENT-ASSIGNMENT,
    "foo-CLASSIC:0" (3.x: "(0)", CGC.java:410-419), and a classic group's member has
    no epochs and no target assignment: "-"."""
    bs, group, consumer = live_group
    consumer.poll(0.1)
    out = ok(bs, "--describe", "--group", group, "--members", "--verbose")
    header, *rows = [line.split() for line in out.strip().split("\n")]
    assert len(rows) == 1
    assert rows[0][4:] == ["1", "-", "foo-CLASSIC:0", "-", "-"]


def test_describe_state_of_existing_group(live_group):
    """DCGT.java testDescribeStateOfExistingGroup: Stable, one member, the
    coordinator one of the cluster's brokers (node 1)."""
    bs, group, consumer = live_group
    consumer.poll(0.1)
    out = ok(bs, "--describe", "--group", group, "--state")
    header, row = out.strip().split("\n")
    fields = row.split()
    assert fields[0] == group and fields[2] == "(1)" and fields[-2:] == ["Stable", "1"]


# --- DescribeConsumerGroupTest for both group protocols, against kproto's broker and Kafka's ----
# DCGT.java runs each of these for every GroupProtocol the cluster supports: "classic"
# (JoinGroup/SyncGroup) and "consumer" (KIP-848, ConsumerGroupHeartbeat). Its consumers
# are Java KafkaConsumers; here confluent-kafka's, whose group.protocol is the same switch.

PROTOCOLS = ["classic", "consumer"]
DEADLINE_S = 120.0      # a safety net only: every wait below ends on the state it waits for


@pytest.fixture(scope="module", params=["kproto", "kafka"])
def cluster(request, tmp_path_factory):
    """One broker per module: kproto's (group.initial.rebalance.delay.ms=0, as
    ClusterTestExtensions sets it) or the session's Apache Kafka 4.4."""
    from tests import components
    if request.param == "kafka":
        yield request.getfixturevalue("kafka_server").bootstrap
        return
    with components.kproto_broker(tmp_path_factory.mktemp("dcgt"), "group.initial.rebalance.delay.ms=0") as bs:
        yield bs


def create_topic(bs: str, partitions: int = 1) -> str:
    """DCGT.java createTopic: "test.topic." and a unique suffix (one broker serves the module)."""
    topic = "test.topic." + uuid.uuid4().hex[:8]
    with admin(bs) as a:
        assert a.create_topics([NewTopic(topic, partitions, 1)])[topic].error == 0
    return topic


class ConsumerGroup:
    """DCGT.java consumerGroupClosable (ConsumerGroupCommandTestUtils.buildConsumers):
    ``n`` consumers in ``group`` subscribed to ``topic``, or one consumer assigned
    ``partitions`` (no group management). Kafka's run in threads that poll; these
    are polled by ``until`` between two looks at the group."""

    def __init__(self, bs: str, protocol: str, group: str, topic: str | None = None, n: int = 1,
                 partitions: list[tuple[str, int]] | None = None, **config: str) -> None:
        from confluent_kafka import Consumer, TopicPartition
        conf = {"bootstrap.servers": bs, "group.id": group, "group.protocol": protocol, **config}
        if protocol == "classic":
            conf.setdefault("partition.assignment.strategy", "range")     # composeConfigs: RangeAssignor
        self.consumers = [Consumer(conf) for _ in range(n)]
        self.subscribed = partitions is None
        for c in self.consumers:
            if partitions is None:
                c.subscribe([topic])
            else:
                c.assign([TopicPartition(t, p) for t, p in partitions])

    def poll(self) -> None:
        for c in self.consumers:
            c.poll(0.05)

    def until(self, look, what: str):
        """Poll the consumers, then ``look`` (a describe); its first true answer."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            self.poll()
            answer = look()
            if answer:
                return answer
            assert time.monotonic() < deadline, f"{what}: not within {DEADLINE_S} s"

    def __enter__(self) -> ConsumerGroup:
        return self

    def __exit__(self, *exc) -> None:
        """Leave, then close. librdkafka's close() can wait for good in rd_kafka_assign when a
        rebalance reaches a consumer nobody polls (confluentinc/librdkafka#4884, seen here with
        two members): every consumer unsubscribes (or unassigns) first and is polled until none
        holds a partition."""
        for c in self.consumers:
            if self.subscribed:
                c.unsubscribe()
            else:
                c.unassign()
        deadline = time.monotonic() + DEADLINE_S
        while any(c.assignment() for c in self.consumers) and time.monotonic() < deadline:
            self.poll()
        # All close at once, each on its own thread: closed one after another, a member's leaving
        # rebalanced the partition to one not yet closed and nobody polled it, and that close()
        # waited for good (a CI run hung here)
        closing = [threading.Thread(target=c.close, daemon=True) for c in self.consumers]
        for t in closing:
            t.start()
        for t in closing:
            t.join(DEADLINE_S)
        assert not any(t.is_alive() for t in closing), "a consumer's close() did not return"


def describe(bs: str, *args: str) -> tuple[str, list[list[str]]]:
    """``--describe``: (stderr, the non-empty stdout lines split in words), exit 0."""
    status, out, err = kg(bs, "--describe", *args)
    assert status == 0, (status, out, err)
    return err, [line.split() for line in out.strip().split("\n") if line]


def state_row(bs: str, group: str) -> dict[str, str]:
    """collectGroupState as ``--state`` prints it: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS;
    {} while the group is not there yet (its first member has not joined)."""
    status, out, _ = kg(bs, "--describe", "--group", group, "--state")
    lines = [line.split() for line in out.strip().split("\n") if line]
    if status != 0 or len(lines) != 2:
        return {}
    group_, _host, node, *strategy, state, members = lines[1]
    return {"group": group_, "coordinator": node, "strategy": " ".join(strategy), "state": state,
            "members": members}


def stable_with(bs: str, group: str, members: int):
    """A look that is true once ``group`` is Stable with ``members`` members."""
    def look():
        row = state_row(bs, group)
        return row if row.get("state") == "Stable" and row["members"] == str(members) else None
    return look


def has_header_words(describe_type: list[str], header: list[str]) -> bool:
    """DCGT.java checkArgsOutput (checkMembersArgsOutput, checkStateArgsOutput)."""
    line = " ".join(header)
    if "--members" in describe_type:
        words = ["CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] + (["ASSIGNMENT"] if "--verbose" in describe_type else [])
    elif "--state" in describe_type:
        words = ["COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    else:
        words = ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    return "GROUP" in line and all(w in line for w in words)


def group_name(protocol: str, *suffix: str) -> str:
    return f"test.group.{protocol.upper()}{''.join(suffix)}." + uuid.uuid4().hex[:6]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("test, describe_type", [
    ("testDescribeOffsetsOfNonExistingGroup", ["--offsets"]),
    ("testDescribeMembersOfNonExistingGroup", ["--members"]),
    ("testDescribeMembersOfNonExistingGroup", ["--members", "--verbose"]),
    ("testDescribeStateOfNonExistingGroup", ["--state"]),
], ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_describe_of_non_existing_group(cluster, protocol, test, describe_type):
    """DCGT.java <test>: with one consumer in a group, describing another, missing
    group reports nothing about it. Kafka 4.4's tool fails on the broker's
    GroupIdNotFoundException (3.x reported the group Dead with no rows), as
    testDescribeNonExistingGroup above measures."""
    topic, group = create_topic(cluster), group_name(protocol)
    with ConsumerGroup(cluster, protocol, group, topic) as g:
        g.until(stable_with(cluster, group, 1), "the live group Stable")
        status, out, err = kg(cluster, "--describe", "--group", "missing.group", *describe_type)
    assert (status, out) == (1, "")
    assert err == ("Error: Executing consumer group command failed due to "
                   "org.apache.kafka.common.errors.GroupIdNotFoundException: Group missing.group not found.\n")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_existing_groups(cluster, protocol):
    """DCGT.java testDescribeExistingGroups: one single-consumer group per describe
    type, all named with --group: every describe type prints a header and a data
    row per group (10 non-empty lines), nothing on stderr."""
    topic = create_topic(cluster)
    names = [group_name(protocol, ".", "".join(t)) for t in DESCRIBE_TYPES]
    groups = [ConsumerGroup(cluster, protocol, name, topic) for name in names]
    try:
        for g, name in zip(groups, names):
            g.until(stable_with(cluster, name, 1), f"{name} Stable")
        args = [a for name in names for a in ("--group", name)]
        for describe_type in DESCRIBE_TYPES:
            err, lines = all_described(groups, lambda: describe(cluster, *args, *describe_type))
            assert has_header_words(describe_type, lines[0])
            assert sorted(line[0] for line in lines[1::2]) == sorted(names)
    finally:
        for g in groups:
            g.__exit__()


def all_described(groups: list[ConsumerGroup], look) -> tuple[str, list[list[str]]]:
    """DCGT.java's waitForCondition: the describe until it prints a header and a data row per
    group and nothing on stderr (a Stable KIP-848 group's member may not have its assignment
    yet, and then has no row), the groups' consumers polled meanwhile."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        for g in groups:
            g.poll()
        err, lines = look()
        if err == "" and len(lines) == 2 * len(groups):
            return err, lines
        assert time.monotonic() < deadline, (err, lines)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_all_existing_groups(tmp_path, protocol):
    """DCGT.java testDescribeAllExistingGroups: the same with --all-groups. Kafka's
    test deletes its groups after each protocol so the cluster holds only these;
    here a fresh kproto broker holds only these."""
    from tests import components
    with components.kproto_broker(tmp_path, "group.initial.rebalance.delay.ms=0") as bs:
        topic = create_topic(bs)
        names = [group_name(protocol, ".", "".join(t)) for t in DESCRIBE_TYPES]
        groups = [ConsumerGroup(bs, protocol, name, topic) for name in names]
        try:
            for g, name in zip(groups, names):
                g.until(stable_with(bs, name, 1), f"{name} Stable")
            for describe_type in DESCRIBE_TYPES:
                err, lines = all_described(groups, lambda: describe(bs, "--all-groups", *describe_type))
                assert has_header_words(describe_type, lines[0])
                assert sorted(line[0] for line in lines[1::2]) == sorted(names)
        finally:
            for g in groups:
                g.__exit__()


@pytest.mark.parametrize("protocol, config, strategy", [
    ("classic", {"partition.assignment.strategy": "roundrobin"}, "roundrobin"),   # RoundRobinAssignor
    ("consumer", {"group.remote.assignor": "range"}, "range"),                    # the broker's range assignor
])
def test_describe_state_of_existing_group_with_non_default_assignor(cluster, protocol, config, strategy):
    """DCGT.java testDescribeStateOfExistingGroupWithNonDefaultAssignor: Stable, one
    member, ASSIGNMENT-STRATEGY the assignor's name, coordinator node 1."""
    topic, group = create_topic(cluster), group_name(protocol)
    with ConsumerGroup(cluster, protocol, group, topic, **config) as g:
        row = g.until(stable_with(cluster, group, 1), "Stable")
    assert row == {"group": group, "coordinator": "(1)", "strategy": strategy, "state": "Stable", "members": "1"}


def member_rows(bs: str, group: str, *verbose: str) -> list[list[str]]:
    """collectGroupMembers as ``--members`` prints it: the data rows; [] while the
    group is not there yet or not Stable (a notice on stderr)."""
    status, out, err = kg(bs, "--describe", "--group", group, "--members", *verbose)
    return [line.split() for line in out.strip().split("\n")[1:] if line] if (status, err) == (0, "") else []


def offset_rows(bs: str, group: str) -> list[list[str]]:
    """collectGroupOffsets as the default describe prints it: the data rows."""
    _, lines = describe(bs, "--group", group)
    return lines[1:]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("describe_type", DESCRIBE_TYPES, ids=" ".join)
def test_describe_with_consumers_without_assigned_partitions(cluster, protocol, describe_type):
    """DCGT.java testDescribeWithConsumersWithoutAssignedPartitions: two consumers on
    a single-partition topic: --members prints a row for each (3 lines), the others
    one data row (2 lines), nothing on stderr."""
    topic, group = create_topic(cluster), group_name(protocol, "".join(describe_type))
    with ConsumerGroup(cluster, protocol, group, topic, n=2) as g:
        g.until(stable_with(cluster, group, 2), "Stable with two members")
        err, lines = g.until(lambda: describe(cluster, "--group", group, *describe_type), "described")
    assert err == ""
    assert len(lines) == (3 if "--members" in describe_type else 2)
    assert has_header_words(describe_type, lines[0])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_offsets_with_consumers_without_assigned_partitions(cluster, protocol):
    """DCGT.java testDescribeOffsetsWithConsumersWithoutAssignedPartitions: Stable,
    one row, the partition's (the member without one has no row)."""
    topic, group = create_topic(cluster), group_name(protocol)
    with ConsumerGroup(cluster, protocol, group, topic, n=2) as g:
        g.until(stable_with(cluster, group, 2), "Stable with two members")
        rows = offset_rows(cluster, group)
    assert [(r[0], r[1], r[2]) for r in rows] == [(group, topic, "0")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_members_with_consumers_without_assigned_partitions(cluster, protocol):
    """DCGT.java testDescribeMembersWithConsumersWithoutAssignedPartitions: two member
    rows, #PARTITIONS 1 and 0; --verbose shows the assigned one's assignment."""
    topic, group = create_topic(cluster), group_name(protocol)
    with ConsumerGroup(cluster, protocol, group, topic, n=2) as g:
        g.until(stable_with(cluster, group, 2), "Stable with two members")
        rows = g.until(lambda: member_rows(cluster, group), "members described")
        verbose = member_rows(cluster, group, "--verbose")
    assert sorted(r[4] for r in rows) == ["0", "1"]
    assert all(r[0] == group for r in rows)
    # CURRENT-ASSIGNMENT (the 7th column): "topic:0" for one member, "-" for the other.
    assert sorted(r[6] for r in verbose) == sorted(["-", f"{topic}:0"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_state_with_consumers_without_assigned_partitions(cluster, protocol):
    """DCGT.java testDescribeStateWithConsumersWithoutAssignedPartitions: Stable, 2 members."""
    topic, group = create_topic(cluster), group_name(protocol)
    with ConsumerGroup(cluster, protocol, group, topic, n=2) as g:
        row = g.until(stable_with(cluster, group, 2), "Stable with two members")
    assert (row["state"], row["members"]) == ("Stable", "2")


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("describe_type", DESCRIBE_TYPES, ids=" ".join)
def test_describe_with_multi_partition_topic_and_multiple_consumers(cluster, protocol, describe_type):
    """DCGT.java testDescribeWithMultiPartitionTopicAndMultipleConsumers: two consumers
    on a two-partition topic: --state prints one data row (2 lines), the others a row
    per partition or member (3 lines), nothing on stderr."""
    topic, group = create_topic(cluster, 2), group_name(protocol, "".join(describe_type))
    with ConsumerGroup(cluster, protocol, group, topic, n=2) as g:
        g.until(lambda: len(member_rows(cluster, group)) == 2 and
                all(r[4] == "1" for r in member_rows(cluster, group)), "a partition each")
        err, lines = describe(cluster, "--group", group, *describe_type)
    assert err == ""
    assert len(lines) == (2 if describe_type == ["--state"] else 3)
    assert has_header_words(describe_type, lines[0])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_offsets_with_multi_partition_topic_and_multiple_consumers(cluster, protocol):
    """DCGT.java testDescribeOffsetsWithMultiPartitionTopicAndMultipleConsumers: Stable,
    two rows, one per partition, each with a different member."""
    topic, group = create_topic(cluster, 2), group_name(protocol)
    with ConsumerGroup(cluster, protocol, group, topic, n=2) as g:
        g.until(lambda: len(member_rows(cluster, group)) == 2 and
                all(r[4] == "1" for r in member_rows(cluster, group)), "a partition each")
        rows = offset_rows(cluster, group)
        assert state_row(cluster, group)["state"] == "Stable"
    assert sorted((r[0], r[1], r[2]) for r in rows) == [(group, topic, "0"), (group, topic, "1")]
    assert len({r[6] for r in rows}) == 2            # CONSUMER-ID: one member each


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_members_with_multi_partition_topic_and_multiple_consumers(cluster, protocol):
    """DCGT.java testDescribeMembersWithMultiPartitionTopicAndMultipleConsumers: two
    member rows with one partition each; --verbose: no member without an assignment."""
    topic, group = create_topic(cluster, 2), group_name(protocol)
    with ConsumerGroup(cluster, protocol, group, topic, n=2) as g:
        rows = g.until(lambda: [r for r in member_rows(cluster, group) if r[4] == "1"] == member_rows(cluster, group)
                       and len(member_rows(cluster, group)) == 2 and member_rows(cluster, group), "a partition each")
        verbose = member_rows(cluster, group, "--verbose")
    assert [r[4] for r in rows] == ["1", "1"]
    assert sorted(r[6] for r in verbose) == [f"{topic}:0", f"{topic}:1"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_state_with_multi_partition_topic_and_multiple_consumers(cluster, protocol):
    """DCGT.java testDescribeStateWithMultiPartitionTopicAndMultipleConsumers: the
    group, Stable, two members."""
    topic, group = create_topic(cluster, 2), group_name(protocol)
    with ConsumerGroup(cluster, protocol, group, topic, n=2) as g:
        row = g.until(stable_with(cluster, group, 2), "Stable with two members")
    assert (row["group"], row["state"], row["members"]) == (group, "Stable", "2")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_simple_consumer_group(cluster, protocol):
    """DCGT.java testDescribeSimpleConsumerGroup: a consumer that assigns itself both
    partitions (no group management, CLASSIC whatever the cluster's protocol) and
    commits: the group is Empty and its offsets are shown, two rows. Kafka's consumer
    commits by auto-commit; this one commits its positions itself (an event to wait on)."""
    from confluent_kafka import TopicPartition
    topic, group = create_topic(cluster, 2), group_name(protocol)
    with ConsumerGroup(cluster, "classic", group, partitions=[(topic, 0), (topic, 1)]) as g:
        g.poll()
        [c] = g.consumers
        c.commit(offsets=[TopicPartition(topic, p, 0) for p in (0, 1)], asynchronous=False)
        err, lines = describe(cluster, "--group", group)
    assert err == f"\nConsumer group '{group}' has no active members.\n"      # Empty (CGC.java:298)
    assert [r[:7] for r in lines[1:]] == [[group, topic, "0", "0", "0", "0", "-"],
                                          [group, topic, "1", "0", "0", "0", "-"]]


@pytest.fixture
def silent_broker():
    """A listener that accepts connections and never answers: the describe call's
    first step can never get a node, whatever the machine's speed."""
    import socket
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield "127.0.0.1:%d" % server.getsockname()[1]


@pytest.mark.parametrize("test, describe_type", [
    ("testDescribeGroupWithShortInitializationTimeout", []),      # Kafka picks one describe type at random
    ("testDescribeGroupWithShortInitializationTimeout", ["--offsets"]),
    ("testDescribeGroupWithShortInitializationTimeout", ["--members", "--verbose"]),
    ("testDescribeGroupOffsetsWithShortInitializationTimeout", ["--offsets"]),
    ("testDescribeGroupMembersWithShortInitializationTimeout", ["--members"]),
    ("testDescribeGroupMembersWithShortInitializationTimeout", ["--members", "--verbose"]),
    ("testDescribeGroupStateWithShortInitializationTimeout", ["--state"]),
], ids=lambda v: v if isinstance(v, str) else " ".join(v) or "default")
def test_describe_with_short_initialization_timeout(silent_broker, test, describe_type):
    """DCGT.java <test>: --timeout 1 is too short for the describe call: Kafka's Admin
    fails it with a TimeoutException, whose text (measured on Kafka 4.4) says the call
    never got a node for its FindCoordinator step. Kafka's test runs against a live
    group and counts on its Admin taking more than 1 ms to get there; kproto's tool can
    connect, negotiate and find the coordinator within 1 ms on loopback, so that would
    be a race. A broker that never answers makes the deadline pass first every time."""
    status, out, err = kg(silent_broker, "--describe", "--timeout", "1", "--group", "test.group.timeout",
                          *describe_type)
    assert (status, out) == (1, "")
    assert err == ("Error: Executing consumer group command failed due to org.apache.kafka.common.errors."
                   "TimeoutException: Timed out waiting for a node assignment. "
                   "Call: describeConsumerGroups(api=FIND_COORDINATOR)\n")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_non_offset_commit_group(cluster, protocol):
    """DCGT.java testDescribeNonOffsetCommitGroup: enable.auto.commit=false: Stable,
    one row, its CONSUMER-ID, HOST and CLIENT-ID not MISSING_COLUMN_VALUE ("-"),
    CURRENT-OFFSET "-" (nothing committed)."""
    topic, group = create_topic(cluster), group_name(protocol)
    with ConsumerGroup(cluster, protocol, group, topic, **{"enable.auto.commit": "false"}) as g:
        g.until(stable_with(cluster, group, 1), "Stable")
        rows = g.until(lambda: [r for r in offset_rows(cluster, group) if r[6] != "-"], "the member's row")
    assert len(rows) == 1
    group_, topic_, partition, current, end, lag, consumer_id, host, client_id = rows[0]
    assert (group_, topic_, partition, current, end, lag) == (group, topic, "0", "-", "0", "-")
    assert "-" not in (consumer_id, host, client_id)


# --- DescribeConsumerGroupTest: options (no broker) -------------------------------------------
# Kafka's tool exits 1 on a usage error and prints its usage after the line; kproto
# prints the line alone and exits 2 (README: "Exit status").

def test_describe_with_unrecognized_new_consumer_option():
    """DCGT.java testDescribeWithUnrecognizedNewConsumerOption: --new-consumer is no
    option (Kafka: joptsimple.UnrecognizedOptionException)."""
    status, out, err = kg("localhost:9092", "--new-consumer", "--describe", "--group", "test.group.unrecognized")
    assert (status, out, err) == (2, "", "No such option '--new-consumer'.\n")


def test_describe_with_multiple_sub_actions():
    """DCGT.java testDescribeWithMultipleSubActions: --members with --state."""
    status, out, err = kg("localhost:9092", "--describe", "--group", "test.group.multiple.sub.actions",
                          "--members", "--state")
    assert (status, out) == (2, "")
    assert err == "Option [describe] takes at most one of these options: [members], [offsets], [state]\n"


def test_describe_with_state_value():
    """DCGT.java testDescribeWithStateValue: --state takes a value only with --list."""
    status, out, err = kg("localhost:9092", "--describe", "--all-groups", "--state", "Stable")
    assert (status, out) == (2, "")
    assert err == "Option [describe] does not take a value for [state]\n"


def test_print_version():
    """DCGT.java testPrintVersion: --version prints the tool's version (Kafka's
    AppInfoParser.getVersion, kproto's own) and exits 0."""
    from kproto import __version__
    assert kg(None, "--version") == (0, f"{__version__}\n", "")
