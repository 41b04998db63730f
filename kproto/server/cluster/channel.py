"""One request at a time to another node (Kafka's NodeToControllerChannelManager and
the replica fetcher's BlockingSend, as asyncio): connect on first use, reconnect
after a failure, fixed request versions (both ends are kproto, so no ApiVersions
round trip)."""

from __future__ import annotations

import asyncio
from typing import Any

from kproto.client.connection import ClientConnection
from kproto.errors import DecodeError, ErrorCode
from kproto.framing import NEED_DATA

__all__ = ["Channel", "QuorumRoute", "not_controller"]


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


def not_controller(response: Any) -> bool:
    """Whether a controller's answer is NOT_CONTROLLER (at the top, or for every entry)."""
    codes: list[int] = []

    def walk(value: Any) -> None:
        if hasattr(value, "items"):
            for k, v in value.items():
                if k == "error_code":
                    codes.append(v)
                elif not k.startswith("_"):
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(response)
    return bool(codes) and all(c == ErrorCode.NOT_CONTROLLER for c in codes)


class QuorumRoute:
    """Requests to whichever voter leads the quorum, as a broker learns it from its
    metadata fetches (the current leader named in Fetch answers; Kafka's observers and
    NodeToControllerChannelManager): an unknown or unreachable leader means asking the
    voters in turn until one names the leader. One Channel per (voter, purpose), so the
    long-polled metadata fetch never holds up a heartbeat."""

    def __init__(self, voters: dict[int, tuple[str, int]], client_id: str, *, timeout_s: float = 30.0) -> None:
        self.voters = dict(voters)
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.leader: int | None = None
        self.epoch = -1
        self._turn = 0
        self._channels: dict[tuple[int, str], Channel] = {}
        self._changed = asyncio.Event()

    def learn(self, leader_id: int, epoch: int) -> None:
        """A voter's answer named ``leader_id`` (-1: none known) for ``epoch``."""
        if epoch > self.epoch or (epoch == self.epoch and leader_id >= 0 and self.leader != leader_id):
            self.epoch = epoch
            self.leader = leader_id if leader_id >= 0 else None
            self._changed.set()
            self._changed = asyncio.Event()

    def forget(self, voter: int) -> None:
        """``voter`` did not answer as the leader: ask the others until one names it."""
        if self.leader == voter:
            self.leader = None
        self._turn += 1

    def target(self) -> int:
        if self.leader is not None:
            return self.leader
        ids = sorted(self.voters)
        return ids[self._turn % len(ids)]

    def channel(self, voter: int, purpose: str = "controller") -> Channel:
        key = (voter, purpose)
        if key not in self._channels:
            self._channels[key] = Channel(*self.voters[voter], f"{self.client_id}-{purpose}")
        return self._channels[key]

    async def wait_for_change(self, timeout_s: float) -> None:
        try:
            await asyncio.wait_for(self._changed.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass

    async def request(self, api_key: int, version: int, body: Any, *, purpose: str = "controller") -> Any:
        """Ask the active controller, following the leader through a failover (until
        ``timeout_s``; then ``ConnectionError``). Requests of one ``purpose`` share a
        connection (heartbeats have their own: a decision waiting for its commit must
        not hold them up)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        while True:
            voter = self.target()
            try:
                response = await self.channel(voter, purpose).request(api_key, version, body)
                if not not_controller(response):
                    return response
            except ConnectionError:
                if loop.time() > deadline:
                    raise
            self.forget(voter)
            if loop.time() > deadline:
                raise ConnectionError(f"no active controller among voters {sorted(self.voters)}")
            await self.wait_for_change(0.2)

    def close(self) -> None:
        for c in self._channels.values():
            c.close()
