"""The naive kernel (gpu_kernels/kernels/naive.py): its tiled matmuls ("qk", "pv") and row softmax ("softmax").

Matmul C (m×n) = A (m×k)·B, grid (⌈n/T⌉, ⌈m/T⌉, B·H), a T×T thread tile, As[T][T] and Bs[T][T+1] in
shared memory (simlib.kernel_layout); softmax: one block of t threads per row, two tree reductions,
the per-thread array x in registers or, when the compiled kernel has too few, in local memory.
Worked numbers: tests/test_physical_kernels.py.
"""

from collections import Counter
from functools import cache

import numpy as np

from ..kernel_layout import ITEM_BYTES, MATMUL_B_PAD
from ..tiling import block_sizes, ceil_div
from .coalescing import SECTOR_BYTES, shared_wavefronts, warp_sectors
from .occupancy import WARP_SIZE, blocks_per_sm
from .tally import ALIGN, Tally, lanes, residue_counts
from .waves import head_rereads, waves


@cache
def _tile_access(tile, rows, cols, stride, start_mod):
    """Global sectors of one T×T-thread tile access: lane (tx, ty) touches element (ty, tx) of a
    row-major matrix with `stride` elements per row, starting `start_mod` elements past a sector
    boundary; only ty < rows and tx < cols are active. Returns (sectors, warp instructions)."""
    T = tile
    sectors = instructions = 0
    for warp in range(ceil_div(T * T, WARP_SIZE)):
        tid = lanes(warp, T * T)
        tx, ty = tid % T, tid // T
        on = (ty < rows) & (tx < cols)
        if on.any():
            sectors += warp_sectors(((start_mod + ty[on] * stride + tx[on]) * ITEM_BYTES).tolist())
            instructions += 1
    return sectors, instructions


@cache
def _matmul_shared(tile, mr, nc, kk, trans_b):
    """Shared-memory instructions of one block for one chunk along k (mr×nc valid outputs, kk
    valid k): the As and Bs stores, then the multiply-adds' loads. As is T×T, Bs is T×(T+1)."""
    T = tile
    tally = Tally()
    for warp in range(ceil_div(T * T, WARP_SIZE)):
        tid = lanes(warp, T * T)
        tx, ty = tid % T, tid // T
        a = (ty < mr) & (tx < kk)  # As[ty, tx] = A[row0 + ty, k0 + tx]
        if a.any():
            tally.add("shared_st", shared_wavefronts(((ty[a] * T + tx[a]) * ITEM_BYTES).tolist()))
        if trans_b:  # Bs[tx, ty] = K[col0 + ty, k0 + tx] (transposed)
            b, words = (ty < nc) & (tx < kk), tx * (T + MATMUL_B_PAD) + ty
        else:  # Bs[ty, tx] = V[k0 + ty, col0 + tx]
            b, words = (ty < kk) & (tx < nc), ty * (T + MATMUL_B_PAD) + tx
        if b.any():
            tally.add("shared_st", shared_wavefronts((words[b] * ITEM_BYTES).tolist()))
        out = (ty < mr) & (tx < nc)
        if out.any():
            for x in range(kk):  # acc += As[ty, x] · Bs[x, tx]
                tally.add("shared_ld", shared_wavefronts(((ty[out] * T + x) * ITEM_BYTES).tolist()))
                tally.add(
                    "shared_ld", shared_wavefronts(((x * (T + MATMUL_B_PAD) + tx[out]) * ITEM_BYTES).tolist())
                )
    return tally


def _convolve_mod(a, b):
    """Residue counts of x + y (mod 8) for x ~ a, y ~ b (dicts residue → count)."""
    out = Counter()
    for x, nx in a.items():
        for y, ny in b.items():
            out[(x + y) % ALIGN] += nx * ny
    return out


def matmul_launch(bh, m, n, k, tile, trans_b):
    """C (m×n) = A (m×k) · B, B stored k×n (pv) or n×k (qk, trans_b); grid (⌈n/T⌉, ⌈m/T⌉, bh).

    Every block loads, for each chunk of T along k, its A tile and its B tile (so A is loaded once
    per column tile, B once per row tile) and stores its C tile once."""
    T = tile
    rows, cols, chunks = block_sizes(m, T), block_sizes(n, T), block_sizes(k, T)
    heads = np.arange(bh)
    row0, col0, k0 = (np.arange(len(x)) * T for x in (rows, cols, chunks))
    tally = Tally()

    def add(key, shape_args, residues, times):
        for mod, count in residues.items():
            sectors, instructions = _tile_access(T, *shape_args, mod)
            tally.units[key] += sectors * count * times
            tally.instructions[key] += instructions * count * times

    for mr in np.unique(rows).tolist():
        r_sel = row0[rows == mr]
        for kk in np.unique(chunks).tolist():
            k_sel = k0[chunks == kk]
            a_res = _convolve_mod(
                residue_counts(((heads[:, None] * m + r_sel[None, :]) * k).ravel()), residue_counts(k_sel)
            )
            add("global_ld", (mr, kk, k), a_res, len(cols))  # A tile, once per column tile
        for nc in np.unique(cols).tolist():
            c_sel = col0[cols == nc]
            c_res = _convolve_mod(
                residue_counts(((heads[:, None] * m + r_sel[None, :]) * n).ravel()), residue_counts(c_sel)
            )
            add("global_st", (mr, nc, n), c_res, 1)  # C tile, once
            for kk in np.unique(chunks).tolist():
                blocks = bh * len(r_sel) * len(c_sel) * int((chunks == kk).sum())
                tally.merge(_matmul_shared(T, mr, nc, kk, trans_b), blocks)
    for nc in np.unique(cols).tolist():
        c_sel = col0[cols == nc]
        for kk in np.unique(chunks).tolist():
            k_sel = k0[chunks == kk]
            if trans_b:  # K[col0 + ty, k0 + tx]: rows of K along k
                b_res = _convolve_mod(
                    residue_counts(((heads[:, None] * n + c_sel[None, :]) * k).ravel()), residue_counts(k_sel)
                )
                add("global_ld", (nc, kk, k), b_res, len(rows))
            else:  # V[k0 + ty, col0 + tx]: rows of V along d
                b_res = _convolve_mod(
                    residue_counts(((heads[:, None] * k + k_sel[None, :]) * n).ravel()), residue_counts(c_sel)
                )
                add("global_ld", (kk, nc, n), b_res, len(rows))
    return tally


def matmul_dram(bh, m, n, k, tile, trans_b, hardware, registers):
    """DRAM bytes read by the matmul: A once (the blocks of one block row are neighbours in launch
    order and load the same A rows together), B once per head and wave: all block rows of a wave
    load the same B tile at the same step, and a later wave re-reads it only if it is still in L2."""
    T = tile
    gx, gy = ceil_div(n, T), ceil_div(m, T)
    resident = blocks_per_sm(T * T, registers) * hardware.sm_count
    l2 = hardware.level("L2").capacity_bytes
    a_bytes = bh * m * k * ITEM_BYTES
    b_head = n * k * ITEM_BYTES
    # distinct data of one wave besides B: the A rows of its block rows, its C tiles
    wave_rows = ceil_div(min(resident, gx * gy * bh), gx) + 1
    wave_data = (wave_rows * T * k + min(resident, gx * gy * bh) * T * T) * ITEM_BYTES
    wave_heads = waves(gx * gy, bh, resident)
    b_dram, distance, _ = head_rereads(wave_heads, bh, b_head, wave_data, l2)
    # a block row cut by a wave boundary loads its A rows in two waves (a miss if a wave's data
    # does not fit in L2)
    cut_rows = sum(1 for w in range(resident, gx * gy * bh, resident) if w % gx)
    a_extra = cut_rows * T * k * ITEM_BYTES if wave_data > l2 else 0
    return a_bytes + a_extra + b_dram, {
        "resident_blocks": resident,
        "waves": len(wave_heads),
        "b_reuse_distance_bytes": distance,
    }


@cache
def _softmax_row(n, threads, start_mod, spilled):
    """One row (one block): S loads, P stores, the two tree reductions, and local memory if the
    per-thread array `x` (⌈n/t⌉ floats) lives in local memory."""
    t = threads
    per = ceil_div(n, t)
    tally = Tally()
    for warp in range(ceil_div(t, WARP_SIZE)):
        tids = lanes(warp, t)
        for e in range(per):
            cols = tids + e * t
            cols = cols[cols < n]
            if cols.size == 0:
                continue
            sectors = warp_sectors(((start_mod + cols) * ITEM_BYTES).tolist())
            tally.add("global_ld", sectors)  # x[e] = s[bh, row, col]
            tally.add("global_st", sectors)  # p[bh, row, col] = x[e] · inv_sum
            if spilled:  # thread-interleaved 4-byte words (CUDA guide)
                local = warp_sectors(((e * WARP_SIZE + cols - e * t) * ITEM_BYTES).tolist())
                tally.add("local_st", local)  # loop 1: x[e] = s
                tally.add("local_ld", local)  # loop 2: x[e] = exp(x[e] − max)
                tally.add("local_st", local)
                tally.add("local_ld", local)  # loop 3: p = x[e] · inv_sum
        if spilled:  # numba zero-fills local arrays: 16-byte stores
            for e4 in range(ceil_div(per, 4)):
                tally.add(
                    "local_st",
                    warp_sectors(
                        [(e4 * WARP_SIZE + lane) * 16 for lane in range(tids.size)], access_bytes=16
                    ),
                )
    for _reduction in range(2):  # row max, then row sum
        for warp in range(ceil_div(t, WARP_SIZE)):
            tids = lanes(warp, t)
            tally.add("shared_st", shared_wavefronts((tids * ITEM_BYTES).tolist()))  # red[tid] = mine
        stride = t // 2
        while stride > 0:
            for warp in range(ceil_div(t, WARP_SIZE)):
                tids = lanes(warp, t)
                tids = tids[tids < stride]
                if tids.size:
                    tally.add("shared_ld", shared_wavefronts((tids * ITEM_BYTES).tolist()))  # red[tid]
                    tally.add(
                        "shared_ld", shared_wavefronts(((tids + stride) * ITEM_BYTES).tolist())
                    )  # red[tid+s]
                    tally.add("shared_st", shared_wavefronts((tids * ITEM_BYTES).tolist()))
            stride //= 2
        for warp in range(ceil_div(t, WARP_SIZE)):
            tally.add("shared_ld", shared_wavefronts([0] * lanes(warp, t).size))  # red[0]
    return tally


def softmax_launch(bh, n, threads, hardware, registers):
    per = ceil_div(n, threads)
    # x lives in local memory when the compiled kernel has fewer registers than x has elements
    spilled = registers is not None and registers < per
    tally = Tally()
    starts = (np.arange(bh)[:, None] * n + np.arange(n)[None, :]) * n
    for mod, count in residue_counts(starts.ravel()).items():
        tally.merge(_softmax_row(n, threads, mod, spilled), count)
    resident = blocks_per_sm(threads, registers) * hardware.sm_count
    local_wave = min(resident, n * bh) * threads * per * ITEM_BYTES if spilled else 0
    l2 = hardware.level("L2").capacity_bytes
    s_bytes = bh * n * n * ITEM_BYTES
    # a spilled element is stored, then loaded twice; the loads come from DRAM when the wave's
    # local arrays (the data touched between a store and its loads) do not fit in L2
    local_loads = tally.units["local_ld"] * SECTOR_BYTES
    local_dram = local_loads if local_wave > l2 else 0
    written = s_bytes + tally.units["local_st"] * SECTOR_BYTES
    return (
        tally,
        s_bytes + local_dram,
        written,
        {
            "resident_blocks": resident,
            "local_array_in_registers": not spilled,
            "local_bytes_per_wave": local_wave,
        },
    )
