"""kproto consume / produce / get-offsets against kproto's broker and tansu (and Apache
Kafka's tools on Kafka's broker where an output line is claimed to be Kafka's):
a topic copied exactly through ``consume --json | produce --json``, time ranges
at their exact boundaries, the offline ``--log-dir`` source giving the live
lines, DefaultMessageFormatter and GetOffsetShell lines, one-line errors."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as CKNewTopic

from click.testing import CliRunner

from kproto.records import NewRecord, build_record_batch
from kproto.testing import FIXTURE_DEFAULTS, Broker
from kproto.tools.main import cli
from kproto.tools.produce import murmur2, partition_for_key
from tests.helpers import produce_raw, until, until_served
from tests import components
from tests.tools.helpers import run_command

pytestmark = pytest.mark.brokers(components.KPROTO, components.TANSU)

# (partition, key, value, headers, timestamp): nulls, binary keys, repeated and null headers
RECORDS = [
    (0, b"k0", b"v0", (("h", b"1"), ("h", b"2")), 1_000),
    (0, None, b"null key", (), 1_001),
    (0, b"\xff\x00bin", None, (("nullh", None),), 1_002),
    (1, b"", b"", (), 1_003),
    (1, "ключ".encode(), "значение".encode(), (("ü", b"\x80"),), 1_004),
    (2, b"k5", b"\x00\x01\x02", (), 1_005),
    (2, None, None, (), 1_006),
]


def create(bootstrap: str, name: str, partitions: int) -> None:
    """The topic, once the broker serves every partition (Kafka's broker learns it from its
    metadata log after CreateTopics answered: a tool run at once could find no leader)."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([CKNewTopic(name, partitions, 1)])[name].result(timeout=30)
    until_served(bootstrap, name)


def fill(bootstrap: str, topic: str) -> None:
    create(bootstrap, topic, 3)
    for p in range(3):
        batch = build_record_batch([NewRecord(k, v, h, ts) for pp, k, v, h, ts in RECORDS if pp == p])
        # Kafka's broker answers NOT_LEADER_OR_FOLLOWER until the new partition's leader is
        # known to it (nothing stored): the first answer that is not that one is the one
        answer = until(lambda: (r := produce_raw(bootstrap, topic, p, batch)).error_code != 6 and r,
                       what=f"a leader for {topic}-{p}")
        assert answer.error_code == 0


def consume(bootstrap: str, *args: str) -> tuple[int, str, str]:
    return run_command("consume", bootstrap, *args)


def consume_json(bootstrap: str, topic: str, *args: str) -> list[dict]:
    status, out, err = consume(bootstrap, "--topic", topic, "--from-beginning", "-e", "--json", *args)
    assert status == 0, err
    return [json.loads(line) for line in out.splitlines()]


def test_json_round_trip_copies_a_topic_exactly(broker, tmp_path):
    b = broker.bootstrap
    fill(b, "rt-src")
    create(b, "rt-dst", 3)
    src = consume_json(b, "rt-src")
    assert [(r["partition"], r["key"], r["value"], r["timestamp"]) for r in src] == [
        (0, "k0", "v0", 1000), (0, None, "null key", 1001), (0, {"base64": "/wBiaW4="}, None, 1002),
        (1, "", "", 1003), (1, "ключ", "значение", 1004), (2, "k5", "\x00\x01\x02", 1005), (2, None, None, 1006)]
    assert src[0]["headers"] == [{"key": "h", "value": "1"}, {"key": "h", "value": "2"}]
    assert src[2]["headers"] == [{"key": "nullh", "value": None}]
    assert src[4]["headers"] == [{"key": "ü", "value": {"base64": "gA=="}}]
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in src))
    status, out, err = run_command("produce", b, "--topic", "rt-dst", "--json", "--file", str(dump))
    assert (status, out, err) == (0, "", "7 records acknowledged to rt-dst (3 partitions), 0 failed\n")
    dst = consume_json(b, "rt-dst")
    strip = lambda rs: [{k: v for k, v in r.items() if k != "topic"} for r in rs]  # noqa: E731
    assert strip(dst) == strip(src)


@pytest.mark.differs(components.TANSU, "tansu 0.6's ListOffsets by timestamp answers offset 0 with the "
                     "current time for any timestamp (9000, 13000, 17000, 20000 alike): no record's offset")
def test_time_range_boundaries(broker):
    b = broker.bootstrap
    create(b, "times", 1)
    batch = build_record_batch([NewRecord(b"k", b"v%d" % i, (), 10_000 + 1000 * i) for i in range(10)])
    assert produce_raw(b, "times", 0, batch).error_code == 0

    def offsets(*args):
        status, out, err = consume(b, "--topic", "times", "--format", "%o\\n", *args)
        assert status == 0, err
        return [int(x) for x in out.split()]

    # start inclusive (first record at or after), end exclusive (stops before the first at or after)
    assert offsets("--start-time", "13000", "--end-time", "17000") == [3, 4, 5, 6]
    assert offsets("--start-time", "12999", "--end-time", "17001") == [3, 4, 5, 6, 7]
    assert offsets("--start-time", "1970-01-01T00:00:13Z", "--end-time", "1970-01-01T00:00:14.001") == [3, 4]
    assert offsets("--start-time", "19000", "--end-time", "99999") == [9]
    assert offsets("--start-time", "0", "--end-time", "10000") == []


def test_default_formatter_properties_and_filters(broker):
    b = broker.bootstrap
    fill(b, "fmt")
    status, out, err = consume(b, "--topic", "fmt", "--partition", "0", "--offset", "earliest", "-e",
                               "--property", "print.key=true", "--property", "print.timestamp=true",
                               "--property", "print.headers=true", "--property", "print.offset=true",
                               "--property", "print.partition=true", "--property", "key.separator=|")
    assert status == 0
    lines = out.split("\n")
    assert lines[:2] == ["CreateTime:1000|Partition:0|Offset:0|h:1,h:2|k0|v0",
                         "CreateTime:1001|Partition:0|Offset:1|NO_HEADERS|null|null key"]
    assert lines[2].startswith("CreateTime:1002|Partition:0|Offset:2|nullh:null|") and lines[2].endswith("|null")
    assert err == "Processed a total of 3 messages\n"
    status, out, _ = consume(b, "--topic", "fmt", "--from-beginning", "-e", "--format", "%p:%o\\n",
                             "--value-filter", "^v|null")
    assert out.split() == ["0:0", "0:1"]
    status, out, _ = consume(b, "--topic", "fmt", "--from-beginning", "-e", "--format", "%o\\n",
                             "--header-filter", "h=2")
    assert out.split() == ["0"]
    status, out, _ = consume(b, "--topic", "fmt", "--from-beginning", "--max-messages", "2", "--format", "%k\\n",
                             "--key-filter", "k")
    assert out.split() == ["k0", "k5"] and status == 0


def test_log_dir_gives_the_live_lines(tmp_path):
    with Broker(tmp_path / "data", FIXTURE_DEFAULTS, log_path=tmp_path / "broker.log") as br:
        fill(br.bootstrap_servers, "offline")
        live = consume(br.bootstrap_servers, "--topic", "offline", "--from-beginning", "-e", "--json")
        live_window = consume(br.bootstrap_servers, "--topic", "offline", "--start-time", "1001",
                              "--end-time", "1005", "--format", "%p %o %T\\n")
    assert live[0] == 0 and len(live[1].splitlines()) == len(RECORDS)
    assert run_command("consume", None, "--log-dir", str(tmp_path / "data"), "--topic", "offline", "--json") == live
    offline_window = run_command("consume", None, "--log-dir", str(tmp_path / "data"), "--topic", "offline",
                                 "--start-time", "1001", "--end-time", "1005", "--format", "%p %o %T\\n")
    assert offline_window == live_window
    assert sorted(live_window[1].splitlines()) == ["0 1 1001", "0 2 1002", "1 0 1003", "1 1 1004"]


def test_produce_text_lines_partitioned_by_key(broker):
    b = broker.bootstrap
    create(b, "lines", 3)
    r = CliRunner().invoke(cli, ["produce", "--bootstrap-server", b, "--topic", "lines", "--property",
                                 "parse.key=true", "--property", "key.separator=:", "--property",
                                 "parse.headers=true", "--property", "null.marker=NULL"],
                           input="a:1,b:NULL\tfoo:bar\n\tNULL:gone\n")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.startswith("2 records acknowledged to lines")
    got = consume_json(b, "lines")
    foo = next(x for x in got if x["key"] == "foo")
    assert foo["partition"] == partition_for_key(b"foo", 3)
    assert (foo["value"], foo["headers"]) == ("bar", [{"key": "a", "value": "1"}, {"key": "b", "value": None}])
    assert any(x["key"] is None and x["value"] == "gone" for x in got)


def test_murmur2_is_kafkas():
    # Kafka's UtilsTest.testMurmur2 vectors
    assert [murmur2(s) for s in (b"21", b"foobar", b"abc", b"a-little-bit-long-string")] == \
        [-973932308, -790332482, 479470107, -985981536]


@pytest.mark.differs(components.TANSU, "tansu 0.6 gives a whole record batch one offset: its latest offsets are "
                     "1 per batch (go:0:1, go:1:1, go:2:1); GetOffsetShell prints the same (test_get_offsets_on_tansu)")
def test_get_offsets(broker):
    b = broker.bootstrap
    fill(b, "go")
    assert run_command("get-offsets", b, "--topic", "go") == (0, "go:0:3\ngo:1:2\ngo:2:2\n", "")
    assert run_command("get-offsets", b, "--topic", "go", "--time", "earliest", "--partitions", "0,2") == \
        (0, "go:0:0\ngo:2:0\n", "")
    assert run_command("get-offsets", b, "--topic-partitions", "go:1", "--time", "1004")[1] == "go:1:1\n"
    # no record at or after the time: the partition is left out
    assert run_command("get-offsets", b, "--topic", "go", "--time", "999999") == (0, "", "")


def test_get_offsets_on_tansu(kafka_ref, tmp_path):
    """On tansu kproto's get-offsets prints what Kafka's GetOffsetShell prints."""
    with components.tansu(tmp_path) as b:
        fill(b, "go")
        for args in (["--topic", "go"], ["--topic", "go", "--time", "earliest", "--partitions", "0,2"],
                     ["--topic-partitions", "go:1", "--time", "1004"], ["--topic", "go", "--time", "999999"]):
            theirs = kafka_ref.run_tool("org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", b, *args)
            assert theirs.returncode == 0, theirs.stderr
            assert run_command("get-offsets", b, *args) == (0, theirs.stdout, "")


@pytest.mark.parametrize("command, args, status, line", [
    ("consume", ["--topic", "x", "--offset", "3"], 2, "The partition is required when offset is specified."),
    ("consume", [], 2, "Exactly one of --include/--topic is required."),
    ("consume", ["--topic", "x", "--partition", "0", "--offset", "soon"], 2,
     "The provided offset value 'soon' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."),
    ("consume", ["--topic", "x", "--formatter", "com.example.Mine"], 2,
     "unknown formatter com.example.Mine (kproto has DefaultMessageFormatter and NoOpMessageFormatter)"),
    ("consume", ["--topic", "x", "--format", "%Q"], 2, "--format: unknown token %Q"),
    ("consume", ["--topic", "x", "--start-time", "yesterday"], 2,
     "--start-time: 'yesterday' is neither epoch milliseconds nor ISO 8601"),
    ("consume", ["--topic", "no-such-topic", "-e"], 1, "kproto: error: topic no-such-topic: UNKNOWN_TOPIC_OR_PARTITION"),
    ("get-offsets", ["--topic", "no-such-topic"], 1,
     "Error occurred: Could not match any topic-partitions with the specified filters"),
    ("get-offsets", ["--time", "x"], 1, "Error occurred: Malformed time argument x. Please use -1 or latest / -2 or "
     "earliest / -3 or max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long format timestamp"),
])
def test_errors_are_one_line(broker, command, args, status, line):
    got_status, out, err = run_command(command, broker.bootstrap, *args)
    assert (got_status, out, err) == (status, "", line + "\n")


def test_produce_errors_are_one_line(broker, tmp_path):
    b = broker.bootstrap
    create(b, "perr", 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"value": "ok"}\n{"value": {"base64": "!!"}}\n')
    assert run_command("produce", b, "--topic", "perr", "--json", "--file", str(bad)) == (
        1, "", "kproto: error: line 2 value: invalid base64\n")
    assert run_command("produce", b, "--topic", "nope", "--file", str(bad)) == (
        1, "", "kproto: error: topic nope: UNKNOWN_TOPIC_OR_PARTITION\n")


def test_console_consumer_parity(kafka_ref, tmp_path):
    """Kafka's ConsoleConsumer and GetOffsetShell on Kafka's broker print what kproto's do;
    Kafka's data directory read offline gives the lines of the live consume."""
    # RECORDS are stamped 1970: Kafka's retention check (30 s after start, then every 5 min)
    # would delete them mid-test on a slow machine, and the consumers find nothing
    with kafka_ref.broker(tmp_path / "kafka", log_retention_ms="-1") as k:
        b = k.bootstrap
        fill(b, "parity")
        # Kafka 4.4's --property prints a deprecation line on stdout: --formatter-property does not
        props = [a for p in ("print.key", "print.timestamp", "print.headers", "print.offset", "print.partition")
                 for a in ("--formatter-property", f"{p}=true")]
        for p, extra in [(p, extra) for p in range(3) for extra in (props, [])]:   # [] : the values-only path
            args = ["--bootstrap-server", b, "--topic", "parity", "--partition", str(p), "--offset", "earliest",
                    "--max-messages", str(sum(1 for r in RECORDS if r[0] == p)), *extra]
            theirs = kafka_ref.run_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", *args, text=False)
            ours = CliRunner().invoke(cli, ["consume", *args], catch_exceptions=False)
            assert ours.exit_code == 0 and theirs.returncode == 0, theirs.stderr
            assert ours.stdout_bytes == theirs.stdout
        for args in (["--topic", "parity"], ["--topic", "parity", "--time", "earliest"],
                     ["--topic-partitions", "par.*:1-3", "--time", "1004"]):
            theirs = kafka_ref.run_tool("org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", b, *args)
            assert run_command("get-offsets", b, *args)[1] == theirs.stdout
        live = consume(b, "--topic", "parity", "--from-beginning", "-e", "--json")
    assert live[0] == 0 and len(live[1].splitlines()) == len(RECORDS)
    offline = run_command("consume", None, "--log-dir", str(tmp_path / "kafka" / "kafka-logs"),
                          "--topic", "parity", "--json")
    assert offline == live


def test_capture_source(broker, tmp_path):
    """consume --capture prints the records a captured produce and consume moved, once each,
    with the offsets the broker gave them: the lines the live consume prints."""
    from tests.capture.capture_session import tcpdump
    from tests.components import require_executable
    require_executable("tcpdump", "apt-get install tcpdump")
    b = broker.bootstrap
    port = b.rsplit(":", 1)[1]
    pcap = tmp_path / "console.pcap"
    with tcpdump(pcap, "lo", f"tcp port {port}"):
        fill(b, "cap")
        live = consume(b, "--topic", "cap", "--from-beginning", "-e", "--format", "%p %o %T %k{hex} %s{hex} %h\\n")
    assert live[0] == 0
    got = run_command("consume", None, "--capture", str(pcap), "--topic", "cap",
                      "--format", "%p %o %T %k{hex} %s{hex} %h\\n")
    assert got[0] == 0
    assert sorted(got[1].splitlines()) == sorted(live[1].splitlines())
    assert len(live[1].splitlines()) == len(RECORDS)


def test_max_messages_with_group_commits_past_the_last_printed(broker):
    """Records are printed a fetch at a time; --max-messages still stops at the record and --group
    commits just past the last one printed (values-only and formatted paths alike)."""
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient
    b = broker.bootstrap
    fill(b, "maxg")
    for group, extra in (("maxg-values", []), ("maxg-keys", ["--property", "print.key=true"])):
        status, out, err = consume(b, "--topic", "maxg", "--group", group, "--from-beginning", "--max-messages", "2",
                                   *extra)
        assert (status, err) == (0, "Processed a total of 2 messages\n")
        assert out.count("\n") == 2
        with BrokerClient(b) as c:
            committed = {tp: o.offset for tp, o in Admin(c).offset_fetch(group).items()}
        # partition 0 (3 records) is fetched first: its first two are printed
        assert committed == {("maxg", 0): 2, ("maxg", 1): 0, ("maxg", 2): 0}
