"""Cluster bench: kproto's 3-node cluster vs Apache Kafka 4.4's 3 nodes (the anchor):
produce at acks=all with replication factor 3 and 1, consume, and failover time.

    python bench/bench_cluster.py [--messages 20000] [--size 1024] [--runs 5] [--quick]

Each run: a fresh cluster, laid out alike on both sides (node 1 broker and the one
controller, nodes 2-3 brokers: kproto.testing.Cluster and tests/kafka_ref.py KafkaCluster,
each Kafka node -Xmx256m -XX:+UseSerialGC, the same session/lag settings), data dirs on
tmpfs (/dev/shm). Warm-up: --warmup values produced and consumed on another topic,
untimed. Then confluent-kafka, linger.ms=5, no compression: --messages values to a
3-partition topic of replication factor 3 (min.insync.replicas=2, acks=all, placed by
each controller), the same to one of replication factor 1 (acks=all), then one consumer reading the RF 3 topic from the start. Failover:
an idempotent acks=all producer sends to partition 0 of a topic placed [2, 3, 1]
(leader node 2) one value every 2 ms; once 200 are acknowledged node 2 is SIGKILLed;
the failover time is from the kill to the first delivery report, after it, of a value
sent after it (NOT_LEADER/disconnect, metadata refresh, the controller fencing node 2
after broker.session.timeout.ms=3 s, the new leader's first acks=all answer).
Reported: median (min-max) of the runs, alternating which cluster goes first.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from confluent_kafka import Producer  # noqa: E402

from bench.bench_broker import PARTITIONS, consume, produce  # noqa: E402
from bench.common import Report, alternate, cell, check_runs, kafka_version, ratio, table  # noqa: E402
from tests.helpers import create_in_cluster  # noqa: E402



@contextlib.contextmanager
def start(kind: str, workdir: Path):
    """A fresh 3-node cluster of ``kind`` under ``workdir``."""
    if kind == "kproto":
        from kproto.testing import Cluster
        with Cluster(brokers=3, data_dir=workdir / "kproto") as c:
            yield c
        return
    from tests.kafka_ref import KafkaUnavailable, reference
    try:
        with reference(workdir / "kafka-ref").cluster(workdir / "kafka") as c:
            yield c
    except KafkaUnavailable as e:
        raise SystemExit(f"Apache Kafka unavailable (make kafka fetches it): {e}") from e


def timed(phase, *args) -> float:
    """Seconds bench_broker's ``produce`` or ``consume`` took (acks=all, linger.ms=5; assign mode)."""
    t0 = time.perf_counter()
    phase(*args)
    return time.perf_counter() - t0


def failover(cluster) -> float:
    """Seconds from SIGKILL of the leader of fo-0 (node 2) to the first acknowledgement of a
    value sent after the kill."""
    killed_at: list[float] = []
    first_after: list[float] = []
    acked = threading.Event()
    done = threading.Event()
    count = [0]
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 0, "message.timeout.ms": 120000, "topic.metadata.refresh.interval.ms": 500})

    def delivered(err, m, sent_at: float) -> None:
        if err is not None:
            raise SystemExit(f"failover: delivery failed: {err}")
        count[0] += 1
        if count[0] >= 200:
            acked.set()
        if killed_at and sent_at > killed_at[0] and not first_after:
            first_after.append(time.perf_counter())
            done.set()

    deadline = time.perf_counter() + 180
    while not done.is_set():
        if time.perf_counter() > deadline:
            raise SystemExit("failover: no acknowledgement within 180 s of the kill")
        sent_at = time.perf_counter()
        p.produce("fo", value=b"x" * 100, partition=0, on_delivery=lambda e, m, s=sent_at: delivered(e, m, s))
        p.poll(0.002)
        if acked.is_set() and not killed_at:
            cluster.kill(2)
            killed_at.append(time.perf_counter())
    p.flush(120)
    return first_after[0] - killed_at[0]


def run_one(kind: str, n: int, size: int, warmup: int) -> dict:
    shm = Path("/dev/shm")
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-cluster-{kind}-", dir=shm if shm.is_dir() else None))
    try:
        with start(kind, workdir) as cluster:
            bootstrap = cluster.bootstrap_servers
            create_in_cluster(cluster, "rf3", partitions=PARTITIONS, replication=3, min_insync_replicas=2)
            create_in_cluster(cluster, "rf1", partitions=PARTITIONS, replication=1)
            create_in_cluster(cluster, "warmup", partitions=PARTITIONS, replication=3)
            create_in_cluster(cluster, "fo", [[2, 3, 1]], min_insync_replicas=2)
            value = os.urandom(size)
            conf = {"bootstrap.servers": bootstrap}
            produce(conf, "all", "warmup", warmup, value)
            consume(kind, conf, "warmup", warmup)
            mb = n * size / 1e6
            out = {"rf3_mbs": mb / timed(produce, conf, "all", "rf3", n, value),
                   "rf1_mbs": mb / timed(produce, conf, "all", "rf1", n, value),
                   "consume_mbs": mb / timed(consume, kind, conf, "rf3", n),
                   "failover_s": failover(cluster)}
            print(f"{kind}: " + ", ".join(f"{k} {v:.2f}" for k, v in out.items()), file=sys.stderr, flush=True)
            return out
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


METRICS = [("rf3_mbs", "produce MB/s, acks=all, RF 3 (min.insync.replicas=2)", "{:.1f}"),
           ("rf1_mbs", "produce MB/s, acks=all, RF 1", "{:.1f}"),
           ("consume_mbs", "consume MB/s (the RF 3 topic, from its leaders)", "{:.1f}"),
           ("failover_s", "failover s: leader SIGKILL to the next acknowledged value", "{:.2f}")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=5_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2,000 messages: check the script works")
    args = ap.parse_args()
    check_runs(args.runs)
    if args.quick:
        args.messages, args.warmup = 2_000, 500
    kafka = f"Apache Kafka {kafka_version()}"
    report = Report("bench_cluster", f"Cluster: kproto's 3 nodes vs {kafka}'s 3 nodes: replicated produce, "
                                     "consume, failover", args.quick)
    runs = alternate({k: (lambda k=k: run_one(k, args.messages, args.size, args.warmup))
                      for k in ("kafka", "kproto")}, args.runs)
    rows = []
    for metric, label, fmt in METRICS:
        values = {k: [r[metric] for r in runs[k]] for k in runs}
        rows.append([label, cell(values["kafka"], fmt), cell(values["kproto"], fmt),
                     ratio(values["kproto"], values["kafka"])])
    report.add(f"{args.messages:,} values of {args.size} B per phase, {PARTITIONS} partitions, one confluent-kafka "
               f"producer (linger.ms=5, no compression) then one consumer; a fresh cluster each run, warmed up "
               f"by {args.warmup:,} values produced and consumed untimed; median (min-max) of {args.runs} runs "
               "alternating the clusters. Both: node 1 broker+controller (the one voter), nodes 2-3 brokers, "
               "broker.session.timeout.ms=3000, replica.lag.time.max.ms=3000, replica.fetch.wait.max.ms=200, "
               "data on tmpfs; Kafka's nodes -Xmx256m -XX:+UseSerialGC each. Failover: an idempotent acks=all "
               "producer sending a 100 B value every ~2 ms to a partition led by node 2, SIGKILLed after 200 "
               "acknowledgements; the time from the kill to the first acknowledgement of a value sent after it. "
               "Higher MB/s, lower seconds are better.")
    report.add(table(["metric", f"{kafka} (anchor)", "kproto", f"kproto / {kafka}"], rows))
    report.write()


if __name__ == "__main__":
    main()
