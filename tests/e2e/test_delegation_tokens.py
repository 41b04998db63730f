"""Delegation tokens (KIP-48) through kafka-clients' Admin on kproto's broker and on Kafka's,
configured alike (a PLAINTEXT listener, a SASL_PLAINTEXT one with SCRAM-SHA-256, a
delegation.token.secret.key): the same outcome, event by event (tests/java/KprotoClient.java
``tokens``): refused over PLAINTEXT, created with a renewer, described by owner, renewed,
used to authenticate (tokenauth=true) where creating and describing tokens is refused,
expired by its renewer, then no longer authenticating. Without the key: disabled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from kproto.testing import Broker
from tests import java_client
from kproto import protocol as P
from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode
from tests.helpers import until
from tests.kafka_ref import KafkaUnavailable, unavailable
from tests.tools.helpers import run_command

SECRET = "token-secret-key"
JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


@contextlib.contextmanager
def started(kind: str, kafka_ref, tmp_path, secret: str | None) -> Iterator[tuple[str, str]]:
    """(PLAINTEXT bootstrap, SASL bootstrap) of kproto's or Kafka's broker, tokens enabled with ``secret``."""
    if kind == "kproto":
        config = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0",
                  "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
                  "sasl.enabled.mechanisms": "SCRAM-SHA-256"}
        if secret:
            config["delegation.token.secret.key"] = secret
        with Broker(tmp_path / "data", config, log_path=tmp_path / "broker.log", log_level="info") as b:
            ls = b.listeners
            yield f"127.0.0.1:{ls['PLAINTEXT'][1]}", f"127.0.0.1:{ls['SASL'][1]}"
        return
    configs = {"sasl_enabled_mechanisms": "SCRAM-SHA-256", "listener_name_sasl_scram-sha-256_sasl_jaas_config": JAAS}
    if secret:
        configs["delegation_token_secret_key"] = secret
    try:
        with kafka_ref.broker(tmp_path / "kafka", listeners={"SASL": "SASL_PLAINTEXT"}, **configs) as k:
            yield k.bootstrap, f"127.0.0.1:{k.ports['SASL']}"
    except KafkaUnavailable as e:
        unavailable(e)


@pytest.fixture(params=["kproto", "kafka"])
def brokers(request, kafka_ref, tmp_path):
    with started(request.param, kafka_ref, tmp_path, SECRET) as b:
        yield b


@pytest.fixture(params=["kproto", "kafka"])
def disabled(request, kafka_ref, tmp_path):
    with started(request.param, kafka_ref, tmp_path, None) as b:
        yield b


def test_delegation_tokens_through_the_java_admin(brokers, kafka_ref):
    plain, sasl = brokers
    out = java_client.run(kafka_ref, "tokens", bootstrap=plain, sasl=sasl)
    assert out.returncode == 0, (out.events, out.stderr[-3000:])
    assert [{k: v for k, v in e.items()} for e in out.events] == [
        {"event": "plaintext_create", "error": "UnsupportedByAuthenticationException"},
        {"event": "created", "error": "none", "owner": "User:alice", "requester": "User:alice",
         "renewers": "[User:bob]", "max_minus_issue": 3600000, "expiry_is_max": True, "issued_now": True,
         "hmac_bytes": 64, "token_id_set": True},
        {"event": "described", "mine": 1},
        {"event": "described_by_owner", "owner": "bob", "count": 1},
        {"event": "described_by_owner", "owner": "carol", "count": 0},
        {"event": "renewed", "in_period": True},
        {"event": "carol_describes", "count": 1},     # no authorizer: every token may be described
        {"event": "carol_renews", "error": "DelegationTokenOwnerMismatchException"},
        {"event": "token_authenticated", "nodes": 1},
        {"event": "token_creates", "error": "UnsupportedByAuthenticationException"},
        {"event": "token_describes", "error": "UnsupportedByAuthenticationException"},
        {"event": "expired_by_renewer", "error": "none"},
        {"event": "renew_after_expiry", "error": "DelegationTokenNotFoundException"},
        {"event": "expired_token_auth", "error": "SaslAuthenticationException"},
        {"event": "done"}]


def sasl_client(sasl: str, user: str, password: str) -> BrokerClient:
    """kproto's client over SASL/SCRAM-SHA-256, once the broker knows the user (Kafka's broker
    learns a credential from its controller a moment after the alter answered)."""
    config = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
              "sasl.jaas.config": f'{JAAS[:-1]} username="{user}" password="{password}";'}

    def connect():
        try:
            return BrokerClient(sasl, config=config)
        except Exception:       # noqa: BLE001 - authentication refused until the credential arrives
            return None
    return until(connect, what=f"{user} authenticating")


def test_without_the_secret_key_tokens_are_disabled(disabled):
    """DelegationTokenControlManager.isEnabled: no delegation.token.secret.key, no tokens;
    Create answers the principals and zero times (the controller's default values),
    Describe DELEGATION_TOKEN_AUTH_DISABLED (KafkaApis, config.tokenAuthEnabled)."""
    plain, sasl = disabled
    assert run_command("configs", plain, "--alter", "--entity-type", "users", "--entity-name", "dana",
                       "--add-config", "SCRAM-SHA-256=[password=dana-pw]")[0] == 0
    c = sasl_client(sasl, "dana", "dana-pw")
    try:
        r = c.request(P.create_delegation_token.API.key, {
            "owner_principal_type": None, "owner_principal_name": None, "renewers": [], "max_lifetime_ms": -1}, 3)
        assert dict(r) == {"error_code": ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, "principal_type": "User",
                           "principal_name": "dana", "token_requester_principal_type": "User",
                           "token_requester_principal_name": "dana", "issue_timestamp_ms": 0,
                           "expiry_timestamp_ms": 0, "max_timestamp_ms": 0, "token_id": "", "hmac": b"",
                           "throttle_time_ms": 0}
        r = c.request(P.describe_delegation_token.API.key, {"owners": None}, 3)
        assert (r.error_code, list(r.tokens)) == (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, [])
        r = c.request(P.renew_delegation_token.API.key, {"hmac": b"x" * 64, "renew_period_ms": -1}, 2)
        assert (r.error_code, r.expiry_timestamp_ms) == (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0)
        r = c.request(P.create_delegation_token.API.key, {
            "owner_principal_type": None, "owner_principal_name": None,
            "renewers": [{"principal_type": "Group", "principal_name": "g"}], "max_lifetime_ms": -1}, 3)
        assert (r.error_code, r.issue_timestamp_ms, r.token_id) == (ErrorCode.INVALID_PRINCIPAL_TYPE, -1, "")
    finally:
        c.close()
