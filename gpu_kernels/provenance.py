"""Where a measurement came from, and writing result files safely (temp file, then rename)."""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile


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
    (the device machine gets a copy whose .git, if any, may be stale: run 8's reported an older
    HEAD), else HEAD of the checkout ("-dirty" with uncommitted changes)."""
    named = os.environ.get("FLASHIO_COMMIT")
    if named:
        return named + " (FLASHIO_COMMIT)"
    here = os.path.dirname(os.path.abspath(__file__))
    commit = _run(["git", "-C", here, "rev-parse", "HEAD"])
    if not commit:
        return "unknown (no .git and no FLASHIO_COMMIT)"
    dirty = _run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"])
    return commit + ("-dirty" if dirty else "")


def gpu_info() -> dict:
    """GPU name, compute capability, SMs, L2, memory, driver and CUDA versions (what can be read)."""
    info = {}
    try:
        from numba import cuda

        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        info["gpu_name"] = name
        info["compute_capability"] = "%d.%d" % dev.compute_capability
        info["multiprocessors"] = int(dev.MULTIPROCESSOR_COUNT)
        try:
            info["l2_cache_bytes"] = int(dev.L2_CACHE_SIZE)
        except Exception:
            pass
        try:
            from numba.cuda.cudadrv import driver

            v = driver.driver.get_version()
            info["cuda_driver_api_version"] = "%d.%d" % tuple(v)
        except Exception:
            pass
        try:
            free, total = cuda.current_context().get_memory_info()
            info["gpu_memory_total_bytes"] = int(total)
        except Exception:
            pass
    except Exception as e:  # pragma: no cover - only on broken setups
        info["gpu_error"] = repr(e)
    smi = _run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem",
                "--format=csv,noheader"])
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


def provenance(extra: dict | None = None) -> dict:
    rec = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": _version("numpy"),
        "numba": _version("numba"),
        "numba_cuda": _version("numba-cuda"),
        "cupy": _version("cupy-cuda13x") or _version("cupy-cuda12x") or _version("cupy"),
        "argv": sys.argv,
    }
    rec.update(gpu_info())
    if extra:
        rec.update(extra)
    return rec


def _atomic_write(path: str, write):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w", newline="") as f:
            write(f)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are meant to be read by anyone
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: str, obj) -> None:
    _atomic_write(path, lambda f: json.dump(obj, f, indent=1, default=str))


def write_csv_atomic(path: str, rows: list[dict], fields: list[str]) -> None:
    def w(f):
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="raise")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k, "") for k in fields})

    _atomic_write(path, w)
