"""Listeners as Kafka configures them, and the TLS context of each.

``listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094`` names the
sockets; the part before ``://`` is the listener name, mapped to a security
protocol by ``listener.security.protocol.map`` (default: each of Kafka's four
protocol names to itself). ``advertised.listeners`` gives what Metadata
tells clients, per listener name; unset, the bound address is advertised.

TLS (SSL and SASL_SSL) takes PEM only (Kafka's ``ssl.keystore.type=PEM``):
``ssl.keystore.location`` (a PEM file with the key and chain) or the PEM text
in ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``; trust from
``ssl.truststore.location`` (PEM) or ``ssl.truststore.certificates``;
``ssl.client.auth=none|requested|required``.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass
from typing import Any, Mapping

from kproto.errors import InvalidConfigError
from kproto.security.config import ListenerSettings

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int
    security_protocol: str

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")


def _endpoints(text: str, config: str) -> list[tuple[str, str, int]]:
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit() or not name:
            raise InvalidConfigError(f"Invalid value {item} for configuration {config}: "
                                     "expected LISTENER_NAME://host:port")
        out.append((name.upper(), host.strip("[]"), int(port)))
    names = [n for n, _, _ in out]
    if len(set(names)) != len(names):
        raise InvalidConfigError(f"Invalid value {text} for configuration {config}: each listener name must "
                                 "appear only once")
    return out


def protocol_map(text: str) -> dict[str, str]:
    if not text.strip():
        return {p: p for p in SECURITY_PROTOCOLS}
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, proto = item.partition(":")
        if not sep or proto.upper() not in SECURITY_PROTOCOLS:
            raise InvalidConfigError(f"Invalid value {item} for configuration listener.security.protocol.map: "
                                     f"expected NAME:PROTOCOL with PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}")
        out[name.upper()] = proto.upper()
    return out


def parse_listeners(values: Mapping[str, Any], default_host: str, default_port: int) -> list[Listener]:
    """The broker's listeners; without ``listeners``, one PLAINTEXT on --listen."""
    text = values.get("listeners") or ""
    if not text.strip():
        return [Listener("PLAINTEXT", default_host, default_port, "PLAINTEXT")]
    pmap = protocol_map(values.get("listener.security.protocol.map") or "")
    out = []
    for name, host, port in _endpoints(text, "listeners"):
        if name not in pmap:
            raise InvalidConfigError(f"No security protocol defined for listener {name} "
                                     "(listener.security.protocol.map)")
        out.append(Listener(name, host or "0.0.0.0", port, pmap[name]))
    return out


def advertised(values: Mapping[str, Any], bound: Mapping[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """listener name -> (host, port) that Metadata/FindCoordinator give out."""
    out = dict(bound)
    text = values.get("advertised.listeners") or ""
    for name, host, port in _endpoints(text, "advertised.listeners") if text.strip() else []:
        if name not in bound:
            raise InvalidConfigError(f"advertised.listeners names {name}, which is not in listeners")
        out[name] = (host or bound[name][0], port)
    return out


def _pem_file(text: str, directory: str, name: str) -> str:
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text.replace("\\n", "\n"))
    return path


def server_ssl_context(settings: ListenerSettings, listener: str) -> ssl.SSLContext:
    """The listener's TLS context from Kafka's ssl.* configs (PEM)."""
    get = settings.get
    # A configured store must be PEM (Kafka's default type JKS would not read a PEM file either).
    for kind, given in (("ssl.keystore.type", ("ssl.keystore.location", "ssl.keystore.certificate.chain")),
                        ("ssl.truststore.type", ("ssl.truststore.location", "ssl.truststore.certificates"))):
        if any(get(g) for g in given) and str(get(kind)).upper() != "PEM":
            raise InvalidConfigError(f"{kind}={get(kind)} on listener {listener}: kproto reads PEM only "
                                     f"(set {kind}=PEM)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = [p.strip() for p in str(get("ssl.enabled.protocols")).split(",") if p.strip()]
    versions = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
    chosen = [versions[p] for p in protocols if p in versions]
    if not chosen:
        raise InvalidConfigError(f"ssl.enabled.protocols={','.join(protocols)}: kproto offers TLSv1.2 and TLSv1.3")
    ctx.minimum_version, ctx.maximum_version = min(chosen), max(chosen)
    if get("ssl.cipher.suites"):
        ctx.set_ciphers(":".join(c.strip() for c in str(get("ssl.cipher.suites")).split(",")))
    password = get("ssl.key.password") or get("ssl.keystore.password") or None
    with tempfile.TemporaryDirectory(prefix="kproto-tls-") as tmp:
        location, chain, key = get("ssl.keystore.location"), get("ssl.keystore.certificate.chain"), \
            get("ssl.keystore.key")
        try:
            if chain and key:
                ctx.load_cert_chain(_pem_file(chain, tmp, "chain.pem"), _pem_file(key, tmp, "key.pem"),
                                    password=password)
            elif location:
                ctx.load_cert_chain(location, password=password)
            else:
                raise InvalidConfigError(f"listener {listener} uses TLS but has no key: set ssl.keystore.location "
                                         "or ssl.keystore.certificate.chain and ssl.keystore.key")
            trust_file, trust_text = get("ssl.truststore.location"), get("ssl.truststore.certificates")
            if trust_text:
                ctx.load_verify_locations(cadata=str(trust_text).replace("\\n", "\n"))
            elif trust_file:
                ctx.load_verify_locations(trust_file)
        except (OSError, ssl.SSLError) as e:
            # e names the file, never its content or the password
            raise InvalidConfigError(f"listener {listener}: cannot load the TLS key or certificates: "
                                     f"{getattr(e, 'strerror', None) or e}") from None
    auth = str(get("ssl.client.auth")).lower()
    if auth not in ("none", "requested", "required"):
        raise InvalidConfigError(f"Invalid value {auth} for configuration ssl.client.auth: "
                                 "expected none, requested or required")
    ctx.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                       "required": ssl.CERT_REQUIRED}[auth]
    return ctx
