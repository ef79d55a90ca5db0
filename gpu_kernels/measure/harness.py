"""The one measuring harness: every variant at every shape, checked, then timed (``bench`` and ``compare``).

For each (N, d): a ``Case`` (input sets beyond 2 × L2, float64 reference rows); for each variant
that fits (N×N buffers within 45 % of the GPU's memory) and the time budget (predicted from the
same variant's last N, ∝ N²): ``timing.measure_variant``. The card's FFMA rate, SGEMM rate and copy
bandwidth are measured first (``ceilings``) and each time is set against the compute and memory
floors; numba variants also get simlib's HBM bytes for the mapping that ran. After every shape the
CSV and its provenance are rewritten together, so a cut-off run leaves a consistent pair.

Output: ``<prefix>_<tag>.csv`` (one row per variant, shape and metric) + ``.provenance.json``.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from measurements.provenance import csv_text, provenance, write_measurement
from measurements.schemas import HARNESS
from simlib.workload import Workload

from ..device import l2_bytes
from .cases import SAMPLE_ROWS, TOLERANCE, Case
from .ceilings import floors, measure_copy_bandwidth, measure_ffma_peak, measure_sgemm
from .timing import measure_variant
from .variants import SIMLIB_SCHEDULE, VARIANTS, available, intermediate_bytes

FIELDS = list(HARNESS.columns)  # measurements.schemas: the one definition, the readers check it
MEMORY_FRACTION = 0.45
METRIC_UNITS = (
    ("ms", "ms (median)"),
    ("ms_p10", "ms"),
    ("ms_p90", "ms"),
    ("ms_min", "ms"),
    ("reps", "calls"),
    ("tflops", "TFLOP/s (4*N^2*d*B*H / median)"),
    ("pct_of_fp32_peak", "% of measured FFMA peak"),
    ("ratio_to_torch_efficient", "median / torch_efficient median"),
    ("rel_err_o", "||O-ref||/||ref|| on sampled rows (float64 ref)"),
    ("rel_err_lse", "||L-ref||/||ref|| on sampled rows"),
    ("finite", "bool (all of O)"),
    ("finite_after_timing", "bool"),
    ("ok", f"bool (finite and rel_err <= {TOLERANCE:g})"),
    ("floor_compute_ms", "ms (FLOPs / measured FFMA peak)"),
    ("floor_memory_ms", "ms (compulsory bytes / measured copy bandwidth)"),
    ("model_hbm_bytes", "bytes (simlib, read+write, for the mapping that ran)"),
)


def model_hbm_bytes(name, workload, params):
    """simlib's HBM bytes (read + write) for the mapping a numba variant ran; cupy: the paper's naive."""
    from simlib import count

    schedule = SIMLIB_SCHEDULE.get(name)
    if schedule is None:
        return None
    if schedule == "fa2":
        kw = {"block_rows": params["block_rows"], "block_cols": params["block_cols"]}
    elif schedule == "fa2_fast":
        nty, ntx = (int(x) for x in params["threads"].split("x"))
        kw = {"block_rows": params["block_rows"], "block_cols": params["block_cols"], "threads": (nty, ntx)}
    elif name == "numba_naive":
        kw = {"matmul_tile": params["matmul_tile"], "softmax_threads": params["softmax_threads"]}
    else:
        kw = {}
    r = count(schedule, workload, **kw)
    return int(r.hbm_read_bytes) + int(r.hbm_write_bytes)


def result_rows(results) -> list[dict]:
    rows = []
    for r in results:
        base = {
            "variant": r["variant"],
            "batch": r["batch"],
            "heads": r["heads"],
            "seq_len": r["seq_len"],
            "head_dim": r["head_dim"],
            "params": ";".join(f"{k}={v}" for k, v in (r.get("params") or {}).items()),
        }
        note = r.get("error", "") if r.get("status") != "ok" else ("" if r.get("ok") else "WRONG RESULT")
        rows.append({**base, "metric": "status", "value": r.get("status"), "unit": "", "note": note})
        for key, unit in METRIC_UNITS:
            if r.get(key) is not None:
                rows.append({**base, "metric": key, "value": r[key], "unit": unit, "note": note})
    return rows


def format_table(results, peak_tflops):
    def num(x, fmt):
        return "-" if x is None else format(x, fmt)

    lines = [
        f"{'variant':<16}{'N':>7}{'d':>5}{'ms':>10}{'TFLOP/s':>9}{'%peak':>7}{'vs eff':>8}{'rel.err':>10}  check"
    ]
    for r in results:
        tf = r.get("tflops")
        pct = 100 * tf / peak_tflops if tf is not None and peak_tflops else None
        check = r.get("status", "?") if r.get("status") != "ok" else ("ok" if r.get("ok") else "WRONG")
        lines.append(
            f"{r['variant']:<16}{r['seq_len']:>7}{r['head_dim']:>5}{num(r.get('ms'), '.3f'):>10}"
            f"{num(tf, '.2f'):>9}{num(pct, '.0f'):>7}{num(r.get('ratio_to_torch_efficient'), '.2f'):>8}"
            f"{num(r.get('rel_err_o'), '.1e'):>10}  {check}"
        )
    return "\n".join(lines)


def run(
    *,
    out_dir,
    prefix="compare",
    tag="h200",
    seq_lens=(1024, 4096, 16384),
    head_dims=(64, 128),
    batch=1,
    heads=16,
    reps=10,
    variants=VARIANTS,
    fast_configs=None,
    budget_s=None,
    progress=True,
    seed=None,
):
    """The harness; returns (csv path, results). ``budget_s``: skip what would not fit in it."""
    import cupy as cp
    from numba import cuda
    from tqdm import tqdm

    t0 = time.monotonic()
    rng = np.random.default_rng(seed)
    if seed is not None:
        cp.random.seed(seed)
    variants = available(variants)
    l2 = l2_bytes()
    total_mem = cuda.current_context().get_memory_info()[1]
    peak, sgemm, bw = measure_ffma_peak(), measure_sgemm(), measure_copy_bandwidth()
    csv_path = os.path.join(out_dir, f"{prefix}_{tag}.csv")
    meta = {
        "what": "fp32 attention forward; CUDA events, 1 warm-up (checked) call, "
        f"median of {reps} calls, input sets rotated beyond 2x L2",
        "fp32_peak": peak,
        "sgemm_tf32_off": sgemm,
        "copy_bandwidth": bw,
        "batch": batch,
        "heads": heads,
        "seq_lens": list(seq_lens),
        "head_dims": list(head_dims),
        "variants": list(variants),
        "tolerance": TOLERANCE,
        "l2_bytes": l2,
        "budget_s": budget_s,
        "reference": f"gpu_kernels.reference (float64) on {SAMPLE_ROWS}+2 sampled rows of heads (0,0) and "
        "(B-1,H-1)",
        "fast_configs": {str(d): repr(c) for d, c in (fast_configs or {}).items()} or "fast_default_config",
    }
    try:
        import torch

        meta.update(torch=torch.__version__, torch_cuda=torch.version.cuda)
    except ImportError:
        pass
    record = provenance(meta)

    def save(status):
        from ..kernels.fast import SMEM_OPTIN

        write_measurement(
            csv_path,
            csv_text(result_rows(results), FIELDS),
            {
                **record,
                "status": status,
                "smem_optin": dict(SMEM_OPTIN),
                "elapsed_s": round(time.monotonic() - t0, 1),
            },
        )

    results, last = [], {}
    shapes = [(n, d) for n in seq_lens for d in head_dims]
    for n, d in tqdm(shapes, disable=not progress, desc=prefix, unit="shape", file=sys.stderr):
        w = Workload(seq_len=n, head_dim=d, batch=batch, heads=heads, dtype="fp32")
        case = Case(w, l2, rng)
        base = {"seq_len": n, "head_dim": d, "batch": batch, "heads": heads, **floors(w, peak, bw)}
        shape_rows = []
        for name in variants:
            need = intermediate_bytes(name, w)
            skip = None
            if need > MEMORY_FRACTION * total_mem:
                skip = f"needs {need / 1e9:.0f} GB of N×N buffers"
            elif budget_s is not None and (name, d) in last:
                n0, ms0 = last[(name, d)]
                predicted = ms0 / 1e3 * (n / n0) ** 2 * (reps + 2)
                left = budget_s - (time.monotonic() - t0)
                if predicted > left:
                    skip = f"time budget: predicted {predicted:.0f} s, {max(left, 0):.0f} s left"
            if skip:
                shape_rows.append({**base, "variant": name, "status": "skipped", "error": skip})
                continue
            fc = (fast_configs or {}).get(d) if name == "numba_fast" else None
            r = measure_variant(name, case, reps, fc)
            r.update(base)
            if r.get("ms"):
                last[(name, d)] = (n, r["ms"])
                r["tflops"] = w.flops / (r["ms"] / 1e3) / 1e12
                r["pct_of_fp32_peak"] = 100 * r["tflops"] / peak["tflops"]
            if r.get("params") is not None:
                try:
                    r["model_hbm_bytes"] = model_hbm_bytes(name, w, r["params"])
                except (ValueError, TypeError) as e:  # simlib refuses the mapping: no number, say why
                    r["model_error"] = f"{type(e).__name__}: {e}"
            shape_rows.append(r)
        eff = next((r["ms"] for r in shape_rows if r["variant"] == "torch_efficient" and r.get("ms")), None)
        for r in shape_rows:
            if eff and r.get("ms"):
                r["ratio_to_torch_efficient"] = r["ms"] / eff
        results += shape_rows
        case.free()
        cp.get_default_memory_pool().free_all_blocks()
        save("partial")
    save("complete")
    print(format_table(results, peak["tflops"]))
    print(
        f"fp32 peak (measured, {peak['method']}): {peak['tflops']:.1f} TFLOP/s"
        + (f"; cuBLAS SGEMM (TF32 off): {sgemm['tflops']:.1f} TFLOP/s" if sgemm else "")
        + (f"; copy: {bw['gbps']:.0f} GB/s" if bw else "")
    )
    return csv_path, results
