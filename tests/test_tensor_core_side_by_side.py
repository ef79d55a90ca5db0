"""The side by side's cuBLAS call for cupy's naive attention: the column-major arguments that
`gemm_args` gives, run through a numpy model of cublasGemmStridedBatchedEx's definition (C = α·op(A)·op(B)
on column-major buffers with leading dimensions and batch strides), must give the row-major Q·Kᵀ and
P·V per head (numpy's own matmul, float64). Runs on the CPU: the GPU run checks the same function
against torch's fp32 attention."""

import numpy as np
import pytest

from gpu_kernels.measure.side_by_side import CUBLAS_OP_N, CUBLAS_OP_T, gemm_args


def _col_major(buf, offset, rows, cols, ld):
    """The rows×cols column-major matrix at buf[offset:]: element (i, j) is buf[offset + i + j·ld]."""
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return buf[offset + i + j * ld]


def _gemm_strided_batched(transa, transb, m, n, k, alpha, a, lda, sa, b, ldb, sb, c, ldc, sc, batch):
    """cuBLAS's definition, written out: for each batch, C (m×n) = α·op(A)·op(B), op(A) m×k, op(B) k×n."""
    for p in range(batch):
        opa = (
            _col_major(a, p * sa, k, m, lda).T if transa == CUBLAS_OP_T else _col_major(a, p * sa, m, k, lda)
        )
        opb = (
            _col_major(b, p * sb, n, k, ldb).T if transb == CUBLAS_OP_T else _col_major(b, p * sb, k, n, ldb)
        )
        prod = alpha * opa @ opb
        for j in range(n):
            c[p * sc + j * ldc : p * sc + j * ldc + m] = prod[:, j]


@pytest.mark.parametrize("n,d", [(8, 4), (6, 16)])
def test_gemm_args_give_the_row_major_products_per_head(n, d):
    rng = np.random.default_rng(5)
    batch = 3
    q, k, v = (rng.standard_normal((batch, n, d)) for _ in range(3))
    p = rng.standard_normal((batch, n, n))
    s = np.full(batch * n * n, np.nan)
    ta, tb, m, nn, kk, lda, ldb, ldc, sa, sb, sc = gemm_args("qk", n, d)
    # A is the right factor (K), B the left one (Q), as cublas_bmm passes them
    _gemm_strided_batched(ta, tb, m, nn, kk, 0.5, k.ravel(), lda, sa, q.ravel(), ldb, sb, s, ldc, sc, batch)
    np.testing.assert_allclose(s.reshape(batch, n, n), 0.5 * q @ k.transpose(0, 2, 1), rtol=1e-12)
    o = np.full(batch * n * d, np.nan)
    ta, tb, m, nn, kk, lda, ldb, ldc, sa, sb, sc = gemm_args("pv", n, d)
    _gemm_strided_batched(ta, tb, m, nn, kk, 1.0, v.ravel(), lda, sa, p.ravel(), ldb, sb, o, ldc, sc, batch)
    np.testing.assert_allclose(o.reshape(batch, n, d), p @ v, rtol=1e-12)


def test_gemm_args_refuses_an_unknown_product():
    with pytest.raises(ValueError, match="product must be 'qk' or 'pv'"):
        gemm_args("qv", 8, 4)
    assert CUBLAS_OP_N == 0  # cublas_api.h: CUBLAS_OP_N = 0, CUBLAS_OP_T = 1


def test_worked_numbers_of_the_side_by_side_and_the_context_probe_run():
    import doctest

    from gpu_kernels.measure import cuda_context
    from gpu_kernels.measure import side_by_side as bench

    for module in (bench, cuda_context):
        result = doctest.testmod(module)
        assert result.attempted >= 1 and result.failed == 0, module.__name__


def test_context_summary_is_the_median_over_trials_of_used_minus_before_minus_allocator():
    from gpu_kernels.measure.cuda_context import summary

    mib = 2**20
    trials = [
        {"framework": "torch", "before_bytes": 600 * mib, "stages": [{"stage": "context", "device_used_bytes": u * mib, "allocator_bytes": 2 * mib}]}
        for u in (1112, 1100, 1130)
    ]  # fmt: skip
    s = summary(trials)["torch"]["context"]
    assert (s["median_bytes"], s["min_bytes"], s["max_bytes"], s["n"]) == (510 * mib, 498 * mib, 528 * mib, 3)
