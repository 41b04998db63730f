"""Console consume bench: `kproto consume` against kcat (the anchor) and Kafka 4.4's
ConsoleConsumer, each printing every value of one topic to /dev/null, on kproto's broker.

    python bench/bench_consume.py [--runs 5] [--records 1000000] [--quick]

1M records of 100 B values (no keys) in 3 partitions, written once; each timed run is a fresh
process reading the topic from the beginning to its end (kproto -e, kcat -e, Kafka's
--max-messages N: it has no end-of-partition exit), as a user types it, JVM start included.
The three print the same lines (checked once, as sorted lines: their partition interleaving
differs). >= 5 runs alternating the sides; median (min-max) of records/s, and the 1-minute
load average at each run's start (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bench.common import Report, alternate, cell, check_runs, ratio, table  # noqa: E402
from tests import components  # noqa: E402

VENV_BIN = Path(sys.executable).parent
TOPIC, PARTITIONS, VALUE_SIZE = "bench-consume", 3, 100


def fill(bootstrap: str, records: int) -> None:
    """``records`` values of VALUE_SIZE letters, round robin over the partitions, 2000 per batch."""
    from kproto.client.admin import Admin, NewTopic
    from kproto.client.data import DataClient
    from kproto.client.transport import BrokerClient
    from kproto.records import NewRecord, build_record_batch
    data = DataClient(BrokerClient(bootstrap))
    try:
        Admin(data.client).create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        per_batch, n = 2000, 0
        while n < records:
            batches = {}
            for p in range(PARTITIONS):
                k = min(per_batch, records - n)
                if k <= 0:
                    break
                batches[(TOPIC, p)] = build_record_batch(
                    [NewRecord(None, (b"%010d" % (n + i)) + b"x" * (VALUE_SIZE - 10), (), None) for i in range(k)])
                n += k
            for tp, r in data.produce(batches).items():
                if r.error:
                    raise SystemExit(f"filling {tp}: {r.error.name}")
    finally:
        data.close()
        data.client.close()


def timed(cmd: list[str], loads: list[float]) -> float:
    loads.append(os.getloadavg()[0])
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, stdout=null, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return elapsed


def sorted_lines(cmd: list[str]) -> list[bytes]:
    proc = subprocess.run(cmd, capture_output=True, check=True)
    return sorted(proc.stdout.splitlines())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="50 000 records: check the script works")
    args = ap.parse_args()
    check_runs(args.runs)
    records = 50_000 if args.quick else args.records
    kcat = components.require_executable("kcat", "apt-get install kcat")
    from tests.kafka_ref import reference
    report = Report("bench_consume", "Console consume: kproto consume vs kcat and Kafka's console consumer",
                    args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        ref = reference(Path(tmp) / "kafka-ref")
        with components.kproto_broker(Path(tmp)) as bootstrap:
            fill(bootstrap, records)
            sides = {
                "kcat": [kcat, "-C", "-b", bootstrap, "-t", TOPIC, "-o", "beginning", "-e", "-q"],
                "kproto": [str(VENV_BIN / "kproto"), "consume", "--bootstrap-server", bootstrap, "--topic", TOPIC,
                           "--from-beginning", "-e"],
                "kafka": ref.tool_command("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
                                          bootstrap, "--topic", TOPIC, "--from-beginning", "--max-messages",
                                          str(records)),
            }
            expected = sorted_lines(sides["kcat"])
            assert len(expected) == records, f"kcat printed {len(expected)} lines"
            for name in ("kproto", "kafka"):
                assert sorted_lines(sides[name]) == expected, f"{name} printed other lines than kcat"
            loads: dict[str, list[float]] = {n: [] for n in sides}
            runs = alternate({n: (lambda n=n: timed(sides[n], loads[n])) for n in sides}, args.runs)
    rate = {n: [records / s for s in v] for n, v in runs.items()}
    labels = {"kcat": "kcat -C -e (anchor)", "kproto": "kproto consume -e",
              "kafka": "Kafka 4.4 ConsoleConsumer --max-messages"}
    rows = [[labels[n], cell(rate[n], "{:,.0f}"), ratio(rate[n], rate["kcat"]), cell(runs[n], "{:.2f}"),
             cell(loads[n], "{:.2f}")] for n in ("kcat", "kproto", "kafka")]
    report.add(f"{records:,} records of {VALUE_SIZE} B values (no keys), {PARTITIONS} partitions on kproto's "
               f"broker; each run a fresh process printing every value, one per line, to /dev/null "
               f"(checked once: the three print the same lines). Median (min-max) of {args.runs} runs "
               "alternating the sides; records/s higher is better; load = 1-minute load average at the "
               "run's start (shared machine).")
    report.add(table(["command", "records/s", "vs kcat", "seconds", "load"], rows))
    report.write()


if __name__ == "__main__":
    main()
