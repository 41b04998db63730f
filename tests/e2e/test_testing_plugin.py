"""The pytest plugin as a user meets it: a test project run by pytester in a child
pytest that loads kproto.testing through the ``pytest11`` entry point declared in
pyproject.toml, with confluent-kafka, kafka-python and aiokafka as the clients."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import pytest

import kproto.testing
from kproto.testing import Broker

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory,
            monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A test project whose pytest finds the plugin only through its entry point.

    The entry point is read from pyproject.toml and put in a dist-info on the
    child's path, so this checks the declaration the installed package carries
    (an installed kproto declares the same name, which pytest loads once).
    """
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    site = tmp_path_factory.mktemp("site")
    info = site / "kproto_pytest_entry-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kproto-pytest-entry\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in entry.items()))
    pythonpath = [str(ROOT), str(site)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(pythonpath))
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=120)


CLIENTS = '''
import asyncio, socket
import pytest

def _produce(bootstrap, topic, values, partition=0):
    from confluent_kafka import Producer
    p, acked = Producer({"bootstrap.servers": bootstrap}), []
    for v in values:
        p.produce(topic, v, key=b"k-" + v, partition=partition,
                  on_delivery=lambda err, m: acked.append(err or m.offset()))
    assert p.flush(10) == 0
    return acked

def _consume(bootstrap, topic, n, partition=0):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, partition, 0)])
    got = []
    for _ in range(100):
        m = c.poll(0.1)
        if m is not None and not m.error():
            got.append((m.offset(), m.value()))
        if len(got) == n:
            break
    c.close()
    return got

@pytest.mark.kafka_topic(partitions=3, config={"cleanup.policy": "compact"})
def test_confluent(kafka_broker, kafka_topic, kafka_admin):
    assert (kafka_topic.partitions, kafka_topic.config) == (3, {"cleanup.policy": "compact"})
    md = kafka_admin.metadata([kafka_topic])
    assert len(md.topics[kafka_topic].partitions) == 3
    assert _produce(kafka_broker.bootstrap_servers, kafka_topic, [b"a", b"b"], partition=2) == [0, 1]
    assert _consume(kafka_broker.bootstrap_servers, kafka_topic, 2, partition=2) == [(0, b"a"), (1, b"b")]

@pytest.mark.parametrize("kafka_topic", [{"partitions": 2}], indirect=True)
def test_kafka_python(kafka_broker, kafka_topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    p = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    meta = p.send(kafka_topic, b"kp", partition=1).get(timeout=10)
    p.close()
    assert (meta.partition, meta.offset) == (1, 0)
    c = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, consumer_timeout_ms=5000)
    c.assign([TopicPartition(kafka_topic, 1)])
    c.seek_to_beginning()
    assert [(m.offset, m.value) for m in c] [:1] == [(0, b"kp")]
    c.close()

def test_aiokafka(kafka_broker, kafka_topic):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    async def main():
        p = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
        await p.start()
        try:
            meta = await p.send_and_wait(kafka_topic, b"aio")
        finally:
            await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, auto_offset_reset="earliest")
        await c.start()
        try:
            c.assign([TopicPartition(kafka_topic, 0)])
            m = await asyncio.wait_for(c.getone(), 10)
        finally:
            await c.stop()
        return meta.offset, m.offset, m.value
    assert asyncio.run(main()) == (0, 0, b"aio")

def test_topics_are_fresh(kafka_topic, kafka_admin, request):
    assert kafka_topic.startswith("test_topics_are_fresh-")
    assert kafka_topic.partitions == 1
    assert kafka_admin.list_offsets({(kafka_topic, 0): -1})[(kafka_topic, 0)].offset == 0

def test_restart_keeps_the_data(kafka_broker, kafka_topic):
    port, data_dir = kafka_broker.port, kafka_broker.data_dir
    assert _produce(kafka_broker.bootstrap_servers, kafka_topic, [b"before"]) == [0]
    pid = kafka_broker.pid
    kafka_broker.restart()
    assert (kafka_broker.port, kafka_broker.data_dir) == (port, data_dir) and kafka_broker.pid != pid
    assert _produce(kafka_broker.bootstrap_servers, kafka_topic, [b"after"]) == [1]
    assert _consume(kafka_broker.bootstrap_servers, kafka_topic, 2) == [(0, b"before"), (1, b"after")]

def test_stop_then_next_test_gets_a_running_broker(kafka_broker):
    kafka_broker.stop()
    assert not kafka_broker.running

def test_after_stop(kafka_broker):
    assert kafka_broker.running
    socket.create_connection(("127.0.0.1", kafka_broker.port), timeout=5).close()

def test_two_brokers(kafka_broker_factory):
    a = kafka_broker_factory(config={"num.partitions": 2})
    b = kafka_broker_factory(config={"num.partitions": 5})
    assert a.bootstrap_servers != b.bootstrap_servers and a.data_dir != b.data_dir
    from confluent_kafka import Producer
    for broker in (a, b):
        p = Producer({"bootstrap.servers": broker.bootstrap_servers})
        p.produce("auto", b"x")
        assert p.flush(10) == 0
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient
    counts = []
    for broker in (a, b):
        with BrokerClient(broker.bootstrap_servers) as client:
            counts.append(len(Admin(client).metadata(["auto"]).topics["auto"].partitions))
    assert counts == [2, 5]

@pytest.mark.kafka_topic(partition=2)
def test_misspelt_topic_parameter(kafka_topic):
    pass

def test_fails_with_the_log(kafka_broker):
    with socket.create_connection(("127.0.0.1", kafka_broker.port), timeout=5) as s:
        s.sendall(b"\\x00\\x00\\x00\\x08garbage!")    # not a request: the broker logs and closes
        assert s.recv(100) == b""
    assert False, "deliberate"
'''


@pytest.mark.parametrize("mode", [[], ["--kproto-in-process"]], ids=["child-process", "in-process"])
def test_fixtures_with_three_clients(project: pytest.Pytester, mode: list[str]):
    project.makepyfile(test_app=CLIENTS)
    result = run(project, "-v", *mode)
    result.assert_outcomes(passed=8, failed=1, errors=1)
    out = result.stdout.str()
    assert "kafka_topic: unknown parameter(s) partition; takes partitions, config, name" in out
    # the failing test's report carries what the broker logged during it
    report = out.split("_ test_fails_with_the_log _", 1)[1]
    section = report.split("kproto broker log (127.0.0.1:", 1)[1]
    assert "call) ---" in section.splitlines()[0]
    assert "closing 127.0.0.1:" in section and "WARNING" in section
    assert "(whole log: " in section
    # so does the test whose setup failed, and no passing test's report has one
    assert out.count("kproto broker log (") == 2
    assert "setup) ---" in out.split("_ ERROR at setup of test_misspelt_topic_parameter _", 1)[1]


def test_config_from_ini_and_command_line(project: pytest.Pytester):
    project.makeini("[pytest]\nkproto_broker_config =\n    num.partitions=4\n    log.retention.ms=1234\n"
                    "kproto_broker_scope = module\n")
    project.makepyfile(test_cfg='''
from kproto.client.admin import ConfigResource
def test_settings(kafka_broker, kafka_admin):
    assert kafka_broker.config["num.partitions"] == "4"
    assert kafka_broker.config["log.retention.ms"] == "99"
    assert kafka_broker.config["group.initial.rebalance.delay.ms"] == "0"
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    p.produce("auto4", b"x")
    assert p.flush(10) == 0
    assert len(kafka_admin.metadata(["auto4"]).topics["auto4"].partitions) == 4
''')
    run(project, "--kproto-broker-config", "log.retention.ms=99").assert_outcomes(passed=1)
    bad = run(project, "--kproto-broker-config", "no-equals-sign")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--kproto-broker-config: expected KEY=VALUE, got 'no-equals-sign'" in bad.stderr.str()


def test_context_manager_outside_pytest(tmp_path: Path):
    from confluent_kafka import Producer
    with kproto.testing.broker(config={"num.partitions": 3, "auto.create.topics.enable": True}) as b:
        assert b.running and b.bootstrap_servers == f"127.0.0.1:{b.port}"
        assert "--config num.partitions=3" in " ".join(b.command())
        assert "auto.create.topics.enable=true" in b.command()
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        p.produce("t", b"v", partition=2)
        assert p.flush(10) == 0
        data_dir = b.data_dir
        assert (data_dir / "t-2").is_dir()
    assert not b.running and not data_dir.exists()


def test_a_broker_that_cannot_start_says_why(tmp_path: Path):
    b = Broker(tmp_path / "data", {"num.partitions": "many"}, start_timeout=20)
    with pytest.raises(kproto.testing.BrokerStartError) as e:
        b.start()
    assert "exited with status" in str(e.value) and "num.partitions" in str(e.value)
    assert not b.running


def test_runs_on_this_interpreter():
    assert Broker(Path("/nonexistent")).command()[:3] == [sys.executable, "-m", "kproto.tools.main"]


def test_in_process_broker_from_the_ini(project: pytest.Pytester):
    project.makeini("[pytest]\nkproto_broker_in_process = true\n")
    project.makepyfile(test_mode='''
import threading
from kproto.testing import InProcessBroker
def test_mode(kafka_broker, kafka_broker_factory):
    assert isinstance(kafka_broker, InProcessBroker) and isinstance(kafka_broker_factory(), InProcessBroker)
    assert kafka_broker.pid in {t.native_id for t in threading.enumerate()}
''')
    run(project).assert_outcomes(passed=1)


def test_in_process_broker_outside_pytest(tmp_path: Path):
    from confluent_kafka import Producer
    with kproto.testing.broker(config={"num.partitions": 2}, data_dir=tmp_path / "data", in_process=True) as b:
        assert isinstance(b, kproto.testing.InProcessBroker) and b.running
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        p.produce("t", b"v", partition=1)
        assert p.flush(10) == 0
        with pytest.raises(NotImplementedError, match="cannot be killed"):
            b.kill()
        b.restart()
        assert b.listeners == {"PLAINTEXT": ("127.0.0.1", b.port)}
        assert b.faults.rules() == []
    assert not b.running and b.returncode == 0
    # a clean shutdown, as kproto serve's on SIGTERM: the logs' checkpoints and marker written
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "data" / "t-1" / "00000000000000000000.log").stat().st_size > 0
    assert "--- kproto broker start 2 (in process): serve --listen 127.0.0.1:" in b.log_text()


def test_an_in_process_broker_that_cannot_start_says_why(tmp_path: Path):
    b = kproto.testing.InProcessBroker(tmp_path / "data", {"num.partitions": "many"})
    with pytest.raises(kproto.testing.BrokerStartError, match="could not start: .*num.partitions"):
        b.start()
    assert not b.running


def test_kafka_cluster_fixture(project: pytest.Pytester):
    """A user's test with the kafka_cluster fixture: its marker, a failover, its nodes' logs."""
    project.makepyfile(test_cluster='''
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

@pytest.mark.kafka_cluster(brokers=2, config={"min.insync.replicas": 1})
def test_failover(kafka_cluster):
    assert sorted(kafka_cluster.nodes) == [1, 2] and len(kafka_cluster.bootstrap_servers.split(",")) == 2
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    admin.create_topics([NewTopic("t", 1, replica_assignment=[[2, 1]])])["t"].result(timeout=60)
    kafka_cluster.wait_for_isr("t", 0, [1, 2])
    assert kafka_cluster.leader("t", 0) == 2
    kafka_cluster.kill(2)
    assert kafka_cluster.wait_for_leader("t", 0, not_in={2}) == 1

@pytest.mark.kafka_cluster(brokers=1, controllers=1, isolated=True, config={"offsets.topic.replication.factor": 1})
def test_isolated(kafka_cluster):
    assert sorted(kafka_cluster.nodes) == [1, 3000] and kafka_cluster.controller_only == {3000}
    assert kafka_cluster.bootstrap_servers == kafka_cluster.nodes[1].bootstrap_servers
    assert kafka_cluster.wait_for_active_controller() == 3000

@pytest.mark.kafka_cluster(nodes=2)
def test_misspelt(kafka_cluster):
    pass
''')
    result = run(project, "-v")
    result.assert_outcomes(passed=2, errors=1)
    assert "kafka_cluster: unknown parameter(s) nodes; takes brokers, controllers, isolated, config" \
        in result.stdout.str()


def test_brokers_are_forked_from_one_server(tmp_path: Path):
    import psutil
    from kproto.testing import forkserver
    with kproto.testing.broker(data_dir=tmp_path / "a") as a, kproto.testing.broker(data_dir=tmp_path / "b") as b:
        server = forkserver.server().proc.pid
        assert psutil.Process(a.pid).ppid() == psutil.Process(b.pid).ppid() == server != os.getpid()
        assert os.getsid(a.pid) == a.pid      # its own session, as start_new_session gave it
        assert psutil.Process(a.pid).cwd() == os.getcwd()
        b.kill()
        assert not b.running and b.returncode == -9
        a.restart()
        assert psutil.Process(a.pid).ppid() == server
    assert a.returncode == 0 and (tmp_path / "a" / ".kafka_cleanshutdown").exists()
    assert "--- kproto broker start 2: " in a.log_text() and " INFO kproto.server.security: listening on" in a.log_text()


@pytest.mark.parametrize("setting", [("KPROTO_FORK_SERVER", "0"), ("PYTHONHASHSEED", "7")])
def test_a_fresh_interpreter_without_the_fork_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting):
    """Disabled, or interpreter settings the server was not started with: ``python -m kproto.tools.main``."""
    import psutil
    from kproto.testing import forkserver
    forkserver.server()
    monkeypatch.setenv(*setting)
    with kproto.testing.broker(data_dir=tmp_path / "data") as b:
        assert psutil.Process(b.pid).ppid() == os.getpid()
        assert psutil.Process(b.pid).cmdline()[:4] == [sys.executable, "-m", "kproto.tools.main", "serve"]


def test_the_fork_server_starts_before_a_module_naming_a_broker_fixture_is_imported(project: pytest.Pytester):
    """Its start overlaps the session's imports: running when the test module is imported,
    and the broker the fixture gives is its child."""
    project.makepyfile(test_early='''
import os
import psutil
from kproto.testing import forkserver

RUNNING_AT_IMPORT = forkserver.started()

def test_broker(kafka_broker):
    assert RUNNING_AT_IMPORT
    assert psutil.Process(kafka_broker.pid).ppid() == forkserver.server().proc.pid != os.getpid()
''')
    run(project).assert_outcomes(passed=1)


def test_no_fork_server_for_a_session_without_broker_fixtures(project: pytest.Pytester):
    project.makepyfile(test_plain='''
from kproto.testing import forkserver

def test_plain():
    assert not forkserver.started()
''')
    run(project).assert_outcomes(passed=1)


def test_the_fork_server_starts_when_the_plugin_loads(project: pytest.Pytester):
    """At the plugin's load (its pytest_addoption, the arguments parsed): already running when
    the initial conftests are about to load, before any pytest_load_initial_conftests; a value
    of one of the plugin's options before the test file is no path to read."""
    project.makepyfile(probe='''
import threading
import pytest
from kproto.testing import forkserver

SEEN = []

@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config):
    for t in threading.enumerate():
        if t.name == "kproto-fork-server-start":
            t.join(60)
    SEEN.append(forkserver.started())
    return (yield)
''', test_early='''
import probe

def test_broker(kafka_broker):
    assert probe.SEEN == [True]
''')
    run(project, "-p", "probe", "--kproto-kafka-version", "4.4", "test_early.py").assert_outcomes(passed=1)


def test_the_first_broker_start_generates_the_client_codecs_of_kafka_topic(project: pytest.Pytester):
    """While the test process waits for its first broker, a thread generates what kproto's
    client needs for kafka_topic's requests: none is generated on the test's clock."""
    project.makepyfile(test_codecs='''
from kproto import protocol
from kproto.fastpath.protocol import _compiled, fast_builder, fast_parser
from kproto.testing import plugin

def test_codecs(kafka_broker):
    plugin._client_codecs.join(60)
    key = protocol.create_topics.API.key
    version = protocol.served_versions()[key][1]
    request, response = protocol.api(key).request(version), protocol.api(key).response(version)
    misses = _compiled.cache_info().misses
    fast_builder(request.spec, request.version, request.flexible)
    fast_parser(response.spec, response.version, response.flexible)
    assert _compiled.cache_info().misses == misses
''')
    run(project).assert_outcomes(passed=1)
