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
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer

from kproto.client.admin import NewTopic
from tests.helpers import admin, commit, committed
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
