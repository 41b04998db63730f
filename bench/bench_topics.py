"""Benchmark: `kproto topics --describe` against a kafka-python KafkaAdminClient
script printing the same lines, on one broker with 200 topics x 6 partitions,
plus the cold start of `kproto --help`.

Every timed run is a fresh subprocess (cold start included), as a user types
it; both sides run with their bytecode caches written first, as an install has. Usage: .venv/bin/python bench/bench_topics.py [--broker kproto|tansu] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tests import components  # noqa: E402

VENV_BIN = Path(sys.executable).parent
TOPICS, PARTITIONS = 200, 6

# The peer: kafka-python 3.0's admin client, printing kafka-topics' describe lines.
PEER = r'''
import base64, sys, uuid
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], client_id="bench")
topics = sorted(t["name"] for t in admin.describe_topics())
described = {t["name"]: t for t in admin.describe_topics(topics)}
configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in topics])
configs = configs.get("topic", {})
out = []
for name in topics:
    t = described[name]
    parts = sorted(t["partitions"], key=lambda p: p["partition_index"])
    conf = ",".join(f"{k}={v['value']}" for k, v in (configs.get(name) or {}).items())
    tid = base64.urlsafe_b64encode(uuid.UUID(t["topic_id"]).bytes).decode().rstrip("=")
    out.append(f"Topic: {name}\tTopicId: {tid}\tPartitionCount: {len(parts)}\tReplicationFactor: "
               f"{len(parts[0]['replica_nodes'])}\tConfigs: {conf}")
    for p in parts:
        out.append(f"\tTopic: {name}\tPartition: {p['partition_index']}\tLeader: {p['leader_id']}"
                   f"\tReplicas: {','.join(map(str, p['replica_nodes']))}"
                   f"\tIsr: {','.join(map(str, p['isr_nodes']))}\tElr: N/A\tLastKnownElr: N/A")
sys.stdout.write("\n".join(out) + "\n")
admin.close()
'''


def timed(cmd: list[str], runs: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[:3])} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
        out = proc.stdout
    return statistics.median(times), out


def create_topics(bootstrap: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-setup")
    admin.create_topics([NewTopic(f"bench-{i:03d}", PARTITIONS, 1) for i in range(TOPICS)])
    admin.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", choices=["kproto", "tansu"], default="kproto")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    kproto = str(VENV_BIN / "kproto")
    # Both sides as installed: with their bytecode caches (pip writes them for
    # site-packages; an editable kproto and PYTHONDONTWRITEBYTECODE=1 would not).
    import compileall
    import kafka
    for where in (ROOT / "kproto", Path(kafka.__file__).parent):
        compileall.compile_dir(str(where), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        start = components.kproto_broker if args.broker == "kproto" else components.tansu
        with start(Path(tmp)) as bootstrap:
            create_topics(bootstrap)
            peer = Path(tmp) / "peer.py"
            peer.write_text(PEER)
            help_s, _ = timed([kproto, "--help"], args.runs)
            ours_s, ours = timed([kproto, "topics", "--describe", "--bootstrap-server", bootstrap], args.runs)
            peer_s, theirs = timed([sys.executable, str(peer), bootstrap], args.runs)
    ours_lines, peer_lines = ours.count("\n"), theirs.count("\n")
    expected = TOPICS * (PARTITIONS + 1)
    print(f"broker: {args.broker}, {TOPICS} topics x {PARTITIONS} partitions, median of {args.runs} cold runs")
    print(f"lines printed: kproto {ours_lines}, kafka-python {peer_lines} (expected {expected})")
    print()
    print("| what | wall time (s) | ratio | target |")
    print("|---|---|---|---|")
    print(f"| kafka-python KafkaAdminClient script | {peer_s:.3f} | 1.00x | |")
    print(f"| kproto topics --describe | {ours_s:.3f} | {ours_s / peer_s:.2f}x | <= 0.5x |")
    print(f"| kproto --help (cold start) | {help_s:.3f} | | < 0.5 s |")
    ok = ours_s <= 0.5 * peer_s and help_s < 0.5 and ours_lines == expected
    print()
    print("targets met" if ok else "TARGETS NOT MET")


if __name__ == "__main__":
    main()
