"""A small blocking transport for ``ClientConnection``: one socket, one
request at a time (what the CLI tools need), ApiVersions on connect.

``BrokerClient("host:port[,host:port...]")`` connects to the first bootstrap
address that answers. ``connect_to(host, port)`` opens a sibling connection
with the same settings (a group coordinator on another node).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from kproto.client.connection import ClientConnection
from kproto.errors import KprotoError, UsageError
from kproto.framing import NEED_DATA
from kproto.properties import parse_properties

DEFAULT_TIMEOUT_S = 30.0


class BrokerConnectionError(KprotoError):
    """The broker cannot be reached or the connection broke."""


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]`` (``[v6]:port`` too) -> addresses."""
    out = []
    for item in filter(None, (s.strip() for s in bootstrap.split(","))):
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise UsageError(f"invalid bootstrap server {item!r} (expected HOST:PORT)")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise UsageError("no bootstrap server given")
    return out


def load_client_properties(path: str | Path) -> dict[str, str]:
    """A Java properties file (``k=v``, ``k: v`` or ``k v``; ``#``/``!``
    comments), as ``--command-config`` takes it; ``security.protocol`` and the
    SASL/TLS settings are checked here (kproto/security/client.py)."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    props = parse_properties(text, str(path), strict=False)
    from kproto.security.client import sasl_credentials, security_protocol
    if security_protocol(props).startswith("SASL_"):
        sasl_credentials(props)
    return props


class BrokerClient:
    """A connected, version-negotiated client. Use as a context manager."""

    def __init__(self, bootstrap: str, *, config: dict[str, str] | None = None,
                 timeout_s: float | None = None, client_id: str | None = None) -> None:
        self.config = dict(config or {})
        if timeout_s is None:
            timeout_s = int(self.config.get("request.timeout.ms", DEFAULT_TIMEOUT_S * 1000)) / 1000
        self.timeout_s = timeout_s
        self.client_id = client_id or self.config.get("client.id", "kproto")
        self.bootstrap = bootstrap
        self._sock: socket.socket | None = None
        self.address: tuple[str, int] | None = None
        self.conn = ClientConnection(self.client_id)
        self._connect(parse_bootstrap(bootstrap))
        self._negotiate()
        self._authenticate()

    def _connect(self, addresses: list[tuple[str, int]]) -> None:
        errors = []
        for host, port in addresses:
            try:
                self._sock = socket.create_connection((host, port), timeout=self.timeout_s)
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self.config.get("security.protocol", "PLAINTEXT").upper() in ("SSL", "SASL_SSL"):
                    from kproto.security.client import client_ssl_context
                    self._sock = client_ssl_context(self.config).wrap_socket(self._sock, server_hostname=host)
                self.address = (host, port)
                return
            except OSError as e:     # ssl.SSLError too: an untrusted certificate, one line
                errors.append(f"cannot connect to {host}:{port}: {getattr(e, 'reason', None) or e.strerror or e}")
        raise BrokerConnectionError("; ".join(errors))

    def _negotiate(self) -> None:
        _, data = self.conn.api_versions_request()
        body = self._roundtrip(data)
        retry = ClientConnection.retry_version(body)
        if retry is not None:
            _, data = self.conn.api_versions_request(retry)
            body = self._roundtrip(data)
        self.conn.negotiate(body)

    def _authenticate(self) -> None:
        """SaslHandshake v1 + SaslAuthenticate rounds (PLAIN or SCRAM) on SASL_* protocols."""
        if not self.config.get("security.protocol", "PLAINTEXT").upper().startswith("SASL_"):
            return
        from kproto.schemas import protocol as P
        from kproto.security.client import ScramClient, sasl_credentials
        from kproto.security.scram import MECHANISMS
        mech, user, password = sasl_credentials(self.config)
        answer = self.request(P.sasl_handshake.API.key, {"mechanism": mech})
        if answer.error_code:
            raise BrokerConnectionError(f"the broker does not enable SASL mechanism {mech} "
                                        f"(it offers {', '.join(answer.mechanisms) or 'none'})")

        def step(token: bytes) -> bytes:
            r = self.request(P.sasl_authenticate.API.key, {"auth_bytes": token})
            if r.error_code:
                raise BrokerConnectionError(r.error_message or "SASL authentication failed")
            return bytes(r.auth_bytes)

        if mech == "PLAIN":
            step(f"\0{user}\0{password}".encode())
            return
        scram = ScramClient(MECHANISMS[mech], user, password)
        scram.verify(step(scram.final(step(scram.first()))))

    def _roundtrip(self, data: bytes) -> Any:
        assert self._sock is not None
        where = f"{self.address[0]}:{self.address[1]}"
        try:
            self._sock.sendall(data)
            while True:
                response = self.conn.next_response()
                if response is not NEED_DATA:
                    return response.body
                chunk = self._sock.recv(1 << 20)
                if not chunk:
                    raise BrokerConnectionError(f"connection to {where} closed by the broker")
                self.conn.receive_data(chunk)
        except socket.timeout:
            raise BrokerConnectionError(f"no answer from {where} in {self.timeout_s:g}s") from None
        except OSError as e:
            raise BrokerConnectionError(f"connection to {where} failed: {e.strerror or e}") from None

    # -- public -----------------------------------------------------------------

    def request(self, api_key: int, body: Any, version: int | None = None) -> Any:
        """Send one request and return the decoded response body."""
        _, data = self.conn.send_request(api_key, body, version)
        return self._roundtrip(data)

    def send_only(self, api_key: int, body: Any, version: int | None = None) -> None:
        """A request the broker does not answer (Produce with acks=0)."""
        _, data = self.conn.send_request(api_key, body, version, expect_response=False)
        try:
            self._sock.sendall(data)
        except OSError as e:
            raise BrokerConnectionError(f"connection to {self.address[0]}:{self.address[1]} failed: "
                                        f"{e.strerror or e}") from None

    def supports(self, api_key: int) -> bool:
        return self.conn.supports(api_key)

    def version(self, api_key: int) -> int:
        return self.conn.version_for(api_key)

    def connect_to(self, host: str, port: int) -> "BrokerClient":
        """This client if it is connected to ``host:port``, else a new one."""
        if self.address == (host, port):
            return self
        return BrokerClient(f"{host}:{port}", config=self.config, timeout_s=self.timeout_s,
                            client_id=self.client_id)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> "BrokerClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["BrokerClient", "BrokerConnectionError", "load_client_properties", "parse_bootstrap"]
