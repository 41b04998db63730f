"""Declarative construct schemas: the single source of truth for every format.

``parse`` and ``build`` are the schema path: they run construct's interpreter
and turn any construct failure into a ``kproto.errors`` exception that names
the byte position and the field path. Fast paths elsewhere are derived from
these schemas and tested equal to them.
"""

from __future__ import annotations

import io
import re

from construct import Construct, ConstructError, Container

from kproto.errors import CorruptRecordError, DecodeError

__all__ = ["parse", "build", "field_path", "Container"]

_PATH_PARTS = re.compile(r"\s*->\s*")


def field_path(construct_path: str | None) -> str | None:
    """construct's ``(parsing) -> records -> [3] -> key`` as ``records[3].key``."""
    if not construct_path:
        return None
    out = ""
    for part in _PATH_PARTS.split(construct_path):
        if not part or part.startswith("("):
            continue
        out += part if part.startswith("[") or not out else "." + part
    return out or None


def _reason(e: ConstructError) -> str:
    text = str(e)
    return text.split("\n", 1)[1] if text.startswith("Error in path") and "\n" in text else text


def parse(schema: Construct, data: bytes | bytearray | memoryview, *, position: int = 0,
          file: str | None = None, error: type[DecodeError] = CorruptRecordError,
          **params) -> Container:
    """Parse ``data`` with ``schema``; ``params`` reach the schema as context
    (e.g. ``verify_crc=False``). Errors carry ``position`` + the offset reached."""
    stream = io.BytesIO(bytes(data))
    try:
        return schema.parse_stream(stream, **params)
    except ConstructError as e:
        raise error(_reason(e), position=position + stream.tell(), path=field_path(e.path),
                    file=file) from None
    except DecodeError as e:
        raise e.at(base=position + stream.tell() if e.position is None else position, file=file)


def build(schema: Construct, obj, **params) -> bytes:
    """Build bytes; a value that does not fit the schema is a ``DecodeError``
    subclass naming the field (the same hierarchy as parse failures)."""
    try:
        return schema.build(obj, **params)
    except ConstructError as e:
        raise CorruptRecordError(_reason(e), path=field_path(e.path)) from None
