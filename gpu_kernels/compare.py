"""``python -m gpu_kernels bench --compare``: every attention implementation side by side, one process.

Variants (fp32 forward, inputs (B, H, N, d)):

    numba_naive      gpu_kernels.naive: S = QKᵀ, softmax, PV through HBM (shared-memory matmuls)
    numba_tiled      gpu_kernels.tiled: the readable FlashAttention-2 kernel (one thread per row),
                     the paper's default blocks for 48 KiB (d=64: Br = Bc = 48)
    numba_tiled_wide the same kernel with more threads per block (``wide_blocks``: d=64 → 128×8)
    numba_fast       gpu_kernels.fast: the optimised FlashAttention-2 kernel (register tiling)
    cupy_naive       cuBLAS matmuls (fp32, no TF32) + elementwise stable softmax, S in HBM
    torch_math       torch SDPA, math backend (fp32 matmuls, TF32 off)
    torch_efficient  torch SDPA, memory-efficient backend (CUTLASS fp32 kernel)

Method (docs/device METHOD.md): every variant is first checked against a float64 reference on the
same fresh random inputs (a sample of rows of two heads, so N = 16384 stays cheap), with our
outputs poisoned with NaN before the run and checked to be finite everywhere after it; then timed
with CUDA events around each call on the default stream after one warm-up call, median of at least
``reps`` calls, the inputs rotated among enough sets to exceed twice the L2 cache. The fp32 FFMA
peak and the device-to-device copy bandwidth are measured once in the same run (a numba kernel of
independent FFMA chains; a cupy copy of 2 GiB counting bytes read + written), and each time is set
against the two floors: FLOPs / measured peak and compulsory bytes (Q, K, V read once, O and L
written once) / measured bandwidth.

Output: ``compare_<tag>.csv`` (one row per variant, shape and metric) and
``compare_<tag>.provenance.json``; a table on stdout.

``python -m gpu_kernels.compare tune`` times a list of fast-kernel configurations (the sweep that
chose ``fast.default_config``); ``python -m gpu_kernels.compare ncu`` runs Nsight Compute on the fast
kernel and on torch's efficient kernel.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import warnings

import numpy as np

from .bench import time_rotating
from .checks import Shape, matmul_flops, scale_for
from .provenance import provenance, write_csv_atomic, write_json_atomic

VARIANTS = ("numba_naive", "numba_tiled", "numba_tiled_wide", "numba_fast", "cupy_naive", "torch_math",
            "torch_efficient")


def wide_blocks(seq_len: int, head_dim: int, block_cols: int = 8) -> tuple[int, int]:
    """Blocks for the readable kernel that keep more threads resident: Bc = 8 K/V rows and the
    largest Br (a multiple of 32 threads, one per query row) whose padded shared footprint
    (``tiled.padded_shared_bytes``) fits in 48 KiB. d=64 → (128, 8); d=128 → (64, 8).
    Same kernel, same counted arithmetic; only the mapping (Timeloop's word) changes."""
    from .checks import SHARED_LIMIT_BYTES
    from .tiled import padded_shared_bytes

    br = 32
    while br + 32 <= 1024 and padded_shared_bytes(br + 32, block_cols, head_dim) <= SHARED_LIMIT_BYTES:
        br += 32
    return min(br, seq_len), min(block_cols, seq_len)
FIELDS = ["variant", "batch", "heads", "seq_len", "head_dim", "params", "metric", "value", "unit", "note"]
TOLERANCE = 1e-4  # ‖out − ref‖/‖ref‖ on the sampled rows; fp32 arithmetic lands near 1e-6
SAMPLE_ROWS = 48  # rows per checked head (plus the first and the last row)
L2_FALLBACK_BYTES = 60 * 1024 * 1024
MEMORY_FRACTION = 0.45


# --- ceilings measured in the same run --------------------------------------------------------------

def _ffma_kernel():
    """16 independent FFMA chains per thread, 64 FFMA per loop trip (loop overhead < 10 %)."""
    from numba import cuda, float32

    B = np.float32(0.9999)
    C = np.float32(1e-4)

    @cuda.jit(fastmath=True)
    def ffma_chains(out, trips):
        i = cuda.grid(1)
        x = float32(i) * np.float32(1e-9)
        a = cuda.local.array(16, float32)
        for c in range(16):
            a[c] = x + float32(c)
        for _ in range(trips):
            for _r in range(4):
                for c in range(16):
                    a[c] = a[c] * B + C
        t = float32(0)
        for c in range(16):
            t += a[c]
        out[i] = t

    return ffma_chains


def measure_ffma_peak(trips=8192, reps=7) -> dict:
    """fp32 FFMA rate of the card: a numba kernel of independent FFMA chains (2 FLOP per FFMA)."""
    from numba import cuda

    dev = cuda.get_current_device()
    sms = int(dev.MULTIPROCESSOR_COUNT)
    threads, blocks = 256, sms * 16
    out = cuda.device_array(threads * blocks, dtype=np.float32)
    k = _ffma_kernel()
    k[blocks, threads](out, 4)  # compile + warm-up
    cuda.synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = cuda.event(), cuda.event()
        e0.record()
        k[blocks, threads](out, trips)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    flops = 2 * 64 * trips * threads * blocks
    try:
        ptx = k.inspect_asm(next(iter(k.overloads)))
    except Exception:
        ptx = None
    return {"tflops": flops / float(np.median(times)) / 1e12, "method": "numba FFMA-chain kernel, "
            f"{blocks}x{threads} threads, 16 chains, {64 * trips} FFMA per thread, median of {reps}",
            "ptx_fma_f32": ptx.count("fma.rn.ftz.f32") if isinstance(ptx, str) else None,
            "ptx_f64": ptx.count(".f64") if isinstance(ptx, str) else None}


def measure_sgemm(n=8192, reps=5) -> dict | None:
    """torch fp32 matmul with TF32 off (cuBLAS SGEMM): the library's fp32 rate, for reference."""
    try:
        import torch
    except ImportError:
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(n, n, device="cuda", dtype=torch.float32)
    b = torch.randn(n, n, device="cuda", dtype=torch.float32)
    c = a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.matmul(a, b, out=c)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    del a, b, c
    torch.cuda.empty_cache()
    return {"tflops": 2 * n**3 / float(np.median(times)) / 1e12,
            "method": f"torch.matmul {n}^3 fp32, allow_tf32=False, median of {reps}"}


def measure_copy_bandwidth(nbytes=2 * 1024**3, reps=7) -> dict | None:
    try:
        import cupy as cp
    except ImportError:
        return None
    a = cp.random.standard_normal(nbytes // 4, dtype=cp.float32)
    b = cp.empty_like(a)
    b[...] = a
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        b[...] = a
        e1.record()
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return {"gbps": 2 * nbytes / float(np.median(times)) / 1e9,
            "method": f"cupy device-to-device copy of {nbytes / 2**30:.0f} GiB, bytes read + written, median of {reps}"}


def compulsory_bytes(shape: Shape) -> int:
    """Q, K, V read once, O written once (fp32) and L (fp32) written once."""
    return shape.bh * (4 * shape.seq_len * shape.head_dim * 4 + shape.seq_len * 4)


# --- the variants ------------------------------------------------------------------------------------

class Case:
    """One shape: input sets on the GPU (cupy), sampled reference rows in float64."""

    def __init__(self, shape: Shape, l2_bytes: int, rng):
        import cupy as cp
        from numba import cuda

        self.shape = shape
        b, h, n, d = shape.batch, shape.heads, shape.seq_len, shape.head_dim
        set_bytes = shape.bh * n * (4 * d + 1) * 4
        self.n_sets = max(2, -(-2 * l2_bytes // set_bytes))
        self.sets = []
        for _ in range(self.n_sets):
            q, k, v = (cp.random.standard_normal((b, h, n, d), dtype=cp.float32) for _ in range(3))
            o = cp.full((b, h, n, d), cp.nan, dtype=cp.float32)
            lse = cp.full((b, h, n), cp.nan, dtype=cp.float32)
            self.sets.append({"q": q, "k": k, "v": v, "o": o, "lse": lse})
        for s in self.sets:  # numba views, made once (a launch with cupy arrays re-types every call)
            s["nb"] = {key: cuda.as_cuda_array(s[key]) for key in ("q", "k", "v", "o", "lse")}
            s["nb3"] = {key: s["nb"][key].reshape(shape.bh, n, d) for key in ("q", "k", "v", "o")}
            s["nb3"]["lse"] = s["nb"]["lse"].reshape(shape.bh, n)
            s["flat"] = {key: s["nb"][key].reshape(s["nb"][key].size) for key in ("q", "k", "v", "o", "lse")}
        # reference: set 0, two heads (first and last), the first, the last and SAMPLE_ROWS random rows
        heads = sorted({(0, 0), (b - 1, h - 1)})
        rows = np.unique(np.concatenate(([0, n - 1], rng.choice(n, size=min(n, SAMPLE_ROWS), replace=False))))
        s0 = self.sets[0]
        self.ref = []
        for bi, hi in heads:
            qh = cp.asnumpy(s0["q"][bi, hi, rows]).astype(np.float64)
            kh = cp.asnumpy(s0["k"][bi, hi]).astype(np.float64)
            vh = cp.asnumpy(s0["v"][bi, hi]).astype(np.float64)
            sc = (qh @ kh.T) / math.sqrt(d)
            m = sc.max(axis=1, keepdims=True)
            e = np.exp(sc - m)
            z = e.sum(axis=1, keepdims=True)
            self.ref.append((bi, hi, rows, (e / z) @ vh, (m + np.log(z))[:, 0]))

    def check(self, o, lse=None) -> dict:
        """rel. error of O (and L) on the reference rows; all of O must be finite (it was NaN)."""
        import cupy as cp

        finite = bool(cp.isfinite(o).all())
        num = den = num_l = den_l = 0.0
        for bi, hi, rows, ref_o, ref_l in self.ref:
            got = cp.asnumpy(o[bi, hi, rows]).astype(np.float64)
            num += float(np.sum((got - ref_o) ** 2))
            den += float(np.sum(ref_o**2))
            if lse is not None:
                gl = cp.asnumpy(lse[bi, hi, rows]).astype(np.float64)
                num_l += float(np.sum((gl - ref_l) ** 2))
                den_l += float(np.sum(ref_l**2))
        err = math.sqrt(num / den) if finite else math.inf
        out = {"rel_err_o": err, "finite": finite}
        if lse is not None:
            out["rel_err_lse"] = math.sqrt(num_l / max(den_l, 1e-30)) if bool(cp.isfinite(lse).all()) else math.inf
        return out

    def free(self):
        self.sets = []


def _make_variant(name, case: Case, fast_config=None):
    """(call(i), output getter(i) -> (o, lse or None), params dict, extra buffers) for one variant."""
    import cupy as cp
    from numba import cuda

    shape = case.shape
    b, h, n, d = shape.batch, shape.heads, shape.seq_len, shape.head_dim
    bh = shape.bh
    dummy = cuda.to_device(np.zeros(4, dtype=np.int64))
    sets = case.sets
    keep = {}

    if name == "numba_fast":
        from .fast import FastPlan, resolve_config

        cfg = resolve_config(d, fast_config)
        plan = FastPlan((b, h, n, d), cfg, False)

        def call(i):
            f = sets[i]["flat"]
            plan.launch(f["q"], f["k"], f["v"], f["o"], f["lse"], dummy)

        params = {"tm": cfg.tm, "tn": cfg.tn, "threads": f"{cfg.nty}x{cfg.ntx}", "block_rows": cfg.block_rows,
                  "block_cols": cfg.block_cols, "max_registers": cfg.max_registers, "async_copy": cfg.async_copy,
                  "vector_loads": cfg.vector_loads, "unroll": cfg.unroll, "smem_bytes": cfg.smem_bytes}
        return call, (lambda i: (sets[i]["o"], sets[i]["lse"])), params, keep
    if name in ("numba_tiled", "numba_tiled_wide"):
        from .checks import default_blocks
        from .tiled import TiledPlan

        br, bc = default_blocks(n, d) if name == "numba_tiled" else wide_blocks(n, d)
        plan = TiledPlan(shape=(b, h, n, d), block_rows=br, block_cols=bc)

        def call(i):
            f = sets[i]["nb3"]
            plan.launch(f["q"], f["k"], f["v"], f["o"], f["lse"], dummy)

        return call, (lambda i: (sets[i]["o"], sets[i]["lse"])), {"block_rows": br, "block_cols": bc}, keep
    if name == "numba_naive":
        from .checks import resolve_naive_params
        from .naive import NaivePlan

        t_mm, t_sm = resolve_naive_params(shape)
        plan = NaivePlan(shape=(b, h, n, d), matmul_tile=t_mm, softmax_threads=t_sm)
        keep["s"] = cuda.device_array((bh, n, n), dtype=np.float32)
        keep["p"] = cuda.device_array((bh, n, n), dtype=np.float32)

        def call(i):
            f = sets[i]["nb3"]
            plan.launch(f["q"], f["k"], f["v"], keep["s"], keep["p"], f["o"], (dummy, dummy, dummy))

        return call, (lambda i: (sets[i]["o"], None)), {"matmul_tile": t_mm, "softmax_threads": t_sm}, keep
    if name == "cupy_naive":
        scale = float(scale_for(d))
        keep["s"] = cp.empty((b, h, n, n), dtype=cp.float32)
        s_buf = keep["s"]

        def call(i):
            st = sets[i]
            cp.matmul(st["q"], st["k"].transpose(0, 1, 3, 2), out=s_buf)  # cuBLAS, plain fp32
            cp.multiply(s_buf, scale, out=s_buf)
            cp.subtract(s_buf, s_buf.max(axis=3, keepdims=True), out=s_buf)  # stable: the max becomes exp(0)
            cp.exp(s_buf, out=s_buf)
            cp.divide(s_buf, s_buf.sum(axis=3, keepdims=True), out=s_buf)
            cp.matmul(s_buf, st["v"], out=st["o"])

        return call, (lambda i: (sets[i]["o"], None)), {"tf32": False}, keep
    if name in ("torch_math", "torch_efficient"):
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        backend = SDPBackend.MATH if name == "torch_math" else SDPBackend.EFFICIENT_ATTENTION
        tq = [tuple(torch.from_dlpack(st[key]) for key in ("q", "k", "v")) for st in sets]
        outs = {}
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def call(i):
            with sdpa_kernel([backend]):
                outs[i] = sdpa(*tq[i])

        def output(i):
            return cp.from_dlpack(outs[i].detach()), None

        keep["outs"] = outs
        return call, output, {"backend": backend.name, "allow_tf32": False, "torch": torch.__version__}, keep
    raise ValueError(f"unknown variant {name!r}")


def _poison(case):
    for st in case.sets:
        st["o"].fill(np.nan)
        st["lse"].fill(np.nan)


def run_variant(name, case: Case, reps: int, fast_config=None) -> dict:
    """Check, then time one variant on one case; a dict of results (or status/error)."""
    from numba import cuda

    res = {"variant": name}
    try:
        call, output, params, keep = _make_variant(name, case, fast_config)
    except Exception as e:  # a variant that cannot run here (e.g. no torch) is recorded, not fatal
        return {**res, "status": "error", "error": f"{type(e).__name__}: {e}"}
    res["params"] = params
    try:
        _poison(case)
        call(0)  # warm-up (compiles) and the checked run: set 0 holds the reference inputs
        cuda.synchronize()
        o, lse = output(0)
        res.update(case.check(o, lse))
        res["ok"] = res["finite"] and res["rel_err_o"] <= TOLERANCE and res.get("rel_err_lse", 0.0) <= TOLERANCE
        times = time_rotating(call, case.n_sets, reps, first=1)
        o_last, _ = output(reps % case.n_sets)
        res["finite_after_timing"] = bool(__import__("cupy").isfinite(o_last).all())
        res.update(status="ok", ms=float(np.median(times)), ms_p10=float(np.percentile(times, 10)),
                   ms_p90=float(np.percentile(times, 90)), ms_min=float(times.min()), reps=reps)
    except Exception as e:
        res.update(status="error", error=f"{type(e).__name__}: {e}")
    finally:
        keep.clear()
        del call, output
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
    return res


def _available(variants):
    out = []
    for v in variants:
        if v.startswith("torch"):
            try:
                import torch  # noqa: F401
                from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: F401
            except ImportError:
                continue
        out.append(v)
    return out


def _fmt_table(results, peak_tflops):
    def num(x, fmt):
        return "-" if x is None else format(x, fmt)

    lines = [f"{'variant':<16}{'N':>7}{'d':>5}{'ms':>10}{'TFLOP/s':>9}{'%peak':>7}{'vs eff':>8}{'rel.err':>10}  check"]
    for r in results:
        tf = r.get("tflops")
        pct = 100 * tf / peak_tflops if tf is not None and peak_tflops else None
        if r.get("status") != "ok":
            check = r.get("status", "?")
        else:
            check = "ok" if r.get("ok") else "WRONG"
        lines.append(f"{r['variant']:<16}{r['seq_len']:>7}{r['head_dim']:>5}{num(r.get('ms'), '.3f'):>10}"
                     f"{num(tf, '.2f'):>9}{num(pct, '.0f'):>7}{num(r.get('ratio_to_torch_efficient'), '.2f'):>8}"
                     f"{num(r.get('rel_err_o'), '.1e'):>10}  {check}")
    return "\n".join(lines)


def _write(csv_path, json_path, results, extra, elapsed_s):
    """The CSV (one row per variant, shape and metric) and the provenance, rewritten after each shape."""
    rows = []
    for r in results:
        base = {"variant": r["variant"], "batch": r["batch"], "heads": r["heads"], "seq_len": r["seq_len"],
                "head_dim": r["head_dim"],
                "params": ";".join(f"{k}={v}" for k, v in (r.get("params") or {}).items())}
        note = r.get("error", "") if r.get("status") != "ok" else ("" if r.get("ok") else "WRONG RESULT")
        metrics = [("status", r.get("status"), "")]
        for key, unit in (("ms", "ms (median)"), ("ms_p10", "ms"), ("ms_p90", "ms"), ("ms_min", "ms"),
                          ("reps", "calls"), ("tflops", "TFLOP/s (4*N^2*d*B*H / median)"),
                          ("pct_of_fp32_peak", "% of measured FFMA peak"),
                          ("ratio_to_torch_efficient", "median / torch_efficient median"),
                          ("rel_err_o", "||O-ref||/||ref|| on sampled rows (float64 ref)"),
                          ("rel_err_lse", "||L-ref||/||ref|| on sampled rows"), ("finite", "bool (all of O)"),
                          ("finite_after_timing", "bool"), ("ok", "bool (finite and rel_err <= %g)" % TOLERANCE),
                          ("floor_compute_ms", "ms (FLOPs / measured FFMA peak)"),
                          ("floor_memory_ms", "ms (compulsory bytes / measured copy bandwidth)")):
            if r.get(key) is not None:
                metrics.append((key, r[key], unit))
        for metric, value, unit in metrics:
            rows.append({**base, "metric": metric, "value": value, "unit": unit, "note": note})
    write_csv_atomic(csv_path, rows, FIELDS)
    from .fast import SMEM_OPTIN

    write_json_atomic(json_path, provenance({**extra, "smem_optin": dict(SMEM_OPTIN),
                                             "elapsed_s": round(elapsed_s, 1)}))


def run_compare(*, out_dir="data/measurements", tag="h200", seq_lens=(1024, 4096, 16384), head_dims=(64, 128),
                batch=1, heads=16, reps=10, variants=VARIANTS, fast_configs=None, progress=True, seed=None):
    """The side-by-side run; returns (csv path, json path, results)."""
    import cupy as cp
    from numba import cuda

    try:
        from numba.core.errors import NumbaPerformanceWarning

        warnings.simplefilter("ignore", NumbaPerformanceWarning)
    except ImportError:  # pragma: no cover
        pass
    t0 = time.monotonic()
    rng = np.random.default_rng(seed)
    if seed is not None:
        cp.random.seed(seed)
    variants = _available(variants)
    dev = cuda.get_current_device()
    try:
        l2 = int(dev.L2_CACHE_SIZE)
    except Exception:
        l2 = L2_FALLBACK_BYTES
    total_mem = cuda.current_context().get_memory_info()[1]

    def say(msg):
        if progress:
            print(msg, file=sys.stderr, flush=True)

    peak = measure_ffma_peak()
    sgemm = measure_sgemm()
    bw = measure_copy_bandwidth()
    say(f"fp32 FFMA peak {peak['tflops']:.1f} TFLOP/s; SGEMM {sgemm['tflops'] if sgemm else float('nan'):.1f}; "
        f"copy {bw['gbps'] if bw else float('nan'):.0f} GB/s")

    extra = {"what": "fp32 attention forward, side by side; CUDA events, 1 warm-up (checked) call, "
                     f"median of {reps} calls, input sets rotated beyond 2x L2",
             "fp32_peak": peak, "sgemm_tf32_off": sgemm, "copy_bandwidth": bw,
             "batch": batch, "heads": heads, "seq_lens": list(seq_lens), "head_dims": list(head_dims),
             "variants": list(variants), "tolerance": TOLERANCE, "l2_bytes": l2,
             "reference": f"float64 numpy on {SAMPLE_ROWS}+2 sampled rows of heads (0,0) and (B-1,H-1)",
             "fast_configs": {str(d): _cfg_dict(c) for d, c in (fast_configs or {}).items()} or "default_config"}
    try:
        import torch

        extra["torch"] = torch.__version__
        extra["torch_cuda"] = torch.version.cuda
    except ImportError:
        pass

    results = []
    for n in seq_lens:
        for d in head_dims:
            shape = Shape(batch, heads, n, d)
            case = Case(shape, l2, rng)
            flops = matmul_flops(shape)
            cbytes = compulsory_bytes(shape)
            floors = {"floor_compute_ms": flops / (peak["tflops"] * 1e12) * 1e3,
                      "floor_memory_ms": cbytes / (bw["gbps"] * 1e9) * 1e3 if bw else None}
            shape_rows = []
            for name in variants:
                need = {"numba_naive": 2, "cupy_naive": 1, "torch_math": 3}.get(name, 0) * shape.bh * n * n * 4
                base = {"seq_len": n, "head_dim": d, "batch": batch, "heads": heads, **floors}
                if need > MEMORY_FRACTION * total_mem:
                    shape_rows.append({**base, "variant": name, "status": "skipped",
                                       "error": f"needs {need / 1e9:.0f} GB of N×N buffers"})
                    continue
                fc = (fast_configs or {}).get(d) if name == "numba_fast" else None
                t1 = time.monotonic()
                r = run_variant(name, case, reps, fc)
                r.update(base)
                if r.get("ms"):
                    r["tflops"] = flops / (r["ms"] / 1e3) / 1e12
                    r["pct_of_fp32_peak"] = 100 * r["tflops"] / peak["tflops"]
                say(f"  {name:<16} N={n:<6} d={d:<4} {r.get('ms', float('nan')):9.3f} ms  "
                    f"err {r.get('rel_err_o', float('nan')):.1e}  {r.get('status')} {r.get('error', '')} "
                    f"({time.monotonic() - t1:.0f} s)")
                shape_rows.append(r)
            eff = next((r["ms"] for r in shape_rows if r["variant"] == "torch_efficient" and r.get("ms")), None)
            for r in shape_rows:
                if eff and r.get("ms"):
                    r["ratio_to_torch_efficient"] = r["ms"] / eff
            results += shape_rows
            case.free()
            cp.get_default_memory_pool().free_all_blocks()
            _write(os.path.join(out_dir, f"compare_{tag}.csv"), os.path.join(out_dir, f"compare_{tag}.provenance.json"),
                   results, extra, time.monotonic() - t0)

    csv_path = os.path.join(out_dir, f"compare_{tag}.csv")
    json_path = os.path.join(out_dir, f"compare_{tag}.provenance.json")
    _write(csv_path, json_path, results, extra, time.monotonic() - t0)
    print(_fmt_table(results, peak["tflops"]))
    print(f"fp32 peak (measured, {peak['method']}): {peak['tflops']:.1f} TFLOP/s"
          + (f"; cuBLAS SGEMM (TF32 off): {sgemm['tflops']:.1f} TFLOP/s" if sgemm else "")
          + (f"; copy: {bw['gbps']:.0f} GB/s" if bw else ""))
    return csv_path, json_path, results


# --- tuning sweep -------------------------------------------------------------------------------------

def tune(configs, seq_lens=(4096, 16384), batch=1, heads=16, reps=10, progress=True, seed=None):
    """Check and time each FastConfig; returns result dicts (one per config and N)."""
    import cupy as cp
    from numba import cuda

    rng = np.random.default_rng(seed)
    l2 = int(cuda.get_current_device().L2_CACHE_SIZE)
    out = []
    by_d = {}
    for cfg in configs:
        by_d.setdefault(cfg.head_dim, []).append(cfg)
    for d, cfgs in by_d.items():
        for n in seq_lens:
            case = Case(Shape(batch, heads, n, d), l2, rng)
            for cfg in cfgs:
                t1 = time.monotonic()
                r = run_variant("numba_fast", case, reps, cfg)
                r.update(seq_len=n, head_dim=d, config=repr(cfg))
                if r.get("ms"):
                    r["tflops"] = matmul_flops(case.shape) / (r["ms"] / 1e3) / 1e12
                if progress:
                    print(f"tune d={d} N={n} {cfg.tm}x{cfg.tn} {cfg.nty}x{cfg.ntx} reg={cfg.max_registers} "
                          f"async={int(cfg.async_copy)} vec={int(cfg.vector_loads)} unroll={cfg.unroll}: {r.get('ms', float('nan')):.3f} ms "
                          f"{r.get('tflops', float('nan')):.2f} TFLOP/s err {r.get('rel_err_o', float('nan')):.1e} "
                          f"{r.get('status')} {r.get('error', '')} ({time.monotonic() - t1:.0f} s)", flush=True)
                out.append(r)
            case.free()
            cp.get_default_memory_pool().free_all_blocks()
    return out


def best_configs(tune_results, configs):
    """Per head_dim, the correct config with the smallest time at the largest N."""
    best = {}
    for cfg in configs:
        rs = [r for r in tune_results if r.get("config") == repr(cfg) and r.get("ok") and r.get("ms")]
        if not rs:
            continue
        n_max = max(r["seq_len"] for r in rs)
        ms = next(r["ms"] for r in rs if r["seq_len"] == n_max)
        cur = best.get(cfg.head_dim)
        if cur is None or (n_max, -ms) > (cur[1], -cur[2]):
            best[cfg.head_dim] = (cfg, n_max, ms)
    return {d: v[0] for d, v in best.items()}


def sweep_configs():
    """The configurations the tuning run tries (docs/performance.md lists what each one tests).

    Run 1 (2026-11-29) swept micro-tile shapes, the register cap, cp.async and the vector loads;
    this list is run 2: the best of run 1, loop unrolling, and 8×8 micro-tiles.
    """
    from .fast import FastConfig as F

    return [
        F(64, 4, 8, ntx=8, nty=32, async_copy=False),                  # run 1's best for d = 64
        F(64, 4, 8, ntx=8, nty=32),                                    # run 1's default (cp.async)
        F(64, 4, 8, ntx=8, nty=32, async_copy=False, unroll=2),        # two k-steps per loop trip
        F(64, 4, 8, ntx=8, nty=32, unroll=2),
        F(64, 4, 8, ntx=8, nty=32, async_copy=False, unroll=4),
        F(64, 4, 8, ntx=8, nty=32, async_copy=False, max_registers=128),  # 2 blocks/SM
        F(64, 8, 8, ntx=8, nty=16, async_copy=False),                  # 8x8: 1 B of LDS per FFMA, 2 blocks/SM
        F(64, 8, 8, ntx=8, nty=16),
        F(64, 8, 8, ntx=8, nty=16, async_copy=False, unroll=2),
        F(128, 4, 8, ntx=8, nty=32),                                   # run 1's best for d = 128
        F(128, 4, 8, ntx=8, nty=32, async_copy=False),
        F(128, 4, 8, ntx=8, nty=32, unroll=2),
        F(128, 8, 4, ntx=16, nty=16),
        F(128, 8, 4, ntx=16, nty=16, unroll=2),
        F(128, 4, 4, ntx=16, nty=32),                                  # run 1's default
    ]


RUN1_SWEEP = """F(64,4,8,8,32); F(64,4,8,8,32,max_registers=128); F(64,4,8,8,32,async_copy=False);
F(64,4,8,8,32,vector_loads=False); F(64,4,4,16,32); F(64,4,4,16,16); F(64,8,4,16,16);
F(128,4,4,16,32); F(128,4,4,16,32,async_copy=False); F(128,4,8,8,32); F(128,4,4,16,16); F(128,2,8,8,64)"""


# --- Nsight Compute ----------------------------------------------------------------------------------

NCU_METRICS = [
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__block_size",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__inst_executed.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "dram__bytes_read.sum",
    "gpu__time_duration.sum",
]


STALL_METRICS = [f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in (
    "barrier", "short_scoreboard", "long_scoreboard", "mio_throttle", "math_pipe_throttle", "not_selected",
    "selected", "wait", "dispatch_stall", "no_instruction", "lg_throttle", "branch_resolving", "membar", "drain",
    "sleeping", "misc", "tex_throttle", "imc_miss")] + ["smsp__issue_active.avg.pct_of_peak_sustained_active"]


def launch_once(specs, fast_configs=None):
    """The program ncu profiles: one launch per spec 'variant:N:d' (fast or torch_efficient)."""
    import cupy as cp
    from numba import cuda

    for spec in specs:
        name, n, d = spec.split(":")
        n, d = int(n), int(d)
        shape = Shape(1, 16, n, d)
        q, k, v = (cp.random.standard_normal((1, 16, n, d), dtype=cp.float32) for _ in range(3))
        if name == "fast":
            from .fast import FastPlan, resolve_config

            cfg = resolve_config(d, (fast_configs or {}).get(d))
            plan = FastPlan((1, 16, n, d), cfg, False)
            o = cp.full(q.shape, cp.nan, dtype=cp.float32)
            lse = cp.full((1, 16, n), cp.nan, dtype=cp.float32)
            flat = [cuda.as_cuda_array(x).reshape(x.size) for x in (q, k, v, o, lse)]
            plan.kernel()
            plan.launch(*flat, cuda.to_device(np.zeros(4, dtype=np.int64)))
        elif name == "tiled":
            from .checks import default_blocks
            from .tiled import TiledPlan

            br, bc = default_blocks(n, d)
            o = cp.full((16, n, d), cp.nan, dtype=cp.float32)
            lse = cp.full((16, n), cp.nan, dtype=cp.float32)
            TiledPlan(shape=(1, 16, n, d), block_rows=br, block_cols=bc).launch(
                *[cuda.as_cuda_array(x).reshape(16, n, d) for x in (q, k, v)], cuda.as_cuda_array(o),
                cuda.as_cuda_array(lse), cuda.to_device(np.zeros(4, dtype=np.int64)))
        else:
            import torch
            from torch.nn.attention import SDPBackend, sdpa_kernel

            with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
                o = torch.nn.functional.scaled_dot_product_attention(*(torch.from_dlpack(x) for x in (q, k, v)))
            o = cp.from_dlpack(o)
        cuda.synchronize()
        print(f"launched {name} N={n} d={d} finite={bool(cp.isfinite(o).all())} flops={matmul_flops(shape)}",
              file=sys.stderr)


def run_ncu(specs, out_path, log_path, fast_configs=None, timeout_s=300, sections_spec=None):
    """ncu --clock-control none on launch_once(specs); CSV of NCU_METRICS to out_path, log to log_path."""
    from .profile import find_ncu

    ncu = find_ncu()
    if ncu is None:
        raise RuntimeError("ncu not found")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    cfg_arg = json.dumps({str(d): _cfg_dict(c) for d, c in (fast_configs or {}).items()})
    prog = [sys.executable, "-m", "gpu_kernels.compare", "launch", "--specs", ",".join(specs), "--configs", cfg_arg]
    cmd = [ncu, "--clock-control", "none", "--kernel-name", "regex:fa2_fast|fmha|fa2_forward", "--csv",
           "--page", "raw", "--metrics", ",".join(NCU_METRICS)] + prog
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    with open(out_path, "w") as f:
        f.write(p.stdout)
    log = [" ".join(cmd), f"returncode {p.returncode}", p.stderr[-6000:]]
    if sections_spec:  # why warps wait: stall reasons per issued instruction
        prog2 = [sys.executable, "-m", "gpu_kernels.compare", "launch", "--specs", sections_spec, "--configs", cfg_arg]
        cmd2 = [ncu, "--clock-control", "none", "--kernel-name", "regex:fa2_fast|fmha", "--csv", "--page", "raw",
                "--metrics", ",".join(STALL_METRICS)] + prog2
        p2 = subprocess.run(cmd2, capture_output=True, text=True, timeout=timeout_s, env=env)
        log += ["", " ".join(cmd2), f"returncode {p2.returncode}", "STALLS-CSV-BEGIN", p2.stdout, "STALLS-CSV-END",
                p2.stderr[-3000:]]
        if p2.returncode != 0:
            cmd3 = [ncu, "--clock-control", "none", "--kernel-name", "regex:fa2_fast", "--section", "WarpStateStats",
                    "--print-details", "all"] + prog2
            p3 = subprocess.run(cmd3, capture_output=True, text=True, timeout=timeout_s, env=env)
            log += ["", " ".join(cmd3), f"returncode {p3.returncode}", p3.stdout[-20000:], p3.stderr[-2000:]]
    with open(log_path, "w") as f:
        f.write("\n".join(log))
    return p.returncode


def _cfg_dict(cfg):
    return {"tm": cfg.tm, "tn": cfg.tn, "ntx": cfg.ntx, "nty": cfg.nty, "max_registers": cfg.max_registers,
            "async_copy": cfg.async_copy, "vector_loads": cfg.vector_loads, "unroll": cfg.unroll}


def _configs_from_json(text):
    from .fast import FastConfig

    if not text:
        return {}
    return {int(d): FastConfig(int(d), **kw) for d, kw in json.loads(text).items()}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m gpu_kernels.compare")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tune")
    t.add_argument("--out", required=True, help="JSON file for the sweep's results")
    t.add_argument("--seq-lens", default="4096,16384")
    t.add_argument("--reps", type=int, default=10)
    c = sub.add_parser("run")
    c.add_argument("--out", default="data/measurements")
    c.add_argument("--tag", default="h200")
    c.add_argument("--seq-lens", default="1024,4096,16384")
    c.add_argument("--head-dims", default="64,128")
    c.add_argument("--reps", type=int, default=10)
    c.add_argument("--variants", default=",".join(VARIANTS))
    c.add_argument("--configs", default="", help="JSON {d: FastConfig kwargs} (default: fast.default_config)")
    c.add_argument("--tuned", default="", help="a tune JSON: use its best config per d")
    n = sub.add_parser("ncu")
    n.add_argument("--specs", default="fast:4096:64,fast:4096:128,torch_efficient:4096:64,torch_efficient:4096:128")
    n.add_argument("--sections-spec", default="fast:4096:64,fast:4096:128,torch_efficient:4096:64")
    n.add_argument("--out", required=True)
    n.add_argument("--log", required=True)
    n.add_argument("--configs", default="")
    n.add_argument("--tuned", default="")
    ln = sub.add_parser("launch")
    ln.add_argument("--specs", required=True)
    ln.add_argument("--configs", default="")
    args = p.parse_args(argv)

    def configs_of(a):
        cfgs = _configs_from_json(getattr(a, "configs", ""))
        if getattr(a, "tuned", "") and os.path.exists(a.tuned):
            with open(a.tuned) as f:
                tuned = json.load(f)
            cfgs = {**_configs_from_json(json.dumps(tuned["best"])), **cfgs}
        return cfgs

    if args.cmd == "tune":
        cfgs = sweep_configs()
        res = tune(cfgs, seq_lens=[int(x) for x in args.seq_lens.split(",")], reps=args.reps)
        best = best_configs(res, cfgs)
        write_json_atomic(args.out, provenance({"results": res, "best": {str(d): _cfg_dict(c) for d, c in best.items()}}))
        for d, cfg in best.items():
            print(f"best d={d}: {cfg}")
    elif args.cmd == "run":
        run_compare(out_dir=args.out, tag=args.tag, seq_lens=[int(x) for x in args.seq_lens.split(",")],
                    head_dims=[int(x) for x in args.head_dims.split(",")], reps=args.reps,
                    variants=[v for v in args.variants.split(",") if v], fast_configs=configs_of(args))
    elif args.cmd == "ncu":
        rc = run_ncu(args.specs.split(","), args.out, args.log, configs_of(args), sections_spec=args.sections_spec)
        print(f"ncu returncode {rc}")
    else:
        launch_once(args.specs.split(","), configs_of(args))


if __name__ == "__main__":
    main()
