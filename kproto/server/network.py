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

Memory and sockets are bounded as Kafka's SocketServer bounds them
(``Limits``). A frame's buffer grows with the bytes that arrive, never with
the size its prefix declares: within the read-ahead ``readexactly`` hands it
over whole, beyond it the chunks read are joined once complete. The
broker-wide budget of request bytes read or being handled
(``queued.max.request.bytes``, the bound Kafka's MemoryPool puts on receive
buffers) is charged as those bytes arrive, so a client that declares 100 MB
and sends 1 KB holds 1 KB of it; a connection whose next chunk does not fit
stops reading until bytes are freed. When every byte held belongs to frames
still being read (no request is being handled that would free some), one
frame at a time may go past the budget and complete, so frames waiting on
each other never stall the broker; a frame larger than the whole budget goes
through that way, alone. Before a SASL connection has authenticated, a frame
larger than ``sasl.server.max.receive.size`` closes it (Kafka's
SaslServerAuthenticator, InvalidReceiveException).
``connections.max.idle.ms`` counts from the last byte read or response
written, so a connection stalled half-way through a frame is closed like an
idle one (only a request being handled, such as a long-polling Fetch, is
exempt; a frame within the read-ahead shows its progress once complete).
A failed SASL authentication is answered and closed after
``connection.failed.authentication.delay.ms`` (Kafka's Selector delays it,
``delayedClosingChannels``). ``max.connections`` makes the acceptor wait for
a free slot; ``max.connections.per.ip`` with its per-address overrides closes
a connection over the limit at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, Sequence

from kproto.errors import DecodeError, KafkaError, KprotoError
from kproto.framing import DEFAULT_MAX_FRAME, FrameError, frame_size
from kproto.schemas.primitives import Deferred

log = logging.getLogger("kproto.server")

# How much a connection reads ahead before asyncio pauses the socket: enough
# for a producer's next request to arrive while this one is appended.
READ_AHEAD = 4 << 20


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``length`` bytes of an open file from ``position``: a zero-copy response
    part. ``fd`` is pinned in the file pool (kproto.log.file_pool), so it stays
    open while retention renames or deletes the segment, until ``release``
    (called once the response is written or dropped; ``path`` only names it in
    errors)."""

    fd: int
    position: int
    length: int
    path: str = ""
    release: Callable[[], None] | None = None


class RecordsRegion(Deferred):
    """A response body's records left in the segment file: the encoder leaves
    a hole of ``length`` bytes (``Deferred``), the broker turns it into a
    ``FileRegion`` at that place in the frame."""

    __slots__ = ("fd", "position", "path", "release")

    def __init__(self, fd: int, position: int, length: int, path: str,
                 release: Callable[[], None] | None = None) -> None:
        super().__init__(length)
        self.fd, self.position, self.path, self.release = fd, position, path, release


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
    last_active: float = 0.0        # time.monotonic() of the last byte read or response written
    busy: bool = False              # a request is being handled (a long-polling fetch is not idle)
    # listener, principal, SASL state (server/security_service.py); its ``max_receive_size``,
    # when not None, caps the frames this connection may send (before SASL authentication)
    security: Any = None
    closing: bool = False           # close once this response is written
    failed_authentication: bool = False   # and answer only after connection.failed.authentication.delay.ms
    fault: Any = None               # the fault plane's decision for the last request (server/fault_hook.py)
    # ApiVersions v3+'s client_software_name and _version (Kafka's ClientInformation; KIP-714 matching)
    client_software: tuple[str | None, str | None] = (None, None)
    # mute the connection this long after the response (KIP-219): a quota's throttle
    # (server/quotas.py) or the fault plane's
    throttle_ms: int = 0


INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Limits:
    """Kafka's socket-server limits, by their config names' meaning; -1/INT_MAX: none."""

    max_request_size: int = DEFAULT_MAX_FRAME          # socket.request.max.bytes
    queued_max_request_bytes: int = -1                 # queued.max.request.bytes
    connections_max_idle_ms: int = 600_000             # connections.max.idle.ms
    max_connections: int = INT_MAX                     # max.connections
    max_connections_per_ip: int = INT_MAX              # max.connections.per.ip
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)   # max.connections.per.ip.overrides
    failed_authentication_delay_ms: int = 100           # connection.failed.authentication.delay.ms

    @classmethod
    def from_config(cls, config: Any) -> "Limits":
        return cls(config["socket.request.max.bytes"], config["queued.max.request.bytes"],
                   config["connections.max.idle.ms"], config["max.connections"],
                   config["max.connections.per.ip"],
                   parse_ip_overrides(config["max.connections.per.ip.overrides"]),
                   config["connection.failed.authentication.delay.ms"])

    def per_ip(self, host: str) -> int:
        return self.per_ip_overrides.get(host, self.max_connections_per_ip)


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``host:count,host:count`` (Kafka's max.connections.per.ip.overrides)."""
    from kproto.errors import InvalidConfigError
    out = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        host, sep, count = item.rpartition(":")
        try:
            out[host.strip("[]")] = int(count)
        except ValueError:
            sep = ""
        if not sep:
            raise InvalidConfigError(f"Invalid value {text} for configuration max.connections.per.ip.overrides: "
                                     "expected host:count pairs")
    return out


class FrameCharge:
    """The bytes of one connection's current frame held in the request budget."""

    __slots__ = ("held", "handled")

    def __init__(self) -> None:
        self.held = 0
        self.handled = False


class RequestBudget:
    """Bytes of requests read or being handled, broker-wide
    (queued.max.request.bytes): charged as they arrive. Kafka's MemoryPool
    reserves a frame's declared size before reading it, which lets clients
    that declare much and send little hold the whole pool; here a declared
    size costs nothing until its bytes are in memory.

    A chunk that does not fit waits. Frames charged as they arrive can wait on
    each other (four 40 MB frames half-read in a 45 MB budget), so when all
    the bytes held belong to frames still being read, one frame (the
    overdraft) may go past the budget and complete; at most one at a time,
    which bounds memory by the budget plus one frame."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self.handled = 0        # of ``used``, bytes of frames being handled (freed when answered)
        self.waiting = 0        # connections waiting for their next chunk's share
        self._overdraft: FrameCharge | None = None
        self._freed = asyncio.Condition()

    async def take(self, charge: FrameCharge, size: int) -> None:
        if self.capacity < 0:
            return
        if self.used + size > self.capacity and charge is not self._overdraft:
            self.waiting += 1
            try:
                async with self._freed:
                    await self._freed.wait_for(lambda: self.used + size <= self.capacity or (
                        self._overdraft is None and self.handled == 0))
            finally:
                self.waiting -= 1
            if self.used + size > self.capacity:
                self._overdraft = charge
        self.used += size
        charge.held += size

    def handling(self, charge: FrameCharge) -> None:
        """The frame is read whole and handed to its handler."""
        charge.handled = True
        self.handled += charge.held

    async def release(self, charge: FrameCharge) -> None:
        held, charge.held = charge.held, 0
        if charge.handled:
            charge.handled = False
            self.handled -= held
        if not held and self._overdraft is not charge:
            return
        self.used -= held
        if self._overdraft is charge:
            self._overdraft = None
        async with self._freed:
            self._freed.notify_all()


def response_size(parts: Sequence[ResponsePart]) -> int:
    return sum(p.length if isinstance(p, FileRegion) else len(p) for p in parts)


def release_regions(regions: Sequence[ResponsePart | RecordsRegion] | None) -> None:
    """Unpin the files of the regions among ``regions``: each exactly once,
    after its response is written or when it is dropped."""
    for r in regions or ():
        if isinstance(r, (FileRegion, RecordsRegion)) and r.release is not None:
            r.release()


def write_units(parts: Sequence[ResponsePart]) -> list[ResponsePart]:
    """A response as the writes that send it: the int32 size prefix joined with
    the bytes up to the first file region, then the other parts as they are.
    Written alone, the prefix is a TCP segment of its own (asyncio sets
    TCP_NODELAY): one more send here and one more wakeup in the client, per
    response (a Produce answer went out as 4 + 52 bytes)."""
    lead = next((i for i, p in enumerate(parts) if isinstance(p, FileRegion)), len(parts))
    return [b"".join([response_size(parts).to_bytes(4, "big"), *parts[:lead]]), *parts[lead:]]


class BrokerServer:
    """One acceptor, one task per connection."""

    def __init__(self, handler: Handler, *, limits: Limits | None = None,
                 on_connect: Callable[..., Any] | None = None, faults: Any = None,
                 connection_throttle: Callable[[str], int] | None = None) -> None:
        self.handler = handler
        # client address -> ms to hold a new connection unread before closing it (0: serve it);
        # the ip quotas' connection_creation_rate (server/quotas.py)
        self.connection_throttle = connection_throttle
        self.faults = faults            # a server.faults.FaultPlan: refused connections, throttles, bandwidth
        self.on_connect = on_connect    # (listener, peer host, ssl object) -> ConnectionInfo.security
        self.limits = limits or Limits()
        self.max_request_size = self.limits.max_request_size
        self.budget: RequestBudget | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[asyncio.Task] = set()
        self._infos: dict[asyncio.Task, tuple[ConnectionInfo, asyncio.StreamWriter]] = {}
        self._per_ip: Counter[str] = Counter()
        self._slots: asyncio.Condition | None = None
        self.waiting_for_slot = 0       # accepted connections waiting for max.connections
        self._reaper: asyncio.Task | None = None

    def open_connections(self, host: str) -> int:
        """Connections being served from ``host`` (max.connections.per.ip counts them)."""
        return self._per_ip[host]

    async def start(self, host: str, port: int, *, ssl: Any = None, listener: Any = None) -> tuple[str, int]:
        """Accept on host:port (TLS with ``ssl``); once per listener, limits shared."""
        if self.budget is None:
            self.budget = RequestBudget(self.limits.queued_max_request_bytes)
            self._slots = asyncio.Condition()
            if self.limits.connections_max_idle_ms >= 0:
                self._reaper = asyncio.create_task(self._close_idle())
        server = await asyncio.start_server(lambda r, w: self._serve(r, w, listener, ssl), host, port,
                                            reuse_address=True, limit=READ_AHEAD)
        self._servers.append(server)
        sock = server.sockets[0].getsockname()
        return sock[0], sock[1]

    async def reconfigure(self, limits: Limits) -> None:
        """New connection limits (dynamic max.connections*, SocketServer.reconfigure):
        connections waiting for a slot look again."""
        self.limits = limits
        if self._slots is not None:
            async with self._slots:
                self._slots.notify_all()

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
        for server in self._servers:
            server.close()
            await server.wait_closed()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    def cut_connections(self, listener: str | None = None) -> int:
        """Abort every open connection (of ``listener``), as a broker restart looks to clients;
        -> how many."""
        cut = 0
        for task, (info, writer) in list(self._infos.items()):
            if info.closed or (listener is not None and getattr(getattr(info.security, "listener", None),
                                                                "name", None) != listener):
                continue
            info.closed = True
            writer.transport.abort()
            task.cancel()
            cut += 1
        return cut

    async def _close_idle(self) -> None:
        """Kafka's Selector idle expiry: a connection with no request being handled
        and no byte read or written for connections.max.idle.ms is closed, also
        one that stopped half-way through a frame."""
        idle = self.limits.connections_max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(max(idle / 4, 0.05), 30))
            cutoff = time.monotonic() - idle
            for task, (info, writer) in list(self._infos.items()):
                if not info.busy and info.last_active < cutoff and not info.closed:
                    log.info("closing %s: idle for more than %d ms", info.peer,
                             self.limits.connections_max_idle_ms)
                    info.closed = True
                    writer.transport.abort()
                    task.cancel()   # also when it waits on the request budget: its bytes are freed

    async def _admit(self, host: str) -> bool:
        """A slot for a new connection: wait while the broker is at max.connections;
        False (close it) when its address is at max.connections.per.ip."""
        if self._per_ip[host] >= self.limits.per_ip(host):
            log.info("closing a connection from %s: max.connections.per.ip (%d) reached", host,
                     self.limits.per_ip(host))
            return False
        if len(self._connections) >= self.limits.max_connections:
            self.waiting_for_slot += 1
            try:
                async with self._slots:
                    await self._slots.wait_for(lambda: len(self._connections) < self.limits.max_connections)
            finally:
                self.waiting_for_slot -= 1
            if self._per_ip[host] >= self.limits.per_ip(host):
                return False
        return True

    def _frame_size(self, prefix: bytes, info: ConnectionInfo, position: int) -> int:
        """The size ``prefix`` declares, within socket.request.max.bytes and, before
        SASL authentication, sasl.server.max.receive.size (Kafka's
        SaslServerAuthenticator reads those frames with that limit)."""
        size = frame_size(prefix, self.max_request_size, position)
        limit = getattr(info.security, "max_receive_size", None)
        if limit is not None and size > limit:
            raise FrameError(f"Invalid receive (size = {size} larger than {limit}) before SASL authentication "
                             "(sasl.server.max.receive.size)", position=position, path="size")
        return size

    async def _read_frame(self, reader: asyncio.StreamReader, size: int, info: ConnectionInfo,
                          charge: FrameCharge) -> bytes:
        """A frame of ``size`` bytes, charged to the request budget as it arrives.
        Within the read-ahead, readexactly (one copy). Larger, the chunks read
        are joined once all have come (one copy, straight into the bytes the
        decoders take): memory grows with what was sent, not with what the
        prefix declared, and the stream's buffer never holds the whole frame."""
        if size <= READ_AHEAD:
            frame = await reader.readexactly(size)
            info.last_active = time.monotonic()
            await self.budget.take(charge, size)
            return frame
        chunks = []
        got = 0
        while got < size:
            chunk = await reader.read(min(size - got, READ_AHEAD))
            if not chunk:
                raise asyncio.IncompleteReadError(b"", size)
            info.last_active = time.monotonic()
            await self.budget.take(charge, len(chunk))
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, listener: Any = None,
                     tls: Any = None) -> None:
        task = asyncio.current_task()
        peer = writer.get_extra_info("peername")
        host = peer[0] if peer else "?"
        if self.faults is not None and self.faults.refusing(time.monotonic()):
            writer.transport.abort()    # the fault plane refuses new connections for a while
            return
        if not await self._admit(host):
            writer.transport.abort()
            return
        throttle = self.connection_throttle(host) if self.connection_throttle is not None else 0
        if throttle:        # Kafka's Acceptor: ConnectionThrottledException, a DelayedCloseSocket
            log.debug("closing a connection from %s in %d ms: connection_creation_rate", host, throttle)
            await asyncio.sleep(throttle / 1000)
            writer.transport.abort()
            return
        self._connections.add(task)
        self._per_ip[host] += 1
        info = ConnectionInfo(peer=f"{peer[0]}:{peer[1]}" if peer else "?", last_active=time.monotonic())
        self._infos[task] = (info, writer)
        position = 0
        charge = FrameCharge()
        try:
            if tls is not None:     # here, not in start_server, so a failed handshake is logged (once)
                await writer.start_tls(tls)
            if self.on_connect is not None:
                info.security = self.on_connect(listener, host, writer.get_extra_info("ssl_object"))
            while True:
                try:
                    prefix = await reader.readexactly(4)
                except asyncio.IncompleteReadError as e:
                    if e.partial and not info.closed:
                        log.warning("closing %s: connection closed inside a frame size", info.peer)
                    return
                info.last_active = time.monotonic()
                size = self._frame_size(prefix, info, position)
                frame = await self._read_frame(reader, size, info, charge)
                position += 4 + size
                self.budget.handling(charge)
                info.busy = True
                parts = await self.handler(frame, info)
                del frame
                try:
                    await self.budget.release(charge)
                    if info.failed_authentication:   # Kafka: Selector.maybeDelayCloseOnAuthenticationFailure
                        await asyncio.sleep(self.limits.failed_authentication_delay_ms / 1000)
                    if parts is not None:
                        await self._write(writer, parts)
                finally:
                    release_regions(parts)
                if info.throttle_ms or info.fault is not None:     # a muted channel, a bandwidth cap
                    await _muted(info, parts)
                if info.closing:
                    return
                info.busy = False
                info.last_active = time.monotonic()
        except FrameError as e:
            log.warning("closing %s: %s", info.peer, e)
        except (CloseConnection, DecodeError, KafkaError) as e:
            log.warning("closing %s: %s", info.peer, e)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except ssl.SSLError as e:
            log.warning("closing %s: TLS handshake failed: %s", info.peer, e.reason or e)
        except asyncio.CancelledError:
            pass
        except Exception:   # a handler bug must not take the broker down
            log.exception("closing %s after an internal error", info.peer)
        finally:
            info.closed = True
            await self.budget.release(charge)
            self._connections.discard(task)
            self._infos.pop(task, None)
            self._per_ip[host] -= 1
            if not self._per_ip[host]:
                del self._per_ip[host]
            async with self._slots:
                self._slots.notify_all()
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, ssl.SSLError, asyncio.CancelledError):   # the handshake error again
                pass

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, parts: Sequence[ResponsePart]) -> None:
        loop = asyncio.get_running_loop()
        for part in write_units(parts):
            if isinstance(part, FileRegion):
                if part.length == 0:
                    continue
                await writer.drain()
                if writer.get_extra_info("ssl_object") is not None:
                    sent = await _copy_region(writer, part)
                else:
                    with open(part.fd, "rb", closefd=False) as f:
                        sent = await loop.sendfile(writer.transport, f, part.position, part.length)
                if sent != part.length:   # the file shrank under us (retention): never send a short frame
                    raise ConnectionError(f"sent {sent} of {part.length} bytes of {os.path.basename(part.path)}")
            else:
                writer.write(part)
        await writer.drain()


async def _muted(info: ConnectionInfo, parts: Sequence[ResponsePart] | None) -> None:
    """After a response: mute the connection for ``info.throttle_ms`` (Kafka mutes a throttled
    channel until the throttle time has passed, KIP-219), and hold it as long as the fault
    plane's bandwidth cap (bytes/s) takes to carry the response."""
    wait = info.throttle_ms / 1000
    bandwidth = getattr(info.fault, "bandwidth", None)
    if bandwidth and parts:
        wait = max(wait, response_size(parts) / bandwidth)
    if wait > 0:
        await asyncio.sleep(wait)


TLS_CHUNK = 256 << 10


async def _copy_region(writer: asyncio.StreamWriter, part: FileRegion) -> int:
    """TLS encrypts in user space, so records are copied, not sent with sendfile
    (Python's ssl module offers no kTLS offload). ``os.pread`` reads at the
    region's own offset: the segment's fd is shared, and asyncio's sendfile
    fallback would seek it under other readers and the appender."""
    sent = 0
    while sent < part.length:
        chunk = os.pread(part.fd, min(TLS_CHUNK, part.length - sent), part.position + sent)
        if not chunk:   # the file shrank under us (retention): never send a short frame
            raise ConnectionError(f"sent {sent} of {part.length} bytes of {os.path.basename(part.path)}")
        writer.write(chunk)
        sent += len(chunk)
        await writer.drain()
    return sent
