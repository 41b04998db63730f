"""Keep glibc from handing large freed buffers back to the kernel.

A produce request is megabytes, copied a few times on its way to the log, and
a capture decode allocates and frees megabytes per chunk read (frames, their
JSON). glibc serves such sizes with fresh mmap()s (or trims the heap after
each free), so every copy page-faults and zero-fills new memory: measured
here, that kernel time was two thirds of the broker's CPU at 1 KB x 300k
messages, and ~8 % of a decode. A fixed mmap threshold and a high trim
threshold let freed buffers be reused. Process-wide, so only the commands
that run such loops ask for it (``kproto serve``, ``kproto decode``).
"""

from __future__ import annotations

import ctypes
import ctypes.util

from kproto import accel

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory"]

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
# One pair for every command. 32 MiB is glibc's own dynamic maximum on 64-bit
# (DEFAULT_MMAP_THRESHOLD_MAX), so buffers up to a large produce request stay
# on the heap; the decode command's former 16 MiB covered its chunks too, but
# not the broker's requests. Trimming at 4x that keeps a few such buffers' worth
# of freed heap for reuse (peak RSS is what the loop needed anyway).
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20      # free memory kept before the heap is trimmed


def keep_freed_memory() -> bool:
    """Apply the thresholds: through the C extension's mallopt when it is
    loaded (no ctypes import), else through ctypes; False where the C
    library is not glibc."""
    if accel.crecords is not None:
        return accel.crecords.mallopt_thresholds(MMAP_THRESHOLD, TRIM_THRESHOLD)
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
