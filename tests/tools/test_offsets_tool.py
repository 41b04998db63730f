"""`kproto offsets` against a real ZooKeeper and real brokers (kproto, tansu).

One ZooKeeper per module; each test writes its own groups under its own
chroot, so tests do not depend on each other's order. Each broker is started
once per module; tests use their own group and topic names.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from kazoo.client import KazooClient

from kproto.client.admin import Admin, NewTopic
from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode
from kproto.tools.main import cli
from kproto.tools.offsets import OffsetsError, parse_offsets_file
from tests import components

KPROTO = str(Path(sys.executable).parent / "kproto")


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    with components.zookeeper(tmp_path_factory.mktemp("zk")) as hosts:
        yield hosts


@pytest.fixture(scope="module")
def zk(zookeeper):
    client = KazooClient(hosts=zookeeper, timeout=10.0)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()




def run(*args: str):
    """`kproto offsets ...` in process: (exit status, stdout, stderr)."""
    result = CliRunner().invoke(cli, ["offsets", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def put(zk: KazooClient, root: str, offsets: dict[str, int | bytes]) -> None:
    """Offsets as the old consumer left them: ``group/topic/partition`` -> ASCII decimal."""
    for key, value in offsets.items():
        group, topic, partition = key.split("/")
        data = value if isinstance(value, bytes) else str(value).encode()
        zk.create(f"{root}/consumers/{group}/offsets/{topic}/{partition}", data, makepath=True)


def create_topics(bootstrap: str, **partitions: int) -> None:
    with BrokerClient(bootstrap) as client:
        results = Admin(client).create_topics([NewTopic(n, p, 1) for n, p in partitions.items()])
    assert all(r.error == ErrorCode.NONE for r in results.values()), results


def committed(bootstrap: str, group: str, partitions) -> dict:
    with BrokerClient(bootstrap) as client:
        admin = Admin(client)
        try:
            return {tp: o.offset for tp, o in admin.offset_fetch(group, partitions).items()}
        finally:
            admin.close()


def rows(out: str) -> list[list[str]]:
    """The plan table's cells, header first."""
    return [line.split() for line in out.splitlines()]


# --- migrate-zk against both brokers -------------------------------------------------

def test_migrate_dry_run_then_commit_then_idempotent(zookeeper, zk, broker):
    kind, bs = broker
    root = f"/mig-{kind}"
    create_topics(bs, **{f"orders-{kind}": 3, f"audit-{kind}": 1})
    put(zk, root, {f"billing/orders-{kind}/0": 286894308, f"billing/orders-{kind}/2": 17,
                   f"billing/audit-{kind}/0": 0, f"search/orders-{kind}/1": 5})
    zk.create(f"{root}/consumers/idle/ids/consumer-1", b"{}", makepath=True)   # a group with no offsets
    base = ["migrate-zk", "--zookeeper", zookeeper + root, "--bootstrap-server", bs]
    partitions = [(f"orders-{kind}", 0), (f"orders-{kind}", 1), (f"orders-{kind}", 2), (f"audit-{kind}", 0)]

    status, out, err = run(*base, "--dry-run")
    assert (status, err) == (0, ""), err
    assert rows(out) == [
        ["GROUP", "TOPIC", "PARTITION", "ZOOKEEPER-OFFSET", "KAFKA-OFFSET", "ACTION"],
        ["billing", f"audit-{kind}", "0", "0", "-", "commit"],
        ["billing", f"orders-{kind}", "0", "286894308", "-", "commit"],
        ["billing", f"orders-{kind}", "2", "17", "-", "commit"],
        ["search", f"orders-{kind}", "1", "5", "-", "commit"],
    ]
    assert committed(bs, "billing", partitions) == {} and committed(bs, "search", partitions) == {}

    status, out, err = run(*base, "--output", "json")
    assert (status, err) == (0, ""), err
    plan = json.loads(out)
    assert [(r["group"], r["topic"], r["partition"], r["zookeeper_offset"], r["kafka_offset"], r["action"],
             r["result"]) for r in plan] == [
        ("billing", f"audit-{kind}", 0, 0, None, "commit", "committed"),
        ("billing", f"orders-{kind}", 0, 286894308, None, "commit", "committed"),
        ("billing", f"orders-{kind}", 2, 17, None, "commit", "committed"),
        ("search", f"orders-{kind}", 1, 5, None, "commit", "committed"),
    ]
    assert committed(bs, "billing", partitions) == {
        (f"orders-{kind}", 0): 286894308, (f"orders-{kind}", 2): 17, (f"audit-{kind}", 0): 0}
    assert committed(bs, "search", partitions) == {(f"orders-{kind}", 1): 5}

    # A re-run finds everything in place and commits nothing.
    status, out, err = run(*base)
    assert (status, err) == (0, ""), err
    assert [r[5:] for r in rows(out)] == [["ACTION", "RESULT"]] + [["unchanged", "-"]] * 4
    assert rows(out)[2][3:5] == ["286894308", "286894308"]

    # One offset moved on in ZooKeeper: only that one is committed; --group limits the run.
    zk.set(f"{root}/consumers/billing/offsets/orders-{kind}/2", b"40")
    status, out, err = run(*base, "--group", "billing")
    assert (status, err) == (0, ""), err
    assert [r[0] for r in rows(out)[1:]] == ["billing"] * 3
    assert rows(out)[3][3:] == ["40", "17", "commit", "committed"]
    assert committed(bs, "billing", [(f"orders-{kind}", 2)]) == {(f"orders-{kind}", 2): 40}


def test_dual_check(zookeeper, zk, broker):
    kind, bs = broker
    root = f"/dual-{kind}"
    topic = f"dual-{kind}"
    create_topics(bs, **{topic: 2})
    put(zk, root, {f"g/{topic}/0": 10, f"g/{topic}/1": 20})
    base = ["migrate-zk", "--zookeeper", zookeeper, "--chroot", root, "--bootstrap-server", bs, "--dual-check"]

    status, out, err = run(*base)      # nothing in Kafka yet: both partitions differ
    assert (status, err) == (1, "kproto: warning: 2 of 2 partitions differ between ZooKeeper and Kafka\n")
    assert [r[3:] for r in rows(out)] == [["ZOOKEEPER-OFFSET", "KAFKA-OFFSET", "STATUS"],
                                          ["10", "-", "differs"], ["20", "-", "differs"]]
    assert committed(bs, "g", [(topic, 0), (topic, 1)]) == {}      # a check never commits

    assert run("migrate-zk", "--zookeeper", zookeeper, "--chroot", root, "--bootstrap-server", bs)[0] == 0
    status, out, err = run(*base)
    assert (status, err) == (0, "")
    assert [r[3:] for r in rows(out)[1:]] == [["10", "10", "equal"], ["20", "20", "equal"]]

    zk.set(f"{root}/consumers/g/offsets/{topic}/1", b"25")           # the old store moved on alone
    status, out, _ = run(*base, "--output", "json")
    assert status == 1
    assert [(r["partition"], r["zookeeper_offset"], r["kafka_offset"], r["action"]) for r in json.loads(out)] == [
        (0, 10, 10, "equal"), (1, 25, 20, "differs")]


def test_kafka_ahead_is_not_rewound_unless_asked(zookeeper, zk, broker):
    kind, bs = broker
    root, topic = f"/ahead-{kind}", f"ahead-{kind}"
    create_topics(bs, **{topic: 1})
    put(zk, root, {f"g/{topic}/0": 10})
    base = ["migrate-zk", "--zookeeper", zookeeper, "--chroot", root, "--bootstrap-server", bs]
    assert run(*base)[0] == 0
    zk.set(f"{root}/consumers/g/offsets/{topic}/0", b"4")      # ZooKeeper is behind Kafka now
    status, out, err = run(*base)
    assert status == 3 and err == "kproto: warning: 1 of 1 partitions skipped (see ACTION)\n"
    assert rows(out)[1][3:] == ["4", "10", "skip:", "kafka", "is", "ahead", "(--allow-rewind", "moves",
                                "it", "back)", "-"]   # RESULT: nothing committed
    assert committed(bs, "g", [(topic, 0)]) == {(topic, 0): 10}
    assert run(*base, "--allow-rewind")[0] == 0
    assert committed(bs, "g", [(topic, 0)]) == {(topic, 0): 4}


def test_missing_topic_and_partition_reported_and_skipped(zookeeper, zk, broker):
    kind, bs = broker
    root = f"/skip-{kind}"
    topic = f"present-{kind}"
    create_topics(bs, **{topic: 1})
    put(zk, root, {f"g/{topic}/0": 7, f"g/{topic}/3": 8, f"g/gone-{kind}/0": 9, f"g/{topic}/x": 1})
    zk.create(f"{root}/consumers/h/offsets/{topic}/0", b"not-a-number", makepath=True)
    status, out, err = run("migrate-zk", "--zookeeper", zookeeper + root, "--bootstrap-server", bs,
                           "--output", "json")
    assert (status, err) == (3, "kproto: warning: 4 of 5 partitions skipped (see ACTION)\n"), err
    assert [(r["group"], r["topic"], r["partition"], r["zookeeper_offset"], r["action"], r["result"])
            for r in json.loads(out)] == [
        ("g", f"gone-{kind}", 0, 9, "skip: no such topic", None),
        ("g", topic, 0, 7, "commit", "committed"),
        ("g", topic, 3, 8, "skip: no such partition", None),
        ("g", topic, "x", 1, "skip: partition 'x' is not a number", None),
        ("h", topic, 0, None, "skip: offset 'not-a-number' is not a decimal", None),
    ]
    assert committed(bs, "g", [(topic, 0), (f"gone-{kind}", 0), (topic, 3)]) == {(topic, 0): 7}
    # The dual check counts a partition Kafka cannot hold as a difference.
    status, out, _ = run("migrate-zk", "--zookeeper", zookeeper + root, "--bootstrap-server", bs,
                         "--group", "g", "--dual-check")
    assert status == 1
    assert [line.split(None, 5)[5] for line in out.splitlines()[1:]] == [
        "no such topic", "equal", "no such partition", "partition 'x' is not a number"]


@pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")   # kafka-python's
def test_commit_refused_for_a_live_group_fails_the_run(zookeeper, zk, broker):
    """Consumers still running in the group: the broker refuses a simple
    commit; the run reports it per partition, on stderr, and exits 1."""
    from kafka import KafkaConsumer
    kind, bs = broker
    topic = f"live-{kind}"
    create_topics(bs, **{topic: 1})
    put(zk, f"/live-{kind}", {f"live/{topic}/0": 5})
    consumer = KafkaConsumer(topic, bootstrap_servers=bs, group_id="live", enable_auto_commit=False)
    try:
        with BrokerClient(bs) as client:
            admin = Admin(client)
            for _ in range(100):       # until the broker has the member (JoinGroup sent)
                consumer.poll(timeout_ms=100)
                if admin.describe_groups(["live"])["live"].members:
                    break
            admin.close()
        status, out, err = run("migrate-zk", "--zookeeper", f"{zookeeper}/live-{kind}", "--bootstrap-server", bs,
                               "--output", "json")
    finally:
        consumer.close(autocommit=False, timeout_ms=1000)   # else close() waits ~23 s on tansu
    assert status == 1
    [row] = json.loads(out)
    assert row["action"] == "commit" and row["result"].startswith("failed: "), row
    assert err == "kproto: error: 1 of 1 commits failed or did not read back (see RESULT)\n"


def test_nothing_in_zookeeper_says_where_it_looked(zookeeper, zk, broker):
    _, bs = broker
    status, out, err = run("migrate-zk", "--zookeeper", zookeeper, "--chroot", "/empty-chroot/",
                           "--bootstrap-server", bs)
    assert (status, err) == (0, f"kproto: warning: no consumer offsets under {zookeeper}/empty-chroot/consumers\n")
    assert rows(out) == [["GROUP", "TOPIC", "PARTITION", "ZOOKEEPER-OFFSET", "KAFKA-OFFSET", "ACTION", "RESULT"]]


def test_broker_unreachable_is_one_line(zookeeper, zk):
    put(zk, "/nobroker", {"g/t/0": 1})
    port = components.free_port()
    status, out, err = run("migrate-zk", "--zookeeper", zookeeper + "/nobroker",
                           "--bootstrap-server", f"127.0.0.1:{port}")
    assert (status, out) == (1, "")
    assert err.startswith(f"kproto: error: cannot connect to 127.0.0.1:{port}") and err.count("\n") == 1


# --- export-zk / import-zk -----------------------------------------------------------

TREE = {"group1/topic1/0": 286894308, "group1/topic1/1": 3, "group1/topic1/10": 44, "group1/topic1/2": 9,
        "group1/a-topic/0": 12, "group0/topic1/0": 1}
EXPORTED = (b"/consumers/group0/offsets/topic1/0:1\n"
            b"/consumers/group1/offsets/a-topic/0:12\n"
            b"/consumers/group1/offsets/topic1/0:286894308\n"
            b"/consumers/group1/offsets/topic1/1:3\n"
            b"/consumers/group1/offsets/topic1/2:9\n"
            b"/consumers/group1/offsets/topic1/10:44\n")


def test_export_exact_bytes(zookeeper, zk, tmp_path):
    put(zk, "/exp", TREE)
    zk.create("/exp/consumers/group2/ids/c1", b"", makepath=True)      # registered, never committed
    out = tmp_path / "offsets.txt"
    status, stdout, err = run("export-zk", "--zookeeper", zookeeper, "--chroot", "/exp", "--output-file", str(out))
    assert (status, stdout, err) == (0, "", "")
    assert out.read_bytes() == EXPORTED
    # --group picks groups; - is stdout; --zkconnect is Kafka's spelling.
    status, stdout, _ = run("export-zk", "--zkconnect", zookeeper + "/exp", "--group", "group0", "--output-file", "-")
    assert (status, stdout) == (0, "/consumers/group0/offsets/topic1/0:1\n")
    status, stdout, err = run("export-zk", "--zookeeper", zookeeper + "/exp", "--group", "nope", "--output-file", "-")
    assert (status, stdout) == (1, "")
    assert err == (f"kproto: error: no offsets in ZooKeeper at {zookeeper}/exp for group 'nope' "
                   "(/consumers/nope/offsets does not exist)\n")


def test_import_round_trip(zookeeper, zk, tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(EXPORTED + b"\n")        # the format ends at an empty line
    status, out, err = run("import-zk", "--zookeeper", zookeeper, "--chroot", "/imp/deep", "--input-file", str(source))
    assert (status, out, err) == (0, "", "")
    assert zk.get("/imp/deep/consumers/group1/offsets/topic1/0")[0] == b"286894308"
    again = tmp_path / "again.txt"
    assert run("export-zk", "--zookeeper", zookeeper + "/imp/deep", "--output-file", str(again))[0] == 0
    assert again.read_bytes() == EXPORTED
    # Importing over existing znodes overwrites them.
    source.write_text("/consumers/group1/offsets/topic1/0:5\r\n")
    assert run("import-zk", "--zookeeper", zookeeper + "/imp/deep", "--input-file", str(source))[0] == 0
    assert zk.get("/imp/deep/consumers/group1/offsets/topic1/0")[0] == b"5"


@pytest.mark.parametrize("content, message", [
    ("/consumers/g/offsets/t/0:1\n/consumers/g/offsets/t/1\n", "2: expected <znode path>:<offset>, found no ':'"),
    ("/consumers/g/offsets/t/0:12x\n", "1: offset '12x' is not a decimal number up to 2^63-1"),
    ("/consumers/g/offsets/t/0:\n", "1: offset '' is not a decimal number up to 2^63-1"),
    ("/consumers/g/offsets/t/0:9223372036854775808\n",
     "1: offset '9223372036854775808' is not a decimal number up to 2^63-1"),
    ("/brokers/ids/0:1\n", "1: '/brokers/ids/0' is not /consumers/<group>/offsets/<topic>/<partition>"),
    ("/consumers/g/offsets/t/p:1\n", "1: partition 'p' is not a number"),
    ("/consumers/g/offsets/t/0:1\n\n/consumers/g/offsets/t/1:2\n",
     "3: data after the empty line at line 2 (the format ends at the first empty line)"),
])
def test_import_bad_line_is_one_line_and_writes_nothing(zookeeper, zk, tmp_path, content, message):
    source = tmp_path / "bad.txt"
    source.write_text(content)
    status, out, err = run("import-zk", "--zookeeper", zookeeper + "/badimp", "--input-file", str(source))
    assert (status, out, err) == (1, "", f"kproto: error: {source}:{message}\n")
    assert zk.exists("/badimp") is None


def test_parse_offsets_file():
    text = "/consumers/a:b/offsets/t/0:1\n/consumers/g/offsets/t/0:2\n/consumers/g/offsets/t/0:3\n\n\n"
    assert parse_offsets_file(text, "f") == {"/consumers/a:b/offsets/t/0": "1", "/consumers/g/offsets/t/0": "3"}
    with pytest.raises(OffsetsError, match="^f:1: expected"):
        parse_offsets_file("junk\n", "f")


# --- failures as one line ------------------------------------------------------------

def test_unreachable_zookeeper_is_one_line_and_fast(tmp_path):
    port = components.free_port()
    for args in (["export-zk", "--output-file", str(tmp_path / "x")],
                 ["migrate-zk", "--bootstrap-server", "127.0.0.1:1", "--dry-run"]):
        proc = subprocess.run([KPROTO, "offsets", args[0], "--zookeeper", f"127.0.0.1:{port}", "--zk-timeout", "2",
                               *args[1:]], capture_output=True, text=True, timeout=30)
        assert (proc.returncode, proc.stdout) == (1, "")
        assert proc.stderr == f"kproto: error: cannot connect to ZooKeeper at 127.0.0.1:{port} within 2s\n"
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("args, message", [
    (("export-zk", "--output-file", "-"), "Missing option '--zookeeper' / '--zkconnect'."),
    (("export-zk", "--zookeeper", "h:1/a", "--chroot", "/b", "--output-file", "-"),
     "give the chroot either in --zookeeper or with --chroot, not both"),
    (("import-zk", "--zookeeper", "h:1", "--chroot", "rel", "--input-file", "-"),
     "--chroot must start with '/': 'rel'"),
])
def test_usage_errors_are_one_line_status_2(args, message):
    assert run(*args) == (2, "", f"kproto: error: {message}\n")


def test_help_documents_exit_status():
    for sub in ("migrate-zk", "export-zk", "import-zk"):
        status, out, _ = run(sub, "--help")
        assert status == 0
        assert "Exit status: 0 ok; 1 the command failed" in out and "3 partial" in out
