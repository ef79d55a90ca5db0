"""Standard attention on tensor cores in fp16/bf16 (kernel ``naive_tc``): S and P go through HBM.

The FlashAttention paper's Algorithm 0 in the input dtype, as a framework runs it, three launches:

    1. S = QKᵀ/√d      ``scores``: an output tile of Bm × Bn scores per block (W warps, Bm = 16·W),
                        Q and K tiles by cp.async, ldmatrix, mma; S rounded to the dtype and written
    2. P = softmax(S)  ``softmax``: one block of t threads per row, each keeping ⌈N_k/t⌉ scores in
                        registers; row max and row sum by warp shuffles, then across warps through
                        shared memory (fp32); P rounded to the dtype and written
    3. O = P V         ``pv``: a Bm × d output tile per block, looping over key chunks of Bk: P and
                        V tiles by cp.async (P's last chunk partly zero-filled), ldmatrix (.trans for
                        V), mma; O rounded to the dtype and written

S and P have a row stride of N_k rounded up to 8 elements, so that every row starts 16-byte aligned
(cp.async copies 16 bytes); only the N_q × N_k valid elements are written and read.

Variants: causal masking is applied by the softmax while it reads the whole row (S is computed
whole, as PyTorch's math path does), so the traffic equals the unmasked one; GQA/MQA reads K/V head
h // (H/H_kv); N_q ≠ N_k.

Counting build: as fa2_tc's, in bytes: a cp.async counts the source bytes it really reads (a
zero-filled part reads none) and 16 bytes written to shared memory; an ldmatrix.x4 16 bytes read per
lane; each softmax shared-memory access 4 bytes. simlib's ``naive_tc`` schedule counts the same.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, uint16  # module globals: the simulator swaps `cuda`

from ..counting import counts_from, new_counters, simulator_enabled
from ..flush import flush_counters
from ..tensor_core.dtypes import from_bits, to_bits
from ..tensor_core.fragments import tile_products
from ..tensor_core.tc_plan import TcPlan, check_scores_fit, checked_plan, upload
from ..tensor_core.tiles import tile_copier
from ..tensor_core.warp_ops import warp_ops
from .fa2_tc import TcConfig

#: Most scores a softmax thread keeps in registers (more threads per row above that).
MAX_PER_THREAD = 16
#: The three launches of one call, in order (their counters come back under these names).
LAUNCHES = ("scores", "softmax", "pv")
MAX_THREADS = 1024


def softmax_threads_for(nk: int) -> int:
    """t = 32·⌈⌈N_k/16⌉/32⌉, capped at 1024: at most 16 scores per thread up to N_k = 16384.
    Worked number: N_k = 4096 → 256 threads, 16 scores each."""
    per_thread = -(-nk // MAX_PER_THREAD)  # threads needed for 16 scores each
    return min(MAX_THREADS, 32 * -(-per_thread // 32))


@dataclass(frozen=True)
class NaiveTcConfig(TcConfig):
    """W warps (Bm = 16·W query rows per tile), Bn keys per S tile and Bk keys per PV chunk (Bn = Bk =
    block_cols); softmax threads per row (None: softmax_threads_for(N_k))."""

    softmax_threads: int | None = None

    BLOCK_MULTIPLE = (64, "a swizzled P tile")

    @property
    def smem_bytes(self) -> int:
        """The larger of the two matmuls' tiles: Q and K (Bm + Bn)·d, or P and V Bm·Bk + Bk·d."""
        bm, bc, d = self.block_rows, self.block_cols, self.head_dim
        return max((bm + bc) * d, bm * bc + bc * d) * 2

    def tiles(self) -> tuple[tuple[int, int], ...]:
        return super().tiles() + ((self.block_rows, self.block_cols),)

    def check(self):
        super().check()
        if self.warp_rows != 16 or not self.q_in_regs:
            raise ValueError("naive_tc: each warp owns one m16 tile of rows (warp_rows=16, Q in registers)")
        t = self.softmax_threads
        if t is not None and (
            not isinstance(t, int) or isinstance(t, bool) or t < 32 or t % 32 or t > MAX_THREADS
        ):
            raise ValueError(f"softmax_threads must be a multiple of 32 in 32..{MAX_THREADS}; got {t!r}")
        return self


@functools.cache
def scores_kernel(cfg: NaiveTcConfig, dtype: str, counting: bool, simulator: bool):
    """S = QKᵀ/√d in the dtype: one Bm × Bn tile per block, grid (⌈N_k/Bn⌉, ⌈N_q/Bm⌉, B·H)."""
    D, BN, BM, NT = cfg.head_dim, cfg.block_cols, cfg.block_rows, cfg.threads
    KQ, NS = D // 16, BN // 8
    Q_ELEMS, K_ELEMS = BM * D, BN * D
    COUNTING = counting
    mma, ldsm_x4, _, cp_async16, cp_commit, cp_wait_all, pack2, *_ = warp_ops(dtype, simulator)
    times_k = tile_products(mma, ldsm_x4, NS // 2, D, 16, 0, simulator)  # as fa2_tc's S = Q K_jᵀ
    copy_q = tile_copier(cp_async16, BM, D, NT, simulator)
    copy_k = tile_copier(cp_async16, BN, D, NT, simulator)
    SCALE = np.float32(1.0 / math.sqrt(D))
    ZERO = np.float32(0.0)
    LOW = np.uint32(0xFFFF)
    SIXTEEN = np.uint32(16)

    def scores(q, k, s, counters, n_q, n_k, ld, group):
        Qs = cuda.shared.array(Q_ELEMS, uint16)
        Ks = cuda.shared.array(K_ELEMS, uint16)
        acc = cuda.local.array((NS, 4), float32)
        tid = cuda.threadIdx.x
        lane = tid & 31
        w = tid >> 5
        g = lane >> 2
        tq = lane & 3
        k_start = cuda.blockIdx.x * BN
        q_start = cuda.blockIdx.y * BM
        bh = cuda.blockIdx.z
        kv_bh = bh // group
        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        got, put = copy_q(Qs, q, bh * n_q + q_start, D, 0, min(BM, n_q - q_start), D, tid)
        got2, put2 = copy_k(Ks, k, kv_bh * n_k + k_start, D, 0, min(BN, n_k - k_start), D, tid)
        cp_commit()
        cp_wait_all()
        cuda.syncthreads()
        if COUNTING:
            n_gr += got + got2
            n_sw += put + put2
        swz = lane & 7  # every ldmatrix row below is ≡ lane (mod 8); lane roles as in fa2_tc
        a_row = 16 * w + (lane & 7) + ((lane >> 3) & 1) * 8
        k_row = (lane & 7) + (lane >> 4) * 8
        for t in range(NS):
            for e in range(4):
                acc[t, e] = ZERO
        for kk in range(KQ):
            a0, a1, a2, a3 = ldsm_x4(Qs, a_row * D + (((2 * kk + (lane >> 4)) ^ swz) << 3))
            times_k(acc, a0, a1, a2, a3, Ks, k_row, 2 * kk + ((lane >> 3) & 1), swz)
        if COUNTING:
            n_sr += 16 * KQ * (1 + NS // 2)
        for h in range(2):  # my rows g and g + 8 of the warp's 16
            row = q_start + 16 * w + g + 8 * h
            if row < n_q:
                for t in range(NS):
                    col = k_start + 8 * t + 2 * tq
                    pair = pack2(acc[t, 2 * h] * SCALE, acc[t, 2 * h + 1] * SCALE)
                    if col < n_k:
                        s[(bh * n_q + row) * ld + col] = pair & LOW
                        if COUNTING:
                            n_gw += 2
                    if col + 1 < n_k:
                        s[(bh * n_q + row) * ld + col + 1] = pair >> SIXTEEN
                        if COUNTING:
                            n_gw += 2
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    scores.__name__ = scores.__qualname__ = f"naive_tc_scores_{dtype}_d{D}_w{cfg.warps}_bn{BN}" + (
        "_count" if COUNTING else ""
    )
    return cuda.jit(scores)


@functools.cache
def softmax_kernel(threads: int, per_thread: int, dtype: str, counting: bool, causal: bool, simulator: bool):
    """P = softmax(S) by rows in the dtype: grid (N_q, B·H), `threads` threads per row."""
    TPB, PER, WARPS = threads, per_thread, threads // 32
    COUNTING, CAUSAL = counting, causal
    *_, pack2, to_f32, _, _, warp_max, warp_sum = warp_ops(dtype, simulator)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)
    LOW = np.uint32(0xFFFF)

    def softmax(s, p, counters, n_q, n_k, ld):
        red_max = cuda.shared.array(WARPS, float32)  # one partial per warp; two arrays: no reuse hazard
        red_sum = cuda.shared.array(WARPS, float32)
        x = cuda.local.array(PER, float32)  # my scores tid, tid + t, ... of the row
        tid = cuda.threadIdx.x
        row = cuda.blockIdx.x
        base = (cuda.blockIdx.y * n_q + row) * ld
        reach = row + n_k - n_q  # causal: the last key this row sees (key 0 always: no empty row)
        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        mx = NEG_INF
        for e in range(PER):
            col = tid + e * TPB
            x[e] = NEG_INF
            if col < n_k:
                x[e] = to_f32(s[base + col])
                if COUNTING:
                    n_gr += 2
                if CAUSAL and col > reach:
                    x[e] = NEG_INF  # read all the same: the traffic is the unmasked one
            mx = max(mx, x[e])
        mx = warp_max(mx)
        if (tid & 31) == 0:
            red_max[tid >> 5] = mx
            if COUNTING:
                n_sw += 4
        cuda.syncthreads()
        for i in range(WARPS):  # everyone combines the warps' partials itself
            mx = max(mx, red_max[i])
        if COUNTING:
            n_sr += 4 * WARPS
        total = ZERO
        for e in range(PER):
            x[e] = float32(math.exp(x[e] - mx))  # exp(−∞) = 0 for masked keys and the padding
            total += x[e]
        total = warp_sum(total)
        if (tid & 31) == 0:
            red_sum[tid >> 5] = total
            if COUNTING:
                n_sw += 4
        cuda.syncthreads()
        total = ZERO
        for i in range(WARPS):
            total += red_sum[i]
        if COUNTING:
            n_sr += 4 * WARPS
        inv = ONE / total
        for e in range(PER):
            col = tid + e * TPB
            if col < n_k:
                p[base + col] = pack2(x[e] * inv, ZERO) & LOW
                if COUNTING:
                    n_gw += 2
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    softmax.__name__ = softmax.__qualname__ = (
        f"naive_tc_softmax_{dtype}_t{TPB}_per{PER}"
        + ("_causal" if CAUSAL else "")
        + ("_count" if COUNTING else "")
    )
    return cuda.jit(softmax)


@functools.cache
def pv_kernel(cfg: NaiveTcConfig, dtype: str, counting: bool, simulator: bool):
    """O = P V in the dtype: a Bm × d tile per block, key chunks of Bk, grid (⌈N_q/Bm⌉, B·H)."""
    D, BK, BM, NT = cfg.head_dim, cfg.block_cols, cfg.block_rows, cfg.threads
    KP, NO = BK // 16, D // 8
    P_ELEMS, V_ELEMS = BM * BK, BK * D
    COUNTING = counting
    mma, ldsm_x4, ldsm_x4_t, cp_async16, cp_commit, cp_wait_all, pack2, *_ = warp_ops(dtype, simulator)
    times_v = tile_products(mma, ldsm_x4_t, NO // 2, D, 0, 2, simulator)  # as fa2_tc's O += P V_j
    copy_p = tile_copier(cp_async16, BM, BK, NT, simulator, ragged_cols=True)
    copy_v = tile_copier(cp_async16, BK, D, NT, simulator)
    ZERO = np.float32(0.0)
    LOW = np.uint32(0xFFFF)
    SIXTEEN = np.uint32(16)

    def pv(p, v, o, counters, n_q, n_k, ld, group):
        Ps = cuda.shared.array(P_ELEMS, uint16)
        Vs = cuda.shared.array(V_ELEMS, uint16)
        acc = cuda.local.array((NO, 4), float32)
        tid = cuda.threadIdx.x
        lane = tid & 31
        w = tid >> 5
        g = lane >> 2
        tq = lane & 3
        q_start = cuda.blockIdx.x * BM
        bh = cuda.blockIdx.y
        kv_bh = bh // group
        r = min(BM, n_q - q_start)
        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        swz = lane & 7
        a_row = 16 * w + (lane & 7) + ((lane >> 3) & 1) * 8
        v_row = (lane & 7) + ((lane >> 3) & 1) * 8
        for t in range(NO):
            for e in range(4):
                acc[t, e] = ZERO
        for k0 in range(0, n_k, BK):
            c = min(BK, n_k - k0)
            cuda.syncthreads()  # everyone is done with the previous chunk
            got, put = copy_p(Ps, p, bh * n_q + q_start, ld, k0, r, c, tid)
            got2, put2 = copy_v(Vs, v, kv_bh * n_k + k0, D, 0, c, D, tid)
            cp_commit()
            cp_wait_all()
            cuda.syncthreads()
            if COUNTING:
                n_gr += got + got2
                n_sw += put + put2
            for kk in range(KP):
                a0, a1, a2, a3 = ldsm_x4(Ps, a_row * BK + (((2 * kk + (lane >> 4)) ^ swz) << 3))
                times_v(acc, a0, a1, a2, a3, Vs, 16 * kk + v_row, lane >> 4, swz)
            if COUNTING:
                n_sr += 16 * KP * (1 + NO // 2)
        for h in range(2):
            row = q_start + 16 * w + g + 8 * h
            if row < n_q:
                for t in range(NO):
                    pair = pack2(acc[t, 2 * h], acc[t, 2 * h + 1])
                    o[(bh * n_q + row) * D + 8 * t + 2 * tq] = pair & LOW
                    o[(bh * n_q + row) * D + 8 * t + 2 * tq + 1] = pair >> SIXTEEN
                if COUNTING:
                    n_gw += 2 * D // 4
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    pv.__name__ = pv.__qualname__ = f"naive_tc_pv_{dtype}_d{D}_w{cfg.warps}_bk{BK}" + (
        "_count" if COUNTING else ""
    )
    return cuda.jit(pv)


def row_stride(nk: int) -> int:
    """S and P rows are N_k rounded up to 8 elements: each row starts 16-byte aligned (N_k = 37 → 40)."""
    return -(-nk // 8) * 8


@dataclass(frozen=True)
class NaiveTcPlan(TcPlan):
    """The three launches: scores (⌈N_k/Bn⌉, ⌈N_q/Bm⌉, B·H), softmax (N_q, B·H), pv (⌈N_q/Bm⌉, B·H)."""

    @property
    def softmax_threads(self) -> int:
        t = self.config.softmax_threads
        return softmax_threads_for(self.shape[4]) if t is None else t

    def launch(self, q, k, v, s, p, o, counters, parts=LAUNCHES):
        """Flat device arrays (uint16 bits; s and p of B·H·N_q·row_stride(N_k)); three launches, no
        sync. ``counters``: one int64[4] array per launch (scores, softmax, pv). ``parts``: which of
        the three to launch (the energy run measures each alone, on the S and P the others left)."""
        b, h, hkv, nq, nk, d = self.shape
        cfg, sim = self.config, simulator_enabled()
        ld, group = row_stride(nk), h // hkv
        t = self.softmax_threads
        if "scores" in parts:
            scores_kernel(cfg, self.dtype, self.counting, sim)[
                (-(-nk // cfg.block_cols), -(-nq // cfg.block_rows), b * h), cfg.threads
            ](q, k, s, counters[0], nq, nk, ld, group)
        if "softmax" in parts:
            softmax_kernel(t, -(-nk // t), self.dtype, self.counting, self.causal, sim)[(nq, b * h), t](
                s, p, counters[1], nq, nk, ld
            )
        if "pv" in parts:
            pv_kernel(cfg, self.dtype, self.counting, sim)[(-(-nq // cfg.block_rows), b * h), cfg.threads](
                p, v, o, counters[2], nq, nk, ld, group
            )


def plan_naive_tc(
    q, k, v, *, dtype="bf16", config: NaiveTcConfig | None = None, counting=False, causal=False
) -> NaiveTcPlan:
    return checked_plan(
        NaiveTcPlan,
        q,
        k,
        v,
        dtype=dtype,
        config=config,
        default=lambda d: NaiveTcConfig(d).check(),
        counting=counting,
        causal=causal,
    )


@dataclass
class NaiveTcResult:
    o: np.ndarray  # (B, H, N_q, d) fp32 (the dtype's values)
    config: NaiveTcConfig
    softmax_threads: int
    counts: dict | None = None  # bytes, over the three launches
    counts_by_launch: dict | None = None  # {"scores": ..., "softmax": ..., "pv": ...}


def run_naive_tc(
    q, k, v, *, dtype="bf16", config: NaiveTcConfig | None = None, count=False, causal=False
) -> NaiveTcResult:
    """Standard attention on tensor cores for host fp32 arrays rounded to `dtype` (as run_fa2_tc).

    S, P and O are poisoned with the dtype's NaN before the launches. Inputs whose scores overflow the
    dtype (fp16: |s| > 65,504) are refused (plan.check_scores_fit): S is stored in the dtype."""
    plan = plan_naive_tc(q, k, v, dtype=dtype, config=config, counting=count, causal=causal)
    check_scores_fit(q, k, dtype, causal)
    b, h, _, nq, nk, d = plan.shape
    nan = to_bits(np.float32(np.nan), dtype)[0]
    dq, dk, dv = upload(dtype, q, k, v)
    ds, dp = (cuda.to_device(np.full(b * h * nq * row_stride(nk), nan, np.uint16)) for _ in range(2))
    do = cuda.to_device(np.full(b * h * nq * d, nan, np.uint16))
    counters = tuple(new_counters() for _ in range(3))
    plan.launch(dq, dk, dv, ds, dp, do, counters)
    if not simulator_enabled():
        cuda.synchronize()
    result = NaiveTcResult(
        o=from_bits(do.copy_to_host(), dtype).reshape(b, h, nq, d),
        config=plan.config,
        softmax_threads=plan.softmax_threads,
    )
    if count:
        by = {name: counts_from(c, unit_bytes=1) for name, c in zip(LAUNCHES, counters)}
        result.counts_by_launch = by
        result.counts = {key: sum(c[key] for c in by.values()) for key in by["scores"]}
    return result
