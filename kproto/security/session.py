"""A connection's SASL state, as Kafka's SaslServerAuthenticator keeps it (sans-I/O).

Theory of operation. On a SASL listener a connection starts unauthenticated
and may only send ApiVersions and SaslHandshake; after a successful
handshake, SaslAuthenticate rounds (or, after a v0 handshake, raw
length-prefixed tokens, the pre-KIP-152 form) until the mechanism completes.
Any other request before that is Kafka's IllegalSaslStateException: the
connection is closed. A failed authentication is answered with
SASL_AUTHENTICATION_FAILED and then the connection is closed.

Re-authentication (KIP-368): with ``connections.max.reauth.ms`` > 0 the
SaslAuthenticate v1+ answer carries ``session_lifetime_ms``; the client must
re-run handshake + authenticate on the same connection before it expires
(as the same principal); a request after expiry closes the connection.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from typing import Callable

from kproto.errors import ErrorCode
from kproto.security.errors import CredentialError, IllegalSaslStateError, SaslAuthenticationError
from kproto.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from kproto.schemas import protocol

API_VERSIONS = protocol.api_versions.API.key
SASL_HANDSHAKE = protocol.sasl_handshake.API.key
SASL_AUTHENTICATE = protocol.sasl_authenticate.API.key


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    RAW_TOKEN = "AUTHENTICATE (v0 handshake: raw tokens)"
    COMPLETE = "COMPLETE"
    REAUTH_AUTHENTICATE = "REAUTH_AUTHENTICATE"
    FAILED = "FAILED"


# Requests a connection may send in each state (others close it).
ALLOWED = {
    SaslState.HANDSHAKE_OR_VERSIONS: {API_VERSIONS, SASL_HANDSHAKE},
    SaslState.AUTHENTICATE: {SASL_AUTHENTICATE},
    SaslState.REAUTH_AUTHENTICATE: {SASL_AUTHENTICATE},
    SaslState.RAW_TOKEN: set(),
    SaslState.FAILED: set(),
}


@dataclass(frozen=True, slots=True)
class AuthenticateResult:
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int
    close: bool                     # answer, then close the connection (Kafka: failed authentication)
    log_line: str | None = None     # one line for the broker log (never a credential)


class SaslSession:
    """One connection's authentication on a SASL listener."""

    def __init__(self, mechanisms: list[str], make_server: Callable[[str], object], *,
                 reauth_ms: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self.mechanisms = mechanisms
        self._make_server = make_server
        self.reauth_ms = reauth_ms
        self._clock = clock
        self.state = SaslState.HANDSHAKE_OR_VERSIONS
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal = ANONYMOUS
        self._server = None
        self._expires: float | None = None
        self._authenticated_once = False

    @property
    def authenticated(self) -> bool:
        return self._authenticated_once

    def check(self, api_key: int) -> None:
        """May this request be handled now? Raises IllegalSaslStateError (close) if not."""
        if self.state in (SaslState.COMPLETE,):
            if self._expires is not None and self._clock() >= self._expires and api_key not in (
                    SASL_HANDSHAKE, SASL_AUTHENTICATE):
                raise IllegalSaslStateError("session expired (connections.max.reauth.ms) without re-authentication")
            return
        if api_key not in ALLOWED[self.state]:
            name = protocol.API_KEYS[api_key].name.upper() if api_key in protocol.API_KEYS else str(api_key)
            raise IllegalSaslStateError(f"Unexpected Kafka request of type {name} during SASL "
                                        f"{'handshake' if self.state is SaslState.HANDSHAKE_OR_VERSIONS else 'authentication'}.")

    def handshake(self, mechanism: str, version: int) -> int:
        """-> error code (0 or UNSUPPORTED_SASL_MECHANISM); the response lists ``self.mechanisms``."""
        reauth = self.state is SaslState.COMPLETE
        if mechanism not in self.mechanisms:
            self.state = SaslState.FAILED
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        if reauth and mechanism != self.mechanism:
            self.state = SaslState.FAILED    # KIP-368: re-authentication must use the same mechanism
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        self._server = self._make_server(mechanism)
        if version == 0:
            self.state = SaslState.RAW_TOKEN
        else:
            self.state = SaslState.REAUTH_AUTHENTICATE if reauth else SaslState.AUTHENTICATE
        return ErrorCode.NONE

    @property
    def expects_raw_token(self) -> bool:
        return self.state is SaslState.RAW_TOKEN

    def authenticate(self, token: bytes) -> AuthenticateResult:
        reauth = self.state is SaslState.REAUTH_AUTHENTICATE
        try:
            out = self._server.evaluate(token)
        except CredentialError as e:
            self.state = SaslState.FAILED
            return AuthenticateResult(ErrorCode.SASL_AUTHENTICATION_FAILED,
                                      e.client_message(self.mechanism, reauth), b"", 0, True,
                                      f"authentication failed ({self.mechanism}): {e}")
        except (SaslAuthenticationError, IllegalSaslStateError) as e:
            self.state = SaslState.FAILED
            return AuthenticateResult(ErrorCode.SASL_AUTHENTICATION_FAILED, str(e), b"", 0, True,
                                      f"authentication failed ({self.mechanism}): {e}")
        if not self._server.complete:
            return AuthenticateResult(ErrorCode.NONE, None, out, 0, False)
        principal = KafkaPrincipal(USER_TYPE, self._server.username,
                                   token_authenticated=getattr(self._server, "token_authenticated", False))
        if reauth and principal != self.principal:
            self.state = SaslState.FAILED
            msg = "Cannot change principals during re-authentication"
            return AuthenticateResult(ErrorCode.SASL_AUTHENTICATION_FAILED, msg, b"", 0, True,
                                      f"re-authentication failed: {principal} is not {self.principal}")
        self.principal = principal
        self.state = SaslState.COMPLETE
        self._authenticated_once = True
        self._expires = self._clock() + self.reauth_ms / 1000 if self.reauth_ms > 0 else None
        return AuthenticateResult(ErrorCode.NONE, None, out, self.reauth_ms if self.reauth_ms > 0 else 0, False)
