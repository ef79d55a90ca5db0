"""FlashAttention forward on Hopper's warpgroup MMA (wgmma), fp16 or bf16 in, fp32 accumulation
(kernel ``fa3_tc``).

The algorithm is fa2_tc's (outer loop over Q blocks, K/V blocks visited last to first, online
softmax with a running max m and sum l per row, O and the logsumexp L written once); what changes is
the instruction that multiplies, and with it who holds what:

    grid    = (Tr, B·H)          one thread block per (query block i, batch·head)
    block   = G warpgroups (G = 1 or 2) of 128 threads; warpgroup g owns query rows 64g .. 64g + 63
              (Br = 64·G); inside it warp w owns 16 of them, as in every m64 wgmma
    shared  = Qs[Br×d] | Ks[2][Bc×d] | Vs[2][Bc×d], 16-bit, chunk-major (``wgmma_ops``: 16-byte
              chunk c of row r at element (8·rows + 8)·c + 8r, the no-swizzle core-matrix layout
              with 16 bytes of padding per chunk column against bank conflicts in the copies)
    registers per thread: S/P (Bc/2 fp32: the wgmma accumulator), P packed (Bc/4 registers), O
              (d/2 fp32), m and l of its two rows

Per K/V block j (buffer b = visit number mod 2; K_j−1 and V_j−1 are already on their way into the
other buffer, cp.async, issued at the top of the visit: double buffering):

    1. wait for my copies of K_j, V_j (cp.async.wait_group 1), fence.proxy.async (cp.async writes
       through the generic proxy; wgmma reads through the async one), barrier
    2. S = Q K_jᵀ: d/16 wgmma m64nBck16 with both operands in shared memory (descriptors: Q and K
       are K-major), one commit, wait
    3. mask (keys past N_k, causal), online softmax on the accumulator in registers (exp2 ftz, the
       scale log2(e)/√d folded into one FMA: ``flash_tile``, as fa2_tc), P rounded to the dtype and
       packed into wgmma A fragments: the accumulator layout of column tiles 2kk, 2kk + 1 is the A
       layout of k-step kk, as in FA3 (no data movement)
    4. O += P V_j: Bc/16 wgmma m64ndk16 with A = P from registers and B = V_j from shared memory,
       read MN-major through the descriptor's transpose flag (V stays as it lands: no transposed
       copy, no extra shared-memory pass; the flag exists for 16-bit types, which is all this
       kernel takes), one commit, wait

At the end the row sums are reduced over the quad of lanes that share a row, O = O / l is rounded
and written, L = (m + log2 l)·ln 2 in fp32. A ragged last Q block and a ragged last K/V block are
zero-filled in shared memory by the copies and computed whole; masked keys get −∞, rows past N_q
are never written.

What is *not* FA3 here (issue 22 asks for it next, PERFORMANCE.md): no producer warpgroup and no
TMA (every thread issues cp.async copies), no overlap of S(j+1)'s wgmma with softmax(j) (each
wgmma batch is waited for at once), no register reallocation (setmaxnreg), no swizzled layouts.

Counting build (bytes, as fa2_tc): a cp.async moves 16 bytes from global memory (none when it
zero-fills) to shared memory; a wgmma reads its shared operands once per warpgroup: an SS k-step
(64 + Bc)·16 elements, an RS k-step d·16 elements, split evenly over the group's 128 threads. simlib's
``fa3_tc`` schedule counts the same.

Variants: causal (bottom-right aligned, key k visible to query q when k ≤ q + N_k − N_q; a Q block
skips the K/V blocks beyond its last valid row's reach), GQA/MQA, N_q ≠ N_k. Head dims 64 and 128.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, int32, uint16, uint32  # module globals: the simulator swaps `cuda`

from ..counting import counts_from, new_counters, simulator_enabled
from ..flush import flush_counters
from ..tensor_core.addressed_ops import addressed_ops
from ..tensor_core.dtypes import check_dtype, from_bits, to_bits
from ..tensor_core.flash_tile import flash_tile_ops
from ..tensor_core.tc_plan import TcPlan, checked_plan, upload
from ..tensor_core.tiles import block_copiers
from ..tensor_core.warp_ops import warp_ops
from ..tensor_core.wgmma_ops import chunk_column, core_matrix_index, layout_bits, pin_f32, pin_u32, wgmma_ops
from .fa2_tc import DYNAMIC_SHARED_LIMIT, LN2, LOG2E, STATIC_SHARED_LIMIT, TcResult, allow_dynamic_smem
from .fa2_tc import kernel_signature as fa2_signature

HEAD_DIMS = (64, 128)
GROUP_ROWS = 64  # query rows per warpgroup: the M of every wgmma


@dataclass(frozen=True)
class Fa3Config:
    """Compile-time shape: head dim d, G warpgroups of 64 query rows (Br = 64·G), Bc keys per K/V
    block (the N of S's wgmma, the K of O's); an optional register cap per thread."""

    head_dim: int
    warpgroups: int = 1
    block_cols: int = 64
    max_registers: int | None = None

    BLOCK_MULTIPLE = (16, "one wgmma k-step of O += P V")
    MAX_BLOCK_COLS = 256  # the largest wgmma N

    @property
    def block_rows(self) -> int:
        return GROUP_ROWS * self.warpgroups

    @property
    def threads(self) -> int:
        return 128 * self.warpgroups

    @property
    def smem_bytes(self) -> int:
        """Qs and two buffers each of Ks, Vs, chunk-major with one padding chunk per column."""
        return (self.block_rows + 4 * self.block_cols + 5) * self.head_dim * 2

    def tiles(self) -> tuple[tuple[int, int], ...]:
        return ((self.block_rows, self.head_dim), (self.block_cols, self.head_dim))

    def check(self):
        d, g, bc = self.head_dim, self.warpgroups, self.block_cols
        multiple, why = self.BLOCK_MULTIPLE
        if d not in HEAD_DIMS:
            raise ValueError(f"head_dim={d}: the tensor-core kernels support head_dim 64 and 128 only")
        if not isinstance(g, int) or isinstance(g, bool) or g not in (1, 2):
            raise ValueError(f"warpgroups must be 1 or 2; got {g!r}")
        if (
            not isinstance(bc, int)
            or isinstance(bc, bool)
            or bc < multiple
            or bc % multiple
            or bc > self.MAX_BLOCK_COLS
        ):
            raise ValueError(
                f"block_cols must be a multiple of {multiple} ({why}) up to {self.MAX_BLOCK_COLS}; got {bc!r}"
            )
        mr = self.max_registers
        if mr is not None and (not isinstance(mr, int) or isinstance(mr, bool) or not 64 <= mr <= 255):
            raise ValueError(f"max_registers must be None or an int in 64..255; got {mr!r}")
        if any((rows * cols // 8) % self.threads for rows, cols in self.tiles()):
            raise ValueError(
                f"block_cols={bc}: the tiles {self.tiles()} must split into 16-byte copies evenly "
                f"over {self.threads} threads"
            )
        if self.smem_bytes > DYNAMIC_SHARED_LIMIT:
            raise ValueError(
                f"block_cols={bc}, warpgroups={g}, head_dim={d} need {self.smem_bytes} bytes of shared "
                f"memory; at most {DYNAMIC_SHARED_LIMIT}"
            )
        return self

    @property
    def dynamic_smem(self) -> bool:
        return self.smem_bytes > STATIC_SHARED_LIMIT

    @property
    def name(self) -> str:
        r = f"_r{self.max_registers}" if self.max_registers else ""
        return f"g{self.warpgroups}_bc{self.block_cols}{r}"


#: version 1's defaults (PERFORMANCE.md, "fa3_tc"): one warpgroup, Bc = 64
DEFAULT_WARPGROUPS = 1
DEFAULT_BLOCK_COLS = {64: 64, 128: 64}


def default_config(head_dim: int) -> Fa3Config:
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim={head_dim}: the tensor-core kernels support head_dim 64 and 128 only")
    return Fa3Config(head_dim, DEFAULT_WARPGROUPS, DEFAULT_BLOCK_COLS[head_dim]).check()


@functools.cache
def fa3_tc_kernel(cfg: Fa3Config, dtype: str, counting: bool, causal: bool, simulator: bool):
    """The kernel for one (config, dtype, build); compiled on first launch."""
    D, BC, BR, NT = cfg.head_dim, cfg.block_cols, cfg.block_rows, cfg.threads
    KQ, NS, NO, KP = D // 16, BC // 8, D // 8, BC // 16  # S k-steps, S / O column tiles, O k-steps
    TILE = chunk_column(BC) * (D // 8)  # elements of one K or V buffer (padded chunk columns)
    K_OFF = chunk_column(BR) * (D // 8)  # element offsets of Ks[0] and Vs[0]
    V_OFF = K_OFF + 2 * TILE
    SM_ELEMS = 0 if cfg.dynamic_smem else cfg.smem_bytes // 2
    COUNTING, CAUSAL = counting, causal
    ALIGN = None if simulator else 128
    # descriptors (wgmma_ops): Q and K K-major (SBO = 128 B between 8-row groups, LBO = 16·rows between
    # the two 8-element halves of a k-step); V MN-major (SBO = 16·Bc between 8-column groups of d,
    # LBO = 128 between 8-key groups). A k-step advances Q / K by 2 chunk columns, V by 16 keys.
    HI_Q = layout_bits(128, 2 * chunk_column(BR), False)
    HI_K = layout_bits(128, 2 * chunk_column(BC), False)
    HI_V = layout_bits(2 * chunk_column(BC), 128, True)
    Q_STEP, K_STEP, V_STEP = 2 * chunk_column(BR), 2 * chunk_column(BC), 16 * 8  # elements per k-step
    SS_BYTES = KQ * (GROUP_ROWS + BC) // 4  # my share of S's shared-memory reads per tile (bytes)
    RS_BYTES = KP * D // 4  # my share of O's

    _, _, _, _, _, _, pack2, _, _, quad_sum, _, _ = warp_ops(dtype, simulator)
    smem_base, _, _, cp16, cp16z, cp_wait1, _, _ = addressed_ops(dtype, simulator)
    ops = warp_ops(dtype, simulator)
    cp_commit, cp_wait_all = ops.cp_commit, ops.cp_wait_all
    wg = wgmma_ops(dtype, simulator, BC, D)
    desc, wg_fence, wg_commit, wg_wait0, proxy_fence = wg.desc, wg.fence, wg.commit, wg.wait0, wg.proxy_fence
    mma_ss, mma_rs = wg.mma_ss, wg.mma_rs
    pin_s, pin_o, pin_p = pin_f32(BC // 2, simulator), pin_f32(D // 2, simulator), pin_u32(BC // 4, simulator)
    copy_q, copy_q_ragged = block_copiers(cp16, cp16z, BR, D, NT, simulator, core_matrix_index(BR))
    copy_kv, copy_kv_ragged = block_copiers(cp16, cp16z, BC, D, NT, simulator, core_matrix_index(BC))
    C = np.float32(LOG2E / math.sqrt(D))
    _, _, softmax_update, pack_p, _ = flash_tile_ops(dtype, simulator, 1, NS, NO, D, C)
    F_LN2 = np.float32(LN2)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)
    LOW = np.uint32(0xFFFF)
    SIXTEEN = np.uint32(16)

    def fa3_tc(q, k, v, o, lse, counters, n_q, n_k, group):
        sm = cuda.shared.array(SM_ELEMS, uint16, alignment=ALIGN)  # Qs | Ks[0] Ks[1] | Vs[0] Vs[1]
        base = smem_base(sm)
        s = cuda.local.array((NS, 4), float32)  # S, then P: the accumulator of S's wgmma
        pa = cuda.local.array((KP, 4), uint32)  # P in the dtype: the A fragments of O's wgmma
        acc = cuda.local.array((NO, 4), float32)  # O: the accumulator of O's wgmma
        m = cuda.local.array(2, float32)  # running max of my two rows (base-2 units)
        lsum = cuda.local.array(2, float32)  # my partial running sums

        tid = cuda.threadIdx.x
        grp = tid >> 7  # my warpgroup: query rows 64·grp ..
        w = (tid >> 5) & 3  # my warp inside it: 16 of them
        lane = tid & 31
        g = lane >> 2
        tq = lane & 3
        i = cuda.blockIdx.x
        bh = cuda.blockIdx.y
        kv_bh = bh // group
        q_start = i * BR
        r = min(BR, n_q - q_start)
        tc = (n_k + BC - 1) // BC
        off = n_k - n_q
        if CAUSAL:
            tc = min(tc, (q_start + r - 1 + off) // BC + 1)
        warp_first = q_start + GROUP_ROWS * grp + 16 * w  # my warp's first query row
        row0 = warp_first + g  # my rows: row0 and row0 + 8

        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0

        # --- Q_i and the first visited K/V block (the last one) into buffer 0: one group
        qg = (bh * n_q + q_start) * D
        if r == BR:
            got, put = copy_q(base, 0, q, qg, tid)
        else:
            got, put = copy_q_ragged(base, 0, q, qg, r, tid)
        if COUNTING:
            n_gr += got
            n_sw += put
        kvg = kv_bh * n_k * D
        j = tc - 1
        c = min(BC, n_k - j * BC)
        if c == BC:
            got, put = copy_kv(base, K_OFF, k, kvg + j * BC * D, tid)
            got2, put2 = copy_kv(base, V_OFF, v, kvg + j * BC * D, tid)
        else:
            got, put = copy_kv_ragged(base, K_OFF, k, kvg + j * BC * D, c, tid)
            got2, put2 = copy_kv_ragged(base, V_OFF, v, kvg + j * BC * D, c, tid)
        cp_commit()
        if COUNTING:
            n_gr += got + got2
            n_sw += put + put2

        for e in range(2):
            m[e] = NEG_INF
            lsum[e] = ZERO
        for t in range(NO):
            for e in range(4):
                acc[t, e] = ZERO
        q_off = GROUP_ROWS * grp * 8  # my group's 64 rows in the chunk-major Q tile

        for jj in range(tc):
            j = tc - 1 - jj
            k_start = j * BC
            c = min(BC, n_k - k_start)
            b_off = (jj & 1) * TILE
            if jj + 1 < tc:  # prefetch block j − 1 into the other buffer
                if jj > 0:
                    cuda.syncthreads()  # everyone is done reading it (visit jj − 1)
                nb = TILE - b_off
                src = kvg + (k_start - BC) * D  # block j − 1 is never ragged: only the last block is
                got, put = copy_kv(base, K_OFF + nb, k, src, tid)
                got2, put2 = copy_kv(base, V_OFF + nb, v, src, tid)
                cp_commit()
                if COUNTING:
                    n_gr += got + got2
                    n_sw += put + put2
                cp_wait1()  # my copies of block j have landed
            else:
                cp_wait_all()
            proxy_fence()  # ... and are visible to the tensor cores' (async) proxy
            cuda.syncthreads()  # everyone's

            # --- S = Q K_jᵀ: d/16 wgmma, both operands in shared memory
            wg_fence()
            for kk in range(KQ):
                mma_ss(
                    s,
                    base,
                    desc(base, q_off + kk * Q_STEP, HI_Q),
                    desc(base, K_OFF + b_off + kk * K_STEP, HI_K),
                    int32(min(kk, 1)),
                )
            wg_commit()
            wg_wait0()
            pin_s(s)
            if COUNTING:
                n_sr += SS_BYTES + RS_BYTES

            # --- mask: keys past N_k, and (causal) keys beyond my row's reach, get −∞
            if c < BC or (CAUSAL and k_start + BC - 1 > warp_first + off):
                for t in range(NS):
                    for e in range(2):
                        col = k_start + 8 * t + 2 * tq + e
                        if col >= n_k or (CAUSAL and col > row0 + off):
                            s[t, e] = NEG_INF
                        if col >= n_k or (CAUSAL and col > row0 + 8 + off):
                            s[t, 2 + e] = NEG_INF

            # --- online softmax of my two rows; P in the dtype, packed as O's A fragments
            softmax_update(s, m, lsum, acc)
            pack_p(s, pa)

            # --- O += P V_j: Bc/16 wgmma, A = P from registers, B = V_j (MN-major) from shared memory
            pin_o(acc)
            pin_p(pa)
            wg_fence()
            for kk in range(KP):
                mma_rs(
                    acc,
                    pa[kk, 0],
                    pa[kk, 1],
                    pa[kk, 2],
                    pa[kk, 3],
                    base,
                    desc(base, V_OFF + b_off + kk * V_STEP, HI_V),
                    int32(1),
                )
            wg_commit()
            wg_wait0()
            pin_o(acc)

        # --- O = O / l in the dtype, L = (m + log2 l)·ln 2 in fp32
        for h in range(2):
            row = row0 + 8 * h
            lt = quad_sum(lsum[h])
            inv = ONE / lt
            if row < n_q:
                for t in range(NO):
                    col = 8 * t + 2 * tq
                    pair = pack2(acc[t, 2 * h] * inv, acc[t, 2 * h + 1] * inv)
                    o[(bh * n_q + row) * D + col] = pair & LOW
                    o[(bh * n_q + row) * D + col + 1] = pair >> SIXTEEN
                if COUNTING:
                    n_gw += 4 * NO
                if tq == 0:
                    lse[bh * n_q + row] = (m[h] + float32(math.log2(lt))) * F_LN2
                    if COUNTING:
                        n_gw += 4
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    fa3_tc.__name__ = fa3_tc.__qualname__ = (
        f"fa3_tc_{dtype}_d{D}_{cfg.name}{'_causal' if CAUSAL else ''}{'_count' if COUNTING else ''}"
    )
    if simulator or cfg.max_registers is None:
        return cuda.jit(fa3_tc)
    return cuda.jit(max_registers=cfg.max_registers)(fa3_tc)


def kernel_signature():
    """fa2_tc's argument types: the same launch."""
    return fa2_signature()


def ptx_of(cfg: Fa3Config, dtype: str, counting: bool, causal: bool, cc=None) -> str:
    """The PTX of one build: from the compiled dispatcher on a GPU, else ``cuda.compile_ptx`` for
    `cc` (default (9, 0); the text's target is then sm_90, to be assembled as sm_90a)."""
    disp = fa3_tc_kernel(cfg.check(), check_dtype(dtype), counting, causal, False)
    if cuda.is_available():
        disp.compile(kernel_signature())
        return disp.inspect_asm(kernel_signature())
    ptx, _ = cuda.compile_ptx(disp.py_func, kernel_signature(), cc=cc or (9, 0))
    return ptx


@dataclass(frozen=True)
class Fa3TcPlan(TcPlan):
    """One launch of the wgmma kernel: grid (Tr, B·H), 128·G threads per block."""

    @property
    def grid(self):
        b, h, _, nq, _, _ = self.shape
        return (-(-nq // self.config.block_rows), b * h)

    def kernel(self):
        return fa3_tc_kernel(self.config, self.dtype, self.counting, self.causal, simulator_enabled())

    def launch(self, q, k, v, o, lse, counters):
        """Flat device arrays (uint16 bits for q, k, v, o; fp32 lse); no checks, no sync."""
        b, h, hkv, nq, nk, _ = self.shape
        kern, cfg = self.kernel(), self.config
        if not cfg.dynamic_smem:
            kern[self.grid, cfg.threads](q, k, v, o, lse, counters, nq, nk, h // hkv)
            return
        if not simulator_enabled():
            allow_dynamic_smem(kern, cfg.smem_bytes, kernel_signature())
        kern[self.grid, cfg.threads, 0, cfg.smem_bytes](q, k, v, o, lse, counters, nq, nk, h // hkv)


def plan_fa3_tc(
    q, k, v, *, dtype="bf16", config: Fa3Config | None = None, counting=False, causal=False
) -> Fa3TcPlan:
    return checked_plan(
        Fa3TcPlan,
        q,
        k,
        v,
        dtype=dtype,
        config=config,
        default=default_config,
        counting=counting,
        causal=causal,
    )


def run_fa3_tc(
    q, k, v, *, dtype="bf16", config: Fa3Config | None = None, count=False, causal=False
) -> TcResult:
    """FlashAttention forward on wgmma for host fp32 arrays rounded to `dtype` on the way in (as
    ``run_fa2_tc``: outputs poisoned with NaN before the launch, O back as the dtype's fp32 values)."""
    plan = plan_fa3_tc(q, k, v, dtype=dtype, config=config, counting=count, causal=causal)
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
        counts=counts_from(counters, unit_bytes=1) if count else None,
    )
