"""Round 4 of the cost model's protocol: the eager mask add on ATen's legacy elementwise kernel, the fp16
block softmax's shared-memory condition, each causal CTA's fixed cost in the list schedule, and fa3_tc
(the wgmma kernel)."""

from __future__ import annotations

import pytest

from simlib import Workload
from simlib.cost import IMPLEMENTATIONS
from simlib.cost.calibration import load_calibration
from simlib.cost.model import launch_cost
from simlib.cost.rates import load_cost_hardware
from simlib.cost.schedule import makespan


def _launch(impl: str, w: Workload, name: str):
    return next(x for x in IMPLEMENTATIONS[impl].launches(w, load_calibration()) if x.name == name)


def test_the_broadcast_mask_add_is_the_legacy_elementwise_kernel():
    """A (1, 1, N, N) mask added to (B, H, N, N) scores is not contiguous: scalar loads (global path "ld")
    and SDPA math's where's instructions per element (the same template), 13x the vectorized add's."""
    w = Workload(2048, 64, batch=2, heads=8, dtype="bf16", causal=True)
    mask, scale = _launch("eager_bf16", w, "mask"), _launch("eager_bf16", w, "scale")
    assert mask.klass == "torch_ew_legacy" and mask.work.global_path == "ld"
    assert scale.klass == "torch_ew" and scale.work.global_path == "ld.v4"
    cal = load_calibration()
    per_el = {k: cal.instructions(k, {"el": 1.0}) for k in ("torch_ew_legacy", "torch_where", "torch_ew")}
    assert per_el["torch_ew_legacy"] == per_el["torch_where"] > 10 * per_el["torch_ew"]
    # the mask's bytes: S read and written (2 B each), the mask read once (L2-resident)
    el = 2 * 8 * 2048 * 2048
    assert mask.work.dram_bytes == 2 * el + 2 * 2048 * 2048 + 2 * el


@pytest.mark.parametrize(
    "n, klass",
    [
        (1024, "torch_softmax_h2f.warp"),
        (2048, "torch_softmax_h2f.block"),
        (1800, "torch_softmax_h2f.block"),
        (3300, "torch_softmax_h2f.block_global"),
        (4100, "torch_softmax_h2f.block_global"),
    ],
)
def test_fp16_block_softmax_keeps_the_row_in_shared_memory_only_at_n_a_multiple_of_8(n, klass):
    """SoftMax.cu: can_use_smem needs N % ILP == 0, ILP = 16 B / 2 B = 8; else three passes over global."""
    soft = _launch("eager_bf16", Workload(n, 64, dtype="fp16"), "softmax")
    assert soft.klass == klass
    el = n * n  # B = H = 1
    assert soft.work.l2_bytes == (3 if klass.endswith("global") else 1) * 2 * el + 4 * el


def test_a_fixed_cost_per_cta_is_paid_per_cta_in_the_list_schedule():
    """2 SMs, one slot each, works 3, 1, 1, 1 and a fixed 1 per CTA: SM 0 runs CTA 0 until 4; SM 1 runs
    CTA 1 (until 2) and CTA 2 (until 4); CTA 3 starts at 4 and ends at 6 (without it: 3)."""
    assert makespan([3, 1, 1, 1], 2, 1, False, fixed=1.0) == 6.0
    assert makespan([3, 1, 1, 1], 2, 1, False) == 3.0


def test_causal_block_time_counts_every_cta_and_matches_generations_for_equal_blocks():
    hw, cal = load_cost_hardware("h200"), load_calibration()
    causal = launch_cost(
        _launch("torch_flash", Workload(1400, 64, batch=7, heads=10, causal=True), "flash_fwd"), hw, cal
    )
    plain = launch_cost(_launch("torch_flash", Workload(1400, 64, batch=7, heads=10), "flash_fwd"), hw, cal)
    t_block = cal.block_latency(plain.launch.klass)
    assert plain.block_s == pytest.approx(-(-plain.waves // 1) * t_block)
    # 770 CTAs on 264 slots: light CTAs pile up on some slots, so more than the 3 generations' worth
    assert causal.launch.blocks == 770 and causal.block_s > 3 * t_block


def test_fa3_tc_launch_follows_its_default_builds():
    """G = 2 warpgroups (256 threads, Br = 128); d = 64: Bc = 64, 4 tiles, 98 registers (2 blocks per SM by
    registers: 98·256 = 25,088 of 65,536); d = 128: Bc = 128, 5 tiles, the ping-pong build's registers as
    ptxas reported them on the H200 (fa3_tc_v6_pingpong_registers.log, round 7; 1 block)."""
    import re

    from simlib.energy import MEASUREMENTS

    log = (MEASUREMENTS / "fa3_tc_v6_pingpong_registers.log").read_text()
    pp_regs = int(re.search(r"d=128 g2_bc128_ov_sw_pp causal=False: registers (\d+)", log).group(1))
    (a,) = IMPLEMENTATIONS["fa3_tc"].launches(
        Workload(4096, 64, batch=4, heads=16, dtype="bf16"), load_calibration()
    )
    (b,) = IMPLEMENTATIONS["fa3_tc"].launches(
        Workload(4096, 128, batch=4, heads=16, dtype="bf16"), load_calibration()
    )
    assert (a.threads, a.registers, a.shared_bytes, a.blocks) == (256, 98, (128 + 4 * 64) * 64 * 2, 64 * 32)
    assert (b.registers, b.shared_bytes) == (pp_regs, (128 + 5 * 128) * 128 * 2)
    assert a.work.tensor_unit == "wgmma" and a.work.tensor_flops == 4 * 4096**2 * 64 * 64
    # d = 128's pipeline: one thrown-away S per Q block, 2·Br·Bc·d FLOPs
    assert b.work.tensor_flops == 4 * 4096**2 * 128 * 64 + 64 * 32 * 2 * 128 * 128 * 128
    # instructions: 383 per warp per 64-column visit, 8 warps, (4096/64)·32·64 visits
    assert a.work.instructions == 383 * 8 * 64 * 32 * 64
    hw = load_cost_hardware("h200")
    c = launch_cost(a, hw, load_calibration())
    assert c.unit_s["tensor"] == pytest.approx(a.work.tensor_flops / hw.rate["wgmma_flops"])
    assert hw.rate["wgmma_flops"] > hw.rate["tensor_flops"]


def test_fa3_tc_causal_is_predicted_not_fitted():
    """Its eta and t_block come from the non-causal rows only; the causal rows are predictions."""
    from simlib.cost.check import committed

    t = committed()
    rows = t[t.implementation == "fa3_tc"]
    assert len(rows) == 8 and rows[rows.causal].in_fit.sum() == 0 and rows[~rows.causal].in_fit.all()
    with pytest.raises(ValueError, match="fa3_tc runs"):
        IMPLEMENTATIONS["fa3_tc"].launches(Workload(4096, 96, dtype="bf16"), load_calibration())
