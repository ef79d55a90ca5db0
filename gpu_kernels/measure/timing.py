"""Timing one variant on one case: checked first, then CUDA events around each call.

Method (docs/performance.md): the output is poisoned with NaN, one warm-up call (it compiles) on
input set 0 is checked against the float64 reference rows, then ``reps`` calls are timed, each
between two CUDA events on the default stream, call r on input set (1 + r) mod n_sets so that
consecutive calls read different inputs (together more than twice the L2). The median is the
number to use; p10, p90 and the minimum show the spread.
"""

from __future__ import annotations

import numpy as np

from .cases import TOLERANCE
from .variants import make


def time_rotating(call, n_sets, reps, first=0):
    """Milliseconds of `reps` calls, each between two CUDA events; call r gets input set
    (first + r) mod n_sets, so consecutive calls read different input sets."""
    from numba import cuda

    starts = [cuda.event() for _ in range(reps)]
    ends = [cuda.event() for _ in range(reps)]
    for r in range(reps):
        starts[r].record()
        call((first + r) % n_sets)
        ends[r].record()
    ends[-1].synchronize()
    return np.array([s.elapsed_time(e) for s, e in zip(starts, ends)])


def _free_device_memory():
    from numba import cuda

    try:  # numba defers frees; flush them so the next variant's N×N buffers fit
        cuda.current_context().deallocations.clear()
    except Exception:
        pass
    try:
        import cupy as cp

        cp.get_default_memory_pool().free_all_blocks()
    except ImportError:
        pass
    try:
        import torch

        torch.cuda.empty_cache()
    except ImportError:
        pass


def measure_variant(name, case, reps: int, fast_config=None) -> dict:
    """Check, then time one variant on one case; a dict of results (status ok, or error and why)."""
    import cupy as cp
    from numba import cuda

    res = {"variant": name}
    try:
        variant = make(name, case, fast_config)
    except Exception as e:  # a variant that cannot run here (no torch, too big): recorded, not fatal
        return {**res, "status": "error", "error": f"{type(e).__name__}: {e}"}
    res["params"] = variant.params
    try:
        case.poison()
        variant.call(0)  # warm-up (compiles) and the checked run: set 0 holds the reference inputs
        cuda.synchronize()
        o, lse = variant.output(0)
        res.update(case.check(o, lse))
        res["ok"] = (
            res["finite"] and res["rel_err_o"] <= TOLERANCE and res.get("rel_err_lse", 0.0) <= TOLERANCE
        )
        times = time_rotating(variant.call, case.n_sets, reps, first=1)
        o_last, _ = variant.output(reps % case.n_sets)
        res["finite_after_timing"] = bool(cp.isfinite(o_last).all())
        res.update(
            status="ok",
            ms=float(np.median(times)),
            ms_p10=float(np.percentile(times, 10)),
            ms_p90=float(np.percentile(times, 90)),
            ms_min=float(times.min()),
            reps=reps,
        )
    except Exception as e:  # a CUDA or compile error of one variant must not lose the others
        res.update(status="error", error=f"{type(e).__name__}: {e}")
    finally:
        variant.keep.clear()
        del variant
        _free_device_memory()
    return res
