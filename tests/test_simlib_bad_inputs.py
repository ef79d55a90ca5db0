"""A catalogue of bad inputs per entry point, each refused cleanly (issue 12's table).

CLI: exit 2, nothing on stdout, one line on stderr containing the needle (the parameter), no
traceback. API: ValueError or TypeError whose message contains the needle. `python -m pytest
tests/test_simlib_bad_inputs.py -q` prints how many per entry point (test_the_table).
"""

import contextlib
import io
from collections import Counter

import numpy as np
import pytest

from simlib import Workload, count, load_preset, parse_size, roofline
from simlib.command_line import main
from simlib.kvcache import load_model, max_context

C = ["count", "--algorithm", "fa2", "--seq-len", "64", "--head-dim", "64"]
S = ["sweep", "--algorithm", "naive,fa2", "--seq-len", "64", "--head-dim", "64"]
K = ["kvcache", "--model", "llama-3-8b"]
C4 = ["count", "--algorithm", "fa2", "--seq-len", "4096", "--head-dim", "64"]

CLI = [
    # count: workload flags
    (C[:4] + ["0"] + C[5:], "--seq-len"),
    (C[:4] + ["-3"] + C[5:], "--seq-len"),
    (C[:4] + ["1e3"] + C[5:], "--seq-len"),
    (C[:4] + ["4096.0"] + C[5:], "--seq-len"),
    (C[:4] + ["0x40"] + C[5:], "--seq-len"),
    (C[:4] + [""] + C[5:], "--seq-len"),
    (C[:4] + ["9" * 30] + C[5:], "--seq-len"),
    (C[:4] + [str(2**41)] + C[5:], "--seq-len"),
    (C[:4] + ["١٢٣"] + C[5:], "--seq-len"),
    (C[:6] + ["0"], "--head-dim"),
    (C[:6] + [str(2**17)], "--head-dim"),
    (C + ["--batch", "0"], "--batch"),
    (C + ["--heads", "x"], "--heads"),
    (C + ["--heads", "4", "--kv-heads", "3"], "kv_heads"),
    (C + ["--kv-heads", "2"], "kv_heads"),
    (C + ["--query-len", "0"], "--query-len"),
    (C + ["--query-len", "65", "--causal"], "query_len"),
    (C + ["--dtype", "fp8"], "--dtype"),
    (["count", "--algorithm", "fa3", "--seq-len", "64", "--head-dim", "64"], "--algorithm"),
    (["count", "--seq-len", "64", "--head-dim", "64"], "--algorithm"),
    (["count"], "required"),
    # count: SRAM, preset, sizes
    (C + ["--sram", "lots"], "--sram"),
    (C + ["--sram", "0"], "--sram"),
    (C + ["--sram", "-1KiB"], "--sram"),
    (C + ["--sram", "1" + "0" * 400], "--sram"),
    (C + ["--sram", "9" * 40 + "KiB"], "--sram"),
    (C + ["--sram", "1.5"], "--sram"),
    (C + ["--sram", "2EiB"], "--sram"),
    (C + ["--sram", "inf"], "--sram"),
    (C + ["--sram", "100"], "sram"),
    (C + ["--gpu", "z80"], "--gpu"),
    (C + ["--gpu", ""], "--gpu"),
    (C + ["--gpu", "../models/llama-3-8b"], "--gpu"),
    (C + ["--gpu", "/etc/passwd"], "--gpu"),
    (C + ["--gpu", "h200.json"], "--gpu"),
    (C + ["--gpu", "H200"], "--gpu"),
    # count: schedule parameters
    (C + ["--sram", "1KiB", "--block-cols", "9"], "block_cols"),
    (C + ["--block-rows", "0"], "--block-rows"),
    (C + ["--block-rows", "x"], "--block-rows"),
    (C + ["--matmul-tile", "16"], "matmul_tile"),
    (C + ["--splits", "2"], "splits"),
    (C + ["--threads", "32x8"], "threads"),
    (["count", "--algorithm", "fa1", "--seq-len", "64", "--head-dim", "64", "--no-dropout"], "dropout"),
    (C + ["--tile-rule", "fa3"], "--tile-rule"),
    (C + ["--arch", "sm70"], "--arch"),
    (C4 + ["--gpu", "h200", "--block-rows", "454", "--block-cols", "454"], "block_rows=454"),
    (
        C4 + ["--sram", "48KiB", "--dtype", "fp32", "--block-rows", "128", "--block-cols", "128"],
        "block_rows=128",
    ),
    (["count", "--algorithm", "fa1", "--seq-len", "64", "--head-dim", "64"], "sram"),
    (
        ["count", "--algorithm", "naive", "--seq-len", "64", "--head-dim", "64", "--softmax-threads", "3"],
        "softmax_threads",
    ),
    (
        [
            "count",
            "--algorithm",
            "naive",
            "--seq-len",
            "64",
            "--head-dim",
            "64",
            "--sram",
            "1KiB",
            "--matmul-tile",
            "32",
        ],
        "matmul_tile",
    ),
    (["count", "--algorithm", "naive", "--seq-len", "64", "--head-dim", "64", "--sram", "1"], "sram"),
    (
        [
            "count",
            "--algorithm",
            "naive_bwd",
            "--seq-len",
            "64",
            "--head-dim",
            "64",
            "--softmax-threads",
            "8",
        ],
        "softmax_threads",
    ),
    (
        [
            "count",
            "--algorithm",
            "decode",
            "--seq-len",
            "64",
            "--head-dim",
            "64",
            "--causal",
            "--sram",
            "64KiB",
        ],
        "causal",
    ),
    (
        [
            "count",
            "--algorithm",
            "decode",
            "--seq-len",
            "64",
            "--head-dim",
            "64",
            "--sram",
            "64KiB",
            "--splits",
            "0",
        ],
        "--splits",
    ),
    (["count", "--algorithm", "fa2_fast", "--seq-len", "64", "--head-dim", "64", "--causal"], "causal"),
    (
        ["count", "--algorithm", "fa2_fast", "--seq-len", "64", "--head-dim", "64", "--threads", "32"],
        "--threads",
    ),
    (
        ["count", "--algorithm", "fa2_fast", "--seq-len", "64", "--head-dim", "64", "--threads", "0x8"],
        "--threads",
    ),
    (
        ["count", "--algorithm", "fa2_fast", "--seq-len", "64", "--head-dim", "64", "--block-rows", "100"],
        "block_rows",
    ),
    (
        [
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
        ],
        "sram_bytes",
    ),
    (["count", "--algorithm", "unfused", "--seq-len", "64", "--head-dim", "64", "--sram", "48KiB"], "--sram"),
    (
        ["count", "--algorithm", "unfused", "--seq-len", "64", "--head-dim", "64", "--matmul-tile", "8"],
        "matmul_tile",
    ),
    (C + ["--sram", "192KiB", "--trace", "--seq-len", str(2**40)], "--trace"),
    (C + ["--bogus"], "--bogus"),
    # sweep
    (S[:4] + ["64,x"] + S[5:], "--seq-len"),
    (S[:4] + ["64:32"] + S[5:], "--seq-len"),
    (S[:4] + ["1:2:4"] + S[5:], "--seq-len"),
    (S[:4] + ["0:64"] + S[5:], "--seq-len"),
    (S[:4] + [","] + S[5:], "--seq-len"),
    (S[:2] + ["naive,fa9"] + S[3:], "algorithm"),
    (S + ["--sram", "1KiB,lots"], "--sram"),
    (S + ["--csv", ""], "--csv"),
    (S + ["--csv", "/"], "--csv"),
    (S + ["--csv", "/nonexistent-folder/out.csv"], "--csv"),
    (S + ["--csv", "/etc/hostname/out.csv"], "--csv"),
    (
        [
            "sweep",
            "--seq-len",
            "1:1099511627776",
            "--head-dim",
            "64",
            "--batch",
            "1:4294967296",
            "--heads",
            "1:4294967296",
        ],
        "sweep",
    ),
    (S + ["--heads", "4", "--kv-heads", "3"], "kv_heads"),
    (S + ["--threads", "32x8,0x1"], "--threads"),
    # kvcache
    (["kvcache", "--model", "gpt-5", "--gpu-memory", "16GiB"], "--model"),
    (["kvcache", "--model", "../hardware/h200", "--gpu-memory", "16GiB"], "--model"),
    (["kvcache", "--model", "/work/main/data/models/llama-3-8b", "--gpu-memory", "16GiB"], "--model"),
    (["kvcache", "--model", "", "--gpu-memory", "16GiB"], "--model"),
    (K, "--gpu"),
    (K + ["--gpu-memory", "lots"], "--gpu-memory"),
    (K + ["--gpu-memory", "1" + "0" * 400], "--gpu-memory"),
    (K + ["--gpu-memory", "9" * 40 + "KiB"], "--gpu-memory"),
    (K + ["--gpu-memory", "0"], "--gpu-memory"),
    (K + ["--gpu", "z80"], "--gpu"),
    (K + ["--gpu", ""], "--gpu"),
    (K + ["--gpu", "h200", "--gpu-memory", "1GiB"], "--gpu"),
    (K + ["--gpu-memory", "16GiB", "--batch", "0"], "--batch"),
    (K + ["--gpu-memory", "16GiB", "--reserve", "-1GiB"], "--reserve"),
    (K + ["--gpu-memory", "16GiB", "--reserve", "x"], "--reserve"),
    (K + ["--gpu-memory", "16GiB", "--weight-dtype", "int3"], "--weight-dtype"),
    (K + ["--gpu-memory", "16GiB", "--kv-dtype", "int8"], "--kv-dtype"),
    # figure2
    (["figure2", "--sram", "tiny"], "--sram"),
    (["figure2", "--sram", "0"], "--sram"),
    (["figure2", "--bogus"], "--bogus"),
    # no command
    ([], "command"),
    (["nonsense"], "command"),
]

W = Workload(64, 64)
API = [
    ("Workload", lambda: Workload(0, 64), "seq_len"),
    ("Workload", lambda: Workload(64, 0), "head_dim"),
    ("Workload", lambda: Workload(64.0, 64), "seq_len"),
    ("Workload", lambda: Workload(True, 64), "seq_len"),
    ("Workload", lambda: Workload("64", 64), "seq_len"),
    ("Workload", lambda: Workload(np.float64(64), 64), "seq_len"),
    ("Workload", lambda: Workload(np.bool_(True), 64), "seq_len"),
    ("Workload", lambda: Workload(2**40 + 1, 64), "seq_len"),
    ("Workload", lambda: Workload(64, 64, batch=0), "batch"),
    ("Workload", lambda: Workload(64, 64, heads=1.5), "heads"),
    ("Workload", lambda: Workload(64, 64, dtype="fp8"), "dtype"),
    ("Workload", lambda: Workload(64, 64, dtype=None), "dtype"),
    ("Workload", lambda: Workload(64, 64, dtype=["fp16"]), "dtype"),
    ("Workload", lambda: Workload(64, 64, heads=4, kv_heads=3), "kv_heads"),
    ("Workload", lambda: Workload(64, 64, query_len=65, causal=True), "query_len"),
    ("Workload", lambda: Workload(64, 64, causal="yes"), "causal"),
    ("Workload", lambda: Workload(64, 64, causal=1), "causal"),
    ("count", lambda: count("fa4", W), "algorithm"),
    ("count", lambda: count(None, W), "algorithm"),
    ("count", lambda: count("naive", None), "workload"),
    ("count", lambda: count("naive", "4096"), "workload"),
    ("count", lambda: count("fa2", W, method="walk"), "method"),
    ("count", lambda: count("fa2", W, sram_bytes="12 parsecs"), "sram_bytes"),
    ("count", lambda: count("fa2", W, sram_bytes=-5), "sram_bytes"),
    ("count", lambda: count("fa2", W, sram_bytes=True), "sram_bytes"),
    ("count", lambda: count("fa2", W, sram_bytes=1.5), "sram_bytes"),
    ("count", lambda: count("fa2", W, sram_bytes=100), "sram_bytes"),
    ("count", lambda: count("fa1", W), "sram_bytes"),
    ("count", lambda: count("fa2", W, block_rows=0, block_cols=4), "block_rows"),
    ("count", lambda: count("fa2", W, block_rows=4.0, block_cols=4), "block_rows"),
    ("count", lambda: count("fa2", W, block_rows=True, block_cols=4), "block_rows"),
    ("count", lambda: count("fa2", W, sram_bytes=1024, block_cols=3), "block_cols"),
    ("count", lambda: count("fa2", W, tile_rule="fa3"), "tile_rule"),
    ("count", lambda: count("fa2", W, arch="sm70"), "arch"),
    ("count", lambda: count("fa1", W, sram_bytes=1024, tile_rule="fa2"), "tile_rule"),
    ("count", lambda: count("fa2", W, matmul_tile=4), "matmul_tile"),
    ("count", lambda: count("fa2", W, block_row=4), "block_row"),
    ("count", lambda: count("naive", W, block_rows=4), "block_rows"),
    ("count", lambda: count("naive", W, matmul_tile=0), "matmul_tile"),
    ("count", lambda: count("naive", W, softmax_threads=3), "softmax_threads"),
    ("count", lambda: count("naive", W, sram_bytes=1024, matmul_tile=32), "matmul_tile"),
    ("count", lambda: count("unfused", W, dropout="no"), "dropout"),
    ("count", lambda: count("unfused", W, dropout=0.5), "dropout"),
    ("count", lambda: count("unfused", W, sram_bytes=1024), "sram_bytes"),
    ("count", lambda: count("decode", Workload(64, 64, causal=True), sram_bytes="64KiB"), "causal"),
    ("count", lambda: count("decode", W, sram_bytes="64KiB", splits=0), "splits"),
    ("count", lambda: count("fa2_fast", W, threads=(32,)), "threads"),
    ("count", lambda: count("fa2_fast", W, threads=(0, 8)), "threads"),
    ("count", lambda: count("fa2_fast", W, threads="32x8"), "threads"),
    ("count", lambda: count("fa2", W, hardware="h200"), "hardware"),
    (
        "count",
        lambda: count(
            "fa2", Workload(4096, 64), hardware=load_preset("h200"), block_rows=454, block_cols=454
        ),
        "block_rows=454",
    ),
    ("count", lambda: count("fa2", Workload(2**40, 64), sram_bytes="192KiB", method="trace"), "trace"),
    ("count", lambda: count("fa2", Workload(1024, 512)), "head_dim"),
    ("parse_size", lambda: parse_size("1" + "0" * 400), "sram"),
    ("parse_size", lambda: parse_size("1.1KiB"), "sram"),
    ("parse_size", lambda: parse_size(None), "sram"),
    ("parse_size", lambda: parse_size(b"1KiB"), "sram"),
    ("parse_size", lambda: parse_size("x" * 10000), "sram"),
    ("parse_size", lambda: parse_size(True), "sram"),
    ("load_preset", lambda: load_preset("../models/llama-3-8b"), "gpu"),
    ("load_preset", lambda: load_preset(None), "gpu"),
    ("load_preset", lambda: load_preset(["h200"]), "gpu"),
    ("load_preset", lambda: load_preset(""), "gpu"),
    ("load_model", lambda: load_model("../hardware/h200"), "model"),
    ("load_model", lambda: load_model(3), "model"),
    ("max_context", lambda: max_context(load_model("llama-3-8b"), 0), "gpu_bytes"),
    ("max_context", lambda: max_context(load_model("llama-3-8b"), 2**34, reserve_bytes=-1), "reserve_bytes"),
    ("max_context", lambda: max_context(load_model("llama-3-8b"), 2**34, batch=0), "batch"),
    ("max_context", lambda: max_context("llama-3-8b", 2**34), "model"),
    (
        "max_context",
        lambda: max_context(load_model("llama-3-8b"), 2**34, weight_dtype="int3"),
        "weight_dtype",
    ),
    ("roofline", lambda: roofline(count("naive", W), "h200"), "hardware"),
    ("roofline", lambda: roofline("naive", load_preset("h200")), "result"),
    ("roofline", lambda: roofline(count("naive", Workload(64, 64, dtype="bf16")), load_preset("t4")), "bf16"),
]


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv,needle", CLI, ids=[" ".join(a)[:60] for a, _ in CLI])
def test_cli_refuses_cleanly(argv, needle):
    status, out, err = run(argv)
    lines = err.strip().splitlines()
    assert status == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, err
    assert needle in lines[0], lines[0]


@pytest.mark.parametrize("entry,call,needle", API, ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(API)])
def test_api_refuses_cleanly(entry, call, needle):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert needle in str(info.value)


def test_the_table(capsys):
    cli = Counter(argv[0] if argv else "(no command)" for argv, _ in CLI)
    api = Counter(entry for entry, _, _ in API)
    with capsys.disabled():
        print("\nbad inputs per entry point:", dict(cli), dict(api))
    assert sum(cli.values()) == len(CLI) and sum(api.values()) == len(API)
