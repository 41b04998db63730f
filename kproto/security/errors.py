"""Authentication failures, as Kafka's SaslServerAuthenticator tells them apart.

``SaslAuthenticationError`` carries a message the client may see (PLAIN's,
Kafka's SaslAuthenticationException). ``CredentialError`` is Kafka's bare
SaslException: its detail (does the user exist?) stays in the broker, the
client only gets the generic "Authentication failed during authentication
due to invalid credentials with SASL mechanism X".
"""

from __future__ import annotations

from kproto.errors import ErrorCode, KafkaError


class SaslAuthenticationError(KafkaError):
    error_code = ErrorCode.SASL_AUTHENTICATION_FAILED


class CredentialError(SaslAuthenticationError):
    """The detail is for the broker's log only, never the client."""

    def client_message(self, mechanism: str, reauth: bool = False) -> str:
        what = "re-authentication" if reauth else "authentication"
        return f"Authentication failed during {what} due to invalid credentials with SASL mechanism {mechanism}"


class IllegalSaslStateError(KafkaError):
    error_code = ErrorCode.ILLEGAL_SASL_STATE
