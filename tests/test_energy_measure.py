"""gpu_kernels.measure.nvml_energy on a fake NVML counter (CPU only): edge-aligned windows, idle, baseline."""

import pytest

from gpu_kernels.measure import nvml_energy as energy


class FakeBoard:
    """A board drawing `watts` whose counter steps every `period` s; the clock advances per read."""

    def __init__(self, watts=100.0, period=0.02, tick=1e-4):
        self.t, self.watts, self.period, self.tick = 0.0, watts, period, tick

    def clock(self):
        self.t += self.tick
        return self.t

    def millijoules(self):
        steps = int(self.t / self.period)
        return round(steps * self.period * self.watts * 1000)

    def state(self):
        return {"sm_mhz": 1980.0, "mem_mhz": 3201.0, "temp_c": 40.0, "power_w": self.watts}

    def run(self, seconds):
        self.t += seconds


def test_wait_step_returns_at_the_next_step_or_the_timeout():
    board = FakeBoard()
    mj, t, stepped = energy.wait_step(board, board.clock)
    assert stepped and mj == 2000 and t == pytest.approx(0.02, abs=2e-4)  # 100 W x 20 ms

    class Frozen(FakeBoard):
        def millijoules(self):
            return 7

    frozen = Frozen()
    assert energy.wait_step(frozen, frozen.clock, timeout_s=0.01)[2] is False


def test_measure_reads_the_board_power_between_steps():
    board = FakeBoard(watts=250.0)
    res = energy.measure(
        lambda: board.run(0.05), lambda: None, board, 1.0, call_seconds=0.05, clock=board.clock
    )
    assert res["watts"] == pytest.approx(250.0, rel=1e-3)
    assert res["calls"] >= 20 and res["seconds"] >= 1.0 and res["steps_seen"]
    assert res["joules"] == pytest.approx(250.0 * res["seconds"], rel=1e-3)
    assert res["sm_mhz"] == 1980.0


def test_the_loops_own_time_leaves_out_the_wait_for_the_next_step():
    """A 0.3 s loop on a counter stepping every 0.1 s (round 7's host probes): 10 ms calls in chunks of
    two (call_seconds 0.05), the first step at 0.1 s; the loop passes 0.3 s just after the step at 0.4 s,
    so the window waits one more period for the step at 0.5 s: 0.4 s for 0.3 s of calls."""
    board = FakeBoard(watts=100.0, period=0.1, tick=1e-6)
    res = energy.measure(
        lambda: board.run(0.01), lambda: None, board, 0.3, call_seconds=0.05, clock=board.clock
    )
    assert res["calls"] == 30
    assert res["loop_seconds"] == pytest.approx(0.3, abs=1e-3)
    assert res["seconds"] == pytest.approx(0.4, abs=1e-3)


def test_idle_and_above_baseline():
    board = FakeBoard(watts=80.0)
    idle = energy.measure_idle(board, 0.5, clock=board.clock, sleep=board.run)
    assert idle["watts"] == pytest.approx(80.0, rel=1e-3)
    # 1500 J in 3 s over 20 calls against 100 W: (1500 − 300) / 20
    assert energy.above_baseline({"joules": 1500.0, "seconds": 3.0, "calls": 20}, 100.0) == pytest.approx(
        60.0
    )
    with pytest.raises(ValueError, match="no calls"):
        energy.above_baseline({"joules": 1.0, "seconds": 1.0, "calls": 0}, 1.0)
