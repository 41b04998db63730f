"""Metadata: one node that leads every partition; topics auto-created on request.

A node of a cluster answers from its metadata image instead (KRaftMetadataCache):
the unfenced brokers, each partition's leader, replicas and ISR as the
controller registered them, replicas on fenced brokers as offline, and
LEADER_NOT_AVAILABLE for a partition without a leader.
"""

from __future__ import annotations

import uuid

from kproto.errors import ErrorCode, KafkaError
from kproto.common import is_internal, validate_topic_name
from kproto.log.manager import LEADER_EPOCH
from kproto.schemas import protocol as P
from kproto.server.cluster.election import NO_LEADER
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import T_DENIED, Access
from kproto.server.handlers import handles


ZERO_UUID = uuid.UUID(int=0)


def broker_nodes(broker, ctx, *, include_fenced: bool = False) -> list[dict]:
    """The unfenced brokers (or every registered one: DescribeCluster v2) with their endpoints
    on the request's listener."""
    if broker.cluster is not None:
        listener = ctx.listener.name if ctx.listener is not None else None
        image = broker.cluster.image
        nodes = []
        for b in sorted(image.brokers if include_fenced else image.alive()):
            where = broker.cluster.endpoint_of(b, listener)
            if where is not None:
                nodes.append({"node_id": b, "host": where[0], "port": where[1], "rack": image.brokers[b].rack})
        return nodes
    host, port = broker.endpoint(ctx)
    return [{"node_id": broker.node_id, "host": host, "port": port, "rack": None}]


def partition_metadata(broker, topic: str) -> list[dict]:
    if broker.cluster is not None:
        image = broker.cluster.image
        alive = image.alive()
        return [{"error_code": ErrorCode.LEADER_NOT_AVAILABLE if reg.leader == NO_LEADER else 0,
                 "partition_index": p, "leader_id": reg.leader, "leader_epoch": reg.leader_epoch,
                 "replica_nodes": list(reg.replicas), "isr_nodes": list(reg.isr),
                 "offline_replicas": [r for r in reg.replicas if r not in alive]}
                for p, reg in sorted(image.topics[topic].partitions.items())]
    n = broker.node_id
    return [{"error_code": 0, "partition_index": p, "leader_id": n, "leader_epoch": LEADER_EPOCH,
             "replica_nodes": [n], "isr_nodes": [n], "offline_replicas": []}
            for p in range(broker.partition_count(topic))]


def topic_metadata(broker, topic: str, *, auto_create: bool) -> dict:
    try:
        validate_topic_name(topic)
    except KafkaError as e:
        return {"error_code": e.error_code, "name": topic, "topic_id": ZERO_UUID, "partitions": []}
    exists = broker.has_topic(topic) or (auto_create and broker.auto_create(topic))
    if not exists:
        # a node of a cluster asked its controller: LEADER_NOT_AVAILABLE until the topic is in its
        # metadata (DefaultAutoTopicCreationManager.createTopics)
        creating = auto_create and broker.cluster is not None and broker.config["auto.create.topics.enable"]
        return {"error_code": ErrorCode.LEADER_NOT_AVAILABLE if creating else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "name": topic, "topic_id": ZERO_UUID, "partitions": []}
    return {"error_code": 0, "name": topic, "topic_id": broker.topic_id(topic),
            "is_internal": is_internal(topic), "partitions": partition_metadata(broker, topic)}


async def _metadata(a: Access, broker, ctx, body, handler):
    """Topics the principal may not DESCRIBE: left out of a list-all answer,
    TOPIC_AUTHORIZATION_FAILED when asked by name; auto-creation needs CREATE."""
    explicit = body.topics is not None and not (ctx.request_api_version == 0 and not body.topics)
    denied = []
    if explicit:
        kept = []
        for t in body.topics:
            (kept if t.name is None or a.ok(O.DESCRIBE, R.TOPIC, t.name) else denied).append(t)
        body.topics = kept
        if body.get("allow_auto_topic_creation") and not a.ok(O.CREATE, R.CLUSTER, CLUSTER_NAME, False):
            missing = [t.name for t in kept if t.name and not broker.logs.has_topic(t.name)]
            if any(not a.ok(O.CREATE, R.TOPIC, n, False) for n in missing):
                body.allow_auto_topic_creation = False
    response = await handler(broker, ctx, body)
    if not explicit:
        response["topics"] = [t for t in response["topics"] if a.ok(O.DESCRIBE, R.TOPIC, t["name"], False)]
    if body.get("include_topic_authorized_operations"):
        for t in response["topics"]:
            if not t["error_code"]:
                t["topic_authorized_operations"] = a.operations(R.TOPIC, t["name"])
    if body.get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = a.operations(R.CLUSTER, CLUSTER_NAME)
    response["topics"] = list(response["topics"]) + [
        {"error_code": T_DENIED, "name": t.name, "topic_id": t.get("topic_id") or ZERO_UUID, "is_internal": False,
         "partitions": []} for t in denied]
    return response


@handles(P.metadata, authorize=_metadata)
async def metadata(broker, ctx, body) -> dict:
    version = ctx.request_api_version
    requested = body.topics
    if requested is None or (version == 0 and not requested):
        names = sorted(broker.topic_names())
        auto = False
    else:
        by_id = {broker.topic_id(t): t for t in broker.topic_names()}
        names = [t.name if t.name is not None else by_id.get(t.topic_id, "") for t in requested]
        auto = body.allow_auto_topic_creation
    return {"throttle_time_ms": 0, "error_code": 0, "brokers": broker_nodes(broker, ctx), "cluster_id": broker.cluster_id,
            "controller_id": broker.node_id if broker.cluster is None else broker.cluster.active_controller(),
            "topics": [topic_metadata(broker, t, auto_create=auto) for t in names]}
