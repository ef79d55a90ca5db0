"""The physical model of the tensor-core kernels (simlib/physical/fa2_tc_model.py, naive_tc_model.py)
against counts worked out by hand on tiny configurations: every 16-byte cp.async chunk of a full
tile is coalesced (bytes / 32 sectors), an accumulator written as 2-byte values costs 8 sectors per
store instruction (four per n-tile), a swizzled ldmatrix.x4 costs 4 wavefronts and an unswizzled
one of 128-byte rows 32 (8 rows in the same 4 banks per matrix)."""

import pytest

from simlib.hardware import load_preset
from simlib.physical import kernels as K
from simlib.physical.fa2_tc_model import ldmatrix_wavefronts, q_fragment_row
from simlib.workload import Workload

H200 = load_preset("h200")


def bf16(n, d, bh=1):
    return Workload(seq_len=n, head_dim=d, batch=1, heads=bh, dtype="bf16")


@pytest.mark.parametrize("n,d,w,bc,bh", [(64, 64, 4, 64, 1), (128, 128, 2, 32, 3)])
def test_fa2_tc_by_hand(n, d, w, bc, bh):
    br = 16 * w
    tr, tc = n // br, n // bc
    p = K.predict("fa2_tc", "fa2_tc", bf16(n, d, bh), {"warps": w, "block_cols": bc}, H200)
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
    assert sm[K.SHARED_LD] == 2 * n * 2 * (t // 32) ** 2 and sm[K.SHARED_ST] == 2 * n * 2 * (t // 32)
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

    from simlib.physical.model_vs_ncu import TC_OUT_CSV, TC_PROFILE_CSV, compare

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
