"""Kafka's ACL model as data: resource types, pattern types, operations,
permissions (the byte codes of CreateAcls/DescribeAcls/DeleteAcls), bindings
and the filters DescribeAcls/DeleteAcls match with.

Codes from Kafka's org.apache.kafka.common.{resource,acl} enums; the
supported operations per resource type from Kafka's AclEntry.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kproto.errors import InvalidRequestError


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


O = AclOperation
SUPPORTED_OPERATIONS = {
    ResourceType.TOPIC: {O.READ, O.WRITE, O.CREATE, O.DESCRIBE, O.DELETE, O.ALTER, O.DESCRIBE_CONFIGS,
                         O.ALTER_CONFIGS},
    ResourceType.GROUP: {O.READ, O.DESCRIBE, O.DELETE},
    ResourceType.CLUSTER: {O.CREATE, O.CLUSTER_ACTION, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.IDEMPOTENT_WRITE,
                           O.ALTER, O.DESCRIBE},
    ResourceType.TRANSACTIONAL_ID: {O.DESCRIBE, O.WRITE},
    ResourceType.DELEGATION_TOKEN: {O.DESCRIBE},
    ResourceType.USER: {O.CREATE_TOKENS, O.DESCRIBE_TOKENS},
}
# An ALLOW for the key also allows these (Kafka's StandardAuthorizerData / AclAuthorizer):
# DESCRIBE is implied by READ, WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS.
IMPLIED_BY = {O.DESCRIBE: {O.DESCRIBE, O.READ, O.WRITE, O.DELETE, O.ALTER, O.ALL},
              O.DESCRIBE_CONFIGS: {O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.ALL}}

WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Does this stored pattern apply to the concrete resource?"""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name == name or self.name == WILDCARD
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.name)


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    @classmethod
    def from_wire(cls, c) -> "AclBinding":
        """A CreateAcls creation (or DescribeAcls resource+acl pair), validated as Kafka's AclControlManager."""
        binding = cls(ResourcePattern(_enum(ResourceType, c.resource_type), c.resource_name,
                                      _enum(PatternType, c.resource_pattern_type)),
                      AccessControlEntry(c.principal, c.host, _enum(AclOperation, c.operation),
                                         _enum(AclPermissionType, c.permission_type)))
        binding.validate()
        return binding

    def validate(self) -> None:
        p, e = self.pattern, self.entry
        if p.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidRequestError(f"Invalid resourceType {p.resource_type.name}")
        if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidRequestError(f"Invalid patternType {p.pattern_type.name}")
        if e.operation in (O.UNKNOWN, O.ANY):
            raise InvalidRequestError(f"Invalid operation {e.operation.name}")
        if e.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise InvalidRequestError(f"Invalid permissionType {e.permission_type.name}")
        if not p.name:
            raise InvalidRequestError("Resource name should not be empty")
        if p.resource_type == ResourceType.CLUSTER and p.name != CLUSTER_NAME:
            raise InvalidRequestError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        kind, sep, _ = e.principal.partition(":")
        if not sep or not kind:
            raise InvalidRequestError(f"Could not parse principal from `{e.principal}` (no colon is present "
                                      "separating the principal type from the principal name)")
        if not e.host:
            raise InvalidRequestError("Invalid null host")
        if e.operation != O.ALL and e.operation not in SUPPORTED_OPERATIONS[p.resource_type]:
            raise InvalidRequestError(f"Operation {e.operation.name} is not supported for resource type "
                                      f"{p.resource_type.name}")


def _enum(kind, value: int):
    try:
        return kind(value)
    except ValueError:
        return kind(0)   # UNKNOWN: the validation names it


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """DescribeAcls/DeleteAcls' filter: None and ANY match everything; MATCH
    matches the patterns that would apply to the given name."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    @classmethod
    def from_wire(cls, c) -> "AclBindingFilter":
        """A DescribeAcls request or DeleteAcls filter (v0 has no pattern type: LITERAL, the schema's default)."""
        return cls(_enum(ResourceType, c.resource_type_filter), c.resource_name_filter,
                   _enum(PatternType, c.pattern_type_filter), c.principal_filter, c.host_filter,
                   _enum(AclOperation, c.operation), _enum(AclPermissionType, c.permission_type))

    def unknown(self) -> str | None:
        for name, v in (("resourceType", self.resource_type), ("patternType", self.pattern_type),
                        ("operation", self.operation), ("permissionType", self.permission_type)):
            if v == 0:
                return f"Invalid {name} UNKNOWN in the filter"
        return None

    def matches(self, b: AclBinding) -> bool:
        p, e = b.pattern, b.entry
        if self.resource_type != ResourceType.ANY and p.resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.name is not None and not p.matches(p.resource_type, self.name):
                return False
        else:
            if self.pattern_type != PatternType.ANY and p.pattern_type != self.pattern_type:
                return False
            if self.name is not None and p.name != self.name:
                return False
        return ((self.principal is None or self.principal == e.principal)
                and (self.host is None or self.host == e.host)
                and (self.operation == O.ANY or self.operation == e.operation)
                and (self.permission_type == AclPermissionType.ANY or self.permission_type == e.permission_type))
