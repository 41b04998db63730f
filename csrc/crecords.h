/* kproto._crecords: what its C files share. Hand-written; the generated part
 * (records_generated.c, from `python -m generators.c`) includes it too.
 *
 *   module.c             the method table and PyInit__crecords
 *   records.c            the Record type's slots, CorruptRecordError, init()
 *   records_generated.c  GENERATED from kproto/schemas/records.py: decode/walk/encode
 *                        records, and their JSON text (records_json, batches_json)
 *   json.c               JSON text helpers, dumps(), records_json()
 *   lines.c              dump-log's record lines (dump_log_lines)
 *   crc32c.c             CRC-32C
 *   packet.c             pcap records and TCP segments; glibc's malloc thresholds
 *
 * The small writers every record touches are static inline here, so the
 * generated loops inline them as they did when this was one file. */
#ifndef KPROTO_CRECORDS_H
#define KPROTO_CRECORDS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(hidden)     /* only PyInit__crecords leaves the .so */
#endif

/* records.c: the frozen Record dataclass's slots and the error class (init()) */
#define NSLOTS 6
extern Py_ssize_t slot_offsets[NSLOTS];
#define SLOT(o, i) (*(PyObject **)((char *)(o) + slot_offsets[i]))
extern PyTypeObject *record_type;
extern PyObject *corrupt_error;
extern PyObject *str_key, *str_value, *str_headers, *str_timestamp;

/* Records freed recently, for the decoder to fill again (records.c's record_dealloc
 * puts them here): a batch's records are usually dropped as the next batch decodes,
 * and a reused one skips the allocator, the zeroing and the free. Each is untracked,
 * its slots NULL and its reference to record_type already given back. */
#define RECORD_FREELIST 1024
extern PyObject *record_freelist[RECORD_FREELIST];
extern int record_nfree;

/* A new, untracked Record with every slot NULL: fill its slots, then
 * PyObject_GC_Track it. NULL with an exception set. */
static inline PyObject *
record_new(void)
{
    if (record_nfree > 0)
        return PyObject_Init(record_freelist[--record_nfree], record_type);
    PyObject *r = record_type->tp_alloc(record_type, 0);
    if (r) PyObject_GC_UnTrack(r);
    return r;
}

void set_corrupt(const char *reason, const char *path, int64_t pos);
int records_args(PyObject *args, Py_buffer *view, Py_ssize_t *count, long long *base_offset,
                 long long *base_timestamp, int *lat_set, int64_t *lat);
enum { F_KEY, F_VALUE, F_HEADERS, F_TIMESTAMP, NFIELDS };
PyObject *record_field(PyObject *item, int field);
int64_t record_timestamp(PyObject *item, int64_t now);
int64_t record_timestamp_max(PyObject *item, int64_t now, int64_t *max_ts, int *seen);
PyObject *decode_text(const char *p, Py_ssize_t n);

/* A growing output buffer (PyMem). */
typedef struct { char *data; Py_ssize_t len, cap; } Buf;

static inline int
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

static inline int
put_bytes(Buf *b, const void *p, Py_ssize_t n)
{
    if (grow(b, n) < 0) return -1;
    memcpy(b->data + b->len, p, n); b->len += n;
    return 0;
}

/* o's bytes: a bytes object's own, else through the buffer protocol (release
 * with PyBuffer_Release, a no-op for bytes). 0, or -1 with an exception set. */
static inline int
get_bytes(PyObject *o, Py_buffer *v)
{
    if (PyBytes_CheckExact(o)) {
        v->buf = PyBytes_AS_STRING(o); v->len = PyBytes_GET_SIZE(o); v->obj = NULL;
        return 0;
    }
    return PyObject_GetBuffer(o, v, PyBUF_SIMPLE);
}

static inline int
put_uvarint(Buf *b, uint64_t v)
{
    if (grow(b, 10) < 0) return -1;
    while (v >= 0x80) { b->data[b->len++] = (char)((v & 0x7F) | 0x80); v >>= 7; }
    b->data[b->len++] = (char)v;
    return 0;
}

static inline int
put_be(Buf *b, uint64_t v, int size)
{
    if (grow(b, size) < 0) return -1;
    for (int i = size - 1; i >= 0; i--) b->data[b->len++] = (char)(v >> (8 * i));
    return 0;
}

#define PUT_LIT(b, s) do { if (put_bytes((b), (s), sizeof(s) - 1) < 0) goto error; } while (0)

/* v in decimal, as int.__repr__ (snprintf costs more than the records' base64) */
static inline int
put_int(Buf *b, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do { tmp[23 - n++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) tmp[23 - n++] = '-';
    return put_bytes(b, tmp + 24 - n, n);
}

/* json.c */
int put_b64(Buf *b, const unsigned char *p, int64_t n);
int put_json_text(Buf *b, const unsigned char *p, int64_t n);

/* crc32c.c */
void crc_init(void);
uint32_t crc32c_by(const unsigned char *p, size_t n, int hw);
#define crc32c_of(p, n) crc32c_by((p), (n), 1)

/* records_generated.c: the JSON array of the v2 records in buf[0:len]: 0, or -1 with a
 * Python error set, or 1 when they are corrupt (*reason, *path, *end at the byte). */
int emit_records_json(Buf *out, const unsigned char *buf, int64_t len, int64_t count, int64_t base_offset,
                      int64_t base_timestamp, int lat_set, int64_t lat, int64_t *end,
                      const char **reason, const char **where);

/* The module's methods (module.c lists them) */
PyObject *decode_records(PyObject *self, PyObject *args);     /* records_generated.c */
PyObject *walk_records(PyObject *self, PyObject *args);
PyObject *encode_records(PyObject *self, PyObject *args);
PyObject *batches_json(PyObject *self, PyObject *args);
PyObject *init(PyObject *self, PyObject *args);               /* records.c */
PyObject *dumps(PyObject *self, PyObject *args);              /* json.c */
PyObject *records_json(PyObject *self, PyObject *args);
PyObject *crc32c(PyObject *self, PyObject *args);             /* crc32c.c */
PyObject *dump_log_lines(PyObject *self, PyObject *args);     /* lines.c */
PyObject *pcap_segments(PyObject *self, PyObject *args);      /* packet.c */
PyObject *mallopt_thresholds(PyObject *self, PyObject *args);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#endif
