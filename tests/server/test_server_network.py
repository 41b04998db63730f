"""Network layer: in-order responses, zero-copy file parts, a bad frame closes only its connection."""

import asyncio
import os

from kproto.framing import frame
from kproto.server.network import BrokerServer, CloseConnection, FileRegion, Limits, write_units


async def _roundtrip(port, payloads, expect):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for p in payloads:
        writer.write(p)
    await writer.drain()
    out = []
    for _ in range(expect):
        size = int.from_bytes(await reader.readexactly(4), "big")
        out.append(await reader.readexactly(size))
    writer.close()
    return out


def test_in_order_file_regions_and_isolation(tmp_path):
    seg = tmp_path / "seg.log"
    seg.write_bytes(b"0123456789" * 10)
    fd = os.open(seg, os.O_RDONLY)

    async def handler(data, info):
        if data == b"slow":
            await asyncio.sleep(0.2)          # a long poll holds back only its own connection
            return [b"slow-done"]
        if data == b"file":
            return [b"head:", FileRegion(fd, 5, 20, str(seg)), b":tail"]
        if data == b"bad":
            raise CloseConnection("unknown api key")
        if data == b"noreply":
            return None
        return [b"echo:" + data]

    async def main():
        server = BrokerServer(handler, limits=Limits(max_request_size=1024))
        _, port = await server.start("127.0.0.1", 0)
        try:
            slow = asyncio.create_task(_roundtrip(port, [frame(b"slow"), frame(b"a")], 2))
            fast = await _roundtrip(port, [frame(b"noreply"), frame(b"file"), frame(b"b")], 2)
            assert fast == [b"head:56789012345678901234:tail", b"echo:b"]
            assert await slow == [b"slow-done", b"echo:a"]      # strictly in order
            # A bad frame or an oversized one closes that connection only.
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(frame(b"bad"))
            assert await r.read() == b""
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write((5000).to_bytes(4, "big"))
            assert await r.read() == b""
            assert await _roundtrip(port, [frame(b"still")], 1) == [b"echo:still"]
        finally:
            await server.close()

    asyncio.run(main())


def test_the_size_prefix_leaves_with_the_bytes_before_the_first_file_region():
    region = FileRegion(3, 5, 20, "seg.log")
    assert write_units([b"ok"]) == [b"\x00\x00\x00\x02ok"]
    assert write_units([b"head:", b"x", region, b":tail"]) == [b"\x00\x00\x00\x1fhead:x", region, b":tail"]
    assert write_units([region, b"!"]) == [b"\x00\x00\x00\x15", region, b"!"]
