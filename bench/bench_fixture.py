"""Benchmark: the kafka_broker fixture's start-up, from the fixture call to a producer's
first acknowledged record, against starting Apache Kafka 4.4 (the anchor) and tansu
the same way.

    python bench/bench_fixture.py [--runs 20] [--quick]

One run of a side:
  1. start the broker: kproto through ``kproto.testing.Broker.start()`` (what the
     fixture calls: ``kproto serve`` on port 0 forked from the process's fork server,
     kproto.testing.forkserver, the ready line read from its stdout; the first run
     starts that server, once per session as in pytest), the same with the fork server
     stopped before each run (the first fixture of a session: server start, imports and
     fork all inside the clock), the first (only) test of a ``pytest`` run taking
     ``kafka_broker`` (clock from its set-up's start, with the fork server the plugin started
     when it loaded; the test module imports confluent-kafka and kproto's admin client,
     as a user's would), the same with an empty codec cache (``KPROTO_CODEC_CACHE``, the
     first session after an install: every other side finds the generated codecs cached
     by earlier runs, as a developer's machine does), with ``KPROTO_FORK_SERVER=0`` (a fresh
     ``python -m kproto.tools.main serve``, what the fixture ran before the fork server),
     and ``kproto.testing.InProcessBroker.start()`` (the fixtures
     under ``--kproto-in-process``: a thread of this interpreter; its first run pays
     the kproto.server import, once per session as in pytest); Kafka as
     tests/kafka_ref.py starts it (StorageTool format, then ``kafka.Kafka`` in KRaft
     combined mode, until it logs "Kafka Server started"; two JVM starts); tansu 0.6 as
     tests/components.py starts it (a free port, memory storage, wait until the port accepts);
  2. create a one-partition topic with kproto's admin client (what kafka_topic does);
  3. confluent-kafka Producer, acks=all, linger.ms=0: produce one record and wait
     for its delivery report.
The clock runs from before step 1 to the delivery report; the broker is stopped
after the clock stops. Sides rotate, 20 runs each by default; median (min-max).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402

from bench.common import Report, alternate, cell, check_runs, kafka_broker, kafka_version, ratio, table  # noqa: E402
from kproto.client.admin import Admin, NewTopic  # noqa: E402
from kproto.client.transport import BrokerClient  # noqa: E402
from kproto.testing import FIXTURE_DEFAULTS, Broker, InProcessBroker, forkserver  # noqa: E402
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


def run_first_of_session(tmp: Path) -> dict:
    forkserver.stop()
    return run_kproto(tmp)


#: The pytest session side: a one-test project whose test takes ``kafka_broker``; its
#: conftest notes when the test's set-up (the fixture call) starts.
_SESSION_CONFTEST = """
import time
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item.config.stash.setdefault(T0, time.perf_counter())
    yield

T0 = pytest.StashKey[float]()
"""
_SESSION_TEST = """
import json, os, time
from bench.bench_fixture import first_ack
import conftest

def test_first_ack(request, kafka_broker):
    marks = {"t0": request.config.stash[conftest.T0], "ready": time.perf_counter()}
    first_ack(kafka_broker.bootstrap_servers, marks)
    with open(os.environ["BENCH_MARKS"], "w") as out:
        json.dump(marks, out)
"""


def run_pytest_session(tmp: Path, cold_codecs: bool = False) -> dict:
    (tmp / "conftest.py").write_text(_SESSION_CONFTEST)
    (tmp / "test_first.py").write_text(_SESSION_TEST)
    marks = tmp / "marks.json"
    env = {**os.environ, "BENCH_MARKS": str(marks),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if cold_codecs:     # an empty codec cache: the first session after installing (or upgrading) kproto
        env["KPROTO_CODEC_CACHE"] = str(tmp / "codecs")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp),
                           str(tmp / "test_first.py")], cwd=tmp, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(marks.read_text())


def run_fresh_interpreter(tmp: Path) -> dict:
    os.environ["KPROTO_FORK_SERVER"] = "0"
    try:
        return run_kproto(tmp)
    finally:
        del os.environ["KPROTO_FORK_SERVER"]


def run_kafka(tmp: Path) -> dict:
    marks = {"t0": time.perf_counter()}
    with kafka_broker(tmp) as bootstrap:
        marks["ready"] = time.perf_counter()
        first_ack(bootstrap, marks)
    return marks


def run_tansu(tmp: Path) -> dict:
    marks = {"t0": time.perf_counter()}
    with components.tansu(tmp) as bootstrap:
        marks["ready"] = time.perf_counter()
        first_ack(bootstrap, marks)
    return marks


def in_tmp(side) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-fixture-") as tmp:
        return side(Path(tmp))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="5 runs: check the script works")
    args = ap.parse_args()
    if args.quick:
        args.runs = 5
    check_runs(args.runs)
    # kproto as installed: with its bytecode cache (pip writes it for site-packages;
    # an editable install under PYTHONDONTWRITEBYTECODE=1 would compile every start).
    import compileall
    compileall.compile_dir(str(ROOT / "kproto"), quiet=1)
    kafka = f"Apache Kafka {kafka_version()} (anchor)"
    sides = {kafka: run_kafka, "tansu 0.6": run_tansu, "kproto (kafka_broker fixture)": run_kproto,
             "kproto (kafka_broker fixture), first of a session": run_first_of_session,
             "kproto (kafka_broker fixture), first of a pytest session": run_pytest_session,
             "kproto (kafka_broker fixture), first of a pytest session, empty codec cache":
                 lambda tmp: run_pytest_session(tmp, cold_codecs=True),
             "kproto serve child, fresh interpreter (KPROTO_FORK_SERVER=0)": run_fresh_interpreter,
             "kproto in-process (--kproto-in-process)": lambda tmp: run_kproto(tmp, InProcessBroker)}
    report = Report("bench_fixture", "Test fixture start-up: kproto's kafka_broker vs Apache Kafka and tansu",
                    args.quick)
    results = alternate({name: (lambda s=side: in_tmp(s)) for name, side in sides.items()}, args.runs)
    rows = []
    for name, runs in results.items():
        cols = [cell([1000 * (r[mark] - r["t0"]) for r in runs], "{:,.0f}") for mark in ("ready", "topic", "ack")]
        total = [r["ack"] - r["t0"] for r in runs]
        rows.append([name, *cols, ratio(total, [r["ack"] - r["t0"] for r in results[kafka]]),
                     ratio(total, [r["ack"] - r["t0"] for r in results["tansu 0.6"]])])
    report.add(f"Fixture call to first acknowledged record, ms, median (min-max) of {args.runs} runs per side "
               "rotating the sides; each column cumulative from the start. Lower is better. The fixture's and "
               "the in-process side's first runs pay the fork server's start and the kproto.server import, "
               "once per session as in pytest; the 'first of a session' side pays them every run.")
    report.add(table(["side", "started", "+ topic created", "+ first record acked (total)", "total vs Kafka",
                      "total vs tansu"], rows))
    report.write()


if __name__ == "__main__":
    main()
