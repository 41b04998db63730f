"""The broker's security configs, by Kafka's names, and how a listener reads them.

Kafka lets most of them be set per listener: ``listener.name.<listener>.<name>``
overrides ``<name>`` (the listener lower-cased), and SASL configs per
mechanism too: ``listener.name.<listener>.<mechanism>.sasl.jaas.config``.
``ListenerSettings`` answers the lookup in that order.
"""

from __future__ import annotations

from typing import Any, Mapping

from kproto.errors import InvalidConfigError

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

# name -> (default, type), merged into the broker's BROKER_CONFIGS.
SECURITY_CONFIGS: dict[str, tuple[Any, type]] = {
    "listeners": ("", str),
    "advertised.listeners": ("", str),
    "listener.security.protocol.map": ("", str),
    "inter.broker.listener.name": ("", str),        # accepted; one node has no inter-broker traffic
    "security.inter.broker.protocol": ("PLAINTEXT", str),
    "ssl.keystore.type": ("JKS", str),
    "ssl.keystore.location": ("", str),
    "ssl.keystore.password": ("", str),
    "ssl.key.password": ("", str),
    "ssl.keystore.certificate.chain": ("", str),
    "ssl.keystore.key": ("", str),
    "ssl.truststore.type": ("JKS", str),
    "ssl.truststore.location": ("", str),
    "ssl.truststore.password": ("", str),
    "ssl.truststore.certificates": ("", str),
    "ssl.client.auth": ("none", str),
    "ssl.principal.mapping.rules": ("DEFAULT", str),
    "ssl.enabled.protocols": ("TLSv1.2,TLSv1.3", str),
    "ssl.protocol": ("TLSv1.3", str),
    "ssl.cipher.suites": ("", str),
    "ssl.endpoint.identification.algorithm": ("https", str),
    # Kafka's default is GSSAPI, which kproto does not implement; the ones it does are on by default.
    "sasl.enabled.mechanisms": (",".join(SUPPORTED_MECHANISMS), str),
    "sasl.mechanism.inter.broker.protocol": ("GSSAPI", str),
    "sasl.jaas.config": ("", str),
    "connections.max.reauth.ms": (0, int),
    # frames before and during the first SASL authentication (BrokerSecurityConfigs)
    "sasl.server.max.receive.size": (524288, int),
    "authorizer.class.name": ("", str),
    "super.users": ("", str),
    "allow.everyone.if.no.acl.found": (False, bool),
    # delegation tokens (DelegationTokenManagerConfigs): none without the secret key
    "delegation.token.secret.key": ("", str),
    "delegation.token.max.lifetime.ms": (604800000, int),
    "delegation.token.expiry.time.ms": (86400000, int),
    "delegation.token.expiry.check.interval.ms": (3600000, int),
}

# Configs whose values are secrets: never logged, printed or echoed in an error.
SECRET_CONFIGS = frozenset({"ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
                            "ssl.truststore.password", "sasl.jaas.config", "delegation.token.secret.key"})


def is_listener_config(name: str) -> bool:
    """``listener.name.<l>.<config>``: per-listener overrides, taken as given."""
    return name.startswith("listener.name.") and name.count(".") >= 3


def is_secret(name: str) -> bool:
    """Also per listener/mechanism: ``listener.name.x.plain.sasl.jaas.config``."""
    return any(name == s or name.endswith("." + s) for s in SECRET_CONFIGS)


class ListenerSettings:
    """A listener's view of the broker config: its prefixed overrides first."""

    def __init__(self, values: Mapping[str, Any], listener: str) -> None:
        self.values = values
        self.prefix = f"listener.name.{listener.lower()}."

    def get(self, name: str, mechanism: str | None = None) -> Any:
        if mechanism is not None:
            key = f"{self.prefix}{mechanism.lower()}.{name}"
            if key in self.values:
                return self.values[key]
        if self.prefix + name in self.values:
            return self.values[self.prefix + name]
        if name in self.values:
            return self.values[name]
        return SECURITY_CONFIGS[name][0]

    def mechanisms(self) -> list[str]:
        raw = self.get("sasl.enabled.mechanisms")
        mechs = [m.strip().upper() for m in str(raw).split(",") if m.strip()]
        for m in mechs:
            if m not in SUPPORTED_MECHANISMS:
                raise InvalidConfigError(f"Invalid value {m} in sasl.enabled.mechanisms: kproto supports "
                                         f"{', '.join(SUPPORTED_MECHANISMS)}")
        return mechs
