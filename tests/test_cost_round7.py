"""Round 7 of the cost model (docs/COST.md): the host's time per call from the run's own probes, the numba
kernels' shared loads by access kind, the fp16 block softmax's cost per row."""

from __future__ import annotations

import pandas as pd
import pytest

from simlib import Workload
from simlib.cost.calibration import load_calibration
from simlib.cost.check import STATIC_W, with_host_of_run
from simlib.cost.implementations import IMPLEMENTATIONS
from simlib.cost.numba_fp32 import matmul_shared_words, tiled_shared_words


def _distinct_words_per_warp(addresses_by_thread: list[list[int]]) -> float:
    """Brute force: threads in launch order, 32 to a warp; per instruction slot the distinct addresses of a
    warp's lanes, averaged over every (warp, slot)."""
    total, count = 0, 0
    for w in range(0, len(addresses_by_thread), 32):
        lanes = addresses_by_thread[w : w + 32]
        for slot in range(len(lanes[0])):
            total += len({lane[slot] for lane in lanes})
            count += 1
    return total / count


def test_the_naive_matmuls_words_per_shared_instruction_equal_a_walk_of_its_accesses():
    """gpu_kernels/kernels/naive.py with tile T: thread (ty, tx), tx fastest; per k chunk one As and one Bs
    store (As[ty, tx], Bs[ty, tx] with the padded row T + 1), then per x the loads As[ty, x], Bs[x, tx]."""
    for t in (8, 16, 32):
        threads = []
        for ty in range(t):
            for tx in range(t):
                acc = [("As", ty * t + tx), ("Bs", ty * (t + 1) + tx)]
                for x in range(t):
                    acc += [("As", ty * t + x), ("Bs", x * (t + 1) + tx)]
                threads.append(acc)
        assert matmul_shared_words(t) == pytest.approx(_distinct_words_per_warp(threads))


def test_the_readable_kernels_words_per_shared_instruction_equal_a_walk_of_its_accesses():
    """gpu_kernels/kernels/tiled.py, one thread per query row (Br threads), one key tile of Bc keys: the K/V
    fill (each thread 2 stores per Br elements), then per key cc: d loads Qs[tid, x] and Ks[cc, x], the S
    store, then per key the exp's load and store of S, then per key the load of S and d loads of Vs[cc, x]."""
    d, br, bc = 8, 32, 4
    threads = []
    for tid in range(br):
        acc = []
        for i in range(tid, bc * d, br):  # the fill: Ks and Vs, one element each per step
            acc += [("Ks", i), ("Vs", i)]
        for cc in range(bc):
            for x in range(d):
                acc += [("Qs", tid * (d + 4) + x), ("Ks", cc * d + x)]
            acc.append(("Ss", tid * (bc + 1) + cc))
        for cc in range(bc):
            acc += [("Ss", tid * (bc + 1) + cc)] * 2
        for cc in range(bc):
            acc.append(("Ss", tid * (bc + 1) + cc))
            acc += [("Vs", cc * d + x) for x in range(d)]
        threads.append(acc)
    # the fill's 2·Bc·d/Br stores per thread per tile are 2·d/Br per key: the closed form's term
    assert tiled_shared_words(d, br) == pytest.approx(_distinct_words_per_warp(threads))


def test_the_host_rule_takes_the_runs_probe_and_pays_static_power_for_the_wait():
    pred = pd.DataFrame(
        {
            "implementation": ["torch_flash", "torch_flash", "eager_bf16"],
            "dtype": ["bf16", "bf16", "bf16"],
            "head_dim": [64, 64, 64],
            "causal": [True, True, True],
            "predicted_gpu_ms": [0.040, 0.200, 0.050],
            "predicted_gpu_j": [0.010, 0.050, 0.020],
            "host_class": ["host:torch_sdpa", "host:torch_sdpa", ""],
            "bound": ["tensor + mufu", "tensor + mufu", "issue"],
            "measured_gpu_ms": [0.045, 0.210, 0.055],
        }
    )
    probes = pd.DataFrame(
        {
            "implementation": ["torch_flash", "torch_flash"],
            "dtype": ["bf16", "bf16"],
            "head_dim": [64, 128],
            "causal": [True, True],
            "measured_ms": [0.090, 0.500],
        }
    )
    out = with_host_of_run(pred, probes)
    assert list(out.predicted_ms) == pytest.approx([0.090, 0.200, 0.050])
    assert out.predicted_j.iloc[0] == pytest.approx(0.010 + STATIC_W * 0.050e-3)
    assert list(out.predicted_j.iloc[1:]) == pytest.approx([0.050, 0.020])
    assert list(out.bound) == ["host", "tensor + mufu", "issue"]
    assert list(out.ratio_gpu) == pytest.approx([0.040 / 0.045, 0.200 / 0.210, 0.050 / 0.055])


def test_the_fp16_block_softmax_pays_a_cost_per_row_beside_its_elements():
    """Same elements, twice the rows (N halved, B doubled: both N % 8 = 0, above 1024): the softmax launch
    differs by the extra rows' t_row, and its per-element part by nothing."""
    cal = load_calibration()
    a = Workload(4096, 64, batch=2, heads=8, dtype="fp16")
    b = Workload(2048, 64, batch=8, heads=8, dtype="fp16")  # 2·8·4096² = 8·8·2048² scores
    from simlib.cost.model import launch_cost
    from simlib.cost.rates import load_cost_hardware

    hw = load_cost_hardware("h200")
    sa, sb = (
        next(x for x in IMPLEMENTATIONS["eager_bf16"].launches(w, cal) if x.name == "softmax") for w in (a, b)
    )
    assert sa.klass == sb.klass == "torch_softmax_h2f.block" and sa.trip_fill == sb.trip_fill == 1.0
    t_row = cal.row_latency(sa.klass)
    assert t_row > 0 and (sb.rows - sa.rows) == 8 * 8 * 2048 - 2 * 8 * 4096
    ta, tb = launch_cost(sa, hw, cal).time_s, launch_cost(sb, hw, cal).time_s
    assert tb - ta == pytest.approx((sb.rows - sa.rows) * t_row, rel=1e-6)


def test_host_probes_are_one_per_dispatched_implementation_head_dim_and_mask():
    from benchmarks.cost_validate_h200 import build_plan, host_probe_plan

    plan = build_plan(
        [(5, 9, 1200, 64, True), (2, 15, 2600, 128, False), (3, 3, 700, 64, True)],
        "torch_flash:bf16,eager_bf16:fp16,fa3_tc:bf16",
    )
    probes = host_probe_plan(plan, 128)
    assert probes == [
        ((1, 1, 128, 64, True), "bf16", "torch_flash"),
        ((1, 1, 128, 64, True), "bf16", "fa3_tc"),
        ((1, 1, 128, 128, False), "bf16", "torch_flash"),
        ((1, 1, 128, 128, False), "bf16", "fa3_tc"),
    ]
