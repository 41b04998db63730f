"""KIP-853's control records (kraft.version 1) against Apache Kafka's: the bootstrap
checkpoint ``kafka-storage.sh format --standalone`` writes for a controller, read by
kproto's metadata log, and the one kproto writes for the same voter holding the same
KRaftVersion and Voters records at the same offsets."""

from __future__ import annotations

from kproto.log.manager import parse_topic_id
from kproto.server.cluster import quorum as Q
from kproto.server.cluster import raft as R
from kproto.server.cluster import snapshot as SN
from tests.kafka_ref import free_port

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def test_format_standalone_bootstrap_checkpoint_matches_kafkas(kafka_ref, tmp_path):
    port = free_port()
    data = tmp_path / "kafka"
    props = tmp_path / "controller.properties"
    props.write_text("\n".join([
        "process.roles=controller", "node.id=3000", "controller.listener.names=CONTROLLER",
        f"listeners=CONTROLLER://127.0.0.1:{port}", f"controller.quorum.bootstrap.servers=127.0.0.1:{port}",
        f"log.dirs={data}", ""]))
    proc = kafka_ref.run_tool("kafka.tools.StorageTool", "format", "-t", CLUSTER_ID, "-c", str(props), "--standalone")
    assert proc.returncode == 0, proc.stderr
    meta = dict(line.split("=", 1) for line in (data / "meta.properties").read_text().splitlines()
                if "=" in line and not line.startswith("#"))
    voter = R.Voter(3000, parse_topic_id(meta["directory.id"]), (("CONTROLLER", "127.0.0.1", port),))

    # kproto's metadata log reads Kafka's checkpoint: kraft.version 1, the voter at offset -1
    log = Q.MetadataLog(data / "__cluster_metadata-0")
    assert (log.kraft_version, log.voter_set()) == (1, (-1, {3000: voter}))
    log.log.close()

    # and kproto's checkpoint for the same voter holds the same control records (Kafka's also
    # holds the bootstrap FeatureLevelRecords as data records: kproto's features are its own)
    kafka = SN.control_records((data / "__cluster_metadata-0" / SN.snapshot_file_name(SN.SnapshotId(0, 0))).read_bytes())
    ours = SN.control_records(Q.write_bootstrap_checkpoint(tmp_path / "kproto", {3000: voter}).read_bytes())
    assert [(o, k, dict(f)) for o, k, f in ours] == [(o, k, dict(f)) for o, k, f in kafka]
    assert [(o, k) for o, k, _ in ours] == [(1, SN.KRAFT_VERSION), (2, SN.KRAFT_VOTERS)]
