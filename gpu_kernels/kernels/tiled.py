"""FlashAttention-2 forward pass, written to be read (kernel ``tiled``).

The idea (Dao et al. 2022, Dao 2023): never write the N×N score matrix to HBM. Each thread block
owns one block of Br query rows, keeps it in shared memory (SRAM), and streams the keys and values
past it in blocks of Bc rows. Softmax is computed *online*: each query row keeps its running max m
and running sum l of exponentials in registers, and rescales its output accumulator whenever the
max grows. HBM sees Q once, K and V once per query block (Tr times), O and L once.

Mapping (the simplest one that shows the algorithm, as in tspeterkim/flash-attention-minimal):

    grid   = (Tr, B·H)        one thread block per (query block i, batch·head)
    block  = (Br,)            one thread per query row of the block
    shared = Qs[Br, d + 4], Ks[Bc, d], Vs[Bc, d], Ss[Br, Bc + 1]   (padding: simlib.kernel_layout)
    per-thread registers: m, l, and the output row O_acc[d] (a local array)

The arithmetic, and therefore the SRAM counts, follow docs/COUNTING.md §fa2 exactly:
scores written to Ss (running max in a register), P written over S, O_i += P V reading p from Ss
and a V row from Vs. The counters are described in ``gpu_kernels.counting``.

Variants (docs/COUNTING.md §fa2):

* causal (a compile-time constant of the factory, so the plain build has no trace of it): query
  row q sees keys k ≤ q + N_k − N_q (aligned bottom-right, as FlashAttention-2). A Q block skips
  every K/V tile that starts beyond the reach of its last valid row; the tiles it does visit are
  computed whole and the masked scores are set to −∞ before they are written to Ss, so the counts
  are those of the whole visited tiles, exactly as simlib's ``visits.key_blocks_seen`` says.
* GQA / MQA: K and V have H_kv heads, H_kv dividing H; query head h reads K/V head h // (H / H_kv).
  Still one thread block per query head, so every query head streams its K/V head from HBM itself
  (simlib's model: no reuse across the group in the forward pass).
* N_q ≠ N_k (``query_len``): Q and O have N_q rows, K and V N_k.

This kernel is for teaching, not for speed: one thread per row leaves most of the chip idle at
small Br, and every product reads both operands from shared memory.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32  # module globals: the CUDA simulator swaps `cuda` in a kernel's globals

from simlib.kernel_layout import tiled_layout

from ..checks import check_attention_inputs, resolve_tiled_blocks, scale_for
from ..counting import counts_from, new_counters, simulator_enabled
from ..flush import flush_counters, jit_named
from ..plan import KernelPlan
from ..timers import block_clocks


@functools.cache
def fa2_kernel(
    head_dim: int, block_rows: int, block_cols: int, counting: bool, causal: bool = False, trace: bool = False
):
    """Compile-time shapes: one kernel per (d, Br, Bc, counting, causal, trace).

    ``trace`` (a diagnostic, benchmarks/h200_diagnostics.py): thread 0 of each block records its SM
    and the GPU clock at its start and end in ``counters[4 + 3·block + 0, 1, 2]`` (block = bh·Tr + i),
    so the caller passes an int64 array of 4 + 3·blocks. Off, the branches vanish like COUNTING's."""
    D, BR, BC = head_dim, block_rows, block_cols
    QS_COLS, SS_COLS = tiled_layout(
        BR, BC, D
    )  # padded rows (simlib.kernel_layout); plain constants for numba
    COUNTING = counting
    CAUSAL = causal  # a closure constant like COUNTING: `if CAUSAL:` vanishes from the plain build
    TRACE = trace
    smid, now = block_clocks()
    SCALE = scale_for(D)  # float32(1/sqrt(d)): a Python float would turn the arithmetic into float64
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)

    # Why some hot loops below are `while` loops: numba lowers `for x in range(n)` to an iterator
    # whose index LLVM cannot prove non-negative, so every array access in the loop keeps numba's
    # negative-index wrap-around (`if x < 0: x += shape`) in 64-bit arithmetic. In the QK loop that
    # was 22 instructions per multiply-add on sm_90, and it also stops the compiler from merging
    # four Q (or K) reads into one 16-byte load. An explicit counter from 0 upwards is provably
    # non-negative: the QK loop became 120 instructions for 64 multiply-adds (ptxas 13.0, d = 64).
    # Loops that only touch the register array O_acc are fully unrolled either way and stay `for`.

    def fa2_forward(q, k, v, o, lse, counters):
        # q, o: (B·H, N_q, d); k, v: (B·H_kv, N_k, d); lse: (B·H, N_q); counters: int64[4]
        Qs = cuda.shared.array((BR, QS_COLS), float32)
        Ks = cuda.shared.array((BC, D), float32)
        Vs = cuda.shared.array((BC, D), float32)
        Ss = cuda.shared.array((BR, SS_COLS), float32)
        O_acc = cuda.local.array(D, float32)  # this thread's output row, in registers/local memory

        tid = cuda.threadIdx.x  # my query row inside the block
        i = cuda.blockIdx.x  # which query block
        bh = cuda.blockIdx.y  # which batch·(query) head
        # GQA/MQA: the G = H / H_kv query heads b·H + g·G ... b·H + g·G + G − 1 share K/V head
        # b·H_kv + g, which is bh // G (B·H / B·H_kv = G). For multi-head attention G = 1: kv_bh = bh.
        kv_bh = bh // (q.shape[0] // k.shape[0])
        n_q = q.shape[1]
        n_k = k.shape[1]
        if TRACE:
            slot = 4 + 3 * (bh * cuda.gridDim.x + i)
            if tid == 0:
                counters[slot] = smid()
                counters[slot + 1] = now()
        q_start = i * BR
        r = min(BR, n_q - q_start)  # valid rows in this block: the last block may be ragged
        Tc = (n_k + BC - 1) // BC
        if CAUSAL:
            # Query row q may see keys k <= q + off (bottom-right aligned: the last query sees every
            # key). K/V tile j starts at key j·Bc; once that start lies beyond what this block's
            # last valid row may see, the tile and all later ones are fully masked: stop before them.
            # The bound is the same for every thread of the block, so the syncthreads() in the loop
            # below are still reached by all of them.
            off = n_k - n_q
            Tc = min(Tc, (q_start + r - 1 + off) // BC + 1)
            reach = q_start + tid + off  # the last key my row may see

        # Per-thread access counters (registers; free when COUNTING is False: the branches vanish).
        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0

        # --- Load Q_i once. All Br threads copy the r×d tile together: consecutive threads take
        # consecutive elements, so a warp reads one contiguous stretch of HBM (coalesced).
        idx = tid
        while idx < r * D:
            row = idx // D
            col = idx - row * D
            Qs[row, col] = q[bh, q_start + row, col]
            if COUNTING:
                n_gr += 1
                n_sw += 1
            idx += BR

        m = NEG_INF  # running max of this row's scores
        l = ZERO  # running sum of exp(score - m)  # noqa: E741 (the paper's name)
        for x in range(D):
            O_acc[x] = ZERO

        for j in range(Tc):
            k_start = j * BC
            c = min(BC, n_k - k_start)  # valid key rows in this K/V block
            # Everyone must be done with the previous K_j, V_j before they are overwritten
            # (and, for j = 0, the Q_i tile must be complete before anyone reads it).
            cuda.syncthreads()
            idx = tid
            while idx < c * D:
                row = idx // D
                col = idx - row * D
                Ks[row, col] = k[kv_bh, k_start + row, col]
                Vs[row, col] = v[kv_bh, k_start + row, col]
                if COUNTING:
                    n_gr += 2
                    n_sw += 2
                idx += BR
            cuda.syncthreads()  # K_j, V_j complete before anyone reads them

            if tid < r:  # threads of a ragged block's missing rows only help with the loads
                # S_ij = scale · Q_i K_jᵀ, one row per thread; track the new row max on the way.
                m_new = m
                for cc in range(c):
                    s = ZERO
                    x = 0
                    while x < D:
                        s += Qs[tid, x] * Ks[cc, x]
                        if COUNTING:
                            n_sr += 2
                        x += 1
                    s *= SCALE
                    if CAUSAL:
                        # A visited tile is computed whole (the dot product above is done and
                        # counted); a key beyond my reach gets score −∞, so exp() makes it 0 below.
                        if k_start + cc > reach:
                            s = NEG_INF
                    Ss[tid, cc] = s
                    if COUNTING:
                        n_sw += 1
                    m_new = max(m_new, s)

                # While every score seen so far is −∞ (K rows of −∞, or keys masked away), m_new is
                # −∞ and exp(−∞ − m_new) would be NaN: measure from 0 instead, so those scores give
                # p = 0 and the (still zero) sum and output are left as they are.
                m_ref = ZERO if m_new == NEG_INF else m_new

                # P̃_ij = exp(S_ij − m_new), written over S (nobody needs S again).
                row_sum = ZERO
                cc = 0
                while cc < c:
                    p = float32(math.exp(Ss[tid, cc] - m_ref))
                    Ss[tid, cc] = p
                    if COUNTING:
                        n_sr += 1
                        n_sw += 1
                    row_sum += p
                    cc += 1

                # Online softmax: the old sum and output were scaled by exp(-m); rescale them to
                # exp(-m_new). While m = -inf, alpha = 0 (l and O_acc are 0 anyway).
                alpha = float32(math.exp(m - m_ref))
                l = alpha * l + row_sum  # noqa: E741
                for x in range(D):
                    O_acc[x] *= alpha

                # O_i += P̃_ij V_j: read p once, then a whole V row.
                for cc in range(c):
                    p = Ss[tid, cc]
                    if COUNTING:
                        n_sr += 1
                    for x in range(D):
                        O_acc[x] += p * Vs[cc, x]
                        if COUNTING:
                            n_sr += 1
                m = m_new

        # --- Write O_i = O_acc / l and the logsumexp L_i = m + log(l), once each.
        if tid < r:
            inv_l = ONE / l
            for x in range(D):
                o[bh, q_start + tid, x] = O_acc[x] * inv_l
            lse[bh, q_start + tid] = m + float32(math.log(l))
            if COUNTING:
                n_gw += D + 1

        if TRACE:
            cuda.syncthreads()  # the block's last thread is done
            if tid == 0:
                counters[slot + 2] = now()
        if COUNTING:  # one atomic per counter per thread
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    return jit_named(
        fa2_forward,
        (
            f"fa2_forward_d{D}_br{BR}_bc{BC}{'_causal' if CAUSAL else ''}{'_count' if COUNTING else ''}"
            f"{'_trace' if TRACE else ''}"
        ),
    )


@dataclass
class TiledResult:
    o: np.ndarray  # (B, H, N_q, d) fp32
    lse: np.ndarray  # (B, H, N_q) fp32
    block_rows: int
    block_cols: int
    counts: dict | None = None  # hbm/sram read/write bytes when count=True


@dataclass(frozen=True, kw_only=True)
class TiledPlan(KernelPlan):
    """Everything a launch needs; built once, launched many times (the benchmark does)."""

    block_rows: int
    block_cols: int
    trace: bool = False  # record each block's SM and start/end clock (fa2_kernel's `trace`)

    @property
    def grid(self):
        return (-(-self.workload.nq // self.block_rows), self.workload.batch_heads)

    @property
    def block(self):
        return (self.block_rows,)

    def kernel(self):
        return fa2_kernel(
            self.workload.head_dim, self.block_rows, self.block_cols, self.counting, self.causal, self.trace
        )

    def launch(self, q, k, v, o, lse, counters):
        """Device arrays viewed as q, o (B·H, N_q, d), k, v (B·H_kv, N, d), lse (B·H, N_q); no
        checks, no sync."""
        self.kernel()[self.grid, self.block](q, k, v, o, lse, counters)


def plan_tiled(q, k, v, *, block_rows=None, block_cols=None, counting=False, causal=False) -> TiledPlan:
    workload = check_attention_inputs(q, k, v, causal=causal)
    br, bc = resolve_tiled_blocks(workload, block_rows, block_cols)
    return TiledPlan(workload=workload, block_rows=br, block_cols=bc, counting=bool(counting))


def run_tiled(q, k, v, *, block_rows=None, block_cols=None, count=False, causal=False) -> TiledResult:
    """FlashAttention-2 forward on host fp32 arrays; returns O, L (+ counts).

    q is (B, H, N_q, d), k and v (B, H_kv, N_k, d) with H_kv dividing H (N_q = N_k and H_kv = H
    for plain multi-head self-attention); ``causal`` masks key k for query q when k > q + N_k − N_q.
    Outputs are poisoned with NaN before the launch, so an element the kernel fails to write
    shows up as NaN.
    """
    plan = plan_tiled(q, k, v, block_rows=block_rows, block_cols=block_cols, counting=count, causal=causal)
    w = plan.workload
    bh, nq, d = w.batch_heads, w.nq, w.head_dim
    dq, dk, dv = plan.device_inputs(q, k, v)
    do = cuda.to_device(np.full((bh, nq, d), np.nan, dtype=np.float32))
    dl = cuda.to_device(np.full((bh, nq), np.nan, dtype=np.float32))
    counters = new_counters()
    plan.launch(dq, dk, dv, do, dl, counters)
    if not simulator_enabled():
        cuda.synchronize()
    return TiledResult(
        o=do.copy_to_host().reshape(w.batch, w.heads, nq, d),
        lse=dl.copy_to_host().reshape(w.batch, w.heads, nq),
        block_rows=plan.block_rows,
        block_cols=plan.block_cols,
        counts=counts_from(counters) if count else None,
    )
