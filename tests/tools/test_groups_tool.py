"""`kproto groups` (kafka-consumer-groups.sh parity) against the kproto broker and tansu.

Each broker starts once per module on a free loopback port; every test uses
its own topics and groups. Records come from confluent_kafka's Producer, one
record per batch (tansu gives a whole batch one offset), committed offsets
from kproto's Admin (an inactive group), and the live group is a real
confluent_kafka Consumer. Expected text is written out with Python's
%-formatting, which pads like Java's printf for these ASCII values; row orders
are the ones Java 17 prints for the same HashMaps (see the unit tests below).

tansu 0.6 differs from Kafka in ways the tests pin down where they show:
ListGroups reports state "Unknown" and leaves out groups without committed
offsets, DescribeGroups reports no member assignments, client ids or hosts,
an unknown group describes as Empty, DeleteGroups deletes a live group, and
ListOffsets by timestamp answers the earliest offset.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicPartition as KafkaTopicPartition

from kproto.client.admin import LATEST, NewTopic
from kproto import jvm
from kproto.tools import render
from kproto.tools.groups import text as groups_text
from kproto.tools.groups.args import (
    GroupCommandFailed, decode_assignment, parse_datetime, parse_duration_ns, parse_reset_plan, parse_topic_arg,
)
from kproto.tools.groups.command import DRY_RUN_WARNING, spec_order
from kproto.tools.main import UsageProblem, cli
from tests import components
from tests.helpers import admin, commit, committed
from tests.tools.helpers import kg, reset_text
from tests.tools.helpers import groups_ok as ok

KPROTO = str(Path(sys.executable).parent / "kproto")
NODE = {"kproto": 1, "tansu": 111}
OFFSETS_HEADER = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                  "HOST", "CLIENT-ID")
T0 = 1_000_000_000_000          # 2001-09-09T01:46:40Z




# --- helpers ---------------------------------------------------------------------------

def make_topic(bootstrap: str, topic: str, counts: list[int], timestamps: list[int] | None = None) -> None:
    """A topic with ``counts[p]`` records in partition p, one record per batch."""
    with admin(bootstrap) as a:
        assert a.create_topics([NewTopic(topic, len(counts), 1)])[topic].error == 0
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, n in enumerate(counts):
        for i in range(n):
            extra = {"timestamp": timestamps[i]} if timestamps else {}
            producer.produce(topic, value=b"v%d" % i, partition=partition, **extra)
            assert producer.flush(20) == 0


def listed(bootstrap: str, offsets: dict) -> dict:
    with admin(bootstrap) as a:
        return {tp: r.offset for tp, r in a.list_offsets(offsets).items()}


def offsets_text(rows: list[tuple], consumer_width: int = 15, host_width: int = 15) -> str:
    g = max([15] + [len(r[0]) for r in rows])
    t = max([15] + [len(r[1]) for r in rows])
    fmt = f"\n%-{g}s %-{t}s %-10s %-15s %-15s %-15s %-{consumer_width}s %-{host_width}s %s"
    return "".join(fmt % tuple(r) for r in [OFFSETS_HEADER] + rows) + "\n"


def by_timestamp(bootstrap: str, tps: list, stamp: int) -> dict:
    """What --to-datetime / --by-duration must choose: the broker's answer, or
    the log end where it has none (-1)."""
    found = listed(bootstrap, {tp: stamp for tp in tps})
    ends = listed(bootstrap, {tp: LATEST for tp in tps})
    return {tp: ends[tp] if found[tp] == -1 else found[tp] for tp in tps}


# --- the live group ------------------------------------------------------------------

@pytest.fixture(scope="module")
def live(broker):
    """Group 'live': one confluent_kafka Consumer on 'live-topic' (2, 3 and 4
    records in partitions 0-2) that has committed offset 1 of partition 0."""
    kind, bs = broker
    make_topic(bs, "live-topic", [2, 3, 4])
    consumer = Consumer({"bootstrap.servers": bs, "group.id": "live", "client.id": "live-client",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["live-topic"])
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer got no assignment in 60 s"
            consumer.poll(0.2)
        consumer.commit(offsets=[KafkaTopicPartition("live-topic", 0, 1)], asynchronous=False)
        yield kind, bs, consumer
    finally:
        consumer.close()


def member_id(bs: str) -> str:
    with admin(bs) as a:
        [m] = a.describe_groups(["live"])["live"].members
    return m.member_id


def test_describe_live_group_offsets(live):
    kind, bs, _ = live
    status, out, err = kg(bs, "--describe", "--group", "live")
    assert (status, err) == (0, "")
    if kind == "kproto":
        cid = member_id(bs)
        assert cid.startswith("live-client-")
        # Kafka 4.4 sorts a member's rows by topic, then partition (measured).
        rows = [("live", "live-topic", 0, 1, 2, 1, cid, "/127.0.0.1", "live-client"),
                ("live", "live-topic", 1, "-", 3, "-", cid, "/127.0.0.1", "live-client"),
                ("live", "live-topic", 2, "-", 4, "-", cid, "/127.0.0.1", "live-client")]
        assert out == offsets_text(rows, consumer_width=len(cid))
    else:   # no assignments from tansu: the committed partition alone, owned by nobody
        assert out == offsets_text([("live", "live-topic", 0, 1, 2, 1, "-", "-", "-")])


def test_describe_live_group_members_and_state(live):
    kind, bs, _ = live
    # tansu answers ConsumerGroupDescribe for a classic group without an error and without its
    # members (the member id as its assignor): Kafka 4.4's tool, measured against the same
    # tansu, prints no member row and #MEMBERS 0, with the member id under ASSIGNMENT-STRATEGY,
    # and so does kproto's (Admin.describeConsumerGroups asks ConsumerGroupDescribe first).
    cid = member_id(bs)
    if kind == "tansu":
        header = "%-15s %-15s %-15s %-15s %-15s " % ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
        assert kg(bs, "--describe", "--group", "live", "--members") == (0, f"\n{header}\n", "")
        coordinator = f"{bs}  ({NODE[kind]})"
        fmt = f"\n%-15s %-{max(25, len(coordinator))}s %-20s %-20s %s"
        assert kg(bs, "--describe", "--group", "live", "--state") == (0, fmt % (
            "GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS") + fmt % (
            "live", coordinator, cid, "Stable", 0) + "\n", "")
        return
    host, client, count, assignment = ("/127.0.0.1", "live-client", 3, "live-topic:0,1,2") if kind == "kproto" \
        else ("", "", 0, "-")
    fmt = f"%-15s %-{max(15, len(cid))}s %-15s %-15s %-15s "
    header = fmt % ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    row = fmt % ("live", cid, host, client, count)
    assert kg(bs, "--describe", "--group", "live", "--members") == (0, f"\n{header}\n{row}\n", "")
    # Kafka 4.4's --verbose columns (KIP-848): a classic group's members have no epochs
    # and no target assignment, "-".
    verbose = "%-15s %-20s %-15s %-20s"
    assert kg(bs, "--describe", "--group", "live", "--members", "--verbose") == (
        0, f"\n{header}" + verbose % ("CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
        + f"\n{row}" + verbose % ("-", assignment, "-", "-") + "\n", "")
    [member] = json.loads(ok(bs, "--describe", "--group", "live", "--members", "--output", "json"))
    assert member["consumer_id"] == cid and member["partitions"] == count

    coordinator = f"{bs}  ({NODE[kind]})"
    fmt = f"\n%-15s %-{max(25, len(coordinator))}s %-20s %-20s %s"
    strategy = "range" if kind == "kproto" else "-"
    expected = fmt % ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS") + \
        fmt % ("live", coordinator, strategy, "Stable", 1) + "\n"
    assert kg(bs, "--describe", "--group", "live", "--state") == (0, expected, "")


def test_table_and_yaml_output(live, monkeypatch):
    kind, bs, _ = live
    monkeypatch.setenv("COLUMNS", "250")            # rich fits its tables to the terminal
    cid = member_id(bs)
    table = ok(bs, "--describe", "--group", "live", "--members", "--output", "table")
    # tansu's ConsumerGroupDescribe has no members (test_describe_live_group_members_and_state)
    assert "#PARTITIONS" in table and "ASSIGNMENT" in table and (cid in table) == (kind == "kproto")
    table = ok(bs, "--describe", "--group", "live", "--state", "--output", "table")
    assert f"{bs}  ({NODE[kind]})" in table and "Stable" in table
    assert "LOG-END-OFFSET" in ok(bs, "--describe", "--group", "live", "--output", "table")
    yaml = ok(bs, "--describe", "--group", "live", "--state", "--output", "yaml")
    assert yaml.startswith("- group: live\n  coordinator:\n") and "  state: Stable\n" in yaml


def test_reset_refused_for_active_group(live):
    kind, bs, _ = live
    before = committed(bs, "live")
    status, out, err = kg(bs, "--reset-offsets", "--group", "live", "--all-topics", "--to-earliest", "--execute")
    assert status == 1
    assert err == ("Error: Assignments can only be reset if the group 'live' is inactive, "
                   "but the current state is Stable.\n")
    assert out == reset_text([])   # Kafka's empty plan: the header alone
    assert committed(bs, "live") == before == {("live-topic", 0): 1}


def test_delete_active_group(live):
    kind, bs, _ = live
    status, out, err = kg(bs, "--delete", "--group", "live")
    if kind == "kproto":    # Kafka 4.4 prints the cause without the ExecutionException, on stdout
        assert (status, err) == (1, "Error: Deletion of some consumer groups failed:\n")
        assert out == ("* Group 'live' could not be deleted due to: "
                       "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.\n")
    else:   # tansu deletes a group that has members
        assert (status, out, err) == (0, "Deletion of requested consumer groups ('live') was successful.\n", "")


# --- inactive groups -------------------------------------------------------------------

def test_list_with_and_without_state(broker):
    kind, bs = broker
    make_topic(bs, "ls-topic", [1])
    commit(bs, "ls-group", {("ls-topic", 0): 1})
    names = ok(bs, "--list").splitlines()
    assert "ls-group" in names and names == sorted(names)
    state = "Empty" if kind == "kproto" else "Unknown"          # tansu's ListGroups has no states
    lines = ok(bs, "--list", "--state").splitlines()
    width = max(15, *map(len, names)) + 10
    assert lines[0] == "%-*s %-20s" % (width, "GROUP", "STATE")
    assert "%-*s %-20s" % (width, "ls-group", state) in lines
    filtered = ok(bs, "--list", "--state", "stable, EMPTY").splitlines()
    assert (["ls-group", state] in [l.split() for l in filtered]) == (kind == "kproto")
    assert "ls-group" in json.loads(ok(bs, "--list", "--output", "json"))
    assert {"group": "ls-group", "state": state} in json.loads(ok(bs, "--list", "--state", "--output", "json"))


def test_command_config(broker, tmp_path):
    _, bs = broker
    config = tmp_path / "admin.properties"
    config.write_text("# Admin client settings\nclient.id = kproto-groups-test\nrequest.timeout.ms=20000\n")
    assert "ls-group" in ok(bs, "--list", "--command-config", str(config)).splitlines()
    # SASL_SSL without sasl.mechanism is Kafka's default GSSAPI, which kproto's tools do not speak
    # (SASL_SSL itself works: tests/tools/test_security_tools.py)
    config.write_text("security.protocol=SASL_SSL\n")
    assert kg(bs, "--list", "--command-config", str(config)) == (
        1, "", "Error: Executing consumer group command failed due to sasl.mechanism=GSSAPI: kproto's tools speak "
               "PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512\n")


def test_describe_offsets_and_lag(broker):
    kind, bs = broker
    make_topic(bs, "lag-topic", [5, 7, 3])
    commit(bs, "lag-group", {("lag-topic", 0): 2, ("lag-topic", 1): 7})
    wide = "a-group-name-wider-than-fifteen"
    make_topic(bs, "wide-topic", [4])
    commit(bs, wide, {("wide-topic", 0): 1})
    status, out, err = kg(bs, "--describe", "--group", wide, "--group", "lag-group", "--offsets")
    assert status == 0
    # Groups in name order (Kafka's TreeMap), each with its own column widths.
    assert out == offsets_text([(wide, "wide-topic", 0, 1, 4, 3, "-", "-", "-")]) + \
        offsets_text([("lag-group", "lag-topic", 0, 2, 5, 3, "-", "-", "-"),
                      ("lag-group", "lag-topic", 1, 7, 7, 0, "-", "-", "-")])
    assert err == ("\nConsumer group 'a-group-name-wider-than-fifteen' has no active members.\n"
                   "\nConsumer group 'lag-group' has no active members.\n")
    rows = json.loads(kg(bs, "--describe", "--group", "lag-group", "--output", "json")[1])
    assert [(r["partition"], r["current_offset"], r["log_end_offset"], r["lag"]) for r in rows] == [
        (0, 2, 5, 3), (1, 7, 7, 0)]
    assert rows[0]["consumer_id"] is None
    # --state of an inactive group: the notice, and the table.
    status, out, err = kg(bs, "--describe", "--group", "lag-group", "--state")
    assert (status, err) == (0, "\nConsumer group 'lag-group' has no active members.\n")
    # Kafka 4.4 prints "-" for no assignment strategy
    assert out.splitlines()[2].split() == ["lag-group", bs, f"({NODE[kind]})", "-", "Empty", "0"]


def test_describe_unknown_group(broker):
    kind, bs = broker
    if kind == "kproto":
        # Kafka 4.4: the broker's GroupIdNotFoundException fails the command, before any
        # table, --members included (3.x printed the header and "does not exist").
        error = ("Error: Executing consumer group command failed due to "
                 "org.apache.kafka.common.errors.GroupIdNotFoundException: Group ghost-group not found.\n")
        assert kg(bs, "--describe", "--group", "ghost-group") == (1, "", error)
        assert kg(bs, "--describe", "--group", "ghost-group", "--members") == (1, "", error)
    else:   # tansu describes any group id as Empty
        assert kg(bs, "--describe", "--group", "ghost-group") == (
            0, "", "\nConsumer group 'ghost-group' has no active members.\n")


def test_reset_dry_run_changes_nothing(broker):
    _, bs = broker
    make_topic(bs, "dry-topic", [4, 4])
    commit(bs, "dry-group", {("dry-topic", 0): 1, ("dry-topic", 1): 1})
    status, out, err = kg(bs, "--reset-offsets", "--group", "dry-group", "--topic", "dry-topic", "--to-latest")
    assert (status, err) == (0, DRY_RUN_WARNING + "\n")
    assert out == reset_text([("dry-group", "dry-topic", 1, 4), ("dry-group", "dry-topic", 0, 4)])
    assert ok(bs, "--reset-offsets", "--group", "dry-group", "--topic", "dry-topic", "--to-latest",
              "--dry-run") == out
    assert committed(bs, "dry-group") == {("dry-topic", 0): 1, ("dry-topic", 1): 1}


def test_reset_execute_each_strategy(broker):
    _, bs = broker
    make_topic(bs, "rst-topic", [6, 4])
    p0, p1 = ("rst-topic", 0), ("rst-topic", 1)
    commit(bs, "rst-group", {p0: 3, p1: 2})

    def reset(*args: str, warnings: str = "") -> dict:
        status, out, err = kg(bs, "--reset-offsets", "--group", "rst-group", "--execute", *args)
        assert (status, err) == (0, warnings), (args, out, err)
        now = committed(bs, "rst-group")
        shown = {(t, int(p)): int(o) for _, t, p, o in (line.split() for line in out.splitlines()[2:])}
        assert shown.items() <= now.items(), (out, now)      # the plan printed is the plan applied
        return now

    assert reset("--topic", "rst-topic", "--to-earliest") == {p0: 0, p1: 0}
    assert reset("--topic", "rst-topic", "--to-latest") == {p0: 6, p1: 4}
    assert reset("--topic", "rst-topic", "--to-offset", "5", warnings=(
        "WARN New offset (5) is higher than latest offset for topic partition rst-topic-1. Value will be set to 4\n"
    )) == {p0: 5, p1: 4}
    assert reset("--all-topics", "--shift-by", "-2") == {p0: 3, p1: 2}
    assert reset("--all-topics", "--shift-by", "-10", warnings=(
        "WARN New offset (-8) is lower than earliest offset for topic partition rst-topic-1. Value will be set to 0\n"
        "WARN New offset (-7) is lower than earliest offset for topic partition rst-topic-0. Value will be set to 0\n"
    )) == {p0: 0, p1: 0}
    assert reset("--topic", "rst-topic:1", "--to-offset", "3") == {p0: 0, p1: 3}
    assert reset("--topic", "rst-topic:0,1", "--to-current") == {p0: 0, p1: 3}
    # --to-current where nothing is committed: the log end.
    commit(bs, "rst-current", {p0: 2})
    assert ok(bs, "--reset-offsets", "--group", "rst-current", "--topic", "rst-topic", "--to-current",
              "--execute") == reset_text([("rst-current", "rst-topic", 1, 4), ("rst-current", "rst-topic", 0, 2)])
    assert committed(bs, "rst-current") == {p0: 2, p1: 4}
    # --shift-by needs a committed offset for every partition in scope.
    status, out, err = kg(bs, "--reset-offsets", "--group", "rst-new", "--topic", "rst-topic", "--shift-by", "1",
                          "--execute")
    assert (status, out) == (1, "")
    assert err in ("Cannot shift offset for partition rst-topic-0 since there is no current committed offset\n",
                   "Cannot shift offset for partition rst-topic-1 since there is no current committed offset\n")


def test_reset_to_datetime_and_by_duration(broker):
    kind, bs = broker
    make_topic(bs, "time-old", [4], timestamps=[T0 + i * 1000 for i in range(4)])
    make_topic(bs, "time-now", [3])
    tp, now_tp = ("time-old", 0), ("time-now", 0)
    commit(bs, "time-group", {tp: 1, now_tp: 1})

    def plan(*args: str) -> tuple[dict, str]:
        status, out, err = kg(bs, "--reset-offsets", "--group", "time-group", "--dry-run", *args)
        assert status == 0, err
        return {(t, int(p)): int(o) for _, t, p, o in (l.split() for l in out.splitlines()[2:])}, err

    at_2s, err = plan("--topic", "time-old", "--to-datetime", "2001-09-09T01:46:42.000")
    assert (at_2s, err) == (by_timestamp(bs, [tp], T0 + 2000), "")
    assert plan("--topic", "time-old", "--to-datetime", "2001-09-09T03:46:42.000+02:00")[0] == at_2s
    assert plan("--topic", "time-old", "--to-datetime", "2001-09-09T01:46:41.5")[0] == \
        by_timestamp(bs, [tp], T0 + 1005)                   # SimpleDateFormat reads ".5" as 5 ms
    late, err = plan("--topic", "time-old", "--to-datetime", "2031-01-01T00:00:00.000")
    assert late == by_timestamp(bs, [tp], parse_datetime("2031-01-01T00:00:00.000"))
    day = plan("--topic", "time-old", "--topic", "time-now", "--by-duration", "P1D")[0]
    assert day == by_timestamp(bs, [tp, now_tp], int(time.time() * 1000) - 86_400_000)
    if kind == "kproto":    # the broker Kafka's tool is written against: exact offsets
        assert at_2s == {tp: 2}
        assert (late, err) == ({tp: 4}, "Warn: Partition 0 from topic time-old is empty. "
                                        "Falling back to latest known offset.\n")
        assert day == {tp: 4, now_tp: 0}
    status, _, _ = kg(bs, "--reset-offsets", "--group", "time-group", "--all-topics", "--by-duration", "PT0S",
                      "--execute")
    assert status == 0
    assert committed(bs, "time-group") == by_timestamp(bs, [tp, now_tp], int(time.time() * 1000))


def test_export_csv_and_from_file(broker, tmp_path):
    _, bs = broker
    topic = "exported-offsets-topic-name"          # 27 characters: Jackson quotes strings longer than 24
    make_topic(bs, topic, [5, 5])
    commit(bs, "exp-group", {(topic, 0): 4, (topic, 1): 4})
    commit(bs, "exp-group-2", {(topic, 0): 3})
    single = ok(bs, "--reset-offsets", "--group", "exp-group", "--all-topics", "--to-offset", "2", "--export",
                "--dry-run")
    assert single == f'"{topic}",0,2\n"{topic}",1,2\n\n'
    several = ok(bs, "--reset-offsets", "--group", "exp-group", "--group", "exp-group-2", "--all-topics",
                 "--to-earliest", "--export", "--dry-run")
    assert several == f'exp-group,"{topic}",0,0\nexp-group,"{topic}",1,0\nexp-group-2,"{topic}",0,0\n\n'
    assert committed(bs, "exp-group") == {(topic, 0): 4, (topic, 1): 4}      # exporting is a dry run

    plan = tmp_path / "plan.csv"
    plan.write_text(single)
    out = ok(bs, "--reset-offsets", "--group", "exp-group", "--from-file", str(plan), "--execute")
    assert out == reset_text([("exp-group", topic, 0, 2), ("exp-group", topic, 1, 2)])
    assert committed(bs, "exp-group") == {(topic, 0): 2, (topic, 1): 2}

    both = tmp_path / "both.csv"
    both.write_text(f'exp-group,{topic},1,5\nexp-group-2,"{topic}",0,1\n')
    ok(bs, "--reset-offsets", "--group", "exp-group", "--group", "exp-group-2", "--from-file", str(both),
       "--execute")
    assert committed(bs, "exp-group") == {(topic, 0): 2, (topic, 1): 5}
    assert committed(bs, "exp-group-2") == {(topic, 0): 1}
    # A group the file has no plan for: Kafka's error, the others still reset.
    status, out, err = kg(bs, "--reset-offsets", "--group", "exp-group", "--group", "exp-group-3",
                          "--from-file", str(both), "--execute")
    assert (status, err) == (1, "Error: No reset plan for group exp-group-3 found\n")
    assert out == reset_text([("exp-group", topic, 1, 5)])


def test_delete_groups(broker):
    kind, bs = broker
    make_topic(bs, "del-topic", [1])
    for g in ("del-a", "del-b"):
        commit(bs, g, {("del-topic", 0): 1})
    assert ok(bs, "--delete", "--group", "del-b") == "Deletion of requested consumer groups ('del-b') was successful.\n"
    assert "del-b" not in ok(bs, "--list").splitlines()
    assert committed(bs, "del-b") == {}
    status, out, err = kg(bs, "--delete", "--group", "del-a", "--group", "del-ghost")
    if kind == "kproto":
        assert (status, err) == (1, "Error: Deletion of some consumer groups failed:\n")
        assert out == ("* Group 'del-ghost' could not be deleted due to: "
                       "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.\n"
                       "\nThese consumer groups were deleted successfully: 'del-a'\n")
    else:   # tansu deletes unknown groups without complaint; Kafka's order of the names (a HashMap)
        assert (status, out, err) == (
            0, "Deletion of requested consumer groups ('del-ghost', 'del-a') was successful.\n", "")
    assert "del-a" not in ok(bs, "--list").splitlines()
    commit(bs, "del-c", {("del-topic", 0): 1})
    assert json.loads(ok(bs, "--delete", "--group", "del-c", "--output", "json")) == [{"group": "del-c", "error": None}]


def test_reset_errors(broker):
    _, bs = broker
    status, out, err = kg(bs, "--reset-offsets", "--group", "err-group", "--topic", "no-such-topic",
                          "--to-earliest", "--dry-run")
    assert (status, out) == (1, "")
    assert err == ("Error: Executing consumer group command failed due to org.apache.kafka.common.errors."
                   "UnknownTopicOrPartitionException: This server does not host this topic-partition.\n")
    missing = Path("/nonexistent/plan.csv")
    status, out, err = kg(bs, "--reset-offsets", "--group", "err-group", "--from-file", str(missing), "--dry-run")
    assert (status, out, err) == (1, "", "Error: Executing consumer group command failed due to "
                                         f"java.nio.file.NoSuchFileException: {missing}\n")


def test_subprocess_exit_status_and_one_line(broker):
    _, bs = broker
    proc = subprocess.run([KPROTO, "groups", "--bootstrap-server", bs, "--describe", "--group", "sub-ghost",
                           "--state"], capture_output=True, text=True, timeout=60)
    # One line: the error, or (tansu) Kafka 4.4's notice after its blank line.
    assert proc.returncode in (0, 1) and len(proc.stderr.strip().splitlines()) == 1
    proc = subprocess.run([KPROTO, "groups", "--bootstrap-server", bs, "--list", "--state", "sleepy"],
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("Invalid state list 'sleepy'. Valid states are: PreparingRebalance, "
                           "CompletingRebalance, Stable, Dead, Empty, Assigning, Reconciling\n")


# --- without a broker -----------------------------------------------------------------

SCENARIO_LIST = "[[to-offset], [to-current], [to-datetime], [from-file], [by-duration], [to-earliest], [to-latest], [shift-by]]"


@pytest.mark.parametrize("args, message", [
    (("--list",), 'Missing required argument "[bootstrap-server]"'),
    (("--bootstrap-server", "x:1"),
     "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets"),
    (("--bootstrap-server", "x:1", "--list", "--describe", "--group", "g"),
     'Option "[group]" can\'t be used with option "[list]"'),
    (("--bootstrap-server", "x:1", "--describe"), "Option [describe] takes one of these options: [all-groups], [group]"),
    (("--bootstrap-server", "x:1", "--describe", "--group", "g", "--members", "--state"),
     "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
    (("--bootstrap-server", "x:1", "--describe", "--group", "g", "--state", "stable"),
     "Option [describe] does not take a value for [state]"),
    (("--bootstrap-server", "x:1", "--list", "--members"),
     "Option(s) [members] are unavailable given other options on the command line"),
    (("--bootstrap-server", "x:1", "--delete", "--group", "g", "--topic", "t"),
     "The consumer does not support topic-specific offset deletion from a consumer group."),
    (("--bootstrap-server", "x:1", "--describe", "--group", "g", "--all-groups"),
     'Option "[group]" can\'t be used with option "[all-groups]"'),
    (("--bootstrap-server", "x:1", "--describe", "--all-groups", "--topic", "t"),
     'Option "[topic]" can\'t be used with option "[describe]"'),
    (("--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--execute", "--dry-run", "--to-latest"),
     "Option [reset-offsets] only accepts one of [execute] and [dry-run]"),
    (("--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--dry-run", "--to-latest", "--to-earliest"),
     'Option "[to-earliest]" can\'t be used with option "[to-latest]"'),
    (("--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--dry-run", "--all-topics"),
     f"Option '[reset-offsets]' requires one of the following scenarios: {SCENARIO_LIST}"),
    (("--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--dry-run", "--to-latest"),
     "One of the reset scopes should be defined: --all-topics, --topic."),
    (("--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--dry-run", "--to-latest", "--topic", "t:x"),
     "Invalid partition 'x' specified in topic arg 't:x''"),
    (("--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--dry-run", "--all-topics",
      "--to-datetime", "yesterday"),
     "Error: Executing consumer group command failed due to java.text.ParseException: Error parsing timestamp. "
     "It does not contain a 'T' according to ISO8601 format"),
    (("--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--dry-run", "--all-topics",
      "--by-duration", "1h"),
     "Error: Executing consumer group command failed due to Text cannot be parsed to a Duration"),
    (("--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--to-offset", "soon"),
     "Invalid value for '--to-offset': 'soon' is not a valid integer."),
])
def test_usage_errors_are_one_line_status_2(args, message, monkeypatch):
    monkeypatch.delenv("KPROTO_BOOTSTRAP_SERVER", raising=False)
    assert kg(None, *args) == (2, "", message + "\n")


def test_dry_run_warning_comes_first():
    status, out, err = kg(None, "--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--to-latest")
    assert (status, out) == (2, "")
    assert err == DRY_RUN_WARNING + "\nOne of the reset scopes should be defined: --all-topics, --topic.\n"


def test_cannot_connect_is_one_line_status_1():
    port = components.free_port()
    proc = subprocess.run([KPROTO, "groups", "--bootstrap-server", f"127.0.0.1:{port}", "--list"],
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.startswith("Error: Executing consumer group command failed due to cannot connect to "
                                  f"127.0.0.1:{port}")
    assert proc.stderr.count("\n") == 1


def test_help_documents_exit_status():
    status, out, _ = kg(None, "--help")
    assert status == 0
    assert "Exit status: 0 ok; 1 the command failed" in out and "2 bad flags" in out
    assert "groups" in CliRunner().invoke(cli, ["--help"]).stdout


def test_java_orders_match_java_17():
    # Printed by Java 17: Collectors.toMap over TopicPartitions, HashMap<String, _>,
    # and joptsimple's HashSet<OptionSpec>.
    def order(topic: str, n: int) -> list[int]:
        return [p for _, p in jvm.java_hashmap_order([(topic, p) for p in range(n)],
                                                        jvm.topic_partition_hash)]
    assert order("lag-topic", 3) == [2, 0, 1]
    assert order("live-topic", 3) == [1, 0, 2]
    assert order("rst-topic", 2) == [1, 0]
    assert order("exported-offsets-topic-name", 2) == [0, 1]
    mixed = [(t, p) for t in ("lag-topic", "orders") for p in range(4)]
    assert jvm.java_hashmap_order(mixed, jvm.topic_partition_hash) == [
        ("lag-topic", 2), ("lag-topic", 3), ("lag-topic", 0), ("lag-topic", 1), ("orders", 0), ("orders", 1),
        ("orders", 2), ("orders", 3)]
    assert jvm.java_hashmap_order(["del-a", "del-b", "del-ghost"], jvm.java_string_hash) == [
        "del-b", "del-ghost", "del-a"]
    assert spec_order(["group", "all-groups"]) == ["all-groups", "group"]
    assert spec_order(["list", "describe"]) == ["describe", "list"]


def test_render_members_with_instance_ids_and_verbose_assignment():
    # A consumer (KIP-848) group's member has epochs and a target assignment; a classic one has none.
    rows = [{"group": "g", "consumer_id": "c-1", "group_instance_id": "static-instance-one", "host": "/10.0.0.1",
             "client_id": "app", "partitions": 3, "assignment": {"t1": [10, 2], "t0": [1]}, "current_epoch": 5,
             "target_epoch": 6, "target_assignment": {"t1": [2, 10, 11], "topic-zero-with-long-name": [1]}},
            {"group": "g", "consumer_id": "c-2", "group_instance_id": None, "host": "/10.0.0.2",
             "client_id": "app", "partitions": 0, "assignment": {}, "current_epoch": None,
             "target_epoch": None, "target_assignment": {}}]
    fmt = "%-15s %-15s %-19s %-15s %-15s %-15s %-15s %-20s %-15s %-38s"   # the target assignment's 38 characters
    assert groups_text.groups_members_text(rows, verbose=True) == (
        "\n" + fmt % ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                      "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT") + "\n"
        + fmt % ("g", "c-1", "static-instance-one", "/10.0.0.1", "app", 3,
                 5, "t0:1;t1:2,10", 6, "t1:2,10,11;topic-zero-with-long-name:1") + "\n"
        + fmt % ("g", "c-2", "", "/10.0.0.2", "app", 0, "-", "-", "-", "-") + "\n")


def test_jackson_csv_quoting():
    assert render.jackson_csv_field("orders") == "orders"
    assert render.jackson_csv_field("x" * 24) == "x" * 24
    assert render.jackson_csv_field("x" * 25) == '"' + "x" * 25 + '"'
    assert render.jackson_csv_field("my group") == '"my group"'       # below '-': quoted (loose check)
    assert render.jackson_csv_field('say "hi"') == '"say ""hi"""'
    assert groups_text.groups_export_csv({}, with_group=False) == "\n"


def test_parsers():
    assert parse_datetime("2001-09-09T01:46:40.000") == T0
    assert parse_datetime("2001-09-09T01:46:40.123Z") == T0 + 123
    assert parse_datetime("2001-09-08T20:46:40.000-05:00") == T0
    assert parse_datetime("2001-09-09T03:46:40.000+0200") == T0
    for bad in ("2001-09-09T01:46:40", "2001-02-30T00:00:00.000", "2001-09-09T24:00:00.000"):
        with pytest.raises(UsageProblem, match="Unparseable date"):
            parse_datetime(bad)
    assert parse_duration_ns("P1DT2H3M4.5S") == ((26 * 60 + 3) * 60 + 4) * 10**9 + 5 * 10**8
    assert parse_duration_ns("pt-1m") == -60 * 10**9
    assert parse_duration_ns("-PT1H") == -3600 * 10**9
    for bad in ("P", "PT", "P1H", "1D", "PT1.S5"):
        with pytest.raises(UsageProblem):
            parse_duration_ns(bad)
    assert parse_topic_arg("t:0,+1,2,") == [("t", 0), ("t", 1), ("t", 2)]
    for bad, message in (("t:", "Invalid topic arg 't:', expected topic name and partitions"),
                         ("t:0:1", "Invalid topic arg 't:0:1', expected topic name and partitions"),
                         ("t:,1", "Invalid partition '' specified in topic arg 't:,1''")):
        with pytest.raises(UsageProblem) as e:
            parse_topic_arg(bad)
        assert e.value.message == message
    assert parse_reset_plan('t,0,5\n"t",1,6\n\n', ["g"]) == {"g": {("t", 0): 5, ("t", 1): 6}}
    assert parse_reset_plan("g,t,0,5\nh,t,1,6\n", ["g"]) == {"g": {("t", 0): 5}, "h": {("t", 1): 6}}
    with pytest.raises(GroupCommandFailed, match="expected group,topic,partition,offset"):
        parse_reset_plan("t,0,5\n", ["g", "h"])     # several groups: the four-field form only


def test_decode_assignment():
    # A range assignment as the kproto broker hands it out (version 0, empty user data).
    data = bytes.fromhex("0000" "00000001" "0002" "7431" "00000003" "00000000" "00000001" "00000002" "00000000")
    assert decode_assignment(data) == [("t1", 0), ("t1", 1), ("t1", 2)]
    assert decode_assignment(b"\x00\x07" + data[2:] + b"future fields") == [("t1", 0), ("t1", 1), ("t1", 2)]
    assert decode_assignment(b"") == []
