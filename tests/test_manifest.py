"""measurements.manifest: the measurement tree (current/, archive/<run_id>/, manifest.csv),
on hand-made temporary folders, and the committed tree itself."""

import csv
import hashlib
import json
from pathlib import Path

import pytest

from measurements import manifest as mf

ROOT = Path(__file__).resolve().parent.parent / "data" / "measurements"


def make_run(
    folder, run_id, files, sha=True, date="2026-12-01T09:00:00+00:00", commit="abc1234 (FLASHIO_COMMIT)"
):
    """A run folder as the device returns it: each file F with F.provenance.json."""
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
        side = {"run_id": run_id, "date_utc": date, "git_commit": commit}
        if sha:
            side["sha256"] = hashlib.sha256(text.encode()).hexdigest()
        (folder / f"{name}.provenance.json").write_text(json.dumps(side))
    return folder


def rows(root):
    with (root / "manifest.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_import_places_files_and_archives_what_they_replace(tmp_path):
    root = tmp_path / "measurements"
    first = make_run(
        tmp_path / "out8", "run08", {"bench_h200.csv": "a,b\n1,2\n", "profile_h200.csv": "p\n1\n"}
    )
    mf.import_run(first, "run08", "python -m gpu_kernels bench", root=root)
    assert mf.lookup("bench_h200.csv", root=root) == root / "current" / "bench_h200.csv"
    assert (root / "current" / "bench_h200.csv").read_text() == "a,b\n1,2\n"
    second = make_run(
        tmp_path / "out16",
        "run16",
        {"bench_h200.csv": "a,b\n3,4\n"},
        date="2026-12-02T10:00:00+00:00",
        commit="def5678 (FLASHIO_COMMIT)",
    )
    row = mf.import_run(second, "run16", "python -m gpu_kernels bench", note="re-measured", root=root)
    # the new file is current, the old one and its sidecar are under the run that measured them
    assert (root / "current" / "bench_h200.csv").read_text() == "a,b\n3,4\n"
    assert (root / "archive" / "run08" / "bench_h200.csv").read_text() == "a,b\n1,2\n"
    assert (root / "archive" / "run08" / "bench_h200.csv.provenance.json").is_file()
    assert mf.lookup("bench_h200.csv", run_id="run08", root=root).read_text() == "a,b\n1,2\n"
    assert row == {
        "run_id": "run16",
        "date": "2026-12-02T10:00:00+00:00",
        "commit": "def5678",
        "command": "python -m gpu_kernels bench",
        "files": "current/bench_h200.csv current/bench_h200.csv.provenance.json",
        "status": "current",
        "note": "re-measured",
    }
    old, new = rows(root)
    assert old["status"] == "current"  # its profile is still current
    assert old["files"].split() == [
        "archive/run08/bench_h200.csv",
        "archive/run08/bench_h200.csv.provenance.json",
        "current/profile_h200.csv",
        "current/profile_h200.csv.provenance.json",
    ]
    assert new == row
    assert mf.run_of(root / "archive" / "run08" / "bench_h200.csv", root=root)["run_id"] == "run08"
    third = make_run(tmp_path / "out17", "run17", {"profile_h200.csv": "p\n2\n"})
    mf.import_run(third, "run17", "python -m gpu_kernels profile", root=root)
    assert rows(root)[0]["status"] == "archive"  # nothing of run 8 is current any more
    assert (root / "current" / "bench_h200.csv").stat().st_mode & 0o777 == 0o644


def test_a_sidecar_of_another_run_is_refused(tmp_path):
    folder = make_run(tmp_path / "out", "run15", {"bench_h200.csv": "x\n"})
    with pytest.raises(
        mf.ManifestError, match=r"bench_h200.csv.provenance.json: run_id is 'run15', expected 'run16'"
    ):
        mf.import_run(folder, "run16", "cmd", root=tmp_path / "m")
    assert not (tmp_path / "m" / "current").exists()  # nothing placed before the check


def test_a_file_whose_bytes_differ_from_its_sidecar_is_refused(tmp_path):
    folder = make_run(tmp_path / "out", "run16", {"bench_h200.csv": "x\n"})
    (folder / "bench_h200.csv").write_text("y\n")
    with pytest.raises(mf.ManifestError, match="bench_h200.csv: sha256 differs"):
        mf.verify(folder, "run16")


def test_a_file_without_sidecar_is_refused(tmp_path):
    folder = make_run(tmp_path / "out", "run16", {"bench_h200.csv": "x\n"})
    (folder / "notes.txt").write_text("?")
    with pytest.raises(mf.ManifestError, match=r"notes.txt: no sidecar"):
        mf.verify(folder, "run16")


def test_a_shared_sidecar_without_its_own_file_or_hash_is_refused(tmp_path):
    """The runs before the sidecar rule shared <stem>.provenance.json (no sha256) between a CSV and its
    log; `sidecar_of` still reads those in the tree, but a new run must bring F.provenance.json per file."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "l2_h200.csv").write_text("a\n")
    (folder / "l2_h200.log").write_text("")
    (folder / "l2_h200.provenance.json").write_text(json.dumps({"run_id": "run09"}))
    with pytest.raises(mf.ManifestError, match=r"l2_h200.csv: no sidecar \(l2_h200.csv.provenance.json\)"):
        mf.verify(folder, "run09")
    sha = hashlib.sha256(b"a\n").hexdigest()
    (folder / "l2_h200.csv.provenance.json").write_text(json.dumps({"run_id": "run09", "sha256": sha}))
    with pytest.raises(mf.ManifestError, match="l2_h200.provenance.json: a sidecar without its file"):
        mf.verify(folder, "run09")
    (folder / "l2_h200.provenance.json").unlink()
    assert list(mf.verify(folder, "run09")) == [folder / "l2_h200.csv.provenance.json"]  # the log is covered
    (folder / "l2_h200.csv.provenance.json").write_text(json.dumps({"run_id": "run09"}))
    with pytest.raises(mf.ManifestError, match="l2_h200.csv.provenance.json: no sha256 of l2_h200.csv"):
        mf.verify(folder, "run09")


def test_a_log_is_covered_by_its_csvs_sidecar_whose_hash_is_the_csvs(tmp_path):
    folder = make_run(tmp_path / "out", "run16", {"figure2_h200.csv": "a\n1\n"})
    (folder / "figure2_h200.log").write_text("ran\n")
    side = folder / "figure2_h200.csv.provenance.json"
    assert mf.sidecar_of(folder / "figure2_h200.log") == side
    assert list(mf.verify(folder, "run16")) == [side]
    (folder / "figure2_h200.csv").write_text("a\n2\n")  # the CSV, not the log, is hashed
    with pytest.raises(mf.ManifestError, match="figure2_h200.csv: sha256 differs"):
        mf.verify(folder, "run16")
    (folder / "notes.txt").write_text("")
    with pytest.raises(mf.ManifestError, match="notes.txt: no sidecar"):
        mf.verify(folder, "run17")


def test_a_log_of_its_own_is_covered_by_the_runs_sidecars_only_if_there_are_some(tmp_path):
    folder = make_run(tmp_path / "out", "tc_run3", {"tc_bench_h200.csv": "k\n1\n"})
    (folder / "pytest_gpu_tensor_core.log").write_text("12 passed\n")
    assert list(mf.verify(folder, "tc_run3")) == [folder / "tc_bench_h200.csv.provenance.json"]
    with pytest.raises(mf.ManifestError, match="run_id is 'tc_run3', expected 'tc_run4'"):
        mf.verify(folder, "tc_run4")  # the run's sidecars still decide
    logs_only = tmp_path / "tc_run1"
    logs_only.mkdir()
    (logs_only / "bench.log").write_text("d=64 N=4096 ...\n")
    with pytest.raises(mf.ManifestError, match="bench.log: no sidecar, and no sidecar in"):
        mf.verify(logs_only, "tc_run1")


def test_a_legacy_sidecar_is_archived_with_the_last_file_it_describes(tmp_path):
    root = tmp_path / "m"
    (root / "current").mkdir(parents=True)
    for name, text in (
        ("fast_h200.csv", "a\n1\n"),
        ("fast_h200.log", "ran\n"),
        ("fast_h200.provenance.json", "{}"),
    ):
        (root / "current" / name).write_text(text)
    mf.write_manifest(
        [
            {
                "run_id": "run15",
                "date": "d",
                "commit": "c",
                "command": "x",
                "status": "current",
                "files": "current/fast_h200.csv current/fast_h200.log current/fast_h200.provenance.json",
                "note": "",
            }
        ],
        root,
    )
    mf.import_run(make_run(tmp_path / "a", "run16", {"fast_h200.csv": "a\n2\n"}), "run16", "x", root=root)
    # the log still uses the shared sidecar: it stays current, and so does the sidecar
    assert sorted(p.name for p in (root / "archive" / "run15").iterdir()) == ["fast_h200.csv"]
    assert (root / "current" / "fast_h200.provenance.json").is_file()
    run = make_run(tmp_path / "b", "run17", {"fast_h200.csv": "a\n3\n"})
    (run / "fast_h200.log").write_text("ran again\n")
    mf.import_run(run, "run17", "x", root=root)
    assert sorted(p.name for p in (root / "archive" / "run15").iterdir()) == [
        "fast_h200.csv",
        "fast_h200.log",
        "fast_h200.provenance.json",
    ]
    assert mf.read_manifest(root)[0]["status"] == "archive"
    assert not (root / "current" / "fast_h200.provenance.json").exists()


def test_importing_a_run_twice_is_refused(tmp_path):
    root = tmp_path / "m"
    mf.import_run(make_run(tmp_path / "a", "run16", {"x.csv": "1\n"}), "run16", "cmd", root=root)
    with pytest.raises(mf.ManifestError, match="already imported"):
        mf.import_run(make_run(tmp_path / "b", "run16", {"x.csv": "2\n"}), "run16", "cmd", root=root)


def test_incoming_folder_is_removed_after_import(tmp_path):
    root = tmp_path / "m"
    folder = make_run(root / "incoming" / "run16", "run16", {"x.csv": "1\n"})
    mf.import_run(folder, "run16", "cmd", root=root)
    assert not folder.exists() and (root / "current" / "x.csv").is_file()


def test_cli_one_line_errors(tmp_path, capsys):
    assert (
        mf.main([str(tmp_path / "absent"), "--run-id", "r1", "--command", "c", "--root", str(tmp_path)]) == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "absent: not a folder" in err
    assert mf.main([str(tmp_path), "--run-id", "../x", "--command", "c", "--root", str(tmp_path)]) == 2
    assert "--run-id" in capsys.readouterr().err
    assert mf.main([str(tmp_path)]) == 2  # --run-id missing: one line, no usage block
    assert capsys.readouterr().err.count("\n") == 1
    folder = make_run(tmp_path / "out", "r1", {"x.csv": "1\n"})
    assert mf.main([str(folder), "--run-id", "r1", "--command", "c", "--root", str(tmp_path / "m")]) == 0
    assert "r1: 2 files" in capsys.readouterr().out


def test_lookup_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.csv: no such measurement file"):
        mf.lookup("nothing.csv", root=tmp_path)


# ---------------------------------------------------------------------------------------------
# the committed tree
# ---------------------------------------------------------------------------------------------


def test_committed_manifest_lists_every_file_exactly_once():
    listed = [p for r in mf.read_manifest(ROOT) for p in r["files"].split()]
    on_disk = sorted(
        p.relative_to(ROOT).as_posix()
        for sub in ("current", "archive")
        for p in (ROOT / sub).rglob("*")
        if p.is_file()
    )
    assert sorted(listed) == on_disk
    assert len(set(listed)) == len(listed)
    for r in mf.read_manifest(ROOT):
        files = r["files"].split()
        assert r["status"] == ("current" if any(f.startswith("current/") for f in files) else "archive"), r[
            "run_id"
        ]
        assert all(f.startswith(("current/", f"archive/{r['run_id']}/")) for f in files), r["run_id"]


def test_committed_run_commits():
    assert mf.run_of(mf.lookup("bench_h200.csv"))["commit"] == "6982d9a"
    assert mf.run_of(mf.lookup("profile_h200.csv", run_id="run03"))["commit"] == "e70f13d"


def test_committed_provenance_has_no_hand_added_fields():
    for side in ROOT.rglob("*.json"):
        assert "tree_commit" not in json.loads(side.read_text()), side
