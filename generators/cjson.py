"""The record schema translated to C that writes JSON text, for ``kproto decode --json``.

``generators.c`` walks the record schema into C that builds Python objects;
this walks the same nodes into C that appends, for each record, the JSON text
``kproto.capture.jsonout`` renders from those objects (keys and values as
padded base64, header keys as ``json.dumps`` escapes them, ensure_ascii), with
no Python object per record. Generic rules: a sized field is base64 text (a
string field escaped text), null is ``null``, an array or a struct without a
layout of its own is a JSON array; the record struct's layout (``_RECORD``)
says what goes before each of its fields. The batch header is read by the
same walk, and its JSON layout mirrors ``kproto.capture.body._v2``.
Both go into csrc/records_generated.c through ``generators.c``; the helpers
they call (base64, JSON string escapes, CRC-32C) are csrc/json.c and crc32c.c;
tests/capture/test_capture_json_c.py checks C == Python.
"""

from __future__ import annotations

from construct import Array

from generators.cwalk import CGen, decls, emit_fail, is_int, read_int
from kproto.fastpath.walk import ARRAY, C, PREFIXED, SIZED, emit_sized, is_terminator, node_kind
from kproto.schemas import records as S
from kproto.schemas.primitives import KArray

__all__ = ["generate_json"]


def _lit(text: str) -> str:
    return "PUT_LIT(out, " + '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '");'


def _json(g: CGen, con, ind: int, path: str, end: str, layout: dict) -> None:
    """Append ``con``'s JSON text to ``out``, reading it from ``buf`` at ``pos``."""
    kind, con = node_kind(con, path)
    if kind is SIZED:
        n = g.int_var("n")
        read_int(g, con.length, n, ind, path)

        def take(i: int) -> None:
            if con.text:
                g.emit(i, f"switch (put_json_text(out, buf + pos, {n})) {{")
                g.emit(i + 1, "case -1: goto error;")
                g.emit(i + 1, "case -2: { fail_reason = \"truncated or invalid data (UnicodeDecodeError)\"; "
                              "fail_path = NULL; goto fail; }")
                g.emit(i, "}")
            else:
                g.emit(i, f"if (put_b64(out, buf + pos, {n}) < 0) goto error;")
            g.emit(i, f"pos += {n};")

        emit_sized(g, C, con, "", n, ind, end, fail=lambda i, reason: emit_fail(g, i, reason, path), take=take,
                   null=_lit("null"))
    elif kind is ARRAY:
        n, i = g.int_var("c"), g.int_var("i")
        if isinstance(con, KArray):
            read_int(g, con.count, n, ind, path)
            if con.compact:
                g.emit(ind, f"{n} -= 1;")
            g.emit(ind, f"if ({n} < 0)")
            emit_fail(g, ind + 1, "invalid array count", path)
        else:
            g.emit(ind, f"{n} = count;")
        g.emit(ind, _lit("["))
        g.emit(ind, f"for ({i} = 0; {i} < {n}; {i}++) {{")
        g.emit(ind + 1, f"if ({i}) " + _lit(","))
        _json(g, con.subcon, ind + 1, path + "[]", end, layout)
        g.emit(ind, "}")
        g.emit(ind, _lit("]"))
    elif kind is PREFIXED:
        n, sub_end = g.int_var("n"), g.int_var("e")
        read_int(g, con.lengthfield, n, ind, path)
        g.emit(ind, f"{sub_end} = pos + {n};")
        g.emit(ind, f"if ({n} < 0 || {sub_end} > {end})")
        emit_fail(g, ind + 1, "length runs past the end of its container", path)
        _json(g, con.subcon, ind, path, sub_end, layout)
    else:   # STRUCT
        before = layout.get(id(con))
        ints: dict[str, str] = {}
        first = True
        for sub in con.subcons:
            if is_terminator(sub):
                g.emit(ind, f"if (pos != {end})")
                emit_fail(g, ind + 1, "bytes remain after the last field", path)
                continue
            sub_path = f"{path}.{sub.name}".lstrip(".")
            if before is None:      # a plain struct: a JSON array of its fields
                g.emit(ind, _lit("[" if first else ","))
                first = False
            if is_int(sub):
                v = ints[sub.name] = g.int_var(sub.name)
                read_int(g, sub, v, ind, sub_path)
                if before is None:
                    g.emit(ind, f"if (put_int(out, {v}) < 0) goto error;")
            else:
                for line in (before(sub.name, ints) if before else ()):
                    g.emit(ind, line)
                _json(g, sub, ind, sub_path, end, layout)
        for line in (before(None, ints) if before else [_lit("]")]):
            g.emit(ind, line)


def _record(field: str | None, f: dict[str, str]) -> list[str]:
    """What goes before each object field of a record (None: after the last),
    as ``jsonout._RECORD`` lays a record out."""
    if field == "key":
        return [_lit('{"offset":'), f"if (put_int(out, base_offset + {f['offset_delta']}) < 0) goto error;",
                _lit(',"timestamp":'),
                f"if (put_int(out, lat_set ? lat : base_timestamp + {f['timestamp_delta']}) < 0) goto error;",
                _lit(',"key":')]
    return [_lit("}")] if field is None else [_lit(f',"{field}":')]


# body._v2's keys that are not header fields, and the field each follows
_AFTER = {"crc": ['"crc_valid":true'], "attributes": ["@FLAGS@", '"control":false']}


def _batch_header(g: CGen) -> list[str]:
    """Read the v2 header at ``pos`` into int64 ``h_<name>`` variables and
    return the C lines that append the batch's JSON up to ``"records":``."""
    out = []
    sep = "{"
    for sub in S.RecordBatchHeader.subcons:
        v = f"h_{sub.name}"
        g.ints.append(v)
        read_int(g, sub, v, 1, sub.name)
        out += [_lit(f'{sep}"{sub.name}":'), f"if (put_int(out, {v}) < 0) goto error;"]
        sep = ","
        for extra in _AFTER.get(sub.name, ()):
            out.append("if (put_bytes(out, flags, flags_len) < 0) goto error;" if extra == "@FLAGS@"
                       else _lit("," + extra))
    out.append(_lit(',"records":'))
    return out


def generate_json() -> str:
    """The C functions of the JSON writers (their helpers are csrc/json.c)."""
    g = CGen()
    _json(g, Array(0, S.Record), 1, "", "len", {id(S.RecordBody): _record})
    hg = CGen()
    head = _batch_header(hg)
    return (_TEMPLATE.replace("@DECLS@", decls(g)).replace("@UNUSED@", "    " + " ".join(f"(void){v};" for v in g.ints)).replace("@BODY@", "\n".join(g.lines))
            .replace("@HDECLS@", decls(hg)).replace("@HBODY@", "\n".join(hg.lines))
            .replace("@HJSON@", "\n".join("        " + line for line in head))
            .replace("@MAGIC@", str(S.MAGIC_OFFSET)).replace("@LENGTH@", str(S.LENGTH_OFFSET))
            .replace("@LOG_OVERHEAD@", str(S.LOG_OVERHEAD)).replace("@LEGACY_MIN@", str(S.LEGACY_OVERHEAD[0]))
            .replace("@RECORDS@", str(S.RECORD_BATCH_OVERHEAD)).replace("@CRC_FROM@", str(S.V2_CRC_FROM)))


_TEMPLATE = r"""
/* --- JSON text (generators.cjson) ----------------------------------- */

/* The JSON array of the v2 records in buf[0:len]: 0, or -1 with a Python
 * error set, or 1 when they are corrupt (*reason, *path, *end at the byte). */
int
emit_records_json(Buf *out, const unsigned char *buf, int64_t len, int64_t count, int64_t base_offset,
                  int64_t base_timestamp, int lat_set, int64_t lat, int64_t *end,
                  const char **reason, const char **where)
{
    int64_t pos = 0;
    int sh = 0;
    unsigned int b = 0;
    const char *fail_reason = NULL, *fail_path = NULL;
@DECLS@
@BODY@
@UNUSED@
    *end = pos;
    return 0;
truncated:
    fail_reason = "truncated or invalid data (IndexError)";
    fail_path = NULL;
fail:
    *reason = fail_reason; *where = fail_path; *end = pos;
    return 1;
error:
    return -1;
}

/* batches_json(raw, flags) -> str or None: a RECORDS field as the JSON list
 * kproto.capture.body renders, when every batch is a complete, uncompressed, non-control
 * v2 batch with a valid CRC and sound records (a cut-off tail is allowed); None for
 * anything else, which the Python path renders with its warnings. flags[i]: the JSON
 * of compression, timestamp_type and transactional for (timestamp bit, transactional bit) = i. */
PyObject *
batches_json(PyObject *self, PyObject *args)
{
    Py_buffer view;
    PyObject *flag_texts, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*O!", &view, &PyTuple_Type, &flag_texts))
        return NULL;
    const unsigned char *buf = view.buf;
    int64_t len = view.len, pos = 0, start = 0, end = 0;
    int sh = 0;
    unsigned int b = 0;
    const char *fail_reason = NULL, *fail_path = NULL, *reason, *where;
    Buf out_buf = {0};
    Buf *out = &out_buf;
    (void)sh; (void)b; (void)fail_reason; (void)fail_path;
@HDECLS@
    if (PyTuple_GET_SIZE(flag_texts) != 4) { PyErr_SetString(PyExc_ValueError, "4 flag texts expected"); goto error; }
    if (grow(out, 2 * len + 64) < 0) goto error;       /* base64 and keys: about twice the input */
    PUT_LIT(out, "[");
    while (start < len) {
        int64_t length, size;
        if (len - start < @MAGIC@ + 1) break;                                /* a cut-off tail */
        length = (int32_t)(((uint32_t)buf[start + @LENGTH@] << 24) | ((uint32_t)buf[start + @LENGTH@ + 1] << 16)
                           | ((uint32_t)buf[start + @LENGTH@ + 2] << 8) | buf[start + @LENGTH@ + 3]);
        size = length + @LOG_OVERHEAD@;
        if (length < @LEGACY_MIN@ || buf[start + @MAGIC@] != 2 || size < @RECORDS@)
            goto other;                                                     /* legacy or corrupt */
        if (start + size > len) break;
        pos = start;
@HBODY@
        if ((h_attributes & 0x27) || h_records_count < 0) goto other;       /* compressed, control */
        if ((int64_t)crc32c_of(buf + start + @CRC_FROM@, size - @CRC_FROM@) != h_crc) goto other;
        PyObject *flag = PyTuple_GET_ITEM(flag_texts, ((h_attributes >> 3) & 1) | ((h_attributes >> 3) & 2));
        if (!PyBytes_Check(flag)) { PyErr_SetString(PyExc_TypeError, "flag texts must be bytes"); goto error; }
        const char *flags = PyBytes_AS_STRING(flag);
        Py_ssize_t flags_len = PyBytes_GET_SIZE(flag);
        if (start) PUT_LIT(out, ",");
@HJSON@
        switch (emit_records_json(out, buf + start + @RECORDS@, size - @RECORDS@, h_records_count, h_base_offset,
                                  h_base_timestamp, (h_attributes & 0x08) != 0, h_max_timestamp, &end,
                                  &reason, &where)) {
        case -1: goto error;
        case 1: goto other;
        }
        if (end != size - @RECORDS@) goto other;
        PUT_LIT(out, "}");
        start += size;
    }
    if (start < len) {
        if (start) PUT_LIT(out, ",");
        PUT_LIT(out, "{\"partial_batch_bytes\":");
        if (put_int(out, len - start) < 0) goto error;
        PUT_LIT(out, "}");
    }
    PUT_LIT(out, "]");
    result = PyUnicode_New(out->len, 127);               /* ASCII: a str without a decode pass */
    if (result) memcpy(PyUnicode_DATA(result), out->data, out->len);
    goto done;
truncated:
other:
    result = Py_None; Py_INCREF(result);
    goto done;
error:
    result = NULL;
done:
    PyMem_Free(out_buf.data);
    PyBuffer_Release(&view);
    return result;
}
"""
