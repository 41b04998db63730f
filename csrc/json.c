/* JSON text for `kproto decode --json`: the writers the generated record walk
 * (records_generated.c) calls, and dumps() for the rest of an exchange. */
#include "crecords.h"

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* "<standard padded base64 of p[0:n]>" */
int
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
int
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
PyObject *
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
PyObject *
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
