"""kproto.security, sans-I/O: SCRAM against the RFC test vectors and an
independent client (kafka-python's ScramClient), PLAIN, JAAS, principal
mapping (Kafka's SslPrincipalMapperTest cases), the authorizer's decisions
(Kafka's StandardAuthorizerTest/AclAuthorizerTest rules), durable stores."""

from __future__ import annotations

import base64
import json

import pytest

from kproto.errors import InvalidConfigError, InvalidRequestError
from kproto.security.acl import (
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation as O, AclPermissionType as P,
    PatternType, ResourcePattern, ResourceType as R,
)
from kproto.security.authorizer import Authorizer, parse_super_users
from kproto.security.errors import CredentialError, IllegalSaslStateError, SaslAuthenticationError
from kproto.security.jaas import parse_jaas, plain_users
from kproto.security.plain import PlainServer
from kproto.security.principal import KafkaPrincipal, SslPrincipalMapper, distinguished_name
from kproto.security.scram import (
    SCRAM_SHA_256, SCRAM_SHA_512, ScramCredential, ScramMechanism, ScramServer, State,
)
from kproto.security.store import ACLS_FILE, SCRAM_FILE, AclStore, CorruptSecurityStoreError, ScramCredentialStore

SHA1 = ScramMechanism("SCRAM-SHA-1", "sha1", 0)   # only for RFC 5802's vector; never enabled


def _server(mech, password, salt_b64, nonce, iterations=4096):
    cred = ScramCredential.from_password(mech, password, salt=base64.b64decode(salt_b64), iterations=iterations)
    return ScramServer(mech, lambda u, m: cred if (u, m) == ("user", mech) else None, nonce=lambda: nonce)


@pytest.mark.parametrize("mech,salt,cnonce,snonce,proof,verifier", [
    # RFC 5802 section 5
    (SHA1, "QSXCR+Q6sek8bf92", "fyko+d2lbbFgONRv9qkxdawL", "3rfcNHYJY1ZVvWVs7j",
     "v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=", "rmF9pqV8S7suAoZWja4dJRkFsKQ="),
    # RFC 7677 section 3
    (SCRAM_SHA_256, "W22ZaJ0SNY7soEsUEjb6gQ==", "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
     "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
])
def test_scram_rfc_vectors(mech, salt, cnonce, snonce, proof, verifier):
    s = _server(mech, "pencil", salt, snonce)
    first = s.evaluate(f"n,,n=user,r={cnonce}".encode())
    assert first == f"r={cnonce}{snonce},s={salt},i=4096".encode()
    final = s.evaluate(f"c=biws,r={cnonce}{snonce},p={proof}".encode())
    assert final == f"v={verifier}".encode()
    assert s.complete and s.username == "user"


def test_scram_wrong_proof_fails_without_telling_why():
    s = _server(SCRAM_SHA_256, "pencil", "W22ZaJ0SNY7soEsUEjb6gQ==", "x")
    s.evaluate(b"n,,n=user,r=abc")
    bad = base64.b64encode(bytes(32)).decode()
    with pytest.raises(CredentialError) as e:
        s.evaluate(f"c=biws,r=abcx,p={bad}".encode())
    assert s.state is State.FAILED
    assert e.value.client_message("SCRAM-SHA-256") == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
    with pytest.raises(IllegalSaslStateError):
        s.evaluate(b"again")


def test_scram_unknown_user_and_bad_messages():
    s = _server(SCRAM_SHA_256, "pencil", "W22ZaJ0SNY7soEsUEjb6gQ==", "x")
    with pytest.raises(CredentialError):
        s.evaluate(b"n,,n=nobody,r=abc")
    for msg in (b"y,,n=user,r=abc", b"p=tls-unique,,n=user,r=abc", b"n,,r=abc", b"garbage", b"\xff"):
        with pytest.raises(SaslAuthenticationError):
            _server(SCRAM_SHA_256, "pencil", "AAAA", "x").evaluate(msg)
    # authzid different from the user (Kafka: SaslAuthenticationException, message shown to the client)
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        _server(SCRAM_SHA_256, "pencil", "AAAA", "x").evaluate(b"n,a=admin,n=user,r=abc")
    s = _server(SCRAM_SHA_256, "pencil", "AAAA", "x")
    s.evaluate(b"n,,n=user,r=abc")
    with pytest.raises(CredentialError, match="nonce"):
        s.evaluate(b"c=biws,r=abcWRONG,p=AAAA")


def test_scram_iterations_below_kafka_minimum_refused():
    s = _server(SCRAM_SHA_256, "pencil", "AAAA", "x", iterations=4095)
    with pytest.raises(CredentialError, match="less than the minimum 4096"):
        s.evaluate(b"n,,n=user,r=abc")


def test_saslname_escapes():
    cred = ScramCredential.from_password(SCRAM_SHA_512, "pw", iterations=4096)
    seen = []
    s = ScramServer(SCRAM_SHA_512, lambda u, m: seen.append(u) or cred)
    s.evaluate(b"n,,n=a=2Cb=3Dc,r=abc")
    assert seen == ["a,b=c"]
    with pytest.raises(SaslAuthenticationError):
        ScramServer(SCRAM_SHA_512, lambda u, m: cred).evaluate(b"n,,n=a=b,r=abc")


@pytest.mark.parametrize("mech", [SCRAM_SHA_256, SCRAM_SHA_512], ids=lambda m: m.name)
def test_scram_against_kafka_python_client(mech):
    """An independent client implementation (kafka-python's ScramClient) completes
    the exchange and verifies our server signature."""
    from kafka.net.sasl.scram import ScramClient
    cred = ScramCredential.from_password(mech, "alice-secret", iterations=8192)
    server = ScramServer(mech, lambda u, m: cred if u == "alice" else None)
    client = ScramClient("alice", "alice-secret", mech.name)
    server_first = server.evaluate(client.first_message())
    client.process_server_first_message(server_first)
    server_final = server.evaluate(client.final_message())
    client.process_server_final_message(server_final)   # raises if our signature is wrong
    assert server.complete
    wrong = ScramClient("alice", "not-it", mech.name)
    s2 = ScramServer(mech, lambda u, m: cred)
    wrong.process_server_first_message(s2.evaluate(wrong.first_message()))
    with pytest.raises(CredentialError):
        s2.evaluate(wrong.final_message())


def test_credential_text_round_trip_and_no_password():
    cred = ScramCredential.from_password(SCRAM_SHA_512, "s3cret-pw", iterations=4096, salt=b"salty")
    text = cred.to_text()
    assert "s3cret-pw" not in text and text.startswith("salt=c2FsdHk=,stored_key=")
    assert text.endswith(",iterations=4096")
    assert ScramCredential.from_text(text) == cred


def test_plain():
    users = {"alice": "alice-secret"}
    s = PlainServer(users)
    assert s.evaluate(b"\0alice\0alice-secret") == b"" and s.complete and s.username == "alice"
    assert PlainServer(users).evaluate(b"alice\0alice\0alice-secret") == b""
    cases = {b"\0alice\0wrong": "Invalid username or password", b"\0bob\0alice-secret": "Invalid username or password",
             b"\0\0x": "username not specified", b"\0alice\0": "password not specified",
             b"a\0b": "expected 3 tokens, got 2",
             b"bob\0alice\0alice-secret": "authorization id that is different from username"}
    for msg, why in cases.items():
        with pytest.raises(SaslAuthenticationError, match=why):
            PlainServer(users).evaluate(msg)


def test_jaas():
    module, opts = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required '
                              'username="admin" password="admin-secret" user_admin="admin-secret" '
                              'user_alice="al\\"ice";')
    assert module.endswith("PlainLoginModule")
    assert opts["username"] == "admin" and plain_users(opts) == {"admin": "admin-secret", "alice": 'al"ice'}
    for bad in ('Module required username="x"', 'Module username="x";', 'Module required user_a="x"; junk'):
        with pytest.raises(InvalidConfigError) as e:
            parse_jaas(bad)
        assert '"x"' not in str(e.value) and "x;" not in str(e.value)


def test_principal_mapping_as_kafka():
    # cases from Kafka's SslPrincipalMapperTest
    dn = "CN=Duke,OU=ServiceUsers,O=Org,C=US"
    assert SslPrincipalMapper().name(dn) == dn
    m = SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),"
                           "C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,DEFAULT")
    assert m.name(dn) == "Duke"
    assert m.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert m.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE"
    assert m.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"
    with pytest.raises(InvalidConfigError):
        SslPrincipalMapper("RULE:^CN=(.*?)/$1/,RULE:x/y/").name("O=nothing")
    with pytest.raises(InvalidConfigError):
        SslPrincipalMapper("RULE:bad")
    subject = ((("countryName", "US"),), (("organizationName", "Org, Inc"),), (("commonName", "alice"),))
    assert distinguished_name(subject) == "CN=alice,O=Org\\, Inc,C=US"
    assert str(SslPrincipalMapper().principal("CN=alice")) == "User:CN=alice"
    assert KafkaPrincipal.parse("User:CN=a,O=b") == KafkaPrincipal("User", "CN=a,O=b")


def _acl(rtype, name, principal, op, perm=P.ALLOW, pattern=PatternType.LITERAL, host="*"):
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


ALICE, BOB = KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "bob")


def test_authorizer_decisions():
    store = AclStore(None)
    auth = Authorizer(store, super_users=parse_super_users("User:admin;User:CN=ops,O=x"))
    assert auth.super_users == {"User:admin", "User:CN=ops,O=x"}
    # no ACL at all: allow.everyone.if.no.acl.found decides (default false)
    assert not auth.authorize(ALICE, "1.2.3.4", O.READ, R.TOPIC, "t")
    assert Authorizer(store, allow_everyone_if_no_acl_found=True).authorize(ALICE, "h", O.READ, R.TOPIC, "t")
    assert auth.authorize(KafkaPrincipal("User", "admin"), "h", O.ALTER, R.CLUSTER, "kafka-cluster")
    store.add([_acl(R.TOPIC, "t", "User:alice", O.READ)])
    assert auth.authorize(ALICE, "h", O.READ, R.TOPIC, "t")
    assert not auth.authorize(ALICE, "h", O.WRITE, R.TOPIC, "t")
    assert not auth.authorize(BOB, "h", O.READ, R.TOPIC, "t")
    # ACLs now exist for t, so allow.everyone no longer applies to it
    assert not Authorizer(store, allow_everyone_if_no_acl_found=True).authorize(BOB, "h", O.READ, R.TOPIC, "t")
    # implications: DESCRIBE from READ/WRITE/DELETE/ALTER; DESCRIBE_CONFIGS from ALTER_CONFIGS; never the reverse
    assert auth.authorize(ALICE, "h", O.DESCRIBE, R.TOPIC, "t")
    for op in (O.WRITE, O.DELETE, O.ALTER):
        s = AclStore(None)
        s.add([_acl(R.TOPIC, "u", "User:bob", op)])
        assert Authorizer(s).authorize(BOB, "h", O.DESCRIBE, R.TOPIC, "u")
    s = AclStore(None)
    s.add([_acl(R.TOPIC, "u", "User:bob", O.ALTER_CONFIGS), _acl(R.TOPIC, "v", "User:bob", O.DESCRIBE)])
    a = Authorizer(s)
    assert a.authorize(BOB, "h", O.DESCRIBE_CONFIGS, R.TOPIC, "u")
    assert not a.authorize(BOB, "h", O.READ, R.TOPIC, "v")
    # deny wins, deny does not use implication, ALL allows everything
    store.add([_acl(R.TOPIC, "t", "User:alice", O.DESCRIBE, P.DENY)])
    assert not auth.authorize(ALICE, "h", O.DESCRIBE, R.TOPIC, "t")
    assert auth.authorize(ALICE, "h", O.READ, R.TOPIC, "t")
    store.add([_acl(R.GROUP, "g", "User:*", O.ALL)])
    assert auth.authorize(BOB, "h", O.READ, R.GROUP, "g") and auth.authorize(BOB, "h", O.DELETE, R.GROUP, "g")
    # prefixed patterns, literal wildcard, hosts
    store.add([_acl(R.TOPIC, "pay-", "User:bob", O.WRITE, pattern=PatternType.PREFIXED),
               _acl(R.TOPIC, "*", "User:bob", O.READ, host="10.0.0.1"),
               _acl(R.TOPIC, "pay-secret", "User:bob", O.ALL, P.DENY)])
    assert auth.authorize(BOB, "h", O.WRITE, R.TOPIC, "pay-eu")
    assert not auth.authorize(BOB, "h", O.WRITE, R.TOPIC, "pays")
    assert not auth.authorize(BOB, "h", O.WRITE, R.TOPIC, "pay-secret")
    assert auth.authorize(BOB, "10.0.0.1", O.READ, R.TOPIC, "anything")
    assert not auth.authorize(BOB, "10.0.0.2", O.READ, R.TOPIC, "anything")
    # by resource type (idempotent producers, KIP-679)
    assert auth.authorize_any(BOB, "h", O.WRITE, R.TOPIC)
    assert not auth.authorize_any(ALICE, "h", O.WRITE, R.TOPIC)
    s = AclStore(None)
    s.add([_acl(R.TOPIC, "x", "User:bob", O.WRITE), _acl(R.TOPIC, "*", "User:bob", O.WRITE, P.DENY)])
    assert not Authorizer(s).authorize_any(BOB, "h", O.WRITE, R.TOPIC)


def test_acl_validation_and_filters():
    with pytest.raises(InvalidRequestError, match="not supported for resource type GROUP"):
        _acl(R.GROUP, "g", "User:a", O.WRITE).validate()
    with pytest.raises(InvalidRequestError, match="kafka-cluster"):
        _acl(R.CLUSTER, "c", "User:a", O.ALTER).validate()
    with pytest.raises(InvalidRequestError, match="principal"):
        _acl(R.TOPIC, "t", "alice", O.READ).validate()
    a = _acl(R.TOPIC, "pay-", "User:a", O.WRITE, pattern=PatternType.PREFIXED)
    b = _acl(R.TOPIC, "*", "User:b", O.READ)
    c = _acl(R.TOPIC, "pay-eu", "User:a", O.READ)
    f = lambda **kw: AclBindingFilter(**{"resource_type": R.ANY, "name": None, "pattern_type": PatternType.ANY,  # noqa
                                          "principal": None, "host": None, "operation": O.ANY,
                                          "permission_type": P.ANY, **kw})
    every = [a, b, c]
    assert [x for x in every if f().matches(x)] == every
    assert [x for x in every if f(pattern_type=PatternType.MATCH, name="pay-eu").matches(x)] == every
    assert [x for x in every if f(pattern_type=PatternType.MATCH, name="other").matches(x)] == [b]
    assert [x for x in every if f(name="pay-eu").matches(x)] == [c]
    assert [x for x in every if f(principal="User:a", operation=O.WRITE).matches(x)] == [a]


def test_stores_are_durable_and_hold_no_password(tmp_path):
    acls = AclStore(tmp_path)
    binding = _acl(R.TOPIC, "t", "User:alice", O.READ)
    acls.add([binding, _acl(R.GROUP, "g", "User:alice", O.READ)])
    assert AclStore(tmp_path).bindings == acls.bindings
    gone = acls.remove(AclBindingFilter(R.GROUP, None, PatternType.ANY, None, None, O.ANY, P.ANY))
    assert len(gone) == 1 and AclStore(tmp_path).bindings == {binding}
    creds = ScramCredentialStore(tmp_path)
    creds.upsert("alice", SCRAM_SHA_512, ScramCredential.from_password(SCRAM_SHA_512, "Tr0ub4dor&3"))
    again = ScramCredentialStore(tmp_path)
    assert again.describe("alice") == [(SCRAM_SHA_512, 4096)]
    assert again.lookup("alice", SCRAM_SHA_512) == creds.lookup("alice", SCRAM_SHA_512)
    text = (tmp_path / SCRAM_FILE).read_text()
    assert "Tr0ub4dor" not in text and "stored_key=" in text
    assert (tmp_path / SCRAM_FILE).stat().st_mode & 0o077 == 0
    assert creds.delete("alice", SCRAM_SHA_512) and ScramCredentialStore(tmp_path).describe("alice") == []
    (tmp_path / ACLS_FILE).write_text('{"acls": [}')
    with pytest.raises(CorruptSecurityStoreError, match=r"kproto-acls.json @ byte 10"):
        AclStore(tmp_path)
    (tmp_path / ACLS_FILE).write_text(json.dumps({"acls": [{"resourceType": "TOPIC"}]}))
    with pytest.raises(CorruptSecurityStoreError, match=r"acls\[0\]"):
        AclStore(tmp_path)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(user=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20),
       password=st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
       mech=st.sampled_from([SCRAM_SHA_256, SCRAM_SHA_512]))
def test_scram_client_and_server_agree(user, password, mech):
    """Any user name (saslname escapes) and password: our client and server complete
    the exchange; one changed character of the password fails it."""
    from kproto.security.client import ScramClient
    cred = ScramCredential.from_password(mech, password)
    server = ScramServer(mech, lambda u, m: cred if u == user else None)
    client = ScramClient(mech, user, password)
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.complete and server.username == user
    wrong = ScramClient(mech, user, password + "x")
    s2 = ScramServer(mech, lambda u, m: cred)
    with pytest.raises(CredentialError):
        s2.evaluate(wrong.final(s2.evaluate(wrong.first())))
