"""DRAM traffic when L2 absorbs every re-read inside a kernel and keeps nothing between kernels.

`kernel_once(traffic, workload, kernel_of)` caps each (op, tensor) of each kernel at the tensor's
size: N·d elements for a row-wide tensor, N for the fp32 row statistics (L, D). That is what a
GPU with an L2 large enough for each kernel's re-read set moves, and what `ncu --cache-control
all` reports (caches flushed before each kernel). A schedule's phases are named "kernel" or
"kernel:step" (`kernel_of` maps one to the other). Reads of a kernel's own scratch (`produced`)
are dropped: what it wrote itself is still in L2 when it reads it back.

>>> from simlib import Workload
>>> t = Traffic({("HBM", "read", "K", "fwd:load"): 8 * 64, ("HBM", "read", "L", "bwd:inner"): 3})
>>> kernel_once(t, Workload(4, 64)).counts[("HBM", "read", "K", "fwd")]    # K read twice: once
256
"""

from collections.abc import Callable, Iterable, Mapping

from ..traffic import Traffic
from ..workload import Workload

ROW_STATS = ("L", "D")


def kernel_once(
    traffic: Traffic,
    workload: Workload,
    kernel_of: Callable[[str], str] = lambda phase: phase.split(":")[0],
    produced: Mapping[str, Iterable[str]] | None = None,
) -> Traffic:
    """`produced`: per kernel, the tensors it writes before it reads them (its own scratch, e.g. an
    accumulator it re-reads): with an L2 that holds them, their reads never reach DRAM."""
    scratch = {kernel: set(tensors) for kernel, tensors in (produced or {}).items()}
    per_kernel = Traffic()
    for (level, op, tensor, phase), elements in traffic.counts.items():
        per_kernel.add(level, op, tensor, kernel_of(phase), elements)
    once = Traffic()
    for (level, op, tensor, kernel), elements in per_kernel.counts.items():
        if op == "read" and tensor in scratch.get(kernel, ()):
            continue
        size = workload.seq_len * (1 if tensor in ROW_STATS else workload.head_dim)
        once.add(level, op, tensor, kernel, min(elements, size))
    return once
