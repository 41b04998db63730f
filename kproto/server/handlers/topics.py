"""CreateTopics, DeleteTopics, CreatePartitions on this single node.

Replication factor 1 only (INVALID_REPLICATION_FACTOR otherwise, with Kafka's
text). Everything about the topic itself (name, internal, collision, existing,
configs, partition count) is checked once, by LogManager.create_topic; this
module only translates its errors. Internal topics are neither created,
deleted nor grown by clients. Topics, their ids and overrides persist.
"""

from __future__ import annotations

import asyncio
import uuid

from kproto.common import now_ms
from kproto.errors import ErrorCode, KafkaError, UnknownTopicOrPartitionError
from kproto.log.manager import EXCESSIVE_BATCH, MAX_RECORDS_PER_USER_OP
from kproto.schemas import protocol as P
from kproto.server.handlers.configs import topic_config_entries
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import Access, PerEntry, topic_name
from kproto.server.cluster.election import TOO_FEW_BROKERS
from kproto.server.handlers import handles
from kproto.server.quotas import ThrottlingQuotaExceeded


ZERO_UUID = uuid.UUID(int=0)


def _check_replicas(broker, rf: int) -> None:
    if rf < 1 or rf > 1:
        raise KafkaError(f"Unable to replicate the partition {rf} time(s): The target replication factor of "
                         f"{rf} cannot be reached because {TOO_FEW_BROKERS.format(1)}"
                         if rf > 1 else "Replication factor must be larger than 0, or -1 to use the default value.",
                         error_code=ErrorCode.INVALID_REPLICATION_FACTOR)


def _check_assignment(broker, broker_ids) -> None:
    """ReplicationControlManager.validateManualPartitionAssignment, in its order and
    words (measured on Kafka 4.4): the ids sorted, the first unregistered one named.
    On one node every id but its own is unregistered, so a partition that passes has
    one replica, as every other has; a node of a cluster knows the controller's registrations."""
    registered = set(broker.cluster.image.brokers) if broker.cluster is not None else {broker.node_id}
    ids = sorted(broker_ids)
    if not ids:
        raise KafkaError("The manual partition assignment includes an empty replica list.",
                         error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    for previous, b in zip([None] + ids, ids):
        if b not in registered:
            raise KafkaError(f"The manual partition assignment includes broker {b}, but no such broker is "
                             "registered.", error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        if b == previous:
            raise KafkaError(f"The manual partition assignment includes the broker {b} more than once.",
                             error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)


def _mutation_quota(broker, ctx, strict_since: int):
    """ControllerApis: the request's controller_mutation_rate quota, strict from ``strict_since``."""
    return broker.quotas.mutation.quota_for(ctx.principal.name, ctx.client_id or "",
                                            ctx.request_api_version >= strict_since)


def _apply(quota, partitions: int) -> None:
    """ReplicationControlManager's applyPartitionChangeQuota (ThrottlingQuotaExceeded if refused)."""
    quota.apply(partitions, now_ms())


def _failed(out: dict, e: KafkaError) -> None:
    out.update(error_code=e.error_code, error_message=None if isinstance(e, ThrottlingQuotaExceeded) else str(e))


def _answer(ctx, quota, body: dict) -> dict:
    """sendResponseMaybeThrottleWithControllerQuota: the mutation throttle answered, the channel muted."""
    throttle = quota.throttle_time_ms(now_ms())
    if throttle:
        body["throttle_time_ms"] = throttle
        ctx.connection.throttle_ms = max(ctx.connection.throttle_ms, throttle)
    return body


def _create(broker, t, validate_only: bool, version: int, quota) -> dict:
    out = {"name": t.name, "topic_id": ZERO_UUID, "error_code": 0, "error_message": None,
           "num_partitions": -1, "replication_factor": -1, "configs": None}
    try:
        if t.assignments:
            partitions, rf = len(t.assignments), 1
        else:
            partitions = broker.config["num.partitions"] if t.num_partitions == -1 else t.num_partitions
            rf = broker.config["default.replication.factor"] if t.replication_factor == -1 else t.replication_factor

        def check_placement() -> None:       # after the topic's own checks, as the controller orders them
            if t.assignments:
                if t.num_partitions != -1 or t.replication_factor != -1:
                    raise KafkaError("Both numPartitions or replicationFactor and replicasAssignments were "
                                     "set. Both cannot be used at the same time.",
                                     error_code=ErrorCode.INVALID_REQUEST)
                for a in t.assignments:
                    _check_assignment(broker, a.broker_ids)
            else:
                _check_replicas(broker, rf)
            _apply(quota, partitions)

        overrides = {c.name: c.value for c in t.configs if c.value is not None}
        broker.logs.create_topic(t.name, partitions, overrides, validate_only=validate_only,
                                 check_placement=check_placement)
        if not validate_only:
            out["topic_id"] = broker.logs.topic_id(t.name)
        out.update(num_partitions=partitions, replication_factor=rf)
        if version >= 5 and not validate_only:
            out["configs"] = [{k: e[k] for k in ("name", "value", "read_only", "config_source", "is_sensitive")}
                              for e in topic_config_entries(broker, t.name)]
    except KafkaError as e:
        _failed(out, e)
    return out


CREATE_TOPICS = PerEntry("topics", topic_name, R.TOPIC, O.CREATE, "topics",
                         lambda e, err: {"name": e.name, "error_code": err, "num_partitions": -1,
                                         "replication_factor": -1, "configs": None},
                         unless_cluster=O.CREATE)


DELETE_TOPICS = PerEntry("topics", lambda e: e.name, R.TOPIC, O.DELETE, "responses",
                         lambda e, err: {"name": e.name, "topic_id": e.topic_id, "error_code": err})


DELETE_TOPICS_V0 = PerEntry("topic_names", lambda e: e, R.TOPIC, O.DELETE, "responses",
                            lambda e, err: {"name": e, "error_code": err})


def delete_topics_entries(version: int) -> PerEntry:
    """Where DeleteTopics ``version`` lists its topics and how one answers an error."""
    return DELETE_TOPICS_V0 if version < 6 else DELETE_TOPICS


async def _delete_topics(a: Access, broker, ctx, body, handler):
    """v6 names topics by id too: the id's topic is what DELETE is checked on."""
    rule = delete_topics_entries(ctx.request_api_version)
    if ctx.request_api_version >= 6:
        by_id = {broker.logs.topic_id(t): t for t in broker.logs.topics()}
        for e in body.topics:
            if e.name is None:
                e.name = by_id.get(e.topic_id)
    denied = a.split(body, rule)
    response = await handler(broker, ctx, body)
    a.merge(response, rule, denied)
    return response


CREATE_PARTITIONS = PerEntry("topics", topic_name, R.TOPIC, O.ALTER, "results",
                             lambda e, err: {"name": e.name, "error_code": err, "error_message": None})


@handles(P.create_topics, authorize=CREATE_TOPICS)
async def create_topics(broker, ctx, body) -> dict:
    if broker.cluster is not None:
        return await broker.cluster.create_topics(body, ctx.request_api_version)
    # Files are created off the event loop: thousands of partitions take seconds,
    # and every other connection must keep being served meanwhile.
    quota = _mutation_quota(broker, ctx, 6)
    topics = await asyncio.to_thread(
        lambda: [_create(broker, t, body.validate_only, ctx.request_api_version, quota) for t in body.topics])
    return _answer(ctx, quota, {"throttle_time_ms": 0, "topics": topics})


def _delete(broker, name: str | None, topic_id: uuid.UUID, quota) -> dict:
    out = {"name": name, "topic_id": topic_id, "error_code": 0, "error_message": None}
    try:
        if name is None:
            name = next((t for t in broker.logs.topics() if broker.logs.topic_id(t) == topic_id), None)
            if name is None:
                raise KafkaError("This server does not host this topic ID.", error_code=ErrorCode.UNKNOWN_TOPIC_ID)
            out["name"] = name
        if not broker.logs.has_topic(name):
            raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
        broker.logs.check_not_internal(name, "delete")
        out["topic_id"] = broker.logs.topic_id(name)
        _apply(quota, broker.partition_count(name))
        broker.logs.delete_topic(name)       # producer state goes with the deleted logs
    except KafkaError as e:
        _failed(out, e)
    return out


@handles(P.delete_topics, authorize=_delete_topics)
async def delete_topics(broker, ctx, body) -> dict:
    if ctx.request_api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(n, ZERO_UUID) for n in body.topic_names]
    if broker.cluster is not None:
        return {"throttle_time_ms": 0, "responses": await broker.cluster.delete_topics(wanted, body.timeout_ms)}
    quota = _mutation_quota(broker, ctx, 5)
    responses = await asyncio.to_thread(lambda: [_delete(broker, n, i, quota) for n, i in wanted])
    return _answer(ctx, quota, {"throttle_time_ms": 0, "responses": responses})


def _grow(broker, t, validate_only: bool, quota) -> dict:
    """One topic of CreatePartitions, checked; standalone, its new logs created (a node of a
    cluster hands what passes to its controller)."""
    out = {"name": t.name, "error_code": 0, "error_message": None}
    try:
        if not broker.has_topic(t.name):
            raise UnknownTopicOrPartitionError(f"The topic '{t.name}' does not exist.")
        broker.logs.check_not_internal(t.name, "grow")
        current = broker.partition_count(t.name)
        # Kafka 4's texts: the KRaft controller's (ReplicationControlManager.createPartitions)
        if t.count == current:
            raise KafkaError(f"Topic already has {current} partition(s).", error_code=ErrorCode.INVALID_PARTITIONS)
        if t.count < current:
            raise KafkaError(f"The topic {t.name} currently has {current} partition(s); {t.count} would not "
                             "be an increase.", error_code=ErrorCode.INVALID_PARTITIONS)
        if t.assignments is not None:
            if len(t.assignments) != t.count - current:
                raise KafkaError(f"Attempted to add {t.count - current} additional partition(s), but only "
                                 f"{len(t.assignments)} assignment(s) were specified.",
                                 error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
            for a in t.assignments:
                _check_assignment(broker, a.broker_ids)
        if t.count - current > MAX_RECORDS_PER_USER_OP:
            raise KafkaError(EXCESSIVE_BATCH, error_code=ErrorCode.POLICY_VIOLATION)
        _apply(quota, t.count - current)
        if not validate_only and broker.cluster is None:
            try:
                for p in range(current, t.count):
                    broker.logs.get_or_create_log(t.name, p)
            except OSError as e:
                raise KafkaError(f"Error while creating partition {p} of {t.name}: {e}",
                                 error_code=ErrorCode.KAFKA_STORAGE_ERROR) from e
    except KafkaError as e:
        _failed(out, e)
    return out


@handles(P.create_partitions, authorize=CREATE_PARTITIONS)
async def create_partitions(broker, ctx, body) -> dict:
    quota = _mutation_quota(broker, ctx, 3)
    if broker.cluster is not None:
        # checked here in the controller's words, then made by the controller (PartitionRecords)
        results = [_grow(broker, t, body.validate_only, quota) for t in body.topics]
        grow = [t for t, r in zip(body.topics, results) if not r["error_code"]]
        if grow and not body.validate_only:
            made = await broker.cluster.create_partitions(grow, body.timeout_ms)
            results = [made.get(r["name"], r) for r in results]
        return _answer(ctx, quota, {"throttle_time_ms": 0, "results": results})
    results = await asyncio.to_thread(lambda: [_grow(broker, t, body.validate_only, quota) for t in body.topics])
    return _answer(ctx, quota, {"throttle_time_ms": 0, "results": results})
