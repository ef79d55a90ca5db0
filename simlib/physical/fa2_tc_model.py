"""What Nsight Compute should count for one launch of the tensor-core kernel ``fa2_tc`` (bf16/fp16).

The rules of launches.py, applied to gpu_kernels/kernels/fa2_tc.py's mapping (grid (Tr, B·H),
W warps of R = warp_rows query rows each (R/16 m16 tiles), Br = R·W, Bc keys per K/V block, Q's
fragments in registers or re-read from shared memory per tile (``q_reload``), tiles swizzled: 16-byte
chunk c of row r stored at chunk c ^ (r mod 8)); the lanes' addresses of each instruction class are
written out here and turned into sectors and wavefronts by the primitives of coalescing.py. The
kernel's layout since issue 22 (version 4) is R = 32 with Q re-read at d = 128 (``predict``'s default);
the committed Nsight Compute profile (profile_h200_tc.csv) measured version 3, R = 16 with Q in registers, and is
compared with that layout (``V3_LAYOUT``):

* global loads: every tile is copied by cp.async.cg, 16 bytes per thread and instruction, thread t
  taking chunks t, t + NT, ... of the row-major tile (``copy_sectors``). ncu counts cp.async's
  global reads in l1tex__t_sectors_pipe_lsu_mem_global_op_ld (profile_h200_tc.csv: equal to the kernel's
  own byte counter / 32, exactly);
* global stores: O leaves the mma accumulators as 2-byte stores, lane 4g + t writing columns
  8j + 2t and 8j + 2t + 1 of rows g and g + 8 of each m-tile (four store instructions per 8-column
  n-tile, each touching 8 sectors for 256 bytes of data); L, fp32, by the 8 lanes t = 0 of each row
  pair;
* shared loads: only ldmatrix.x4 (Q once per block, or once per tile with q_reload: R/16 per k-step;
  K and V per tile: one per 16 keys and 16 head-dim columns whatever R, since one fragment of K or V
  feeds all R/16 m-tiles). An x4 is four 8×8 matrices,
  each 8 lanes' 16-byte rows: a matrix costs as many wavefronts as the most-loaded bank has
  distinct words (``ldmatrix_wavefronts``), one when the swizzle spreads its rows over all banks;
  profile_h200_tc.csv shows the ldmatrix wavefronts inside l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld
  (the kernel has no other shared load);
* shared stores: none through the LSU's st path: cp.async writes shared memory itself, and
  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st measured 0 for this kernel (profile_h200_tc.csv);
* DRAM: Q, K, V once each (full sectors) when every head's K and V fit in the L2 together, so the
  Tr-fold K/V re-reads of the blocks of one head hit; beyond that the model adds every re-read
  (an upper bound: ``model:dram_regime`` says which); writes: O and L once.

Worked number (version 3's layout, as profile_h200_tc.csv measured it: B·H = 4, N = 4096, d = 64, W = 4 warps of
16 rows, Bc = 64): Tr = Tc = 64; global-load sectors 4·(64·256 + 64·64·2·256) = 8,454,144 (the
kernel's 270,532,608 bytes / 32); store sectors 4·64·4·(8·32 + 2) = 264,192; per warp 4 Q
ldmatrix.x4 once and 16 + 16 (K, V) per tile, 4 wavefronts each: 4·64·4·(4 + 64·32)·4 = 8,404,992
(ncu in profile_h200_tc.csv: 8,454,144, 264,192 and 8,404,992). Version 4 (R = 32, Br = 128, Tr = 32) at the same
shape: 4·(32·512 + 32·64·2·256) = 4,259,840 load sectors, 4·32·4·2·(8·32 + 2) = 264,192 store
sectors, 4·32·4·(8 + 64·32)·4 = 4,210,688 wavefronts: half the K/V traffic through L1 and shared memory.
"""

from __future__ import annotations

from ..schedules.fa2_tc import DEFAULT_Q_RELOAD, DEFAULT_WARP_ROWS
from .coalescing import SECTOR_BYTES, shared_wavefronts, warp_sectors
from .tally import Tally

#: fa2_tc's version 3 (each warp one m16 tile of rows, Q in registers): what profile_h200_tc.csv measured.
V3_LAYOUT = {"warp_rows": 16, "q_reload": False}


def kernel_layout(head_dim, warp_rows=None, q_reload=None):
    """(warp_rows, q_reload) of the kernel that runs: the given values, else fa2_tc's defaults
    (simlib/schedules/fa2_tc.py: R = 32; Q re-read at d = 128)."""
    r = DEFAULT_WARP_ROWS if warp_rows is None else int(warp_rows)
    qr = DEFAULT_Q_RELOAD.get(head_dim, False) if q_reload is None else bool(q_reload)
    if r not in (16, 32):
        raise ValueError(f"warp_rows must be 16 or 32 (one or two m16 tiles per warp), got {warp_rows!r}")
    return r, qr


ELEMENT = 2  # bytes of bf16 / fp16
CHUNK = 16  # bytes of one cp.async / one ldmatrix row


def swizzled(row, chunk, cols):
    """Element index of 16-byte chunk `chunk` of row `row` in a swizzled tile `cols` wide
    (gpu_kernels/tensor_core/tiles.py)."""
    return row * cols + ((chunk ^ (row & 7)) << 3)


def copy_sectors(rows, cols, threads, row_stride, col0=0, valid_rows=None):
    """Global-load sectors and instructions of one tile copy: rows × cols elements of a row-major
    source with `row_stride` elements per row, 16 bytes per thread and instruction. `valid_rows`
    (default all): the rows past it are zero-filled by a cp.async of src-size 0, which is counted as
    an instruction that reads nothing (fa3_tc's ragged tiles)."""
    per_row = cols // 8
    chunks = rows * per_row
    valid = rows if valid_rows is None else valid_rows
    sectors = 0
    for first in range(0, chunks, 32):  # one warp instruction: 32 consecutive chunks
        addresses = [
            ((c // per_row) * row_stride + col0 + 8 * (c % per_row)) * ELEMENT
            for c in range(first, min(first + 32, chunks))
            if c // per_row < valid
        ]
        sectors += warp_sectors(addresses, CHUNK)
    assert chunks % threads == 0, "the kernels' tiles split into 16-byte chunks evenly over the threads"
    return sectors, -(-chunks // 32)


def ldmatrix_wavefronts(element_of_lane, cols):
    """Wavefronts of one ldmatrix.x4: lane l gives the element index of one 16-byte row (of a tile
    `cols` wide); matrix i is lanes 8i .. 8i + 7, served as one 128-byte access each."""
    total = 0
    for i in range(4):
        addresses = [element_of_lane(lane) * ELEMENT for lane in range(8 * i, 8 * i + 8)]
        total += shared_wavefronts(addresses, access_bytes=16)
    return total


def fragment_store_sectors(n_tiles, row_stride, valid_rows=16):
    """Store sectors of one warp writing a 16-row × 8·n_tiles accumulator as 2-byte values: per
    n-tile, four instructions (rows g / g + 8, columns 2t / 2t + 1), lane 4g + t; rows at or past
    `valid_rows` are not written (their lanes are predicated off)."""
    sectors = 0
    for j in range(n_tiles):
        for half in (0, 8):
            for e in (0, 1):
                addresses = [
                    ((lane >> 2) + half) * row_stride * ELEMENT + (8 * j + 2 * (lane & 3) + e) * ELEMENT
                    for lane in range(32)
                    if (lane >> 2) + half < valid_rows
                ]
                sectors += warp_sectors(addresses, ELEMENT)
    return sectors, 4 * n_tiles


def q_fragment_row(w, kk, cols, warp_rows=16, mt=0):
    """The ldmatrix of m-tile mt of a warp's query rows (A operand), k-step kk: lane → element index."""
    first = warp_rows * w + 16 * mt
    return lambda lane: swizzled(first + (lane & 7) + ((lane >> 3) & 1) * 8, 2 * kk + (lane >> 4), cols)


def key_fragment_row(p, kk, cols):
    """The ldmatrix of keys 16p .. 16p + 15 (B = Kᵀ), k-step kk."""
    return lambda lane: swizzled(16 * p + (lane & 7) + (lane >> 4) * 8, 2 * kk + ((lane >> 3) & 1), cols)


def value_fragment_row(kk, p, cols):
    """The ldmatrix.trans of keys 16kk .. 16kk + 15 (B = V), head-dim columns 16p .. 16p + 15."""
    return lambda lane: swizzled(16 * kk + (lane & 7) + ((lane >> 3) & 1) * 8, (lane >> 4) + 2 * p, cols)


def fa2_tc_launch(workload, warps, block_cols, l2_bytes, warp_rows=16, q_reload=False):
    """(Tally, DRAM read bytes, DRAM write bytes, details) of one fa2_tc launch (non-causal, N a
    multiple of Br and Bc: every tile full), W warps of `warp_rows` rows, Q re-read per tile or not."""
    bh, n, d = workload.batch_heads, workload.seq_len, workload.head_dim
    mt = warp_rows // 16
    br, bc, nt = warp_rows * warps, block_cols, 32 * warps
    if workload.causal or workload.nq != n or n % br or n % bc:
        raise ValueError(
            f"the fa2_tc model covers non-causal self-attention with N a multiple of Br = {br} and "
            f"Bc = {bc}; got N = {n}"
        )
    tr, tc = n // br, n // bc
    t = Tally()
    q_sec, q_ins = copy_sectors(br, d, nt, d)
    kv_sec, kv_ins = copy_sectors(bc, d, nt, d)
    t.add("global_ld", q_sec, bh * tr)
    t.add("global_ld", kv_sec, bh * tr * tc * 2)
    warps_total = bh * tr * warps
    o_sec, _ = fragment_store_sectors(d // 8, d)
    t.add("global_st", o_sec, warps_total * mt)
    l_sec = warp_sectors([(lane >> 2) * 4 for lane in range(0, 32, 4)], 4)  # lanes t = 0, rows g: 8 floats
    t.add("global_st", l_sec, 2 * mt * warps_total)
    q_loads = sum(
        ldmatrix_wavefronts(q_fragment_row(0, kk, d, warp_rows, m), d)
        for kk in range(d // 16)
        for m in range(mt)
    )
    per_tile = sum(
        ldmatrix_wavefronts(key_fragment_row(p, kk, d), d) for kk in range(d // 16) for p in range(bc // 16)
    )
    per_tile += sum(
        ldmatrix_wavefronts(value_fragment_row(kk, p, d), d) for kk in range(bc // 16) for p in range(d // 16)
    )
    if q_reload:
        per_tile += q_loads
    t.add("shared_ld", (0 if q_reload else q_loads) + tc * per_tile, warps_total)
    unique = 3 * bh * n * d * ELEMENT
    kv_all = 2 * bh * n * d * ELEMENT
    fits = kv_all <= l2_bytes
    rereads = 0 if fits else bh * (tr - 1) * 2 * n * d * ELEMENT
    writes = bh * n * (d * ELEMENT + 4)
    info = {
        "dram_regime": "K/V of all heads fit in L2: compulsory reads"
        if fits
        else "K/V exceed L2: every re-read counted (upper bound)",
        "kv_bytes": kv_all,
        "sector_bytes": SECTOR_BYTES,
    }
    return t, unique + rereads, writes, info
