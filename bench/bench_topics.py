"""Tools bench: `kproto topics --describe` against a kafka-python KafkaAdminClient
script printing the same lines (the anchor), on a broker with 200 topics x 6
partitions, plus the cold start of `kproto --help`.

    python bench/bench_topics.py [--brokers kproto,kafka,tansu] [--runs 5] [--quick]

The brokers: kproto serve, Apache Kafka 4.4 (tests/kafka_ref.py's KRaft broker)
and tansu 0.6; the clients are timed, each broker only answers.

Every timed run is a fresh subprocess (cold start included), as a user types it;
both sides run with their bytecode caches written first, as an install has;
>= 5 runs alternating the two sides, median (min-max).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bench.common import Report, alternate, cell, check_runs, kafka_broker, ratio, table  # noqa: E402
from tests import components  # noqa: E402

VENV_BIN = Path(sys.executable).parent
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"      # what bin/kafka-topics.sh runs
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


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return elapsed, proc.stdout


def create_topics(bootstrap: str, topics: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-setup")
    admin.create_topics([NewTopic(f"bench-{i:03d}", PARTITIONS, 1) for i in range(topics)])
    admin.close()


def describe_lines(text: str, configs: bool = True) -> list[str]:
    """The lines both print, TopicId masked (random per topic), the ELR columns
    masked (the peer reads Metadata, which has no ELR: it prints N/A, as
    kafka-topics.sh does against a broker without DescribeTopicPartitions; Kafka
    4.4 answers that API with empty lists, which kproto prints as kafka-topics.sh
    does) and sorted (the order of topics is each Admin's HashMap order)."""
    import re
    lines = [re.sub(r"\tElr: .*", "", re.sub(r"\tTopicId: \S+", "", line)) for line in text.splitlines()]
    if not configs:     # ``Configs:`` masked too
        lines = [re.sub(r"\tConfigs: .*", "", line) for line in lines]
    return sorted(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", default="kproto,kafka,tansu")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="20 topics: check the script works")
    args = ap.parse_args()
    check_runs(args.runs)
    topics = 20 if args.quick else TOPICS
    kproto = str(VENV_BIN / "kproto")
    # Both sides as installed: with their bytecode caches (pip writes them for
    # site-packages; an editable kproto and PYTHONDONTWRITEBYTECODE=1 would not).
    import compileall
    import kafka
    for where in (ROOT / "kproto", Path(kafka.__file__).parent):
        compileall.compile_dir(str(where), quiet=1)
    from tests.kafka_ref import reference
    kafka_tool = reference(ROOT / "bench" / "out" / "kafka-ref")
    report = Report("bench_topics", "Tools: kproto topics --describe vs kafka-python's admin client and "
                    "Kafka's kafka-topics.sh", args.quick)
    rows = []
    for broker in args.brokers.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            start = {"kproto": components.kproto_broker, "kafka": kafka_broker, "tansu": components.tansu}[broker]
            with start(Path(tmp)) as bootstrap:
                create_topics(bootstrap, topics)
                peer = Path(tmp) / "peer.py"
                peer.write_text(PEER)
                ours_cmd = [kproto, "topics", "--describe", "--bootstrap-server", bootstrap]
                peer_cmd = [sys.executable, str(peer), bootstrap]
                ours, theirs = timed(ours_cmd)[1], timed(peer_cmd)[1]
                expected = topics * (PARTITIONS + 1)
                # tansu reports configs the peer prints and Kafka's tool does not; Kafka reports
                # min.insync.replicas from its static broker config, which kafka-topics.sh and kproto
                # print and the peer's config filter drops: Configs masked there
                if broker != "tansu":
                    assert describe_lines(ours, broker == "kproto") == describe_lines(theirs, broker == "kproto"), \
                        "the two print different lines"
                assert ours.count("\n") == expected and theirs.count("\n") == expected
                sides = {"peer": lambda: timed(peer_cmd)[0], "kproto": lambda: timed(ours_cmd)[0],
                         "help": lambda: timed([kproto, "--help"])[0]}
                # Kafka's own tool, a JVM per run: the same lines as kproto's, Configs included
                tool_cmd = kafka_tool.tool_command(TOPIC_COMMAND, "--describe", "--bootstrap-server", bootstrap)
                tool_failed, tool_note = "", ""
                try:
                    tool = timed(tool_cmd)[1]
                    sides["kafka-topics"] = lambda: timed(tool_cmd)[0]
                    if describe_lines(tool) != describe_lines(ours):
                        # e.g. tansu answers ListPartitionReassignments for every partition: Kafka's
                        # tool then prints Adding/Removing Replicas columns
                        tool_note = "; its lines differ from kproto's on this broker"
                        assert broker == "tansu", f"{TOPIC_COMMAND} and kproto print different lines"
                except SystemExit as e:
                    tool_failed = f"fails: {str(e)[-200:]}"
                runs = alternate(sides, args.runs)
        rows.append([broker, "kafka-python KafkaAdminClient script (anchor)", cell(runs["peer"], "{:.3f}"), "1.00x"])
        rows.append([broker, f"kafka-topics.sh (Kafka's TopicCommand, run_tool's JVM{tool_note})",
                     tool_failed or cell(runs["kafka-topics"], "{:.3f}"),
                     "" if tool_failed else ratio(runs["kafka-topics"], runs["peer"])])
        rows.append([broker, "kproto topics --describe", cell(runs["kproto"], "{:.3f}"),
                     ratio(runs["kproto"], runs["peer"])])
        rows.append([broker, "kproto --help (cold start)", cell(runs["help"], "{:.3f}"), ""])
    report.add(f"{topics} topics x {PARTITIONS} partitions; wall seconds of a fresh process each, median "
               f"(min-max) of {args.runs} runs rotating the sides (lower is better). All print "
               f"kafka-topics.sh's describe lines ({topics * (PARTITIONS + 1)}); kproto's and Kafka's "
               "TopicCommand (-Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1) are checked identical apart from "
               "the order of topics and TopicIds; the script's too on kproto's broker, on Kafka's apart from the "
               "Configs column.")
    report.add(table(["broker", "command", "seconds", "time vs anchor"], rows, right=2))
    report.write()


if __name__ == "__main__":
    main()
