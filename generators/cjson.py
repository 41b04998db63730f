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
Both are spliced into ``kproto/_crecords.c`` by ``generators.c``;
tests/test_capture_json_c.py checks C == Python.
"""

from __future__ import annotations

from construct import Array

from generators.c import _CGen, _decls, _fail, _int, _is_int
from kproto.fastpath.walk import ARRAY, C, PREFIXED, SIZED, emit_sized, is_terminator, node_kind
from kproto.schemas import records as S
from kproto.schemas.primitives import KArray

__all__ = ["generate_json"]


def _lit(text: str) -> str:
    return "PUT_LIT(out, " + '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '");'


def _json(g: _CGen, con, ind: int, path: str, end: str, layout: dict) -> None:
    """Append ``con``'s JSON text to ``out``, reading it from ``buf`` at ``pos``."""
    kind, con = node_kind(con, path)
    if kind is SIZED:
        n = g.int_var("n")
        _int(g, con.length, n, ind, path)

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

        emit_sized(g, C, con, "", n, ind, end, fail=lambda i, reason: _fail(g, i, reason, path), take=take,
                   null=_lit("null"))
    elif kind is ARRAY:
        n, i = g.int_var("c"), g.int_var("i")
        if isinstance(con, KArray):
            _int(g, con.count, n, ind, path)
            if con.compact:
                g.emit(ind, f"{n} -= 1;")
            g.emit(ind, f"if ({n} < 0)")
            _fail(g, ind + 1, "invalid array count", path)
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
        _int(g, con.lengthfield, n, ind, path)
        g.emit(ind, f"{sub_end} = pos + {n};")
        g.emit(ind, f"if ({n} < 0 || {sub_end} > {end})")
        _fail(g, ind + 1, "length runs past the end of its container", path)
        _json(g, con.subcon, ind, path, sub_end, layout)
    else:   # STRUCT
        before = layout.get(id(con))
        ints: dict[str, str] = {}
        first = True
        for sub in con.subcons:
            if is_terminator(sub):
                g.emit(ind, f"if (pos != {end})")
                _fail(g, ind + 1, "bytes remain after the last field", path)
                continue
            sub_path = f"{path}.{sub.name}".lstrip(".")
            if before is None:      # a plain struct: a JSON array of its fields
                g.emit(ind, _lit("[" if first else ","))
                first = False
            if _is_int(sub):
                v = ints[sub.name] = g.int_var(sub.name)
                _int(g, sub, v, ind, sub_path)
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


def _batch_header(g: _CGen) -> list[str]:
    """Read the v2 header at ``pos`` into int64 ``h_<name>`` variables and
    return the C lines that append the batch's JSON up to ``"records":``."""
    out = []
    sep = "{"
    for sub in S.RecordBatchHeader.subcons:
        v = f"h_{sub.name}"
        g.ints.append(v)
        _int(g, sub, v, 1, sub.name)
        out += [_lit(f'{sep}"{sub.name}":'), f"if (put_int(out, {v}) < 0) goto error;"]
        sep = ","
        for extra in _AFTER.get(sub.name, ()):
            out.append("if (put_bytes(out, flags, flags_len) < 0) goto error;" if extra == "@FLAGS@"
                       else _lit("," + extra))
    out.append(_lit(',"records":'))
    return out


def generate_json() -> tuple[str, str]:
    """(C functions, method table entries) for the JSON writers."""
    g = _CGen()
    _json(g, Array(0, S.Record), 1, "", "len", {id(S.RecordBody): _record})
    hg = _CGen()
    head = _batch_header(hg)
    return (_TEMPLATE.replace("@DECLS@", _decls(g)).replace("@UNUSED@", "    " + " ".join(f"(void){v};" for v in g.ints)).replace("@BODY@", "\n".join(g.lines))
            .replace("@HDECLS@", _decls(hg)).replace("@HBODY@", "\n".join(hg.lines))
            .replace("@HJSON@", "\n".join("        " + line for line in head))
            .replace("@MAGIC@", str(S.MAGIC_OFFSET)).replace("@LENGTH@", str(S.LENGTH_OFFSET))
            .replace("@LOG_OVERHEAD@", str(S.LOG_OVERHEAD)).replace("@LEGACY_MIN@", str(S.LEGACY_OVERHEAD[0]))
            .replace("@RECORDS@", str(S.RECORD_BATCH_OVERHEAD)).replace("@CRC_FROM@", str(S.V2_CRC_FROM)), _METHODS)


_METHODS = """    {"dumps", dumps, METH_VARARGS, "json.dumps of plain data with RawJSON as is, as bytes, or None."},
    {"crc32c", crc32c, METH_VARARGS, "CRC-32C of a buffer, as the crc32c package computes it."},
    {"records_json", records_json, METH_VARARGS, "v2 records as JSON text (generated from the schema)."},
    {"batches_json", batches_json, METH_VARARGS, "A RECORDS field's plain v2 batches as JSON text, or None."},"""

_TEMPLATE = r"""
/* --- JSON text (generators.cjson) ----------------------------------- */

#define PUT_LIT(b, s) do { if (put_bytes((b), (s), sizeof(s) - 1) < 0) goto error; } while (0)

/* v in decimal, as int.__repr__ (snprintf costs more than the records' base64) */
static int
put_int(Buf *b, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do { tmp[23 - n++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) tmp[23 - n++] = '-';
    return put_bytes(b, tmp + 24 - n, n);
}

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* "<standard padded base64 of p[0:n]>" */
static int
put_b64(Buf *b, const unsigned char *p, int64_t n)
{
    if (grow(b, (n + 2) / 3 * 4 + 2) < 0) return -1;
    char *o = b->data + b->len;
    *o++ = '"';
    int64_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        o[0] = b64_alphabet[v >> 18]; o[1] = b64_alphabet[(v >> 12) & 63];
        o[2] = b64_alphabet[(v >> 6) & 63]; o[3] = b64_alphabet[v & 63];
        o += 4;
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        o[0] = b64_alphabet[v >> 18]; o[1] = b64_alphabet[(v >> 12) & 63]; o[2] = '='; o[3] = '=';
        o += 4;
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8);
        o[0] = b64_alphabet[v >> 18]; o[1] = b64_alphabet[(v >> 12) & 63]; o[2] = b64_alphabet[(v >> 6) & 63];
        o[3] = '=';
        o += 4;
    }
    *o++ = '"';
    b->len = o - b->data;
    return 0;
}

static int put_unicode(Buf *b, PyObject *s);

/* UTF-8 p[0:n] as a JSON string the way json.dumps writes it (ensure_ascii):
 * -2 if it is not strict UTF-8 (as decoding it to str would refuse), -1 on a Python error. */
static int
put_json_text(Buf *b, const unsigned char *p, int64_t n)
{
    int64_t i;
    for (i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] >= 0x7F || p[i] == '"' || p[i] == '\\') break;
    if (i == n) {       /* the usual case: nothing to escape */
        if (grow(b, n + 2) < 0) return -1;
        b->data[b->len++] = '"';
        memcpy(b->data + b->len, p, n); b->len += n;
        b->data[b->len++] = '"';
        return 0;
    }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)p, n, "strict");
    if (!s) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return -1;
        PyErr_Clear();
        return -2;
    }
    int rc = put_unicode(b, s);
    Py_DECREF(s);
    return rc;
}

/* A str as json.dumps writes it (ensure_ascii): -1 on a Python error. */
static int
put_unicode(Buf *b, PyObject *s)
{
    Py_ssize_t len = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    if (grow(b, 2 + 12 * len) < 0) return -1;
    char *o = b->data + b->len;
    *o++ = '"';
    for (Py_ssize_t k = 0; k < len; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') { *o++ = (char)c; continue; }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        default:
            if (c >= 0x10000) {     /* a surrogate pair, as json does */
                Py_UCS4 v = c - 0x10000;
                o += sprintf(o, "u%04x\\u%04x", 0xD800 | (v >> 10), 0xDC00 | (v & 0x3FF));
            } else {
                o += sprintf(o, "u%04x", (unsigned)c);
            }
        }
    }
    *o++ = '"';
    b->len = o - b->data;
    return 0;
}

/* CRC-32C (Castagnoli), as Kafka's batches carry it: SSE 4.2's instruction where the
 * CPU has it, else a table. Here so that decode does not load the crc32c package. */
static uint32_t crc_table[256];
static int crc_hw = 0;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC_HW_BUILT 1
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t c, const unsigned char *p, size_t n)
{
    uint64_t c64 = c;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
    }
    c = (uint32_t)c64;
    for (; n; p++, n--) c = __builtin_ia32_crc32qi(c, *p);
    return c;
}
#endif

static void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
#ifdef CRC_HW_BUILT
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t
crc32c_by(const unsigned char *p, size_t n, int hw)
{
    uint32_t c = 0xFFFFFFFFu;
#ifdef CRC_HW_BUILT
    if (hw && crc_hw) return crc32c_hw(c, p, n) ^ 0xFFFFFFFFu;
#endif
    for (; n; p++, n--) c = crc_table[(c ^ *p) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

#define crc32c_of(p, n) crc32c_by((p), (n), 1)

/* crc32c(data, hardware=True) -> int, what the crc32c package's crc32c(data) gives
 * (hardware=False: the table, for tests on machines with the instruction). */
static PyObject *
crc32c(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int hw = 1;
    if (!PyArg_ParseTuple(args, "y*|p", &view, &hw)) return NULL;
    uint32_t c = crc32c_by(view.buf, view.len, hw);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

/* The JSON array of the v2 records in buf[0:len]: 0, or -1 with a Python
 * error set, or 1 when they are corrupt (*reason, *path, *end at the byte). */
static int
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

/* json.dumps(o, default=json_default, separators=(",", ":")) of plain data, RawJSON
 * (raw_type) copied as is: 0, -1 on a Python error, 1 for a value it leaves to json
 * (a type json_default knows other than bytes, a non-str key, very deep nesting). */
static int
put_value(Buf *out, PyObject *o, PyObject *raw_type, PyObject *plain_type, int depth)
{
    if (depth > 100) return 1;
    if (o == Py_None) { PUT_LIT(out, "null"); return 0; }
    if (o == Py_True) { PUT_LIT(out, "true"); return 0; }
    if (o == Py_False) { PUT_LIT(out, "false"); return 0; }
    if (PyUnicode_Check(o)) {
        if ((PyObject *)Py_TYPE(o) != raw_type) return put_unicode(out, o);
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(o, &n);
        return u ? put_bytes(out, u, n) : -1;
    }
    if (PyLong_Check(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (!overflow) return put_int(out, v);
        PyObject *r = PyLong_Type.tp_repr(o);          /* int.__repr__, as json */
        if (!r) return -1;
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(r, &n);
        int rc = u ? put_bytes(out, u, n) : -1;
        Py_DECREF(r);
        return rc;
    }
    if (PyFloat_Check(o)) {
        double d = PyFloat_AS_DOUBLE(o);
        if (d != d) { PUT_LIT(out, "NaN"); return 0; }
        if (d == Py_HUGE_VAL) { PUT_LIT(out, "Infinity"); return 0; }
        if (d == -Py_HUGE_VAL) { PUT_LIT(out, "-Infinity"); return 0; }
        char *r = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);   /* float.__repr__ */
        if (!r) return -1;
        int rc = put_bytes(out, r, strlen(r));
        PyMem_Free(r);
        return rc;
    }
    if (PyList_Check(o) || PyTuple_Check(o)) {
        PyObject *seq = PySequence_Fast(o, "");
        if (!seq) return -1;
        int rc = 0;
        if (put_bytes(out, "[", 1) < 0) rc = -1;
        for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
            if (i && put_bytes(out, ",", 1) < 0) rc = -1;
            else rc = put_value(out, PySequence_Fast_GET_ITEM(seq, i), raw_type, plain_type, depth + 1);
        }
        if (rc == 0 && put_bytes(out, "]", 1) < 0) rc = -1;
        Py_DECREF(seq);
        return rc;
    }
    if (PyDict_Check(o)) {
        /* in the order items() gives, as json: the dict's own for dict and plain_type
         * (construct's Container, which keeps dict's items), else by calling items() */
        int rc = 0;
        Py_ssize_t i = 0, at = 0;
        PyObject *k, *v, *items = NULL;
        if (!PyDict_CheckExact(o) && (PyObject *)Py_TYPE(o) != plain_type) {
            items = PyMapping_Items(o);
            if (!items) return -1;
        }
        if (put_bytes(out, "{", 1) < 0) rc = -1;
        while (rc == 0) {
            if (items) {
                if (at >= PyList_GET_SIZE(items)) break;
                k = PyTuple_GET_ITEM(PyList_GET_ITEM(items, at), 0);
                v = PyTuple_GET_ITEM(PyList_GET_ITEM(items, at), 1);
            } else if (!PyDict_Next(o, &i, &k, &v)) {
                break;
            }
            if (!PyUnicode_Check(k)) { rc = 1; break; }
            if (at++ && put_bytes(out, ",", 1) < 0) { rc = -1; break; }
            if (put_unicode(out, k) < 0 || put_bytes(out, ":", 1) < 0) { rc = -1; break; }
            rc = put_value(out, v, raw_type, plain_type, depth + 1);
        }
        if (rc == 0 && put_bytes(out, "}", 1) < 0) rc = -1;
        Py_XDECREF(items);
        return rc;
    }
    if (PyObject_CheckBuffer(o) && (PyBytes_Check(o) || PyByteArray_Check(o) || PyMemoryView_Check(o))) {
        Py_buffer v;          /* json_default: standard base64 */
        if (PyObject_GetBuffer(o, &v, PyBUF_SIMPLE) < 0) return -1;
        int rc = put_b64(out, v.buf, v.len);
        PyBuffer_Release(&v);
        return rc;
    }
    return 1;
error:
    return -1;
}

/* dumps(value, raw_type, plain_type) -> bytes, or None for a value json itself must write.
 * plain_type: a dict subclass whose items() is dict's. */
static PyObject *
dumps(PyObject *self, PyObject *args)
{
    PyObject *value, *raw_type, *plain_type, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOO", &value, &raw_type, &plain_type))
        return NULL;
    Buf out = {0};
    int rc = put_value(&out, value, raw_type, plain_type, 0);
    if (rc == 0)
        result = PyBytes_FromStringAndSize(out.data ? out.data : "", out.len);
    else if (rc == 1) {
        result = Py_None; Py_INCREF(result);
    }
    PyMem_Free(out.data);
    return result;
}

/* records_json(buf, count, base_offset, base_timestamp, log_append_time) -> (bytes, end_position):
 * decode_records' records as the JSON text kproto.capture.jsonout renders; raises alike. */
static PyObject *
records_json(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_timestamp;
    PyObject *result = NULL;
    int64_t lat, end = 0;
    int lat_set;
    if (records_args(args, &view, &count, &base_offset, &base_timestamp, &lat_set, &lat) < 0)
        return NULL;
    const char *reason = NULL, *where = NULL;
    Buf out = {0};
    int rc = emit_records_json(&out, view.buf, view.len, count, base_offset, base_timestamp,
                               lat_set, lat, &end, &reason, &where);
    if (rc == 0)
        result = Py_BuildValue("(y#L)", out.data ? out.data : "", out.len, (long long)end);
    else if (rc == 1)
        set_corrupt(reason, where, end);
    PyMem_Free(out.data);
    PyBuffer_Release(&view);
    return result;
}

/* batches_json(raw, flags) -> str or None: a RECORDS field as the JSON list
 * kproto.capture.body renders, when every batch is a complete, uncompressed, non-control
 * v2 batch with a valid CRC and sound records (a cut-off tail is allowed); None for
 * anything else, which the Python path renders with its warnings. flags[i]: the JSON
 * of compression, timestamp_type and transactional for (timestamp bit, transactional bit) = i. */
static PyObject *
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
