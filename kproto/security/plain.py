"""SASL/PLAIN (RFC 4616) on the server, as Kafka's PlainSaslServer: one
message ``authzid NUL authcid NUL passwd``, checked against the JAAS users
(``user_<name>="<password>"``) in constant time.

PLAIN sends the password itself: use it on SASL_SSL only (Kafka's advice).
"""

from __future__ import annotations

import hmac
from typing import Mapping

from kproto.security.errors import IllegalSaslStateError, SaslAuthenticationError


class PlainServer:
    mechanism_name = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.username: str | None = None
        self.complete = False

    def evaluate(self, response: bytes) -> bytes:
        if self.complete:
            raise IllegalSaslStateError("Authentication exchange has already completed")
        tokens = response.decode("utf-8", "replace").split("\0")
        if len(tokens) != 3:
            raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authzid, user, password = tokens
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(user)
        # Compare even for an unknown user so timing does not tell whether it exists.
        ok = hmac.compare_digest((expected or "\0" + password).encode(), password.encode())
        if expected is None or not ok:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        self.username = user
        self.complete = True
        return b""
