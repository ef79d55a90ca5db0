"""Run the simulator suites round after round under CPU contention: a deterministic simulator has zero
failures, whatever the timing.

    python -m tools.stress_simulator                      # 20 rounds, -n 2, one busy process, p = 0.05
    python -m tools.stress_simulator --rounds 3 --busy 2 --preempt 0.2
    python -m tools.stress_simulator --numba-allocator    # numba's own shared-array allocator: it fails

Each round is one ``pytest -n WORKERS`` over the tensor-core and fp32 kernel suites on numba's CUDA
simulator while BUSY processes spin on the CPU (the contention that made issue 26's failures appear),
and, unless ``--preempt 0``, with forced preemption (tests/sim_preempt.py: the GIL handed to another
thread before device-function calls with probability p, before every barrier and inside every shared-
array allocation), which finds in one round what load alone finds in hours. ``--numba-allocator``
puts numba-cuda's racy allocator back (gpu_kernels/simulator.py explains the race) to show that the
stress run catches it. `make stress` runs the defaults; tests/test_simulator_race.py is the short
version that `make test` runs.

Prints one line per round and a table at the end; exit status 1 if any round had a failure.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from simlib.cli_values import positive_int

ROOT = Path(__file__).resolve().parents[1]
#: The simulator suites: tensor-core kernels and their PTX-helper twins, then the fp32 kernels.
SUITES = (
    "tests/test_tensor_core_fa2.py",
    "tests/test_tensor_core_naive.py",
    "tests/test_tensor_core_warp_ops.py",
    "tests/test_kernels_sim.py",
    "tests/test_kernels_variants_sim.py",
    "tests/test_fast_kernel_sim.py",
    "tests/test_trace_sim.py",
)


def _spin() -> None:  # pragma: no cover (runs in the busy processes)
    while True:
        pass


def non_negative_int(text: str) -> int:
    return 0 if text.strip() == "0" else positive_int(text)


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"must be in 0..1; got {text!r}")
    return value


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m tools.stress_simulator", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=positive_int, default=20, help="pytest runs (default 20)")
    p.add_argument("--workers", type=positive_int, default=2, help="pytest -n (default 2)")
    p.add_argument(
        "--busy", type=non_negative_int, default=1, help="spinning processes beside the tests (default 1)"
    )
    p.add_argument("--preempt", type=probability, default=0.05, help="forced-preemption probability")
    p.add_argument("--numba-allocator", action="store_true", help="numba's racy shared-array allocator")
    p.add_argument(
        "suites", nargs="*", default=list(SUITES), help="test files (default: the simulator suites)"
    )
    return p.parse_args(argv)


def run_round(args) -> tuple[int, int, float, str, str]:
    """(passed, failed, seconds, last line, the output's failure report) of one pytest run."""
    env = dict(os.environ)
    env.pop("FLASHIO_GPU", None)
    if args.preempt:
        env["FLASHIO_SIM_PREEMPT"] = repr(args.preempt)
    if args.numba_allocator:
        env["FLASHIO_SIM_NUMBA_ALLOCATOR"] = "1"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rf",
        "--tb=line",
        "-p",
        "no:cacheprovider",
        "-n",
        str(args.workers),
        *args.suites,
    ]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate()
    except BaseException:  # Ctrl-C or SIGTERM: take pytest and its xdist workers down too
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
        raise
    out = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    seconds = time.monotonic() - t0
    tail = (out.stdout.strip().splitlines() or [""])[-1]
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error)", tail)}
    failed = counts.get("failed", 0) + counts.get("error", 0)
    if out.returncode and not failed:
        failed = 1  # pytest itself failed (collection, crash): count it
    report = ""
    if failed:  # which tests, and the line each failed at (--tb=line), for the log
        lines = (out.stdout + out.stderr).splitlines()
        report = "\n".join(x for x in lines if x.startswith(("FAILED", "ERROR", "E ", "/")) or ".py:" in x)
    return counts.get("passed", 0), failed, seconds, tail, report


def main(argv=None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the clean-up below on `kill`
    busy = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for b in busy:
        b.start()
    rows = []
    try:
        for r in range(1, args.rounds + 1):
            passed, failed, seconds, tail, report = run_round(args)
            rows.append((passed, failed, seconds))
            print(
                f"round {r}/{args.rounds}: {passed} passed, {failed} failed, {seconds:.0f} s  ({tail})",
                flush=True,
            )
            if report:
                print(report, flush=True)
    finally:
        for b in busy:
            b.terminate()
            b.join()
    total_failed = sum(f for _, f, _ in rows)
    print()
    print(
        f"{'rounds':>6} {'workers':>7} {'busy':>4} {'preempt':>7} {'allocator':>9} {'passed':>7} {'failed':>6} {'s/round':>7}"
    )
    print(
        f"{len(rows):>6} {args.workers:>7} {args.busy:>4} {args.preempt:>7g} "
        f"{'numba' if args.numba_allocator else 'fixed':>9} {sum(p for p, _, _ in rows):>7} {total_failed:>6} "
        f"{sum(s for _, _, s in rows) / len(rows):>7.0f}"
    )
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
