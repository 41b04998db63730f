"""The log tests' batches and index readers."""

from __future__ import annotations

import struct
from pathlib import Path

from kproto.records import NewRecord, build_record_batch


def one_batch(i: int, ts: int | None = None, **kw) -> bytes:
    return build_record_batch([NewRecord(b"k%d" % i, b"v" * 20, (), 1000 + 10 * i if ts is None else ts)], **kw)


def index_entries(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [struct.unpack_from(">ii", data, i) for i in range(0, len(data), 8)]


def time_entries(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [struct.unpack_from(">qi", data, i) for i in range(0, len(data), 12)]
