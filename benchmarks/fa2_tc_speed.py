"""fa2_tc's variants against torch flash in one device call, compiled in parallel (issue 22).

    python benchmarks/fa2_tc_speed.py --out DIR [--jobs 12] [--seq-lens 4096,16384]

numba compiles each (config, dtype, causal) build for several seconds on one core; one process per
build compiles them all at once on the device's cores, then the processes take turns (one lock) to
time, so no two timings overlap (``speed_pool.py``, shared with fa3_tc_speed.py). Per build, before any timing: a ragged, GQA, N_q < N_k case (and
causal when the build is) against the float64 reference on fresh inputs with the outputs poisoned
(``run_fa2_tc``), then at every timed shape the first and last batch·head against torch's fp32 math
on the same inputs (``bench.Shape``). Timing, workload (B·H·N = 2¹⁸, H = 16) and CSV columns are
the side by side's (``gpu_kernels/measure/side_by_side.py``); torch flash and cuDNN are timed in their own
processes under the same lock. Writes fa2_tc_speed.csv (+ provenance sidecar) and prints a table last.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from speed_pool import report, run_jobs

#: (name, TcConfig keyword arguments, "all" or "causal") per head dim: the default first. Run
#: k22-fa2v4-run1 timed at d = 64 also "q-smem" (Q re-read, 1.02-1.05x the default's time) and
#: "q-smem-r168" (capped at 168 registers for 3 blocks/SM, 124 B spilled: 1.05-1.08x); run
#: k22-fa2v4-run2 the 16-row layout at both d (1.04-1.16x the default's time at d = 64) and, at
#: d = 128, Bc = 32 / 48 / 64 (48, now the default, fastest at N >= 8K; PERFORMANCE.md). Since the
#: K/V ring (kernel3): "v4-single" is version 4 (single K/V buffers, Q blocks in launch order),
#: "ring-light-first" the ring with version 4's block order (causal only: the order matters there).
V4 = dict(kv_stages=1, heavy_first=False)
VARIANTS = {
    64: [
        ("default", {}, "all"),
        ("v4-single", V4, "all"),
        ("ring-light-first", dict(heavy_first=False), "causal"),
    ],
    128: [
        ("default", {}, "all"),
        ("v4-single", V4, "all"),
        ("ring-light-first", dict(heavy_first=False), "causal"),
    ],
}


def builds(dtypes, causals, full_dtype="bf16"):
    """(d, dtype, causal, name, kwargs): every variant in `full_dtype` (those marked "causal" only under
    causal masking), defaults elsewhere."""
    out = []
    for causal in causals:
        for dtype in dtypes:
            for d, vs in VARIANTS.items():
                for name, kw, when in vs:
                    if name == "default" or (dtype == full_dtype and (when == "all" or causal)):
                        out.append((d, dtype, causal, name, kw))
    return out


def small_check(cfg, dtype, causal):
    """Relative errors of O and L on a ragged GQA case with N_q < N_k, against float64."""
    import numpy as np

    from gpu_kernels.kernels.fa2_tc import run_fa2_tc
    from gpu_kernels.reference import attention_reference, random_qkv, rel_error
    from gpu_kernels.tensor_core.dtypes import round_to

    q, k, v = random_qkv(1, 4, 1000, cfg.head_dim, seed=11, kv_heads=2, query_len=777)
    ref_o, ref_l = attention_reference(*(round_to(x, dtype) for x in (q, k, v)), causal=causal)
    r = run_fa2_tc(q, k, v, dtype=dtype, config=cfg, causal=causal)
    assert np.all(np.isfinite(r.o)) and np.all(np.isfinite(r.lse))
    return rel_error(r.o, ref_o), rel_error(r.lse, ref_l)


def timed(sh, launch, torch, bench):
    """(median, min, max ms, reps, error): checked on poisoned output, then timed as bench_shape does."""
    sh.out.fill_(float("nan"))
    o = launch(0)
    torch.cuda.synchronize()
    err = sh.err(o, torch)
    launch(1)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    launch(0)
    torch.cuda.synchronize()
    est = (time.perf_counter() - t1) * 1e3
    per_event = 4 if est < 2 else 1
    reps = max(10, min(40, int(bench.TARGET_S * 1e3 / (est * per_event))))
    t = bench._events_time(launch, reps, per_event, torch)
    return statistics.median(t), min(t), max(t), reps, err


def measured_row(row, sh, launch, torch, bench):
    """``row`` (kernel, config, note) completed with the shape and its checked-then-timed numbers."""
    med, lo, hi, reps, err = timed(sh, launch, torch, bench)
    n, d, b, h = sh.n, sh.d, sh.batch, sh.heads
    flops = bench.useful_flops(n, d, b * h, sh.causal)
    return {
        **row,
        "dtype": sh.dtype,
        "batch": b,
        "heads": h,
        "seq_len": n,
        "head_dim": d,
        "causal": sh.causal,
        "median_ms": f"{med:.4f}",
        "min_ms": f"{lo:.4f}",
        "max_ms": f"{hi:.4f}",
        "reps": reps,
        "flops": flops,
        "tflops": f"{flops / med / 1e9:.1f}",
        "rel_err": f"{err:.3e}",
        "tol": f"{bench.tolerance(sh.dtype):.2e}",
        "ok": err < bench.tolerance(sh.dtype),
    }


def plan_launch(plan_class, sh, cfg):
    """launch(i): one call of ``plan_class`` (Fa2TcPlan or Fa3TcPlan) on the shape's i-th input set, into its output."""
    from gpu_kernels.counting import new_counters

    plan = plan_class.of((sh.batch, sh.heads, sh.heads, sh.n, sh.n, sh.d), cfg, sh.dtype, causal=sh.causal)
    counters = new_counters()

    def launch(i):
        plan.launch(*sh.views[i], sh.o_view, sh.l_view, counters)
        return sh.out

    return launch


def worker(job, seq_lens, lock):
    """Compile one build (or torch flash / cuDNN), check it, then time it at every shape under the lock."""
    import torch

    from gpu_kernels.device import select_backend

    select_backend(False)
    from gpu_kernels.kernels.fa2_tc import Fa2TcPlan, TcConfig, default_config
    from gpu_kernels.measure import side_by_side as bench

    kind = job[0]
    rows = []
    if kind in ("flash", "cudnn"):
        _, dtype, causal = job
        shapes = [(n, d) for d in VARIANTS for n in seq_lens]
    else:
        _, d, dtype, causal, name, kw = job
        base = default_config(d)
        cfg = TcConfig(**{**base.__dict__, **kw}).check() if kw else base
        t0 = time.perf_counter()
        e_o, e_l = small_check(cfg, dtype, causal)  # compiles the build
        compile_s = time.perf_counter() - t0
        shapes = [(n, d) for n in seq_lens]
    with lock:
        for n, d in shapes:
            sh = bench.Shape(dtype, causal, n, d, torch)
            if kind in ("flash", "cudnn"):
                import torch.nn.functional as F
                from torch.nn.attention import SDPBackend, sdpa_kernel

                backend = SDPBackend.FLASH_ATTENTION if kind == "flash" else SDPBackend.CUDNN_ATTENTION

                def launch(i, sh=sh, backend=backend):
                    with sdpa_kernel([backend]):
                        return F.scaled_dot_product_attention(*sh.qkv[i], is_causal=sh.causal)

                row = {"kernel": f"torch_{kind}", "config": "", "note": ""}
            else:
                launch = plan_launch(Fa2TcPlan, sh, cfg)
                row = {
                    "kernel": "fa2_tc",
                    "config": f"{name}: {cfg.name}",
                    "note": f"small check (1x4/2 heads, N_q 777, N_k 1000): O {e_o:.2e}, L {e_l:.2e}; "
                    f"compile+check {compile_s:.1f} s",
                }
            rows.append(measured_row(row, sh, launch, torch, bench))
            del sh
            torch.cuda.empty_cache()
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=12)
    p.add_argument("--seq-lens", default="4096,8192,16384")
    p.add_argument("--dtypes", default="bf16,fp16")
    p.add_argument("--causal", default="no,yes")
    p.add_argument("--deadline-s", type=float, default=None, help="terminate builds still running after this")
    a = p.parse_args(argv)
    seq_lens = [int(x) for x in a.seq_lens.split(",")]
    causals = [c == "yes" for c in a.causal.split(",")]
    dtypes = a.dtypes.split(",")
    jobs = [(kind, dt, c) for kind in ("flash", "cudnn") for c in causals for dt in dtypes]
    jobs += [("fa2",) + b for b in builds(dtypes, causals)]
    t0 = time.monotonic()
    rows, errors = run_jobs(worker, jobs, seq_lens, processes=a.jobs, deadline_s=a.deadline_s)
    what = "fa2_tc variants vs torch flash (issue 22)"
    return report(rows, errors, out=a.out, filename="fa2_tc_speed.csv", what=what, started=t0)


if __name__ == "__main__":
    sys.exit(main())
