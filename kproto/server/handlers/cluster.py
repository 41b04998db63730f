"""DescribeCluster: this node, as the controller; on a node of a cluster, its unfenced
brokers (as Metadata lists them) and its controller."""

from __future__ import annotations

from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, ResourceType as R
from kproto.server.access import Access
from kproto.server.handlers import handles
from kproto.server.handlers.metadata import broker_nodes


async def _describe_cluster(a: Access, broker, ctx, body, handler):
    """Kafka checks nothing here but answers the principal's cluster operations when asked."""
    response = await handler(broker, ctx, body)
    if body.include_cluster_authorized_operations:
        response["cluster_authorized_operations"] = a.operations(R.CLUSTER, CLUSTER_NAME)
    return response


@handles(P.describe_cluster, authorize=_describe_cluster)
async def describe_cluster(broker, ctx, body) -> dict:
    controller = broker.node_id if broker.cluster is None else broker.cluster.active_controller()
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "cluster_id": broker.cluster_id,
            "controller_id": controller,
            "brokers": [{"broker_id": n["node_id"], "host": n["host"], "port": n["port"], "rack": n["rack"],
                         "is_fenced": False} for n in broker_nodes(broker, ctx)]}
