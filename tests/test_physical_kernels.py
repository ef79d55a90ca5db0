"""The kernel-level physical model against counts made by hand, and the committed model-vs-ncu table.

Every expected number below is derived in the comment next to it from the kernel's code
(gpu_kernels/kernels/tiled.py, gpu_kernels/kernels/naive.py): thread mapping, copy loops, shared-memory layout.
"""

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from evidence.model_vs_ncu import OUT_CSV, PROFILE_CSV, compare
from simlib import Workload, count, load_preset
from simlib.kernel_layout import tiled_shared_bytes
from simlib.physical import kernels as K
from simlib.physical.l2 import l2_partition_factor
from simlib.physical.occupancy import blocks_per_sm

H200 = load_preset("h200")


def fp32(n, d, heads=1):
    return Workload(seq_len=n, head_dim=d, batch=1, heads=heads, dtype="fp32")


# ---------------------------------------------------------------------------------------------
# tiled, Br = Bc = 4, d = 8: one warp of 4 lanes per block; a row of Q/K/V/O is 8 floats = 32 B,
# exactly one sector, and every tile starts on a row, so on a sector boundary.
# ---------------------------------------------------------------------------------------------


def test_tiled_tiny_square_by_hand():
    p = K.predict("tiled", "fa2", fp32(8, 8), {"block_rows": 4, "block_cols": 4}, H200)
    # Copy loop `for idx in range(tid, 8·rows, 4)`: each instruction reads 4 consecutive floats,
    # 16 B, half a sector -> 1 sector, and a tile of c rows takes 2c instructions: 2c sectors
    # (twice the c sectors the tile occupies: 4 lanes cannot fill a sector).
    # Q: 2 blocks × 2·4 = 16; K and V: 2 blocks × 2 K/V blocks × 2 tensors × 2·4 = 64.
    assert p[K.L1_LD] == 16 + 64
    # O: per block 8 instructions (one per column x), 4 lanes in 4 different rows -> 4 sectors:
    # 2 × 8 × 4 = 64; L: one instruction per block, 4 floats = 16 B -> 1 sector: 2.
    assert p[K.L1_ST] == 64 + 2
    # Shared stores. Qs is 4×12 (padded by 4: (4·12 + 2·4·8 + 4·5)·4 = 528 B ≤ 48 KiB), a copy
    # instruction stays inside one row -> 1 wavefront: 2 blocks × 8 = 16. Ks, Vs (4×8, consecutive
    # words): 2 blocks × 2 K/V blocks × 2 × 8 = 64. S and P written to Ss (4×5, stride 5 words,
    # conflict free): 2 blocks × 2 × (4 + 4) = 32.
    assert p[K.SHARED_ST] == 16 + 64 + 32
    # Shared loads per (block, K/V block), one warp of 4 lanes (one half-warp). Rows of Q, K, V
    # are read 16 B at a time (LDS.128): S = Q Kᵀ: 4 keys × (2 Q loads: lane t reads words
    # 12t + x ... 12t + x + 3, banks 0–3, 12–15, 24–27, 4–7: 1 wavefront; 2 K loads, one address:
    # 1 wavefront) = 16; exp: 4; O += P V: 4 + 4 keys × 2 V loads = 12. 32 × 2 × 2 = 128
    # (= N²(3d/4 + 2) / lanes per warp = 64 · 8 / 4).
    assert p[K.SHARED_LD] == 128
    # L2: every L1 sector is a request, 1.5 lookups each (two partitions); DRAM: Q, K, V once.
    assert p[K.L2_READ] == 80 * 1.5 and p[K.L2_WRITE] == 66 * 1.5
    assert p[K.DRAM_READ] == 3 * 8 * 8 * 4
    assert p[K.DRAM_WRITE] == 8 * 8 * 4 + 8 * 4


def test_tiled_tiny_ragged_by_hand():
    # N = 10: blocks of 4, 4, 2 rows (Tr = Tc = 3)
    p = K.predict("tiled", "fa2", fp32(10, 8), {"block_rows": 4, "block_cols": 4}, H200)
    # Q: 2·(4 + 4 + 2) = 20; K, V: 3 blocks × 2 tensors × 2·(4 + 4 + 2) = 120
    assert p[K.L1_LD] == 20 + 120
    # O: 8 instructions per block, r sectors each: 8 · 10 = 80; L: the three blocks' 4, 4, 2 floats
    # start at bytes 0, 16, 32: one sector each -> 3
    assert p[K.L1_ST] == 80 + 3
    # Qs copies 2r instructions per block (20), Ks/Vs 2·2c per (block, j) (3 × 40 = 120),
    # Ss 2c per (block, j) (3 × 20 = 60)
    assert p[K.SHARED_ST] == 20 + 120 + 60
    # (3d/4 + 2)·c = 8c shared loads per (block, j), one wavefront each: 3 blocks × 8 × 10
    assert p[K.SHARED_LD] == 3 * 8 * 10


def test_tiled_uncoalesced_o_stores_are_eight_times_the_bytes():
    # d = 64, Br = 48: each O store instruction writes one float in each of 32 (16) rows, 256 B
    # apart: one sector per float. O is N·d floats -> N·d sectors against N·d·4/32 = N·d/8 for a
    # coalesced write. L adds N/8 (48 contiguous floats per block, 192-B aligned).
    n, d = 4096, 64
    p = K.predict("tiled", "fa2", fp32(n, d, heads=4), {"block_rows": 48, "block_cols": 48}, H200)
    assert p[K.L1_ST] == 4 * (n * d + n // 8)


def test_tiled_physical_loads_equal_logical_bytes_when_aligned():
    # 48 lanes read 48 consecutive floats = 192 B = 6 whole sectors: no sector is shared, so the
    # sectors × 32 B are exactly the logical HBM bytes of the counting contract
    w = fp32(1024, 64, heads=2)
    p = K.predict("tiled", "fa2", w, {"block_rows": 48, "block_cols": 48}, H200)
    assert p[K.L1_LD] * 32 == count("fa2", w, block_rows=48, block_cols=48).hbm_read_bytes


# ---------------------------------------------------------------------------------------------
# naive, T = 4, t = 4, N = d = 8: matmul blocks of 4×4 = 16 threads (one warp, lane = tx + 4ty)
# ---------------------------------------------------------------------------------------------


def test_matmul_qk_tiny_by_hand():
    p = K.predict("naive", "qk", fp32(8, 8), {"matmul_tile": 4, "softmax_threads": 4}, H200)
    # grid 2×2 blocks, 2 chunks of 4 along d. A tile: 4 rows × 4 floats (16 B, within one 32-B
    # row) -> 4 sectors; the K tile the same: 2 × 4 per chunk, 2 chunks, 4 blocks = 64
    assert p[K.L1_LD] == 64
    # S tile: 4 rows × 16 B -> 4 sectors per block, 4 blocks
    assert p[K.L1_ST] == 16
    # As[ty, tx] (4×4): 16 consecutive words -> 1; Bs[tx, ty] (4×5): words 5tx + ty, all < 32
    # and distinct -> 1. Per chunk 2 stores; multiply-adds: 4 × (As[ty, x]: 4 words in 4 banks;
    # Bs[x, tx]: 4 consecutive words) = 8 loads. 4 blocks × 2 chunks.
    assert p[K.SHARED_ST] == 4 * 2 * 2
    assert p[K.SHARED_LD] == 4 * 2 * 8
    # Q and K are read from DRAM once (everything fits in L2)
    assert p[K.DRAM_READ] == 2 * 8 * 8 * 4


def test_matmul_half_warps_read_two_rows_of_sixteen():
    # T = 16, d = 64: a warp is two rows of 16 floats (64 B each, 64-B aligned) -> 4 sectors, the
    # 128 B it reads: L1 sectors × 32 = the logical bytes, Q and K re-read ⌈N/T⌉ times each
    n, d = 256, 64
    w = fp32(n, d)
    p = K.predict("naive", "qk", w, {"matmul_tile": 16, "softmax_threads": 128}, H200)
    assert p[K.L1_LD] == 2 * n * d * (n // 16) * 4 // 32
    # the transposed store Bs[tx, ty] (row stride 17 words): lanes (tx, ty) and (tx + 1, ty − 1)
    # share bank tx + ty mod 32 -> 2 wavefronts; As[ty, tx]: 1. Per block and chunk 8 warps × 3.
    blocks, chunks = (n // 16) ** 2, d // 16
    assert p[K.SHARED_ST] == blocks * chunks * 8 * 3


def test_softmax_tiny_by_hand():
    p = K.predict("naive", "softmax", fp32(8, 8), {"matmul_tile": 4, "softmax_threads": 4}, H200)
    # one block of 4 threads per row; per row 2 loads of 4 floats (16 B) in one 32-B row ->
    # 2 instructions × 1 sector; the same for the P stores; 8 rows
    assert p[K.L1_LD] == 16 and p[K.L1_ST] == 16
    # per reduction: red[tid] = x (1 store), stride 2 (lanes 0, 1: 2 loads + 1 store), stride 1
    # (lane 0: 2 loads + 1 store), red[0] read by all (1 broadcast load): 3 stores, 5 loads;
    # two reductions per row, 8 rows
    assert p[K.SHARED_ST] == 8 * 2 * 3
    assert p[K.SHARED_LD] == 8 * 2 * 5


def test_softmax_spill_by_hand():
    # N = 64, t = 4: x has 16 floats; with 8 registers it cannot live in registers -> local memory.
    # Local words are interleaved by thread (CUDA guide), so one warp access of 4 lanes × 4 B is
    # 16 contiguous bytes = 1 sector. Per row: zero fill 4 × 16-B vector stores of 4 lanes (64 B,
    # 2 sectors) = 8; loop 1 stores 16; loop 2 loads 16 and stores 16; loop 3 loads 16.
    n = 64
    p = K.predict(
        "naive",
        "softmax",
        fp32(n, 8),
        {"matmul_tile": 4, "softmax_threads": 4},
        H200,
        registers=8,
        details=True,
    )
    assert p["model:local_st_sectors"] == n * (8 + 16 + 16)
    assert p["model:local_ld_sectors"] == n * (16 + 16)
    global_st = n * 16  # P: 16 instructions of 16 B per row
    assert p[K.L2_WRITE] == (global_st + n * 40) * 1.5
    # the wave's local arrays (64 rows × 4 threads × 64 B = 16 KiB) fit in L2: no DRAM reads
    assert p[K.DRAM_READ] == n * n * 4
    # the same with an L2 of 8 KiB: every local load comes from DRAM
    tiny = dataclasses.replace(
        H200,
        levels=tuple(
            dataclasses.replace(lv, capacity_bytes=8192) if lv.name == "L2" else lv for lv in H200.levels
        ),
    )
    p = K.predict("naive", "softmax", fp32(n, 8), {"matmul_tile": 4, "softmax_threads": 4}, tiny, registers=8)
    assert p[K.DRAM_READ] == n * n * 4 + n * 32 * 32


def test_softmax_spill_at_16k_reads_s_three_times():
    # N = 16384, t = 128: x is 128 floats, 34 registers -> local. Each element is loaded twice from
    # local memory; 12 blocks × 132 SMs × 128 threads × 512 B = 104 MB of local arrays per wave
    # > 60 MiB, so both loads miss L2: DRAM reads = S + 2·S
    n = 16384
    p = K.predict(
        "naive",
        "softmax",
        fp32(n, 64, heads=1),
        {"matmul_tile": 16, "softmax_threads": 128},
        H200,
        registers=34,
    )
    assert p[K.DRAM_READ] == 3 * n * n * 4


def test_tile_reread_fits_l2_vs_not():
    # pv, N = 1024, d = 64, T = 16, 8 heads: 4 × 64 = 256 blocks per head, 2048 in all; 8 blocks
    # of 256 threads per SM × 132 = 1056 at a time -> two waves, and head 4 (blocks 1024–1279)
    # is cut between them: its V (1024 × 64 floats = 256 KiB) is read by both waves.
    w = fp32(1024, 64, heads=8)
    m = {"matmul_tile": 16, "softmax_threads": 128}
    p_bytes, v_head = 8 * 1024 * 1024 * 4, 1024 * 64 * 4
    # Between the two reads: at most 1 + 4 heads' V (1.25 MiB) plus one wave's P rows (265 block
    # rows × 16 × 1024 floats = 17.4 MB) and O tiles (1.1 MB): ~20 MB < 60 MiB -> V read once
    p = K.predict("naive", "pv", w, m, H200, registers=32, details=True)
    assert p["model:waves"] == 2
    assert p[K.DRAM_READ] == p_bytes + 8 * v_head
    # with a 1 MiB L2 the second wave reads head 4's V again (and nothing else is re-read: every
    # other head lies in one wave, and no block row of P is cut, 1056 being a multiple of 4)
    small = dataclasses.replace(
        H200,
        levels=tuple(
            dataclasses.replace(lv, capacity_bytes=2**20) if lv.name == "L2" else lv for lv in H200.levels
        ),
    )
    q = K.predict("naive", "pv", w, m, small, registers=32)
    assert q[K.DRAM_READ] == p_bytes + 9 * v_head


def test_occupancy_by_hand():
    # tiled d=64: 48 threads (2 warps), 128 registers -> 2 × 4096 = 8192 per block -> 8 blocks;
    # shared (48·68 + 2·48·64 + 48·49)·4 = 47040 B (ptxas says the same) + 1 KiB reserved ->
    # 233472 // 48064 = 4. Four blocks.
    assert blocks_per_sm(48, 128, tiled_shared_bytes(48, 48, 64)) == 4
    # softmax t=128: 34 registers -> 34·32 = 1088, rounded up to 1280 per warp, 5120 per block:
    # 65536 // 5120 = 12 blocks (48 warps: the 72.5 % warps active ncu saw); 109 -> 3584 per warp,
    # 4 blocks (16 warps, 25 %)
    assert blocks_per_sm(128, 34) == 12
    assert blocks_per_sm(128, 109) == 4
    # matmul T=16: 256 threads, 32 registers -> 8 blocks by threads and by registers
    assert blocks_per_sm(256, 32) == 8


def test_l2_partition_factor():
    # two partitions, addresses spread evenly: every sector looked up near, half of them also far
    assert l2_partition_factor(2) == 1.5
    assert l2_partition_factor(1) == 1.0


def test_unknown_launch_is_refused():
    with pytest.raises(ValueError, match="unknown launch"):
        K.predict("tiled", "qk", fp32(8, 8), {"block_rows": 4, "block_cols": 4}, H200)
    with pytest.raises(ValueError, match="block_cols"):
        K.predict("tiled", "fa2", fp32(8, 8), {"block_rows": 4}, H200)


# ---------------------------------------------------------------------------------------------
# the committed table
# ---------------------------------------------------------------------------------------------


def test_committed_model_vs_ncu_is_reproducible():
    committed = pd.read_csv(OUT_CSV, keep_default_na=False, na_values=[""])
    fresh = compare(PROFILE_CSV)
    assert list(committed.columns) == list(fresh.columns)
    assert len(committed) == len(fresh)
    for column in (
        "kernel",
        "launch",
        "seq_len",
        "head_dim",
        "metric",
        "model",
        "ncu",
        "within_5pct",
        "target",
    ):
        assert committed[column].astype(str).tolist() == fresh[column].astype(str).tolist(), column
    pd.testing.assert_series_equal(
        committed["ratio"].astype(float), fresh["ratio"].astype(float), check_names=False
    )


def test_targets_in_the_committed_table():
    table = pd.read_csv(OUT_CSV)
    targets = table[table["target"]]
    # every L1 global-load sector count is exact
    l1 = targets[targets["metric"] == K.L1_LD]
    assert (l1["ratio"] == 1.0).all()
    # every DRAM-read target that misses carries a cause
    misses = targets[~targets["within_5pct"]]
    assert misses["cause"].str.len().gt(20).all()


def test_model_vs_ncu_cli_writes_the_table_with_provenance(tmp_path):
    """`python -m gpu_kernels model-vs-ncu` regenerates the committed table byte for byte, with a
    sidecar naming the profile it came from; a missing profile is one line, exit 2."""
    import hashlib
    import json

    from gpu_kernels.cli import main

    out = tmp_path / "mvn.csv"
    assert main(["model-vs-ncu", "--out", str(out)]) == 0
    assert out.read_bytes() == Path(OUT_CSV).read_bytes()
    side = json.loads(Path(str(out) + ".provenance.json").read_text())
    assert side["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert side["profile_sha256"] == hashlib.sha256(Path(PROFILE_CSV).read_bytes()).hexdigest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mvn.csv", "mvn.csv.provenance.json"]
    assert main(["model-vs-ncu", "--profile", str(tmp_path / "missing.csv"), "--out", str(out)]) == 2
