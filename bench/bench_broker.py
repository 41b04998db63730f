"""Broker bench: confluent-kafka producing then consuming against `kproto serve`
and tansu (the anchor), >= 5 runs alternating the brokers.

    python bench/bench_broker.py [--messages 200000] [--sizes 100,1024] [--runs 5] [--quick]

Each run: a fresh broker process, a 3-partition topic, one producer (acks=all,
linger.ms=5, no compression) sending --messages values, flushed; then one
consumer (assign mode, from the start) reading them all. Same storage medium on
both sides: tansu keeps its log in memory (memory://), kproto writes its segment
files to a directory on tmpfs (/dev/shm), so neither waits on a disk. Reported:
MB/s for each phase, the broker's CPU seconds per phase (user+sys, psutil) and
its peak RSS, median (min-max), and kproto/tansu ratios of the medians.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.common import (  # noqa: E402
    Report, alternate, broker_pid, cell, check_runs, cpu_seconds, ratio, table,
)
from tests import components  # noqa: E402

PARTITIONS = 3


@contextlib.contextmanager
def start(kind: str, workdir: Path):
    """(broker pid, bootstrap) of a fresh broker; kproto's data on ``workdir``."""
    if kind == "kproto":
        broker = components.kproto_broker(workdir, data_dir=workdir / "data")
    else:
        broker = components.tansu(workdir)
    with broker as bootstrap:
        yield broker_pid(bootstrap), bootstrap


class Sampler(threading.Thread):
    """Peak RSS of the broker process, sampled every 50 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.peak = 0
        self.stop = False

    def run(self) -> None:
        while not self.stop:
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.05)


def run_one(kind: str, n: int, size: int) -> dict:
    shm = Path("/dev/shm")
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-", dir=shm if shm.is_dir() else None))
    with start(kind, workdir) as (pid, bootstrap):
        sampler = Sampler(pid)
        sampler.start()
        try:
            return measure(kind, pid, bootstrap, n, size, sampler)
        finally:
            sampler.stop = True
            shutil.rmtree(workdir, ignore_errors=True)


def measure(kind: str, pid: int, bootstrap: str, n: int, size: int, sampler: "Sampler",
            conf: dict | None = None) -> dict:
    """``conf``: client security settings (bench_tls.py); the topic is created on ``bootstrap``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("bench", PARTITIONS, 1)])["bench"].result(30)
    conf = conf or {"bootstrap.servers": bootstrap}
    time.sleep(0.5)
    value = os.urandom(size)
    producer = Producer({**conf, "acks": "all", "linger.ms": 5,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                         "queue.buffering.max.kbytes": 1_048_576})
    cpu0 = cpu_seconds(pid)
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                producer.produce("bench", value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0
    produce_s = time.perf_counter() - t0
    cpu1 = cpu_seconds(pid)
    consumer = Consumer({**conf, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760})
    consumer.assign([TopicPartition("bench", p, 0) for p in range(PARTITIONS)])
    got = 0
    t0 = time.perf_counter()
    deadline = t0 + 300
    while got < n and time.perf_counter() < deadline:
        for m in consumer.consume(10000, 1.0):
            if m.error() is None:
                got += 1
    consume_s = time.perf_counter() - t0
    cpu2 = cpu_seconds(pid)
    consumer.close()
    if got != n:
        raise SystemExit(f"{kind}: consumed {got} of {n}")
    mb = n * size / 1e6
    return {"produce_mbs": mb / produce_s, "produce_msgs": n / produce_s,
            "consume_mbs": mb / consume_s, "consume_msgs": n / consume_s,
            "cpu_produce": cpu1 - cpu0, "cpu_consume": cpu2 - cpu1, "rss_mib": sampler.peak / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="20,000 messages of 100 B: check the script works")
    args = ap.parse_args()
    check_runs(args.runs)
    if args.quick:
        args.messages, args.sizes = 20_000, "100"
    report = Report("bench_broker", "Broker: kproto serve vs tansu, confluent-kafka produce then consume",
                    args.quick)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        runs = alternate({kind: (lambda k=kind: run_one(k, args.messages, size)) for kind in ("tansu", "kproto")},
                         args.runs)
        for metric, label, fmt in [("produce_mbs", "produce MB/s", "{:.1f}"), ("consume_mbs", "consume MB/s", "{:.1f}"),
                                   ("cpu_produce", "broker CPU s, produce", "{:.2f}"),
                                   ("cpu_consume", "broker CPU s, consume", "{:.2f}"),
                                   ("rss_mib", "broker peak RSS MiB", "{:.0f}")]:
            t = [r[metric] for r in runs["tansu"]]
            k = [r[metric] for r in runs["kproto"]]
            rows.append([str(size), label, cell(t, fmt), cell(k, fmt), ratio(k, t)])
        sys.stdout.flush()
    report.add(f"{args.messages:,} messages per run, {PARTITIONS} partitions, acks=all, linger.ms=5, no "
               f"compression; one confluent-kafka producer then one consumer; a fresh broker each run; median "
               f"(min-max) of {args.runs} runs alternating the brokers. tansu 0.6 in memory mode, kproto "
               "writing segment files on tmpfs. Higher MB/s is better, lower CPU and RSS are better.")
    report.add(table(["value bytes", "metric", "tansu (anchor)", "kproto", "kproto / tansu"], rows, right=2))
    report.write()


if __name__ == "__main__":
    main()
