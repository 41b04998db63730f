"""The KIP-932 share-group APIs: wire bodies <-> the share coordinator
(``broker.shares``, kproto.server.share_service).

ShareGroupHeartbeat / ShareGroupDescribe: membership. ShareFetch /
ShareAcknowledge: share sessions (KafkaApis.handleShareFetchRequest,
ShareSessionCache): epoch 0 opens a member's session with the partitions
named, each later request must carry the next epoch
(INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without one) and adds or
forgets partitions, -1 closes it and releases what the member still holds.
Acknowledgements are applied and persisted before the fetch acquires; a fetch
that acquired nothing waits up to ``max_wait_ms`` for an append or for records
to become available again. Whole batches go back as read; ``acquired_records``
says which offsets the member holds. ``share_acquire_mode`` (v2) is read and
the batch-optimized mode is used whatever it says.

On a node of a cluster a share group's membership is its group coordinator's
(NOT_COORDINATOR elsewhere) and ShareFetch / ShareAcknowledge go to each
partition's leader (NOT_LEADER_OR_FOLLOWER elsewhere, with the leader and its
endpoint), which reads the share partition's state from the share coordinator
before it first acquires (ShareService.load).

Versions: Kafka 4.4's (ShareGroupHeartbeat and ShareGroupDescribe v1 -- v0 was
4.0's early access --, ShareFetch and ShareAcknowledge v1-2).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field
from typing import Callable

from kproto.common import now_ms
from kproto.errors import ErrorCode, KafkaError
from kproto.records import iter_batches
from kproto.schemas import protocol as P
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import G_DENIED, Access, PerEntry
from kproto.server.handlers import handles
from kproto.server.handlers.groups import describe_topics_denied, heartbeat_topics
from kproto.server.share.coordinator import AckBatch, Acknowledge

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
DEFAULT_MAX_RECORDS = 500           # ShareFetch v0 has no max_records (the consumer's max.poll.records)


@dataclass
class ShareSession:
    epoch: int                                              # the epoch the next request must carry
    partitions: list[tuple] = field(default_factory=list)   # (topic id, partition), in request order


def _shares(broker):
    broker.shares.ensure_topic()
    return broker.shares


def _sessions(broker) -> dict:
    return broker.shares.sessions


def other_group(broker, group_id: str) -> bool:
    """A classic, KIP-848 consumer or KIP-1071 streams group has this id (a group id is one type)."""
    coordinator = broker.groups.coordinator
    return coordinator.group(group_id) is not None or coordinator.consumer_group(group_id) is not None or \
        coordinator.streams_group(group_id) is not None


# --- authorization (KafkaApis.handleShareGroupHeartbeatRequest: READ on the group, then DESCRIBE
# on the subscribed topics; handleShareFetchRequest, handleShareAcknowledgeRequest: READ on the
# group, else the error alone, then READ on each topic: a partition of a topic the principal may
# not READ answers TOPIC_AUTHORIZATION_FAILED, is not fetched and its acknowledgements are not
# applied (handleFetchFromShareFetchRequest, handleAcknowledgements).
# handleShareGroupDescribeRequest: DESCRIBE on each group, then on the assigned topics) ---

Readable = Callable[[str], bool]        # may the principal READ this topic


def _everything(topic: str) -> bool:
    return True


def _topic_rule(error_response, run):
    """READ on the group (else the error alone), then ``run`` with READ checked per topic."""
    async def check(a: Access, broker, ctx, body, handler):
        if not a.ok(O.READ, R.GROUP, body.group_id):
            return error_response(body, G_DENIED)
        readable = functools.cache(lambda topic: a.ok(O.READ, R.TOPIC, topic))
        return await run(broker, ctx, body, readable)
    return check


def _share_error(**extra):
    """A share API's whole-request GROUP_AUTHORIZATION_FAILED answer."""
    return lambda b, e: {"error_code": e, "error_message": None, **extra}


_SHARE_GROUP_HEARTBEAT = heartbeat_topics(
    _share_error(member_id=None, member_epoch=0, heartbeat_interval_ms=0, assignment=None),
    {"error_message": None, "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None})
_SHARE_ERROR = _share_error(acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])
_SHARE_GROUP_DESCRIBE_GROUPS = PerEntry("group_ids", lambda e: e, R.GROUP, O.DESCRIBE, "groups",
                                lambda e, err: {"error_code": err, "error_message": None, "group_id": e,
                                                "group_state": "", "group_epoch": -1, "assignment_epoch": -1,
                                                "assignor_name": "", "members": [],
                                                "authorized_operations": -2147483648}, error=G_DENIED)


def not_coordinator(broker, group_id: str, api: str) -> ErrorCode | None:
    """A node of a cluster coordinates the share groups of the ``__consumer_offsets``
    partitions it leads (GroupCoordinatorService: NOT_COORDINATOR elsewhere)."""
    return None if broker.cluster is None else broker.groups.coordinator.validate_group_status(group_id, api)


@handles(P.share_group_heartbeat, authorize=_SHARE_GROUP_HEARTBEAT)
async def share_group_heartbeat(broker, ctx, body) -> dict:
    service = _shares(broker)
    error = not_coordinator(broker, body.group_id, "ShareGroupHeartbeat")
    if error is not None:
        return {"throttle_time_ms": 0, "error_code": error, "error_message": None, "member_id": None,
                "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    if other_group(broker, body.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": f"Group {body.group_id} is not a share group.", "member_id": None,
                "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    out = service.coordinator.heartbeat(
        body.group_id, body.member_id, body.member_epoch, body.rack_id,
        None if body.subscribed_topic_names is None else list(body.subscribed_topic_names),
        ctx.client_id or "", ctx.client_host, now_ms())
    service.drive()
    return {"throttle_time_ms": 0, **out}


async def SHARE_GROUP_DESCRIBE(a: Access, broker, ctx, body, handler):
    response = await a.per_entry(_SHARE_GROUP_DESCRIBE_GROUPS, broker, body, handler)
    describe_topics_denied(a, response["groups"], lambda m: (m["assignment"]["topic_partitions"],))
    return response


@handles(P.share_group_describe, authorize=SHARE_GROUP_DESCRIBE)
async def share_group_describe(broker, ctx, body) -> dict:
    coordinator = broker.shares.coordinator
    groups = []
    for group_id in body.group_ids:
        error = not_coordinator(broker, group_id, "ShareGroupDescribe")
        if error is not None:
            groups.append({**coordinator.describe(""), "group_id": group_id, "error_code": error,
                           "error_message": None})
            continue
        d = coordinator.describe(group_id)
        if d["error_code"] and other_group(broker, group_id):
            d.update(error_message=f"Group {group_id} is not a share group.")
        groups.append(d)
    return {"throttle_time_ms": 0, "groups": groups}


def _ack_batches(topics) -> tuple[AckBatch, ...]:
    return tuple(AckBatch(t.topic_id, p.partition_index, b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                 for t in topics for p in t.partitions for b in p.acknowledgement_batches)


def _denied(service, readable: Readable, tp: tuple) -> bool:
    """A partition of a known topic the principal may not READ (an unknown topic id is
    answered UNKNOWN_TOPIC_ID by the handler, as Kafka's share fetch context does)."""
    topic = service.catalog.topic_name(tp[0])
    return topic is not None and not readable(topic)


def _session_error(sessions: dict, key, epoch: int, *, fetch: bool) -> ErrorCode:
    """INVALID_SHARE_SESSION_EPOCH / SHARE_SESSION_NOT_FOUND, or NONE (ShareSessionCache)."""
    if epoch == INITIAL_EPOCH:
        return ErrorCode.NONE if fetch else ErrorCode.INVALID_SHARE_SESSION_EPOCH
    session = sessions.get(key)
    if session is None:
        return ErrorCode.SHARE_SESSION_NOT_FOUND
    if epoch != FINAL_EPOCH and epoch != session.epoch:
        return ErrorCode.INVALID_SHARE_SESSION_EPOCH
    return ErrorCode.NONE


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


def _partition_entry(broker, service, tp: tuple, **fields) -> dict:
    leader = {"leader_id": broker.node_id, "leader_epoch": 0}
    if broker.cluster is not None:
        topic = service.catalog.topic_name(tp[0])
        reg = None if topic is None else broker.cluster.image.partition(topic, tp[1])
        leader = {"leader_id": -1 if reg is None else reg.leader, "leader_epoch": -1 if reg is None else reg.leader_epoch}
    return {"partition_index": tp[1], "error_code": 0, "error_message": None, "acknowledge_error_code": 0,
            "acknowledge_error_message": None, "current_leader": leader, **fields}


async def _lead(broker, service, group_id: str, tps) -> dict:
    """On a node of a cluster: {(topic id, partition): error} of the partitions not led here
    (ReplicaManager.getPartitionOrError) or whose share partition could not be read from
    the share coordinator; the others' share partitions are loaded. Standalone: {}."""
    cluster = broker.cluster
    if cluster is None:
        return {}
    errors = {}
    for tp in dict.fromkeys(tps):
        topic = service.catalog.topic_name(tp[0])
        if topic is None:
            continue        # UNKNOWN_TOPIC_ID, as a single node answers it
        part, error = cluster.leader_for(topic, tp[1])
        if not error:
            error = await service.load((group_id, *tp), topic, part.leader_epoch)
        if error:
            errors[tp] = error
    return errors


def _node_endpoints(broker, ctx, entries) -> list[dict]:
    """The leaders named by NOT_LEADER_OR_FOLLOWER entries, on the listener asked."""
    if broker.cluster is None:
        return []
    out = {}
    for e in entries:
        leader = e["current_leader"]["leader_id"]
        if e["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER and leader >= 0 and leader not in out:
            where = broker.cluster.endpoint_of(leader, ctx.listener.name if ctx.listener else None)
            info = broker.cluster.image.brokers.get(leader)
            if where is not None:
                out[leader] = {"node_id": leader, "host": where[0], "port": where[1],
                               "rack": None if info is None else info.rack}
    return list(out.values())


async def _acknowledge(broker, service, group_id: str, member_id: str, batches: tuple[AckBatch, ...],
                       readable: Readable) -> dict:
    """{(topic id, partition): acknowledge error}; those of a topic the principal may not READ
    are not applied (TOPIC_AUTHORIZATION_FAILED), nor those of a partition not led here."""
    denied = {(b.topic_id, b.partition): ErrorCode.TOPIC_AUTHORIZATION_FAILED for b in batches
              if _denied(service, readable, (b.topic_id, b.partition))}
    denied.update(await _lead(broker, service, group_id,
                              [(b.topic_id, b.partition) for b in batches if (b.topic_id, b.partition) not in denied]))
    batches = tuple(b for b in batches if (b.topic_id, b.partition) not in denied)
    if not batches:
        return denied
    return {**await service.ask(Acknowledge(group_id, member_id, batches)), **denied}


def _acquire(broker, service, group_id: str, member_id: str, partitions: list[tuple], max_records: int,
             max_bytes: int) -> tuple[dict, int]:
    """{(topic id, partition): (error, records bytes, acquired runs)} and records acquired."""
    coordinator, catalog = service.coordinator, service.catalog
    out, total, t = {}, 0, now_ms()
    for topic_id, p in partitions:
        topic = catalog.topic_name(topic_id)
        plog = None if topic is None else broker.logs.get_log(topic, p)
        if plog is None:
            out[topic_id, p] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if topic is not None
                                else ErrorCode.UNKNOWN_TOPIC_ID, b"", [])
            continue
        if total >= max_records or max_bytes <= 0:
            continue
        sp = coordinator.share_partition(group_id, topic, p, t)
        if sp is None:      # a cluster's: its leadership moved since it was loaded
            out[topic_id, p] = (ErrorCode.NOT_LEADER_OR_FOLLOWER, b"", [])
            continue
        offset = max(sp.next_fetch_offset(), plog.log_start_offset)
        try:
            # below the high watermark (the read's default bound): what every replica has
            data = plog.read(offset, max_bytes, min_one_message=True).read() if offset < plog.high_watermark else b""
        except KafkaError as e:
            out[topic_id, p] = (e.error_code, b"", [])
            continue
        batches = [(b.base_offset, b.last_offset) for b in iter_batches(data, verify_crc=False,
                                                                        allow_incomplete=True)
                   if not b.is_control]
        acquired = coordinator.acquire(group_id, member_id, topic, p, batches, max_records - total, t)
        if acquired:
            total += sum(last - first + 1 for first, last, _ in acquired)
            max_bytes -= len(data)
            out[topic_id, p] = (ErrorCode.NONE, data, acquired)
    return out, total


async def _share_fetch(broker, ctx, body, readable: Readable) -> dict:
    service = _shares(broker)
    sessions = _sessions(broker)
    key = (body.group_id, body.member_id)
    base = {"throttle_time_ms": 0, "error_message": None, "acquisition_lock_timeout_ms": service.coordinator.lock_duration_ms(body.group_id),
            "responses": [], "node_endpoints": []}
    if not body.group_id or not body.member_id:
        return {**base, "error_code": ErrorCode.INVALID_REQUEST}
    error = _session_error(sessions, key, body.share_session_epoch, fetch=True)
    if error:
        return {**base, "error_code": error}
    requested = [(t.topic_id, p.partition_index) for t in body.topics for p in t.partitions]
    if body.share_session_epoch == INITIAL_EPOCH:
        sessions[key] = ShareSession(1, list(dict.fromkeys(requested)))
    elif body.share_session_epoch != FINAL_EPOCH:
        session = sessions[key]
        forgotten = {(t.topic_id, p) for t in body.forgotten_topics_data for p in t.partitions}
        session.partitions = [tp for tp in dict.fromkeys([*session.partitions, *requested]) if tp not in forgotten]
        session.epoch = _next_epoch(session.epoch)
    acks = await _acknowledge(broker, service, body.group_id, body.member_id, _ack_batches(body.topics), readable)
    results: dict = {}
    if body.share_session_epoch == FINAL_EPOCH:
        sessions.pop(key, None)
        service.coordinator.release_member(body.group_id, body.member_id, now_ms())
        service.drive()
    else:
        partitions = [tp for tp in sessions[key].partitions if not _denied(service, readable, tp)]
        denied = {tp: (ErrorCode.TOPIC_AUTHORIZATION_FAILED, b"", []) for tp in sessions[key].partitions
                  if tp not in partitions}
        for tp, error in (await _lead(broker, service, body.group_id, partitions)).items():
            denied[tp] = (error, b"", [])
            partitions.remove(tp)
        max_records = body.get("max_records", 0) or DEFAULT_MAX_RECORDS
        max_bytes = body.max_bytes if body.max_bytes > 0 else 2**31 - 1
        deadline = now_ms() + max(body.max_wait_ms, 0)
        while True:
            service.available.clear()
            results, total = _acquire(broker, service, body.group_id, body.member_id, partitions,
                                      max_records, max_bytes)
            service.drive()
            wait = deadline - now_ms()
            if total or wait <= 0 or any(e for e, _, _ in results.values()) or acks or not partitions:
                break
            appended = asyncio.ensure_future(asyncio.shield(broker.wait_for_append()))
            available = asyncio.ensure_future(service.available.wait())
            await asyncio.wait({appended, available}, timeout=wait / 1000, return_when=asyncio.FIRST_COMPLETED)
            for f in (appended, available):
                f.cancel()
        results.update(denied)
    by_topic: dict = {}
    for tp in dict.fromkeys([*acks, *results]):
        error, data, acquired = results.get(tp, (ErrorCode.NONE, b"", []))
        by_topic.setdefault(tp[0], []).append(_partition_entry(
            broker, service, tp, error_code=error, acknowledge_error_code=acks.get(tp, ErrorCode.NONE),
            records=data, acquired_records=[{"first_offset": f, "last_offset": last, "delivery_count": c}
                                            for f, last, c in acquired]))
    return {**base, "error_code": 0, "node_endpoints": _node_endpoints(broker, ctx, (
                e for parts in by_topic.values() for e in parts)),
            "responses": [{"topic_id": t, "partitions": parts} for t, parts in by_topic.items()]}


@handles(P.share_fetch, authorize=_topic_rule(_SHARE_ERROR, _share_fetch))
async def share_fetch(broker, ctx, body) -> dict:
    return await _share_fetch(broker, ctx, body, _everything)


async def _share_acknowledge(broker, ctx, body, readable: Readable) -> dict:
    service = _shares(broker)
    sessions = _sessions(broker)
    key = (body.group_id, body.member_id)
    base = {"throttle_time_ms": 0, "error_message": None,
            "acquisition_lock_timeout_ms": service.coordinator.lock_duration_ms(body.group_id),
            "responses": [], "node_endpoints": []}
    error = _session_error(sessions, key, body.share_session_epoch, fetch=False)
    if error:
        return {**base, "error_code": error}
    if body.share_session_epoch != FINAL_EPOCH:
        sessions[key].epoch = _next_epoch(sessions[key].epoch)
    acks = await _acknowledge(broker, service, body.group_id, body.member_id, _ack_batches(body.topics), readable)
    if body.share_session_epoch == FINAL_EPOCH:
        sessions.pop(key, None)
        service.coordinator.release_member(body.group_id, body.member_id, now_ms())
        service.drive()
    by_topic: dict = {}
    for tp, code in acks.items():
        entry = _partition_entry(broker, service, tp, error_code=code)
        for k in ("acknowledge_error_code", "acknowledge_error_message"):
            del entry[k]
        by_topic.setdefault(tp[0], []).append(entry)
    return {**base, "error_code": 0, "node_endpoints": _node_endpoints(broker, ctx, (
                e for parts in by_topic.values() for e in parts)),
            "responses": [{"topic_id": t, "partitions": parts} for t, parts in by_topic.items()]}



@handles(P.share_acknowledge, authorize=_topic_rule(_SHARE_ERROR, _share_acknowledge))
async def share_acknowledge(broker, ctx, body) -> dict:
    return await _share_acknowledge(broker, ctx, body, _everything)
