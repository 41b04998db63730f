"""A C translation of the record schema, for the hottest loop there is.

The Python translation in kproto.fastpath.python is near the interpreter's ceiling
(~2x kafka-python). This module walks the *same* schema nodes and writes C for
them, so the accelerator is derived from the schema like every other fast
path: ``python -m generators.c`` regenerates ``csrc/records_generated.c``
(committed, so installs need no construct at build time), which setup.py
compiles with the hand-written C beside it (csrc/*.c, crecords.h) into
``kproto._crecords``; tests/records/test_codegen_c.py fails if the committed file
drifts from what the schema generates. The extension is
checked equal to the schema path by tests/records/codec_check.py like the Python one.

Only what the record schema uses is translated; anything else raises.
"""

from __future__ import annotations

import struct
from pathlib import Path

from construct import Array

from generators.cjson import generate_json
from generators.cwalk import CGen, decls, emit_fail, is_int, read_int
from kproto.fastpath.walk import (
    ARRAY, C, FIXED, INTEGERS, PREFIXED, SIZED, UVARINT, ZIGZAG, emit_sized, is_terminator, node_kind,
)
from kproto.schemas import records as S
from kproto.schemas.primitives import KArray

OUTPUT = Path(__file__).resolve().parent.parent / "csrc" / "records_generated.c"


def _obj(g: CGen, con, target: str, ind: int, path: str, end: str, make: dict) -> None:
    """Parse an object-valued node into the PyObject* ``target`` (a new reference)."""
    kind, con = node_kind(con, path)
    if kind is SIZED:
        n = g.int_var("n")
        read_int(g, con.length, n, ind, path)

        def take(i: int) -> None:
            if g.skip:
                if con.text:    # still checked, as the full decoder would refuse it
                    g.emit(i, f"{{ PyObject *t = decode_text((const char *)buf + pos, {n});")
                    g.emit(i + 1, "if (!t) { if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) { PyErr_Clear(); fail_reason = \"truncated or invalid data (UnicodeDecodeError)\"; fail_path = NULL; goto fail; } goto error; }")
                    g.emit(i + 1, "Py_DECREF(t); }")
                g.emit(i, f"{target} = 0;")
            elif con.text:
                g.emit(i, f"{target} = decode_text((const char *)buf + pos, {n});")
                g.emit(i, f"if (!{target}) {{ if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {{ PyErr_Clear(); fail_reason = \"truncated or invalid data (UnicodeDecodeError)\"; fail_path = NULL; goto fail; }} goto error; }}")
            else:
                g.emit(i, f"{target} = PyBytes_FromStringAndSize((const char *)buf + pos, {n});")
                g.emit(i, f"if (!{target}) goto error;")
            g.emit(i, f"pos += {n};")

        emit_sized(g, C, con, target, n, ind, end, fail=lambda i, reason: emit_fail(g, i, reason, path), take=take,
                   null=f"{target} = 1;" if g.skip else None)
    elif kind is ARRAY:
        n = g.int_var("c")
        if isinstance(con, KArray):
            read_int(g, con.count, n, ind, path)
            if con.compact:
                g.emit(ind, f"{n} -= 1;")
            g.emit(ind, f"if ({n} < 0)")
            emit_fail(g, ind + 1, "invalid array count", path)
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
        i, item, cap = g.int_var("i"), g.obj_var("item"), g.int_var("cap")
        # Allocated once at its final size (no list grown then copied to a tuple), yet
        # a count is never trusted for an allocation: an item that parses ends inside
        # the container after at least one byte, so min(count, bytes left + 1) slots
        # hold every item before the one that fails, at the byte where the Python
        # translation's appends fail too (the guard below cannot fire).
        g.emit(ind, f"{cap} = {end} - pos > 0 ? {end} - pos + 1 : 1;")
        g.emit(ind, f"if ({n} < {cap}) {cap} = {n} < 0 ? 0 : {n};")
        new = "PyTuple_New" if as_tuple else "PyList_New"
        put = "PyTuple_SET_ITEM" if as_tuple else "PyList_SET_ITEM"
        g.emit(ind, f"{target} = {new}({cap});")
        g.emit(ind, f"if (!{target}) goto error;")
        g.emit(ind, f"for ({i} = 0; {i} < {n}; {i}++) {{")
        g.emit(ind + 1, f"if ({i} >= {cap}) goto truncated;")
        _obj(g, con.subcon, item, ind + 1, path + "[]", end, make)
        g.emit(ind + 1, f"{put}({target}, {i}, {item}); {item} = NULL;")
        g.emit(ind, "}")
    elif kind is PREFIXED:
        n, sub_end = g.int_var("n"), g.int_var("e")
        read_int(g, con.lengthfield, n, ind, path)
        g.emit(ind, f"{sub_end} = pos + {n};")
        g.emit(ind, f"if ({n} < 0 || {sub_end} > {end})")
        emit_fail(g, ind + 1, "length runs past the end of its container", path)
        _obj(g, con.subcon, target, ind, path, sub_end, make)
    elif kind in INTEGERS:
        raise TypeError(f"codegen_c: no C form for {type(con).__name__} at {path or 'top'}")
    else:   # STRUCT
        fields: dict[str, tuple[str, bool]] = {}
        for sub in con.subcons:
            if is_terminator(sub):
                g.emit(ind, f"if (pos != {end})")
                emit_fail(g, ind + 1, "bytes remain after the last field", path)
                continue
            sub_path = f"{path}.{sub.name}".lstrip(".")
            if is_int(sub):
                v = g.int_var(sub.name)
                read_int(g, sub, v, ind, sub_path)
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
            # PyTuple_New and the items moved in: PyTuple_Pack's varargs and its
            # reference traffic cost a third of a header's decode
            g.emit(ind, f"{target} = PyTuple_New({len(names)});")
            g.emit(ind, f"if (!{target}) goto error;")
            for k, v in enumerate(names):
                g.emit(ind, f"PyTuple_SET_ITEM({target}, {k}, {v}); {v} = NULL;")


def _record_make(target: str, f: dict[str, str]) -> list[str]:
    # Slots of the frozen dataclass are filled directly, in Record.__slots__ order,
    # at offsets read from its member descriptors when the module loads; a record
    # from record_new() is untracked until they are all set.
    return [
        f"{target} = record_new();",
        f"if (!{target}) goto error;",
        f"SLOT({target}, 0) = PyLong_FromLongLong(base_offset + {f['offset_delta']});",
        f"SLOT({target}, 1) = PyLong_FromLongLong(lat_set ? lat : base_timestamp + {f['timestamp_delta']});",
        f"SLOT({target}, 2) = {f['key']}; {f['key']} = NULL;",
        f"SLOT({target}, 3) = {f['value']}; {f['value']} = NULL;",
        f"SLOT({target}, 4) = {f['headers']}; {f['headers']} = NULL;",
        f"SLOT({target}, 5) = PyLong_FromLongLong({f['attributes']});",
        f"if (!SLOT({target}, 0) || !SLOT({target}, 1) || !SLOT({target}, 5)) goto error;",
        f"PyObject_GC_Track({target});",
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

def _put_uvarint(g: CGen, ind: int, value: str) -> None:
    g.emit(ind, f"if (put_uvarint(out, (uint64_t)({value})) < 0) goto error;")


def _put_int(g: CGen, con, value: str, ind: int) -> None:
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


def _put_obj(g: CGen, con, value: str, ind: int, access: dict) -> None:
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
            g.emit(ind + 2, f"if (get_bytes({value}, &v) < 0) goto error;")
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
            if is_int(sub):
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
    "timestamp_delta": lambda v, i: f"(record_timestamp_max({v}, now, &max_ts, &ts_seen) - base_timestamp)",
    "offset_delta": lambda v, i: i,
    "key": lambda v, i: f"record_field({v}, F_KEY)",
    "value": lambda v, i: f"record_field({v}, F_VALUE)",
    "headers": lambda v, i: f"record_field({v}, F_HEADERS)",
}


def _encoder() -> tuple[str, str, str]:
    g = CGen()
    _put_obj(g, Array(0, S.Record), "records", 1, {id(S.RecordBody): _RECORD_ACCESS})
    return g, "\n".join(g.lines)


def generate() -> str:
    json_functions = generate_json()
    g = CGen()
    headers_array = next(s for s in S.RecordBody.subcons if s.name == "headers").subcon
    make = {id(S.RecordBody): _record_make, id(headers_array): "tuple({})"}
    _obj(g, Array(0, S.Record), "result", 1, "", "len", make)
    body = "\n".join(g.lines)
    cleanup = "\n".join(f"    Py_XDECREF({v});" for v in g.objs)
    eg, ebody = _encoder()
    ecleanup = "\n".join(f"    Py_XDECREF({v});" for v in eg.objs)
    wg = CGen(skip=True)
    walked = wg.int_var("walked")
    _obj(wg, Array(0, S.Record), walked, 1, "", "len", {id(S.RecordBody): _walk_make})
    return (_TEMPLATE.replace("@DECLS@", decls(g)).replace("@BODY@", body).replace("@CLEANUP@", cleanup)
            .replace("@EDECLS@", decls(eg)).replace("@EBODY@", ebody).replace("@ECLEANUP@", ecleanup)
            .replace("@WDECLS@", decls(wg)).replace("@WBODY@", "\n".join(wg.lines))
            .replace("@WUNUSED@", "    " + " ".join(f"(void){v};" for v in wg.ints))
            .replace("@JSON@", json_functions))


_TEMPLATE = r"""/* GENERATED by `python -m generators.c` from kproto/schemas/records.py.
 * Do not edit: regenerate. tests/records/test_codegen_c.py checks this file is current.
 * The hand-written rest of kproto._crecords is beside it in csrc/ (crecords.h says what is where). */
#include "crecords.h"

/* decode_records(buf, count, base_offset, base_timestamp, log_append_time)
 * -> (list[Record], end_position); raises CorruptRecordError(reason, position=, path=). */
PyObject *
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
PyObject *
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

/* encode_records(records, base_timestamp, now) -> (bytes, max_timestamp): the records part of a
 * v2 batch and the largest record timestamp (-1 for none), the batch header's maxTimestamp.
 * Items have .key, .value, .headers ((str, bytes|None) pairs) and .timestamp (None = now). */
PyObject *
encode_records(PyObject *self, PyObject *args)
{
    PyObject *records;
    long long base_timestamp, now;
    Buf scratches[4] = {{0}}, main_buf = {0};
    Buf *out = &main_buf;
    int depth = 0;
    PyObject *result = NULL;
    int64_t max_ts = -1;
    int ts_seen = 0;
    if (!PyArg_ParseTuple(args, "OLL", &records, &base_timestamp, &now))
        return NULL;
@EDECLS@
@EBODY@
    if (PyErr_Occurred()) goto error;   /* a timestamp that failed to convert */
    result = Py_BuildValue("(y#L)", main_buf.data ? main_buf.data : "", (Py_ssize_t)main_buf.len,
                           (long long)max_ts);
error:
@ECLEANUP@
    PyMem_Free(main_buf.data);
    for (int k = 0; k < 4; k++) PyMem_Free(scratches[k].data);
    (void)depth;
    return result;
}

@JSON@"""


if __name__ == "__main__":
    OUTPUT.write_text(generate())
    print(f"wrote {OUTPUT}")
