"""Authorization of the APIs the broker answers, as Kafka's KafkaApis does it: the engine.

Theory of operation. Each API's rule is declared beside its handler
(``@handles(..., authorize=rule)`` in kproto/server/handlers/): a
``PerEntry`` names the request field listing the resources, the resource
type and operation each needs, and what the response says for one that is
denied. Before the handler runs, denied entries are taken out of the request
(so nothing happens to them: no append, no auto-creation, no deletion);
after it, their error entries are added to the response — the partial
answer Kafka gives (e.g. one topic TOPIC_AUTHORIZATION_FAILED, the others
appended). Rules that do more (a group's JoinGroup answers with the error
alone and does not run the handler) are coroutines over ``Access``. APIs
that Kafka does not authorize (ApiVersions, SASL) and those that check for
themselves (ACL and SCRAM admin) declare ``self_checked``.

Only active with an authorizer (``authorizer.class.name``). Every check asks
for the request's principal and host (``RequestContext``), as Kafka's
AuthHelper.authorize(request.context, ...) does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kproto.errors import ErrorCode
from kproto.security.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation as O, ResourceType as R
from kproto.server import handlers

T_DENIED, G_DENIED, C_DENIED, TXN_DENIED = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
_DENIED_BY_TYPE = {R.CLUSTER: C_DENIED, R.GROUP: G_DENIED}


@dataclass(frozen=True)
class PerEntry:
    """Entries of ``request`` (a list field), each checked; denied ones answered by ``denied``."""

    request: str
    name: Callable[[Any], str]
    resource: R
    operation: O
    response: str
    denied: Callable[[Any, int], dict]      # (request entry, error code) -> response entry
    error: int = T_DENIED
    unless_cluster: O | None = None         # e.g. CREATE on the cluster allows every CreateTopics entry
    # the entry's own resource type, when entries name different ones (DescribeConfigs: topic, broker
    # or group); a denied CLUSTER or GROUP entry answers CLUSTER_ or GROUP_AUTHORIZATION_FAILED
    resource_of: Callable[[Any], R] | None = None

    def resource_type(self, entry) -> R:
        return self.resource if self.resource_of is None else self.resource_of(entry)

    def error_for(self, entry) -> int:
        if self.resource_of is None:
            return self.error
        return _DENIED_BY_TYPE.get(self.resource_of(entry), self.error)


def partitions_denied(field: str, index: str, out_index: str, **extra):
    """-> (entry, error) -> the entry's partitions (``field``), each answering ``error``."""
    return lambda e, err: [{out_index: getattr(p, index) if index else p, "error_code": err, **extra}
                           for p in getattr(e, field)]


def topic_name(e) -> str:
    return e.name if "name" in e else e.topic


def _bitfield(ops) -> int:
    """Kafka's Utils.to32BitField: bit ``code`` set for each operation."""
    return sum(1 << op for op in ops)


class Access:
    """The checks for one request: its principal (``ctx``) asked of the broker's authorizer."""

    def __init__(self, security, ctx) -> None:
        self.sec = security
        self.ctx = ctx

    def ok(self, op: O, rtype: R, name: str, log_denied: bool = True) -> bool:
        if log_denied:      # the plain call stays the common case (tests' authorizers take it)
            return self.sec.allowed(self.ctx, op, rtype, name)
        return self.sec.allowed(self.ctx, op, rtype, name, log_denied=False)

    def ok_any(self, op: O, rtype: R) -> bool:
        """Allowed ``op`` on some resource of ``rtype`` (Kafka's authorizeByResourceType)."""
        return self.sec.allowed_any(self.ctx, op, rtype)

    def operations(self, rtype: R, name: str) -> int:
        """``*_authorized_operations``: the supported operations the principal may do (KIP-430)."""
        return _bitfield(op for op in SUPPORTED_OPERATIONS[rtype] if self.ok(op, rtype, name, False))

    def split(self, body, rule: PerEntry) -> list:
        """Take the denied entries out of ``body``; -> them."""
        entries = getattr(body, rule.request) or []
        if rule.unless_cluster is not None and self.ok(rule.unless_cluster, R.CLUSTER, CLUSTER_NAME, False):
            return []
        denied, kept = [], []
        for e in entries:
            rtype = rule.resource_type(e)
            name = CLUSTER_NAME if rtype == R.CLUSTER else rule.name(e)
            # None: an unknown topic id (DeleteTopics v6), which the handler answers UNKNOWN_TOPIC_ID
            (kept if name is None or self.ok(rule.operation, rtype, name) else denied).append(e)
        if denied:
            setattr(body, rule.request, kept)
        return denied

    @staticmethod
    def merge(response, rule: PerEntry, denied: list, error: int | None = None) -> None:
        if response is not None and denied:
            out = [rule.denied(e, error if error is not None else rule.error_for(e)) for e in denied]
            response[rule.response] = list(response[rule.response]) + out

    async def per_entry(self, rule: PerEntry, broker, body, handler) -> Any:
        """Run ``handler`` on the allowed entries; the denied ones answered after it."""
        denied = self.split(body, rule)
        response = await handler(broker, self.ctx, body)
        self.merge(response, rule, denied)
        return response


async def self_checked(a: Access, broker, ctx, body, handler) -> Any:
    """The rule of an API Kafka does not authorize (ApiVersions, SASL) or whose handler checks for itself."""
    return await handler(broker, ctx, body)


async def guarded(broker, ctx, body, handler) -> Any:
    """Run ``handler`` on what the request's principal may do, by the rule its API
    declared; answer the rest with Kafka's errors."""
    rule = handlers.lookup(ctx.request_api_key).authorize
    a = Access(broker.security, ctx)
    if isinstance(rule, PerEntry):
        return await a.per_entry(rule, broker, body, handler)
    return await rule(a, broker, ctx, body, handler)
