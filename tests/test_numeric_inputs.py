"""Issue 26, item 3: every numeric input finite and in range, one value parser for both CLIs, every device
command's arguments checked before the GPU check, no traceback on a closed stdout.

Each test names the defect it guards; each failed before the change it came with (the message in the
assertion says what used to happen)."""

import json
import math
import os
import subprocess
import sys
import warnings

import numba.cuda  # noqa: F401  the simulator, imported while conftest's switch is on (require_gpu flips it)
import numpy as np
import pytest
from kernel_helpers import REPO, run_cli

import gpu_kernels.cli as gk_cli
import simlib.command_line as simlib_cli
from gpu_kernels.device import NO_GPU_ONLY

NO_GPU_START = NO_GPU_ONLY.split("`")[0]  # "no CUDA GPU found; "


@pytest.fixture(autouse=True)
def _keep_the_simulator_switch(monkeypatch):
    """gpu_kernels' require_gpu sets NUMBA_ENABLE_CUDASIM=0 (the CLI's own process decides); restored
    after each test so the kernels of later tests stay on the simulator."""
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", os.environ.get("NUMBA_ENABLE_CUDASIM", "1"))


def run_main(main, argv, capsys):
    """(exit status, stdout, stderr) of a CLI's main() in this process."""
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


# --- one parser for both CLIs -------------------------------------------------------------------

BAD_INTEGERS = ["1_6", "١٦", "16.0", "+16", "0x10", "1e3", "", "16a", "٣"]


@pytest.mark.parametrize("text", BAD_INTEGERS)
def test_both_clis_refuse_the_same_integers(text, capsys):
    """gpu_kernels took '1_6' (int() does: 16) and '١٦' (Arabic-Indic digits) where simlib refused them."""
    simlib = run_main(
        simlib_cli.main, ["count", "--algorithm", "fa2", "--seq-len", text, "--head-dim", "64"], capsys
    )
    gk = run_main(
        gk_cli.main, ["run", "--kernel", "naive", "--seq-len", text, "--head-dim", "16", "--simulate"], capsys
    )
    for rc, out, err in (simlib, gk):
        assert rc == 2 and out == "", (rc, out, err)
        assert err.count("\n") == 1 and "argument --seq-len" in err, err
    assert simlib[2].split("--seq-len")[1] == gk[2].split("--seq-len")[1]  # the same words after the flag


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e999", "1_0", "١", "0x1", ""])
def test_both_clis_refuse_non_finite_floats(text, capsys):
    """`energy --time-s inf` printed 'static inf mJ nan%'; bench --budget-s took Arabic digits."""
    energy = "energy --algorithm fa2 --seq-len 64 --head-dim 64 --gpu h200".split()
    simlib = run_main(simlib_cli.main, [*energy, f"--time-s={text}"], capsys)
    gk = run_main(gk_cli.main, ["bench", "--out", "x", f"--budget-s={text}"], capsys)
    for rc, out, err in (simlib, gk):
        assert rc == 2 and out == "" and err.count("\n") == 1, (rc, out, err)
        assert "not a finite number" in err, err


# --- device commands: arguments before the GPU ----------------------------------------------------

DEVICE_COMMANDS = ["bench", "compare", "tune", "ncu", "profile", "ceilings", "side-by-side"]
BAD_DEVICE_ARGS = [
    (["--tag", "a/b"], "--tag"),
    (["--tag", "../x"], "--tag"),
    (["--tag", ""], "--tag"),
    (["--out", "/dev/full"], "--out"),
    (["--out", ""], "--out"),
]


@pytest.mark.parametrize("command", DEVICE_COMMANDS)
@pytest.mark.parametrize("bad,flag", BAD_DEVICE_ARGS)
def test_device_command_arguments_are_checked_before_the_gpu(command, bad, flag, capsys, tmp_path):
    """`--tag a/b`, `../x`, '' reached the GPU check (a device run would then be lost at save time)."""
    argv = [command, "--out", str(tmp_path), f"{bad[0]}={bad[1]}"]
    rc, out, err = run_main(gk_cli.main, argv, capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1, (argv, rc, out, err)
    assert flag in err and NO_GPU_START not in err, (argv, err)


@pytest.mark.parametrize("command", ["bench", "compare", "side-by-side"])
@pytest.mark.parametrize("budget", ["nan", "0", "-1", "inf"])
def test_budget_must_be_a_positive_finite_number(command, budget, capsys, tmp_path):
    rc, out, err = run_main(gk_cli.main, [command, "--out", str(tmp_path), f"--budget-s={budget}"], capsys)
    assert rc == 2 and "argument --budget-s" in err and NO_GPU_START not in err, err


@pytest.mark.parametrize("command", DEVICE_COMMANDS)
def test_good_device_arguments_reach_the_one_line_no_gpu_answer(command, tmp_path):
    """(In a fresh process: here numba is the simulator, which "has" a GPU.)"""
    proc = run_cli([command, "--out", str(tmp_path / "new")])
    err = proc.stderr
    assert proc.returncode == 2 and proc.stdout == "" and err.startswith("error: " + NO_GPU_START), err
    assert err.count("\n") == 1
    assert not (tmp_path / "new").exists()  # nothing created before the GPU is there


@pytest.mark.parametrize(
    "shape",
    [
        "1_6:1:1:64:64",  # int() reads 16
        "\u0661:1:1:64:64",  # an Arabic-Indic one
        " 1:1:1:64:64",
        "0:1:1:64:64",
        "1:1:1:64:64:0",
        "1:3:2:64:64",  # H_kv does not divide H
        "1:1:1:64:63",  # a head dim the kernels do not have
        "99999999999999999999:1:1:64:64",  # B = 10^20: accepted before, refused by simlib's Workload
        "1:1:1:2199023255552:64",  # N = 2^41
        "1:1:1:64:64:2199023255552",  # q_len = 2^41
        "1:1:1:64",
        "1:1:1:64:64:1:1",
    ],
)
def test_side_by_side_shape_is_checked_before_the_gpu(shape, capsys, tmp_path):
    rc, out, err = run_main(gk_cli.main, ["side-by-side", "--out", str(tmp_path), f"--shape={shape}"], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "argument --shape" in err, err
    assert NO_GPU_START not in err


def test_a_good_side_by_side_shape_reaches_the_one_line_no_gpu_answer(tmp_path):
    proc = run_cli(["side-by-side", "--out", str(tmp_path / "new"), "--shape", "8:32:8:32768:128:1"])
    err = proc.stderr
    assert proc.returncode == 2 and proc.stdout == "" and err.startswith("error: " + NO_GPU_START), err
    assert err.count("\n") == 1 and not (tmp_path / "new").exists()


def test_side_by_side_usage_errors_are_one_line(capsys, tmp_path):
    """side-by-side printed argparse's usage block and a second line."""
    rc, out, err = run_main(gk_cli.main, ["side-by-side", "--bogus"], capsys)
    assert rc == 2 and err.count("\n") == 1 and err.startswith("error: "), err


def test_help_does_not_list_the_internal_launch_command(capsys):
    with pytest.raises(SystemExit):
        gk_cli.build_parser().parse_args(["--help"])
    listing = capsys.readouterr().out
    assert "run " in listing and "\n    launch" not in listing, listing


# --- closed stdout --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["simlib", "count", "--algorithm", "fa2", "--seq-len", "256", "--head-dim", "64", "--sram", "48KiB"],
        ["gpu_kernels", "--help"],
        ["gpu_kernels", "side-by-side", "--help"],
    ],
)
def test_closed_stdout_is_one_line_not_a_traceback(args):
    """`python -m simlib count ... >&-` ended in AttributeError: 'NoneType' object has no attribute 'flush'."""
    env = {**os.environ, "PYTHONPATH": REPO}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),
        timeout=120,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr == "error: standard output is closed (redirect it to a file or /dev/null instead)\n"


# --- energy -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [True, math.inf, math.nan, -1.0, "1", np.float64("nan")])
def test_energy_time_s_must_be_finite_and_not_a_bool(bad):
    from simlib import Workload, count
    from simlib.energy import energy

    r = count("fa2", Workload(1024, 64), sram_bytes=48 * 1024)
    with pytest.raises(ValueError, match="time_s must be"):
        energy(r, "h200", time_s=bad)
    assert math.isfinite(energy(r, "h200", time_s=np.float32(1e-3)).total_j)


def test_energy_json_is_json(capsys):
    """`energy ... --json` emitted Infinity for --time-s inf; now the flag is refused and JSON is strict."""
    rc, out, _ = run_main(
        simlib_cli.main,
        [
            "energy",
            "--algorithm",
            "fa2",
            "--seq-len",
            "1024",
            "--head-dim",
            "64",
            "--batch",
            "2",
            "--heads",
            "16",
            "--gpu",
            "h200",
            "--json",
        ],  # B·H·⌈N/64⌉ = 512 blocks: the cost model's regime (below 211 FA2 splits the KV loop)
        capsys,
    )

    def refuse(name):
        raise AssertionError(f"not JSON: {name}")

    assert rc == 0 and json.loads(out, parse_constant=refuse)["total_j"] > 0


# --- kvcache ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "contexts,batch",
    [([-1], 1), ([1024], -3), ([1024], 0), ([math.nan], 1), ([1024.5], 1), ([1024], True), ([], 1)],
)
def test_kvcache_memory_table_refuses_non_positive_and_non_integer_values(contexts, batch):
    """memory_table(M, [-1]) gave -131,072 bytes, batch=-3 negative bytes, NaN rows."""
    from simlib.kvcache import load_model, memory_table

    with pytest.raises(ValueError, match="contexts|batch"):
        memory_table(load_model("llama-3-8b"), contexts, batch=batch)


@pytest.mark.parametrize("flag,value", [("--batch", "-3"), ("--reserve", "-1"), ("--gpu-memory", "-1GiB")])
def test_kvcache_cli_refuses_negative_values(flag, value, capsys):
    argv = ["kvcache", "--model", "llama-3-8b", "--gpu-memory", "16GiB", f"{flag}={value}"]
    if flag == "--gpu-memory":
        argv = ["kvcache", "--model", "llama-3-8b", f"{flag}={value}"]
    rc, out, err = run_main(simlib_cli.main, argv, capsys)
    assert rc == 2 and out == "" and flag in err, err


# --- kernels' numeric inputs ----------------------------------------------------------------------


def self_similar_fp16(scale=100.0, n=20):
    """q = k: the diagonal scores |q_i|²/√d reach ~1.1e5 at scale 100, beyond fp16's 65,504."""
    from gpu_kernels.reference import random_qkv

    q, _, v = random_qkv(1, 1, n, 64, seed=1)
    q = (q * np.float32(scale)).astype(np.float32)
    return q, q.copy(), v


def test_naive_tc_fp16_score_overflow_is_refused_and_fa2_tc_is_right_there(monkeypatch):
    """naive_tc stores S in fp16: scores above 65,504 became inf and their rows NaN (16 of 20 here)."""
    import gpu_kernels.kernels.naive_tc as naive_tc
    from gpu_kernels.kernels.fa2_tc import TcConfig, run_fa2_tc
    from gpu_kernels.reference import attention_reference, rel_error
    from gpu_kernels.tensor_core.dtypes import round_to

    q, k, v = self_similar_fp16()
    ref, _ = attention_reference(*(round_to(x, "fp16") for x in (q, k, v)))
    cfg = naive_tc.NaiveTcConfig(64, 1, 64)
    with pytest.raises(ValueError, match="overflows fp16.*fa2_tc"):
        naive_tc.run_naive_tc(q, k, v, dtype="fp16", config=cfg)
    fa2 = run_fa2_tc(q, k, v, dtype="fp16", config=TcConfig(64, 1, 16))
    assert np.all(np.isfinite(fa2.o)) and rel_error(fa2.o, ref) < 2 * 2.0**-11
    monkeypatch.setattr(naive_tc, "check_scores_fit", lambda *a: None)  # what it did before the check
    with warnings.catch_warnings():  # inf − inf in the simulated softmax's threads
        warnings.simplefilter("ignore", RuntimeWarning)
        unchecked = naive_tc.run_naive_tc(q, k, v, dtype="fp16", config=cfg).o
    assert np.isnan(unchecked).any()
    # bf16 has the range: the same inputs run
    naive_tc.check_scores_fit(q, k, "bf16")


def test_naive_tc_scores_check_sees_only_visible_scores_under_causal():
    from gpu_kernels.tensor_core.tc_plan import check_scores_fit

    q, k, _ = self_similar_fp16(n=4)
    k[:, :, 1:] = 0  # only key 0 overflows, and only for query 0 (q = k there) ... which sees key 0
    q[:, :, 1:] = 0
    with pytest.raises(ValueError, match=r"S\[0, 0, 0, 0\]"):
        check_scores_fit(q, k, "fp16", causal=True)
    q2 = np.zeros_like(q)
    q2[:, :, 0] = q[:, :, 0]
    k2 = np.zeros_like(k)
    k2[:, :, 3] = q[:, :, 0]  # query 0 against key 3: masked when causal (N_q = N_k)
    check_scores_fit(q2, k2, "fp16", causal=True)
    with pytest.raises(ValueError, match="overflows fp16"):
        check_scores_fit(q2, k2, "fp16", causal=False)


def test_tensor_core_inputs_that_round_to_inf_are_refused():
    from gpu_kernels.kernels.fa2_tc import TcConfig, run_fa2_tc
    from gpu_kernels.reference import random_qkv

    q, k, v = random_qkv(1, 1, 16, 64, seed=0)
    with pytest.raises(ValueError, match="^k: values beyond fp16"):
        run_fa2_tc(q, (k * 1e5).astype(np.float32), v, dtype="fp16", config=TcConfig(64, 1, 16))


def test_kernels_refuse_nan_inputs():
    """A NaN in V went through to O. (±inf stays allowed: −∞ keys are the tests' masking idiom.)"""
    from gpu_kernels import run_tiled
    from gpu_kernels.reference import random_qkv

    q, k, v = random_qkv(1, 1, 8, 16, seed=0)
    v[0, 0, 3, 2] = np.nan
    with pytest.raises(ValueError, match="^v has NaN values"):
        run_tiled(q, k, v)


@pytest.mark.parametrize(
    "shapes,needle",
    [
        ("1_6,1,64,64,0", "with integers"),
        ("\u0661,1,64,64,0", "with integers"),
        ("0,1,64,64,0", "batch must be a positive integer"),
        ("1,1,2199023255552,64,0", "seq_len must be at most"),
        ("1,1,64,64,2", "causal must be 0 or 1"),
    ],
)
def test_cost_check_predict_shapes_are_checked_in_one_line(shapes, needle, tmp_path):
    """`python -m simlib.cost.check --predict` read '1_6' as 16 and gave a traceback for a bad shape."""
    proc = subprocess.run(
        [sys.executable, "-m", "simlib.cost.check", "--predict", shapes, "--out", str(tmp_path / "p.csv")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: --predict: ") and needle in proc.stderr, proc.stderr
    assert not (tmp_path / "p.csv").exists()
