"""Round 8 of the cost model (docs/COST.md): a call's measured time is its loop's own (without the NVML
window's wait for the next step), and the host probe's figure is the host's time per call with the GPU
kept busy (a spin kernel queued first)."""

from __future__ import annotations

import pandas as pd
import pytest

from simlib.cost.check import host_of_run, measured_of_run


def _run_rows() -> pd.DataFrame:
    """Two rows of a validation run as the script writes them (strings, as csv_rows reads them)."""
    base = {"dtype": "bf16", "batch": "1", "heads": "1", "head_dim": "64", "causal": "True", "status": "ok"}
    return pd.DataFrame(
        [
            {
                **base,
                "variant": "fa3_tc",
                "pass": "host_probe",
                "seq_len": "128",
                "ms_per_call": "0.108",  # 0.4 s window / 3700 calls
                "loop_ms_per_call": "0.090",
                "host_ms_per_call": "0.070",
                "gpu_ms_per_call": "0.009",
                "joules_per_call": "0.013",
            },
            {
                **base,
                "variant": "fa3_tc",
                "pass": "fwd",
                "batch": "5",
                "heads": "9",
                "seq_len": "1200",
                "ms_per_call": "0.082",
                "loop_ms_per_call": "0.072",
                "host_ms_per_call": "0.068",
                "gpu_ms_per_call": "0.049",
                "joules_per_call": "0.031",
            },
        ]
    )


def test_round8_measures_a_call_by_its_loop_and_the_probe_by_its_host_time_with_the_gpu_busy():
    calls, probes = measured_of_run(_run_rows(), loop_time=True)
    assert list(calls.measured_ms) == [0.072] and list(calls.window_ms) == [0.082]
    assert list(calls.call_host_ms) == [0.068] and list(calls.measured_gpu_ms) == [0.049]
    assert host_of_run(probes) == {("fa3_tc", "bf16", 64, True): 0.070}


def test_round7_and_before_keep_the_windows_time_for_both():
    calls, probes = measured_of_run(_run_rows().drop(columns=["loop_ms_per_call", "host_ms_per_call"]))
    assert list(calls.measured_ms) == [0.082]
    assert host_of_run(probes) == {("fa3_tc", "bf16", 64, True): 0.108}


def test_the_host_time_queues_a_spin_longer_than_the_calls_issue_before_timing_them(monkeypatch):
    """A fake host that takes 0.1 ms per call: the figure is 0.1 ms, and every repetition's calls are issued
    behind a spin of at least (2 × calls × 0.1 ms + 2 ms) at the H200's clock."""
    import benchmarks.cost_validate_h200 as v

    now = [0.0]
    log: list[tuple[str, float]] = []

    class FakeCuda:
        @staticmethod
        def _sleep(cycles):
            log.append(("spin", cycles))

    class FakeTorch:
        cuda = FakeCuda

    def call(i):
        now[0] += 1e-4
        log.append(("call", i))

    monkeypatch.setattr(v, "sync_all", lambda torch: log.append(("sync", 0)))
    monkeypatch.setattr(v.time, "perf_counter", lambda: now[0])
    ms = v.host_time_ms(call, FakeTorch, calls=10, reps=3)
    assert ms == pytest.approx(0.1)
    spins = [i for i, (kind, _) in enumerate(log) if kind == "spin"]
    assert len(spins) == 3
    for i in spins:
        assert log[i][1] >= (2 * 10 * 1e-4 + 2e-3) * 1.98e9 * 0.999
        assert [k for k, _ in log[i + 1 : i + 11]] == ["call"] * 10 and log[i + 11][0] == "sync"
