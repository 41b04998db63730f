"""Apache Kafka itself, run from the jars tests/kafka/pom.xml fetches: the measured reference.

Standard library and a JDK only, so `make kafka` can run it before any venv:
``python3 tests/kafka_ref.py fetch [VERSION]`` copies Kafka (the pom's version, or another
release's: generators/kafka_versions.py reads 4.0 .. 4.4's jars) and its tools into
``.kafka/<version>/lib`` with Maven (skipped when already there). The tests use
:class:`KafkaReference` through the ``kafka_ref`` fixture (tests/conftest.py) to
run a tool class on the JVM or to start a KRaft broker (combined mode) on loopback.
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

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
               **configs: str) -> Iterator[KafkaBroker]:
        """Format ``data`` and start ``kafka.Kafka`` in KRaft combined mode (node 1, its own voter) on
        two free loopback ports; yields once it logged "Kafka Server started". ``listeners`` adds
        listeners (name -> security protocol), each on a free port (``KafkaBroker.ports``). Keyword
        arguments override broker configs (dots as underscores)."""
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
        self.format_storage(server_props, random_cluster_id())

        log = data / "kafka.log"
        log4j = self._config("log4j2-broker.properties", LOG4J2_BROKER)
        proc = subprocess.Popen(self._cmd(BROKER_JVM, log4j, "kafka.Kafka", (str(server_props),)),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        b = KafkaBroker(f"127.0.0.1:{port}", log_dir, proc, log,
                        ports={"PLAINTEXT": port, **{name: p for name, (_, p) in extra.items()}})
        started = threading.Event()

        def pump() -> None:
            with open(log, "w") as out:
                for line in proc.stdout:
                    out.write(line)
                    out.flush()
                    if STARTED in line:
                        started.set()
            started.set()      # exited: the waiter sees proc.poll()

        threading.Thread(target=pump, daemon=True).start()
        try:
            if not started.wait(timeout) or proc.poll() is not None:
                raise KafkaUnavailable(f"Kafka {self.version} did not start within {timeout}s "
                                       f"(exit {proc.poll()}); see {log}")
            yield b
        finally:
            b.stop()


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
