"""fa2_tc (gpu_kernels.kernels.fa2_tc) and its schedule (simlib fa2_tc).

Outputs: against the float64 reference computed from the *rounded* inputs (the values the kernel
really receives), so the error left is the kernel's own: P rounded to the dtype before the PV mma
(relative error ≤ u per probability), O rounded to the dtype on the way out (≤ u per element) and
fp32 accumulation (~1e-7). Both are at most u, the dtype's unit roundoff (bf16 2⁻⁸ = 3.9e-3, fp16
2⁻¹¹ = 4.9e-4), and average out over elements; the tolerance is 2u on ‖O − ref‖/‖ref‖ (the simulator
measured ≈ 0.5u). L is fp32 arithmetic on exactly representable inputs: 1e-5, as for the fp32 kernels.

Counts: the kernel's counters (bytes) against simlib's closed form and trace and against the hand
formula below, derived from the kernel's loop nest: per Q block, Q read from HBM (valid rows only),
written to SRAM whole (Br·d) and read once by ldmatrix (Br·d); per visited tile K, V read from HBM
(valid rows), written to SRAM whole (2·Bc·d), read by each of the W warps (2·W·Bc·d); O (2 B) and
L (4 B) written once per valid row. The visited tiles are found by brute force here.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kernel_helpers import ON_GPU, ceil_div, lse_error, sim_only

from gpu_kernels.kernels.fa2_tc import TcConfig, default_config, run_fa2_tc
from gpu_kernels.reference import attention_reference, random_qkv, rel_error
from gpu_kernels.tensor_core.dtypes import round_to
from simlib import Workload, count
from simlib.kernel_layout import tc_tile_problem
from simlib.schedules.fa2_tc import SCHEDULE
from simlib.traffic import Traffic
from simlib.units import UNIT_ROUNDOFF

KEYS = ("hbm_read_bytes", "hbm_write_bytes", "sram_read_bytes", "sram_write_bytes")
LSE_TOL = 1e-5


def o_tol(dtype):
    return 2 * UNIT_ROUNDOFF[dtype]


def visited(nq, nk, br, bc, causal):
    """[(Q block i, [K/V blocks j it visits])] by testing every tile against the bottom-right mask."""
    out = []
    for i in range(ceil_div(nq, br)):
        last = min((i + 1) * br, nq) - 1
        out.append((i, [j for j in range(ceil_div(nk, bc)) if not causal or j * bc <= last + nk - nq]))
    return out


def hand_counts(b, h, nq, nk, d, cfg, causal):
    br, bc, w = cfg.block_rows, cfg.block_cols, cfg.warps
    hr = hw = sr = sw = 0
    for i, js in visited(nq, nk, br, bc, causal):
        rows = min(br, nq - i * br)
        hr += rows * d * 2
        sw += br * d * 2
        if cfg.q_in_regs:
            sr += br * d * 2  # each warp's Q fragments, once
        for j in js:
            keys = min(bc, nk - j * bc)
            hr += 2 * keys * d * 2
            sw += 2 * bc * d * 2
            sr += 2 * w * bc * d * 2
            if not cfg.q_in_regs:
                sr += br * d * 2  # Q's fragments again for this tile
        hw += rows * d * 2 + rows * 4
    return dict(zip(KEYS, (x * b * h for x in (hr, hw, sr, sw))))


def simlib_counts(b, h, hkv, nq, nk, d, cfg, causal, dtype):
    wl = Workload(nk, d, b, h, dtype=dtype, kv_heads=hkv, causal=causal, query_len=nq)
    kw = dict(warps=cfg.warps, block_cols=cfg.block_cols, warp_rows=cfg.warp_rows, q_reload=not cfg.q_in_regs)
    closed, traced = count("fa2_tc", wl, **kw), count("fa2_tc", wl, method="trace", **kw)
    assert closed.traffic == traced.traffic
    return {key: int(getattr(closed, key)) for key in KEYS}


def check_case(b, h, hkv, nk, nq, d, causal, cfg, dtype, seed, logit_scale=1.0):
    q, k, v = random_qkv(b, h, nk, d, seed=seed, kv_heads=hkv, query_len=nq, logit_scale=logit_scale)
    ref_o, ref_lse = attention_reference(*(round_to(x, dtype) for x in (q, k, v)), causal=causal)
    plain = run_fa2_tc(q, k, v, dtype=dtype, config=cfg, causal=causal)
    counted = run_fa2_tc(q, k, v, dtype=dtype, config=cfg, causal=causal, count=True)
    for res in (plain, counted):
        assert np.all(np.isfinite(res.o)) and np.all(np.isfinite(res.lse))  # every poisoned value written
        assert rel_error(res.o, ref_o) < o_tol(dtype)
        assert lse_error(res.lse, ref_lse) < LSE_TOL
    np.testing.assert_array_equal(plain.o, counted.o)  # counting changes no arithmetic
    assert plain.counts is None
    nq_ = nk if nq is None else nq
    assert counted.counts == hand_counts(b, h, nq_, nk, d, cfg, causal)
    assert counted.counts == simlib_counts(b, h, hkv, nq_, nk, d, cfg, causal, dtype)
    return rel_error(counted.o, ref_o)


SIM_CASES = [
    # (B, H, H_kv, N_k, N_q, d, causal, warps, Bc, rows per warp, Q in registers): tiny blocks, the
    # simulator runs a thread per lane
    (1, 1, None, 40, None, 64, False, 1, 16, 16, True),  # ragged K/V and Q blocks
    (2, 1, None, 16, None, 64, False, 1, 16, 16, True),  # exact tiles, B = 2
    (1, 2, 1, 37, 21, 64, True, 2, 16, 16, True),  # MQA, N_q < N_k, causal, ragged
    (1, 1, None, 19, None, 128, True, 1, 32, 16, True),  # d = 128, N < Bc, causal
    (1, 4, 2, 9, None, 64, False, 1, 16, 16, True),  # GQA, one ragged tile
    (1, 1, None, 70, None, 64, True, 1, 16, 32, True),  # FA2's 32 rows per warp, causal, ragged
    (1, 2, 1, 45, 33, 128, False, 1, 32, 32, False),  # 32 rows per warp, Q re-read per tile, MQA
]


@sim_only
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,w,bc,wr,qregs", SIM_CASES)
def test_fa2_tc_matches_reference_and_counts(b, h, hkv, nk, nq, d, causal, w, bc, wr, qregs, dtype):
    cfg = TcConfig(d, w, bc, wr, qregs)
    check_case(b, h, hkv, nk, nq, d, causal, cfg, dtype, seed=nk + 7 * h + d)


@sim_only
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_fa2_tc_fully_masked_first_tiles_and_large_logits(dtype):
    """Br = 32, Bc = 16, causal, N = 40: Q block 0 (rows 0-31) visits K/V blocks 1 then 0, and block 1
    (keys 16-31) is fully masked for rows 0-15: their running max is still −∞ after it. Logits ×100
    make the softmax nearly one-hot (m jumps, rescale factors far below 1)."""
    assert visited(40, 40, 32, 16, True)[0] == (0, [0, 1])  # block 0 visits both; rows 0-15 reach key 15 only
    check_case(1, 1, None, 40, None, 64, True, TcConfig(64, 2, 16), dtype, seed=3, logit_scale=100.0)


@sim_only
def test_fa2_tc_refusals():
    q, k, v = random_qkv(1, 1, 8, 96, seed=0)
    with pytest.raises(ValueError, match="head_dim=96.*64 and 128"):
        run_fa2_tc(q, k, v)
    q, k, v = random_qkv(1, 1, 8, 64, seed=0)
    with pytest.raises(ValueError, match="dtype"):
        run_fa2_tc(q, k, v, dtype="fp32")
    with pytest.raises(ValueError, match="float32"):
        run_fa2_tc(q.astype(np.float64), k, v)
    with pytest.raises(ValueError, match="block_cols"):
        TcConfig(64, 4, 24).check()
    with pytest.raises(ValueError, match="shared memory"):
        TcConfig(128, 8, 512, 32).check()  # (256 + 2·512) rows of 256 B = 320 KiB > 227 KiB
    wl = Workload(64, 64, dtype="fp32")
    with pytest.raises(ValueError, match="dtype"):
        SCHEDULE.build(wl, None)


def test_fa2_tc_default_tiles_are_simlibs():
    for d in (64, 128):
        cfg = default_config(d)
        r = count("fa2_tc", Workload(4096, d, dtype="bf16")).to_dict()
        assert (r["warps"], r["warp_rows"], r["block_rows"], r["block_cols"], r["q_reload"]) == (
            cfg.warps,
            cfg.warp_rows,
            cfg.block_rows,
            cfg.block_cols,
            not cfg.q_in_regs,
        )
    # PERFORMANCE.md, version 4: FA2's 4 warps of 32 rows; Bc 64 / 32, Q re-read at d = 128
    assert (default_config(64).block_cols, default_config(128).block_cols) == (64, 48)
    assert (default_config(64).q_in_regs, default_config(128).q_in_regs) == (True, False)


def test_fa2_tc_schedule_worked_number():
    """The docstring's number: N = 4096, d = 64, Br = Bc = 64: SRAM reads N²·d/8 + N·d elements."""
    wl = Workload(4096, 64, dtype="bf16")
    m = SCHEDULE.build(wl, None, block_cols=64, warp_rows=16)
    t = SCHEDULE.closed_form(wl, m)
    assert t.elements("HBM", "read") == 4096 * 64 + 64 * 2 * 4096 * 64 == 33_816_576
    assert t.elements("SRAM", "read") == 4096**2 * 64 // 8 + 4096 * 64 == 134_479_872
    assert SCHEDULE.flops(wl, m) == 4 * 4096**2 * 64
    m = SCHEDULE.build(wl, None)  # the default, Br = 128: half the K/V re-reads, half the SRAM reads
    t = SCHEDULE.closed_form(wl, m)
    assert t.elements("HBM", "read") == 4096 * 64 + 32 * 2 * 4096 * 64 == 17_039_360
    assert t.elements("SRAM", "read") == 262_144 + 32 * 64 * 2 * 4 * 64 * 64 == 67_371_008


@pytest.mark.parametrize(
    "n,nq,br,bc", [(1000, 700, 64, 64), (513, None, 48, 48), (4096, 4096, 64, 16), (77, 5, 16, 32)]
)
def test_fa2_tc_causal_closed_form_equals_trace(n, nq, br, bc):
    for causal in (False, True):
        wl = Workload(n, 128, 2, 3, dtype="fp16", causal=causal, query_len=nq)
        m = SCHEDULE.build(wl, None, warps=br // 16, block_cols=bc, warp_rows=16)
        assert SCHEDULE.closed_form(wl, m) == Traffic.from_events(SCHEDULE.trace(wl, m))
        tiles = sum(len(js) for _, js in visited(wl.nq, n, br, bc, causal))
        assert SCHEDULE.flops(wl, m) == 4 * tiles * br * bc * 128


# --- GPU ------------------------------------------------------------------------------------------

GPU_CASES = [
    # (B, H, H_kv, N_k, N_q, d, causal, dtype): ragged N everywhere but one
    (1, 2, None, 1000, None, 64, False, "bf16"),
    (2, 2, None, 4096, None, 128, False, "fp16"),
    (1, 2, None, 3001, None, 128, True, "bf16"),
    (1, 4, 2, 3000, 2000, 64, True, "fp16"),  # GQA + N_q < N_k
    (1, 4, 1, 2048, 777, 128, False, "bf16"),  # MQA
]


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,dtype", GPU_CASES)
def test_fa2_tc_gpu(b, h, hkv, nk, nq, d, causal, dtype):
    check_case(b, h, hkv, nk, nq, d, causal, default_config(d), dtype, seed=nk + d)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
def test_fa2_tc_gpu_large_logits_masked_first_tiles():
    check_case(1, 2, None, 1111, None, 64, True, TcConfig(64, 4, 16), "bf16", seed=5, logit_scale=100.0)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
@pytest.mark.parametrize("bc", [48, 64])
def test_fa2_tc_gpu_dynamic_shared_memory(bc):
    """d = 128 with Bc = 48 / 64 and Q re-read: 56 / 64 KiB, beyond the 48 KiB of static shared memory."""
    cfg = TcConfig(128, 4, bc, 32, False).check()
    assert cfg.dynamic_smem
    check_case(1, 4, 2, 1500, 1100, 128, True, cfg, "bf16", seed=bc)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
def test_fa2_tc_gpu_ptx():
    """Timing builds: mma, ldmatrix and cp.async present, no float64, no local memory, no atomics."""
    from gpu_kernels.kernels.fa2_tc import ptx_of
    from gpu_kernels.ptx_check import summarize_ptx

    for d in (64, 128):
        for counting in (False, True):
            ptx = ptx_of(default_config(d), "bf16", counting, causal=True)
            s = summarize_ptx(ptx)
            assert s["f64"] == 0 and s["ld_local"] == 0 and s["st_local"] == 0, s
            assert (s["atom"] > 0) == counting
            assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx
            assert (
                "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx and "cp.async.cg.shared.global" in ptx
            )


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(1, 700),
    nq=st.none() | st.integers(1, 700),
    w=st.integers(1, 8),
    bc=st.sampled_from([16, 32, 48, 64, 128]),
    causal=st.booleans(),
    d=st.sampled_from([64, 128]),
    wr=st.sampled_from([16, 32]),
    qregs=st.booleans(),
)
def test_fa2_tc_closed_form_equals_trace_and_brute_force(n, nq, w, bc, causal, d, wr, qregs):
    assume(tc_tile_problem("fa2_tc", d, w, bc, wr) is None)  # a config the kernel runs (even copies)
    if causal and nq is not None and nq > n:
        nq = n
    wl = Workload(n, d, 1, 2, dtype="bf16", causal=causal, query_len=nq)
    m = SCHEDULE.build(wl, None, warps=w, block_cols=bc, warp_rows=wr, q_reload=not qregs)
    closed = SCHEDULE.closed_form(wl, m)
    assert closed == Traffic.from_events(SCHEDULE.trace(wl, m))
    hand = hand_counts(1, 2, wl.nq, n, d, TcConfig(d, w, bc, wr, qregs), causal)
    assert {
        f"{lv.lower()}_{op}_bytes": closed.bytes(2, lv, op) * 2
        for lv in ("HBM", "SRAM")
        for op in ("read", "write")
    } == hand


def test_fa2_tc_working_set_is_the_kernels_shared_memory():
    from simlib.schedule_protocol import DoesNotFit

    for d in (64, 128):
        cfg = default_config(d)
        r = count("fa2_tc", Workload(4096, d, dtype="bf16"), sram_bytes="96KiB")
        assert r.to_dict()["onchip_sram_bytes"] == cfg.smem_bytes  # Qs + Ks + Vs, as the kernel declares
        br = cfg.block_rows
        q_regs = br * d * 2 if cfg.q_in_regs else 0
        assert r.to_dict()["onchip_register_bytes"] == br * cfg.block_cols * 4 + br * d * 4 + q_regs
    with pytest.raises(DoesNotFit, match="81,920 B of SRAM"):
        count("fa2_tc", Workload(4096, 128, dtype="bf16"), sram_bytes="32KiB")
