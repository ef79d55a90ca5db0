"""naive_tc (gpu_kernels.kernels.naive_tc) and its schedule (simlib naive_tc).

Outputs, two references from the rounded inputs:

* the exact float64 attention: naive_tc rounds S, P and O to the dtype (each ≤ u relative; S's
  rounding moves a probability by |s|·u, |s| ~ 1-3 for these inputs): tolerance 4u on ‖O − ref‖/‖ref‖;
* the dtype pipeline in float64 numpy (S rounded to the dtype, softmax, P rounded, P V, O rounded):
  what is left is fp32 accumulation and the last rounding, tolerance 2u. With logits ×100 only this
  check is made: half a bf16 ulp of a score near 100 is 0.25, so rounding S moves a probability by up
  to e^0.25 and rows whose top scores nearly tie are off by far more than u against the exact
  reference (rows without a near tie are almost one-hot and come out nearly exact).

Counts: the three launches' counters (bytes) against simlib's closed form and trace and against the
hand formula below (docs: simlib/schedules/naive_tc.py): per (Q block, key block) tile Q r·d and
K c·d from HBM, (Bm + Bn)·d written to SRAM, Bm·d + W·Bn·d read; S and P N_q·N_k each way; the
softmax's 2·t/32 partial writes and 2·t·t/32 reads per row (4 B); per (Q block, key chunk) P r·c and
V c·d from HBM, Bm·Bk + Bk·d written to and Bm·Bk + W·Bk·d read from SRAM; O N_q·d.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kernel_helpers import ON_GPU, ceil_div, sim_only

from gpu_kernels.kernels.naive_tc import NaiveTcConfig, run_naive_tc
from gpu_kernels.reference import attention_reference, causal_mask, random_qkv, rel_error, repeat_kv
from gpu_kernels.tensor_core.dtypes import round_to
from simlib import Workload, count
from simlib.kernel_layout import tc_tile_problem
from simlib.units import UNIT_ROUNDOFF

KEYS = ("hbm_read_bytes", "hbm_write_bytes", "sram_read_bytes", "sram_write_bytes")


def dtype_pipeline(q, k, v, dtype, causal):
    """float64 attention that rounds S, P and O to `dtype` where naive_tc does."""
    k, v = repeat_kv(q, k, v)
    d = q.shape[-1]
    s = round_to(
        np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(d), dtype
    ).astype(np.float64)
    if causal:
        s = np.where(causal_mask(q.shape[2], k.shape[2]), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = round_to(e / e.sum(axis=-1, keepdims=True), dtype).astype(np.float64)
    return round_to(p @ v.astype(np.float64), dtype)


def hand_counts(b, h, nq, nk, d, cfg, t):
    bm, bc, w = cfg.block_rows, cfg.block_cols, cfg.warps
    hr = hw = sr = sw = 0
    for i in range(ceil_div(nq, bm)):
        r = min(bm, nq - i * bm)
        for j in range(ceil_div(nk, bc)):
            c = min(bc, nk - j * bc)
            hr += 2 * (r * d + c * d) + 2 * (r * c + c * d)  # scores: Q, K; pv: P, V
            hw += 2 * r * c  # S
            sw += 2 * ((bm + bc) * d + bm * bc + bc * d)
            sr += 2 * ((bm + w * bc) * d + bm * bc + w * bc * d)
        hw += 2 * r * d  # O
    hr += 2 * nq * nk  # softmax reads S
    hw += 2 * nq * nk  # ... and writes P
    sw += 4 * 2 * (t // 32) * nq
    sr += 4 * 2 * t * (t // 32) * nq
    return dict(zip(KEYS, (x * b * h for x in (hr, hw, sr, sw))))


def check_case(b, h, hkv, nk, nq, d, causal, cfg, dtype, seed, logit_scale=1.0, exact_tol=True):
    q, k, v = random_qkv(b, h, nk, d, seed=seed, kv_heads=hkv, query_len=nq, logit_scale=logit_scale)
    q, k, v = (round_to(x, dtype) for x in (q, k, v))
    res = run_naive_tc(q, k, v, dtype=dtype, config=cfg, causal=causal, count=True)
    assert np.all(np.isfinite(res.o))  # every poisoned element written
    u = UNIT_ROUNDOFF[dtype]
    assert rel_error(res.o, dtype_pipeline(q, k, v, dtype, causal)) < 2 * u
    exact = rel_error(res.o, attention_reference(q, k, v, causal=causal)[0])
    if exact_tol:
        assert exact < 4 * u
    nq_ = nk if nq is None else nq
    assert res.counts == hand_counts(b, h, nq_, nk, d, cfg, res.softmax_threads)
    wl = Workload(nk, d, b, h, dtype=dtype, kv_heads=hkv, causal=causal, query_len=nq)
    kw = dict(warps=cfg.warps, block_cols=cfg.block_cols, softmax_threads=res.softmax_threads)
    closed, traced = count("naive_tc", wl, **kw), count("naive_tc", wl, method="trace", **kw)
    assert closed.traffic == traced.traffic
    assert res.counts == {key: int(getattr(closed, key)) for key in KEYS}
    return res, exact


SIM_CASES = [
    # (B, H, H_kv, N_k, N_q, d, causal, warps, dtype)
    (1, 1, None, 37, None, 64, False, 1, "bf16"),  # ragged everything, odd N_k (padded row stride 40)
    (1, 2, 1, 70, 21, 64, True, 1, "fp16"),  # MQA, N_q < N_k, causal, two key chunks
    (1, 1, None, 19, None, 128, True, 2, "bf16"),  # d = 128, two warps
]


@sim_only
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,w,dtype", SIM_CASES)
def test_naive_tc_matches_references_and_counts(b, h, hkv, nk, nq, d, causal, w, dtype):
    check_case(b, h, hkv, nk, nq, d, causal, NaiveTcConfig(d, w, 64), dtype, seed=nk + d)


@sim_only
def test_naive_tc_large_logits_and_timing_build():
    q, k, v = (round_to(x, "bf16") for x in random_qkv(1, 1, 24, 64, seed=4, logit_scale=100.0))
    res, _ = check_case(
        1,
        1,
        None,
        24,
        None,
        64,
        False,
        NaiveTcConfig(64, 1, 64),
        "bf16",
        seed=4,
        logit_scale=100.0,
        exact_tol=False,
    )
    plain = run_naive_tc(q, k, v, dtype="bf16", config=NaiveTcConfig(64, 1, 64))
    assert plain.counts is None
    np.testing.assert_array_equal(plain.o, res.o)  # counting changes no arithmetic


@sim_only
def test_naive_tc_refusals():
    q, k, v = random_qkv(1, 1, 8, 32, seed=0)
    with pytest.raises(ValueError, match="head_dim=32"):
        run_naive_tc(q, k, v)
    q, k, v = random_qkv(1, 1, 8, 64, seed=0)
    with pytest.raises(ValueError, match="block_cols"):
        run_naive_tc(q, k, v, config=NaiveTcConfig(64, 4, 48))
    with pytest.raises(ValueError, match="softmax_threads"):
        run_naive_tc(q, k, v, config=NaiveTcConfig(64, 4, 64, softmax_threads=48))
    with pytest.raises(ValueError, match="dtype"):
        count("naive_tc", Workload(64, 64, dtype="fp32"))


def test_naive_tc_schedule_worked_number():
    r = count("naive_tc", Workload(4096, 64, dtype="bf16"))
    n, d = 4096, 64
    assert r.traffic.elements("HBM", "read") == 3 * 64 * n * d + 2 * n * n == 83_886_080
    assert r.traffic.elements("HBM", "write") == 2 * n * n + n * d
    assert r.to_dict()["softmax_threads"] == 256
    fa2 = count("fa2_tc", Workload(4096, 64, dtype="bf16"))
    assert r.hbm_bytes / fa2.hbm_bytes > 3  # the materialising pipeline moves > 3× the bytes at N = 4096


# --- GPU ------------------------------------------------------------------------------------------

GPU_CASES = [
    (1, 2, None, 1000, None, 64, False, "bf16"),
    (1, 2, None, 3001, None, 128, True, "fp16"),
    (1, 4, 2, 2048, 1500, 64, True, "bf16"),  # GQA + N_q < N_k
]


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,dtype", GPU_CASES)
def test_naive_tc_gpu(b, h, hkv, nk, nq, d, causal, dtype):
    check_case(b, h, hkv, nk, nq, d, causal, NaiveTcConfig(d), dtype, seed=nk + d)


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 600),
    nq=st.none() | st.integers(1, 600),
    w=st.integers(1, 8),
    bc=st.sampled_from([64, 128]),
    t=st.sampled_from([32, 64, 256, 1024]),
    d=st.sampled_from([64, 128]),
)
def test_naive_tc_closed_form_equals_trace_and_hand_formula(n, nq, w, bc, t, d):
    assume(tc_tile_problem("naive_tc", d, w, bc) is None)  # a config the kernel runs (48 KiB, even copies)
    wl = Workload(n, d, 2, 1, dtype="fp16", query_len=nq)
    kw = dict(warps=w, block_cols=bc, softmax_threads=t)
    closed, traced = count("naive_tc", wl, **kw), count("naive_tc", wl, method="trace", **kw)
    assert closed.traffic == traced.traffic
    hand = hand_counts(2, 1, wl.nq, n, d, NaiveTcConfig(d, w, bc), t)
    assert {key: int(getattr(closed, key)) for key in KEYS} == hand


def test_naive_tc_working_set_is_the_kernels_shared_memory():
    for d in (64, 128):
        r = count("naive_tc", Workload(4096, d, dtype="fp16"))
        assert r.to_dict()["onchip_sram_bytes"] == NaiveTcConfig(d).smem_bytes
