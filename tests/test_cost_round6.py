"""Round 6 of the cost model's protocol: PyTorch's forward softmax dispatch, fa3_tc's all-heads causal
section at d = 64, and the host's floor per call of a Python loop."""

from __future__ import annotations

import csv

import pytest

from simlib import Workload
from simlib.cost import IMPLEMENTATIONS
from simlib.cost.calibration import load_calibration
from simlib.cost.predict import predict
from simlib.cost.rates import MEASUREMENTS
from simlib.cost.softmax_trips import forward_kernel, softmax_fill

#: The kernel names of the committed dispatch run (softmax_kernels_h200.csv) by the model's names.
KERNEL_NAMES = {
    "softmax_warp_forward": "warp",
    "cunn_SoftMaxForwardReg": "reg",
    "cunn_SoftMaxForwardSmem": "smem",
    "cunn_SoftMaxForward<": "block",
}


def _rows(name):
    with (MEASUREMENTS / name).open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_forward_kernel_is_the_one_torch_ran_at_every_measured_row_length():
    rows = _rows("softmax_kernels_h200.csv")
    assert len(rows) >= 20
    for r in rows:
        seen = next(v for k, v in KERNEL_NAMES.items() if k in r["kernel"])
        path = {"float32": "fp32", "float16": "fp16"}[r["dtype"]]
        assert forward_kernel(int(r["seq_len"]), path) == seen, (r["dtype"], r["seq_len"])


def test_the_register_kernels_fill_is_a_row_of_1024_thread_slots():
    # 2900 elements over 1024 threads: 3 per thread, 3072 slots
    assert softmax_fill(2900) == pytest.approx(2900 / 3072)
    assert softmax_fill(9000) == pytest.approx(9000 / 9216)
    assert softmax_fill(2000) == pytest.approx(2000 / 2048)  # the warp kernel to 2048 in fp32
    assert softmax_fill(1400, "fp16") == pytest.approx(1400 / 8192)  # one trip of 1024 × 8


def test_eager_bf16_softmax_class_follows_the_fp32_kernel():
    cal = load_calibration()
    for n, kind in ((2048, "warp"), (2900, "reg"), (12000, "smem"), (16384, "block")):
        (soft,) = [
            x
            for x in IMPLEMENTATIONS["eager_bf16"].launches(Workload(n, 64, heads=1, dtype="bf16"), cal)
            if x.name == "softmax"
        ]
        assert soft.klass == f"torch_softmax_to_fp32.{kind}"
    assert not cal.missing


def test_fa3_tc_d64_causal_is_one_section_of_every_head():
    from simlib.cost.schedule import causal_cta_work

    w = Workload(2500, 64, batch=4, heads=8, dtype="bf16", causal=True)
    (launch,) = IMPLEMENTATIONS["fa3_tc"].launches(w, load_calibration())
    assert launch.cta_work == causal_cta_work(w, 128, 64, heavy_first=True, sections=32)


def test_a_short_call_takes_the_host_floor_and_pays_static_power_for_it():
    """The floor is the shortest committed loop time of the dispatch class, read here from the file."""
    short = min(
        float(r["ms_per_call"])
        for name in ("cost_validate4_h200.csv", "cost_validate5_h200.csv")
        for r in _rows(name)
        if r["variant"] in ("fa2_tc_v5", "fa3_tc") and r["status"] == "ok"
    )
    w = Workload(900, 128, batch=2, heads=9, dtype="bf16", causal=True)
    p = predict("fa3_tc", w)
    assert p.gpu_s < short * 1e-3
    assert p.time_s == pytest.approx(short * 1e-3) and p.bound == "host"
    idle = p.static_w * (p.time_s - p.gpu_s)
    assert p.energy_j == pytest.approx(sum(c.energy_j for c in p.launches) + idle)
    big = predict("fa3_tc", Workload(4096, 128, batch=4, heads=16, dtype="bf16"))
    assert big.time_s == big.gpu_s and not big.host_bound
