"""Round 10 of the cost model (docs/COST.md): a dispatched call's host figure comes from the host probes
taken just before and just after its own loop (their mean), not from the run's one probe; the earlier
rounds keep theirs."""

from __future__ import annotations

import pandas as pd
import pytest

from simlib.cost.check import ROUNDS, STATIC_W, adjacent_host_ms, measured_of_run, with_host_of_run


def _pred() -> pd.DataFrame:
    """Three frozen GPU-alone predictions: two dispatched calls (one with adjacent probes, one without) and
    an eager chain (no dispatch class)."""
    return pd.DataFrame(
        {
            "implementation": ["fa3_tc", "fa3_tc", "eager_bf16"],
            "dtype": ["bf16", "bf16", "bf16"],
            "head_dim": [64, 128, 64],
            "causal": [True, True, True],
            "predicted_gpu_ms": [0.040, 0.050, 0.300],
            "predicted_gpu_j": [0.010, 0.020, 0.150],
            "host_class": ["host:numba_plan", "host:numba_plan", ""],
            "bound": ["tensor", "tensor", "issue"],
            "measured_gpu_ms": [0.040, 0.050, 0.300],
            "adjacent_host_ms": [0.090, float("nan"), 0.500],
        }
    )


def _probes() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "implementation": ["fa3_tc", "fa3_tc"],
            "dtype": ["bf16", "bf16"],
            "head_dim": [64, 128],
            "causal": [True, True],
            "measured_ms": [0.052, 0.070],
        }
    )


def test_the_adjacent_host_figure_is_the_mean_of_the_two_probes_or_the_one_measured():
    before = pd.Series([0.080, 0.060, None, None])
    after = pd.Series([0.100, 0.090, 0.070, None])
    out = list(adjacent_host_ms(before, after))
    # (0.080 + 0.100) / 2, (0.060 + 0.090) / 2, only the after probe, neither
    assert out[:3] == pytest.approx([0.090, 0.075, 0.070]) and out[3] != out[3]


def test_round10_takes_the_calls_adjacent_probes_and_the_runs_probe_only_where_it_has_none():
    out = with_host_of_run(_pred(), _probes(), adjacent=True)
    # fa3_tc d = 64: max(0.040, 0.090) = 0.090 ms, the 0.050 ms wait at static power; not the run's 0.052
    # fa3_tc d = 128: no adjacent probe, the run's 0.070 > 0.050; eager: no dispatch class, its 0.500 unused
    assert list(out.predicted_ms) == pytest.approx([0.090, 0.070, 0.300])
    assert list(out.predicted_j) == pytest.approx(
        [0.010 + STATIC_W * 0.050e-3, 0.020 + STATIC_W * 0.020e-3, 0.150]
    )
    assert list(out.bound) == ["host", "host", "issue"]


def test_before_round10_the_runs_probe_stands_whatever_the_adjacent_probes_say():
    out = with_host_of_run(_pred(), _probes())
    assert list(out.predicted_ms) == pytest.approx([0.052, 0.070, 0.300])
    assert [r.host_adjacent for r in ROUNDS[:9]] == [False] * 9


def test_a_run_with_adjacent_probes_reads_them_per_call():
    base = {"dtype": "bf16", "batch": "8", "heads": "5", "head_dim": "64", "causal": "True", "status": "ok"}
    rows = pd.DataFrame(
        [
            {
                **base,
                "variant": "fa2_tc_v5",
                "pass": "fwd",
                "seq_len": "1150",
                "ms_per_call": "0.076",
                "loop_ms_per_call": "0.069",
                "host_ms_per_call": "0.086",
                "gpu_ms_per_call": "0.045",
                "joules_per_call": "0.030",
                "probe_host_before_ms": "0.070",
                "probe_host_after_ms": "0.074",
            },
            {
                **base,
                "variant": "eager_bf16",
                "pass": "fwd",
                "seq_len": "1150",
                "ms_per_call": "0.50",
                "loop_ms_per_call": "0.45",
                "host_ms_per_call": "0.10",
                "gpu_ms_per_call": "0.44",
                "joules_per_call": "0.30",
                "probe_host_before_ms": "",
                "probe_host_after_ms": "",
            },
        ]
    )
    calls, _ = measured_of_run(rows, loop_time=True)
    adj = list(calls.adjacent_host_ms)
    assert adj[0] == pytest.approx(0.072) and adj[1] != adj[1]


def test_the_script_takes_the_probe_just_before_and_just_after_the_calls_loop(monkeypatch):
    """measure_one's order of events with fakes: the probe's host time, the NVML loop, the probe again,
    then the call's GPU time alone; both probe figures land in the row."""
    import benchmarks.cost_validate_h200 as v
    from gpu_kernels.measure import nvml_energy

    log: list[str] = []
    figures = iter([0.081, 0.097, 0.050])

    def fake_host(call, torch, calls=0, reps=0):
        log.append(f"host:{call.__name__}")
        return next(figures)

    def fake_measure(step, sync, counter, seconds, call_seconds=None):
        log.append("loop")
        return {"seconds": 0.8, "loop_seconds": 0.7, "calls": 7000, "joules": 210.0}

    class Inp:
        def err(self, o, torch):
            return 0.0

    def call(i):
        return None

    def probe(i):
        return None

    monkeypatch.setattr(v, "sync_all", lambda torch: None)
    monkeypatch.setattr(v, "build", lambda name, dtype, inp, torch: (call, {}, ()))
    monkeypatch.setattr(v, "host_time_ms", fake_host)
    monkeypatch.setattr(v, "gpu_time_ms", lambda c, torch, reps: log.append("gpu") or 0.045)
    monkeypatch.setattr(nvml_energy, "measure", fake_measure)
    row = v.measure_one("fa2_tc_v5", "bf16", Inp(), None, 0.7, None, probe_call=probe)
    assert log == ["host:probe", "loop", "host:probe", "gpu", "host:call"]
    assert (row["probe_host_before_ms"], row["probe_host_after_ms"], row["host_ms_per_call"]) == (
        0.081,
        0.097,
        0.050,
    )
    assert row["loop_ms_per_call"] == pytest.approx(0.1)  # 0.7 s / 7000 calls
    assert {"probe_host_before_ms", "probe_host_after_ms"} <= set(v.FIELDS)


def test_without_a_probe_call_the_adjacent_figures_are_blank(monkeypatch):
    import benchmarks.cost_validate_h200 as v
    from gpu_kernels.measure import nvml_energy

    class Inp:
        def err(self, o, torch):
            return 0.0

    monkeypatch.setattr(v, "sync_all", lambda torch: None)
    monkeypatch.setattr(v, "build", lambda name, dtype, inp, torch: ((lambda i: None), {}, ()))
    monkeypatch.setattr(v, "gpu_time_ms", lambda c, torch, reps: 5.0)
    monkeypatch.setattr(v.time, "perf_counter", iter([0.0, 3e-3]).__next__)  # one call: 3 ms, no host time
    monkeypatch.setattr(
        nvml_energy,
        "measure",
        lambda *a, **k: {"seconds": 0.8, "loop_seconds": 0.7, "calls": 140, "joules": 300.0},
    )
    row = v.measure_one("numba_naive", "fp32", Inp(), None, 0.7, None)
    assert (row["probe_host_before_ms"], row["probe_host_after_ms"], row["host_ms_per_call"]) == ("", "", "")
