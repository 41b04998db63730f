"""The client side of SASL (PLAIN, SCRAM) and TLS settings, from Kafka client
properties as ``--command-config`` gives them (sans-I/O: the transport sends
the bytes).

Properties read, with Kafka's (Java) and librdkafka's names:
``security.protocol``; ``sasl.mechanism`` (or librdkafka's
``sasl.mechanisms``); credentials from ``sasl.username``/``sasl.password``
or ``sasl.jaas.config`` (``username="…" password="…"``); trust from
``ssl.ca.location`` or ``ssl.truststore.location`` (PEM) or
``ssl.truststore.certificates``; a client certificate from
``ssl.certificate.location`` + ``ssl.key.location`` or
``ssl.keystore.location`` (PEM); ``ssl.endpoint.identification.algorithm``
(``https`` default: check the host name; empty: do not).
"""

from __future__ import annotations

import base64
import hmac
import secrets
import ssl
from typing import Mapping

from kproto.errors import UsageError
from kproto.security.errors import SaslAuthenticationError
from kproto.security.jaas import parse_jaas
from kproto.security.scram import MECHANISMS, ScramMechanism, normalize

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def security_protocol(props: Mapping[str, str]) -> str:
    proto = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if proto not in PROTOCOLS:
        raise UsageError(f"security.protocol={proto}: expected one of {', '.join(PROTOCOLS)}")
    return proto


def sasl_credentials(props: Mapping[str, str]) -> tuple[str, str, str]:
    """-> (mechanism, username, password)."""
    mech = (props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "GSSAPI").strip().upper()
    if mech != "PLAIN" and mech not in MECHANISMS:
        raise UsageError(f"sasl.mechanism={mech}: kproto's tools speak PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512")
    user, password = props.get("sasl.username"), props.get("sasl.password")
    if (user is None or password is None) and props.get("sasl.jaas.config"):
        _, options = parse_jaas(props["sasl.jaas.config"])
        user, password = options.get("username"), options.get("password")
    if not user or password is None:
        raise UsageError(f"security.protocol={security_protocol(props)} with {mech} needs sasl.username and "
                         "sasl.password (or sasl.jaas.config with username= and password=)")
    return mech, user, password


def client_ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    trust = props.get("ssl.ca.location") or props.get("ssl.truststore.location")
    try:
        if props.get("ssl.truststore.certificates"):
            ctx.load_verify_locations(cadata=props["ssl.truststore.certificates"])
        elif trust:
            ctx.load_verify_locations(trust)
        cert = props.get("ssl.certificate.location") or props.get("ssl.keystore.location")
        if cert:
            ctx.load_cert_chain(cert, props.get("ssl.key.location") or None,
                                password=props.get("ssl.key.password") or props.get("ssl.keystore.password") or None)
    except (OSError, ssl.SSLError) as e:
        raise UsageError(f"cannot load the TLS files of --command-config: {getattr(e, 'strerror', None) or e}") \
            from None
    if props.get("ssl.endpoint.identification.algorithm", "https").strip() == "":
        ctx.check_hostname = False
    return ctx


class ScramClient:
    """RFC 5802 client: ``first()``, ``final(server_first)``, ``verify(server_final)``."""

    def __init__(self, mechanism: ScramMechanism, user: str, password: str, nonce: str | None = None) -> None:
        self.mech, self.password = mechanism, password
        name = user.replace("=", "=3D").replace(",", "=2C")
        self.nonce = nonce or secrets.token_urlsafe(24)
        self.first_bare = f"n={name},r={self.nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = dict(item.split("=", 1) for item in text.split(","))
        nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        if not nonce.startswith(self.nonce) or iterations < self.mech.min_iterations:
            raise SaslAuthenticationError("invalid SCRAM server first message")
        salted = self.mech.salted_password(normalize(self.password), salt, iterations)
        client_key = self.mech.hmac(salted, b"Client Key")
        without_proof = f"c=biws,r={nonce}"
        auth = f"{self.first_bare},{text},{without_proof}".encode()
        signature = self.mech.hmac(self.mech.h(client_key), auth)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = self.mech.hmac(self.mech.hmac(salted, b"Server Key"), auth)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode()
        if not text.startswith("v=") or not hmac.compare_digest(base64.b64decode(text[2:]), self._server_signature):
            raise SaslAuthenticationError("the broker's SCRAM signature does not verify")
