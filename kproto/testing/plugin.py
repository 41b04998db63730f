"""pytest plugin: a real Kafka broker (``kproto serve``) for your tests.

Loaded through the ``pytest11`` entry point once kproto is installed. Fixtures:

``kafka_broker``
    A ``kproto.testing.Broker``, started once per session (ini
    ``kproto_broker_scope`` = session | package | module | class | function).
    ``.bootstrap_servers``, ``.data_dir``, ``.restart()``, ``.stop()``; a test
    that stopped it hands the next test a started one again. ``.faults`` is its
    fault plane: ``kafka_broker.faults.inject(api="Produce", error="NOT_LEADER_OR_FOLLOWER",
    count=3)`` -> a rule with ``.hits``, ``.wait(n, timeout)``, ``.remove()``, a
    context manager; rules a test leaves behind are removed when it ends.
``kafka_broker_factory``
    ``kafka_broker_factory(config={...})`` starts one more broker; all are
    stopped when the test ends.
``kafka_topic``
    A fresh topic for each test on ``kafka_broker``: a ``str`` (its name) with
    ``.partitions`` and ``.config``. Choose them with
    ``@pytest.mark.kafka_topic(partitions=3, config={"cleanup.policy": "compact"})``
    or ``@pytest.mark.parametrize("kafka_topic", [{"partitions": 3}], indirect=True)``.
``kafka_admin``
    kproto's admin client (``kproto.client.admin.Admin``) connected to ``kafka_broker``.
``kafka_cluster``
    A ``kproto.testing.Cluster`` of its own for each test (3 nodes; choose with
    ``@pytest.mark.kafka_cluster(brokers=5, config={"min.insync.replicas": 2})``):
    ``.bootstrap_servers``, ``.kill(node)`` (SIGKILL), ``.stop(node)``, ``.start(node)``,
    ``.pause(node)``/``.resume(node)``, ``.leader(topic, partition)``, ``.wait_for_leader``,
    ``.wait_for_isr``, ``.controller()``, ``.wait_for_controller``. Nodes 1..``controllers``
    (default 1) are the KRaft quorum's voters (docs/cluster.md).

Broker settings: ``--kproto-broker-config KEY=VALUE`` (repeatable) and the ini
line list ``kproto_broker_config``, over ``kproto.testing.FIXTURE_DEFAULTS``;
``--kproto-kafka-version X.Y`` (ini ``kproto_kafka_version``) makes the brokers
advertise the API versions of that Apache Kafka release. The brokers are
``kproto serve`` children forked from a fork server that has kproto imported
(kproto.testing.forkserver), started as soon as the session knows a test file it
will collect names a broker fixture (read on a thread at ``pytest_load_initial_conftests``,
then as each test module is collected), so its start overlaps pytest's own start-up and the
collection; failing that, at the first collected test that takes one. ``--kproto-in-process``
(ini ``kproto_broker_in_process = true``) runs the brokers on a thread of the
test process instead (``kproto.testing.InProcessBroker``, with the caveats its
docstring lists).

When a test fails, what the brokers it used logged during that test is
attached to its report ("kproto broker log" sections).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import threading
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

from kproto.testing import FIXTURE_DEFAULTS, Broker, Cluster, InProcessBroker, forkserver

SCOPES = ("session", "package", "module", "class", "function")
#: Log lines attached to a failing test's report, per broker (the newest ones).
REPORT_LOG_LINES = 400

_used = pytest.StashKey[list]()      # item -> [(broker, log offset at first use)]


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("kproto", "kproto Kafka broker fixtures")
    group.addoption("--kproto-broker-config", action="append", default=[], metavar="KEY=VALUE",
                    help="Kafka broker setting for the kafka_broker fixtures (repeatable).")
    parser.addini("kproto_broker_config", type="linelist", default=[],
                  help="KEY=VALUE Kafka broker settings for the kafka_broker fixtures, one a line.")
    group.addoption("--kproto-kafka-version", default=None, metavar="X.Y",
                    help="Make the kafka_broker fixtures advertise the APIs of Apache Kafka X.Y "
                         "(kproto serve --kafka-version).")
    parser.addini("kproto_kafka_version", default="",
                  help="Apache Kafka release (X.Y) whose API versions the kafka_broker fixtures advertise.")
    group.addoption("--kproto-in-process", action="store_true", default=None,
                    help="Run the kafka_broker fixtures' brokers on a thread of this process "
                         "instead of a kproto serve child (faster start; see kproto.testing.InProcessBroker).")
    parser.addini("kproto_broker_in_process", type="bool", default=False,
                  help="true: the kafka_broker fixtures' brokers run in the test process (--kproto-in-process).")
    parser.addini("kproto_broker_scope", default="session",
                  help=f"Scope of the kafka_broker fixture: {', '.join(SCOPES)} (default session).")
    # The plugin's load (from its entry point, among the first things pytest does): with the
    # arguments parsed, the fork server's ~200 ms of start overlap the other plugins' loading.
    config = pluginmanager.get_plugin("pytestconfig")
    if config is not None:
        _start_if_a_test_names_a_broker(config)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Where the plugin was loaded before its session's arguments were parsed (as a plugin a
    conftest names): look for broker fixtures now."""
    _start_if_a_test_names_a_broker(early_config)


_scanned = pytest.StashKey[bool]()


def _start_if_a_test_names_a_broker(config: pytest.Config) -> None:
    """The earliest a session can know it may start a broker (before the conftests and the
    test modules are imported): a test file it was given, or under a directory it was
    given, names a broker fixture. Those files are read on a thread and the fork server
    started at the first that does, while pytest goes on loading plugins and importing;
    pytest_collectstart and pytest_itemcollected catch what this misses."""
    known = getattr(config, "known_args_namespace", None)
    if known is None or config.stash.get(_scanned, False):
        return      # arguments not parsed yet (the pytest_load_initial_conftests call comes), or done
    config.stash[_scanned] = True
    if not forkserver.usable() or getattr(known, "collectonly", False):
        return
    words = ("kafka_cluster",) if _in_process(config) else _BROKER_WORDS
    # before this plugin's options are parsed a value of one of them may stand in file_or_dir
    paths = [p for p in getattr(known, "file_or_dir", None) or () if _test_path(config, p).exists()] \
        or config.getini("testpaths") or ["."]
    threading.Thread(target=_start_if_named, args=(config, paths, words), name="kproto-fork-server-start",
                     daemon=True).start()


def _in_process(config: pytest.Config) -> bool:
    """broker_class's answer, from the arguments as given while this plugin's own options
    may not be parsed yet."""
    if getattr(config.known_args_namespace, "kproto_in_process", None) or config.getini("kproto_broker_in_process"):
        return True
    given = (*config.invocation_params.args, *config.getini("addopts"),
             *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")))
    return "--kproto-in-process" in given


def pytest_configure(config: pytest.Config) -> None:
    broker_config(config)       # a malformed setting is a usage error before any test runs
    config.addinivalue_line(
        "markers", "kafka_topic(partitions=1, config=None, name=None): the topic kafka_topic creates")
    config.addinivalue_line(
        "markers", "kafka_cluster(brokers=3, config=None, controllers=1): the cluster kafka_cluster starts")


def _start_if_named(config: pytest.Config, paths: list[str], words: tuple[str, ...]) -> None:
    for file in _test_files(config, paths):
        if forkserver.started():
            return
        if _names_any(file, words):
            forkserver.server()
            return


def _test_path(config: pytest.Config, arg: str) -> Path:
    """A file_or_dir argument's path (``tests/test_x.py::test_y`` -> the file)."""
    return config.invocation_params.dir / Path(str(arg).split("::", 1)[0])


def _test_files(config: pytest.Config, paths: list[str]) -> Iterator[Path]:
    """The test files ``paths`` name, and those under the directories they name
    (``python_files``), skipping what pytest's collection skips (``norecursedirs``,
    hidden directories)."""
    skip, patterns = config.getini("norecursedirs"), config.getini("python_files")
    for arg in paths:
        path = _test_path(config, arg)
        if path.is_file():
            yield path
            continue
        for top, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not any(fnmatch.fnmatch(d, p) for p in skip))
            yield from (Path(top, n) for n in sorted(names) if any(fnmatch.fnmatch(n, p) for p in patterns))


def _names_broker_fixture(config: pytest.Config, file_path: Path) -> bool:
    return _names_any(file_path, _BROKER_WORDS if broker_class(config) is Broker else ("kafka_cluster",))


def _names_any(file_path: Path, words: tuple[str, ...]) -> bool:
    try:
        source = file_path.read_text(errors="replace")
    except OSError:
        return False
    return any(word in source for word in words)


#: The fixtures that start ``kproto serve`` children (kafka_broker and kafka_topic through the first).
_BROKER_FIXTURES = frozenset({"kproto_shared_broker", "kafka_broker_factory", "kafka_cluster"})


#: Words in a test file's source that mean it may take a broker fixture (``kafka_broker``
#: covers ``kafka_broker_factory``).
_BROKER_WORDS = ("kafka_broker", "kafka_topic", "kafka_cluster", "kproto_shared_broker")


def pytest_collectstart(collector: pytest.Collector) -> None:
    """Start the fork server as soon as a test module about to be imported names a broker
    fixture, before it (and confluent-kafka, the clients...) is imported: the server's
    interpreter start and imports (~150 ms on an idle core) then run on the other core
    while the collection goes on, instead of inside the first fixture call.
    ``pytest_itemcollected`` still catches a fixture reached only through a conftest's."""
    if isinstance(collector, pytest.Module) and not forkserver.started() and forkserver.usable() \
            and not collector.config.option.collectonly and _names_broker_fixture(collector.config, collector.path):
        forkserver.server()


def pytest_itemcollected(item: pytest.Item) -> None:
    """Start the fork server at the first collected test that will start a broker child
    (if ``pytest_collect_file`` has not), so its imports overlap the rest of the collection
    and the session's set-up."""
    if forkserver.usable() and _BROKER_FIXTURES.intersection(getattr(item, "fixturenames", ())) and (
            "kafka_cluster" in item.fixturenames or broker_class(item.config) is Broker):
        forkserver.server()


def broker_config(config: pytest.Config) -> dict[str, str]:
    """FIXTURE_DEFAULTS, then the ini lines, then the command line."""
    out = dict(FIXTURE_DEFAULTS)
    for where, items in (("ini kproto_broker_config", config.getini("kproto_broker_config")),
                         ("--kproto-broker-config", config.getoption("kproto_broker_config"))):
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise pytest.UsageError(f"{where}: expected KEY=VALUE, got {item!r}")
            out[key.strip()] = value.strip()
    return out


def kafka_version(config: pytest.Config) -> str | None:
    """--kproto-kafka-version, else the ini kproto_kafka_version, else None (kproto's own versions)."""
    return config.getoption("kproto_kafka_version") or config.getini("kproto_kafka_version").strip() or None


def broker_class(config: pytest.Config) -> type[Broker]:
    """InProcessBroker under --kproto-in-process (or the ini flag), else the child-process Broker."""
    in_process = config.getoption("kproto_in_process") or config.getini("kproto_broker_in_process")
    return InProcessBroker if in_process else Broker


def _scope(fixture_name: str, config: pytest.Config) -> str:
    scope = config.getini("kproto_broker_scope").strip() or "session"
    if scope not in SCOPES:
        raise pytest.UsageError(f"kproto_broker_scope: expected one of {', '.join(SCOPES)}, got {scope!r}")
    return scope


def _note_use(request: pytest.FixtureRequest, broker: Broker) -> None:
    """Remember where this broker's log stood when the test took it."""
    used = request.node.stash.setdefault(_used, [])
    if all(b is not broker for b, _ in used):
        used.append((broker, broker.log_size()))


_client_codecs: threading.Thread | None = None


def _warm_client() -> None:
    """Once a process: the codecs of kafka_topic's first requests (kproto's client: ApiVersions,
    CreateTopics), generated on a thread while the test process waits for its first broker's
    ready line, instead of on the test's clock after it."""
    global _client_codecs
    if _client_codecs is None:
        _client_codecs = threading.Thread(target=_client_codec_steps, name="kproto-client-codecs", daemon=True)
        _client_codecs.start()


def _client_codec_steps() -> None:
    from kproto import protocol
    from kproto.client.connection import API_VERSIONS_FIRST
    create_topics = protocol.create_topics.API.key
    pairs = [(protocol.api_versions.API.key, API_VERSIONS_FIRST),
             (create_topics, protocol.served_versions()[create_topics][1])]
    for _ in forkserver.codec_steps(pairs, serving=False):
        pass
    "localhost".encode("idna")      # what a client's first getaddrinfo imports (encodings.idna, stringprep)


@pytest.fixture(scope=_scope)
def kproto_shared_broker(request: pytest.FixtureRequest,
                         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """The broker behind ``kafka_broker``, alive for ``kproto_broker_scope``."""
    base = tmp_path_factory.mktemp("kproto-broker")
    broker = broker_class(request.config)(base / "data", broker_config(request.config),
                                          log_path=base / "broker.log", kafka_version=kafka_version(request.config))
    _warm_client()
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kafka_broker(request: pytest.FixtureRequest, kproto_shared_broker: Broker) -> Broker:
    """A running ``kproto serve``: ``.bootstrap_servers``, ``.data_dir``, ``.restart()``, ``.stop()``."""
    kproto_shared_broker.start()          # a no-op unless an earlier test stopped it
    _note_use(request, kproto_shared_broker)
    request.addfinalizer(lambda: kproto_shared_broker.running and kproto_shared_broker.faults.clear())
    return kproto_shared_broker


@pytest.fixture
def kafka_broker_factory(request: pytest.FixtureRequest,
                         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Broker]]:
    """``factory(config=None, **Broker kwargs)`` -> a started broker of its own."""
    brokers: list[Broker] = []

    def factory(config: dict | None = None, **kwargs) -> Broker:
        base = tmp_path_factory.mktemp("kproto-broker")
        settings = {**broker_config(request.config), **(config or {})}
        kwargs.setdefault("kafka_version", kafka_version(request.config))
        broker = broker_class(request.config)(base / "data", settings, log_path=base / "broker.log", **kwargs)
        brokers.append(broker)
        _note_use(request, broker)
        return broker.start()

    try:
        yield factory
    finally:
        for broker in brokers:
            broker.stop()


@pytest.fixture
def kafka_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A replicating cluster of its own (``kproto.testing.Cluster``), stopped when the test ends."""
    marker = request.node.get_closest_marker("kafka_cluster")
    spec = {} if marker is None else {**dict(zip(("brokers", "config"), marker.args)), **marker.kwargs}
    unknown = set(spec) - {"brokers", "config", "controllers", "isolated"}
    if unknown:
        pytest.fail(f"kafka_cluster: unknown parameter(s) {', '.join(sorted(unknown))}; takes brokers, "
                    "controllers, isolated, config", pytrace=False)
    settings = {**broker_config(request.config), **{k: _setting(v) for k, v in (spec.get("config") or {}).items()}}
    cluster = Cluster(int(spec.get("brokers", 3)), controllers=int(spec.get("controllers", 1)),
                      isolated=bool(spec.get("isolated", False)), data_dir=tmp_path_factory.mktemp("kproto-cluster"), config=settings)
    for node in cluster.nodes.values():
        _note_use(request, node)
    with cluster:
        yield cluster


class Topic(str):
    """A topic's name, with the partitions and configs it was created with."""

    partitions: int
    config: dict[str, str]

    def __new__(cls, name: str, partitions: int, config: dict[str, str]) -> "Topic":
        self = super().__new__(cls, name)
        self.partitions, self.config = partitions, config
        return self

    @property
    def name(self) -> str:
        return str(self)


def _topic_name(node_name: str) -> str:
    """Legal Kafka topic characters only, short enough, unique per call."""
    base = re.sub(r"[^a-zA-Z0-9._-]+", "-", node_name).strip("-.")[:150] or "topic"
    return f"{base}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kafka_admin(kafka_broker: Broker):
    """kproto's own admin client, connected to ``kafka_broker``; closed after the test."""
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient
    admin = Admin(BrokerClient(kafka_broker.bootstrap_servers, client_id="kproto-pytest"))
    try:
        yield admin
    finally:
        admin.close()
        admin.client.close()


@pytest.fixture
def kafka_topic(request: pytest.FixtureRequest, kafka_broker: Broker) -> Topic:
    """A topic no other test has used, on ``kafka_broker``."""
    from kproto.client.admin import Admin, NewTopic
    from kproto.client.transport import BrokerClient
    spec: dict = {}
    marker = request.node.get_closest_marker("kafka_topic")
    if marker is not None:
        spec.update(*marker.args, **marker.kwargs)
    if isinstance(getattr(request, "param", None), dict):
        spec.update(request.param)
    elif getattr(request, "param", None) is not None:
        spec["partitions"] = int(request.param)
    unknown = set(spec) - {"partitions", "config", "name"}
    if unknown:
        pytest.fail(f"kafka_topic: unknown parameter(s) {', '.join(sorted(unknown))}; "
                    "takes partitions, config, name", pytrace=False)
    partitions = int(spec.get("partitions", 1))
    config = {k: _setting(v) for k, v in (spec.get("config") or {}).items()}
    name = spec.get("name") or _topic_name(request.node.name)
    admin = Admin(BrokerClient(kafka_broker.bootstrap_servers, client_id="kproto-pytest"))
    try:
        result = admin.create_topics([NewTopic(name, partitions, 1, configs=config)])[name]
    finally:
        admin.client.close()
    if result.error:
        pytest.fail(f"kafka_topic: creating {name!r} failed: {result.error.name}"
                    f"{': ' + result.message if result.message else ''}", pytrace=False)
    return Topic(name, partitions, config)


def _setting(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.failed:
        for broker, since in item.stash.get(_used, []):
            text = broker.log_text(since)
            lines = text.splitlines()
            if len(lines) > REPORT_LOG_LINES:
                lines = [f"... {len(lines) - REPORT_LOG_LINES} earlier lines in {broker.log_path}"] \
                    + lines[-REPORT_LOG_LINES:]
            where = broker.bootstrap_servers if broker.port else "not started"
            body = "\n".join(lines) or "(nothing logged during this test)"
            report.sections.append((f"kproto broker log ({where}, {report.when})",
                                    f"{body}\n(whole log: {broker.log_path})"))
    return report
