/* C for the capture decoder's commonest packet: pcap record, Ethernet, IPv4, TCP.
 *
 * Not derived from a schema (these headers are not kproto's). It mirrors
 * PacketReader.pcap_records and the fast path of kproto.capture.packet.tcp_segment
 * (an Ethernet frame of IPv4 without options carrying TCP, not a fragment) and
 * hands every other packet back as bytes for the Python path;
 * tests/capture/test_capture_json_c.py checks the two give the same segments. */
#include "crecords.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

/* mallopt_thresholds(mmap_threshold, trim_threshold) -> True, or False where the C
 * library is not glibc (or refuses): kproto.memory's thresholds, applied here when the
 * extension is loaded so a decode need not load ctypes. */
PyObject *
mallopt_thresholds(PyObject *self, PyObject *args)
{
    int mmap_threshold, trim_threshold;
    if (!PyArg_ParseTuple(args, "ii", &mmap_threshold, &trim_threshold)) return NULL;
#ifdef __GLIBC__
    if (mallopt(M_MMAP_THRESHOLD, mmap_threshold) && mallopt(M_TRIM_THRESHOLD, trim_threshold))
        Py_RETURN_TRUE;
#else
    (void)mmap_threshold; (void)trim_threshold;
#endif
    Py_RETURN_FALSE;
}

static uint32_t
rd32(const unsigned char *p, int little)
{
    return little ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                  : (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

/* Segment(src, sport, dst, dport, seq, ack, flags, payload, missing) of an Ethernet
 * frame d[0:n] (n >= 54) holding IPv4 without options and TCP, not a fragment; NULL
 * without an error for any other frame, NULL with one on failure. */
static PyObject *
eth_ipv4_tcp(const unsigned char *d, int64_t n, PyTypeObject *segment_type)
{
    if (d[12] != 0x08 || d[13] != 0x00 || d[14] != 0x45 || d[23] != 6 || (((d[20] << 8) | d[21]) & 0x3FFF))
        return NULL;
    int64_t total = (d[16] << 8) | d[17];
    int64_t start = 34 + (d[46] >> 4) * 4, end = 14 + (total ? total : n - 14);
    int64_t lo = start < n ? start : n, hi = end < n ? end : n;     /* data[start:end] */
    if (hi < lo) hi = lo;
    int64_t missing = end - (start > n ? start : n);
    PyObject *fields = Py_BuildValue("(y#iy#iIIiy#L)", d + 26, (Py_ssize_t)4, (d[34] << 8) | d[35],
                                     d + 30, (Py_ssize_t)4, (d[36] << 8) | d[37], rd32(d + 38, 0), rd32(d + 42, 0),
                                     (int)d[47], d + lo, (Py_ssize_t)(hi - lo),
                                     (long long)(missing > 0 ? missing : 0));
    if (!fields) return NULL;
    PyObject *args = PyTuple_Pack(1, fields);
    Py_DECREF(fields);
    if (!args) return NULL;
    PyObject *seg = PyTuple_Type.tp_new(segment_type, args, NULL);     /* tuple.__new__(Segment, fields) */
    Py_DECREF(args);
    return seg;
}

/* pcap_segments(buf, start, little_endian, frac_ns, linktype, max_record, Segment)
 * -> ([(ts_ns, Segment or bytes)], end): every complete record from buf[start:], as
 * PacketReader.pcap_records reads them, stopping where it stops; the TCP segment is
 * read here when the frame is the common kind, else the record's bytes are given. */
PyObject *
pcap_segments(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start;
    int little, linktype;
    long long frac, max_record;
    PyObject *segment_type, *out = NULL;
    if (!PyArg_ParseTuple(args, "y*npLiLO!", &view, &start, &little, &frac, &linktype, &max_record,
                          &PyType_Type, &segment_type))
        return NULL;
    const unsigned char *buf = view.buf;
    int64_t len = view.len, pos = start;
    if (start < 0 || start > len) { PyErr_SetString(PyExc_ValueError, "start outside the buffer"); goto error; }
    out = PyList_New(0);
    if (!out) goto error;
    while (len - pos >= 16) {
        int64_t incl = rd32(buf + pos + 8, little);
        if (incl > max_record || len - pos - 16 < incl) break;
        const unsigned char *d = buf + pos + 16;
        int64_t ts = (int64_t)rd32(buf + pos, little) * 1000000000 + (int64_t)rd32(buf + pos + 4, little) * frac;
        PyObject *item = NULL;
        if (linktype == 1 && incl >= 54) {
            item = eth_ipv4_tcp(d, incl, (PyTypeObject *)segment_type);
            if (!item && PyErr_Occurred()) goto error;
        }
        if (!item) item = PyBytes_FromStringAndSize((const char *)d, incl);
        if (!item) goto error;
        PyObject *pair = Py_BuildValue("(LN)", (long long)ts, item);
        if (!pair || PyList_Append(out, pair) < 0) { Py_XDECREF(pair); goto error; }
        Py_DECREF(pair);
        pos += 16 + incl;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(NL)", out, (long long)pos);
error:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return NULL;
}
