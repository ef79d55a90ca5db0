"""FlashAttention-2 forward on tensor cores, fp16 or bf16 in, fp32 accumulation (kernel ``fa2_tc``).

The algorithm is the readable ``tiled`` kernel's (outer loop over Q blocks, K and V streamed past,
online softmax with a running max m and sum l per row, O and the logsumexp L written once); what
changes is who does the arithmetic. The products run on the tensor cores as warp-wide
``mma.sync.m16n8k16`` (a 16×16 by 16×8 product per instruction), S and P never leave registers,
and P is rounded to the input dtype for the PV product, exactly as FlashAttention-2 does.

Mapping (compile-time constants of ``TcConfig``):

    grid    = (Tr, B·H)          one thread block per (query block i, batch·head)
    block   = W warps            warp w owns query rows 16w .. 16w + 15 of the block: Br = 16·W
    shared  = Qs[Br×d], Ks[Bc×d], Vs[Bc×d]  (16-bit, rows swizzled: 16-byte chunk c of row r is
              stored at chunk c ^ (r mod 8), so the 8 rows an ldmatrix reads hit 8 different bank groups)
    registers per lane: Q fragments (d/16 × 4 regs, loaded once), S/P (Bc/8 × 4 fp32), O (d/8 × 4 fp32),
              m and l for its two rows (lane 4g + t holds rows g and g + 8 of its warp's 16)

Per Q block: Q_i lands in Qs by cp.async and goes to registers with ldmatrix, once. Then the K/V
blocks are visited from the last to the first (as FlashAttention-2 does: under causal masking the
partly masked diagonal blocks come first, so a row's first blocks may be fully masked: its running
max is still −∞, its p are exp2(−∞) = 0 and its rescale factor is 1). Per K/V block j:

    1. wait for K_j, barrier; start the cp.async of V_j (it lands while step 2 runs)
    2. S = Q K_jᵀ: per 16 head-dim columns and 16 keys, one ldmatrix.x4 of K and two mma
    3. mask (keys past N, and causal), row max over the quad of lanes sharing a row (two shuffles),
       P = exp2(S·c − m) with c = log2(e)/√d, rescale l and O by exp2(m_old − m_new)
    4. wait for V_j, barrier; start the cp.async of K_j−1 (it lands while step 5 runs)
    5. O += P V_j: P rounded to the dtype and packed in registers into mma A fragments (the S
       accumulator layout of two n-tiles is the A layout of one k-step: no data movement), per 16 keys
       and 16 head-dim columns one ldmatrix.x4.trans of V and two mma

At the end the row sums are reduced over the quad, O = O / l is rounded to the dtype and written,
and L = (m + log2 l)·ln 2 in fp32. Rows past N_q (a ragged last Q block) and keys past N_k are
zero-filled in shared memory and computed whole; they are never written, and masked keys get −∞.

Counting build: every thread counts the bytes it moves (registers are free; an ldmatrix.x4 reads 16
bytes per lane; a cp.async of 16 bytes is 16 bytes read from global memory, or none when it
zero-fills, and 16 bytes written to shared memory) and adds them with one atomic per counter at the
end. The counters hold bytes (the outputs mix 2-byte O and 4-byte L). simlib's ``fa2_tc`` schedule
counts the same.

Variants: causal (bottom-right aligned, key k visible to query q when k ≤ q + N_k − N_q; a Q block
skips the K/V blocks beyond its last valid row's reach), GQA/MQA (query head h reads K/V head
h // (H/H_kv)), N_q ≠ N_k. Head dims 64 and 128.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, uint16, uint32  # module globals: the simulator swaps `cuda`

from ..counting import new_counters, simulator_enabled
from ..flush import flush_counters
from ..tensor_core.dtypes import check_dtype, from_bits, to_bits
from ..tensor_core.fragments import tile_products
from ..tensor_core.plan import TcPlan, checked_plan, counts_from_bytes, upload
from ..tensor_core.tiles import tile_copier
from ..tensor_core.warp_ops import warp_ops

HEAD_DIMS = (64, 128)
#: numba has no opt-in above 48 KiB for static shared memory.
STATIC_SHARED_LIMIT = 48 * 1024
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@dataclass(frozen=True)
class TcConfig:
    """Compile-time shape: head dim d, W warps (Br = 16·W query rows), Bc keys per K/V block."""

    head_dim: int
    warps: int = 4
    block_cols: int = 64

    #: Bc must be a multiple of this, and why (naive_tc's P tile needs whole swizzle rows: 64)
    BLOCK_MULTIPLE = (16, "one mma k-step")

    @property
    def block_rows(self) -> int:
        return 16 * self.warps

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def smem_bytes(self) -> int:
        return (self.block_rows + 2 * self.block_cols) * self.head_dim * 2

    def tiles(self) -> tuple[tuple[int, int], ...]:
        """(rows, cols) of every tile the threads copy: each must split into 16-byte chunks evenly."""
        return ((self.block_rows, self.head_dim), (self.block_cols, self.head_dim))

    def check(self):
        d, w, bc = self.head_dim, self.warps, self.block_cols
        multiple, why = self.BLOCK_MULTIPLE
        if d not in HEAD_DIMS:
            raise ValueError(f"head_dim={d}: the tensor-core kernels support head_dim 64 and 128 only")
        if not isinstance(w, int) or isinstance(w, bool) or not 1 <= w <= 8:
            raise ValueError(f"warps must be an int in 1..8; got {w!r}")
        if not isinstance(bc, int) or isinstance(bc, bool) or bc < multiple or bc % multiple:
            raise ValueError(f"block_cols must be a positive multiple of {multiple} ({why}); got {bc!r}")
        if any((rows * cols // 8) % self.threads for rows, cols in self.tiles()):
            raise ValueError(
                f"block_cols={bc}: the tiles {self.tiles()} must split into 16-byte copies evenly "
                f"over {self.threads} threads"
            )
        if self.smem_bytes > STATIC_SHARED_LIMIT:
            raise ValueError(
                f"block_cols={bc}, warps={w}, head_dim={d} need {self.smem_bytes} bytes of shared "
                f"memory; at most {STATIC_SHARED_LIMIT}"
            )
        return self


#: Bc per head dim: 64 at d = 64 (run tc_run3: 1.48 ms against 1.67 ms with Bc = 128 at N = 4096, 21.1
#: against 25.0 ms at 16384; run tc_run2, before a copier change, had measured the opposite:
#: PERFORMANCE.md); 64 at d = 128, the most that fits 48 KiB with Br = 64. simlib's fa2_tc schedule
#: has the same table.
DEFAULT_BLOCK_COLS = {64: 64, 128: 64}


def default_config(head_dim: int) -> TcConfig:
    """4 warps (Br = 64), Bc = 64: Qs, Ks, Vs need 24 KiB (d = 64) and 48 KiB (d = 128)."""
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim={head_dim}: the tensor-core kernels support head_dim 64 and 128 only")
    return TcConfig(head_dim, 4, DEFAULT_BLOCK_COLS[head_dim]).check()


@functools.cache
def fa2_tc_kernel(cfg: TcConfig, dtype: str, counting: bool, causal: bool, simulator: bool):
    """The kernel for one (config, dtype, build); compiled on first launch."""
    D, BC, BR, NT = cfg.head_dim, cfg.block_cols, cfg.block_rows, cfg.threads
    KQ, NS, NO, KP = D // 16, BC // 8, D // 8, BC // 16  # Q k-steps, S n-tiles, O n-tiles, P k-steps
    Q_ELEMS, KV_ELEMS = BR * D, BC * D  # array shapes must be plain constants for numba
    COUNTING, CAUSAL = counting, causal
    # numba resolves a closure variable that is a function, not an attribute of a tuple: unpack
    mma, ldsm_x4, ldsm_x4_t, cp_async16, cp_commit, cp_wait_all, pack2, _, quad_max, quad_sum, _, _ = (
        warp_ops(dtype, simulator)
    )
    # B = K_jᵀ: 16 keys per pair of n-tiles; B = V_j (transposed on the way): 16 head-dim columns per pair
    times_k = tile_products(mma, ldsm_x4, NS // 2, D, 16, 0, simulator)
    times_v = tile_products(mma, ldsm_x4_t, NO // 2, D, 0, 2, simulator)
    copy_q = tile_copier(cp_async16, BR, D, NT, simulator)
    copy_kv = tile_copier(cp_async16, BC, D, NT, simulator)
    C = np.float32(LOG2E / math.sqrt(D))  # softmax scale in base 2: exp(s/√d) = exp2(s·c)
    F_LN2 = np.float32(LN2)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)
    LOW = np.uint32(0xFFFF)
    SIXTEEN = np.uint32(16)

    def fa2_tc(q, k, v, o, lse, counters, n_q, n_k, group):
        # q, o: flat (B·H·N_q·d,) uint16 bits; k, v: flat (B·H_kv·N_k·d,); lse: (B·H·N_q,) fp32
        Qs = cuda.shared.array(Q_ELEMS, uint16)
        Ks = cuda.shared.array(KV_ELEMS, uint16)
        Vs = cuda.shared.array(KV_ELEMS, uint16)
        qa = cuda.local.array((KQ, 4), uint32)  # Q fragments (A operand), all of d
        s = cuda.local.array((NS, 4), float32)  # S, then P, of my warp's 16 rows × Bc
        acc = cuda.local.array((NO, 4), float32)  # O of my warp's 16 rows × d

        tid = cuda.threadIdx.x
        lane = tid & 31
        w = tid >> 5
        g = lane >> 2  # my rows are 16w + g and 16w + g + 8
        tq = lane & 3  # my columns inside each 8-wide n-tile: 2tq, 2tq + 1
        i = cuda.blockIdx.x
        bh = cuda.blockIdx.y
        kv_bh = bh // group  # GQA/MQA: `group` query heads share a K/V head
        q_start = i * BR
        r = min(BR, n_q - q_start)  # valid query rows of this block
        tc = (n_k + BC - 1) // BC
        off = n_k - n_q  # causal: query q sees keys <= q + off
        if CAUSAL:
            tc = min(tc, (q_start + r - 1 + off) // BC + 1)  # blocks past the last row's reach: skipped
        row_lo = q_start + 16 * w + g
        row_hi = row_lo + 8

        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0

        # --- Q_i and the last visited K block in flight; Q to registers once it has landed.
        got, put = copy_q(Qs, q, bh * n_q + q_start, D, 0, r, D, tid)
        j = tc - 1
        got2, put2 = copy_kv(Ks, k, kv_bh * n_k + j * BC, D, 0, min(BC, n_k - j * BC), D, tid)
        cp_commit()
        if COUNTING:
            n_gr += got + got2
            n_sw += put + put2
        cp_wait_all()
        cuda.syncthreads()
        # ldmatrix lane roles: A (Q) matrices are (rows 0-7 | 8-15) × (k 0-7 | 8-15), lane 8m + x gives
        # row x of matrix m; B (K) matrices are (keys 0-7 | 8-15) × (k 0-7 | 8-15) in the order b0, b1
        # of n-tile 2p, then of 2p + 1. Every row index used is ≡ lane (mod 8), so the swizzle is lane & 7.
        swz = lane & 7
        a_row = 16 * w + (lane & 7) + ((lane >> 3) & 1) * 8
        a_ch = lane >> 4
        for kk in range(KQ):
            qa[kk, 0], qa[kk, 1], qa[kk, 2], qa[kk, 3] = ldsm_x4(
                Qs, a_row * D + (((2 * kk + a_ch) ^ swz) << 3)
            )
        if COUNTING:
            n_sr += 16 * KQ
        k_row = (lane & 7) + (lane >> 4) * 8
        k_ch = (lane >> 3) & 1
        v_row = (lane & 7) + ((lane >> 3) & 1) * 8
        v_ch = lane >> 4

        m_lo = NEG_INF  # running max of my two rows, in base-2 units (scores · c)
        m_hi = NEG_INF
        l_lo = ZERO  # my partial running sums (my columns only; reduced over the quad at the end)
        l_hi = ZERO
        for t in range(NO):
            for e in range(4):
                acc[t, e] = ZERO

        for jj in range(tc):
            j = tc - 1 - jj  # last block first
            k_start = j * BC
            c = min(BC, n_k - k_start)  # valid keys of this block
            if jj > 0:
                cp_wait_all()  # my copies of K_j have landed
                cuda.syncthreads()  # everyone's; and everyone is done reading V_j+1
            got, put = copy_kv(Vs, v, kv_bh * n_k + k_start, D, 0, c, D, tid)
            cp_commit()
            if COUNTING:
                n_gr += got
                n_sw += put

            # --- S = Q K_jᵀ
            for t in range(NS):
                for e in range(4):
                    s[t, e] = ZERO
            for kk in range(KQ):
                times_k(s, qa[kk, 0], qa[kk, 1], qa[kk, 2], qa[kk, 3], Ks, k_row, 2 * kk + k_ch, swz)
            if COUNTING:
                n_sr += 16 * KQ * (NS // 2)

            # --- mask: keys past N_k, and (causal) keys beyond my row's reach, get −∞
            if c < BC or (CAUSAL and k_start + BC - 1 > q_start + 16 * w + off):
                for t in range(NS):
                    for e in range(2):
                        col = k_start + 8 * t + 2 * tq + e
                        if col >= n_k or (CAUSAL and col > row_lo + off):
                            s[t, e] = NEG_INF
                        if col >= n_k or (CAUSAL and col > row_hi + off):
                            s[t, 2 + e] = NEG_INF

            # --- online softmax of my two rows; the 4 lanes of a quad share a row
            mx_lo = s[0, 0]
            mx_hi = s[0, 2]
            for t in range(NS):
                mx_lo = max(mx_lo, max(s[t, 0], s[t, 1]))
                mx_hi = max(mx_hi, max(s[t, 2], s[t, 3]))
            m_new_lo = max(m_lo, quad_max(mx_lo) * C)
            m_new_hi = max(m_hi, quad_max(mx_hi) * C)
            # a row that has seen only masked keys keeps m = −∞: subtract 0 instead (p = exp2(−∞) = 0)
            # and leave l and O as they are (rescale 1), so no −∞ − (−∞) = NaN appears
            mu_lo = ZERO if m_new_lo == NEG_INF else m_new_lo
            mu_hi = ZERO if m_new_hi == NEG_INF else m_new_hi
            alpha_lo = ONE if m_lo == NEG_INF else float32(math.exp2(m_lo - mu_lo))
            alpha_hi = ONE if m_hi == NEG_INF else float32(math.exp2(m_hi - mu_hi))
            m_lo = m_new_lo
            m_hi = m_new_hi
            sum_lo = ZERO
            sum_hi = ZERO
            for t in range(NS):
                for e in range(2):
                    p_lo = float32(math.exp2(s[t, e] * C - mu_lo))
                    p_hi = float32(math.exp2(s[t, 2 + e] * C - mu_hi))
                    s[t, e] = p_lo
                    s[t, 2 + e] = p_hi
                    sum_lo += p_lo
                    sum_hi += p_hi
            l_lo = l_lo * alpha_lo + sum_lo  # the fp32 p, before they are rounded for the mma (as FA2)
            l_hi = l_hi * alpha_hi + sum_hi
            for t in range(NO):
                acc[t, 0] *= alpha_lo
                acc[t, 1] *= alpha_lo
                acc[t, 2] *= alpha_hi
                acc[t, 3] *= alpha_hi

            cp_wait_all()  # my copies of V_j have landed
            cuda.syncthreads()  # everyone's; and everyone is done reading K_j
            if j > 0:
                got, put = copy_kv(Ks, k, kv_bh * n_k + k_start - BC, D, 0, BC, D, tid)
                cp_commit()
                if COUNTING:
                    n_gr += got
                    n_sw += put

            # --- O += P V_j: n-tiles 2kk, 2kk + 1 of P are the A fragment of k-step kk
            for kk in range(KP):
                a0 = pack2(s[2 * kk, 0], s[2 * kk, 1])
                a1 = pack2(s[2 * kk, 2], s[2 * kk, 3])
                a2 = pack2(s[2 * kk + 1, 0], s[2 * kk + 1, 1])
                a3 = pack2(s[2 * kk + 1, 2], s[2 * kk + 1, 3])
                times_v(acc, a0, a1, a2, a3, Vs, 16 * kk + v_row, v_ch, swz)
            if COUNTING:
                n_sr += 16 * KP * (NO // 2)

        # --- O = O / l in the dtype, L = (m + log2 l)·ln 2 in fp32
        l_lo = quad_sum(l_lo)
        l_hi = quad_sum(l_hi)
        inv_lo = ONE / l_lo
        inv_hi = ONE / l_hi
        for t in range(NO):
            col = 8 * t + 2 * tq
            lo = pack2(acc[t, 0] * inv_lo, acc[t, 1] * inv_lo)
            hi = pack2(acc[t, 2] * inv_hi, acc[t, 3] * inv_hi)
            if row_lo < n_q:
                o[(bh * n_q + row_lo) * D + col] = lo & LOW
                o[(bh * n_q + row_lo) * D + col + 1] = lo >> SIXTEEN
                if COUNTING:
                    n_gw += 4
            if row_hi < n_q:
                o[(bh * n_q + row_hi) * D + col] = hi & LOW
                o[(bh * n_q + row_hi) * D + col + 1] = hi >> SIXTEEN
                if COUNTING:
                    n_gw += 4
        if tq == 0:
            if row_lo < n_q:
                lse[bh * n_q + row_lo] = (m_lo + float32(math.log2(l_lo))) * F_LN2
                if COUNTING:
                    n_gw += 4
            if row_hi < n_q:
                lse[bh * n_q + row_hi] = (m_hi + float32(math.log2(l_hi))) * F_LN2
                if COUNTING:
                    n_gw += 4
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    fa2_tc.__name__ = fa2_tc.__qualname__ = (
        f"fa2_tc_{dtype}_d{D}_w{cfg.warps}_bc{BC}{'_causal' if CAUSAL else ''}{'_count' if COUNTING else ''}"
    )
    return cuda.jit(fa2_tc)


def kernel_signature():
    from numba.cuda import types

    u16, f32 = types.Array(types.uint16, 1, "C"), types.Array(types.float32, 1, "C")
    return (u16, u16, u16, u16, f32, types.Array(types.int64, 1, "C"), types.int64, types.int64, types.int64)


def ptx_of(cfg: TcConfig, dtype: str, counting: bool, causal: bool) -> str:
    """The PTX of one build (on a GPU), for the checks in the tests and the benchmark."""
    disp = fa2_tc_kernel(cfg.check(), check_dtype(dtype), counting, causal, False)
    disp.compile(kernel_signature())
    return disp.inspect_asm(kernel_signature())


@dataclass
class TcResult:
    o: np.ndarray  # (B, H, N_q, d) fp32 (the dtype's values)
    lse: np.ndarray  # (B, H, N_q) fp32
    config: TcConfig
    counts: dict | None = None  # bytes


@dataclass(frozen=True)
class Fa2TcPlan(TcPlan):
    """One launch of the FA2 kernel: grid (Tr, B·H), W warps per block."""

    @property
    def grid(self):
        b, h, _, nq, _, _ = self.shape
        return (-(-nq // self.config.block_rows), b * h)

    def kernel(self):
        return fa2_tc_kernel(self.config, self.dtype, self.counting, self.causal, simulator_enabled())

    def launch(self, q, k, v, o, lse, counters):
        """Flat device arrays (uint16 bits for q, k, v, o; fp32 lse); no checks, no sync."""
        b, h, hkv, nq, nk, _ = self.shape
        self.kernel()[self.grid, self.config.threads](q, k, v, o, lse, counters, nq, nk, h // hkv)


def plan_fa2_tc(
    q, k, v, *, dtype="bf16", config: TcConfig | None = None, counting=False, causal=False
) -> Fa2TcPlan:
    return checked_plan(
        Fa2TcPlan,
        q,
        k,
        v,
        dtype=dtype,
        config=config,
        default=default_config,
        counting=counting,
        causal=causal,
    )


def run_fa2_tc(
    q, k, v, *, dtype="bf16", config: TcConfig | None = None, count=False, causal=False
) -> TcResult:
    """FlashAttention-2 forward on tensor cores for host fp32 arrays rounded to `dtype` on the way in.

    q is (B, H, N_q, d), k and v (B, H_kv, N_k, d), float32; they are rounded to bf16 or fp16 (round to
    nearest even, ``dtypes.to_bits``) before the launch, and O comes back as the fp32 values of the
    dtype's result. Outputs are poisoned with NaN (O with the dtype's NaN bits) before the launch.
    """
    plan = plan_fa2_tc(q, k, v, dtype=dtype, config=config, counting=count, causal=causal)
    b, h, hkv, nq, nk, d = plan.shape
    dq, dk, dv = upload(dtype, q, k, v)
    do = cuda.to_device(to_bits(np.full(b * h * nq * d, np.nan, np.float32), dtype))
    dl = cuda.to_device(np.full(b * h * nq, np.nan, dtype=np.float32))
    counters = new_counters()
    plan.launch(dq, dk, dv, do, dl, counters)
    if not simulator_enabled():
        cuda.synchronize()
    return TcResult(
        o=from_bits(do.copy_to_host(), dtype).reshape(b, h, nq, d),
        lse=dl.copy_to_host().reshape(b, h, nq),
        config=plan.config,
        counts=counts_from_bytes(counters) if count else None,
    )
