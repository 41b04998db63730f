"""The broker side of security, in process: listener configs, the SASL
session state machine, the authorization table covering every served API,
SCRAM/ACL admin APIs at the wire (kafka-python's admin client as the peer)."""

from __future__ import annotations

import pytest

from kproto.errors import ErrorCode, InvalidConfigError
from kproto.schemas import protocol as P
from kproto.security.config import ListenerSettings, is_secret
from kproto.security.errors import IllegalSaslStateError
from kproto.security.listeners import Listener, advertised, parse_listeners, protocol_map
from kproto.security.plain import PlainServer
from kproto.security.session import SaslSession, SaslState
from kproto.server import access, handlers


def test_every_served_api_has_an_authorization_rule():
    """Kafka authorizes every API in KafkaApis; kproto must not serve one unchecked. Only the
    APIs Kafka does not authorize (ApiVersions, SASL, KIP-714 telemetry; renewing and
    expiring a delegation token: owner and renewers) and those whose handler checks for itself
    (ACL, SCRAM and client quota admin) run as they are."""
    table = handlers.table()
    assert all(isinstance(api.authorize, access.PerEntry) or callable(api.authorize) for api in table.values())
    assert {k for k, api in table.items() if api.authorize is access.self_checked} == {
        P.api_versions.API.key, P.sasl_handshake.API.key, P.sasl_authenticate.API.key, P.create_acls.API.key,
        P.describe_acls.API.key, P.delete_acls.API.key, P.describe_user_scram_credentials.API.key,
        P.alter_user_scram_credentials.API.key, P.get_telemetry_subscriptions.API.key, P.push_telemetry.API.key,
        P.renew_delegation_token.API.key, P.expire_delegation_token.API.key, P.describe_client_quotas.API.key,
        P.alter_client_quotas.API.key}


def test_listeners_as_kafka_configures_them():
    values = {"listeners": "PLAINTEXT://127.0.0.1:9092,ssl://:9093,CLIENT://[::1]:9094",
              "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CLIENT:SASL_SSL"}
    ls = parse_listeners(values, "127.0.0.1", 1)
    assert ls == [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"), Listener("SSL", "0.0.0.0", 9093, "SSL"),
                  Listener("CLIENT", "::1", 9094, "SASL_SSL")]
    assert ls[2].tls and ls[2].sasl and not ls[0].tls
    assert parse_listeners({}, "127.0.0.2", 7) == [Listener("PLAINTEXT", "127.0.0.2", 7, "PLAINTEXT")]
    assert protocol_map("") == {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    with pytest.raises(InvalidConfigError, match="No security protocol defined for listener INTERNAL"):
        parse_listeners({"listeners": "INTERNAL://:1"}, "h", 1)
    with pytest.raises(InvalidConfigError, match="expected LISTENER_NAME://host:port"):
        parse_listeners({"listeners": "localhost:9092"}, "h", 1)
    with pytest.raises(InvalidConfigError, match="only once"):
        parse_listeners({"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"}, "h", 1)
    adv = advertised({"advertised.listeners": "SSL://kafka.example:19093"},
                     {"PLAINTEXT": ("127.0.0.1", 9092), "SSL": ("127.0.0.1", 9093)})
    assert adv == {"PLAINTEXT": ("127.0.0.1", 9092), "SSL": ("kafka.example", 19093)}


def test_listener_prefixed_configs_win():
    values = {"sasl.enabled.mechanisms": "PLAIN", "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-512",
              "sasl.jaas.config": "global", "listener.name.client.plain.sasl.jaas.config": "for-plain"}
    client, other = ListenerSettings(values, "CLIENT"), ListenerSettings(values, "OTHER")
    assert client.mechanisms() == ["SCRAM-SHA-512"] and other.mechanisms() == ["PLAIN"]
    assert client.get("sasl.jaas.config", "PLAIN") == "for-plain"
    assert other.get("sasl.jaas.config", "PLAIN") == "global"
    with pytest.raises(InvalidConfigError, match="GSSAPI"):
        ListenerSettings({"sasl.enabled.mechanisms": "GSSAPI"}, "X").mechanisms()
    assert is_secret("listener.name.client.plain.sasl.jaas.config") and is_secret("ssl.key.password")
    assert not is_secret("ssl.keystore.location")


def test_sasl_session_states():
    s = SaslSession(["PLAIN"], lambda m: PlainServer({"u": "p"}))
    s.check(P.api_versions.API.key)
    with pytest.raises(IllegalSaslStateError, match="Unexpected Kafka request of type METADATA during SASL handshake"):
        s.check(P.metadata.API.key)
    assert s.handshake("SCRAM-SHA-256", 1) == ErrorCode.UNSUPPORTED_SASL_MECHANISM and s.state is SaslState.FAILED
    s = SaslSession(["PLAIN"], lambda m: PlainServer({"u": "p"}))
    assert s.handshake("PLAIN", 1) == 0 and s.state is SaslState.AUTHENTICATE
    with pytest.raises(IllegalSaslStateError):
        s.check(P.produce.API.key)
    r = s.authenticate(b"\0u\0p")
    assert (r.error_code, r.close, r.session_lifetime_ms) == (0, False, 0) and str(s.principal) == "User:u"
    s.check(P.produce.API.key)
    # failure: SASL_AUTHENTICATION_FAILED, message for the client, close; the log line names no password
    s = SaslSession(["PLAIN"], lambda m: PlainServer({"u": "p"}))
    s.handshake("PLAIN", 1)
    r = s.authenticate(b"\0u\0wrong")
    assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and r.close
    assert r.error_message == "Authentication failed: Invalid username or password" and "wrong" not in r.log_line
    # v0 handshake: raw tokens follow
    s = SaslSession(["PLAIN"], lambda m: PlainServer({"u": "p"}))
    s.handshake("PLAIN", 0)
    assert s.expects_raw_token


def test_reauthentication_kip_368():
    now = [0.0]
    s = SaslSession(["PLAIN"], lambda m: PlainServer({"u": "p", "v": "q"}), reauth_ms=1000, clock=lambda: now[0])
    s.handshake("PLAIN", 1)
    assert s.authenticate(b"\0u\0p").session_lifetime_ms == 1000
    now[0] = 1.5
    with pytest.raises(IllegalSaslStateError, match="expired"):
        s.check(P.fetch.API.key)
    s.check(P.sasl_handshake.API.key)
    assert s.handshake("PLAIN", 1) == 0 and s.state is SaslState.REAUTH_AUTHENTICATE
    assert s.authenticate(b"\0u\0p").error_code == 0
    s.check(P.fetch.API.key)
    # a different principal on re-authentication is refused
    s.handshake("PLAIN", 1)
    r = s.authenticate(b"\0v\0q")
    assert r.close and r.error_message == "Cannot change principals during re-authentication"


# Kafka's SaslServerAuthenticator, written out independently: which requests a
# connection may send in each state (anything else closes it).
GRID = {
    "HANDSHAKE_OR_VERSIONS": {"ApiVersions", "SaslHandshake"},
    "AUTHENTICATE": {"SaslAuthenticate"},
    "REAUTH_AUTHENTICATE": {"SaslAuthenticate"},
    "RAW_TOKEN": set(),
    "FAILED": set(),
    "COMPLETE": {"ApiVersions", "SaslHandshake", "SaslAuthenticate", "Metadata", "Produce", "Fetch"},
}


@pytest.mark.parametrize("state", list(SaslState), ids=lambda s: s.name)
def test_session_gate_sweeps_every_state_and_request(state):
    for name in ("ApiVersions", "SaslHandshake", "SaslAuthenticate", "Metadata", "Produce", "Fetch"):
        key = next(k for k, spec in P.API_KEYS.items() if spec.name == name)
        s = SaslSession(["PLAIN"], lambda m: PlainServer({}))
        s.state = state
        allowed = True
        try:
            s.check(key)
        except IllegalSaslStateError:
            allowed = False
        assert allowed == (name in GRID[state.name]), (state, name)


def test_tls_context_from_pem_text_and_files(tmp_path):
    """ssl.keystore.certificate.chain + ssl.keystore.key as PEM text (Kafka's PEM
    keystore), ssl.truststore.certificates as text; a real handshake checks them."""
    import socket
    import ssl
    import threading

    from kproto.security.listeners import server_ssl_context
    from tests.security_fixtures import trustme
    tm = trustme()
    ca = tm.CA()
    server = ca.issue_cert("localhost")
    client = ca.issue_cert("c1", common_name="c1")
    values = {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": b"".join(
                  b.bytes() for b in server.cert_chain_pems).decode(),
              "ssl.keystore.key": server.private_key_pem.bytes().decode(),
              "ssl.truststore.type": "PEM", "ssl.truststore.certificates": ca.cert_pem.bytes().decode(),
              "ssl.client.auth": "required"}
    ctx = server_ssl_context(ListenerSettings(values, "SSL"), "SSL")
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    cctx = ssl.create_default_context()
    ca.configure_trust(cctx)
    client.configure_cert(cctx)
    a, b = socket.socketpair()
    seen = {}

    def serve():
        with ctx.wrap_socket(a, server_side=True) as s:
            seen["subject"] = s.getpeercert()["subject"]

    t = threading.Thread(target=serve)
    t.start()
    with cctx.wrap_socket(b, server_hostname="localhost"):
        pass
    t.join(10)
    from kproto.security.principal import distinguished_name
    assert distinguished_name(seen["subject"]).startswith("CN=c1,")
    with pytest.raises(InvalidConfigError, match="kproto reads PEM only"):
        server_ssl_context(ListenerSettings({**values, "ssl.keystore.type": "JKS"}, "SSL"), "SSL")
    with pytest.raises(InvalidConfigError, match="uses TLS but has no key"):
        server_ssl_context(ListenerSettings({}, "SSL"), "SSL")
    bad = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tmp_path / "missing.pem")}
    with pytest.raises(InvalidConfigError, match="cannot load the TLS key") as e:
        server_ssl_context(ListenerSettings(bad, "SSL"), "SSL")
    assert "BEGIN" not in str(e.value)


@pytest.mark.parametrize("configs,message", [
    (["listeners=SSL://127.0.0.1:0"], "listener SSL uses TLS but has no key: set ssl.keystore.location"),
    (["listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN"],
     "listener SASL_PLAINTEXT enables PLAIN but has no users"),
    (["listeners=SASL_PLAINTEXT://127.0.0.1:0", 'sasl.jaas.config=M required user_a="topsecret"'],
     "Invalid value for configuration sasl.jaas.config: the line must end with ';'"),
    (["listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=GSSAPI"], "Invalid value GSSAPI"),
    (["listeners=CLIENT://127.0.0.1:0"], "No security protocol defined for listener CLIENT"),
])
def test_serve_refuses_bad_security_config_in_one_line(tmp_path, configs, message):
    import subprocess

    from tests import components
    cmd = [str(components.VENV_BIN / "kproto"), "serve", "--data-dir", str(tmp_path / "d")]
    for c in configs:
        cmd += ["--config", c]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("kproto: error: ") and message in r.stderr
    assert "topsecret" not in r.stderr
