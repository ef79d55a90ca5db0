"""Round 5 of the cost model's protocol: the numba naive and readable kernels' unpriced instructions at
the toggle-free IADD3 figure, and fa3_tc's causal grid heaviest first inside L2 sections of heads."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest

from simlib import Workload
from simlib.cost import IMPLEMENTATIONS
from simlib.cost.calibration import load_calibration
from simlib.cost.model import energy_terms
from simlib.cost.rates import MEASUREMENTS, load_cost_hardware
from simlib.cost.schedule import causal_cta_work


def _rows(name):
    with (MEASUREMENTS / name).open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_toggle_free_price_is_the_measured_chain_less_static_power():
    """(watts - static) / rate of the iadd3_zero row, worked by hand from the committed file, and below
    the toggling chain's figure of the same run (the mechanism: operand toggling is most of the price)."""
    hw = load_cost_hardware("h200")
    rows = {r["bench"]: r for r in _rows("cost_units_toggle_h200.csv")}
    zero = rows["iadd3_zero"]
    by_hand = (float(zero["watts"]) - hw.static_w) / float(zero["rate_per_s"]) * 1e12
    assert hw.price["toggle_free_instruction"] == pytest.approx(by_hand, rel=1e-9)
    toggling = rows["iadd3"]
    assert by_hand < 0.6 * (float(toggling["watts"]) - hw.static_w) / float(toggling["rate_per_s"]) * 1e12


def test_the_naive_matmuls_run_mostly_uniform_and_integer_instructions():
    """Nsight Compute's per-pipe counts (run cost5-units-20261203): in numba naive's matmuls the uniform
    pipe issues over 40 % of the warp instructions and FFMA under 5 %, the fast kernel none on uniform."""
    for r in _rows("energy_counters_pipes_numba_h200_kernels.csv"):
        total = float(r["smsp__inst_executed.sum"])
        uniform = float(r["smsp__inst_executed_pipe_uniform.sum"]) / total
        ffma = float(r["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]) / 32 / total
        if "matmul" in r["kernel"]:
            assert uniform > 0.4 and ffma < 0.05
        if r["variant"] == "numba_fast":
            assert uniform < 0.01


@pytest.mark.parametrize("impl", ["numba_naive", "numba_tiled"])
def test_the_numba_kernels_other_instructions_use_the_toggle_free_price(impl):
    hw = load_cost_hardware("h200")
    w = Workload(1536, 64, batch=3, heads=12, dtype="fp32")
    for launch in IMPLEMENTATIONS[impl].launches(w, load_calibration()):
        assert launch.work.other_price == "toggle_free_instruction"
        t = energy_terms(launch, hw, 1e-3)["other_instructions"]
        imad_work = replace(launch.work, other_price="other_instruction")
        imad = energy_terms(replace(launch, work=imad_work), hw, 1e-3)["other_instructions"]
        assert t == pytest.approx(imad * hw.price["toggle_free_instruction"] / hw.price["other_instruction"])
    fast = IMPLEMENTATIONS["numba_fast"].launches(w, load_calibration())[0]
    assert fast.work.other_price == "other_instruction"


def test_sections_order_brute_force():
    """The L2-sectioned heaviest-first order against a brute-force walk of the kernel's grid
    (S, Tr, ⌈BH/S⌉), x fastest, block i = Tr - 1 - blockIdx.y, head z·S + x, unused slots skipped."""
    w = Workload(1000, 64, batch=3, heads=5, dtype="bf16", causal=True)
    br, bc, s = 128, 64, 4
    bh, tr = 15, -(-1000 // 128)
    per_block = {}
    for i in range(tr):
        last = min(1000, (i + 1) * br) - 1
        per_block[i] = (min(1000, (i + 1) * br) - i * br) * min(1000, (last // bc + 1) * bc)
    walk = []
    for z in range(-(-bh // s)):
        for y in range(tr):
            for x in range(s):
                head = z * s + x
                if head < bh:
                    walk.append(float(per_block[tr - 1 - y]))
    assert causal_cta_work(w, br, bc, heavy_first=True, sections=s) == tuple(walk)
    # one section of all heads is fa2_tc version 5's order
    assert causal_cta_work(w, br, bc, heavy_first=True, sections=None) == causal_cta_work(
        w, br, bc, heavy_first=True, sections=bh
    )


def test_fa3_tc_sections_match_the_kernels_rule():
    """simlib's copy of the section rule against gpu_kernels' (the default plan's own section size: since
    round 6 the kernel's default ``section_rule="all64"``, every head one section at d = 64)."""
    from gpu_kernels.kernels.fa3_tc import Fa3TcPlan, default_config
    from simlib.cost.tensor_core import fa3_section_heads

    for b, h, n, d in [
        (4, 8, 2500, 64),
        (1, 16, 16384, 128),
        (3, 20, 1250, 64),
        (2, 9, 900, 128),
        (8, 16, 4096, 64),
    ]:
        w = Workload(n, d, batch=b, heads=h, dtype="bf16", causal=True)
        plan = Fa3TcPlan.of((b, h, h, n, n, d), default_config(d), "bf16", causal=True)
        assert fa3_section_heads(w) == plan.section_size
