"""DescribeCluster: this node, as the controller; on a node of a cluster, its unfenced
brokers (as Metadata lists them; every registered one with v2's include_fenced_brokers,
KIP-1073) and its controller.

UnregisterBroker (KIP-631; KafkaApis forwards it, ControllerApis.handleUnregisterBroker):
ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED. A node of a cluster forwards it to
the active controller (kproto/server/cluster/operations.py: BROKER_ID_NOT_REGISTERED for an
id not registered; a registered one, fenced or alive, is unregistered). A standalone node is
Kafka's one-node cluster: its own id is unregistered as Kafka's answers (NONE; kproto keeps
serving, having no registration to lose), any other BROKER_ID_NOT_REGISTERED.
"""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED, Access
from kproto.server.cluster.operations import not_registered
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
    fenced = broker.cluster.image.brokers if broker.cluster is not None else {}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "cluster_id": broker.cluster_id,
            "controller_id": controller,
            "brokers": [{"broker_id": n["node_id"], "host": n["host"], "port": n["port"], "rack": n["rack"],
                         "is_fenced": n["node_id"] in fenced and fenced[n["node_id"]].fenced}
                        for n in broker_nodes(broker, ctx, include_fenced=bool(body.get("include_fenced_brokers")))]}


def _answer(error: int, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message}


async def _authorize_unregister(a: Access, broker, ctx, body, handler) -> dict:
    if not a.ok(O.ALTER, R.CLUSTER, CLUSTER_NAME):
        return _answer(C_DENIED, ErrorCode(C_DENIED).description)
    return await handler(broker, ctx, body)


@handles(P.unregister_broker, authorize=_authorize_unregister)
async def unregister_broker(broker, ctx, body) -> dict:
    if broker.cluster is not None:
        try:
            return await broker.cluster.forward(P.unregister_broker.API.key, ctx.request_api_version, body)
        except ConnectionError as e:     # the controller unreachable: nothing unregistered
            return _answer(ErrorCode.REQUEST_TIMED_OUT, f"the controller is unreachable: {e}")
    if body.broker_id == broker.node_id:
        return _answer(0, None)
    return _answer(ErrorCode.BROKER_ID_NOT_REGISTERED, not_registered(body.broker_id))
