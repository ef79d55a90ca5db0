"""One warp's FlashAttention step on one K/V tile in shared memory: what fa2_tc and decode_tc share.

A warp holds MT m16 tiles of query rows (its A fragments: Q, then P) against a tile of keys whose K and
V rows are swizzled in shared memory (tiles.swizzled) and addressed through a 32-bit base
(addressed_ops). Lane 4g + t holds, per m-tile, rows g and g + 8 and, per 8-wide n-tile, columns
2t, 2t + 1 (the mma accumulator layout). ``flash_tile_ops(dtype, simulator, MT, NS, NO, D, C)``
returns five device functions over the kernel's local arrays (s: (MT·NS, 4) fp32 scores, then
probabilities; pa: (MT·KP, 4) uint32 P fragments, KP = NS/2; acc: (MT·NO, 4) fp32 O; m, lsum: (2·MT,)
running max in base-2 units and my partial running sums):

    load_q(qa, base, q_lane, xa)
        my MT m-tiles of Q into registers, all of d: qa[mt·(d/16) + kk] by one ldmatrix.x4 each at
        q_lane + 16·mt·D + xa[kk mod 4] + 64·(kk div 4)
    qk_step(s, afr, first, stride, base, k_lane, xk, kk)
        S += Q_kk K_kkᵀ for k-step kk: per 16 keys (p) one ldmatrix.x4 of K at k_lane + 16·p·D +
        xk[kk mod 4] + 64·(kk div 4) (my lane's row, and its swizzled chunk) and 2 mma per m-tile, the A
        fragment of m-tile mt being afr[first + mt·stride] (Q in registers: qa, kk, KQ; re-read: the
        m-tiles just loaded)
    softmax_update(s, m, lsum, acc)
        the online softmax of my 2·MT rows over the tile's columns in s (masked ones already −∞):
        new running max (quad shuffles), p = 2^(s·C − m) with C = log2(e)/√d, l and O rescaled by
        2^(m_old − m_new); a row that has seen only masked keys keeps m = −∞ and gets p = 0, not NaN
        (``softmax_parts``: the same in two steps, the rescale of O separate)
    pack_p(s, pa)
        P in the dtype: n-tiles 2kk, 2kk + 1 of P are the A fragment of k-step kk (no data movement)
    pv_products(acc, pa, base, v_addr, xa)
        O += P V: per 16 keys (k-step kk) and 16 head-dim columns (p) one ldmatrix.x4.trans of V at
        v_addr + 16·kk·D + xa[p mod 4] + 64·(p div 4) and 2 mma per m-tile

On the GPU each is inlined (the SASS of fa2_tc is the same as with the loops written in the kernel:
PERFORMANCE.md); under the simulator each runs its warp_ops twins, with the same semantics.
Worked number: d = 128, 16 keys per warp and tile (decode_tc): qk_step is 1 ldmatrix and 2 mma per
k-step, 8 k-steps; pv_products 8 ldmatrix.trans and 16 mma.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from numba import cuda, float32  # module global: the simulator swaps `cuda` (cuda.fma below)

from .addressed_ops import addressed_ops
from .warp_ops import warp_ops


class FlashTileOps(NamedTuple):
    load_q: object
    qk_step: object
    softmax_update: object
    pack_p: object
    pv_products: object


@functools.cache
def flash_tile_ops(dtype: str, simulator: bool, MT: int, NS: int, NO: int, D: int, C: float) -> FlashTileOps:
    mma, _, _, _, _, _, pack2, _, quad_max, _, _, _ = warp_ops(dtype, simulator)
    _, ldsm_x4, ldsm_x4_t, _, _, _, ex2, fmax = addressed_ops(dtype, simulator)
    KP = NS // 2
    ROWS2 = 2 * MT

    def load_q(qa, base, q_lane, xa):
        for mt in range(MT):
            for kk in range(D // 16):
                r = mt * (D // 16) + kk
                qa[r, 0], qa[r, 1], qa[r, 2], qa[r, 3] = ldsm_x4(
                    base, q_lane + 16 * mt * D + xa[kk & 3] + (kk >> 2) * 64
                )

    def qk_step(s, afr, first, stride, base, k_lane, xk, kk):
        for p in range(NS // 2):
            b0, b1, b2, b3 = ldsm_x4(base, k_lane + 16 * p * D + xk[kk & 3] + (kk >> 2) * 64)
            for mt in range(MT):
                r = first + mt * stride
                a0, a1, a2, a3 = afr[r, 0], afr[r, 1], afr[r, 2], afr[r, 3]
                t0 = mt * NS + 2 * p
                s[t0, 0], s[t0, 1], s[t0, 2], s[t0, 3] = mma(
                    a0, a1, a2, a3, b0, b1, s[t0, 0], s[t0, 1], s[t0, 2], s[t0, 3]
                )
                s[t0 + 1, 0], s[t0 + 1, 1], s[t0 + 1, 2], s[t0 + 1, 3] = mma(
                    a0, a1, a2, a3, b2, b3, s[t0 + 1, 0], s[t0 + 1, 1], s[t0 + 1, 2], s[t0 + 1, 3]
                )

    softmax_rows, rescale = softmax_parts(dtype, simulator, MT, NS, NO, C)

    def softmax_update(s, m, lsum, acc):
        alpha = cuda.local.array(ROWS2, float32)
        softmax_rows(s, m, lsum, alpha)
        rescale(acc, alpha)

    def pack_p(s, pa):
        for mt in range(MT):
            for kk in range(KP):
                t0 = mt * NS + 2 * kk
                pa[mt * KP + kk, 0] = pack2(s[t0, 0], s[t0, 1])
                pa[mt * KP + kk, 1] = pack2(s[t0, 2], s[t0, 3])
                pa[mt * KP + kk, 2] = pack2(s[t0 + 1, 0], s[t0 + 1, 1])
                pa[mt * KP + kk, 3] = pack2(s[t0 + 1, 2], s[t0 + 1, 3])

    def pv_products(acc, pa, base, v_addr, xa):
        for kk in range(KP):
            for p in range(NO // 2):
                b0, b1, b2, b3 = ldsm_x4_t(base, v_addr + 16 * kk * D + xa[p & 3] + (p >> 2) * 64)
                for mt in range(MT):
                    t0 = mt * NO + 2 * p
                    r = mt * KP + kk
                    a0, a1, a2, a3 = pa[r, 0], pa[r, 1], pa[r, 2], pa[r, 3]
                    acc[t0, 0], acc[t0, 1], acc[t0, 2], acc[t0, 3] = mma(
                        a0, a1, a2, a3, b0, b1, acc[t0, 0], acc[t0, 1], acc[t0, 2], acc[t0, 3]
                    )
                    acc[t0 + 1, 0], acc[t0 + 1, 1], acc[t0 + 1, 2], acc[t0 + 1, 3] = mma(
                        a0, a1, a2, a3, b2, b3, acc[t0 + 1, 0], acc[t0 + 1, 1], acc[t0 + 1, 2], acc[t0 + 1, 3]
                    )

    jit = cuda.jit(device=True) if simulator else cuda.jit(device=True, inline=True)
    return FlashTileOps(jit(load_q), jit(qk_step), jit(softmax_update), jit(pack_p), jit(pv_products))


@functools.cache
def softmax_parts(dtype: str, simulator: bool, MT: int, NS: int, NO: int, C: float):
    """``(softmax_rows, rescale)``: softmax_update in two steps. ``softmax_rows(s, m, lsum, alpha)``
    is all of it but O's rescale, each row's factor 2^(m_old − m_new) left in alpha (2·MT,);
    ``rescale(acc, alpha)`` multiplies O's rows by it. fa3_tc rescales O only once the wgmma still
    adding P V of the previous tile into it has finished."""
    _, _, _, _, _, _, _, _, quad_max, _, _, _ = warp_ops(dtype, simulator)
    _, _, _, _, _, _, ex2, fmax = addressed_ops(dtype, simulator)
    SC = np.float32(C)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)

    def softmax_rows(s, m, lsum, alpha):
        for mt in range(MT):
            for h in range(2):
                mx = NEG_INF
                for t in range(NS):
                    mx = fmax(mx, fmax(s[mt * NS + t, 2 * h], s[mt * NS + t, 2 * h + 1]))
                m_new = fmax(m[2 * mt + h], quad_max(mx) * SC)
                # a row that has seen only masked keys keeps m = −∞: subtract 0 instead, so p =
                # exp2(−∞) = 0 and alpha = exp2(−∞) = 0 (l and O are still 0): no −∞ − (−∞) = NaN
                mu = ZERO if m_new == NEG_INF else m_new
                alpha[2 * mt + h] = ex2(m[2 * mt + h] - mu)
                m[2 * mt + h] = m_new
                total = ZERO
                for t in range(NS):
                    for e in range(2):
                        pv = ex2(cuda.fma(s[mt * NS + t, 2 * h + e], SC, -mu))
                        s[mt * NS + t, 2 * h + e] = pv
                        total += pv
                lsum[2 * mt + h] = (
                    lsum[2 * mt + h] * alpha[2 * mt + h] + total
                )  # fp32 p, before rounding (FA2)

    def rescale(acc, alpha):
        for mt in range(MT):
            for h in range(2):
                for t in range(NO):
                    acc[mt * NO + t, 2 * h] *= alpha[2 * mt + h]
                    acc[mt * NO + t, 2 * h + 1] *= alpha[2 * mt + h]

    jit = cuda.jit(device=True) if simulator else cuda.jit(device=True, inline=True)
    return jit(softmax_rows), jit(rescale)
