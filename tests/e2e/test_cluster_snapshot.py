"""KRaft snapshots in a running quorum (issue 27): every voter writes
``.checkpoint`` snapshots and its metadata log starts at the oldest kept; a voter
and a broker-only observer that were down while the log moved past them copy the
leader's snapshot with FetchSnapshot and fetch on. Real processes; every wait is
on the event itself (a node's own Metadata answer), timeouts only as safety nets."""

from __future__ import annotations

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
