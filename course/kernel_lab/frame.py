"""What the lab gives every student kernel: tile copies, and the FlashAttention-2 frame that exercise 3's
inner loop plugs into. Written like gpu_kernels' kernels: fp32, typed constants (a Python float in a
kernel turns float32 arithmetic into float64), one source with counters on or off.

`copy_rows(dst, src, bh, row0, rows, tid, threads)` copies rows × d elements of head `bh` of a global
array into a shared tile, the block's `threads` threads taking consecutive elements (so a warp reads
one contiguous stretch of HBM) and returns how many *this* thread copied: each is one HBM read and
one SRAM write (docs/COUNTING.md): 3 rows of d = 8 copied by 4 threads are 24 elements, 6 each.

`fa2_frame(inner, head_dim, block_rows, block_cols, counting)` is FlashAttention-2's forward kernel
(Dao 2023, Algorithm 1) with the body of its inner loop left to `inner`, a device function

    inner(Qs, Ks, Vs, Ss, O_acc, m, l, tid, c, scale) -> (m, l, sram_reads, sram_writes)

that takes query row `tid` of the resident Q block through one K/V tile of `c` valid rows: the scores
into Ss[tid, :c], the running max m and sum ℓ, the rescaled accumulator O_acc (registers) and
O_acc += P̃ V_j. The frame does the rest, as gpu_kernels.kernels.tiled does: grid (Tr, B·H), block
(Br,), Q_i loaded once, K_j and V_j once per Q block, O_i = O_acc / ℓ and L_i = m + log ℓ written once.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda, float32  # module globals: the CUDA simulator swaps `cuda` in a kernel's globals

from gpu_kernels.checks import scale_for
from gpu_kernels.flush import flush_counters

ZERO = np.float32(0.0)
ONE = np.float32(1.0)
NEG_INF = np.float32(-np.inf)
#: Query rows (one thread each) per block of exercise 1's row softmax.
SOFTMAX_ROWS = 32


@cuda.jit(device=True)
def copy_rows(dst, src, bh, row0, rows, tid, threads):
    """dst[r, x] = src[bh, row0 + r, x] for r < rows, x < d; returns the elements this thread copied."""
    d = src.shape[2]
    copied = 0
    idx = tid
    while idx < rows * d:
        r = idx // d
        x = idx - r * d
        dst[r, x] = src[bh, row0 + r, x]
        copied += 1
        idx += threads
    return copied


@cuda.jit(device=True)
def copy_stats(dst, src, bh, row0, rows, tid, threads):
    """dst[r] = src[bh, row0 + r] for r < rows (a row statistic: ℓ or m); returns this thread's count."""
    copied = 0
    r = tid
    while r < rows:
        dst[r] = src[bh, row0 + r]
        copied += 1
        r += threads
    return copied


@functools.cache
def fa2_frame(inner, head_dim: int, block_rows: int, block_cols: int, counting: bool):
    """FlashAttention-2's forward kernel around the device function `inner` (see the module docstring)."""
    D, BR, BC = head_dim, block_rows, block_cols
    COUNTING = counting
    SCALE = scale_for(D)

    def fa2_forward(q, k, v, o, lse, counters):
        # q, k, v, o: (B·H, N, d); lse: (B·H, N). Block (i, bh) owns query rows i·Br ... i·Br + r − 1.
        Qs = cuda.shared.array((BR, D), float32)
        Ks = cuda.shared.array((BC, D), float32)
        Vs = cuda.shared.array((BC, D), float32)
        Ss = cuda.shared.array((BR, BC), float32)
        O_acc = cuda.local.array(D, float32)  # my output row, in registers
        tid = cuda.threadIdx.x
        bh = cuda.blockIdx.y
        n = q.shape[1]
        q0 = cuda.blockIdx.x * BR
        r = min(BR, n - q0)
        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        moved = copy_rows(Qs, q, bh, q0, r, tid, BR)  # Q_i, once
        if COUNTING:
            n_gr += moved
            n_sw += moved
        m = NEG_INF
        l = ZERO  # noqa: E741 (the paper's name)
        for x in range(D):
            O_acc[x] = ZERO
        for j in range((n + BC - 1) // BC):
            c = min(BC, n - j * BC)
            cuda.syncthreads()  # Q_i is in; everyone is done with K_{j-1}, V_{j-1}
            moved = copy_rows(Ks, k, bh, j * BC, c, tid, BR) + copy_rows(Vs, v, bh, j * BC, c, tid, BR)
            if COUNTING:
                n_gr += moved
                n_sw += moved
            cuda.syncthreads()  # K_j, V_j are in before anyone reads them
            if tid < r:
                m, l, reads, writes = inner(Qs, Ks, Vs, Ss, O_acc, m, l, tid, c, SCALE)  # noqa: E741
                if COUNTING:
                    n_sr += reads
                    n_sw += writes
        if tid < r:
            inv_l = ONE / l
            for x in range(D):
                o[bh, q0 + tid, x] = O_acc[x] * inv_l
            lse[bh, q0 + tid] = m + float32(math.log(l))
            if COUNTING:
                n_gw += D + 1
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    return cuda.jit(fa2_forward)
