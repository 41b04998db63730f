"""One request at a time to another node (Kafka's NodeToControllerChannelManager and
the replica fetcher's BlockingSend, as asyncio): connect on first use, reconnect
after a failure, fixed request versions (both ends are kproto, so no ApiVersions
round trip)."""

from __future__ import annotations

import asyncio
from typing import Any

from kproto.client.connection import ClientConnection
from kproto.errors import DecodeError
from kproto.framing import NEED_DATA

__all__ = ["Channel"]


class Channel:
    """Requests to ``host:port``, answered in order; any socket or framing failure
    closes the connection and raises ``ConnectionError`` (the caller backs off and retries)."""

    def __init__(self, host: str, port: int, client_id: str, *, timeout: float = 30.0) -> None:
        self.address = (host, port)
        self.client_id = client_id
        self.timeout = timeout
        self._lock = asyncio.Lock()
        self._conn: ClientConnection | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(self, api_key: int, version: int, body: Any) -> Any:
        async with self._lock:
            try:
                return await asyncio.wait_for(self._roundtrip(api_key, version, body), self.timeout)
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, DecodeError) as e:
                self.close()
                raise ConnectionError(f"{self.address[0]}:{self.address[1]}: {e or type(e).__name__}") from None

    async def _roundtrip(self, api_key: int, version: int, body: Any) -> Any:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(*self.address)
            self._conn = ClientConnection(self.client_id)
        _, data = self._conn.send_request(api_key, body, version)
        self._writer.write(data)
        await self._writer.drain()
        while True:
            response = self._conn.next_response()
            if response is not NEED_DATA:
                return response.body
            chunk = await self._reader.read(1 << 16)
            if not chunk:
                raise ConnectionError("connection closed by the peer")
            self._conn.receive_data(chunk)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = self._conn = None
