/* The Record type and the error the generated record codecs use (records_generated.c). */
#include "crecords.h"

Py_ssize_t slot_offsets[NSLOTS];

PyTypeObject *record_type = NULL;
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

/* A record's timestamp, or `now` when it is None; -1 with an exception set on error. */
int64_t
record_timestamp(PyObject *item, int64_t now)
{
    PyObject *t = PyObject_GetAttr(item, str_timestamp);
    if (!t) return 0;   /* the caller checks PyErr_Occurred() */
    int64_t v = t == Py_None ? now : PyLong_AsLongLong(t);
    Py_DECREF(t);
    return v;
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
