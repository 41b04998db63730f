"""Benchmark: the kafka_broker fixture's start-up, from the fixture call to a producer's
first acknowledged record, against starting tansu the same way.

One run of a side:
  1. start the broker: kproto through ``kproto.testing.Broker.start()`` (what the
     fixture calls: ``python -m kproto.tools.main serve`` on port 0, the ready line
     read from its stdout), and ``kproto.testing.InProcessBroker.start()`` (the fixtures
     under ``--kproto-in-process``: a thread of this interpreter; its first run pays
     the kproto.server import, once per session as in pytest); tansu 0.6 as tests/components.py starts it (a free port,
     memory storage, wait until the port accepts);
  2. create a one-partition topic with kproto's admin client (what kafka_topic does);
  3. confluent-kafka Producer, acks=all, linger.ms=0: produce one record and wait
     for its delivery report.
The clock runs from before step 1 to the delivery report; the broker is stopped
after the clock stops. Sides alternate, 20 runs each by default; median (min-max).

Usage: PYTHONPATH=. .venv/bin/python bench/bench_fixture.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402

from kproto.client.admin import Admin, NewTopic  # noqa: E402
from kproto.client.transport import BrokerClient  # noqa: E402
from kproto.testing import FIXTURE_DEFAULTS, Broker, InProcessBroker  # noqa: E402
from tests import components  # noqa: E402


def first_ack(bootstrap: str, marks: dict) -> None:
    with BrokerClient(bootstrap) as client:
        err = Admin(client).create_topics([NewTopic("bench", 1, 1)])["bench"].error
        assert not err, err
    marks["topic"] = time.perf_counter()
    acked = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    p.produce("bench", b"first", on_delivery=lambda e, m: acked.append(e or m.offset()))
    p.flush(30)
    assert acked == [0], acked
    marks["ack"] = time.perf_counter()


def run_kproto(tmp: Path, kind: type[Broker] = Broker) -> dict:
    marks = {"t0": time.perf_counter()}
    broker = kind(tmp / "data", FIXTURE_DEFAULTS, log_path=tmp / "broker.log")
    try:
        broker.start()
        marks["ready"] = time.perf_counter()
        first_ack(broker.bootstrap_servers, marks)
    finally:
        broker.stop()
    return marks


def run_tansu(tmp: Path) -> dict:
    binary = components.tansu_binary()
    marks = {"t0": time.perf_counter()}
    port = components.free_port()
    url = f"tcp://127.0.0.1:{port}"
    cmd = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
           "--storage-engine", "memory://tansu/"]
    with components.running(cmd, port, log=tmp / "tansu.log"):
        marks["ready"] = time.perf_counter()
        first_ack(f"127.0.0.1:{port}", marks)
    return marks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    # kproto as installed: with its bytecode cache (pip writes it for site-packages;
    # an editable install under PYTHONDONTWRITEBYTECODE=1 would compile every start).
    import compileall
    compileall.compile_dir(str(ROOT / "kproto"), quiet=1)
    sides = {"kproto (kafka_broker fixture)": run_kproto,
             "kproto in-process (--kproto-in-process)": lambda tmp: run_kproto(tmp, InProcessBroker),
             "tansu 0.6.0": run_tansu}
    results: dict[str, list[dict]] = {name: [] for name in sides}
    for i in range(args.runs):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))   # the in-process side's first
        # run imports kproto.server (once per test session, as a pytest run would)
        for name in order:
            with tempfile.TemporaryDirectory(prefix="bench-fixture-") as tmp:
                results[name].append(sides[name](Path(tmp)))
    from bench.common import Report
    report = Report("bench_fixture", "Fixture call -> first acknowledged record: kproto.testing vs tansu")
    lines = [f"fixture call -> first acknowledged record, {args.runs} runs per side, alternating; "
             f"median (min-max) in ms", "",
             "| side | started | + topic created | + first record acked (total) |", "|---|---|---|---|"]
    for name, runs in results.items():
        cols = []
        for mark in ("ready", "topic", "ack"):
            ms = [1000 * (r[mark] - r["t0"]) for r in runs]
            cols.append(f"{statistics.median(ms):.0f} ({min(ms):.0f}-{max(ms):.0f})")
        lines.append(f"| {name} | " + " | ".join(cols) + " |")
    report.add("\n".join(lines))
    report.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
