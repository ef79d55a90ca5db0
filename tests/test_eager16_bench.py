"""benchmarks/eager16_h200.py without a GPU: its plan, FLOP counts, tolerances, arguments and files.

The device run itself (run eager16-20261201) is checked through what it wrote: the committed CSVs'
headers are the script's columns, and every timed row passed its float64 check."""

import csv
import doctest
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import eager16_h200 as e
from evidence import readers
from measurements import schemas

ROOT = Path(__file__).resolve().parents[1]


def test_doctests():
    result = doctest.testmod(e)
    assert result.failed == 0 and result.attempted >= 4


def test_plan_covers_the_side_by_side_shapes_in_order():
    shapes = e.time_plan(["bf16", "fp16"], [False, True], [64, 128], list(e.SEQ_LENS))
    assert len(shapes) == 2 * 2 * 2 * 6 and shapes[0] == ("bf16", False, 64, 512)
    assert shapes[-1] == ("fp16", True, 128, 16384)
    # B·H·N = 2¹⁸ with H = 16, as the side by side: N = 512 -> B = 32, N = 16384 -> B = 1
    assert e.batch_heads(512) == (32, 16) and e.batch_heads(16384) == (1, 16)


def test_energy_plan_runs_the_training_step_case_first_in_both_dtypes():
    plan = e.energy_plan(["bf16", "fp16"], [1024, 4096, 16384], list(e.VARIANTS))
    assert len(plan) == 2 * 6 * 4
    assert plan[:8] == [(dt, "fwd_bwd", 1024, v) for dt in ("bf16", "fp16") for v in e.VARIANTS]


def test_matmul_flops_by_hand():
    n, d, bh = 4096, 64, 64
    assert e.matmul_flops("eager", "fwd", n, d, bh, False) == 2 * 2 * n * n * d * bh  # QKᵀ and PV
    assert (
        e.matmul_flops("eager", "fwd_bwd", n, d, bh, True) == 6 * 2 * n * n * d * bh
    )  # masked, all computed
    assert e.matmul_flops("torch_flash", "fwd_bwd", n, d, bh, True) == 7 * 2 * n * n * d * bh // 2


def test_tolerances_are_four_and_eight_unit_roundoffs():
    assert e.tolerances("bf16") == (4 * 2**-8, 8 * 2**-8)
    assert e.tolerances("fp16") == (4 * 2**-11, 8 * 2**-11)


def test_flash_ratios_pair_the_same_shape():
    rows = [
        {"variant": "eager", "dtype": "bf16", "pass": "fwd", "causal": False, "seq_len": 4096, "head_dim": 64}
        | {"median_ms": "6.0"},
        {"variant": "torch_flash", "dtype": "bf16", "pass": "fwd", "causal": False, "seq_len": 4096}
        | {"head_dim": 64, "median_ms": "1.5"},
        {"variant": "eager", "dtype": "fp16", "pass": "fwd", "causal": False, "seq_len": 4096, "head_dim": 64}
        | {"median_ms": "6.0"},  # no fp16 flash row: no ratio
    ]
    e.with_flash_ratios(rows)
    assert [r.get("ratio_to_torch_flash") for r in rows] == ["4.000", "1.000", None]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--energy-s", "0.5"], "--energy-s"),
        (["--variants", "nope"], "--variants"),
        (["--min-reps", "9", "--max-reps", "3"], "--min-reps"),
        (["--budget-s", "0"], "--budget-s"),
        (["--budget-s", "nan"], "--budget-s"),
        (["--time-budget-s", "inf"], "--time-budget-s"),
        (["--tag", "a/b"], "--tag"),
        (["--tag", "../x"], "--tag"),
        (["--tag", ""], "--tag"),
        (["--out", "/dev/full"], "--out"),
        (["--out", str(ROOT / "README.md" / "sub")], "--out"),
        (["--resume", str(ROOT / "docs")], "--resume"),  # a folder without the earlier run's files
    ],
)
def test_bad_arguments_exit_2_in_one_line_naming_the_flag(args, message, tmp_path):
    """Before: a usage block, and every bad --out or --tag got past the check until torch was imported
    (a traceback without torch, a device run lost at save time with it)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "eager16_h200.py"), "--out", str(tmp_path), *args],
        capture_output=True,
        text=True,
    )
    lines = out.stderr.splitlines()
    assert out.returncode == 2 and len(lines) == 1 and message in lines[0] and out.stdout == "", out.stderr


def test_good_arguments_without_a_gpu_get_the_one_line_answer(tmp_path):
    """Before: `ModuleNotFoundError: No module named 'torch'` (a traceback) on a machine without a GPU."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "eager16_h200.py"), "--out", str(tmp_path / "new")],
        capture_output=True,
        text=True,
        env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"},
    )
    assert out.returncode == 2 and out.stdout == "", out.stderr
    assert out.stderr.startswith("error: no CUDA GPU found; ") and out.stderr.count("\n") == 1, out.stderr
    assert not (tmp_path / "new").exists()  # nothing written before the GPU check


def test_dry_run_prints_the_plan_without_a_gpu(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "eager16_h200.py"), "--out", str(tmp_path), "--dry-run"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = out.stdout.splitlines()
    assert lines[0] == "part 1: 48 shapes x 4 variants x 2 passes" and len(lines) == 1 + 48 + 48


def test_committed_files_have_the_scripts_columns_and_passed_their_checks():
    for name, fields in ((readers.EAGER16, e.TIME_FIELDS), (readers.EAGER16_ENERGY, e.ENERGY_FIELDS)):
        with open(readers.lookup(name), newline="") as f:
            reader = csv.DictReader(f)
            assert reader.fieldnames == fields
            rows = list(reader)
        assert rows
    assert set(schemas.EAGER16.required) <= set(e.TIME_FIELDS) and schemas.EAGER16.columns == tuple(
        e.TIME_FIELDS
    )
    with open(readers.lookup(readers.EAGER16), newline="") as f:
        timed = [r for r in csv.DictReader(f) if r["median_ms"]]
    assert timed and all(r["ok"] == "True" for r in timed)
    for r in timed:  # the check's numbers are in the row: error below the row's tolerance
        assert float(r["rel_err_o"]) <= float(r["tol_o"])
        if r["pass"] == "fwd_bwd":
            assert float(r["rel_err_grad"]) <= float(r["tol_grad"])


def _earlier_run(folder):
    """An earlier run's two files, written by the project's writer: the time case bf16/non-causal/d=64/
    N=512 measured whole, N=1024 cut after two rows; energy (bf16, fwd, 1024) whole, (fp16, fwd, 1024)
    with one variant skipped."""
    from measurements.provenance import csv_text, write_measurement

    def trow(n, v, pas, measured):
        b, h = e.batch_heads(n)
        row = {"variant": v, "implementation": e.IMPLEMENTATION[v], "dtype": "bf16", "pass": pas}
        row.update(causal=False, batch=b, heads=h, seq_len=n, head_dim=64, reps=5 if measured else 0)
        if measured:
            row.update(median_ms="1.5", min_ms="1.4", max_ms="1.6", ok=True, note="first call 3 ms")
        else:
            row.update(ok=False, note="not run: past --time-budget-s 40")
        return row

    time_rows = [trow(512, v, p, True) for v in e.VARIANTS for p in e.PASSES]
    time_rows += [
        trow(1024, v, p, i < 2) for i, (v, p) in enumerate((v, p) for v in e.VARIANTS for p in e.PASSES)
    ]

    def erow(dtype, v, measured):
        b, h = e.batch_heads(1024)
        row = {"variant": v, "dtype": dtype, "pass": "fwd", "causal": False, "batch": b, "heads": h}
        row.update(seq_len=1024, head_dim=64)
        if measured:
            row.update(status="ok", calls=100, seconds=1.0, joules=200.0, watts=200.0, idle_watts=80.0)
            row.update(joules_per_call=2.0, joules_per_call_above_idle=1.2)
        else:
            row.update(status="skipped", note="past --budget-s 62")
        return row

    energy_rows = [{"variant": "idle", "status": "ok", "watts": 80.0}]
    energy_rows += [erow("bf16", v, True) for v in e.VARIANTS]
    energy_rows += [erow("fp16", v, v != "torch_flash") for v in e.VARIANTS]
    record = {"run_id": "earlier-run", "what": "a test's earlier run"}
    write_measurement(str(folder / "eager16_h200.csv"), csv_text(time_rows, e.TIME_FIELDS), record)
    write_measurement(str(folder / "eager16_energy_h200.csv"), csv_text(energy_rows, e.ENERGY_FIELDS), record)


def test_resume_keeps_whole_cases_of_the_earlier_run_and_reruns_the_rest(tmp_path):
    _earlier_run(tmp_path)
    kept_time, kept_energy, record = e.earlier_run(str(tmp_path), "h200")
    # only whole cases are kept: N = 512 (8 rows), not the N = 1024 case cut after two rows
    assert {r["seq_len"] for r in kept_time} == {512} and len(kept_time) == 8
    assert all(r["causal"] is False and r["head_dim"] == 64 for r in kept_time)
    # energy: (bf16, fwd, 1024) whole, so its four variants stay beside their flash partner; fp16 reruns
    assert {(r["dtype"], r["variant"]) for r in kept_energy} == {("bf16", v) for v in e.VARIANTS}
    assert record["time_cases_kept"] == [["bf16", "False", "64", "512"]]
    assert set(record["resumed_from"]) == {"eager16_h200.csv", "eager16_energy_h200.csv"}
    plan = subprocess.run(
        [
            sys.executable, str(ROOT / "benchmarks" / "eager16_h200.py"), "--out", str(tmp_path / "out"),
            "--dry-run", "--resume", str(tmp_path), "--dtypes", "bf16", "--causal", "no", "--head-dims", "64",
            "--seq-lens", "512,1024", "--energy-seq-lens", "1024",
        ],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert [line.endswith("(kept)") for line in plan[1:3]] == [True, False]
    energy = [line for line in plan if line.startswith("  energy")]
    # the plan runs (fwd_bwd, 1K) first in both dtypes, then (fwd, 1K): only bf16 fwd is kept
    assert [line.endswith("(kept)") for line in energy] == [False] * 8 + [True] * 4 + [False] * 4


def test_resume_from_a_folder_without_the_files_is_one_line(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "eager16_h200.py"), "--out", str(tmp_path / "o"),
         "--dry-run", "--resume", str(tmp_path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert (
        out.returncode == 2
        and out.stderr.startswith("error: --resume:")
        and len(out.stderr.splitlines()) == 1
    )
