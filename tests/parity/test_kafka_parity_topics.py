"""`kproto topics` against the expectations of Kafka's own TopicCommandTest.

Each test mirrors one test of tools/src/test/java/org/apache/kafka/tools/TopicCommandTest.java
(apache/kafka trunk 1eb76443, /work/.mirror/apache+kafka/repo; TCT.java below), run
against the kproto broker and tansu, and those marked WITH_KAFKA against Kafka 4.4's
broker too. Kafka's tests run a 3-4 broker cluster; these
brokers have one node, so replication factors are 1. Strings the tests do not pin are
cited from tools/src/main/java/org/apache/kafka/tools/TopicCommand.java (TC.java:N).

Known, deliberate differences: kafka-topics.sh prints "Error while executing topic
command : <message>" on stdout (TC.java:133) plus a stack trace in the log; kproto
prints that one line on stderr and exits 1. Bad flags: Kafka prints the message and
its usage and exits 1; kproto prints the message alone and exits 2. --alter --config
is kproto's extension (testConfigOptWithBootstrapServers expects a refusal). kproto's
broker refuses to create or delete an internal topic (testDeleteInternalTopic: strict
xfail on kproto).

Ported: 51 of TCT.java's 59 methods here. The 8 below need more than the one broker
kproto's broker and tansu run (every other case is run on one node, replication factor 1,
broker id the one node's); 6 of them are ported onto 3-node clusters in
tests/parity/test_kafka_parity_topics_cluster.py (not the rack-aware one nor the
reassignment):
- testCreateWithDefaultPartitions: asserts 2 replicas per partition; one node refuses
  replication factor 2 (INVALID_REPLICATION_FACTOR).
- testCreateWithReplicaAssignment: places replicas on brokers 5,4 / 3,2 / 1,0; one
  node refuses any other broker id, and an all-[node] assignment cannot be told from
  the default placement.
- testAlterAssignment: the new partition's replicas 4,2 need brokers 2 and 4.
- testCreateAlterTopicWithRackAware: rack-aware spread over 6 brokers in 3 racks.
- testDescribeUnavailablePartitions: stops broker 0 so its partitions lose their
  leader; stopping the one node leaves no broker to describe them.
- testDescribeUnderReplicatedPartitions: ISR shrinks when one of 6 replicas' brokers stops.
- testDescribeUnderReplicatedPartitionsWhenReassignmentIsInProgress: a throttled
  reassignment to another broker.
- testDescribeUnderMinIsrPartitionsMixed: needs an offline partition (its only
  replica's broker stopped) beside the under-min-ISR ones.
testDescribeAtMinIsrPartitions and testDescribeUnderMinIsrPartitions stop brokers in
Kafka; here min.insync.replicas (1 and 2 over one replica) gives the same ISR-to-minimum
relations, which is all the filters read.
"""

from __future__ import annotations

import uuid

import pytest

from tests.tools.helpers import kt, topic_configs
from tests.tools.helpers import topics_ok as ok

ERROR = "Error while executing topic command : "


def name() -> str:
    """TestUtils.randomString(10): a fresh topic per test."""
    return "t" + uuid.uuid4().hex[:9]


def test_create(broker):
    """TCT.java testCreate: the created topic is listed; once deleted, it is not."""
    _, bs = broker
    topic = name()
    assert ok(bs, "--create", "--topic", topic, "--partitions", "1") == f"Created topic {topic}.\n"  # TC.java:491
    assert topic in ok(bs, "--list").splitlines()
    assert ok(bs, "--delete", "--topic", topic) == ""
    assert topic not in ok(bs, "--list").splitlines()


def test_create_when_already_exists(broker):
    """TCT.java testCreateWhenAlreadyExists (TopicExistsException) and
    testCreateWhenAlreadyExistsWithIfNotExists (no error)."""
    _, bs = broker
    topic = name()
    ok(bs, "--create", "--topic", topic, "--partitions", "1")
    status, out, err = kt(bs, "--create", "--partitions", "1", "--replication-factor", "1", "--topic", topic)
    assert (status, out, err) == (1, "", f"{ERROR}Topic '{topic}' already exists.\n")
    assert kt(bs, "--create", "--topic", topic, "--partitions", "1", "--if-not-exists") == (0, "", "")


def test_create_with_negative_partition_count(broker):
    """TCT.java testCreateWithNegativePartitionCount; message from TC.java:473."""
    _, bs = broker
    status, out, err = kt(bs, "--create", "--partitions", "-1", "--replication-factor", "1", "--topic", name())
    assert (status, out, err) == (1, "", f"{ERROR}The partitions must be greater than 0\n")


def test_create_with_invalid_replication_factor(broker):
    """TCT.java testCreateWithInvalidReplicationFactor (Short.MAX_VALUE + 1) and
    testCreateWithNegativeReplicationFactor: IllegalArgumentException, message
    "The replication factor must be between 1 and 32767 inclusive" (TC.java:475-476)."""
    _, bs = broker
    for rf in ("32768", "-1"):
        status, out, err = kt(bs, "--create", "--partitions", "2", "--replication-factor", rf, "--topic", name())
        assert (status, out, err) == (1, "", f"{ERROR}The replication factor must be between 1 and 32767 "
                                             "inclusive\n"), rf


def test_invalid_topic_level_config(broker):
    """TCT.java testInvalidTopicLevelConfig: message.timestamp.type=boom is a ConfigException."""
    _, bs = broker
    status, out, err = kt(bs, "--create", "--partitions", "1", "--topic", name(),
                          "--config", "message.timestamp.type=boom")
    assert (status, out) == (1, "")
    assert err.startswith(ERROR) and "message.timestamp.type" in err and err.count("\n") == 1


def test_list_topics(broker):
    """TCT.java testListTopics, testListTopicsWithIncludeList, testListTopicsWithExcludeInternal."""
    _, bs = broker
    for topic in ("kafka.testTopic1", "kafka.testTopic2", "oooof.testTopic1"):
        kt(bs, "--create", "--topic", topic, "--partitions", "2", "--if-not-exists")
    # The broker creates __consumer_offsets on the first group request (FindCoordinator).
    from kproto.client.transport import BrokerClient
    from kproto.client.admin import Admin
    with BrokerClient(bs) as client:
        Admin(client).find_coordinator("parity-group")
    listed = ok(bs, "--list").splitlines()
    assert {"kafka.testTopic1", "kafka.testTopic2", "oooof.testTopic1"} <= set(listed)
    included = ok(bs, "--list", "--topic", "kafka.*").splitlines()
    assert "kafka.testTopic1" in included and "kafka.testTopic2" in included
    assert "oooof.testTopic1" not in included
    external = ok(bs, "--list", "--exclude-internal").splitlines()
    assert "kafka.testTopic1" in external and "__consumer_offsets" not in external


def test_alter_partition_count(broker):
    """TCT.java testAlterPartitionCount: 2 -> 3 partitions, alter prints nothing."""
    kind, bs = broker
    topic = name()
    ok(bs, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    status, out, err = kt(bs, "--alter", "--topic", topic, "--partitions", "3")
    if kind == "tansu":     # tansu 0.6 has no CreatePartitions: the one error line
        assert (status, out) == (1, "") and err.startswith(ERROR)
        return
    assert (status, out, err) == (0, "", "")
    assert "\tPartitionCount: 3\t" in ok(bs, "--describe", "--topic", topic).splitlines()[0]


def test_config_preservation_across_partition_alteration(tmp_path):
    """TCT.java testConfigPreservationAcrossPartitionAlteration: cleanup.policy=compact
    set at creation is still there after --alter --partitions 3 (kproto's broker:
    tansu 0.6 has no CreatePartitions)."""
    from tests import components
    with components.kproto_broker(tmp_path) as bs:
        topic = name()
        ok(bs, "--create", "--topic", topic, "--partitions", "1", "--config", "cleanup.policy=compact")
        assert topic_configs("kproto", bs, topic)["cleanup.policy"] == "compact"
        assert ok(bs, "--alter", "--partitions", "3", "--topic", topic) == ""
        assert "\tPartitionCount: 3\t" in ok(bs, "--describe", "--topic", topic).splitlines()[0]
        assert topic_configs("kproto", bs, topic)["cleanup.policy"] == "compact"


def test_alter_when_topic_doesnt_exist(broker):
    """TCT.java testAlterWhenTopicDoesntExist (IllegalArgumentException, TC.java:218:
    "Topic '%s' does not exist as expected" formatted with the Optional the option
    parser gives) and testAlterWhenTopicDoesntExistWithIfExists (no error)."""
    _, bs = broker
    topic = name()
    status, out, err = kt(bs, "--alter", "--topic", topic, "--partitions", "1")
    assert (status, out, err) == (1, "", f"{ERROR}Topic '{topic}' does not exist as expected\n")
    assert kt(bs, "--alter", "--topic", topic, "--partitions", "1", "--if-exists") == (0, "", "")


def test_delete_when_topic_doesnt_exist(broker):
    """TCT.java testDeleteWhenTopicDoesntExist / testDeleteWhenTopicDoesntExistWithIfExists."""
    _, bs = broker
    topic = name()
    status, out, err = kt(bs, "--delete", "--topic", topic)
    assert (status, out, err) == (1, "", f"{ERROR}Topic '{topic}' does not exist as expected\n")
    assert kt(bs, "--delete", "--topic", topic, "--if-exists") == (0, "", "")


def test_topic_with_colliding_char_deletion_and_create_again(broker):
    """TCT.java testTopicWithCollidingCharDeletionAndCreateAgain: a topic with '.'
    deleted and created again under the same name."""
    _, bs = broker
    topic = "test.topic" + uuid.uuid4().hex[:6]
    assert kt(bs, "--create", "--topic", topic, "--partitions", "1")[:2] == (0, f"Created topic {topic}.\n")
    assert ok(bs, "--delete", "--topic", topic) == ""
    assert topic not in ok(bs, "--list").splitlines()
    assert kt(bs, "--create", "--topic", topic, "--partitions", "1")[:2] == (0, f"Created topic {topic}.\n")


def test_describe(broker):
    """TCT.java testDescribe: 2 partitions give 3 rows, the first "Topic: <name>"."""
    _, bs = broker
    topic = name()
    ok(bs, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    rows = ok(bs, "--describe", "--topic", topic).split("\n")
    if rows[-1] == "":
        rows.pop()            # Java's split drops the trailing empty string
    assert len(rows) == 3
    assert rows[0].startswith(f"Topic: {topic}")
    # TC.java:355-390: the partition lines, TAB separated, sorted by partition.
    assert [row.split("\t")[:3] for row in rows[1:]] == [["", f"Topic: {topic}", f"Partition: {p}"]
                                                       for p in (0, 1)]


def test_describe_elr_without_describe_topic_partitions(tmp_path):
    """TCT.java testDescribeWithDescribeTopicPartitionsApi: every partition row
    has "\\tElr" and "LastKnownElr". TC.java:374-387 print the lists from the
    TopicPartitionInfo, or "N/A" when they are null, which is what Admin
    (KafkaAdminClient.describeTopics) leaves when it falls back to Metadata: kproto's
    broker emulating Kafka 3.6 (``--kafka-version``), before DescribeTopicPartitions
    (API key 75) was advertised to clients."""
    from kproto.client.transport import BrokerClient
    from kproto.testing import Broker
    with Broker(tmp_path / "data", kafka_version="3.6") as b:
        bs = b.bootstrap_servers
        with BrokerClient(bs) as client:
            advertised = client.conn.broker_versions
        assert advertised and 75 not in advertised
        _check_elr_na(bs)


def _check_elr_na(bs: str) -> None:
    topic = name()
    ok(bs, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    rows = ok(bs, "--describe", "--topic", topic).splitlines()
    for row in rows[1:]:
        assert "\tElr" in row and "LastKnownElr" in row
        assert row.endswith("\tElr: N/A\tLastKnownElr: N/A")


def test_describe_with_describe_topic_partitions_api(tmp_path):
    """TCT.java testDescribeWithDescribeTopicPartitionsApi against a broker that
    advertises DescribeTopicPartitions (tansu 0.6): Elr/LastKnownElr are the
    lists it returns, joined with "," (TC.java:374-386): empty lists print
    nothing after "Elr: ". The test's page size flag is honoured
    (--partition-size-limit-per-response=20 over 20+41+5+5+100 partitions gives
    its 176 rows; single-replica topics here)."""
    from tests import components
    from kproto.client.transport import BrokerClient
    with components.tansu(tmp_path) as bs:
        with BrokerClient(bs) as client:
            assert 75 in client.conn.broker_versions
        sizes = {name(): 20, "test-2": 41, "test-3": 5, "test-4": 5, "test-5": 100}
        for topic, n in sizes.items():
            ok(bs, "--create", "--topic", topic, "--partitions", str(n), "--replication-factor", "1")
        rows = ok(bs, "--describe", "--partition-size-limit-per-response=20", "--exclude-internal").split("\n")
        if rows[-1] == "":
            rows.pop()
        assert len(rows) == 176
        assert "\tElr" in rows[2] and "LastKnownElr" in rows[2]
        assert all(r.endswith("\tElr: \tLastKnownElr: ") for r in rows if r.startswith("\t"))


def test_describe_when_topic_doesnt_exist(broker):
    """TCT.java testDescribeWhenTopicDoesntExist / ...WithIfExists."""
    _, bs = broker
    topic = name()
    status, out, err = kt(bs, "--describe", "--topic", topic)
    assert (status, out, err) == (1, "", f"{ERROR}Topic '{topic}' does not exist as expected\n")
    assert kt(bs, "--describe", "--topic", topic, "--if-exists") == (0, "", "")


def test_describe_report_overridden_configs(broker):
    """TCT.java testDescribeReportOverriddenConfigs: file.delete.delay.ms=1000 set
    at creation appears in `--describe` of all topics."""
    kind, bs = broker
    topic = name()
    ok(bs, "--create", "--topic", topic, "--partitions", "2", "--config", "file.delete.delay.ms=1000")
    output = ok(bs, "--describe")
    if kind == "tansu":
        # tansu 0.6 reports every topic config with source DEFAULT_CONFIG, so the
        # tool prints none (TC.java: only non-default entries are printed).
        assert f"Topic: {topic}\t" in output
        return
    assert "file.delete.delay.ms=1000" in output


def test_describe_and_list_topics_without_internal_topics(broker):
    """TCT.java testDescribeAndListTopicsWithoutInternalTopics."""
    _, bs = broker
    topic = name()
    ok(bs, "--create", "--topic", topic, "--partitions", "1")
    from kproto.client.transport import BrokerClient
    from kproto.client.admin import Admin
    with BrokerClient(bs) as client:
        Admin(client).find_coordinator("parity-group")
    output = ok(bs, "--describe", "--exclude-internal")
    assert topic in output and "__consumer_offsets" not in output
    output = ok(bs, "--list", "--exclude-internal")
    assert topic in output and "__consumer_offsets" not in output


# --- TopicCommandOptions: the option parser (TCT.java's unit tests) ---------------------------

BOOTSTRAP = "localhost:9092"    # TCT.java bootstrapServer: parsed, never dialled
TOPIC = "topicName"


def options(*args: str) -> dict:
    """``new TopicCommandOptions(args)``: click's parse, then check_args; the options
    as kproto's run() reads them. A refusal raises UsageProblem."""
    from kproto.tools.topics.command import check_args, topics
    o = dict(topics.make_context("topics", ["--bootstrap-server", BOOTSTRAP, *args]).params)
    o["list"] = o.pop("list_")
    check_args(o)
    return o


def refused(*args: str) -> str:
    """TCT.java assertInitializeInvalidOptionsExitCode: the parser refuses ``args``.
    Kafka exits 1 and prints the usage after the message; kproto exits 2 (its status for
    bad flags, README "Exit status") with the message alone."""
    status, out, err = kt(BOOTSTRAP, *args)
    assert (status, out) == (2, "") and err.count("\n") == 1, (status, out, err)
    return err


def test_alter_with_unspecified_partition_count():
    """TCT.java testAlterWithUnspecifiedPartitionCount (Kafka's test passes
    " --bootstrap-server" with a stray space; the check it reaches is this one)."""
    assert refused("--alter", "--topic", TOPIC) == 'Missing required argument "[partitions]"\n'


def test_config_opt_with_bootstrap_servers():
    """TCT.java testConfigOptWithBootstrapServers: --create with --config parses, the
    config kept as given. Its first half, --alter --partitions 3 --config
    cleanup.policy=compact refused, is kproto's documented extension (--alter --config
    changes topic configs), so that line parses here."""
    o = options("--create", "--topic", TOPIC, "--partitions", "3", "--replication-factor", "3",
                "--config", "cleanup.policy=compact")
    assert o["create"] and o["bootstrap_server"] == BOOTSTRAP
    assert o["configs"][0] == "cleanup.policy=compact"
    assert options("--alter", "--topic", TOPIC, "--partitions", "3", "--config", "cleanup.policy=compact")["alter"]


def test_create_with_partition_count_without_replication_factor_should_succeed():
    """TCT.java testCreateWithPartitionCountWithoutReplicationFactorShouldSucceed."""
    o = options("--create", "--partitions", "2", "--topic", TOPIC)
    assert (o["create"], o["topic"], o["partitions"]) == (True, TOPIC, 2)


def test_create_with_replication_factor_without_partition_count_should_succeed():
    """TCT.java testCreateWithReplicationFactorWithoutPartitionCountShouldSucceed."""
    o = options("--create", "--replication-factor", "3", "--topic", TOPIC)
    assert (o["create"], o["topic"], o["replication_factor"]) == (True, TOPIC, 3)


def test_create_with_assignment_and_partition_count():
    """TCT.java testCreateWithAssignmentAndPartitionCount; message measured on Kafka 4.4."""
    assert refused("--create", "--replica-assignment", "3:0,5:1", "--partitions", "2", "--topic", TOPIC) == \
        'Option "[replica-assignment]" can\'t be used with option "[partitions]"\n'


def test_create_with_assignment_and_replication_factor():
    """TCT.java testCreateWithAssignmentAndReplicationFactor; message measured on Kafka 4.4."""
    assert refused("--create", "--replica-assignment", "3:0,5:1", "--replication-factor", "2",
                   "--topic", TOPIC) == 'Option "[replica-assignment]" can\'t be used with option ' \
                                        '"[replication-factor]"\n'


def test_create_without_partition_count_and_replication_factor_should_succeed():
    """TCT.java testCreateWithoutPartitionCountAndReplicationFactorShouldSucceed."""
    o = options("--create", "--topic", TOPIC)
    assert (o["create"], o["topic"], o["partitions"]) == (True, TOPIC, None)


def test_describe_should_succeed():
    """TCT.java testDescribeShouldSucceed and testDescribeWithDescribeTopicsApiShouldSucceed
    (the same assertions on the same arguments)."""
    o = options("--describe", "--topic", TOPIC)
    assert (o["describe"], o["topic"]) == (True, TOPIC)


def test_parse_assignment():
    """TCT.java testParseAssignment, testParseAssignmentDuplicateEntries
    (AdminCommandFailedException) and testParseAssignmentPartitionsOfDifferentSize
    (AdminOperationException); the messages as Kafka 4.4's tool prints them for
    --create --replica-assignment (measured)."""
    from kproto.tools.topics.command import TopicCommandError, parse_replica_assignment
    assert parse_replica_assignment("5:4,3:2,1:0") == {0: [5, 4], 1: [3, 2], 2: [1, 0]}
    with pytest.raises(TopicCommandError, match=r"^Partition replica lists may not contain duplicate entries: 5$"):
        parse_replica_assignment("5:5")
    with pytest.raises(TopicCommandError, match=r"^Partition 1 has different replication factor: \[2, 1\]$"):
        parse_replica_assignment("5:4:3,2:1")



def test_is_not_under_replicated_when_adding():
    """TCT.java testIsNotUnderReplicatedWhenAdding: replicas [1, 2], ISR [1], while a
    reassignment adds replica 2 (replicas [1, 2], adding [2]): the replication factor
    is the target's, 1, so the partition is not under-replicated. Without the
    reassignment it is. Its row shows the reassignment as PartitionDescription
    .printDescription does."""
    from types import SimpleNamespace
    from kproto.tools.topics.command import describe_topic
    from kproto.tools.topics.text import topics_describe_lines
    meta = SimpleNamespace(topic_id=uuid.UUID(int=0), partitions=[
        SimpleNamespace(partition=0, leader=1, replicas=[1, 2], isr=[1])])
    adding = {("test-topic", 0): ([1, 2], [2], [])}
    under = {"under_replicated_partitions": True}
    assert describe_topic("test-topic", meta, [], {1, 2}, under, reassignments=adding)["partitions"] == []
    assert len(describe_topic("test-topic", meta, [], {1, 2}, under)["partitions"]) == 1
    described = describe_topic("test-topic", meta, [], {1, 2}, {}, reassignments=adding)
    assert described["replication_factor"] == 1
    assert topics_describe_lines([described]) == [
        "Topic: test-topic\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: ",
        "\tTopic: test-topic\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tAdding Replicas: 2"
        "\tRemoving Replicas: \tElr: N/A\tLastKnownElr: N/A"]


# --- against the brokers: the single-node cases --------------------------------------------

NODE = {"kproto": 1, "tansu": 111, "kafka": 1}        # the one broker's id
WITH_KAFKA = pytest.mark.brokers("kproto", "tansu", "kafka")   # the same assertions on Kafka 4.4's broker


def created(bs: str, topic: str, *args: str) -> str:
    """``--create --topic topic args``, then TCT.java's waitForTopic: Kafka's broker
    serves a new topic once its metadata log got there (kproto's at once)."""
    from tests.helpers import until_served
    out = ok(bs, "--create", "--topic", topic, *args)
    until_served(bs, topic)
    return out


def deleted(bs: str, topic: str) -> str:
    """``--delete --topic topic``, then waitForTopic(topic, 0) / waitTopicDeletion."""
    from tests.helpers import until_served
    out = ok(bs, "--delete", "--topic", topic)
    until_served(bs, topic, present=False)
    return out


def partition_rows(bs: str, topic: str) -> list[list[str]]:
    """--describe's partition lines, TAB-split, the leading empty field dropped."""
    return [row.split("\t")[1:] for row in ok(bs, "--describe", "--topic", topic).splitlines()[1:]]


@WITH_KAFKA
def test_create_with_defaults(broker):
    """TCT.java testCreateWithDefaults: created with the test's defaults
    (defaultNumPartitions 1, defaultReplicationFactor 1), listed, described with one
    partition of one replica, deleted, gone."""
    kind, bs = broker
    topic = name()
    assert created(bs, topic, "--partitions", "1", "--replication-factor", "1") == f"Created topic {topic}.\n"
    assert topic in ok(bs, "--list").splitlines()
    head = ok(bs, "--describe", "--topic", topic).splitlines()[0].split("\t")
    assert head[2:4] == ["PartitionCount: 1", "ReplicationFactor: 1"]
    assert [r[:4] for r in partition_rows(bs, topic)] == [
        [f"Topic: {topic}", "Partition: 0", f"Leader: {NODE[kind]}", f"Replicas: {NODE[kind]}"]]
    assert deleted(bs, topic) == ""
    assert topic not in ok(bs, "--list").splitlines()


@WITH_KAFKA
def test_create_with_default_replication(broker):
    """TCT.java testCreateWithDefaultReplication: --partitions 2, the default
    replication factor: two partitions of one replica each."""
    kind, bs = broker
    topic = name()
    created(bs, topic, "--partitions", "2")
    assert [r[1] for r in partition_rows(bs, topic)] == ["Partition: 0", "Partition: 1"]
    assert {r[3] for r in partition_rows(bs, topic)} == {f"Replicas: {NODE[kind]}"}


@WITH_KAFKA
def test_create_with_configs(broker):
    """TCT.java testCreateWithConfigs: delete.retention.ms=1000 is the topic's config."""
    kind, bs = broker
    topic = name()
    created(bs, topic, "--partitions", "2", "--config", "delete.retention.ms=1000")
    assert topic_configs(kind, bs, topic)["delete.retention.ms"] == "1000"


def test_create_with_topic_name_collision(broker):
    """TCT.java testCreateWithTopicNameCollision: "foo_bar" exists, --create --topic
    foo_bar fails with TopicExistsException. The collision WARNING (TC.java:484) is
    printed first, as Kafka 4.4 prints it (measured), on stderr with the error."""
    _, bs = broker
    topic = "foo_bar"
    from tests.helpers import admin
    from kproto.client.admin import NewTopic
    with admin(bs) as a:
        assert a.create_topics([NewTopic(topic, 1, 1)])[topic].error == 0
    warning = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
               "could collide. To avoid issues it is best to use either, but not both.\n")
    assert kt(bs, "--create", "--topic", topic) == (1, "", f"{warning}{ERROR}Topic '{topic}' already exists.\n")


def two_partitions(bs: str) -> str:
    topic = name()
    created(bs, topic, "--partitions", "2")
    return topic


@WITH_KAFKA
def test_alter_assignment_with_more_assignment_than_partitions(broker):
    """TCT.java testAlterAssignmentWithMoreAssignmentThanPartitions: 2 partitions,
    --partitions 3 with four partitions' replicas: the broker refuses (ExecutionException).
    One replica per partition on one node, where Kafka's 6 brokers take "5:3,3:1,4:2,3:2".
    Message: Kafka 4.4's controller, measured."""
    kind, bs = broker
    topic = two_partitions(bs)
    n = NODE[kind]
    status, out, err = kt(bs, "--alter", "--topic", topic, "--replica-assignment", f"{n},{n},{n},{n}",
                          "--partitions", "3")
    if kind == "tansu":     # tansu 0.6 has no CreatePartitions: the one error line
        assert (status, out) == (1, "") and err.startswith(ERROR)
        return
    assert (status, out, err) == (1, "", f"{ERROR}Attempted to add 1 additional partition(s), but only 2 "
                                         "assignment(s) were specified.\n")


@WITH_KAFKA
def test_alter_assignment_with_more_partitions_than_assignment(broker):
    """TCT.java testAlterAssignmentWithMorePartitionsThanAssignment: 2 partitions,
    --partitions 6 with three partitions' replicas: refused. Message: Kafka 4.4's, measured."""
    kind, bs = broker
    topic = two_partitions(bs)
    n = NODE[kind]
    status, out, err = kt(bs, "--alter", "--topic", topic, "--replica-assignment", f"{n},{n},{n}",
                          "--partitions", "6")
    if kind == "tansu":
        assert (status, out) == (1, "") and err.startswith(ERROR)
        return
    assert (status, out, err) == (1, "", f"{ERROR}Attempted to add 4 additional partition(s), but only 1 "
                                         "assignment(s) were specified.\n")


@WITH_KAFKA
def test_alter_with_invalid_partition_count(broker):
    """TCT.java testAlterWithInvalidPartitionCount: --partitions -1 on a 1-partition
    topic is the broker's InvalidPartitionsException. Message: Kafka 4.4's, measured."""
    kind, bs = broker
    topic = name()
    created(bs, topic, "--partitions", "1")
    status, out, err = kt(bs, "--alter", "--partitions", "-1", "--topic", topic)
    if kind == "tansu":
        assert (status, out) == (1, "") and err.startswith(ERROR)
        return
    assert (status, out, err) == (1, "", f"{ERROR}The topic {topic} currently has 1 partition(s); -1 would not "
                                         "be an increase.\n")


@pytest.mark.brokers("kproto", "kafka")
def test_create_with_replica_assignment_on_one_node(broker):
    """Not TCT.java testCreateWithReplicaAssignment (brokers 0-5, see the docstring's
    ledger), its input on one node: Kafka 4.4's controller names the lowest
    unregistered broker id of the first partition (validateManualPartitionAssignment,
    on the one-node Kafka here); so is a replication factor above the broker count.
    (tansu 0.6 creates the topic, ignoring the assignment.)"""
    _, bs = broker
    assert kt(bs, "--create", "--topic", name(), "--replica-assignment", "5:4,3:2,1:0") == (1, "", (
        f"{ERROR}The manual partition assignment includes broker 4, but no such broker is registered.\n"))
    assert kt(bs, "--create", "--topic", name(), "--replication-factor", "3") == (1, "", (
        f"{ERROR}Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be "
        "reached because only 1 broker(s) are registered or some brokers have all their log directories "
        "cordoned.\n"))


@WITH_KAFKA
def test_topic_deletion(broker):
    """TCT.java testTopicDeletion: deleted with the tool, no longer listed."""
    _, bs = broker
    topic = name()
    created(bs, topic, "--partitions", "1")
    assert deleted(bs, topic) == ""
    assert topic not in ok(bs, "--list").splitlines()


@pytest.fixture
def fresh(broker, tmp_path):
    """A broker of the module's kind with no topics yet: TCT.java's cluster per test,
    for the cases that assert on every topic there is."""
    from tests import components
    kind, _ = broker
    start = components.kproto_broker if kind == components.KPROTO else components.tansu
    with start(tmp_path) as bs:
        yield kind, bs


INTERNAL_GUARD = ("kproto's broker refuses to delete an internal topic (\"Topic __consumer_offsets is a kafka "
                  "internal topic and is not allowed to be marked for deletion.\", the words of Kafka 2.8's "
                  "tool) and to grow one, as its coordinators need theirs; Kafka 4.4 leaves that to ACLs")


@pytest.mark.differs("kproto", INTERNAL_GUARD)
def test_delete_internal_topic(fresh):
    """TCT.java testDeleteInternalTopic: __consumer_offsets is deleted by --delete
    --topic like any topic (the tool has no rule against it; ACLs are the guard) and is
    gone from the listing. Kafka's KRaft case creates the topic with the Admin; kproto's
    broker refuses a client's CreateTopics for every internal topic (Kafka only for
    __cluster_metadata), so there the broker creates it, on the first FindCoordinator."""
    kind, bs = fresh
    from tests.helpers import admin
    from kproto.client.admin import NewTopic
    from kproto.common import GROUP_METADATA_TOPIC_NAME as offsets
    with admin(bs) as a:
        if kind == "kproto":
            a.find_coordinator("parity-group")
        else:
            assert a.create_topics([NewTopic(offsets, 1, 1)])[offsets].error == 0
    assert offsets in ok(bs, "--list").splitlines()
    assert ok(bs, "--delete", "--topic", offsets) == ""
    assert offsets not in ok(bs, "--list").splitlines()


def min_isr_topics(bs: str) -> tuple[str, str]:
    """(a topic at its min ISR, a topic under it): one replica each, min.insync.replicas
    1 and 2. Kafka's cluster gets there by stopping brokers under 6-replica topics; on
    one node the configured minimum does it, and the filter under test reads the same two
    numbers (TC.java PartitionDescription.isAtMinIsrPartitions / isUnderMinIsr)."""
    at, under = "at" + name(), "under" + name()
    ok(bs, "--create", "--topic", at, "--partitions", "1", "--config", "min.insync.replicas=1")
    ok(bs, "--create", "--topic", under, "--partitions", "1", "--config", "min.insync.replicas=2")
    return at, under


def test_describe_at_min_isr_partitions(fresh):
    """TCT.java testDescribeAtMinIsrPartitions: --describe --at-min-isr-partitions
    --exclude-internal prints one row, the partition whose ISR count equals its
    min.insync.replicas (captureStandardOut trims: the row starts "\\tTopic: ")."""
    _, bs = fresh
    at, _ = min_isr_topics(bs)
    rows = ok(bs, "--describe", "--at-min-isr-partitions", "--exclude-internal").splitlines()
    assert len(rows) == 1 and rows[0].startswith(f"\tTopic: {at}\tPartition: 0\t"), rows


def test_describe_under_min_isr_partitions(fresh):
    """TCT.java testDescribeUnderMinIsrPartitions: --describe --under-min-isr-partitions
    --exclude-internal prints the partition whose ISR is below min.insync.replicas, first
    (Kafka measured: the same one row)."""
    _, bs = fresh
    _, under = min_isr_topics(bs)
    rows = ok(bs, "--describe", "--under-min-isr-partitions", "--exclude-internal").splitlines()
    assert len(rows) == 1 and rows[0].startswith(f"\tTopic: {under}\tPartition: 0\t"), rows


# --- THROTTLING_QUOTA_EXCEEDED: one request, no retry (TCT.java's Admin mocks) ---------------
# Kafka's tests mock the Admin and verify the tool calls it once with
# retryOnQuotaViolation(false). Here kproto's broker answers the request with the error
# through its fault plane, which counts the requests it answered: exactly one, and the
# tool prints the error (ThrottlingQuotaExceededException's default message).

THROTTLED = f"{ERROR}The throttling quota has been exceeded.\n"


@pytest.fixture
def faulty(tmp_path):
    from kproto.testing import Broker
    with Broker(tmp_path / "data") as b:
        yield b


def test_create_topic_does_not_retry_throttling_quota_exceeded_exception(faulty):
    """TCT.java testCreateTopicDoesNotRetryThrottlingQuotaExceededException: --create
    --topic (no partitions or replication factor: the broker's defaults)."""
    with faulty.faults.inject(api="CreateTopics", error="THROTTLING_QUOTA_EXCEEDED") as rule:
        assert kt(faulty.bootstrap_servers, "--create", "--topic", TOPIC) == (1, "", THROTTLED)
        assert rule.hits == 1
    assert TOPIC not in ok(faulty.bootstrap_servers, "--list").splitlines()


def test_delete_topic_does_not_retry_throttling_quota_exceeded_exception(faulty):
    """TCT.java testDeleteTopicDoesNotRetryThrottlingQuotaExceededException."""
    bs = faulty.bootstrap_servers
    ok(bs, "--create", "--topic", TOPIC, "--partitions", "1")
    with faulty.faults.inject(api="DeleteTopics", error="THROTTLING_QUOTA_EXCEEDED") as rule:
        assert kt(bs, "--delete", "--topic", TOPIC) == (1, "", THROTTLED)
        assert rule.hits == 1
    assert TOPIC in ok(bs, "--list").splitlines()         # answered instead of the work


def test_create_partitions_does_not_retry_throttling_quota_exceeded_exception(faulty):
    """TCT.java testCreatePartitionsDoesNotRetryThrottlingQuotaExceededException:
    --alter --partitions 3 asks once for 3 partitions in all."""
    bs = faulty.bootstrap_servers
    ok(bs, "--create", "--topic", TOPIC, "--partitions", "1")
    with faulty.faults.inject(api="CreatePartitions", error="THROTTLING_QUOTA_EXCEEDED") as rule:
        assert kt(bs, "--alter", "--topic", TOPIC, "--partitions", "3") == (1, "", THROTTLED)
        assert rule.hits == 1
    assert "\tPartitionCount: 1\t" in ok(bs, "--describe", "--topic", TOPIC).splitlines()[0]



def test_describe_does_not_fail_when_listing_reassignment_is_unauthorized(broker, monkeypatch):
    """TCT.java testDescribeDoesNotFailWhenListingReassignmentIsUnauthorized: Kafka's
    test spies on the Admin so that listPartitionReassignments fails with
    ClusterAuthorizationException; describe still prints the topic and its partition
    (TopicService.listAllReassignments takes that as no reassignments). Neither broker
    here serves ListPartitionReassignments, so the spy is on kproto's client: the broker
    seems to serve it and answers CLUSTER_AUTHORIZATION_FAILED, once."""
    from types import SimpleNamespace
    from kproto.client.transport import BrokerClient
    from kproto.errors import ErrorCode
    from kproto.tools.topics.command import LIST_PARTITION_REASSIGNMENTS as LPR
    _, bs = broker
    topic = name()
    ok(bs, "--create", "--topic", topic, "--partitions", "1")
    asked = []
    supports, request = BrokerClient.supports, BrokerClient.request

    def spy_request(self, api_key, body, version=None):
        if api_key != LPR:
            return request(self, api_key, body, version)
        asked.append(body)
        return SimpleNamespace(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Unauthorized",
                               topics=[])
    monkeypatch.setattr(BrokerClient, "supports", lambda self, key: key == LPR or supports(self, key))
    monkeypatch.setattr(BrokerClient, "request", spy_request)
    rows = ok(bs, "--describe", "--topic", topic).splitlines()
    assert len(rows) == 2 and rows[0].startswith(f"Topic: {topic}"), rows
    assert asked == [{"topics": [{"name": topic, "partition_indexes": [0]}]}]
