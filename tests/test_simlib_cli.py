"""The CLI end to end (a process each): good input prints results; bad input prints one line on stderr
and exits 2. The catalogue of bad inputs, one case per row, is tests/test_simlib_bad_inputs.py; the
cases here are the ones it does not hold, run as a user runs them."""

import json
import subprocess
import sys

import pytest

KEYS = {
    "algorithm",
    "seq_len",
    "head_dim",
    "batch",
    "heads",
    "dtype",
    "sram_bytes",
    "block_rows",
    "block_cols",
    "hbm_read_bytes",
    "hbm_write_bytes",
    "hbm_bytes",
    "sram_read_bytes",
    "sram_write_bytes",
    "flops",
}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "simlib", *args], capture_output=True, text=True)


def test_count_json_has_the_contract_keys_and_the_papers_numbers():
    p = cli(
        "count",
        "--algorithm",
        "fa2",
        "--seq-len",
        "4096",
        "--head-dim",
        "64",
        "--sram",
        "192KiB",
        "--batch",
        "2",
        "--heads",
        "4",
        "--tile-rule",
        "fa1",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert KEYS <= out.keys()
    n, d, bh = 4096, 64, 8
    tr = -(-n // 64)
    assert (out["block_rows"], out["block_cols"]) == (64, 384)
    assert out["hbm_read_bytes"] == bh * (n * d + tr * 2 * n * d) * 2
    assert out["hbm_write_bytes"] == bh * (n * d * 2 + n * 4)
    assert out["flops"] == 4 * n * n * d * bh
    assert out["tile_rule"] == "fa1"


def test_fa2_on_the_h200_takes_the_fa2_kernels_tiles():
    # issue 13's check: flash_fwd_launch_template.h runs d = 64 (no dropout) as 128×128 blocks, so
    # Tr = 4096/128 = 32 and HBM reads are Nd(1 + 2N/Br) = 262,144·65 = 17,039,360 fp16 elements
    p = cli("count", "--algorithm", "fa2", "--seq-len", "4096", "--head-dim", "64", "--gpu", "h200", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert (out["block_rows"], out["block_cols"], out["tile_rule"]) == (128, 128, "fa2")
    assert out["hbm_read_bytes"] == 4096 * 64 * (1 + 2 * 4096 // 128) * 2 == 34_078_720
    assert out["hbm_write_bytes"] == 4096 * 64 * 2 + 4096 * 4 == 540_672
    # on chip: Q_i, K_j, V_j in shared memory, S/P, O and ℓ, m in fp32 registers
    assert out["onchip_sram_bytes"] == (128 + 2 * 128) * 64 * 2
    assert out["onchip_register_bytes"] == (128 * 128 + 128 * 64 + 2 * 128) * 4


def test_infeasible_explicit_tiles_exit_2_with_the_bytes():
    # Br = Bc = 454 at d = 64 (the ⌈M/4d⌉ of 227 KiB): S/P alone is 454²·4 = 824,464 B of registers
    p = cli(
        "count",
        "--algorithm",
        "fa2",
        "--seq-len",
        "4096",
        "--head-dim",
        "64",
        "--gpu",
        "h200",
        "--block-rows",
        "454",
        "--block-cols",
        "454",
    )
    assert p.returncode == 2 and p.stdout == ""
    line = p.stderr.strip()
    assert "block_rows=454" in line and "824,464 B" in line and "262,144 B" in line and "\n" not in line
    # fa1 with 384×384 at d = 64, 192 KiB: (2·384·64·2)·2 + 384²·2 + 2·384·4 = 494,592 B > 196,608
    p = cli(
        "count",
        "--algorithm",
        "fa1",
        "--seq-len",
        "4096",
        "--head-dim",
        "64",
        "--sram",
        "192KiB",
        "--block-rows",
        "384",
        "--block-cols",
        "384",
    )
    assert p.returncode == 2 and "494,592 B" in p.stderr and "196,608" in p.stderr


def test_count_table_and_gpu_preset():
    p = cli("count", "--algorithm", "naive", "--seq-len", "1024", "--head-dim", "64", "--gpu", "a100-40gb")
    assert p.returncode == 0, p.stderr
    assert "roofline on a100-40gb" in p.stdout and "bound" in p.stdout


def test_trace_flag_gives_the_same_json():
    args = [
        "count",
        "--algorithm",
        "fa1",
        "--seq-len",
        "333",
        "--head-dim",
        "32",
        "--sram",
        "20000",
        "--json",
    ]
    assert json.loads(cli(*args).stdout) == json.loads(cli(*args, "--trace").stdout)


def test_sweep_csv_has_one_row_per_config(tmp_path):
    out = tmp_path / "s.csv"
    p = cli(
        "sweep",
        "--algorithm",
        "naive,fa2",
        "--seq-len",
        "256:2048",
        "--head-dim",
        "64",
        "--sram",
        "192KiB",
        "--csv",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    lines = out.read_text().strip().splitlines()
    assert len(lines) == 1 + 2 * 4  # header + 2 algorithms × N ∈ {256, 512, 1024, 2048}


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--algorithm", "fa3", "--seq-len", "64", "--head-dim", "64", "--sram", "1KiB"], "--algorithm"),
        (["--algorithm", "fa2", "--seq-len", "64", "--head-dim", "-1", "--sram", "1KiB"], "--head-dim"),
        (["--algorithm", "fa2", "--seq-len", "x", "--head-dim", "64", "--sram", "1KiB"], "--seq-len"),
        (
            ["--algorithm", "fa2", "--seq-len", "64", "--head-dim", "64", "--dtype", "fp8", "--sram", "1KiB"],
            "--dtype",
        ),
        (["--algorithm", "fa2", "--seq-len", "64", "--head-dim", "64", "--sram", "100"], "sram"),
        (
            [
                "--algorithm",
                "fa2",
                "--seq-len",
                "64",
                "--head-dim",
                "64",
                "--sram",
                "1KiB",
                "--block-cols",
                "9",
            ],
            "block_cols",
        ),
        (["--algorithm", "fa1", "--seq-len", "64", "--head-dim", "64"], "sram"),
        (["--seq-len", "64", "--head-dim", "64"], "--algorithm"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle):
    p = cli("count", *args)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in p.stderr


def test_kvcache_llama3_8b_on_16gib():
    p = cli("kvcache", "--model", "llama-3-8b", "--gpu-memory", "16GiB", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    per_token = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads, d = 128, fp16
    assert out["kv_bytes_per_token"] == per_token
    assert out["max_context_tokens"] == (16 * 2**30 - out["params"] * 2) // per_token


def test_figure2_prints_both_rows():
    p = cli("figure2")
    assert p.returncode == 0, p.stderr
    assert "standard" in p.stdout and "FlashAttention" in p.stdout and "40.3" in p.stdout


@pytest.mark.parametrize(
    "command,args,needle",
    [
        (
            "count",
            [
                "--algorithm",
                "fa2",
                "--seq-len",
                "64",
                "--head-dim",
                "64",
                "--heads",
                "4",
                "--kv-heads",
                "3",
                "--sram",
                "1KiB",
            ],
            "kv_heads",
        ),
        (
            "count",
            ["--algorithm", "decode", "--seq-len", "64", "--head-dim", "64", "--causal", "--sram", "64KiB"],
            "causal",
        ),
        (
            "count",
            ["--algorithm", "decode", "--seq-len", "0", "--head-dim", "64", "--sram", "64KiB"],
            "--seq-len",
        ),
        ("count", ["--algorithm", "naive", "--seq-len", "64", "--head-dim", "64", "--splits", "3"], "splits"),
        ("kvcache", ["--model", "llama-3-8b"], "--gpu"),
    ],
)
def test_bad_variant_input_is_one_line_exit_2(command, args, needle):
    p = cli(command, *args)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], p.stderr


def test_bad_sweep_fails_before_printing():
    p = cli(
        "sweep",
        "--algorithm",
        "fa2",
        "--seq-len",
        "64,128",
        "--head-dim",
        "64",
        "--heads",
        "4",
        "--kv-heads",
        "3",
        "--csv",
        "-",
    )
    assert p.returncode == 2 and p.stdout == "" and "kv_heads" in p.stderr


def test_sweep_marks_tiles_that_do_not_fit_as_infeasible(tmp_path):
    # fa1, d = 64, 1 KiB fp16 (M = 512): Bc = 1 → Br = min(⌈512/256⌉, 64) = 2: (2·2·64 + 2·1·64 + 2·1)·2
    # + 2·2·4 = 788 B fits; Bc = 2: (256 + 256 + 4)·2 + 16 = 1,048 B > 1,024; Bc = 3 > ⌈M/4d⌉ = 2
    out = tmp_path / "s.csv"
    p = cli(
        "sweep",
        "--algorithm",
        "fa1",
        "--seq-len",
        "64",
        "--head-dim",
        "64",
        "--sram",
        "1KiB",
        "--block-cols",
        "1,2,3",
        "--csv",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    import csv

    rows = {int(r["block_cols"]): r for r in csv.DictReader(out.open())}
    assert rows[1]["infeasible"] == "" and int(rows[1]["onchip_sram_bytes"]) == 788
    assert "1,048 B of SRAM" in rows[2]["infeasible"] and rows[2]["hbm_bytes"] == ""
    assert "⌈M/4d⌉ = 2" in rows[3]["infeasible"]


def test_closed_pipe_gives_no_traceback():
    # `python -m simlib sweep ... | head -1`: the reader leaves after one line
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simlib",
            "sweep",
            "--seq-len",
            "1:1048576",
            "--head-dim",
            "16,32,64,128",
            "--sram",
            "192KiB",
            "--csv",
            "-",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    p.wait()
    assert "Traceback" not in err
