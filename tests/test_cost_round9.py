"""Round 9 of the cost model (docs/COST.md): a CTA alone on its SM in the last wave of an equal-work launch
runs at its class's `lone` share of the SM (more than 1/resident), fitted per class on the committed
GPU-alone times of launches whose last wave leaves CTAs alone; and a round predicted before its run is
reported as predicted, not yet measured."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from simlib import Workload
from simlib.cost import check
from simlib.cost.calibration import load_calibration
from simlib.cost.fit import LONE_MIN_ROWS, lone_rows
from simlib.cost.implementations import IMPLEMENTATIONS
from simlib.cost.model import waves
from simlib.cost.rates import load_cost_hardware
from simlib.cost.schedule import _latency_sharing, _processor_sharing, equal_work_q, makespan

HW = load_cost_hardware("h200")


def test_a_last_wave_of_lone_ctas_by_hand():
    # 2 SMs, 2 slots, 5 CTAs of work 1 (SM-full-rate units): four at 1/2 of their SM until 2, the fifth
    # alone: latency rule 2 more (q = 4 / 2.5), at a lone share of 0.8 1.25 more (q = 3.25 / 2.5)
    assert equal_work_q(5, 2, 2, False) == pytest.approx(1.6)
    assert equal_work_q(5, 2, 2, False, lone=0.8) == pytest.approx(1.3)
    assert makespan([1.0] * 5, 2, 2, False, lone=0.8) == pytest.approx(3.25)
    # a full last wave does not move; nor does a lone share under 1/resident (the latency rule's floor)
    assert equal_work_q(8, 2, 2, False, lone=0.8) == pytest.approx(1.0)
    assert equal_work_q(5, 2, 2, False, lone=0.3) == pytest.approx(1.6)
    # works 1, 1, 1, 3: SM 0 runs CTAs 0 and 2 at 1/2 (done at 2); SM 1 CTAs 1 and 3 at 1/2 until 2, then
    # CTA 3's last 2 units alone at 0.8: 2 + 2.5 = 4.5 (latency rule: 2 + 4 = 6)
    assert makespan([1, 1, 1, 3], 2, 2, False) == pytest.approx(6.0)
    assert makespan([1, 1, 1, 3], 2, 2, False, lone=0.8) == pytest.approx(4.5)
    with pytest.raises(ValueError, match="lone"):
        equal_work_q(5, 2, 2, False, lone=1.5)


def test_the_event_simulation_is_the_list_schedule_and_processor_sharing_at_the_ends():
    rng = random.Random(9)
    for _ in range(100):
        work = [rng.uniform(0.1, 5.0) for _ in range(rng.randint(1, 30))]
        sms, resident, fixed = rng.randint(1, 4), rng.randint(1, 3), rng.choice([0.0, 0.4])
        assert _latency_sharing(work, sms, resident, 1.0 / resident, fixed) == pytest.approx(
            makespan(work, sms, resident, False, fixed)
        )
        assert _latency_sharing(work, sms, resident, 1.0, 0.0) == pytest.approx(
            _processor_sharing(np.asarray(work), sms, resident)
        )


def test_the_lone_share_is_fitted_per_class_on_two_shapes_or_more():
    cal = load_calibration()
    rows = lone_rows(cal)
    fitted = {k for k, v in cal.classes.items() if "lone" in v}
    assert "torch_flash.d128.br128bc64" in fitted
    for klass in fitted:
        assert len(rows[klass]) >= LONE_MIN_ROWS
        assert 0.5 <= cal.classes[klass]["lone"] <= 1.0
    for klass, points in rows.items():  # a class with one such shape keeps the latency rule
        if len(points) < LONE_MIN_ROWS:
            assert klass not in fitted


def test_round_8s_partial_wave_torch_flash_moves_by_its_last_wave_only():
    # (1, 18, 3900, 128): 558 CTAs on 132 SMs x 2 slots, two full waves and 30 CTAs alone: q goes from
    # 6 / (558/132) to (4 + 1/lone) / (558/132)
    cal = load_calibration()
    (launch,) = IMPLEMENTATIONS["torch_flash"].launches(
        Workload(3900, 128, batch=1, heads=18, causal=False), cal
    )
    lone = cal.lone_rate(launch.klass)
    assert launch.blocks == 558
    assert waves(launch, HW)[1] == pytest.approx(6 / (558 / 132))
    assert waves(launch, HW, lone)[1] == pytest.approx((4 + 1 / lone) / (558 / 132))
    # causal launches keep the list schedule of the latency rule (docs/COST.md, round 9)
    (causal,) = IMPLEMENTATIONS["torch_flash"].launches(
        Workload(3900, 128, batch=1, heads=18, causal=True), cal
    )
    assert waves(causal, HW, lone) == waves(causal, HW)


def test_a_round_predicted_but_not_measured_is_reported_so(monkeypatch):
    last = check.ROUNDS[-1]
    ghost = dataclasses.replace(
        last, when="measured after a test freeze", validation="cost_validate_never_h200.csv"
    )
    assert check.post_freeze(ghost).empty
    monkeypatch.setattr(check, "ROUNDS", (*check.ROUNDS[:-1], ghost))
    text = check.report_markdown()
    assert f"{ghost.when[0].upper()}{ghost.when[1:]}: **predicted, not yet measured**" in text
