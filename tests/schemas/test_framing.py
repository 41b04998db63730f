"""Frame reader: whole, byte by byte, and with trailing bytes left unconsumed (h11's three ways)."""

import pytest

from kproto.framing import NEED_DATA, FrameError, FrameReader, frame

PAYLOADS = [b"", b"a", b"hello world" * 50, bytes(range(256))]
STREAM = b"".join(frame(p) for p in PAYLOADS)


def test_whole_stream():
    r = FrameReader()
    r.feed(STREAM)
    assert r.frames() == PAYLOADS
    assert r.next_frame() is NEED_DATA and r.position == len(STREAM)


def test_byte_by_byte():
    r = FrameReader()
    got = []
    for i in range(len(STREAM)):
        r.feed(STREAM[i:i + 1])
        got += r.frames()
    assert got == PAYLOADS


def test_trailing_partial_frame_stays_buffered():
    r = FrameReader()
    r.feed(STREAM + frame(b"next")[:6])
    assert r.frames() == PAYLOADS
    assert r.buffered == 6 and r.next_frame() is NEED_DATA
    r.feed(frame(b"next")[6:])
    assert r.next_frame() == b"next"


@pytest.mark.parametrize("size", [-1, 101])
def test_bad_size_names_position(size):
    r = FrameReader(max_frame=100)
    r.feed(frame(b"ok") + size.to_bytes(4, "big", signed=True))
    assert r.next_frame() == b"ok"
    with pytest.raises(FrameError) as e:
        r.next_frame()
    assert e.value.position == 6 and "frame size" in str(e.value)
