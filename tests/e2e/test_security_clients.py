"""Real clients against a secured kproto broker, every listener type at once:
confluent-kafka (SASL_SSL + SCRAM-SHA-512, as the issue asks), kafka-python
(SASL_PLAINTEXT + PLAIN, SSL with a client certificate), aiokafka
(SASL_SSL + SCRAM-SHA-256), Debian's kcat (-X security.protocol=...).
Failures as Kafka gives them: wrong password, unknown user, untrusted
certificate, missing ACL; one broker log line each, nothing else affected,
no credential in the log."""

from __future__ import annotations

import asyncio
import re
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType,
    ResourceType, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion,
)

from tests import components
from tests.helpers import until
from tests.security_fixtures import ALICE_PW, BOB_PW, SECRETS, secure_broker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with secure_broker(tmp_path_factory.mktemp("secure")) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap("PLAINTEXT")})
        for mech in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            for f in admin.alter_user_scram_credentials([
                    UserScramCredentialUpsertion("alice", ScramCredentialInfo(mech, 4096), ALICE_PW.encode()),
                    UserScramCredentialUpsertion("bob", ScramCredentialInfo(mech, 8192), BOB_PW.encode())]).values():
                f.result(timeout=30)
        for f in admin.create_topics([NewTopic(t, 1) for t in ("sec-a", "sec-b", "secret")]).values():
            f.result(timeout=30)
        acls = [AclBinding(ResourceType.TOPIC, "sec-", ResourcePatternType.PREFIXED, p, "*", op,
                           AclPermissionType.ALLOW)
                for p in ("User:alice", "User:alice-client") for op in (AclOperation.WRITE, AclOperation.READ)]
        acls.append(AclBinding(ResourceType.GROUP, "g-", ResourcePatternType.PREFIXED, "User:alice", "*",
                               AclOperation.READ, AclPermissionType.ALLOW))
        acls.append(AclBinding(ResourceType.TOPIC, "sec-b", ResourcePatternType.LITERAL, "User:alice", "*",
                               AclOperation.WRITE, AclPermissionType.DENY))
        for f in admin.create_acls(acls).values():
            f.result(timeout=30)
        yield c


def sasl_ssl(c, mech="SCRAM-SHA-512", user="alice", pw=ALICE_PW, **extra):
    return {"bootstrap.servers": c.bootstrap("SASL_SSL"), "security.protocol": "SASL_SSL", "sasl.mechanism": mech,
            "sasl.username": user, "sasl.password": pw, "ssl.ca.location": str(c.ca), **extra}


def produce(conf, topic, n=3):
    results = []
    p = Producer(conf)
    for i in range(n):
        p.produce(topic, f"m{i}".encode(), on_delivery=lambda e, m: results.append(e))
    p.flush(30)
    return results


def consume(conf, topic, n, timeout=30):
    c = Consumer({**conf, "group.id": "g-" + topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + timeout
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
            elif m is not None and m.error().code() != KafkaError._PARTITION_EOF:
                raise AssertionError(m.error())
    finally:
        c.close()
    return got


def test_confluent_sasl_ssl_scram_sha_512_produce_consume(cluster):
    assert produce(sasl_ssl(cluster), "sec-a") == [None, None, None]
    assert consume(sasl_ssl(cluster), "sec-a", 3) == [b"m0", b"m1", b"m2"]
    assert "authenticated User:alice with SCRAM-SHA-512 on SASL_SSL" in cluster.log_text()


def test_confluent_missing_acl_gets_kafka_errors(cluster):
    # no ACL on "secret"; an explicit DENY on sec-b wins over the prefixed ALLOW
    for topic in ("secret", "sec-b"):
        errors = produce(sasl_ssl(cluster, **{"message.timeout.ms": 5000}), topic, n=1)
        assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    c = Consumer({**sasl_ssl(cluster), "group.id": "not-allowed", "auto.offset.reset": "earliest"})
    c.subscribe(["sec-a"])
    try:
        def error():
            m = c.poll(0.5)
            return m.error().code() if m is not None and m.error() is not None else None

        assert until(error, what="a consumer error") == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        c.close()
    # Metadata lists only what alice may describe
    md = AdminClient(sasl_ssl(cluster)).list_topics(timeout=20)
    assert sorted(md.topics) == ["sec-a", "sec-b"]
    assert "Principal = User:alice is Denied operation = WRITE" in cluster.log_text()


@pytest.mark.parametrize("password,user", [("wrong-password", "alice"), (ALICE_PW, "nobody")])
def test_confluent_bad_credentials(cluster, password, user):
    before = cluster.log_text().count("authentication failed")
    errors = []
    p = Producer(sasl_ssl(cluster, user=user, pw=password, error_cb=errors.append))
    def auth_error() -> bool:
        p.poll(0.2)
        return any(e.code() == KafkaError._AUTHENTICATION for e in errors)

    until(auth_error, what="an authentication error")
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth, errors
    # Kafka's message for a SCRAM failure does not say whether the user exists
    assert "Authentication failed during authentication due to invalid credentials with SASL mechanism " \
           "SCRAM-SHA-512" in auth[0].str()
    p = None        # the last reference: librdkafka closes the client
    until(lambda: cluster.log_text().count("authentication failed") > before, what="the failure logged")
    lines = [l for l in cluster.log_text().splitlines() if "authentication failed" in l]
    assert all(password not in l for l in lines)
    # the broker carries on for everyone else
    assert produce(sasl_ssl(cluster), "sec-a", n=1) == [None]


def test_confluent_scram_admin_and_acl_apis(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap("PLAINTEXT")})
    desc = admin.describe_user_scram_credentials(["bob"])["bob"].result(timeout=20)
    assert sorted((i.mechanism, i.iterations) for i in desc.scram_credential_infos) == [
        (ScramMechanism.SCRAM_SHA_256, 8192), (ScramMechanism.SCRAM_SHA_512, 8192)]
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None, AclOperation.ANY,
                           AclPermissionType.ANY)
    found = admin.describe_acls(flt).result(timeout=20)
    assert sorted((b.name, b.operation, b.permission_type) for b in found) == sorted([
        ("g-", AclOperation.READ, AclPermissionType.ALLOW), ("sec-", AclOperation.READ, AclPermissionType.ALLOW),
        ("sec-", AclOperation.WRITE, AclPermissionType.ALLOW), ("sec-b", AclOperation.WRITE, AclPermissionType.DENY)])
    # alice is no super user: the cluster APIs are refused with CLUSTER_AUTHORIZATION_FAILED
    # (kafka-python raises it; confluent-kafka 2.16 returns an empty list for a top-level DescribeAcls error)
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient
    from kafka.admin import ResourcePatternFilter, ResourceType as KPResourceType
    from kafka.errors import ClusterAuthorizationFailedError
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism="PLAIN", sasl_plain_username="alice", sasl_plain_password=ALICE_PW)
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            kp.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                       permission_type=ACLPermissionType.ANY,
                                       resource_pattern=ResourcePatternFilter(KPResourceType.ANY, None,
                                                                              ACLResourcePatternType.ANY)))
    finally:
        kp.close()


def test_kafka_python_sasl_plaintext_plain_and_ssl_client_cert(cluster):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError as KPError
    p = KafkaProducer(bootstrap_servers=cluster.bootstrap("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="PLAIN", sasl_plain_username="alice", sasl_plain_password=ALICE_PW,
                      request_timeout_ms=10000)
    p.send("sec-a", b"kp-plain").get(timeout=20)
    p.close()
    # SSL with a client certificate: the principal from its DN by the listener's ssl.principal.mapping.rules
    p = KafkaProducer(bootstrap_servers=cluster.bootstrap("SSL"), security_protocol="SSL",
                      ssl_cafile=str(cluster.ca), ssl_certfile=str(cluster.client_chain),
                      ssl_keyfile=str(cluster.client_key), request_timeout_ms=10000, max_block_ms=10000)
    p.send("sec-a", b"kp-ssl").get(timeout=20)
    with pytest.raises(KPError):
        p.send("secret", b"no").get(timeout=20)
    p.close()
    assert "Principal = User:alice-client is Denied operation = DESCRIBE" in cluster.log_text()
    c = KafkaConsumer("sec-a", bootstrap_servers=cluster.bootstrap("SASL_PLAINTEXT"),
                      security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="alice",
                      sasl_plain_password=ALICE_PW, auto_offset_reset="earliest", consumer_timeout_ms=5000)
    values = [m.value for m in c]
    c.close()
    assert b"kp-plain" in values and b"kp-ssl" in values


def test_aiokafka_sasl_ssl_scram_sha_256(cluster):
    import ssl

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run():
        ctx = ssl.create_default_context(cafile=str(cluster.ca))
        common = dict(bootstrap_servers=cluster.bootstrap("SASL_SSL"), security_protocol="SASL_SSL",
                      sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice", sasl_plain_password=ALICE_PW,
                      ssl_context=ctx)
        p = AIOKafkaProducer(**common)
        await p.start()
        try:
            await p.send_and_wait("sec-a", b"aio")
        finally:
            await p.stop()
        c = AIOKafkaConsumer("sec-a", auto_offset_reset="earliest", **common)
        await c.start()
        try:
            got = await asyncio.wait_for(c.getmany(timeout_ms=5000), 20)
        finally:
            await c.stop()
        return [m.value for ms in got.values() for m in ms]

    assert b"aio" in asyncio.run(run())


def test_untrusted_certificates(cluster):
    """The client does not trust the broker's CA: it fails; the broker logs one line
    and serves others."""
    before = cluster.log_text().count("TLS handshake failed")
    errors = []
    p = Producer({**sasl_ssl(cluster), "ssl.ca.location": str(cluster.other_ca), "error_cb": errors.append})
    until(lambda: p.poll(0.2) >= 0 and errors, what="a TLS error")     # poll returns a count
    assert any(e.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN) for e in errors)
    p = None        # the last reference: librdkafka closes the client
    until(lambda: cluster.log_text().count("TLS handshake failed") > before, what="the handshake failure logged")
    assert produce(sasl_ssl(cluster), "sec-a", n=1) == [None]


def test_kcat_every_listener(cluster, tmp_path):
    kcat = components.require_executable("kcat", "apt-get install kcat")
    common = {
        "PLAINTEXT": [],
        "SSL": ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={cluster.ca}"],
        "SASL_PLAINTEXT": ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
                           "-X", "sasl.username=alice", "-X", f"sasl.password={ALICE_PW}"],
        "SASL_SSL": ["-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-256",
                     "-X", "sasl.username=alice", "-X", f"sasl.password={ALICE_PW}",
                     "-X", f"ssl.ca.location={cluster.ca}"],
    }
    for listener, args in common.items():
        out = subprocess.run([kcat, "-b", cluster.bootstrap(listener), *args, "-L", "-t", "sec-a", "-m", "10"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, (listener, out.stderr)
        assert 'topic "sec-a" with 1 partitions' in out.stdout, (listener, out.stdout)
        assert f"127.0.0.1:{cluster.ports[listener]}" in out.stdout     # advertised: the listener used
    args = common["SASL_SSL"]
    out = subprocess.run([kcat, "-b", cluster.bootstrap("SASL_SSL"), *args, "-P", "-t", "sec-a"],
                         input="from-kcat\n", capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    out = subprocess.run([kcat, "-b", cluster.bootstrap("SASL_SSL"), *args, "-C", "-t", "sec-a", "-o", "beginning",
                          "-e", "-q"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "from-kcat" in out.stdout.splitlines()


def test_no_credential_in_broker_log(cluster):
    """Runs last in the module: after every success and failure above."""
    text = cluster.log_text()
    assert "authenticated User:alice" in text
    for secret in SECRETS:
        assert secret not in text
    assert not re.search(r"password=|user_admin=", text)


@pytest.mark.parametrize("which", ["expired", "stranger"])
def test_bad_client_certificates(cluster, which):
    """kcat presents an expired client certificate, or one from a CA the broker does
    not trust: the handshake fails, the broker logs one line, others carry on."""
    kcat = components.require_executable("kcat", "apt-get install kcat")
    before = cluster.log_text().count("TLS handshake failed")
    cert = getattr(cluster, which)
    out = subprocess.run([kcat, "-b", cluster.bootstrap("SSL"), "-X", "security.protocol=SSL",
                          "-X", f"ssl.ca.location={cluster.ca}", "-X", f"ssl.certificate.location={cert}",
                          "-X", f"ssl.key.location={cert}", "-L", "-m", "5"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0
    until(lambda: cluster.log_text().count("TLS handshake failed") > before, what="the handshake failure logged")
    lines = [l for l in cluster.log_text().splitlines() if "TLS handshake failed" in l]
    reason = {"expired": "CERTIFICATE_VERIFY_FAILED", "stranger": "CERTIFICATE_VERIFY_FAILED"}[which]
    assert reason in lines[-1] and "Traceback" not in cluster.log_text()
    assert produce(sasl_ssl(cluster), "sec-a", n=1) == [None]


def test_sasl_handshake_v0_raw_tokens(cluster):
    """SaslHandshake v0 (pre-KIP-152): the PLAIN token follows as a bare size-prefixed
    frame and the answer is one too (here empty); then requests as usual."""
    import socket
    import struct

    from kproto import protocol as P

    def frame(data: bytes) -> bytes:
        return struct.pack(">i", len(data)) + data

    def read(sock) -> bytes:
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        return sock.recv(size, socket.MSG_WAITALL) if size else b""

    with socket.create_connection(("127.0.0.1", cluster.ports["SASL_PLAINTEXT"]), timeout=10) as s:
        s.sendall(frame(P.encode_request(P.sasl_handshake.API.key, 0, 1, "raw", {"mechanism": "PLAIN"})))
        _, answer = P.decode_response(P.sasl_handshake.API.key, 0, read(s))
        assert answer.error_code == 0 and list(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256",
                                                                              "SCRAM-SHA-512"]
        s.sendall(frame(f"\0alice\0{ALICE_PW}".encode()))
        assert read(s) == b""
        s.sendall(frame(P.encode_request(P.metadata.API.key, 1, 2, "raw", {"topics": [{"name": "sec-a"}]})))
        _, md = P.decode_response(P.metadata.API.key, 1, read(s))
        assert [(t.name, t.error_code) for t in md.topics] == [("sec-a", 0)]
    with socket.create_connection(("127.0.0.1", cluster.ports["SASL_PLAINTEXT"]), timeout=10) as s:
        # anything but ApiVersions/SaslHandshake before authentication: the connection is closed
        s.sendall(frame(P.encode_request(P.metadata.API.key, 1, 2, "raw", {"topics": None})))
        assert s.recv(4) == b""
    assert "Unexpected Kafka request of type METADATA during SASL handshake" in cluster.log_text()


def test_reauthentication_with_librdkafka(tmp_path):
    """connections.max.reauth.ms (KIP-368): librdkafka re-authenticates on the same
    connection before the session ends; production carries on throughout."""
    with secure_broker(tmp_path, "connections.max.reauth.ms=1500") as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap("PLAINTEXT")})
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), ALICE_PW.encode())])["alice"].result(30)
        admin.create_topics([NewTopic("sec-r", 1)])["sec-r"].result(30)
        admin.create_acls([AclBinding(ResourceType.TOPIC, "sec-r", ResourcePatternType.LITERAL, "User:alice", "*",
                                      AclOperation.WRITE, AclPermissionType.ALLOW)])[
            AclBinding(ResourceType.TOPIC, "sec-r", ResourcePatternType.LITERAL, "User:alice", "*",
                       AclOperation.WRITE, AclPermissionType.ALLOW)].result(30)
        p = Producer(sasl_ssl(c))
        results = []

        def reauthenticated_twice() -> bool:     # producing all along, until the broker logs two
            p.produce("sec-r", b"r", on_delivery=lambda e, m: results.append(e))
            p.poll(0.2)
            return c.log_text().count("re-authenticated User:alice with SCRAM-SHA-512 on SASL_SSL") >= 2

        until(reauthenticated_twice, timeout=120, what="two re-authentications")
        p.flush(20)
        assert results and all(e is None for e in results)


def test_broker_configs_hide_secrets(cluster):
    """DescribeConfigs on the broker: the JAAS line (it holds passwords) is sensitive, value null (Kafka's PASSWORD type)."""
    from confluent_kafka.admin import ConfigResource
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap("PLAINTEXT")})
    res = ConfigResource(ConfigResource.Type.BROKER, "1")
    entries = admin.describe_configs([res])[res].result(timeout=20)
    jaas = entries["sasl.jaas.config"]
    assert jaas.is_sensitive and jaas.value is None
    assert entries["ssl.keystore.location"].value == str(cluster.ca.parent / "server.pem")
    assert not any(s in (e.value or "") for e in entries.values() for s in SECRETS)


def test_certificate_without_a_mapping_rule(tmp_path):
    """No ssl.principal.mapping.rules rule matches the client's DN: Kafka fails the
    connection; kproto closes it with one log line."""
    kcat = components.require_executable("kcat", "apt-get install kcat")
    with secure_broker(tmp_path, "listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=nobody$/x/") as c:
        out = subprocess.run([kcat, "-b", c.bootstrap("SSL"), "-X", "security.protocol=SSL",
                              "-X", f"ssl.ca.location={c.ca}", "-X", f"ssl.certificate.location={c.client_cert}",
                              "-X", f"ssl.key.location={c.client_cert}", "-L", "-m", "3"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode != 0
        until(lambda: "No rules apply to CN=alice-client" in c.log_text(), what="the mapping failure logged")
        assert "Traceback" not in c.log_text()


def test_partial_authorization_in_one_request(cluster):
    """One Produce for an allowed and a denied topic, one Metadata naming both: the
    allowed part is served, the denied part gets TOPIC_AUTHORIZATION_FAILED (29), as
    Kafka's KafkaApis.handleProduceRequest / handleTopicMetadataRequest split them.
    kproto's own client, over SASL_PLAINTEXT with PLAIN (its --command-config path)."""
    from kproto.client.transport import BrokerClient
    from kproto.records import NewRecord, build_record_batch
    from kproto import protocol as P
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
            "sasl.password": ALICE_PW}
    batch = build_record_batch([NewRecord(value=b"partial")])
    with BrokerClient(cluster.bootstrap("SASL_PLAINTEXT"), config=conf) as client:
        r = client.request(P.produce.API.key, {"transactional_id": None, "acks": -1, "timeout_ms": 10000,
                                               "topic_data": [{"name": t, "partition_data": [
                                                   {"index": 0, "records": batch}]} for t in ("sec-a", "secret")]},
                           version=9)
        got = {t.name: [(p.index, p.error_code, p.base_offset >= 0) for p in t.partition_responses]
               for t in r.responses}
        assert got == {"sec-a": [(0, 0, True)], "secret": [(0, 29, False)]}
        md = client.request(P.metadata.API.key, {"topics": [{"name": "sec-a"}, {"name": "secret"}],
                                                 "allow_auto_topic_creation": False}, version=12)
        assert [(t.name, t.error_code, len(t.partitions)) for t in md.topics] == [("sec-a", 0, 1), ("secret", 29, 0)]
        # DeleteTopics v6 by id: the id's topic is checked (alice may not DELETE); an unknown id is UNKNOWN_TOPIC_ID
        import uuid
        secret_id = next(t.topic_id for t in client.request(P.metadata.API.key, {
            "topics": [{"name": "sec-a"}], "allow_auto_topic_creation": False}, version=12).topics)
        r = client.request(P.delete_topics.API.key, {"topics": [{"name": None, "topic_id": secret_id},
                                                                {"name": None, "topic_id": uuid.UUID(int=7)}],
                                                     "timeout_ms": 5000}, version=6)
        assert sorted(t.error_code for t in r.responses) == [29, 100]


def test_authorized_operations_kip_430(cluster):
    """include_*_authorized_operations: the operations the principal may do on the
    resource (confluent-kafka's describe_topics/describe_cluster), alice: READ and
    WRITE (hence DESCRIBE) on sec-a, nothing on the cluster."""
    from confluent_kafka import TopicCollection
    admin = AdminClient(sasl_ssl(cluster))
    desc = admin.describe_topics(TopicCollection(["sec-a"]), include_authorized_operations=True)["sec-a"].result(20)
    assert sorted(op.name for op in desc.authorized_operations) == ["DESCRIBE", "READ", "WRITE"]
    c = admin.describe_cluster(include_authorized_operations=True).result(20)
    assert not c.authorized_operations
    superuser = AdminClient({"bootstrap.servers": cluster.bootstrap("PLAINTEXT")})
    c = superuser.describe_cluster(include_authorized_operations=True).result(20)
    assert sorted(op.name for op in c.authorized_operations) == sorted(
        ["ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE"])
    groups = admin.describe_consumer_groups(["g-sec-a", "not-allowed"], include_authorized_operations=True)
    assert sorted(op.name for op in groups["g-sec-a"].result(20).authorized_operations) == ["DESCRIBE", "READ"]
    with pytest.raises(Exception) as e:
        groups["not-allowed"].result(20)
    assert "GROUP_AUTHORIZATION_FAILED" in str(e.value)


def test_offset_fetch_shows_only_topics_the_principal_may_describe(cluster):
    """KafkaApis.handleOffsetFetchRequestFromCoordinator: an all-topics fetch (topics null)
    leaves out the offsets of topics alice may not DESCRIBE, a named one answers them
    TOPIC_AUTHORIZATION_FAILED (29) with offset -1; a group she may not DESCRIBE answers
    GROUP_AUTHORIZATION_FAILED (30). The same for one group (v7) and a batch (v8, KIP-709)."""
    from kproto.client.transport import BrokerClient
    from kproto.schemas import protocol as P
    with BrokerClient(cluster.bootstrap("PLAINTEXT")) as operator:      # a super user commits both
        for group in ("g-fetch", "other-fetch"):
            r = operator.request(P.offset_commit.API.key, {
                "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
                "retention_time_ms": -1, "topics": [{"name": t, "partitions": [
                    {"partition_index": 0, "committed_offset": 11, "committed_leader_epoch": -1,
                     "committed_metadata": "m"}]} for t in ("sec-a", "secret")]}, version=8)
            assert [p.error_code for t in r.topics for p in t.partitions] == [0, 0]
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
            "sasl.password": ALICE_PW}
    named = [{"name": "sec-a", "partition_indexes": [0]}, {"name": "secret", "partition_indexes": [0]}]

    def offsets(topics) -> list:
        return [(t.name, [(p.partition_index, p.committed_offset, p.error_code) for p in t.partitions])
                for t in topics]
    allowed = ("sec-a", [(0, 11, 0)])
    hidden = ("secret", [(0, -1, 29)])
    with BrokerClient(cluster.bootstrap("SASL_PLAINTEXT"), config=conf) as alice:
        for topics, expected in ((None, [allowed]), (named, [allowed, hidden])):
            r = alice.request(P.offset_fetch.API.key, {"group_id": "g-fetch", "topics": topics,
                                                       "require_stable": True}, version=7)
            assert (r.error_code, offsets(r.topics)) == (0, expected)
        r = alice.request(P.offset_fetch.API.key, {"group_id": "other-fetch", "topics": None,
                                                   "require_stable": True}, version=7)
        assert (r.error_code, r.topics) == (30, [])
        r = alice.request(P.offset_fetch.API.key, {"groups": [
            {"group_id": "g-fetch", "topics": None}, {"group_id": "other-fetch", "topics": None},
            {"group_id": "g-fetch", "topics": named}], "require_stable": True}, version=8)
        assert [(g.group_id, g.error_code, offsets(g.topics)) for g in r.groups] == [
            ("g-fetch", 0, [allowed]), ("other-fetch", 30, []), ("g-fetch", 0, [allowed, hidden])]


def test_client_quotas_need_the_cluster_acls_and_bind_to_the_user(cluster):
    """DescribeClientQuotas needs DESCRIBE_CONFIGS and AlterClientQuotas ALTER_CONFIGS on the
    cluster (KafkaApis, ControllerApis); a user's quota throttles that principal, whatever its
    client id."""
    from kproto import protocol as P
    from kproto.client.transport import BrokerClient
    alice = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
             "sasl.password": ALICE_PW}
    quota = {"entity": [{"entity_type": "user", "entity_name": "alice"}],
             "ops": [{"key": "producer_byte_rate", "value": 1000.0, "remove": False}]}
    with BrokerClient(cluster.bootstrap("SASL_PLAINTEXT"), config=alice) as c:
        r = c.request(P.describe_client_quotas.API.key, {"components": [], "strict": False})
        assert (r.error_code, r.error_message, r.entries) == (31, None, None)
        r = c.request(P.alter_client_quotas.API.key, {"entries": [quota], "validate_only": False})
        assert [(e.error_code, e.error_message) for e in r.entries] == [(31, "Cluster authorization failed.")]
    with BrokerClient(cluster.bootstrap("PLAINTEXT")) as c:      # the super user
        r = c.request(P.alter_client_quotas.API.key, {"entries": [quota], "validate_only": False})
        assert [(e.error_code, e.error_message) for e in r.entries] == [(0, None)]
    try:
        seen: list[float] = []
        p = Producer(sasl_ssl(cluster, **{"client.id": "any-client", "batch.size": 1200,
                                          "throttle_cb": lambda e: seen.append(e.throttle_time)}))
        for _ in range(12):
            p.produce("sec-a", b"q" * 1000)
        assert p.flush(60) == 0
        until(lambda: p.poll(0.1) is not None or seen, what="alice's producer throttled")
        assert max(seen) > 0
    finally:
        quota["ops"][0]["remove"] = True
        with BrokerClient(cluster.bootstrap("PLAINTEXT")) as c:
            c.request(P.alter_client_quotas.API.key, {"entries": [quota], "validate_only": False})
