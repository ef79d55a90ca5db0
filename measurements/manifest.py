"""The measurement tree under data/measurements/: what is current, what is archived, which run made it.

    current/              one file per dataset, the newest run's (what the lectures read)
    archive/<run_id>/     files a later run replaced, under the run that measured them
    manifest.csv          one row per run: run_id,date,commit,command,files,status,note
                          (files: space-separated paths relative to data/measurements;
                          status: current while any of its files is in current/, else archive)

A measured file F comes with a sidecar written by the program that measured it: F.provenance.json
(or, for the runs before the sidecar rule, <stem of F>.provenance.json shared by a CSV and its log;
a run's log F.log is covered by the sidecar of its CSV, F.csv.provenance.json, and a log with no such
sidecar by the run folder's other sidecars).
`import_run` accepts a folder only if every sidecar names the run being imported (`run_id`) and,
where it records one, the `sha256` of its file's bytes matches, so a CSV can never be paired with
another run's provenance. Plain Python (no numba, no simlib): the lectures look files up with
`lookup` and never spell a path themselves.

    python -m gpu_kernels import-run data/measurements/incoming/run16 --run-id run16 \\
        --command "python -m gpu_kernels bench" --note "..."

Worked example: after run 8 and run 15 are imported, `lookup("bench_h200.csv")` is
data/measurements/current/bench_h200.csv, and importing a run 16 that wrote bench_h200.csv moves
run 8's file to archive/run08/bench_h200.csv (the test suite walks through exactly this).
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import hashlib
import io
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "data" / "measurements"
FIELDS = ("run_id", "date", "commit", "command", "files", "status", "note")
SIDECAR = ".provenance.json"
CURRENT, ARCHIVE = "current", "archive"


class ManifestError(ValueError):
    """A measurement folder or manifest that cannot be used as it is; the message names the file."""


def lookup(name: str, run_id: str | None = None, root: Path = ROOT) -> Path:
    """Path of dataset `name` (a file name such as 'bench_h200.csv'): the current file, or the one of
    an archived run when `run_id` is given. FileNotFoundError naming the file and what exists."""
    folder = Path(root) / (CURRENT if run_id is None else Path(ARCHIVE) / run_id)
    path = folder / name
    if not path.is_file():
        have = sorted(p.name for p in folder.glob("*") if p.is_file()) if folder.is_dir() else []
        raise FileNotFoundError(
            f"{path}: no such measurement file (that folder has {len(have)} files"
            + (f", e.g. {', '.join(have[:5])})" if have else ")")
        )
    return path


def read_manifest(root: Path = ROOT) -> list[dict]:
    """The manifest's rows as dicts (an empty list if there is no manifest yet)."""
    path = Path(root) / "manifest.csv"
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != FIELDS:
            raise ManifestError(f"{path}: columns {reader.fieldnames}, expected {','.join(FIELDS)}")
        return list(reader)


def run_of(path: Path, root: Path = ROOT) -> dict:
    """The manifest row of the run that measured the file at `path` (under `root`); ManifestError if none."""
    rel = Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    for row in read_manifest(root):
        if rel in row["files"].split():
            return row
    raise ManifestError(f"{path}: in no row of {Path(root) / 'manifest.csv'}")


def write_manifest(rows: list[dict], root: Path = ROOT) -> None:
    """Rewrite manifest.csv atomically (temp file, rename, mode 0644)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: row.get(k, "") for k in FIELDS} for row in rows)
    _write_atomic(Path(root) / "manifest.csv", text.getvalue().encode())


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{path.name}")
    tmp.write_bytes(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sidecar_of(path: Path) -> Path | None:
    """F.provenance.json, else <stem>.provenance.json beside F; for a log (F.log) also the sidecar of a
    sibling with the same stem (run.csv.provenance.json covers run.log); None if there is none."""
    path = Path(path)
    for candidate in (path.with_name(path.name + SIDECAR), path.with_name(path.stem + SIDECAR)):
        if candidate.is_file():
            return candidate
    if path.suffix == ".log":
        siblings = sorted(path.parent.glob(f"{path.stem}.*{SIDECAR}"))
        if siblings:
            return siblings[0]
    return None


def verify(folder: Path, run_id: str) -> dict[Path, dict]:
    """{sidecar: its record} for a run folder, after checking that every data file has a sidecar that
    names `run_id` and, where it records `sha256`, matches the file's bytes (a log without one of its
    own is covered by the folder's sidecars, which must all name `run_id`). ManifestError otherwise."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ManifestError(f"{folder}: not a folder")
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    data = [p for p in files if not p.name.endswith(SIDECAR)]
    if not data:
        raise ManifestError(f"{folder}: no measurement files")
    records: dict[Path, dict] = {}
    covered: dict[Path, list[Path]] = {}
    logs_of_the_run = []
    for path in data:
        side = sidecar_of(path)
        if side is None and path.suffix == ".log":
            logs_of_the_run.append(path)
            continue
        if side is None:
            raise ManifestError(f"{path}: no sidecar ({path.name}{SIDECAR})")
        covered.setdefault(side, []).append(path)
    if logs_of_the_run and not covered:
        raise ManifestError(f"{logs_of_the_run[0]}: no sidecar, and no sidecar in {folder} names the run")
    for side, paths in covered.items():
        try:
            record = json.loads(side.read_text())
        except ValueError as e:
            raise ManifestError(f"{side}: not JSON ({e})") from None
        if record.get("run_id") != run_id:
            raise ManifestError(f"{side}: run_id is {record.get('run_id')!r}, expected {run_id!r}")
        if "sha256" in record:
            own = [p for p in paths if side.name == p.name + SIDECAR]
            hashed = own or [p for p in paths if p.suffix != ".log"]
            if len(hashed) != 1:
                raise ManifestError(
                    f"{side}: one sha256 for {len(hashed)} files ({', '.join(p.name for p in hashed)})"
                )
            if record["sha256"] != sha256_of(hashed[0]):
                raise ManifestError(f"{hashed[0]}: sha256 differs from the one in {side.name}")
        records[side] = record
    return records


def import_run(folder: Path, run_id: str, command: str, note: str = "", root: Path = ROOT) -> dict:
    """Place a verified run folder's files in current/, move the files they replace to
    archive/<their run_id>/, and append the run's manifest row (returned). The date and commit come
    from the sidecars (`date_utc`, `git_commit`). A folder under root/incoming is removed afterwards."""
    root, folder = Path(root), Path(folder)
    if not run_id or not all(c.isalnum() or c in "-_." for c in run_id) or run_id.startswith("."):
        raise ManifestError(f"--run-id: {run_id!r} must be letters, digits, '-', '_' or '.' (a folder name)")
    records = verify(folder, run_id)
    rows = read_manifest(root)
    if any(r["run_id"] == run_id for r in rows):
        raise ManifestError(f"{root / 'manifest.csv'}: run_id {run_id!r} is already imported")
    owner = {path: row for row in rows for path in row["files"].split()}
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    for name in names:
        old = f"{CURRENT}/{name}"
        if (root / old).is_file():
            if old not in owner:
                raise ManifestError(f"{root / old}: in current/ but in no manifest row; cannot archive it")
            row = owner[old]
            moving = [old]
            side = sidecar_of(root / old)
            if side is not None and side.name not in names:
                side_rel = f"{CURRENT}/{side.name}"
                still_used = [
                    p
                    for p in row["files"].split()
                    if p.startswith(CURRENT + "/")
                    and p != old
                    and p != side_rel
                    and sidecar_of(root / p) == side
                    and Path(p).name not in names
                ]
                if side_rel in row["files"].split() and not still_used:
                    moving.append(side_rel)  # a legacy sidecar goes with the last file it describes
            for rel in moving:
                new = f"{ARCHIVE}/{row['run_id']}/{Path(rel).name}"
                (root / new).parent.mkdir(parents=True, exist_ok=True)
                os.replace(root / rel, root / new)
                row["files"] = " ".join(new if p == rel else p for p in row["files"].split())
            row["status"] = (
                CURRENT if any(p.startswith(CURRENT + "/") for p in row["files"].split()) else ARCHIVE
            )
        _write_atomic(root / old, (folder / name).read_bytes())
    dates = sorted(str(r["date_utc"]) for r in records.values() if r.get("date_utc"))
    commits = sorted({str(r["git_commit"]).split()[0] for r in records.values() if r.get("git_commit")})
    row = {
        "run_id": run_id,
        "date": dates[0] if dates else _dt.date.today().isoformat(),
        "commit": " ".join(commits) or "unknown",
        "command": command,
        "files": " ".join(f"{CURRENT}/{n}" for n in names),
        "status": CURRENT,
        "note": note,
    }
    write_manifest(rows + [row], root)
    if folder.resolve().parent == (root / "incoming").resolve():
        shutil.rmtree(folder)
    return row


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        raise ManifestError(message)


def main(argv: list[str] | None = None) -> int:
    """`import-run FOLDER --run-id ID --command CMD [--note TEXT] [--root DIR]`; errors: one line, exit 2."""
    parser = _Parser(
        prog="python -m gpu_kernels import-run",
        description="add a run folder's measurement files to data/measurements",
    )
    parser.add_argument("folder", type=Path)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--command", required=True, help="the command that measured the files")
    parser.add_argument("--note", default="")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the measurement tree (default data/measurements)"
    )
    try:
        args = parser.parse_args(argv)
        row = import_run(args.folder, args.run_id, args.command, args.note, args.root)
    except (ManifestError, OSError) as e:
        print(f"import-run: {e}", file=sys.stderr)
        return 2
    print(f"{row['run_id']}: {len(row['files'].split())} files in {args.root / CURRENT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
