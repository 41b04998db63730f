"""Transactional produce bench: confluent-kafka sending 1 KB values in transactions of
100 records against `kproto serve`, Apache Kafka 4.4 (the anchor) and tansu, and the
same records without transactions on each, >= 5 runs rotating the brokers.

    python bench/bench_txn.py [--messages 20000] [--per-txn 100] [--runs 5] [--quick]

Each run: a fresh broker process (kproto's and Kafka's data on tmpfs, tansu in
memory; Kafka as bench_broker.py starts it), a
3-partition topic, one producer (acks=all, linger.ms=5, no compression). The
transactional side calls begin/produce x per-txn/commit until --messages are
sent (each commit waits for the coordinator and its markers); the plain side
produces the same values and flushes once. Before either is timed, --warmup
values go both ways to another topic, untimed, on every broker (a fresh JVM's
JIT would otherwise be in Kafka's figure). Reported: messages/s, median
(min-max), the cost of transactions on each broker (plain / transactional) and
each broker's transactional rate against Kafka's.
A broker that fails a transaction is reported with its error instead.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from confluent_kafka import KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.bench_broker import NAMES, start  # noqa: E402
from bench.common import Report, alternate, cell, check_runs, ratio, table  # noqa: E402

PARTITIONS = 3
SIZE = 1024


def send_plain(p: Producer, topic: str, n: int, value: bytes) -> None:
    for i in range(n):
        p.produce(topic, value=value, partition=i % PARTITIONS)
        if i % 1024 == 0:
            p.poll(0)
    p.flush(60)


def send_transactions(tp: Producer, topic: str, n: int, per_txn: int, value: bytes) -> None:
    for start_at in range(0, n, per_txn):
        tp.begin_transaction()
        for i in range(start_at, min(n, start_at + per_txn)):
            tp.produce(topic, value=value, partition=i % PARTITIONS)
        tp.commit_transaction(30)


def run_one(kind: str, n: int, per_txn: int, warmup: int = 0) -> dict:
    """``warmup``: that many values sent plain and in transactions to another topic first,
    untimed (a JVM's JIT, kproto's first imports), the same on every broker."""
    shm = Path("/dev/shm")
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-txn-{kind}-", dir=shm if shm.is_dir() else None))
    try:
        with start(kind, workdir) as (_, bootstrap):
            admin = AdminClient({"bootstrap.servers": bootstrap})
            for topic in ("plain", "txn", "warmup"):
                admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=10)[topic].result(10)
            value = b"x" * SIZE
            conf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5}
            p = Producer(conf)
            send_plain(p, "warmup", warmup, value)
            t0 = time.perf_counter()
            send_plain(p, "plain", n, value)
            plain = n / (time.perf_counter() - t0)
            try:
                tp = Producer({**conf, "transactional.id": f"bench-{kind}"})
                tp.init_transactions(30)
                send_transactions(tp, "warmup", warmup, per_txn, value)
                t0 = time.perf_counter()
                send_transactions(tp, "txn", n, per_txn, value)
                txn = n / (time.perf_counter() - t0)
            except KafkaException as e:
                return {"plain": plain, "txn": None, "error": str(e.args[0])}
            return {"plain": plain, "txn": txn, "error": None}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--per-txn", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5_000,
                    help="values sent plain and in transactions to another topic first, untimed, every broker")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="a small run that checks the script")
    args = ap.parse_args()
    if args.quick:
        args.messages, args.runs, args.warmup = 2_000, 5, 500
    check_runs(args.runs)
    kinds = ("kafka", "tansu", "kproto")
    report = Report("bench_txn", "Transactional produce: kproto serve vs Apache Kafka and tansu, confluent-kafka",
                    args.quick)
    runs = alternate({k: (lambda k=k: run_one(k, args.messages, args.per_txn, args.warmup)) for k in kinds},
                     args.runs)
    rows = []
    kafka_txn = [r["txn"] for r in runs["kafka"] if r["txn"] is not None]
    for kind in kinds:
        plain = [r["plain"] for r in runs[kind]]
        txn = [r["txn"] for r in runs[kind] if r["txn"] is not None]
        errors = {r["error"] for r in runs[kind] if r["error"]}
        whole = len(txn) == len(plain)
        rows.append([NAMES[kind] + (" (anchor)" if kind == "kafka" else ""), cell(plain, "{:,.0f}"),
                     cell(txn, "{:,.0f}") if whole else "fails: " + "; ".join(sorted(errors)),
                     ratio(plain, txn) if whole else "-",
                     ratio(txn, kafka_txn) if whole and len(kafka_txn) == len(plain) else "-"])
    report.add(f"{args.messages:,} values of {SIZE} bytes, {args.per_txn} per transaction, messages/s, median "
               f"(min-max) of {args.runs} runs rotating the brokers, a fresh broker each run, first warmed up by "
               f"{args.warmup:,} values sent plain and in transactions to another topic (untimed); plain = the same "
               "values without transactions (acks=all, linger.ms=5, one flush).")
    report.add(table(["broker", "plain msg/s", "transactional msg/s", "plain / transactional",
                      "transactional vs Kafka"], rows))
    report.write()


if __name__ == "__main__":
    main()
