"""What Nsight Compute should measure for each numba kernel launch, predicted from the kernel code.

`predict(kernel, launch, workload, mapping, hardware, registers=None)` returns a dict of ncu metric
name → predicted value for one launch of gpu_kernels' `naive` (launches "qk", "softmax", "pv") or
`tiled` (launch "fa2"). How:

1. **Warp instructions, by class.** Each global, local or shared-memory access in the kernel source
   (gpu_kernels/naive.py, gpu_kernels/tiled.py) is a class of warp instructions. For each class the
   lanes' byte addresses of one warp instruction are written out from the kernel's thread mapping
   (grid order, thread → element, the shared-memory layout with its padding), the primitives turn
   them into 32-byte sectors (`warp_sectors`) or shared-memory wavefronts (`shared_wavefronts`),
   and the result is multiplied by how many such instructions the launch issues. Instructions
   that differ (a ragged last tile, a tile whose start is not 32-byte aligned, a copy-loop
   iteration that crosses a padded row) are separate classes. One source-level access is one
   instruction (one LDS/STS/LDG/STG per access), except where the sm_90 SASS shows the compiler
   merging four reads of a shared-memory row into one LDS.128 (the tiled kernel's Q, K and V
   rows, `tiled_vector_width`; docs/ARCHITECTURE.md).
2. **L1 → L2 sectors.** Global loads are not assumed to hit in L1 across instructions (no reuse
   inside a thread block; reuse between blocks depends on the undocumented block-to-SM placement),
   so every L1 sector is an L2 request, and every store sector is. The H200's L2 is two partitions
   joined by the "LTC fabric"; a sector whose home is the far partition is looked up in both
   (ncu's lts__t_sectors_srcunit_ltcfabric), so with addresses spread evenly over the partitions
   lts__t_sectors = L1 sectors × (1 + 1/2). `L2_PARTITIONS` = 2: NVIDIA A100 and H100 whitepapers
   ("the L2 cache is divided into two partitions").
3. **DRAM.** Each tensor is read from DRAM once (its footprint, in full sectors) plus the re-reads
   that miss L2, decided by the reuse distance against the preset's L2 capacity
   (`dram_reads_of_rereads`). Distances follow the wave picture: blocks are dispatched in launch
   order, `blocks_per_sm × SMs` at a time (occupancy.py), and the blocks of one wave walk their
   loops together, so a tile read by several blocks of a wave at the same step is fetched once and
   a later wave re-reads it only if it is still in L2. Local memory (a per-thread array the compiler
   could not keep in registers) goes to DRAM when the wave's local footprint exceeds the L2.
   ncu flushes every cache before each profiled launch (--cache-control all), so nothing is reused
   across launches (S between naive's qk and softmax, P between softmax and pv): each launch starts
   from a cold L2, and so does the model. DRAM writes are predicted as every byte written; ncu
   counts fewer when dirty lines are still in L2 when the kernel ends.

The numbers this gives, next to ncu's, are in data/measurements/model_vs_ncu_h200.csv
(`python -m simlib.physical.compare`); every gap is explained in docs/ARCHITECTURE.md.
"""
from collections import Counter
from functools import lru_cache

import numpy as np

from ..tiling import block_sizes, ceil_div
from .coalescing import SECTOR_BYTES, shared_wavefronts, warp_sectors
from .l2 import dram_reads_of_rereads
from .occupancy import WARP_SIZE, blocks_per_sm

ITEM = 4                      # the kernels are fp32 only (gpu_kernels/checks.py ITEMSIZE)
ALIGN = SECTOR_BYTES // ITEM  # elements per sector: a tile's sector pattern depends on start mod 8
SHARED_STATIC_LIMIT = 48 * 1024   # the tiled kernel pads only if the padded tiles fit in 48 KiB
L2_PARTITIONS = 2

KERNEL_LAUNCHES = {"naive": ("qk", "softmax", "pv"), "tiled": ("fa2",)}

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
L2_READ = "lts__t_sectors_op_read.sum"
L2_WRITE = "lts__t_sectors_op_write.sum"
L1_LD = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
L1_ST = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
SHARED_LD = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SHARED_ST = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
METRICS = (DRAM_READ, DRAM_WRITE, L2_READ, L2_WRITE, L1_LD, L1_ST, SHARED_LD, SHARED_ST)


def l2_partition_factor(partitions=L2_PARTITIONS):
    """L2 lookups per L1 request: near partition always, far one for the (p−1)/p far-homed sectors."""
    return 1 + (partitions - 1) / partitions


#: The tiled kernel pads each Qs row by 4 floats and each Ss row by 1 (gpu_kernels/tiled.py
#: Q_PAD, S_PAD), if the padded tiles fit in 48 KiB; tests check the two agree.
TILED_Q_PAD, TILED_S_PAD = 4, 1


def tiled_pad(block_rows, block_cols, head_dim):
    """1 if the tiled kernel pads its Qs and Ss rows (gpu_kernels/tiled.py `_pad`), else 0."""
    padded = (block_rows * (head_dim + TILED_Q_PAD) + 2 * block_cols * head_dim
              + block_rows * (block_cols + TILED_S_PAD)) * ITEM
    return 1 if padded <= SHARED_STATIC_LIMIT else 0


def tiled_layout(block_rows, block_cols, head_dim):
    """(Qs row stride, Ss row stride) in floats."""
    pad = tiled_pad(block_rows, block_cols, head_dim)
    return head_dim + TILED_Q_PAD * pad, block_cols + TILED_S_PAD * pad


def tiled_shared_bytes(block_rows, block_cols, head_dim):
    qs_cols, ss_cols = tiled_layout(block_rows, block_cols, head_dim)
    return (block_rows * qs_cols + 2 * block_cols * head_dim + block_rows * ss_cols) * ITEM


def tiled_vector_width(row_stride, head_dim):
    """Floats per shared-memory load of a Q, K or V row in the compiled dot products: the compiler
    merges four consecutive reads into one 16-byte LDS.128 when the row start is 16-byte aligned
    (stride and d multiples of 4; seen in the sm_90 SASS for d = 8 ... 128), else reads 4 bytes."""
    return 4 if row_stride % 4 == 0 and head_dim % 4 == 0 else 1


class Tally:
    """Sectors and wavefronts by (space, op), accumulated as units per instruction × instructions."""

    def __init__(self):
        self.units = Counter()
        self.instructions = Counter()

    def add(self, key, units, count=1):
        self.units[key] += int(units) * int(count)
        self.instructions[key] += int(count)

    def merge(self, other, times=1):
        for key, value in other.units.items():
            self.units[key] += value * times
        for key, value in other.instructions.items():
            self.instructions[key] += value * times


def _lanes(warp, nthreads):
    """Thread ids of warp `warp` in a block of `nthreads` threads (the last warp may be partial)."""
    return np.arange(WARP_SIZE * warp, min(WARP_SIZE * (warp + 1), nthreads))


def _residue_counts(offsets):
    """{offset mod 8 elements: how many} for an array of element offsets (tile starts)."""
    values, counts = np.unique(np.asarray(offsets, dtype=np.int64) % ALIGN, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


# ---------------------------------------------------------------------------------------------
# tiled (FlashAttention-2 forward, one thread per query row)
# ---------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _copy_loop(total, nthreads, start_mod, row_len, shared_row_stride):
    """`for idx in range(tid, total, nthreads)`: a contiguous tile of `total` elements whose first
    element sits `start_mod` elements past a sector boundary, copied to a shared array with rows of
    `shared_row_stride` words. Returns a Tally of global-load sectors and shared-store wavefronts."""
    tally = Tally()
    for warp in range(ceil_div(nthreads, WARP_SIZE)):
        tids = _lanes(warp, nthreads)
        t = 0
        while True:
            idx = tids + t * nthreads
            idx = idx[idx < total]
            if idx.size == 0:
                break
            tally.add("global_ld", warp_sectors(((start_mod + idx) * ITEM).tolist()))
            words = (idx // row_len) * shared_row_stride + idx % row_len
            tally.add("shared_st", shared_wavefronts((words * ITEM).tolist()))
            t += 1
    return tally


@lru_cache(maxsize=None)
def _tiled_pair(r, c, nthreads, d, qs_cols, ss_cols):
    """Shared-memory instructions of one (Q block, K/V block) step after the loads, per block.
    Q, K and V rows are read `tiled_vector_width` floats per instruction."""
    tally = Tally()
    vq, vkv = tiled_vector_width(qs_cols, d), tiled_vector_width(d, d)
    for warp in range(ceil_div(nthreads, WARP_SIZE)):
        tids = _lanes(warp, nthreads)
        tids = tids[tids < r]                       # `if tid < r`: rows of a ragged block idle
        if tids.size == 0:
            continue
        lanes = (tids - WARP_SIZE * warp).tolist()
        for cc in range(c):
            for x in range(0, d, vq):               # S_ij: Qs[tid, x] (a row per lane) ...
                tally.add("shared_ld", shared_wavefronts(((tids * qs_cols + x) * ITEM).tolist(), vq * ITEM, lanes))
            for x in range(0, d, vkv):              # ... times Ks[cc, x] (one address: a broadcast)
                tally.add("shared_ld", shared_wavefronts([(cc * d + x) * ITEM] * tids.size, vkv * ITEM, lanes))
            s_words = ((tids * ss_cols + cc) * ITEM).tolist()
            s = shared_wavefronts(s_words)
            tally.add("shared_st", s)               # Ss[tid, cc] = s
            tally.add("shared_ld", s)               # p = exp(Ss[tid, cc] − m)
            tally.add("shared_st", s)               # Ss[tid, cc] = p
            tally.add("shared_ld", s)               # p = Ss[tid, cc] for O += p V
            for x in range(0, d, vkv):              # Vs[cc, x], a broadcast
                tally.add("shared_ld", shared_wavefronts([(cc * d + x) * ITEM] * tids.size, vkv * ITEM, lanes))
    return tally


@lru_cache(maxsize=None)
def _tiled_store(r, nthreads, d, start_mod):
    """O_i and L_i stores of one block: thread tid writes its row of O, column by column."""
    tally = Tally()
    for warp in range(ceil_div(nthreads, WARP_SIZE)):
        tids = _lanes(warp, nthreads)
        tids = tids[tids < r]
        if tids.size == 0:
            continue
        for x in range(d):                          # o[bh, q0 + tid, x]: lanes d·4 bytes apart
            tally.add("global_st", warp_sectors((((start_mod + tids * d + x)) * ITEM).tolist()))
        # lse[bh, q0 + tid]: O's start is (bh·N + q0)·d, L's is bh·N + q0; only L's residue matters
    return tally


def _tiled(workload, block_rows, block_cols, hardware, registers):
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
        for mod, count in _residue_counts(q_starts[sel]).items():
            tally.merge(_copy_loop(int(r) * d, br, mod, d, qs_cols), count)
            store = _tiled_store(int(r), br, d, mod)
            tally.merge(store, count)
        l_starts = (heads[:, None] * n + np.arange(tr)[None, :] * br)[sel]
        for mod, count in _residue_counts(l_starts).items():
            tids = np.arange(int(r))
            for warp in range(ceil_div(br, WARP_SIZE)):
                lanes = tids[(tids >= WARP_SIZE * warp) & (tids < WARP_SIZE * (warp + 1))]
                if lanes.size:
                    tally.add("global_st", warp_sectors(((mod + lanes) * ITEM).tolist()), count)
    for c in np.unique(cols):
        sel = np.broadcast_to(cols == c, kv_starts.shape)
        for mod, count in _residue_counts(kv_starts[sel]).items():
            # Ks and Vs have the same layout (rows of d words, no padding): two of each instruction
            tally.merge(_copy_loop(int(c) * d, br, mod, d, d), 2 * count * tr)
    for r, n_r in zip(*np.unique(rows, return_counts=True)):
        for c, n_c in zip(*np.unique(cols, return_counts=True)):
            tally.merge(_tiled_pair(int(r), int(c), br, d, qs_cols, ss_cols), int(n_r) * int(n_c) * bh)

    # DRAM: Q once, K and V once per head and wave (a later wave of the same head re-reads them)
    q_bytes = bh * n * d * ITEM
    kv_head = 2 * n * d * ITEM
    resident = blocks_per_sm(br, registers, tiled_shared_bytes(br, bc, d)) * hardware.sm_count
    waves = _waves(tr, bh, resident)
    wave_q = min(resident, tr * bh) * br * d * ITEM  # Q read and O written by one wave
    l2 = hardware.level("L2").capacity_bytes
    kv_dram, distances, rereads = 0, [], 0
    for h in range(bh):
        mine = [k for k, heads_in in enumerate(waves) if h in heads_in]
        distance = _cross_wave_distance(waves, mine, h, kv_head, 2 * wave_q)
        distances.append(distance)
        rereads += len(mine) - 1
        kv_dram += dram_reads_of_rereads(kv_head, len(mine), distance, l2)
    written = bh * n * (d + 1) * ITEM
    return tally, q_bytes + kv_dram, written, 0, 0, {
        "resident_blocks": resident, "waves": len(waves), "kv_reuse_distance_bytes": max(distances),
        "kv_reread_bytes": rereads * kv_head,  # K/V a later wave reads again: L2 hits if the model holds
    }


# ---------------------------------------------------------------------------------------------
# naive: tiled matmul (qk, pv) and row softmax
# ---------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _tile_access(tile, rows, cols, stride, start_mod):
    """Global sectors of one T×T-thread tile access: lane (tx, ty) touches element (ty, tx) of a
    row-major matrix with `stride` elements per row, starting `start_mod` elements past a sector
    boundary; only ty < rows and tx < cols are active. Returns (sectors, warp instructions)."""
    T = tile
    sectors = instructions = 0
    for warp in range(ceil_div(T * T, WARP_SIZE)):
        tid = _lanes(warp, T * T)
        tx, ty = tid % T, tid // T
        on = (ty < rows) & (tx < cols)
        if on.any():
            sectors += warp_sectors(((start_mod + ty[on] * stride + tx[on]) * ITEM).tolist())
            instructions += 1
    return sectors, instructions


@lru_cache(maxsize=None)
def _matmul_shared(tile, mr, nc, kk, trans_b):
    """Shared-memory instructions of one block for one chunk along k (mr×nc valid outputs, kk
    valid k): the As and Bs stores, then the multiply-adds' loads. As is T×T, Bs is T×(T+1)."""
    T = tile
    tally = Tally()
    for warp in range(ceil_div(T * T, WARP_SIZE)):
        tid = _lanes(warp, T * T)
        tx, ty = tid % T, tid // T
        a = (ty < mr) & (tx < kk)                   # As[ty, tx] = A[row0 + ty, k0 + tx]
        if a.any():
            tally.add("shared_st", shared_wavefronts(((ty[a] * T + tx[a]) * ITEM).tolist()))
        if trans_b:                                 # Bs[tx, ty] = K[col0 + ty, k0 + tx] (transposed)
            b, words = (ty < nc) & (tx < kk), tx * (T + 1) + ty
        else:                                       # Bs[ty, tx] = V[k0 + ty, col0 + tx]
            b, words = (ty < kk) & (tx < nc), ty * (T + 1) + tx
        if b.any():
            tally.add("shared_st", shared_wavefronts((words[b] * ITEM).tolist()))
        out = (ty < mr) & (tx < nc)
        if out.any():
            for x in range(kk):                     # acc += As[ty, x] · Bs[x, tx]
                tally.add("shared_ld", shared_wavefronts(((ty[out] * T + x) * ITEM).tolist()))
                tally.add("shared_ld", shared_wavefronts(((x * (T + 1) + tx[out]) * ITEM).tolist()))
    return tally


def _convolve_mod(a, b):
    """Residue counts of x + y (mod 8) for x ~ a, y ~ b (dicts residue → count)."""
    out = Counter()
    for x, nx in a.items():
        for y, ny in b.items():
            out[(x + y) % ALIGN] += nx * ny
    return out


def _matmul(bh, m, n, k, tile, trans_b):
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
            a_res = _convolve_mod(_residue_counts(((heads[:, None] * m + r_sel[None, :]) * k).ravel()),
                                  _residue_counts(k_sel))
            add("global_ld", (mr, kk, k), a_res, len(cols))           # A tile, once per column tile
        for nc in np.unique(cols).tolist():
            c_sel = col0[cols == nc]
            c_res = _convolve_mod(_residue_counts(((heads[:, None] * m + r_sel[None, :]) * n).ravel()),
                                  _residue_counts(c_sel))
            add("global_st", (mr, nc, n), c_res, 1)                    # C tile, once
            for kk in np.unique(chunks).tolist():
                blocks = bh * len(r_sel) * len(c_sel) * int((chunks == kk).sum())
                tally.merge(_matmul_shared(T, mr, nc, kk, trans_b), blocks)
    for nc in np.unique(cols).tolist():
        c_sel = col0[cols == nc]
        for kk in np.unique(chunks).tolist():
            k_sel = k0[chunks == kk]
            if trans_b:                             # K[col0 + ty, k0 + tx]: rows of K along k
                b_res = _convolve_mod(_residue_counts(((heads[:, None] * n + c_sel[None, :]) * k).ravel()),
                                      _residue_counts(k_sel))
                add("global_ld", (nc, kk, k), b_res, len(rows))
            else:                                   # V[k0 + ty, col0 + tx]: rows of V along d
                b_res = _convolve_mod(_residue_counts(((heads[:, None] * k + k_sel[None, :]) * n).ravel()),
                                      _residue_counts(c_sel))
                add("global_ld", (kk, nc, n), b_res, len(rows))
    return tally


def _cross_wave_distance(waves, mine, head, head_bytes, wave_bytes):
    """Reuse distance of a head's re-read tiles between consecutive waves `mine` that both touch it.

    The blocks of a wave walk the loop together, so between wave a reading step j of this head and
    wave b reading it again, a reads the rest (steps > j) of each of its other heads, b the start
    (steps < j) of each of its other heads, and this head's other steps are read too: at most
    head_bytes · (1 + max(others in a, others in b)), plus each wave's own data (`wave_bytes`:
    Q rows read and O rows written, or the A rows and C tiles of a matmul).
    """
    worst = 0
    for a, b in zip(mine, mine[1:]):
        others = max(len(waves[a] - {head}), len(waves[b] - {head}))
        worst = max(worst, head_bytes * (1 + others) + wave_bytes)
    return worst


def _waves(blocks_per_head, bh, resident):
    """Heads touched by each wave when blocks run `resident` at a time in launch order (bh slowest)."""
    block_head = np.repeat(np.arange(bh), blocks_per_head)
    return [set(block_head[w:w + resident].tolist()) for w in range(0, len(block_head), resident)]


def _matmul_dram(bh, m, n, k, tile, trans_b, hardware, registers):
    """DRAM bytes read by the matmul: A once (the blocks of one block row are neighbours in launch
    order and load the same A rows together), B once per head and wave: all block rows of a wave
    load the same B tile at the same step, and a later wave re-reads it only if it is still in L2."""
    T = tile
    gx, gy = ceil_div(n, T), ceil_div(m, T)
    resident = blocks_per_sm(T * T, registers) * hardware.sm_count
    l2 = hardware.level("L2").capacity_bytes
    a_bytes = bh * m * k * ITEM
    b_head = n * k * ITEM
    # distinct data of one wave besides B: the A rows of its block rows, its C tiles
    wave_rows = ceil_div(min(resident, gx * gy * bh), gx) + 1
    wave_data = (wave_rows * T * k + min(resident, gx * gy * bh) * T * T) * ITEM
    waves = _waves(gx * gy, bh, resident)
    b_dram, distances = 0, []
    for h in range(bh):
        mine = [w for w, heads_in in enumerate(waves) if h in heads_in]
        distance = _cross_wave_distance(waves, mine, h, b_head, wave_data)
        distances.append(distance)
        b_dram += dram_reads_of_rereads(b_head, len(mine), distance, l2)
    # a block row cut by a wave boundary loads its A rows in two waves (a miss if a wave's data
    # does not fit in L2)
    cut_rows = sum(1 for w in range(resident, gx * gy * bh, resident) if w % gx)
    a_extra = cut_rows * T * k * ITEM if wave_data > l2 else 0
    return a_bytes + a_extra + b_dram, {
        "resident_blocks": resident, "waves": len(waves), "b_reuse_distance_bytes": max(distances),
    }


@lru_cache(maxsize=None)
def _softmax_row(n, threads, start_mod, spilled):
    """One row (one block): S loads, P stores, the two tree reductions, and local memory if the
    per-thread array `x` (⌈n/t⌉ floats) lives in local memory."""
    t = threads
    per = ceil_div(n, t)
    tally = Tally()
    for warp in range(ceil_div(t, WARP_SIZE)):
        tids = _lanes(warp, t)
        for e in range(per):
            cols = tids + e * t
            cols = cols[cols < n]
            if cols.size == 0:
                continue
            sectors = warp_sectors(((start_mod + cols) * ITEM).tolist())
            tally.add("global_ld", sectors)     # x[e] = s[bh, row, col]
            tally.add("global_st", sectors)     # p[bh, row, col] = x[e] · inv_sum
            if spilled:                         # thread-interleaved 4-byte words (CUDA guide)
                local = warp_sectors(((e * WARP_SIZE + cols - e * t) * ITEM).tolist())
                tally.add("local_st", local)    # loop 1: x[e] = s
                tally.add("local_ld", local)    # loop 2: x[e] = exp(x[e] − max)
                tally.add("local_st", local)
                tally.add("local_ld", local)    # loop 3: p = x[e] · inv_sum
        if spilled:                             # numba zero-fills local arrays: 16-byte stores
            for e4 in range(ceil_div(per, 4)):
                tally.add("local_st", warp_sectors([(e4 * WARP_SIZE + lane) * 16 for lane in range(tids.size)],
                                                   access_bytes=16))
    for _reduction in range(2):                 # row max, then row sum
        for warp in range(ceil_div(t, WARP_SIZE)):
            tids = _lanes(warp, t)
            tally.add("shared_st", shared_wavefronts((tids * ITEM).tolist()))      # red[tid] = mine
        stride = t // 2
        while stride > 0:
            for warp in range(ceil_div(t, WARP_SIZE)):
                tids = _lanes(warp, t)
                tids = tids[tids < stride]
                if tids.size:
                    tally.add("shared_ld", shared_wavefronts((tids * ITEM).tolist()))             # red[tid]
                    tally.add("shared_ld", shared_wavefronts(((tids + stride) * ITEM).tolist()))  # red[tid+s]
                    tally.add("shared_st", shared_wavefronts((tids * ITEM).tolist()))
            stride //= 2
        for warp in range(ceil_div(t, WARP_SIZE)):
            tally.add("shared_ld", shared_wavefronts([0] * _lanes(warp, t).size))    # red[0]
    return tally


def _softmax(bh, n, threads, hardware, registers):
    per = ceil_div(n, threads)
    # x lives in local memory when the compiled kernel has fewer registers than x has elements
    spilled = registers is not None and registers < per
    tally = Tally()
    starts = (np.arange(bh)[:, None] * n + np.arange(n)[None, :]) * n
    for mod, count in _residue_counts(starts.ravel()).items():
        tally.merge(_softmax_row(n, threads, mod, spilled), count)
    resident = blocks_per_sm(threads, registers) * hardware.sm_count
    local_wave = min(resident, n * bh) * threads * per * ITEM if spilled else 0
    l2 = hardware.level("L2").capacity_bytes
    s_bytes = bh * n * n * ITEM
    # a spilled element is stored, then loaded twice; the loads come from DRAM when the wave's
    # local arrays (the data touched between a store and its loads) do not fit in L2
    local_loads = tally.units["local_ld"] * SECTOR_BYTES
    local_dram = local_loads if local_wave > l2 else 0
    written = s_bytes + tally.units["local_st"] * SECTOR_BYTES
    return tally, s_bytes + local_dram, written, {
        "resident_blocks": resident, "local_array_in_registers": not spilled,
        "local_bytes_per_wave": local_wave,
    }


def _get(mapping, name):
    value = mapping.get(name) if isinstance(mapping, dict) else getattr(mapping, name, None)
    if value is None:
        raise ValueError(f"mapping needs {name}")
    return int(value)


def predict(kernel, launch, workload, mapping, hardware, registers=None, details=False):
    """Predicted ncu metrics (METRICS) of one launch; `details=True` adds the model's intermediate
    numbers (resident blocks, waves, reuse distances) under keys starting with 'model:'.

    kernel 'tiled' (launch 'fa2'; mapping block_rows, block_cols) or 'naive' (launches 'qk',
    'softmax', 'pv'; mapping matmul_tile, softmax_threads). `registers`: registers per thread of
    the compiled launch (ncu launch__registers_per_thread), for occupancy and local memory.
    fp32 only, as the kernels are.
    """
    if kernel not in KERNEL_LAUNCHES or launch not in KERNEL_LAUNCHES[kernel]:
        raise ValueError(f"unknown launch {kernel}/{launch}; known: {KERNEL_LAUNCHES}")
    bh, n, d = workload.batch_heads, workload.seq_len, workload.head_dim
    info = {}
    if kernel == "tiled":
        tally, dram_read, dram_write, _, _, info = _tiled(
            workload, _get(mapping, "block_rows"), _get(mapping, "block_cols"), hardware, registers)
    elif launch == "softmax":
        tally, dram_read, dram_write, info = _softmax(bh, n, _get(mapping, "softmax_threads"), hardware, registers)
    else:
        tile = _get(mapping, "matmul_tile")
        if launch == "qk":
            m_, n_, k_, trans = n, n, d, True
        else:
            m_, n_, k_, trans = n, d, n, False
        tally = _matmul(bh, m_, n_, k_, tile, trans)
        dram_read, info = _matmul_dram(bh, m_, n_, k_, tile, trans, hardware, registers)
        dram_write = bh * m_ * n_ * ITEM
    u = tally.units
    factor = l2_partition_factor()
    out = {
        DRAM_READ: int(dram_read),
        DRAM_WRITE: int(dram_write),
        L2_READ: (u["global_ld"] + u["local_ld"]) * factor,
        L2_WRITE: (u["global_st"] + u["local_st"]) * factor,
        L1_LD: u["global_ld"],
        L1_ST: u["global_st"],
        SHARED_LD: u["shared_ld"],
        SHARED_ST: u["shared_st"],
    }
    if details:
        out.update({f"model:{k}": v for k, v in info.items()})
        out.update({f"model:local_{op}_sectors": u[f"local_{op}"] for op in ("ld", "st")})
        out.update({f"model:{k}_instructions": v for k, v in tally.instructions.items()})
    return out
