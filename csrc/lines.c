/* kproto dump-log's record lines, written from decoded records in one call per batch.
 * The lines are kproto.tools.dump_log.lines.RecordPrinter.lines' for a v2 data batch
 * with the utf8 decoders (that method calls this; tests/tools/test_dump_log.py checks
 * both agree): per record a Python loop of tuple, %-format and f-strings cost more
 * than decoding the record did. Records come from decode_records (generated from
 * the schema), so their slots are read directly. */
#include "crecords.h"

/* Kafka's DefaultRecordBatch.incrementSequence, as kproto.records.sequence_at */
static int64_t
sequence_at(int64_t base_sequence, int64_t delta)
{
    const int64_t int32_max = 2147483647;
    if (base_sequence < 0) return -1;
    if (base_sequence > int32_max - delta) return delta - (int32_max - base_sequence) - 1;
    return base_sequence + delta;
}

/* p[0:n] as bytes.decode("utf-8", "replace") gives it, in UTF-8: the bytes themselves
 * when they are strict UTF-8 (nearly always), else Python's own replacing decode. */
static int
put_replaced_utf8(Buf *b, const char *p, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n && !(p[i] & 0x80)) i++;
    if (i == n) return put_bytes(b, p, n);
    PyObject *s = PyUnicode_DecodeUTF8(p, n, "replace");
    if (!s) return -1;
    Py_ssize_t m;
    const char *u = PyUnicode_AsUTF8AndSize(s, &m);
    int rc = u ? put_bytes(b, u, m) : -1;
    Py_DECREF(s);
    return rc;
}

static int
put_str(Buf *b, PyObject *s)
{
    Py_ssize_t m;
    const char *u = PyUnicode_AsUTF8AndSize(s, &m);
    return u ? put_bytes(b, u, m) : -1;
}

static int
put_i64(Buf *b, PyObject *v, int64_t *out)
{
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) { PyErr_SetString(PyExc_OverflowError, "int too big to convert"); return -1; }
    if (x == -1 && PyErr_Occurred()) return -1;
    if (out) *out = x;
    return put_int(b, x);
}

/* dump_log_lines(records, base_offset, base_sequence, timestamp_name, show_data, last, gaps)
 * -> (text, last): the records' lines joined by "\n"; `last` is the offset before them
 * (-1: none yet) and comes back as the last one; a gap (Kafka's non-consecutive
 * offsets) appends (previous, offset) to the list `gaps`. */
PyObject *
dump_log_lines(PyObject *self, PyObject *args)
{
    PyObject *records, *ts_name, *gaps, *result = NULL;
    long long base_offset, base_sequence, last;
    int show;
    if (!PyArg_ParseTuple(args, "O!LLUpLO!", &PyList_Type, &records, &base_offset, &base_sequence, &ts_name,
                          &show, &last, &PyList_Type, &gaps))
        return NULL;
    Py_ssize_t ts_len;
    const char *ts = PyUnicode_AsUTF8AndSize(ts_name, &ts_len);
    if (!ts) return NULL;
    Buf out = {0};
    int64_t nxt = last + 1;
    Py_ssize_t n = PyList_GET_SIZE(records);
    if (grow(&out, n * (show ? 256 : 128)) < 0) goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        if (Py_TYPE(r) != record_type) { PyErr_SetString(PyExc_TypeError, "dump_log_lines: not a decoded Record"); goto error; }
        PyObject *key = SLOT(r, 2), *value = SLOT(r, 3), *headers = SLOT(r, 4);
        if ((key != Py_None && !PyBytes_Check(key)) || (value != Py_None && !PyBytes_Check(value))
                || !PyTuple_Check(headers)) {
            PyErr_SetString(PyExc_TypeError, "dump_log_lines: not a decoded Record");
            goto error;
        }
        int64_t o;
        if (i) PUT_LIT(&out, "\n");
        PUT_LIT(&out, "| offset: ");
        if (put_i64(&out, SLOT(r, 0), &o) < 0) goto error;
        if (o != nxt && nxt) {
            PyObject *gap = Py_BuildValue("(LL)", (long long)(nxt - 1), (long long)o);
            if (!gap || PyList_Append(gaps, gap) < 0) { Py_XDECREF(gap); goto error; }
            Py_DECREF(gap);
        }
        nxt = o + 1;
        PUT_LIT(&out, " ");
        if (put_bytes(&out, ts, ts_len) < 0) goto error;
        PUT_LIT(&out, ": ");
        if (put_i64(&out, SLOT(r, 1), NULL) < 0) goto error;
        PUT_LIT(&out, " keySize: ");
        if (put_int(&out, key == Py_None ? -1 : PyBytes_GET_SIZE(key)) < 0) goto error;
        PUT_LIT(&out, " valueSize: ");
        if (put_int(&out, value == Py_None ? -1 : PyBytes_GET_SIZE(value)) < 0) goto error;
        PUT_LIT(&out, " sequence: ");
        if (put_int(&out, sequence_at(base_sequence, o - base_offset)) < 0) goto error;
        PUT_LIT(&out, " headerKeys: [");
        for (Py_ssize_t h = 0; h < PyTuple_GET_SIZE(headers); h++) {
            if (h) PUT_LIT(&out, ",");
            PyObject *pair = PyTuple_GET_ITEM(headers, h);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) < 1) {
                PyErr_SetString(PyExc_TypeError, "dump_log_lines: not a decoded Record");
                goto error;
            }
            if (put_str(&out, PyTuple_GET_ITEM(pair, 0)) < 0) goto error;
        }
        PUT_LIT(&out, "]");
        if (show) {
            if (key != Py_None) {
                PUT_LIT(&out, " key: ");
                if (put_replaced_utf8(&out, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key)) < 0) goto error;
            }
            if (value != Py_None) {
                PUT_LIT(&out, " payload: ");
                if (put_replaced_utf8(&out, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value)) < 0) goto error;
            }
        }
    }
    {
        /* strict UTF-8 by construction: keys and values as replaced, header keys decoded strictly */
        PyObject *text = PyUnicode_DecodeUTF8(out.data ? out.data : "", out.len, "strict");
        if (text) result = Py_BuildValue("(NL)", text, (long long)(nxt - 1));
        if (!text || !result) goto error;
    }
    PyMem_Free(out.data);
    return result;
error:
    PyMem_Free(out.data);
    return NULL;
}
