"""The device function every counting build ends with: one atomic add per counter per thread.

Kept apart from ``counting.py`` because importing it imports numba, which must not happen before
the CLI has decided whether to switch on the CUDA simulator. Called only under ``if COUNTING:``, so
timing builds contain no call (the PTX check in ``asm.py`` looks for atomics).
"""

from numba import cuda


@cuda.jit(device=True)
def flush_counters(counters, global_reads, global_writes, shared_reads, shared_writes):
    cuda.atomic.add(counters, 0, global_reads)
    cuda.atomic.add(counters, 1, global_writes)
    cuda.atomic.add(counters, 2, shared_reads)
    cuda.atomic.add(counters, 3, shared_writes)
