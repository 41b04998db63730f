/* kproto._crecords: the module. crecords.h says which file holds what. */
#include "crecords.h"

static PyMethodDef methods[] = {
    {"decode_records", decode_records, METH_VARARGS, "Decode v2 records (generated from the schema)."},
    {"encode_records", encode_records, METH_VARARGS, "Encode v2 records (generated from the schema)."},
    {"walk_records", walk_records, METH_VARARGS, "Check v2 records without building them (generated from the schema)."},
    {"dumps", dumps, METH_VARARGS, "json.dumps of plain data with RawJSON as is, as bytes, or None."},
    {"crc32c", crc32c, METH_VARARGS, "CRC-32C of a buffer, as the crc32c package computes it."},
    {"records_json", records_json, METH_VARARGS, "v2 records as JSON text (generated from the schema)."},
    {"batches_json", batches_json, METH_VARARGS, "A RECORDS field's plain v2 batches as JSON text, or None."},
    {"dump_log_lines", dump_log_lines, METH_VARARGS, "dump-log's record lines of one batch's decoded records."},
    {"pcap_segments", pcap_segments, METH_VARARGS, "pcap records at once, TCP segments read (decoder fast path)."},
    {"mallopt_thresholds", mallopt_thresholds, METH_VARARGS,
     "glibc: set M_MMAP_THRESHOLD and M_TRIM_THRESHOLD (True), else False (kproto.memory)."},
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
