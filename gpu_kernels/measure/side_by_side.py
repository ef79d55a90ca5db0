"""The 16-bit side by side, in one run: numba's fa2_tc, fa3_tc (wgmma) and naive_tc against cupy's naive attention and
torch SDPA's math (fp32 inside: it upcasts 16-bit inputs, so it is not the 16-bit standard attention;
benchmarks/eager16_h200.py measures that), flash (FlashAttention-2), cuDNN and memory-efficient
backends, in bf16 and fp16, non-causal and causal (``python -m gpu_kernels side-by-side``;
``python -m gpu_kernels.measure.side_by_side``); decode shapes (a few queries against a long KV cache)
add numba's decode_tc and the HBM copy bandwidth (``decode_side_by_side.py``).

    python -m gpu_kernels side-by-side --out DIR [--dtypes bf16,fp16] [--causal no,yes]
        [--seq-lens 512,...,16384] [--head-dims 64,128] [--batch B --heads H] [--kv-heads H_kv]
        [--shape B:H:H_kv:N:d[:q_len] ...] [--variants ...] [--budget-s 170]

``--shape`` (repeatable) gives each shape whole instead: B:H:H_kv:N:d is a prefill shape (N queries
and keys), B:H:H_kv:N:d:q_len a decode shape (q_len queries against N keys, non-causal only; its rows
go to decode_side_by_side_<tag>.csv). Without it the shapes below are used.

Workload per (N, d): B·H·N = TOKENS = 2¹⁸ tokens (N = 512: B·H = 512; N = 4096: 64; N = 16384: 16),
H = 16, B = B·H/16. Every kernel then has the same 2¹⁸/64 = 4096 query blocks of 64 rows, 31 per SM
of the 132, so each fills the GPU; the largest N×N buffer (S or P, B·H·N² 16-bit values) is
2¹⁸·N·2 B = 8.6 GB at N = 16384, so the naive variants stay well inside the 141 GB.

Inputs: drawn on the GPU in fp32 and rounded to the dtype by torch (round to nearest even); two sets,
each 3·2¹⁸·d·2 B ≥ 100 MB (beyond the 60 MB L2), cycled from launch to launch. The numba kernels read
the same bytes through uint16 views. Correctness, in the same run, before timing: O poisoned with NaN,
then ‖O − ref‖/‖ref‖ on the first and the last batch·head against torch's math backend on the inputs
upcast to fp32 (same mask), within 2u of the dtype (7.8e-3 bf16, 9.8e-4 fp16; a kernel that rounds
P and O once lands near 0.6u). Timing: CUDA events around PER_EVENT launches (1 when a launch takes
more than 2 ms) after one warm-up group, median of reps groups, reps = TARGET_S of launches within
[--min-reps, --reps]. Configurations run in the order bf16 non-causal, fp16 non-causal, bf16 causal,
fp16 causal; those that would start after --budget-s get a row saying so.
TFLOP/s counts the useful FLOPs: 4·N²·d·B·H, half of it with the causal mask.
Writes tc_side_by_side_<--tag>.csv (default h200) + its provenance sidecar, rewritten after every (N, d).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import statistics
import sys
import time

from measurements.schemas import SIDE_BY_SIDE
from simlib.presets import DEFAULT_GPU

from ..tensor_core.dtypes import DTYPES
from .decode_side_by_side import DECODE_VARIANTS
from .torch_views import bits_view, checked_first_call, not_timed, tolerance  # noqa: F401 (bits_view: the benchmarks')

FIELDS = list(SIDE_BY_SIDE.columns)  # measurements.schemas: the one definition, the readers check it
VARIANTS = (
    "fa2_tc",
    "fa3_tc",
    "naive_tc",
    "cupy_naive",
    "torch_math",
    "torch_flash",
    "torch_cudnn",
    "torch_efficient",
)
TOKENS = 2**18
HEADS = 16
TARGET_S = 0.15
#: fa2_tc configs (TcConfig keywords) timed beside the default, per d: version 3's layout (4 warps of
#: 16 rows, Q in registers, Bc = 64) with version 4's instructions (PERFORMANCE.md).
ALTERNATIVES = {
    64: [dict(warps=4, block_cols=64, warp_rows=16)],
    128: [dict(warps=4, block_cols=64, warp_rows=16)],
}


def batch_heads(n):
    """(B, H) with B·H·N = TOKENS and H = 16 (fewer heads only if B·H < 16)."""
    bh = max(1, TOKENS // n)
    h = min(HEADS, bh)
    return bh // h, h


def useful_flops(n, d, bh, causal):
    return 4 * n * n * d * bh // (2 if causal else 1)


def _events_time(launch, reps, per_event, torch):
    """Per-launch milliseconds of `reps` event pairs around `per_event` launches each, after one
    warm-up group; launch(i) runs on input set i % 2."""
    times = []
    for r in range(reps + 1):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(per_event):
            launch((r * per_event + i) % 2)
        end.record()
        end.synchronize()
        if r:
            times.append(start.elapsed_time(end) / per_event)
    return times


def enable_cupy_bfloat16():
    """Import ml_dtypes before anything imports cupy: cupy 14 supports bfloat16 only if ml_dtypes was
    imported first (on the H200: from_dlpack, matmul, exp and max on a bf16 array then ran; a run that
    imported it after the provenance record had imported cupy saw every bf16 cupy row fail with "data
    type 'E' not understood": tc_side_by_side_h200_causal.csv's notes)."""
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        pass


#: cudaDataType of the 16-bit dtypes (CUDA's library_types.h: CUDA_R_16BF = 14, CUDA_R_16F = 2) and the
#: cuBLAS enums used (cublas_api.h): no transpose, transpose, fp32 accumulation, the default algorithm.
CUDA_DATA_TYPE = {"bf16": 14, "fp16": 2}
CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT = 0, 1, 68, -1


def gemm_args(product, n, d):
    """cuBLAS's column-major arguments (transa, transb, m, n, k, lda, ldb, ldc, strideA, strideB,
    strideC) for one head's row-major product, A being the right factor and B the left one:
    "qk": S = Q·Kᵀ (N×N from two N×d); "pv": O = P·V (N×d from N×N and N×d).

    A row-major X is the column-major Xᵀ, so S = Q·Kᵀ is computed as Sᵀ = K·Qᵀ = op(A)·B with A = K
    (stored d×N, transposed) and B = Q (stored d×N); O = P·V as Oᵀ = Vᵀ·Pᵀ = A·B with A = V, B = P.
    At N = 4096, d = 64, S's call is a 4096×4096×64 product with leading dimensions 64, 64, 4096:

    >>> gemm_args("qk", 4096, 64)
    (1, 0, 4096, 4096, 64, 64, 64, 4096, 262144, 262144, 16777216)
    """
    if product == "qk":
        return (CUBLAS_OP_T, CUBLAS_OP_N, n, n, d, d, d, n, n * d, n * d, n * n)
    if product == "pv":
        return (CUBLAS_OP_N, CUBLAS_OP_N, d, n, n, d, n, d, n * d, n * n, n * d)
    raise ValueError(f"product must be 'qk' or 'pv', got {product!r}")


def cublas_bmm(product, left, right, out, alpha, dtype):
    """out = alpha·left·rightᵀ ("qk": Q, K) or left·right ("pv": P, V) for every batch·head, inputs and
    output in `dtype`, fp32 accumulation (cublasGemmStridedBatchedEx). Not cupy.matmul: cupy 14.2's
    matmul of > 2-D arrays sends bf16 to its integer fallback (which fails: "data type 'E' not
    understood") and multiplies fp16 in fp32 copies, so it would not be cuBLAS in the dtype."""
    import numpy as np
    from cupy.cuda import cublas, device

    for x in (left, right, out):
        if not x.flags.c_contiguous:
            raise ValueError(f"cublas_bmm: {product} operands must be C-contiguous")
    *lead, n, d = left.shape if product == "qk" else right.shape
    ta, tb, m, nn, k, lda, ldb, ldc, sa, sb, sc = gemm_args(product, n, d)
    t = CUDA_DATA_TYPE[dtype]
    one_alpha, zero = np.array(alpha, dtype=np.float32), np.array(0, dtype=np.float32)
    cublas.gemmStridedBatchedEx(
        device.get_cublas_handle(), ta, tb, m, nn, k, one_alpha.ctypes.data,
        right.data.ptr, t, lda, sa, left.data.ptr, t, ldb, sb,
        zero.ctypes.data, out.data.ptr, t, ldc, sc,
        math.prod(lead), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT,
    )  # fmt: skip


def cupy_naive(q, k, v, o, s, mask, scale, dtype):
    """cuBLAS in the dtype (`cublas_bmm`): S = QKᵀ·scale (the scale as the GEMM's alpha; + causal −∞),
    P = exp(S − rowmax) in place, O = PV / rowsum (the row sums in fp32). S is (B, H, N, N) in the
    dtype: the materialising pipeline."""
    import cupy as cp

    cublas_bmm("qk", q, k, s, scale, dtype)
    if mask is not None:
        cp.add(s, mask, out=s)
    cp.subtract(s, s.max(axis=3, keepdims=True), out=s)
    cp.exp(s, out=s)
    rowsum = s.sum(axis=3, keepdims=True, dtype=cp.float32)
    cublas_bmm("pv", s, v, o, 1.0, dtype)
    o[...] = (o.astype(cp.float32) / rowsum).astype(o.dtype)


class Shape:
    """Input sets, outputs and the fp32 reference of one (dtype, causal, N, d); B and H from
    `batch_heads(N)` unless given, H_kv = H unless given (GQA: query head h reads K/V head h // (H/H_kv))."""

    def __init__(self, dtype, causal, n, d, torch, batch=None, heads=None, kv_heads=None):
        import torch.nn.functional as F

        self.dtype, self.causal, self.n, self.d = dtype, causal, n, d
        self.batch, self.heads = batch_heads(n) if batch is None else (batch, heads)
        self.kv_heads = kv_heads or self.heads
        b, h, hkv = self.batch, self.heads, self.kv_heads
        tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        self.tdt = tdt
        self.qkv = [
            [torch.randn(b, hh, n, d, device="cuda").to(tdt) for hh in (h, hkv, hkv)] for _ in range(2)
        ]
        self.views = [[bits_view(x) for x in s] for s in self.qkv]
        self.out = torch.empty(b, h, n, d, device="cuda", dtype=tdt)
        self.lse = torch.empty(b, h, n, device="cuda", dtype=torch.float32)
        self.o_view, self.l_view = bits_view(self.out), bits_view(self.lse)
        q = self.qkv[0][0].reshape(b * h, n, d)
        k, v = (x.reshape(b * hkv, n, d) for x in self.qkv[0][1:])
        group = h // hkv
        self.checked = [0, b * h - 1]
        self.ref = [
            F.scaled_dot_product_attention(
                q[i].float()[None], k[i // group].float()[None], v[i // group].float()[None], is_causal=causal
            )[0]
            for i in self.checked
        ]

    def err(self, o, torch):
        o = o.reshape(self.batch * self.heads, self.n, self.d)
        num = sum(float(torch.linalg.norm(o[i].float() - r)) ** 2 for i, r in zip(self.checked, self.ref))
        return math.sqrt(num / sum(float(torch.linalg.norm(r)) ** 2 for r in self.ref))


def launchers(sh, names, torch):
    """(kernel, config, make) per variant; make() returns launch(i) -> O (buffers made on the call)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from ..counting import new_counters
    from ..kernels.fa2_tc import Fa2TcPlan, TcConfig, default_config
    from ..kernels.fa3_tc import Fa3TcPlan
    from ..kernels.fa3_tc import default_config as fa3_default
    from ..kernels.naive_tc import NaiveTcConfig, NaiveTcPlan, row_stride

    b, h, n, d = sh.batch, sh.heads, sh.n, sh.d
    shape = (b, h, sh.kv_heads, n, n, d)
    gqa = {"enable_gqa": True} if sh.kv_heads != h else {}
    counters = new_counters()
    keep = {}

    def fa2(cfg, plan_type=Fa2TcPlan):
        def make():
            plan = plan_type.of(shape, cfg, sh.dtype, causal=sh.causal)

            def launch(i):
                plan.launch(*sh.views[i], sh.o_view, sh.l_view, counters)
                return sh.out

            return launch

        return make

    def naive():
        plan = NaiveTcPlan.of(shape, NaiveTcConfig(d).check(), sh.dtype, causal=sh.causal)
        sp = [torch.empty(b * h * n * row_stride(n), device="cuda", dtype=sh.tdt) for _ in range(2)]
        keep["sp"] = sp
        s, p = (bits_view(x) for x in sp)

        def launch(i):
            plan.launch(*sh.views[i], s, p, sh.o_view, (counters,) * 3)
            return sh.out

        return launch

    def cupy():
        import cupy as cp

        sets = [[cp.from_dlpack(x) for x in st] for st in sh.qkv]
        o = cp.from_dlpack(sh.out)
        s = cp.empty((b, h, n, n), dtype=sets[0][0].dtype)
        mask = None
        if sh.causal:
            mask = cp.triu(cp.full((n, n), -cp.inf, dtype=cp.float32), 1).astype(s.dtype)
        keep["cupy"] = (s, mask)
        scale = 1 / math.sqrt(d)

        def launch(i):
            cupy_naive(*sets[i], o, s, mask, scale, sh.dtype)
            return sh.out

        return launch

    def sdpa(backend):
        def make():
            def launch(i):
                with sdpa_kernel([backend]):
                    return F.scaled_dot_product_attention(*sh.qkv[i], is_causal=sh.causal, **gqa)

            return launch

        return make

    table = {
        "fa2_tc": [("fa2_tc", f"{default_config(d).name} (default)", fa2(default_config(d)))]
        + [("fa2_tc", cfg.name, fa2(cfg)) for cfg in (TcConfig(d, **kw).check() for kw in ALTERNATIVES[d])],
        "fa3_tc": [("fa3_tc", f"{fa3_default(d).name} (default)", fa2(fa3_default(d), Fa3TcPlan))],
        "naive_tc": [("naive_tc", "w4_bc64", naive)],
        "cupy_naive": [("cupy_naive", f"cublasGemmStridedBatchedEx {sh.dtype}, fp32 acc.", cupy)],
        "torch_math": [("torch_math", "fp32 inside (upcast)", sdpa(SDPBackend.MATH))],
        "torch_flash": [("torch_flash", "", sdpa(SDPBackend.FLASH_ATTENTION))],
        "torch_cudnn": [("torch_cudnn", "", sdpa(SDPBackend.CUDNN_ATTENTION))],
        "torch_efficient": [("torch_efficient", "", sdpa(SDPBackend.EFFICIENT_ATTENTION))],
    }
    return [item for name in names for item in table[name]], keep


def bench_shape(sh, names, min_reps, max_reps, torch, log):
    """One row per variant: checked on fresh poisoned output, then timed."""
    rows = []
    base = {
        "dtype": sh.dtype,
        "batch": sh.batch,
        "heads": sh.heads,
        "seq_len": sh.n,
        "head_dim": sh.d,
        "causal": sh.causal,
        "kv_heads": sh.kv_heads,
        "tol": f"{tolerance(sh.dtype):.2e}",
        "checked_heads": "first,last",
    }
    flops = useful_flops(sh.n, sh.d, sh.batch * sh.heads, sh.causal)
    if sh.kv_heads != sh.heads:
        names = [x for x in names if x not in ("naive_tc", "cupy_naive")]  # no GQA in these two
    items, keep = launchers(sh, names, torch)
    for name, config, make in items:
        row = {**base, "kernel": name, "config": config, "flops": flops, "reps": 0}
        try:
            launch = make()
            first_ms, e = checked_first_call(sh, launch, torch)
            launch(1)  # warm (compiled by the first): the next call's time sets the reps
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            launch(0)
            torch.cuda.synchronize()
            est = (time.perf_counter() - t1) * 1e3
            per_event = 4 if est < 2 else 1
            reps = max(min_reps, min(max_reps, int(TARGET_S * 1e3 / (est * per_event))))
            t = _events_time(launch, reps, per_event, torch)
        except Exception as ex:  # out of memory, a backend that refuses the shape, a cupy dtype: say so
            msg, at = not_timed(ex)
            log(
                f"{sh.dtype} causal={sh.causal} d={sh.d} N={sh.n} {name} {config}: not timed ({msg}; raised at {at})"
            )
            rows.append({**row, "ok": False, "note": "not timed: " + msg})
            keep.clear()
            torch.cuda.empty_cache()
            continue
        med = statistics.median(t)
        ok = e < tolerance(sh.dtype)
        rows.append(
            {
                **row,
                "median_ms": f"{med:.4f}",
                "min_ms": f"{min(t):.4f}",
                "max_ms": f"{max(t):.4f}",
                "reps": reps,
                "per_event": per_event,
                "tflops": f"{flops / med / 1e9:.1f}",
                "rel_err": f"{e:.3e}",
                "ok": ok,
                "note": f"first call {first_ms:.0f} ms (compile included)",
            }
        )
        log(
            f"{sh.dtype} causal={sh.causal:d} d={sh.d} N={sh.n:5d} {name:15s} {config:18s} {med:9.3f} ms "
            f"{flops / med / 1e9:7.1f} TFLOP/s err {e:.2e}{'' if ok else '  FAILED correctness'}"
        )
        keep.clear()
        torch.cuda.empty_cache()
    return ratios_to_torch_flash(rows, ("dtype", "causal", "seq_len", "head_dim"))


def ratios_to_torch_flash(rows, key, name="kernel", missing=None):
    """Set each timed row's ``ratio_to_torch_flash``: its median over torch flash's median at the same
    values of the fields in `key`, as text with three decimals; a row without a time or without a torch
    flash row to compare with is left alone, or gets `missing` when that is given. Returns `rows`.

    >>> rows = [{"kernel": "torch_flash", "n": 1, "median_ms": "2.0"}, {"kernel": "fa3_tc", "n": 1, "median_ms": "1.5"},
    ...         {"kernel": "fa3_tc", "n": 2, "median_ms": "1.0"}]
    >>> [r.get("ratio_to_torch_flash") for r in ratios_to_torch_flash(rows, ("n",))]
    ['1.000', '0.750', None]
    """
    flash = {
        tuple(r[k] for k in key): float(r["median_ms"])
        for r in rows
        if r[name] == "torch_flash" and r.get("median_ms")
    }
    for r in rows:
        f = flash.get(tuple(r[k] for k in key))
        if f and r.get("median_ms"):
            r["ratio_to_torch_flash"] = f"{float(r['median_ms']) / f:.3f}"
        elif missing is not None:
            r["ratio_to_torch_flash"] = missing
    return rows


def positive_ints(text):
    """'4096,16384' -> [4096, 16384] (simlib.cli_values, the parser of both CLIs)."""
    from simlib.cli_values import int_type
    from simlib.workload import MAX_SEQ_LEN

    return int_type("value", MAX_SEQ_LEN, many=True)(text)


def head_dims(text):
    values = positive_ints(text)
    if not set(values) <= {64, 128}:
        raise argparse.ArgumentTypeError(
            f"the tensor-core kernels support head dims 64 and 128, got {text!r}"
        )
    return values


def names_of(allowed):
    def parse(text):
        names = [x.strip() for x in text.split(",") if x.strip()]
        if not names or not set(names) <= set(allowed):
            raise argparse.ArgumentTypeError(f"expected names from {', '.join(allowed)}, got {text!r}")
        return names

    return parse


def shape_spec(text):
    """'B:H:H_kv:N:d' (prefill: N queries and keys) or 'B:H:H_kv:N:d:q_len' (decode: q_len queries
    against N keys) -> a tuple of ints (q_len None for prefill)."""
    fields = text.split(":")
    parts = [int(x) for x in fields if x.isascii() and x.isdigit()]  # '1_6', '١٦', '-1', '' refused
    if len(parts) != len(fields):
        parts = []
    if len(parts) not in (5, 6) or min(parts) < 1:
        raise argparse.ArgumentTypeError(
            f"expected B:H:H_kv:N:d or B:H:H_kv:N:d:q_len (positive integers), got {text!r}"
        )
    b, h, hkv, n, d = parts[:5]
    if h % hkv:
        raise argparse.ArgumentTypeError(f"{text!r}: H_kv = {hkv} must divide H = {h}")
    if d not in (64, 128):
        raise argparse.ArgumentTypeError(
            f"{text!r}: the tensor-core kernels support head dims 64 and 128, got {d}"
        )
    q_len = parts[5] if len(parts) == 6 else None
    from simlib.workload import Workload

    try:  # the model's own ranges (B, H ≤ 2^32, N, q_len ≤ 2^40): what simlib refuses is refused here too
        Workload(n, d, b, h, dtype="bf16", kv_heads=hkv, query_len=q_len)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None
    return (b, h, hkv, n, d, q_len)


def parse_args(argv=None):
    """The arguments, every one checked (the output folder too) before the GPU is asked for: a bad one
    raises commands.UsageError (one line, exit 2)."""
    from measurements.provenance import check_output_dir
    from simlib.cli_values import float_type, tag_type

    from ..commands import OneLineParser, UsageError

    p = OneLineParser(prog="python -m gpu_kernels side-by-side", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for the CSV and its provenance (e.g. $OUT)")
    p.add_argument("--dtypes", type=names_of(DTYPES), default=list(DTYPES))
    p.add_argument("--causal", type=names_of(("no", "yes")), default=["no", "yes"])
    p.add_argument("--seq-lens", type=positive_ints, default=[512, 1024, 2048, 4096, 8192, 16384])
    p.add_argument("--head-dims", type=head_dims, default=[64, 128])
    p.add_argument(
        "--shape",
        type=shape_spec,
        action="append",
        help="B:H:H_kv:N:d (prefill) or B:H:H_kv:N:d:q_len (decode: q_len queries against N keys), "
        "repeatable; replaces --seq-lens/--head-dims/--batch/--heads/--kv-heads",
    )
    p.add_argument("--variants", type=names_of(VARIANTS + DECODE_VARIANTS), default=None)
    p.add_argument("--batch", type=lambda x: positive_ints(x)[0], help="B (default: B·H·N = 2^18, H = 16)")
    p.add_argument("--heads", type=lambda x: positive_ints(x)[0], help="H (needs --batch)")
    p.add_argument("--kv-heads", type=lambda x: positive_ints(x)[0], help="H_kv (GQA; divides H)")
    p.add_argument(
        "--reps", type=lambda x: positive_ints(x)[0], default=30, help="most timed groups per variant"
    )
    p.add_argument("--min-reps", type=lambda x: positive_ints(x)[0], default=5)
    p.add_argument(
        "--budget-s",
        type=float_type("--budget-s", above=0),
        default=170.0,
        help="start no configuration after this",
    )
    p.add_argument(
        "--tag",
        type=tag_type("--tag"),
        default=DEFAULT_GPU,
        help="file names tc_side_by_side_<tag>.csv, decode_side_by_side_<tag>.csv (h200_causal for a causal run)",
    )
    a = p.parse_args(argv)
    if (a.batch is None) != (a.heads is None):
        p.error("argument --batch/--heads: give both or neither")
    h_ = a.heads or HEADS
    if a.kv_heads is not None and (a.kv_heads > h_ or h_ % a.kv_heads):
        p.error(f"argument --kv-heads: {a.kv_heads} must divide the {h_} query heads")
    if a.shape and (a.batch is not None or a.kv_heads is not None):
        p.error("argument --shape: give the shapes either with --shape or with --batch/--heads/--kv-heads")
    try:
        check_output_dir(a.out)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return a


def main(argv=None):
    from ..commands import UsageError
    from ..device import NoGPU, require_gpu

    try:
        a = parse_args(argv)
        require_gpu("side-by-side")
    except (UsageError, NoGPU) as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    enable_cupy_bfloat16()
    os.makedirs(a.out, exist_ok=True)
    import torch

    from measurements.provenance import provenance, write_measurement

    from . import decode_side_by_side as dec

    t_start = time.monotonic()
    lines = []

    def log(text):
        print(text, flush=True)
        lines.append(text)

    configs = []  # (causal, dtype, (B, H, H_kv, N, d, q_len)), in the order they run
    for causal in [c == "yes" for c in a.causal]:
        for dtype in a.dtypes:
            if a.shape:
                configs += [(causal, dtype, sp) for sp in a.shape if not (causal and sp[5] is not None)]
                continue
            for d in a.head_dims:
                for n in a.seq_lens:
                    b, h = batch_heads(n) if a.batch is None else (a.batch, a.heads)
                    configs.append((causal, dtype, (b, h, a.kv_heads or h, n, d, None)))
    decoding = any(sp[5] is not None for _, _, sp in configs)
    record = provenance(
        {
            "what": "16-bit attention forward side by side: fa2_tc, naive_tc, decode_tc (numba, mma.sync), "
            "cupy naive (cuBLAS in the dtype), torch SDPA math/flash/cuDNN/efficient; decode shapes also "
            "against the device-to-device copy bandwidth",
            "argv": sys.argv,
            "tokens": TOKENS,
            "heads": HEADS,
            "torch": torch.__version__,
            "timing": f"CUDA events, 1 warm-up group, median of reps groups (~{TARGET_S} s); decode shapes: "
            "launches queued behind torch.cuda._sleep, one event pair each (decode_side_by_side.py)",
            "check": "rel. error vs fp32 attention on the same inputs (prefill: first and last batch·head, "
            "same mask; decode: every head), tol 2u",
        }
    )
    rows, drows = [], []
    copies = []
    if decoding:
        gbps, times = dec.copy_gbps(torch)
        copies.append(gbps)
        drows.append(dec.copy_row(gbps, times, "start"))
        log(f"hbm_copy {gbps:.1f} GB/s (start of the run)")

    def save(status):
        meta = {**record, "status": status, "elapsed_s": round(time.monotonic() - t_start, 1)}
        for name, fields, table in (
            (f"tc_side_by_side_{a.tag}.csv", FIELDS, rows),
            (f"decode_side_by_side_{a.tag}.csv", dec.DECODE_FIELDS, drows),
        ):
            if not table:
                continue
            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=fields)
            w.writeheader()
            w.writerows(table)
            write_measurement(f"{a.out}/{name}", buf.getvalue(), meta)

    for causal, dtype, (b, h, hkv, n, d, ql) in configs:
        if time.monotonic() - t_start > a.budget_s:
            late = {"kernel": "*", "dtype": dtype, "batch": b, "heads": h, "kv_heads": hkv, "seq_len": n}
            late.update(head_dim=d, reps=0, ok=False, note=f"not run: past --budget-s {a.budget_s:g}")
            if ql is None:
                rows.append({**late, "causal": causal})
            else:
                drows.append({**late, "query_len": ql})
            continue
        if ql is None:
            names = [x for x in (a.variants or VARIANTS) if x in VARIANTS]
            sh = Shape(dtype, causal, n, d, torch, b, h, hkv)
            rows += bench_shape(sh, names, a.min_reps, a.reps, torch, log)
        else:
            names = [x for x in (a.variants or DECODE_VARIANTS) if x in DECODE_VARIANTS]
            try:
                sh = dec.DecodeShape(dtype, b, h, hkv, ql, n, d, torch)
            except Exception as ex:  # out of memory for this shape's input sets: say so, go on
                log(f"decode {dtype} B={b} H={h}/{hkv} L={n} d={d}: no inputs ({type(ex).__name__}: {ex})")
                drows.append({"kernel": "*", "dtype": dtype, "batch": b, "heads": h, "kv_heads": hkv,
                              "query_len": ql, "seq_len": n, "head_dim": d, "reps": 0, "ok": False,
                              "note": f"not run: {type(ex).__name__}"})  # fmt: skip
                torch.cuda.empty_cache()
                continue
            drows += dec.bench_decode_shape(sh, names, copies[0], torch, log)
        del sh
        torch.cuda.empty_cache()
        save("partial")
    if decoding:
        gbps, times = dec.copy_gbps(torch)
        drows.append(dec.copy_row(gbps, times, "end"))
        log(f"hbm_copy {gbps:.1f} GB/s (end of the run)")
    save("complete")
    bad = [r for r in rows + drows if r["reps"] and not r["ok"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
