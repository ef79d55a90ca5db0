"""The optimised kernel (gpu_kernels.kernels.fast) and its schedule (simlib fa2_fast).

CPU part (numba's CUDA simulator, tiny sizes): outputs against the float64 numpy reference, NaN-
poisoned outputs, ragged N, both copy paths (cp.async and plain loads), and every counter equal to
simlib's count("fa2_fast", ...) and to the closed form of docs/COUNTING.md §fa2_fast written out
below. GPU part (``FLASHIO_GPU=1 pytest -m gpu``): the real kernel at N = 1000 ... 16384 with the
default configurations (more than 48 KiB of shared memory), counters on the GPU, the PTX.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_helpers import ON_GPU, TOL, ceil_div, lse_error, sim_only

from gpu_kernels.counting import COUNT_KEYS
from gpu_kernels.kernels.fast import run_fast
from gpu_kernels.reference import attention_reference, random_qkv, rel_error
from simlib import Workload, count
from simlib.kernel_layout import FastConfig
from simlib.kernel_layout import fast_default_config as default_config


def fa2_fast_closed_form(b, h, n, d, cfg):
    """docs/COUNTING.md §fa2_fast, per batch·head in elements, × B·H × 4 bytes."""
    br, bc, nty, ntx = cfg.block_rows, cfg.block_cols, cfg.nty, cfg.ntx
    tr, tc = ceil_div(n, br), ceil_div(n, bc)
    pair_reads = br * ntx * d + bc * nty * d + br * ntx * ntx + br * ntx * bc + nty * bc * d
    pair_writes = 2 * bc * d + br * ntx + br * bc
    el = {
        "hbm_read_bytes": n * d + tr * 2 * n * d,
        "hbm_write_bytes": n * d + n,
        "sram_read_bytes": tr * tc * pair_reads + tr * br * ntx * ntx,
        "sram_write_bytes": tr * tc * pair_writes + tr * (br * d + br * ntx),
    }
    return {k: v * b * h * 4 for k, v in el.items()}


def simlib_counts(b, h, n, d, cfg):
    r = count(
        "fa2_fast",
        Workload(n, d, b, h, dtype="fp32"),
        block_rows=cfg.block_rows,
        block_cols=cfg.block_cols,
        threads=(cfg.nty, cfg.ntx),
    )
    return {k: int(getattr(r, k)) for k in COUNT_KEYS}


# --- simulator: outputs and counters -------------------------------------------------------------

SIM_CONFIGS = [
    # (B, H, N, d, config): the simulator runs a Python thread per CUDA thread, so tiny blocks
    (1, 1, 1, 16, FastConfig(16, tm=2, tn=2, ntx=4, nty=2)),  # N = 1: one valid row, one valid key
    (2, 1, 13, 16, FastConfig(16, tm=2, tn=2, ntx=4, nty=2)),  # both blocks ragged, B·H = 2
    (1, 2, 8, 16, FastConfig(16, tm=2, tn=2, ntx=4, nty=2, async_copy=False)),  # exact tiles, plain loads
    (1, 1, 21, 32, FastConfig(32, tm=2, tn=2, ntx=8, nty=2)),  # d = 32, two row groups per warp
    (1, 1, 23, 32, FastConfig(32, tm=2, tn=2, ntx=8, nty=2, async_copy=False)),
    (1, 1, 5, 16, FastConfig(16, tm=1, tn=4, ntx=4, nty=4)),  # N < Br and N < Bc
    (1, 1, 19, 32, FastConfig(32, tm=1, tn=1, ntx=8, nty=2)),  # 1×1 micro-tile, Tc = 3
    (1, 1, 17, 32, FastConfig(32, tm=2, tn=2, ntx=8, nty=2, unroll=2)),  # two steps per loop trip
    (1, 1, 9, 16, FastConfig(16, tm=2, tn=4, ntx=4, nty=2, async_copy=False, unroll=4)),
]


@sim_only
@pytest.mark.parametrize("b,h,n,d,cfg", SIM_CONFIGS)
def test_fast_matches_reference_and_model(b, h, n, d, cfg):
    q, k, v = random_qkv(b, h, n, d, seed=3000 + n + d)
    ref_o, ref_lse = attention_reference(q, k, v)
    plain = run_fast(q, k, v, config=cfg)
    counted = run_fast(q, k, v, config=cfg, count=True)
    for res in (plain, counted):
        assert np.all(np.isfinite(res.o)) and np.all(np.isfinite(res.lse))  # every poisoned value written
        assert rel_error(res.o, ref_o) < TOL
        assert lse_error(res.lse, ref_lse) < TOL
    np.testing.assert_array_equal(plain.o, counted.o)  # counting changes no arithmetic
    assert plain.counts is None
    assert counted.counts == simlib_counts(b, h, n, d, cfg)
    assert counted.counts == fa2_fast_closed_form(b, h, n, d, cfg)


@sim_only
def test_fast_large_logits_stay_finite():
    cfg = FastConfig(16, tm=2, tn=2, ntx=4, nty=2)
    q, k, v = random_qkv(1, 1, 11, 16, seed=5, logit_scale=1e4)
    ref_o, ref_lse = attention_reference(q, k, v)
    res = run_fast(q, k, v, config=cfg)
    assert rel_error(res.o, ref_o) < TOL
    assert lse_error(res.lse, ref_lse) < TOL


@sim_only
def test_poisoned_outputs_expose_unwritten_rows():
    """Leave out the last query block: its rows stay NaN and the error check fails."""
    from numba import cuda

    from gpu_kernels.kernels.fast import plan_fast

    cfg = FastConfig(16, tm=2, tn=2, ntx=4, nty=2)  # Br = 4
    q, k, v = random_qkv(1, 1, 10, 16, seed=9)
    plan = plan_fast(q, k, v, config=cfg)
    dq, dk, dv = (cuda.to_device(x.reshape(-1)) for x in (q, k, v))
    do = cuda.to_device(np.full(160, np.nan, dtype=np.float32))
    dl = cuda.to_device(np.full(10, np.nan, dtype=np.float32))
    counters = cuda.to_device(np.zeros(4, dtype=np.int64))
    grid = (plan.grid[0] - 1, plan.grid[1])
    plan.kernel()[grid, plan.block, 0, cfg.smem_bytes](dq, dk, dv, do, dl, counters, 10)
    o = do.copy_to_host().reshape(1, 1, 10, 16)
    assert np.isnan(o[0, 0, 8:]).all() and np.isfinite(o[0, 0, :8]).all()
    assert rel_error(o, attention_reference(q, k, v)[0]) == math.inf


# --- configuration and checks (plain Python) ----------------------------------------------------


@sim_only
def test_default_configs_build_or_are_refused():
    """The tuned defaults (Br = 128, Bc = 64; Bc = 32 at d = 16, where NTX = 4) build for d = 16 ...
    128; d = 48, 96 (d/4 threads do not divide the copy loop) and 256 (shared memory) are refused."""
    for d, bc in ((16, 32), (32, 64), (64, 64), (128, 64)):
        cfg = default_config(d).check()
        assert (cfg.block_rows, cfg.block_cols) == (128, bc)
    assert default_config(64).smem_bytes == 4 * (128 * 68 + 64 * 68 + 64 * 64 + 128 * 72 + 128 * 8)
    for d in (48, 96, 256):
        with pytest.raises(ValueError):
            default_config(d).check()


@sim_only
def test_config_checks():
    q, k, v = random_qkv(1, 1, 8, 16, seed=1)
    with pytest.raises(ValueError, match="ntx"):
        FastConfig(16, ntx=2, nty=2).check()
    with pytest.raises(ValueError, match="multiple of 4\\*ntx"):
        FastConfig(24, tm=1, tn=1, ntx=4, nty=2).check()
    with pytest.raises(ValueError, match="shared memory"):
        FastConfig(256, tm=8, tn=8, ntx=16, nty=32).check()
    with pytest.raises(ValueError, match="does not match"):
        run_fast(q, k, v, config=FastConfig(32, tm=2, tn=2, ntx=8, nty=2))
    with pytest.raises(ValueError, match="float32"):
        run_fast(q.astype(np.float64), k, v)
    with pytest.raises(ValueError, match="rank 4"):
        run_fast(q[0], k[0], v[0])


# --- simlib's fa2_fast schedule -----------------------------------------------------------------


@sim_only
@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 600),
    nq=st.none() | st.integers(1, 600),
    d=st.sampled_from([8, 16, 64, 128]),
    tm=st.integers(1, 8),
    tn=st.integers(1, 8),
    nty=st.sampled_from([1, 2, 16, 32]),
    ntx=st.sampled_from([4, 8, 16]),
    bh=st.integers(1, 3),
    dtype=st.sampled_from(["fp16", "fp32"]),
)
def test_fa2_fast_closed_form_equals_trace(n, nq, d, tm, tn, nty, ntx, bh, dtype):
    w = Workload(n, d, batch=bh, heads=1, dtype=dtype, query_len=nq)
    kw = dict(block_rows=tm * nty, block_cols=tn * ntx, threads=(nty, ntx))
    closed, traced = count("fa2_fast", w, **kw), count("fa2_fast", w, method="trace", **kw)
    assert closed.traffic == traced.traffic
    assert closed.to_dict() == traced.to_dict()
    # HBM is exactly fa2's for the same blocks (the schedules differ only inside SRAM)
    fa2 = count("fa2", w, block_rows=tm * nty, block_cols=tn * ntx)
    if closed.block_rows <= w.nq and closed.block_cols <= w.nk:
        assert (closed.hbm_read_bytes, closed.hbm_write_bytes) == (fa2.hbm_read_bytes, fa2.hbm_write_bytes)


@sim_only
def test_fa2_fast_reads_per_score():
    """At N a multiple of both tiles: d/TN + 2d/TM + NTX + NTX/TN reads per score (+ the row sums)."""
    n, d = 4096, 64
    r = count("fa2_fast", Workload(n, d, dtype="fp32"))
    cfg = default_config(d)
    tm, tn, ntx = cfg.tm, cfg.tn, cfg.ntx
    per_score = d // tn + 2 * d // tm + ntx + ntx // tn
    assert per_score == 49
    assert r.sram_read_bytes // 4 == per_score * n * n + n * ntx * ntx
    assert (
        r.sram_read_bytes
        < count("fa2", Workload(n, d, dtype="fp32"), block_rows=128, block_cols=64).sram_read_bytes / 3
    )
    assert r.flops == r.useful_flops == 4 * n * n * d


@sim_only
def test_fa2_fast_refusals():
    w = Workload(64, 64, dtype="fp32")
    with pytest.raises(ValueError, match="causal"):
        count("fa2_fast", Workload(64, 64, causal=True))
    with pytest.raises(ValueError, match="multiples of the thread grid"):
        count("fa2_fast", w, block_rows=100, block_cols=64, threads=(32, 8))
    with pytest.raises(ValueError, match="matmul_tile"):
        count("fa2_fast", w, matmul_tile=16)
    with pytest.raises(ValueError, match="threads"):
        count("fa2", w, block_rows=16, block_cols=16, threads=(2, 4))
    with pytest.raises(ValueError, match="sram_bytes"):
        count("fa2_fast", w, sram_bytes="48KiB")


# --- GPU ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "b,h,n,d",
    [
        (1, 2, 1000, 64),
        (2, 1, 1000, 128),
        (1, 2, 4096, 64),
        (1, 1, 16384, 64),
        (1, 1, 4096, 128),
        (1, 1, 16384, 128),
    ],
)
@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
def test_fast_gpu(b, h, n, d):
    q, k, v = random_qkv(b, h, n, d, seed=77 + n + d)
    ref_o, ref_lse = attention_reference(q, k, v)
    cfg = default_config(d)
    assert cfg.smem_bytes > 48 * 1024  # the driver opt-in for large dynamic shared memory works
    for counting in (False, True):
        res = run_fast(q, k, v, count=counting)
        assert rel_error(res.o, ref_o) < TOL
        assert lse_error(res.lse, ref_lse) < TOL
    assert res.counts == simlib_counts(b, h, n, d, cfg)


@pytest.mark.parametrize(
    "cfg",
    [
        FastConfig(64, 4, 8, ntx=8, nty=32, async_copy=False),
        FastConfig(64, 4, 8, ntx=8, nty=32, vector_loads=False),
        FastConfig(64, 8, 8, ntx=8, nty=16, unroll=2),
        FastConfig(128, 4, 4, ntx=16, nty=16),
        FastConfig(128, 8, 4, ntx=16, nty=16, async_copy=False, unroll=2),
    ],
)
@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
def test_fast_gpu_variants(cfg):
    q, k, v = random_qkv(1, 2, 777, cfg.head_dim, seed=11)
    ref_o, ref_lse = attention_reference(q, k, v)
    res = run_fast(q, k, v, config=cfg, count=True)
    assert rel_error(res.o, ref_o) < TOL
    assert lse_error(res.lse, ref_lse) < TOL
    assert res.counts == simlib_counts(1, 2, 777, cfg.head_dim, cfg)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
def test_fast_gpu_ptx():
    """Timing build: vector loads, cp.async where configured, no atomics, no float64, no local memory."""
    from gpu_kernels.kernels.fast import fast_kernel, kernel_signature
    from gpu_kernels.ptx_check import summarize_ptx

    for d in (64, 128):
        cfg = default_config(d)
        for counting in (False, True):
            disp = fast_kernel(cfg, counting)  # compiled for kernel_signature() when built
            ptx = disp.inspect_asm(kernel_signature())
            s = summarize_ptx(ptx)
            assert s["f64"] == 0 and s["ld_local"] == 0 and s["st_local"] == 0
            assert (s["atom"] > 0) == counting
            assert "ld.shared.v4.f32" in ptx
            assert ("cp.async.cg.shared.global" in ptx) == cfg.async_copy


@sim_only
@pytest.mark.filterwarnings("ignore:invalid value encountered")  # zero-filled Q rows past N times −inf K
def test_fast_first_tile_of_minus_inf_scores_is_finite():
    """K rows 0..Bc−1 of −∞ with positive Q: the whole first K/V block scores −∞, the float64
    reference is finite, and so must the kernel's O and L be (no exp2(−∞ − (−∞)) = NaN)."""
    cfg = FastConfig(16, tm=2, tn=2, ntx=4, nty=4, async_copy=False)
    q, k, v = random_qkv(1, 1, 20, 16, seed=9)
    q = np.abs(q)
    k[:, :, : cfg.block_cols] = -np.inf
    ref_o, ref_lse = attention_reference(q, k, v)
    assert np.isfinite(ref_o).all()
    res = run_fast(q, k, v, config=cfg, count=True)
    assert rel_error(res.o, ref_o) < TOL
    assert lse_error(res.lse, ref_lse) < TOL
    assert res.counts == simlib_counts(1, 1, 20, 16, cfg)
