"""The readable FlashAttention-2 kernel (gpu_kernels/kernels/tiled.py, launch "fa2"), instruction by instruction.

One thread per query row; Qs, Ks, Vs and Ss in shared memory laid out as simlib.kernel_layout says
(padding included). Each access of the kernel source is a class of warp instructions; a class's
sectors or wavefronts are those of one instruction times the instructions issued. DRAM: Q once, K
and V once per head and wave (waves.py). Worked numbers: tests/test_physical_kernels.py.
"""

from functools import cache

import numpy as np

from ..kernel_layout import ITEM_BYTES, tiled_layout, tiled_shared_bytes
from ..tiling import block_sizes, ceil_div
from .coalescing import shared_wavefronts, warp_sectors
from .occupancy import WARP_SIZE, blocks_per_sm
from .tally import Tally, lanes, residue_counts
from .waves import head_rereads, waves


def tiled_vector_width(row_stride, head_dim):
    """Floats per shared-memory load of a Q, K or V row in the compiled dot products: the compiler
    merges four consecutive reads into one 16-byte LDS.128 when the row start is 16-byte aligned
    (stride and d multiples of 4; seen in the sm_90 SASS for d = 8 ... 128), else reads 4 bytes."""
    return 4 if row_stride % 4 == 0 and head_dim % 4 == 0 else 1


@cache
def _copy_loop(total, nthreads, start_mod, row_len, shared_row_stride):
    """`for idx in range(tid, total, nthreads)`: a contiguous tile of `total` elements whose first
    element sits `start_mod` elements past a sector boundary, copied to a shared array with rows of
    `shared_row_stride` words. Returns a Tally of global-load sectors and shared-store wavefronts."""
    tally = Tally()
    for warp in range(ceil_div(nthreads, WARP_SIZE)):
        tids = lanes(warp, nthreads)
        t = 0
        while True:
            idx = tids + t * nthreads
            idx = idx[idx < total]
            if idx.size == 0:
                break
            tally.add("global_ld", warp_sectors(((start_mod + idx) * ITEM_BYTES).tolist()))
            words = (idx // row_len) * shared_row_stride + idx % row_len
            tally.add("shared_st", shared_wavefronts((words * ITEM_BYTES).tolist()))
            t += 1
    return tally


@cache
def _tiled_pair(r, c, nthreads, d, qs_cols, ss_cols):
    """Shared-memory instructions of one (Q block, K/V block) step after the loads, per block.
    Q, K and V rows are read `tiled_vector_width` floats per instruction."""
    tally = Tally()
    vq, vkv = tiled_vector_width(qs_cols, d), tiled_vector_width(d, d)
    for warp in range(ceil_div(nthreads, WARP_SIZE)):
        tids = lanes(warp, nthreads)
        tids = tids[tids < r]  # `if tid < r`: rows of a ragged block idle
        if tids.size == 0:
            continue
        active = (tids - WARP_SIZE * warp).tolist()
        for cc in range(c):
            for x in range(0, d, vq):  # S_ij: Qs[tid, x] (a row per lane) ...
                tally.add(
                    "shared_ld",
                    shared_wavefronts(((tids * qs_cols + x) * ITEM_BYTES).tolist(), vq * ITEM_BYTES, active),
                )
            for x in range(0, d, vkv):  # ... times Ks[cc, x] (one address: a broadcast)
                tally.add(
                    "shared_ld",
                    shared_wavefronts([(cc * d + x) * ITEM_BYTES] * tids.size, vkv * ITEM_BYTES, active),
                )
            s_words = ((tids * ss_cols + cc) * ITEM_BYTES).tolist()
            s = shared_wavefronts(s_words)
            tally.add("shared_st", s)  # Ss[tid, cc] = s
            tally.add("shared_ld", s)  # p = exp(Ss[tid, cc] − m)
            tally.add("shared_st", s)  # Ss[tid, cc] = p
            tally.add("shared_ld", s)  # p = Ss[tid, cc] for O += p V
            for x in range(0, d, vkv):  # Vs[cc, x], a broadcast
                tally.add(
                    "shared_ld",
                    shared_wavefronts([(cc * d + x) * ITEM_BYTES] * tids.size, vkv * ITEM_BYTES, active),
                )
    return tally


@cache
def _tiled_store(r, nthreads, d, start_mod):
    """O_i and L_i stores of one block: thread tid writes its row of O, column by column."""
    tally = Tally()
    for warp in range(ceil_div(nthreads, WARP_SIZE)):
        tids = lanes(warp, nthreads)
        tids = tids[tids < r]
        if tids.size == 0:
            continue
        for x in range(d):  # o[bh, q0 + tid, x]: lanes d·4 bytes apart
            tally.add("global_st", warp_sectors(((start_mod + tids * d + x) * ITEM_BYTES).tolist()))
        # lse[bh, q0 + tid]: O's start is (bh·N + q0)·d, L's is bh·N + q0; only L's residue matters
    return tally


def tiled_launch(workload, block_rows, block_cols, hardware, registers):
    """(Tally, DRAM bytes read, DRAM bytes written, model details) of one launch of the fa2 kernel."""
    bh, n, d = workload.batch_heads, workload.seq_len, workload.head_dim
    br, bc = min(block_rows, n), min(block_cols, n)
    qs_cols, ss_cols = tiled_layout(br, bc, d)
    rows, cols = block_sizes(n, br), block_sizes(n, bc)
    tr, tc = len(rows), len(cols)
    heads = np.arange(bh)
    tally = Tally()

    # Q_i: one copy per block; K_j, V_j: one copy each per (block, j)
    q_starts = (heads[:, None] * n + np.arange(tr)[None, :] * br) * d
    kv_starts = (heads[:, None] * n + np.arange(tc)[None, :] * bc) * d
    for r in np.unique(rows):
        sel = np.broadcast_to(rows == r, q_starts.shape)
        for mod, count in residue_counts(q_starts[sel]).items():
            tally.merge(_copy_loop(int(r) * d, br, mod, d, qs_cols), count)
            store = _tiled_store(int(r), br, d, mod)
            tally.merge(store, count)
        l_starts = (heads[:, None] * n + np.arange(tr)[None, :] * br)[sel]
        for mod, count in residue_counts(l_starts).items():
            tids = np.arange(int(r))
            for warp in range(ceil_div(br, WARP_SIZE)):
                in_warp = tids[(tids >= WARP_SIZE * warp) & (tids < WARP_SIZE * (warp + 1))]
                if in_warp.size:
                    tally.add("global_st", warp_sectors(((mod + in_warp) * ITEM_BYTES).tolist()), count)
    for c in np.unique(cols):
        sel = np.broadcast_to(cols == c, kv_starts.shape)
        for mod, count in residue_counts(kv_starts[sel]).items():
            # Ks and Vs have the same layout (rows of d words, no padding): two of each instruction
            tally.merge(_copy_loop(int(c) * d, br, mod, d, d), 2 * count * tr)
    for r, n_r in zip(*np.unique(rows, return_counts=True)):
        for c, n_c in zip(*np.unique(cols, return_counts=True)):
            tally.merge(_tiled_pair(int(r), int(c), br, d, qs_cols, ss_cols), int(n_r) * int(n_c) * bh)

    # DRAM: Q once, K and V once per head and wave (a later wave of the same head re-reads them)
    q_bytes = bh * n * d * ITEM_BYTES
    kv_head = 2 * n * d * ITEM_BYTES
    resident = blocks_per_sm(br, registers, tiled_shared_bytes(br, bc, d)) * hardware.sm_count
    wave_heads = waves(tr, bh, resident)
    wave_q = min(resident, tr * bh) * br * d * ITEM_BYTES  # Q read and O written by one wave
    l2 = hardware.level("L2").capacity_bytes
    kv_dram, distance, rereads = head_rereads(wave_heads, bh, kv_head, 2 * wave_q, l2)
    written = bh * n * (d + 1) * ITEM_BYTES
    return (
        tally,
        q_bytes + kv_dram,
        written,
        {
            "resident_blocks": resident,
            "waves": len(wave_heads),
            "kv_reuse_distance_bytes": distance,
            "kv_reread_bytes": rereads * kv_head,  # K/V a later wave reads again: L2 hits if the model holds
        },
    )
