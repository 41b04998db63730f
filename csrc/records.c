/* The Record type and the error the generated record codecs use (records_generated.c). */
#include "crecords.h"

Py_ssize_t slot_offsets[NSLOTS];

PyTypeObject *record_type = NULL;
PyObject *record_freelist[RECORD_FREELIST];
int record_nfree = 0;
PyObject *corrupt_error = NULL;
PyObject *str_key, *str_value, *str_headers, *str_timestamp;

/* Raise CorruptRecordError(reason, position=pos, path=path). */
void
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
int
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

/* The slot offsets of the fields the encoder reads, for the last two types it met
 * (NewRecord and Record, typically): a member descriptor's slot read directly is
 * what PyObject_GetAttr finds through the type's MRO, at a fraction of the cost.
 * A cache entry holds while the type's version tag does (CPython clears the tag
 * whenever the type or a base changes); any other type, a custom __getattribute__
 * or a field that is not a plain slot goes through PyObject_GetAttr. */
typedef struct { PyTypeObject *type; unsigned int version; Py_ssize_t off[NFIELDS]; } FieldCache;
static FieldCache field_cache[2];
static int field_cache_next = 0;

static const FieldCache *
fields_of(PyTypeObject *type)
{
    for (int k = 0; k < 2; k++) {
        FieldCache *c = &field_cache[k];
        if (c->type == type && c->version && type->tp_version_tag == c->version
                && PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG))
            return c;
    }
    if (type->tp_getattro != PyObject_GenericGetAttr) return NULL;
    PyObject *names[NFIELDS] = {str_key, str_value, str_headers, str_timestamp};
    Py_ssize_t off[NFIELDS];
    for (int i = 0; i < NFIELDS; i++) {
        PyObject *d = _PyType_Lookup(type, names[i]);   /* borrowed; sets the version tag */
        if (!d || Py_TYPE(d) != &PyMemberDescr_Type
                || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) return NULL;
        off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
    }
    if (!PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG) || !type->tp_version_tag) return NULL;
    FieldCache *c = &field_cache[field_cache_next];
    field_cache_next ^= 1;
    Py_INCREF(type);
    Py_XSETREF(c->type, type);      /* held, so the pointer cannot name another type later */
    c->version = type->tp_version_tag;
    memcpy(c->off, off, sizeof off);
    return c;
}

/* item.key / .value / .headers / .timestamp (F_KEY...): a new reference, or NULL with
 * the exception PyObject_GetAttr raises. */
PyObject *
record_field(PyObject *item, int field)
{
    static PyObject **names[NFIELDS] = {&str_key, &str_value, &str_headers, &str_timestamp};
    const FieldCache *c = fields_of(Py_TYPE(item));
    if (c) {
        PyObject *v = *(PyObject **)((char *)item + c->off[field]);
        if (v) { Py_INCREF(v); return v; }
    }
    return PyObject_GetAttr(item, *names[field]);   /* also raises for an unset slot */
}

/* A record's timestamp, or `now` when it is None; -1 with an exception set on error. */
int64_t
record_timestamp(PyObject *item, int64_t now)
{
    PyObject *t = record_field(item, F_TIMESTAMP);
    if (!t) return 0;   /* the caller checks PyErr_Occurred() */
    int overflow = 0;
    int64_t v = now;
    if (t != Py_None) {
        /* not PyLong_AsLongLong: it goes through _PyLong_AsByteArray for any int past 2**30 */
        v = PyLong_AsLongLongAndOverflow(t, &overflow);
        if (overflow) PyErr_SetString(PyExc_OverflowError, "int too big to convert");
    }
    Py_DECREF(t);
    return v;
}

/* record_timestamp, also kept in *max_ts when larger (*seen: any record yet): the batch's
 * max timestamp found in the same pass as the encode, not by another loop in Python. */
int64_t
record_timestamp_max(PyObject *item, int64_t now, int64_t *max_ts, int *seen)
{
    int64_t v = record_timestamp(item, now);
    if (!*seen || v > *max_ts) *max_ts = v;
    *seen = 1;
    return v;
}

/* PyUnicode_DecodeUTF8(p, n, "strict"), sharing one str per distinct short ASCII
 * text: header keys repeat in nearly every record ("trace-id", "content-type"), and
 * decoding each again cost more than the rest of the header. A direct-mapped cache
 * (by length and first and last byte) of strs that decoded before; str is immutable,
 * so a shared one is equal to a fresh one in every way but identity. */
#define TEXT_CACHE 64
#define TEXT_CACHE_MAX_LEN 64
static PyObject *text_cache[TEXT_CACHE];

PyObject *
decode_text(const char *p, Py_ssize_t n)
{
    if (n <= 0 || n > TEXT_CACHE_MAX_LEN) return PyUnicode_DecodeUTF8(p, n, "strict");
    unsigned int h = ((unsigned int)n * 31u + (unsigned char)p[0] * 7u + (unsigned char)p[n - 1]) % TEXT_CACHE;
    PyObject *s = text_cache[h];
    if (s && PyUnicode_GET_LENGTH(s) == n && memcmp(PyUnicode_1BYTE_DATA(s), p, n) == 0) {
        Py_INCREF(s);
        return s;
    }
    s = PyUnicode_DecodeUTF8(p, n, "strict");
    if (s && PyUnicode_IS_COMPACT_ASCII(s)) {      /* ASCII: its characters are its bytes */
        Py_INCREF(s);
        Py_XSETREF(text_cache[h], s);
    }
    return s;
}

/* Record's tp_dealloc, in place of CPython's generic subtype_dealloc, which looks
 * for finalizers, weak references, a __dict__ and the base's dealloc through the MRO
 * on every call and was the largest single cost of a decoded record's life (callgrind:
 * more than the decoder's own reads). init() installs it only on a type where it does
 * what subtype_dealloc would: object's direct subclass with the 6 slots, no
 * __weakref__, __dict__, __del__ or finalizer. A subclass (LegacyRecord) keeps
 * subtype_dealloc, which clears its own slots and then calls this one as its base's. */
static void
record_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_TRASHCAN_BEGIN(self, record_dealloc)
    for (int i = 0; i < NSLOTS; i++) Py_CLEAR(SLOT(self, i));
    if (tp == record_type && record_nfree < RECORD_FREELIST)
        record_freelist[record_nfree++] = self;
    else
        tp->tp_free(self);
    Py_DECREF(tp);      /* a heap type's instances hold a reference to it */
    Py_TRASHCAN_END
}

static void
record_freelist_clear(void)
{
    while (record_nfree > 0) PyObject_GC_Del(record_freelist[--record_nfree]);
}

/* init(record_type, corrupt_error_class): record the slot offsets of the frozen dataclass. */
PyObject *
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
    PyTypeObject *t = (PyTypeObject *)type;
    record_freelist_clear();        /* sized for the type they came from */
    if (t->tp_base == &PyBaseObject_Type && (t->tp_flags & Py_TPFLAGS_HEAPTYPE)
            && PyType_IS_GC(t) && t->tp_free == PyObject_GC_Del
            && t->tp_basicsize == (Py_ssize_t)(sizeof(PyObject) + NSLOTS * sizeof(PyObject *))
            && t->tp_itemsize == 0 && t->tp_weaklistoffset == 0 && t->tp_dictoffset == 0
            && !t->tp_finalize && !t->tp_del)
        t->tp_dealloc = record_dealloc;
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
