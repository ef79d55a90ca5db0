"""Hostile input to simlib's API and CLI: exact numbers at any accepted size, or one clear refusal.

Each test would fail on the code before the hardening (issue 12): int64 overflow in the closed
forms, MemoryError from Tr-long arrays, presets followed as paths, sizes parsed through float,
options silently ignored, tracebacks on output faults.
"""

import contextlib
import io
import os
import stat

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simlib import Workload, count, load_preset, parse_size, roofline
from simlib.command_line import main
from simlib.kvcache import load_model, max_context
from simlib.safe_write import write_atomic


def run(*argv):
    """main(argv) in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def refused(status, out, err, needle):
    lines = err.strip().splitlines()
    return status == 2 and out == "" and len(lines) == 1 and needle in lines[0] and "Traceback" not in err


# --- 1. exact Python-int closed forms at any accepted N; traces refused before they start -------------


def test_fa2_at_n_2_pow_32_is_exact():
    # the case: flops and SRAM reads were 0 (int64 overflow in a numpy dot product)
    n, d = 2**32, 64
    r = count("fa2", Workload(n, d), sram_bytes="192KiB", tile_rule="fa1")
    tr = -(-n // 64)  # Br = min(⌈98304/256⌉, 64) = 64
    assert r.flops == 4 * n * n * d
    assert r.sram_read_bytes == n * n * (3 * d + 2) * 2  # docs/COUNTING.md §fa2, fp16
    assert r.hbm_read_bytes == (n * d + tr * 2 * n * d) * 2


@pytest.mark.parametrize("algorithm", ["fa2", "fa1", "flash_bwd"])
def test_causal_at_n_3_2_pow_30_counts_the_lower_triangle_of_tiles(algorithm):
    # Br = Bc = B, N = T·B: T(T+1)/2 tiles visited, each B² scores (was negative FLOPs at this N)
    n, d, b = 3 * 2**30, 64, 1024
    t = n // b
    r = count(algorithm, Workload(n, d, causal=True), block_rows=b, block_cols=b)
    per_score = 10 if algorithm == "flash_bwd" else 4
    assert r.flops == per_score * d * b * b * t * (t + 1) // 2 > 0


def test_closed_form_at_n_2_pow_40_needs_no_array():
    n = 2**40  # Tr = 2³⁴ blocks: no Tr-long array
    for algorithm, per_score in (("fa1", 4), ("fa2", 4), ("flash_bwd", 10)):
        r = count(algorithm, Workload(n, 64, causal=True), sram_bytes="192KiB")
        assert r.useful_flops * per_score // 4 <= r.flops <= per_score * n * n * 64
    assert count("fa2", Workload(n, 64), sram_bytes="192KiB").traffic.elements("HBM", "read", "Q") == n * 64


def test_seq_len_beyond_the_model_is_refused_by_name():
    with pytest.raises(ValueError, match="seq_len must be at most"):
        Workload(2**40 + 1, 64)
    assert refused(
        *run("count", "--algorithm", "naive", "--seq-len", str(2**41), "--head-dim", "64"), "--seq-len"
    )


def test_huge_trace_is_refused_before_it_starts():
    with pytest.raises(ValueError, match="trace"):
        count("fa2", Workload(2**40, 64), sram_bytes="192KiB", method="trace")
    with pytest.raises(ValueError, match="trace"):  # few tiles, but N·N·d overflows int64
        count("fa2", Workload(2**40, 64), block_rows=2**40, block_cols=2**40, method="trace")
    assert refused(
        *run(
            "count",
            "--algorithm",
            "fa2",
            "--seq-len",
            str(2**40),
            "--head-dim",
            "64",
            "--sram",
            "192KiB",
            "--trace",
        ),
        "--trace",
    )


# --- 3. presets and models by key only -----------------------------------------------------------------


@pytest.mark.parametrize("key", ["../models/llama-3-8b", "/etc/passwd", "h200.json", "", "H200", "./h200"])
def test_presets_are_looked_up_by_key_only(key):
    with pytest.raises(ValueError, match="gpu must be one of a100-40gb"):
        load_preset(key)
    assert refused(
        *run("count", "--algorithm", "naive", "--seq-len", "64", "--head-dim", "64", "--gpu", key), "h200"
    )


@pytest.mark.parametrize(
    "key", ["../hardware/h200", "/work/main/data/models/llama-3-8b", "llama-3-8b.json", ""]
)
def test_models_are_looked_up_by_key_only(key):
    with pytest.raises(ValueError, match="model must be one of llama-2-70b"):
        load_model(key)
    assert refused(*run("kvcache", "--model", key, "--gpu-memory", "16GiB"), "llama-3-8b")


# --- 4. sizes parsed exactly ----------------------------------------------------------------------------


def test_sizes_are_parsed_exactly():
    assert parse_size("9007199254740993") == 2**53 + 1  # float would give 2**53
    assert parse_size("0.5KiB") == 512 and parse_size("1.25MiB") == 1310720


@pytest.mark.parametrize(
    "text",
    [
        "1" + "0" * 400,
        "9" * 40 + "KiB",
        "1.1KiB",
        "1e3",
        "inf",
        "nan",
        "٣KiB",
        "2EiB",
        "2000000TiB",
        "-1",
        "0",
        "1 2",
        "12QB",
        "1_000",
    ],
)
def test_bad_sizes_are_refused_in_one_line(text):
    with pytest.raises(ValueError, match="sram"):
        parse_size(text)
    assert refused(
        *run("count", "--algorithm", "fa2", "--seq-len", "64", "--head-dim", "64", "--sram", text), "--sram"
    )
    assert refused(*run("kvcache", "--model", "llama-3-8b", "--gpu-memory", text), "--gpu-memory")


# --- 5. no ignored or swallowed option ------------------------------------------------------------------


def test_empty_gpu_and_csv_are_refused(tmp_path):
    assert refused(
        *run("count", "--algorithm", "naive", "--seq-len", "64", "--head-dim", "64", "--gpu", ""), "--gpu"
    )
    assert refused(
        *run("sweep", "--algorithm", "naive", "--seq-len", "64", "--head-dim", "64", "--csv", ""), "--csv"
    )


def test_sram_given_with_a_preset_wins_and_says_so():
    import json

    status, out, _ = run(
        "count",
        "--algorithm",
        "fa2",
        "--seq-len",
        "4096",
        "--head-dim",
        "64",
        "--gpu",
        "h200",
        "--sram",
        "192KiB",
        "--json",
    )
    row = json.loads(out)
    assert status == 0 and row["sram_bytes"] == 196608 and row["gpu"] == "h200"
    assert row["sram_source"].startswith("--sram") and "232,448" in row["sram_source"]
    status, out, _ = run(
        "count", "--algorithm", "fa2", "--seq-len", "4096", "--head-dim", "64", "--gpu", "h200", "--json"
    )
    assert json.loads(out)["sram_bytes"] == 232448  # the preset's 227 KiB per block


def test_sram_is_not_dropped_for_fa2_fast_nor_ignored_for_unfused():
    # the fast kernel's d = 64 tiles need 107 KiB in fp32: 48 KiB is refused, on the CLI as in the API
    assert refused(
        *run(
            "count",
            "--algorithm",
            "fa2_fast",
            "--seq-len",
            "256",
            "--head-dim",
            "64",
            "--dtype",
            "fp32",
            "--sram",
            "48KiB",
        ),
        "sram_bytes",
    )
    assert refused(
        *run("count", "--algorithm", "unfused", "--seq-len", "256", "--head-dim", "64", "--sram", "48KiB"),
        "--sram",
    )
    with pytest.raises(ValueError, match="sram_bytes does not apply to unfused"):
        count("unfused", Workload(64, 64), sram_bytes="48KiB")


@pytest.mark.parametrize("value", ["no", 0.5, 1, "True", np.bool_(True)])
def test_dropout_takes_only_a_bool(value):
    with pytest.raises(ValueError, match="dropout must be True or False"):
        count("unfused", Workload(64, 64), dropout=value)


def test_negative_reserve_is_refused():
    with pytest.raises(ValueError, match="reserve_bytes"):
        max_context(load_model("llama-3-8b"), 16 * 2**30, reserve_bytes=-(2**30))
    assert refused(
        *run("kvcache", "--model", "llama-3-8b", "--gpu-memory", "16GiB", "--reserve", "-1GiB"), "--reserve"
    )


def test_sram_smaller_than_one_element_is_refused_not_divided_by():
    # found by the fuzz test below: naive with --sram 1 divided by M = 0 in the Saha–Ye bound
    assert refused(
        *run("count", "--algorithm", "naive", "--seq-len", "64", "--head-dim", "64", "--sram", "1"), "sram"
    )


def test_wrong_types_name_the_parameter():
    with pytest.raises(TypeError, match="workload must be a simlib.Workload, got NoneType"):
        count("naive", None)
    with pytest.raises(TypeError, match="hardware must be a simlib Hardware"):
        roofline(count("naive", Workload(64, 64)), "h200")
    with pytest.raises(TypeError, match="result must be a simlib Result"):
        roofline("naive", load_preset("h200"))
    with pytest.raises(ValueError, match="algorithm must be one of"):
        count(None, Workload(64, 64))


def test_numpy_integers_are_accepted_and_floats_and_bools_refused():
    w = Workload(np.int64(4096), np.int32(64), batch=np.uint8(2), heads=np.int16(4), kv_heads=np.int64(2))
    assert type(w.seq_len) is int and w == Workload(4096, 64, batch=2, heads=4, kv_heads=2)
    assert count("fa2", w, block_rows=np.int64(128), block_cols=np.int32(64)).block_rows == 128
    for bad in (4096.0, np.float64(4096), True, np.bool_(True), "4096"):
        with pytest.raises(ValueError, match="seq_len must be a positive integer"):
            Workload(bad, 64)


# --- 6. output faults -------------------------------------------------------------------------------------

SWEEP = ("sweep", "--algorithm", "naive", "--seq-len", "64,128", "--head-dim", "16")


def test_csv_destination_is_checked_before_the_work(tmp_path):
    a_file = tmp_path / "a.txt"
    a_file.write_text("x")
    assert refused(*run(*SWEEP, "--csv", str(tmp_path)), "is a directory")
    assert refused(*run(*SWEEP, "--csv", str(tmp_path / "missing" / "out.csv")), "does not exist")
    assert refused(*run(*SWEEP, "--csv", str(a_file / "out.csv")), "under a file")
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]  # no temporary file left behind


def test_csv_is_written_atomically_with_mode_0644(tmp_path):
    out = tmp_path / "s.csv"
    old = os.umask(0o077)
    try:
        status, _, err = run(*SWEEP, "--csv", str(out))
    finally:
        os.umask(old)
    assert status == 0, err
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644 and sorted(os.listdir(tmp_path)) == ["s.csv"]


def test_a_failed_write_leaves_the_destination_and_no_temporary_file(tmp_path, monkeypatch):
    out = tmp_path / "s.csv"
    out.write_text("previous run\n")

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        write_atomic(str(out), "new rows\n")
    assert out.read_text() == "previous run\n" and sorted(os.listdir(tmp_path)) == ["s.csv"]


@pytest.mark.parametrize(
    "fault,status,needle",
    [
        (OSError(28, "No space left on device"), 1, "No space left on device"),
        (MemoryError(), 1, "out of memory"),
        (KeyboardInterrupt(), 130, "interrupted"),
    ],
)
def test_faults_during_the_work_give_one_line(monkeypatch, fault, status, needle):
    import simlib.command_line as cli

    def boom(args):
        raise fault

    monkeypatch.setitem(cli.COMMANDS, "count", boom)
    got, out, err = run("count", "--algorithm", "naive", "--seq-len", "64", "--head-dim", "64")
    lines = err.strip().splitlines()
    assert got == status and len(lines) == 1 and needle in lines[0] and "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_stdout_to_dev_full_gives_one_line():
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "simlib",
                "count",
                "--algorithm",
                "naive",
                "--seq-len",
                "64",
                "--head-dim",
                "64",
            ],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1 and len(lines) == 1 and "No space left" in lines[0], p.stderr


# --- Also: every numeric and size flag fuzzed with arbitrary strings ------------------------------------

BASE = {
    "count": ["count", "--algorithm", "{algo}", "--seq-len", "64", "--head-dim", "16"],
    "sweep": ["sweep", "--algorithm", "{algo}", "--seq-len", "64", "--head-dim", "16"],
    "kvcache": ["kvcache", "--model", "llama-3-8b"],
    "figure2": ["figure2"],
}
FLAGS = [
    (cmd, flag)
    for cmd in ("count", "sweep")
    for flag in (
        "--seq-len",
        "--head-dim",
        "--batch",
        "--heads",
        "--kv-heads",
        "--query-len",
        "--sram",
        "--gpu",
        "--block-rows",
        "--block-cols",
        "--matmul-tile",
        "--softmax-threads",
        "--splits",
        "--threads",
    )
]
FLAGS += [
    ("sweep", "--csv"),
    ("kvcache", "--gpu-memory"),
    ("kvcache", "--reserve"),
    ("kvcache", "--batch"),
    ("kvcache", "--model"),
    ("figure2", "--sram"),
]
ALGO_FOR = {"--block-rows": "fa2", "--block-cols": "fa2", "--splits": "decode", "--threads": "fa2_fast"}
FUZZ_EXAMPLES = int(os.environ.get("SIMLIB_FUZZ_EXAMPLES", 1500))
NUMBERISH = st.from_regex(r"\A[-+ 0-9.,:xkKmMgGiIbBeE_]{0,24}\Z")


@pytest.mark.parametrize("flag_of", FLAGS, ids=lambda f: " ".join(f))
def test_a_lone_double_dash_as_a_value_is_refused_by_name(flag_of):
    """`--reserve=--`: argparse drops the "--" and would pass the command an empty list, unconverted
    (the fuzz found kvcache crashing on it); every flag refuses it in one line naming the flag."""
    cmd, flag = flag_of
    argv = [a.format(algo=ALGO_FOR.get(flag, "naive")) for a in BASE[cmd]]
    if cmd == "kvcache" and flag != "--gpu-memory":
        argv += ["--gpu-memory", "16GiB"]
    assert refused(*run(*argv, f"{flag}=--"), f"argument {flag}: expected a value, got '--'")


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FLAGS), st.one_of(st.text(max_size=40), NUMBERISH))
def test_fuzzed_flags_exit_0_or_2_with_one_line(tmp_path_factory, flag_of, text):
    cmd, flag = flag_of
    argv = [a.format(algo=ALGO_FOR.get(flag, "naive")) for a in BASE[cmd]]
    if cmd == "kvcache" and flag not in ("--gpu-memory",):
        argv += ["--gpu-memory", "16GiB"]
    if cmd == "kvcache" and flag == "--model":
        argv = ["kvcache", "--gpu-memory", "16GiB"]
    if flag == "--csv" and text not in ("", "-"):
        text = str(tmp_path_factory.mktemp("fuzz") / text.replace("\x00", "").replace("/", "_")[:30])
    status, out, err = run(*argv, f"{flag}={text}")
    assert "Traceback" not in err
    if status == 0:
        assert err == ""
    else:
        assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, (argv, text, err)
