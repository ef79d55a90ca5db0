"""FlashAttention forward on Hopper's warpgroup MMA (wgmma), fp16 or bf16 in, fp32 accumulation
(kernel ``fa3_tc``).

The algorithm is fa2_tc's (outer loop over Q blocks, K/V blocks visited last to first, online
softmax with a running max m and sum l per row, O and the logsumexp L written once); what changes is
the instruction that multiplies, and with it who holds what:

    grid    = (Tr, B·H)          one thread block per (query block i, batch·head); causal: (S, Tr, ⌈B·H/S⌉),
                                 heads in L2 sections of S (d = 128: ``section_heads``, their K and V
                                 fit in a quarter of the L2, FA3's rule; d = 64: all heads, measured
                                 faster), and inside a section the Q blocks with
                                 the most K/V blocks launched first (longest job first, as fa2_tc
                                 version 5: the short blocks fill the last wave)
    block   = G warpgroups (G = 1, 2 or 3) of 128 threads; warpgroup g owns query rows 64g .. 64g + 63
              (Br = 64·G); inside it warp w owns 16 of them, as in every m64 wgmma
    shared  = Qs[Br×d] | Ks[2][Bc×d] | Vs[2 or 3][Bc×d], 16-bit, 128-byte swizzled (``swizzle``) or
              chunk-major (``wgmma_ops``: 16-byte chunk c of row r at element (8·rows + 8)·c + 8r,
              the no-swizzle core-matrix layout
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

Three options, each on where measured best (``default_config``; PERFORMANCE.md, "fa3_tc", runs 1-3 and
version 6):
``swizzle`` stores the tiles in the tensor cores' own 128-byte-swizzled layout (the no-swizzle one
left the warps waiting on shared memory: 1.7x slower at d = 128), and ``overlap`` is FA3's
intra-warpgroup pipeline (``visit``: S(j+1)'s wgmma issued before P V(j)'s, softmax(j+1) while P V(j)
runs; two P fragment sets, three V buffers; on at d = 128), and ``pingpong`` is FA3's ping-pong of the
two consumer warpgroups (they take turns on named barriers 1 and 2 to issue their wgmma, so that one
group's softmax runs under the other's products; on at d = 128, where the block is alone on its SM;
at d = 64 the second block per SM already fills the gaps and the turns cost 6-7 %). What is *not* FA3
here: no producer warpgroup and no TMA (every thread issues cp.async copies), the two block barriers
per K/V visit keep the groups in step visit by visit (the turns overlap inside a visit, not across),
no register reallocation (setmaxnreg).

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

from ..counting import simulator_enabled
from ..flush import flush_counters
from ..tensor_core.addressed_ops import addressed_ops
from ..tensor_core.dtypes import check_dtype
from ..tensor_core.flash_tile import flash_tile_ops, softmax_parts
from ..tensor_core.tc_plan import checked_plan
from ..tensor_core.tiles import block_copiers
from ..tensor_core.warp_ops import warp_ops
from ..tensor_core.wgmma_ops import (
    ATOM_BYTES,
    chunk_column,
    core_matrix_index,
    layout_bits,
    order_barriers,
    pin_f32,
    pin_u32,
    swizzle128_bits,
    swizzle128_index,
    wgmma_ops,
)
from .fa2_tc import (
    DYNAMIC_SHARED_LIMIT,
    LN2,
    LOG2E,
    STATIC_SHARED_LIMIT,
    FlashTcPlan,
    TcResult,
    allow_dynamic_smem,
)
from .fa2_tc import kernel_signature as fa2_signature

HEAD_DIMS = (64, 128)
GROUP_ROWS = 64  # query rows per warpgroup: the M of every wgmma
WARPGROUPS = (1, 2, 3)
WORK_SLOT_BYTES = 16  # the persistent grid's slot at the end of shared memory: the next item's index


@dataclass(frozen=True)
class Fa3Config:
    """Compile-time shape: head dim d, G warpgroups of 64 query rows (Br = 64·G), Bc keys per K/V
    block (the N of S's wgmma, the K of O's); an optional register cap per thread; `overlap`: FA3's
    intra-warpgroup pipeline (S(j+1)'s wgmma in flight during softmax(j), P V(j)'s during
    softmax(j+1); two P fragment sets, three V buffers); `swizzle`: the tiles in the 128-byte-swizzled
    layout (the tensor cores' own, ``wgmma_ops.swizzle128_index``) instead of padded chunk-major;
    `persistent` (0: off; 1 or 2): a persistent grid of that many blocks per SM, each taking the
    (Q block, head) work items of the plain grid's launch order from an atomic counter, the next
    item's first copies issued before the current item's epilogue; `pingpong` (two warpgroups only):
    FA3's ping-pong schedule, the two consumer warpgroups taking turns on two named barriers to issue
    their wgmma, so that one group's softmax runs while the other's products occupy the tensor cores."""

    head_dim: int
    warpgroups: int = 1
    block_cols: int = 64
    max_registers: int | None = None
    overlap: bool = False
    swizzle: bool = False
    persistent: int = 0
    pingpong: bool = False

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
        """Qs, two buffers of Ks and two (three with `overlap`) of Vs, chunk-major with one padding
        chunk per column."""
        tiles = 5 if self.overlap else 4
        pad = 0 if self.swizzle else tiles + 1
        slot = WORK_SLOT_BYTES if self.persistent else 0  # the persistent grid's next work item
        return (self.block_rows + tiles * self.block_cols + pad) * self.head_dim * 2 + slot

    def tiles(self) -> tuple[tuple[int, int], ...]:
        return ((self.block_rows, self.head_dim), (self.block_cols, self.head_dim))

    def check(self):
        d, g, bc = self.head_dim, self.warpgroups, self.block_cols
        multiple, why = self.BLOCK_MULTIPLE
        if d not in HEAD_DIMS:
            raise ValueError(f"head_dim={d}: the tensor-core kernels support head_dim 64 and 128 only")
        if not isinstance(g, int) or isinstance(g, bool) or g not in WARPGROUPS:
            raise ValueError(f"warpgroups must be one of {WARPGROUPS}; got {g!r}")
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
        for flag in ("overlap", "swizzle", "pingpong"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag} must be True or False; got {getattr(self, flag)!r}")
        if self.pingpong and g != 2:
            raise ValueError(f"pingpong needs warpgroups=2 (two consumer groups take turns); got {g!r}")
        p = self.persistent
        if not isinstance(p, int) or isinstance(p, bool) or p not in (0, 1, 2):
            raise ValueError(f"persistent must be 0 (off), 1 or 2 blocks per SM; got {p!r}")
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
        ov = "_ov" if self.overlap else ""
        sw = "_sw" if self.swizzle else ""
        p = f"_p{self.persistent}" if self.persistent else ""
        pp = "_pp" if self.pingpong else ""
        return f"g{self.warpgroups}_bc{self.block_cols}{ov}{sw}{pp}{p}{r}"


#: the defaults (PERFORMANCE.md, "fa3_tc", run 20261202T051703Z-1ff3899ea4): two warpgroups and the
#: 128-byte swizzle at both head dims; d = 64: Bc = 64 without the pipeline (0.75x torch flash; with
#: it 130 registers allow one block per SM instead of two: 1.06x), d = 128: Bc = 128 with it (0.78-0.83x).
#: d = 128 also with the two warpgroups' ping-pong (run fa3-v6-pingpong-20261203: 4.7-6.0 % faster
#: non-causal, 8.5-9.2 % causal; at d = 64, two blocks per SM, it was 5.8-7.4 % slower).
#: simlib's fa3_tc schedule has the same.
DEFAULT_WARPGROUPS = 2
DEFAULT_BLOCK_COLS = {64: 64, 128: 128}
DEFAULT_OVERLAP = {64: False, 128: True}
DEFAULT_SWIZZLE = True
DEFAULT_PINGPONG = {64: False, 128: True}


def default_config(head_dim: int) -> Fa3Config:
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim={head_dim}: the tensor-core kernels support head_dim 64 and 128 only")
    return Fa3Config(
        head_dim,
        DEFAULT_WARPGROUPS,
        DEFAULT_BLOCK_COLS[head_dim],
        overlap=DEFAULT_OVERLAP[head_dim],
        swizzle=DEFAULT_SWIZZLE,
        pingpong=DEFAULT_PINGPONG[head_dim],
    ).check()


@functools.cache
def fa3_tc_kernel(cfg: Fa3Config, dtype: str, counting: bool, causal: bool, simulator: bool):
    """The kernel for one (config, dtype, build); compiled on first launch."""
    D, BC, BR, NT = cfg.head_dim, cfg.block_cols, cfg.block_rows, cfg.threads
    KQ, NS, NO, KP = D // 16, BC // 8, D // 8, BC // 16  # S k-steps, S / O column tiles, O k-steps
    SWZ = cfg.swizzle
    if SWZ:  # 128-byte swizzle (wgmma_ops): 64-column halves of rows × 128 B, no padding
        TILE, K_OFF = BC * D, BR * D  # elements of one K or V buffer; of Qs (Ks[0] follows)
        # K-major Q and K: a k-step moves 32 B along the row, four of them the next half; MN-major V:
        # a k-step is 16 rows of 128 B, its second 64 columns (d = 128) LBO = 128·Bc bytes further
        HI_Q = HI_K = swizzle128_bits(16, ATOM_BYTES)
        HI_V = swizzle128_bits(128 * BC, ATOM_BYTES)
        Q_A, Q_B, K_A, K_B, V_STEP, Q_ROW = 16, 64 * BR, 16, 64 * BC, 16 * 64, 64
        layout_q, layout_kv = swizzle128_index(BR), swizzle128_index(BC)
    else:  # padded chunk-major
        TILE = chunk_column(BC) * (D // 8)  # elements of one K or V buffer (padded chunk columns)
        K_OFF = chunk_column(BR) * (D // 8)  # element offsets of Ks[0] and Vs[0]
        # descriptors (wgmma_ops): Q and K K-major (SBO = 128 B between 8-row groups, LBO = 16·rows + 16
        # between the two 8-element halves of a k-step); V MN-major (SBO = 16·Bc + 16 between 8-column
        # groups of d, LBO = 128 between 8-key groups). A k-step advances Q / K by 2 chunk columns, V by 16 keys.
        HI_Q = layout_bits(128, 2 * chunk_column(BR), False)
        HI_K = layout_bits(128, 2 * chunk_column(BC), False)
        HI_V = layout_bits(2 * chunk_column(BC), 128, True)
        Q_A, K_A, V_STEP, Q_ROW = 2 * chunk_column(BR), 2 * chunk_column(BC), 16 * 8, 8
        Q_B, K_B = 4 * Q_A, 4 * K_A  # k-step kk at (kk mod 4)·A + (kk div 4)·B: kk·A here
        layout_q, layout_kv = core_matrix_index(BR), core_matrix_index(BC)
    V_OFF = K_OFF + 2 * TILE  # then 2 V buffers (3 with overlap)
    SM_ELEMS = 0 if cfg.dynamic_smem else cfg.smem_bytes // 2
    COUNTING, CAUSAL = counting, causal
    ALIGN = None if simulator else (ATOM_BYTES if SWZ else 128)
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
    copy_q, copy_q_ragged = block_copiers(cp16, cp16z, BR, D, NT, simulator, layout_q)
    copy_kv, copy_kv_ragged = block_copiers(cp16, cp16z, BC, D, NT, simulator, layout_kv)
    C = np.float32(LOG2E / math.sqrt(D))
    _, _, softmax_update, pack_p, _ = flash_tile_ops(dtype, simulator, 1, NS, NO, D, C)
    F_LN2 = np.float32(LN2)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)
    LOW = np.uint32(0xFFFF)
    SIXTEEN = np.uint32(16)

    jit = cuda.jit(device=True) if simulator else cuda.jit(device=True, inline=True)
    OVERLAP = cfg.overlap
    PINGPONG = cfg.pingpong
    bar_sync, bar_arrive = order_barriers(simulator)
    FIRST_BAR = int32(1)  # named barrier 1 + g: where warpgroup g waits for its turn (0 is syncthreads')

    def turn_begin(tid):
        """Ping-pong: wait for my turn to issue wgmma (the other group has issued its batch)."""
        if PINGPONG:
            bar_sync(FIRST_BAR + int32(tid >> 7))

    def turn_end(tid):
        """Ping-pong: my batch is issued; the other group's turn."""
        if PINGPONG:
            bar_arrive(FIRST_BAR + int32(1 - (tid >> 7)))

    def turns_open(tid):
        """At an item's start: group 1 passes group 0 the first turn."""
        if PINGPONG and tid >> 7 == 1:
            bar_arrive(FIRST_BAR)

    def turns_close(tid):
        """At an item's end: group 0 takes group 1's last pass, so every phase of both barriers is
        complete between items (no phase carried into the next item or past the block's exit)."""
        if PINGPONG and tid >> 7 == 0:
            bar_sync(FIRST_BAR)

    turn_begin, turn_end, turns_open, turns_close = (
        jit(f) for f in (turn_begin, turn_end, turns_open, turns_close)
    )
    wg_wait1 = wg.wait1
    softmax_rows, rescale = softmax_parts(dtype, simulator, 1, NS, NO, C)

    def load_kv(base, sidx, src, gfirst, c, tid):
        """My copies of one K or V tile of c valid rows (the zero-filling copier only when short)."""
        if c == BC:
            return copy_kv(base, sidx, src, gfirst, tid)
        return copy_kv_ragged(base, sidx, src, gfirst, c, tid)

    def s_product(s, base, q_off, k_off):
        """Issue S = Q K_jᵀ (d/16 wgmma, both operands in shared memory) as one group; no wait."""
        wg_fence()
        for kk in range(KQ):
            mma_ss(
                s,
                base,
                desc(base, q_off + (kk & 3) * Q_A + (kk >> 2) * Q_B, HI_Q),
                desc(base, k_off + (kk & 3) * K_A + (kk >> 2) * K_B, HI_K),
                int32(min(kk, 1)),
            )
        wg_commit()

    def pv_product(acc, pa, base, v_off):
        """Issue O += P V_j (Bc/16 wgmma, A = P from registers, V MN-major) as one group; no wait."""
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
                desc(base, v_off + kk * V_STEP, HI_V),
                int32(1),
            )
        wg_commit()

    def mask(s, k_start, c, n_k, warp_first, row0, tq, off):
        """Keys past N_k, and (causal) keys beyond my rows' reach, get −∞ (warp-uniform test first)."""
        if c < BC or (CAUSAL and k_start + BC - 1 > warp_first + off):
            for t in range(NS):
                for e in range(2):
                    col = k_start + 8 * t + 2 * tq + e
                    if col >= n_k or (CAUSAL and col > row0 + off):
                        s[t, e] = NEG_INF
                    if col >= n_k or (CAUSAL and col > row0 + 8 + off):
                        s[t, 2 + e] = NEG_INF

    def finish(acc, m, lsum, o, lse, bh, n_q, row0, tq):
        """O = O / l in the dtype, L = (m + log2 l)·ln 2 in fp32; returns the bytes written."""
        n_gw = 0
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
                n_gw += 4 * NO
                if tq == 0:
                    lse[bh * n_q + row] = (m[h] + float32(math.log2(lt))) * F_LN2
                    n_gw += 4
        return n_gw

    load_kv, s_product, pv_product, mask, finish = (
        jit(f) for f in (load_kv, s_product, pv_product, mask, finish)
    )

    def visit(
        s,
        pa_cur,
        pa_nxt,
        alpha,
        base,
        acc,
        m,
        lsum,
        jj,
        tc,
        kvg,
        k,
        v,
        n_k,
        q_off,
        warp_first,
        row0,
        tq,
        off,
        tid,
    ):
        """One K/V block of the pipelined schedule (``overlap``), FA3's order: on entry P_jj is in pa_cur
        and its rescale factors in alpha, O holds P V up to jj − 1 (finished), s is free. Visit v's K is
        in buffer v mod 2, its V in buffer v mod 3. Returns my copy bytes."""
        j = tc - 1 - jj
        k_start = j * BC
        got = 0
        put = 0
        cuda.syncthreads()  # S_jj and P V(jj − 1) are done everywhere: their K and V buffers are free
        if jj + 2 < tc:  # K of visit jj + 2 (never ragged) into K buffer jj mod 2
            g1, p1 = copy_kv(base, K_OFF + (jj & 1) * TILE, k, kvg + (k_start - 2 * BC) * D, tid)
            got += g1
            put += p1
        if jj + 1 < tc:  # V of visit jj + 1 into V buffer (jj + 1) mod 3
            g2, p2 = copy_kv(base, V_OFF + ((jj + 1) % 3) * TILE, v, kvg + (k_start - BC) * D, tid)
            got += g2
            put += p2
        cp_commit()
        cp_wait1()  # my copies of K_jj+1 and V_jj (the group of the previous visit) have landed
        proxy_fence()
        cuda.syncthreads()
        # S_jj+1, then P V(jj) behind it on the tensor cores. The last visit computes an S on the K
        # buffer's old contents and throws it away: every visit issues and waits alike (ptxas serialises
        # the wgmma when a wait sits in a branch, warning C7515)
        turn_begin(tid)
        s_product(s, base, q_off, K_OFF + ((jj + 1) & 1) * TILE)
        rescale(acc, alpha)
        pv_product(acc, pa_cur, base, V_OFF + (jj % 3) * TILE)
        turn_end(tid)
        wg_wait1()  # S_jj+1 has finished; P V(jj) runs on during its softmax
        pin_s(s)
        if jj + 1 < tc:
            ks = k_start - BC
            mask(s, ks, min(BC, n_k - ks), n_k, warp_first, row0, tq, off)
            softmax_rows(s, m, lsum, alpha)
            pack_p(s, pa_nxt)
        wg_wait0()  # P V(jj) has finished
        pin_o(acc)
        return got, put

    visit = jit(visit)
    PERSISTENT = cfg.persistent > 0

    def item_rows(i, n_q, n_k, tid):
        """Where work item (Q block i) puts me: the block's first row and valid rows, the K/V blocks it
        visits, my warp's first row, my two rows' first, my group's offset into the Q tile."""
        grp = tid >> 7  # my warpgroup: query rows 64·grp ..
        w = (tid >> 5) & 3  # my warp inside it: 16 of them
        q_start = i * BR
        r = min(BR, n_q - q_start)
        tc = (n_k + BC - 1) // BC
        if CAUSAL:
            tc = min(tc, (q_start + r - 1 + n_k - n_q) // BC + 1)
        warp_first = q_start + GROUP_ROWS * grp + 16 * w  # my warp's first query row
        row0 = warp_first + ((tid & 31) >> 2)  # my rows: row0 and row0 + 8
        return q_start, r, tc, warp_first, row0, GROUP_ROWS * grp * Q_ROW

    def first_copies(base, q, k, v, i, bh, n_q, n_k, group, tid):
        """Issue (and commit) a work item's first copies: Q_i and the first visited K/V block(s), one
        cp.async group (Q, K, V) without the pipeline, two (Q, K | V, the next K) with it. Returns my
        copy bytes."""
        q_start, r, tc, _, _, _ = item_rows(i, n_q, n_k, tid)
        kvg = (bh // group) * n_k * D
        qg = (bh * n_q + q_start) * D
        if r == BR:
            got, put = copy_q(base, 0, q, qg, tid)
        else:
            got, put = copy_q_ragged(base, 0, q, qg, r, tid)
        j = tc - 1
        c = min(BC, n_k - j * BC)
        got2, put2 = load_kv(base, K_OFF, k, kvg + j * BC * D, c, tid)
        got += got2
        put += put2
        if OVERLAP:
            cp_commit()  # group: Q, K_0
        got2, put2 = load_kv(base, V_OFF, v, kvg + j * BC * D, c, tid)
        got += got2
        put += put2
        if OVERLAP and tc > 1:
            got2, put2 = copy_kv(base, K_OFF + TILE, k, kvg + (j - 1) * BC * D, tid)
            got += got2
            put += put2
        cp_commit()  # group: Q, K_0, V_0; with the pipeline V_0, K_1
        return got, put

    def compute(s, pa, pa2, alpha, acc, m, lsum, base, k, v, i, bh, n_q, n_k, group, tid):
        """One work item after its ``first_copies``: every K/V visit, O and (m, l) left in registers for
        ``finish``; returns my copy bytes and my share of the wgmma's shared-memory reads."""
        tq = tid & 3
        q_start, r, tc, warp_first, row0, q_off = item_rows(i, n_q, n_k, tid)
        off = n_k - n_q
        kvg = (bh // group) * n_k * D
        n_gr = 0
        n_sw = 0
        for e in range(2):
            m[e] = NEG_INF
            lsum[e] = ZERO
        for t in range(NO):
            for e in range(4):
                acc[t, e] = ZERO
        j = tc - 1
        c = min(BC, n_k - j * BC)
        turns_open(tid)
        if OVERLAP:
            cp_wait1()
            proxy_fence()
            cuda.syncthreads()
            turn_begin(tid)
            s_product(s, base, q_off, K_OFF)
            turn_end(tid)
            wg_wait0()
            pin_s(s)
            mask(s, j * BC, c, n_k, warp_first, row0, tq, off)
            softmax_rows(s, m, lsum, alpha)
            pack_p(s, pa)
            for jj in range(0, tc, 2):
                got, put = visit(
                    s,
                    pa,
                    pa2,
                    alpha,
                    base,
                    acc,
                    m,
                    lsum,
                    jj,
                    tc,
                    kvg,
                    k,
                    v,
                    n_k,
                    q_off,
                    warp_first,
                    row0,
                    tq,
                    off,
                    tid,
                )
                n_gr += got
                n_sw += put
                if jj + 1 < tc:
                    got, put = visit(
                        s,
                        pa2,
                        pa,
                        alpha,
                        base,
                        acc,
                        m,
                        lsum,
                        jj + 1,
                        tc,
                        kvg,
                        k,
                        v,
                        n_k,
                        q_off,
                        warp_first,
                        row0,
                        tq,
                        off,
                        tid,
                    )
                    n_gr += got
                    n_sw += put
        else:
            for jj in range(tc):
                j = tc - 1 - jj
                k_start = j * BC
                b_off = (jj & 1) * TILE
                if jj + 1 < tc:  # prefetch block j − 1 (never ragged) into the other buffers
                    if jj > 0:
                        cuda.syncthreads()  # everyone is done reading them (visit jj − 1)
                    nb = TILE - b_off
                    src = kvg + (k_start - BC) * D
                    got, put = copy_kv(base, K_OFF + nb, k, src, tid)
                    got2, put2 = copy_kv(base, V_OFF + nb, v, src, tid)
                    cp_commit()
                    n_gr += got + got2
                    n_sw += put + put2
                    cp_wait1()  # my copies of block j have landed
                else:
                    cp_wait_all()
                proxy_fence()  # ... and are visible to the tensor cores' (async) proxy
                cuda.syncthreads()  # everyone's
                turn_begin(tid)
                s_product(s, base, q_off, K_OFF + b_off)
                turn_end(tid)
                wg_wait0()
                pin_s(s)
                mask(s, k_start, min(BC, n_k - k_start), n_k, warp_first, row0, tq, off)
                softmax_update(s, m, lsum, acc)
                pack_p(s, pa)
                turn_begin(tid)
                pv_product(acc, pa, base, V_OFF + b_off)
                turn_end(tid)
                wg_wait0()
                pin_o(acc)
        turns_close(tid)
        n_sr = tc * (SS_BYTES + RS_BYTES)  # my share of the wgmma's shared-memory reads
        if OVERLAP:
            n_sr += SS_BYTES  # the last visit's thrown-away S
        return n_gr, n_sw, n_sr

    def item_coords(t, tr, heads, sections):
        """Work item t of the plain grid's launch order as (Q block i, batch·head)."""
        if CAUSAL:  # sections of `sections` heads (the last one may be short), heaviest Q block first
            z = t // (sections * tr)
            width = min(sections, heads - z * sections)
            u = t - z * sections * tr
            y = u // width
            return tr - 1 - y, z * sections + u - y * width
        return t % tr, t // tr

    item_rows, first_copies, compute, item_coords = (
        jit(f) for f in (item_rows, first_copies, compute, item_coords)
    )

    SLOT = (cfg.smem_bytes - WORK_SLOT_BYTES) // 2  # uint16 index of the slot (two halves of an int32)

    def next_item(sm, work, items, blocks, tid):
        """Thread 0 takes the next work item from the launch's counter into the slot (read after the
        next barrier). Every block's last take returns ≥ items, so a launch takes items + blocks in all;
        the last one resets the counter to 0 for the next launch (no memset between launches)."""
        if tid == 0:
            t = cuda.atomic.add(work, 0, 1)
            if t == items + blocks - 1:
                work[0] = 0
            sm[SLOT] = uint16(t & 0xFFFF)
            sm[SLOT + 1] = uint16(t >> 16)

    next_item = jit(next_item)

    def fa3_tc(q, k, v, o, lse, counters, n_q, n_k, group):
        sm = cuda.shared.array(SM_ELEMS, uint16, alignment=ALIGN)  # Qs | Ks[0] Ks[1] | Vs[0] Vs[1] (Vs[2])
        base = smem_base(sm)
        s = cuda.local.array((NS, 4), float32)  # S, then P: the accumulator of S's wgmma
        pa = cuda.local.array((KP, 4), uint32)  # P in the dtype: the A fragments of O's wgmma
        pa2 = cuda.local.array((KP, 4 if OVERLAP else 1), uint32)  # the other visits' P (overlap)
        alpha = cuda.local.array(2, float32)  # the pipeline's rescale factors of my two rows
        acc = cuda.local.array((NO, 4), float32)  # O: the accumulator of O's wgmma
        m = cuda.local.array(2, float32)  # running max of my two rows (base-2 units)
        lsum = cuda.local.array(2, float32)  # my partial running sums
        tid = cuda.threadIdx.x
        tq = tid & 3
        if CAUSAL:  # grid (S, Tr, sections), x fastest: each section's S heads, last (heaviest) Q block first
            i = cuda.gridDim.y - 1 - cuda.blockIdx.y
            bh = cuda.blockIdx.z * cuda.gridDim.x + cuda.blockIdx.x
            if bh * n_q * D >= o.shape[0]:  # the last section's unused head slots
                return
        else:
            i = cuda.blockIdx.x
            bh = cuda.blockIdx.y
        n_gr, n_sw = first_copies(base, q, k, v, i, bh, n_q, n_k, group, tid)
        got, put, n_sr = compute(s, pa, pa2, alpha, acc, m, lsum, base, k, v, i, bh, n_q, n_k, group, tid)
        row0 = item_rows(i, n_q, n_k, tid)[4]
        n_gw = finish(acc, m, lsum, o, lse, bh, n_q, row0, tq)
        if COUNTING:
            flush_counters(counters, n_gr + got, n_gw, n_sr, n_sw + put)

    def fa3_tc_persistent(q, k, v, o, lse, counters, n_q, n_k, group, sections, work):
        """The persistent grid: each block takes the next work item of the plain grid's launch order
        from the counter `work` (FA3's dynamic tile scheduler: items in launch order, so the longest
        causal items go first as with the plain grid); the next item's Q and first K/V copies are
        issued once every warpgroup's last wgmma has read shared memory, before this item's epilogue
        (its global stores), so they land while it runs."""
        sm = cuda.shared.array(SM_ELEMS, uint16, alignment=ALIGN)
        base = smem_base(sm)
        s = cuda.local.array((NS, 4), float32)
        pa = cuda.local.array((KP, 4), uint32)
        pa2 = cuda.local.array((KP, 4 if OVERLAP else 1), uint32)
        alpha = cuda.local.array(2, float32)
        acc = cuda.local.array((NO, 4), float32)
        m = cuda.local.array(2, float32)
        lsum = cuda.local.array(2, float32)
        tid = cuda.threadIdx.x
        tq = tid & 3
        heads = o.shape[0] // (n_q * D)  # B·H
        tr = (n_q + BR - 1) // BR
        items = tr * heads
        blocks = cuda.gridDim.x
        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        next_item(sm, work, items, blocks, tid)
        cuda.syncthreads()
        t = int32(sm[SLOT]) | (int32(sm[SLOT + 1]) << 16)
        if t < items:
            i, bh = item_coords(t, tr, heads, sections)
            got, put = first_copies(base, q, k, v, i, bh, n_q, n_k, group, tid)
            n_gr += got
            n_sw += put
        while t < items:
            i, bh = item_coords(t, tr, heads, sections)
            got, put, sr = compute(s, pa, pa2, alpha, acc, m, lsum, base, k, v, i, bh, n_q, n_k, group, tid)
            n_gr += got
            n_sw += put
            n_sr += sr
            next_item(sm, work, items, blocks, tid)  # (everyone read the slot before compute's barriers)
            cuda.syncthreads()  # every warpgroup's wgmma are done with Qs, Ks, Vs; the slot is written
            t_next = int32(sm[SLOT]) | (int32(sm[SLOT + 1]) << 16)
            if t_next < items:
                i2, bh2 = item_coords(t_next, tr, heads, sections)
                got, put = first_copies(base, q, k, v, i2, bh2, n_q, n_k, group, tid)
                n_gr += got
                n_sw += put
            row0 = item_rows(i, n_q, n_k, tid)[4]
            n_gw += finish(acc, m, lsum, o, lse, bh, n_q, row0, tq)
            t = t_next
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    if PERSISTENT:
        fa3_tc = fa3_tc_persistent

    fa3_tc.__name__ = fa3_tc.__qualname__ = (
        f"fa3_tc_{dtype}_d{D}_{cfg.name}{'_causal' if CAUSAL else ''}{'_count' if COUNTING else ''}"
    )
    if simulator or cfg.max_registers is None:
        return cuda.jit(fa3_tc)
    return cuda.jit(max_registers=cfg.max_registers)(fa3_tc)


def kernel_signature(persistent: bool = False):
    """fa2_tc's argument types: the same launch; the persistent grid's kernel takes the causal
    section size S (int64) and its work counter (int32[1]) last."""
    from numba.cuda import types

    sig = fa2_signature()
    return sig + (sig[-1], types.Array(types.int32, 1, "C")) if persistent else sig


def ptx_of(cfg: Fa3Config, dtype: str, counting: bool, causal: bool, cc=None) -> str:
    """The PTX of one build: from the compiled dispatcher on a GPU, else ``cuda.compile_ptx`` for
    `cc` (default (9, 0); the text's target is then sm_90, to be assembled as sm_90a)."""
    disp = fa3_tc_kernel(cfg.check(), check_dtype(dtype), counting, causal, False)
    sig = kernel_signature(cfg.persistent > 0)
    if cuda.is_available():
        disp.compile(sig)
        return disp.inspect_asm(sig)
    ptx, _ = cuda.compile_ptx(disp.py_func, sig, cc=cc or (9, 0))
    return ptx


#: bytes of K and V that one L2 section of heads may hold (FA3's tile scheduler: 32 MiB for K and V
#: counted twice, i.e. 16 MiB, about a quarter of the H200's 60 MiB L2)
L2_SECTION_BYTES = 16 * 1024 * 1024


def section_heads(n_k: int, head_dim: int, group: int, heads: int, budget: int = L2_SECTION_BYTES) -> int:
    """How many consecutive batch·heads a causal launch runs side by side, heaviest Q blocks first: the
    largest power of two of K/V heads whose K and V (2·N_k·d 16-bit values each) fit in `budget`, at
    least 1, times the `group` query heads that share each, at most `heads` (all B·H). Worked number:
    N_k = 4096, d = 128: 2 MiB per head, 8 heads; d = 64: 16; N_k = 16384, d = 128: 2.

    >>> section_heads(4096, 128, 1, 64), section_heads(4096, 64, 1, 64), section_heads(16384, 128, 1, 16)
    (8, 16, 2)
    """
    kv_heads = max(1, budget // (2 * n_k * head_dim * 2))
    return min(heads, (1 << (kv_heads.bit_length() - 1)) * group)


@functools.cache
def work_counter():
    """The persistent kernel's work counter (int32[1] on the device, 0 between launches: each launch's
    last take resets it). One for all launches: they run one after another on the default stream."""
    return cuda.to_device(np.zeros(1, np.int32))


#: the blocks per SM a persistent grid counts on the simulator (which has no SMs): 2, so that a
#: simulator test's few work items loop through several rounds
SIMULATOR_SMS = 2
#: L2 section rules of the causal order: "l2" (FA3's: ``section_heads`` at both head dims), "all64"
#: (every head at once at d = 64, where 1 MiB of K/V per head at N = 4096 left the L2 no worse off:
#: all heads 1.7 % faster than sections of 8 in run fa3-l2-sections-20261202, the rule 2.3-2.5 % faster
#: than "l2" at both N in run fa3-v5-persistent-20261203; ``section_heads`` at d = 128). The default: "all64"
SECTION_RULES = ("l2", "all64")


@dataclass(frozen=True)
class Fa3TcPlan(FlashTcPlan):
    """One launch of the wgmma kernel: grid (Tr, B·H), 128·G threads per block; under causal masking
    (S, Tr, ⌈B·H/S⌉): S heads at a time (their K/V stay in L2; `section_rule`: all heads at d = 64,
    FA3's 16 MiB rule at d = 128), each section's heaviest Q blocks first. `sections`: S itself instead of the rule (None: the rule). A persistent config
    (``Fa3Config.persistent`` blocks per SM) launches min(items, that × SMs) blocks that walk the same
    order of Tr·B·H items."""

    sections: int | None = None
    section_rule: str = "all64"

    @property
    def section_size(self) -> int:
        """S: the causal order's heads per L2 section."""
        b, h, hkv, nq, nk, d = self.shape
        if self.section_rule not in SECTION_RULES:
            raise ValueError(f"section_rule must be one of {SECTION_RULES}; got {self.section_rule!r}")
        if self.sections:
            return min(self.sections, b * h)
        if self.section_rule == "all64" and d == 64:
            return b * h
        return section_heads(nk, d, h // hkv, b * h)

    @property
    def grid(self):
        b, h, hkv, nq, nk, d = self.shape
        tr = -(-nq // self.config.block_rows)
        if self.config.persistent:
            sms = SIMULATOR_SMS if simulator_enabled() else cuda.get_current_device().MULTIPROCESSOR_COUNT
            return (min(tr * b * h, self.config.persistent * sms),)
        if not self.causal:
            return (tr, b * h)
        s = self.section_size
        return (s, tr, -(-(b * h) // s))

    def launch(self, q, k, v, o, lse, counters):
        """FlashTcPlan's launch; the persistent kernel also takes the section size."""
        if not self.config.persistent:
            return super().launch(q, k, v, o, lse, counters)
        b, h, hkv, nq, nk, _ = self.shape
        kern, cfg = self.kernel(), self.config
        s = self.section_size if self.causal else 1
        args = (q, k, v, o, lse, counters, nq, nk, h // hkv, s, work_counter())
        if not cfg.dynamic_smem:
            kern[self.grid, cfg.threads](*args)
            return
        if not simulator_enabled():
            allow_dynamic_smem(kern, cfg.smem_bytes, kernel_signature(True))
        kern[self.grid, cfg.threads, 0, cfg.smem_bytes](*args)

    def kernel(self):
        return fa3_tc_kernel(self.config, self.dtype, self.counting, self.causal, simulator_enabled())


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
    return plan_fa3_tc(q, k, v, dtype=dtype, config=config, counting=count, causal=causal).run(q, k, v)
