"""TLS cost on kproto's broker: confluent-kafka producing then consuming 1 KB
values over SASL_SSL (SCRAM-SHA-512, TLS 1.3) against PLAINTEXT, alternating runs.

    python bench/bench_tls.py [--messages 100000] [--size 1024] [--runs 5] [--quick]

Each run: a fresh `kproto serve` with both listeners on one data dir on tmpfs,
a 3-partition topic, one producer (acks=all, linger.ms=5, no compression) then
one consumer (assign mode, from the start), both on the listener under test.
PLAINTEXT fetches use sendfile (zero copy); over TLS the records are copied
through user space and encrypted by Python's ssl module (no kTLS). Reported:
MB/s per phase and the broker's CPU seconds per phase, median (min-max), and
SASL_SSL / PLAINTEXT ratios of the medians.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from confluent_kafka.admin import (  # noqa: E402
    AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion,
)

from bench.bench_broker import Sampler, measure  # noqa: E402   the same producer/consumer loop
from bench.common import Report, alternate, broker_pid, cell, check_runs, ratio, table  # noqa: E402
from tests.security_fixtures import secure_broker  # noqa: E402

from bench.bench_broker import PARTITIONS  # noqa: E402
PASSWORD = "bench-Secr3t!"


def client_conf(cluster, listener: str) -> dict:
    conf = {"bootstrap.servers": cluster.bootstrap(listener)}
    if listener == "SASL_SSL":
        conf.update({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "bench",
                     "sasl.password": PASSWORD, "ssl.ca.location": str(cluster.ca)})
    return conf


def run_one(listener: str, n: int, size: int) -> dict:
    shm = Path("/dev/shm")
    workdir = Path(tempfile.mkdtemp(prefix="bench-tls-", dir=shm if shm.is_dir() else None))
    try:
        # no authorizer: the run measures TLS + SASL, not ACL checks
        with secure_broker(workdir, "authorizer.class.name=", "log.retention.check.interval.ms=300000") as cluster:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap("PLAINTEXT")})
            admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "bench", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), PASSWORD.encode())])["bench"].result(30)
            pid = broker_pid(cluster.bootstrap("PLAINTEXT"))
            sampler = Sampler(pid)
            sampler.start()
            try:
                return measure(listener, pid, cluster.bootstrap("PLAINTEXT"), n, size, sampler,
                               client_conf(cluster, listener))
            finally:
                sampler.stop = True
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="10,000 messages: check the script works")
    args = ap.parse_args()
    check_runs(args.runs)
    if args.quick:
        args.messages = 10_000
    report = Report("bench_tls", "TLS on kproto's broker: SASL_SSL vs PLAINTEXT, confluent-kafka produce then consume",
                    args.quick)
    runs = alternate({l: (lambda l=l: run_one(l, args.messages, args.size)) for l in ("PLAINTEXT", "SASL_SSL")},
                     args.runs)
    rows = []
    for metric, label, fmt in [("produce_mbs", "produce MB/s", "{:.1f}"), ("consume_mbs", "consume MB/s", "{:.1f}"),
                               ("cpu_produce", "broker CPU s, produce", "{:.2f}"),
                               ("cpu_consume", "broker CPU s, consume", "{:.2f}")]:
        p = [r[metric] for r in runs["PLAINTEXT"]]
        s = [r[metric] for r in runs["SASL_SSL"]]
        rows.append([label, cell(p, fmt), cell(s, fmt), ratio(s, p)])
    report.add(f"{args.messages:,} messages of {args.size} B per run, {PARTITIONS} partitions, acks=all, linger.ms=5, "
               f"no compression; one confluent-kafka producer then one consumer on the listener under test; a fresh "
               f"broker each run (data on tmpfs); median (min-max) of {args.runs} runs alternating the listeners. "
               "SASL_SSL = SCRAM-SHA-512 over TLS 1.3 (Python ssl, no kTLS: fetches are copied, not sendfile'd).")
    report.add(table(["metric", "PLAINTEXT", "SASL_SSL", "SASL_SSL / PLAINTEXT"], rows, right=3))
    report.write()


if __name__ == "__main__":
    main()
