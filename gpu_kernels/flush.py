"""What every kernel factory ends with: the counting build's counter flush (one atomic add per counter
per thread), and compiling the kernel under a name that says which build it is.

Kept apart from ``counting.py`` because importing it imports numba, which must not happen before
the CLI has decided whether to switch on the CUDA simulator. Called only under ``if COUNTING:``, so
timing builds contain no call (the PTX check in ``ptx_check.py`` looks for atomics).
"""

from numba import cuda

from .simulator import install

install()  # numba's simulator made race-free before any kernel of this package runs on it


@cuda.jit(device=True)
def flush_counters(counters, global_reads, global_writes, shared_reads, shared_writes):
    cuda.atomic.add(counters, 0, global_reads)
    cuda.atomic.add(counters, 1, global_writes)
    cuda.atomic.add(counters, 2, shared_reads)
    cuda.atomic.add(counters, 3, shared_writes)


def jit_named(kernel, name):
    """cuda.jit `kernel` under `name` (e.g. fa2_forward_d64_br48_bc48_count), so ncu, the PTX and
    the profile tables show which build of which shape ran."""
    kernel.__name__ = kernel.__qualname__ = name
    return cuda.jit(kernel)
