"""What a size prefix may cost a real broker process (issue 22, "Memory and
connection limits"): forty connections each declaring a 100 MB frame and
sending 1 KB leave its RSS under 150 MB and a new client answered, with and
without queued.max.request.bytes; on a SASL listener a frame over
sasl.server.max.receive.size before authentication closes the connection; a
failed authentication is answered no earlier than
connection.failed.authentication.delay.ms. RSS measured with psutil."""

from __future__ import annotations

import contextlib
import socket
import struct
import time

import psutil
import pytest

from kproto.errors import ErrorCode, InvalidConfigError
from kproto.framing import frame
from kproto import protocol as P
from kproto.server.config import BrokerConfig
from tests.helpers import until

DECLARED = 104857600        # socket.request.max.bytes: the largest frame the broker accepts
PASSWORD = "alice-Secr3t!"
SASL = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            f'user_alice="{PASSWORD}";'}


def _read(s: socket.socket) -> bytes:
    head = s.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        raise ConnectionError("closed by the broker")
    size = struct.unpack(">i", head)[0]
    return s.recv(size, socket.MSG_WAITALL) if size else b""


def _call(s: socket.socket, key: int, version: int, body: dict, padding: int = 0):
    """One request (``padding`` trailing bytes, which the broker ignores) -> its decoded response."""
    s.sendall(frame(P.encode_request(key, version, 7, "memory-test", body) + b"\0" * padding))
    return P.decode_response(key, version, _read(s))[1]


def api_versions(port: int, *, padding: int = 0, timeout: float = 60) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        return _call(s, P.api_versions.API.key, 0, {}, padding).error_code


def hold_declared_frames(port: int, stack: contextlib.ExitStack, n: int = 40) -> list[socket.socket]:
    """``n`` connections that each declare a frame of DECLARED bytes, send 1 KB of it and hold."""
    socks = []
    for _ in range(n):
        s = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=60))
        s.sendall(DECLARED.to_bytes(4, "big") + b"\0" * 1024)
        socks.append(s)
    return socks


def rss_mib(broker) -> float:
    return psutil.Process(broker.pid).memory_info().rss / 2**20


@pytest.mark.parametrize("config", [{}, {"queued.max.request.bytes": 209715200}],
                         ids=["defaults", "queued.max.request.bytes=200MB"])
def test_declared_frames_cost_what_was_sent(kafka_broker_factory, config):
    b = kafka_broker_factory(config)
    with contextlib.ExitStack() as stack:
        hold_declared_frames(b.port, stack)
        t0 = time.monotonic()
        assert api_versions(b.port) == 0
        # generous: a broker that had reserved the declared sizes does not answer at all
        assert time.monotonic() - t0 < 5
        assert rss_mib(b) < 150
        assert api_versions(b.port) == 0 and rss_mib(b) < 150


def test_sasl_listener_closes_an_oversized_frame_before_authentication(kafka_broker_factory):
    b = kafka_broker_factory(SASL)
    with contextlib.ExitStack() as stack:
        held = hold_declared_frames(b.port, stack)
        for s in held:      # each closed by the broker (Kafka: InvalidReceiveException)
            assert s.recv(1) == b""
        assert rss_mib(b) < 150
        assert api_versions(b.port) == 0
    text = b.log_text()
    assert "Invalid receive (size = 104857600 larger than 524288) before SASL authentication" in text
    # the limit is sasl.server.max.receive.size (Kafka's default 524288), before authentication only
    with pytest.raises(ConnectionError):
        api_versions(b.port, padding=524288)
    assert api_versions(b.port, padding=524288 - 64) == 0
    with socket.create_connection(("127.0.0.1", b.port), timeout=60) as s:
        assert _call(s, P.sasl_handshake.API.key, 1, {"mechanism": "PLAIN"}).error_code == 0
        r = _call(s, P.sasl_authenticate.API.key, 0, {"auth_bytes": f"\0alice\0{PASSWORD}".encode()})
        assert r.error_code == 0
        assert _call(s, P.api_versions.API.key, 0, {}, padding=1 << 20).error_code == 0


def test_failed_authentication_is_answered_after_the_delay(kafka_broker_factory):
    b = kafka_broker_factory({**SASL, "connection.failed.authentication.delay.ms": "700"})
    with socket.create_connection(("127.0.0.1", b.port), timeout=60) as s:
        assert _call(s, P.sasl_handshake.API.key, 1, {"mechanism": "PLAIN"}).error_code == 0
        t0 = time.monotonic()
        r = _call(s, P.sasl_authenticate.API.key, 0, {"auth_bytes": b"\0alice\0wrong"})
        waited = time.monotonic() - t0
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert waited >= 0.7        # no earlier than connection.failed.authentication.delay.ms
        assert s.recv(1) == b""     # then closed
    until(lambda: "authentication failed (PLAIN)" in b.log_text(), what="the failure logged")
    # a request not allowed before authentication is a failed authentication too: closed after the delay
    with socket.create_connection(("127.0.0.1", b.port), timeout=60) as s:
        t0 = time.monotonic()
        s.sendall(frame(P.encode_request(P.metadata.API.key, 1, 2, "raw", {"topics": None})))
        assert s.recv(1) == b""
        assert time.monotonic() - t0 >= 0.7


def test_the_new_configs_have_kafkas_defaults_and_bounds():
    config = BrokerConfig.from_props()
    assert config["connection.failed.authentication.delay.ms"] == 100
    assert config["sasl.server.max.receive.size"] == 524288
    with pytest.raises(InvalidConfigError, match="Invalid value -1 for configuration "
                                                 "connection.failed.authentication.delay.ms: Value must be at least 0"):
        BrokerConfig.from_props({"connection.failed.authentication.delay.ms": "-1"})
