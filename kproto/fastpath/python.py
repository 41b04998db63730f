"""Fast codecs derived from the construct schemas.

construct's interpreter costs ~100 us a record and its ``compile()`` covers
neither our varints nor compression (it knows only its own primitive classes). Instead this module walks
a schema and writes straight-line Python for it: every varint inlined, every
fixed field one ``struct`` call, no Container, no BytesIO. The schema stays
the only description of the format; this is a translation of it, and
tests/records/codec_check.py proves the two paths equal on every fixture.

Supported constructs are exactly those the schemas use on hot paths: named
struct members, fixed-size integers, kproto's varints, ``Sized`` strings and
bytes, ``KArray``, ``Prefixed`` and ``Terminated``. Anything else raises at
generation time rather than being silently mistranslated.
"""

from __future__ import annotations

import struct
from typing import Callable

from construct import FormatField, Struct

from kproto.fastpath.walk import (
    ARRAY, FIXED, PREFIXED, PYTHON, SIZED, UVARINT, ZIGZAG, Writer, emit_sized, is_terminator, node_kind,
    unwrap,
)
from kproto.errors import CorruptRecordError
from kproto.schemas.primitives import KArray


def header_struct(schema: Struct, upto: str | None = None) -> tuple[struct.Struct, tuple[str, ...]]:
    """One ``struct.Struct`` for the leading fixed-size fields of a schema
    (through ``upto``; unnamed checks skipped), and their names in order."""
    fmt, names = ">", []
    for sub in schema.subcons:
        if not sub.name:
            continue
        if names and names[-1] == upto:
            break
        inner = unwrap(sub)
        if not isinstance(inner, FormatField):
            raise TypeError(f"{sub.name}: not a fixed-size field")
        fmt += inner.fmtstr.lstrip("<>=!")
        names.append(sub.name)
    return struct.Struct(fmt), tuple(names)


# the varint bytes of every value below 2**14 (one or two bytes), built in two comprehensions
_UVARINT = [bytes((v,)) for v in range(0x80)] + [bytes(((v & 0x7F) | 0x80, v >> 7)) for v in range(0x80, 16384)]


class _Gen(Writer):
    def __init__(self) -> None:
        super().__init__({"CorruptRecordError": CorruptRecordError,
                          "ZIGZAG1": _ZIGZAG1, "INT8": _INT8, "UVARINT": _UVARINT})

    def var(self, stem: str) -> str:
        return super().var("_" + stem)

    def const(self, value: object, stem: str = "k") -> str:
        return super().const(value, stem)


# --- decoding ---------------------------------------------------------------

def _fail(g: _Gen, ind: int, reason: str, path: str) -> None:
    g.emit(ind, f"raise CorruptRecordError({reason!r}, position=pos, path={path!r})")


_ZIGZAG1 = [(b >> 1) ^ -(b & 1) for b in range(128)]
_INT8 = [b - 256 if b > 127 else b for b in range(256)]


def _parse_uvarint(g: _Gen, ind: int, target: str, max_bytes: int, path: str,
                   zigzag_into: str | None = None) -> None:
    # The one-byte case dominates real data (and is a table lookup when the
    # value is zigzag); the loop is bounded like Kafka's ByteUtils.
    g.emit(ind, "b = buf[pos]; pos += 1")
    g.emit(ind, "if b < 0x80:")
    g.emit(ind + 1, f"{zigzag_into} = ZIGZAG1[b]" if zigzag_into else f"{target} = b")
    g.emit(ind, "else:")
    g.emit(ind + 1, f"{target} = b & 0x7F; sh = 7")
    g.emit(ind + 1, "while True:")
    g.emit(ind + 2, "b = buf[pos]; pos += 1")
    g.emit(ind + 2, f"{target} |= (b & 0x7F) << sh")
    g.emit(ind + 2, "if b < 0x80: break")
    g.emit(ind + 2, "sh += 7")
    g.emit(ind + 2, f"if sh >= {7 * max_bytes}:")
    _fail(g, ind + 3, f"varint longer than {max_bytes} bytes", path)
    limit = (1 << (32 if max_bytes <= 5 else 64)) - 1
    g.emit(ind + 1, f"if {target} > {limit}:")
    _fail(g, ind + 2, f"varint out of range for {max_bytes} bytes", path)
    if zigzag_into:
        g.emit(ind + 1, f"{zigzag_into} = ({target} >> 1) ^ -({target} & 1)")


def _parse(g: _Gen, con, target: str, ind: int, path: str, end: str, make: dict) -> None:
    kind, con = node_kind(con, path)
    if kind is FIXED:
        if con.fmtstr in (">b", "b"):
            g.emit(ind, f"{target} = INT8[buf[pos]]; pos += 1")
        else:
            s = struct.Struct(">" + con.fmtstr.lstrip("<>=!"))
            g.emit(ind, f"{target}, = {g.const(s.unpack_from)}(buf, pos); pos += {s.size}")
    elif kind is ZIGZAG:
        _parse_uvarint(g, ind, g.var("u"), con.unsigned.max_bytes, path, zigzag_into=target)
    elif kind is UVARINT:
        _parse_uvarint(g, ind, target, con.max_bytes, path)
    elif kind is SIZED:
        n = g.var("n")
        _parse(g, con.length, n, ind, path, end, make)
        decode = ".decode()" if con.text else ""
        emit_sized(g, PYTHON, con, target, n, ind, end, fail=lambda i, reason: _fail(g, i, reason, path),
                   take=lambda i: g.emit(i, f"{target} = buf[pos:pos + {n}]{decode}; pos += {n}"))
    elif kind is ARRAY:
        n = g.var("c")
        if isinstance(con, KArray):
            _parse(g, con.count, n, ind, path, end, make)
            if con.compact:
                g.emit(ind, f"{n} -= 1")
            g.emit(ind, f"if {n} < 0:")
            _fail(g, ind + 1, "invalid array count", path)
        else:
            g.emit(ind, f"{n} = count")   # the function's argument
        item, lst = g.var("i"), g.var("l")
        g.emit(ind, f"{lst} = []")
        g.emit(ind, f"for _ in range({n}):")
        _parse(g, con.subcon, item, ind + 1, path + "[]", end, make)
        g.emit(ind + 1, f"{lst}.append({item})")
        wrap = make.get(id(con))
        g.emit(ind, f"{target} = {wrap.format(lst) if wrap else lst}")
    elif kind is PREFIXED:
        n, sub_end = g.var("n"), g.var("e")
        _parse(g, con.lengthfield, n, ind, path, end, make)
        g.emit(ind, f"{sub_end} = pos + {n}")
        g.emit(ind, f"if {n} < 0 or {sub_end} > {end}:")
        _fail(g, ind + 1, "length runs past the end of its container", path)
        _parse(g, con.subcon, target, ind, path, sub_end, make)
    else:   # STRUCT
        fields = {}
        for sub in con.subcons:
            if is_terminator(sub):
                g.emit(ind, f"if pos != {end}:")
                _fail(g, ind + 1, "bytes remain after the last field", path)
                continue
            fields[sub.name] = g.var(sub.name)
            _parse(g, sub, fields[sub.name], ind, f"{path}.{sub.name}".lstrip("."), end, make)
        template = make.get(id(con))
        if callable(template):      # statements, e.g. filling a dataclass's slots
            for line in template(target, fields):
                g.emit(ind, line)
        else:
            value = template.format(**fields) if template else "(" + ", ".join(fields.values()) + ",)"
            g.emit(ind, f"{target} = {value}")


def derive_decoder(schema, *, args: str, make: dict, namespace: dict | None = None,
                   name: str = "decode") -> Callable:
    """Compile a decoder for ``schema``: ``name(buf, pos, end, <args>) -> (value, pos)``.

    ``make`` maps ``id(struct or array)`` to a format string building the
    output from the parsed fields (default: a tuple in field order), so records
    come out as kproto's own objects with no second pass.
    """
    g = _Gen()
    g.ns.update(namespace or {})
    g.emit(0, f"def {name}(buf, pos, end, {args}):")
    g.emit(1, "try:")
    _parse(g, schema, "result", 2, "", "end", make)
    g.emit(1, "except (IndexError, struct_error, UnicodeDecodeError) as e:")
    g.emit(2, "raise CorruptRecordError(f'truncated or invalid data ({type(e).__name__})', position=pos) from None")
    g.emit(1, "return result, pos")
    g.ns["struct_error"] = struct.error
    return g.compile(name, f"<kproto.fastpath:{name}>")


# --- encoding ---------------------------------------------------------------

def _build(g: _Gen, con, value: str, ind: int, out: str, access: dict) -> None:
    kind, con = node_kind(con)
    if kind is FIXED:
        s = struct.Struct(">" + con.fmtstr.lstrip("<>=!"))
        g.emit(ind, f"{out} += {g.const(s.pack)}({value})")
    elif kind is ZIGZAG or kind is UVARINT:
        v = g.var("v")
        if kind is ZIGZAG:
            g.emit(ind, f"{v} = {value}")
            g.emit(ind, f"if not {con.min} <= {v} <= {con.max}: raise OverflowError('varint out of range')")
            g.emit(ind, f"{v} = ({v} << 1) ^ ({v} >> {con.bits - 1})")
        else:
            g.emit(ind, f"{v} = {value}")
        g.emit(ind, f"if {v} < 16384:")
        g.emit(ind + 1, f"{out} += UVARINT[{v}]")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"while {v} >= 0x80:")
        g.emit(ind + 2, f"{out}.append(({v} & 0x7F) | 0x80); {v} >>= 7")
        g.emit(ind + 1, f"{out}.append({v})")
    elif kind is SIZED:
        d = g.var("d")
        g.emit(ind, f"{d} = {value}")
        g.emit(ind, f"if {d} is None:")
        if con.nullable:
            _build(g, con.length, "0" if con.compact else "-1", ind + 1, out, access)
        else:
            g.emit(ind + 1, "raise ValueError('null where a value is required')")
        g.emit(ind, "else:")
        if con.text:
            g.emit(ind + 1, f"{d} = {d}.encode()")
        _build(g, con.length, f"len({d}) + 1" if con.compact else f"len({d})", ind + 1, out, access)
        g.emit(ind + 1, f"{out} += {d}")
    elif kind is ARRAY:
        items, item, index = g.var("a"), g.var("it"), g.var("ix")
        g.emit(ind, f"{items} = {value}")
        if isinstance(con, KArray):
            _build(g, con.count, f"len({items}) + 1" if con.compact else f"len({items})", ind, out, access)
        g.emit(ind, f"for {index}, {item} in enumerate({items}):")
        g.index = index
        _build(g, con.subcon, item, ind + 1, out, access)
    elif kind is PREFIXED:
        body = g.var("body")
        g.emit(ind, f"{body} = bytearray()")
        _build(g, con.subcon, value, ind, body, access)
        _build(g, con.lengthfield, f"len({body})", ind, out, access)
        g.emit(ind, f"{out} += {body}")
    else:   # STRUCT
        exprs = access.get(id(con), {})
        for i, sub in enumerate(s for s in con.subcons if s.name):
            expr = exprs.get(sub.name, "{v}[%d]" % i)
            _build(g, sub, "(" + expr.format(v=value, i=getattr(g, "index", None)) + ")", ind, out, access)


def derive_encoder(schema, *, args: str, access: dict, namespace: dict | None = None,
                   name: str = "encode") -> Callable:
    """Compile ``name(out: bytearray, value, <args>)`` appending ``value`` built
    by ``schema``. ``access`` maps ``id(struct)`` to {field: expression on
    ``{v}``} saying where each field comes from (default: tuple index)."""
    g = _Gen()
    g.ns.update(namespace or {})
    g.emit(0, f"def {name}(out, value, {args}):")
    _build(g, schema, "value", 1, "out", access)
    g.emit(1, "return out")
    return g.compile(name, f"<kproto.fastpath:{name}>")
