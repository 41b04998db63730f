"""A warm parent for ``kproto serve`` children: the interpreter start and the broker's
imports paid once per test session instead of once per broker.

Profiled (bench/bench_fixture.py, ``python -X importtime``): a fixture's ``kproto serve``
child spent ~85 % of its time to the ready line starting Python and importing
kproto.server (asyncio, construct, every handler and coordinator module, ~150 ms on
an idle core), and ~15 ms starting the broker. So the first ``Broker.start()`` of
a process starts this server (``python -c`` running ``serve_forever``), which imports
all of that and waits; each broker is then ``os.fork()`` of it running exactly the
``kproto serve`` command line ``Broker.command()`` shows, in its own session, with
the caller's environment, working directory and stdin/stdout/stderr (passed over
a Unix socket with SCM_RIGHTS, as multiprocessing's forkserver does). The child is
still a separate process: it survives a crashed test, ``kill()`` is SIGKILL to it,
``restart()`` re-reads the data directory.

The server forks only from its single thread, before any event loop exists; it
leaves when the process that started it closes the control socket (exits); its
children are the test process's to stop, as before.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
from typing import IO, Iterator, Mapping, Sequence

__all__ = ["Child", "ForkServer", "server", "spawn", "started", "stop", "usable"]

# What ``kproto serve`` imports before it listens, imported once by the server.
_PRELOAD = ("kproto.tools.main", "kproto.tools.serve", "kproto.server.broker", "kproto.server.config",
            "kproto.server.control", "kproto.server.emulation", "kproto.server.cluster.settings", "kproto.memory")
_PID = struct.Struct(">q")
_STATUS = struct.Struct(">i")
_MAX_REQUEST = 1 << 20


class Child:
    """A forked ``kproto serve``: the part of ``subprocess.Popen`` the fixtures use
    (``pid``, ``stdout``, ``poll``, ``wait``, ``returncode``). The server reports its
    exit status on ``report`` (it is the child's parent and reaps it)."""

    def __init__(self, pid: int, report: socket.socket, stdout: IO[bytes] | None) -> None:
        self.pid, self.stdout, self.returncode = pid, stdout, None
        self._report = report

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._report], [], [], 0)[0]:
            self._read_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._report], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(["kproto", "serve"], timeout)
            self._read_status()
        return self.returncode

    def _read_status(self) -> None:
        data = self._report.recv(_STATUS.size, socket.MSG_WAITALL)
        # no status: the server itself died; the child is an orphan we can no longer reap
        self.returncode = _STATUS.unpack(data)[0] if len(data) == _STATUS.size else -signal.SIGKILL
        self._report.close()


class ForkServer:
    """The server process and its control socket."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", f"from kproto.testing.forkserver import serve_forever; "
                                       f"serve_forever({theirs.fileno()})"],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, start_new_session=True)
        self.control = ours
        self.lock = threading.Lock()
        self.ready = False
        self.env = _interpreter_env(os.environ)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, argv: Sequence[str], *, stdout: int, stderr: int, timeout: float) -> Child:
        """Fork a child running ``python -m kproto.tools.main *argv`` (stdin /dev/null)."""
        request = json.dumps({"argv": list(argv), "env": dict(os.environ), "cwd": os.getcwd()}).encode()
        report, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self.lock, open(os.devnull, "rb") as devnull, theirs:
                if not self.ready:      # the server says so once its imports are done
                    if not select.select([self.control], [], [], timeout)[0] or self.control.recv(16) != b"ready":
                        raise OSError("the kproto fork server did not start")
                    self.ready = True
                socket.send_fds(self.control, [request], [devnull.fileno(), stdout, stderr, theirs.fileno()])
            if not select.select([report], [], [], timeout)[0]:
                raise OSError("the kproto fork server did not answer")
            data = report.recv(_PID.size, socket.MSG_WAITALL)
            if len(data) != _PID.size:
                raise OSError("the kproto fork server closed the connection")
        except BaseException:
            report.close()
            raise
        return Child(_PID.unpack(data)[0], report, None)

    def close(self) -> None:
        self.control.close()    # the server leaves on EOF
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_server: ForkServer | None = None
_server_lock = threading.Lock()


def _interpreter_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that decide what an interpreter imports: a child of the server has the
    server's, so a caller whose differ gets a fresh ``python`` instead."""
    return {k: v for k, v in env.items() if k.startswith("PYTHON")}


def usable() -> bool:
    """Can ``spawn`` fork here (POSIX, and not disabled with KPROTO_FORK_SERVER=0)?"""
    return hasattr(os, "fork") and hasattr(socket, "send_fds") and os.environ.get("KPROTO_FORK_SERVER", "1") != "0"


def started() -> bool:
    """Is this process's fork server running (without starting one)?"""
    return _server is not None and _server.alive()


def server() -> ForkServer:
    """This process's fork server, started on first use (and again if it died)."""
    global _server
    with _server_lock:
        if _server is None or not _server.alive():
            _server = ForkServer()
            atexit.register(_server.close)
        return _server


def stop() -> None:
    """Stop this process's fork server (its children run on); the next spawn starts another."""
    global _server
    with _server_lock:
        if _server is not None:
            atexit.unregister(_server.close)
            _server.close()
            _server = None


def spawn(argv: Sequence[str], *, stdout: int, stderr: int, timeout: float) -> Child | None:
    """A forked child running ``kproto *argv``, or None when this process cannot use a
    fork server for it (not POSIX, disabled, or its interpreter settings differ from the server's)."""
    if not usable():
        return None
    fs = server()
    if fs.env != _interpreter_env(os.environ):
        return None
    return fs.spawn(argv, stdout=stdout, stderr=stderr, timeout=timeout)


# -- the server process ---------------------------------------------------------------------


def serve_forever(fd: int) -> None:
    """The server's loop: import, say ready, then fork one child per request and
    report each child's exit status, until the control socket closes."""
    import gc
    import importlib
    gc.disable()
    for name in _PRELOAD:
        importlib.import_module(name)
    from kproto.server import handlers
    handlers.load_all()         # what every broker imports before it listens, once for all of them
    gc.enable()
    gc.freeze()     # the imported objects stay shared with the children, never copied by a collection
    control = socket.socket(fileno=fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    reports: dict[int, socket.socket] = {}
    try:
        control.sendall(b"ready")
    except OSError:
        return      # the test process is gone already
    # codecs warm at once until the first request (no child of ours runs yet: the session is
    # still collecting), then only after WARM_AFTER without one
    warm, idle = _warm_codecs(), True
    while True:
        wait = None if warm is None else 0 if idle else WARM_AFTER
        readable = select.select([control, wake_r], [], [], wait)[0]
        idle = not readable
        if idle and warm is not None:
            if next(warm, None) is None:
                warm = None
            continue
        if wake_r in readable:
            os.read(wake_r, 4096)
            _reap(reports)
        if control in readable:
            try:
                request, fds, _, _ = socket.recv_fds(control, _MAX_REQUEST, 4)
            except InterruptedError:
                continue
            except ConnectionResetError:
                return      # the test process left without reading "ready": it started no broker
            if not request:
                return      # the test process is gone
            pid = os.fork()
            if pid == 0:
                for f in (control.fileno(), wake_r, wake_w, *(r.fileno() for r in reports.values())):
                    os.close(f)
                _child(json.loads(request), fds)     # never returns
            report = socket.socket(fileno=fds[3])
            for f in fds[:3]:
                os.close(f)
            report.sendall(_PID.pack(pid))
            reports[pid] = report
            _reap(reports)


#: The APIs of a client's first minutes (bootstrap, topics, produce, consume, transactions):
#: their newest served versions' codecs are generated while the server is idle.
_FIRST_APIS = ("metadata", "create_topics", "produce", "fetch", "list_offsets", "find_coordinator",
               "init_producer_id", "get_telemetry_subscriptions", "join_group", "sync_group", "offset_fetch")
_NEWEST = 4
#: Seconds without a request before the server warms codecs: not while a child it just
#: forked makes its first requests on the same cores.
WARM_AFTER = 0.5


def _warm_codecs() -> Iterator[None]:
    """The generated codecs (kproto.fastpath.protocol, ~3-12 ms of compile() each, unless
    cached) a child's first requests would otherwise generate, one per step, made while the
    server is idle (before its first request, then after ``WARM_AFTER`` without one) so a
    fork never waits for more than one: what a child was forked with it need not generate.
    Every ApiVersions version, then ``_NEWEST`` versions of each of ``_FIRST_APIS``, newest
    of each first."""
    from kproto import protocol
    served = protocol.served_versions()
    pairs = [(protocol.api_versions.API.key, v) for v in range(served[protocol.api_versions.API.key][1], -1, -1)]
    keys = [getattr(protocol, name).API.key for name in _FIRST_APIS]
    for back in range(_NEWEST):     # each API's newest first, then the one before...: a client's own first
        pairs += [(key, served[key][1] - back) for key in keys if served[key][1] - back >= served[key][0]]
    return codec_steps(pairs, serving=True)


def codec_steps(pairs: Sequence[tuple[int, int]], *, serving: bool) -> Iterator[None]:
    """Generate, one per step, the codecs of the headers and of each (API key, version): a
    broker's (``serving``: request parsers, response builders) or a client's (the converse)."""
    from kproto import protocol
    from kproto.fastpath.protocol import fast_builder, fast_parser
    from kproto.schemas.protocol.header import request_header, response_header
    into, out = (fast_parser, fast_builder) if serving else (fast_builder, fast_parser)
    for c in (request_header(1), request_header(2)):
        yield into(c.spec, c.version, c.flexible)
    for c in (response_header(0), response_header(1)):
        yield out(c.spec, c.version, c.flexible)
    for key, version in pairs:
        request, response = protocol.api(key).request(version), protocol.api(key).response(version)
        yield into(request.spec, request.version, request.flexible)
        yield out(response.spec, response.version, response.flexible)


def _reap(reports: dict[int, socket.socket]) -> None:
    while reports:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        report = reports.pop(pid, None)
        if report is not None:
            try:
                report.sendall(_STATUS.pack(os.waitstatus_to_exitcode(status)))
            except OSError:
                pass        # nobody waits for it any more
            report.close()


def _child(request: dict, fds: list[int]) -> None:
    """In the forked child: become ``python -m kproto.tools.main *argv``."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        for target, f in enumerate(fds[:3]):
            os.dup2(f, target)
        for f in fds:
            os.close(f)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        from kproto.tools import main
        sys.argv = [main.__file__, *request["argv"]]
        try:
            main.cli()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
        except BaseException:       # noqa: BLE001 - as the interpreter would: the traceback, status 1
            import traceback
            traceback.print_exc()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say
                pass
    finally:
        os._exit(code)
