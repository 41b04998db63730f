"""ACLs on the controller (Kafka's AclControlManager): CreateAcls and DeleteAcls
forwarded by the brokers become AccessControlEntryRecords (a new id each) and
RemoveAccessControlEntryRecords; every broker's authorizer reads the ACLs its
image holds (StandardAuthorizer loading them from the metadata log). The broker
checked the request's authority first (an authorizer configured, ALTER on the
cluster)."""

from __future__ import annotations

import uuid
from typing import Any

from kproto.errors import ErrorCode, KafkaError
from kproto.security.acl import AclBinding, AclBindingFilter
from kproto.server.cluster import image as I

__all__ = ["create_acls", "delete_acls", "wire"]


def wire(b: AclBinding) -> dict:
    """A binding as DescribeAcls / DeleteAcls answer it."""
    return {"resource_type": b.pattern.resource_type, "resource_name": b.pattern.name,
            "pattern_type": b.pattern.pattern_type, "principal": b.entry.principal, "host": b.entry.host,
            "operation": b.entry.operation, "permission_type": b.entry.permission_type}


def create_acls(image: I.MetadataImage, creations: list[Any]) -> tuple[list[dict], list[tuple[int, dict]]]:
    """AclControlManager.createAcls: each binding validated (an invalid one INVALID_REQUEST,
    the others still created); one already present is not written again."""
    results, records = [], []
    present = set(image.acls.values())
    for c in creations:
        try:
            b = AclBinding.from_wire(c)
        except KafkaError as e:
            results.append({"error_code": e.error_code, "error_message": str(e)})
            continue
        if b not in present:
            present.add(b)
            records.append(I.acl_record(uuid.uuid4(), b))
        results.append({"error_code": 0, "error_message": None})
    return results, records


def delete_acls(image: I.MetadataImage, filters: list[Any]) -> tuple[list[dict], list[tuple[int, dict]]]:
    """AclControlManager.deleteAcls: a RemoveAccessControlEntryRecord per ACL a filter
    matches (an ACL two filters match is removed once, answered by both)."""
    results, records, removed = [], [], set()
    for f in filters:
        flt = AclBindingFilter.from_wire(f)
        if flt.unknown():
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": flt.unknown(),
                            "matching_acls": []})
            continue
        matched = sorted((b, i) for i, b in image.acls.items() if flt.matches(b))
        for _, i in matched:
            if i not in removed:
                removed.add(i)
                records.append((I.REMOVE_ACCESS_CONTROL_ENTRY, {"id": i}))
        results.append({"error_code": 0, "error_message": None,
                        "matching_acls": [{"error_code": 0, "error_message": None, **wire(b)} for b, _ in matched]})
    return results, records
