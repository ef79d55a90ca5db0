"""gpu_kernels on a real GPU: FLASHIO_GPU=1 pytest -m gpu tests/test_kernels_gpu.py

Outputs against the float64 numpy reference at N = 4096 and 16384, counters against simlib, and
the PTX of the timing builds (no atomics, no float64). Skipped everywhere else.
"""

import functools
import os

import numpy as np
import pytest

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(os.environ.get("FLASHIO_GPU") != "1", reason="needs FLASHIO_GPU=1 and a CUDA GPU"),
]

TOL = 1e-5


@functools.lru_cache(maxsize=4)
def _case(b, h, n, d, seed):
    from gpu_kernels import attention_reference, random_qkv

    q, k, v = random_qkv(b, h, n, d, seed=seed)
    return (q, k, v), attention_reference(q, k, v)


def _simlib(kernel, b, h, n, d, **params):
    from gpu_kernels.model import simlib_prediction

    return simlib_prediction(kernel, b, h, n, d, **params)


@pytest.mark.parametrize("b,h,n,d", [(1, 2, 4096, 64), (1, 2, 4096, 128), (1, 1, 16384, 64), (1, 1, 16384, 128)])
def test_tiled_gpu(b, h, n, d):
    from gpu_kernels import rel_error, run_tiled

    (q, k, v), (ref_o, ref_lse) = _case(b, h, n, d, 42 + n + d)
    for count in (False, True):
        res = run_tiled(q, k, v, count=count)
        assert rel_error(res.o, ref_o) < TOL
        assert rel_error(res.lse, ref_lse) < TOL
    assert res.counts == _simlib("tiled", b, h, n, d, block_rows=res.block_rows, block_cols=res.block_cols)


@pytest.mark.parametrize("b,h,n,d", [(1, 2, 4096, 64), (1, 1, 16384, 64), (1, 1, 16384, 128)])
def test_naive_gpu(b, h, n, d):
    from gpu_kernels import rel_error, run_naive

    (q, k, v), (ref_o, _) = _case(b, h, n, d, 42 + n + d)
    for count in (False, True):
        res = run_naive(q, k, v, count=count)
        assert rel_error(res.o, ref_o) < TOL
    assert res.counts == _simlib("naive", b, h, n, d, matmul_tile=res.matmul_tile,
                                 softmax_threads=res.softmax_threads)


def test_tiled_gpu_large_logits():
    from gpu_kernels import attention_reference, random_qkv, rel_error, run_tiled
    from gpu_kernels.reference import fp32_score_floor

    q, k, v = random_qkv(1, 2, 4096, 64, seed=5, logit_scale=1e4)
    ref_o, ref_lse = attention_reference(q, k, v)
    res = run_tiled(q, k, v)
    assert np.all(np.isfinite(res.o)) and np.all(np.isfinite(res.lse))
    # Scores ~3e4 in fp32 are off by ~1e-3; near-tied rows make that an O error of ~4e-5 for ANY fp32
    # kernel (seen on the H200: kernel 4.0225e-5, float64 softmax of numpy's fp32 scores 4.0224e-5).
    tol_o = max(TOL, 2 * fp32_score_floor(q, k, v))
    assert rel_error(res.o, ref_o) < tol_o
    assert rel_error(res.lse, ref_lse) < TOL


def test_timing_builds_have_no_atomics_and_no_float64():
    from gpu_kernels.asm import check_report, ptx_report

    rows = ptx_report(head_dim=64) + ptx_report(head_dim=128)
    assert check_report(rows) == []
    assert all(r["atom"] == 0 for r in rows if r["build"] == "timing")
    assert all(r["atom"] == 4 for r in rows if r["build"] == "counting")
