"""KRaft snapshots in a running quorum (issue 27): every voter writes
``.checkpoint`` snapshots and its metadata log starts at the oldest kept; a voter
and a broker-only observer that were down while the log moved past them copy the
leader's snapshot with FetchSnapshot and fetch on. Real processes; every wait is
on the event itself (a node's own Metadata answer), timeouts only as safety nets."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.server.cluster import snapshot as S
from kproto.testing import Cluster


@pytest.fixture
def cluster(tmp_path):
    # a snapshot after every committed batch, only the latest kept: the log starts at it
    with Cluster(brokers=4, controllers=3, data_dir=tmp_path / "cluster", config={
            "metadata.log.max.record.bytes.between.snapshots": 1, "metadata.max.retention.bytes": 0}) as c:
        yield c


def node_topics(cluster: Cluster, node: int) -> set[str]:
    """The topics a node's own metadata image names (its Metadata answer)."""
    admin = AdminClient({"bootstrap.servers": cluster.nodes[node].bootstrap_servers})
    return set(admin.list_topics(timeout=10).topics)


def test_nodes_down_while_the_log_was_trimmed_catch_up_through_fetch_snapshot(cluster):
    leader = cluster.wait_for_controller()
    voter = next(i for i in (1, 2, 3) if i != leader)
    cluster.kill(voter)
    cluster.kill(4)                 # the observer
    admin = AdminClient({"bootstrap.servers": cluster.nodes[leader].bootstrap_servers})
    names = [f"snap-{i}" for i in range(12)]
    for f in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        f.result(timeout=60)
    meta = cluster.nodes[leader].data_dir / "__cluster_metadata-0"
    latest = S.latest_snapshot(meta)
    assert latest is not None and latest.end_offset > 12
    down = S.latest_snapshot(cluster.nodes[voter].data_dir / "__cluster_metadata-0")
    assert down is None or down < latest
    cluster.start(voter)
    cluster.start(4)
    for node in (voter, 4):
        cluster.wait_for(lambda md, node=node: set(names) <= node_topics(cluster, node) or None,
                         f"node {node} knowing every topic")
    # the restarted voter installed the leader's snapshot (its own log stopped below the
    # leader's log start) and snapshots on from there; the observer loaded one
    copied = S.latest_snapshot(cluster.nodes[voter].data_dir / "__cluster_metadata-0")
    assert copied is not None and copied >= latest
    assert "installed the leader's metadata snapshot" in cluster.nodes[voter].log_text()
    assert "loaded metadata snapshot" in cluster.nodes[4].log_text()


def _metadata_payloads(kafka_ref, path) -> list[dict]:
    """The metadata records of a ``.checkpoint`` as Kafka's DumpLogSegments
    --cluster-metadata-decoder reads them (it fails on a snapshot it cannot read)."""
    out = kafka_ref.run_tool("org.apache.kafka.tools.DumpLogSegments", "--cluster-metadata-decoder",
                             "--files", str(path))
    assert out.returncode == 0 and "SnapshotFooter" in out.stdout, out.stderr
    return [json.loads(line.split(" payload: ", 1)[1]) for line in out.stdout.splitlines() if " payload: " in line]


def _first_snapshot(meta_dir: Path, timeout: float = 180) -> Path:
    """A snapshot written after the cluster came up (not Kafka's bootstrap 0-0 checkpoint)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [p for p in sorted(meta_dir.glob("*.checkpoint")) if S.parse_snapshot_name(p.name).end_offset > 0]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"no snapshot in {meta_dir} within {timeout}s"
        time.sleep(0.2)


def test_snapshots_carry_kafkas_feature_levels_and_kafka_reads_them(tmp_path, kafka_ref):
    """A snapshot opens with the FeatureLevelRecords (FeaturesImage.write: metadata.version,
    then the other features in the image's HashMap order) that Kafka 4.4's 3-node cluster
    writes in its own; Kafka's DumpLogSegments reads both. Both clusters snapshot after
    every committed batch; the first snapshot of each is compared."""
    every_batch = {"metadata.log.max.record.bytes.between.snapshots": "1"}
    with Cluster(brokers=3, data_dir=tmp_path / "kproto", config=every_batch) as ours:
        ours_snapshot = _first_snapshot(ours.nodes[1].data_dir / "__cluster_metadata-0")
        kproto_records = _metadata_payloads(kafka_ref, ours_snapshot)
    with kafka_ref.cluster(tmp_path / "kafka", **{k.replace(".", "_"): v for k, v in every_batch.items()}):
        kafka_records = _metadata_payloads(kafka_ref, _first_snapshot(
            tmp_path / "kafka" / "node-1" / "kafka-logs" / "__cluster_metadata-0"))

    def features(records: list[dict]) -> list[tuple[str, int, int]]:
        return [(r["data"]["name"], r["data"]["featureLevel"], r["version"]) for r in records
                if r["type"] == "FEATURE_LEVEL_RECORD"]
    assert features(kproto_records) == features(kafka_records) == [
        ("metadata.version", 33, 0), ("group.version", 1, 0), ("streams.version", 1, 0),
        ("transaction.version", 2, 0), ("eligible.leader.replicas.version", 1, 0), ("share.version", 2, 0)]
    # as Kafka's: the feature levels open the snapshot, before anything else of the image
    for records in (kproto_records, kafka_records):
        kinds = [r["type"] for r in records]
        assert kinds.index("FEATURE_LEVEL_RECORD") == 0 and kinds.count("FEATURE_LEVEL_RECORD") == 6 \
            and "FEATURE_LEVEL_RECORD" not in kinds[6:], kinds
