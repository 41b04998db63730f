"""A real Kafka broker for other people's tests: ``kproto serve`` in a child process.

    with kproto.testing.broker(config={"num.partitions": 3}) as b:
        Producer({"bootstrap.servers": b.bootstrap_servers}) ...

The pytest plugin (``kproto.testing.plugin``, loaded through the ``pytest11``
entry point) builds its fixtures on ``Broker``.

Why a child process and not a thread in the test's interpreter: the broker is
then exactly what ``kproto serve`` runs (its own event loop, signals, clean
shutdown with checkpoints), a test's monkeypatching or blocking client cannot
stall it, ``restart()`` really re-reads the data directory, and a crash in a
test cannot leave a half-closed broker behind. The child is forked from a fork
server (kproto.testing.forkserver) that paid the interpreter start and kproto's
imports once for the process, so a start costs the broker's own ~15 ms
(bench/bench_fixture.py); a ``prefix`` command, or ``KPROTO_FORK_SERVER=0``, starts a
fresh interpreter instead. ``InProcessBroker`` (``broker(in_process=True)``, the
plugin's ``--kproto-in-process``) runs the same broker on a thread here, with the
caveats its docstring lists.

The first start binds port 0 and reads the port from the ready line, so there
is no free-port race; a restart binds that same port again, because clients
hold the address.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import logging
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Iterator, Mapping, Sequence

from kproto.errors import KprotoError
from kproto.security.config import is_secret
from kproto.testing import forkserver
from kproto.testing.faults import Faults

__all__ = ["Broker", "BrokerStartError", "Cluster", "FIXTURE_DEFAULTS", "InProcessBroker", "broker"]

#: Broker settings the fixtures start with (a test's config overrides them): no
#: 3 s wait before a new group's first rebalance, and one __consumer_offsets
#: partition instead of 50, as Kafka's own integration-test brokers do.
FIXTURE_DEFAULTS: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
}

_READY = re.compile(rb"^kproto (?:broker|controller) ready on (\S+):(\d+) ")   # controller: process.roles=controller
_CONTROL = re.compile(rb"; control http://(\S+):(\d+)\)")
# SecurityService.start logs each listener it bound, at INFO, before the ready line.
_LISTENING = re.compile(r" INFO kproto\.server\.security: listening on (\w+)://(\S+):(\d+)$", re.M)

# Brokers still running when the interpreter exits (a test run interrupted before
# its teardown, a script that never left its ``with``) are stopped then: each runs
# in its own session, so nothing else would.
_running: "set[Broker]" = set()
atexit.register(lambda: [b.stop(timeout=5) for b in list(_running)])
# The in-process broker whose thread (and the tasks and worker threads it starts) is logging.
_current: "contextvars.ContextVar[InProcessBroker | None]" = contextvars.ContextVar("kproto_broker", default=None)


class BrokerStartError(KprotoError):
    """The broker process exited or stayed silent before it was ready."""


class Broker:
    """One ``kproto serve`` process on loopback, with its data directory and log file.

    ``config`` holds Kafka broker settings (``key -> value``, as ``--config``
    takes them). ``prefix`` goes before the command, to run the broker under
    another program that then execs it (``["prlimit", "--nofile=256:256"]``).
    Not started until ``start()`` (or ``with``).
    """

    def __init__(self, data_dir: str | Path, config: Mapping[str, object] | None = None, *,
                 host: str = "127.0.0.1", port: int = 0, log_path: str | Path | None = None,
                 log_level: str = "info", start_timeout: float = 30.0, prefix: Sequence[str] = (),
                 control: bool = True, kafka_version: str | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.config = {k: _text(v) for k, v in (config or {}).items()}
        self.host, self.port = host, port
        self.log_path = Path(log_path) if log_path else self.data_dir.parent / f"{self.data_dir.name}.log"
        self.log_level = log_level
        self.start_timeout = start_timeout
        self.prefix = list(prefix)
        self.starts = 0
        #: The exit status of the last process once stopped or killed (None before).
        self.returncode: int | None = None
        self._proc: "subprocess.Popen | forkserver.Child | None" = None
        self._log_start = 0
        self.control = control              # open the fault plane (kproto serve --control)
        self.control_port = 0
        self.kafka_version = kafka_version  # kproto serve --kafka-version

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<kproto Broker {self.host}:{self.port} {state} data={self.data_dir}>"

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``."""
        if not self.port:
            raise BrokerStartError("the broker has not been started, so it has no port yet")
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running else None

    def command(self) -> list[str]:
        cmd = [*self.prefix, sys.executable, "-m", "kproto.tools.main", "serve", "--listen", f"{self.host}:{self.port}",
               "--data-dir", str(self.data_dir), "--log-level", self.log_level]
        for k, v in self.config.items():
            cmd += ["--config", f"{k}={v}"]
        if self.control:
            cmd += ["--control", f"{self.host}:{self.control_port}"]
        if self.kafka_version:
            cmd += ["--kafka-version", self.kafka_version]
        return cmd

    @property
    def faults(self) -> Faults:
        """The fault plane: ``faults.inject(api="Produce", error="NOT_LEADER_OR_FOLLOWER", count=3)``.
        Rules live in the broker process: a restart drops them."""
        if not self.control:
            raise BrokerStartError("this broker was started without its control endpoint (control=False)")
        if not self.control_port:
            raise BrokerStartError("the broker has not been started, so it has no control port yet")
        return Faults(f"http://{self.host}:{self.control_port}")

    def _shown_command(self) -> list[str]:
        """The command for the log, secrets as Kafka logs a Password: ``[hidden]``."""
        return [f"{arg.partition('=')[0]}=[hidden]" if prev == "--config" and is_secret(arg.partition("=")[0])
                else arg for prev, arg in zip(["", *self.command()], self.command())]

    def start(self) -> "Broker":
        """Start the process and return once it accepts connections."""
        if self.running:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self._log_start = log.tell()
        log.write(f"--- kproto broker start {self.starts + 1}: {' '.join(self._shown_command())}\n".encode())
        log.flush()
        try:
            proc = self._spawn(log)
        finally:
            log.close()
        self._proc = proc
        try:
            host, port = self._await_ready(proc.stdout)
        except BaseException:
            self._kill()
            raise
        self.host, self.port = host, port
        self.starts += 1
        _running.add(self)
        return self

    def _spawn(self, log: IO[bytes]) -> "subprocess.Popen | forkserver.Child":
        """The command in a child of its own session: forked from this process's fork
        server (kproto.testing.forkserver: the imports already done) unless the command
        has a ``prefix`` or the server cannot serve it, else a fresh interpreter."""
        if not self.prefix:
            out, into = os.pipe()
            try:
                child = forkserver.spawn(self.command()[3:], stdout=into, stderr=log.fileno(),
                                         timeout=self.start_timeout)
            except OSError as e:    # the server died or never started: the interpreter then
                logging.getLogger("kproto.testing").warning("fork server unavailable (%s): starting "
                                                            "a fresh kproto serve", e)
                child = None
            finally:
                os.close(into)
            if child is not None:
                child.stdout = open(out, "rb", buffering=0)
                return child
            os.close(out)
        return subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=log,
                                stdin=subprocess.DEVNULL, start_new_session=True)

    def _await_ready(self, out: IO[bytes]) -> tuple[str, int]:
        deadline = time.monotonic() + self.start_timeout
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(out, selectors.EVENT_READ)
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise BrokerStartError(f"kproto broker not ready after {self.start_timeout:g}s"
                                           f"{self._log_tail()}")
                chunk = os.read(out.fileno(), 4096)
                if not chunk:
                    code = self._proc.wait(timeout=5)
                    raise BrokerStartError(f"kproto broker exited with status {code} before it was "
                                           f"ready{self._log_tail()}")
                buf += chunk
        m = _READY.match(buf)
        if not m:
            raise BrokerStartError(f"unexpected first line from kproto serve: {buf[:200]!r}")
        c = _CONTROL.search(buf)
        if c is not None:   # a restart binds the same control port again, like the broker's
            self.control_port = int(c.group(2))
        return m.group(1).decode(), int(m.group(2))

    @property
    def listeners(self) -> dict[str, tuple[str, int]]:
        """Listener name -> the address it bound in the current start (ports 0 in
        ``listeners`` resolved), from the broker's INFO log lines, so ``log_level``
        must be ``info`` or ``debug``."""
        return {m.group(1): (m.group(2), int(m.group(3)))
                for m in _LISTENING.finditer(self.log_text(self._log_start))}

    def _log_tail(self, lines: int = 20) -> str:
        tail = self.log_text().splitlines()[-lines:]
        return (f"; last lines of {self.log_path}:\n" + "\n".join(tail)) if tail else ""

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (the broker checkpoints and exits), SIGKILL after ``timeout`` seconds."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._kill()
        self._close(proc)

    def kill(self) -> None:
        """SIGKILL, as a crash would: no checkpoints, no clean-shutdown marker."""
        self._kill()

    def _kill(self) -> None:
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        self._close(proc)

    def _close(self, proc: "subprocess.Popen | forkserver.Child") -> None:
        self.returncode = proc.returncode
        if proc.stdout:
            proc.stdout.close()
        self._proc = None
        _running.discard(self)

    def restart(self, timeout: float = 10.0) -> "Broker":
        """Stop and start again on the same port over the same data directory."""
        self.stop(timeout)
        return self.start()

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def log_text(self, since: int = 0) -> str:
        """The broker's log (stderr of every start), from byte ``since``."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class InProcessBroker(Broker):
    """The same broker on a thread of this interpreter, with its own event loop:
    no child interpreter to start, so a fixture is ready in a few milliseconds
    once kproto.server is imported (bench/bench_fixture.py).

    Same interface as ``Broker``, with these caveats (the reasons the child
    process stays the default): the broker shares the test's GIL, so a test
    that holds it (a busy loop in C, a debugger stop) stalls the broker too, and
    monkeypatching kproto in a test patches the broker; ``kill()`` is refused
    (a thread cannot be crashed: use ``Broker``); no ``prefix``; the log file gets
    what the broker's tasks and worker threads log through the ``kproto`` logger
    (set to ``log_level`` while a broker runs), and the start-up's process-wide
    settings (glibc's malloc thresholds, signals) are not applied; ``pid`` is the
    broker thread's native id.
    """

    def __init__(self, data_dir: str | Path, config: Mapping[str, object] | None = None, **kwargs) -> None:
        super().__init__(data_dir, config, **kwargs)
        if self.prefix:
            raise ValueError("an in-process broker cannot run under a prefix command")
        self._thread: threading.Thread | None = None
        self._loop: "asyncio.AbstractEventLoop | None" = None
        self._stop_event: "asyncio.Event | None" = None
        self._handler: logging.Handler | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def pid(self) -> int | None:
        return self._thread.native_id if self.running else None

    def command(self) -> list[str]:
        return super().command()[len(self.prefix) + 3:]     # what it runs: ``serve``'s arguments

    def start(self) -> "Broker":
        if self.running:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._open_log()
        started: concurrent.futures.Future = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(started,), daemon=True,
                                        name=f"kproto-broker-{self.data_dir.name}")
        self._thread.start()
        try:
            host, port, control = started.result(timeout=self.start_timeout)
        except concurrent.futures.TimeoutError:
            self.stop()
            raise BrokerStartError(f"kproto broker not ready after {self.start_timeout:g}s"
                                   f"{self._log_tail()}") from None
        except Exception as e:
            self._thread.join()
            self._detach_log()
            self.returncode = 1
            raise BrokerStartError(f"kproto broker could not start: {e}{self._log_tail()}") from e
        self.host, self.port = host, port
        if control is not None:
            self.control_port = control[1]
        self.starts += 1
        _running.add(self)
        return self

    def _open_log(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_start = self.log_size()
        handler = logging.FileHandler(self.log_path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.addFilter(lambda record: _current.get() is self)
        handler.stream.write(f"--- kproto broker start {self.starts + 1} (in process): "
                             f"{' '.join(self._shown_command())}\n")
        handler.flush()
        logger = logging.getLogger("kproto")
        level = logging.getLevelName(self.log_level.upper())
        if logger.level == logging.NOTSET or logger.level > level:
            logger.setLevel(level)
        logger.addHandler(handler)
        self._handler = handler

    def _detach_log(self) -> None:
        if self._handler is not None:
            logging.getLogger("kproto").removeHandler(self._handler)
            self._handler.close()
            self._handler = None

    def _run(self, started: concurrent.futures.Future) -> None:
        _current.set(self)      # the loop's tasks and worker threads copy this context
        try:
            asyncio.run(self._serve(started))
        except BaseException as e:  # noqa: BLE001 - handed to start(), which raises it
            if not started.done():
                started.set_exception(e)
            else:
                logging.getLogger("kproto.testing").exception("in-process broker failed")

    async def _serve(self, started: concurrent.futures.Future) -> None:
        # kproto serve's start-up (kproto.tools.serve and kproto.server.broker.serve), minus signals
        from kproto.server.broker import Broker as Node
        from kproto.server.config import BrokerConfig
        from kproto.server.control import ControlPlane
        from kproto.server.emulation import release
        version = release(self.kafka_version) if self.kafka_version is not None else None
        node = Node(self.data_dir, BrokerConfig.from_props(self.config), host=self.host, port=self.port,
                    kafka_version=version)
        self._loop, self._stop_event = asyncio.get_running_loop(), asyncio.Event()
        plane = None
        try:
            host, port = await node.start()
            if self.control:
                plane = ControlPlane(node.faults, node.server)
            where = await plane.start(self.host, self.control_port) if plane is not None else None
            started.set_result((host, port, where))
            await self._stop_event.wait()
        finally:
            if plane is not None:
                await plane.close()
            await node.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Shut the broker down cleanly (checkpoints, clean-shutdown marker) and wait for its thread."""
        thread = self._thread
        if thread is None:
            return
        if thread.is_alive() and self._loop is not None and self._stop_event is not None:
            with contextlib.suppress(RuntimeError):       # the loop already closed
                self._loop.call_soon_threadsafe(self._stop_event.set)
        thread.join(timeout)
        if thread.is_alive():
            raise BrokerStartError(f"in-process kproto broker did not stop within {timeout:g}s")
        self._thread = self._loop = self._stop_event = None
        self.returncode = 0
        self._detach_log()
        _running.discard(self)

    def kill(self) -> None:
        raise NotImplementedError("an in-process broker cannot be killed as a crash would: "
                                  "use kproto.testing.Broker (a child process)")


def _text(value: object) -> str:
    if isinstance(value, bool):     # Kafka spells booleans in lower case
        return "true" if value else "false"
    return str(value)


@contextlib.contextmanager
def broker(config: Mapping[str, object] | None = None, *, data_dir: str | Path | None = None,
           defaults: bool = True, in_process: bool = False, **kwargs) -> Iterator[Broker]:
    """A started broker for code outside pytest; stopped (and its temporary data
    directory removed, unless ``data_dir`` was given) on leaving the block.

    ``config`` overrides ``FIXTURE_DEFAULTS`` (``defaults=False`` drops them);
    ``in_process=True`` runs it on a thread here (``InProcessBroker``, its caveats);
    other keyword arguments go to ``Broker``.
    """
    settings = {**(FIXTURE_DEFAULTS if defaults else {}), **(config or {})}
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kproto-broker-")))
            data_dir = tmp / "data"
        b = (InProcessBroker if in_process else Broker)(data_dir, settings, **kwargs)
        stack.callback(b.stop)
        yield b.start()


from kproto.testing.cluster import Cluster  # noqa: E402  (it builds on Broker, above)
