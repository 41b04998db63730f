"""OffsetDelete: remove a group's committed offsets (KafkaApis.handleOffsetDeleteRequest,
the coordinator's OffsetMetadataManager.deleteOffsets in ``GroupOffsets``).

DELETE on the group, else GROUP_AUTHORIZATION_FAILED and no topics; a topic the principal
may not READ answers TOPIC_AUTHORIZATION_FAILED on each partition, a topic or partition the
broker does not have UNKNOWN_TOPIC_OR_PARTITION, those first, then the coordinator's answers
(OffsetDeleteResponse.Builder.merge). A group-level error from the coordinator
(GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) is the whole answer (getErrorResponse).
v0 only, as Kafka 4.
"""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import G_DENIED, T_DENIED, Access
from kproto.server.coordinator import OffsetDeleteRequest, OffsetFetchRequestTopic
from kproto.server.handlers import handles
from kproto.server.handlers.groups import _groups, merge_commit_results, wire


def _each(topic, error: int) -> dict:
    return {"name": topic.name, "partitions": [
        {"partition_index": p.partition_index, "error_code": error} for p in topic.partitions]}


async def _authorize(a: Access, broker, ctx, body, handler) -> dict:
    if not a.ok(O.DELETE, R.GROUP, body.group_id):
        return {"error_code": G_DENIED, "throttle_time_ms": 0, "topics": []}
    denied = [t for t in body.topics if not a.ok(O.READ, R.TOPIC, t.name)]
    body.topics = [t for t in body.topics if t not in denied]
    response = await handler(broker, ctx, body)
    if not response["error_code"]:
        response["topics"] = merge_commit_results([_each(t, T_DENIED) for t in denied], response["topics"])
    return response


@handles(P.offset_delete, authorize=_authorize)
async def offset_delete(broker, ctx, body) -> dict:
    errors, known = [], []
    for t in body.topics:
        if not broker.logs.has_topic(t.name):
            errors.append(_each(t, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        missing = [p.partition_index for p in t.partitions if broker.logs.get_log(t.name, p.partition_index) is None]
        if missing:
            errors.append({"name": t.name, "partitions": [
                {"partition_index": i, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION} for i in missing]})
        kept = tuple(p.partition_index for p in t.partitions if p.partition_index not in missing)
        if kept:
            known.append(OffsetFetchRequestTopic(name=t.name, partition_indexes=kept))
    out = wire(await _groups(broker).ask(OffsetDeleteRequest(group_id=body.group_id, topics=tuple(known))))
    if out["error_code"]:
        return {"error_code": out["error_code"], "throttle_time_ms": 0, "topics": []}
    return {"error_code": 0, "throttle_time_ms": 0, "topics": merge_commit_results(errors, out["topics"])}
