"""Kafka on a reassembled TCP connection: frames, pairing, exchanges.

Each direction is a ``FrameStream`` over ``kproto.framing.FrameReader``. A
stream that starts mid-connection, or that lost bytes (a ``Gap``), is
*hunting*: it drops bytes until an offset it can prove is a frame boundary:

* requests: a size prefix within bounds, then an API key the registry knows,
  a version no more than ``VERSION_SLACK`` past kproto's newest, a
  non-negative correlation id and a printable client id that fits the frame;
* responses: a size prefix within bounds followed by the correlation id of a
  request this connection is still waiting for.

Pairing: a request is remembered by correlation id from its header
*before* its body is decoded, so a body kproto cannot read never orphans the
response (the response still needs the request's API key and version: the
header version and body schema are not on the wire). Produce with acks=0
gets no response and is an exchange on its own.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable, NamedTuple

from kproto.capture import body as B
from kproto.capture.tcp import Gap
from kproto.errors import DecodeError, KafkaError
from kproto.framing import DEFAULT_MAX_FRAME, NEED_DATA, FrameError, FrameReader
from kproto import protocol
from kproto.protocol import (
    API_KEYS, decode_request, decode_request_body, decode_request_header, decode_response,
)

__all__ = ["Connection", "Exchange", "KafkaConnection", "iso_time", "looks_like_request", "looks_like_tls"]

VERSION_SLACK = 8
# The largest frame a hunt waits to see whole before judging a candidate boundary.
MAX_HUNT = 16 << 20


class Connection(NamedTuple):
    """A TCP connection, client side first; ``str()`` is ``client > server``."""

    client: str
    server: str

    def __str__(self) -> str:
        return f"{self.client} > {self.server}"


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and its response as captured.

    ``request``/``response`` are the decoded bodies (``kproto.capture.body``:
    only the fields of that version, records decoded, bytes as ``bytes``), or
    None when that side was not captured or could not be decoded (then a
    warning says why). An exchange with ``api_key`` None carries
    connection-level news only: TLS, bytes no request explains.
    """

    connection: Connection
    ts_ns: int                       # request seen complete (or response, if no request)
    response_ts_ns: int | None
    api_key: int | None
    api_name: str | None
    api_version: int | None
    correlation_id: int | None
    client_id: str | None
    request: dict | None
    response: dict | None
    warnings: tuple[str, ...] = ()
    request_size: int = 0            # frame sizes, size prefix included
    response_size: int = 0
    topic_names: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def ts(self) -> float:
        return self.ts_ns / 1e9

    @property
    def latency_ms(self) -> float | None:
        if self.response_ts_ns is None or self.request is None and self.request_size == 0:
            return None
        return (self.response_ts_ns - self.ts_ns) / 1e6

    def topics(self) -> dict[str, set[int]]:
        """topic -> partitions named by the request and the response."""
        out = B.topics_of(self.request, self.topic_names)
        for name, parts in B.topics_of(self.response, self.topic_names).items():
            out.setdefault(name, set()).update(parts)
        return out

    def error_codes(self) -> list[int]:
        """Non-zero error codes in the response."""
        return B.error_codes_of(self.response) if self.response is not None else []

    def to_json(self) -> dict[str, Any]:
        """The ``kproto decode --json`` object (bytes still ``bytes``: dump it
        with ``default=kproto.capture.body.json_default``)."""
        latency = self.latency_ms
        return {"ts": iso_time(self.ts_ns), "connection": str(self.connection), "api_key": self.api_key,
                "api_name": self.api_name, "api_version": self.api_version,
                "correlation_id": self.correlation_id, "client_id": self.client_id,
                "latency_ms": None if latency is None else round(latency, 3),
                "request": self.request, "response": self.response, "warnings": list(self.warnings)}


# A frozen dataclass's __init__ pays object.__setattr__ per field; filling the
# slots directly (as kproto.records does for Record) is ~2x faster, same object.
_EXCHANGE_SLOTS = tuple(getattr(Exchange, f.name).__set__ for f in fields(Exchange))


def _new_exchange(*values) -> Exchange:
    """``Exchange(*values)``, every field given."""
    ex = object.__new__(Exchange)
    for put, value in zip(_EXCHANGE_SLOTS, values):
        put(ex, value)
    return ex


_SECOND: list = [(None, "")]     # (second, its text) last formatted: exchanges come many to a second


def iso_time(ts_ns: int) -> str:
    """``2026-11-24T08:48:52.549761Z``: UTC, microseconds."""
    sec, ns = divmod(ts_ns, 1_000_000_000)
    last = _SECOND[0]                # one read: a pair another thread replaces whole
    if last[0] != sec:
        last = _SECOND[0] = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return f"{last[1]}.{ns // 1000:06d}Z"


# --- telling Kafka from the rest --------------------------------------------------

def looks_like_request(buf, pos: int = 0) -> bool | None:
    """Is there a plausible request frame at ``pos``? None: too few bytes to say."""
    if len(buf) - pos < 14:
        return None
    size = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
    if not 10 <= size <= DEFAULT_MAX_FRAME:
        return False
    key = int.from_bytes(buf[pos + 4:pos + 6], "big", signed=True)
    spec = API_KEYS.get(key)
    version = int.from_bytes(buf[pos + 6:pos + 8], "big", signed=True)
    if spec is None or not 0 <= version <= spec.max_version + VERSION_SLACK:
        return False
    if int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True) < 0:
        return False
    n = int.from_bytes(buf[pos + 12:pos + 14], "big", signed=True)
    if n < -1 or n > size - 10:
        return False
    cid = bytes(buf[pos + 14:pos + 14 + max(n, 0)])
    return all(32 <= c < 127 for c in cid)


def provable_request(buf, pos: int) -> bool | None:
    """A frame boundary at ``pos`` beyond reasonable doubt: a plausible header
    whose whole frame decodes, or is followed by another plausible header."""
    head = looks_like_request(buf, pos)
    if not head:
        return head
    end = pos + 4 + int.from_bytes(buf[pos:pos + 4], "big")
    if end > len(buf):
        # wait to see the frame whole, unless that would hold more than MAX_HUNT:
        # then the header alone has to do
        return None if end - pos <= MAX_HUNT else True
    try:
        decode_request(bytes(buf[pos + 4:end]), allow_trailing=True)
        return True
    except (DecodeError, KafkaError):
        return bool(looks_like_request(buf, end))


def looks_like_tls(data: bytes) -> bool:
    """A TLS record header: handshake (22) or alert (21), version 3.x."""
    return len(data) >= 3 and data[0] in (21, 22) and data[1] == 3 and data[2] <= 4


# A frame under 16 MiB starts with a zero byte; a request's API key and version
# (both < 256) have zero high bytes too. Candidates are found in C, then checked.
_REQUEST_START = re.compile(rb"\x00(?=[\s\S]{3}\x00[\s\S]\x00)")
_FRAME_START = re.compile(rb"\x00")


class FrameStream:
    """Frames of one direction; hunts for a boundary after a gap."""

    def __init__(self, synced: bool, plausible: Callable[[bytearray, int], bool | None],
                 start: re.Pattern = _FRAME_START) -> None:
        self.reader = FrameReader()
        self.plausible = plausible
        self.start = start
        self.hunting = not synced
        self.hunt = bytearray()
        self.skipped = 0                 # bytes dropped from the front of hunt so far
        self.notes: list[str] = []

    def whole(self, items: list) -> bytes | None:
        """The frame when ``items`` is exactly one whole frame and nothing is
        buffered (the usual segment on loopback and LANs): taken without
        passing through the reader's buffer. None otherwise."""
        if len(items) != 1 or self.hunting or self.reader.buffered:
            return None
        item = items[0]
        if type(item) is not bytes or len(item) < 4 or int.from_bytes(item[:4], "big") != len(item) - 4:
            return None
        if len(item) - 4 > self.reader.max_frame:
            return None                  # the reader says why
        self.reader.position += len(item)
        return item[4:]

    def feed(self, items: list) -> None:
        for item in items:
            if type(item) is Gap:
                lost = self.reader.buffered + len(self.hunt)
                self.notes.append(f"{item.size} bytes not captured before this frame"
                                  + (f" ({lost} bytes of an earlier frame dropped with them)" if lost else ""))
                self.reader = FrameReader()
                self.hunt = bytearray()
                self.skipped = 0
                self.hunting = True
            elif self.hunting:
                self.hunt += item
            else:
                self.reader.feed(item)

    def _find(self) -> bool:
        """Scan for a provable boundary; bytes before the first undecided
        candidate are dropped at once, so the hunt holds at most one frame."""
        hunt, search = self.hunt, self.start.search
        p = 0
        while (m := search(hunt, p)) is not None:
            p = m.start()
            ok = self.plausible(hunt, p)
            if ok is None:
                break
            if ok:
                skipped = self.skipped + p
                if skipped:
                    self.notes.append(f"skipped {skipped} bytes to the next provable frame boundary")
                self.reader.feed(memoryview(hunt)[p:])
                self.hunt = bytearray()
                self.skipped = 0
                self.hunting = False
                return True
            p += 1
        else:
            p = max(0, len(hunt) - 16)     # no candidate left: keep a header's worth
        if p:
            self.skipped += p
            del hunt[:p]
        return False

    def frames(self) -> list[tuple[bytes, list[str]]]:
        """(frame, notes) for each complete frame now buffered (a list, not a
        generator: one per delivered segment, and most hold one frame or none)."""
        out: list[tuple[bytes, list[str]]] = []
        if self.hunting and not self._find():
            return out
        next_frame = self.reader.next_frame
        while True:
            try:
                frame = next_frame()
            except FrameError as e:
                self.notes.append(f"bad frame size ({e.reason}); {self.reader.buffered} bytes skipped")
                self.reader = FrameReader()
                self.hunting = True
                return out
            if frame is NEED_DATA:
                return out
            notes, self.notes = self.notes, []
            out.append((frame, notes))


# --- one connection ---------------------------------------------------------------

@dataclass(slots=True)
class _Pending:
    ts_ns: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: dict | None
    warnings: list[str]
    size: int
    spec: Any = None                 # the registry's ApiSpec for api_key (None: kproto lacks it)


class KafkaConnection:
    """Pairs the frames of one connection into exchanges."""

    def __init__(self, connection: Connection, context, client_synced: bool, server_synced: bool) -> None:
        self.connection = connection
        self.context = context                 # the Decoder: ports, topic_names
        self.pending: dict[int, _Pending] = {}
        self.requests = FrameStream(client_synced, provable_request, _REQUEST_START)
        self.responses = FrameStream(server_synced, self._plausible_response)
        self.mechanism: str | None = None
        self.raw_sasl = False                  # SaslHandshake v0: next frames are bare tokens

    def _plausible_response(self, buf, pos: int) -> bool | None:
        if len(buf) - pos < 8:
            return None
        size = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
        return 4 <= size <= DEFAULT_MAX_FRAME and int.from_bytes(buf[pos + 4:pos + 8], "big", signed=True) in self.pending

    def client_data(self, items: list, ts_ns: int, out: list) -> None:
        self._frames(self.requests, items, ts_ns, out, self._request)

    def server_data(self, items: list, ts_ns: int, out: list) -> None:
        self._frames(self.responses, items, ts_ns, out, self._response)

    @staticmethod
    def _frames(stream, items: list, ts_ns: int, out: list, handle) -> None:
        """Each whole frame of ``items`` to ``handle``: a segment that is exactly one frame
        without the stream's buffer, anything else through it."""
        frame = stream.whole(items)
        if frame is not None:
            notes, stream.notes = stream.notes, []
            handle(frame, notes, ts_ns, out)
            return
        stream.feed(items)
        for frame, notes in stream.frames():
            handle(frame, notes, ts_ns, out)

    def close(self, ts_ns: int, out: list) -> None:
        """End of connection or capture: requests still waiting."""
        for p in self.pending.values():
            out.append(self._exchange(p, None, None, 0, ["no response captured"]))
        self.pending.clear()
        for stream, side in ((self.requests, "client"), (self.responses, "server")):
            left = stream.reader.buffered + len(stream.hunt)
            if left:
                out.append(self._notice(ts_ns, [f"{side} sent {left} bytes of a frame the capture "
                                                "does not hold in full"] + stream.notes))

    def _notice(self, ts_ns: int, warnings: list[str]) -> Exchange:
        return Exchange(self.connection, ts_ns, None, None, None, None, None, None, None, None,
                        tuple(warnings), topic_names=self.context.topic_names)

    def _exchange(self, p: _Pending, ts_ns: int | None, response: dict | None, size: int,
                  warnings: list[str]) -> Exchange:
        spec = p.spec
        return _new_exchange(self.connection, p.ts_ns, ts_ns, p.api_key, spec.name if spec else None,
                        p.api_version, p.correlation_id, p.client_id, p.body, response,
                        tuple(p.warnings + warnings), p.size, size, self.context.topic_names)

    # --- requests ---------------------------------------------------------------

    def _request(self, frame: bytes, notes: list[str], ts_ns: int, out: list) -> None:
        if self.raw_sasl:
            self.raw_sasl = None               # the broker's bare answer comes next
            token = B.mask_plain_token(frame) if self.mechanism in (None, "PLAIN") else frame
            out.append(Exchange(self.connection, ts_ns, None, None, "SaslToken", None, None, None,
                                {"mechanism": self.mechanism, "auth_bytes": token}, None,
                                tuple(notes + ["bare SASL token (SaslHandshake v0): no Kafka header"]),
                                len(frame) + 4, topic_names=self.context.topic_names))
            return
        try:
            header, offset = decode_request_header(frame, present=True)
        except DecodeError as e:
            out.append(self._notice(ts_ns, notes + [f"request header does not decode: {e}"]))
            return
        # a plain dict (present=True): items, never attributes
        key, version, corr = header["request_api_key"], header["request_api_version"], header["correlation_id"]
        spec = API_KEYS.get(key)
        p = _Pending(ts_ns, key, version, corr, header.get("client_id"), None, notes, len(frame) + 4, spec)
        if corr in self.pending:
            notes.append(f"correlation id {corr} reused while a request was pending")
        self.pending[corr] = p
        if spec is None:
            notes.append(f"API key {key} is not in kproto's registry: body not decoded")
            return
        nulls: list[str] = []
        try:
            try:    # the header read once
                value = decode_request_body(header, frame, offset, present=True, null_warnings=nulls)
            except DecodeError as e:
                if "left after the body" not in str(e):
                    raise
                nulls.clear()
                value = decode_request_body(header, frame, offset, allow_trailing=True, present=True,
                                            null_warnings=nulls)
                notes.append("bytes after the request body (ignored, as Kafka does)")
            notes += [f"{spec.name} v{version} request: {n}" for n in nulls]
            p.body = B.plain_body(spec.request_schema, version, value, notes, self.context.binary, projected=True)
        except (DecodeError, KafkaError) as e:
            notes.append(f"{spec.name} v{version} request does not decode: {e}")
            return
        self._sasl_request(spec.name, p.body)
        if spec.name == "Produce" and p.body.get("acks") == 0:
            del self.pending[corr]
            out.append(self._exchange(p, None, None, 0, []))

    def _sasl_request(self, name: str, body: dict) -> None:
        if name == "SaslHandshake":
            self.mechanism = body.get("mechanism")
        elif name == "SaslAuthenticate" and self.mechanism in (None, "PLAIN"):
            body["auth_bytes"] = B.mask_plain_token(body.get("auth_bytes"))

    # --- responses --------------------------------------------------------------

    def _response(self, frame: bytes, notes: list[str], ts_ns: int, out: list) -> None:
        if self.raw_sasl is None:              # the broker's bare token answer
            self.raw_sasl = False
            out.append(self._notice(ts_ns, notes + [f"bare SASL token answer ({len(frame)} bytes)"]))
            return
        corr = int.from_bytes(frame[0:4], "big", signed=True) if len(frame) >= 4 else None
        p = self.pending.pop(corr, None)
        if p is None:
            out.append(Exchange(self.connection, ts_ns, ts_ns, None, None, None, corr, None, None, None,
                                tuple(notes + [f"response ({len(frame) + 4} bytes) to a request the "
                                               "capture does not hold"]),
                                0, len(frame) + 4, self.context.topic_names))
            return
        spec = p.spec
        body = None
        if spec is None:
            notes.append(f"API key {p.api_key} is not in kproto's registry: response not decoded")
        else:
            try:
                nulls: list[str] = []
                _, value = decode_response(p.api_key, p.api_version, frame, present=True, null_warnings=nulls)
                version = (p.api_version if spec.unsupported_version_body is None    # decode_response checked it
                           else _body_version(spec, p.api_version, value))
                notes += [f"{spec.name} v{version} response: {n}" for n in nulls]
                body = B.plain_body(spec.response_schema, version, value, notes, self.context.binary, projected=True)
            except (DecodeError, KafkaError) as e:
                notes.append(f"{spec.name} v{p.api_version} response does not decode: {e}")
        if body is not None:
            self._learn(p, body)
        out.append(self._exchange(p, ts_ns, body, len(frame) + 4, notes))

    def _learn(self, p: _Pending, body: dict) -> None:
        """What later frames need: broker ports, topic ids, SASL state."""
        name = p.spec.name
        ports = self.context.ports if self.context.discover_ports else set()
        if name == "Metadata":
            for b in body.get("brokers") or ():
                ports.add(b["port"])
            for t in body.get("topics") or ():
                if t.get("topic_id") is not None and t.get("name"):
                    self.context.topic_names[t["topic_id"]] = t["name"]
        elif name == "FindCoordinator":
            found = [body.get("port")] + [c.get("port") for c in body.get("coordinators") or ()]
            ports.update(q for q in found if isinstance(q, int) and q > 0)
        elif name == "SaslHandshake" and p.api_version == 0 and not body.get("error_code"):
            self.raw_sasl = True


def _body_version(spec, api_version: int, value) -> int:
    return protocol._body_version(spec, api_version, value.get("error_code"))
