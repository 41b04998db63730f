"""Delegation tokens (KIP-48), as Kafka's DelegationTokenControlManager and
DelegationTokenManager keep them.

Theory of operation. With ``delegation.token.secret.key`` set, an authenticated
principal may create a token: an id (a random Uuid's text) and its HMAC-SHA512 under
the secret key. The holder then authenticates with SCRAM (any SCRAM mechanism), the
token id as user name, the HMAC in base64 as password and the ``tokenauth=true``
extension; the connection's principal is the token's owner, marked token-authenticated
(such a connection may not create, renew, expire or describe tokens). A token expires
at its expiry time (issue + ``delegation.token.expiry.time.ms``, moved on by renewals
by its owner or a renewer) and at the latest at its max time (issue +
``delegation.token.max.lifetime.ms``, or less if asked); an expired token is removed
(Kafka's controller sweeps them every ``delegation.token.expiry.check.interval.ms``;
kproto at each use). Tokens persist in ``delegation-tokens.json`` in the data
directory (Kafka: DelegationTokenRecords in its metadata log); no I/O beyond that file.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from kproto.errors import ErrorCode
from kproto.security.principal import KafkaPrincipal
from kproto.security.scram import ScramCredential, ScramMechanism

__all__ = ["DelegationTokenManager", "TokenInformation", "TOKENS_FILE", "token_hmac"]

log = logging.getLogger("kproto.security.tokens")

TOKENS_FILE = "delegation-tokens.json"
LONG_MAX = 2**63 - 1


def token_hmac(secret_key: str, token_id: str) -> bytes:
    """DelegationTokenControlManager.createHmac: HmacSHA512(secret key's UTF-8, token id's UTF-8)."""
    return hmac.new(secret_key.encode(), token_id.encode(), hashlib.sha512).digest()


def _sum(now: int, duration: int) -> int:
    """DelegationTokenControlManager.sum: saturates at Long.MAX_VALUE."""
    return LONG_MAX if now > LONG_MAX - duration else now + duration


def _kafka_uuid_text() -> str:
    """Uuid.randomUuid().toString(): URL-safe base64 of 16 random bytes, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass(slots=True)
class TokenInformation:
    """Kafka's TokenInformation plus the token's HMAC."""
    token_id: str
    owner: KafkaPrincipal
    requester: KafkaPrincipal
    renewers: list[KafkaPrincipal]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int
    hmac: bytes
    _credentials: dict = field(default_factory=dict, repr=False)

    def owner_or_renewer(self, principal: KafkaPrincipal) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now: int) -> bool:
        return self.max_timestamp < now or self.expiry_timestamp < now

    def credential(self, mechanism: ScramMechanism) -> ScramCredential:
        """DelegationTokenManager.prepareScramCredentials: the HMAC's base64 as the
        password, the mechanism's minimum iterations."""
        if mechanism.name not in self._credentials:
            self._credentials[mechanism.name] = ScramCredential.from_password(
                mechanism, base64.b64encode(self.hmac).decode(), iterations=mechanism.min_iterations)
        return self._credentials[mechanism.name]


@dataclass(frozen=True, slots=True)
class Outcome:
    error_code: int
    expiry_timestamp: int = -1
    token: TokenInformation | None = None


class DelegationTokenManager:
    def __init__(self, data_dir: str | Path, secret_key: str | None, *, max_lifetime_ms: int,
                 expiry_time_ms: int, clock: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.path = Path(data_dir) / TOKENS_FILE
        self.secret_key = secret_key or None
        self.max_lifetime_ms = max_lifetime_ms
        self.expiry_time_ms = expiry_time_ms
        self.clock = clock
        self._tokens: dict[str, TokenInformation] = {}
        self._load()

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    # -- persistence --------------------------------------------------------------------------

    def _load(self) -> None:
        if not self.path.exists():
            return
        try:
            for t in json.loads(self.path.read_text()):
                info = TokenInformation(
                    t["token_id"], KafkaPrincipal(*t["owner"]), KafkaPrincipal(*t["requester"]),
                    [KafkaPrincipal(*r) for r in t["renewers"]], t["issue_timestamp"], t["max_timestamp"],
                    t["expiry_timestamp"], base64.b64decode(t["hmac"]))
                self._tokens[info.token_id] = info
        except (ValueError, KeyError, TypeError) as e:       # never fatal: logged, started without
            log.error("%s: unreadable delegation tokens, starting without them: %s", self.path, e)

    def _save(self) -> None:
        out = []
        for t in self._tokens.values():
            d = asdict(t)
            d.pop("_credentials")
            d.update(owner=[t.owner.principal_type, t.owner.name],
                     requester=[t.requester.principal_type, t.requester.name],
                     renewers=[[r.principal_type, r.name] for r in t.renewers], hmac=base64.b64encode(t.hmac).decode())
            out.append(d)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, sort_keys=True))
        os.replace(tmp, self.path)

    def _sweep(self, now: int) -> None:
        """DelegationTokenControlManager.sweepExpiredDelegationTokens."""
        gone = [i for i, t in self._tokens.items() if t.expired(now)]
        for i in gone:
            log.info("Delegation token expired for token: %s for owner: %s", i, self._tokens[i].owner)
            del self._tokens[i]
        if gone:
            self._save()

    def _by_hmac(self, mac: bytes) -> TokenInformation | None:
        return next((t for t in self._tokens.values() if hmac.compare_digest(t.hmac, mac)), None)

    # -- the controller's operations ---------------------------------------------------------------

    def create(self, owner: KafkaPrincipal, requester: KafkaPrincipal, renewers: list[KafkaPrincipal],
               max_lifetime_ms: int) -> Outcome:
        """DelegationTokenControlManager.createDelegationToken (the broker checked the
        renewers' principal type before: KafkaApis.handleCreateTokenRequest)."""
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        now = self.clock()
        max_life = min(self.max_lifetime_ms, max_lifetime_ms) if max_lifetime_ms > 0 else self.max_lifetime_ms
        max_ts = _sum(now, max_life)
        expiry = min(max_ts, _sum(now, self.expiry_time_ms))
        token_id = _kafka_uuid_text()
        info = TokenInformation(token_id, owner, requester, list(renewers), now, max_ts, expiry,
                                token_hmac(self.secret_key, token_id))
        self._tokens[token_id] = info
        self._save()
        return Outcome(0, expiry, info)

    def _token(self, mac: bytes) -> TokenInformation | Outcome:
        """The token an HMAC names, or the refusal both renew and expire start with."""
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        info = self._by_hmac(mac)
        return Outcome(ErrorCode.DELEGATION_TOKEN_NOT_FOUND) if info is None else info

    def renew(self, principal: KafkaPrincipal, mac: bytes, renew_period_ms: int) -> Outcome:
        """DelegationTokenControlManager.renewDelegationToken."""
        now, info = self.clock(), self._token(mac)
        if isinstance(info, Outcome):
            return info
        if info.expired(now):
            return Outcome(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        if not info.owner_or_renewer(principal):
            return Outcome(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        period = min(self.expiry_time_ms, renew_period_ms) if renew_period_ms > 0 else self.expiry_time_ms
        info.expiry_timestamp = min(info.max_timestamp, now + period)
        self._save()
        return Outcome(0, info.expiry_timestamp)

    def expire(self, principal: KafkaPrincipal, mac: bytes, expiry_time_period_ms: int) -> Outcome:
        """DelegationTokenControlManager.expireDelegationToken: a negative period removes it now."""
        now, info = self.clock(), self._token(mac)
        if isinstance(info, Outcome):
            return info
        if not info.owner_or_renewer(principal):
            return Outcome(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        if expiry_time_period_ms < 0:
            del self._tokens[info.token_id]
            self._save()
            return Outcome(0, now)
        if info.expired(now):
            return Outcome(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        info.expiry_timestamp = min(info.max_timestamp, _sum(now, expiry_time_period_ms))
        self._save()
        return Outcome(0, info.expiry_timestamp)

    def tokens(self) -> list[TokenInformation]:
        self._sweep(self.clock())
        return sorted(self._tokens.values(), key=lambda t: t.issue_timestamp)

    # -- authentication -----------------------------------------------------------------------------

    def scram_lookup(self, token_id: str, mechanism: ScramMechanism) -> tuple[str, ScramCredential] | None:
        """ScramServerCallbackHandler for a DelegationTokenCredentialCallback: (the owner's
        name, the token's credential), or None for a token unknown or expired."""
        if not self.enabled:
            return None
        self._sweep(self.clock())
        info = self._tokens.get(token_id)
        if info is None:
            return None
        return info.owner.name, info.credential(mechanism)
