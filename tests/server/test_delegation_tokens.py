"""kproto.security.tokens on a fake clock: lifetimes as DelegationTokenControlManager
computes them, renewal within the max, an expired token refused then swept, the tokens
kept across a restart, the SCRAM credential derived from the HMAC."""

from __future__ import annotations

import base64
import hashlib
import hmac

from kproto.errors import ErrorCode
from kproto.security.principal import KafkaPrincipal
from kproto.security.scram import SCRAM_SHA_256, ScramCredential
from kproto.security.tokens import DelegationTokenManager
from tests.helpers import Clock

ALICE, BOB, CAROL = (KafkaPrincipal("User", n) for n in ("alice", "bob", "carol"))


def manager(tmp_path, clock, secret: str | None = "key") -> DelegationTokenManager:
    return DelegationTokenManager(tmp_path, secret, max_lifetime_ms=10_000, expiry_time_ms=4_000, clock=clock)


def test_lifetimes_renewals_and_expiry(tmp_path):
    clock = Clock(1_000_000)
    m = manager(tmp_path, clock)
    out = m.create(ALICE, ALICE, [BOB], max_lifetime_ms=20_000)      # above the broker's max: the broker's
    t = out.token
    assert (out.error_code, t.issue_timestamp, t.max_timestamp, t.expiry_timestamp) == (0, 1_000_000, 1_010_000,
                                                                                       1_004_000)
    assert t.hmac == hmac.new(b"key", t.token_id.encode(), hashlib.sha512).digest()
    assert m.create(ALICE, ALICE, [], max_lifetime_ms=2_000).token.expiry_timestamp == 1_002_000   # min(max, expiry)
    assert m.renew(CAROL, t.hmac, 1_000).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    clock.now += 3_000
    assert m.renew(BOB, t.hmac, 60_000).expiry_timestamp == 1_007_000          # at most expiry.time.ms
    clock.now += 3_500
    assert m.renew(ALICE, t.hmac, 60_000).expiry_timestamp == 1_010_000        # never past the max
    assert m.renew(ALICE, b"?" * 64, 1_000).error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    again = manager(tmp_path, clock)                                            # a restart keeps them
    assert [x.token_id for x in again.tokens()] == [t.token_id]
    clock.now += 3_501
    assert again.renew(ALICE, t.hmac, 1_000).error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED
    assert again.scram_lookup(t.token_id, SCRAM_SHA_256) is None and again.tokens() == []   # swept


def test_scram_credential_and_expire_now(tmp_path):
    clock = Clock(5_000)
    m = manager(tmp_path, clock)
    t = m.create(ALICE, ALICE, [], max_lifetime_ms=-1).token
    owner, cred = m.scram_lookup(t.token_id, SCRAM_SHA_256)
    # DelegationTokenManager.prepareScramCredentials: the HMAC's base64 is the password
    assert owner == "alice" and cred == ScramCredential.from_password(
        SCRAM_SHA_256, base64.b64encode(t.hmac).decode(), iterations=4096, salt=cred.salt)
    assert m.expire(BOB, t.hmac, -1).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    assert m.expire(ALICE, t.hmac, 1_000).expiry_timestamp == 6_000
    assert m.expire(ALICE, t.hmac, -1).expiry_timestamp == 5_000 and m.tokens() == []
    assert manager(tmp_path, clock, None).create(ALICE, ALICE, [], -1).error_code == \
        ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
