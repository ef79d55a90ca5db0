"""Wall-clock time of the kernels on a GPU, next to cupy's naive attention (cuBLAS + elementwise softmax).

Method (see the device notes, METHOD.md): CUDA events around every call on the default stream, one
untimed warm-up call (it also compiles), then at least ``min_reps`` timed calls; the median is the
number to use. Inputs are rotated among enough independent sets (Q, K, V and the outputs) that the
working set exceeds twice the L2 cache, so a call does not find its inputs in L2 from the previous
call. Inputs are standard-normal, never zeros.

Shapes: B·H fixed per run (default B=1, H=16: at N=256 the tiled kernel then has 16·⌈256/48⌉ = 96
blocks and from N=512 more blocks than the H200's 132 SMs; larger N fill the GPU many times over).
The naive kernels materialise S and P (2·B·H·N² fp32); a config whose S and P would take more than
45 % of the GPU memory is skipped and recorded as skipped, not run with other shapes. A time budget
caps the whole run: a config whose predicted time (from the last N of the same kernel, ∝ N²) does
not fit the time left is recorded as skipped.

Output: ``bench_<tag>.csv``, one row per (kernel, shape, metric), and ``bench_<tag>.provenance.json``.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from .checks import Shape, default_blocks, matmul_flops, resolve_naive_params, scale_for
from .counting import COUNT_KEYS
from .provenance import provenance, write_csv_atomic, write_json_atomic

FIELDS = ["kernel", "batch", "heads", "seq_len", "head_dim", "params", "metric", "value", "unit", "note"]
L2_FALLBACK_BYTES = 60 * 1024 * 1024
MEMORY_FRACTION = 0.45
TARGET_S_PER_CONFIG = 0.5  # aim for about this much timed work per config (more reps for small ones)
MAX_REPS = 200
MAX_SETS = 128


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

def _predicted_hbm(kernel, shape: Shape, params):
    """simlib's HBM bytes (read + write) for the tiling that ran; cupy: the paper's model (T = ∞)."""
    try:
        from .model import simlib_prediction

        if kernel == "cupy_naive":
            from simlib import Workload, count

            wl = Workload(batch=shape.batch, heads=shape.heads, seq_len=shape.seq_len,
                          head_dim=shape.head_dim, dtype="fp32")
            r = count("naive", wl)
            return int(r.hbm_read_bytes) + int(r.hbm_write_bytes)
        pred = simlib_prediction(kernel, shape.batch, shape.heads, shape.seq_len, shape.head_dim, **params)
        return pred[COUNT_KEYS[0]] + pred[COUNT_KEYS[1]]
    except Exception:
        return None


class _Inputs:
    """Input sets on the GPU, as cupy arrays when cupy is there, numba device arrays otherwise."""

    def __init__(self, shape: Shape, n_sets: int, with_lse: bool):
        from numba import cuda

        b, h, n, d = shape.batch, shape.heads, shape.seq_len, shape.head_dim
        self.sets = []
        try:
            import cupy as cp
        except ImportError:
            cp = None
        rng = np.random.default_rng()
        for _ in range(n_sets):
            if cp is not None:
                q, k, v = (cp.random.standard_normal((b, h, n, d), dtype=cp.float32) for _ in range(3))
                o = cp.full((b, h, n, d), cp.nan, dtype=cp.float32)
                lse = cp.full((b, h, n), cp.nan, dtype=cp.float32) if with_lse else None
            else:
                q, k, v = (cuda.to_device(rng.standard_normal((b, h, n, d), dtype=np.float32)) for _ in range(3))
                o = cuda.to_device(np.full((b, h, n, d), np.nan, dtype=np.float32))
                lse = cuda.to_device(np.full((b, h, n), np.nan, dtype=np.float32)) if with_lse else None
            self.sets.append((q, k, v, o, lse))


def _as_numba(a, *shape):
    from numba import cuda

    if a is None:
        return None
    view = cuda.as_cuda_array(a) if not hasattr(a, "copy_to_host") else a
    return view.reshape(*shape)


def run_bench(*, out_dir="data/measurements", tag="h200", seq_lens=(256,), head_dims=(64,), batch=1, heads=16,
              min_reps=10, budget_s=240.0, kernels=("cupy_naive", "naive", "tiled"), progress=True,
              l2_bytes=None, max_reps=MAX_REPS):
    from numba import cuda
    from tqdm import tqdm

    try:
        from numba.core.errors import NumbaPerformanceWarning

        warnings.simplefilter("ignore", NumbaPerformanceWarning)
    except ImportError:  # pragma: no cover
        pass
    try:
        import cupy as cp
    except ImportError:
        cp = None
        kernels = [k for k in kernels if k != "cupy_naive"]

    dev = cuda.get_current_device()
    try:
        l2 = int(l2_bytes or dev.L2_CACHE_SIZE)
    except Exception:
        l2 = L2_FALLBACK_BYTES
    total_mem = cuda.current_context().get_memory_info()[1]
    dummy = cuda.to_device(np.zeros(4, dtype=np.int64))

    rows = []
    last_time = {}  # (kernel, d) -> (N, median seconds) for predicting the next N
    configs = [(n, d, kern) for n in sorted(seq_lens) for d in head_dims for kern in kernels]
    t_start = time.monotonic()
    csv_path = os.path.join(out_dir, f"bench_{tag}.csv")
    json_path = os.path.join(out_dir, f"bench_{tag}.provenance.json")
    ctx = {"cuda": cuda, "cp": cp, "l2": l2, "total_mem": total_mem, "dummy": dummy, "batch": batch,
           "heads": heads, "min_reps": min_reps, "max_reps": max_reps, "budget_s": budget_s,
           "t_start": t_start, "last_time": last_time}
    bar = tqdm(configs, disable=not progress, desc="bench", unit="cfg")
    for n, d, kern in bar:
        bar.set_postfix_str(f"{kern} N={n} d={d}")
        new_rows = []
        try:
            _bench_one(ctx, kern, n, d, new_rows)
        except Exception as e:  # record and go on: one broken config must not lose the others
            base = {"kernel": kern, "batch": batch, "heads": heads, "seq_len": n, "head_dim": d, "params": ""}
            new_rows = [{**base, "metric": "status", "value": "error", "unit": "", "note": repr(e)[:300]}]
        finally:
            if cp is not None:
                cp.get_default_memory_pool().free_all_blocks()
            try:  # numba defers frees; S and P of the next config may need the memory now
                cuda.current_context().deallocations.clear()
            except Exception:
                pass
        rows += new_rows
        write_csv_atomic(csv_path, rows, FIELDS)  # after every config, so a cut-off run keeps its rows

    write_csv_atomic(csv_path, rows, FIELDS)
    write_json_atomic(json_path, provenance({
        "what": "wall time per call, CUDA events, median of >= %d calls after 1 warm-up call" % min_reps,
        "batch": batch, "heads": heads, "seq_lens": list(seq_lens), "head_dims": list(head_dims),
        "kernels": list(kernels), "budget_s": budget_s, "l2_bytes_used_for_rotation": l2,
        "rotation": "input sets rotated so that sets*bytes(Q,K,V,O[,L]) > 2*L2",
        "cupy_naive": "cp.matmul (cuBLAS, fp32, TF32 off by default) + in-place stable softmax",
        "elapsed_s": round(time.monotonic() - t_start, 1),
    }))
    return csv_path, json_path


def _bench_one(ctx, kern, n, d, rows):
    """Time one (kernel, N, d); append its rows (or one 'skipped' row) to ``rows``."""
    cuda, cp, l2 = ctx["cuda"], ctx["cp"], ctx["l2"]
    batch, heads, min_reps = ctx["batch"], ctx["heads"], ctx["min_reps"]
    dummy, last_time, t_start, budget_s = ctx["dummy"], ctx["last_time"], ctx["t_start"], ctx["budget_s"]
    shape = Shape(batch, heads, n, d)
    bh = shape.bh
    if kern == "tiled":
        br, bc = default_blocks(n, d)
        params = {"block_rows": br, "block_cols": bc}
    elif kern == "naive":
        t_mm, t_sm = resolve_naive_params(shape)
        params = {"matmul_tile": t_mm, "softmax_threads": t_sm}
    else:
        params = {"tf32": False}
    ptxt = ";".join(f"{k}={v}" for k, v in params.items())
    base = {"kernel": kern, "batch": batch, "heads": heads, "seq_len": n, "head_dim": d, "params": ptxt}

    def skip(reason):
        rows.append({**base, "metric": "status", "value": "skipped", "unit": "", "note": reason})

    inter = {"naive": 2, "cupy_naive": 1}.get(kern, 0) * bh * n * n * 4
    if inter > MEMORY_FRACTION * ctx["total_mem"]:
        what = "S and P" if kern == "naive" else "S (P computed in place)"
        return skip(f"{what} would need {inter / 1e9:.1f} GB of the GPU's {ctx['total_mem'] / 1e9:.1f} GB")
    left = budget_s - (time.monotonic() - t_start)
    if (kern, d) in last_time:
        n0, t0 = last_time[(kern, d)]
        predicted = t0 * (n / n0) ** 2 * (min_reps + 2)
        if predicted > left:
            return skip(f"time budget: predicted {predicted:.0f} s for {min_reps + 2} calls, {max(left, 0):.0f} s left")
    elif left <= 0:
        return skip("time budget used up")

    set_bytes = bh * n * d * 4 * 4 + (bh * n * 4 if kern == "tiled" else 0)
    n_sets = min(MAX_SETS, max(2, 2 * l2 // set_bytes + 1))
    inputs = _Inputs(shape, n_sets, with_lse=(kern == "tiled"))
    views = [tuple(_as_numba(a, bh, n, *((d,) if i < 4 else ())) for i, a in enumerate(s)) for s in inputs.sets]

    if kern == "tiled":
        from .tiled import TiledPlan

        plan = TiledPlan(shape=(batch, heads, n, d), block_rows=params["block_rows"], block_cols=params["block_cols"])

        def call(i):
            q, k, v, o, lse = views[i]
            plan.launch(q, k, v, o, lse, dummy)
    elif kern == "naive":
        from .naive import NaivePlan

        plan = NaivePlan(shape=(batch, heads, n, d), matmul_tile=params["matmul_tile"],
                         softmax_threads=params["softmax_threads"])
        s_buf = cuda.device_array((bh, n, n), dtype=np.float32)
        p_buf = cuda.device_array((bh, n, n), dtype=np.float32)

        def call(i):
            q, k, v, o, _ = views[i]
            plan.launch(q, k, v, s_buf, p_buf, o, (dummy, dummy, dummy))
    else:
        scale = float(scale_for(d))
        s_buf = cp.empty((batch, heads, n, n), dtype=cp.float32)

        def call(i):
            q, k, v, o, _ = inputs.sets[i]
            cp.matmul(q, k.transpose(0, 1, 3, 2), out=s_buf)  # cuBLAS, plain fp32
            cp.multiply(s_buf, scale, out=s_buf)
            cp.subtract(s_buf, s_buf.max(axis=3, keepdims=True), out=s_buf)  # stable: max term is exp(0)
            cp.exp(s_buf, out=s_buf)
            cp.divide(s_buf, s_buf.sum(axis=3, keepdims=True), out=s_buf)
            cp.matmul(s_buf, v, out=o)

    # Warm-up (compiles), then one timed probe call that sets the number of repetitions.
    call(0)
    cuda.synchronize()
    e0, e1 = cuda.event(), cuda.event()
    e0.record()
    call(1 % n_sets)
    e1.record()
    e1.synchronize()
    probe_s = e0.elapsed_time(e1) / 1e3
    left = budget_s - (time.monotonic() - t_start)
    reps = max(min_reps, min(ctx["max_reps"], int(TARGET_S_PER_CONFIG / max(probe_s, 1e-6))))
    if reps * probe_s > left:
        reps = min_reps
    if reps * probe_s > left:
        return skip(f"time budget: one call took {probe_s:.2f} s, {max(left, 0):.0f} s left")

    times_ms = time_rotating(call, n_sets, reps, first=2)

    # The outputs of the last call must be finite (they were NaN before the first call).
    o_last = inputs.sets[(reps + 1) % n_sets][3]
    if hasattr(o_last, "copy_to_host"):
        finite = bool(np.isfinite(o_last.copy_to_host()).all())
    else:
        finite = bool(cp.isfinite(o_last).all())
    note = "" if finite else "output had non-finite values"
    if n_sets * set_bytes <= 2 * l2:
        note = (note + "; " if note else "") + f"working set capped at {MAX_SETS} input sets, below 2x L2"

    med = float(np.median(times_ms))
    last_time[(kern, d)] = (n, med / 1e3)
    flops = matmul_flops(shape)
    hbm = _predicted_hbm(kern, shape, params if kern != "cupy_naive" else {})
    metrics = [
        ("time_ms_median", med, "ms"),
        ("time_ms_p10", float(np.percentile(times_ms, 10)), "ms"),
        ("time_ms_p90", float(np.percentile(times_ms, 90)), "ms"),
        ("time_ms_min", float(times_ms.min()), "ms"),
        ("reps", reps, "calls"),
        ("input_sets", n_sets, "sets"),
        ("working_set_bytes", n_sets * set_bytes, "bytes"),
        ("tflops", flops / (med / 1e3) / 1e12, "TFLOP/s (4*N^2*d*B*H matmul FLOPs)"),
    ]
    if hbm is not None:
        metrics += [("model_hbm_bytes", hbm, "bytes (simlib, read+write)"),
                    ("model_hbm_gbps", hbm / (med / 1e3) / 1e9, "GB/s (model bytes / median time)")]
    for metric, value, unit in metrics:
        rows.append({**base, "metric": metric, "value": value, "unit": unit, "note": note})
