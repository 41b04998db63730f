"""DescribeQuorum: the KRaft metadata quorum (KafkaApis forwards to the controller:
ControllerApis.handleDescribeQuorum, KafkaRaftClient.handleDescribeQuorumRequest,
LeaderState.describeQuorum). A node of a cluster forwards it to the active
controller, which answers from its Raft leader state (cluster/quorum.py).

A standalone node is the sole voter and the leader (epoch 1) of ``__cluster_metadata-0``.
It keeps no metadata log: what it keeps in its place is the finalized features and
their epoch (kproto.features), so the high watermark and the voter's log end offset
are that epoch. As Kafka's leader reports itself: last fetch and last caught-up
timestamps are now (v1+), its directory id is zero (kraft.version 0, static voters),
and v2's ``nodes`` lists the leader with the listener the request came in on
(Kafka lists its controller listener). Any other partition is UNKNOWN_TOPIC_OR_PARTITION
with Kafka's message; error messages are "" where Kafka writes "" (measured).
"""

from __future__ import annotations

import uuid

from kproto.common import CLUSTER_METADATA_TOPIC_NAME, now_ms
from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED, Access
from kproto.server.handlers import handles

_NOT_HOSTED = "This server does not host this topic-partition."


async def _authorize(a: Access, broker, ctx, body, handler) -> dict:
    """ControllerApis.handleDescribeQuorum: DESCRIBE on the cluster."""
    if not a.ok(O.DESCRIBE, R.CLUSTER, CLUSTER_NAME):
        return {"error_code": C_DENIED, "error_message": "Cluster authorization failed.", "topics": [],
                "nodes": []}
    return await handler(broker, ctx, body)


def _partition(broker, index: int) -> dict:
    if index != 0:
        return {"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "error_message": _NOT_HOSTED, "leader_id": 0, "leader_epoch": 0, "high_watermark": 0,
                "current_voters": [], "observers": []}
    offset, now = broker.features.epoch, now_ms()
    return {"partition_index": 0, "error_code": 0, "error_message": "", "leader_id": broker.node_id,
            "leader_epoch": 1, "high_watermark": offset, "observers": [],
            "current_voters": [{"replica_id": broker.node_id, "replica_directory_id": uuid.UUID(int=0),
                                "log_end_offset": offset, "last_fetch_timestamp": now,
                                "last_caught_up_timestamp": now}]}


@handles(P.describe_quorum, authorize=_authorize)
async def describe_quorum(broker, ctx, body) -> dict:
    if broker.cluster is not None:
        # a node of a cluster forwards to the active controller (KafkaApis -> ControllerApis)
        try:
            return await broker.cluster.controller.request(P.describe_quorum.API.key, ctx.request_api_version, body)
        except ConnectionError as e:
            return {"error_code": ErrorCode.REQUEST_TIMED_OUT, "error_message": f"the controller is unreachable: {e}",
                    "topics": [], "nodes": []}
    topics = []
    for t in body.topics:
        parts = [_partition(broker, p.partition_index) if t.topic_name == CLUSTER_METADATA_TOPIC_NAME else
                 {**_partition(broker, -1), "partition_index": p.partition_index} for p in t.partitions]
        topics.append({"topic_name": t.topic_name, "partitions": parts})
    nodes = []
    if any(t.topic_name == CLUSTER_METADATA_TOPIC_NAME and p.partition_index == 0
           for t in body.topics for p in t.partitions):      # Kafka lists nodes of the partition it describes
        host, port = broker.endpoint(ctx)
        name = ctx.listener.name if ctx.listener is not None else "PLAINTEXT"
        nodes = [{"node_id": broker.node_id, "listeners": [{"name": name, "host": host, "port": port}]}]
    return {"error_code": 0, "error_message": "", "topics": topics, "nodes": nodes}
