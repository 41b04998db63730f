"""Capture bytes in, exchanges out: the whole pipeline, sans-I/O.

    bytes -> [gunzip] -> PacketReader -> tcp_segment -> HalfStream (per direction)
          -> role (Kafka by port or header shape / TLS / other) -> KafkaConnection -> Exchange

``Decoder.feed()`` takes bytes of a pcap, pcapng or gzip-compressed capture
in any chunking; ``next_event()`` returns the next ``Exchange`` or
``NEED_DATA``; ``close()`` ends the input (connections still open give up
their pending requests). Memory is bounded by open connections, not by the
capture: closed connections are dropped, non-Kafka ones are never buffered.

``Capture`` and ``exchanges()`` drive it from a path, ``-`` (stdin) or a
binary file object.
"""

from __future__ import annotations

import collections
import sys
import zlib
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from kproto.capture.body import ROWS
from kproto.capture.kafka import Connection, Exchange, KafkaConnection, looks_like_request, looks_like_tls
from kproto.capture.packet import ACK, FIN, RST, SYN, Segment, format_address, tcp_segment
from kproto.capture.pcap import CaptureError, PacketReader
from kproto.capture.tcp import HalfStream
from kproto.framing import NEED_DATA
from kproto.accel import crecords as _accelerator

# pcap records and the usual TCP segment read in C (csrc/packet.c), when built
_pcap_segments = getattr(_accelerator, "pcap_segments", None)
_SEGMENTS = None if _pcap_segments is None else lambda *args: _pcap_segments(*args, Segment)

__all__ = ["Decoder", "Capture", "exchanges", "DEFAULT_PORTS"]

DEFAULT_PORTS = (9092,)
CHUNK = 1 << 20


class _Tcp:
    """One TCP connection as seen: both halves, and what it turned out to be."""

    __slots__ = ("key", "halves", "client_dir", "role", "kafka", "fins")

    def __init__(self, key: tuple) -> None:
        self.key = key                     # (src, sport, dst, dport) of the first packet seen
        self.halves = (HalfStream(), HalfStream())
        self.client_dir: int | None = None
        self.role: str | None = None       # None (undecided), "kafka", "tls", "other"
        self.kafka: KafkaConnection | None = None
        self.fins = 0


class Decoder:
    """The sans-I/O pipeline (see the module docstring)."""

    def __init__(self, ports: Iterable[int] = DEFAULT_PORTS, *, discover_ports: bool = True,
                 by_shape: bool = True, binary: str = "bytes") -> None:
        if binary not in ROWS:
            raise ValueError(f"binary must be one of {sorted(ROWS)}, not {binary!r}")
        self.ports: set[int] = set(ports)
        self.binary = binary
        self.discover_ports = discover_ports
        self.by_shape = by_shape
        self.topic_names: dict = {}
        self.notes: list[str] = []         # capture-level one-liners (truncation...)
        self.packets = self.tcp_packets = self.bytes_in = 0
        self.connections = self.kafka_connections = self.tls_connections = 0
        self._reader = PacketReader()
        self._gunzip = None
        self._head = b""                   # first bytes, until gzip is told apart
        self._tcp: dict[tuple, _Tcp] = {}
        self._out: collections.deque[Exchange] = collections.deque()
        self._last_ts = 0
        self._closed = False

    # --- input ------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        self.bytes_in += len(data)
        if self._head is not None:
            self._head += data
            if len(self._head) < 2:
                return
            data, self._head = self._head, None
            if data[:2] == b"\x1f\x8b":
                self._gunzip = zlib.decompressobj(wbits=31)
        if self._gunzip is not None:
            data = self._gunzip_feed(data)
        self._reader.feed(data)
        self._pump()

    def _gunzip_feed(self, data: bytes) -> bytes:
        out = [self._gunzip.decompress(data)]
        while self._gunzip.eof and self._gunzip.unused_data:   # concatenated gzip members
            rest = self._gunzip.unused_data
            self._gunzip = zlib.decompressobj(wbits=31)
            out.append(self._gunzip.decompress(rest))
        return b"".join(out)

    def close(self) -> None:
        """End of input: flush every connection; notes say what was cut."""
        if self._closed:
            return
        self._closed = True
        if self._head:
            self._reader.feed(self._head)
            self._head = None
        if self._gunzip is not None and not self._gunzip.eof:
            self.notes.append("gzip stream ends early: the capture is truncated")
        self._pump()
        note = self._reader.close()
        if note:
            self.notes.append(note)
        for tcp in list(self._tcp.values()):
            self._finish(tcp)
        self._tcp.clear()

    def next_event(self) -> Exchange | type(NEED_DATA):
        return self._out.popleft() if self._out else NEED_DATA

    def events(self) -> list[Exchange]:
        out = list(self._out)
        self._out.clear()
        return out

    # --- packets ----------------------------------------------------------------

    def _pump(self) -> None:
        reader, out = self._reader, self._out
        while True:
            batch = reader.pcap_records(_SEGMENTS)       # pcap: all buffered records at once
            if batch:
                link = reader.linktype
            else:
                packet = reader.next_packet()
                if packet is NEED_DATA:
                    return
                batch, link = [(packet.ts_ns, packet.data)], packet.linktype
            self._packets(batch, link, out)

    def _packets(self, batch: list, link: int, out) -> None:
        for ts, data in batch:
            self.packets += 1
            if ts is not None:
                self._last_ts = ts
            seg = data if type(data) is Segment else tcp_segment(link, data)
            if seg is None:
                continue
            self.tcp_packets += 1
            key = (seg.src, seg.sport, seg.dst, seg.dport)
            tcp = self._tcp.get(key)
            direction = 0
            if tcp is not None and seg.flags & SYN and not seg.flags & ACK and tcp.role is not None:
                self._finish(tcp)                  # the 4-tuple reused by a new connection
                del self._tcp[key]
                tcp = None
            if tcp is None:
                tcp = self._tcp.get((seg.dst, seg.dport, seg.src, seg.sport))
                direction = 1
                if tcp is None:
                    tcp = self._tcp[key] = _Tcp(key)
                    direction = 0
                    self.connections += 1
            self._segment(tcp, direction, seg, self._last_ts, out)

    def _segment(self, tcp: _Tcp, direction: int, seg, ts: int, out) -> None:
        flags = seg.flags
        if flags & SYN and not flags & ACK and tcp.client_dir is None:
            tcp.client_dir = direction
        if tcp.role in ("tls", "other"):
            if flags & (FIN | RST):
                self._tcp.pop(tcp.key, None)
            return
        half = tcp.halves[direction]
        items = half.segment(seg.seq, bool(flags & SYN), seg.payload, seg.missing)
        if flags & ACK:
            other = tcp.halves[1 - direction]
            if other.pending:
                self._deliver(tcp, 1 - direction, other.acked(seg.ack), ts, out)
        if items:
            self._deliver(tcp, direction, items, ts, out)
        if flags & FIN:
            # by direction: a retransmitted FIN is not the peer's, and a server may
            # still answer a client that half-closed (its response comes after the FIN)
            tcp.fins |= 1 << direction
        if flags & RST or tcp.fins == 3:
            self._finish(tcp)
            self._tcp.pop(tcp.key, None)

    def _deliver(self, tcp: _Tcp, direction: int, items: list, ts: int, out) -> None:
        if not items:
            return
        if tcp.role is None and not self._decide(tcp, direction, items, ts, out):
            return
        if direction == tcp.client_dir:
            tcp.kafka.client_data(items, ts, out)
        else:
            tcp.kafka.server_data(items, ts, out)

    def _decide(self, tcp: _Tcp, direction: int, items: list, ts: int, out) -> bool:
        """First bytes of a connection: Kafka, TLS or something else."""
        first = next((i for i in items if isinstance(i, (bytes, bytearray))), b"")
        src, sport, dst, dport = tcp.key
        if tcp.client_dir is None:
            if dport in self.ports:
                tcp.client_dir = 0
            elif sport in self.ports:
                tcp.client_dir = 1
        if looks_like_tls(first):
            tcp.role = "tls"
            self.tls_connections += 1
            if tcp.client_dir is not None or dport in self.ports or sport in self.ports:
                out.append(Exchange(self._connection(tcp, direction), ts, None, None, "TLS", None,
                                    None, None, None, None,
                                    ("TLS connection: encrypted, not decoded",)))
            return False
        by_port = tcp.client_dir is not None and (dport in self.ports or sport in self.ports)
        if not by_port:
            shape = looks_like_request(first) if self.by_shape else False
            if shape and (tcp.client_dir is None or tcp.client_dir == direction):
                tcp.client_dir = direction
            else:
                tcp.role = "other"
                tcp.halves = (HalfStream(), HalfStream())   # nothing buffered for it
                return False
        tcp.role = "kafka"
        self.kafka_connections += 1
        c, s = tcp.halves[tcp.client_dir], tcp.halves[1 - tcp.client_dir]
        tcp.kafka = KafkaConnection(self._connection(tcp, direction), self, c.synced, s.synced)
        return True

    def _connection(self, tcp: _Tcp, direction: int) -> Connection:
        src, sport, dst, dport = tcp.key
        a, b = format_address(src, sport), format_address(dst, dport)
        client_dir = tcp.client_dir if tcp.client_dir is not None else direction
        return Connection(a, b) if client_dir == 0 else Connection(b, a)

    def _finish(self, tcp: _Tcp) -> None:
        if tcp.role not in (None, "kafka"):
            return
        for d in (0, 1):
            items = tcp.halves[d].flush()
            if items:
                self._deliver(tcp, d, items, self._last_ts, self._out)
        if tcp.kafka is not None:
            tcp.kafka.close(self._last_ts, self._out)
            tcp.kafka = None


class Capture:
    """A capture source decoded lazily: iterate for exchanges; afterwards
    ``decoder`` holds counters and ``decoder.notes`` the capture-level notes.

    ``source``: a path (plain or gzip-compressed pcap/pcapng), ``"-"`` for
    stdin, or a binary file object. ``progress(bytes_read)`` is called per chunk.
    """

    def __init__(self, source: str | Path | BinaryIO, ports: Iterable[int] = DEFAULT_PORTS, *,
                 discover_ports: bool = True, by_shape: bool = True, binary: str = "bytes",
                 progress: Callable[[int], None] | None = None) -> None:
        self.source = source
        self.decoder = Decoder(ports, discover_ports=discover_ports, by_shape=by_shape, binary=binary)
        self.progress = progress

    @property
    def name(self) -> str:
        if isinstance(self.source, (str, Path)):
            return "<stdin>" if str(self.source) == "-" else str(self.source)
        return getattr(self.source, "name", "<stream>")

    def __iter__(self) -> Iterator[Exchange]:
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[Exchange]]:
        """The exchanges as lists, one per chunk read: what the chunk completed
        (a writer can emit each list at once; on a live stream each arrives as
        soon as its bytes do)."""
        dec = self.decoder
        with _open(self.source) as stream:
            read = getattr(stream, "read1", stream.read)
            try:
                while chunk := read(CHUNK):
                    dec.feed(chunk)
                    if self.progress:
                        self.progress(len(chunk))
                    if dec._out:
                        yield dec.events()
                dec.close()
            except CaptureError as e:
                yield dec.events()                 # what came before the bad bytes
                raise e.at(file=self.name) from None
            except zlib.error as e:
                yield dec.events()
                raise CaptureError(f"gzip data is corrupt ({e})", file=self.name,
                                   position=dec.bytes_in) from None
        if dec._out:
            yield dec.events()


class _open:
    def __init__(self, source) -> None:
        self.source, self.owned = source, None

    def __enter__(self) -> BinaryIO:
        if isinstance(self.source, (str, Path)):
            if str(self.source) == "-":
                return sys.stdin.buffer
            self.owned = open(self.source, "rb")
            return self.owned
        return self.source

    def __exit__(self, *exc) -> None:
        if self.owned is not None:
            self.owned.close()


def exchanges(source: str | Path | BinaryIO, ports: Iterable[int] = DEFAULT_PORTS, *,
              discover_ports: bool = True, by_shape: bool = True, binary: str = "bytes") -> Iterator[Exchange]:
    """Every Kafka exchange in a capture, in the order the capture completes them.

    ``ports``: Kafka ports (requests go *to* them); with ``discover_ports``,
    ports brokers announce in Metadata and FindCoordinator answers are added
    as the capture shows them; with ``by_shape``, connections on other ports
    are Kafka when their first bytes are a plausible request. ``binary``:
    ``"bytes"`` (record keys, values and header values as ``bytes``) or
    ``"json"`` (each RECORDS field's batches as pre-rendered JSON text, for
    ``kproto.capture.jsonout.dumps``: what ``kproto decode --json`` uses).
    Raises ``CaptureError`` (a ``kproto.errors.DecodeError``) only for bytes
    that are not a capture at all; everything else is a warning on an exchange.
    """
    return iter(Capture(source, ports, discover_ports=discover_ports, by_shape=by_shape, binary=binary))
