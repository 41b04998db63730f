"""Fast protocol codecs generated from the same field trees as the construct codecs.

construct's interpreter costs ~20 Python calls per field, which makes a
DescribeConfigs answer for 200 topics take a second. This module reads the
``Struct``/``Field`` tree of ``kproto.schemas.message`` and writes, once per
(struct, version, flexible), one straight-line Python function that parses
(and one that builds) exactly what ``codec(struct, version, flexible)`` does.

The generated code handles the happy path only. Anything irregular (short
input, a negative length, bad UTF-8, a value that does not fit, a stray key)
raises ``Irregular`` (kproto.fastpath.walk) and nothing else: the caller
(``kproto.schemas.protocol``) catches only that and reruns the construct
codec, which either raises the precise, located error or gives the answer.
Any other exception is a bug in the generator and propagates.
So errors always come from the schema, and tests/schemas/test_protocol_fastpath.py
proves that both paths give equal objects and bytes on every fixture and on
hypothesis-generated messages.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from functools import lru_cache
from typing import Callable

from construct import Container

from kproto.fastpath.walk import Irregular as _Irregular
from kproto.fastpath.walk import Writer, compiled
from kproto.schemas import message as M
from kproto.schemas.primitives import Deferred, encode_uvarint

__all__ = ["fast_parser", "fast_builder", "build_record", "Irregular"]

Irregular = _Irregular

# What straight-line code raises on its own when the input is short or a
# value does not fit; each generated function turns these into Irregular.
_PARSE_ERRORS = "(IndexError, _struct_error, UnicodeDecodeError)"
_BUILD_ERRORS = "(_struct_error, TypeError, AttributeError, ValueError, OverflowError)"


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(5):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFF:
                raise _Irregular
            return value, pos
        shift += 7
    raise _Irregular


def _uvarint_bytes(value: int) -> bytes:
    if not isinstance(value, int) or value < 0 or value > 0xFFFFFFFF:
        raise _Irregular
    return _SMALL[value] if value < 0x80 else encode_uvarint(value)


_SMALL = [bytes([i]) for i in range(0x80)]


def _tags(buf: bytes, pos: int) -> tuple[dict, int]:
    count, pos = _uvarint(buf, pos)
    raw = {}
    last = -1
    for _ in range(count):
        tag, pos = _uvarint(buf, pos)
        if tag <= last:
            raise _Irregular
        last = tag
        size, pos = _uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise _Irregular
        raw[tag] = buf[pos:end]
        pos = end
    return raw, pos


def _write_tags(out: bytearray, raw: dict) -> None:
    out += _uvarint_bytes(len(raw))
    for tag in sorted(raw):
        data = raw[tag]
        out += _uvarint_bytes(tag)
        out += _uvarint_bytes(len(data))
        out += data


def _layout(spec: M.Struct, version: int, flexible: bool) -> tuple[tuple[M.Field, ...], tuple[M.Field, ...]]:
    """(fields on the wire in order, tagged fields): the schema codec's own split."""
    c = M.codec(spec, version, flexible)
    return c.wire, tuple(f for f, _ in c.tagged.values())


def _element(t, compact: bool) -> M.Field:
    """An array element as a field of its own: never null, compact with the array."""
    return M.Field("elem", t, flexible=None if compact else "none")


_FMT = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "float64": "d"}
_SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "float64": 8}

def _runs(fields: tuple[M.Field, ...]) -> list[tuple[M.Field, ...]]:
    """``fields`` in order, grouped so that consecutive fixed-width scalars
    (``_FMT``) share a group; every other field is a group of its own."""
    runs: list[list[M.Field]] = []
    fixed = False
    for f in fields:
        now = isinstance(f.type, M.Scalar) and f.type.kafka in _FMT
        if now and fixed:
            runs[-1].append(f)
        else:
            runs.append([f])
        fixed = now
    return [tuple(r) for r in runs]


# A nullable struct: an int8 marker, -1 for null, then the struct.
_NULLABLE_STRUCT_PARSE = ("{pad}if _u_int8(buf, pos)[0] < 0:\n{pad}    pos += 1\n{pad}    {var} = None\n"
                          "{pad}else:\n{pad}    {var}, pos = {fn}(buf, pos + 1)")
_NULLABLE_STRUCT_BUILD = ("{pad}if {var} is None:\n{pad}    out += b'\\xff'\n"
                          "{pad}else:\n{pad}    out += b'\\x01'\n{pad}    {fn}({var}, out)")


def _scalar_parse(kafka: str, var: str, pad: str) -> str:
    if kafka in _FMT:
        return f"{pad}{var} = _u_{kafka}(buf, pos)[0]\n{pad}pos += {_SIZE[kafka]}"
    if kafka == "bool":
        return f"{pad}{var} = buf[pos] != 0\n{pad}pos += 1"
    if kafka == "uuid":
        return (f"{pad}if pos + 16 > len(buf):\n{pad}    raise _Irregular\n"
                f"{pad}{var} = _UUID(bytes=buf[pos:pos + 16])\n{pad}pos += 16")
    raise ValueError(kafka)


def _scalar_build(kafka: str, var: str, pad: str) -> str:
    if kafka in _FMT:
        return f"{pad}out += _p_{kafka}({var})"
    if kafka == "bool":
        return f"{pad}out += b'\\x01' if {var} else b'\\x00'"
    return f"{pad}out += ({var} or _ZERO_UUID).bytes"


class _Gen(Writer):
    """Writes the source of the parse and build functions of one struct tree
    (``lines`` holds whole functions here)."""

    def __init__(self, present: bool = False) -> None:
        self.present = present      # parse only the fields the version has (M.present_only)
        super().__init__({
            "Container": Container, "_Irregular": _Irregular, "_uvarint": _uvarint, "_tags": _tags,
            "_uvarint_bytes": _uvarint_bytes, "_write_tags": _write_tags, "_UUID": _uuid.UUID,
            "_ZERO_UUID": _uuid.UUID(int=0), "Deferred": Deferred, "_is_default": M._is_default,
            "_struct_error": struct.error,
        })
        for k, c in _FMT.items():
            self.ns[f"_u_{k}"] = struct.Struct(">" + c).unpack_from
            self.ns[f"_p_{k}"] = struct.Struct(">" + c).pack
        self._done: dict[tuple, str] = {}

    def name(self, prefix: str) -> str:
        return self.var(prefix)

    def function(self, signature: str, body: list[str], errors: str) -> None:
        """One generated function; the exceptions in ``errors`` become Irregular
        (a try costs nothing until something is raised)."""
        inner = "\n".join("    " + line for line in "\n".join(body).split("\n"))
        self.lines.append(f"def {signature}:\n    try:\n{inner}\n    except {errors} as e:\n"
                          f"        raise _Irregular from e\n")

    # -- parse ------------------------------------------------------------------

    def parse_struct(self, spec: M.Struct, version: int, flexible: bool) -> str:
        key = ("p", id(spec), version, flexible)
        if key in self._done:
            return self._done[key]
        fn = self.name("_parse_")
        self._done[key] = fn
        body: list[str] = []
        wire, tagged = _layout(spec, version, flexible)
        for run in _runs(wire):
            if len(run) > 1:        # fixed-width scalars in a row: one struct call
                fmt = "".join(_FMT[f.type.kafka] for f in run)
                unpack = self.const(struct.Struct(">" + fmt).unpack_from, "_u_")
                body.append(f"    {', '.join(f'v_{f.name}' for f in run)} = {unpack}(buf, pos)")
                body.append(f"    pos += {sum(_SIZE[f.type.kafka] for f in run)}")
            else:
                self.parse_value(body, f"v_{run[0].name}", run[0], version, flexible, 1)
        if flexible:
            # Almost every struct ends with an empty tag section: one byte, 0.
            body.append("    if buf[pos] == 0:\n        raw = {}\n        pos += 1")
            body.append("    else:\n        raw, pos = _tags(buf, pos)")
        args = []
        for f in spec.fields:
            if self.present and not f.present(version):
                continue
            if f in wire:
                args.append((f.name, f"v_{f.name}"))
            elif f in tagged:
                sub = self.name("_tag_")
                self._tag_parser(sub, f, version, flexible)
                body.append(f"    t_{f.name} = {sub}(raw.pop({f.tag})) if {f.tag} in raw else "
                            f"{self.default(f)[0]}")
                args.append((f.name, f"t_{f.name}"))
            else:
                args.append((f.name, self.default(f)[0]))
        if self.present:    # a decoder's body: a plain dict, a third of a Container's cost to make
            body.append("    out = {" + ", ".join(f"{name!r}: {expr}" for name, expr in args) + "}")
        else:
            body.append(f"    out = Container({', '.join(f'{name}={expr}' for name, expr in args)})")
        if flexible:
            body.append("    if raw:\n        out['_unknown'] = raw")
        body.append("    return out, pos")
        self.function(f"{fn}(buf, pos)", body, _PARSE_ERRORS)
        return fn

    def _tag_parser(self, fn: str, f: M.Field, version: int, flexible: bool) -> None:
        body: list[str] = ["    pos = 0"]
        self.parse_value(body, "v", f, version, flexible, 1)
        body.append("    if pos != len(buf):\n        raise _Irregular")
        body.append("    return v")
        self.function(f"{fn}(buf)", body, _PARSE_ERRORS)

    def default(self, f: M.Field) -> tuple[str, bool]:
        """(expression, fresh): a literal for an immutable default, else a call
        that makes a new list or struct each time (values are never shared)."""
        value = f.default_value()
        if isinstance(value, _uuid.UUID):
            return self.const(value), False
        if isinstance(value, M._IMMUTABLE):
            return repr(value), False
        return f"{self.const(f.default_value)}()", True

    def parse_value(self, body: list[str], var: str, f: M.Field, version: int, flexible: bool,
                    depth: int) -> None:
        t = f.type
        pad = "    " * depth
        compact = f.compact_in(version, flexible)
        nullable = f.nullable_in(version)
        if isinstance(t, M.ArrayOf):
            self._parse_count(body, "n", compact, pad)
            body.append(f"{pad}if n < 0:")
            body.append(f"{pad}    if n != -1 or {not nullable}:\n{pad}        raise _Irregular")
            body.append(f"{pad}    {var} = None")
            body.append(f"{pad}else:")
            e = t.elem
            if isinstance(e, M.Scalar) and e.kafka in _FMT:
                size = _SIZE[e.kafka]
                fmt = self.const(struct.Struct)
                body.append(f"{pad}    {var} = list({fmt}('>%d{_FMT[e.kafka]}' % n).unpack_from(buf, pos))")
                body.append(f"{pad}    pos += n * {size}")
                return
            body.append(f"{pad}    {var} = []")
            body.append(f"{pad}    for _ in range(n):")
            if isinstance(e, M.Struct):
                fn = self.parse_struct(e, version, flexible)
                body.append(f"{pad}        x, pos = {fn}(buf, pos)")
            else:
                self.parse_value(body, "x", _element(e, compact), version, flexible, depth + 2)
            body.append(f"{pad}        {var}.append(x)")
            return
        if isinstance(t, M.Struct):
            fn = self.parse_struct(t, version, flexible)
            body.append(_NULLABLE_STRUCT_PARSE.format(pad=pad, var=var, fn=fn) if nullable
                        else f"{pad}{var}, pos = {fn}(buf, pos)")
            return
        if isinstance(t, M.Scalar):
            body.append(_scalar_parse(t.kafka, var, pad))
            return
        # Sized: string / bytes / records
        if compact:
            self._parse_count(body, "n", True, pad)
        else:
            kind = "int16" if t.text else "int32"
            body.append(f"{pad}n = _u_{kind}(buf, pos)[0]\n{pad}pos += {_SIZE[kind]}")
        body.append(f"{pad}if n < 0:")
        body.append(f"{pad}    if n != -1 or {not nullable}:\n{pad}        raise _Irregular")
        body.append(f"{pad}    {var} = None")
        body.append(f"{pad}else:")
        body.append(f"{pad}    end = pos + n")
        body.append(f"{pad}    if end > len(buf):\n{pad}        raise _Irregular")
        conv = "str(buf[pos:end], 'utf-8')" if t.text else "buf[pos:end]"
        body.append(f"{pad}    {var} = {conv}\n{pad}    pos = end")

    @staticmethod
    def _parse_count(body: list[str], var: str, compact: bool, pad: str) -> None:
        if compact:
            body.append(f"{pad}{var} = buf[pos]")
            body.append(f"{pad}if {var} < 0x80:\n{pad}    pos += 1")
            body.append(f"{pad}else:\n{pad}    {var}, pos = _uvarint(buf, pos)")
            body.append(f"{pad}{var} -= 1")
        else:
            body.append(f"{pad}{var} = _u_int32(buf, pos)[0]\n{pad}pos += 4")

    # -- build ------------------------------------------------------------------

    def build_struct(self, spec: M.Struct, version: int, flexible: bool) -> str:
        key = ("b", id(spec), version, flexible)
        if key in self._done:
            return self._done[key]
        fn = self.name("_build_")
        self._done[key] = fn
        names = self.const(spec.names)
        body = [
            "    if not isinstance(obj, dict):\n        raise _Irregular",
            f"    if not {names}.issuperset(obj):",
            f"        for k in obj:\n            if k not in {names} and not (isinstance(k, str) and k[:1] == '_'):"
            "\n                raise _Irregular",
        ]
        wire, tagged = _layout(spec, version, flexible)
        for f in wire:
            default, fresh = self.default(f)
            if fresh:                       # made only when the field is absent
                body.append(f"    v = obj.get({f.name!r}, _Irregular)")
                body.append(f"    if v is _Irregular:\n        v = {default}")
            else:
                body.append(f"    v = obj.get({f.name!r}, {default})")
            self.build_value(body, "v", f, version, flexible, 1)
        if flexible and not tagged:
            body.append("    raw = obj.get('_unknown')")
            body.append("    if raw:\n        _write_tags(out, raw)\n    else:\n        out.append(0)")
        elif flexible:
            body.append("    raw = dict(obj.get('_unknown') or {})")
            for f in tagged:
                sub = self.name("_tagb_")
                self._tag_builder(sub, f, version, flexible)
                d = self.const(f.default_value)
                body.append(f"    if {f.tag} in raw:\n        raise _Irregular")
                # absent is the default, which Kafka omits: no default made and compared then
                # (a struct's default is a fresh Container: ~10 us a partition of a ProduceResponse)
                body.append(f"    if {f.name!r} in obj and not _is_default(obj[{f.name!r}], {d}()):")
                body.append(f"        raw[{f.tag}] = {sub}(obj[{f.name!r}])")
            body.append("    _write_tags(out, raw)")
        self.function(f"{fn}(obj, out)", body, _BUILD_ERRORS)
        return fn

    def _tag_builder(self, fn: str, f: M.Field, version: int, flexible: bool) -> None:
        body = ["    out = bytearray()"]
        self.build_value(body, "v", f, version, flexible, 1)
        body.append("    return bytes(out)")
        self.function(f"{fn}(v)", body, _BUILD_ERRORS)

    def build_value(self, body: list[str], var: str, f: M.Field, version: int, flexible: bool,
                    depth: int) -> None:
        t = f.type
        pad = "    " * depth
        compact = f.compact_in(version, flexible)
        nullable = f.nullable_in(version)
        if isinstance(t, M.ArrayOf):
            null = "b'\\x00'" if compact else "b'\\xff\\xff\\xff\\xff'"
            body.append(f"{pad}if {var} is None:")
            body.append(f"{pad}    out += {null}" if nullable else f"{pad}    raise _Irregular")
            body.append(f"{pad}else:")
            if compact:
                self._put_uvarint(body, f"len({var}) + 1", pad + "    ")
            else:
                body.append(f"{pad}    out += _p_int32(len({var}))")
            e = t.elem
            item = self.name("i")
            body.append(f"{pad}    for {item} in {var}:")
            if isinstance(e, M.Struct):
                fn = self.build_struct(e, version, flexible)
                body.append(f"{pad}        {fn}({item}, out)")
            else:
                self.build_value(body, item, _element(e, compact), version, flexible, depth + 2)
            return
        if isinstance(t, M.Struct):
            fn = self.build_struct(t, version, flexible)
            body.append(_NULLABLE_STRUCT_BUILD.format(pad=pad, var=var, fn=fn) if nullable
                        else f"{pad}{fn}({var}, out)")
            return
        if isinstance(t, M.Scalar):
            body.append(_scalar_build(t.kafka, var, pad))
            return
        if compact:
            null, prefix = "b'\\x00'", "_uvarint_bytes({} + 1)"
        elif t.text:
            null, prefix = "b'\\xff\\xff'", "_p_int16({})"
        else:
            null, prefix = "b'\\xff\\xff\\xff\\xff'", "_p_int32({})"
        body.append(f"{pad}if {var} is None:")
        body.append(f"{pad}    out += {null}" if nullable else f"{pad}    raise _Irregular")
        if not t.text:      # only bytes/records are ever Deferred (a text one falls back)
            body.append(f"{pad}elif type({var}) is Deferred:")
            body.append(f"{pad}    out += {prefix.format(var + '.length')}\n{pad}    {var}.at = len(out)")
        body.append(f"{pad}else:")
        data = f"{var}.encode('utf-8')" if t.text else f"bytes({var})"
        body.append(f"{pad}    d = {data}")
        if compact:
            self._put_uvarint(body, "len(d) + 1", pad + "    ")
        else:
            body.append(f"{pad}    out += {prefix.format('len(d)')}")
        body.append(f"{pad}    out += d")

    @staticmethod
    def _put_uvarint(body: list[str], expr: str, pad: str) -> None:
        """A length prefix: one byte for the usual short string or array."""
        body.append(f"{pad}n = {expr}")
        body.append(f"{pad}if n < 0x80:\n{pad}    out.append(n)\n{pad}else:\n{pad}    out += _uvarint_bytes(n)")


@lru_cache(maxsize=None)
def _compiled(spec: M.Struct, version: int, flexible: bool,
              present: bool = False) -> tuple[Callable, Callable | None]:
    gen = _Gen(present)
    parse = gen.parse_struct(spec, version, flexible)
    build = None if present else gen.build_struct(spec, version, flexible)   # present: decoders only
    code = "\n".join(gen.lines)
    exec(compiled(code, f"<kproto.fastpath.protocol {spec.name} v{version}>"), gen.ns)
    return gen.ns[parse], build and gen.ns[build]


def fast_parser(spec: M.Struct, version: int, flexible: bool,
                present: bool = False) -> Callable[[bytes, int], tuple[Container, int]]:
    """``parse(buf, pos) -> (value, end)``; ``Irregular`` on anything irregular.
    ``present``: the value holds only the fields ``version`` has, as
    ``present_only`` would make it, in plain dicts (the capture decoder's bodies)."""
    return _compiled(spec, version, flexible, present)[0]


def fast_builder(spec: M.Struct, version: int, flexible: bool) -> Callable[[object, bytearray], None]:
    """``build(obj, out)`` appends the encoding to ``out``; ``Irregular`` on anything irregular."""
    return _compiled(spec, version, flexible)[1]


_RECORD_VERSION = struct.Struct(">h")


@lru_cache(maxsize=None)
def _record_builder(message: M.Message, version: int) -> Callable[[object, bytearray], None] | None:
    if version not in message.versions():
        return None
    return fast_builder(message.spec, version, message.is_flexible(version))


def build_record(message: M.Message, version: int, value, versioned) -> bytes:
    """An internal topic's key or value: ``version int16``, then ``value`` as ``message``'s
    body of that version, the bytes ``versioned`` (its ``kproto.schemas.message.versioned``
    construct) builds, written by the generated builder. ``versioned`` builds it when that
    declines, so an error is the schema's (the coordinators write such records per request,
    where construct's interpreter cost ~40 us a record)."""
    build = _record_builder(message, version)
    if build is not None:
        out = bytearray(_RECORD_VERSION.pack(version))
        try:
            build(value, out)
            return bytes(out)
        except Irregular:
            pass
    return versioned.build({"version": version, "data": value})
