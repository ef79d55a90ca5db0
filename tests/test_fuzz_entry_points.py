"""Fuzz every entry point (issue 26, item 6): each CLI subcommand and the main Python API functions.

CLI property: for any argument list built from the subcommand's own flags with hostile values ('',
'--', '-1', '1_6', '١٦', 'nan', '1e999', 'a/b', '/dev/full', random text), the command exits 0, 1 or
2; on an error it prints exactly one line on stderr and nothing on stdout, and never a traceback.
API property: any values give a result whose numbers are finite and non-negative, or a ValueError or
TypeError naming the parameter; never KeyError, ZeroDivisionError, OverflowError or a NaN.

Hypothesis runs derandomized (the same examples on every run: CI cannot go red at random) with a fixed
budget per entry point, a few seconds each. GPU commands run up to the GPU check, which answers "no
GPU" here (numba is the simulator in this process); `run --simulate`, the forwarded `figure2`,
`claims` and `model-vs-ncu` and the file-writing defaults are left out of the CLI fuzz (the kernels'
own suites and tests/test_docs_commands.py run them).
"""

import argparse
import math
import os
import re

import numba.cuda  # noqa: F401  the simulator, imported while conftest's switch is on (require_gpu flips it)
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evidence.cli as evidence_cli
import gpu_kernels.cli as gk_cli
import gpu_kernels.commands as gk_commands
import gpu_kernels.device as gk_device
import measurements.manifest as manifest
import simlib.command_line as simlib_cli
from simlib import Workload, count
from simlib.counts import ALGORITHMS

FUZZ = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

HOSTILE = [
    "",
    "-",
    "--",
    "0",
    "1",
    "-1",
    "16",
    "64",
    "128",
    "1_6",
    "١٦",
    "16.0",
    "1e3",
    "99999999999999999999999",
    "nan",
    "inf",
    "1e999",
    "a/b",
    "../x",
    "/dev/full",
    "192KiB",
    "0.5MiB",
    "-5GiB",
    "h200",
    "t4",
    "fa2",
    "naive",
    "bf16",
    "fp16",
    "llama-3-8b",
    "256:4096",
    "64,128",
    "4x4",
]
VALUE = st.sampled_from(HOSTILE) | st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=6
)


@pytest.fixture(autouse=True)
def _keep_the_simulator_switch(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", os.environ.get("NUMBA_ENABLE_CUDASIM", "1"))


def _flags(parser: argparse.ArgumentParser, command: str):
    """(option string, takes a value) for each flag of `command`'s subparser."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [
        (action.option_strings[-1], action.nargs != 0)
        for action in sub.choices[command]._actions
        if action.option_strings and action.option_strings[-1] not in ("--help", "-h")
    ]


def argv_for(command, flags, skip=()):
    """A strategy of argument lists: some of the flags, each with a hostile value (as --flag=value)."""
    usable = [f for f in flags if f[0] not in skip]

    def build(chosen, values):
        argv = [command]
        for (flag, takes), value in zip(chosen, values):
            argv.append(f"{flag}={value}" if takes else flag)
        return argv

    chosen = st.lists(st.sampled_from(usable), max_size=4, unique=True)
    return chosen.flatmap(
        lambda c: st.lists(VALUE, min_size=len(c), max_size=len(c)).map(lambda v: build(c, v))
    )


NOT_A_NUMBER = re.compile(r"(?<![\w.])(nan|inf|NaN|Infinity|-inf)(?![\w])")


#: the values every flag gets alone (the random combinations draw from all of HOSTILE and random text)
WORST = ["", "--", "-1", "0", "1_6", "١٦", "16.0", "nan", "inf", "1e999", "a/b", "/dev/full", "9" * 23]


def single_flag_argvs(command, flags, skip=()):
    """Every flag alone, with each of the worst values (a flag without a value once)."""
    for flag, takes in flags:
        if flag in skip:
            continue
        for value in WORST if takes else [None]:
            yield [command, f"{flag}={value}" if takes else flag]


def check_outcome(rc, out, err, argv):
    assert rc in (0, 1, 2), (argv, rc, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    if rc != 0:
        assert err.count("\n") == 1 and err.endswith("\n"), (argv, err)
        assert out == "", (argv, out)
    else:  # a number printed as nan or inf is a silently wrong number (`energy --time-s inf` was one)
        assert not NOT_A_NUMBER.search(out), (argv, NOT_A_NUMBER.search(out).group(0), out[-500:])


# --- simlib -------------------------------------------------------------------------------------------

SIMLIB = simlib_cli.build_parser()


@pytest.mark.parametrize("command", ["count", "sweep", "kvcache", "energy", "predict"])
def test_fuzz_simlib_commands(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a --csv value lands here, never in the repo
    flags = _flags(SIMLIB, command)
    shape = ["--seq-len", "256", "--head-dim", "64"]
    prefix = {  # valid required flags, so that most examples get past them to the fuzzed ones
        "count": ["--algorithm", "fa2", *shape],
        "sweep": shape,
        "energy": ["--algorithm", "fa2", *shape, "--gpu", "h200"],
        "kvcache": ["--model", "llama-3-8b"],
        "predict": ["--implementation", "fa2_tc", *shape, "--dtype", "bf16", "--gpu", "h200"],
    }[command]

    def one(argv):
        full = argv[:1] + prefix + argv[1:]  # valid required flags first: later ones override them
        rc = simlib_cli.main(full)
        captured = capsys.readouterr()
        check_outcome(rc, captured.out, captured.err, full)

    for argv in single_flag_argvs(command, flags):  # every flag alone with every hostile value
        one(argv)
    FUZZ(given(argv=argv_for(command, flags))(one))()  # then random combinations


# --- gpu_kernels --------------------------------------------------------------------------------------

GPU = gk_cli.build_parser()
GPU_COMMANDS = ["run", "bench", "compare", "tune", "ncu", "profile", "asm", "ceilings"]


def _no_gpu(what):
    raise gk_device.NoGPU(gk_device.NO_GPU_ONLY.format(what=what))


@pytest.mark.parametrize("command", GPU_COMMANDS + ["side-by-side"])
def test_fuzz_gpu_kernels_commands_up_to_the_gpu_check(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(gk_commands, "require_gpu", _no_gpu)
    monkeypatch.setattr(gk_device, "require_gpu", _no_gpu)
    if command == "side-by-side":
        from gpu_kernels.measure.side_by_side import parse_args

        flags = [
            (f, True) for f in ("--out", "--dtypes", "--causal", "--seq-lens", "--head-dims", "--variants")
        ]
        flags += [
            (f, True) for f in ("--batch", "--heads", "--kv-heads", "--reps", "--min-reps", "--budget-s")
        ]
        flags += [("--tag", True), ("--shape", True)]
        assert parse_args  # the parser the fuzz goes through, via cli.main
    else:
        flags = _flags(GPU, command)

    def one(argv):
        rc = gk_cli.main(argv)
        captured = capsys.readouterr()
        check_outcome(rc, captured.out, captured.err, argv)
        assert rc == 2 or command == "run", (argv, rc, captured.err)  # nothing runs without a GPU
        assert not list(tmp_path.iterdir()), (argv, list(tmp_path.iterdir()))  # nothing written before it

    for argv in single_flag_argvs(command, flags, skip=("--simulate",)):
        one(argv)
    FUZZ(given(argv=argv_for(command, flags, skip=("--simulate",)))(one))()


def test_fuzz_import_run_arguments(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run").mkdir()
    folder = st.sampled_from(["run", "missing", "", "a/b", "run/"])

    @FUZZ
    @given(folder=folder, run_id=VALUE, command=VALUE, note=VALUE)
    def run(folder, run_id, command, note):
        argv = [
            folder,
            f"--run-id={run_id}",
            f"--command={command}",
            f"--note={note}",
            f"--root={tmp_path / 'root'}",
        ]
        rc = manifest.main(argv)
        captured = capsys.readouterr()
        check_outcome(rc, captured.out, captured.err, argv)
        assert (tmp_path / "run").is_dir()  # an empty run folder is refused, not deleted

    run()


# --- evidence -----------------------------------------------------------------------------------------


def test_fuzz_evidence_figure2(capsys):
    @settings(FUZZ, max_examples=15)
    @given(sram=VALUE, json_flag=st.booleans())
    def run(sram, json_flag):
        argv = ["figure2", f"--sram={sram}"] + (["--json"] if json_flag else [])
        rc = evidence_cli.main(argv)
        captured = capsys.readouterr()
        check_outcome(rc, captured.out, captured.err, argv)

    run()


# --- Python API ---------------------------------------------------------------------------------------

NUMBER = (
    st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([True, False, None, "64", 64.0, 0])
)
API_ERRORS = (ValueError, TypeError)


def _finite_nonnegative(row):
    for key, value in row.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert math.isfinite(value) and value >= 0 or key.endswith("overshoot_bytes"), (key, value)


@FUZZ
@given(
    algorithm=st.sampled_from(ALGORITHMS),
    n=NUMBER | st.integers(1, 5000),
    d=NUMBER | st.sampled_from([16, 64, 128]),
    batch=NUMBER | st.integers(1, 4),
    sram=NUMBER | st.sampled_from(["48KiB", "192KiB", 65536]),
    dtype=st.sampled_from(["fp16", "bf16", "fp32", "fp8", None, 2]),
    causal=st.sampled_from([True, False, 1, "yes"]),
)
def test_fuzz_count(algorithm, n, d, batch, sram, dtype, causal):
    try:
        wl = Workload(n, d, batch, 1, dtype=dtype, causal=causal)
        result = count(algorithm, wl, sram_bytes=sram)
    except API_ERRORS:
        return
    _finite_nonnegative(result.to_dict())


@FUZZ
@given(
    time_s=NUMBER, dram=NUMBER | st.floats(0, 1), unit=st.sampled_from([None, "tensor_core", "fp32_fma", "x"])
)
def test_fuzz_energy(time_s, dram, unit):
    from simlib.energy import energy

    r = count("fa2", Workload(1024, 64), sram_bytes=48 * 1024)
    try:
        e = energy(r, "h200", time_s=time_s, dram_fraction=dram, flop_unit=unit)
    except API_ERRORS:
        return
    assert math.isfinite(e.total_j) and e.total_j > 0


@FUZZ
@given(
    gpu_bytes=NUMBER | st.integers(1, 2**40),
    batch=NUMBER | st.integers(1, 64),
    reserve=NUMBER | st.integers(0, 2**34),
    contexts=st.lists(NUMBER | st.integers(0, 8192), max_size=4),
    kv=st.sampled_from(["fp16", "fp32", "int4", None]),
)
def test_fuzz_kvcache(gpu_bytes, batch, reserve, contexts, kv):
    from simlib.kvcache import load_model, max_context, memory_table

    m = load_model("llama-3-8b")
    try:
        tokens = max_context(m, gpu_bytes, batch, "fp16", kv, reserve)
    except API_ERRORS:
        tokens = None
    assert tokens is None or (isinstance(tokens, int) and tokens >= 0)
    try:
        table = memory_table(m, contexts, batch=batch, kv_dtype=kv)
    except API_ERRORS:
        return
    assert (table[["kv_cache_bytes", "total_bytes"]] >= 0).all().all()


@FUZZ
@given(text=VALUE | NUMBER)
def test_fuzz_parse_size(text):
    from simlib.units import parse_size

    try:
        value = parse_size(text, "--sram")
    except ValueError as e:
        assert "--sram" in str(e)
        return
    assert isinstance(value, int) and 0 < value <= 2**60


@settings(FUZZ, max_examples=40)
@given(
    b=NUMBER | st.integers(1, 3),
    h=NUMBER | st.integers(1, 4),
    n=NUMBER | st.integers(1, 64),
    d=NUMBER | st.sampled_from([16, 64]),
    kv=st.none() | NUMBER | st.integers(1, 4),
    nq=st.none() | NUMBER | st.integers(1, 64),
    causal=st.sampled_from([True, False, 1, None]),
)
def test_fuzz_kernel_shape_checks(b, h, n, d, kv, nq, causal):
    """The kernels' shared shape check (every runner calls it before numba compiles anything)."""
    from gpu_kernels.checks import check_shape

    try:
        wl = check_shape(b, h, n, d, kv_heads=kv, query_len=nq, causal=causal)
    except API_ERRORS:
        return
    assert wl.seq_len >= 1 and wl.nq >= 1 and wl.heads % wl.n_kv_heads == 0
