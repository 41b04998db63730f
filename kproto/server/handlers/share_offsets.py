"""A share group's offsets, for admins (KIP-932): DescribeShareGroupOffsets,
AlterShareGroupOffsets, DeleteShareGroupOffsets, as Kafka 4.4's KafkaApis and
GroupCoordinatorService answer them. They read and change the share
coordinator's one store (``ShareCoordinator.states``) through the same state
operations the share-group state APIs use (kproto.server.handlers.share_state).

* Describe: each partition's start offset and leader epoch from the state
  summary, and its lag ``log end - start offset - delivery-complete count``
  (-1 when either is not known: never initialized, or no count written); a
  topic not in the metadata answers start offset -1; no topics listed: every
  partition the group has state for. The group need not exist.
* Alter: the group (created when absent) must be empty (NON_EMPTY_GROUP);
  each partition is initialized at the group epoch and the given start offset.
* Delete: the group must exist and be empty; each topic's state is deleted, a
  topic the group has none of answers UNKNOWN_TOPIC_OR_PARTITION "There is no
  offset information to delete.".

Authorization (KafkaApis.handle*ShareGroupOffsetsRequest): describe DESCRIBE
on the group (else GROUP_AUTHORIZATION_FAILED for it) and on each topic
(TOPIC_AUTHORIZATION_FAILED for its partitions; listing all offsets leaves
undescribable topics out); alter READ on the group and on each topic; delete
DELETE on the group and READ on each topic.

On a node of a cluster they go to the group's coordinator (NOT_COORDINATOR
elsewhere); Describe of the topics named asks each partition's share
coordinator (ShareService.state). Describe of every topic, Alter and Delete
are refused there (INVALID_REQUEST): the group coordinator does not record
which share partitions it initialized (Kafka's ShareGroupStatePartitionMetadata)
and the partition leaders' live share partitions would not see the change.
"""

from __future__ import annotations

import uuid

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import G_DENIED, T_DENIED
from kproto.server.handlers import handles
from kproto.server.handlers.share import not_coordinator, other_group as _other_group
from kproto.server.share.coordinator import StateOp

ZERO_UUID = uuid.UUID(int=0)
UNINITIALIZED = -1          # PartitionFactory.UNINITIALIZED_START_OFFSET, UNINITIALIZED_LAG
NOT_A_SHARE_GROUP = "Group {} is not a share group."
NOT_IN_A_CLUSTER = "{} is not served by a kproto cluster yet (docs/cluster.md)"


class _AllowAll:
    """No authorizer configured: every check passes."""

    @staticmethod
    def ok(*_args) -> bool:
        return True


def _service(broker):
    broker.shares.ensure_topic()
    return broker.shares


def _described(index: int, error: int = 0, message: str | None = None, start: int = UNINITIALIZED,
               leader_epoch: int = 0, lag: int = UNINITIALIZED) -> dict:
    return {"partition_index": index, "start_offset": start, "leader_epoch": leader_epoch, "lag": lag,
            "error_code": error, "error_message": message}


async def _describe_group(broker, a, group) -> dict:
    out = {"group_id": group.group_id, "topics": [], "error_code": 0, "error_message": None}
    if not a.ok(O.DESCRIBE, R.GROUP, group.group_id):
        return {**out, "error_code": G_DENIED, "error_message": G_DENIED.description}
    error = not_coordinator(broker, group.group_id, "DescribeShareGroupOffsets")
    if error is None and broker.cluster is not None and group.topics is None:
        return {**out, "error_code": ErrorCode.INVALID_REQUEST,
                "error_message": NOT_IN_A_CLUSTER.format("Describing every topic's share-group offsets")}
    if error is not None:
        return {**out, "error_code": error, "error_message": error.description}
    service = _service(broker)
    catalog, coordinator = service.catalog, service.coordinator
    if group.topics is None:        # all: what the group has state for, describable topics only
        held: dict[uuid.UUID, list[int]] = {}
        for g, topic_id, p in coordinator.states:
            # what the group coordinator initialized: a share group's, not a bare state-API write's
            if g == group.group_id and g in coordinator.groups:
                held.setdefault(topic_id, []).append(p)
        wanted = [(catalog.topic_name(t), t, sorted(ps)) for t, ps in held.items()]
        wanted = [w for w in wanted if w[0] is not None and a.ok(O.DESCRIBE, R.TOPIC, w[0])]
        missing: list[dict] = []
    else:
        wanted, missing = [], []
        for t in group.topics:
            if not a.ok(O.DESCRIBE, R.TOPIC, t.topic_name):
                out["topics"].append({"topic_name": t.topic_name, "topic_id": ZERO_UUID, "partitions": [
                    _described(p, T_DENIED, T_DENIED.description, leader_epoch=-1) for p in t.partitions]})
            elif (topic_id := catalog.topic_id(t.topic_name)) is None:
                missing.append({"topic_name": t.topic_name, "topic_id": ZERO_UUID,
                                "partitions": [_described(p) for p in t.partitions]})
            else:
                wanted.append((t.topic_name, topic_id, list(t.partitions)))
    ops = tuple(StateOp("summary", (group.group_id, topic_id, p)) for _, topic_id, ps in wanted for p in ps)
    answers = iter(await service.state(ops) if ops else [])
    for name, topic_id, ps in wanted:
        parts = []
        for p in ps:
            s = next(answers)
            if s["error_code"] or s["start_offset"] == UNINITIALIZED or s["delivery_complete_count"] == -1:
                ok = s["error_code"] == 0
                parts.append(_described(p, start=s["start_offset"] if ok else UNINITIALIZED,
                                        leader_epoch=s["leader_epoch"] if ok else 0))
                continue
            _, log_end = catalog.log_offsets(name, p)
            parts.append(_described(p, start=s["start_offset"], leader_epoch=s["leader_epoch"],
                                    lag=log_end - s["start_offset"] - s["delivery_complete_count"]))
        out["topics"].append({"topic_name": name, "topic_id": topic_id, "partitions": parts})
    out["topics"] += missing
    return out


async def _with_access(a, broker, ctx, body, handler):
    """The handler checks each group and topic itself, as KafkaApis does inside these handlers."""
    return await handler(broker, ctx, body, a)


@handles(P.describe_share_group_offsets, authorize=_with_access)
async def describe_share_group_offsets(broker, ctx, body, a=_AllowAll) -> dict:
    return {"throttle_time_ms": 0, "groups": [await _describe_group(broker, a, g) for g in body.groups]}


def _group_error(code: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message or code.description,
            "responses": []}


@handles(P.alter_share_group_offsets, authorize=_with_access)
async def alter_share_group_offsets(broker, ctx, body, a=_AllowAll) -> dict:
    if not a.ok(O.READ, R.GROUP, body.group_id):
        return _group_error(G_DENIED)
    if broker.cluster is not None:
        return _group_error(ErrorCode.INVALID_REQUEST, NOT_IN_A_CLUSTER.format("AlterShareGroupOffsets"))
    service = _service(broker)
    catalog, coordinator = service.catalog, service.coordinator
    if not body.group_id:
        return _group_error(ErrorCode.INVALID_GROUP_ID)
    if _other_group(broker, body.group_id):
        return _group_error(ErrorCode.GROUP_ID_NOT_FOUND, NOT_A_SHARE_GROUP.format(body.group_id))
    group = coordinator.groups.get(body.group_id)
    if group is not None and group.members:
        return _group_error(ErrorCode.NON_EMPTY_GROUP)
    group = coordinator.share_group(body.group_id)      # getOrMaybeCreateShareGroup
    refused, responses, ops, slots = [], [], [], []
    for t in body.topics:
        topic_id = catalog.topic_id(t.topic_name)
        denied = not a.ok(O.READ, R.TOPIC, t.topic_name)
        entry = {"topic_name": t.topic_name, "topic_id": ZERO_UUID if topic_id is None or denied else topic_id,
                 "partitions": []}
        # KafkaApis answers an unreadable or unknown topic before the coordinator sees the rest
        (refused if denied or topic_id is None else responses).append(entry)
        for p in t.partitions:
            if denied or topic_id is None or not 0 <= p.partition_index < catalog.partition_count(t.topic_name):
                code = T_DENIED if denied else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                entry["partitions"].append({"partition_index": p.partition_index, "error_code": code,
                                            "error_message": code.description})
                continue
            part = {"partition_index": p.partition_index, "error_code": 0, "error_message": None}
            entry["partitions"].append(part)
            ops.append(StateOp("initialize", (body.group_id, topic_id, p.partition_index),
                               # measured: a group this alter creates is initialized at state epoch 1
                               state_epoch=max(group.group_epoch, 1), start_offset=p.start_offset))
            slots.append(part)
    if ops:
        for part, answer in zip(slots, await service.state(tuple(ops))):
            part.update(error_code=answer["error_code"], error_message=answer["error_message"])
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": refused + responses}


@handles(P.delete_share_group_offsets, authorize=_with_access)
async def delete_share_group_offsets(broker, ctx, body, a=_AllowAll) -> dict:
    if not a.ok(O.DELETE, R.GROUP, body.group_id):
        return _group_error(G_DENIED)
    if broker.cluster is not None:
        return _group_error(ErrorCode.INVALID_REQUEST, NOT_IN_A_CLUSTER.format("DeleteShareGroupOffsets"))
    service = _service(broker)
    catalog, coordinator = service.catalog, service.coordinator
    if not body.group_id:
        return _group_error(ErrorCode.INVALID_GROUP_ID)
    group = coordinator.groups.get(body.group_id)
    if group is None and any(k[0] == body.group_id for k in coordinator.states):
        group = coordinator.share_group(body.group_id)     # membership is not persisted: state is
    if group is None:
        message = NOT_A_SHARE_GROUP if _other_group(broker, body.group_id) else "Group {} not found."
        return _group_error(ErrorCode.GROUP_ID_NOT_FOUND, message.format(body.group_id))
    if group.members:
        return _group_error(ErrorCode.NON_EMPTY_GROUP)
    deleted, refused, ops = [], [], []
    for t in body.topics:
        topic_id = catalog.topic_id(t.topic_name)
        if not a.ok(O.READ, R.TOPIC, t.topic_name) or topic_id is None:
            code = T_DENIED if topic_id is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            refused.append({"topic_name": t.topic_name, "topic_id": ZERO_UUID, "error_code": code,
                            "error_message": code.description})
            continue
        held = sorted(k for k in coordinator.states if k[0] == body.group_id and k[1] == topic_id)
        if not held:
            refused.append({"topic_name": t.topic_name, "topic_id": ZERO_UUID,
                            "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            "error_message": "There is no offset information to delete."})
            continue
        deleted.append({"topic_name": t.topic_name, "topic_id": topic_id, "error_code": 0, "error_message": None})
        ops += [StateOp("delete", k) for k in held]
    if ops:
        answers = await service.state(tuple(ops))
        failed = {op.key[1]: a_["error_code"] for op, a_ in zip(ops, answers) if a_["error_code"]}
        for entry in deleted:
            if entry["topic_id"] in failed:
                entry.update(error_code=failed[entry["topic_id"]], error_message=None)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": deleted + refused}
