"""DescribeClientQuotas and AlterClientQuotas (KIP-546).

As Kafka's KafkaApis.handleDescribeClientQuotasRequest (DESCRIBE_CONFIGS on the
cluster, else CLUSTER_AUTHORIZATION_FAILED with no entries) and
ControllerApis.handleAlterClientQuotas (ALTER_CONFIGS on the cluster, else every
entry CLUSTER_AUTHORIZATION_FAILED); the filter, validation and texts are
kproto/server/quotas.py's. Altered quotas are persisted before the answer and
enforced from the next request on.

Versions: v0-1 each, all Kafka 4.4 has.
"""

from __future__ import annotations

from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kproto.server import quotas
from kproto.server.access import self_checked
from kproto.server.handlers import handles


def _entity_data(e: quotas.Entity) -> list[dict]:
    return [{"entity_type": t, "entity_name": n} for t, n in e]


@handles(P.describe_client_quotas, authorize=self_checked)
async def describe_client_quotas(broker, ctx, body) -> dict:
    error = {"throttle_time_ms": 0, "entries": None}
    if not broker.security.allowed(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        return {**error, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
    try:
        found = quotas.describe(broker.dynamic.client_quotas, body.components, body.strict)
    except KafkaError as e:         # ApiError.fromThrowable: the exception's message
        return {**error, "error_code": e.error_code, "error_message": str(e)}
    # error_message "": the schema's default, which Kafka's KRaft broker leaves as it is (measured)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "entries": [
        {"entity": _entity_data(e), "values": [{"key": k, "value": v} for k, v in values.items()]}
        for e, values in found]}


@handles(P.alter_client_quotas, authorize=self_checked)
async def alter_client_quotas(broker, ctx, body) -> dict:
    if not broker.security.allowed(ctx, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED     # AlterClientQuotasRequest.getErrorResponse: as sent
        return {"throttle_time_ms": 0, "entries": [
            {"error_code": code, "error_message": code.description, "entity": [
                {"entity_type": d.entity_type, "entity_name": d.entity_name} for d in entry.entity]}
            for entry in body.entries]}
    if broker.cluster is not None:      # a node of a cluster: ClientQuotaRecords by the controller
        try:
            return await broker.cluster.forward(P.alter_client_quotas.API.key, ctx.request_api_version, body)
        except ConnectionError:
            code = ErrorCode.REQUEST_TIMED_OUT
            return {"throttle_time_ms": 0, "entries": [
                {"error_code": code, "error_message": "the controller is unreachable", "entity": [
                    {"entity_type": d.entity_type, "entity_name": d.entity_name} for d in entry.entity]}
                for entry in body.entries]}
    results, changes = quotas.alter(broker.dynamic.client_quotas, alterations(body))
    if changes and not body.validate_only:
        broker.dynamic.set_client_quotas(changes)
        broker.quotas.refresh()
    return answer(results)


def alterations(body) -> list[quotas.Alteration]:
    """An AlterClientQuotas request's entries."""
    return [quotas.Alteration(quotas.entity((d.entity_type, d.entity_name) for d in entry.entity),
                              tuple((op.key, None if op.remove else op.value) for op in entry.ops))
            for entry in body.entries]


def answer(results: dict) -> dict:
    """AlterClientQuotas' answer from ``quotas.alter``'s results."""
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": code, "error_message": message, "entity": _entity_data(e)}
        for e, (code, message) in results.items()]}
