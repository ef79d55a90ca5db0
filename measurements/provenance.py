"""Where a measurement came from, written with it: every data file F gets F.provenance.json.

A run has one ``run_id`` (``--run-id``, FLASHIO_RUN_ID, or the UTC time and commit); each sidecar
records it and the ``sha256`` of F's bytes (and, for a CSV, its number of ``rows``), so a reader
(measurements.manifest, measurements.readers) can never pair a file with another run's provenance
nor read a file cut after its run. Both files are written to temporary names first (mode
0644) and renamed one right after the other; a run that is cut off between two configurations
leaves the last complete pair. The atomic writer is simlib's (``simlib.safe_write``): one for
the whole project.

Worked example: ``write_measurement("out/bench_h200.csv", text, {"what": ...})`` leaves
out/bench_h200.csv and out/bench_h200.csv.provenance.json with run_id, sha256, date, commit, GPU.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import json
import os
import platform
import subprocess
import sys

from simlib.safe_write import check_destination, write_atomic

SIDECAR = ".provenance.json"


def _version(dist: str):
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None


def _run(cmd, timeout=20):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return out.stdout.strip() if out.returncode == 0 else None
    except Exception:
        return None


def git_commit() -> str:
    """The commit the tree came from: FLASHIO_COMMIT when the command that copied the tree set it
    (the device machine gets a copy whose .git, if any, may be stale), else HEAD of the checkout
    ("-dirty" with uncommitted changes)."""
    named = os.environ.get("FLASHIO_COMMIT")
    if named:
        return named + " (FLASHIO_COMMIT)"
    here = os.path.dirname(os.path.abspath(__file__))
    commit = _run(["git", "-C", here, "rev-parse", "HEAD"])
    if not commit:
        return "unknown (no .git and no FLASHIO_COMMIT)"
    dirty = _run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"])
    return commit + ("-dirty" if dirty else "")


_RUN_ID = {}


def run_id() -> str:
    """This process's run id: FLASHIO_RUN_ID if set, else <UTC yyyymmddTHHMMSSZ>-<commit>, fixed at
    the first call (letters, digits, '-', '_', '.': a folder name for archive/<run_id>/)."""
    if "id" not in _RUN_ID:
        named = os.environ.get("FLASHIO_RUN_ID")
        if named:
            _RUN_ID["id"] = named
        else:
            stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            commit = git_commit().split()[0].replace("-dirty", "")[:10]
            _RUN_ID["id"] = f"{stamp}-{commit}" if commit != "unknown" else stamp
    return _RUN_ID["id"]


def set_run_id(value: str) -> None:
    """Fix the run id (the CLI's --run-id), checked to be usable as a folder name."""
    if not value or value.startswith(".") or not all(c.isalnum() or c in "-_." for c in value):
        raise ValueError(f"--run-id: {value!r} must be letters, digits, '-', '_' or '.' (a folder name)")
    _RUN_ID["id"] = value


def gpu_info() -> dict:
    """GPU name, compute capability, SMs, L2, memory, driver and CUDA versions (what can be read)."""
    info = {}
    try:
        from numba import cuda

        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        info["gpu_name"] = name
        info["compute_capability"] = "{}.{}".format(*dev.compute_capability)
        info["multiprocessors"] = int(dev.MULTIPROCESSOR_COUNT)
        info["l2_cache_bytes"] = int(dev.L2_CACHE_SIZE)
        from numba.cuda.cudadrv import driver

        info["cuda_driver_api_version"] = "{}.{}".format(*driver.driver.get_version())
        info["gpu_memory_total_bytes"] = int(cuda.current_context().get_memory_info()[1])
    except Exception as e:  # pragma: no cover - only on broken setups
        info["gpu_error"] = repr(e)
    smi = _run(
        [
            "nvidia-smi",
            "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,uuid,serial",
            "--format=csv,noheader",
        ]
    )
    if smi:
        info["nvidia_smi"] = smi.splitlines()[0]
        parts = [p.strip() for p in smi.splitlines()[0].split(",")]
        if len(parts) > 1:
            info["driver_version"] = parts[1]
    try:
        import cupy

        info["cuda_runtime_version"] = str(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:
        pass
    return info


def provenance(extra: dict | None = None, *, gpu: bool = True) -> dict:
    """The record every sidecar starts from: run id, date, commit, versions, argv (and the GPU)."""
    rec = {
        "run_id": run_id(),
        "date_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": _version("numpy"),
        "numba": _version("numba"),
        "numba_cuda": _version("numba-cuda"),
        "cupy": _version("cupy-cuda13x") or _version("cupy-cuda12x") or _version("cupy"),
        "argv": sys.argv,
    }
    if gpu:
        rec.update(gpu_info())
    if extra:
        rec.update(extra)
    return rec


def csv_text(rows: list[dict], fields: list[str]) -> str:
    """CSV of `rows` with the header `fields` (a key outside `fields` is an error)."""
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=fields, restval="", extrasaction="raise", lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(r)
    return buf.getvalue()


def sidecar_path(path: str) -> str:
    return path + SIDECAR


def write_measurement(path: str, text: str, record: dict) -> str:
    """Write the data file `path` and its sidecar (``record`` + run_id + sha256 of the bytes), each
    atomically, the data file first. ``record`` is usually ``provenance({...})`` made once per run."""
    data = text.encode()
    side = {
        **record,
        "run_id": record.get("run_id", run_id()),
        "file": os.path.basename(path),
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
    }
    if path.endswith(".csv"):  # the readers check the row count too (measurements.readers)
        side["rows"] = max(sum(1 for fields in csv.reader(io.StringIO(text, newline="")) if fields) - 1, 0)
    write_atomic(path, text)
    write_atomic(sidecar_path(path), json.dumps(side, indent=1, default=str) + "\n")
    return path


def check_output_dir(folder: str, name: str = "--out") -> str:
    """ValueError naming `name` unless `folder` is a writable folder or can be created as one (its
    nearest existing parent is a writable folder). Creates nothing: called before any work starts."""
    if not folder:
        raise ValueError(f"{name}: the output folder is empty")
    path = os.path.abspath(folder)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise ValueError(f"{name}: {folder!r} is a file, not a folder")
        check_destination(os.path.join(path, "probe.csv"), name)
        return folder
    parent = os.path.dirname(path)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ValueError(f"{name}: {folder!r} lies under a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: cannot create {folder!r}: {parent!r} is not writable")
    return folder


def attach(path: str, record: dict) -> str:
    """Write the sidecar of a data file another program wrote (ncu's CSV through a shell redirect),
    with the sha256 of its bytes as they are now."""
    with open(path, "rb") as f:
        data = f.read()
    side = {
        **record,
        "run_id": record.get("run_id", run_id()),
        "file": os.path.basename(path),
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
    }
    write_atomic(sidecar_path(path), json.dumps(side, indent=1, default=str) + "\n")
    return sidecar_path(path)


def main(argv=None) -> int:
    """``python -m measurements.provenance FILE... --what TEXT``: sidecars for files written
    by another program (the benchmarks' ncu runs); one line on stderr and exit 2 on a bad file."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m measurements.provenance")
    p.add_argument("files", nargs="+")
    p.add_argument("--what", required=True, help="what the files measure (goes into each sidecar)")
    args = p.parse_args(argv)
    bad = [f for f in args.files if not os.path.isfile(f)]
    if bad:
        print(f"error: not a file: {', '.join(bad)}", file=sys.stderr)
        return 2
    record = provenance({"what": args.what})
    for f in args.files:
        print(attach(f, record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
