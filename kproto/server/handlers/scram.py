"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554).

The client salts the password itself (AlterUserScramCredentials carries
salt + SaltedPassword, never the password); the broker derives and stores
StoredKey/ServerKey (kproto/security/store.py). Validation and messages as
Kafka's ScramControlManager and ScramImage: empty user or too few/many
iterations -> UNACCEPTABLE_CREDENTIAL, unknown mechanism ->
UNSUPPORTED_SASL_MECHANISM, a user twice in one request -> DUPLICATE_RESOURCE,
deleting or describing what does not exist -> RESOURCE_NOT_FOUND. DESCRIBE
resp. ALTER on the cluster is required (CLUSTER_AUTHORIZATION_FAILED).

Versions: v0 each, all Kafka has.
"""

from __future__ import annotations

from typing import Callable

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kproto.security.scram import BY_TYPE, ScramCredential, ScramMechanism
from kproto.server.access import self_checked
from kproto.server.handlers import handles


MAX_ITERATIONS = 16384
DUPLICATE = "A user credential cannot be altered twice in the same request"


def _check(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


@handles(P.describe_user_scram_credentials, authorize=self_checked)
async def describe_user_scram_credentials(broker, ctx, body) -> dict:
    store = broker.security.scram
    if not broker.security.allowed(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": None, "results": []}
    names = [u.name for u in body.users or []] or sorted(store.users)
    results = []
    for name in dict.fromkeys(names):
        r = {"user": name, "error_code": 0, "error_message": None, "credential_infos": []}
        if names.count(name) > 1:
            r.update(error_code=ErrorCode.DUPLICATE_RESOURCE,
                     error_message=f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}")
        elif not store.describe(name):
            r.update(error_code=ErrorCode.RESOURCE_NOT_FOUND,
                     error_message=f"Attempt to describe a user credential that does not exist: {name}")
        else:
            r["credential_infos"] = [{"mechanism": m.type, "iterations": i} for m, i in store.describe(name)]
        results.append(r)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}


@handles(P.alter_user_scram_credentials, authorize=self_checked)
async def alter_user_scram_credentials(broker, ctx, body) -> dict:
    store = broker.security.scram
    users = _users(body)
    if not broker.security.allowed(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "results": [
            {"user": u, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None} for u in users]}
    if broker.cluster is not None:      # a node of a cluster: the controller's records
        try:
            return await broker.cluster.forward(P.alter_user_scram_credentials.API.key, ctx.request_api_version,
                                                body)
        except ConnectionError:
            return {"throttle_time_ms": 0, "results": [
                {"user": u, "error_code": ErrorCode.REQUEST_TIMED_OUT, "error_message": "the controller is unreachable"}
                for u in users]}
    errors, deletions, upsertions = plan(body, lambda name, mech: store.lookup(name, mech) is not None)
    for d in deletions.values():
        store.delete(d.name, BY_TYPE[d.mechanism])
    for u in upsertions.values():
        mech = BY_TYPE[u.mechanism]
        store.upsert(u.name, mech, ScramCredential.from_salted_password(
            mech, bytes(u.salted_password), bytes(u.salt), u.iterations))
    return answer(body, errors)


def plan(body, exists: Callable[[str, ScramMechanism], bool]) -> tuple[dict, dict, dict]:
    """ScramControlManager.alterCredentials' checks: (user -> (error code, message), the
    deletions and the upsertions to make, by user)."""
    errors: dict[str, tuple[int, str]] = {}
    deletions, upsertions = {}, {}
    for d in body.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE)
        elif (e := _check(d.name, d.mechanism)) is not None:
            errors[d.name] = e
        elif not exists(d.name, BY_TYPE[d.mechanism]):
            errors[d.name] = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        else:
            deletions[d.name] = d
    for u in body.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE)
        elif (e := _check(u.name, u.mechanism)) is not None:
            errors[u.name] = e
        elif u.iterations < BY_TYPE[u.mechanism].min_iterations:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        else:
            upsertions[u.name] = u
    return errors, deletions, upsertions


def answer(body, errors: dict) -> dict:
    """AlterUserScramCredentials' answer: each user once, in the request's order."""
    return {"throttle_time_ms": 0, "results": [
        {"user": name, "error_code": errors.get(name, (0, None))[0], "error_message": errors.get(name, (0, None))[1]}
        for name in _users(body)]}


def _users(body) -> list[str]:
    return list(dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions]))
