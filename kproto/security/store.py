"""Durable ACLs and SCRAM credentials in the broker's data dir.

Kafka keeps both in its metadata log (KRaft AccessControlEntryRecord,
UserScramCredentialRecord); kproto keeps one small JSON file each at the top
of the data dir, replaced atomically (write, fsync, rename) on every change,
so a crash leaves the old or the new file, never half of one. Credentials
are stored salted (salt, StoredKey, ServerKey, iterations: Kafka's
ScramCredential), never as passwords.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Iterable

from kproto.errors import KprotoError
from kproto.security.acl import (
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType,
    ResourcePattern, ResourceType,
)
from kproto.security.scram import BY_TYPE, MECHANISMS, ScramCredential, ScramMechanism

ACLS_FILE = "kproto-acls.json"
SCRAM_FILE = "kproto-scram-credentials.json"


class CorruptSecurityStoreError(KprotoError):
    """A store file that cannot be read: named with its byte position."""


def _write_atomic(path: Path, doc: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    data = json.dumps(doc, indent=1, sort_keys=True).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _read(path: Path) -> dict | None:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise CorruptSecurityStoreError(f"{path} @ byte {e.pos}: invalid JSON: {e.msg}") from None


class AclStore:
    """The set of ACL bindings, persisted on each change."""

    def __init__(self, data_dir: str | Path | None) -> None:
        self.path = Path(data_dir) / ACLS_FILE if data_dir is not None else None
        self._lock = threading.Lock()
        self.bindings: set[AclBinding] = set()
        doc = _read(self.path) if self.path is not None else None
        for i, a in enumerate((doc or {}).get("acls", [])):
            try:
                self.bindings.add(AclBinding(
                    ResourcePattern(ResourceType[a["resourceType"]], a["name"], PatternType[a["patternType"]]),
                    AccessControlEntry(a["principal"], a["host"], AclOperation[a["operation"]],
                                       AclPermissionType[a["permissionType"]])))
            except (KeyError, TypeError) as e:
                raise CorruptSecurityStoreError(f"{self.path}: acls[{i}]: missing or invalid {e}") from None

    def _save(self) -> None:
        if self.path is None:
            return
        acls = [{"resourceType": b.pattern.resource_type.name, "name": b.pattern.name,
                 "patternType": b.pattern.pattern_type.name, "principal": b.entry.principal,
                 "host": b.entry.host, "operation": b.entry.operation.name,
                 "permissionType": b.entry.permission_type.name} for b in sorted(self.bindings)]
        _write_atomic(self.path, {"version": 1, "acls": acls})

    def add(self, bindings: Iterable[AclBinding]) -> None:
        with self._lock:
            self.bindings.update(bindings)
            self._save()

    def replace(self, bindings: Iterable[AclBinding]) -> None:
        """Take exactly ``bindings`` (a node of a cluster: the ACLs of its metadata image)."""
        with self._lock:
            new = set(bindings)
            if new != self.bindings:
                self.bindings = new
                self._save()

    def remove(self, flt: AclBindingFilter) -> list[AclBinding]:
        with self._lock:
            gone = sorted(b for b in self.bindings if flt.matches(b))
            if gone:
                self.bindings.difference_update(gone)
                self._save()
            return gone

    def match(self, flt: AclBindingFilter) -> list[AclBinding]:
        return sorted(b for b in self.bindings if flt.matches(b))


class ScramCredentialStore:
    """user -> mechanism -> ScramCredential, persisted on each change."""

    def __init__(self, data_dir: str | Path | None) -> None:
        self.path = Path(data_dir) / SCRAM_FILE if data_dir is not None else None
        self._lock = threading.Lock()
        self.users: dict[str, dict[str, ScramCredential]] = {}
        doc = _read(self.path) if self.path is not None else None
        for user, mechs in (doc or {}).get("users", {}).items():
            for mech, text in mechs.items():
                if mech not in MECHANISMS:
                    raise CorruptSecurityStoreError(f"{self.path}: users.{user}: unknown mechanism {mech}")
                try:
                    self.users.setdefault(user, {})[mech] = ScramCredential.from_text(text)
                except ValueError as e:
                    raise CorruptSecurityStoreError(f"{self.path}: users.{user}.{mech}: {e}") from None

    def _save(self) -> None:
        if self.path is not None:
            _write_atomic(self.path, {"version": 1, "users": {
                u: {m: c.to_text() for m, c in sorted(ms.items())} for u, ms in sorted(self.users.items())}})

    def lookup(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self.users.get(user, {}).get(mechanism.name)

    def upsert(self, user: str, mechanism: ScramMechanism, credential: ScramCredential) -> None:
        with self._lock:
            self.users.setdefault(user, {})[mechanism.name] = credential
            self._save()

    def delete(self, user: str, mechanism: ScramMechanism) -> bool:
        with self._lock:
            mechs = self.users.get(user, {})
            if mechanism.name not in mechs:
                return False
            del mechs[mechanism.name]
            if not mechs:
                del self.users[user]
            self._save()
            return True

    def describe(self, user: str) -> list[tuple[ScramMechanism, int]]:
        return [(MECHANISMS[m], c.iterations) for m, c in sorted(self.users.get(user, {}).items())]


__all__ = ["AclStore", "ScramCredentialStore", "CorruptSecurityStoreError", "BY_TYPE"]
