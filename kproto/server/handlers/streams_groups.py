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

from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import G_DENIED, Access, PerEntry
from kproto.server.coordinator.streams_groups import (
    StreamsGroupDescribeRequest, TopicInfo, heartbeat_response, request_from_body,
)
from kproto.server.handlers import handles
from kproto.server.handlers.groups import _ask, _groups

log = logging.getLogger("kproto.server.groups")

# StreamsGroupDescribeResponse.TopologyDescriptionStatus
NOT_REQUESTED, NOT_STORED = 0, 1


def _heartbeat_error(body, error: ErrorCode, message: str | None = None) -> dict:
    out = {"throttle_time_ms": 0, **heartbeat_response(body.member_id, -1, error, message)}
    del out["creatable"]
    return out


async def _STREAMS_GROUP_HEARTBEAT(a: Access, broker, ctx, body, handler):
    """handleStreamsGroupHeartbeat: READ on the group, else GROUP_AUTHORIZATION_FAILED alone."""
    if not a.ok(O.READ, R.GROUP, body.group_id):
        return _heartbeat_error(body, G_DENIED)
    return await handler(broker, ctx, body)


def _create_internal_topics(broker, topics: dict[str, TopicInfo]) -> None:
    """AutoTopicCreationManager.createStreamsInternalTopics: each missing internal topic with its
    partitions and configs; one that fails is logged and asked for again by the next heartbeat."""
    for name, info in topics.items():
        try:
            if broker.cluster is not None:
                broker.cluster.auto_create_topic(name, info.partitions, info.replication_factor or
                                                 broker.config["default.replication.factor"], dict(info.topic_configs))
            elif not broker.logs.has_topic(name):
                broker.logs.create_topic(name, info.partitions, dict(info.topic_configs))
        except KafkaError as e:
            log.warning("could not create streams internal topic %s: %s", name, e)


@handles(P.streams_group_heartbeat, authorize=_STREAMS_GROUP_HEARTBEAT)
async def streams_group_heartbeat(broker, ctx, body) -> dict:
    """KIP-1071: join, heartbeat, leave (GroupMetadataManager.streamsGroupHeartbeat)."""
    if body.group_id in broker.shares.coordinator.groups:    # a group id is one type
        return _heartbeat_error(body, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {body.group_id} is not a streams group.")
    groups = _groups(broker)
    groups.refresh_topics()
    out = await _ask(broker, request_from_body(body, ctx.client_id or "", ctx.client_host))
    creatable = out.pop("creatable")
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
