"""Kafka's frame layer, sans-I/O: ``int32 size`` then ``size`` bytes.

Shared by the broker (requests in), the client (responses in) and the capture
decoder (reassembled TCP streams): feed bytes as they arrive, take whole
frames out. Like h11, a reader never blocks and never raises on short input;
it answers ``NEED_DATA``.
"""

from __future__ import annotations

from kproto.errors import DecodeError


class _NeedData:
    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA = _NeedData()

# Kafka's socket.request.max.bytes default.
DEFAULT_MAX_FRAME = 100 * 1024 * 1024


class FrameError(DecodeError):
    """A size prefix that cannot be honoured (negative, or over the limit)."""


class FrameReader:
    """Accumulates bytes, yields complete frames (without the size prefix).

    ``position`` counts bytes consumed since the start of the stream, so an
    error names where in the connection or capture it happened.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()
        self._start = 0          # consumed prefix of _buf, compacted lazily
        self.position = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._start

    def next_frame(self) -> bytes | _NeedData:
        buf, start = self._buf, self._start
        if len(buf) - start < 4:
            return NEED_DATA
        size = int.from_bytes(buf[start:start + 4], "big", signed=True)
        if size < 0 or size > self.max_frame:
            frame_size(buf[start:start + 4], self.max_frame, self.position)     # raises
        if len(buf) - start - 4 < size:
            return NEED_DATA
        with memoryview(buf) as view:      # one copy of the frame, not two (slice, then bytes)
            frame = bytes(view[start + 4:start + 4 + size])
        self._start = start + 4 + size
        self.position += 4 + size
        if self._start > 65536 and self._start * 2 > len(buf):
            del buf[:self._start]
            self._start = 0
        return frame

    def frames(self) -> list[bytes]:
        """Every complete frame buffered now."""
        out = []
        while (frame := self.next_frame()) is not NEED_DATA:
            out.append(frame)
        return out


def frame_size(prefix: bytes | bytearray, max_frame: int = DEFAULT_MAX_FRAME, position: int = 0) -> int:
    """The size a 4-byte prefix announces; ``FrameError`` if it cannot be honoured."""
    size = int.from_bytes(prefix, "big", signed=True)
    if size < 0 or size > max_frame:
        raise FrameError(f"frame size {size} outside 0..{max_frame}", position=position, path="size")
    return size


def frame(payload: bytes | bytearray) -> bytes:
    """Prefix ``payload`` with its int32 size."""
    return len(payload).to_bytes(4, "big") + bytes(payload)


__all__ = ["NEED_DATA", "FrameReader", "FrameError", "frame", "frame_size", "DEFAULT_MAX_FRAME"]
