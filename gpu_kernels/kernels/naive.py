"""Standard attention, the FlashAttention paper's Algorithm 0 (kernel ``naive``).

Three launches, with the N×N matrices S and P written to and read back from HBM:

    1. S = scale · Q Kᵀ        shared-memory tiled matmul, square tile T
    2. P = softmax(S) by rows  one thread block of t threads per row, tree reductions in SRAM
    3. O = P V                 the same tiled matmul

This is the baseline whose HBM traffic grows with N²; compare ``gpu_kernels.kernels.tiled``.

Tiled matmul C (m×n) = alpha · A (m×k) · B (k×n), grid (⌈n/T⌉, ⌈m/T⌉, B·H), block (T, T):
thread (ty, tx) owns C[row, col]. For each chunk of T along k, the block copies a T×T tile of A and
of B into shared memory (each thread one element, only valid elements), then every thread does
its multiply-adds out of shared memory. Every element is read from HBM once per output tile that
needs it, so A is re-read ⌈n/T⌉ times and B ⌈m/T⌉ times (docs/COUNTING.md §naive).

Variants (the counts keep their form, with N_q query rows and N_k keys):

* causal (a compile-time constant of the softmax factory): S is still computed whole (N_q × N_k,
  as PyTorch's masked attention does); the softmax reads the whole row and treats keys beyond the
  row's reach (k > q + N_k − N_q, aligned bottom-right) as −∞, so P holds zeros there. The traffic
  is exactly the unmasked one.
* GQA / MQA: K and V have H_kv heads (H_kv dividing H); the matmuls read operand B (K or V) from
  head bh // (H / H_kv), so every query head still loads its K/V head's rows itself.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32  # module globals: the CUDA simulator swaps `cuda` in a kernel's globals

from simlib.kernel_layout import MATMUL_B_PAD

from ..checks import check_attention_inputs, resolve_naive_params, scale_for, softmax_per_thread
from ..counting import add_counts, counts_from, new_counters, simulator_enabled
from ..flush import flush_counters, jit_named
from ..plan import KernelPlan


@functools.cache
def matmul_kernel(tile: int, trans_b: bool, counting: bool):
    """C = alpha · A · B (trans_b=False, B is k×n) or alpha · A · Bᵀ (trans_b=True, B is n×k)."""
    T = tile
    T1 = tile + MATMUL_B_PAD  # padded Bs rows (simlib.kernel_layout); shapes must be plain constants
    TRANS_B = trans_b
    COUNTING = counting
    ZERO = np.float32(0.0)

    def matmul(a, b, c, alpha, counters):
        # a: (B·H, m, k); b: (B·H_kv, k, n) or (B·H_kv, n, k) if TRANS_B; c: (B·H, m, n)
        As = cuda.shared.array((T, T), float32)
        # Padded rows: the transposed store below writes a column of Bs, and a row stride of
        # T+1 floats puts those writes in different banks.
        Bs = cuda.shared.array((T, T1), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        bh = cuda.blockIdx.z
        # B is K or V, which may have fewer heads (GQA/MQA): query head bh uses K/V head bh // G,
        # G = B·H / B·H_kv = H / H_kv (G = 1 for multi-head attention: b_bh = bh).
        b_bh = bh // (c.shape[0] // b.shape[0])
        row0 = cuda.blockIdx.y * T
        col0 = cuda.blockIdx.x * T
        row = row0 + ty  # my output element C[row, col]
        col = col0 + tx
        m = c.shape[1]
        n = c.shape[2]
        kdim = a.shape[2]

        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        acc = ZERO
        for k0 in range(0, kdim, T):
            kk = min(T, kdim - k0)  # the last chunk along k may be short
            # A tile: As[ty, x] = A[row0 + ty, k0 + x]; a warp reads along a row (coalesced).
            if row < m and tx < kk:
                As[ty, tx] = a[bh, row, k0 + tx]
                if COUNTING:
                    n_gr += 1
                    n_sw += 1
            # B tile: Bs[x, tx] = B[k0 + x, col0 + tx].
            if TRANS_B:
                # B = Kᵀ with K stored (n, k): read a row of K along k (coalesced) and store it
                # transposed, so the inner loop below reads Bs the same way in both cases.
                brow = col0 + ty
                if brow < n and tx < kk:
                    Bs[tx, ty] = b[b_bh, brow, k0 + tx]
                    if COUNTING:
                        n_gr += 1
                        n_sw += 1
            else:
                if ty < kk and col < n:
                    Bs[ty, tx] = b[b_bh, k0 + ty, col]
                    if COUNTING:
                        n_gr += 1
                        n_sw += 1
            cuda.syncthreads()  # tiles complete before anyone multiplies
            if row < m and col < n:
                for x in range(kk):
                    acc += As[ty, x] * Bs[x, tx]
                    if COUNTING:
                        n_sr += 2
            cuda.syncthreads()  # everyone done with the tiles before the next chunk overwrites them
        if row < m and col < n:
            c[bh, row, col] = acc * alpha
            if COUNTING:
                n_gw += 1
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    return jit_named(matmul, (f"matmul_t{T}{'_bt' if TRANS_B else ''}{'_count' if COUNTING else ''}"))


@functools.cache
def softmax_kernel(threads: int, per_thread: int, counting: bool, causal: bool = False):
    """Row softmax, one block of ``threads`` threads per row, ⌈N_k/t⌉ elements per thread."""
    TPB = threads
    PER = per_thread
    COUNTING = counting
    CAUSAL = causal  # a closure constant like COUNTING: the plain build has no mask code
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)

    def softmax(s, p, counters):
        # s, p: (B·H, N_q, N_k); grid (N_q, B·H): block (row, bh) handles S[bh, row, :]
        red = cuda.shared.array(TPB, float32)  # scratch for the two tree reductions
        x = cuda.local.array(PER, float32)  # my share of the row, kept in registers
        tid = cuda.threadIdx.x
        row = cuda.blockIdx.x
        bh = cuda.blockIdx.y
        n = s.shape[2]
        if CAUSAL:
            reach = row + n - s.shape[1]  # the last key this row may see: row + N_k − N_q

        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0

        # Read my share of the row once: elements tid, tid + t, tid + 2t, ... (coalesced).
        my_max = NEG_INF
        for e in range(PER):
            col = tid + e * TPB
            if col < n:
                x[e] = s[bh, row, col]
                if COUNTING:
                    n_gr += 1
                if CAUSAL:
                    # The whole row is read either way (the traffic does not change); a key beyond
                    # the row's reach counts as −∞, so exp() below turns it into exactly 0. Key 0
                    # is always visible (N_q <= N_k), so the row max is finite: no NaN.
                    if col > reach:
                        x[e] = NEG_INF
                my_max = max(my_max, x[e])

        # Row max by a tree reduction: t partial writes, t-1 pair-combines, t reads of red[0].
        red[tid] = my_max
        if COUNTING:
            n_sw += 1
        cuda.syncthreads()
        stride = TPB // 2
        while stride > 0:
            if tid < stride:
                red[tid] = max(red[tid], red[tid + stride])
                if COUNTING:
                    n_sr += 2
                    n_sw += 1
            cuda.syncthreads()
            stride //= 2
        row_max = red[0]
        if COUNTING:
            n_sr += 1
        cuda.syncthreads()  # everyone has read red[0] before the next reduction reuses it

        # exp(x - max) never overflows: the largest term is exp(0) = 1 (numerically stable).
        my_sum = ZERO
        for e in range(PER):
            col = tid + e * TPB
            if col < n:
                x[e] = float32(math.exp(x[e] - row_max))
                my_sum += x[e]

        # Row sum by the same tree reduction.
        red[tid] = my_sum
        if COUNTING:
            n_sw += 1
        cuda.syncthreads()
        stride = TPB // 2
        while stride > 0:
            if tid < stride:
                red[tid] = red[tid] + red[tid + stride]
                if COUNTING:
                    n_sr += 2
                    n_sw += 1
            cuda.syncthreads()
            stride //= 2
        inv_sum = ONE / red[0]
        if COUNTING:
            n_sr += 1

        # Write P once.
        for e in range(PER):
            col = tid + e * TPB
            if col < n:
                p[bh, row, col] = x[e] * inv_sum
                if COUNTING:
                    n_gw += 1

        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    return jit_named(
        softmax, (f"softmax_t{TPB}_per{PER}{'_causal' if CAUSAL else ''}{'_count' if COUNTING else ''}")
    )


@dataclass
class NaiveResult:
    o: np.ndarray  # (B, H, N_q, d) fp32
    matmul_tile: int
    softmax_threads: int
    counts: dict | None = None  # totals over the three launches when count=True
    counts_by_launch: dict | None = None  # {"qk": ..., "softmax": ..., "pv": ...}


@dataclass(frozen=True, kw_only=True)
class NaivePlan(KernelPlan):
    matmul_tile: int
    softmax_threads: int

    def kernels(self):
        t, ts, cnt = self.matmul_tile, self.softmax_threads, self.counting
        per = softmax_per_thread(self.workload.nk, ts)
        return (
            matmul_kernel(t, True, cnt),
            softmax_kernel(ts, per, cnt, self.causal),
            matmul_kernel(t, False, cnt),
        )

    def grids(self):
        w = self.workload
        nq, nk, d, bh = w.nq, w.nk, w.head_dim, w.batch_heads
        t = self.matmul_tile
        return (
            ((-(-nk // t), -(-nq // t), bh), (t, t)),  # S = Q Kᵀ: N_q×N_k output
            ((nq, bh), (self.softmax_threads,)),  # one block per row
            ((-(-d // t), -(-nq // t), bh), (t, t)),  # O = P V: N_q×d output
        )

    def launch(self, q, k, v, s, p, o, counters):
        """Device arrays viewed as q, o (B·H, N_q, d), k, v (B·H_kv, N_k, d), s, p (B·H, N_q, N_k);
        three launches, no sync.

        ``counters`` holds one int64[4] device array per launch (the same one three times is
        fine; the timing build never touches it but numba needs a typed argument).
        """
        qk, sm, pv = self.kernels()
        (g1, b1), (g2, b2), (g3, b3) = self.grids()
        scale = scale_for(self.workload.head_dim)
        qk[g1, b1](q, k, s, scale, counters[0])
        sm[g2, b2](s, p, counters[1])
        pv[g3, b3](p, v, o, np.float32(1.0), counters[2])


def plan_naive(q, k, v, *, matmul_tile=None, softmax_threads=None, counting=False, causal=False) -> NaivePlan:
    workload = check_attention_inputs(q, k, v, causal=causal)
    t, ts = resolve_naive_params(workload, matmul_tile, softmax_threads, simulator=simulator_enabled())
    return NaivePlan(workload=workload, matmul_tile=t, softmax_threads=ts, counting=bool(counting))


def run_naive(q, k, v, *, matmul_tile=None, softmax_threads=None, count=False, causal=False) -> NaiveResult:
    """Standard attention on host fp32 arrays; returns O (+ counts).

    q is (B, H, N_q, d), k and v (B, H_kv, N_k, d) with H_kv dividing H (N_q = N_k and H_kv = H
    for plain multi-head self-attention); ``causal`` masks key k for query q when k > q + N_k − N_q.
    S, P and O are poisoned with NaN before the launches, so an element a kernel fails to write
    propagates to the output as NaN.
    """
    plan = plan_naive(
        q, k, v, matmul_tile=matmul_tile, softmax_threads=softmax_threads, counting=count, causal=causal
    )
    w = plan.workload
    bh, nq, n, d = w.batch_heads, w.nq, w.nk, w.head_dim
    dq, dk, dv = plan.device_inputs(q, k, v)
    ds = cuda.to_device(np.full((bh, nq, n), np.nan, dtype=np.float32))
    dp = cuda.to_device(np.full((bh, nq, n), np.nan, dtype=np.float32))
    do = cuda.to_device(np.full((bh, nq, d), np.nan, dtype=np.float32))
    counters = (new_counters(), new_counters(), new_counters())
    plan.launch(dq, dk, dv, ds, dp, do, counters)
    if not simulator_enabled():
        cuda.synchronize()
    result = NaiveResult(
        o=do.copy_to_host().reshape(w.batch, w.heads, nq, d),
        matmul_tile=plan.matmul_tile,
        softmax_threads=plan.softmax_threads,
    )
    if count:
        by_launch = {name: counts_from(c) for name, c in zip(("qk", "softmax", "pv"), counters)}
        total = by_launch["qk"]
        for name in ("softmax", "pv"):
            total = add_counts(total, by_launch[name])
        result.counts = total
        result.counts_by_launch = by_launch
    return result
