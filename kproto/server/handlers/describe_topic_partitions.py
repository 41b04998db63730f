"""DescribeTopicPartitions: Metadata's partitions, paginated by a cursor (KIP-966).

Kafka's DescribeTopicPartitionsRequestHandler with KRaftMetadataCache's
getTopicMetadataForDescribeTopicResponse: the requested topics (every topic
when none is named) at or after the cursor's topic, sorted by name, answered
until ``response_partition_limit`` partitions (at most the broker's
max.request.partition.size.limit, at least 1) are in; ``next_cursor`` then
names the first partition left out.
"""

from __future__ import annotations

from typing import Callable

from kproto.common import is_internal, validate_topic_name
from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P
from kproto.security.acl import SUPPORTED_OPERATIONS, AclOperation as O, ResourceType as R
from kproto.server.access import T_DENIED, Access
from kproto.server.handlers import handles
from kproto.server.handlers.metadata import ZERO_UUID, partition_metadata

# ServerConfigs.MAX_REQUEST_PARTITION_SIZE_LIMIT_DEFAULT (max.request.partition.size.limit)
MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000
UNKNOWN_OPERATIONS = -2147483648      # the field's default: an error answer before any check
ALL_TOPIC_OPERATIONS = sum(1 << op for op in SUPPORTED_OPERATIONS[R.TOPIC])     # Utils.to32BitField


def _error_response(body, error: int) -> dict:
    """DescribeTopicPartitionsRequest.getErrorResponse: each requested topic with ``error``."""
    return {"throttle_time_ms": 0, "next_cursor": None, "topics": [
        {"error_code": error, "name": t.name, "topic_id": ZERO_UUID, "is_internal": False, "partitions": [],
         "topic_authorized_operations": UNKNOWN_OPERATIONS} for t in body.topics]}


def _missing(topic: str) -> dict:
    try:
        validate_topic_name(topic)
        error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    except KafkaError:
        error = ErrorCode.INVALID_TOPIC_EXCEPTION
    return {"error_code": error, "name": topic, "topic_id": ZERO_UUID, "is_internal": is_internal(topic),
            "partitions": []}


def _eligible(broker, topic: str, partition: int) -> dict:
    """A partition's ELR and LastKnownElr (KIP-966): a cluster's from the controller's records,
    a single node has none (Replicas.toList: empty lists, not null)."""
    if broker.cluster is None:
        return {"eligible_leader_replicas": [], "last_known_elr": []}
    reg = broker.cluster.image.topics[topic].partitions[partition]
    return {"eligible_leader_replicas": list(reg.elr), "last_known_elr": list(reg.last_known_elr)}


def _describe(broker, body, allowed: Callable[[str], bool]) -> tuple[dict, list[str]]:
    """-> (the response, the named topics ``allowed`` refused)."""
    cursor = body.cursor
    after = cursor.topic_name if cursor is not None else ""
    fetch_all = not body.topics
    names = sorted({n for n in (broker.topic_names() if fetch_all else (t.name for t in body.topics)) if n >= after})
    if cursor is not None and not fetch_all and cursor.topic_name not in names:
        return _error_response(body, ErrorCode.INVALID_REQUEST), []     # "topic list should contain the cursor topic"
    if cursor is not None and cursor.partition_index < 0:
        return _error_response(body, ErrorCode.INVALID_REQUEST), []     # "cursor partition must be valid"
    refused = [n for n in names if not allowed(n)]
    remaining = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, body.response_partition_limit), 1)
    topics: list[dict] = []
    next_cursor = None
    for name in (n for n in names if n not in refused):
        if remaining == 0:      # the previous topic filled the answer: the next one starts the next page
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        if not broker.has_topic(name):
            if not fetch_all:
                topics.append(_missing(name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        count = broker.partition_count(name)
        upper = min(count, start + remaining)
        # no partition error, even without a leader (Metadata's LEADER_NOT_AVAILABLE): the admin
        # client would fail the whole topic (getPartitionMetadataForDescribeTopicResponse sets none)
        partitions = [dict(p, error_code=0, **_eligible(broker, name, p["partition_index"]))
                      for p in partition_metadata(broker, name)[start:upper]]
        topics.append({"error_code": 0, "name": name, "topic_id": broker.topic_id(name),
                       "is_internal": is_internal(name), "partitions": partitions})
        if upper < count:
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= len(partitions)
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}, [] if fetch_all else refused


async def _authorize(a: Access, broker, ctx, body, handler) -> dict:
    """DESCRIBE on each topic: a refused topic is left out of a list-all answer and answers
    TOPIC_AUTHORIZATION_FAILED (with no topic id) when named; each answered topic carries
    its authorized operations (the handler's own check)."""
    response, refused = _describe(broker, body, lambda n: a.ok(O.DESCRIBE, R.TOPIC, n, False))
    for t in response["topics"]:
        t.setdefault("topic_authorized_operations", a.operations(R.TOPIC, t["name"]))
    response["topics"] += [{"error_code": T_DENIED, "name": n, "topic_id": ZERO_UUID, "is_internal": False,
                            "partitions": []} for n in refused]
    return response


@handles(P.describe_topic_partitions, authorize=_authorize)
async def describe_topic_partitions(broker, ctx, body) -> dict:
    response = _describe(broker, body, lambda n: True)[0]
    for t in response["topics"]:    # AuthHelper.authorizedOperations without an authorizer: all of them
        t.setdefault("topic_authorized_operations", ALL_TOPIC_OPERATIONS)
    return response
