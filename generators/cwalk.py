"""What the C generators share: the C writer and the reads of integer fields.

``generators.c`` (records as Python objects) and ``generators.cjson`` (records
as JSON text) both walk the record schema with these.
"""

from __future__ import annotations

import struct

from kproto.fastpath.walk import FIXED, INTEGERS, UVARINT, ZIGZAG, Writer, node_kind

__all__ = ["CGen", "c_str", "decls", "emit_fail", "is_int", "read_int"]


class CGen(Writer):
    """C lines, and the C variables they need declared (int64, uint64, PyObject*)."""

    def __init__(self, skip: bool = False) -> None:
        super().__init__()
        # skip: walk and check every byte but build no object (Kafka's
        # skipKeyValueIterator); a Sized gives 1 if null else 0, an array its count.
        self.skip = skip
        self.ints: list[str] = []
        self.uints: list[str] = []
        self.objs: list[str] = []

    def int_var(self, stem: str) -> str:
        v = self.var(stem)
        self.ints.append(v)
        return v

    def uint_var(self, stem: str) -> str:
        v = self.var(stem)
        self.uints.append(v)
        return v

    def obj_var(self, stem: str) -> str:
        v = self.var(stem)
        self.objs.append(v)
        return v


def c_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def emit_fail(g: CGen, ind: int, reason: str, path: str) -> None:
    g.emit(ind, f"{{ fail_reason = {c_str(reason)}; fail_path = {c_str(path)}; goto fail; }}")


def _uvarint(g: CGen, ind: int, target: str, max_bytes: int, path: str) -> None:
    limit = (1 << (32 if max_bytes <= 5 else 64)) - 1
    g.emit(ind, "if (pos >= len) goto truncated;")
    g.emit(ind, "b = buf[pos++];")
    g.emit(ind, f"if (b < 0x80) {target} = b;")
    g.emit(ind, "else {")
    g.emit(ind + 1, f"{target} = b & 0x7F; sh = 7;")
    g.emit(ind + 1, "for (;;) {")
    g.emit(ind + 2, "if (pos >= len) goto truncated;")
    g.emit(ind + 2, "b = buf[pos++];")
    g.emit(ind + 2, "if (sh == 63 && (b & 0x7E)) " + "{ fail_reason = " +
           c_str(f"varint out of range for {max_bytes} bytes") + f"; fail_path = {c_str(path)}; goto fail; }}")
    g.emit(ind + 2, f"{target} |= (uint64_t)(b & 0x7F) << sh;")
    g.emit(ind + 2, "if (b < 0x80) break;")
    g.emit(ind + 2, "sh += 7;")
    g.emit(ind + 2, f"if (sh >= {7 * max_bytes})")
    emit_fail(g, ind + 3, f"varint longer than {max_bytes} bytes", path)
    g.emit(ind + 1, "}")
    if limit < 2**64 - 1:
        g.emit(ind + 1, f"if ({target} > {limit}ULL)")
        emit_fail(g, ind + 2, f"varint out of range for {max_bytes} bytes", path)
    g.emit(ind, "}")


def read_int(g: CGen, con, target: str, ind: int, path: str) -> None:
    """Parse an integer-valued node into the int64 ``target``."""
    kind, con = node_kind(con, path)
    if kind is ZIGZAG:
        u = g.uint_var("u")
        _uvarint(g, ind, u, con.unsigned.max_bytes, path)
        g.emit(ind, f"{target} = (int64_t)({u} >> 1) ^ -(int64_t)({u} & 1);")
    elif kind is UVARINT:
        u = g.uint_var("u")
        _uvarint(g, ind, u, con.max_bytes, path)
        g.emit(ind, f"{target} = (int64_t){u};")
    elif kind is FIXED:
        size = struct.calcsize(con.fmtstr)
        signed = con.fmtstr[-1].islower()
        ctype = {1: "int8_t", 2: "int16_t", 4: "int32_t", 8: "int64_t"}[size]
        utype = "u" + ctype
        g.emit(ind, f"if (pos + {size} > len) goto truncated;")
        expr = " | ".join(f"((uint64_t)buf[pos + {i}] << {8 * (size - 1 - i)})" for i in range(size))
        g.emit(ind, f"{target} = ({'(int64_t)(' + ctype + ')' if signed else '(int64_t)'}({utype})({expr})); pos += {size};")
    else:
        raise TypeError(f"codegen_c: {type(con).__name__} is not an integer field")


def is_int(con) -> bool:
    return node_kind(con)[0] in INTEGERS


def decls(g: CGen) -> str:
    decls = []
    if g.ints:
        decls.append("    int64_t " + ", ".join(f"{v} = 0" for v in g.ints) + ";")
    if g.uints:
        decls.append("    uint64_t " + ", ".join(f"{v} = 0" for v in g.uints) + ";")
    if g.objs:
        decls.append("    PyObject *" + ", *".join(f"{v} = NULL" for v in g.objs) + ";")
    return "\n".join(decls)
