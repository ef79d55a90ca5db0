"""One kernel source, counters on or off.

Every kernel factory in this package takes ``counting: bool`` and closes over it as the constant
``COUNTING``. The kernel body keeps four per-thread register counters, incremented next to each
memory access it counts and guarded by ``if COUNTING:``:

    GLOBAL_READ   elements loaded from global memory (HBM)
    GLOBAL_WRITE  elements stored to global memory
    SHARED_READ   elements loaded from shared memory (SRAM) by a thread
    SHARED_WRITE  elements stored to shared memory by a thread

At the end each thread does one ``cuda.atomic.add`` per counter into an int64[4] array
(``flush.flush_counters``). numba
treats a closure variable as a compile-time constant and prunes ``if False:`` branches, so the
timing build (``counting=False``) contains no counter code and no atomics: ``gpu_kernels.ptx_check``
checks this in the PTX. The same source also runs under numba's CUDA simulator.

What is counted is exactly docs/COUNTING.md's convention: registers are free, a warp broadcast
counts once per thread, a global→shared tile load is one global read plus one shared write per
element. All kernels are fp32, so bytes = elements × 4 (also for the fp32 logsumexp L).
"""

from __future__ import annotations

import os

import numpy as np

from simlib.kernel_layout import ITEM_BYTES

GLOBAL_READ, GLOBAL_WRITE, SHARED_READ, SHARED_WRITE = 0, 1, 2, 3
N_COUNTERS = 4
#: Keys of the counts dict, in counter order; the same names simlib's results use.
COUNT_KEYS = ("hbm_read_bytes", "hbm_write_bytes", "sram_read_bytes", "sram_write_bytes")


def simulator_enabled() -> bool:
    """True when numba's CUDA simulator is (or will be) in use."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def new_counters():
    """A zeroed int64[4] device array for the kernels' atomics."""
    from numba import cuda

    return cuda.to_device(np.zeros(N_COUNTERS, dtype=np.int64))


def counts_from(counters) -> dict[str, int]:
    """Bytes dict from an int64[4] element-count array (host or device)."""
    host = counters.copy_to_host() if hasattr(counters, "copy_to_host") else np.asarray(counters)
    return {key: int(host[i]) * ITEM_BYTES for i, key in enumerate(COUNT_KEYS)}


def add_counts(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {key: a[key] + b[key] for key in COUNT_KEYS}
