"""The tensor-core building blocks (gpu_kernels.tensor_core.warp_ops) on one tile, against numpy.

One warp copies a 16×16 A and a 16×8 B (once stored n-major as Kᵀ is, once k-major as V is) into
shared memory with cp.async (one copy zero-filled), loads the fragments with ldmatrix (plain for A
and the n-major B, .trans for the k-major B), multiplies with mma.sync and writes D. Expected values:
numpy's float64 product of the same 16-bit inputs; the fragment layout is the PTX ISA's, so a wrong
lane mapping shows up as a wrong D. On the simulator (CI) this tests the Python paths; with
FLASHIO_GPU=1 the same kernel runs the inline PTX on the GPU.
"""

import numpy as np
import pytest
from kernel_helpers import ON_GPU
from numba import cuda, float32, uint16  # module globals: the simulator swaps `cuda` in a kernel's globals

from gpu_kernels.counting import simulator_enabled
from gpu_kernels.tensor_core.dtypes import from_bits, round_to, to_bits
from simlib.units import UNIT_ROUNDOFF

DTYPES = ["bf16", "fp16"]


def _tile_kernel(dtype):
    from gpu_kernels.tensor_core.warp_ops import warp_ops

    (
        mma,
        ldsm_x4,
        ldsm_x4_t,
        cp_async16,
        cp_commit,
        cp_wait_all,
        pack2,
        to_f32,
        quad_max,
        quad_sum,
        warp_max,
        warp_sum,
    ) = warp_ops(dtype, simulator_enabled())
    ZERO = np.float32(0.0)
    LOW = np.uint32(0xFFFF)
    SIXTEEN = np.uint32(16)

    def tile(a, bn, bk, d_n, d_k, packed, unpacked, reduced, wide):
        sa = cuda.shared.array(256, uint16)  # A, 16 rows × 16
        sbn = cuda.shared.array(128, uint16)  # B stored n-major: 8 rows (n) × 16 (k), like K
        sbk = cuda.shared.array(128, uint16)  # B stored k-major: 16 rows (k) × 8 (n), like V
        sz = cuda.shared.array(8, uint16)  # one zero-filled 16-byte copy
        lane = cuda.threadIdx.x
        cp_async16(sa, 8 * lane, a, 8 * lane, 16)  # 32 chunks of 8 elements: one per lane
        if lane < 16:
            cp_async16(sbn, 8 * lane, bn, 8 * lane, 16)
            cp_async16(sbk, 8 * lane, bk, 8 * lane, 16)
        if lane == 0:
            cp_async16(sz, 0, a, 0, 0)
        cp_commit()
        cp_wait_all()
        cuda.syncthreads()
        # A: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15)
        row = (lane & 7) + ((lane >> 3) & 1) * 8
        a0, a1, a2, a3 = ldsm_x4(sa, row * 16 + (lane >> 4) * 8)
        # B n-major: matrices (n 0-7, k 0-7) -> b0, (n 0-7, k 8-15) -> b1 (lanes 16-31 repeat them)
        b0, b1, _, _ = ldsm_x4(sbn, (lane & 7) * 16 + ((lane >> 3) & 1) * 8)
        e0, e1, e2, e3 = mma(a0, a1, a2, a3, b0, b1, ZERO, ZERO, ZERO, ZERO)
        # B k-major, transposed on the way: matrices (k 0-7) -> b0, (k 8-15) -> b1
        t0, t1, _, _ = ldsm_x4_t(sbk, ((lane & 7) + ((lane >> 3) & 1) * 8) * 8)
        f0, f1, f2, f3 = mma(a0, a1, a2, a3, t0, t1, e0, e1, e2, e3)  # accumulates onto the first D
        g = lane >> 2
        t = lane & 3
        d_n[g * 8 + 2 * t] = e0
        d_n[g * 8 + 2 * t + 1] = e1
        d_n[(g + 8) * 8 + 2 * t] = e2
        d_n[(g + 8) * 8 + 2 * t + 1] = e3
        d_k[g * 8 + 2 * t] = f0
        d_k[g * 8 + 2 * t + 1] = f1
        d_k[(g + 8) * 8 + 2 * t] = f2
        d_k[(g + 8) * 8 + 2 * t + 1] = f3
        p = pack2(e0, e1)
        packed[2 * lane] = p & LOW
        packed[2 * lane + 1] = p >> SIXTEEN
        unpacked[lane] = to_f32(sa[lane])
        if lane < 8:
            unpacked[32 + lane] = to_f32(sz[lane])
        x = float32(lane * 7 % 11) - float32(5.0)
        reduced[2 * lane] = quad_max(x)
        reduced[2 * lane + 1] = quad_sum(x)
        wide[2 * lane] = warp_max(x)
        wide[2 * lane + 1] = warp_sum(x)

    return cuda.jit(tile)


def _run(dtype, seed):
    rng = np.random.default_rng(seed)
    a = round_to(rng.standard_normal((16, 16)), dtype)
    b = round_to(rng.standard_normal((16, 8)), dtype)  # B[k, n]
    c = round_to(rng.standard_normal((16, 8)), dtype)
    args = [to_bits(a, dtype).ravel(), to_bits(b.T, dtype).ravel(), to_bits(c, dtype).ravel()]
    outs = [
        np.full(128, np.nan, np.float32),
        np.full(128, np.nan, np.float32),
        np.zeros(64, np.uint16),
        np.full(40, np.nan, np.float32),
        np.full(64, np.nan, np.float32),
        np.full(64, np.nan, np.float32),
    ]
    dev = [cuda.to_device(x) for x in args + outs]
    _tile_kernel(dtype)[1, 32](*dev)
    got = [x.copy_to_host() for x in dev[3:]]
    return a, b, c, got


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_tile_matches_numpy(dtype):
    a, b, c, (d_n, d_k, packed, unpacked, reduced, wide) = _run(dtype, seed=hash(dtype) % 1000)
    ref_n = a.astype(np.float64) @ b
    ref_k = ref_n + a.astype(np.float64) @ c
    # fp32 accumulation of 16 exact products: a few fp32 roundings of values ~ sqrt(16)
    np.testing.assert_allclose(d_n.reshape(16, 8), ref_n, rtol=0, atol=1e-5)
    np.testing.assert_allclose(d_k.reshape(16, 8), ref_k, rtol=0, atol=2e-5)
    # pack2: (row g, cols 2t, 2t+1) of the first D, rounded to the dtype, low half first
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    expect = np.stack([d_n.reshape(16, 8)[g, 2 * t], d_n.reshape(16, 8)[g, 2 * t + 1]], axis=1).ravel()
    np.testing.assert_array_equal(packed, to_bits(expect, dtype))
    np.testing.assert_array_equal(from_bits(packed, dtype), round_to(expect, dtype))
    assert np.max(np.abs(from_bits(packed, dtype) - expect) / np.abs(expect)) <= UNIT_ROUNDOFF[dtype]
    # to_f32 of the first 32 elements of A; the zero-filled copy reads back as +0
    np.testing.assert_array_equal(unpacked[:32], a.ravel()[:32])
    np.testing.assert_array_equal(unpacked[32:], np.zeros(8, np.float32))
    x = (lane * 7 % 11 - 5).astype(np.float32).reshape(8, 4)
    np.testing.assert_array_equal(reduced[0::2].reshape(8, 4), np.repeat(x.max(axis=1, keepdims=True), 4, 1))
    np.testing.assert_array_equal(reduced[1::2].reshape(8, 4), np.repeat(x.sum(axis=1, keepdims=True), 4, 1))
    np.testing.assert_array_equal(wide[0::2], np.full(32, x.max()))
    np.testing.assert_array_equal(wide[1::2], np.full(32, x.sum()))  # small integers: every order is exact


def test_bf16_rounding_is_nearest_even():
    one_and_half_ulp = np.array(
        [1 + 2.0**-8, 1 + 3 * 2.0**-9, -(1 + 2.0**-8), 3.4e38, np.inf, np.nan], dtype=np.float32
    )
    bits = to_bits(one_and_half_ulp, "bf16")
    assert bits[:5].tolist() == [
        0x3F80,
        0x3F81,
        0xBF80,
        0x7F80,
        0x7F80,
    ]  # ties to even; 3.4e38 (above the largest bf16 and half its ulp) rounds to inf
    assert np.isnan(from_bits(bits, "bf16")[5])
    x = np.random.default_rng(0).standard_normal(10000).astype(np.float32)
    err = np.abs(round_to(x, "bf16") - x) / np.abs(x)
    assert err.max() <= 2.0**-8  # half an ulp: u = 2^-p for p = 8 significand bits
    np.testing.assert_array_equal(to_bits(x, "fp16"), x.astype(np.float16).view(np.uint16))


def test_ptx_texts_are_the_isa_spellings_in_both_address_forms():
    """The worked spellings in warp_ops' docstrings (cp_async_asm, ldmatrix_asm) hold, and each 64-bit
    form is the 32-bit form's instruction on a register converted by cvta.to.shared/global."""
    import doctest

    from gpu_kernels.tensor_core import warp_ops as module

    result = doctest.testmod(module)
    assert result.attempted >= 2 and result.failed == 0
    for trans in (False, True):
        text32, cons32 = module.ldmatrix_asm(True, trans)
        text64, cons64 = module.ldmatrix_asm(False, trans)
        assert (".trans." in text32) is trans and text32.endswith(", [$4];")
        assert text64 == "{ .reg .u64 sa; cvta.to.shared.u64 sa, $4; " + text32.replace("[$4]", "[sa]") + " }"
        assert (cons32, cons64) == ("=r,=r,=r,=r,r,~{memory}", "=r,=r,=r,=r,l,~{memory}")


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES)
def test_one_tile_gpu(dtype):
    test_one_tile_matches_numpy(dtype)


@pytest.mark.parametrize(
    "args,name",
    [
        (["--out", "x", "--seq-lens", "a,b"], "--seq-lens"),
        (["--out", "x", "--head-dims", "96"], "--head-dims"),
        (["--out", "x", "--reps", "0"], "--reps"),
        (["--out", "x", "--tag", "a/b"], "--tag"),
        ([], "--out"),
    ],
)
def test_bench_refuses_bad_arguments_in_one_line(args, name, capsys):
    from gpu_kernels.measure.side_by_side import main

    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and name in err[0] and "Traceback" not in err[0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_mma_loop_one_round_matches_numpy(dtype):
    """The ceiling's register loop (tensor_core.mma_loop) after one round: lane 4g + t holds
    CHAINS·(A·B) at (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1), A·B from numpy in float64."""
    from gpu_kernels.tensor_core.mma_loop import CHAINS, fragments, mma_loop_kernel

    rng = np.random.default_rng(7)
    a = round_to(rng.standard_normal((16, 16)), dtype)
    b = round_to(rng.standard_normal((16, 8)), dtype)
    fa, fb = fragments(a, b, dtype)
    out = cuda.to_device(np.full(128, np.nan, np.float32))
    mma_loop_kernel(dtype, simulator_enabled())[1, 32](cuda.to_device(fa), cuda.to_device(fb), out, 1)
    got = out.copy_to_host().reshape(32, 4)
    ref = CHAINS * (a.astype(np.float64) @ b)
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    expect = np.stack([ref[g, 2 * t], ref[g, 2 * t + 1], ref[g + 8, 2 * t], ref[g + 8, 2 * t + 1]], axis=1)
    np.testing.assert_allclose(got, expect, rtol=0, atol=1e-4)  # 8 fp32 sums of values ~ 4


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES)
def test_mma_loop_gpu(dtype):
    test_mma_loop_one_round_matches_numpy(dtype)
