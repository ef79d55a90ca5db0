"""`import-run` is a transaction (issue 26): it checks the whole run folder first, then places every file
and the manifest row under a lock, and a failure at any step, a crash between two steps, a full disk or
a concurrent import leaves the tree as it was (or with every run complete). Each test here failed on
the import before (a folder deleted with files it did not import, a half-placed run, rows lost between
concurrent imports, symlinks followed, orphan sidecars and odd names accepted, tracebacks on bad JSON).
"""

import errno
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from measurements import manifest as mf

REPO = Path(__file__).resolve().parent.parent


def make_run(folder, run_id, files, date="2026-12-01T09:00:00+00:00"):
    """A run folder as the device returns it: each file F with F.provenance.json (run id, sha256)."""
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
        side = {"run_id": run_id, "date_utc": date, "git_commit": "abc1234", "file": name}
        side["sha256"] = hashlib.sha256(text.encode()).hexdigest()
        (folder / f"{name}.provenance.json").write_text(json.dumps(side))
    return folder


def snapshot(root):
    """Every file (hidden ones too) and folder under `root`, with the files' bytes."""
    root = Path(root)
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else "dir")
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def tree(tmp_path):
    """A tree with run08 (bench + profile) current, and an incoming run16 that replaces bench and adds
    two files: 2 archive moves, 6 new files and the manifest = 9 renames."""
    root = tmp_path / "m"
    mf.import_run(
        make_run(tmp_path / "r08", "run08", {"bench_h200.csv": "a\n1\n", "profile_h200.csv": "p\n1\n"}),
        "run08",
        "bench",
        root=root,
    )
    incoming = make_run(
        root / "incoming" / "run16",
        "run16",
        {"bench_h200.csv": "a\n2\n", "ceilings_h200.json": "{}", "tc_h200.csv": "t\n1\n"},
    )
    return root, incoming


def cli(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "gpu_kernels", "import-run", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        **kw,
    )


def refused(p, needle):
    lines = p.stderr.strip().splitlines()
    return p.returncode == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in p.stderr


# ---------------------------------------------------------------------------------------------
# the folder is checked before anything changes, and nothing that was not imported is deleted
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra,needle",
    [
        ("raw/ncu_report.ncu-rep", "a folder; import-run takes regular files only"),
        (".notes", "'.notes' must be letters"),
        ("my notes.txt", "'my notes.txt' must be letters"),
        ("two\nlines.csv", "must be letters"),
    ],
)
def test_a_folder_with_anything_it_cannot_import_is_refused_and_left_as_it_was(tree, extra, needle):
    root, incoming = tree
    path = incoming / extra
    path.parent.mkdir(exist_ok=True)
    path.write_text("kept\n")
    before, folder_before = snapshot(root / "current"), snapshot(incoming)
    p = cli(incoming, "--run-id", "run16", "--command", "x", "--root", root)
    assert refused(p, needle), p.stderr
    assert snapshot(root / "current") == before and snapshot(incoming) == folder_before
    assert [r["run_id"] for r in mf.read_manifest(root)] == ["run08"]


def test_a_symlink_in_the_folder_is_refused_not_followed(tree, tmp_path):
    root, incoming = tree
    outside = tmp_path / "secret.csv"
    outside.write_text("not a measurement\n")
    (incoming / "secret.csv").symlink_to(outside)
    with pytest.raises(mf.ManifestError, match="secret.csv: a symlink"):
        mf.import_run(incoming, "run16", "x", root=root)
    assert not (root / "current" / "secret.csv").exists()


def test_an_orphan_sidecar_of_another_run_is_refused(tree):
    root, incoming = tree
    (incoming / "old_h200.csv.provenance.json").write_text(
        json.dumps({"run_id": "run15", "sha256": "0" * 64})
    )
    with pytest.raises(mf.ManifestError, match="old_h200.csv.provenance.json: a sidecar without its file"):
        mf.import_run(incoming, "run16", "x", root=root)


def test_a_sidecar_without_sha256_is_refused(tree):
    root, incoming = tree
    side = incoming / "tc_h200.csv.provenance.json"
    side.write_text(json.dumps({"run_id": "run16"}))
    with pytest.raises(mf.ManifestError, match="no sha256 of tc_h200.csv recorded"):
        mf.import_run(incoming, "run16", "x", root=root)


@pytest.mark.parametrize("text", ["[1, 2]", "null", '"run16"', "{not json", "\xff"])
def test_a_sidecar_that_is_not_a_json_object_is_one_line(tree, text):
    root, incoming = tree
    (incoming / "tc_h200.csv.provenance.json").write_bytes(text.encode("latin-1"))
    p = cli(incoming, "--run-id", "run16", "--command", "x", "--root", root)
    assert refused(p, "tc_h200.csv.provenance.json: "), p.stderr


def test_a_folder_inside_the_tree_is_refused(tree):
    root, _ = tree
    with pytest.raises(mf.ManifestError, match="inside the measurement tree"):
        mf.import_run(root / "current", "run16", "x", root=root)


def test_only_what_was_imported_is_removed_from_incoming(tree, monkeypatch):
    """A file that changes after the check was imported as it was read; the changed file stays."""
    root, incoming = tree
    check = mf.check_folder

    def check_then_change(folder, run_id):
        run = check(folder, run_id)
        (Path(folder) / "tc_h200.csv").write_text("t\nchanged after the check\n")
        return run

    monkeypatch.setattr(mf, "check_folder", check_then_change)
    mf.import_run(incoming, "run16", "x", root=root)
    assert (root / "current" / "tc_h200.csv").read_text() == "t\n1\n"
    assert sorted(p.name for p in incoming.iterdir()) == ["tc_h200.csv"]


# ---------------------------------------------------------------------------------------------
# the manifest is read strictly
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage,needle",
    [
        (lambda b: b[: len(b) - 20], "cut off mid-row"),
        (lambda b: b + b"run99,2026,abc\n", "line 3: 3 fields, expected 7"),
        (lambda b: b"\x89PNG\r\n\x1a\n\x00\x00" + b, "not UTF-8 text"),
        (lambda b: b.replace(b"current/bench_h200.csv", b"../../etc/passwd", 1), "is not current/<name>"),
        (lambda b: b + b.splitlines(keepends=True)[1], "run_id 'run08' in two rows"),
    ],
)
def test_a_damaged_manifest_is_one_line_naming_it(tree, damage, needle):
    root, incoming = tree
    path = root / "manifest.csv"
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(mf.ManifestError, match="manifest.csv"):
        mf.read_manifest(root)
    p = cli(incoming, "--run-id", "run16", "--command", "x", "--root", root)
    assert refused(p, needle), p.stderr
    assert (root / "current" / "bench_h200.csv").read_text() == "a\n1\n"


# ---------------------------------------------------------------------------------------------
# faults: a failed step, a crash between steps, a full disk, concurrent imports
# ---------------------------------------------------------------------------------------------


def test_a_run_whose_second_file_cannot_be_placed_leaves_the_tree_as_it_was(tree):
    root, incoming = tree
    (root / "current" / "tc_h200.csv").mkdir()  # a folder where a new file must go
    before = snapshot(root)
    with pytest.raises(mf.ManifestError, match="tc_h200.csv: not a regular file"):
        mf.import_run(incoming, "run16", "x", root=root)
    assert snapshot(root) == before


@pytest.mark.parametrize("step", range(9))
def test_a_failure_at_any_rename_is_rolled_back_at_once(tree, monkeypatch, step):
    root, incoming = tree
    before, real = snapshot(root), os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(dst)
        if len(calls) == step + 1:
            raise OSError(errno.EIO, "injected I/O error")
        real(src, dst)

    monkeypatch.setattr(mf.os, "replace", failing_replace)
    with pytest.raises(OSError, match="injected"):
        mf.import_run(incoming, "run16", "x", root=root)
    monkeypatch.setattr(mf.os, "replace", real)
    assert snapshot(root) == before


CRASH = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from measurements import manifest as mf
    step, root, folder, where = int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    real, calls = os.replace, []
    def crash(src, dst):
        calls.append(dst)
        if where == "rename" and len(calls) == step + 1:
            os._exit(9)  # the process dies here: no except, no finally
        real(src, dst)
    mf.os.replace = crash
    if where == "cleanup":
        mf.shutil.rmtree = lambda *a, **k: os._exit(9)
    if where == "journal":  # the process dies half-way through writing the journal
        write_new = mf._write_new
        def cut(path, data):
            if path.name == mf.JOURNAL:
                with open(path, "xb") as f:
                    f.write(data[: len(data) // 2])
                os._exit(9)
            write_new(path, data)
        mf._write_new = cut
    mf.import_run(folder, "run16", "x", root=root)
    """
)


@pytest.mark.parametrize("step", range(9))
def test_a_crash_between_steps_is_rolled_back_by_the_next_import(tree, step):
    root, incoming = tree
    before = snapshot(root)
    p = subprocess.run([sys.executable, "-c", CRASH, str(step), root, incoming, "rename"], cwd=REPO)
    assert p.returncode == 9
    with pytest.raises(mf.ManifestError, match="in progress or was interrupted"):
        mf.lookup("bench_h200.csv", root=root)  # nobody reads a half-imported tree
    with mf.locked(root):
        assert mf.recover(root) == ["run16"]
    assert snapshot(root) == before
    mf.import_run(incoming, "run16", "x", root=root)  # and the run imports cleanly afterwards
    assert (root / "current" / "bench_h200.csv").read_text() == "a\n2\n"


def test_a_crash_while_writing_the_journal_is_cleaned_up_by_the_next_import(tree):
    """Before: the next import (and every later one) died on the cut journal with a JSONDecodeError."""
    root, incoming = tree
    before = snapshot(root)
    p = subprocess.run([sys.executable, "-c", CRASH, "0", root, incoming, "journal"], cwd=REPO)
    assert p.returncode == 9 and mf.pending_imports(root)
    with mf.locked(root):
        assert mf.recover(root) == []  # no rename had happened: nothing to roll back
    assert snapshot(root) == before
    assert cli(incoming, "--run-id", "run16", "--command", "x", "--root", root).returncode == 0
    assert mf.lookup("bench_h200.csv", root=root).read_text() == "a\n2\n"


def test_a_crash_after_the_commit_keeps_the_run(tree):
    root, incoming = tree
    p = subprocess.run([sys.executable, "-c", CRASH, "0", root, incoming, "cleanup"], cwd=REPO)
    assert p.returncode == 9
    with mf.locked(root):
        assert mf.recover(root) == []
    assert [r["run_id"] for r in mf.read_manifest(root)] == ["run08", "run16"]
    assert mf.lookup("bench_h200.csv", root=root).read_text() == "a\n2\n"
    assert (root / "archive" / "run08" / "bench_h200.csv").read_text() == "a\n1\n"


def test_a_full_disk_while_staging_leaves_the_tree_as_it_was(tree, monkeypatch):
    root, incoming = tree
    before, real, writes = snapshot(root), mf._write_new, []

    def full(path, data):
        writes.append(path)
        if len(writes) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(mf, "_write_new", full)
    p_err = None
    try:
        mf.import_run(incoming, "run16", "x", root=root)
    except OSError as e:
        p_err = e
    assert p_err is not None and p_err.errno == errno.ENOSPC
    assert snapshot(root) == before


RACE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from measurements import manifest as mf
    folder, run_id, root, ready, go = sys.argv[1:]
    Path(ready).touch()
    while not Path(go).exists():  # all start together: the imports race for the tree
        time.sleep(0.001)
    mf.import_run(Path(folder), run_id, "x", root=Path(root))
    """
)


def test_eight_concurrent_imports_keep_every_row_and_every_file(tmp_path):
    root, go = tmp_path / "m", tmp_path / "go"
    procs = []
    for i in range(8):
        folder = make_run(
            tmp_path / f"r{i}", f"run{i}", {"bench_h200.csv": f"a\n{i}\n", f"own{i}.csv": "x\n"}
        )
        args = [folder, f"run{i}", root, tmp_path / f"ready{i}", go]
        procs.append(subprocess.Popen([sys.executable, "-c", RACE, *map(str, args)], cwd=REPO))
    while not all((tmp_path / f"ready{i}").exists() for i in range(8)):
        assert all(p.poll() is None for p in procs), "a racer died before the start"
    go.touch()
    assert [p.wait(timeout=240) for p in procs] == [0] * 8
    rows = mf.read_manifest(root)
    assert sorted(r["run_id"] for r in rows) == [f"run{i}" for i in range(8)]
    listed = sorted(p for r in rows for p in r["files"].split())
    on_disk = sorted(p for p, what in snapshot(root).items() if what != "dir" and p != "manifest.csv")
    assert listed == on_disk and len(listed) == 8 * 4  # every file owned by exactly one row, nothing else
    assert sum(r["status"] == "current" for r in rows) == 8  # each still has its own file current
