"""benchmarks/speed_pool.py, the speed benchmarks' process pool and report, without a GPU.

The pool must give every good job's rows and one error per bad job, whatever the bad job does (raise,
exit without reporting, hang past the deadline), without waiting forever; the lock must serialize the
timings; the report's ratio to torch flash is the two medians' quotient (worked by hand below)."""

import csv
import time

import pool_toy_workers as toy
import pytest

from benchmarks import speed_pool
from measurements.schemas import SIDE_BY_SIDE


def quiet(*args, **kwargs):
    pass


def test_good_rows_and_one_error_per_bad_job():
    jobs = [("ok", 2), ("raise",), ("die",), ("ok", 1)]
    t0 = time.monotonic()
    rows, errors = speed_pool.run_jobs(
        toy.worker, jobs, [4096, 8192, 16384], processes=2, grace_s=0.5, log=quiet
    )
    assert time.monotonic() - t0 < 60
    assert sorted((r["job"], r["n"]) for r in rows) == [("ok", 4096), ("ok", 4096), ("ok", 8192)]
    assert len(errors) == 2
    assert any(e.startswith("('raise',): ValueError: toy failure") for e in errors)
    assert any(e == "('die',): its process exited with code 3 without reporting" for e in errors)


def test_deadline_terminates_a_hung_job_and_keeps_the_others_rows():
    jobs = [("sleep", 120), ("ok", 1)]
    t0 = time.monotonic()
    rows, errors = speed_pool.run_jobs(toy.worker, jobs, [64], processes=2, deadline_s=3, log=quiet)
    assert time.monotonic() - t0 < 40
    assert rows == [{"job": "ok", "n": 64}]
    assert errors == ["('sleep', 120): still running at the 3 s deadline, terminated"]


def test_the_lock_serializes_the_timed_sections():
    rows, errors = speed_pool.run_jobs(
        toy.worker, [("locked", i) for i in range(3)], [1], processes=3, log=quiet
    )
    assert errors == [] and len(rows) == 3
    spans = sorted((r["start"], r["end"]) for r in rows)
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))


def test_processes_must_be_positive():
    with pytest.raises(ValueError, match="processes must be at least 1, got 0"):
        speed_pool.run_jobs(toy.worker, [("ok", 1)], [1], processes=0)


def row(kernel, median_ms, ok=True):
    return {
        "kernel": kernel,
        "config": "",
        "note": "",
        "dtype": "bf16",
        "batch": 4,
        "heads": 16,
        "seq_len": 4096,
        "head_dim": 64,
        "causal": False,
        "median_ms": f"{median_ms:.4f}",
        "min_ms": "0",
        "max_ms": "0",
        "reps": 10,
        "flops": 1,
        "tflops": "1.0",
        "rel_err": "1e-3",
        "tol": "7.81e-03",
        "ok": ok,
    }


def test_report_writes_the_ratio_to_torch_flash(tmp_path, capsys):
    rows = [row("fa2_tc", 1.5), row("torch_flash", 2.0)]
    rc = speed_pool.report(
        rows, [], out=str(tmp_path), filename="x.csv", what="test", started=time.monotonic()
    )
    assert rc == 0
    with open(tmp_path / "x.csv") as f:
        got = list(csv.DictReader(f))
    assert list(got[0]) == list(SIDE_BY_SIDE.columns)
    ratio = {r["kernel"]: r["ratio_to_torch_flash"] for r in got}
    assert ratio == {"fa2_tc": "0.750", "torch_flash": "1.000"}  # 1.5 ms / 2.0 ms
    assert capsys.readouterr().out.splitlines()[-2].split()[-2] == "0.750"


@pytest.mark.parametrize("errors, ok", [(["a job failed"], True), ([], False)])
def test_report_fails_on_an_error_or_a_failed_check(tmp_path, errors, ok):
    rows = [row("fa2_tc", 1.5, ok=ok), row("torch_flash", 2.0)]
    assert speed_pool.report(rows, errors, out=str(tmp_path), filename="x.csv", what="t", started=0.0) == 1


@pytest.mark.parametrize("script", ["fa2_tc_speed.py", "fa3_tc_speed.py"])
def test_the_speed_scripts_import_the_pool(script):
    """Run as the device runs them (python benchmarks/X.py): their imports of speed_pool resolve and the
    arguments parse (--help exits 0 before any GPU work)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, str(root / "benchmarks" / script), "--help"],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert out.returncode == 0, out.stderr
    assert "--deadline-s" in out.stdout
