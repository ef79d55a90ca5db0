"""What Nsight Compute should count for each launch of ``naive_tc`` (bf16/fp16): scores, softmax, pv.

The same rules as fa2_tc_model.py, on gpu_kernels/kernels/naive_tc.py's mappings:

* scores, grid (N/Bn, N/Bm, B·H), W warps: Q (Bm × d) and K (Bn × d) tiles by cp.async; per warp
  d/16 k-steps of one Q ldmatrix.x4 and Bn/16 K ldmatrix.x4; S (row stride N rounded up to 8)
  stored from the accumulators as 2-byte values (four store instructions per n-tile);
* softmax, grid (N, B·H), t threads per row: each of the N/t scores per thread is one 2-byte load
  (lanes consecutive: 64 bytes, 2 sectors) and one 2-byte store of P; the two block reductions
  store one fp32 per warp (lane 0: one wavefront each) and every thread reads the W = t/32
  partials, all lanes the same address (a broadcast). ptxas reads them as 16-byte vectors, not as
  the PTX's W scalar ld.shared.f32: ⌊W/4⌋ LDS.128 and the rest as one LDS.64 and/or one LDS.32
  (SASS of run g-tc-leftovers-20261201: 4 LDS.128 at t = 256, 16 at t = 1024); a broadcast LDS.128
  costs 2 wavefronts, an LDS.64 or LDS.32 one (ncu in that run: 33,554,432 LDS.128 executed, 67,108,865
  wavefronts at t = 1024; W = 1, 2: one wavefront per load) — ⌈W/2⌉ wavefronts per reduction
  (``broadcast_wavefronts``);
* pv, grid (N/Bm, B·H): per key chunk of Bk a P tile (Bm × Bk) and a V tile (Bk × d) by cp.async;
  per warp Bk/16 k-steps of one P ldmatrix.x4 and d/16 V ldmatrix.x4.trans; O stored as in fa2_tc.

DRAM: each launch starts from a flushed L2 (ncu --cache-control all); the model predicts the
tensors each launch reads once (scores: Q, K; softmax: S; pv: P, V) and every byte written.
"""

from __future__ import annotations

from .coalescing import warp_sectors
from .fa2_tc_model import (
    ELEMENT,
    copy_sectors,
    fragment_store_sectors,
    key_fragment_row,
    ldmatrix_wavefronts,
    q_fragment_row,
    value_fragment_row,
)
from .tally import Tally

LAUNCHES = ("scores", "softmax", "pv")


def row_stride(n):
    return -(-n // 8) * 8


def broadcast_wavefronts(partials):
    """Wavefronts of one warp reading `partials` consecutive fp32 words, every lane the same ones:
    ⌊W/4⌋ LDS.128 at 2 wavefronts, then an LDS.64 (W mod 4 ≥ 2) and an LDS.32 (W odd) at 1 each, as
    ptxas vectorises the unrolled loop. Worked number: W = 8 → 2·2 = 4; W = 2 → 1; W = 1 → 1."""
    rest = partials % 4
    return 2 * (partials // 4) + (rest >= 2) + (rest % 2)


def naive_tc_launch(launch, workload, warps, block_cols, softmax_threads):
    """(Tally, DRAM read bytes, DRAM write bytes, details) of one naive_tc launch (non-causal
    self-attention, N a multiple of Bm and Bn, softmax threads dividing N)."""
    bh, n, d = workload.batch_heads, workload.seq_len, workload.head_dim
    bm, bn, nt, ld = 16 * warps, block_cols, 32 * warps, row_stride(workload.seq_len)
    if workload.causal or workload.nq != n or n % bm or n % bn or n % softmax_threads:
        raise ValueError(
            f"the naive_tc model covers non-causal self-attention with N a multiple of Bm = {bm}, "
            f"Bn = {bn} and the softmax threads {softmax_threads}; got N = {n}"
        )
    t = Tally()
    s_bytes = bh * n * ld * ELEMENT
    if launch == "scores":
        blocks = bh * (n // bm) * (n // bn)
        t.add("global_ld", copy_sectors(bm, d, nt, d)[0] + copy_sectors(bn, d, nt, d)[0], blocks)
        t.add("global_st", fragment_store_sectors(bn // 8, ld)[0], blocks * warps)
        per_warp = sum(ldmatrix_wavefronts(q_fragment_row(0, kk, d), d) for kk in range(d // 16))
        per_warp += sum(
            ldmatrix_wavefronts(key_fragment_row(p, kk, d), d)
            for kk in range(d // 16)
            for p in range(bn // 16)
        )
        t.add("shared_ld", per_warp, blocks * warps)
        return t, 2 * bh * n * d * ELEMENT, s_bytes, {}
    if launch == "softmax":
        per, row_warps = n // softmax_threads, softmax_threads // 32
        sectors = warp_sectors([ELEMENT * lane for lane in range(32)], ELEMENT)
        t.add("global_ld", sectors, bh * n * row_warps * per)
        t.add("global_st", sectors, bh * n * row_warps * per)
        t.add("shared_st", 1, bh * n * row_warps * 2)
        t.add("shared_ld", broadcast_wavefronts(row_warps), bh * n * row_warps * 2)
        return t, s_bytes, s_bytes, {}
    if launch != "pv":
        raise ValueError(f"unknown naive_tc launch {launch!r}; choose from {', '.join(LAUNCHES)}")
    blocks, chunks = bh * (n // bm), n // bn
    t.add("global_ld", copy_sectors(bm, bn, nt, ld)[0] + copy_sectors(bn, d, nt, d)[0], blocks * chunks)
    t.add("global_st", fragment_store_sectors(d // 8, d)[0], blocks * warps)
    per_chunk = sum(ldmatrix_wavefronts(q_fragment_row(0, kk, bn), bn) for kk in range(bn // 16))
    per_chunk += sum(
        ldmatrix_wavefronts(value_fragment_row(kk, p, d), d) for kk in range(bn // 16) for p in range(d // 16)
    )
    t.add("shared_ld", per_chunk * chunks, blocks * warps)
    return t, s_bytes + bh * n * d * ELEMENT, bh * n * d * ELEMENT, {}
