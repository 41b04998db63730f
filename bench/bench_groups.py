"""Group coordinator bench: kproto against Apache Kafka 4.4 (the anchor) and tansu,
measuring the coordinator rather than a configured wait.

    python bench/bench_groups.py [--runs 5] [--members 1,10,100,500] [--quick]

(a) Join to first record: a new confluent-kafka consumer's subscribe() to its
    first record on a 3-partition topic holding 100 records (FindCoordinator,
    JoinGroup x2, SyncGroup, OffsetFetch, Fetch). Consumers use
    session.timeout.ms=6000, the smallest Kafka's default group.min.session.timeout.ms
    allows. Kafka (tests/kafka_ref.py's KRaft broker, classic group protocol) runs
    with group.initial.rebalance.delay.ms=0 as Kafka's own test brokers do.
    tansu 0.6 holds a new member's second JoinGroup for session.timeout.ms/2
    (3 s here), a wait it has no setting for. Two kproto settings:
      - Kafka's shipped config/server.properties: group.initial.rebalance.delay.ms=0;
      - hold equalized: group.initial.rebalance.delay.ms=3000, so kproto's new group
        waits exactly as long as tansu holds the join; the difference left is the
        coordinator. The "minus 3 s hold" column subtracts the wait from both.
(b) Rebalance as members grow: N members (raw protocol through kproto's sans-I/O
    ClientConnection over asyncio sockets, one connection each) of one new group
    subscribed to one 100-partition topic, all joining at once after their
    MEMBER_ID_REQUIRED round trip (untimed). Timed: from the first JoinGroup to
    every member holding its SyncGroup assignment in one generation with all N
    members; members of an earlier generation learn of the next one by heartbeat
    every 20 ms, as a client would. Broker CPU seconds (user+sys, psutil) over the
    same window. kproto and Kafka run with group.initial.rebalance.delay.ms=0 (target: 500
    members in under 1 s); tansu with session.timeout.ms=6000, so its 3 s hold of
    each new member's join is in its figure and stated.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, Producer  # noqa: E402

from bench.common import (  # noqa: E402
    Report, alternate, broker_pid, cell, check_runs, cpu_seconds, kafka_broker, kafka_version, ratio, table,
)
from kproto.client.admin import Admin, NewTopic  # noqa: E402
from kproto.client.connection import ClientConnection  # noqa: E402
from kproto.client.transport import BrokerClient  # noqa: E402
from kproto.errors import ErrorCode, KprotoError  # noqa: E402
from kproto.framing import NEED_DATA  # noqa: E402
from kproto.schemas.consumer_offsets import ConsumerProtocolAssignment, ConsumerProtocolSubscription  # noqa: E402
from tests import components  # noqa: E402

TOPIC = "join-latency"
SESSION_MS = 6000          # Kafka's group.min.session.timeout.ms default: the smallest allowed
HOLD_S = SESSION_MS / 2 / 1000
JOIN, SYNC, HEARTBEAT = 11, 14, 12


@contextlib.contextmanager
def start(kind: str, tmp: Path, delay_ms: int = 0):
    if kind == "tansu":
        with components.tansu(tmp) as bootstrap:
            yield bootstrap
    elif kind == "kafka":
        with kafka_broker(tmp, group_initial_rebalance_delay_ms=str(delay_ms)) as bootstrap:
            yield bootstrap
    else:
        with components.kproto_broker(tmp, f"group.initial.rebalance.delay.ms={delay_ms}") as bootstrap:
            yield bootstrap


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    with BrokerClient(bootstrap) as client:
        admin = Admin(client)
        try:
            admin.create_topics([NewTopic(topic, partitions, 1)])
        finally:
            admin.close()


def wait_for_coordinator(bootstrap: str, group: str, timeout: float = 60) -> None:
    """FindCoordinator until it answers, as a client does before JoinGroup: Kafka creates and
    loads __consumer_offsets on the first one (NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE until
    then); the members of (b) then send their requests straight to this one broker."""
    deadline = time.monotonic() + timeout
    with BrokerClient(bootstrap) as client:
        admin = Admin(client)
        try:
            while True:
                try:
                    admin.find_coordinator(group)
                    return
                except KprotoError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
        finally:
            admin.close()


# --- (a) join to first record --------------------------------------------------------------

def prepare(bootstrap: str) -> None:
    create_topic(bootstrap, TOPIC, 3)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(100):
        p.produce(TOPIC, value=b"x%d" % i)
    if p.flush(30):
        raise SystemExit("produce did not complete")


def join_latency(bootstrap: str, group: str, timeout: float = 120) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "session.timeout.ms": SESSION_MS})
    t0 = time.perf_counter()
    c.subscribe([TOPIC])
    try:
        while time.perf_counter() - t0 < timeout:
            m = c.poll(0.01)
            if m is not None and m.error() is None:
                return time.perf_counter() - t0
        raise SystemExit(f"no record within {timeout}s on {bootstrap}")
    finally:
        c.close()


def bench_join(runs: int, report: Report) -> None:
    kafka = f"Apache Kafka {kafka_version()} (delay 0)"
    setups = {kafka: ("kafka", 0), "tansu": ("tansu", 0), "kproto, shipped config (delay 0)": ("kproto", 0),
              f"kproto, hold equalized (delay {int(HOLD_S * 1000)} ms)": ("kproto", int(HOLD_S * 1000))}
    results: dict[str, list[float]] = {}
    with contextlib.ExitStack() as stack:
        bootstraps = {}
        for name, (kind, delay) in setups.items():
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            bootstraps[name] = stack.enter_context(start(kind, tmp, delay))
            prepare(bootstraps[name])
        counter = iter(range(10**6))
        results = alternate({name: (lambda b=bs: join_latency(b, f"bench-{next(counter)}"))
                             for name, bs in bootstraps.items()}, runs)
    held = {kafka: 0.0, "tansu": HOLD_S, "kproto, shipped config (delay 0)": 0.0}
    rows = []
    for name, times in results.items():
        hold = held.get(name, HOLD_S)
        rows.append([name, f"{hold:.1f}", cell(times, "{:.3f}"), cell([t - hold for t in times], "{:.3f}"),
                     ratio(times, results[kafka]), ratio(times, results["tansu"])])
    report.add("## (a) subscribe() to first record, new group, confluent-kafka consumer "
               f"(session.timeout.ms={SESSION_MS})\n\n" + table(
                   ["broker and setting", "configured wait s", "seconds", "minus the wait", "vs Kafka", "vs tansu"],
                   rows))


# --- (b) rebalance as members grow -----------------------------------------------------------

class Member:
    """One group member over its own connection, speaking raw protocol."""

    def __init__(self, bootstrap: str, group: str, subscription: bytes) -> None:
        self.bootstrap, self.group, self.subscription = bootstrap, group, subscription
        self.conn = ClientConnection("bench-member")
        self.member_id = ""
        self.generation = -1
        self.assignment: bytes | None = None

    async def connect(self) -> None:
        host, port = self.bootstrap.rsplit(":", 1)
        self.reader, self.writer = await asyncio.open_connection(host, int(port))
        _, data = self.conn.api_versions_request()
        self.conn.negotiate(await self._roundtrip(data))

    async def _roundtrip(self, data: bytes):
        self.writer.write(data)
        while True:
            response = self.conn.next_response()
            if response is not NEED_DATA:
                return response.body
            chunk = await self.reader.read(1 << 16)
            if not chunk:
                raise ConnectionError("broker closed a member connection")
            self.conn.receive_data(chunk)

    async def request(self, key: int, body: dict):
        # JoinGroup v5 (MEMBER_ID_REQUIRED, instance ids), SyncGroup/Heartbeat v3: what librdkafka 2.x sends
        version = min(self.conn.version_for(key), 5 if key == JOIN else 3)
        return await self._roundtrip(self.conn.send_request(key, body, version)[1])

    async def join(self):
        return await self.request(JOIN, {
            "group_id": self.group, "session_timeout_ms": SESSION_MS, "rebalance_timeout_ms": 60000,
            "member_id": self.member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": self.subscription}]})

    async def get_member_id(self) -> None:
        r = await self.join()
        if r.error_code != ErrorCode.MEMBER_ID_REQUIRED:
            raise RuntimeError(f"expected MEMBER_ID_REQUIRED, got {r.error_code}")
        self.member_id = r.member_id

    async def run(self, partitions: int, done: asyncio.Event) -> None:
        """Join, sync (the leader assigns), then heartbeat until told to rejoin."""
        while not done.is_set():
            r = await self.join()
            if r.error_code != ErrorCode.NONE:
                raise RuntimeError(f"JoinGroup error {r.error_code}")
            assignments = []
            if r.leader == self.member_id:
                ids = sorted(m.member_id for m in r.members)
                per = {m: [] for m in ids}
                for p in range(partitions):
                    per[ids[p % len(ids)]].append(p)
                assignments = [{"member_id": m, "assignment": ConsumerProtocolAssignment.build(
                    {"version": 0, "data": {"assigned_partitions": [{"topic": TOPIC_B, "partitions": ps}],
                                            "user_data": None}})} for m, ps in per.items()]
                self.members_in_generation = len(ids)
            s = await self.request(SYNC, {"group_id": self.group, "generation_id": r.generation_id,
                                          "member_id": self.member_id, "group_instance_id": None,
                                          "assignments": assignments})
            if s.error_code == ErrorCode.REBALANCE_IN_PROGRESS:
                continue
            if s.error_code != ErrorCode.NONE:
                raise RuntimeError(f"SyncGroup error {s.error_code}")
            self.generation, self.assignment = r.generation_id, s.assignment
            self.synced.set()
            while not done.is_set():
                await asyncio.sleep(0.02)
                if done.is_set():
                    return
                h = await self.request(HEARTBEAT, {"group_id": self.group, "generation_id": self.generation,
                                                   "member_id": self.member_id, "group_instance_id": None})
                if h.error_code == ErrorCode.REBALANCE_IN_PROGRESS:
                    self.synced.clear()
                    break

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


TOPIC_B = "rebalance"
KINDS = ("kafka", "tansu", "kproto")


async def rebalance_once(bootstrap: str, group: str, n: int, partitions: int, pid: int,
                         timeout: float = 120) -> tuple[float, float]:
    sub = ConsumerProtocolSubscription.build({"version": 0, "data": {"topics": [TOPIC_B], "user_data": None}})
    members = [Member(bootstrap, group, sub) for _ in range(n)]
    tasks: list[asyncio.Future] = []
    done = asyncio.Event()
    try:
        await asyncio.gather(*(m.connect() for m in members))
        await asyncio.gather(*(m.get_member_id() for m in members))
        for m in members:
            m.synced = asyncio.Event()
        cpu0, t0 = cpu_seconds(pid), time.perf_counter()
        tasks = [asyncio.ensure_future(m.run(partitions, done)) for m in members]

        async def all_in_one_generation() -> None:
            while True:
                for t in tasks:
                    if t.done() and t.exception():
                        raise t.exception()
                if all(m.synced.is_set() for m in members) and len({m.generation for m in members}) == 1:
                    leaders = [m for m in members if getattr(m, "members_in_generation", 0)]
                    if any(m.members_in_generation == n for m in leaders):
                        return
                await asyncio.sleep(0.002)

        await asyncio.wait_for(all_in_one_generation(), timeout)
        elapsed, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
        owned = []          # every partition owned exactly once
        for m in members:
            a = ConsumerProtocolAssignment.parse(m.assignment).data
            owned += [p for tp in a.assigned_partitions for p in tp.partitions]
        assert sorted(owned) == list(range(partitions)), "assignment does not cover the topic once"
        return elapsed, cpu
    finally:
        done.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(m.close() for m in members if hasattr(m, "writer")), return_exceptions=True)


def bench_rebalance(runs: int, sizes: list[int], partitions: int, report: Report, timeout: float) -> None:
    rows = []
    with contextlib.ExitStack() as stack:
        bootstraps, pids = {}, {}
        for kind in KINDS:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            bootstraps[kind] = stack.enter_context(start(kind, tmp, 0))
            create_topic(bootstraps[kind], TOPIC_B, partitions)
            wait_for_coordinator(bootstraps[kind], "rb-warm")
            pids[kind] = broker_pid(bootstraps[kind])
        counter = iter(range(10**6))
        for n in sizes:
            failed: dict[str, str] = {}

            def one(kind: str, n: int = n):
                if kind in failed:          # do not wait out the timeout again for this size
                    return None
                try:
                    return asyncio.run(rebalance_once(bootstraps[kind], f"rb-{n}-{next(counter)}", n,
                                                      partitions, pids[kind], timeout))
                except (asyncio.TimeoutError, TimeoutError):
                    failed[kind] = f"no single generation of {n} members within {timeout:.0f} s"
                    return None
                except (RuntimeError, OSError) as e:
                    failed[kind] = f"failed: {e}"
                    return None

            runs_n = alternate({kind: (lambda k=kind: one(k)) for kind in KINDS}, runs)
            t = {k: [r[0] for r in v if r] for k, v in runs_n.items()}
            c = {k: [r[1] for r in v if r] for k, v in runs_n.items()}

            def show(kind: str, values: list[float], shift: float = 0.0) -> str:
                if kind in failed:
                    return failed[kind]
                return cell([x - shift for x in values], "{:.3f}")

            rows.append([str(n), show("kafka", t["kafka"]), show("tansu", t["tansu"]), show("tansu", t["tansu"], HOLD_S),
                         show("kproto", t["kproto"]),
                         ratio(t["kproto"], t["kafka"]) if t["kproto"] and t["kafka"] else "-",
                         show("kafka", c["kafka"]), show("tansu", c["tansu"]), show("kproto", c["kproto"]),
                         ("yes" if statistics.median(t["kproto"]) < 1.0 else "no") if n == 500 and t["kproto"]
                         else ""])
            print(f"members {n}: done", file=sys.stderr, flush=True)
    report.add(f"## (b) one new group, {partitions} partitions, N members joining at once (raw protocol)\n\n"
               "Seconds from the first JoinGroup to every member synced in one generation of N members, and "
               "the broker's CPU seconds in that window. kproto and Kafka: group.initial.rebalance.delay.ms=0 "
               f"(target: 500 members < 1 s). tansu: includes its {HOLD_S:.0f} s hold of new members' joins "
               f"(session.timeout.ms={SESSION_MS}); a member arriving after a generation formed waits out "
               "another hold, so its time is not the coordinator's and no ratio is given.\n\n" + table(
                   ["members", "Kafka s", "tansu s", f"tansu s minus one {HOLD_S:.0f} s hold", "kproto s",
                    "kproto / Kafka", "Kafka CPU s", "tansu CPU s", "kproto CPU s", "kproto 500 < 1 s"], rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--members", default="1,10,100,500")
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--skip-join", action="store_true", help="only (b)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="give up on a broker for a group size after this many seconds (then not retried)")
    ap.add_argument("--quick", action="store_true", help="members 1,10: check the script works")
    args = ap.parse_args()
    check_runs(args.runs)
    if args.quick:
        args.members = "1,10"
    report = Report("bench_groups", "Group coordinator: kproto vs Apache Kafka and tansu", args.quick)
    if not args.skip_join:
        bench_join(args.runs, report)
    bench_rebalance(args.runs, [int(x) for x in args.members.split(",")], args.partitions, report, args.timeout)
    report.write()


if __name__ == "__main__":
    main()
