"""`kproto topics` (kafka-topics.sh parity) against the kproto broker and tansu.

Each broker is started once per module on a free loopback port; every test
uses its own topic names, so tests do not depend on each other's order.
The describe text is built by ``kafka_describe`` from the print statements of
Kafka's tools/src/main/java/org/apache/kafka/tools/TopicCommand.java (trunk
1eb76443, TopicDescription.printDescription :296-310 and
PartitionDescription.printDescription :355-390), with the random TopicId
replaced by <TOPIC_ID>. Kafka's own TopicCommandTest scenarios are in
tests/parity/test_kafka_parity_topics.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import components
from tests.tools.helpers import kt, topic_configs
from tests.tools.helpers import topics_ok as ok
from kproto import jvm
from kproto.tools.topics.command import (
    TopicCommandError, describe_order, parse_configs, parse_replica_assignment, select_topics,
)

KPROTO = str(Path(sys.executable).parent / "kproto")
TOPIC_ID = re.compile(r"\tTopicId: [A-Za-z0-9_-]{22}\t")




def masked(text: str) -> str:
    return TOPIC_ID.sub("\tTopicId: <TOPIC_ID>\t", text)


# Elr/LastKnownElr (TC.java:374-387): the lists DescribeTopicPartitions gave (both advertise
# it and answer empty lists); "N/A" only when Admin falls back to Metadata.
ELR = {"kproto": "", "tansu": ""}
# Adding/Removing Replicas (TC.java:365-371) print for a partition ListPartitionReassignments
# lists: tansu 0.6 lists every partition, with empty lists (Kafka 4.4's tool prints them
# then, measured); kproto's broker does not serve it (one node: no reassignment).
REASSIGNMENT = {"kproto": "", "tansu": "\tAdding Replicas: \tRemoving Replicas: "}


def kafka_describe(topic: str, partitions: int, node: str, configs: str = "", elr: str = "N/A",
                   reassignment: str = "") -> str:
    """kafka-topics.sh --describe of a one-replica topic on a one-node cluster:
    TC.java:301-309 (topic line), then per partition TC.java:356-389."""
    head = (f"Topic: {topic}\tTopicId: <TOPIC_ID>\tPartitionCount: {partitions}\tReplicationFactor: 1"
            f"\tConfigs: {configs}\n")
    return head + "".join(f"\tTopic: {topic}\tPartition: {p}\tLeader: {node}\tReplicas: {node}\tIsr: {node}"
                          f"{reassignment}\tElr: {elr}\tLastKnownElr: {elr}\n" for p in range(partitions))


NODE = {"kproto": "1", "tansu": "111"}


# --- against both brokers ------------------------------------------------------------

def test_create_with_configs_and_describe(broker):
    kind, bs = broker
    out = ok(bs, "--create", "--topic", "golden-a", "--partitions", "3", "--replication-factor", "1",
             "--config", "retention.ms=123456", "--config", "cleanup.policy = compact")
    assert out == "Created topic golden-a.\n"
    text = ok(bs, "--describe", "--topic", "golden-a")
    assert TOPIC_ID.search(text), text
    # tansu 0.6 reports every topic config with source DEFAULT_CONFIG: none is printed.
    configs = "cleanup.policy=compact,retention.ms=123456" if kind == "kproto" else ""
    assert masked(text) == kafka_describe("golden-a", 3, NODE[kind], configs, ELR[kind], REASSIGNMENT[kind])


def test_create_warns_about_collision_chars(broker):
    _, bs = broker
    status, out, err = kt(bs, "--create", "--topic", "warn_me.now", "--partitions", "1")
    assert status == 0
    assert out == "Created topic warn_me.now.\n"
    assert err == ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
                   "('_') could collide. To avoid issues it is best to use either, but not both.\n")


def test_describe_by_regex_and_all_in_kafka_order(broker):
    kind, bs = broker
    for name in ("rx.orders-eu", "rx.orders-us", "rx.payments"):   # '.' names: a warning on stderr
        assert kt(bs, "--create", "--topic", name, "--partitions", "2", "--replication-factor", "1")[:2] == (
            0, f"Created topic {name}.\n")
    text = ok(bs, "--describe", "--topic", r"rx\.orders-.*")
    # Admin's result is a Java HashMap: Java 17 iterates these two names us, eu
    # (see test_java_hashmap_order_matches_java_17).
    assert masked(text) == "".join(kafka_describe(t, 2, NODE[kind], elr=ELR[kind], reassignment=REASSIGNMENT[kind])
                                   for t in ("rx.orders-us", "rx.orders-eu"))
    # A comma list is an alternation, as TopicFilter reads it.
    both = ok(bs, "--describe", "--topic", "rx.payments, rx.orders-eu")
    topics = [l.split("\t")[0] for l in both.splitlines() if l.startswith("Topic: ")]
    assert topics == ["Topic: rx.orders-eu", "Topic: rx.payments"]   # Java 17 HashMap order
    # All topics: every topic line, in Admin's HashMap order.
    everything = ok(bs, "--describe")
    names = [l.split("\t")[0][len("Topic: "):] for l in everything.splitlines() if l.startswith("Topic: ")]
    assert {"rx.orders-eu", "rx.orders-us", "rx.payments"} <= set(names)
    assert names == describe_order(sorted(names))


def test_list_with_and_without_internal(broker):
    kind, bs = broker
    ok(bs, "--create", "--topic", "ls-plain", "--partitions", "1")
    if kind == "kproto":    # the broker creates its internal topics (a client may not): a commit does it
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": bs, "group.id": "ls-group", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("ls-plain", 0, 1)], asynchronous=False)
        c.close()
    else:
        status, _, err = kt(bs, "--create", "--topic", "__consumer_offsets", "--partitions", "1",
                            "--if-not-exists")
        assert status == 0, err
    listed = ok(bs, "--list").splitlines()
    assert listed == sorted(listed)
    assert "ls-plain" in listed and "__consumer_offsets" in listed
    external = ok(bs, "--list", "--exclude-internal").splitlines()
    assert "ls-plain" in external and "__consumer_offsets" not in external
    assert ok(bs, "--list", "--topic", "ls-.*") == "ls-plain\n"
    assert ok(bs, "--list", "--topic", "nothing-matches-.*") == "\n"     # Kafka prints one empty line
    assert json.loads(ok(bs, "--list", "--topic", "ls-.*", "--output", "json")) == ["ls-plain"]
    assert ok(bs, "--list", "--topic", "ls-.*", "--output", "yaml") == "- ls-plain\n"


def test_alter_partitions(broker):
    kind, bs = broker
    ok(bs, "--create", "--topic", "grow", "--partitions", "2", "--replication-factor", "1")
    status, out, err = kt(bs, "--alter", "--topic", "grow", "--partitions", "5")
    if kind == "tansu":   # tansu 0.6 does not implement CreatePartitions
        assert (status, out) == (1, "")
        assert err.startswith("Error while executing topic command : ") and err.count("\n") == 1
        return
    assert (status, out, err) == (0, "", "")
    text = ok(bs, "--describe", "--topic", "grow")
    assert "\tPartitionCount: 5\t" in text.splitlines()[0]
    assert [l.split("\t")[2] for l in text.splitlines()[1:]] == [f"Partition: {i}" for i in range(5)]


def test_alter_partitions_not_an_increase(broker):
    kind, bs = broker
    ok(bs, "--create", "--topic", "shrink", "--partitions", "3", "--replication-factor", "1")
    status, out, err = kt(bs, "--alter", "--topic", "shrink", "--partitions", "2")
    assert (status, out) == (1, "")
    if kind == "kproto":
        assert err == ("Error while executing topic command : The topic shrink currently has 3 partition(s); "
                       "2 would not be an increase.\n")
        status, out, err = kt(bs, "--alter", "--topic", "shrink", "--partitions", "3")
        assert (status, err) == (1, "Error while executing topic command : Topic already has 3 partition(s).\n")
    else:
        assert err.startswith("Error while executing topic command : ") and err.count("\n") == 1


def test_alter_and_delete_configs(broker):
    kind, bs = broker
    ok(bs, "--create", "--topic", "tuned", "--partitions", "1", "--config", "retention.ms=1000")
    assert ok(bs, "--alter", "--topic", "tuned", "--config", "segment.ms=3600000",
              "--config", "retention.ms=2000") == ""
    configs = topic_configs(kind, bs, "tuned")
    assert configs.get("retention.ms") == "2000" and configs.get("segment.ms") == "3600000"
    assert ok(bs, "--alter", "--topic", "tuned", "--delete-config", "retention.ms") == ""
    configs = topic_configs(kind, bs, "tuned")
    assert "retention.ms" not in configs and configs.get("segment.ms") == "3600000"
    if kind == "kproto":
        assert "segment.ms=3600000" in ok(bs, "--describe", "--topics-with-overrides", "--topic", "tuned")


def test_delete(broker):
    _, bs = broker
    ok(bs, "--create", "--topic", "doomed", "--partitions", "1")
    assert ok(bs, "--delete", "--topic", "doomed") == ""
    assert "doomed" not in ok(bs, "--list").splitlines()
    status, out, err = kt(bs, "--describe", "--topic", "doomed")
    assert (status, out, err) == (1, "", "Error while executing topic command : "
                                         "Topic 'doomed' does not exist as expected\n")
    assert kt(bs, "--delete", "--topic", "doomed", "--if-exists") == (0, "", "")
    assert kt(bs, "--describe", "--topic", "doomed", "--if-exists") == (0, "", "")


def test_topic_exists(broker):
    _, bs = broker
    ok(bs, "--create", "--topic", "twice", "--partitions", "1")
    status, out, err = kt(bs, "--create", "--topic", "twice", "--partitions", "1")
    assert (status, out, err) == (1, "", "Error while executing topic command : Topic 'twice' already exists.\n")
    assert kt(bs, "--create", "--topic", "twice", "--partitions", "1", "--if-not-exists") == (0, "", "")


def test_invalid_configs_fail_before_sending(broker):
    _, bs = broker
    cases = {
        ("--config", "no.such.config=1"): "Unknown topic config name: no.such.config",
        ("--config", "retention.ms=soon"):
            "Invalid value soon for configuration retention.ms: Not a number of type LONG",
        ("--config", "retention.ms"): 'requirement failed: Invalid topic config: all configs to be added '
                                      'must be in the format "key=val".',
        ("--partitions", "0"): "The partitions must be greater than 0",
        ("--replication-factor", "40000"): "The replication factor must be between 1 and 32767 inclusive",
    }
    for args, message in cases.items():
        status, out, err = kt(bs, "--create", "--topic", "never-made", *args)
        assert (status, out, err) == (1, "", f"Error while executing topic command : {message}\n"), args
    assert "never-made" not in ok(bs, "--list").splitlines()


def test_describe_json_and_filters(broker):
    kind, bs = broker
    ok(bs, "--create", "--topic", "js", "--partitions", "2", "--replication-factor", "1")
    [t] = json.loads(ok(bs, "--describe", "--topic", "js", "--output", "json"))
    node = int(NODE[kind])
    assert t["topic"] == "js" and t["partition_count"] == 2 and t["replication_factor"] == 1
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", t["topic_id"])
    elr = []     # DescribeTopicPartitions' lists (null only when the broker does not serve it)
    moving = {"adding_replicas": [], "removing_replicas": []} if kind == "tansu" else {}   # REASSIGNMENT
    assert t["partitions"] == [
        {"partition": p, "leader": node, "replicas": [node], "isr": [node], **moving, "elr": elr,
         "last_known_elr": elr}
        for p in (0, 1)]
    # One healthy replica, min.insync.replicas 1: at-min-isr lists every partition, the others none.
    assert ok(bs, "--describe", "--topic", "js", "--under-replicated-partitions") == ""
    assert ok(bs, "--describe", "--topic", "js", "--unavailable-partitions") == ""
    assert ok(bs, "--describe", "--topic", "js", "--under-min-isr-partitions") == ""
    at_min = ok(bs, "--describe", "--topic", "js", "--at-min-isr-partitions").splitlines()
    assert [l.split("\t")[1:3] for l in at_min] == [["Topic: js", "Partition: 0"], ["Topic: js", "Partition: 1"]]
    assert ok(bs, "--describe", "--topic", "js", "--topics-with-overrides") == ""


def test_shell_completion_of_topic_names(broker):
    _, bs = broker
    ok(bs, "--create", "--topic", "complete-me", "--partitions", "1")
    env = dict(os.environ, _KPROTO_COMPLETE="bash_complete", COMP_WORDS="kproto topics --topic complete-",
               COMP_CWORD="3", KPROTO_BOOTSTRAP_SERVER=bs)
    proc = subprocess.run([KPROTO], env=env, capture_output=True, text=True, timeout=30)
    assert proc.stdout.splitlines() == ["plain,complete-me"], proc.stderr


def test_subprocess_one_line_errors_and_status(broker):
    _, bs = broker
    proc = subprocess.run([KPROTO, "topics", "--bootstrap-server", bs, "--alter", "--topic", "ghost-.*",
                           "--partitions", "3"], capture_output=True, text=True, timeout=30)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("Error while executing topic command : "
                           "Topic 'ghost-.*' does not exist as expected\n")


# --- without a broker -----------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    ((), "Command must include exactly one action: --list, --describe, --create, --alter or --delete"),
    (("--list", "--describe", "--bootstrap-server", "x:1"),
     "Command must include exactly one action: --list, --describe, --create, --alter or --delete"),
    (("--list",), "--bootstrap-server must be specified"),
    (("--create", "--bootstrap-server", "x:1"), 'Missing required argument "[topic]"'),
    (("--alter", "--topic", "t", "--bootstrap-server", "x:1"), 'Missing required argument "[partitions]"'),
    (("--describe", "--partitions", "3", "--bootstrap-server", "x:1"),
     'Option "[partitions]" can\'t be used with option "[describe]"'),
    (("--create", "--topic", "t", "--replica-assignment", "1:2", "--partitions", "1", "--bootstrap-server", "x:1"),
     'Option "[replica-assignment]" can\'t be used with option "[partitions]"'),
    (("--describe", "--under-replicated-partitions", "--topics-with-overrides", "--bootstrap-server", "x:1"),
     'Option "[under-replicated-partitions]" can\'t be used with option "[topics-with-overrides]"'),
    (("--list", "--if-exists", "--bootstrap-server", "x:1"), 'Option "[if-exists]" can\'t be used with option "[list]"'),
    (("--describe", "--partitions", "many", "--bootstrap-server", "x:1"),
     "Invalid value for '--partitions': 'many' is not a valid integer."),
])
def test_usage_errors_are_one_line_status_2(args, message, monkeypatch):
    monkeypatch.delenv("KPROTO_BOOTSTRAP_SERVER", raising=False)
    assert kt(None, *args) == (2, "", message + "\n")


def test_cannot_connect_is_one_line_status_1():
    port = components.free_port()
    proc = subprocess.run([KPROTO, "topics", "--bootstrap-server", f"127.0.0.1:{port}", "--list"],
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.startswith(f"Error while executing topic command : cannot connect to 127.0.0.1:{port}")
    assert proc.stderr.count("\n") == 1


def test_help_documents_exit_status():
    status, out, _ = kt(None, "--help")
    assert status == 0
    assert "Exit status: 0 ok; 1 the command failed" in out and "2 bad flags" in out


def test_java_hashmap_order_matches_java_17():
    # Printed by a Java 17 HashMap (new HashMap<>() and the describeTopics chain).
    names = ["cleanup.policy", "compression.type", "min.insync.replicas", "retention.ms", "segment.bytes",
             "segment.ms", "max.message.bytes", "unclean.leader.election.enable"]
    assert jvm.java_hashmap_order(names, jvm.java_string_hash) == JAVA_CONFIG_ORDER
    assert describe_order(["audit-log", "bar", "baz", "foo", "orders", "payments"]) == \
        ["bar", "baz", "orders", "audit-log", "foo", "payments"]
    assert describe_order([f"t{i}" for i in range(200)])[:12] == \
        ["t50", "t52", "t51", "t54", "t53", "t56", "t55", "t58", "t57", "t59", "t191", "t190"]


JAVA_CONFIG_ORDER = ["compression.type", "cleanup.policy", "max.message.bytes", "min.insync.replicas",
                     "retention.ms", "segment.bytes", "segment.ms", "unclean.leader.election.enable"]


def test_topic_filter_and_parsers():
    names = ["__consumer_offsets", "a.b", "axb", "orders", "orders-eu"]
    assert select_topics(names, r"a\.b", False) == ["a.b"]
    assert select_topics(names, "a.b", False) == ["a.b", "axb"]
    assert select_topics(names, ' "orders, a.b" ', False) == ["a.b", "axb", "orders"]
    assert select_topics(names, None, True) == ["a.b", "axb", "orders", "orders-eu"]
    assert select_topics(names, "__.*", True) == []
    with pytest.raises(TopicCommandError, match=r"^orders\[ is an invalid regex\.$"):
        select_topics(names, "orders[", False)
    assert parse_replica_assignment("1:2, 3:4") == {0: [1, 2], 1: [3, 4]}
    with pytest.raises(TopicCommandError, match="^Partition replica lists may not contain duplicate entries: 1$"):
        parse_replica_assignment("1:1")
    with pytest.raises(TopicCommandError, match=r"^Partition 1 has different replication factor: \[3\]$"):
        parse_replica_assignment("1:2,3")
    assert parse_configs(("retention.ms = 5", "cleanup.policy=compact")) == {
        "retention.ms": "5", "cleanup.policy": "compact"}
