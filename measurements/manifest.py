"""The measurement tree under data/measurements/: what is current, what is archived, which run made it.

    current/              one file per dataset, the newest run's (what the lectures read)
    archive/<run_id>/     files a later run replaced, under the run that measured them
    manifest.csv          one row per run: run_id,date,commit,command,files,status,note
                          (files: space-separated paths relative to data/measurements;
                          status: current while any of its files is in current/, else archive)

A measured file F comes with a sidecar written by the program that measured it: F.provenance.json
(or, for the runs before the sidecar rule, <stem of F>.provenance.json shared by a CSV and its log;
`sidecar_of` still finds those). The lectures look files up with `lookup` and never spell a path.

`import_run` is a transaction. First it checks the whole run folder and changes nothing: every entry
a regular file (no symlink, no folder) named with letters, digits, '.', '_' or '-'; every data file F
with its own sidecar F.provenance.json, a JSON object that names the run (`run_id`) and records the
`sha256` of F's bytes, which must match; every sidecar with its file. A log (F.log) is the one file that
may come without a sidecar of its own: the sidecar of its CSV covers it (run.csv.provenance.json covers
run.log), or, when no file shares its stem, the run's other sidecars. Then, holding a lock on the tree
(a second import waits for it), it stages the files and the new manifest in a folder of a unique name,
writes a journal, and renames: the files a run replaces go to archive/<their run_id>/, the new ones into
current/, and last the manifest (the commit point). A failure before that point is rolled back at once;
a crash is rolled back by the next import (`recover`), and `lookup` refuses to read a tree with an
interrupted import in it. After the commit the imported files, and only those, are removed from a
folder under incoming/.

    python -m gpu_kernels import-run data/measurements/incoming/run16 --run-id run16 \\
        --command "python -m gpu_kernels bench" --note "..."

Worked example: after run 8 and run 15 are imported, `lookup("bench_h200.csv")` is
data/measurements/current/bench_h200.csv, and importing a run 16 that wrote bench_h200.csv moves
run 8's file to archive/run08/bench_h200.csv (the test suite walks through exactly this).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as _dt
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from simlib.measured_files import json_object as measured_json_object
from simlib.safe_write import write_atomic

ROOT = Path(__file__).resolve().parents[1] / "data" / "measurements"
FIELDS = ("run_id", "date", "commit", "command", "files", "status", "note")
SIDECAR = ".provenance.json"
CURRENT, ARCHIVE = "current", "archive"
#: A file or run name: letters, digits, '.', '_', '-', not starting with '.' (one path component).
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*\Z")
SHA256 = re.compile(r"[0-9a-f]{64}\Z")
#: Staging folders of imports in progress (or interrupted), inside the root.
STAGING_PREFIX = ".import-"
JOURNAL = "journal.json"
#: How long an import waits for another one's lock before it refuses.
LOCK_WAIT_S = 120.0


class ManifestError(ValueError):
    """A measurement folder or manifest that cannot be used as it is; the message names the file."""


def check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise ManifestError(
            f"{what}: {name!r} must be letters, digits, '.', '_' or '-', not starting with '.' (a file name)"
        )
    return name


def pending_imports(root: Path = ROOT) -> list[Path]:
    """Staging folders that hold a journal: imports in progress, or interrupted and not yet rolled back."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob(f"{STAGING_PREFIX}*") if (p / JOURNAL).is_file())


def lookup(name: str, run_id: str | None = None, root: Path = ROOT) -> Path:
    """Path of dataset `name` (a file name such as 'bench_h200.csv'): the current file, or the one of
    an archived run when `run_id` is given. FileNotFoundError naming the file and what exists;
    ManifestError while an import of the tree is unfinished."""
    interrupted = pending_imports(root)
    if interrupted:
        raise ManifestError(
            f"{interrupted[0]}: an import-run of this tree is in progress or was interrupted; run import-run "
            "again (it rolls an interrupted one back) before reading measurements"
        )
    folder = Path(root) / (CURRENT if run_id is None else Path(ARCHIVE) / run_id)
    path = folder / name
    if not path.is_file():
        have = sorted(p.name for p in folder.glob("*") if p.is_file()) if folder.is_dir() else []
        raise FileNotFoundError(
            f"{path}: no such measurement file (that folder has {len(have)} files"
            + (f", e.g. {', '.join(have[:5])})" if have else ")")
        )
    return path


def _check_row(path: Path, line: int, row: dict) -> dict:
    where = f"{path}, line {line}"
    check_name(row["run_id"], f"{where}: run_id")
    if row["status"] not in (CURRENT, ARCHIVE):
        raise ManifestError(f"{where}: status {row['status']!r}, expected {CURRENT} or {ARCHIVE}")
    for rel in row["files"].split():
        parts = rel.split("/")
        ok = (len(parts) == 2 and parts[0] == CURRENT) or (
            len(parts) == 3 and parts[0] == ARCHIVE and parts[1] == row["run_id"]
        )
        if not ok or not NAME.match(parts[-1]):
            raise ManifestError(
                f"{where}: file {rel!r} is not current/<name> or archive/{row['run_id']}/<name>"
            )
    return row


def read_manifest(root: Path = ROOT) -> list[dict]:
    """The manifest's rows as dicts (an empty list if there is no manifest yet), every row checked: the
    columns, seven fields per row, names, status and paths. ManifestError naming the file otherwise."""
    path = Path(root) / "manifest.csv"
    if not path.is_file():
        return []
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError(f"{path}: not UTF-8 text (byte {e.start}): not a manifest") from None
    if "\x00" in text:
        raise ManifestError(f"{path}: holds NUL bytes: not a manifest")
    if text and not text.endswith("\n"):
        raise ManifestError(f"{path}: does not end with a newline: cut off mid-row?")
    try:
        table = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise ManifestError(f"{path}: not CSV ({e})") from None
    if not table or tuple(table[0]) != FIELDS:
        raise ManifestError(f"{path}: columns {table[0] if table else []}, expected {','.join(FIELDS)}")
    rows = []
    for line, fields in enumerate(table[1:], start=2):
        if len(fields) != len(FIELDS):
            raise ManifestError(f"{path}, line {line}: {len(fields)} fields, expected {len(FIELDS)}")
        rows.append(_check_row(path, line, dict(zip(FIELDS, fields))))
    ids = [r["run_id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ManifestError(f"{path}: run_id {next(i for i in ids if ids.count(i) > 1)!r} in two rows")
    return rows


def run_of(path: Path, root: Path = ROOT) -> dict:
    """The manifest row of the run that measured the file at `path` (under `root`); ManifestError if none."""
    rel = Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    for row in read_manifest(root):
        if rel in row["files"].split():
            return row
    raise ManifestError(f"{path}: in no row of {Path(root) / 'manifest.csv'}")


def manifest_text(rows: list[dict]) -> str:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: row.get(k, "") for k in FIELDS} for row in rows)
    return text.getvalue()


def write_manifest(rows: list[dict], root: Path = ROOT) -> None:
    """Rewrite manifest.csv atomically (simlib.safe_write: a temporary file of its own, rename, 0644)."""
    Path(root).mkdir(parents=True, exist_ok=True)
    write_atomic(str(Path(root) / "manifest.csv"), manifest_text(rows))


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


# ---------------------------------------------------------------------------------------------
# checking a run folder (nothing is changed)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunFolder:
    """A checked run folder: each file's bytes as read (and hashed) once, and the sidecars' records."""

    folder: Path
    run_id: str
    data: dict[str, bytes]  # file name -> bytes, sidecars included
    records: dict[str, dict]  # sidecar name -> its JSON object


def json_object(path, data: bytes, error: type[ValueError] | None = None) -> dict:
    """The JSON object in `data` (the bytes of `path`); `error` (default ManifestError) naming the
    file if it is not UTF-8 JSON or not an object (simlib.measured_files.json_object, the one check)."""
    return measured_json_object(path, data, error or ManifestError)


def check_folder(folder: Path, run_id: str) -> RunFolder:
    """Read and check a run folder (see the module docstring); ManifestError naming the first problem."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ManifestError(f"{folder}: not a folder")
    data: dict[str, bytes] = {}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        check_name(entry.name, f"{folder}: file name")
        path = folder / entry.name
        if entry.is_symlink():
            raise ManifestError(f"{path}: a symlink; import-run takes regular files only (copy the file)")
        if entry.is_dir(follow_symlinks=False):
            raise ManifestError(f"{path}: a folder; import-run takes regular files only (move it out first)")
        if not entry.is_file(follow_symlinks=False):
            raise ManifestError(f"{path}: not a regular file")
        with open(path, "rb") as f:
            data[entry.name] = f.read()
    sidecars = sorted(n for n in data if n.endswith(SIDECAR))
    files = sorted(n for n in data if not n.endswith(SIDECAR))
    if not files:
        raise ManifestError(f"{folder}: no measurement files")
    for name in files:
        if name + SIDECAR not in data and not name.endswith(".log"):
            raise ManifestError(f"{folder / name}: no sidecar ({name}{SIDECAR})")
    records: dict[str, dict] = {}
    for side in sidecars:
        own = side[: -len(SIDECAR)]
        if own not in data:
            raise ManifestError(f"{folder / side}: a sidecar without its file {own!r} in the folder")
        record = json_object(folder / side, data[side])
        if record.get("run_id") != run_id:
            raise ManifestError(f"{folder / side}: run_id is {record.get('run_id')!r}, expected {run_id!r}")
        sha = record.get("sha256")
        if not isinstance(sha, str) or not SHA256.match(sha):
            raise ManifestError(f"{folder / side}: no sha256 of {own} recorded")
        if sha != hashlib.sha256(data[own]).hexdigest():
            raise ManifestError(f"{folder / own}: sha256 differs from the one in {side}")
        if record.get("file", own) != own:
            raise ManifestError(f"{folder / side}: describes {record['file']!r}, not {own!r}")
        if "bytes" in record and record["bytes"] != len(data[own]):
            raise ManifestError(f"{folder / own}: {len(data[own])} bytes, its sidecar says {record['bytes']}")
        records[side] = record
    for name in files:  # the logs without a sidecar of their own
        if name + SIDECAR in data:
            continue
        if not records:
            raise ManifestError(f"{folder / name}: no sidecar, and no sidecar in {folder} names the run")
        siblings = [n for n in files if n != name and Path(n).stem == Path(name).stem]
        if siblings and not any(s + SIDECAR in data for s in siblings):
            raise ManifestError(f"{folder / name}: no sidecar, and neither has {', '.join(siblings)}")
    return RunFolder(folder, run_id, data, records)


def verify(folder: Path, run_id: str) -> dict[Path, dict]:
    """{sidecar: its record} of a checked run folder (`check_folder`)."""
    checked = check_folder(folder, run_id)
    return {Path(folder) / name: record for name, record in checked.records.items()}


# ---------------------------------------------------------------------------------------------
# the transaction
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def locked(root: Path, wait_s: float = LOCK_WAIT_S):
    """An exclusive lock on the tree (flock on the root folder itself: no lock file to leave behind);
    waits for another import up to `wait_s`, then refuses. The lock dies with its process."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ManifestError(
                        f"{root}: another import-run has held the lock for {wait_s:.0f} s; try again later"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


def _rollback(root: Path, renames: list[list[str]]) -> None:
    """Undo the renames of a journal that happened, newest first. A rename happened when its source is
    gone and its destination is there: true of every step because the journal is written only once
    every staged file exists, and an archived file's destination did not exist before."""
    for src, dst in reversed(renames):
        if (root / dst).exists() and not (root / src).exists():
            (root / src).parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / dst, root / src)


def recover(root: Path = ROOT) -> list[str]:
    """Finish what interrupted imports left (call with the lock held): roll back the renames of each one
    whose run is not in the manifest, and remove its staging folder. Returns the run ids rolled back."""
    root = Path(root)
    rolled = []
    for staging in sorted(root.glob(f"{STAGING_PREFIX}*")):
        journal = staging / JOURNAL
        try:
            plan = json.loads(journal.read_bytes()) if journal.is_file() else None
        except ValueError:  # cut while being written: the first rename waits for its fsync, so none ran
            plan = None
        if isinstance(plan, dict):
            if not any(r["run_id"] == plan["run_id"] for r in read_manifest(root)):
                _rollback(root, plan["renames"])
                rolled.append(plan["run_id"])
            for folder in sorted(plan.get("created", []), key=len, reverse=True):
                with contextlib.suppress(OSError):
                    (root / folder).rmdir()  # only if empty
        shutil.rmtree(staging, ignore_errors=True)
    return rolled


def _plan(root: Path, names: list[str], rows: list[dict]) -> tuple[list[tuple[str, str]], set[str]]:
    """The renames that put `names` into current/ (first the files they replace, to the archive of the
    run that owns them; legacy shared sidecars with the last file they describe), with `rows` updated
    in place; and the archive folders to create. ManifestError before anything moves."""
    owner = {path: row for row in rows for path in row["files"].split()}
    renames: list[tuple[str, str]] = []
    created: set[str] = set()
    for name in names:
        old = f"{CURRENT}/{name}"
        target = root / old
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise ManifestError(f"{target}: not a regular file; cannot replace it")
        if not target.exists():
            continue
        if old not in owner:
            raise ManifestError(f"{target}: in current/ but in no manifest row; cannot archive it")
        row = owner[old]
        moving = [old]
        side = sidecar_of(target)
        if side is not None and side.name not in names:
            side_rel = f"{CURRENT}/{side.name}"
            still_used = [
                p
                for p in row["files"].split()
                if p.startswith(CURRENT + "/")
                and p not in (old, side_rel)
                and sidecar_of(root / p) == side
                and Path(p).name not in names
            ]
            if side_rel in row["files"].split() and not still_used:
                moving.append(side_rel)  # a legacy sidecar goes with the last file it describes
        for rel in moving:
            new = f"{ARCHIVE}/{row['run_id']}/{Path(rel).name}"
            if (root / new).exists() or any(dst == new for _, dst in renames):
                raise ManifestError(f"{root / new}: already exists; cannot archive {rel} there")
            for folder in (ARCHIVE, f"{ARCHIVE}/{row['run_id']}"):
                if not (root / folder).is_dir():
                    created.add(folder)
            renames.append((rel, new))
            row["files"] = " ".join(new if p == rel else p for p in row["files"].split())
        row["status"] = CURRENT if any(p.startswith(CURRENT + "/") for p in row["files"].split()) else ARCHIVE
    return renames, created


def _write_new(path: Path, data: bytes) -> None:
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(path, 0o644)


def import_run(folder: Path, run_id: str, command: str, note: str = "", root: Path = ROOT) -> dict:
    """Import a run folder as one transaction (module docstring) and return its manifest row. The date
    and commit come from the sidecars (`date_utc`, `git_commit`)."""
    root, folder = Path(root), Path(folder)
    check_name(run_id, "--run-id")
    if not folder.is_dir():
        raise ManifestError(f"{folder}: not a folder")
    inside = folder.resolve()
    if inside == root.resolve() or (
        root.resolve() in inside.parents and (root / "incoming").resolve() not in inside.parents
    ):
        raise ManifestError(
            f"{folder}: inside the measurement tree {root}; import from incoming/ or outside it"
        )
    run = check_folder(folder, run_id)
    names = sorted(run.data)
    with locked(root):
        recover(root)
        rows = read_manifest(root)
        if any(r["run_id"] == run_id for r in rows):
            raise ManifestError(f"{root / 'manifest.csv'}: run_id {run_id!r} is already imported")
        moves, created = _plan(root, names, rows)
        dates = sorted(str(r["date_utc"]) for r in run.records.values() if r.get("date_utc"))
        commits = sorted(
            {str(r["git_commit"]).split()[0] for r in run.records.values() if r.get("git_commit")}
        )
        row = {
            "run_id": run_id,
            "date": dates[0] if dates else _dt.date.today().isoformat(),
            "commit": " ".join(commits) or "unknown",
            "command": command,
            "files": " ".join(f"{CURRENT}/{n}" for n in names),
            "status": CURRENT,
            "note": note,
        }
        staging = Path(tempfile.mkdtemp(dir=root, prefix=STAGING_PREFIX))
        stage = staging.relative_to(root).as_posix()
        renames = [list(m) for m in moves]
        renames += [[f"{stage}/files/{n}", f"{CURRENT}/{n}"] for n in names]
        renames.append([f"{stage}/manifest.csv", "manifest.csv"])
        if not (root / CURRENT).is_dir():
            created.add(CURRENT)
        done = 0  # renames that happened; len(renames) once committed
        try:
            (staging / "files").mkdir()
            for name in names:
                _write_new(staging / "files" / name, run.data[name])
            _write_new(staging / "manifest.csv", manifest_text(rows + [row]).encode())
            plan = {"run_id": run_id, "renames": renames, "created": sorted(created)}
            _write_new(staging / JOURNAL, json.dumps(plan, indent=1).encode())
            for folder_rel in sorted(created, key=len):
                (root / folder_rel).mkdir(exist_ok=True)
            for src, dst in renames:
                os.replace(root / src, root / dst)  # the last one, the manifest, commits
                done += 1
        finally:
            if done < len(renames):
                for src, dst in reversed(renames[:done]):
                    os.replace(root / dst, root / src)
                for folder_rel in sorted(created, key=len, reverse=True):
                    with contextlib.suppress(OSError):
                        (root / folder_rel).rmdir()
            shutil.rmtree(staging, ignore_errors=True)
    if inside.parent == (root / "incoming").resolve():
        for name in names:  # only what was imported, and only as it was imported
            path = folder / name
            with contextlib.suppress(OSError):
                if path.is_file() and not path.is_symlink() and path.read_bytes() == run.data[name]:
                    path.unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if nothing else is left in it
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
    except KeyboardInterrupt:
        print("import-run: interrupted; the tree is as it was", file=sys.stderr)
        return 130
    print(f"{row['run_id']}: {len(row['files'].split())} files in {args.root / CURRENT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
