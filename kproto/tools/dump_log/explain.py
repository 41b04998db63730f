"""``dump-log --explain``: an annotated hex view of a batch, field by field,
read straight from the construct schema (kproto.schemas.records).

The walker below follows the schema tree the way construct's own ``_parse``
methods do (Struct contexts, Frame, Prefixed, Compressed, counted and
Kafka arrays, If/Switch, LazyBound) and treats every other construct as a
leaf: it records ``stream.tell()`` before and after parsing it, so each leaf
becomes one row::

    <position>  <bytes in hex, 16 per line>  <field path> = <decoded value>

Positions are byte offsets in the file; inside decompressed data, where no
file byte corresponds, they are ``+N`` offsets into the decompressed block.
Nothing here names a field: add one to the schema and it shows up. The only
schema-specific knowledge is construct's own (how each construct type
descends), plus the CRC check a ``Frame`` performs, noted on the row at its
``crc_at``.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

from construct import (
    Array, Check, ConstructError, Container, Default, IfThenElse, LazyBound, Pass, Prefixed,
    Rebuild, Renamed, Struct, Switch,
)
from construct.core import evaluate

from kproto import compression
from kproto.errors import CorruptRecordError, DecodeError
from kproto.schemas import field_path
from kproto.schemas.primitives import KArray
from kproto.schemas.records import LENGTH_OFFSET, LOG_OVERHEAD, Compressed, Frame, UntilEof

__all__ = ["explain", "Row"]

BYTES_PER_LINE = 16
MAX_LINES = 4          # per field; longer fields end with "… N more bytes"


@dataclass
class Row:
    position: int          # file offset, or offset in decompressed data (in_file False)
    in_file: bool
    data: bytes
    path: str
    value: object = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Origin:
    base: int              # position of stream offset 0
    in_file: bool


class _Walker:
    def __init__(self) -> None:
        self.rows: list[Row] = []

    def walk(self, con, stream, ctx, path: str, org: _Origin):
        if isinstance(con, (Renamed, Rebuild, Default)):
            return self.walk(con.subcon, stream, ctx, path, org)
        if isinstance(con, Struct):
            return self._struct(con, stream, ctx, path, org)
        if isinstance(con, Frame):
            return self._frame(con, stream, ctx, path, org)
        if isinstance(con, Compressed):
            return self._compressed(con, stream, ctx, path, org)
        if isinstance(con, Prefixed):
            n = self.leaf(con.lengthfield, stream, ctx, f"{path}.length", org)
            start = stream.tell()
            data = stream.read(n)
            if len(data) < n:
                raise CorruptRecordError(f"{n} bytes declared, {len(data)} present",
                                         position=org.base + start, path=path)
            return self.walk(con.subcon, io.BytesIO(data), ctx, path,
                             _Origin(org.base + start, org.in_file))
        if isinstance(con, KArray):
            n = self.leaf(con.count, stream, ctx, f"{path}.count", org)
            n = n - 1 if con.compact else n
            if n < 0:
                return None
            return [self.walk(con.subcon, stream, ctx, f"{path}[{i}]", org) for i in range(n)]
        if isinstance(con, Array):
            items = []
            for i in range(evaluate(con.count, ctx)):
                ctx._index = i
                items.append(self.walk(con.subcon, stream, ctx, f"{path}[{i}]", org))
            return items
        if isinstance(con, UntilEof):
            items = []
            while stream.read(1):
                stream.seek(-1, io.SEEK_CUR)
                items.append(self.walk(con.subcon, stream, ctx, f"{path}[{len(items)}]", org))
            return items
        if isinstance(con, IfThenElse):
            sub = con.thensubcon if evaluate(con.condfunc, ctx) else con.elsesubcon
            return self.walk(sub, stream, ctx, path, org)
        if isinstance(con, Switch):
            key = evaluate(con.keyfunc, ctx)
            return self.walk(con.cases.get(key, con.default), stream, ctx, path, org)
        if isinstance(con, LazyBound):
            return self.walk(con.subconfunc(), stream, ctx, path, org)
        if isinstance(con, Check):
            if not evaluate(con.func, ctx):
                raise CorruptRecordError("check failed", position=org.base + stream.tell(), path=path)
            return None
        if con is Pass:
            return None
        return self.leaf(con, stream, ctx, path, org)

    def leaf(self, con, stream, ctx, path: str, org: _Origin):
        start = stream.tell()
        try:
            value = con._parsereport(stream, ctx, path)
        except ConstructError as e:
            raise CorruptRecordError(_reason(e), position=org.base + stream.tell() if org.in_file else None,
                                     path=path or field_path(e.path)) from None
        end = stream.tell()
        if end > start:
            self.rows.append(Row(org.base + start, org.in_file, stream.getvalue()[start:end], path, value))
        return value

    def _struct(self, con, stream, ctx, path, org):
        obj = Container()
        context = Container(_=ctx, _params=ctx.get("_params"), _root=None, _parsing=True,
                            _building=False, _sizing=False, _subcons=con._subcons, _io=stream,
                            _index=ctx.get("_index", None))
        context._root = ctx.get("_root", context)
        for sc in con.subcons:
            value = self.walk(sc, stream, context, f"{path}.{sc.name}" if path and sc.name else (sc.name or path), org)
            if sc.name:
                obj[sc.name] = value
                context[sc.name] = value
        return obj

    def _frame(self, con, stream, ctx, path, org):
        start = stream.tell()
        data = stream.read(LOG_OVERHEAD)
        length = (int.from_bytes(data[LENGTH_OFFSET:LOG_OVERHEAD], "big", signed=True)
                  if len(data) == LOG_OVERHEAD else -1)
        if length < 0:
            raise CorruptRecordError("frame header cut short or negative length",
                                     position=org.base + start, path=path)
        data += stream.read(length)
        if len(data) < LOG_OVERHEAD + length:
            raise CorruptRecordError(f"length {length} runs past the end", position=org.base + start, path=path)
        first = len(self.rows)
        frame_org = _Origin(org.base + start, org.in_file)
        value = self.walk(con.subcon, io.BytesIO(data), ctx, path, frame_org)
        stored = int.from_bytes(data[con.crc_at:con.crc_at + 4], "big")
        computed = con.crc_func(data[con.crc_from:])
        name = getattr(con.crc_func, "__name__", "crc")
        span = f"{name} over frame bytes {con.crc_from}..{len(data) - 1}"
        note = f"{span}: ok" if stored == computed else f"MISMATCH: {span} is {computed}"
        for row in self.rows[first:]:
            if row.in_file == frame_org.in_file and row.position == frame_org.base + con.crc_at:
                row.notes.append(note)
                break
        return value

    def _compressed(self, con, stream, ctx, path, org):
        codec = evaluate(con.codec, ctx)
        if codec == compression.CompressionType.NONE:
            value = self.walk(con.subcon, stream, ctx, path, org)
            if stream.read(1):
                raise CorruptRecordError("bytes remain after the last record",
                                         position=org.base + stream.tell() - 1, path=path)
            return value
        start = stream.tell()
        raw = stream.read()
        try:
            data = compression.decompress(codec, raw, magic=evaluate(con.magic, ctx))
        except (DecodeError, ValueError) as e:
            raise CorruptRecordError(f"cannot decompress: {e}", position=org.base + start, path=path) from None
        name = compression.CompressionType(codec).name.lower()
        self.rows.append(Row(org.base + start, org.in_file, raw, f"{path} ({name})",
                             _Text(f"{len(raw)} bytes, {len(data)} decompressed; rows below at +offset")))
        inner = io.BytesIO(data)
        value = self.walk(con.subcon, inner, ctx, path, _Origin(0, False))
        if inner.read(1):
            raise CorruptRecordError("bytes remain after the last record", path=path)
        return value


def _reason(e: ConstructError) -> str:
    text = str(e)
    return text.split("\n", 1)[1] if text.startswith("Error in path") and "\n" in text else text


class _Text(str):
    """A description shown as is, not as a decoded string value."""


def _show(value) -> str:
    if isinstance(value, _Text):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (bytes, bytearray)):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return f"<{len(value)} bytes>"
        return json.dumps(text, ensure_ascii=False) if text.isprintable() else f"<{len(value)} bytes>"
    if isinstance(value, dict):
        shown = {k: v for k, v in value.items() if not k.startswith("_") and v is not None}
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in shown.items()) + "}"
    return str(value)


def format_rows(rows: list[Row]) -> list[str]:
    out = []
    width = BYTES_PER_LINE * 3 - 1
    for row in rows:
        label = str(row.position) if row.in_file else f"+{row.position}"
        chunks = [row.data[i:i + BYTES_PER_LINE] for i in range(0, len(row.data), BYTES_PER_LINE)]
        notes = "".join(f"  ({n})" for n in row.notes)
        out.append(f"{label:>10}  {chunks[0].hex(' '):<{width}}  {row.path} = {_show(row.value)}{notes}")
        for chunk in chunks[1:MAX_LINES]:
            out.append(f"{'':>10}  {chunk.hex(' ')}")
        if len(chunks) > MAX_LINES:
            rest = len(row.data) - MAX_LINES * BYTES_PER_LINE
            out.append(f"{'':>10}  … {rest} more bytes")
    return out


def explain(schema, data: bytes, *, position: int = 0) -> tuple[list[str], DecodeError | None]:
    """Rows for one unit (a batch) parsed with ``schema`` from ``data``, which
    starts at file byte ``position``. Returns the formatted lines and the error
    that stopped the walk, if any (the rows before it are kept)."""
    walker = _Walker()
    ctx = Container(_parsing=True, _building=False, _sizing=False, verify_crc=False)
    ctx._params = ctx
    error = None
    try:
        walker.walk(schema, io.BytesIO(bytes(data)), ctx, "", _Origin(position, True))
    except DecodeError as e:
        error = e
    return format_rows(walker.rows), error
