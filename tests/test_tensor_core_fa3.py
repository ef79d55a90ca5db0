"""fa3_tc (gpu_kernels.kernels.fa3_tc), its wgmma helpers' simulator twins (tensor_core.wgmma_ops) and
its schedule (simlib fa3_tc).

Outputs: against the float64 reference of the rounded inputs, as fa2_tc's (its tests say why 2u on
O and 1e-5 on L). Counts: the kernel's counters (bytes) against simlib's closed form and trace and
against the hand formula below, derived from the kernel's loop nest: per Q block, Q read from HBM
(valid rows), written to SRAM whole (Br·d); per visited tile K, V read from HBM (valid rows),
written to SRAM whole (2·Bc·d); each of the G warpgroups' wgmma read its 64 rows of Q and all of
K (S = Q Kᵀ, both operands in SRAM) and all of V (O += P V): G·(64 + 2·Bc)·d; O (2 B) and L (4 B)
written once per valid row. The visited tiles are found by brute force (fa2_tc's tests' ``visited``).

The descriptor decoder is checked against a layout written out element by element, independently of
its formula: the chunk-major tile places element (r, c) at (8·rows + 8)·(c // 8) + 8r + c % 8.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_helpers import ON_GPU, lse_error, sim_only
from test_tensor_core_fa2 import visited

from gpu_kernels.kernels.fa3_tc import Fa3Config, default_config, run_fa3_tc
from gpu_kernels.reference import attention_reference, random_qkv, rel_error
from gpu_kernels.tensor_core import wgmma_ops
from gpu_kernels.tensor_core.dtypes import from_bits, round_to, to_bits
from simlib import Workload, count
from simlib.schedules.fa3_tc import SCHEDULE, tile_problem
from simlib.traffic import Traffic
from simlib.units import UNIT_ROUNDOFF

KEYS = ("hbm_read_bytes", "hbm_write_bytes", "sram_read_bytes", "sram_write_bytes")
LSE_TOL = 1e-5


def hand_counts(b, h, nq, nk, d, cfg, causal):
    br, bc, g = cfg.block_rows, cfg.block_cols, cfg.warpgroups
    hr = hw = sr = sw = 0
    for i, js in visited(nq, nk, br, bc, causal):
        rows = min(br, nq - i * br)
        hr += rows * d * 2
        sw += br * d * 2
        for j in js:
            keys = min(bc, nk - j * bc)
            hr += 2 * keys * d * 2
            sw += 2 * bc * d * 2
            sr += g * (64 + 2 * bc) * d * 2
        if cfg.overlap:
            sr += g * (64 + bc) * d * 2  # the pipeline's last S, computed and thrown away
        hw += rows * d * 2 + rows * 4
    return dict(zip(KEYS, (x * b * h for x in (hr, hw, sr, sw))))


def simlib_counts(b, h, hkv, nq, nk, d, cfg, causal, dtype):
    wl = Workload(nk, d, b, h, dtype=dtype, kv_heads=hkv, causal=causal, query_len=nq)
    kw = dict(warpgroups=cfg.warpgroups, block_cols=cfg.block_cols, overlap=cfg.overlap)
    closed, traced = count("fa3_tc", wl, **kw), count("fa3_tc", wl, method="trace", **kw)
    assert closed.traffic == traced.traffic
    return {key: int(getattr(closed, key)) for key in KEYS}


def check_case(b, h, hkv, nk, nq, d, causal, cfg, dtype, seed, logit_scale=1.0, plain_too=True):
    q, k, v = random_qkv(b, h, nk, d, seed=seed, kv_heads=hkv, query_len=nq, logit_scale=logit_scale)
    ref_o, ref_lse = attention_reference(*(round_to(x, dtype) for x in (q, k, v)), causal=causal)
    runs = [run_fa3_tc(q, k, v, dtype=dtype, config=cfg, causal=causal, count=True)]
    if plain_too:
        runs.append(run_fa3_tc(q, k, v, dtype=dtype, config=cfg, causal=causal))
    for res in runs:
        assert np.all(np.isfinite(res.o)) and np.all(np.isfinite(res.lse))  # every poisoned value written
        assert rel_error(res.o, ref_o) < 2 * UNIT_ROUNDOFF[dtype]
        assert lse_error(res.lse, ref_lse) < LSE_TOL
    if plain_too:
        np.testing.assert_array_equal(runs[0].o, runs[1].o)  # counting changes no arithmetic
    nq_ = nk if nq is None else nq
    assert runs[0].counts == hand_counts(b, h, nq_, nk, d, cfg, causal)
    assert runs[0].counts == simlib_counts(b, h, hkv, nq_, nk, d, cfg, causal, dtype)


SIM_CASES = [
    # (B, H, H_kv, N_k, N_q, d, causal, warpgroups, Bc, overlap, dtype): the simulator runs 128 threads
    # per group
    (1, 1, None, 70, 50, 64, True, 1, 32, False, "bf16"),  # ragged K/V and Q, causal, N_q < N_k
    (1, 2, 1, 40, None, 128, False, 1, 32, False, "fp16"),  # MQA, d = 128, two K/V blocks (one ragged)
    (1, 1, None, 100, None, 64, True, 2, 32, False, "bf16"),  # two warpgroups, ragged Q block, 4 K/V blocks
    (1, 1, None, 90, 70, 64, True, 1, 16, True, "bf16"),  # the pipeline: 6 visits (odd and even), ragged
    (1, 2, 1, 40, None, 128, False, 2, 32, True, "fp16"),  # the pipeline, two groups, two visits
    (1, 1, None, 20, None, 64, False, 1, 32, True, "bf16"),  # the pipeline with one visit only
    (
        1,
        2,
        1,
        96,
        80,
        64,
        True,
        1,
        32,
        False,
        "bf16",
    ),  # causal grid (B·H, Tr) heaviest first: 2 heads × 2 Q blocks
]
SWIZZLED_CASES = [
    (1, 1, None, 70, 50, 64, True, 1, 32, True, "bf16"),
    (1, 2, 1, 40, None, 128, False, 1, 32, False, "fp16"),
]


@sim_only
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,g,bc,ov,dtype", SIM_CASES)
def test_fa3_tc_matches_reference_and_counts(b, h, hkv, nk, nq, d, causal, g, bc, ov, dtype):
    cfg = Fa3Config(d, g, bc, overlap=ov)
    check_case(b, h, hkv, nk, nq, d, causal, cfg, dtype, seed=nk + 7 * h + d, plain_too=False)


@sim_only
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,g,bc,ov,dtype", SWIZZLED_CASES)
def test_fa3_tc_swizzled_matches_reference_and_counts(b, h, hkv, nk, nq, d, causal, g, bc, ov, dtype):
    cfg = Fa3Config(d, g, bc, overlap=ov, swizzle=True)
    check_case(b, h, hkv, nk, nq, d, causal, cfg, dtype, seed=nk + 3 * h + d, plain_too=False)


def test_fa3_tc_causal_grid_launches_heaviest_first():
    """Causal: grid (S, Tr, sections), x fastest, so the first blocks launched are the last Q block (the
    most K/V blocks) of the first section's S heads; non-causal keeps (Tr, B·H). S from the L2 rule: K and
    V of 2^k heads in 16 MiB (hand numbers: 2·N_k·d·2 bytes per head)."""
    import dataclasses

    from gpu_kernels.kernels.fa3_tc import Fa3TcPlan, section_heads

    cfg = Fa3Config(64, 2, 64)
    shape = (3, 5, 5, 1000, 1000, 64)  # Tr = 8 blocks of 128 rows; 256,000 B of K/V per head: 64 fit
    assert Fa3TcPlan.of(shape, cfg, "bf16", causal=True).grid == (15, 8, 1)
    assert Fa3TcPlan.of(shape, cfg, "bf16", causal=False).grid == (8, 15)
    plan = dataclasses.replace(Fa3TcPlan.of(shape, cfg, "bf16", causal=True), sections=4)
    assert plan.grid == (4, 8, 4)  # 16 head slots for 15 heads: one block column returns at once
    # 4096 keys: 1 MiB (d = 64) and 2 MiB (d = 128) per head; 3 MiB (d = 128, 6144 keys): 5 fit -> 4
    assert [section_heads(4096, d, 1, 64) for d in (64, 128)] == [16, 8]
    assert section_heads(6144, 128, 1, 64) == 4
    assert section_heads(6144, 128, 4, 64) == 16  # GQA: 4 query heads per K/V head
    assert section_heads(1 << 20, 128, 1, 64) == 1  # one head's K/V beyond the budget: 1
    assert section_heads(4096, 64, 1, 5) == 5


def test_fa3_tc_worked_numbers_run():
    """The module's docstring examples (section_heads' worked number) run as doctests."""
    import doctest

    from gpu_kernels.kernels import fa3_tc

    result = doctest.testmod(fa3_tc)
    assert result.attempted >= 1 and result.failed == 0


@sim_only
def test_fa3_tc_causal_ragged_last_section():
    """3 heads in sections of 2 (grid (2, 2, 2)): the empty head slot returns, every other block
    writes its rows; O, L against float64 and the counts against the hand count."""
    import dataclasses

    from gpu_kernels.kernels.fa3_tc import plan_fa3_tc

    b, h, n, d, dtype = 1, 3, 70, 64, "bf16"
    cfg = Fa3Config(d, 1, 32)
    q, k, v = random_qkv(b, h, n, d, seed=23)
    ref_o, ref_lse = attention_reference(*(round_to(x, dtype) for x in (q, k, v)), causal=True)
    plan = dataclasses.replace(
        plan_fa3_tc(q, k, v, dtype=dtype, config=cfg, counting=True, causal=True), sections=2
    )
    assert plan.grid == (2, 2, 2)
    r = plan.run(q, k, v)
    assert np.all(np.isfinite(r.o)) and np.all(np.isfinite(r.lse))  # every poisoned value written
    assert rel_error(r.o, ref_o) < 2 * UNIT_ROUNDOFF[dtype]
    assert lse_error(r.lse, ref_lse) < LSE_TOL
    assert r.counts == hand_counts(b, h, n, n, d, cfg, True)
    assert r.counts == simlib_counts(b, h, None, n, n, d, cfg, True, dtype)


PERSISTENT_CASES = [
    # (B, H, H_kv, N_k, N_q, d, causal, warpgroups, Bc, overlap, persistent, sections): the simulator's
    # persistent grid is min(items, persistent·2) blocks, so every block loops over several items
    (1, 3, None, 70, None, 64, True, 1, 32, False, 1, 2),  # 6 items on 2 blocks, a short last section
    (1, 2, None, 90, None, 64, False, 1, 16, True, 1, None),  # the pipeline, 4 items on 2 blocks
    (1, 4, 2, 70, 50, 64, True, 1, 32, True, 2, None),  # GQA, N_q < N_k, causal, pipeline, 4 on 4
    (2, 3, None, 40, None, 128, True, 1, 32, False, 2, 4),  # 6 heads, sections of 4; 6 items on 4 blocks
]


@sim_only
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,g,bc,ov,p,sections", PERSISTENT_CASES)
def test_fa3_tc_persistent_grid_matches_reference_and_counts(
    b, h, hkv, nk, nq, d, causal, g, bc, ov, p, sections
):
    """The persistent grid (items from the atomic work counter): every item's rows written (outputs
    poisoned), O and L against float64, the counts equal to the plain grid's hand count and simlib's
    (persistence moves no byte), twice in a row (the counter resets itself)."""
    import dataclasses

    from gpu_kernels.kernels.fa3_tc import plan_fa3_tc, work_counter

    dtype = "bf16"
    cfg = Fa3Config(d, g, bc, overlap=ov, persistent=p)
    q, k, v = random_qkv(b, h, nk, d, seed=nk + h + p, kv_heads=hkv, query_len=nq)
    ref_o, ref_lse = attention_reference(*(round_to(x, dtype) for x in (q, k, v)), causal=causal)
    plan = dataclasses.replace(
        plan_fa3_tc(q, k, v, dtype=dtype, config=cfg, counting=True, causal=causal), sections=sections
    )
    nq_ = nk if nq is None else nq
    items = -(-nq_ // cfg.block_rows) * b * h
    assert plan.grid == (min(items, 2 * p),)
    for _ in range(2):  # the work counter back at 0 after each launch: the second runs whole too
        r = plan.run(q, k, v)
        assert work_counter().copy_to_host()[0] == 0
        assert np.all(np.isfinite(r.o)) and np.all(np.isfinite(r.lse))
        assert rel_error(r.o, ref_o) < 2 * UNIT_ROUNDOFF[dtype]
        assert lse_error(r.lse, ref_lse) < LSE_TOL
    assert r.counts == hand_counts(b, h, nq_, nk, d, cfg, causal)
    assert r.counts == simlib_counts(b, h, hkv, nq_, nk, d, cfg, causal, dtype)


PINGPONG_CASES = [
    # (B, H, H_kv, N_k, N_q, d, causal, Bc, overlap, swizzle, persistent): two warpgroups (Br = 128)
    # (sized for the simulator, 256 threads a block: the five cases first written took over 20 minutes on CI's
    # two cores; the MQA N_q < N_k path and d = 128 persistence are the other fa3 tests' cases)
    (1, 1, None, 100, None, 64, True, 32, False, False, 0),  # 4 K/V blocks, ragged Q block, causal
    (1, 2, 1, 40, None, 128, False, 32, True, False, 0),  # MQA, the pipeline: 1 + 2 turns per item
    (1, 2, None, 130, None, 64, True, 32, True, True, 1),  # persistent: 4 items, 2 blocks, swizzle
]


@sim_only
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,bc,ov,sw,p", PINGPONG_CASES)
def test_fa3_tc_pingpong_matches_reference_counts_and_barrier_phases(
    b, h, hkv, nk, nq, d, causal, bc, ov, sw, p
):
    """Ping-pong of the two warpgroups (``Fa3Config.pingpong``): O and L against float64, the counts
    equal to the hand count and simlib's (the order moves no byte), and the order barriers' tally
    (the simulator twins count every wait and arrival): per block, every barrier reached by as many
    arriving threads as waiting ones (a phase = 128 waiters of one group + 128 arrivals of the other,
    so none is left incomplete, the hardware's condition for not hanging), and in all 128 threads per
    turn: a group takes 2 turns per visited K/V block without the pipeline (S, then P V), 1 + visits
    with it (the first S, then S(j+1) with P V(j)); group 0 waits once more per item (group 1's
    opening pass, taken back at the item's end)."""
    from gpu_kernels.tensor_core.wgmma_ops import ORDER_TALLY

    dtype = "bf16"
    cfg = Fa3Config(d, 2, bc, overlap=ov, swizzle=sw, persistent=p, pingpong=True).check()
    assert cfg.name.endswith("_pp" + (f"_p{p}" if p else ""))
    q, k, v = random_qkv(b, h, nk, d, seed=nk + h + 5 * p, kv_heads=hkv, query_len=nq)
    ref_o, ref_lse = attention_reference(*(round_to(x, dtype) for x in (q, k, v)), causal=causal)
    ORDER_TALLY.clear()
    r = run_fa3_tc(q, k, v, dtype=dtype, config=cfg, causal=causal, count=True)
    tally = dict(ORDER_TALLY)
    assert np.all(np.isfinite(r.o)) and np.all(np.isfinite(r.lse))
    assert rel_error(r.o, ref_o) < 2 * UNIT_ROUNDOFF[dtype]
    assert lse_error(r.lse, ref_lse) < LSE_TOL
    nq_ = nk if nq is None else nq
    assert r.counts == hand_counts(b, h, nq_, nk, d, cfg, causal)
    assert r.counts == simlib_counts(b, h, hkv, nq_, nk, d, cfg, causal, dtype)
    blocks = {key[0] for key in tally}
    for blk in blocks:
        for bar in (1, 2):
            assert tally.get((blk, bar, "sync"), 0) == tally.get((blk, bar, "arrive"), 0), (blk, bar)
    assert {key[1] for key in tally} == {1, 2}
    turns = [2 * len(js) if not ov else 1 + len(js) for _, js in visited(nq_, nk, 128, bc, causal)] * (b * h)
    total = {
        (bar, what): sum(n for key, n in tally.items() if key[1:] == (bar, what))
        for bar in (1, 2)
        for what in ("sync", "arrive")
    }
    assert total[1, "sync"] == 128 * (sum(turns) + len(turns))
    assert total[2, "sync"] == 128 * sum(turns)
    if p:
        from gpu_kernels.kernels.fa3_tc import work_counter

        assert len(blocks) <= 2 * p and work_counter().copy_to_host()[0] == 0


def test_fa3_tc_pingpong_default_matches_simlib_schedule():
    """The ping-pong default (d = 128 only, run fa3-v6-pingpong-20261203) is the same in the kernel and in
    simlib's schedule, off wherever the groups are not two; the schedule refuses it with one group."""
    for d, on in ((64, False), (128, True)):
        wl = Workload(1024, d, 1, 2, dtype="bf16")
        assert default_config(d).pingpong is on
        assert SCHEDULE.build(wl, None).pingpong is on
        assert SCHEDULE.build(wl, None, warpgroups=1).pingpong is False
    assert "pingpong needs warpgroups=2" in tile_problem(128, 1, 64, True, True, True)


def test_fa3_tc_pingpong_needs_two_warpgroups():
    for g in (1, 3):
        with pytest.raises(ValueError, match="pingpong needs warpgroups=2"):
            Fa3Config(64, g, 96 if g == 3 else 64, pingpong=True).check()
    with pytest.raises(ValueError, match="pingpong must be True or False"):
        Fa3Config(64, 2, 64, pingpong=1).check()


def test_fa3_tc_section_rules():
    """The section rules: "l2", FA3's 16 MiB rule at both head dims; "all64" (the default), every head
    at once at d = 64 only."""
    from gpu_kernels.kernels.fa3_tc import Fa3TcPlan

    for d, l2, all64 in ((64, 16, 64), (128, 8, 8)):  # 4096 keys: 1 MiB / 2 MiB of K/V per head
        cfg = default_config(d)
        plan = Fa3TcPlan.of((4, 16, 16, 4096, 4096, d), cfg, "bf16", causal=True)
        assert plan.section_size == all64
        assert dataclasses_replace(plan, section_rule="l2").section_size == l2
        assert plan.grid == (all64, 32, 64 // all64)
    with pytest.raises(ValueError, match="section_rule"):
        dataclasses_replace(plan, section_rule="x").section_size  # noqa: B018


def dataclasses_replace(plan, **kw):
    import dataclasses

    return dataclasses.replace(plan, **kw)


@sim_only
def test_fa3_tc_fully_masked_first_tile_and_large_logits():
    """Br = 64, Bc = 32, causal, N = 70: Q block 0 visits K/V blocks 1 then 0 and block 1 (keys 32-63)
    is fully masked for rows 0-31 (running max still −∞ after it); logits ×100."""
    assert visited(70, 70, 64, 32, True)[0] == (0, [0, 1])
    check_case(
        1,
        1,
        None,
        70,
        None,
        64,
        True,
        Fa3Config(64, 1, 32),
        "bf16",
        seed=3,
        logit_scale=100.0,
        plain_too=False,
    )


def _chunk_major(tile):
    """A (rows, cols) array laid out chunk-major, element by element (the test's own placement: each
    8-column chunk column is rows × 8 elements and 8 of padding)."""
    rows, cols = tile.shape
    out = np.zeros((rows + 1) * cols, dtype=tile.dtype)
    for r in range(rows):
        for c in range(cols):
            out[(8 * rows + 8) * (c // 8) + 8 * r + c % 8] = tile[r, c]
    return out


@pytest.mark.parametrize("rows,cols", [(64, 64), (32, 128)])
def test_descriptor_decoder_reads_the_kernels_tiles(rows, cols):
    """K-major (Q, K: rows are M or N, columns k) and MN-major (V: rows are k, columns N) operands of
    every k-step, decoded from the descriptors the kernel builds, are the tile's own blocks."""
    rng = np.random.default_rng(rows + cols)
    tile = rng.standard_normal((rows, cols)).astype(np.float32)
    bits = np.concatenate([np.zeros(24, np.uint16), _chunk_major(to_bits(tile, "bf16"))])  # at element 24
    vals = from_bits(to_bits(tile, "bf16"), "bf16").astype(np.float64)
    hi_k = wgmma_ops.layout_bits(128, 16 * rows + 16, False)
    hi_v = wgmma_ops.layout_bits(16 * rows + 16, 128, True)
    for kk in range(cols // 16):
        x = wgmma_ops.operand(
            bits, wgmma_ops.descriptor(2 * (24 + kk * (16 * rows + 16)), hi_k), rows, False, "bf16"
        )
        np.testing.assert_array_equal(x, vals[:, 16 * kk : 16 * kk + 16])
    for kk in range(rows // 16):
        x = wgmma_ops.operand(bits, wgmma_ops.descriptor(2 * (24 + kk * 128), hi_v), cols, True, "bf16")
        np.testing.assert_array_equal(x, vals[16 * kk : 16 * kk + 16, :].T)


@pytest.mark.parametrize("rows,cols", [(64, 64), (32, 128)])
def test_swizzled_descriptor_decoder_reads_the_kernels_tiles(rows, cols):
    """The same with the 128-byte swizzle: the tile as 64-column halves of rows × 128 B, 16-byte chunk
    c of row r at chunk c ^ (r mod 8) of its row (placed here element by element), the descriptors the
    kernel builds for it (K-major Q, K: SBO 1024, a k-step 32 B, the second half 128·rows B on; MN-major
    V: SBO 1024, LBO 128·rows B)."""
    rng = np.random.default_rng(rows * cols)
    tile = rng.standard_normal((rows, cols)).astype(np.float32)
    b = to_bits(tile, "bf16")
    bits = np.zeros(512 + rows * cols, np.uint16)  # the tile one 1024-byte atom in
    for r in range(rows):
        for c in range(cols):
            bits[512 + (c // 64) * rows * 64 + r * 64 + (((c % 64) // 8) ^ (r % 8)) * 8 + c % 8] = b[r, c]
    vals = from_bits(b, "bf16").astype(np.float64)
    hi_k = wgmma_ops.swizzle128_bits(16, 1024)
    hi_v = wgmma_ops.swizzle128_bits(128 * rows, 1024)
    for kk in range(cols // 16):
        at = 2 * (512 + (kk % 4) * 16 + (kk // 4) * 64 * rows)
        x = wgmma_ops.operand(bits, wgmma_ops.descriptor(at, hi_k), rows, False, "bf16")
        np.testing.assert_array_equal(x, vals[:, 16 * kk : 16 * kk + 16])
    for kk in range(rows // 16):
        x = wgmma_ops.operand(bits, wgmma_ops.descriptor(2 * (512 + kk * 1024), hi_v), cols, True, "bf16")
        np.testing.assert_array_equal(x, vals[16 * kk : 16 * kk + 16, :].T)


def test_wgmma_asm_and_descriptor_refusals():
    text, constraints = wgmma_ops.mma_asm("fp16", 16, True)
    assert "m64n16k16.f32.f16.f16 {$0,$1,$2,$3,$4,$5,$6,$7}, {$16,$17,$18,$19}, $20, p, 1, 1, 1" in text
    assert constraints.startswith("=f," * 8 + "0,1,2,3,4,5,6,7,r,r,r,r,l,r")
    with pytest.raises(ValueError, match="n_ss"):
        wgmma_ops.wgmma_ops("bf16", True, 12, 64)
    with pytest.raises(ValueError, match="sbo"):
        wgmma_ops.descriptor_bits(128, 24)


@sim_only
def test_fa3_tc_refusals():
    q, k, v = random_qkv(1, 1, 8, 96, seed=0)
    with pytest.raises(ValueError, match="head_dim=96.*64 and 128"):
        run_fa3_tc(q, k, v)
    with pytest.raises(ValueError, match="warpgroups"):
        Fa3Config(64, 4).check()
    with pytest.raises(ValueError, match="block_cols"):
        Fa3Config(64, 1, 24).check()
    with pytest.raises(ValueError, match="shared memory"):
        Fa3Config(128, 2, 256).check()  # (128 + 4·256) rows of 256 B = 288 KiB > 227 KiB
    with pytest.raises(ValueError, match="dtype"):
        SCHEDULE.build(Workload(64, 64, dtype="fp32"), None)


def test_schedule_refuses_what_the_kernel_refuses():
    for d in (64, 128):
        for g in (1, 2, 3, 4):
            for bc in (8, 16, 24, 32, 64, 96, 128, 160, 192, 256, 272):
                for ov in (False, True):
                    for sw in (False, True):
                        try:
                            Fa3Config(d, g, bc, overlap=ov, swizzle=sw).check()
                            kernel_ok = True
                        except ValueError:
                            kernel_ok = False
                        assert (tile_problem(d, g, bc, ov, sw) is None) == kernel_ok, (d, g, bc, ov, sw)


def test_fa3_tc_defaults_and_worked_number():
    for d in (64, 128):
        cfg = default_config(d)
        r = count("fa3_tc", Workload(4096, d, dtype="bf16")).to_dict()
        got = (
            r["warpgroups"],
            r["block_rows"],
            r["block_cols"],
            r["overlap"],
            r["swizzle"],
            r["onchip_sram_bytes"],
        )
        assert got == (
            cfg.warpgroups,
            cfg.block_rows,
            cfg.block_cols,
            cfg.overlap,
            cfg.swizzle,
            cfg.smem_bytes,
        )
    # run 3's best (PERFORMANCE.md): G = 2 and the swizzle; d = 64 Bc = 64 alone, d = 128 Bc = 128 pipelined
    assert [(c.warpgroups, c.block_cols, c.overlap, c.swizzle) for c in map(default_config, (64, 128))] == [
        (2, 64, False, True),
        (2, 128, True, True),
    ]
    wl = Workload(4096, 64, dtype="bf16")
    t = SCHEDULE.closed_form(wl, SCHEDULE.build(wl, None, warpgroups=1, overlap=False, swizzle=False))
    assert t.elements("SRAM", "read") == 64 * 64 * (64 + 2 * 64) * 64 == 50_331_648  # the docstring's
    one = count("fa3_tc", wl, warpgroups=1, overlap=False, swizzle=False).to_dict()
    assert one["onchip_sram_bytes"] == 41_600 == Fa3Config(64, 1, 64).smem_bytes  # the working set's
    swz = count("fa3_tc", wl, warpgroups=1, overlap=False, swizzle=True).to_dict()
    assert swz["onchip_sram_bytes"] == 40_960 == Fa3Config(64, 1, 64, swizzle=True).smem_bytes


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 700),
    nq=st.none() | st.integers(1, 700),
    g=st.sampled_from([1, 2]),
    bc=st.sampled_from([16, 32, 48, 64, 128]),
    causal=st.booleans(),
    d=st.sampled_from([64, 128]),
    ov=st.booleans(),
)
def test_fa3_tc_closed_form_equals_trace_and_hand_counts(n, nq, g, bc, causal, d, ov):
    if tile_problem(d, g, bc, ov, True):
        return
    if causal and nq is not None and nq > n:
        nq = n
    wl = Workload(n, d, 1, 2, dtype="bf16", causal=causal, query_len=nq)
    m = SCHEDULE.build(wl, None, warpgroups=g, block_cols=bc, overlap=ov)
    closed = SCHEDULE.closed_form(wl, m)
    assert closed == Traffic.from_events(SCHEDULE.trace(wl, m))
    hand = hand_counts(1, 2, wl.nq, n, d, Fa3Config(d, g, bc, overlap=ov), causal)
    got = count("fa3_tc", wl, warpgroups=g, block_cols=bc, overlap=ov)
    assert {key: int(getattr(got, key)) for key in KEYS} == hand
    tiles = sum(len(js) for _, js in visited(wl.nq, n, g * 64, bc, causal))
    extra = 2 * m.tr * g * 64 * bc * d if ov else 0
    assert SCHEDULE.flops(wl, m) == 4 * tiles * g * 64 * bc * d + extra


# --- GPU ------------------------------------------------------------------------------------------

GPU_CASES = [
    # (B, H, H_kv, N_k, N_q, d, causal, warpgroups, Bc, overlap, dtype): ragged N everywhere but one
    (1, 2, None, 1000, None, 64, False, 1, 64, False, "bf16"),
    (2, 2, None, 4096, None, 128, False, 1, 64, False, "fp16"),
    (1, 2, None, 3001, None, 128, True, 2, 64, False, "bf16"),
    (1, 4, 2, 3000, 2000, 64, True, 2, 128, False, "fp16"),  # GQA + N_q < N_k
    (1, 4, 1, 2048, 777, 128, False, 1, 128, False, "bf16"),  # MQA
    (1, 2, None, 3001, None, 128, True, 2, 64, True, "bf16"),  # the pipeline
    (1, 4, 2, 3000, 2000, 64, True, 2, 64, True, "fp16"),
    (2, 2, None, 1000, None, 64, False, 1, 128, True, "bf16"),
]
GPU_SWIZZLED = [
    (1, 2, None, 3001, None, 128, True, 2, 64, True, "bf16"),
    (1, 4, 2, 3000, 2000, 64, False, 2, 64, True, "fp16"),
]


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
@pytest.mark.parametrize("d,causal", [(64, True), (128, True), (128, False)])
def test_fa3_tc_gpu_persistent(d, causal):
    """The default build on a persistent grid (2 blocks per SM at d = 64, 1 at d = 128): 12 heads of
    2049 keys (204 items on 132 or 264 blocks, a ragged last Q block), GQA, against float64 and the counts."""
    base = default_config(d)
    cfg = Fa3Config(
        d, base.warpgroups, base.block_cols, overlap=base.overlap, swizzle=True, persistent=1 + (d == 64)
    ).check()
    check_case(1, 12, 4, 2049, None, d, causal, cfg, "bf16", seed=d + causal)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
@pytest.mark.parametrize("d,causal", [(64, True), (64, False), (128, True)])
def test_fa3_tc_gpu_pingpong(d, causal):
    """The default build with the ping-pong order (named barriers 1 and 2, 256 threads): 6 heads of
    3001 keys, GQA, a ragged last Q block, against float64 and the counts (a barrier phase left
    incomplete would hang the launch, not pass); its timing build's PTX waits and arrives on them
    and keeps no local memory."""
    import dataclasses

    from gpu_kernels.kernels.fa3_tc import ptx_of
    from gpu_kernels.ptx_check import summarize_ptx

    cfg = dataclasses.replace(default_config(d), pingpong=True).check()
    check_case(1, 6, 2, 3001, None, d, causal, cfg, "bf16", seed=d + 3 * causal)
    ptx = ptx_of(cfg, "bf16", False, causal=causal)
    summary = summarize_ptx(ptx)
    assert summary["ld_local"] == 0 and summary["st_local"] == 0, summary
    assert "bar.sync" in ptx and "bar.arrive" in ptx


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,g,bc,ov,dtype", GPU_SWIZZLED)
def test_fa3_tc_gpu_swizzled(b, h, hkv, nk, nq, d, causal, g, bc, ov, dtype):
    cfg = Fa3Config(d, g, bc, overlap=ov, swizzle=True).check()
    check_case(b, h, hkv, nk, nq, d, causal, cfg, dtype, seed=nk + d + 1)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
@pytest.mark.parametrize("b,h,hkv,nk,nq,d,causal,g,bc,ov,dtype", GPU_CASES)
def test_fa3_tc_gpu(b, h, hkv, nk, nq, d, causal, g, bc, ov, dtype):
    check_case(b, h, hkv, nk, nq, d, causal, Fa3Config(d, g, bc, overlap=ov).check(), dtype, seed=nk + d)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
def test_fa3_tc_gpu_large_logits_masked_first_tiles():
    check_case(1, 2, None, 1111, None, 64, True, Fa3Config(64, 1, 32), "bf16", seed=5, logit_scale=100.0)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs FLASHIO_GPU=1 and a CUDA GPU")
def test_fa3_tc_gpu_ptx():
    """Timing builds: wgmma (SS and RS with the transpose flag), cp.async and the proxy fence present,
    no float64, no local memory, no atomics."""
    from gpu_kernels.kernels.fa3_tc import ptx_of
    from gpu_kernels.ptx_check import summarize_ptx

    for d in (64, 128):
        for counting in (False, True):
            ptx = ptx_of(default_config(d), "bf16", counting, causal=True)
            s = summarize_ptx(ptx)
            assert s["f64"] == 0 and s["ld_local"] == 0 and s["st_local"] == 0, s
            assert (s["atom"] > 0) == counting
            assert ptx.count("wgmma.mma_async.sync.aligned") >= d // 16 + 64 // 16
            assert "fence.proxy.async.shared::cta" in ptx and "cp.async.cg.shared.global" in ptx
            assert "p, 1, 1, 1;" in ptx and "p, 1, 1, 0, 0;" in ptx
