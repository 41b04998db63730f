#include "crecords.h"

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

void
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

uint32_t
crc32c_by(const unsigned char *p, size_t n, int hw)
{
    uint32_t c = 0xFFFFFFFFu;
#ifdef CRC_HW_BUILT
    if (hw && crc_hw) return crc32c_hw(c, p, n) ^ 0xFFFFFFFFu;
#endif
    for (; n; p++, n--) c = crc_table[(c ^ *p) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* crc32c(data, hardware=True) -> int, what the crc32c package's crc32c(data) gives
 * (hardware=False: the table, for tests on machines with the instruction). */
PyObject *
crc32c(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int hw = 1;
    if (!PyArg_ParseTuple(args, "y*|p", &view, &hw)) return NULL;
    uint32_t c = crc32c_by(view.buf, view.len, hw);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}
