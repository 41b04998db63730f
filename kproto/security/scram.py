"""SCRAM (RFC 5802, SHA-256/512 per RFC 7677): credentials and the server's
state machine, as Kafka's ScramSaslServer runs it.

Theory of operation. The broker keeps only the *salted* credential per user
and mechanism (salt, StoredKey = H(ClientKey), ServerKey, iterations); the
password never reaches it after AlterUserScramCredentials. An exchange is
two client messages:

    client-first  n,[a=authzid],n=user,r=cnonce[,ext]   -> server-first  r=cnonce+snonce,s=salt,i=iter
    client-final  c=b64(gs2-header),r=nonce,p=proof     -> server-final  v=b64(ServerSignature)

The server recovers ClientKey = proof XOR HMAC(StoredKey, AuthMessage) and
accepts when H(ClientKey) equals StoredKey, compared in constant time
(``hmac.compare_digest``, Kafka's MessageDigest.isEqual). An unknown user
fails at the client-first message with the same client-visible error as a
wrong password (Kafka never tells the client which).

Channel binding is not offered (gs2 flag ``n``; ``y``/``p`` are refused), as
in Kafka. Kafka's ``tokenauth=true`` extension authenticates with a delegation token
(kproto.security.tokens): the token id as user name, its owner as the principal.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import os
import re
import secrets
import string
from dataclasses import dataclass
from typing import Callable

from kproto.security.errors import CredentialError, IllegalSaslStateError, SaslAuthenticationError


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    """Kafka's ScramMechanism: name, hash, type byte (AlterUserScramCredentials), min iterations."""

    name: str
    hash_name: str
    type: int
    min_iterations: int = 4096
    max_iterations: int = 16384

    def h(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: bytes, salt: bytes, iterations: int) -> bytes:
        """Hi() of RFC 5802 2.2 = PBKDF2 with HMAC-H, one block of the hash's size."""
        return hashlib.pbkdf2_hmac(self.hash_name, password, salt, iterations)


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
BY_TYPE = {m.type: m for m in MECHANISMS.values()}


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker stores (Kafka's ScramCredential): never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mech: ScramMechanism, salted: bytes, salt: bytes,
                             iterations: int) -> "ScramCredential":
        client_key = mech.hmac(salted, b"Client Key")
        return cls(salt, mech.h(client_key), mech.hmac(salted, b"Server Key"), iterations)

    @classmethod
    def from_password(cls, mech: ScramMechanism, password: str, *, iterations: int = 4096,
                      salt: bytes | None = None) -> "ScramCredential":
        salt = os.urandom(32) if salt is None else salt
        salted = mech.salted_password(normalize(password), salt, iterations)
        return cls.from_salted_password(mech, salted, salt, iterations)

    def to_text(self) -> str:
        """Kafka's ScramCredentialUtils.credentialToString form."""
        b64 = lambda b: base64.b64encode(b).decode()   # noqa: E731
        return (f"salt={b64(self.salt)},stored_key={b64(self.stored_key)},"
                f"server_key={b64(self.server_key)},iterations={self.iterations}")

    @classmethod
    def from_text(cls, text: str) -> "ScramCredential":
        fields = dict(item.split("=", 1) for item in text.split(","))
        try:
            return cls(base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                       base64.b64decode(fields["server_key"]), int(fields["iterations"]))
        except (KeyError, ValueError) as e:
            raise ValueError(f"invalid SCRAM credential: {e}") from None


def normalize(password: str) -> bytes:
    """The password as UTF-8. RFC 5802 asks for SASLprep; Kafka's ScramFormatter
    uses the UTF-8 bytes as given, and clients must agree with the broker."""
    return password.encode("utf-8")


_SASLNAME = re.compile(r"=(?!2C|3D)")


def decode_saslname(name: str) -> str:
    """RFC 5802 saslname: ``=2C`` is ``,`` and ``=3D`` is ``=``; any other ``=`` is invalid."""
    if _SASLNAME.search(name):
        raise SaslAuthenticationError(f"Invalid username: {name!r}")
    return name.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: str, names: str) -> dict[str, str]:
    """``a=v,b=v`` with the leading attribute names expected in order (extensions after)."""
    out: dict[str, str] = {}
    parts = message.split(",")
    for i, part in enumerate(parts):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise SaslAuthenticationError(f"Invalid SCRAM message: {message!r}")
        if i < len(names) and key != names[i]:
            raise SaslAuthenticationError(f"Invalid SCRAM message: expected {names[i]}=, got {key}=")
        out.setdefault(key, value)
    if len(parts) < len(names):
        raise SaslAuthenticationError(f"Invalid SCRAM message: {message!r}")
    return out


def _extensions(bare: str) -> dict[str, str]:
    """ScramMessages.ClientFirstMessage: the extensions are ``key=value`` pairs after
    ``n=...,r=...`` (keys longer than a letter, unlike SCRAM's own attributes)."""
    out = {}
    for part in bare.split(",")[2:]:
        key, sep, value = part.partition("=")
        if sep:
            out[key] = value
    return out


def _server_nonce() -> str:
    """Letters and digits only, like Kafka's ScramFormatter.secureRandomString: librdkafka
    2.0 (Debian's kcat) mis-handles a server nonce with ``+`` or ``/``."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(32))


class State(enum.Enum):
    RECEIVE_CLIENT_FIRST = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


CredentialLookup = Callable[[str, ScramMechanism], "ScramCredential | None"]
# token id, mechanism -> (the token owner's name, the token's credential), or None
TokenLookup = Callable[[str, ScramMechanism], "tuple[str, ScramCredential] | None"]


class ScramServer:
    """One SCRAM exchange on the server side: ``evaluate(client bytes) -> server bytes``.

    ``lookup(user, mechanism)`` gives the stored credential or None.
    ``nonce`` makes the server nonce reproducible in tests (RFC vectors).
    """

    def __init__(self, mechanism: ScramMechanism, lookup: CredentialLookup, *,
                 nonce: Callable[[], str] | None = None, token_lookup: TokenLookup | None = None) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        self.token_authenticated = False
        self._nonce = nonce or _server_nonce
        self.state = State.RECEIVE_CLIENT_FIRST
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce_full = ""

    @property
    def complete(self) -> bool:
        return self.state is State.COMPLETE

    def evaluate(self, response: bytes) -> bytes:
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError:
            self.state = State.FAILED
            raise SaslAuthenticationError("Invalid SCRAM message: not UTF-8") from None
        try:
            if self.state is State.RECEIVE_CLIENT_FIRST:
                out = self._client_first(text)
                self.state = State.RECEIVE_CLIENT_FINAL
                return out
            if self.state is State.RECEIVE_CLIENT_FINAL:
                out = self._client_final(text)
                self.state = State.COMPLETE
                return out
        except SaslAuthenticationError:
            self.state = State.FAILED
            raise
        raise IllegalSaslStateError(f"Unexpected challenge in Sasl server state {self.state.value}")

    def _client_first(self, text: str) -> bytes:
        flag, sep1, rest = text.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not (sep1 and sep2):
            raise SaslAuthenticationError(f"Invalid SCRAM client first message: {text!r}")
        if flag != "n":
            raise SaslAuthenticationError("Invalid SCRAM client first message: channel binding is not supported")
        if authzid and not authzid.startswith("a="):
            raise SaslAuthenticationError(f"Invalid SCRAM client first message: {text!r}")
        attrs = _attributes(",".join(bare.split(",")[:2]), "nr")
        # ScramSaslServer: extensions other than tokenauth are ignored
        extensions = _extensions(bare)
        user = decode_saslname(attrs["n"])
        if extensions.get("tokenauth", "").lower() == "true":     # ScramExtensions.tokenAuthenticated
            found = self._token_lookup(user, self.mechanism) if self._token_lookup else None
            if found is None:
                raise CredentialError(f"Token Authentication failed: Invalid tokenId : {user}")
            owner, credential = found
            self.token_authenticated = True
        else:
            owner, credential = user, self._lookup(user, self.mechanism)
            if credential is None:
                raise CredentialError(f"unknown user {user!r} for {self.mechanism.name}")
        if authzid and decode_saslname(authzid[2:]) != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        if credential.iterations < self.mechanism.min_iterations:
            raise CredentialError(f"Iterations {credential.iterations} is less than the minimum "
                                  f"{self.mechanism.min_iterations} for {self.mechanism.name}")
        self.username, self._credential = owner, credential
        self._gs2_header = f"{flag},{authzid},"
        self._client_first_bare = bare
        self._nonce_full = attrs["r"] + self._nonce()
        self._server_first = (f"r={self._nonce_full},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        attrs = _attributes(text, "cr")
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise CredentialError("client final message without proof")
        # Kafka's ScramSaslServer checks endsWith, not equality: librdkafka <= 2.0 (Debian's
        # kcat) sends its client nonce twice. The proof still signs the r= it sent.
        if not attrs["r"].endswith(self._nonce_full):
            raise CredentialError("Invalid client nonce in the final client message.")
        try:
            binding = base64.b64decode(attrs["c"], validate=True)
            proof = base64.b64decode(proof_b64, validate=True)
        except ValueError:
            raise CredentialError("Authentication failed: Invalid client final message") from None
        if binding != self._gs2_header.encode():
            raise CredentialError("channel binding does not match the client first message")
        cred = self._credential
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = self.mechanism.hmac(cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise CredentialError("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(self.mechanism.h(client_key), cred.stored_key):
            raise CredentialError("Invalid client credentials")
        server_signature = self.mechanism.hmac(cred.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)
