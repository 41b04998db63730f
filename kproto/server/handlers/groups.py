"""The ten group APIs: wire bodies <-> the group coordinator's requests.

A thin layer over ``broker.groups`` (``kproto.server.group_service``), which
owns the coordinator, its appends to ``__consumer_offsets`` and its timers:
each handler translates one request body into a coordinator request and the
coordinator's answer back into that version's response body.

Versions: each schema's ``API.served``, whose ledger says why it stops
there (JoinGroup v8-9 and OffsetCommit/OffsetFetch v10: none of the clients
tested here sends them). Up to there the coordinator implements each
version's rules: MEMBER_ID_REQUIRED from
JoinGroup v4 (KIP-394), static membership from v5 (KIP-345), nullable
protocol names from JoinGroup v7 and SyncGroup v5's protocol checks
(KIP-559), batched LeaveGroup from v3, batched FindCoordinator from v4
(KIP-699), several groups per OffsetFetch from v8 (KIP-709),
GROUP_ID_NOT_FOUND from DescribeGroups v6 (KIP-1043), ListGroups' state and
type filters (v4, v5). FindCoordinator for a transactional id (key_type 1)
answers this node too (the transaction coordinator, kproto.server.txn_service),
and so does one for a share partition (key_type 2, the share coordinator,
kproto.server.share_service).
"""

from __future__ import annotations

import contextvars
from dataclasses import fields, is_dataclass
from typing import Any

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.server.coordinator import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, JoinGroupRequestProtocol,
    LeaveGroupRequest, ListGroupsRequest, MemberIdentity, OffsetCommitRequest, OffsetCommitRequestPartition,
    OffsetCommitRequestTopic, OffsetFetchRequest, OffsetFetchRequestTopic, SyncGroupRequest,
    SyncGroupRequestAssignment,
)

#: The peer of the connection whose request is being handled ("/127.0.0.1", as
#: Kafka prints a client host); the broker sets it for each JoinGroup.
CLIENT_HOST: contextvars.ContextVar[str] = contextvars.ContextVar("client_host", default="")

GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE = 0, 1, 2     # FindCoordinator key_type


def wire(value: Any) -> Any:
    """A coordinator response (frozen dataclasses, tuples) as a wire body."""
    if is_dataclass(value):
        return {f.name: wire(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [wire(v) for v in value]
    return value


def _groups(broker, *, offsets_topic: bool = True):
    """The group service; Kafka creates ``__consumer_offsets`` on the first
    request that needs it (not ListGroups or DescribeGroups)."""
    if offsets_topic:
        broker.groups.ensure_topic()
    return broker.groups


async def _ask(broker, request, **kw) -> dict:
    return {"throttle_time_ms": 0, **wire(await _groups(broker, **kw).ask(request))}


async def find_coordinator(broker, header, body) -> dict:
    version = header.request_api_version
    node_id = _groups(broker, offsets_topic=body.key_type == GROUP_KEY_TYPE).node[0]
    host, port = broker.endpoint()      # the listener the client came in on
    keys = body.coordinator_keys if version >= 4 else [body.key]
    if body.key_type == TRANSACTION_KEY_TYPE:
        broker.transactions.ensure_topic()      # Kafka creates __transaction_state here
    elif body.key_type == SHARE_KEY_TYPE:
        broker.shares.ensure_topic()            # and __share_group_state here (key "group:topicId:partition")

    def answer(k: str) -> dict:
        if body.key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE):
            return {"key": k, "node_id": -1, "host": "", "port": -1,
                    "error_code": ErrorCode.INVALID_REQUEST, "error_message": f"Unknown key type {body.key_type}"}
        return {"key": k, "node_id": node_id, "host": host, "port": port,
                "error_code": 0, "error_message": None}

    if version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [answer(k) for k in keys]}
    single = answer(keys[0])
    del single["key"]           # v0-3 answer for the one key asked
    return {"throttle_time_ms": 0, **single}


async def join_group(broker, header, body) -> dict:
    version = header.request_api_version
    if body.group_id in broker.shares.coordinator.groups:   # a share group's id (GroupMetadataManager.classicGroupJoin)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "generation_id": -1,
                "protocol_type": None, "protocol_name": None if version >= 7 else "", "leader": "",
                "skip_assignment": False, "member_id": body.member_id, "members": []}
    out = await _ask(broker, JoinGroupRequest(
        group_id=body.group_id, session_timeout_ms=body.session_timeout_ms,
        rebalance_timeout_ms=body.rebalance_timeout_ms if version >= 1 else -1,
        member_id=body.member_id, group_instance_id=body.group_instance_id,
        protocol_type=body.protocol_type,
        protocols=tuple(JoinGroupRequestProtocol(name=p.name, metadata=bytes(p.metadata)) for p in body.protocols),
        client_id=header.client_id or "", client_host=CLIENT_HOST.get(),
        require_known_member_id=version >= 4, support_skipping_assignment=version >= 9))
    if version < 7 and out["protocol_name"] is None:
        out["protocol_name"] = ""       # not nullable before v7
    return out


async def sync_group(broker, header, body) -> dict:
    return await _ask(broker, SyncGroupRequest(
        group_id=body.group_id, generation_id=body.generation_id, member_id=body.member_id,
        group_instance_id=body.group_instance_id, protocol_type=body.protocol_type,
        protocol_name=body.protocol_name,
        assignments=tuple(SyncGroupRequestAssignment(member_id=a.member_id, assignment=bytes(a.assignment))
                          for a in body.assignments)))


async def heartbeat(broker, header, body) -> dict:
    return await _ask(broker, HeartbeatRequest(
        group_id=body.group_id, generation_id=body.generation_id, member_id=body.member_id,
        group_instance_id=body.group_instance_id))


async def leave_group(broker, header, body) -> dict:
    version = header.request_api_version
    out = await _ask(broker, LeaveGroupRequest(
        group_id=body.group_id,
        members=(MemberIdentity(member_id=body.member_id),) if version < 3 else tuple(
            MemberIdentity(member_id=m.member_id, group_instance_id=m.group_instance_id) for m in body.members)))
    if version < 3 and out["error_code"] == 0 and out["members"]:
        out["error_code"] = out["members"][0]["error_code"]     # v0-2 carry one member
    return out


def split_unknown_partitions(broker, topics) -> tuple[list, list[dict]]:
    """KafkaApis.handleOffsetCommitRequest / handleTxnOffsetCommitRequest: partitions the broker
    does not have (metadataCache.contains, getPartitionInfo) are answered
    UNKNOWN_TOPIC_OR_PARTITION and never stored. -> (the topics with their known partitions,
    the error entries in request order)."""
    known, unknown = [], []
    for t in topics:
        missing = [p.partition_index for p in t.partitions if broker.logs.get_log(t.name, p.partition_index) is None]
        if missing:
            unknown.append({"name": t.name, "partitions": [
                {"partition_index": i, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION} for i in missing]})
        kept = [p for p in t.partitions if p.partition_index not in missing]
        if kept:
            known.append((t, kept))
    return known, unknown


def merge_commit_results(errors: list[dict], topics: list[dict]) -> list[dict]:
    """OffsetCommitResponse.Builder.merge: the coordinator's results after the errors, a topic's
    partitions joined to its entry."""
    by_name = {t["name"]: t for t in errors}
    out = list(errors)
    for t in topics:
        if t["name"] in by_name:
            by_name[t["name"]]["partitions"] += t["partitions"]
        else:
            out.append(t)
    return out


async def offset_commit(broker, header, body) -> dict:
    known, unknown = split_unknown_partitions(broker, body.topics)
    if not known:
        return {"throttle_time_ms": 0, "topics": unknown}
    out = await _ask(broker, OffsetCommitRequest(
        group_id=body.group_id, generation_id=body.generation_id_or_member_epoch,
        member_id=body.member_id, group_instance_id=body.group_instance_id,
        retention_time_ms=body.retention_time_ms,
        topics=tuple(OffsetCommitRequestTopic(name=t.name, partitions=tuple(
            OffsetCommitRequestPartition(
                partition_index=p.partition_index, committed_offset=p.committed_offset,
                committed_leader_epoch=p.committed_leader_epoch,
                commit_timestamp=p.commit_timestamp, committed_metadata=p.committed_metadata)
            for p in partitions)) for t, partitions in known)))
    out["topics"] = merge_commit_results(unknown, out["topics"])
    return out


def _fetch_topics(topics) -> tuple[OffsetFetchRequestTopic, ...] | None:
    if topics is None:
        return None
    return tuple(OffsetFetchRequestTopic(name=t.name, partition_indexes=tuple(t.partition_indexes)) for t in topics)


async def offset_fetch(broker, header, body) -> dict:
    version = header.request_api_version
    groups = _groups(broker)
    if version >= 8:
        answers = []
        for g in body.groups:
            r = await groups.ask(OffsetFetchRequest(
                group_id=g.group_id, topics=_fetch_topics(g.topics), require_stable=body.require_stable))
            answers.append({"group_id": g.group_id, "topics": wire(r.topics), "error_code": r.error_code})
        return {"throttle_time_ms": 0, "groups": answers}
    r = await groups.ask(OffsetFetchRequest(
        group_id=body.group_id, topics=_fetch_topics(body.topics), require_stable=body.require_stable))
    topics = wire(r.topics)
    if version < 2 and r.error_code:    # no group-level error field: on each partition
        for t in topics:
            for p in t["partitions"]:
                p["error_code"] = r.error_code
    return {"throttle_time_ms": 0, "topics": topics, "error_code": r.error_code}


async def list_groups(broker, header, body) -> dict:
    return await _ask(broker, ListGroupsRequest(
        states_filter=tuple(body.states_filter), types_filter=tuple(body.types_filter)), offsets_topic=False)


async def describe_groups(broker, header, body) -> dict:
    return await _ask(broker, DescribeGroupsRequest(
        groups=tuple(body.groups), api_version=header.request_api_version), offsets_topic=False)


async def delete_groups(broker, header, body) -> dict:
    return await _ask(broker, DeleteGroupsRequest(groups_names=tuple(body.groups_names)))


HANDLERS = {m.API.key: (handler, *m.API.served) for m, handler in (
    (P.offset_commit, offset_commit), (P.offset_fetch, offset_fetch), (P.find_coordinator, find_coordinator),
    (P.join_group, join_group), (P.heartbeat, heartbeat), (P.leave_group, leave_group),
    (P.sync_group, sync_group), (P.describe_groups, describe_groups), (P.list_groups, list_groups),
    (P.delete_groups, delete_groups))}
