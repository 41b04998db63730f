"""Broker bench: confluent-kafka producing then consuming against `kproto serve`,
Apache Kafka 4.4 (the anchor) and tansu, >= 5 runs rotating the brokers.

    python bench/bench_broker.py [--messages 200000] [--sizes 100,1024] [--acks all,1]
                                 [--brokers kafka,tansu,kproto] [--runs 5] [--quick]

Each run: a fresh broker process, warmed up first by --warmup values produced
and consumed on another topic (untimed: Kafka's JIT, kproto's first imports),
then a 3-partition topic, one producer (acks as given, linger.ms=5, no
compression) sending --messages values, flushed; then one consumer (assign mode,
from the start) reading them all. Same storage medium on
every side: tansu keeps its log in memory (memory://), kproto and Kafka write
their segment files to a directory on tmpfs (/dev/shm), so none waits on a disk.
Kafka is tests/kafka_ref.py's KRaft broker (combined broker+controller, one JVM,
-Xmx512m -XX:+UseSerialGC). Reported: MB/s for each phase, the broker's CPU
seconds per phase (user+sys, psutil) and its peak RSS (the whole JVM process for
Kafka), median (min-max), and kproto's ratios of the medians to each peer.
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
    Report, alternate, broker_pid, cell, check_runs, cpu_seconds, kafka_broker, kafka_version, ratio, table,
)
from tests import components  # noqa: E402

PARTITIONS = 3


@contextlib.contextmanager
def start(kind: str, workdir: Path):
    """(broker pid, bootstrap) of a fresh broker; kproto's data on ``workdir``."""
    if kind == "kproto":
        broker = components.kproto_broker(workdir, data_dir=workdir / "data")
    elif kind == "kafka":
        broker = kafka_broker(workdir)
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


def run_one(kind: str, n: int, size: int, acks: str = "all", warmup: int = 0) -> dict:
    shm = Path("/dev/shm")
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-", dir=shm if shm.is_dir() else None))
    with start(kind, workdir) as (pid, bootstrap):
        sampler = Sampler(pid)
        sampler.start()
        try:
            return measure(kind, pid, bootstrap, n, size, sampler, acks=acks, warmup=warmup)
        finally:
            sampler.stop = True
            shutil.rmtree(workdir, ignore_errors=True)


def produce(conf: dict, acks: str, topic: str, n: int, value: bytes) -> None:
    """``n`` values round-robin over the partitions, flushed."""
    producer = Producer({**conf, "acks": acks, "linger.ms": 5,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                         "queue.buffering.max.kbytes": 1_048_576})
    for i in range(n):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0


def consume(kind: str, conf: dict, topic: str, n: int) -> None:
    """Read ``n`` records of ``topic`` from the start (assign mode)."""
    consumer = Consumer({**conf, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    deadline = time.perf_counter() + 300
    while got < n and time.perf_counter() < deadline:
        # never ask for more than is left: consume() would wait out its timeout for the rest
        for m in consumer.consume(min(10000, n - got), 1.0):
            if m.error() is None:
                got += 1
    consumer.close()
    if got != n:
        raise SystemExit(f"{kind}: consumed {got} of {n} from {topic}")


def measure(kind: str, pid: int, bootstrap: str, n: int, size: int, sampler: "Sampler",
            conf: dict | None = None, acks: str = "all", warmup: int = 0) -> dict:
    """``conf``: client security settings (bench_tls.py); the topics are created on ``bootstrap``.
    ``warmup``: that many values produced and consumed on another topic first, untimed (a JVM's
    JIT, kproto's first imports and caches), the same on every broker."""
    topics = ["bench", "warmup"] if warmup else ["bench"]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic, future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics]).items():
        future.result(30)
    conf = conf or {"bootstrap.servers": bootstrap}
    time.sleep(0.5)
    value = os.urandom(size)
    if warmup:
        produce(conf, acks, "warmup", warmup, value)
        consume(kind, conf, "warmup", warmup)
    cpu0 = cpu_seconds(pid)
    t0 = time.perf_counter()
    produce(conf, acks, "bench", n, value)
    produce_s = time.perf_counter() - t0
    cpu1 = cpu_seconds(pid)
    t0 = time.perf_counter()
    consume(kind, conf, "bench", n)
    consume_s = time.perf_counter() - t0
    cpu2 = cpu_seconds(pid)
    mb = n * size / 1e6
    return {"produce_mbs": mb / produce_s, "produce_msgs": n / produce_s,
            "consume_mbs": mb / consume_s, "consume_msgs": n / consume_s,
            "cpu_produce": cpu1 - cpu0, "cpu_consume": cpu2 - cpu1, "rss_mib": sampler.peak / 2**20}


NAMES = {"kafka": f"Apache Kafka {kafka_version()}", "tansu": "tansu 0.6", "kproto": "kproto"}
METRICS = [("produce_mbs", "produce MB/s", "{:.1f}"), ("consume_mbs", "consume MB/s", "{:.1f}"),
           ("cpu_produce", "broker CPU s, produce", "{:.2f}"), ("cpu_consume", "broker CPU s, consume", "{:.2f}"),
           ("rss_mib", "broker peak RSS MiB", "{:.0f}")]


def issue29(runs: dict[str, list[dict]]) -> str:
    """Issue 29's target for one setting: >= 1.0x Kafka's MB/s (both phases) at <= 0.25x its peak RSS."""
    import statistics

    def med(kind: str, metric: str) -> float:
        return statistics.median(r[metric] for r in runs[kind])
    got = {m: med("kproto", m) / med("kafka", m) for m in ("produce_mbs", "consume_mbs", "rss_mib")}
    met = got["produce_mbs"] >= 1.0 and got["consume_mbs"] >= 1.0 and got["rss_mib"] <= 0.25
    return (f"{'met' if met else 'not met'}: produce {got['produce_mbs']:.2f}x, consume {got['consume_mbs']:.2f}x "
            f"Kafka's MB/s at {got['rss_mib']:.2f}x its peak RSS")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--acks", default="all,1", help="producer acks settings, each a row group")
    ap.add_argument("--brokers", default="kafka,tansu,kproto", help="the first is the anchor")
    ap.add_argument("--warmup", type=int, default=50_000,
                    help="values produced and consumed on another topic before the timed phases, every broker")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="20,000 messages of 1 KiB: check the script works")
    args = ap.parse_args()
    check_runs(args.runs)
    if args.quick:
        args.messages, args.sizes, args.warmup = 20_000, "1024", 5_000
    kinds = args.brokers.split(",")
    anchor, peers = kinds[0], [k for k in kinds if k != "kproto"]
    report = Report("bench_broker", "Broker: kproto serve vs " + " and ".join(NAMES[k] for k in peers)
                    + ", confluent-kafka produce then consume", args.quick)
    rows, verdicts = [], []
    for size in (int(s) for s in args.sizes.split(",")):
        for acks in args.acks.split(","):
            runs = alternate({k: (lambda k=k: run_one(k, args.messages, size, acks, args.warmup)) for k in kinds},
                             args.runs)
            for metric, label, fmt in METRICS:
                values = {k: [r[metric] for r in runs[k]] for k in kinds}
                rows.append([str(size), acks, label, *(cell(values[k], fmt) for k in kinds),
                             *(ratio(values["kproto"], values[p]) for p in peers)])
            if "kafka" in kinds and size == 1024:
                verdicts.append(f"- 1 KiB, acks={acks}: " + issue29(runs))
            print(f"{size} B acks={acks}: done", file=sys.stderr, flush=True)
    report.add(f"{args.messages:,} messages per run, {PARTITIONS} partitions, linger.ms=5, no compression, acks as "
               f"in the row; one confluent-kafka producer then one consumer; a fresh broker each run, first "
               f"warmed up by {args.warmup:,} values of the same size produced and consumed on another topic "
               f"(untimed; its CPU is not counted, its memory is in the peak RSS); median "
               f"(min-max) of {args.runs} runs rotating the brokers. tansu 0.6 in memory mode; kproto and Kafka "
               "writing segment files on tmpfs; Kafka {v} in KRaft combined mode, one JVM (-Xmx512m "
               "-XX:+UseSerialGC; Kafka's own kafka-server-start.sh would give -Xmx1G -Xms1G and G1), its peak RSS "
               "the whole JVM. Higher MB/s is better, lower CPU and RSS are better.".format(v=kafka_version()))
    header = ["value bytes", "acks", "metric", *(NAMES[k] + (" (anchor)" if k == anchor else "") for k in kinds),
              *(f"kproto / {NAMES[p]}" for p in peers)]
    report.add(table(header, rows, right=3))
    if verdicts:
        report.add("Issue 29's target, kproto >= 1.0x Kafka's MB/s at <= 0.25x its peak RSS (medians):\n\n"
                   + "\n".join(verdicts))
    report.write()


if __name__ == "__main__":
    main()
