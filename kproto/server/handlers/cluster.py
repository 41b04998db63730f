"""DescribeCluster: this node, as the controller."""

from __future__ import annotations

from kproto.schemas import protocol as P


async def describe_cluster(broker, header, body) -> dict:
    host, port = broker.endpoint()
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "cluster_id": broker.cluster_id,
            "controller_id": broker.node_id,
            "brokers": [{"broker_id": broker.node_id, "host": host, "port": port, "rack": None}]}


# Versions: v0-1. v2 asks about fenced brokers (KIP-1073), a KRaft controller's
# notion this single node does not have, so it is not advertised.
HANDLERS = {P.describe_cluster.API.key: (describe_cluster, 0, 1)}
