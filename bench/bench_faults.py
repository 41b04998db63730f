"""Benchmark: what the fault plane costs a broker that has no fault to make.

    python bench/bench_faults.py [--messages 100000] [--size 100] [--runs 5] [--quick]

Three sides, alternating, each a fresh ``kproto serve`` through kproto.testing.Broker
on a tmpfs data dir: ``plain`` (no --control), ``control`` (--control, no rule: the
dispatch's one truth test per request) and ``control+rule`` (one rule that matches
no request of the run: a Heartbeat rule for another group, so every request is
matched against it). One run: confluent-kafka produces --messages values of --size
bytes to a one-partition topic, one record per Produce request (acks=all,
linger.ms=0, batch.num.messages=1: the plane's cost is per request), flushed; then
a consumer reads them all. Reported: Produce requests/s, consume MB/s and the
broker's CPU µs per produced record (whole run), median (min-max), and each side's
CPU against ``plain``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from bench.common import Report, alternate, cell, check_runs, cpu_seconds, ratio, table  # noqa: E402
from kproto.testing import FIXTURE_DEFAULTS, Broker  # noqa: E402

TOPIC = "bench"


def one_run(control: bool, rule: bool, messages: int, size: int) -> dict[str, float]:
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="bench-faults-", dir=shm) as tmp:
        b = Broker(Path(tmp) / "data", {**FIXTURE_DEFAULTS, "num.partitions": "1"}, control=control,
                   log_level="warning")
        with b:
            if rule:
                b.faults.inject(api="Heartbeat", error="NOT_COORDINATOR", group_id="no-such-group")
            cpu0 = cpu_seconds(b.pid)
            value = b"x" * size
            # one record per Produce request: the plane's cost is per request, so the run is request-bound
            p = Producer({"bootstrap.servers": b.bootstrap_servers, "acks": "all", "linger.ms": 0,
                          "batch.num.messages": 1})
            t0 = time.perf_counter()
            for _ in range(messages):
                while True:
                    try:
                        p.produce(TOPIC, value)
                        break
                    except BufferError:
                        p.poll(0.01)
            if p.flush(300) != 0:
                raise SystemExit("produce did not complete")
            t1 = time.perf_counter()
            c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "bench", "enable.auto.commit": False})
            c.assign([TopicPartition(TOPIC, 0, 0)])
            got = 0
            while got < messages:
                for m in c.consume(min(10_000, messages - got), 5):
                    if m.error() is None:
                        got += 1
            t2 = time.perf_counter()
            c.close()
            cpu = cpu_seconds(b.pid) - cpu0
    mb = messages * size / 1e6
    return {"produce": messages / (t1 - t0), "consume": mb / (t2 - t1), "cpu": cpu * 1e6 / messages}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="1,000 messages, 5 runs: checks the script")
    a = ap.parse_args()
    if a.quick:
        a.messages = 1_000
    check_runs(a.runs)
    report = Report("bench_faults", "Fault plane: its cost with no fault to make", quick=a.quick)
    sides = {"plain": lambda: one_run(False, False, a.messages, a.size),
             "control": lambda: one_run(True, False, a.messages, a.size),
             "control+rule": lambda: one_run(True, True, a.messages, a.size)}
    res = alternate(sides, a.runs)
    rows = []
    for name, runs in res.items():
        rows.append([name, cell((r["produce"] for r in runs), "{:,.0f}"), cell(r["consume"] for r in runs),
                     cell((r["cpu"] for r in runs), "{:,.0f}"),
                     ratio([r["cpu"] for r in runs], [r["cpu"] for r in res["plain"]])])
    report.add(f"{a.messages:,} messages of {a.size} bytes, {a.runs} alternating runs per side.")
    report.add(table(["side", "Produce requests/s", "consume MB/s", "broker CPU µs/record", "CPU vs plain"], rows))
    report.add("The machine is shared (2 CPUs, several other jobs; load average above): the spread "
               "within a side is that load; compare medians of alternating runs, not single runs.")
    report.write()


if __name__ == "__main__":
    main()
