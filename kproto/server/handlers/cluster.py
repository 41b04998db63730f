"""DescribeCluster: this node, as the controller."""

from __future__ import annotations

from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, ResourceType as R
from kproto.server.access import Access
from kproto.server.handlers import handles


async def _describe_cluster(a: Access, broker, ctx, body, handler):
    """Kafka checks nothing here but answers the principal's cluster operations when asked."""
    response = await handler(broker, ctx, body)
    if body.include_cluster_authorized_operations:
        response["cluster_authorized_operations"] = a.operations(R.CLUSTER, CLUSTER_NAME)
    return response


@handles(P.describe_cluster, authorize=_describe_cluster)
async def describe_cluster(broker, ctx, body) -> dict:
    host, port = broker.endpoint(ctx)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "cluster_id": broker.cluster_id,
            "controller_id": broker.node_id,
            "brokers": [{"broker_id": broker.node_id, "host": host, "port": port, "rack": None,
                         "is_fenced": False}]}
