"""Soak: try to break `kproto serve` as hostile or careless clients would, and print figures.

    .venv/bin/python bench/soak.py [--kill-trials 150] [--frames 400000] [--fuzz 2000000]
                                   [--churn-seconds 1200] [--declared 40] [--out figures.json] [--seed N]

Five parts, each sized by its option (0 skips it), run one after the other
(figures written after each):

kill    kill -9 mid-produce: an idempotent confluent-kafka producer (acks=all)
        writes numbered records to 3 partitions while the broker is killed and
        restarted ``--kill-trials`` times, once with the default flush and once
        with log.flush.interval.messages=1; then every record is read back.
        Figures: acknowledged records lost, duplicates, restarts that failed,
        the broker's peak RSS over all its restarts.
frames  mutated and random request frames (the corpus's request frames: bit
        flips, truncations, length-field edits, spliced and random bytes), each
        followed by an ApiVersions probe on the same connection.
        Figures: broker crashes, wedged connections (neither an answer nor a
        close within 5 s, for APIs that never park a request), peak RSS,
        partitions the frames made the broker create, its peak open descriptors.
fuzz    every record and protocol decoder over mutations of every fixture in
        the conformance corpus (kproto/conformance/corpus), plus compression
        bombs for each codec, in this process. Figures: exceptions that are not
        kproto's, slowest input, peak RSS (after other parts the fuzz part runs
        in a child process of its own, so the figure is the decoders').
declared  ``--declared`` connections each declare a 100 MB frame, send 1 KB of
        it and hold, against a broker with no queued.max.request.bytes and one
        with 200 MB (issue 22). Figures: the broker's peak RSS while they hold,
        the seconds a new client's ApiVersions then takes (None: no answer).
churn   a consumer group of member processes, one killed (SIGKILL) and one
        started every few seconds, while a producer writes.
        Figures: records never consumed, committed offsets going backwards,
        the broker's peak RSS.

Targets (issue 10): 0 lost in 100 kill trials, 0 crashes over 1e5 frames,
0 foreign exceptions over 1e6 fuzzed inputs, peak RSS under
2 x queued.max.request.bytes + 100 MB. Issue 22: with 40 declared frames held,
RSS under 150 MB and ApiVersions answered within 1 s, in both configurations.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kproto import testing  # noqa: E402
from kproto.conformance import PROTOCOL_DIR, RECORDS_DIR  # noqa: E402  (the fixture corpus)
QUEUED_MAX = 64 << 20       # queued.max.request.bytes of the brokers started here
PARKING_APIS = {0, 1, 11, 14}       # Produce (acks wait), Fetch, JoinGroup, SyncGroup may wait on purpose


class Broker(testing.Broker):
    """`kproto serve` through kproto.testing (port 0 on the first start, read from the
    ready line; the same port and data on a restart). Every one started is stopped
    when the run ends (``Broker.stop_all``), whatever broke."""

    started: list["Broker"] = []

    def __init__(self, data: Path, *configs: str) -> None:
        settings = ["group.initial.rebalance.delay.ms=0", f"queued.max.request.bytes={QUEUED_MAX}", *configs]
        super().__init__(data, dict(c.split("=", 1) for c in settings),
                         log_path=data.parent / f"broker-{data.name}.log", log_level="warning")
        self.data, self.log = self.data_dir, self.log_path
        self.peak_rss = self.peak_fds = 0

    @property
    def bootstrap(self) -> str:
        return self.bootstrap_servers

    def start(self, timeout: float = 30) -> bool:
        """True once the broker is ready; False if it exited or stayed silent."""
        self.start_timeout = timeout
        Broker.started.append(self)
        try:
            super().start()
        except testing.BrokerStartError:
            return False
        return True

    def alive(self) -> bool:
        return self.running

    def sample_rss(self) -> None:
        pid = self.pid
        if pid is None:
            return
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            self.peak_rss = max(self.peak_rss, proc.memory_info().rss)
            self.peak_fds = max(self.peak_fds, proc.num_fds())

    def watch(self, seconds: float) -> None:
        """Wait, sampling the broker's RSS and descriptors every 0.1 s."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.sample_rss()
            time.sleep(min(0.1, left))

    def partitions(self) -> int:
        """Partition directories in the data dir (what clients made it create)."""
        return sum(1 for d in self.data.iterdir() if d.is_dir() and "-" in d.name)

    def stop(self, timeout: float = 20.0) -> None:
        super().stop(timeout)

    @classmethod
    def stop_all(cls) -> None:
        for broker in cls.started:
            broker.kill()
        cls.started.clear()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def read_all(bootstrap: str, topic: str, partitions: int, idle_s: float = 1.5) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-reader", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, last = [], time.monotonic()
    while time.monotonic() - last < idle_s:
        for m in c.consume(1000, 0.5):
            if m.error() is None:
                out.append(m.value())
                last = time.monotonic()
    c.close()
    return out


# --- kill -9 mid-produce -------------------------------------------------------------------

def kill_trials(work: Path, trials: int, rng: random.Random) -> dict:
    out = {}
    for mode, configs in (("default flush", ()), ("flush every message", ("log.flush.interval.messages=1",))):
        out[mode] = _kill_mode(work / mode.replace(" ", "-"), trials, configs, rng)
    return out


def _kill_mode(work: Path, trials: int, configs: tuple, rng: random.Random) -> dict:
    from confluent_kafka import Producer
    broker = fresh_broker(work, "soak", 3, *configs)
    if broker is None:
        return {"error": "broker did not start"}
    acked: set[int] = set()
    failures = Counter()
    stop = threading.Event()

    def report(err, msg):
        if err is None:
            acked.add(int(msg.value()))
        else:
            failures[err.name()] += 1

    def produce():
        p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all", "log_level": 0,
                      "linger.ms": 5, "message.timeout.ms": 300000, "reconnect.backoff.max.ms": 200})
        i = 0
        while not stop.is_set():
            try:
                p.produce("soak", value=b"%d" % i, partition=i % 3, on_delivery=report)
                i += 1
            except BufferError:
                p.poll(0.05)
            if i % 200 == 0:
                p.poll(0.002)
        p.flush(300)
        produced[0] = i

    produced = [0]
    t = threading.Thread(target=produce)
    t.start()
    failed_restarts = 0
    for _ in range(trials):
        broker.watch(rng.uniform(0.2, 1.0))
        broker.kill()
        if not broker.start():
            failed_restarts += 1
            if not broker.start():      # a second refusal ends the run
                break
    time.sleep(1)
    stop.set()
    t.join(360)
    values = read_all(broker.bootstrap, "soak", 3)
    broker.stop()
    seen = Counter(int(v) for v in values)
    return {"trials": trials, "produced": produced[0], "acknowledged": len(acked),
            "lost": len(acked - set(seen)), "duplicates": sum(n - 1 for n in seen.values() if n > 1),
            "failed_restarts": failed_restarts, "delivery_errors": dict(failures),
            "peak_rss_mib": round(broker.peak_rss / 2**20, 1)}


# --- mutated request frames -----------------------------------------------------------------

def seed_frames() -> list[tuple[int, bytes]]:
    out = []
    for f in sorted(PROTOCOL_DIR.glob("*_request_*.bin")):
        meta = json.loads(f.with_suffix(".json").read_text())
        out.append((meta["api_key"], f.read_bytes()))
    if not out:
        raise SystemExit(f"no request frames in {PROTOCOL_DIR}")
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One of: bit flips, truncation, a length/count field edited, bytes spliced or dropped, noise."""
    b = bytearray(data)
    kind = rng.randrange(6)
    if kind == 0 and b:
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif kind == 1 and b:
        del b[rng.randrange(len(b)):]
    elif kind == 2 and len(b) > 4:
        at = rng.randrange(len(b) - 4)
        value = rng.choice([-1, -2, 0, 1, 0x7F, 0x7FFF, 0x7FFFFFFF, -0x80000000, rng.getrandbits(32)])
        width = rng.choice([1, 2, 4])
        b[at:at + width] = (value & ((1 << 8 * width) - 1)).to_bytes(width, "big")
    elif kind == 3 and b:
        at = rng.randrange(len(b))
        b[at:at] = os.urandom(rng.randint(1, 64))
    elif kind == 4 and b:
        at = rng.randrange(len(b))
        del b[at:at + rng.randint(1, 16)]
    else:
        b = bytearray(b[:8] + os.urandom(rng.randint(0, 256)))
    return bytes(b)


PROBE = bytes.fromhex("00120000") + (0x7EAD).to_bytes(4, "big") + b"\x00\x05probe"   # ApiVersions v0


def _exchange(port: int, frame: bytes, timeout: float, patience: float = 120) -> str:
    """'answered' or 'closed' within ``timeout``; 'slow' if only within
    ``patience`` (e.g. thousands of partitions being created); else 'wedged'."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(len(frame).to_bytes(4, "big") + frame + len(PROBE).to_bytes(4, "big") + PROBE)
        start, buf = time.monotonic(), bytearray()
        result = _await_probe(s, buf, start + timeout)
        if result == "wedged" and _await_probe(s, buf, start + patience) != "wedged":
            result = "slow"
        return result


def _await_probe(s: socket.socket, buf: bytearray, deadline: float) -> str:
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionError:
            return "closed"
        if not chunk:
            return "closed"
        buf += chunk
        while len(buf) >= 8:
            n = int.from_bytes(buf[:4], "big")
            if len(buf) < 4 + n:
                break
            if buf[4:8] == (0x7EAD).to_bytes(4, "big"):
                return "answered"
            del buf[:4 + n]
    return "wedged"


DECLARED = 104857600        # socket.request.max.bytes: the largest frame a prefix may declare


def declared_frames(work: Path, connections: int) -> dict:
    """Clients that declare a 100 MB frame each and send 1 KB of it: a broker that
    reserved the declared size ran out of memory, or (with queued.max.request.bytes)
    stopped answering; one whose buffers grow with the bytes sent does neither."""
    out = {}
    for label, budget in (("defaults", -1), ("queued.max.request.bytes=200MB", 209715200)):
        work.mkdir(parents=True, exist_ok=True)
        broker = Broker(work / f"data{budget}", f"queued.max.request.bytes={budget}")
        if not broker.start():
            out[label] = {"error": "the broker did not start"}
            continue
        with contextlib.ExitStack() as held:
            try:
                for _ in range(connections):
                    s = held.enter_context(socket.create_connection(("127.0.0.1", broker.port), timeout=30))
                    s.sendall(DECLARED.to_bytes(4, "big") + b"\0" * 1024)
                broker.watch(1)
                with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
                    start = time.monotonic()
                    s.sendall(len(PROBE).to_bytes(4, "big") + PROBE)
                    answered = _await_probe(s, bytearray(), start + 30) == "answered"
                    took = time.monotonic() - start
                broker.watch(1)
            finally:
                broker.stop()
        out[label] = {"connections": connections, "peak_rss_mib": round(broker.peak_rss / 2**20, 1),
                      "api_versions_s": round(took, 3) if answered else None}
    return out


def fresh_broker(work: Path, topic: str, partitions: int, *configs: str) -> Broker | None:
    """A broker on a new data dir under ``work``, with ``topic`` created; None if it did not start."""
    work.mkdir(parents=True)
    broker = Broker(work / "data", *configs)
    if not broker.start():
        return None
    create_topic(broker.bootstrap, topic, partitions)
    return broker


def frame_trials(work: Path, count: int, rng: random.Random, workers: int = 4) -> dict:
    broker = fresh_broker(work, "frames", 1)
    if broker is None:
        return {"error": "broker did not start"}
    seeds = seed_frames()
    outcomes, crashes, wedged_by_api = Counter(), 0, Counter()
    lock = threading.Lock()
    left = [count]

    def worker(seed: int) -> None:
        nonlocal crashes
        r = random.Random(seed)
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            key, frame = r.choice(seeds)
            data = mutate(frame, r) if r.random() < 0.97 else os.urandom(r.randint(0, 512))
            try:
                result = _exchange(broker.port, data, 5.0)
            except OSError:
                result = "refused"
            key = int.from_bytes(data[:2], "big", signed=True) if len(data) >= 2 else -1
            if result == "wedged" and key in PARKING_APIS:
                result = "parked"       # a legitimately waiting request (e.g. Fetch max_wait_ms mutated)
            with lock:
                outcomes[result] += 1
                if result == "wedged":
                    wedged_by_api[key] += 1
                if result == "refused" and not broker.alive():
                    crashes += 1
                    broker.start()

    threads = [threading.Thread(target=worker, args=(rng.getrandbits(32),)) for _ in range(workers)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        broker.watch(0.1)
    alive = broker.alive()
    broker.stop()
    internal = _internal_errors(broker.log)
    return {"frames": count, "crashes": crashes + (0 if alive else 1), "wedged": outcomes["wedged"],
            "internal_errors": sum(internal.values()), "internal_error_kinds": dict(internal),
            "wedged_by_api": dict(wedged_by_api), "outcomes": dict(outcomes),
            "peak_rss_mib": round(broker.peak_rss / 2**20, 1),
            # auto-created topics each hold segment files: the open-file cap must bound these
            "partitions_created": broker.partitions(), "peak_open_fds": broker.peak_fds,
            "fd_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}


def _internal_errors(log: Path) -> Counter:
    """Handler exceptions the broker caught as bugs ("after an internal error"), by last line."""
    kinds: Counter = Counter()
    lines = log.read_text(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if "after an internal error" in line:
            tail = next((l for l in lines[i + 1:i + 80] if l and not l.startswith((" ", "Traceback"))), "?")
            kinds[tail.split(":")[0][:80]] += 1
    return kinds


# --- decoder fuzzing (in process) -------------------------------------------------------------

def fuzz_part(args: argparse.Namespace, rng: random.Random) -> dict:
    """The fuzz part here when it is the only one; after other parts, in a child
    process of its own, so its peak RSS (VmHWM, a lifetime maximum) is the
    decoders' and not the kill and churn parts' producers'."""
    if not (args.kill_trials or args.frames or args.churn_seconds):
        return fuzz_decoders(args.fuzz, rng)
    with tempfile.TemporaryDirectory(prefix="kproto-soak-fuzz-") as tmp:
        out = Path(tmp) / "fuzz.json"
        subprocess.run([sys.executable, __file__, "--fuzz", str(args.fuzz), "--kill-trials", "0",
                        "--frames", "0", "--churn-seconds", "0", "--seed", str(rng.getrandbits(32)),
                        "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())["fuzz"]


def fuzz_decoders(count: int, rng: random.Random) -> dict:
    import logging
    from kproto.errors import KprotoError
    logging.disable(logging.WARNING)       # replay's one line per skipped record, 10^6 times
    targets = _fuzz_targets()
    foreign: Counter = Counter()
    examples: list[str] = []
    slowest = (0.0, "")
    for i in range(count):
        name, decode, seed = targets[i % len(targets)]
        data = mutate(seed, rng)
        t0 = time.perf_counter()
        try:
            decode(data)
        except KprotoError:
            pass
        except Exception as e:      # what the soak is looking for
            foreign[f"{name}: {type(e).__name__}"] += 1
            if len(examples) < 10:
                examples.append(f"{name}: {type(e).__name__}: {e} (input {data[:64].hex()}...)")
        took = time.perf_counter() - t0
        if took > slowest[0]:
            slowest = (took, name)
    bombs = _bombs()
    logging.disable(logging.NOTSET)
    return {"inputs": count + bombs["inputs"], "foreign_exceptions": sum(foreign.values()) + bombs["foreign"],
            "by_kind": dict(foreign), "examples": examples + bombs["examples"],
            "slowest_ms": round(slowest[0] * 1000, 1), "slowest": slowest[1],
            "peak_rss_mib": round(_peak_rss_kib() / 1024, 1)}


def _peak_rss_kib() -> int:
    """This process's peak RSS since exec (VmHWM). Not getrusage's ru_maxrss: Linux
    carries that over fork and exec, so a child of a large process (pytest after
    the whole suite) would report its parent's peak."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _fuzz_targets() -> list:
    from kproto.topic_config import LogConfig
    from kproto.log.validator import validate_and_assign_offsets
    from kproto.records import NewRecord, build_record_batch, iter_batches
    from kproto import protocol
    from kproto.server.coordinator import persistence as P
    from kproto.server.coordinator.offsets import OffsetAndMetadata

    def records(data):
        for b in iter_batches(data, verify_crc=False):
            list(b.records())
            if b.magic == 2:
                b.walk()

    def append(data):
        validate_and_assign_offsets(data, next_offset=0, config=LogConfig(), now=0)

    def consumer_offsets(data):
        P.replay([(data[:len(data) // 2], data[len(data) // 2:])])
        P.parse_key(data)
        P.parse_offset_value(data)
        P.parse_group_value("g", data)

    out = []
    for f in sorted(RECORDS_DIR.glob("*.bin")):
        data = f.read_bytes()
        out += [(f"records:{f.name}", records, data), (f"append:{f.name}", append, data)]
    for f in sorted(PROTOCOL_DIR.glob("*.bin")):
        meta = json.loads(f.with_suffix(".json").read_text())
        if meta["direction"] == "request":
            fn = lambda d: protocol.decode_request(d, allow_trailing=True)
        else:
            fn = lambda d, k=meta["api_key"], v=meta["api_version"]: protocol.decode_response(k, v, d)
        out.append((f"protocol:{f.name}", fn, f.read_bytes()))
    if len(out) < 100:
        raise SystemExit(f"only {len(out)} fixtures found under {RECORDS_DIR.parent}")
    commit = P.offset_commit_key("g", "t", 0) + P.offset_commit_value(OffsetAndMetadata(5, 1, "m", 9))
    out.append(("consumer_offsets", consumer_offsets, commit))
    out.append(("append:built", append, build_record_batch([NewRecord(b"k", b"v" * 50, [("h", b"x")])] * 5)))
    return out


def _bombs() -> dict:
    """Each codec with a stream that expands far past the cap: an error, never memory."""
    import zlib
    from kproto.compression import CompressionType, compress, decompress
    from kproto.errors import KprotoError
    out = {"inputs": 0, "foreign": 0, "examples": []}
    zeros = bytes(1 << 20)
    for codec in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD):
        one = compress(codec, zeros)
        if codec == CompressionType.GZIP:
            d = zlib.compressobj(9, zlib.DEFLATED, 31)
            bomb = b"".join(d.compress(zeros) for _ in range(512)) + d.flush()    # 512 MB of zeros
        else:
            bomb = one      # one MB against a 64 KB cap
        out["inputs"] += 1
        try:
            decompress(codec, bomb, max_size=64 << 10)
        except KprotoError:
            pass
        except Exception as e:
            out["foreign"] += 1
            out["examples"].append(f"bomb {codec.name}: {type(e).__name__}: {e}")
    return out


# --- group churn -------------------------------------------------------------------------------

MEMBER = r"""
import sys
from confluent_kafka import Consumer
bootstrap, path = sys.argv[1], sys.argv[2]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "churn", "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
c.subscribe(["churn"])
with open(path, "a") as out:
    while True:
        msgs = c.consume(200, 0.5)
        good = [m for m in msgs if m.error() is None]
        for m in good:
            out.write(m.value().decode() + "\n")
        out.flush()
        if good:
            try:
                c.commit(asynchronous=False)
            except Exception:
                pass
"""


def group_churn(work: Path, seconds: float, rng: random.Random, members: int = 3) -> dict:
    from confluent_kafka import Producer
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient
    broker = fresh_broker(work, "churn", 6)
    if broker is None:
        return {"error": "broker did not start"}
    procs: list[subprocess.Popen] = []

    def spawn():
        path = work / f"member-{len(procs)}.txt"
        procs.append(subprocess.Popen([sys.executable, "-c", MEMBER, broker.bootstrap, str(path)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))

    acked: set[int] = set()
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
    report = lambda err, msg: acked.add(int(msg.value())) if err is None else None
    for _ in range(members):
        spawn()
    backwards, killed, last, i = 0, 0, {}, 0
    try:
        i, end = 0, time.monotonic() + seconds
        next_kill = time.monotonic() + 3
        with BrokerClient(broker.bootstrap) as client:
            admin = Admin(client)
            while time.monotonic() < end:
                for _ in range(50):         # ~500 records/s: a steady load, not a flood
                    try:
                        p.produce("churn", value=b"%d" % i, partition=i % 6, on_delivery=report)
                        i += 1
                    except BufferError:
                        break
                p.poll(0)
                broker.watch(0.1)
                backwards += _check_commits(admin, last)
                if time.monotonic() > next_kill:
                    victim = rng.choice([q for q in procs if q.poll() is None])
                    os.killpg(victim.pid, signal.SIGKILL)
                    victim.wait()
                    killed += 1
                    spawn()
                    next_kill = time.monotonic() + rng.uniform(2, 5)
            p.flush(30)
            # drain: the survivors commit up to the end
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                backwards += _check_commits(admin, last)
                if acked <= _consumed_set(work):
                    break
                time.sleep(0.5)
            admin.close()
    finally:        # members and broker never outlive the part, whatever broke
        for q in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(q.pid, signal.SIGKILL)
            q.wait()
        broker.stop()
    never = acked - _consumed_set(work)
    return {"seconds": seconds, "members_killed": killed, "produced": i, "acknowledged": len(acked),
            "never_consumed": len(never), "commits_backwards": backwards,
            "peak_rss_mib": round(broker.peak_rss / 2**20, 1)}


def _consumed(work: Path) -> list[set[int]]:
    out = []
    for f in work.glob("member-*.txt"):
        out.append({int(line) for line in f.read_text().split() if line.isdigit()})
    return out or [set()]


def _consumed_set(work: Path) -> set[int]:
    return set().union(*_consumed(work))


def _check_commits(admin, last: dict) -> int:
    """Committed offsets of group "churn" must never go down; returns how many did."""
    try:
        now = admin.offset_fetch("churn")
    except Exception:       # coordinator moving or loading: try again later
        return 0
    back = 0
    for tp, o in now.items():
        if o.offset < last.get(tp, -1):
            back += 1
        last[tp] = max(o.offset, last.get(tp, -1))
    return back


# --- driver --------------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> dict:
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="kproto-soak-"))
    figures: dict = {"seed": args.seed, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    t0 = time.monotonic()
    try:
        parts = [("kill", args.kill_trials, lambda: kill_trials(work / "kill", args.kill_trials, rng)),
                 ("frames", args.frames, lambda: frame_trials(work / "frames", args.frames, rng)),
                 ("declared", args.declared, lambda: declared_frames(work / "declared", args.declared)),
                 ("churn", args.churn_seconds, lambda: group_churn(work / "churn", args.churn_seconds, rng)),
                 ("fuzz", args.fuzz, lambda: fuzz_part(args, rng))]
        for name, size, part in parts:
            if not size:
                continue
            started = time.monotonic()
            try:
                figures[name] = part()
            except Exception as e:      # a part that breaks is a figure too; the others still run
                figures[name] = {"error": f"{type(e).__name__}: {e}"}
            figures[name]["elapsed_s"] = round(time.monotonic() - started, 1)
            _save(args.out, figures)
            print(f"{name}: {json.dumps(figures[name])}", flush=True)
    finally:
        Broker.stop_all()
        figures["elapsed_s"] = round(time.monotonic() - t0, 1)
        _save(args.out, figures)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return figures


def _save(path: str | None, figures: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(figures, indent=1) + "\n")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # The defaults are a run of about 35 minutes, past each of issue 10's targets.
    ap.add_argument("--kill-trials", type=int, default=150, help="kill -9 trials per flush mode")
    ap.add_argument("--frames", type=int, default=400_000, help="mutated request frames")
    ap.add_argument("--fuzz", type=int, default=2_000_000, help="fuzzed decoder inputs")
    ap.add_argument("--churn-seconds", type=float, default=1200, help="group churn duration")
    ap.add_argument("--declared", type=int, default=40, help="connections declaring a 100 MB frame each")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--out", help="write the figures here (JSON), updated after each part")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (broker logs)")
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    main()
