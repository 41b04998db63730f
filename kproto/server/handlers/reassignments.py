"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), v0-1 and v0 as
Kafka 4.4 (KafkaApis forwards both to the controller: ReplicationControlManager's
alterPartitionReassignments / listPartitionReassignments).

In a cluster the broker forwards the request to the controller and answers what it
answers (kproto/server/cluster/operations.py). The standalone node answers as Kafka
4.4's controller does for one broker (measured on its broker): a target naming
another broker is INVALID_REPLICA_ASSIGNMENT "The manual partition assignment
includes broker 2, but no such broker is registered.", a target of the partition's
own replica completes at once (no error, nothing to list), a cancel is
NO_REASSIGNMENT_IN_PROGRESS with no message, an unknown topic or partition
UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic named T." / "Unable to find
partition T:P."; no reassignment is ever in flight, so ListPartitionReassignments
lists none. ALTER (resp. DESCRIBE) on the cluster, else CLUSTER_AUTHORIZATION_FAILED
for the request and each partition (getErrorResponse), with the error's generic
message (Kafka's names the request).
"""

from __future__ import annotations

from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED, Access
from kproto.server.cluster.operations import validate_assignment
from kproto.server.handlers import handles

_DENIED = ErrorCode(C_DENIED).description


def _alter_error(body, error: int, message: str | None) -> dict:
    """AlterPartitionReassignmentsRequest.getErrorResponse."""
    return {"throttle_time_ms": 0, "allow_replication_factor_change": body.get("allow_replication_factor_change", True),
            "error_code": error, "error_message": message,
            "responses": [{"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": error, "error_message": message}
                for p in t.partitions]} for t in body.topics]}


def _list_error(body, error: int, message: str | None) -> dict:
    """ListPartitionReassignmentsRequest.getErrorResponse."""
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message,
            "topics": [{"name": t.name, "partitions": [
                {"partition_index": p, "replicas": [], "adding_replicas": [], "removing_replicas": []}
                for p in t.partition_indexes]} for t in body.topics or ()]}


async def _authorize_alter(a: Access, broker, ctx, body, handler) -> dict:
    if not a.ok(O.ALTER, R.CLUSTER, CLUSTER_NAME):
        return _alter_error(body, C_DENIED, _DENIED)
    return await handler(broker, ctx, body)


async def _authorize_list(a: Access, broker, ctx, body, handler) -> dict:
    if not a.ok(O.DESCRIBE, R.CLUSTER, CLUSTER_NAME):
        return _list_error(body, C_DENIED, _DENIED)
    return await handler(broker, ctx, body)


def _standalone_alter(broker, topic: str, partition: int, replicas: list[int] | None) -> tuple[int, str | None]:
    logs = broker.logs
    if not logs.has_topic(topic):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    if logs.get_log(topic, partition) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{partition}."
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
    try:
        # the one registered broker: a valid target is [node_id], the partition as it is
        validate_assignment(replicas, {broker.node_id})
    except KafkaError as e:
        return e.error_code, str(e)
    return ErrorCode.NONE, None


@handles(P.alter_partition_reassignments, authorize=_authorize_alter)
async def alter_partition_reassignments(broker, ctx, body) -> dict:
    if broker.cluster is not None:
        try:
            return await broker.cluster.forward(P.alter_partition_reassignments.API.key, ctx.request_api_version,
                                                body)
        except ConnectionError as e:
            return _alter_error(body, ErrorCode.REQUEST_TIMED_OUT, f"the controller is unreachable: {e}")
    responses = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            error, message = _standalone_alter(broker, t.name, p.partition_index, p.replicas)
            parts.append({"partition_index": p.partition_index, "error_code": error, "error_message": message})
        responses.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": body.get("allow_replication_factor_change", True),
            "error_code": 0, "error_message": None, "responses": responses}


@handles(P.list_partition_reassignments, authorize=_authorize_list)
async def list_partition_reassignments(broker, ctx, body) -> dict:
    if broker.cluster is not None:
        try:
            return await broker.cluster.forward(P.list_partition_reassignments.API.key, ctx.request_api_version,
                                                body)
        except ConnectionError as e:
            return _list_error(body, ErrorCode.REQUEST_TIMED_OUT, f"the controller is unreachable: {e}")
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": []}
