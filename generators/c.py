"""A C translation of the record schema, for the hottest loop there is.

The Python translation in kproto.fastpath.python is near the interpreter's ceiling
(~2x kafka-python). This module walks the *same* schema nodes and writes C for
them, so the accelerator is derived from the schema like every other fast
path: ``python -m generators.c`` regenerates ``kproto/_crecords.c`` (committed,
so installs need no construct at build time) and tests/test_codegen_c.py fails
if the committed file drifts from what the schema generates. The extension is
checked equal to the schema path by tests/codec_check.py like the Python one.

Only what the record schema uses is translated; anything else raises.
"""

from __future__ import annotations

import struct
from pathlib import Path

from construct import Array

from kproto.fastpath.walk import (
    ARRAY, C, FIXED, INTEGERS, PREFIXED, SIZED, UVARINT, ZIGZAG, Writer, emit_sized, is_terminator, node_kind,
)
from kproto.schemas import records as S
from kproto.schemas.primitives import KArray

OUTPUT = Path(__file__).resolve().parent.parent / "kproto" / "_crecords.c"


class _CGen(Writer):
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


def _c_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fail(g: _CGen, ind: int, reason: str, path: str) -> None:
    g.emit(ind, f"{{ fail_reason = {_c_str(reason)}; fail_path = {_c_str(path)}; goto fail; }}")


def _uvarint(g: _CGen, ind: int, target: str, max_bytes: int, path: str) -> None:
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
           _c_str(f"varint out of range for {max_bytes} bytes") + f"; fail_path = {_c_str(path)}; goto fail; }}")
    g.emit(ind + 2, f"{target} |= (uint64_t)(b & 0x7F) << sh;")
    g.emit(ind + 2, "if (b < 0x80) break;")
    g.emit(ind + 2, "sh += 7;")
    g.emit(ind + 2, f"if (sh >= {7 * max_bytes})")
    _fail(g, ind + 3, f"varint longer than {max_bytes} bytes", path)
    g.emit(ind + 1, "}")
    if limit < 2**64 - 1:
        g.emit(ind + 1, f"if ({target} > {limit}ULL)")
        _fail(g, ind + 2, f"varint out of range for {max_bytes} bytes", path)
    g.emit(ind, "}")


def _int(g: _CGen, con, target: str, ind: int, path: str) -> None:
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


def _is_int(con) -> bool:
    return node_kind(con)[0] in INTEGERS


def _obj(g: _CGen, con, target: str, ind: int, path: str, end: str, make: dict) -> None:
    """Parse an object-valued node into the PyObject* ``target`` (a new reference)."""
    kind, con = node_kind(con, path)
    if kind is SIZED:
        n = g.int_var("n")
        _int(g, con.length, n, ind, path)

        def take(i: int) -> None:
            if g.skip:
                if con.text:    # still checked, as the full decoder would refuse it
                    g.emit(i, f"{{ PyObject *t = PyUnicode_DecodeUTF8((const char *)buf + pos, {n}, \"strict\");")
                    g.emit(i + 1, "if (!t) { if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) { PyErr_Clear(); fail_reason = \"truncated or invalid data (UnicodeDecodeError)\"; fail_path = NULL; goto fail; } goto error; }")
                    g.emit(i + 1, "Py_DECREF(t); }")
                g.emit(i, f"{target} = 0;")
            elif con.text:
                g.emit(i, f"{target} = PyUnicode_DecodeUTF8((const char *)buf + pos, {n}, \"strict\");")
                g.emit(i, f"if (!{target}) {{ if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {{ PyErr_Clear(); fail_reason = \"truncated or invalid data (UnicodeDecodeError)\"; fail_path = NULL; goto fail; }} goto error; }}")
            else:
                g.emit(i, f"{target} = PyBytes_FromStringAndSize((const char *)buf + pos, {n});")
                g.emit(i, f"if (!{target}) goto error;")
            g.emit(i, f"pos += {n};")

        emit_sized(g, C, con, target, n, ind, end, fail=lambda i, reason: _fail(g, i, reason, path), take=take,
                   null=f"{target} = 1;" if g.skip else None)
    elif kind is ARRAY:
        n = g.int_var("c")
        if isinstance(con, KArray):
            _int(g, con.count, n, ind, path)
            if con.compact:
                g.emit(ind, f"{n} -= 1;")
            g.emit(ind, f"if ({n} < 0)")
            _fail(g, ind + 1, "invalid array count", path)
        else:
            g.emit(ind, f"{n} = count;")
        if g.skip:
            i, item = g.int_var("i"), g.int_var("item")
            g.emit(ind, f"for ({i} = 0; {i} < {n}; {i}++) {{")
            _obj(g, con.subcon, item, ind + 1, path + "[]", end, make)
            g.emit(ind, "}")
            g.emit(ind, f"{target} = {n};")
            return
        as_tuple = make.get(id(con)) == "tuple({})"
        i, item = g.int_var("i"), g.obj_var("item")
        # Grown by appending, as the Python translation does: a count is never
        # trusted for an allocation, and failures land at the same byte.
        lst = g.obj_var("lst") if as_tuple else target
        g.emit(ind, f"{lst} = PyList_New(0);")
        g.emit(ind, f"if (!{lst}) goto error;")
        g.emit(ind, f"for ({i} = 0; {i} < {n}; {i}++) {{")
        _obj(g, con.subcon, item, ind + 1, path + "[]", end, make)
        g.emit(ind + 1, f"if (PyList_Append({lst}, {item}) < 0) goto error;")
        g.emit(ind + 1, f"Py_CLEAR({item});")
        g.emit(ind, "}")
        if as_tuple:
            g.emit(ind, f"{target} = PyList_AsTuple({lst}); Py_CLEAR({lst});")
            g.emit(ind, f"if (!{target}) goto error;")
    elif kind is PREFIXED:
        n, sub_end = g.int_var("n"), g.int_var("e")
        _int(g, con.lengthfield, n, ind, path)
        g.emit(ind, f"{sub_end} = pos + {n};")
        g.emit(ind, f"if ({n} < 0 || {sub_end} > {end})")
        _fail(g, ind + 1, "length runs past the end of its container", path)
        _obj(g, con.subcon, target, ind, path, sub_end, make)
    elif kind in INTEGERS:
        raise TypeError(f"codegen_c: no C form for {type(con).__name__} at {path or 'top'}")
    else:   # STRUCT
        fields: dict[str, tuple[str, bool]] = {}
        for sub in con.subcons:
            if is_terminator(sub):
                g.emit(ind, f"if (pos != {end})")
                _fail(g, ind + 1, "bytes remain after the last field", path)
                continue
            sub_path = f"{path}.{sub.name}".lstrip(".")
            if _is_int(sub):
                v = g.int_var(sub.name)
                _int(g, sub, v, ind, sub_path)
                fields[sub.name] = (v, True)
            else:
                v = g.int_var(sub.name) if g.skip else g.obj_var(sub.name)
                _obj(g, sub, v, ind, sub_path, end, make)
                fields[sub.name] = (v, g.skip)
        template = make.get(id(con))
        if g.skip and not callable(template):
            return
        if callable(template):
            for line in template(target, {k: v for k, (v, _) in fields.items()}):
                g.emit(ind, line)
        else:
            if any(is_int for _, is_int in fields.values()):
                raise TypeError("codegen_c: default tuple make supports object fields only")
            names = [v for v, _ in fields.values()]
            g.emit(ind, f"{target} = PyTuple_Pack({len(names)}, {', '.join(names)});")
            g.emit(ind, f"if (!{target}) goto error;")
            for v in names:
                g.emit(ind, f"Py_DECREF({v}); {v} = NULL;")


def _record_make(target: str, f: dict[str, str]) -> list[str]:
    # Slots of the frozen dataclass are filled directly, in Record.__slots__ order,
    # at offsets read from its member descriptors when the module loads.
    return [
        f"{target} = record_type->tp_alloc(record_type, 0);",
        f"if (!{target}) goto error;",
        f"SLOT({target}, 0) = PyLong_FromLongLong(base_offset + {f['offset_delta']});",
        f"SLOT({target}, 1) = PyLong_FromLongLong(lat_set ? lat : base_timestamp + {f['timestamp_delta']});",
        f"SLOT({target}, 2) = {f['key']}; {f['key']} = NULL;",
        f"SLOT({target}, 3) = {f['value']}; {f['value']} = NULL;",
        f"SLOT({target}, 4) = {f['headers']}; {f['headers']} = NULL;",
        f"SLOT({target}, 5) = PyLong_FromLongLong({f['attributes']});",
        f"if (!SLOT({target}, 0) || !SLOT({target}, 1) || !SLOT({target}, 5)) goto error;",
    ]


def _walk_make(target: str, f: dict[str, str]) -> list[str]:
    # What append validation needs of each record, without building it.
    return [
        f"if ({f['offset_delta']} != walked_n && bad_delta < 0) bad_delta = walked_n;",
        f"null_keys += {f['key']};",
        f"ts = base_timestamp + {f['timestamp_delta']};",
        "if (walked_n == 0 || ts < min_ts) min_ts = ts;",
        "if (walked_n == 0 || ts > max_ts) max_ts = ts;",
        "walked_n++;",
        f"{target} = 0;",
    ]


# --- encoding ---------------------------------------------------------------

def _put_uvarint(g: _CGen, ind: int, value: str) -> None:
    g.emit(ind, f"if (put_uvarint(out, (uint64_t)({value})) < 0) goto error;")


def _put_int(g: _CGen, con, value: str, ind: int) -> None:
    kind, con = node_kind(con)
    if not value.isidentifier() and not value.lstrip("-").isdigit():
        # Evaluate once; a failed conversion (e.g. an int beyond int64) leaves an exception.
        t = g.int_var("t")
        g.emit(ind, f"{t} = {value};")
        g.emit(ind, "if (PyErr_Occurred()) goto error;")
        value = t
    if kind is ZIGZAG:
        if con.bits < 64:
            g.emit(ind, f"if ({value} < {con.min}LL || {value} > {con.max}LL) {{ PyErr_SetString(PyExc_OverflowError, \"varint out of range\"); goto error; }}")
        _put_uvarint(g, ind, f"((uint64_t)({value}) << 1) ^ (uint64_t)((int64_t)({value}) >> {con.bits - 1})")
    elif kind is UVARINT:
        _put_uvarint(g, ind, value)
    elif kind is FIXED:
        size = struct.calcsize(con.fmtstr)
        g.emit(ind, f"if (put_be(out, (uint64_t)({value}), {size}) < 0) goto error;")
    else:
        raise TypeError(f"codegen_c: {type(con).__name__} is not an integer field")


def _put_obj(g: _CGen, con, value: str, ind: int, access: dict) -> None:
    """Append ``value`` (a borrowed PyObject*) as ``con`` to the buffer ``out``."""
    kind, con = node_kind(con)
    if kind is SIZED:
        n = g.int_var("n")
        g.emit(ind, f"if ({value} == Py_None) {{")
        if con.nullable:
            _put_int(g, con.length, "0" if con.compact else "-1", ind + 1)
        else:
            g.emit(ind + 1, "PyErr_SetString(PyExc_ValueError, \"null where a value is required\"); goto error;")
        g.emit(ind, "} else {")
        if con.text:
            p = next(g.ids)
            g.emit(ind + 1, f"const char *s{p} = PyUnicode_AsUTF8AndSize({value}, (Py_ssize_t *)&{n});")
            g.emit(ind + 1, f"if (!s{p}) goto error;")
            _put_int(g, con.length, f"{n} + 1" if con.compact else n, ind + 1)
            g.emit(ind + 1, f"if (put_bytes(out, s{p}, {n}) < 0) goto error;")
        else:
            g.emit(ind + 1, "{")
            g.emit(ind + 2, "Py_buffer v;")
            g.emit(ind + 2, f"if (PyObject_GetBuffer({value}, &v, PyBUF_SIMPLE) < 0) goto error;")
            g.emit(ind + 2, f"{n} = v.len;")
            _put_int(g, con.length, f"{n} + 1" if con.compact else n, ind + 2)
            g.emit(ind + 2, f"if (put_bytes(out, v.buf, {n}) < 0) {{ PyBuffer_Release(&v); goto error; }}")
            g.emit(ind + 2, "PyBuffer_Release(&v);")
            g.emit(ind + 1, "}")
        g.emit(ind, "}")
    elif kind is ARRAY:
        seq, i = g.obj_var("seq"), g.int_var("i")
        g.emit(ind, f"{seq} = PySequence_Fast({value}, \"expected a sequence\");")
        g.emit(ind, f"if (!{seq}) goto error;")
        if isinstance(con, KArray):
            count = f"PySequence_Fast_GET_SIZE({seq})"
            _put_int(g, con.count, f"{count} + 1" if con.compact else count, ind)
        g.emit(ind, f"for ({i} = 0; {i} < PySequence_Fast_GET_SIZE({seq}); {i}++) {{")
        g.index = i
        _put_obj(g, con.subcon, f"PySequence_Fast_GET_ITEM({seq}, {i})", ind + 1, access)
        g.emit(ind, "}")
        g.emit(ind, f"Py_CLEAR({seq});")
    elif kind is PREFIXED:
        # The body goes to scratch first: its length prefix comes before it.
        g.emit(ind, "{")
        g.emit(ind + 1, "Buf *outer = out; Buf *scratch = &scratches[depth++]; scratch->len = 0; out = scratch;")
        _put_obj(g, con.subcon, value, ind + 1, access)
        g.emit(ind + 1, "out = outer; depth--;")
        _put_int(g, con.lengthfield, "scratch->len", ind + 1)
        g.emit(ind + 1, "if (put_bytes(out, scratch->data, scratch->len) < 0) goto error;")
        g.emit(ind, "}")
    elif kind in INTEGERS:
        raise TypeError(f"codegen_c: no C form for {type(con).__name__}")
    else:   # STRUCT
        exprs = access.get(id(con), {})
        named = [s for s in con.subcons if s.name]
        pair = None
        if not exprs:      # a plain tuple of fields, e.g. a header (key, value)
            pair = g.obj_var("fields")
            g.emit(ind, f"{pair} = PySequence_Fast({value}, \"expected a tuple\");")
            g.emit(ind, f"if (!{pair}) goto error;")
            g.emit(ind, f"if (PySequence_Fast_GET_SIZE({pair}) != {len(named)}) {{ PyErr_SetString(PyExc_ValueError, \"expected {len(named)} fields\"); goto error; }}")
        for k, sub in enumerate(named):
            if pair:
                expr = f"PySequence_Fast_GET_ITEM({pair}, {k})"
            else:
                expr = exprs[sub.name](value, getattr(g, "index", "0"))
            if _is_int(sub):
                _put_int(g, sub, expr, ind)
            else:
                obj = g.obj_var(sub.name)
                if pair:
                    g.emit(ind, f"{obj} = {expr}; Py_INCREF({obj});")
                else:
                    g.emit(ind, f"{obj} = {expr};")
                    g.emit(ind, f"if (!{obj}) goto error;")
                _put_obj(g, sub, obj, ind, access)
                g.emit(ind, f"Py_CLEAR({obj});")
        if pair:
            g.emit(ind, f"Py_CLEAR({pair});")


# Where each record field comes from when encoding (C expressions on the item).
_RECORD_ACCESS = {
    "attributes": lambda v, i: "0",
    "timestamp_delta": lambda v, i: f"(record_timestamp({v}, now) - base_timestamp)",
    "offset_delta": lambda v, i: i,
    "key": lambda v, i: f"PyObject_GetAttr({v}, str_key)",
    "value": lambda v, i: f"PyObject_GetAttr({v}, str_value)",
    "headers": lambda v, i: f"PyObject_GetAttr({v}, str_headers)",
}


def _encoder() -> tuple[str, str, str]:
    g = _CGen()
    _put_obj(g, Array(0, S.Record), "records", 1, {id(S.RecordBody): _RECORD_ACCESS})
    return g, "\n".join(g.lines)


def _decls(g: _CGen) -> str:
    decls = []
    if g.ints:
        decls.append("    int64_t " + ", ".join(f"{v} = 0" for v in g.ints) + ";")
    if g.uints:
        decls.append("    uint64_t " + ", ".join(f"{v} = 0" for v in g.uints) + ";")
    if g.objs:
        decls.append("    PyObject *" + ", *".join(f"{v} = NULL" for v in g.objs) + ";")
    return "\n".join(decls)


def generate() -> str:
    from generators import cpacket
    from generators.cjson import generate_json      # it builds on this module's walk
    json_functions, json_methods = generate_json()
    json_functions, json_methods = json_functions + cpacket.TEMPLATE, json_methods + "\n" + cpacket.METHODS
    g = _CGen()
    headers_array = next(s for s in S.RecordBody.subcons if s.name == "headers").subcon
    make = {id(S.RecordBody): _record_make, id(headers_array): "tuple({})"}
    _obj(g, Array(0, S.Record), "result", 1, "", "len", make)
    body = "\n".join(g.lines)
    cleanup = "\n".join(f"    Py_XDECREF({v});" for v in g.objs)
    eg, ebody = _encoder()
    ecleanup = "\n".join(f"    Py_XDECREF({v});" for v in eg.objs)
    wg = _CGen(skip=True)
    walked = wg.int_var("walked")
    _obj(wg, Array(0, S.Record), walked, 1, "", "len", {id(S.RecordBody): _walk_make})
    return (_TEMPLATE.replace("@DECLS@", _decls(g)).replace("@BODY@", body).replace("@CLEANUP@", cleanup)
            .replace("@EDECLS@", _decls(eg)).replace("@EBODY@", ebody).replace("@ECLEANUP@", ecleanup)
            .replace("@WDECLS@", _decls(wg)).replace("@WBODY@", "\n".join(wg.lines))
            .replace("@WUNUSED@", "    " + " ".join(f"(void){v};" for v in wg.ints))
            .replace("@JSON@", json_functions).replace("@JSONMETHODS@", json_methods))


_TEMPLATE = r"""/* GENERATED by `python -m generators.c` from kproto/schemas/records.py.
 * Do not edit: regenerate. tests/test_codegen_c.py checks this file is current. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>

#define NSLOTS 6
static Py_ssize_t slot_offsets[NSLOTS];
#define SLOT(o, i) (*(PyObject **)((char *)(o) + slot_offsets[i]))

static PyTypeObject *record_type = NULL;
static PyObject *corrupt_error = NULL;
static PyObject *str_key, *str_value, *str_headers, *str_timestamp;

typedef struct { char *data; Py_ssize_t len, cap; } Buf;

static int
grow(Buf *b, Py_ssize_t need)
{
    if (b->len + need <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + need) cap *= 2;
    char *d = PyMem_Realloc(b->data, cap);
    if (!d) { PyErr_NoMemory(); return -1; }
    b->data = d; b->cap = cap;
    return 0;
}

static int
put_bytes(Buf *b, const void *p, Py_ssize_t n)
{
    if (grow(b, n) < 0) return -1;
    memcpy(b->data + b->len, p, n); b->len += n;
    return 0;
}

static int
put_uvarint(Buf *b, uint64_t v)
{
    if (grow(b, 10) < 0) return -1;
    while (v >= 0x80) { b->data[b->len++] = (char)((v & 0x7F) | 0x80); v >>= 7; }
    b->data[b->len++] = (char)v;
    return 0;
}

static int
put_be(Buf *b, uint64_t v, int size)
{
    if (grow(b, size) < 0) return -1;
    for (int i = size - 1; i >= 0; i--) b->data[b->len++] = (char)(v >> (8 * i));
    return 0;
}

/* Raise CorruptRecordError(reason, position=pos, path=path). */
static void
set_corrupt(const char *reason, const char *path, int64_t pos)
{
    PyObject *kw = Py_BuildValue("{s:L,s:s}", "position", (long long)pos, "path", path);
    PyObject *a = Py_BuildValue("(s)", reason);
    if (kw && a) {
        PyObject *exc = PyObject_Call(corrupt_error, a, kw);
        if (exc) { PyErr_SetObject(corrupt_error, exc); Py_DECREF(exc); }
    }
    Py_XDECREF(kw); Py_XDECREF(a);
}

/* The arguments every records-section entry point takes:
 * (buf, count, base_offset, base_timestamp, log_append_time or None).
 * 0 with `view` held (the caller releases it), -1 with an exception set. */
static int
records_args(PyObject *args, Py_buffer *view, Py_ssize_t *count, long long *base_offset,
             long long *base_timestamp, int *lat_set, int64_t *lat)
{
    PyObject *lat_obj;
    if (!PyArg_ParseTuple(args, "y*nLLO", view, count, base_offset, base_timestamp, &lat_obj))
        return -1;
    *lat_set = lat_obj != Py_None;
    *lat = 0;
    if (*lat_set) {
        *lat = PyLong_AsLongLong(lat_obj);
        if (*lat == -1 && PyErr_Occurred()) { PyBuffer_Release(view); return -1; }
    }
    return 0;
}

/* A record's timestamp, or `now` when it is None; -1 with an exception set on error. */
static int64_t
record_timestamp(PyObject *item, int64_t now)
{
    PyObject *t = PyObject_GetAttr(item, str_timestamp);
    if (!t) return 0;   /* the caller checks PyErr_Occurred() */
    int64_t v = t == Py_None ? now : PyLong_AsLongLong(t);
    Py_DECREF(t);
    return v;
}

/* decode_records(buf, count, base_offset, base_timestamp, log_append_time)
 * -> (list[Record], end_position); raises CorruptRecordError(reason, position=, path=). */
static PyObject *
decode_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_timestamp;
    PyObject *result = NULL;
    const char *fail_reason = NULL, *fail_path = NULL;
    int64_t lat;
    int lat_set, sh = 0;
    if (records_args(args, &view, &count, &base_offset, &base_timestamp, &lat_set, &lat) < 0)
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    int64_t len = view.len, pos = 0;
    unsigned int b = 0;
@DECLS@
@BODY@
@CLEANUP@
    PyBuffer_Release(&view);
    return Py_BuildValue("(NL)", result, (long long)pos);
truncated:
    fail_reason = "truncated or invalid data (IndexError)";
    fail_path = NULL;
fail:
    set_corrupt(fail_reason, fail_path, pos);
error:
@CLEANUP@
    Py_XDECREF(result);
    PyBuffer_Release(&view);
    return NULL;
}

/* walk_records(buf, count, base_timestamp) -> (end_position, first_bad_offset_delta or -1,
 * null_keys, min_timestamp, max_timestamp): every record read and checked as decode_records
 * does, none built (Kafka's skipKeyValueIterator); raises CorruptRecordError alike. */
static PyObject *
walk_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_timestamp;
    const char *fail_reason = NULL, *fail_path = NULL;
    if (!PyArg_ParseTuple(args, "y*nL", &view, &count, &base_timestamp))
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    int64_t len = view.len, pos = 0, walked_n = 0, bad_delta = -1, null_keys = 0, ts = 0, min_ts = -1, max_ts = -1;
    int sh = 0;
    unsigned int b = 0;
@WDECLS@
@WBODY@
@WUNUSED@
    PyBuffer_Release(&view);
    return Py_BuildValue("(LLLLL)", (long long)pos, (long long)bad_delta, (long long)null_keys,
                         (long long)min_ts, (long long)max_ts);
truncated:
    fail_reason = "truncated or invalid data (IndexError)";
    fail_path = NULL;
fail:
    set_corrupt(fail_reason, fail_path, pos);
error:
    PyBuffer_Release(&view);
    return NULL;
}

/* encode_records(records, base_timestamp, now) -> bytes: the records part of a v2 batch.
 * Items have .key, .value, .headers ((str, bytes|None) pairs) and .timestamp (None = now). */
static PyObject *
encode_records(PyObject *self, PyObject *args)
{
    PyObject *records;
    long long base_timestamp, now;
    Buf scratches[4] = {{0}}, main_buf = {0};
    Buf *out = &main_buf;
    int depth = 0;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OLL", &records, &base_timestamp, &now))
        return NULL;
@EDECLS@
@EBODY@
    if (PyErr_Occurred()) goto error;   /* a timestamp that failed to convert */
    result = PyBytes_FromStringAndSize(main_buf.data ? main_buf.data : "", main_buf.len);
error:
@ECLEANUP@
    PyMem_Free(main_buf.data);
    for (int k = 0; k < 4; k++) PyMem_Free(scratches[k].data);
    (void)depth;
    return result;
}

/* init(record_type, corrupt_error_class): record the slot offsets of the frozen dataclass. */
static PyObject *
init(PyObject *self, PyObject *args)
{
    PyObject *type, *err;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &type, &err))
        return NULL;
    PyObject *slots = PyObject_GetAttrString(type, "__slots__");
    if (!slots) return NULL;
    PyObject *fast = PySequence_Fast(slots, "__slots__ must be a sequence");
    Py_DECREF(slots);
    if (!fast) return NULL;
    if (PySequence_Fast_GET_SIZE(fast) != NSLOTS) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_TypeError, "Record must have exactly 6 slots");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < NSLOTS; i++) {
        PyObject *descr = PyObject_GetAttr(type, PySequence_Fast_GET_ITEM(fast, i));
        if (!descr) { Py_DECREF(fast); return NULL; }
        if (Py_TYPE(descr) != &PyMemberDescr_Type) {
            Py_DECREF(descr); Py_DECREF(fast);
            PyErr_SetString(PyExc_TypeError, "Record slots must be member descriptors");
            return NULL;
        }
        slot_offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
    }
    Py_DECREF(fast);
    Py_XINCREF(type); Py_XSETREF(record_type, (PyTypeObject *)type);
    Py_XINCREF(err); Py_XSETREF(corrupt_error, err);
    if (!str_key) {
        str_key = PyUnicode_InternFromString("key");
        str_value = PyUnicode_InternFromString("value");
        str_headers = PyUnicode_InternFromString("headers");
        str_timestamp = PyUnicode_InternFromString("timestamp");
    }
    Py_RETURN_NONE;
}

@JSON@
static PyMethodDef methods[] = {
    {"decode_records", decode_records, METH_VARARGS, "Decode v2 records (generated from the schema)."},
    {"encode_records", encode_records, METH_VARARGS, "Encode v2 records (generated from the schema)."},
    {"walk_records", walk_records, METH_VARARGS, "Check v2 records without building them (generated from the schema)."},
@JSONMETHODS@
    {"init", init, METH_VARARGS, "Bind the Record type and the error class."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_crecords", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__crecords(void)
{
    crc_init();
    return PyModule_Create(&module);
}
"""


if __name__ == "__main__":
    OUTPUT.write_text(generate())
    print(f"wrote {OUTPUT}")
