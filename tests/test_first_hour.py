"""Issue 26, item 5: the small frictions of a newcomer's first hour, each with the behaviour it had."""

import json
import subprocess

import pytest
from kernel_helpers import REPO

import simlib.command_line as simlib_cli


def run_simlib(argv, capsys):
    rc = simlib_cli.main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_flash_bwd_says_its_sram_traffic_is_not_modelled(capsys):
    """flash_bwd printed "sram_read_bytes 0 B (0.00 MB)" where it counts HBM traffic only."""
    argv = ["count", "--algorithm", "flash_bwd", "--seq-len", "1024", "--head-dim", "64", "--sram", "192KiB"]
    rc, out, _ = run_simlib(argv, capsys)
    assert rc == 0
    lines = [line for line in out.splitlines() if line.strip().startswith("sram_")]
    assert lines and all("not modelled" in line and " 0 B" not in line for line in lines), lines
    rc, out, _ = run_simlib(argv + ["--json"], capsys)
    row = json.loads(out)
    assert row["sram_read_bytes"] is None and row["sram_write_bytes"] is None
    rc, out, _ = run_simlib(argv[:2] + ["fa2"] + argv[3:], capsys)  # a schedule that counts SRAM: numbers
    assert "not modelled" not in out


def test_sweep_csv_says_what_it_wrote(capsys, tmp_path):
    """`sweep --csv out.csv` printed nothing at all."""
    path = tmp_path / "out.csv"
    argv = [
        "sweep",
        "--algorithm",
        "naive,fa2",
        "--seq-len",
        "256,512",
        "--head-dim",
        "64",
        "--csv",
        str(path),
    ]
    rc, out, _ = run_simlib(argv, capsys)
    assert (
        rc == 0
        and out == f"wrote 4 rows, {len(path.read_text().splitlines()[0].split(','))} columns to {path}\n"
    )


def test_sweep_table_marks_what_does_not_apply_with_a_dash(capsys):
    """naive's tiles showed as <NA> and NaN next to fa2's numbers."""
    argv = ["sweep", "--algorithm", "naive,fa2", "--seq-len", "256", "--head-dim", "64"]
    rc, out, _ = run_simlib(argv, capsys)
    assert rc == 0 and "NaN" not in out and "<NA>" not in out and "None" not in out, out
    header, naive, fa2 = out.splitlines()
    assert naive.split()[:1] == ["naive"] and naive.split().count("-") == 4  # sram_bytes, Br, Bc, rule
    assert "128" in fa2.split()


def test_sweep_table_shows_the_roofline_time_in_significant_digits(capsys):
    """The roofline column printed 0.0 for every shape below a millisecond (1.37e-07 s at N = 256)."""
    from simlib import load_preset

    argv = ["sweep", "--algorithm", "naive", "--seq-len", "256", "--head-dim", "64", "--gpu", "h200"]
    rc, out, _ = run_simlib(argv, capsys)
    header, row = out.splitlines()[:2]
    shown = float(row.split()[header.split().index("roofline_s")])
    # naive at N = 256, d = 64, fp16: reads 3Nd + 2N^2, writes 2N^2 + Nd elements of 2 B, over HBM's bandwidth
    n, d = 256, 64
    hbm_bytes = 2 * (3 * n * d + 2 * n * n + 2 * n * n + n * d)
    expected = hbm_bytes / load_preset("h200").level("HBM").bandwidth_bytes_per_s
    assert rc == 0 and shown == pytest.approx(expected, rel=5e-3), (shown, expected)


def test_make_lab_takes_a_port():
    dry = subprocess.run(["make", "-n", "lab", "PORT=8899"], cwd=REPO, capture_output=True, text=True)
    assert dry.returncode == 0 and "--ServerApp.port=8899 --ServerApp.port_retries=0" in dry.stdout
    plain = subprocess.run(["make", "-n", "lab"], cwd=REPO, capture_output=True, text=True)
    assert "--ServerApp.port" not in plain.stdout


def test_make_check_is_the_quick_target():
    """There was no quick target: `make test` took 25 min on a loaded 2-core machine."""
    dry = subprocess.run(["make", "-n", "check"], cwd=REPO, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    steps = dry.stdout
    assert "ruff check" in steps and "import simlib" in steps and "simlib count" in steps
    assert "--execute" in steps and "01_memory_hierarchy.py" in steps and "pytest" not in steps


@pytest.mark.parametrize("doc", ["README.md"])
def test_readme_names_make_check(doc):
    text = (__import__("pathlib").Path(REPO) / doc).read_text()
    assert "make check" in text


def test_sweep_says_why_its_bound_is_hbm_where_sram_would_take_longer(capsys):
    """naive at N = 256 showed "memory (HBM)" while its thread-level SRAM bytes take longer than its HBM
    bytes: by design (simlib.roofline: SRAM bytes are an upper bound and do not bind), now said in a note."""
    from simlib import load_preset

    hw = load_preset("h200")
    n, d = 256, 64
    # thread-level SRAM traffic of naive (the table's own sram_read + sram_write columns) against HBM's
    argv = ["sweep", "--algorithm", "naive", "--seq-len", str(n), "--head-dim", str(d), "--gpu", "h200"]
    rc, out, _ = run_simlib(argv, capsys)
    header, row, note = out.splitlines()
    cols = dict(zip(header.split(), row.split()))
    sram_s = (int(cols["sram_read_bytes"]) + int(cols["sram_write_bytes"])) / hw.level(
        "SRAM"
    ).bandwidth_bytes_per_s
    hbm_s = 2 * (3 * n * d + 2 * n * n + 2 * n * n + n * d) / hw.level("HBM").bandwidth_bytes_per_s
    assert sram_s > hbm_s and cols["bound"] == "memory"  # "memory (HBM)" splits in two
    assert rc == 0 and note.startswith("note: in 1 of 1 rows the SRAM bytes would take longer"), note
    rc, out, _ = run_simlib(argv[:-2], capsys)  # no GPU: no roofline, no note
    assert "note:" not in out
