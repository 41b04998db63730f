"""The broker's network layer: accept, frame, hand each request to the
dispatcher, write responses in order.

Kafka's rule (SocketServer "mute/unmute"): a connection has at most one
request in processing; the next is read only after the previous response is
queued. Here that is simply one ``await`` per frame in the connection's task,
which also makes a long-polling Fetch hold back later requests on *its*
connection only, as in Kafka.

A response is a list of parts: ``bytes``, or a ``FileRegion`` (records sent
from a segment file with ``loop.sendfile``, never copied through Python
objects). A malformed frame closes that connection and is logged once;
every other connection carries on.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Sequence

from kproto.errors import DecodeError, KprotoError
from kproto.framing import DEFAULT_MAX_FRAME, FrameError, frame_size
from kproto.schemas.primitives import Deferred

log = logging.getLogger("kproto.server")

# How much a connection reads ahead before asyncio pauses the socket: enough
# for a producer's next request to arrive while this one is appended.
READ_AHEAD = 4 << 20


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``length`` bytes of an open file from ``position``: a zero-copy response
    part. ``fd`` stays valid while retention renames or deletes the segment
    (``path`` only names it in errors)."""

    fd: int
    position: int
    length: int
    path: str = ""


class RecordsRegion(Deferred):
    """A response body's records left in the segment file: the encoder leaves
    a hole of ``length`` bytes (``Deferred``), the broker turns it into a
    ``FileRegion`` at that place in the frame."""

    __slots__ = ("fd", "position", "path")

    def __init__(self, fd: int, position: int, length: int, path: str) -> None:
        super().__init__(length)
        self.fd, self.position, self.path = fd, position, path


def now_ms() -> int:
    """Wall-clock milliseconds, the server's one clock for deadlines and timestamps."""
    return time.time_ns() // 1_000_000


ResponsePart = bytes | bytearray | memoryview | FileRegion
# frame (without its size prefix) -> response parts (without the size prefix), or None for no response.
Handler = Callable[[bytes, "ConnectionInfo"], Awaitable[Sequence[ResponsePart] | None]]


class CloseConnection(KprotoError):
    """Raised by a handler to drop the connection (Kafka does this for an
    unparseable header or an unknown API key)."""


@dataclass(slots=True)
class ConnectionInfo:
    peer: str
    client_id: str | None = None
    closed: bool = False


def response_size(parts: Sequence[ResponsePart]) -> int:
    return sum(p.length if isinstance(p, FileRegion) else len(p) for p in parts)


class BrokerServer:
    """One acceptor, one task per connection."""

    def __init__(self, handler: Handler, *, max_request_size: int = DEFAULT_MAX_FRAME) -> None:
        self.handler = handler
        self.max_request_size = max_request_size
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, host, port, reuse_address=True,
                                                  limit=READ_AHEAD)
        sock = self._server.sockets[0].getsockname()
        return sock[0], sock[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        info = ConnectionInfo(peer=f"{peer[0]}:{peer[1]}" if peer else "?")
        position = 0
        try:
            while True:
                # readexactly hands over each frame with one copy (no reassembly buffer of our own).
                try:
                    prefix = await reader.readexactly(4)
                except asyncio.IncompleteReadError as e:
                    if e.partial:
                        log.warning("closing %s: connection closed inside a frame size", info.peer)
                    return
                size = frame_size(prefix, self.max_request_size, position)
                frame = await reader.readexactly(size)
                position += 4 + size
                parts = await self.handler(frame, info)
                if parts is not None:
                    await self._write(writer, parts)
        except FrameError as e:
            log.warning("closing %s: %s", info.peer, e)
        except (CloseConnection, DecodeError) as e:
            log.warning("closing %s: %s", info.peer, e)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:   # a handler bug must not take the broker down
            log.exception("closing %s after an internal error", info.peer)
        finally:
            info.closed = True
            self._connections.discard(task)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, parts: Sequence[ResponsePart]) -> None:
        writer.write(response_size(parts).to_bytes(4, "big"))
        loop = asyncio.get_running_loop()
        for part in parts:
            if isinstance(part, FileRegion):
                if part.length == 0:
                    continue
                await writer.drain()
                with open(part.fd, "rb", closefd=False) as f:
                    sent = await loop.sendfile(writer.transport, f, part.position, part.length)
                if sent != part.length:   # the file shrank under us (retention): never send a short frame
                    raise ConnectionError(f"sent {sent} of {part.length} bytes of {os.path.basename(part.path)}")
            else:
                writer.write(part)
        await writer.drain()
