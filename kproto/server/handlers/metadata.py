"""Metadata: one node that leads every partition; topics auto-created on request."""

from __future__ import annotations

import uuid

from kproto.errors import ErrorCode, KafkaError
from kproto.common import is_internal, validate_topic_name
from kproto.log.manager import LEADER_EPOCH
from kproto.schemas import protocol as P

ZERO_UUID = uuid.UUID(int=0)


def broker_nodes(broker) -> list[dict]:
    host, port = broker.endpoint()
    return [{"node_id": broker.node_id, "host": host, "port": port, "rack": None}]


def partition_metadata(broker, topic: str) -> list[dict]:
    n = broker.node_id
    return [{"error_code": 0, "partition_index": p, "leader_id": n, "leader_epoch": LEADER_EPOCH,
             "replica_nodes": [n], "isr_nodes": [n], "offline_replicas": []}
            for p in range(broker.partition_count(topic))]


def topic_metadata(broker, topic: str, *, auto_create: bool) -> dict:
    try:
        validate_topic_name(topic)
    except KafkaError as e:
        return {"error_code": e.error_code, "name": topic, "topic_id": ZERO_UUID, "partitions": []}
    exists = broker.logs.has_topic(topic) or (auto_create and broker.auto_create(topic))
    if not exists:
        return {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": topic, "topic_id": ZERO_UUID,
                "partitions": []}
    return {"error_code": 0, "name": topic, "topic_id": broker.logs.topic_id(topic),
            "is_internal": is_internal(topic), "partitions": partition_metadata(broker, topic)}


async def metadata(broker, header, body) -> dict:
    version = header.request_api_version
    requested = body.topics
    if requested is None or (version == 0 and not requested):
        names = sorted(broker.logs.topics())
        auto = False
    else:
        by_id = {broker.logs.topic_id(t): t for t in broker.logs.topics()}
        names = [t.name if t.name is not None else by_id.get(t.topic_id, "") for t in requested]
        auto = body.allow_auto_topic_creation
    return {"throttle_time_ms": 0, "brokers": broker_nodes(broker), "cluster_id": broker.cluster_id,
            "controller_id": broker.node_id,
            "topics": [topic_metadata(broker, t, auto_create=auto) for t in names]}


# Versions: v0-12. v13 adds the top-level error_code of KIP-1102 (client
# rebootstrap), which this handler does not write yet.
HANDLERS = {P.metadata.API.key: (metadata, 0, 12)}
