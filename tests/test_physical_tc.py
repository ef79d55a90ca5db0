"""The physical model of the tensor-core kernels (simlib/physical/fa2_tc_model.py, naive_tc_model.py)
against counts worked out by hand on tiny configurations: every 16-byte cp.async chunk of a full
tile is coalesced (bytes / 32 sectors), an accumulator written as 2-byte values costs 8 sectors per
store instruction (four per n-tile), a swizzled ldmatrix.x4 costs 4 wavefronts and an unswizzled
one of 128-byte rows 32 (8 rows in the same 4 banks per matrix)."""

import pytest

from simlib.hardware import load_preset
from simlib.physical import launches as K
from simlib.physical.fa2_tc_model import ldmatrix_wavefronts, q_fragment_row
from simlib.workload import Workload

H200 = load_preset("h200")


def bf16(n, d, bh=1):
    return Workload(seq_len=n, head_dim=d, batch=1, heads=bh, dtype="bf16")


@pytest.mark.parametrize("n,d,w,bc,bh", [(64, 64, 4, 64, 1), (128, 128, 2, 32, 3)])
def test_fa2_tc_by_hand(n, d, w, bc, bh):
    br = 16 * w  # version 3's layout, which tc_run4 profiled: one m16 tile per warp, Q in registers
    tr, tc = n // br, n // bc
    m = {"warps": w, "block_cols": bc, "warp_rows": 16, "q_reload": False}
    p = K.predict("fa2_tc", "fa2_tc", bf16(n, d, bh), m, H200)
    assert p[K.L1_LD] == bh * (n * d + tr * 2 * n * d) * 2 // 32
    assert p[K.L1_ST] == bh * tr * w * (4 * (d // 8) * 8 + 2)
    ldsm_per_warp = d // 16 + tc * (d // 16 * bc // 16 + bc // 16 * d // 16)
    assert p[K.SHARED_LD] == bh * tr * w * 4 * ldsm_per_warp
    assert p[K.SHARED_ST] == 0
    assert p[K.DRAM_READ] == 3 * bh * n * d * 2  # K/V fit in the L2
    assert p[K.DRAM_WRITE] == bh * n * (2 * d + 4)


def test_naive_tc_by_hand():
    n, d, w, bc, t = 128, 64, 2, 64, 64
    bm = 16 * w
    wl, m = bf16(n, d, 2), {"warps": w, "block_cols": bc, "softmax_threads": t}
    s = K.predict("naive_tc", "scores", wl, m, H200)
    blocks = 2 * (n // bm) * (n // bc)
    assert s[K.L1_LD] == blocks * (bm + bc) * d * 2 // 32
    assert s[K.L1_ST] == blocks * w * 4 * (bc // 8) * 8
    assert s[K.SHARED_LD] == blocks * w * 4 * (d // 16) * (1 + bc // 16)
    sm = K.predict("naive_tc", "softmax", wl, m, H200)
    assert sm[K.L1_LD] == sm[K.L1_ST] == 2 * n * n * 2 // 32
    # t = 64: 2 warps per row; each reads the 2 partials of each reduction with one LDS.64, 1 wavefront
    assert sm[K.SHARED_LD] == 2 * n * 2 * 2 * 1 and sm[K.SHARED_ST] == 2 * n * 2 * (t // 32)
    pv = K.predict("naive_tc", "pv", wl, m, H200)
    assert pv[K.L1_LD] == 2 * (n // bm) * (n // bc) * (bm * bc + bc * d) * 2 // 32
    assert pv[K.SHARED_LD] == 2 * (n // bm) * w * (n // bc) * 4 * (bc // 16) * (1 + d // 16)
    assert pv[K.DRAM_READ] == 2 * (n * n + n * d) * 2


def test_swizzle_is_what_makes_ldmatrix_conflict_free():
    assert ldmatrix_wavefronts(q_fragment_row(0, 0, 64), 64) == 4
    plain = lambda lane: (lane & 7) * 64 + ((lane >> 3) & 1) * 8 * 64 + (lane >> 4) * 8  # noqa: E731
    assert ldmatrix_wavefronts(plain, 64) == 32


def test_tc_models_refuse_what_they_do_not_cover():
    with pytest.raises(ValueError, match="multiple of Br"):
        K.predict("fa2_tc", "fa2_tc", bf16(100, 64), {"warps": 4, "block_cols": 64}, H200)
    with pytest.raises(ValueError, match="unknown launch"):
        K.predict("naive_tc", "qk", bf16(64, 64), {"warps": 4, "block_cols": 64}, H200)


def test_committed_tc_model_vs_ncu_is_reproducible():
    """model_vs_ncu_h200_tc.csv is compare() of tc_run4's profile; L1 global-load sectors are exact."""
    import pandas as pd

    from evidence.model_vs_ncu import TC_OUT_CSV, TC_PROFILE_CSV, compare

    committed = pd.read_csv(TC_OUT_CSV, keep_default_na=False, na_values=[""])
    fresh = compare(TC_PROFILE_CSV)
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
    targets = committed[committed["target"]]
    assert (targets[targets["metric"] == K.L1_LD]["ratio"] == 1.0).all()
    assert targets[~targets["within_5pct"]]["cause"].str.len().gt(20).all()


@pytest.mark.parametrize(
    "warps,loads",
    [
        (1, {"LDS.32": 1}),
        (2, {"LDS.64": 1}),
        (3, {"LDS.64": 1, "LDS.32": 1}),
        (4, {"LDS.128": 1}),
        (8, {"LDS.128": 2}),
        (32, {"LDS.128": 8}),
    ],
)
def test_softmax_partials_wavefronts_from_the_sass_loads(warps, loads):
    """A broadcast read of W fp32 partials: the loads ptxas emits (SASS of run g-tc-leftovers-20261201
    for W = 8, 32; ncu's shared-load instruction count for W = 1, 2, 4), 2 wavefronts per LDS.128
    and 1 per LDS.64 / LDS.32 (that run's ncu: 67,108,865 wavefronts for 33,554,432 LDS.128)."""
    from simlib.physical.naive_tc_model import broadcast_wavefronts

    per_load = {"LDS.128": 2, "LDS.64": 1, "LDS.32": 1}
    width = {"LDS.128": 4, "LDS.64": 2, "LDS.32": 1}
    assert sum(width[op] * c for op, c in loads.items()) == warps  # every partial read once
    assert broadcast_wavefronts(warps) == sum(per_load[op] * c for op, c in loads.items())


def test_softmax_shared_loads_match_the_diagnostic_run():
    """naive_tc's softmax at B·H = 4, N = 16384, t = 1024 (32 warps per row): 4·16384 rows · 32 warps ·
    2 reductions · 8 LDS.128 · 2 wavefronts = 67,108,864; ncu counted 67,108,865 (naive_tc_diag_h200.csv)."""
    m = K.predict(
        "naive_tc",
        "softmax",
        bf16(16384, 64, 4),
        {"warps": 4, "block_cols": 64, "softmax_threads": 1024},
        H200,
    )
    assert m[K.SHARED_LD] == 4 * 16384 * 32 * 2 * 8 * 2 == 67_108_864


def test_naive_tc_scores_dram_cause_quotes_the_partial_sector_run():
    """Run g3-partial-sectors-20261201: at N = 16384, d = 64 the scores launch's L2 fills from DRAM are
    its DRAM sectors read, and exceed its read lookup misses by the number the cause quotes; softmax and
    pv (whole-sector stores) have next to no write lookup misses."""
    import csv
    from pathlib import Path

    from evidence.model_vs_ncu import CAUSES

    path = Path(__file__).resolve().parents[1] / "data/measurements/current/naive_tc_partial_sectors_h200.csv"
    with path.open(newline="") as f:
        v = {(r["launch"], r["seq_len"], r["metric"]): float(r["value"]) for r in csv.DictReader(f)}
    fill, miss = "lts__d_sectors_fill_device.sum", "lts__t_sectors_op_read_lookup_miss.sum"
    s = ("scores", "16384")
    assert abs(v[(*s, fill)] - v[(*s, "dram__sectors_read.sum")]) < 100
    excess = v[(*s, fill)] - v[(*s, miss)]
    assert excess == 2109543 - 1057557 == 1051986
    cause = CAUSES[(K.DRAM_READ, "naive_tc", "scores")]
    assert (
        f"{int(excess):,}" in cause
        and f"{int(v[(*s, 'lts__t_sectors_op_write_lookup_miss.sum')]):,}" in cause
    )
    for launch in ("softmax", "pv"):
        assert v[(launch, "16384", "lts__t_sectors_op_write_lookup_miss.sum")] < 100
    assert v[("scores", "4096", fill)] < v[("scores", "4096", miss)]  # no excess at N = 4096


@pytest.mark.parametrize(
    "n,d,w,bc,bh,wr,qr",
    [(128, 64, 4, 64, 1, 32, False), (256, 128, 2, 32, 3, 32, True), (64, 128, 4, 16, 2, 16, True)],
)
def test_fa2_tc_warp_rows_and_q_reload_by_hand(n, d, w, bc, bh, wr, qr):
    """fa2_tc's layout (issue 22, version 4): W warps of R rows (R/16 m16 tiles each), Br = R·W; with Q
    re-read, every warp loads its R/16 Q fragments per k-step again for every tile. Counted from the
    kernel's loops: K and V fragments do not depend on R (one ldmatrix of K or V feeds every m-tile)."""
    br, mt = wr * w, wr // 16
    tr, tc = n // br, n // bc
    m = {"warps": w, "block_cols": bc, "warp_rows": wr, "q_reload": qr}
    p = K.predict("fa2_tc", "fa2_tc", bf16(n, d, bh), m, H200)
    assert p[K.L1_LD] == bh * (n * d + tr * 2 * n * d) * 2 // 32
    assert p[K.L1_ST] == bh * tr * w * mt * (4 * (d // 8) * 8 + 2)  # O per m-tile, and L's two row halves
    q_ldsm = mt * (d // 16)
    ldsm_per_warp = (tc * q_ldsm if qr else q_ldsm) + tc * 2 * (d // 16) * (bc // 16)
    assert p[K.SHARED_LD] == bh * tr * w * 4 * ldsm_per_warp  # 4 wavefronts per swizzled ldmatrix.x4


def test_fa2_tc_model_defaults_to_the_kernel_that_runs():
    """Without a layout, predict() describes version 4 (32 rows per warp, Q re-read at d = 128); the
    committed profile of version 3 (tc_run4) is compared with R = 16 and Q in registers."""
    from evidence import model_vs_ncu
    from simlib.physical.fa2_tc_model import V3_LAYOUT

    for d, reload in ((64, False), (128, True)):
        wl, m = bf16(512, d, 2), {"warps": 4, "block_cols": 64}
        assert K.predict("fa2_tc", "fa2_tc", wl, m, H200) == K.predict(
            "fa2_tc", "fa2_tc", wl, {**m, "warp_rows": 32, "q_reload": reload}, H200
        )
    assert V3_LAYOUT == {"warp_rows": 16, "q_reload": False}
    rows = model_vs_ncu.compare(model_vs_ncu.TC_PROFILE_CSV)
    l1 = rows[(rows.kernel == "fa2_tc") & (rows.metric == K.L1_LD)]
    assert len(l1) and (l1.model == l1.ncu).all()  # version 3's loads, sector for sector
