"""DescribeCluster: this node, as the controller."""

from __future__ import annotations


async def describe_cluster(broker, header, body) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "cluster_id": broker.cluster_id,
            "controller_id": broker.node_id,
            "brokers": [{"broker_id": broker.node_id, "host": broker.host, "port": broker.port, "rack": None}]}


HANDLERS = {60: (describe_cluster, 0, 1)}
