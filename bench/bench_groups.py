"""Join latency: a new confluent-kafka consumer's subscribe() to its first record,
kproto vs tansu, in one run.

    .venv/bin/python bench/bench_groups.py [--trials 3]

Each trial is a fresh group on a topic that already holds records, so the
time is FindCoordinator + JoinGroup + SyncGroup + OffsetFetch + the first
Fetch. kproto runs twice: with Kafka's default group.initial.rebalance.delay.ms
(3 s: a new group waits that long for more members, by design) and with 0,
as Kafka's shipped config/server.properties and `make serve` set it. tansu runs with its
defaults.
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
    brokers = {
        "kproto (Kafka's default group.initial.rebalance.delay.ms=3000)": lambda tmp: components.kproto_broker(tmp),
        "kproto as `make serve` runs it (group.initial.rebalance.delay.ms=0)":
            lambda tmp: components.kproto_broker(tmp, "group.initial.rebalance.delay.ms=0"),
        "tansu": components.tansu,
    }
    results = {}
    for kind, start in brokers.items():
        with tempfile.TemporaryDirectory() as tmp:
            with start(Path(tmp)) as bootstrap:
                prepare(bootstrap)
                results[kind] = [join_latency(bootstrap, f"bench-{i}") for i in range(args.trials)]
    tansu = statistics.median(results["tansu"])
    print(f"subscribe -> first record, new group, median of {args.trials} (s)\n")
    print("| broker | trials (s) | median (s) | vs tansu |")
    print("|---|---|---:|---:|")
    for kind, times in results.items():
        m = statistics.median(times)
        print(f"| {kind} | {', '.join(f'{x:.2f}' for x in times)} | {m:.2f} | {m / tansu:.2f}x |")
    print("\ntarget: <= 0.2x tansu")


if __name__ == "__main__":
    main()
