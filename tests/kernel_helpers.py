"""Helpers shared by the kernel test files (simulator and GPU)."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = 1e-5
ON_GPU = os.environ.get("FLASHIO_GPU") == "1"
sim_only = pytest.mark.skipif(ON_GPU, reason="simulator tests run on the CPU")


def ceil_div(a, b):
    return -(-a // b)


def lse_error(out, ref):
    """Relative error of L with a floor of 1 per element: L = m + log l is a sum of scores whose
    rounding error scales with |q|·|k|, not with |L| (for N = 1, L is one score that may be ~0)."""
    out = np.asarray(out, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        return math.inf
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), math.sqrt(ref.size)))


def run_cli(args, timeout=120):
    """`python -m gpu_kernels ARGS` in a fresh process that decides on the simulator by itself."""
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # the CLI must decide by itself
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "gpu_kernels", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=timeout,
    )
