"""CreateAcls, DescribeAcls, DeleteAcls over the broker's ACL store.

As Kafka: without an authorizer (``authorizer.class.name`` unset) all three
answer SECURITY_DISABLED; Create/Delete need ALTER on the cluster, Describe
DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED otherwise). A binding
that fails validation gets INVALID_REQUEST with Kafka's message, the others
are still created.

Versions: v0-3 each, all Kafka has (v1 adds pattern types, KIP-290; v2
flexible).
"""

from __future__ import annotations

from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclBinding, AclBindingFilter, AclOperation, ResourceType
from kproto.server.access import self_checked
from kproto.server.cluster.acl_control import wire
from kproto.server.handlers import handles


SECURITY_DISABLED = "No Authorizer is configured."


def _gate(broker, ctx, operation: AclOperation) -> tuple[int, str | None]:
    sec = broker.security
    if sec.authorizer is None:
        return ErrorCode.SECURITY_DISABLED, SECURITY_DISABLED
    if not sec.allowed(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    return 0, None




async def _forward(broker, ctx, api, body) -> dict | None:
    """On a node of a cluster, CreateAcls and DeleteAcls are the controller's
    (AclControlManager): its answer, once this node's authorizer has the change;
    None when it is unreachable."""
    try:
        return await broker.cluster.forward(api.API.key, ctx.request_api_version, body)
    except ConnectionError:
        return None


@handles(P.create_acls, authorize=self_checked)
async def create_acls(broker, ctx, body) -> dict:
    error, message = _gate(broker, ctx, AclOperation.ALTER)
    if error:
        return {"throttle_time_ms": 0, "results": [{"error_code": error, "error_message": message}
                                                   for _ in body.creations]}
    if broker.cluster is not None:
        r = await _forward(broker, ctx, P.create_acls, body)
        return r if r is not None else {"throttle_time_ms": 0, "results": [
            {"error_code": ErrorCode.REQUEST_TIMED_OUT, "error_message": "the controller is unreachable"}
            for _ in body.creations]}
    results, valid = [], []
    for c in body.creations:
        try:
            valid.append(AclBinding.from_wire(c))
            results.append({"error_code": 0, "error_message": None})
        except KafkaError as e:
            results.append({"error_code": e.error_code, "error_message": str(e)})
    broker.security.acls.add(valid)
    return {"throttle_time_ms": 0, "results": results}


@handles(P.describe_acls, authorize=self_checked)
async def describe_acls(broker, ctx, body) -> dict:
    error, message = _gate(broker, ctx, AclOperation.DESCRIBE)
    flt = AclBindingFilter.from_wire(body)
    if not error and flt.unknown():
        error, message = ErrorCode.INVALID_REQUEST, flt.unknown()
    if error:
        return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "resources": []}
    resources: dict = {}
    for b in broker.security.acls.match(flt):
        key = (b.pattern.resource_type, b.pattern.name, b.pattern.pattern_type)
        resources.setdefault(key, []).append(wire(b))
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "resources": [{"resource_type": t, "resource_name": n, "pattern_type": p,
                           "acls": [{k: a[k] for k in ("principal", "host", "operation", "permission_type")}
                                    for a in acls]}
                          for (t, n, p), acls in resources.items()]}


@handles(P.delete_acls, authorize=self_checked)
async def delete_acls(broker, ctx, body) -> dict:
    error, message = _gate(broker, ctx, AclOperation.ALTER)
    if broker.cluster is not None and not error:
        r = await _forward(broker, ctx, P.delete_acls, body)
        if r is not None:
            return r
        error, message = ErrorCode.REQUEST_TIMED_OUT, "the controller is unreachable"
    results = []
    for f in body.filters:
        flt = AclBindingFilter.from_wire(f)
        if error or flt.unknown():
            results.append({"error_code": error or ErrorCode.INVALID_REQUEST,
                            "error_message": message or flt.unknown(), "matching_acls": []})
            continue
        gone = broker.security.acls.remove(flt)
        results.append({"error_code": 0, "error_message": None,
                        "matching_acls": [{"error_code": 0, "error_message": None, **wire(b)} for b in gone]})
    return {"throttle_time_ms": 0, "filter_results": results}
