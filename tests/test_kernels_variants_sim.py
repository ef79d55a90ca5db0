"""gpu_kernels variants on numba's CUDA simulator: causal masking, GQA/MQA, N_q ≠ N_k (issue 7).

Expected values come from independent derivations only: the float64 numpy reference (which repeats
K/V heads and masks with np.where) for outputs, and for counters simlib's count(...) on the same
Workload(kv_heads=, causal=, query_len=) plus closed forms written out below from
docs/COUNTING.md (the visited tiles enumerated here, not taken from simlib). Configs are tiny: the
simulator runs one Python thread per CUDA thread.
"""

import json
import math

import numpy as np
import pytest
from kernel_helpers import TOL, ceil_div, lse_error, run_cli, sim_only

from gpu_kernels import attention_reference, random_qkv, rel_error, run_naive, run_tiled
from gpu_kernels.counting import COUNT_KEYS
from simlib import Workload, count

pytestmark = sim_only


def simlib_counts(algorithm, b, h, nk, d, *, hkv=None, nq=None, causal=False, **kw):
    wl = Workload(
        batch=b, heads=h, seq_len=nk, head_dim=d, dtype="fp32", kv_heads=hkv, causal=causal, query_len=nq
    )
    r = count(algorithm, wl, **kw)
    return {k: int(getattr(r, k)) for k in COUNT_KEYS}


# --- closed forms from docs/COUNTING.md, with the causal tile walk done here -------------------


def visited_tiles(nq, nk, br, bc, causal):
    """[(r_i, [c_j of the visited K/V blocks])] per Q block: a tile is skipped when its first key
    j·Bc lies beyond the reach last_row + nk − nq of the Q block's last valid row."""
    out = []
    for q0 in range(0, nq, br):
        r = min(br, nq - q0)
        reach = q0 + r - 1 + nk - nq
        cols = [min(bc, nk - k0) for k0 in range(0, nk, bc) if not causal or k0 <= reach]
        out.append((r, cols))
    return out


def fa2_closed_form(b, h, nq, nk, d, br, bc, causal):
    """Per visited (i, j): K_j, V_j 2·c·d HBM reads and SRAM writes; r·c·(3d+2) SRAM reads; 2·r·c SRAM
    writes. Per Q block: Q_i r·d HBM reads and SRAM writes; O_i r·d and L_i r HBM writes. The numbers
    are per query head (B·H units): a K/V head shared by G query heads is loaded by each of them."""
    el = dict.fromkeys(COUNT_KEYS, 0)
    for r, cols in visited_tiles(nq, nk, br, bc, causal):
        kv = sum(cols)
        pairs = r * kv
        el["hbm_read_bytes"] += r * d + 2 * kv * d
        el["hbm_write_bytes"] += r * d + r
        el["sram_read_bytes"] += pairs * (3 * d + 2)
        el["sram_write_bytes"] += r * d + 2 * kv * d + 2 * pairs
    return {k: v * b * h * 4 for k, v in el.items()}


def naive_closed_form(b, h, nq, nk, d, t, ts):
    """Unchanged by causal (whole rows read and written); GQA only changes which K/V head is read."""
    el = {
        # S = Q Kᵀ (nq×nk): Q re-read per column tile, K per row tile; O = P V (nq×d) likewise
        "hbm_read_bytes": nq * d * ceil_div(nk, t)
        + nk * d * ceil_div(nq, t)
        + nq * nk  # softmax reads S
        + nq * nk * ceil_div(d, t)
        + nk * d * ceil_div(nq, t),
        "hbm_write_bytes": 2 * nq * nk + nq * d,
        "sram_read_bytes": 4 * nq * nk * d + nq * 2 * (3 * ts - 2),
        "sram_write_bytes": nq * d * ceil_div(nk, t)
        + 2 * nk * d * ceil_div(nq, t)
        + nq * nk * ceil_div(d, t)
        + nq * 2 * (2 * ts - 1),
    }
    return {k: v * b * h * 4 for k, v in el.items()}


# --- the reference itself ------------------------------------------------------------------------


def test_reference_causal_and_gqa_from_first_principles():
    """Causal row q of the reference = unmasked attention over keys 0..q+nk−nq; a GQA head = MHA
    attention against its K/V head (slicing, no repeat)."""
    q, k, v = random_qkv(1, 4, 9, 8, seed=5, kv_heads=2, query_len=6)
    o, lse = attention_reference(q, k, v, causal=True)
    for h in range(4):
        for row in range(6):
            keys = row + 9 - 6 + 1
            ro, rl = attention_reference(
                q[:, h : h + 1, row : row + 1],
                k[:, h // 2 : h // 2 + 1, :keys],
                v[:, h // 2 : h // 2 + 1, :keys],
            )
            np.testing.assert_allclose(o[0, h, row], ro[0, 0, 0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(lse[0, h, row], rl[0, 0, 0], rtol=1e-12)
    with pytest.raises(ValueError, match="N_q <= N_k"):
        attention_reference(*random_qkv(1, 1, 4, 8, query_len=5), causal=True)


def test_closed_form_tile_walk_worked_number():
    """simlib's visits.py worked number: N = 10, Br = Bc = 4, causal: 4, 8, 10 keys per Q block."""
    assert [sum(c) for _, c in visited_tiles(10, 10, 4, 4, True)] == [4, 8, 10]
    assert [sum(c) for _, c in visited_tiles(10, 10, 4, 4, False)] == [10, 10, 10]


# --- tiled (FlashAttention-2) --------------------------------------------------------------------

TILED_CONFIGS = [
    # (B, H, H_kv, N_k, N_q, d, Br, Bc, causal)
    (1, 1, None, 19, None, 16, 8, 3, True),  # Br > Bc, both ragged: whole Bc tiles masked for early rows
    (1, 1, None, 17, None, 16, 3, 5, True),  # Br < Bc, ragged
    (1, 1, None, 20, 7, 16, 4, 6, True),  # N_q < N_k: the mask is aligned bottom-right
    (1, 1, None, 13, 1, 16, None, None, True),  # one query row (a decode step): sees every key
    (1, 1, None, 1, None, 16, None, None, True),  # N = 1
    (1, 4, 2, 10, None, 16, 4, 4, False),  # GQA
    (1, 4, 1, 9, None, 16, 4, 3, False),  # MQA
    (2, 4, 2, 14, 9, 16, 4, 3, True),  # GQA + causal + N_q < N_k, B = 2
    (1, 2, 1, 11, 15, 16, 4, 4, False),  # N_q > N_k is fine without a mask
]


@pytest.mark.parametrize("b,h,hkv,nk,nq,d,br,bc,causal", TILED_CONFIGS)
def test_tiled_variant_matches_reference_and_model(b, h, hkv, nk, nq, d, br, bc, causal):
    q, k, v = random_qkv(b, h, nk, d, seed=300 + nk, kv_heads=hkv, query_len=nq)
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal)
    plain = run_tiled(q, k, v, block_rows=br, block_cols=bc, causal=causal)
    counted = run_tiled(q, k, v, block_rows=br, block_cols=bc, causal=causal, count=True)
    n_q = nk if nq is None else nq
    for res in (plain, counted):
        assert res.o.shape == (b, h, n_q, d) and res.lse.shape == (b, h, n_q)
        # outputs start as NaN: every element written, and nothing NaN from the mask
        assert rel_error(res.o, ref_o) < TOL
        assert lse_error(res.lse, ref_lse) < TOL
    np.testing.assert_array_equal(plain.o, counted.o)  # counting changes no arithmetic
    eff_br, eff_bc = counted.block_rows, counted.block_cols
    assert eff_br <= n_q and eff_bc <= nk
    expected = simlib_counts(
        "fa2", b, h, nk, d, hkv=hkv, nq=nq, causal=causal, block_rows=eff_br, block_cols=eff_bc
    )
    assert counted.counts == expected
    assert counted.counts == fa2_closed_form(b, h, n_q, nk, d, eff_br, eff_bc, causal)


def test_tiled_causal_skips_tiles():
    """The causal counters are below the unmasked ones by exactly the skipped tiles."""
    q, k, v = random_qkv(1, 1, 16, 16, seed=9)
    full = run_tiled(q, k, v, block_rows=4, block_cols=4, count=True).counts
    causal = run_tiled(q, k, v, block_rows=4, block_cols=4, count=True, causal=True).counts
    # 4×4 blocks of 4: 10 of 16 tiles visited; K/V rows loaded 4+8+12+16 = 40 instead of 64
    assert full["hbm_read_bytes"] - causal["hbm_read_bytes"] == 2 * (64 - 40) * 16 * 4
    assert full["sram_read_bytes"] - causal["sram_read_bytes"] == 6 * 16 * (3 * 16 + 2) * 4


def test_tiled_causal_large_logits_stay_finite():
    from gpu_kernels.reference import fp32_score_floor

    q, k, v = random_qkv(1, 2, 15, 16, seed=7, logit_scale=1e4, kv_heads=1)
    ref_o, ref_lse = attention_reference(q, k, v, causal=True)
    res = run_tiled(q, k, v, block_rows=8, block_cols=3, causal=True)
    assert np.all(np.isfinite(res.o)) and np.all(np.isfinite(res.lse))
    assert rel_error(res.o, ref_o) < max(TOL, 2 * fp32_score_floor(q, k, v, causal=True))
    assert lse_error(res.lse, ref_lse) < TOL


def test_poisoned_outputs_expose_unwritten_rows_causal_gqa():
    """The harness under the variants: leaving out the last Q block leaves NaN rows in every head."""
    from numba import cuda

    from gpu_kernels.kernels.tiled import plan_tiled

    q, k, v = random_qkv(1, 2, 12, 16, seed=3, kv_heads=1, query_len=10)
    plan = plan_tiled(q, k, v, block_rows=4, block_cols=4, causal=True)
    dq = cuda.to_device(q.reshape(2, 10, 16))
    dk, dv = (cuda.to_device(x.reshape(1, 12, 16)) for x in (k, v))
    do = cuda.to_device(np.full((2, 10, 16), np.nan, dtype=np.float32))
    dl = cuda.to_device(np.full((2, 10), np.nan, dtype=np.float32))
    counters = cuda.to_device(np.zeros(4, dtype=np.int64))
    assert plan.grid == (3, 2)
    plan.kernel()[(2, 2), plan.block](dq, dk, dv, do, dl, counters)
    o = do.copy_to_host()
    assert np.isnan(o[:, 8:]).all() and np.isfinite(o[:, :8]).all()
    ref_o = attention_reference(q, k, v, causal=True)[0]
    assert rel_error(o.reshape(1, 2, 10, 16), ref_o) == math.inf
    np.testing.assert_allclose(o.reshape(1, 2, 10, 16)[:, :, :8], ref_o[:, :, :8], rtol=1e-5, atol=1e-6)


# --- naive (Algorithm 0) -------------------------------------------------------------------------

NAIVE_CONFIGS = [
    # (B, H, H_kv, N_k, N_q, d, T, t, causal)
    (1, 1, None, 10, None, 16, 4, 4, True),  # causal, ragged matmul tiles
    (1, 1, None, 11, 5, 16, 3, 8, True),  # N_q < N_k, T does not divide d, N_k < 2t
    (1, 4, 2, 6, None, 16, 4, 4, False),  # GQA
    (1, 4, 1, 5, None, 16, 4, 4, False),  # MQA
    (1, 4, 2, 7, 4, 16, 4, 4, True),  # GQA + causal + N_q < N_k
]


@pytest.mark.parametrize("b,h,hkv,nk,nq,d,t,ts,causal", NAIVE_CONFIGS)
def test_naive_variant_matches_reference_and_model(b, h, hkv, nk, nq, d, t, ts, causal):
    q, k, v = random_qkv(b, h, nk, d, seed=400 + nk, kv_heads=hkv, query_len=nq)
    ref_o, _ = attention_reference(q, k, v, causal=causal)
    res = run_naive(q, k, v, matmul_tile=t, softmax_threads=ts, causal=causal, count=True)
    n_q = nk if nq is None else nq
    assert res.o.shape == (b, h, n_q, d)
    assert rel_error(res.o, ref_o) < TOL  # O, S and P start as NaN
    expected = simlib_counts(
        "naive", b, h, nk, d, hkv=hkv, nq=nq, causal=causal, matmul_tile=t, softmax_threads=ts
    )
    assert res.counts == expected
    assert res.counts == naive_closed_form(b, h, n_q, nk, d, t, ts)
    # causal changes no traffic: the softmax reads and writes whole rows
    assert res.counts_by_launch["softmax"]["hbm_read_bytes"] == b * h * n_q * nk * 4
    assert res.counts_by_launch["softmax"]["hbm_write_bytes"] == b * h * n_q * nk * 4


def test_naive_causal_timing_build_and_large_logits():
    from gpu_kernels.reference import fp32_score_floor

    q, k, v = random_qkv(1, 2, 9, 16, seed=11, logit_scale=1e4, kv_heads=1, query_len=7)
    ref_o, _ = attention_reference(q, k, v, causal=True)
    res = run_naive(q, k, v, matmul_tile=4, softmax_threads=4, causal=True)
    assert res.counts is None
    assert np.all(np.isfinite(res.o))
    assert rel_error(res.o, ref_o) < max(TOL, 2 * fp32_score_floor(q, k, v, causal=True))


# --- input checks --------------------------------------------------------------------------------


def _arr(*shape):
    return np.zeros(shape, dtype=np.float32)


@pytest.mark.parametrize("runner", [run_tiled, run_naive])
def test_variant_input_checks(runner):
    q = _arr(1, 4, 8, 16)
    with pytest.raises(ValueError, match="k and v must have the same shape"):
        runner(q, _arr(1, 2, 8, 16), _arr(1, 2, 9, 16))
    with pytest.raises(ValueError, match="k and v must have the same shape"):
        runner(q, _arr(1, 2, 8, 16), _arr(1, 1, 8, 16))
    with pytest.raises(ValueError, match="same batch and head_dim"):
        runner(q, _arr(2, 2, 8, 16), _arr(2, 2, 8, 16))
    with pytest.raises(ValueError, match="same batch and head_dim"):
        runner(q, _arr(1, 2, 8, 8), _arr(1, 2, 8, 8))
    with pytest.raises(ValueError, match="kv_heads=3 must divide heads=4"):
        runner(q, _arr(1, 3, 8, 16), _arr(1, 3, 8, 16))
    with pytest.raises(ValueError, match="kv_heads=8 must divide heads=4"):
        runner(q, _arr(1, 8, 8, 16), _arr(1, 8, 8, 16))
    with pytest.raises(ValueError, match="causal needs query_len <= seq_len"):
        runner(_arr(1, 4, 9, 16), _arr(1, 2, 8, 16), _arr(1, 2, 8, 16), causal=True)
    with pytest.raises(ValueError, match="causal must be True or False"):
        runner(q, _arr(1, 2, 8, 16), _arr(1, 2, 8, 16), causal="yes")
    with pytest.raises(ValueError, match="query_len"):
        runner(_arr(1, 4, 0, 16), _arr(1, 2, 8, 16), _arr(1, 2, 8, 16))


def test_strict_check_qkv_is_unchanged():
    """check_qkv (the fast kernel's check) still wants three equal shapes."""
    from gpu_kernels.checks import check_attention_inputs, check_qkv

    with pytest.raises(ValueError, match="q, k, v must have the same shape"):
        check_qkv(_arr(1, 4, 8, 16), _arr(1, 2, 8, 16), _arr(1, 2, 8, 16))
    plain = Workload(seq_len=8, head_dim=16, batch=1, heads=2, dtype="fp32")
    assert check_qkv(*[_arr(1, 2, 8, 16)] * 3) == plain
    assert check_attention_inputs(*[_arr(1, 2, 8, 16)] * 3) == plain
    s = check_attention_inputs(_arr(1, 4, 5, 16), _arr(1, 2, 8, 16), _arr(1, 2, 8, 16), causal=True)
    assert (s.kv_heads, s.query_len, s.nq, s.nk, s.group) == (2, 5, 5, 8, 2)


# --- CLI -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [
            "--kernel",
            "tiled",
            "--seq-len",
            "14",
            "--head-dim",
            "16",
            "--heads",
            "4",
            "--kv-heads",
            "2",
            "--query-len",
            "9",
            "--causal",
            "--block-rows",
            "4",
            "--block-cols",
            "3",
        ],
        [
            "--kernel",
            "naive",
            "--seq-len",
            "7",
            "--head-dim",
            "16",
            "--heads",
            "2",
            "--kv-heads",
            "1",
            "--causal",
        ],
    ],
)
def test_cli_run_variants(args):
    p = run_cli(["run", *args, "--count", "--simulate", "--json", "--seed", "1"])
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["ok"] is True and out["causal"] is True
    assert out["counts"] == out["predicted"] and all(v == 0 for v in out["diff"].values())
    assert all(e < TOL for e in out["rel_error"].values())
    if out["kernel"] == "tiled":
        assert (out["kv_heads"], out["query_len"]) == (2, 9)
        assert out["predicted"] == simlib_counts(
            "fa2", 1, 4, 14, 16, hkv=2, nq=9, causal=True, block_rows=4, block_cols=3
        )


@pytest.mark.parametrize(
    "args,names",
    [
        (["--heads", "4", "--kv-heads", "3"], "kv_heads=3 must divide heads=4"),
        (["--kv-heads", "2"], "kv_heads=2 must divide heads=1"),
        (["--kv-heads", "0"], "--kv-heads"),
        (["--query-len", "x"], "--query-len"),
        (["--query-len", "9", "--causal"], "causal needs query_len <= seq_len"),
    ],
)
def test_cli_bad_variant_input(args, names):
    p = run_cli(["run", "--kernel", "tiled", "--seq-len", "8", "--head-dim", "16", "--simulate", *args])
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert names in lines[0] and "Traceback" not in p.stderr
