"""One policy for every writer (simlib.safe_write, issue 26): a symlink is written through (the link stays
a link, its target gets the bytes), no command writes over a file it reads, a destination that names a
folder is refused in one line naming the flag, and temporary files have names of their own. Each test
failed before: `sweep --csv link.csv` and `model-vs-ncu --out link.csv` replaced the link with a file,
`model-vs-ncu --profile P.csv --out P.csv` overwrote the profile it read, `--csv file.csv/` named a temp
file in its error, and the manifest was written through one fixed temporary name.
"""

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from measurements import manifest as mf
from simlib.safe_write import check_destination, write_atomic

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "data" / "measurements" / "current" / "profile_h200.csv"
SWEEP = ["sweep", "--algorithm", "naive", "--seq-len", "64", "--head-dim", "16"]


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def one_line(p):
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and p.stdout == "" and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


def test_sweep_csv_writes_through_a_symlink(tmp_path):
    (tmp_path / "link.csv").symlink_to("real.csv")
    p = run("simlib", *SWEEP, "--csv", "link.csv", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "link.csv").is_symlink()
    assert (tmp_path / "real.csv").read_text().startswith("algorithm,")
    assert sorted(os.listdir(tmp_path)) == ["link.csv", "real.csv"]


def test_model_vs_ncu_writes_through_a_symlink_and_never_over_its_profile(tmp_path):
    profile = tmp_path / "P.csv"
    profile.write_bytes(PROFILE.read_bytes())
    (tmp_path / "link.csv").symlink_to("table.csv")
    p = run("gpu_kernels", "model-vs-ncu", "--profile", profile, "--out", "link.csv", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "link.csv").is_symlink() and (tmp_path / "table.csv").read_text().startswith("kernel,")
    for out in ("P.csv", "./P.csv", "alias.csv"):
        if out == "alias.csv":
            (tmp_path / "alias.csv").symlink_to("P.csv")
        p = run("gpu_kernels", "model-vs-ncu", "--profile", "P.csv", "--out", out, cwd=tmp_path)
        assert "--out: " in one_line(p) and "the file that --profile reads" in p.stderr
    assert profile.read_bytes() == PROFILE.read_bytes()


@pytest.mark.parametrize(
    "command",
    [
        ["simlib", *SWEEP, "--csv", "file.csv/"],
        ["gpu_kernels", "model-vs-ncu", "--out", "file.csv/"],
        ["simlib.cost.check", "--out", "file.csv/"],  # wrote ./file.csv, after the whole table's work
    ],
)
def test_a_destination_that_names_a_folder_is_refused_by_its_flag(tmp_path, command):
    line = one_line(run(*command, cwd=tmp_path))
    flag = command[command.index("file.csv/") - 1]
    assert line.startswith(f"error: {flag}: 'file.csv/'") and ".tmp" not in line and ".part" not in line
    assert not os.listdir(tmp_path)


def test_check_destination_follows_a_dangling_link_to_its_folder(tmp_path):
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "missing" / "x.csv")
    with pytest.raises(ValueError, match="--csv: the folder of .* does not exist"):
        check_destination(str(tmp_path / "dangling.csv"), "--csv")


def test_concurrent_writers_use_temporary_names_of_their_own(tmp_path):
    """Two writers of one destination never share a temporary file: each write lands whole."""
    path = tmp_path / "out.txt"
    texts = [str(i) * 200_000 for i in range(8)]
    errors = []

    def write(text):
        try:
            for _ in range(5):
                write_atomic(str(path), text)
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and path.read_text() in texts and os.listdir(tmp_path) == ["out.txt"]


def test_the_manifest_is_written_through_the_one_writer(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(mf, "write_atomic", lambda path, data: calls.append(path) or write_atomic(path, data))
    mf.write_manifest([], tmp_path)
    assert calls == [str(tmp_path / "manifest.csv")] and os.listdir(tmp_path) == ["manifest.csv"]
