"""The lab's reference solutions (lecture 11), hidden from students: its solution cells grade these, and
`make test` runs them through the grader (tests/test_kernel_lab.py and the executed lecture).

1. Standard attention (the paper's Algorithm 0): the tiled matmul is the project's own kernel
   (`gpu_kernels.kernels.naive.matmul_kernel`: one source, counted against simlib in the test suite);
   the row softmax below keeps its row in registers, so it moves N² elements in and N² out and touches
   no SRAM: simlib's `naive` schedule with `matmul_tile=T` and no softmax threads.
2. FlashAttention-1 (Algorithm 1 of Dao et al. 2022): outer loop over K/V blocks, inner over Q blocks,
   O, ℓ, m staged through SRAM and written back to HBM after every tile: simlib's `fa1` schedule
   (docs/COUNTING.md §fa1; this is the first kernel of it in the project).
3. FlashAttention-2's inner loop (`fa2_inner`, for `device.fa2_frame`): the same tile arithmetic with
   O, ℓ, m kept in registers: simlib's `fa2` schedule, the readable `tiled` kernel's counts.

The three tile steps are device functions of their own, shared by 2 and 3; each returns the SRAM
accesses it made (docs/COUNTING.md: a score reads a Q row and a K row, 2d reads, and writes S once;
the exponential reads and writes S once; P̃ V reads p once and a V row, 1 + d reads).
"""

from __future__ import annotations

import functools
import math

from numba import cuda, float32  # module globals: the CUDA simulator swaps `cuda` in a kernel's globals

from gpu_kernels.checks import scale_for
from gpu_kernels.flush import flush_counters
from gpu_kernels.kernels.naive import matmul_kernel

from .frame import NEG_INF, ONE, ZERO, copy_rows, copy_stats

__all__ = ["fa1_kernel", "fa2_inner", "matmul_kernel", "softmax_kernel"]


@functools.cache
def softmax_kernel(n_keys: int, counting: bool):
    """P = softmax(S) by rows, one thread per row, the row in registers: grid (⌈N_q/32⌉, B·H), block (32,)."""
    NK = n_keys
    COUNTING = counting

    def row_softmax(s, p, counters):
        x = cuda.local.array(NK, float32)  # my row of S, read from HBM once
        row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        bh = cuda.blockIdx.y
        n_gr = 0
        n_gw = 0
        if row < s.shape[1]:
            row_max = NEG_INF
            for c in range(NK):
                x[c] = s[bh, row, c]
                row_max = max(row_max, x[c])
            if COUNTING:
                n_gr += NK
            total = ZERO
            for c in range(NK):
                x[c] = float32(math.exp(x[c] - row_max))  # exp(x − max) ≤ 1: no overflow
                total += x[c]
            inv_total = ONE / total
            for c in range(NK):
                p[bh, row, c] = x[c] * inv_total
            if COUNTING:
                n_gw += NK
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, 0, 0)

    return cuda.jit(row_softmax)


@cuda.jit(device=True)
def score_row(Qs, Ks, Ss, tid, c, scale, m):
    """Ss[tid, cc] = scale · Q_i[tid] · K_j[cc] for cc < c; returns max(m, those scores). 2·c·d reads, c writes."""
    for cc in range(c):
        s = ZERO
        for x in range(Qs.shape[1]):
            s += Qs[tid, x] * Ks[cc, x]
        s *= scale
        Ss[tid, cc] = s
        m = max(m, s)
    return m


@cuda.jit(device=True)
def exponentiate_row(Ss, tid, c, m):
    """P̃ = exp(S − m) written over S; returns the row sum. c reads, c writes."""
    total = ZERO
    for cc in range(c):
        p = float32(math.exp(Ss[tid, cc] - m))
        Ss[tid, cc] = p
        total += p
    return total


@cuda.jit(device=True)
def accumulate_pv(Ss, Vs, acc, tid, c):
    """acc += P̃[tid, :c] · V_j, reading each p once and then a V row; returns the reads, c + c·d."""
    for cc in range(c):
        p = Ss[tid, cc]
        for x in range(acc.shape[0]):
            acc[x] += p * Vs[cc, x]
    return c + c * acc.shape[0]


@cuda.jit(device=True)
def fa2_inner(Qs, Ks, Vs, Ss, O_acc, m, l, tid, c, scale):  # noqa: E741 (the paper's names)
    """FlashAttention-2's inner loop for query row `tid` and one K/V tile of c rows (Algorithm 1, lines
    8–10 of Dao 2023): returns the new m and ℓ and the SRAM reads and writes it made."""
    m_new = score_row(Qs, Ks, Ss, tid, c, scale, m)
    row_sum = exponentiate_row(Ss, tid, c, m_new)
    alpha = float32(math.exp(m - m_new))  # exp(−∞) = 0 on the first tile: O_acc and ℓ are 0 anyway
    for x in range(O_acc.shape[0]):
        O_acc[x] *= alpha
    reads = 2 * c * Qs.shape[1] + c + accumulate_pv(Ss, Vs, O_acc, tid, c)
    return m_new, alpha * l + row_sum, reads, 2 * c


@functools.cache
def fa1_kernel(head_dim: int, block_rows: int, block_cols: int, counting: bool):
    """FlashAttention-1's forward pass (Algorithm 1): grid (B·H,), block (Br,), thread t owns row t of
    each Q block; O, ℓ, m live in HBM and pass through SRAM once per (K/V block, Q block)."""
    D, BR, BC = head_dim, block_rows, block_cols
    COUNTING = counting
    SCALE = scale_for(D)

    def fa1_forward(q, k, v, o, l, m, counters):  # noqa: E741
        # q, k, v, o: (B·H, N, d); l, m: (B·H, N)
        Qs = cuda.shared.array((BR, D), float32)
        Os = cuda.shared.array((BR, D), float32)
        Ks = cuda.shared.array((BC, D), float32)
        Vs = cuda.shared.array((BC, D), float32)
        Ss = cuda.shared.array((BR, BC), float32)
        ls = cuda.shared.array(BR, float32)
        ms = cuda.shared.array(BR, float32)
        acc = cuda.local.array(D, float32)  # P̃_ij V_j of my row, in registers
        tid = cuda.threadIdx.x
        bh = cuda.blockIdx.x
        n = q.shape[1]
        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        # Line 2: O = 0, ℓ = 0, m = −∞ in HBM.
        row = tid
        while row < n:
            for x in range(D):
                o[bh, row, x] = ZERO
            l[bh, row] = ZERO
            m[bh, row] = NEG_INF
            if COUNTING:
                n_gw += D + 2
            row += BR
        for j in range((n + BC - 1) // BC):  # line 5: the outer loop, over K/V blocks
            c = min(BC, n - j * BC)
            cuda.syncthreads()  # O, ℓ, m are initialised; everyone is done with K_{j-1}, V_{j-1}
            moved = copy_rows(Ks, k, bh, j * BC, c, tid, BR) + copy_rows(Vs, v, bh, j * BC, c, tid, BR)
            if COUNTING:
                n_gr += moved
                n_sw += moved
            for i in range((n + BR - 1) // BR):  # line 7: the inner loop, over Q blocks
                q0 = i * BR
                r = min(BR, n - q0)
                cuda.syncthreads()  # everyone is done with Q_{i-1}, O_{i-1}, S
                moved = copy_rows(Qs, q, bh, q0, r, tid, BR) + copy_rows(Os, o, bh, q0, r, tid, BR)
                moved += copy_stats(ls, l, bh, q0, r, tid, BR) + copy_stats(ms, m, bh, q0, r, tid, BR)
                if COUNTING:
                    n_gr += moved
                    n_sw += moved
                cuda.syncthreads()  # Q_i, O_i, ℓ_i, m_i are in before anyone reads them
                if tid < r:
                    # Lines 9-10: S_ij, m̃ = rowmax, P̃ = exp(S − m̃), ℓ̃ = rowsum; then P̃ V_j.
                    m_tile = score_row(Qs, Ks, Ss, tid, c, SCALE, NEG_INF)
                    l_tile = exponentiate_row(Ss, tid, c, m_tile)
                    for x in range(D):
                        acc[x] = ZERO
                    reads = 2 * c * D + c + accumulate_pv(Ss, Vs, acc, tid, c)
                    # Lines 11-13: m_new, ℓ_new, and O_i rescaled, written back from registers.
                    m_old = ms[tid]
                    l_old = ls[tid]
                    m_new = max(m_old, m_tile)
                    a = float32(math.exp(m_old - m_new)) * l_old
                    b = float32(math.exp(m_tile - m_new))
                    l_new = a + b * l_tile
                    inv_l = ONE / l_new
                    for x in range(D):
                        o[bh, q0 + tid, x] = (a * Os[tid, x] + b * acc[x]) * inv_l
                    l[bh, q0 + tid] = l_new
                    m[bh, q0 + tid] = m_new
                    if COUNTING:
                        n_sr += reads + D + 2
                        n_sw += 2 * c
                        n_gw += D + 2
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    return cuda.jit(fa1_forward)
