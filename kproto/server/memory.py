"""Keep glibc from handing large request buffers back to the kernel.

A produce request is megabytes, copied a few times on its way to the log.
glibc serves such sizes with fresh mmap()s (or trims the heap after each
free), so every copy page-faults and zero-fills new memory: measured here,
that kernel time was two thirds of the broker's CPU at 1 KB x 300k messages.
A fixed mmap threshold and a high trim threshold let freed buffers be reused.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20       # glibc's own dynamic maximum on 64-bit
TRIM_THRESHOLD = 128 << 20      # free memory kept before the heap is trimmed


def tune_malloc() -> bool:
    """Apply the thresholds; False where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
