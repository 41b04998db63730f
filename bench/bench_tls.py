"""TLS cost: confluent-kafka producing then consuming 1 KB values over SASL_SSL
(SCRAM-SHA-512, TLS 1.3) against PLAINTEXT, on kproto's broker and on Apache
Kafka 4.4 (the anchor), rotating runs.

    python bench/bench_tls.py [--messages 100000] [--size 1024] [--runs 5] [--quick]

Each run: a fresh broker with both listeners on one data dir on tmpfs (kproto
serve; Kafka as tests/kafka_ref.py starts it, the same server certificate as
PEM), warmed up by --warmup values produced and consumed on another topic over
the listener under test (untimed), a 3-partition topic, one producer (acks=all, linger.ms=5, no compression)
then one consumer (assign mode, from the start), both on the listener under
test. PLAINTEXT fetches use sendfile (zero copy) on both brokers; over TLS the
records are copied through user space and encrypted (kproto: Python's ssl
module; Kafka: the JDK's SSLEngine; no kTLS on either). Reported: MB/s per
phase, the broker's CPU seconds per phase and its peak RSS, median (min-max),
SASL_SSL / PLAINTEXT ratios of the medians on each broker and kproto / Kafka
on each listener.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from confluent_kafka.admin import (  # noqa: E402
    AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion,
)

from bench.bench_broker import METRICS, Sampler, measure  # noqa: E402   the same producer/consumer loop
from bench.common import (  # noqa: E402
    Report, alternate, broker_pid, cell, check_runs, kafka_reference_broker, kafka_version, ratio, table,
)
from tests.security_fixtures import make_certs, secure_broker  # noqa: E402

from bench.bench_broker import PARTITIONS  # noqa: E402
PASSWORD = "bench-Secr3t!"


def client_conf(cluster, listener: str) -> dict:
    conf = {"bootstrap.servers": cluster.bootstrap(listener)}
    if listener == "SASL_SSL":
        conf.update({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "bench",
                     "sasl.password": PASSWORD, "ssl.ca.location": str(cluster.ca)})
    return conf


class KafkaCluster:
    """Kafka's listeners as tests.security_fixtures.SecureCluster names them (its SASL_SSL listener
    is named SECURE: kafka_ref takes configs with dots as underscores, and listener.name.sasl_ssl.*
    would not survive that)."""

    def __init__(self, ports: dict[str, int], ca: Path) -> None:
        self.ports, self.ca = ports, ca

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports['SECURE' if listener == 'SASL_SSL' else listener]}"


@contextlib.contextmanager
def kafka_secure(workdir: Path):
    """Kafka with a PLAINTEXT and a SASL_SSL listener (SCRAM-SHA-512; the server key as PKCS#8,
    which Kafka's PEM keystore requires: trustme writes SEC1)."""
    from cryptography.hazmat.primitives import serialization
    certs = make_certs(workdir)
    pem = certs["server"].read_bytes()
    key = serialization.load_pem_private_key(pem, None)
    server = workdir / "server-pkcs8.pem"
    chain = pem[pem.index(b"-----BEGIN CERTIFICATE-----"):]
    server.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()) + chain)
    configs = {"listener_name_secure_ssl_keystore_type": "PEM",
               "listener_name_secure_ssl_keystore_location": str(server),
               "listener_name_secure_sasl_enabled_mechanisms": "SCRAM-SHA-512",
               "listener_name_secure_scram-sha-512_sasl_jaas_config":
                   "org.apache.kafka.common.security.scram.ScramLoginModule required;"}
    with kafka_reference_broker(workdir, listeners={"SECURE": "SASL_SSL"}, **configs) as broker:
        yield KafkaCluster(broker.ports, certs["ca"])


def run_one(kind: str, listener: str, n: int, size: int, warmup: int = 0) -> dict:
    shm = Path("/dev/shm")
    workdir = Path(tempfile.mkdtemp(prefix="bench-tls-", dir=shm if shm.is_dir() else None))
    try:
        # no authorizer: the run measures TLS + SASL, not ACL checks
        broker = (secure_broker(workdir, "authorizer.class.name=", "log.retention.check.interval.ms=300000")
                  if kind == "kproto" else kafka_secure(workdir))
        with broker as cluster:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap("PLAINTEXT")})
            admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "bench", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), PASSWORD.encode())])["bench"].result(30)
            pid = broker_pid(cluster.bootstrap("PLAINTEXT"))
            sampler = Sampler(pid)
            sampler.start()
            try:
                return measure(listener, pid, cluster.bootstrap("PLAINTEXT"), n, size, sampler,
                               client_conf(cluster, listener), warmup=warmup)
            finally:
                sampler.stop = True
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=20_000,
                    help="values produced and consumed on another topic (same listener) first, untimed")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="10,000 messages: check the script works")
    args = ap.parse_args()
    check_runs(args.runs)
    if args.quick:
        args.messages, args.warmup = 10_000, 2_000
    report = Report("bench_tls", "TLS: SASL_SSL vs PLAINTEXT on kproto's broker and on Apache Kafka, "
                    "confluent-kafka produce then consume", args.quick)
    sides = [(k, listener) for k in ("kafka", "kproto") for listener in ("PLAINTEXT", "SASL_SSL")]
    runs = alternate({side: (lambda s=side: run_one(*s, args.messages, args.size, args.warmup)) for side in sides},
                     args.runs)
    rows = []
    for metric, label, fmt in METRICS:
        v = {side: [r[metric] for r in runs[side]] for side in sides}
        rows.append([label, *(cell(v[side], fmt) for side in sides),
                     ratio(v["kafka", "SASL_SSL"], v["kafka", "PLAINTEXT"]),
                     ratio(v["kproto", "SASL_SSL"], v["kproto", "PLAINTEXT"]),
                     ratio(v["kproto", "PLAINTEXT"], v["kafka", "PLAINTEXT"]),
                     ratio(v["kproto", "SASL_SSL"], v["kafka", "SASL_SSL"])])
    report.add(f"{args.messages:,} messages of {args.size} B per run, {PARTITIONS} partitions, acks=all, linger.ms=5, "
               f"no compression; one confluent-kafka producer then one consumer on the listener under test; a fresh "
               f"broker each run (data on tmpfs), first warmed up by {args.warmup:,} values produced and consumed on another "
               f"topic over the same listener (untimed); median (min-max) of {args.runs} runs rotating the four sides. "
               "SASL_SSL = SCRAM-SHA-512 over TLS 1.3 (kproto: Python ssl; Kafka {v}: the JDK's SSLEngine, "
               "-Xmx512m -XX:+UseSerialGC; no kTLS on either: fetches are copied, not sendfile'd).".format(
                   v=kafka_version()))
    report.add(table(["metric", "Kafka PLAINTEXT (anchor)", "Kafka SASL_SSL", "kproto PLAINTEXT", "kproto SASL_SSL",
                      "Kafka SASL_SSL / PLAINTEXT", "kproto SASL_SSL / PLAINTEXT", "kproto / Kafka, PLAINTEXT",
                      "kproto / Kafka, SASL_SSL"], rows))
    report.write()


if __name__ == "__main__":
    main()
