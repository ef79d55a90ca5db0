"""Round 3 of the cost model's protocol: PyTorch's softmax loop trips, the fp16 eager softmax class,
fa2_tc version 5's heavy-first causal order."""

from __future__ import annotations

import pytest

from simlib import Workload
from simlib.cost import IMPLEMENTATIONS
from simlib.cost.calibration import load_calibration
from simlib.cost.schedule import causal_cta_work, launch_q
from simlib.cost.softmax_trips import block_threads, softmax_fill


def _brute_fill(n: int, threads: int, ilp: int) -> float:
    """Walk cunn_SoftMaxForward's loop thread by thread: thread t takes vectors t, t + threads, ...
    of ilp elements; the row takes as many trips as its busiest thread."""
    vectors = -(-n // ilp)
    trips = max(len(range(t, vectors, threads)) for t in range(threads))
    return n / (trips * threads * ilp)


@pytest.mark.parametrize(
    "n, threads",
    # the forward's SoftMaxForward_getBlockSize by hand (round 6): min(N, 1024) rounded up to a warp
    [
        (1100, 1024),
        (1536, 1024),
        (2048, 1024),
        (2900, 1024),
        (4096, 1024),
        (4500, 1024),
        (16384, 1024),
        (700, 704),
    ],
)
def test_block_softmax_threads_and_fill_match_a_walk_of_its_loop(n, threads):
    """fp16's half-to-float block kernels above 1024 (vectors of 8 halves); fp32 at 16384 (the global-memory
    kernel, vectors of 4 floats)."""
    assert block_threads(n) == threads
    if n > 1024:
        assert softmax_fill(n, "fp16") == pytest.approx(_brute_fill(n, threads, 8))
    assert softmax_fill(16384) == pytest.approx(_brute_fill(16384, 1024, 4))


def test_softmax_fill_is_one_at_powers_of_two_and_masks_the_warp_kernels_lanes():
    assert all(softmax_fill(2**k) == 1.0 for k in range(5, 16))
    assert softmax_fill(900) == pytest.approx(900 / 1024)
    with pytest.raises(ValueError, match="row length"):
        softmax_fill(0)


def test_eager_softmax_class_follows_the_dtype():
    """SoftMax.cpp: fp16 takes the fused half-to-float kernel (warp up to 1024 columns, block above);
    bf16 is converted to fp32 first (the calibrated pair)."""
    cal = load_calibration()
    klass = {
        (dt, n): next(
            x
            for x in IMPLEMENTATIONS["eager_bf16"].launches(Workload(n, 64, dtype=dt), cal)
            if x.name == "softmax"
        ).klass
        for dt in ("bf16", "fp16")
        for n in (1024, 2048)
    }
    assert klass == {
        ("bf16", 1024): "torch_softmax_to_fp32.warp",
        ("bf16", 2048): "torch_softmax_to_fp32.warp",
        ("fp16", 1024): "torch_softmax_h2f.warp",
        ("fp16", 2048): "torch_softmax_h2f.block",
    }
    assert not cal.missing


def test_heavy_first_reverses_each_heads_blocks_and_shortens_the_last_wave():
    w = Workload(4096, 64, batch=1, heads=16, causal=True)
    light, heavy = causal_cta_work(w, 128, 64), causal_cta_work(w, 128, 64, heavy_first=True)
    assert sorted(light) == sorted(heavy)
    assert heavy[:16] == (max(light),) * 16 and heavy[-16:] == (min(light),) * 16
    assert launch_q(heavy, 132, 2, True) < launch_q(light, 132, 2, True)


def test_fa2_tc_v5_uses_the_ring_and_its_own_classes():
    cal = load_calibration()
    (a,) = IMPLEMENTATIONS["fa2_tc_v5"].launches(Workload(4096, 128, dtype="bf16"), cal)
    (b,) = IMPLEMENTATIONS["fa2_tc_v4"].launches(Workload(4096, 128, dtype="bf16"), cal)
    assert a.klass == "fa2_tc_v5.d128.bc48" and a.shared_bytes == (128 + 4 * 48) * 128 * 2
    assert b.shared_bytes == (128 + 2 * 48) * 128 * 2
    assert not cal.missing
