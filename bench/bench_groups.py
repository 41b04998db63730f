"""Join latency: a new confluent-kafka consumer's subscribe() to its first record,
kproto vs tansu, in one run.

    .venv/bin/python bench/bench_groups.py [--trials 3]

Each trial is a fresh group on a topic that already holds records, so the
time is FindCoordinator + JoinGroup (with the broker's default
group.initial.rebalance.delay.ms, 3 s on kproto as on Kafka) + SyncGroup +
OffsetFetch + the first Fetch. Both brokers run with their defaults.
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

from confluent_kafka import Consumer, Producer  # noqa: E402

from kproto.client.admin import Admin, NewTopic  # noqa: E402
from kproto.client.transport import BrokerClient  # noqa: E402
from tests import components  # noqa: E402

TOPIC = "join-latency"


def prepare(bootstrap: str) -> None:
    with BrokerClient(bootstrap) as client:
        Admin(client).create_topics([NewTopic(TOPIC, 3, 1)])
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(100):
        p.produce(TOPIC, value=b"x%d" % i)
    if p.flush(30):
        raise SystemExit("produce did not complete")


def join_latency(bootstrap: str, group: str, timeout: float = 120) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "session.timeout.ms": 10000})
    t0 = time.perf_counter()
    c.subscribe([TOPIC])
    try:
        while time.perf_counter() - t0 < timeout:
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                return time.perf_counter() - t0
        raise SystemExit(f"no record within {timeout}s on {bootstrap}")
    finally:
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    results = {}
    for kind in ("kproto", "tansu"):
        with tempfile.TemporaryDirectory() as tmp:
            start = components.kproto_broker if kind == "kproto" else components.tansu
            with start(Path(tmp)) as bootstrap:
                prepare(bootstrap)
                results[kind] = [join_latency(bootstrap, f"bench-{kind}-{i}") for i in range(args.trials)]
    k, t = statistics.median(results["kproto"]), statistics.median(results["tansu"])
    print(f"subscribe -> first record, new group, median of {args.trials} (s)\n")
    print("| broker | trials (s) | median (s) |")
    print("|---|---|---:|")
    for kind, times in results.items():
        print(f"| {kind} | {', '.join(f'{x:.2f}' for x in times)} | {statistics.median(times):.2f} |")
    print(f"\nkproto/tansu: {k / t:.2f}x (target <= 0.2x)")
    print("target met" if k <= 0.2 * t else "TARGET NOT MET")


if __name__ == "__main__":
    main()
