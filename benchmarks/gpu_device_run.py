"""Everything gpu_kernels needs from one call on the device machine, within a deadline.

    python3 benchmarks/gpu_device_run.py [--stages env,pytest,asm,profile,compare,bench]   # files under $OUT

Stages (each a subprocess with its own time limit, all inside DEVICE_DEADLINE_S):
  env       nvidia-smi, versions, ncu --version
  pytest    FLASHIO_GPU=1 pytest -m gpu tests (correctness, counters = simlib, every kernel and variant)
  asm       python -m gpu_kernels asm  (PTX of timing vs counting builds: atomics, float64, local memory)
  profile   python -m gpu_kernels profile  (Nsight Compute, per launch, next to simlib)
  compare   python -m gpu_kernels compare  (numba kernels vs cupy and torch SDPA, B=1, H=16)
  bench     python -m gpu_kernels bench  (its time budget is what is left, minus a reserve)
Every file under $OUT has its sidecar with the run's id (FLASHIO_RUN_ID, set here if missing), so
`python -m gpu_kernels import-run` can take the folder as it is: log.txt and pytest_gpu.log are
written at the end with theirs. Set FLASHIO_COMMIT to the commit the tree was copied from. The exit
status is 1 if any stage failed, timed out or was skipped for lack of time.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

OUT = os.environ.get("OUT") or "/tmp/gpu_out"
T0 = time.monotonic()
DEADLINE = T0 + float(os.environ.get("DEVICE_DEADLINE_S", "540"))
LOG = []
FAILED = []


def log(msg):
    line = f"[{time.monotonic() - T0:6.1f}s] {msg}"
    print(line, flush=True)
    LOG.append(line)


def stage(name, cmd, limit, env=None):
    """Run one stage; its output goes to the log. Returns (rc, stdout, stderr) or None if skipped."""
    left = DEADLINE - time.monotonic()
    t = min(limit, left - 5)
    if t < 15:
        log(f"== {name}: SKIPPED, {left:.0f} s left before the deadline")
        FAILED.append(f"{name} (skipped)")
        return None
    log(f"== {name} (limit {t:.0f} s): {' '.join(cmd)}")
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=t, env={**os.environ, **(env or {})})
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    LOG.append(f"--- {name} stdout ---\n{out}\n--- {name} stderr (last 6000) ---\n{err[-6000:]}")
    log(f"== {name}: rc={rc} in {time.monotonic() - start:.0f} s")
    if rc != 0:
        FAILED.append(f"{name} (rc={rc})")
    return rc, out, err


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def summary():
    print("\n======== SUMMARY ========")
    bench = read_csv(os.path.join(OUT, "bench_h200.csv"))
    prof = read_csv(os.path.join(OUT, "profile_h200.csv"))
    times = {}
    for r in bench:
        key = (r["variant"], int(r["seq_len"]), int(r["head_dim"]))
        if r["metric"] == "ms":
            times[key] = f"{float(r['value']):.3f}"
        elif r["metric"] == "status" and r["value"] != "ok":
            times[key] = r["value"]
    print("bench (B=1,H=16) median ms   variant / N x d")
    kernels = sorted({k[0] for k in times})
    ns = sorted({(k[1], k[2]) for k in times}, key=lambda x: (x[1], x[0]))
    print(f"{'N':>6} {'d':>4} " + " ".join(f"{k:>11}" for k in kernels))
    for n, d in ns:
        print(f"{n:>6} {d:>4} " + " ".join(f"{times.get((k, n, d), '-'):>11}" for k in kernels))
    tot = {}
    for r in prof:
        if r["launch"] != "total":
            continue
        key = (r["kernel"], int(r["seq_len"]), int(r["head_dim"]))
        tot.setdefault(key, {})[r["metric"]] = r["value"]
    if tot:
        print("\nprofile (B=1,H=4) per kernel total, bytes")
        print(
            f"{'kernel':>6} {'N':>6} {'d':>4} {'dram_rd':>13} {'dram_wr':>13} {'l2_rd_B':>13} {'simlib_rd':>13} "
            f"{'simlib_wr':>13} {'cnt-sim':>8}"
        )
        for (k, n, d), m in sorted(tot.items()):

            def g(x, m=m):
                v = m.get(x, "")
                return v if v != "" else "-"

            try:
                l2rd = str(int(float(m["lts__t_sectors_op_read.sum"])) * 32)
            except (KeyError, ValueError):
                l2rd = "-"
            try:
                diff = sum(
                    int(m[f"counted_{c}"]) - int(m[f"simlib_{c}"])
                    for c in ("hbm_read_bytes", "hbm_write_bytes", "sram_read_bytes", "sram_write_bytes")
                )
            except (KeyError, ValueError):
                diff = "-"
            print(
                f"{k:>6} {n:>6} {d:>4} {g('dram__bytes_read.sum'):>13} {g('dram__bytes_write.sum'):>13} "
                f"{l2rd:>13} {g('simlib_hbm_read_bytes'):>13} {g('simlib_hbm_write_bytes'):>13} {diff!s:>8}"
            )
    ptx = os.path.join(OUT, "ptx_check.json")
    if os.path.exists(ptx):
        with open(ptx) as f:
            rep = json.load(f)
        print(
            "\nPTX atom count (timing/counting):",
            "; ".join(f"{r['kernel']}: {r['atom']}" for r in rep["rows"] if r["build"] == "timing"),
            "|",
            "counting builds:",
            sorted({r["atom"] for r in rep["rows"] if r["build"] == "counting"}),
            "| f64:",
            sum(r["f64"] for r in rep["rows"]),
            "| problems:",
            rep["problems"],
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stages", default="env,pytest,asm,profile,compare,bench")
    stages = ap.parse_args().stages.split(",")
    os.makedirs(OUT, exist_ok=True)
    from measurements.provenance import provenance, run_id, write_measurement

    os.environ.setdefault("FLASHIO_RUN_ID", run_id())
    py = sys.executable
    versions = (
        "import importlib.metadata as m, numpy; print('numpy', numpy.__version__, numpy.__file__); "
        "[print(p, m.version(p)) for p in ('numba', 'numba-cuda', 'cupy-cuda13x')]"
    )
    compare_table = ""
    if "env" in stages:
        stage(
            "env",
            [
                "bash",
                "-c",
                f'nvidia-smi; {py} -c "{versions}"; '
                "(ncu --version || ls /opt/nvidia/nsight-compute) 2>&1 | tail -3",
            ],
            40,
        )
    if "pytest" in stages:
        res = stage(
            "pytest-gpu",
            [py, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "-rfs", "tests"],
            200,
            env={"FLASHIO_GPU": "1"},
        )
        if res:
            tail = [ln for ln in res[1].strip().splitlines() if ln.strip()][-3:]
            log("pytest: " + " | ".join(tail))
            write_measurement(
                os.path.join(OUT, "pytest_gpu.log"),
                res[1] + res[2],
                provenance({"what": "FLASHIO_GPU=1 pytest -m gpu tests", "returncode": res[0]}),
            )
    if "asm" in stages:
        stage("asm", [py, "-m", "gpu_kernels", "asm", "--json", os.path.join(OUT, "ptx_check.json")], 90)
    if "profile" in stages:
        stage(
            "profile",
            [py, "-m", "gpu_kernels", "profile", "--out", OUT, "--no-progress", "--timeout-s", "110"],
            260,
        )
    if "compare" in stages:
        res = stage("compare", [py, "-m", "gpu_kernels", "compare", "--out", OUT, "--no-progress"], 240)
        compare_table = res[1] if res else ""
    if "bench" in stages:
        budget = max(20, DEADLINE - time.monotonic() - 45)
        stage(
            "bench",
            [py, "-m", "gpu_kernels", "bench", "--out", OUT, "--budget-s", f"{budget:.0f}", "--no-progress"],
            budget + 40,
        )
    summary()
    print("\n" + "\n".join(compare_table.strip().splitlines()[-45:]))
    log("FAILED: " + ", ".join(FAILED) if FAILED else "done: every stage passed")
    write_measurement(
        os.path.join(OUT, "log.txt"),
        "\n".join(LOG) + "\n",
        provenance(
            {"what": "log of benchmarks/gpu_device_run.py", "stages": stages, "failed": FAILED}, gpu=False
        ),
    )
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
