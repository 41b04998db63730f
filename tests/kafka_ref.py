"""Apache Kafka itself, run from the jars tests/kafka/pom.xml fetches: the measured reference.

Standard library and a JDK only, so `make kafka` can run it before any venv:
``python3 tests/kafka_ref.py fetch [VERSION]`` copies Kafka (the pom's version, or another
release's: generators/kafka_versions.py reads 4.0 .. 4.4's jars) and its tools into
``.kafka/<version>/lib`` with Maven (skipped when already there). The tests use
:class:`KafkaReference` through the ``kafka_ref`` fixture (tests/conftest.py) to
run a tool class on the JVM or to start a KRaft broker (combined mode) on loopback, and
through ``kafka_cluster_ref`` a 3-node cluster (:class:`KafkaCluster`) laid out as
kproto.testing.Cluster's.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

try:        # the cluster's Metadata waits are kproto.testing.Cluster's; `make kafka` fetches before any venv
    from kproto.testing.cluster import MetadataWaits as _MetadataWaits
except ImportError:
    _MetadataWaits = object

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "tests" / "kafka" / "pom.xml"
KAFKA_VERSION = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text()).group(1)
KAFKA_LIB = ROOT / ".kafka" / KAFKA_VERSION / "lib"
# Written after Maven copied every jar: a half-finished copy is fetched again.
FETCHED = KAFKA_LIB / ".fetched"

# The tools are short-lived: a small heap, one GC thread, C1 only (no C2 warm-up).
TOOL_JVM = ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
BROKER_JVM = ["-Xmx512m", "-XX:+UseSerialGC"]
# KafkaRaftServer.startup logs this once the broker and controller are serving
# (kafka.server.KafkaRaftServer: "Kafka Server started").
STARTED = "Kafka Server started"

LOG4J2_TOOLS = """\
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
"""
LOG4J2_BROKER = LOG4J2_TOOLS.replace("SYSTEM_ERR", "SYSTEM_OUT").replace("= WARN", "= INFO")


class KafkaUnavailable(RuntimeError):
    """Kafka could not be fetched or started; the message says why."""


def unavailable(e: Exception) -> None:
    """What a test does when Kafka cannot be fetched or started: fail in CI (CI=true), skip elsewhere."""
    import pytest
    if os.environ.get("CI") == "true":
        pytest.fail(f"Apache Kafka unavailable: {e}", pytrace=False)
    pytest.skip(f"Apache Kafka unavailable (make kafka fetches it): {e}")


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    path = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not path or not Path(path).exists():
        raise KafkaUnavailable("no java on PATH (JDK 17+ needed; apt-get install openjdk-17-jdk-headless)")
    return path


def fetch(version: str = KAFKA_VERSION) -> Path:
    """``.kafka/<version>/lib`` with Kafka's jars, fetched by Maven unless already there."""
    lib = ROOT / ".kafka" / version / "lib"
    fetched = lib / FETCHED.name
    # a lib fetched before the pom listed kafka-streams is fetched again (Maven adds what is new)
    if fetched.exists() and (lib / f"kafka-streams-{version}.jar").exists():
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaUnavailable("no mvn on PATH: apt-get install maven (Kafka is fetched from Maven Central)")
    proc = subprocess.run([mvn, "-q", "-B", "-f", str(POM), f"-Dkafka.version={version}", "package"],
                          check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise KafkaUnavailable(f"mvn could not fetch Kafka {version}: " + " / ".join(tail))
    fetched.touch()
    return lib


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def random_cluster_id() -> str:
    """A cluster id as Uuid.randomUuid().toString() prints it: URL-safe base64, no padding,
    and, as Uuid.randomUuid draws again, never starting with "-" (StorageTool's
    argument parser would take such an id for an option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


@dataclass
class KafkaBroker:
    """A running KRaft broker+controller; ``log_dir`` holds its partitions."""
    bootstrap: str
    log_dir: Path
    proc: subprocess.Popen
    log: Path
    lines: list[str] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)     # listener name -> port, PLAINTEXT included

    def stop(self, timeout: float = 120.0) -> None:
        """SIGTERM: Kafka's shutdown hook closes (and so flushes) every log. SIGKILL after ``timeout``."""
        if self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise KafkaUnavailable(f"Kafka did not stop within {timeout}s; see {self.log}")


@dataclass
class KafkaReference:
    """Kafka ``version`` from ``lib``; ``work`` holds the log4j configs."""
    lib: Path
    work: Path
    version: str = KAFKA_VERSION

    def _config(self, name: str, text: str) -> Path:
        path = self.work / name
        if not path.exists():
            path.write_text(text)
        return path

    def _cmd(self, jvm: list[str], log4j: Path, main: str, args: tuple[str, ...],
             classpath: tuple[Path, ...] = ()) -> list[str]:
        cp = os.pathsep.join([*map(str, classpath), f"{self.lib}/*"])
        return [java(), *jvm, f"-Dlog4j2.configurationFile={log4j}", "-cp", cp, main, *args]

    def tool_command(self, main: str, *args: str, classpath: tuple[Path, ...] = ()) -> list[str]:
        """The command line ``run_tool`` runs; ``classpath`` goes before Kafka's jars
        (tests/java_client.py adds its compiled driver)."""
        return self._cmd(TOOL_JVM, self._config("log4j2-tools.properties", LOG4J2_TOOLS), main, args, classpath)

    def run_tool(self, main: str, *args: str, timeout: float = 300.0,
                 input: str | None = None, text: bool = True) -> subprocess.CompletedProcess:
        """Run a Kafka tool class (``org.apache.kafka.tools.DumpLogSegments``...): its exit code, stdout, stderr
        (bytes with ``text=False``: a console consumer prints records' bytes as they are)."""
        return subprocess.run(self.tool_command(main, *args), check=False, capture_output=True, text=text,
                              timeout=timeout, input=input)

    def format_storage(self, props: Path, cluster_id: str) -> None:
        """kafka.tools.StorageTool format: writes meta.properties and the bootstrap checkpoint."""
        proc = self.run_tool("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props))
        if proc.returncode != 0:
            raise KafkaUnavailable(f"StorageTool format failed ({proc.returncode}): {proc.stdout}{proc.stderr}")

    @contextlib.contextmanager
    def broker(self, data: Path, *, timeout: float = 120.0, listeners: dict[str, str] | None = None,
               format: Callable[[Path, str], None] | None = None, **configs: str) -> Iterator[KafkaBroker]:
        """Format ``data`` and start ``kafka.Kafka`` in KRaft combined mode (node 1, its own voter) on
        two free loopback ports; yields once it logged "Kafka Server started". ``listeners`` adds
        listeners (name -> security protocol), each on a free port (``KafkaBroker.ports``). Keyword
        arguments override broker configs (dots as underscores). ``format(server.properties,
        cluster id)`` formats instead of Kafka's StorageTool (``kproto storage format``'s tests)."""
        port, controller = free_port(), free_port()
        extra = {name: (protocol, free_port()) for name, protocol in (listeners or {}).items()}
        more = "".join(f",{name}://127.0.0.1:{p}" for name, (_, p) in extra.items())
        log_dir = data / "kafka-logs"
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}{more}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}{more}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
                                              + "".join(f",{name}:{pr}" for name, (pr, _) in extra.items()),
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(log_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        props.update({k.replace("_", "."): v for k, v in configs.items()})
        data.mkdir(parents=True, exist_ok=True)
        server_props = data / "server.properties"
        server_props.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (format or self.format_storage)(server_props, random_cluster_id())

        log = data / "kafka.log"
        proc, started = self._launch(server_props, log, BROKER_JVM)
        b = KafkaBroker(f"127.0.0.1:{port}", log_dir, proc, log,
                        ports={"PLAINTEXT": port, **{name: p for name, (_, p) in extra.items()}})
        try:
            if not started.wait(timeout) or proc.poll() is not None:
                raise KafkaUnavailable(f"Kafka {self.version} did not start within {timeout}s "
                                       f"(exit {proc.poll()}); see {log}")
            yield b
        finally:
            b.stop()

    def _launch(self, server_props: Path, log: Path, jvm: list[str]) -> tuple[subprocess.Popen, threading.Event]:
        """Start ``kafka.Kafka`` on ``server_props`` in its own session, its output appended to
        ``log``; the event is set once it logged "Kafka Server started" (or exited)."""
        log4j = self._config("log4j2-broker.properties", LOG4J2_BROKER)
        proc = subprocess.Popen(self._cmd(jvm, log4j, "kafka.Kafka", (str(server_props),)),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        started = threading.Event()

        def pump() -> None:
            with open(log, "a") as out:
                for line in proc.stdout:
                    out.write(line)
                    out.flush()
                    if STARTED in line:
                        started.set()
            started.set()      # exited: the waiter sees proc.poll()

        threading.Thread(target=pump, daemon=True).start()
        return proc, started

    def cluster(self, data: Path, brokers: int = 3, *, timeout: float = 180.0, **configs: str) -> "KafkaCluster":
        """A KafkaCluster of ``brokers`` nodes under ``data`` (not started: use it as a context manager)."""
        return KafkaCluster(self, data, brokers, timeout, {k.replace("_", "."): v for k, v in configs.items()})


#: A cluster node's heap: three JVMs share a small box.
CLUSTER_JVM = ["-Xmx256m", "-XX:+UseSerialGC"]
#: Kafka's settings a cluster starts with, as kproto.testing.Cluster's CLUSTER_DEFAULTS: a
#: killed broker fenced (and so out of every ISR) within seconds, replicas fetching often.
CLUSTER_CONFIGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "num.partitions": "1",
}


@dataclass
class KafkaNode:
    """One ``kafka.Kafka`` process of a KafkaCluster; the attributes kproto.testing.Broker has
    that the cluster tests read (``running``, ``bootstrap_servers``, ``data_dir``, ``log_text``)."""
    node_id: int
    bootstrap_servers: str
    data_dir: Path          # log.dirs: the partitions' directories
    props: Path
    log: Path
    proc: subprocess.Popen | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.running else None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, sig: int, timeout: float) -> None:
        if not self.running:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise KafkaUnavailable(f"Kafka node {self.node_id} did not stop within {timeout}s; see {self.log}")


class KafkaCluster(_MetadataWaits):
    """``brokers`` Apache Kafka nodes on loopback, as kproto.testing.Cluster lays its own out:
    node 1 is ``process.roles=broker,controller`` and the one voter of a static
    ``controller.quorum.voters``, nodes 2..N are brokers; every node formatted with one
    cluster id (StorageTool), each with its own listener port kept across restarts. The
    methods are Cluster's: ``start``/``stop`` (SIGTERM: controlled shutdown)/``kill``
    (SIGKILL), and Cluster's Metadata waits (``leader``, ``wait_for_isr``...)."""

    def __init__(self, ref: KafkaReference, data: Path, brokers: int, timeout: float,
                 configs: dict[str, str]) -> None:
        self.ref, self.timeout = ref, timeout
        self.cluster_id = random_cluster_id()
        self.controller_port = free_port()
        self.nodes: dict[int, KafkaNode] = {}
        for i in range(1, brokers + 1):
            port, d = free_port(), data / f"node-{i}"
            d.mkdir(parents=True, exist_ok=True)
            controller = i == 1
            listeners = f"PLAINTEXT://127.0.0.1:{port}" + (
                f",CONTROLLER://127.0.0.1:{self.controller_port}" if controller else "")
            props = {
                "process.roles": "broker,controller" if controller else "broker",
                "node.id": str(i),
                "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
                "listeners": listeners,
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
                "log.dirs": str(d / "kafka-logs"),
                **CLUSTER_CONFIGS, **configs,
            }
            path = d / "server.properties"
            path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            self.nodes[i] = KafkaNode(i, f"127.0.0.1:{port}", d / "kafka-logs", path, d / "kafka.log")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.bootstrap_servers for n in self.nodes.values() if n.running)

    @property
    def pids(self) -> dict[int, int | None]:
        return {i: n.pid for i, n in self.nodes.items()}

    def start(self, node: int | None = None) -> "KafkaCluster":
        """Start one node, or (None) every node not running, the controller first (formatting
        a node's directory on its first start); each waits until it logged "Kafka Server started"."""
        for i in ([node] if node is not None else sorted(self.nodes)):
            n = self.nodes[i]
            if n.running:
                continue
            if not (n.data_dir / "meta.properties").exists():
                self.ref.format_storage(n.props, self.cluster_id)
            since = n.log.stat().st_size if n.log.exists() else 0
            n.proc, started = self.ref._launch(n.props, n.log, CLUSTER_JVM)
            if not started.wait(self.timeout) or n.proc.poll() is not None:
                tail = n.log_text()[since:].strip().splitlines()[-3:]
                raise KafkaUnavailable(f"Kafka node {i} did not start within {self.timeout}s "
                                       f"(exit {n.proc.poll()}): {' / '.join(tail)}")
        return self

    def stop(self, node: int | None = None, timeout: float = 120.0) -> None:
        """SIGTERM (controlled shutdown); None: every node, the controller last."""
        for i in ([node] if node is not None else sorted(self.nodes, key=lambda i: i == 1)):
            self.nodes[i].signal(signal.SIGTERM, timeout)

    def kill(self, node: int) -> None:
        """SIGKILL, as a crash."""
        self.nodes[node].signal(signal.SIGKILL, 30)

    def __enter__(self) -> "KafkaCluster":
        try:
            self.start()
            try:
                self.wait_for(lambda md: len(md.brokers) == len(self.nodes) or None, "every broker unfenced",
                              timeout=self.timeout)
            except TimeoutError as e:
                raise KafkaUnavailable(str(e)) from None
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()



def reference(work: Path) -> KafkaReference:
    """Fetch (once) and check that a JVM is there."""
    java()
    work.mkdir(parents=True, exist_ok=True)
    return KafkaReference(fetch(), work)


if __name__ == "__main__":
    if sys.argv[1:2] != ["fetch"] or len(sys.argv) > 3:
        sys.exit("usage: kafka_ref.py fetch [VERSION]")
    try:
        print(fetch(*sys.argv[2:]))
    except KafkaUnavailable as e:
        sys.exit(f"kafka_ref: {e}")
