"""`kproto topics` against the expectations of Kafka's own TopicCommandTest.

Each test mirrors one test of tools/src/test/java/org/apache/kafka/tools/TopicCommandTest.java
(apache/kafka trunk 1eb76443, /work/.mirror/apache+kafka/repo; TCT.java below), run
against the kproto broker and tansu. Kafka's tests run a 3-4 broker cluster; these
brokers have one node, so replication factors are 1. Strings the tests do not pin are
cited from tools/src/main/java/org/apache/kafka/tools/TopicCommand.java (TC.java:N).

Known, deliberate difference: kafka-topics.sh prints "Error while executing topic
command : <message>" on stdout (TC.java:133) plus a stack trace in the log; kproto
prints that one line on stderr and exits 1.
"""

from __future__ import annotations

import uuid

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
