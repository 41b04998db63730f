"""KIP-1071 streams groups: StreamsGroupHeartbeat and StreamsGroupDescribe (KafkaApis
handleStreamsGroupHeartbeat / handleStreamsGroupDescribe, Kafka 4.4) over the group
coordinator's streams part (kproto.server.coordinator.streams_groups).

The coordinator answers which internal topics (repartition, changelog) the group's topology
needs and the cluster lacks; as KafkaApis does (AutoTopicCreationManager.createStreamsInternalTopics),
the handler creates them, with the topology's partition counts and configs, whatever
``auto.create.topics.enable`` says, and the member hears MISSING_INTERNAL_TOPICS until they exist.
"""

from __future__ import annotations

import asyncio
import logging

from kproto.common import is_internal, topic_name_problem
from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import G_DENIED, T_DENIED, Access, PerEntry
from kproto.server.coordinator.streams_groups import (
    Status, StreamsGroupDescribeRequest, TopicInfo, error_response, request_from_body,
)
from kproto.server.handlers import handles
from kproto.server.handlers.groups import _ask, _groups
from kproto.server.handlers.topics import _check_replicas

log = logging.getLogger("kproto.server.groups")

# StreamsGroupDescribeResponse.TopologyDescriptionStatus
NOT_REQUESTED, NOT_STORED = 0, 1
MISSING_INTERNAL_TOPICS = Status.MISSING_INTERNAL_TOPICS.value


def _heartbeat_error(error: ErrorCode, message: str | None = None) -> dict:
    out = {"throttle_time_ms": 0, **error_response(error, message)}
    del out["creatable"]
    return out


def _topology_topics(topology) -> list[str]:
    """Every topic a heartbeat's topology names."""
    return [t for s in topology.subtopologies for t in (
        *s.source_topics, *s.repartition_sink_topics, *(i.name for i in s.repartition_source_topics),
        *(i.name for i in s.state_changelog_topics))]


async def _STREAMS_GROUP_HEARTBEAT(a: Access, broker, ctx, body, handler):
    """handleStreamsGroupHeartbeat: READ on the group, else GROUP_AUTHORIZATION_FAILED alone; a
    topology naming Kafka's internal topics or invalid names is STREAMS_INVALID_TOPOLOGY; then
    DESCRIBE on every topic of a topology, else TOPIC_AUTHORIZATION_FAILED (the internal topics
    to create also need CREATE: ``_may_create``)."""
    if not a.ok(O.READ, R.GROUP, body.group_id):
        return _heartbeat_error(G_DENIED)
    refused = _invalid_topology(body)
    if refused is not None:
        return refused
    if body.topology is not None and any(
            [not a.ok(O.DESCRIBE, R.TOPIC, t) for t in sorted(set(_topology_topics(body.topology)))]):
        return _heartbeat_error(T_DENIED)
    return await handler(broker, ctx, body)


def _invalid_topology(body) -> dict | None:
    """KafkaApis: a topology naming Kafka's internal topics, or names no topic may have."""
    if body.topology is None:
        return None
    topics = _topology_topics(body.topology)
    internal = sorted({t for t in topics if is_internal(t)})
    if internal:
        return _heartbeat_error(ErrorCode.STREAMS_INVALID_TOPOLOGY, (
            f"Use of Kafka internal topics {', '.join(internal)} in a Kafka Streams topology is prohibited."))
    invalid = sorted({t for t in topics if topic_name_problem(t) is not None})
    if invalid:
        return _heartbeat_error(ErrorCode.STREAMS_INVALID_TOPOLOGY,
                                f"Topic names {', '.join(invalid)} are not valid topic names.")
    return None


def _may_create(broker, ctx, topic: str) -> bool:
    """CREATE on the cluster or on the topic (no authorizer: allowed)."""
    allowed = broker.security.allowed
    return allowed(ctx, O.CREATE, R.CLUSTER, CLUSTER_NAME, log_denied=False) or \
        allowed(ctx, O.CREATE, R.TOPIC, topic, log_denied=False)


def _create_internal_topics(broker, topics: dict[str, TopicInfo]) -> None:
    """AutoTopicCreationManager.createStreamsInternalTopics: each missing internal topic with its
    partitions and configs; one that fails is logged and asked for again by the next heartbeat."""
    for name, info in topics.items():
        try:
            if broker.cluster is not None:
                broker.cluster.auto_create_topic(name, info.partitions, info.replication_factor or
                                                 broker.config["default.replication.factor"], dict(info.topic_configs))
            elif not broker.logs.has_topic(name):
                # as CreateTopics on this one broker: a replication factor it cannot keep is refused
                # (0, as Streams' replication.factor -1, is the broker's default)
                _check_replicas(broker, broker.config["default.replication.factor"]
                                if info.replication_factor in (0, -1) else info.replication_factor)
                broker.logs.create_topic(name, info.partitions, dict(info.topic_configs))
        except KafkaError as e:
            log.warning("could not create streams internal topic %s: %s", name, e)


@handles(P.streams_group_heartbeat, authorize=_STREAMS_GROUP_HEARTBEAT)
async def streams_group_heartbeat(broker, ctx, body) -> dict:
    """KIP-1071: join, heartbeat, leave (GroupMetadataManager.streamsGroupHeartbeat)."""
    if body.group_id in broker.shares.coordinator.groups:    # a group id is one type
        return _heartbeat_error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {body.group_id} is not a streams group.")
    refused = _invalid_topology(body)
    if refused is not None:
        return refused
    groups = _groups(broker)
    groups.refresh_topics()
    out = await _ask(broker, request_from_body(body, ctx.client_id or "", ctx.client_host, ctx.request_api_version))
    creatable = out.pop("creatable")
    denied = [t for t in creatable if not _may_create(broker, ctx, t)]
    if denied:
        for status in out["status"]:
            if status["status_code"] == MISSING_INTERNAL_TOPICS:
                status["status_detail"] += f"; Unauthorized to CREATE on topics {', '.join(denied)}."
        creatable = {t: info for t, info in creatable.items() if t not in denied}
    if creatable:
        await asyncio.to_thread(_create_internal_topics, broker, creatable)
    return out


_STREAMS_GROUP_DESCRIBE = PerEntry(
    "group_ids", lambda e: e, R.GROUP, O.DESCRIBE, "groups",
    lambda e, err: {"error_code": err, "error_message": None, "group_id": e, "group_state": "", "group_epoch": -1,
                    "assignment_epoch": -1, "topology": None, "members": [],
                    "authorized_operations": -2147483648}, error=G_DENIED)


@handles(P.streams_group_describe, authorize=_STREAMS_GROUP_DESCRIBE)
async def streams_group_describe(broker, ctx, body) -> dict:
    groups = _groups(broker, offsets_topic=False)
    groups.refresh_topics()
    out = await _ask(broker, StreamsGroupDescribeRequest(group_ids=tuple(body.group_ids)), offsets_topic=False)
    wanted = body.get("include_topology_description", False)
    for g in out["groups"]:
        g["topology_description"] = None
        g["topology_description_status"] = NOT_STORED if wanted else NOT_REQUESTED
        g["assignor_name"] = None if g["error_code"] else "sticky"
    return out
