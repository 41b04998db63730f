"""Socket-server limits with small values over real loopback sockets:
queued.max.request.bytes, frames past the read-ahead, connections.max.idle.ms,
max.connections, max.connections.per.ip and its overrides."""

import asyncio
import hashlib
import socket
import time

import pytest

from kproto.errors import InvalidConfigError
from kproto.framing import frame
from kproto.server.network import READ_AHEAD, BrokerServer, Limits, parse_ip_overrides
from tests.components import kproto_broker


async def _ask(port: int, payload: bytes, *, timeout: float = 5) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(frame(payload))
        await writer.drain()
        size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), timeout), "big")
        return await reader.readexactly(size)
    finally:
        writer.close()


def _run(limits: Limits, handler, scenario):
    async def main():
        server = BrokerServer(handler, limits=limits)
        _, port = await server.start("127.0.0.1", 0)
        try:
            await scenario(server, port)
        finally:
            await server.close()
    asyncio.run(main())


def test_queued_max_request_bytes_makes_large_frames_wait():
    held, peak = [0], [0]

    async def handler(data, info):
        held[0] += len(data)
        peak[0] = max(peak[0], held[0])
        await asyncio.sleep(0.1)
        held[0] -= len(data)
        return [hashlib.sha1(data).digest()]

    async def scenario(server, port):
        frames = [bytes([i]) * 8000 for i in range(4)]
        t0 = time.monotonic()
        answers = await asyncio.gather(*(_ask(port, f) for f in frames))
        assert answers == [hashlib.sha1(f).digest() for f in frames]
        assert peak[0] == 8000                      # one 8000-byte frame fits in 10000 at a time
        assert server.budget.used == 0
        # A frame larger than the whole budget still goes through, alone.
        big = b"x" * 30000
        assert await _ask(port, big) == hashlib.sha1(big).digest()

    _run(Limits(max_request_size=1 << 20, queued_max_request_bytes=10000), handler, scenario)


def test_frames_beyond_the_read_ahead_arrive_whole():
    async def handler(data, info):
        return [len(data).to_bytes(4, "big") + hashlib.sha1(data).digest()]

    async def scenario(server, port):
        payload = bytes(range(256)) * ((READ_AHEAD + 3_000_001) // 256)
        assert await _ask(port, payload) == len(payload).to_bytes(4, "big") + hashlib.sha1(payload).digest()

    _run(Limits(max_request_size=64 << 20), handler, scenario)


def test_idle_connections_are_closed_busy_ones_are_not():
    async def handler(data, info):
        await asyncio.sleep(0.6 if data == b"slow" else 0)
        return [b"ok:" + data]

    async def scenario(server, port):
        idle_r, idle_w = await asyncio.open_connection("127.0.0.1", port)
        # a request taking longer than the idle limit is answered, not cut
        assert await _ask(port, b"slow") == b"ok:slow"
        assert await asyncio.wait_for(idle_r.read(), 2) == b""      # closed by the broker
        idle_w.close()
        assert await _ask(port, b"fresh") == b"ok:fresh"

    _run(Limits(connections_max_idle_ms=200), handler, scenario)


def test_max_connections_per_ip_and_overrides():
    async def handler(data, info):
        return [b"ok"]

    async def scenario(server, port):
        conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        r3, w3 = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(r3.read(), 2) == b""           # over the limit: closed at once
        for r, w in conns:
            w.write(frame(b"x"))
            assert await asyncio.wait_for(r.readexactly(6), 2) == b"\x00\x00\x00\x02ok"
        conns[0][1].close()
        await asyncio.sleep(0.1)
        assert await _ask(port, b"y") == b"ok"                      # a slot freed
        conns[1][1].close()

    _run(Limits(max_connections_per_ip=2), handler, scenario)

    async def three_allowed(server, port):
        conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        for r, w in conns:
            w.write(frame(b"x"))
            assert await asyncio.wait_for(r.readexactly(6), 2) == b"\x00\x00\x00\x02ok"
            w.close()

    _run(Limits(max_connections_per_ip=1, per_ip_overrides=parse_ip_overrides("127.0.0.1:3,other:1")),
         handler, three_allowed)


def test_max_connections_makes_new_connections_wait():
    async def handler(data, info):
        return [b"ok"]

    async def scenario(server, port):
        r1, w1 = await asyncio.open_connection("127.0.0.1", port)
        w1.write(frame(b"x"))
        assert await r1.readexactly(6) == b"\x00\x00\x00\x02ok"
        waiting = asyncio.create_task(_ask(port, b"y", timeout=5))
        await asyncio.sleep(0.3)
        assert not waiting.done()            # accepted by the kernel, not served
        w1.close()
        assert await asyncio.wait_for(waiting, 5) == b"ok"

    _run(Limits(max_connections=1), handler, scenario)


def test_ip_overrides_parse_as_kafka_writes_them():
    assert parse_ip_overrides("127.0.0.1:5, hostA:200,[::1]:7") == {"127.0.0.1": 5, "hostA": 200, "::1": 7}
    assert parse_ip_overrides("") == {}
    with pytest.raises(InvalidConfigError, match="max.connections.per.ip.overrides"):
        parse_ip_overrides("127.0.0.1")


def test_the_broker_applies_connections_max_idle_ms(tmp_path):
    with kproto_broker(tmp_path, "connections.max.idle.ms=300") as bootstrap:
        host, port = bootstrap.split(":")
        with socket.create_connection((host, int(port)), timeout=5) as s:
            t0 = time.monotonic()
            assert s.recv(1) == b""
            assert 0.25 < time.monotonic() - t0 < 3
