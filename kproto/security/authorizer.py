"""The authorizer: Kafka's StandardAuthorizer decisions over the ACL store.

A request (principal, host, operation, resource) is decided as Kafka does:

1. a principal in ``super.users`` is allowed everything;
2. the ACLs that apply are those whose pattern matches the resource
   (literal name, literal ``*``, or a prefix of the name);
3. if none apply at all (for any principal or operation), the answer is
   ``allow.everyone.if.no.acl.found`` (default false);
4. a DENY that matches principal (or ``User:*``), host (or ``*``) and the
   operation itself (or ALL) wins over any ALLOW;
5. otherwise an ALLOW for the operation, ALL, or one that implies it
   (DESCRIBE <- READ/WRITE/DELETE/ALTER, DESCRIBE_CONFIGS <- ALTER_CONFIGS).
"""

from __future__ import annotations

from typing import Iterable

from kproto.security.acl import (
    IMPLIED_BY, AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType,
)
from kproto.security.principal import WILDCARD_PRINCIPAL, KafkaPrincipal
from kproto.security.store import AclStore

O = AclOperation


def parse_super_users(value: str) -> frozenset[str]:
    """``super.users``: principals separated by ``;`` (Kafka's format, a DN may hold commas)."""
    return frozenset(p.strip() for p in value.split(";") if p.strip())


class Authorizer:
    def __init__(self, store: AclStore, *, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_everyone = allow_everyone_if_no_acl_found

    def _applying(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        return [b for b in self.store.bindings if b.pattern.matches(resource_type, name)]

    def authorize(self, principal: KafkaPrincipal, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        who = str(principal)
        if who in self.super_users:
            return True
        acls = self._applying(resource_type, name)
        if not acls:
            return self.allow_everyone

        def hits(b: AclBinding) -> bool:
            e = b.entry
            return e.principal in (who, WILDCARD_PRINCIPAL) and e.host in (host, "*")

        if any(hits(b) and b.entry.permission_type == AclPermissionType.DENY
               and b.entry.operation in (operation, O.ALL) for b in acls):
            return False
        allowing = IMPLIED_BY.get(operation, {operation, O.ALL})
        return any(hits(b) and b.entry.permission_type == AclPermissionType.ALLOW
                   and b.entry.operation in allowing for b in acls)

    def authorize_any(self, principal: KafkaPrincipal, host: str, operation: AclOperation,
                      resource_type: ResourceType) -> bool:
        """Kafka's authorizeByResourceType (KIP-679, idempotent producers without
        IDEMPOTENT_WRITE): some resource of the type could be allowed — an ALLOW
        pattern of the principal not wholly covered by one of its DENYs."""
        who = str(principal)
        if who in self.super_users:
            return True
        mine = [b for b in self.store.bindings if b.pattern.resource_type == resource_type
                and b.entry.principal in (who, WILDCARD_PRINCIPAL) and b.entry.host in (host, "*")]
        denies = [b.pattern for b in mine if b.entry.permission_type == AclPermissionType.DENY
                  and b.entry.operation in (operation, O.ALL)]
        if any(p.pattern_type == PatternType.LITERAL and p.name == "*" for p in denies):
            return False
        allowing = IMPLIED_BY.get(operation, {operation, O.ALL})
        for b in mine:
            if b.entry.permission_type != AclPermissionType.ALLOW or b.entry.operation not in allowing:
                continue
            p = b.pattern
            covered = any(d.pattern_type == PatternType.PREFIXED and p.name.startswith(d.name)
                          or d == p for d in denies)
            if not covered:
                return True
        if not any(b.pattern.resource_type == resource_type for b in self.store.bindings):
            return self.allow_everyone
        return False
