"""Principals: ``User:<name>`` (Kafka's KafkaPrincipal) and the TLS mapping
from a certificate's subject (``ssl.principal.mapping.rules``, Kafka's
SslPrincipalMapper).

The distinguished name is written as Java's X500Principal.getName() does
(RFC 2253: most specific RDN first, ``,`` between RDNs, ``+`` inside one,
special characters escaped), so a rule written for Kafka matches the same
string here. The default rule ``DEFAULT`` keeps the whole DN:
``CN=alice,OU=eng`` -> ``User:CN=alice,OU=eng``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from kproto.errors import InvalidConfigError

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str
    # authenticated with a delegation token (SCRAM tokenauth); not part of equality, as in Kafka
    token_authenticated: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> "KafkaPrincipal":
        """``Type:name`` (Kafka's SecurityUtils.parseKafkaPrincipal)."""
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise InvalidConfigError(f"Invalid principal {text!r}: expected Type:name, e.g. User:alice")
        return cls(kind, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
WILDCARD_PRINCIPAL = "User:*"

# Short names Java's X500Principal writes for RFC 2253 (others as dotted OIDs; Python names them longer).
_RFC2253_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L",
                     "stateOrProvinceName": "ST", "organizationName": "O",
                     "organizationalUnitName": "OU", "streetAddress": "STREET",
                     "domainComponent": "DC", "userId": "UID"}
_OIDS = {"emailAddress": "1.2.840.113549.1.9.1", "serialNumber": "2.5.4.5", "surname": "2.5.4.4",
         "givenName": "2.5.4.42", "title": "2.5.4.12"}


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def distinguished_name(subject: Sequence[Sequence[tuple[str, str]]]) -> str:
    """``ssl.SSLSocket.getpeercert()['subject']`` (RDNs in certificate order)
    -> the RFC 2253 string, most specific first, as Kafka sees it."""
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_RFC2253_KEYWORDS.get(k) or _OIDS.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)


_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern | None      # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if not self.pattern.fullmatch(dn):
            return None
        out = self.pattern.sub(self.replacement, dn)
        return out.lower() if self.case == "L" else out.upper() if self.case == "U" else out


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules``: ``DEFAULT`` and ``RULE:pattern/replacement/[LU]``,
    first rule that matches wins; none matching is an error (Kafka: NoMatchingRule)."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        text, pos = rules.strip(), 0
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise InvalidConfigError(f"Invalid rule in ssl.principal.mapping.rules at character {pos}: "
                                         f"{text[pos:]!r}")
            if m.group(1):
                self.rules.append(_Rule(None))
            else:
                # Java's $1 back references -> Python's \g<1>
                replacement = re.sub(r"\$(\d+)", r"\\g<\1>", m.group(3).replace("\\/", "/"))
                try:
                    pattern = re.compile(m.group(2).replace("\\/", "/"))
                except re.error as e:
                    raise InvalidConfigError(f"Invalid rule pattern in ssl.principal.mapping.rules: {e}") from None
                self.rules.append(_Rule(pattern, replacement, m.group(4)))
            pos = m.end()
        if not self.rules:
            self.rules.append(_Rule(None))

    def name(self, dn: str) -> str:
        for rule in self.rules:
            out = rule.apply(dn)
            if out is not None:
                return out
        raise InvalidConfigError(f"No rules apply to {dn}")

    def principal(self, dn: str) -> KafkaPrincipal:
        return KafkaPrincipal(USER_TYPE, self.name(dn))
