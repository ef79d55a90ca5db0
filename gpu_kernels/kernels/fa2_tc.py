"""FlashAttention-2 forward on tensor cores, fp16 or bf16 in, fp32 accumulation (kernel ``fa2_tc``).

The algorithm is the readable ``tiled`` kernel's (outer loop over Q blocks, K and V streamed past,
online softmax with a running max m and sum l per row, O and the logsumexp L written once); what
changes is who does the arithmetic. The products run on the tensor cores as warp-wide
``mma.sync.m16n8k16`` (a 16×16 by 16×8 product per instruction), S and P never leave registers,
and P is rounded to the input dtype for the PV product, exactly as FlashAttention-2 does.

Mapping (compile-time constants of ``TcConfig``):

    grid    = (Tr, B·H)          one thread block per (query block i, batch·head); causal: (B·H, Tr), the
                                 blocks numbered so that the ones with the most K/V blocks launch first
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
from numba import cuda, float32, int32, uint16, uint32  # module globals: the simulator swaps `cuda`

from ..counting import counts_from, new_counters, simulator_enabled
from ..flush import flush_counters
from ..tensor_core.addressed_ops import addressed_ops
from ..tensor_core.dtypes import check_dtype, from_bits, to_bits
from ..tensor_core.flash_tile import flash_tile_ops
from ..tensor_core.tc_plan import TcPlan, checked_plan, upload
from ..tensor_core.tiles import block_copiers
from ..tensor_core.warp_ops import cp_wait_group, warp_ops

HEAD_DIMS = (64, 128)
#: numba has no opt-in above 48 KiB for static shared memory; a larger config uses dynamic shared
#: memory, with the kernel's limit raised through the driver (``Fa2TcPlan.launch``), up to the H200's
#: 227 KiB per block.
STATIC_SHARED_LIMIT = 48 * 1024
DYNAMIC_SHARED_LIMIT = 227 * 1024
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@dataclass(frozen=True)
class TcConfig:
    """Compile-time shape: head dim d, W warps of `warp_rows` query rows each (Br = warp_rows·W), Bc
    keys per K/V block; Q's fragments kept in registers or re-read from shared memory per tile; an
    optional register cap per thread (ptxas -maxrregcount) for occupancy; `kv_stages` shared-memory
    buffers each for K and for V (2: a ring, the loads of block j − 1 in flight during all of block j's
    math; 1: version 4's ping-pong, V_j landing during S_j and K_j−1 during PV_j); under causal
    masking `heavy_first` starts the Q blocks with the most K/V blocks first (longest job first)."""

    head_dim: int
    warps: int = 4
    block_cols: int = 64
    warp_rows: int = 16
    q_in_regs: bool = True
    max_registers: int | None = None
    kv_stages: int = 2
    heavy_first: bool = True

    #: Bc must be a multiple of this, and why (naive_tc's P tile needs whole swizzle rows: 64)
    BLOCK_MULTIPLE = (16, "one mma k-step")
    WARP_ROWS = (16, 32)

    @property
    def block_rows(self) -> int:
        return self.warp_rows * self.warps

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def smem_bytes(self) -> int:
        return (self.block_rows + 2 * self.kv_stages * self.block_cols) * self.head_dim * 2

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
        if self.warp_rows not in self.WARP_ROWS:
            raise ValueError(f"warp_rows must be one of {self.WARP_ROWS}; got {self.warp_rows!r}")
        if not isinstance(self.q_in_regs, bool):
            raise ValueError(f"q_in_regs must be True or False; got {self.q_in_regs!r}")
        if self.kv_stages not in (1, 2) or isinstance(self.kv_stages, bool):
            raise ValueError(f"kv_stages must be 1 or 2; got {self.kv_stages!r}")
        if not isinstance(self.heavy_first, bool):
            raise ValueError(f"heavy_first must be True or False; got {self.heavy_first!r}")
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
                f"block_cols={bc}, warps={w}, head_dim={d} need {self.smem_bytes} bytes of shared "
                f"memory; at most {DYNAMIC_SHARED_LIMIT}"
            )
        return self

    @property
    def dynamic_smem(self) -> bool:
        """True when the tiles need more than the 48 KiB of static shared memory."""
        return self.smem_bytes > STATIC_SHARED_LIMIT

    @property
    def name(self) -> str:
        q = "" if self.q_in_regs else "_qs"
        r = f"_r{self.max_registers}" if self.max_registers else ""
        st = "" if self.kv_stages == 2 else f"_st{self.kv_stages}"
        lf = "" if self.heavy_first else "_lf"
        return f"w{self.warps}x{self.warp_rows}_bc{self.block_cols}{q}{r}{st}{lf}"


#: Bc and where Q's fragments live, per head dim (issue 22, PERFORMANCE.md version 4): FA2's layout of
#: 4 warps of 32 query rows (Br = 128); d = 64: Bc = 64, Q in registers (241 registers, no spill, 32 KiB);
#: d = 128: Bc = 48, Q re-read from shared memory per tile (255 registers, no spill, 56 KiB of dynamic
#: shared memory; archived fa2_tc_speed.csv of version 4, bf16 non-causal: 1.812 / 3.405 / 6.813 ms at N = 4K / 8K / 16K
#: against 2.002 / 3.745 / 7.304 with Bc = 32 and 1.799 / 3.535 / 6.848 with Bc = 64, which spills).
#: simlib's fa2_tc schedule has the same table.
DEFAULT_BLOCK_COLS = {64: 64, 128: 48}
DEFAULT_WARP_ROWS = 32


def default_config(head_dim: int) -> TcConfig:
    """4 warps of 32 rows (Br = 128); Bc and Q's place from the tables above."""
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim={head_dim}: the tensor-core kernels support head_dim 64 and 128 only")
    return TcConfig(head_dim, 4, DEFAULT_BLOCK_COLS[head_dim], DEFAULT_WARP_ROWS, head_dim == 64).check()


@functools.cache
def fa2_tc_kernel(cfg: TcConfig, dtype: str, counting: bool, causal: bool, simulator: bool):
    """The kernel for one (config, dtype, build); compiled on first launch."""
    D, BC, BR, NT, WR = cfg.head_dim, cfg.block_cols, cfg.block_rows, cfg.threads, cfg.warp_rows
    MT = WR // 16  # m16 tiles of query rows per warp: each K or V fragment feeds 2·MT mma
    KQ, NS, NO, KP = D // 16, BC // 8, D // 8, BC // 16  # Q k-steps, S n-tiles, O n-tiles, P k-steps
    QREGS = cfg.q_in_regs
    QA = MT * KQ if QREGS else 1
    S_T, P_T, O_T, ROWS2 = MT * NS, MT * KP, MT * NO, 2 * MT  # local array shapes: plain constants
    RING = cfg.kv_stages == 2
    KV_ELEMS = BC * D  # one stage of K or of V
    K_OFF, V_OFF = BR * D, (BR + cfg.kv_stages * BC) * D  # element offsets of Ks and Vs (stage 0)
    SM_ELEMS = 0 if cfg.dynamic_smem else cfg.smem_bytes // 2  # 0: dynamic, sized at launch
    COUNTING, CAUSAL, HEAVY_FIRST = counting, causal, causal and cfg.heavy_first
    # numba resolves a closure variable that is a function, not an attribute of a tuple: unpack
    _, _, _, _, _, _, pack2, _, _, quad_sum, _, _ = warp_ops(dtype, simulator)
    smem_base, ldsm_x4, _, cp16, cp16z, _, _, _ = addressed_ops(dtype, simulator)
    copy_q, copy_q_ragged = block_copiers(cp16, cp16z, BR, D, NT, simulator)
    copy_kv, copy_kv_ragged = block_copiers(cp16, cp16z, BC, D, NT, simulator)

    def copy_block(base, so, src, g, c, tid):
        """My copies of a K or V block of c valid rows (the full copier unless the block ends early)."""
        if c == BC:
            return copy_kv(base, so, src, g, tid)
        return copy_kv_ragged(base, so, src, g, c, tid)

    copy_block = (cuda.jit(device=True) if simulator else cuda.jit(device=True, inline=True))(copy_block)
    cp_commit = warp_ops(dtype, simulator).cp_commit
    cp_wait_all = warp_ops(dtype, simulator).cp_wait_all
    cp_wait_ring = cp_wait_group(2, simulator)  # the ring: the two groups issued after the one I need
    ALIGN = None if simulator else 128
    C = np.float32(LOG2E / math.sqrt(D))  # softmax scale in base 2: exp(s/√d) = exp2(s·c)
    load_q, qk_step, softmax_update, pack_p, pv_products = flash_tile_ops(dtype, simulator, MT, NS, NO, D, C)
    F_LN2 = np.float32(LN2)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)
    LOW = np.uint32(0xFFFF)
    SIXTEEN = np.uint32(16)

    def fa2_tc(q, k, v, o, lse, counters, n_q, n_k, group):
        # q, o: flat (B·H·N_q·d,) uint16 bits; k, v: flat (B·H_kv·N_k·d,); lse: (B·H·N_q,) fp32
        sm = cuda.shared.array(SM_ELEMS, uint16, alignment=ALIGN)  # Qs | Ks | Vs, each swizzled
        base = smem_base(sm)
        qa = cuda.local.array((QA, 4), uint32)  # Q fragments (A operand) of my MT m-tiles, all of d
        s = cuda.local.array((S_T, 4), float32)  # S, then P, of my warp's WR rows × Bc
        pa = cuda.local.array((P_T, 4), uint32)  # P rounded to the dtype: the A fragments of PV
        acc = cuda.local.array((O_T, 4), float32)  # O of my warp's WR rows × d
        m = cuda.local.array(ROWS2, float32)  # running max of my rows (base-2 units: scores · c)
        lsum = cuda.local.array(ROWS2, float32)  # my partial running sums (my columns only)
        xa = cuda.local.array(4, int32)  # swizzled chunk offsets of my ldmatrix rows (Q and V)
        xk = cuda.local.array(4, int32)  # the same for K

        tid = cuda.threadIdx.x
        lane = tid & 31
        w = tid >> 5
        g = lane >> 2  # my rows in m-tile mt are WR·w + 16·mt + g and + 8
        tq = lane & 3  # my columns inside each 8-wide n-tile: 2tq, 2tq + 1
        # causal: grid (B·H, Tr), launched x fastest: Q block Tr − 1 of every head first, then Tr − 2, ...
        if HEAVY_FIRST:
            i = cuda.gridDim.y - 1 - cuda.blockIdx.y
            bh = cuda.blockIdx.x
        else:
            i = cuda.blockIdx.x
            bh = cuda.blockIdx.y
        kv_bh = bh // group  # GQA/MQA: `group` query heads share a K/V head
        q_start = i * BR
        r = min(BR, n_q - q_start)  # valid query rows of this block
        tc = (n_k + BC - 1) // BC
        off = n_k - n_q  # causal: query q sees keys <= q + off
        if CAUSAL:
            tc = min(tc, (q_start + r - 1 + off) // BC + 1)  # blocks past the last row's reach: skipped
        row0 = q_start + WR * w + g

        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0

        # --- Q_i and the last visited K block in flight (the ragged path only for a short block)
        qg = (bh * n_q + q_start) * D
        if r == BR:
            got, put = copy_q(base, 0, q, qg, tid)
        else:
            got, put = copy_q_ragged(base, 0, q, qg, r, tid)
        j = tc - 1
        kvg = kv_bh * n_k * D
        c = min(BC, n_k - j * BC)
        got2, put2 = copy_block(base, K_OFF, k, kvg + j * BC * D, c, tid)
        cp_commit()
        if COUNTING:
            n_gr += got + got2
            n_sw += put + put2
        if RING:  # then V of the same block, and K of the next: three groups in flight
            got, put = copy_block(base, V_OFF, v, kvg + j * BC * D, c, tid)
            cp_commit()
            if COUNTING:
                n_gr += got
                n_sw += put
            if j > 0:
                got, put = copy_kv(base, K_OFF + KV_ELEMS, k, kvg + (j - 1) * BC * D, tid)
                if COUNTING:
                    n_gr += got
                    n_sw += put
            cp_commit()  # an empty group when there is no next block keeps the count of groups the same

        # ldmatrix lane roles: A (Q) matrices are (rows 0-7 | 8-15) × (k 0-7 | 8-15), lane 8m + x gives
        # row x of matrix m; B (K) matrices are (keys 0-7 | 8-15) × (k 0-7 | 8-15) in the order b0, b1
        # of n-tile 2p, then of 2p + 1. Every row index used is ≡ lane (mod 8), so the swizzle is lane & 7
        # and a 16-byte chunk c ≥ 8 lies 8 chunks after chunk c − 8: four swizzled offsets per operand
        # (xa, xk) plus compile-time offsets address every fragment.
        swz = lane & 7
        for cc in range(4):
            xa[cc] = ((2 * cc + (lane >> 4)) ^ swz) << 3
            xk[cc] = ((2 * cc + ((lane >> 3) & 1)) ^ swz) << 3
        q_lane = (WR * w + (lane & 7) + ((lane >> 3) & 1) * 8) * D
        k_lane = K_OFF + ((lane & 7) + (lane >> 4) * 8) * D
        v_lane = V_OFF + ((lane & 7) + ((lane >> 3) & 1) * 8) * D

        if RING:
            cp_wait_ring()  # Q and K of the first block have landed (V and the next K may not have)
        else:
            cp_wait_all()
        cuda.syncthreads()
        if QREGS:
            load_q(qa, base, q_lane, xa)
            if COUNTING:
                n_sr += 16 * MT * KQ

        for e in range(2 * MT):
            m[e] = NEG_INF
            lsum[e] = ZERO
        for t in range(MT * NO):
            for e in range(4):
                acc[t, e] = ZERO

        for jj in range(tc):
            j = tc - 1 - jj  # last block first
            k_start = j * BC
            c = min(BC, n_k - k_start)  # valid keys of this block
            ko = 0  # element offset of this block's stage (the ring alternates two)
            if RING:
                ko = (jj & 1) * KV_ELEMS
                if jj > 0:
                    cp_wait_ring()  # my copies of K_j have landed (V_j and K_j−1 may still fly)
                    cuda.syncthreads()  # everyone's; and everyone is done reading V_j+1's stage
                if j > 0:  # V_j−1 into the stage V_j+1 used: it lands during all of block j's math
                    got, put = copy_kv(base, V_OFF + KV_ELEMS - ko, v, kvg + (k_start - BC) * D, tid)
                    if COUNTING:
                        n_gr += got
                        n_sw += put
                cp_commit()
            else:
                if jj > 0:
                    cp_wait_all()  # my copies of K_j have landed
                    cuda.syncthreads()  # everyone's; and everyone is done reading V_j+1
                got, put = copy_block(base, V_OFF, v, kvg + k_start * D, c, tid)
                cp_commit()
                if COUNTING:
                    n_gr += got
                    n_sw += put

            # --- S = Q K_jᵀ: one ldmatrix of K feeds 2·MT mma
            for t in range(MT * NS):
                for e in range(4):
                    s[t, e] = ZERO
            for kk in range(KQ):
                if QREGS:
                    qk_step(s, qa, kk, KQ, base, k_lane + ko, xk, kk)
                else:  # Q's fragments of this k-step again, into pa (free until P is packed)
                    for mt in range(MT):
                        pa[mt, 0], pa[mt, 1], pa[mt, 2], pa[mt, 3] = ldsm_x4(
                            base, q_lane + 16 * mt * D + xa[kk & 3] + (kk >> 2) * 64
                        )
                    qk_step(s, pa, 0, 1, base, k_lane + ko, xk, kk)
            if COUNTING:
                n_sr += 16 * KQ * (NS // 2)
                if not QREGS:
                    n_sr += 16 * KQ * MT

            # --- mask: keys past N_k, and (causal) keys beyond my row's reach, get −∞
            if c < BC or (CAUSAL and k_start + BC - 1 > q_start + WR * w + off):
                for mt in range(MT):
                    for t in range(NS):
                        for e in range(2):
                            col = k_start + 8 * t + 2 * tq + e
                            if col >= n_k or (CAUSAL and col > row0 + 16 * mt + off):
                                s[mt * NS + t, e] = NEG_INF
                            if col >= n_k or (CAUSAL and col > row0 + 16 * mt + 8 + off):
                                s[mt * NS + t, 2 + e] = NEG_INF

            # --- online softmax of my 2·MT rows (the 4 lanes of a quad share a row), P in the dtype
            softmax_update(s, m, lsum, acc)
            pack_p(s, pa)

            if RING:
                cp_wait_ring()  # my copies of V_j have landed (K_j−1 and V_j−1 may still fly)
                cuda.syncthreads()  # everyone's; and everyone is done reading K_j
                if j > 1:  # K_j−2 into K_j's stage: it lands during PV_j and all of block j − 1
                    got, put = copy_kv(base, K_OFF + ko, k, kvg + (k_start - 2 * BC) * D, tid)
                    if COUNTING:
                        n_gr += got
                        n_sw += put
                cp_commit()
            else:
                cp_wait_all()  # my copies of V_j have landed
                cuda.syncthreads()  # everyone's; and everyone is done reading K_j
                if j > 0:
                    got, put = copy_kv(base, K_OFF, k, kvg + (k_start - BC) * D, tid)
                    cp_commit()
                    if COUNTING:
                        n_gr += got
                        n_sw += put

            # --- O += P V_j: one ldmatrix.trans of V feeds 2·MT mma
            pv_products(acc, pa, base, v_lane + ko, xa)
            if COUNTING:
                n_sr += 16 * KP * (NO // 2)

        # --- O = O / l in the dtype, L = (m + log2 l)·ln 2 in fp32
        for mt in range(MT):
            for h in range(2):
                row = row0 + 16 * mt + 8 * h
                lt = quad_sum(lsum[2 * mt + h])
                inv = ONE / lt
                if row < n_q:
                    for t in range(NO):
                        col = 8 * t + 2 * tq
                        pair = pack2(acc[mt * NO + t, 2 * h] * inv, acc[mt * NO + t, 2 * h + 1] * inv)
                        o[(bh * n_q + row) * D + col] = pair & LOW
                        o[(bh * n_q + row) * D + col + 1] = pair >> SIXTEEN
                    if COUNTING:
                        n_gw += 4 * NO
                    if tq == 0:
                        lse[bh * n_q + row] = (m[2 * mt + h] + float32(math.log2(lt))) * F_LN2
                        if COUNTING:
                            n_gw += 4
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    fa2_tc.__name__ = fa2_tc.__qualname__ = (
        f"fa2_tc_{dtype}_d{D}_{cfg.name}{'_causal' if CAUSAL else ''}{'_count' if COUNTING else ''}"
    )
    if simulator or cfg.max_registers is None:
        return cuda.jit(fa2_tc)
    return cuda.jit(max_registers=cfg.max_registers)(fa2_tc)


def allow_dynamic_smem(dispatcher, nbytes, signature=None):
    """Raise the compiled kernel's dynamic shared-memory limit to `nbytes` (the driver's default is
    48 KiB), once per dispatcher; compiles it for `signature` (default ``kernel_signature()``, fa2_tc's)
    first: the launch must pass arguments of exactly those types."""
    if getattr(dispatcher, "_flashio_dyn_smem", 0) >= nbytes:
        return
    from numba.cuda.cudadrv.driver import binding, driver

    kernel = dispatcher.compile(signature or kernel_signature())
    cufunc = kernel._codelibrary.get_cufunc()
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, nbytes, cufunc.handle, cufunc.device.id)
    dispatcher._flashio_dyn_smem = nbytes


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
class FlashTcPlan(TcPlan):
    """A FlashAttention forward launch on tensor cores (fa2_tc, fa3_tc): their kernels take the same
    arguments (``kernel_signature``); a subclass gives ``grid`` and ``kernel()``."""

    def launch(self, q, k, v, o, lse, counters):
        """Flat device arrays (uint16 bits for q, k, v, o; fp32 lse); no checks, no sync."""
        b, h, hkv, nq, nk, _ = self.shape
        kern, cfg = self.kernel(), self.config
        if not cfg.dynamic_smem:
            kern[self.grid, cfg.threads](q, k, v, o, lse, counters, nq, nk, h // hkv)
            return
        if not simulator_enabled():
            allow_dynamic_smem(kern, cfg.smem_bytes)
        kern[self.grid, cfg.threads, 0, cfg.smem_bytes](q, k, v, o, lse, counters, nq, nk, h // hkv)

    def run(self, q, k, v) -> TcResult:
        """One launch on host fp32 arrays rounded to the plan's dtype on the way in; outputs poisoned
        with NaN (O with the dtype's NaN bits) before it, O back as the dtype's fp32 values, the
        counted bytes when the plan counts."""
        b, h, hkv, nq, nk, d = self.shape
        dq, dk, dv = upload(self.dtype, q, k, v)
        do = cuda.to_device(to_bits(np.full(b * h * nq * d, np.nan, np.float32), self.dtype))
        dl = cuda.to_device(np.full(b * h * nq, np.nan, dtype=np.float32))
        counters = new_counters()
        self.launch(dq, dk, dv, do, dl, counters)
        if not simulator_enabled():
            cuda.synchronize()
        return TcResult(
            o=from_bits(do.copy_to_host(), self.dtype).reshape(b, h, nq, d),
            lse=dl.copy_to_host().reshape(b, h, nq),
            config=self.config,
            counts=counts_from(counters, unit_bytes=1) if self.counting else None,
        )


@dataclass(frozen=True)
class Fa2TcPlan(FlashTcPlan):
    """One launch of the FA2 kernel: grid (Tr, B·H), W warps per block; (B·H, Tr) under causal masking
    with ``heavy_first``, so that the blocks launch heaviest first."""

    @property
    def grid(self):
        b, h, _, nq, _, _ = self.shape
        tr = -(-nq // self.config.block_rows)
        return (b * h, tr) if self.causal and self.config.heavy_first else (tr, b * h)

    def kernel(self):
        return fa2_tc_kernel(self.config, self.dtype, self.counting, self.causal, simulator_enabled())


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
    return plan_fa2_tc(q, k, v, dtype=dtype, config=config, counting=count, causal=causal).run(q, k, v)
