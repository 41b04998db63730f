"""A secured kproto broker for tests: a trustme CA, server and client
certificates, all four listener types at once, PLAIN users from JAAS, SCRAM
users created through AlterUserScramCredentials, the StandardAuthorizer on."""

from __future__ import annotations

import contextlib
import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from kproto.testing import Broker

ADMIN_PW, ALICE_PW, BOB_PW = "admin-Secr3t!", "alice-Secr3t!", "bob-Secr3t!"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        f'password="{ADMIN_PW}" user_admin="{ADMIN_PW}" user_alice="{ALICE_PW}";')
SECRETS = (ADMIN_PW, ALICE_PW, BOB_PW)


def trustme():
    try:
        import trustme
    except ImportError:
        pytest.fail("trustme is missing: pip install trustme (make test installs the test extra)", pytrace=False)
    return trustme


@dataclass
class SecureCluster:
    ports: dict[str, int]
    ca: Path
    client_cert: Path       # PEM with the client key and chain (CN=alice-client)
    client_key: Path
    client_chain: Path
    other_ca: Path          # a CA the broker does not trust / that did not sign the broker
    expired: Path           # PEM key + chain of a client certificate (our CA) that expired in 2020
    stranger: Path          # PEM key + chain of a client certificate from other_ca
    log: Path

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def make_certs(tmp: Path) -> dict[str, Path]:
    tm = trustme()
    ca, other = tm.CA(), tm.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    client = ca.issue_cert("alice-client", common_name="alice-client")
    stranger = other.issue_cert("mallory", common_name="mallory")
    past = datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone.utc)
    expired = ca.issue_cert("old-client", common_name="old-client", not_before=past - datetime.timedelta(days=1),
                            not_after=past)
    out = {"ca": tmp / "ca.pem", "other_ca": tmp / "other-ca.pem", "server": tmp / "server.pem",
           "client": tmp / "client.pem", "client_key": tmp / "client.key", "client_chain": tmp / "client.crt",
           "stranger": tmp / "stranger.pem", "expired": tmp / "expired.pem"}
    ca.cert_pem.write_to_path(str(out["ca"]))
    other.cert_pem.write_to_path(str(out["other_ca"]))
    server.private_key_and_cert_chain_pem.write_to_path(str(out["server"]))
    client.private_key_and_cert_chain_pem.write_to_path(str(out["client"]))
    client.private_key_pem.write_to_path(str(out["client_key"]))
    client.cert_chain_pems[0].write_to_path(str(out["client_chain"]))
    stranger.private_key_and_cert_chain_pem.write_to_path(str(out["stranger"]))
    expired.private_key_and_cert_chain_pem.write_to_path(str(out["expired"]))
    return out


@contextlib.contextmanager
def secure_broker(tmp: Path, *extra: str) -> Iterator[SecureCluster]:
    certs = make_certs(tmp)
    names = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
    # every listener on port 0: the broker binds them and logs where (Broker.listeners)
    listeners = ",".join(f"{n}://127.0.0.1:0" for n in names)
    configs = [f"listeners={listeners}", "ssl.keystore.type=PEM", f"ssl.keystore.location={certs['server']}",
               "ssl.truststore.type=PEM", f"ssl.truststore.location={certs['ca']}", "ssl.client.auth=requested",
               f"sasl.jaas.config={JAAS}",
               "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
               # the PLAINTEXT listener is the operators' (User:ANONYMOUS), as in Kafka quickstarts
               "super.users=User:admin;User:ANONYMOUS", "num.partitions=1",
               "group.initial.rebalance.delay.ms=0",
               # CN=alice-client,OU=...,O=trustme -> User:alice-client on the SSL listener (Kafka's rule syntax)
               "listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=([^,]*),.*$/$1/L,DEFAULT", *extra]
    log = tmp / "broker.log"
    with Broker(tmp / "data", dict(c.split("=", 1) for c in configs), log_path=log, log_level="info") as broker:
        ports = {n: port for n, (_, port) in broker.listeners.items()}
        assert sorted(ports) == sorted(names), ports
        yield SecureCluster(ports, certs["ca"], certs["client"], certs["client_key"], certs["client_chain"],
                            certs["other_ca"], certs["expired"], certs["stranger"], log)
