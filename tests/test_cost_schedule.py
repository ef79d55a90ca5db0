"""The wave model (simlib.cost.schedule): list scheduling of a launch's CTAs over SMs x slots.

Expected values come from hand-checked tiny schedules and from a separately written time-stepped
simulation (every SM advanced by small ticks, not event to event), never from the code under test."""

import random

import pytest

from simlib import Workload
from simlib.cost import Launch, Work, load_cost_hardware, predict
from simlib.cost.common import visited
from simlib.cost.model import waves
from simlib.cost.schedule import causal_cta_work, equal_work_q, launch_q, makespan

HW = load_cost_hardware("h200")


def ticked(work, sms, resident, shared, dt=1e-3):
    """Time-stepped reference: each tick, free slots take the next CTAs (emptiest SM first, then the
    lowest index); a CTA on an SM holding k advances dt/k (shared units) or dt/resident (slots)."""
    queue = list(work)
    on = [[] for _ in range(sms)]  # remaining work of each resident CTA, per SM
    t = 0.0
    while queue or any(on):
        while queue:
            free = [s for s in range(sms) if len(on[s]) < resident]
            if not free:
                break
            s = min(free, key=lambda s: (len(on[s]), s))
            on[s].append(queue.pop(0))
        t += dt
        for s in range(sms):
            k = len(on[s])
            step = dt / (k if shared else resident) if k else 0.0
            on[s] = [x - step for x in on[s] if x - step > 1e-9]
    return t


def test_hand_checked_schedules():
    # 2 SMs x 1 slot: 3,1,1,1 -> SM0 runs the 3, SM1 the three 1s: both end at 3
    assert makespan([3, 1, 1, 1], 2, 1, shared=False) == 3.0
    # 1,1,1,3: the 3 starts at 1 on the SM freed first and ends at 4 (the long one last: the causal tail)
    assert makespan([1, 1, 1, 3], 2, 1, shared=False) == 4.0
    # 1 SM x 2 slots at 1/2 each (latency rule): 2 and 1 start together, end at 4 and 2; then a 1 on the
    # freed slot ends at 4: makespan 4
    assert makespan([2, 1, 1], 1, 2, shared=False) == 4.0
    # the same SM with shared units: 2 and 1 share (1/2 each) until the 1 ends at t = 2 (the 2 has 1 left);
    # the third (1) joins, both at 1/2: both end at 4 = total work, the SM never idle
    assert makespan([2, 1, 1], 1, 2, shared=True) == pytest.approx(4.0)
    # 2 SMs x 1 slot, shared units: the 4 on SM0, the three 1s one after another on SM1 (free at 1, 2, 3):
    # the 4 alone at full rate ends at 4
    assert makespan([4, 1, 1, 1], 2, 1, shared=True) == pytest.approx(4.0)


@pytest.mark.parametrize("seed", range(12))
def test_event_schedule_equals_a_time_stepped_one(seed):
    rng = random.Random(seed)
    sms, resident = rng.randint(1, 4), rng.randint(1, 3)
    work = [rng.choice([0.5, 1.0, 1.5, 2.0, 3.0]) for _ in range(rng.randint(1, 14))]
    for shared in (False, True):
        assert makespan(work, sms, resident, shared) == pytest.approx(
            ticked(work, sms, resident, shared), abs=5e-3 * len(work)
        )


@pytest.mark.parametrize(
    "blocks,resident", [(1, 1), (131, 2), (132, 2), (133, 2), (200, 2), (2048, 2), (500, 3)]
)
def test_equal_works_give_the_wave_closed_form(blocks, resident):
    """List scheduling of equal CTAs = ⌈·⌉ wave counting: the non-causal model is unchanged."""
    for shared in (False, True):
        assert launch_q([1.0] * blocks, 132, resident, shared) == pytest.approx(
            equal_work_q(blocks, 132, resident, shared)
        )


def test_causal_cta_work_sums_to_the_visited_scores_and_runs_short_to_long():
    w = Workload(2500, 64, batch=4, heads=8, dtype="bf16", causal=True)
    work = causal_cta_work(w, 128, 128)
    seen, _ = visited(w, 128, 128)
    assert len(work) == 32 * 20 and sum(work) == 32 * seen
    head = work[:20]
    assert head[0] == 128 * 128 and head[-1] == (2500 - 19 * 128) * 2500  # block 0: one tile; last: all keys
    # full block i (rows 128i..128i+127) reaches key 128i+127: i+1 tiles of 128 keys, the long ones last
    assert list(head[:-1]) == [128 * 128 * (i + 1) for i in range(19)]


def test_a_causal_launch_waits_for_its_long_last_blocks():
    """One head of 264 CTAs on 132 SMs x 2 slots (latency rule): works 1..264 in launch order. By hand:
    the first wave's 264 slots take 1..264; nothing is left, so the makespan is the longest CTA's
    264 × 2 (each slot at half the SM), against Σ/SMs = 264·265/2/132 = 265: q = 528/265."""
    launch = Launch(
        "x",
        "x",
        Work(),
        blocks=264,
        threads=128,
        registers=255,
        shared_bytes=0,
        cta_work=tuple(range(1, 265)),
    )
    assert waves(launch, HW)[1] == pytest.approx(528 / 265)


def test_causal_predictions_are_slower_and_non_causal_ones_unchanged():
    causal = Workload(2500, 64, batch=4, heads=8, dtype="bf16", causal=True)
    flat = Workload(2500, 64, batch=4, heads=8, dtype="bf16")
    (c,) = predict("torch_flash", causal).launches
    (f,) = predict("torch_flash", flat).launches
    assert c.quantization > 1.1  # the tail of the long rows
    blocks = f.launch.blocks
    assert f.quantization == pytest.approx(equal_work_q(blocks, 132, 2, shared=False))
