"""SaslHandshake and SaslAuthenticate: the connection's SASL exchange
(state in kproto/security/session.py, wiring in server/security_service.py).

Versions: SaslHandshake v0-1 (v0: the tokens that follow are raw
length-prefixed frames, not SaslAuthenticate requests; v1 means
SaslAuthenticate follows), SaslAuthenticate v0-2 (v1 adds
session_lifetime_ms for KIP-368 re-authentication, v2 is flexible): all
Kafka has. On a listener without SASL both answer ILLEGAL_SASL_STATE, as
Kafka's KafkaApis does.
"""

from __future__ import annotations

import logging

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.session import SaslState
from kproto.server.access import self_checked
from kproto.server.handlers import handles

log = logging.getLogger("kproto.server.security")


@handles(P.sasl_handshake, authorize=self_checked)
async def sasl_handshake(broker, ctx, body) -> dict:
    conn = ctx.connection.security      # the connection's SASL state (server/security_service.py)
    session = conn.session if conn is not None else None
    if session is None:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
    error = session.handshake(body.mechanism, ctx.request_api_version)
    if error:
        log.warning("closing %s: unsupported SASL mechanism %r (enabled: %s)", conn.host, body.mechanism,
                    ",".join(session.mechanisms))
        conn.extra["close"] = True
    return {"error_code": error, "mechanisms": list(session.mechanisms)}


def _authenticate(conn, token: bytes):
    again = conn.session.authenticated
    result = conn.session.authenticate(token)
    if result.close:
        log.warning("closing %s on %s: %s", conn.host, conn.listener.name, result.log_line)
        conn.extra["close"] = True
    elif result.error_code == 0 and conn.session.state is SaslState.COMPLETE:
        log.info("%s %sauthenticated %s with %s on %s", conn.host, "re-" if again else "", conn.principal,
                 conn.session.mechanism, conn.listener.name)
    return result


@handles(P.sasl_authenticate, authorize=self_checked)
async def sasl_authenticate(broker, ctx, body) -> dict:
    conn = ctx.connection.security
    if conn is None or conn.session is None:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "error_message": "SASL is not enabled on this listener",
                "auth_bytes": b"", "session_lifetime_ms": 0}
    r = _authenticate(conn, bytes(body.auth_bytes))
    return {"error_code": r.error_code, "error_message": r.error_message, "auth_bytes": r.auth_bytes,
            "session_lifetime_ms": r.session_lifetime_ms}


def raw_token(conn, frame: bytes) -> list[bytes] | None:
    """After a v0 handshake: the frame is the token itself; the answer is the
    server's token, size-prefixed by the network layer. A failure closes the
    connection without an answer (Kafka's v0 behaviour)."""
    r = _authenticate(conn, bytes(frame))
    if r.close:
        return None
    return [r.auth_bytes]
