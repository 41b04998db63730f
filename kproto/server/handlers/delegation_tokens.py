"""Delegation tokens (KIP-48): CreateDelegationToken, RenewDelegationToken,
ExpireDelegationToken, DescribeDelegationToken, as Kafka's KafkaApis checks them on the
broker and its DelegationTokenControlManager answers them (kproto.security.tokens).

KafkaApis.allowTokenRequests: never over a token-authenticated connection, a PLAINTEXT
listener or one-way TLS (an anonymous SSL principal): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED.
Creating a token for another owner needs CREATE_TOKENS on that user; describing another's
token needs DESCRIBE on the token or DESCRIBE_TOKENS on its owner. Renew and expire are
checked by the token's owner and renewers, not by ACLs.
"""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from kproto.server.access import Access, self_checked
from kproto.server.handlers import handles

ERROR_TIMESTAMP = -1        # DelegationTokenManager.ErrorTimestamp


def allow_token_requests(ctx) -> bool:
    """KafkaApis.allowTokenRequests."""
    protocol = ctx.listener.security_protocol if ctx.listener is not None else "PLAINTEXT"
    return not (ctx.principal.token_authenticated or protocol == "PLAINTEXT"
                or (protocol == "SSL" and ctx.principal == ANONYMOUS))


def _owner(ctx, body) -> KafkaPrincipal:
    name = body.owner_principal_name if ctx.request_api_version >= 3 else None
    return ctx.principal if not name else KafkaPrincipal(body.owner_principal_type, name)


def _create_failure(ctx, body, error: int) -> dict:
    """CreateDelegationTokenResponse.prepareResponse(version, throttle, error, owner, requester)."""
    owner = _owner(ctx, body)
    return {"error_code": error, "principal_type": owner.principal_type, "principal_name": owner.name,
            "token_requester_principal_type": ctx.principal.principal_type,
            "token_requester_principal_name": ctx.principal.name, "issue_timestamp_ms": ERROR_TIMESTAMP,
            "expiry_timestamp_ms": ERROR_TIMESTAMP, "max_timestamp_ms": ERROR_TIMESTAMP, "token_id": "",
            "hmac": b"", "throttle_time_ms": 0}


async def _create_authorize(a: Access, broker, ctx, body, handler) -> dict:
    """KafkaApis.handleCreateTokenRequest: a request not allowed is answered so before the
    ACL check; another owner than the requester needs CREATE_TOKENS on it."""
    owner = _owner(ctx, body)
    if allow_token_requests(ctx) and owner != ctx.principal and not a.ok(O.CREATE_TOKENS, R.USER, str(owner)):
        return _create_failure(ctx, body, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
    return await handler(broker, ctx, body)


@handles(P.create_delegation_token, authorize=_create_authorize)
async def create_delegation_token(broker, ctx, body) -> dict:
    """KafkaApis.handleCreateTokenRequest's own checks (the rule above ran between the
    first two when an authorizer is configured), then the controller's."""
    owner = _owner(ctx, body)
    if not allow_token_requests(ctx):
        return _create_failure(ctx, body, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if any(r.principal_type != USER_TYPE for r in body.renewers):
        return _create_failure(ctx, body, ErrorCode.INVALID_PRINCIPAL_TYPE)
    out = broker.security.tokens.create(owner, ctx.principal,
                                        [KafkaPrincipal(r.principal_type, r.principal_name) for r in body.renewers],
                                        body.max_lifetime_ms)
    if out.token is None:
        # the controller's answer: the principals, the other fields at their defaults
        return {**_create_failure(ctx, body, out.error_code), "issue_timestamp_ms": 0, "expiry_timestamp_ms": 0,
                "max_timestamp_ms": 0}
    t = out.token
    return {**_create_failure(ctx, body, 0), "issue_timestamp_ms": t.issue_timestamp,
            "expiry_timestamp_ms": t.expiry_timestamp, "max_timestamp_ms": t.max_timestamp,
            "token_id": t.token_id, "hmac": t.hmac}


def _expiry_change(ctx, change) -> dict:
    """Renew and expire: refused where token requests are not allowed (expiry -1), else the
    controller's answer (expiry 0, its default, with an error)."""
    if not allow_token_requests(ctx):
        return {"error_code": ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                "expiry_timestamp_ms": ERROR_TIMESTAMP, "throttle_time_ms": 0}
    out = change()
    return {"error_code": out.error_code, "expiry_timestamp_ms": out.expiry_timestamp if out.error_code == 0 else 0,
            "throttle_time_ms": 0}


@handles(P.renew_delegation_token, authorize=self_checked)
async def renew_delegation_token(broker, ctx, body) -> dict:
    return _expiry_change(ctx, lambda: broker.security.tokens.renew(ctx.principal, bytes(body.hmac),
                                                                    body.renew_period_ms))


@handles(P.expire_delegation_token, authorize=self_checked)
async def expire_delegation_token(broker, ctx, body) -> dict:
    return _expiry_change(ctx, lambda: broker.security.tokens.expire(ctx.principal, bytes(body.hmac),
                                                                     body.expiry_time_period_ms))


async def _describe_authorize(a: Access, broker, ctx, body, handler) -> dict:
    """DelegationTokenManager.filterToken's last two tests: a token not the principal's own
    (as owner or renewer) is shown with DESCRIBE on it or DESCRIBE_TOKENS on its owner."""
    response = await handler(broker, ctx, body)
    if response["error_code"]:
        return response
    me = ctx.principal
    response["tokens"] = [
        t for t in response["tokens"]
        if KafkaPrincipal(t["principal_type"], t["principal_name"]) == me
        or any(KafkaPrincipal(r["principal_type"], r["principal_name"]) == me for r in t["renewers"])
        or a.ok(O.DESCRIBE, R.DELEGATION_TOKEN, t["token_id"], False)
        or a.ok(O.DESCRIBE_TOKENS, R.USER, f"{t['principal_type']}:{t['principal_name']}", False)]
    return response


@handles(P.describe_delegation_token, authorize=_describe_authorize)
async def describe_delegation_token(broker, ctx, body) -> dict:
    """KafkaApis.handleDescribeTokensRequest: owners null is every token, [] none; else the
    tokens those principals own or may renew."""
    if not allow_token_requests(ctx):
        return {"error_code": ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, "tokens": [], "throttle_time_ms": 0}
    tokens = broker.security.tokens
    if not tokens.enabled:
        return {"error_code": ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, "tokens": [], "throttle_time_ms": 0}
    if body.owners is not None and not body.owners:
        return {"error_code": 0, "tokens": [], "throttle_time_ms": 0}
    owners = None if body.owners is None else [KafkaPrincipal(o.principal_type, o.principal_name)
                                               for o in body.owners]
    out = []
    for t in tokens.tokens():
        if owners is not None and not any(t.owner_or_renewer(o) for o in owners):
            continue
        out.append({"principal_type": t.owner.principal_type, "principal_name": t.owner.name,
                    "token_requester_principal_type": t.requester.principal_type,
                    "token_requester_principal_name": t.requester.name,
                    "issue_timestamp": t.issue_timestamp, "expiry_timestamp": t.expiry_timestamp,
                    "max_timestamp": t.max_timestamp, "token_id": t.token_id, "hmac": t.hmac,
                    "renewers": [{"principal_type": r.principal_type, "principal_name": r.name}
                                 for r in t.renewers]})
    return {"error_code": 0, "tokens": out, "throttle_time_ms": 0}
