"""The ten group APIs: wire bodies <-> the group coordinator's requests.

A thin layer over ``broker.groups`` (``kproto.server.group_service``), which
owns the coordinator, its appends to ``__consumer_offsets`` and its timers:
each handler translates one request body into a coordinator request and the
coordinator's answer back into that version's response body.

Versions: each schema's ``API.served``, whose ledger says why it stops
there. Up to there the coordinator implements each version's rules: MEMBER_ID_REQUIRED from
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

from dataclasses import fields, is_dataclass
from typing import Any, Callable

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.coordinator import (
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, DeleteGroupsRequest, DescribeGroupsRequest,
    HeartbeatRequest, JoinGroupRequest, JoinGroupRequestProtocol, LeaveGroupRequest, ListGroupsRequest,
    MemberIdentity, OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetFetchRequest,
    OffsetFetchRequestTopic, SyncGroupRequest, SyncGroupRequestAssignment,
)
from kproto.server.access import G_DENIED, T_DENIED, TXN_DENIED, Access, PerEntry, partitions_denied, topic_name
from kproto.server.handlers import handles
from kproto.server.runtime.state_topic import partition_for

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


# --- authorization (KafkaApis.handle*Group*, handleOffset*, handleFindCoordinatorRequest) ---


OFFSET_COMMIT_TOPICS = PerEntry("topics", topic_name, R.TOPIC, O.READ, "topics",
                                lambda e, err: {"name": e.name, "partitions": partitions_denied(
                                    "partitions", "partition_index", "partition_index")(e, err)})


DESCRIBE_GROUPS = PerEntry("groups", lambda e: e, R.GROUP, O.DESCRIBE, "groups",
                           lambda e, err: {"error_code": err, "group_id": e, "group_state": "", "protocol_type": "",
                                           "protocol_data": "", "members": [], "authorized_operations": -2147483648},
                           error=G_DENIED)


DELETE_GROUPS = PerEntry("groups_names", lambda e: e, R.GROUP, O.DELETE, "results",
                         lambda e, err: {"group_id": e, "error_code": err}, error=G_DENIED)


FIND_COORDINATOR = {0: PerEntry("coordinator_keys", lambda e: e, R.GROUP, O.DESCRIBE, "coordinators",
                                lambda e, err: {"key": e, "node_id": -1, "host": "", "port": -1, "error_code": err,
                                                "error_message": None}, error=G_DENIED),
                    1: PerEntry("coordinator_keys", lambda e: e, R.TRANSACTIONAL_ID, O.DESCRIBE, "coordinators",
                                lambda e, err: {"key": e, "node_id": -1, "host": "", "port": -1, "error_code": err,
                                                "error_message": None}, error=TXN_DENIED)}


def group_whole(error_response: Callable[[Any, int], dict], op: O = O.READ):
    """The rule of a request naming one group (``body.group_id``): ``op`` on it, else
    ``error_response(body, GROUP_AUTHORIZATION_FAILED)`` alone and no handler."""
    async def check(a: Access, broker, ctx, body, handler):
        if not a.ok(op, R.GROUP, body.group_id):
            return error_response(body, G_DENIED)
        return await handler(broker, ctx, body)
    return check


_JOIN_GROUP = group_whole(lambda b, e: {"error_code": e, "generation_id": -1, "protocol_name": "", "leader": "",
                                         "member_id": "", "members": []})
_SYNC_GROUP = group_whole(lambda b, e: {"error_code": e, "assignment": b""})
_HEARTBEAT = group_whole(lambda b, e: {"error_code": e})
_LEAVE_GROUP = group_whole(lambda b, e: {"error_code": e, "members": []})


async def _offset_commit(a: Access, broker, ctx, body, handler):
    if not a.ok(O.READ, R.GROUP, body.group_id):
        response = {"topics": []}
        a.merge(response, OFFSET_COMMIT_TOPICS, list(body.topics), G_DENIED)
        return response
    return await offset_commit_topics(a, broker, ctx, body, handler)


async def offset_commit_topics(a: Access, broker, ctx, body, handler):
    denied = a.split(body, OFFSET_COMMIT_TOPICS)
    response = await handler(broker, ctx, body) if body.topics or not denied else {"topics": []}
    a.merge(response, OFFSET_COMMIT_TOPICS, denied)
    return response


async def _offset_fetch(a: Access, broker, ctx, body, handler):
    """KafkaApis.handleOffsetFetchRequestFromCoordinator, each group alike (v8+ batch them):
    DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; named topics the principal may
    not DESCRIBE are not fetched and answer TOPIC_AUTHORIZATION_FAILED (fetchOffsetsForGroup);
    an all-topics fetch (``topics`` null) leaves them out (fetchAllOffsetsForGroup)."""
    batched = ctx.request_api_version >= 8
    groups = list(body.groups) if batched else [body]
    kept, denied_topics = [], []
    for g in groups:
        if not a.ok(O.DESCRIBE, R.GROUP, g.group_id):
            continue
        kept.append(g)
        denied = [] if g.topics is None else [t for t in g.topics if not a.ok(O.DESCRIBE, R.TOPIC, t.name)]
        if denied:
            g.topics = [t for t in g.topics if t not in denied]
        denied_topics.append(denied)
    if not batched and not kept:
        return {"topics": [], "error_code": G_DENIED}
    if batched:
        body.groups = kept
        response = await handler(broker, ctx, body) if kept else {"groups": []}
        answers = response["groups"]
    else:
        response = await handler(broker, ctx, body)
        answers = [response]
    for g, answer, denied in zip(kept, answers, denied_topics):
        if answer["error_code"]:
            continue
        if g.topics is None:
            answer["topics"] = [t for t in answer["topics"] if a.ok(O.DESCRIBE, R.TOPIC, t["name"], False)]
        else:
            answer["topics"] = list(answer["topics"]) + [
                {"name": t.name, "partitions": [
                    {"partition_index": i, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                     "error_code": T_DENIED} for i in t.partition_indexes]} for t in denied]
    if batched:         # in request order, as Kafka answers the groups
        answered = iter(answers)
        response["groups"] = [next(answered) if any(g is k for k in kept)
                              else {"group_id": g.group_id, "topics": [], "error_code": G_DENIED} for g in groups]
    return response


async def _find_coordinator(a: Access, broker, ctx, body, handler):
    rule = FIND_COORDINATOR.get(body.key_type, FIND_COORDINATOR[0])
    if ctx.request_api_version < 4:
        if not a.ok(rule.operation, rule.resource, body.key):
            return {"error_code": rule.error, "error_message": None, "node_id": -1, "host": "", "port": -1}
        return await handler(broker, ctx, body)
    denied = a.split(body, rule)
    response = await handler(broker, ctx, body) if body.coordinator_keys or not denied else {"coordinators": []}
    a.merge(response, rule, denied)
    return response


async def _describe_groups(a: Access, broker, ctx, body, handler):
    denied = a.split(body, DESCRIBE_GROUPS)
    response = await handler(broker, ctx, body) if body.groups or not denied else {"groups": []}
    if body.get("include_authorized_operations"):
        for g in response["groups"]:
            if not g["error_code"]:
                g["authorized_operations"] = a.operations(R.GROUP, g["group_id"])
    a.merge(response, DESCRIBE_GROUPS, denied)
    return response


async def _list_groups(a: Access, broker, ctx, body, handler):
    response = await handler(broker, ctx, body)
    if not a.ok(O.DESCRIBE, R.CLUSTER, CLUSTER_NAME, False):
        response["groups"] = [g for g in response["groups"] if a.ok(O.DESCRIBE, R.GROUP, g["group_id"], False)]
    return response


@handles(P.find_coordinator, authorize=_find_coordinator)
async def find_coordinator(broker, ctx, body) -> dict:
    version = ctx.request_api_version
    node_id = _groups(broker, offsets_topic=body.key_type == GROUP_KEY_TYPE).node[0]
    host, port = broker.endpoint(ctx)      # the listener the client came in on
    keys = body.coordinator_keys if version >= 4 else [body.key]
    standalone = broker.cluster is None         # a cluster answers from its partitions' leaders (below)
    if body.key_type == TRANSACTION_KEY_TYPE:
        broker.transactions.ensure_topic()      # Kafka creates __transaction_state here
    elif body.key_type == SHARE_KEY_TYPE:
        broker.shares.ensure_topic()            # and __share_group_state here (key "group:topicId:partition")

    def answer(k: str) -> dict:
        if body.key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE):
            return {"key": k, "node_id": -1, "host": "", "port": -1,
                    "error_code": ErrorCode.INVALID_REQUEST, "error_message": f"Unknown key type {body.key_type}"}
        shell = {GROUP_KEY_TYPE: broker.groups, TRANSACTION_KEY_TYPE: broker.transactions}.get(body.key_type,
                                                                                             broker.shares)
        node, where = (node_id, (host, port)) if standalone else _partition_leader(broker, ctx, k, shell)
        if node == -1:
            return {"key": k, "node_id": -1, "host": "", "port": -1,
                    "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "error_message": None}
        return {"key": k, "node_id": node, "host": where[0], "port": where[1],
                "error_code": 0, "error_message": None}

    if version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [answer(k) for k in keys]}
    single = answer(keys[0])
    del single["key"]           # v0-3 answer for the one key asked
    return {"throttle_time_ms": 0, **single}


def _partition_leader(broker, ctx, key: str, shell) -> tuple[int, tuple[str, int]]:
    """On a node of a cluster the coordinator of a group (transactional id, share partition
    key) is the leader of its ``__consumer_offsets`` (``__transaction_state``,
    ``__share_group_state``) partition, ``shell``'s topic (KafkaApis.getCoordinator:
    partitionFor, then the partition's leader in the metadata cache); -1 while the topic is being created or the partition has no live leader
    (COORDINATOR_NOT_AVAILABLE)."""
    cluster = broker.cluster
    reg = cluster.image.partition(shell.topic, partition_for(key, shell.partitions))
    if reg is None or reg.leader not in cluster.image.alive():
        return -1, ("", -1)
    where = cluster.endpoint_of(reg.leader, ctx.listener.name if ctx.listener else None)
    return (-1, ("", -1)) if where is None else (reg.leader, where)


@handles(P.join_group, authorize=_JOIN_GROUP)
async def join_group(broker, ctx, body) -> dict:
    version = ctx.request_api_version
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
        client_id=ctx.client_id or "", client_host=ctx.client_host,
        require_known_member_id=version >= 4, support_skipping_assignment=version >= 9))
    if version < 7 and out["protocol_name"] is None:
        out["protocol_name"] = ""       # not nullable before v7
    return out


@handles(P.sync_group, authorize=_SYNC_GROUP)
async def sync_group(broker, ctx, body) -> dict:
    return await _ask(broker, SyncGroupRequest(
        group_id=body.group_id, generation_id=body.generation_id, member_id=body.member_id,
        group_instance_id=body.group_instance_id, protocol_type=body.protocol_type,
        protocol_name=body.protocol_name,
        assignments=tuple(SyncGroupRequestAssignment(member_id=a.member_id, assignment=bytes(a.assignment))
                          for a in body.assignments)))


@handles(P.heartbeat, authorize=_HEARTBEAT)
async def heartbeat(broker, ctx, body) -> dict:
    return await _ask(broker, HeartbeatRequest(
        group_id=body.group_id, generation_id=body.generation_id, member_id=body.member_id,
        group_instance_id=body.group_instance_id))


@handles(P.leave_group, authorize=_LEAVE_GROUP)
async def leave_group(broker, ctx, body) -> dict:
    version = ctx.request_api_version
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


@handles(P.offset_commit, authorize=_offset_commit)
async def offset_commit(broker, ctx, body) -> dict:
    known, unknown = split_unknown_partitions(broker, body.topics)
    if not known:
        return {"throttle_time_ms": 0, "topics": unknown}
    out = await _ask(broker, OffsetCommitRequest(
        group_id=body.group_id, generation_id=body.generation_id_or_member_epoch,
        member_id=body.member_id, group_instance_id=body.group_instance_id,
        retention_time_ms=body.retention_time_ms, api_version=ctx.request_api_version,
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


@handles(P.offset_fetch, authorize=_offset_fetch)
async def offset_fetch(broker, ctx, body) -> dict:
    version = ctx.request_api_version
    groups = _groups(broker)
    if version >= 8:
        answers = []
        for g in body.groups:
            r = await groups.ask(OffsetFetchRequest(
                group_id=g.group_id, topics=_fetch_topics(g.topics), require_stable=body.require_stable,
                member_id=g.get("member_id"), member_epoch=g.get("member_epoch", -1)))
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


@handles(P.list_groups, authorize=_list_groups)
async def list_groups(broker, ctx, body) -> dict:
    return await _ask(broker, ListGroupsRequest(
        states_filter=tuple(body.states_filter), types_filter=tuple(body.types_filter)), offsets_topic=False)


@handles(P.describe_groups, authorize=_describe_groups)
async def describe_groups(broker, ctx, body) -> dict:
    return await _ask(broker, DescribeGroupsRequest(
        groups=tuple(body.groups), api_version=ctx.request_api_version), offsets_topic=False)


@handles(P.delete_groups, authorize=DELETE_GROUPS)
async def delete_groups(broker, ctx, body) -> dict:
    return await _ask(broker, DeleteGroupsRequest(groups_names=tuple(body.groups_names)))


def heartbeat_topics(error_response: Callable[[Any, int], dict], topic_error: dict):
    """KafkaApis.handleConsumerGroupHeartbeat / handleShareGroupHeartbeat (Kafka 4.4,
    KAFKA-18813): READ on the group, else GROUP_AUTHORIZATION_FAILED alone; then a named
    subscription with a topic the principal may not DESCRIBE: ``topic_error``, a response with
    TOPIC_AUTHORIZATION_FAILED and nothing else set."""
    async def check(a: Access, broker, ctx, body, handler):
        if not a.ok(O.READ, R.GROUP, body.group_id):
            return error_response(body, G_DENIED)
        names = set(body.subscribed_topic_names or ())
        if any([not a.ok(O.DESCRIBE, R.TOPIC, t) for t in sorted(names)]):
            return {**topic_error, "error_code": T_DENIED}
        return await handler(broker, ctx, body)
    return check


def describe_topics_denied(a: Access, groups: list[dict], topic_sets: Callable[[dict], list]) -> None:
    """KafkaApis.handleConsumerGroupDescribe / handleShareGroupDescribe (Kafka 4.4): a described
    group naming a topic (in an assignment) the principal may not DESCRIBE is answered
    TOPIC_AUTHORIZATION_FAILED, its description dropped."""
    names = {t["topic_name"] for g in groups for m in g["members"] for parts in topic_sets(m) for t in parts}
    allowed = {t for t in names if a.ok(O.DESCRIBE, R.TOPIC, t)}
    for i, g in enumerate(groups):
        if any(t["topic_name"] not in allowed for m in g["members"] for parts in topic_sets(m) for t in parts):
            groups[i] = {**g, "error_code": T_DENIED, "error_message": (
                "The group has described topic(s) that the client is not authorized to describe."),
                "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
                "authorized_operations": -2147483648}


_CONSUMER_GROUP_HEARTBEAT = heartbeat_topics(
    lambda b, e: {"error_code": e, "member_epoch": -1, "heartbeat_interval_ms": 0},
    {"error_message": None, "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None})
# handleConsumerGroupDescribe: DESCRIBE on each group, a denied one GROUP_AUTHORIZATION_FAILED
_CONSUMER_GROUP_DESCRIBE_GROUPS = PerEntry(
    "group_ids", lambda e: e, R.GROUP, O.DESCRIBE, "groups",
    lambda e, err: {"error_code": err, "error_message": None, "group_id": e, "group_state": "", "group_epoch": 0,
                    "assignment_epoch": 0, "assignor_name": "", "members": [],
                    "authorized_operations": -2147483648}, error=G_DENIED)


async def CONSUMER_GROUP_DESCRIBE(a: Access, broker, ctx, body, handler):
    response = await a.per_entry(_CONSUMER_GROUP_DESCRIBE_GROUPS, broker, body, handler)
    describe_topics_denied(a, response["groups"], lambda m: (m["assignment"]["topic_partitions"],
                                                             m["target_assignment"]["topic_partitions"]))
    return response


def _describable(broker, ctx, body) -> frozenset[str] | None:
    """With an authorizer, from a member bringing a regex or of a group with regex subscribers:
    the topics the principal may DESCRIBE, the only ones a regex refresh that this heartbeat
    triggers resolves to (GroupMetadataManager.refreshRegularExpressions authorizes with the
    context of the member whose heartbeat refreshes)."""
    if broker.security.authorizer is None:
        return None
    group = broker.groups.coordinator.consumer_group(body.group_id)
    if not body.get("subscribed_topic_regex") and (group is None or not group.subscribed_regexes()):
        return None
    return frozenset(t for t in broker.groups.logs.topics()
                     if broker.security.allowed(ctx, O.DESCRIBE, R.TOPIC, t, log_denied=False))


@handles(P.consumer_group_heartbeat, authorize=_CONSUMER_GROUP_HEARTBEAT)
async def consumer_group_heartbeat(broker, ctx, body) -> dict:
    """KIP-848: join, heartbeat, leave (GroupMetadataManager.consumerGroupHeartbeat)."""
    if body.group_id in broker.shares.coordinator.groups:   # GroupMetadataManager.consumerGroup: one type per id
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": f"Group {body.group_id} is not a consumer group.", "member_id": None,
                "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    groups = _groups(broker)
    groups.refresh_topics()
    out = await _ask(broker, ConsumerGroupHeartbeatRequest(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        instance_id=body.instance_id, rack_id=body.rack_id, rebalance_timeout_ms=body.rebalance_timeout_ms,
        subscribed_topic_names=None if body.subscribed_topic_names is None else tuple(body.subscribed_topic_names),
        subscribed_topic_regex=body.get("subscribed_topic_regex"), server_assignor=body.server_assignor,
        topic_partitions=None if body.topic_partitions is None else tuple(
            (t.topic_id, tuple(t.partitions)) for t in body.topic_partitions),
        client_id=ctx.client_id or "", client_host=ctx.client_host,
        api_version=ctx.request_api_version, describable=_describable(broker, ctx, body)))
    if out["assignment"] is not None:
        out["assignment"] = {"topic_partitions": [
            {"topic_id": t, "partitions": list(ps)} for t, ps in out["assignment"]]}
    return out


@handles(P.consumer_group_describe, authorize=CONSUMER_GROUP_DESCRIBE)
async def consumer_group_describe(broker, ctx, body) -> dict:
    groups = _groups(broker, offsets_topic=False)
    groups.refresh_topics()
    out = await _ask(broker, ConsumerGroupDescribeRequest(group_ids=tuple(body.group_ids)), offsets_topic=False)
    for g in out["groups"]:
        for m in g["members"]:
            for which in ("assignment", "target_assignment"):
                m[which] = {"topic_partitions": m[which]}
    return out
