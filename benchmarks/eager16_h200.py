"""Standard attention as practitioners run it in 16 bits, measured on the H200: time and NVML energy.

Not SDPA's math backend (``torch_math`` in the other files), which upcasts fp16/bf16 inputs and
computes S, P and the products in fp32 (PyTorch's docs: "the Math backend by default accumulates in
float32"; pytorch/pytorch PR #128922). Here every N×N tensor is in the 16-bit dtype and both products
run on the tensor cores through cuBLAS (fp32 accumulation inside the GEMM, 16-bit output):

``eager``          ``S = (Q @ Kᵀ) * scale`` (+ an additive causal mask), ``P = softmax(S)`` on the
                   16-bit tensor (torch's kernel reads and writes the dtype, fp32 only in registers),
                   ``O = P @ V``: four or five kernels, S and P in HBM in the dtype;
``eager_hf``       the same with the softmax as Hugging Face's ``eager_attention_forward`` writes it,
                   ``softmax(S, dtype=torch.float32).to(dtype)``: P written in fp32, then cast back
                   (one more N×N pass);
``attention_ref``  the FlashAttention paper's benchmark reference (Dao-AILab/flash-attention,
                   ``attention_ref`` in benchmarks/, ``upcast=False``; benchmarks/figure2_torch.py):
                   packed (B, N, 3, H, d) qkv, einsum with K pre-scaled, ``masked_fill_`` of a key
                   mask (all tokens real here: the pass still runs, as in the paper's script), the
                   causal ``masked_fill_``, softmax in the dtype, einsum;
``torch_flash``    SDPA's FLASH_ATTENTION backend (FlashAttention-2), the partner of every pair,
                   measured in the same run on the same inputs.

Shapes: the 16-bit side by side's (gpu_kernels.measure.side_by_side: B·H·N = 2¹⁸, H = 16, N = 512–16384,
d = 64 and 128, non-causal and causal, bf16 and fp16). Passes: ``fwd`` (under ``torch.no_grad``) and
``fwd_bwd`` (the forward, then ``torch.autograd.grad`` of O against a fixed random dO).

Part 1, time (``eager16_h200.csv``): per case, first the check: one call, then ‖x − ref‖/‖ref‖ of O
(and of dQ, dK, dV for fwd_bwd) on the first and the last batch·head against a float64 reference
computed on the GPU from the same 16-bit inputs (tolerance 4u for O, 8u for the gradients: S, the
scaled S, P and O are each rounded once to the dtype, u = 2⁻⁸ bf16, 2⁻¹¹ fp16); the bytes the call
allocates beyond its inputs (``torch.cuda.max_memory_allocated``); then CUDA events after a warm-up
group, median of reps groups (gpu_kernels.measure.side_by_side._events_time), inputs alternating between
two sets of ≥ 100 MB each (beyond the 60 MB L2; S alone is ≥ 268 MB). Order: bf16 then fp16,
non-causal then causal, d = 64 then 128; a case that would start after the time budget gets a row
saying so.

Part 2, energy (``eager16_energy_h200.csv``): d = 64, non-causal, N ∈ --energy-seq-lens, every variant
and pass in both dtypes, claim (q)'s training step (fwd_bwd at N = 1K) first: checked again, then looped for --energy-s seconds between two steps of NVML's
energy counter (gpu_kernels.measure.nvml_energy, as benchmarks/energy_h200.py); the board's idle
power measured before and after (rows ``idle``) and subtracted in ``joules_per_call_above_idle``.

    python3 benchmarks/eager16_h200.py --out $OUT [--budget-s 95] [--time-budget-s 40]
    python3 benchmarks/eager16_h200.py --out /tmp/x --dry-run     # the plan, no GPU
    python3 benchmarks/eager16_h200.py --out $OUT --resume data/measurements/current   # finish a cut run

``--resume DIR`` finishes a run the budget cut short: the earlier run's files in DIR keep every case
that was measured whole (part 1: all variants and passes of one (dtype, causal, d, N); part 2: all
variants of one (dtype, pass, N), so each standard stays paired with the flash call timed beside it in
the same run), those rows are copied as they are, and only the other cases run. The provenance
records the earlier files' sha256 and which cases came from them.

Both CSVs and the log ``eager16_h200.log`` are rewritten, with their provenance sidecars, after every
row (measurements.provenance). Columns: data/measurements/README.md.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from measurements.eager16 import ENERGY_FIELDS, TIME_FIELDS  # noqa: E402  (the files' columns, defined once)
from simlib.units import TENSOR_CORE_DTYPES as DTYPES  # noqa: E402
from simlib.units import UNIT_ROUNDOFF  # noqa: E402

VARIANTS = ("eager", "eager_hf", "attention_ref", "torch_flash")
PASSES = ("fwd", "fwd_bwd")
SOFTMAX_DTYPE = {"eager": "input", "eager_hf": "fp32", "attention_ref": "input", "torch_flash": "fused"}
IMPLEMENTATION = {
    "eager": "matmul -> *scale -> softmax(16-bit) -> matmul",
    "eager_hf": "matmul -> *scale -> softmax(dtype=fp32).to(16-bit) -> matmul (HF eager)",
    "attention_ref": "FA benchmark attention_ref: einsum(q, k/sqrt(d)) -> masked_fill_ -> softmax -> einsum",
    "torch_flash": "SDPA FLASH_ATTENTION backend (FlashAttention-2)",
}
SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384)
HEAD_DIMS = (64, 128)
#: Tolerance of O and of the gradients in units of u (see the module docstring).
TOL_O_U, TOL_GRAD_U = 4, 8
ENERGY_SEQ_LENS = (1024, 4096, 16384)
ENERGY_HEAD_DIM = 64
#: The energy cases' order: claim (q)'s N = 1K training step first, then the forward at 4K and 16K.
ENERGY_ORDER = (
    ("fwd_bwd", 1024),
    ("fwd", 4096),
    ("fwd", 16384),
    ("fwd_bwd", 4096),
    ("fwd_bwd", 16384),
    ("fwd", 1024),
)
#: Where the tensors live (a CPU test of this script's logic sets "cpu").
DEVICE = "cuda"
TARGET_S = 0.04  # timed seconds per case (reps within [--min-reps, --max-reps])


def batch_heads(n):
    """(B, H) of the side by side at N: B·H·N = 2¹⁸, H = 16 (the one rule, gpu_kernels.measure.side_by_side).

    >>> batch_heads(4096)
    (4, 16)
    """
    from gpu_kernels.measure.side_by_side import batch_heads as rule

    return rule(n)


def matmul_flops(variant, pas, n, d, bh, causal):
    """FLOPs of the matrix products the call runs. The eager variants compute every N×N score even when
    causal (the mask only hides them): 2 products forward (4N²d), 4 more backward (dV, dP, dQ, dK).
    FlashAttention-2 skips the masked half of the tiles and recomputes S in the backward pass (5
    products), so causal halves its count.

    >>> matmul_flops("eager", "fwd_bwd", 1024, 64, 1, False) == 12 * 1024**2 * 64
    True
    >>> matmul_flops("torch_flash", "fwd_bwd", 1024, 64, 1, True) == 14 * 1024**2 * 64 // 2
    True
    """
    if variant == "torch_flash":
        products = 2 if pas == "fwd" else 7
        return products * 2 * n * n * d * bh // (2 if causal else 1)
    products = 2 if pas == "fwd" else 6
    return products * 2 * n * n * d * bh


def tolerances(dtype):
    """(tol_o, tol_grad) = (4u, 8u) of the dtype: bf16 (0.015625, 0.03125)."""
    u = UNIT_ROUNDOFF[dtype]
    return TOL_O_U * u, TOL_GRAD_U * u


def time_plan(dtypes, causals, head_dims, seq_lens):
    """(dtype, causal, d, N) in the order part 1 runs them."""
    return [(dt, c, d, n) for c in causals for dt in dtypes for d in head_dims for n in seq_lens]


def energy_plan(dtypes, seq_lens, variants):
    """(dtype, pass, N, variant) in the order part 2 runs them: ENERGY_ORDER, each (pass, N) in every
    dtype, so a run cut short by the budget loses the same cases of both.

    >>> energy_plan(["bf16", "fp16"], [1024], ["eager"])[:2]
    [('bf16', 'fwd_bwd', 1024, 'eager'), ('fp16', 'fwd_bwd', 1024, 'eager')]
    """
    order = [(p, n) for p, n in ENERGY_ORDER if n in seq_lens]
    order += [(p, n) for n in seq_lens for p in PASSES if (p, n) not in order]
    return [(dt, p, n, v) for p, n in order for dt in dtypes for v in variants]


def reps_for(call_ms, per_event, min_reps, max_reps):
    """Event groups to time: TARGET_S of launches, within [min_reps, max_reps].

    >>> reps_for(10.0, 1, 5, 30), reps_for(0.2, 4, 5, 30), reps_for(100.0, 1, 5, 30)
    (5, 30, 5)
    """
    return max(min_reps, min(max_reps, int(TARGET_S * 1e3 / (call_ms * per_event))))


# --- the variants (torch, imported on the device only) ------------------------------------------------


def eager(q, k, v, mask, softmax_fp32):
    """Hugging Face's eager attention (transformers' ``eager_attention_forward``) without dropout:
    (B, H, N, d) in, (B, H, N, d) out; `mask` additive (1, 1, N, N) in the dtype or None."""
    import torch

    s = torch.matmul(q, k.transpose(2, 3)) * (q.shape[-1] ** -0.5)
    if mask is not None:
        s = s + mask
    if softmax_fp32:
        p = torch.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
    else:
        p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v)


class Inputs:
    """Two input sets of one (dtype, causal, N, d), dO, the masks, and the float64 reference of O and
    dQ, dK, dV on the first and the last batch·head of set 0."""

    def __init__(self, dtype, causal, n, d):
        import torch

        self.dtype, self.causal, self.n, self.d = dtype, causal, n, d
        self.batch, self.heads = batch_heads(n)
        b, h = self.batch, self.heads
        tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        self.sets = [
            [torch.randn(b, h, n, d, device=DEVICE).to(tdt).requires_grad_() for _ in range(3)]
            for _ in range(2)
        ]
        # attention_ref's packed (B, N, 3, H, d) layout of the same values
        self.packed = [
            torch.stack([x.detach().transpose(1, 2) for x in s], dim=2).requires_grad_() for s in self.sets
        ]
        self.dout = torch.randn(b, h, n, d, device=DEVICE).to(tdt)
        self.key_mask = torch.ones(b, n, dtype=torch.bool, device=DEVICE)
        self.add_mask = None
        if causal:
            m = torch.full((n, n), torch.finfo(tdt).min, device=DEVICE).triu(1)
            self.add_mask = m.to(tdt)[None, None]
        self.checked = [(0, 0), (b - 1, h - 1)]
        self.ref = [self._reference(bi, hi) for bi, hi in self.checked]

    def _reference(self, bi, hi):
        import torch

        q, k, v = (x.detach()[bi, hi].double().requires_grad_() for x in self.sets[0])
        s = (q @ k.T) / math.sqrt(self.d)
        if self.causal:
            s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        grads = torch.autograd.grad(o, (q, k, v), self.dout[bi, hi].double())
        return o.detach(), [g.detach() for g in grads]

    def call(self, variant, pas):
        """call(i) -> (O as (B, H, N, d), [dQ, dK, dV] or None) on input set i % 2."""
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        from benchmarks.figure2_torch import attention_ref

        def forward(i):
            q, k, v = self.sets[i % 2]
            if variant == "eager":
                return eager(q, k, v, self.add_mask, False), (q, k, v)
            if variant == "eager_hf":
                return eager(q, k, v, self.add_mask, True), (q, k, v)
            if variant == "torch_flash":
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal), (q, k, v)
            if variant == "attention_ref":
                qkv = self.packed[i % 2]
                return attention_ref(qkv, self.key_mask, 0.0, causal=self.causal).transpose(1, 2), (qkv,)
            raise ValueError(f"variant: unknown {variant!r}")

        if pas == "fwd":

            def run(i):
                with torch.no_grad():
                    return forward(i)[0], None

            return run

        def run_bwd(i):
            o, leaves = forward(i)
            grads = torch.autograd.grad(o, leaves, self.dout)
            if variant == "attention_ref":
                grads = [g.transpose(1, 2) for g in grads[0].unbind(dim=2)]
            return o, list(grads)

        return run_bwd

    def errors(self, o, grads):
        """(rel. error of O, largest rel. error of dQ, dK, dV or None) on the checked heads."""
        import torch

        def rel(got, want):
            num = sum(float(torch.linalg.norm(g.double() - w)) ** 2 for g, w in zip(got, want))
            den = sum(float(torch.linalg.norm(w)) ** 2 for w in want)
            return math.sqrt(num / den) if math.isfinite(num) else math.inf

        e_o = rel([o[b, h] for b, h in self.checked], [r[0] for r in self.ref])
        if grads is None:
            return e_o, None
        e_g = max(
            rel([grads[j][b, h] for b, h in self.checked], [r[1][j] for r in self.ref]) for j in range(3)
        )
        return e_o, e_g


def check_case(inp, variant, pas):
    """(call, rel_err_o, rel_err_grad, extra_alloc_bytes, first_ms): one checked call."""
    import torch

    call = inp.call(variant, pas)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    o, grads = call(0)
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    extra = torch.cuda.max_memory_allocated() - base
    e_o, e_g = inp.errors(o, grads)
    del o, grads
    return call, e_o, e_g, extra, first_ms


def _msg(ex):
    text = str(ex).splitlines()[0][:160] if str(ex) else ""
    return f"{type(ex).__name__}: {text}"


def base_row(inp, variant, pas):
    return {
        "variant": variant,
        "dtype": inp.dtype,
        "pass": pas,
        "causal": inp.causal,
        "batch": inp.batch,
        "heads": inp.heads,
        "seq_len": inp.n,
        "head_dim": inp.d,
    }


def time_case(inp, variant, pas, min_reps, max_reps):
    """One row of part 1: checked, then timed with CUDA events."""
    import torch

    from gpu_kernels.measure.side_by_side import _events_time

    tol_o, tol_g = tolerances(inp.dtype)
    flops = matmul_flops(variant, pas, inp.n, inp.d, inp.batch * inp.heads, inp.causal)
    row = {
        **base_row(inp, variant, pas),
        "implementation": IMPLEMENTATION[variant],
        "softmax_dtype": inp.dtype if SOFTMAX_DTYPE[variant] == "input" else SOFTMAX_DTYPE[variant],
        "matmul_flops": flops,
        "tol_o": f"{tol_o:.2e}",
        "tol_grad": f"{tol_g:.2e}" if pas == "fwd_bwd" else "",
        "reps": 0,
    }
    try:
        call, e_o, e_g, extra, first_ms = check_case(inp, variant, pas)
        call(1)  # warm on the second set too
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        call(0)
        torch.cuda.synchronize()
        est = (time.perf_counter() - t1) * 1e3
        per_event = 4 if est < 2 else 1
        reps = reps_for(est, per_event, min_reps, max_reps)
        times = _events_time(call, reps, per_event, torch)
    except Exception as ex:  # out of memory, a backend that refuses the shape: recorded, the rest goes on
        torch.cuda.empty_cache()
        return {**row, "ok": False, "note": "not timed: " + _msg(ex)}
    med = statistics.median(times)
    ok = e_o <= tol_o and (e_g is None or e_g <= tol_g)
    return {
        **row,
        "median_ms": f"{med:.4f}",
        "min_ms": f"{min(times):.4f}",
        "max_ms": f"{max(times):.4f}",
        "reps": reps,
        "per_event": per_event,
        "tflops": f"{flops / med / 1e9:.1f}",
        "rel_err_o": f"{e_o:.3e}",
        "rel_err_grad": "" if e_g is None else f"{e_g:.3e}",
        "ok": ok,
        "extra_alloc_bytes": extra,
        "note": f"first call {first_ms:.0f} ms",
    }


def energy_case(inp, variant, pas, counter, seconds):
    """One row of part 2: checked, then looped for `seconds` between two steps of NVML's counter."""
    import torch

    from gpu_kernels.measure import nvml_energy

    tol_o, tol_g = tolerances(inp.dtype)
    row = base_row(inp, variant, pas)
    try:
        call, e_o, e_g, _, _ = check_case(inp, variant, pas)
        t0 = time.perf_counter()
        call(1)
        torch.cuda.synchronize()
        one = time.perf_counter() - t0
        idx = [1]

        def step():
            idx[0] += 1
            call(idx[0])

        res = nvml_energy.measure(step, torch.cuda.synchronize, counter, seconds, call_seconds=one)
    except Exception as ex:
        torch.cuda.empty_cache()
        return {**row, "status": "error", "note": _msg(ex)}
    ok = e_o <= tol_o and (e_g is None or e_g <= tol_g)
    return {
        **row,
        **{k: res[k] for k in ENERGY_FIELDS if k in res},
        "status": "ok" if ok else "WRONG RESULT",
        "rel_err_o": f"{e_o:.3e}",
        "rel_err_grad": "" if e_g is None else f"{e_g:.3e}",
        "ms_per_call": 1e3 * res["seconds"] / res["calls"],
        "joules_per_call": res["joules"] / res["calls"],
    }


def with_flash_ratios(rows):
    """ratio_to_torch_flash of every timed row: its median over torch_flash's at the same
    (dtype, pass, causal, N, d)."""
    from gpu_kernels.measure.side_by_side import ratios_to_torch_flash

    return ratios_to_torch_flash(rows, ("dtype", "pass", "causal", "seq_len", "head_dim"), name="variant")


def with_idle(rows, idle_watts):
    """joules_per_call_above_idle of every measured row: (E − P_idle·T) / calls."""
    from gpu_kernels.measure.nvml_energy import above_baseline

    for r in rows:  # a row kept from an earlier run (--resume) keeps that run's idle power
        if r.get("calls") and r["variant"] != "idle" and r.get("idle_watts") in (None, ""):
            r["idle_watts"] = idle_watts
            r["joules_per_call_above_idle"] = above_baseline(r, idle_watts)
    return rows


def summary(time_rows, energy_rows):
    """The short table printed last: eager / flash time ratios (d = 64, non-causal) and energy rows."""
    lines = ["variant         dtype pass    N      ms        x flash   (d=64, non-causal)"]
    for r in time_rows:
        if (
            r["head_dim"] == 64
            and not r["causal"]
            and r.get("median_ms")
            and r["seq_len"] in (1024, 4096, 16384)
        ):
            lines.append(
                f"{r['variant']:15s} {r['dtype']:5s} {r['pass']:7s} {r['seq_len']:6d} {float(r['median_ms']):9.3f} "
                f"{r.get('ratio_to_torch_flash', ''):>8s}  ok={r['ok']}"
            )
    lines.append("energy: variant dtype pass N  J/call  W  status")
    for r in energy_rows:
        if r["variant"] != "idle" and r.get("calls"):
            lines.append(
                f"{r['variant']:15s} {r['dtype']:5s} {r['pass']:7s} {r['seq_len']:6d} "
                f"{float(r['joules_per_call']):8.4f} {float(r['watts']):6.0f} {r['status']}"
            )
    return "\n".join(lines)


def _typed(row):
    """A row read back from an earlier run's CSV with the types this script writes (the case's key)."""
    row = dict(row)
    for k in ("batch", "heads", "seq_len", "head_dim", "reps"):
        if row.get(k, "") != "":
            row[k] = int(row[k])
    if "causal" in row:
        row["causal"] = row["causal"] == "True"
    return row


def measured_cases(rows, group, measured):
    """The cases (tuples of the `group` columns) whose every row is `measured(row)`: what a resumed run
    keeps.

    >>> rows = [{"n": 1, "ok": "y"}, {"n": 1, "ok": "y"}, {"n": 2, "ok": "y"}, {"n": 2, "ok": ""}]
    >>> measured_cases(rows, ("n",), lambda r: r["ok"] == "y")
    {(1,)}
    """
    cases = {}
    for r in rows:
        key = tuple(r[k] for k in group)
        cases[key] = cases.get(key, True) and measured(r)
    return {key for key, whole in cases.items() if whole}


TIME_CASE = ("dtype", "causal", "head_dim", "seq_len")
ENERGY_CASE = ("dtype", "pass", "seq_len")


def earlier_run(folder, tag):
    """(time rows, energy rows, provenance of the files) of an earlier run in `folder`, each file read
    through measurements.read (its schema and sidecar checked): the rows of its whole cases only."""
    from measurements.manifest import sha256_of
    from measurements.read import read_rows
    from measurements.schemas import EAGER16, EAGER16_ENERGY

    tpath = os.path.join(folder, f"eager16_{tag}.csv")
    epath = os.path.join(folder, f"eager16_energy_{tag}.csv")
    trows = [_typed(r) for r in read_rows(tpath, EAGER16)]
    erows = [_typed(r) for r in read_rows(epath, EAGER16_ENERGY)]
    tkeep = measured_cases(trows, TIME_CASE, lambda r: bool(r.get("median_ms")))
    measured = [r for r in erows if r["variant"] != "idle"]
    ekeep = measured_cases(measured, ENERGY_CASE, lambda r: bool(r.get("calls")) and r["status"] == "ok")
    from pathlib import Path

    record = {
        "resumed_from": {os.path.basename(p): sha256_of(Path(p)) for p in (tpath, epath)},
        "time_cases_kept": sorted([list(map(str, k)) for k in tkeep]),
        "energy_cases_kept": sorted([list(map(str, k)) for k in ekeep]),
    }
    return (
        [r for r in trows if tuple(r[k] for k in TIME_CASE) in tkeep],
        [r for r in measured if tuple(r[k] for k in ENERGY_CASE) in ekeep],
        record,
    )


def parse_args(argv=None):
    """The arguments, every one checked (the output folder too) before the GPU is asked for: a bad one
    raises gpu_kernels.commands.UsageError (one line naming the flag, exit 2 in `main`)."""
    from gpu_kernels.commands import OneLineParser
    from gpu_kernels.measure.side_by_side import names_of, positive_ints
    from measurements.provenance import check_output_dir
    from simlib.cli_values import float_type, tag_type  # the parser of both CLIs: finite numbers, safe tags

    p = OneLineParser(prog="benchmarks/eager16_h200.py", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--dtypes", type=names_of(DTYPES), default=list(DTYPES))
    p.add_argument("--causal", type=names_of(("no", "yes")), default=["no", "yes"])
    p.add_argument("--seq-lens", type=positive_ints, default=list(SEQ_LENS))
    p.add_argument("--head-dims", type=positive_ints, default=list(HEAD_DIMS))
    p.add_argument("--variants", type=names_of(VARIANTS), default=list(VARIANTS))
    p.add_argument("--energy-seq-lens", type=positive_ints, default=list(ENERGY_SEQ_LENS))
    p.add_argument("--energy-dtypes", type=names_of(DTYPES), default=list(DTYPES))
    p.add_argument(
        "--energy-s",
        type=float_type("--energy-s", above=0),
        default=1.0,
        help="seconds each energy case loops",
    )
    p.add_argument("--idle-s", type=float_type("--idle-s", above=0), default=1.5)
    p.add_argument("--min-reps", type=lambda x: positive_ints(x)[0], default=5)
    p.add_argument("--max-reps", type=lambda x: positive_ints(x)[0], default=25)
    p.add_argument(
        "--time-budget-s",
        type=float_type("--time-budget-s", above=0),
        default=40.0,
        help="start no timing case after this",
    )
    p.add_argument(
        "--budget-s",
        type=float_type("--budget-s", above=0),
        default=95.0,
        help="start no energy case after this",
    )
    p.add_argument("--tag", type=tag_type("--tag"), default="h200")
    p.add_argument(
        "--resume",
        default=None,
        help="folder of an earlier run's eager16_<tag>.csv and eager16_energy_<tag>.csv: keep its whole "
        "cases, run the others",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan and exit (no GPU)")
    a = p.parse_args(argv)
    for name in ("energy_s", "idle_s", "time_budget_s", "budget_s"):
        if not getattr(a, name) > 0:
            p.error(f"--{name.replace('_', '-')}: must be positive, got {getattr(a, name)}")
    if a.min_reps > a.max_reps:
        p.error(f"--min-reps {a.min_reps} exceeds --max-reps {a.max_reps}")
    if a.energy_s < 1.0:
        p.error(f"--energy-s: NVML's counter steps every 20-100 ms; loop at least 1 s, got {a.energy_s}")
    try:
        check_output_dir(a.out)
    except ValueError as e:
        p.error(str(e))
    return a


def main(argv=None):
    """Arguments first (one line, exit 2), then, unless --dry-run, the GPU check (one line, exit 2
    without a GPU), and only then torch and the measurements."""
    from gpu_kernels.commands import UsageError
    from gpu_kernels.device import NoGPU, require_gpu
    from measurements.provenance import csv_text, provenance, write_measurement

    try:
        a = parse_args(argv)
    except UsageError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    kept_time, kept_energy, resumed = [], [], {}
    if a.resume:  # an argument too: checked before the GPU
        try:
            kept_time, kept_energy, resumed = earlier_run(a.resume, a.tag)
        except (OSError, ValueError) as e:  # MeasurementFileError is a ValueError
            sys.stderr.write(f"error: --resume: {str(e).splitlines()[0]}\n")
            return 2
    if not a.dry_run:
        try:
            require_gpu("benchmarks/eager16_h200.py")
        except NoGPU as e:
            sys.stderr.write(f"error: {e}\n")
            return 2
    kept_t: dict[tuple, list[dict]] = {}  # an earlier run's whole time cases, by (dtype, causal, d, N)
    for r in kept_time:
        kept_t.setdefault(tuple(r[k] for k in TIME_CASE), []).append(r)
    kept_e = {tuple(r[k] for k in ENERGY_CASE + ("variant",)): r for r in kept_energy}
    shapes = time_plan(a.dtypes, [c == "yes" for c in a.causal], a.head_dims, a.seq_lens)
    eplan = energy_plan(a.energy_dtypes, a.energy_seq_lens, a.variants)
    if a.dry_run:
        print(f"part 1: {len(shapes)} shapes x {len(a.variants)} variants x {len(PASSES)} passes")
        for dt, c, d, n in shapes:
            kept = " (kept)" if (dt, c, d, n) in kept_t else ""
            print(f"  time   {dt} causal={c} d={d} N={n} B,H={batch_heads(n)}{kept}")
        for dt, pas, n, v in eplan:
            print(f"  energy {dt} {pas} N={n} {v}{' (kept)' if (dt, pas, n, v) in kept_e else ''}")
        return 0
    import torch

    from gpu_kernels.measure import nvml_energy

    def _free_device_memory():
        gc.collect()
        torch.cuda.empty_cache()

    t_start = time.monotonic()
    os.makedirs(a.out, exist_ok=True)
    lines = []

    def log(text):
        print(text, flush=True)
        lines.append(text)

    counter = nvml_energy.NvmlCounter(0)
    mm = torch.backends.cuda.matmul
    record = provenance(
        {
            "what": "16-bit standard attention as practitioners run it (eager matmul/softmax/matmul in the "
            "dtype, HF's fp32-softmax variant, the FA paper's attention_ref) and SDPA flash, time (CUDA "
            "events) and NVML energy, at the 16-bit side by side's shapes",
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            **{
                f"matmul_{k}": getattr(mm, k, None)
                for k in (
                    "allow_tf32",
                    "allow_bf16_reduced_precision_reduction",
                    "allow_fp16_reduced_precision_reduction",
                )
            },
            "nvml_limits": counter.limits(),
            "nvml_state_at_start": counter.state(),
            "timing": f"CUDA events, 1 warm-up group, median of reps groups (~{TARGET_S} s per case)",
            "check": f"float64 reference on the GPU, first and last batch·head; O within {TOL_O_U}u, "
            f"dQ/dK/dV within {TOL_GRAD_U}u",
            "energy": f"NVML total-energy counter, edge-aligned windows of >= {a.energy_s} s",
            "time_budget_s": a.time_budget_s,
            "budget_s": a.budget_s,
        }
    )
    time_rows, energy_rows = [], []
    if a.resume:
        record.update(resumed)
        log(f"resumed from {a.resume}: {len(kept_time)} time rows and {len(kept_energy)} energy rows kept")
    tpath = os.path.join(a.out, f"eager16_{a.tag}.csv")
    epath = os.path.join(a.out, f"eager16_energy_{a.tag}.csv")

    def save(status):
        rec = {**record, "status": status, "elapsed_s": round(time.monotonic() - t_start, 1)}
        write_measurement(tpath, csv_text(with_flash_ratios(time_rows), TIME_FIELDS), rec)
        write_measurement(epath, csv_text(energy_rows, ENERGY_FIELDS), rec)
        with open(os.path.join(a.out, f"eager16_{a.tag}.log"), "w") as f:
            f.write("\n".join(lines) + "\n")

    # part 1: time
    for dtype, causal, d, n in shapes:
        if (dtype, causal, d, n) in kept_t:
            time_rows += kept_t[(dtype, causal, d, n)]
            continue
        if time.monotonic() - t_start > a.time_budget_s:
            b, h = batch_heads(n)
            for v in a.variants:
                for pas in PASSES:
                    time_rows.append(
                        {
                            "variant": v,
                            "implementation": IMPLEMENTATION[v],
                            "dtype": dtype,
                            "pass": pas,
                            "causal": causal,
                            "batch": b,
                            "heads": h,
                            "seq_len": n,
                            "head_dim": d,
                            "reps": 0,
                            "ok": False,
                            "note": f"not run: past --time-budget-s {a.time_budget_s:g}",
                        }
                    )
            continue
        try:
            inp = Inputs(dtype, causal, n, d)
        except Exception as ex:
            log(f"{dtype} causal={causal} d={d} N={n}: inputs failed: {_msg(ex)}")
            _free_device_memory()
            continue
        for v in a.variants:
            for pas in PASSES:
                r = time_case(inp, v, pas, a.min_reps, a.max_reps)
                time_rows.append(r)
                log(
                    f"{dtype} c={causal:d} d={d:3d} N={n:5d} {v:13s} {pas:7s} {r.get('median_ms', '-'):>9s} ms "
                    f"err {r.get('rel_err_o', '-')}/{r.get('rel_err_grad', '-')} ok={r['ok']} "
                    f"alloc {r.get('extra_alloc_bytes', 0) / 1e9:.2f} GB {r.get('note', '')}"
                )
                torch.cuda.empty_cache()
        del inp
        _free_device_memory()
        save("partial")
    log(f"part 1 done at {time.monotonic() - t_start:.1f} s")

    # part 2: energy
    idle = nvml_energy.measure_idle(counter, a.idle_s)
    energy_rows.append(
        {"variant": "idle", **{k: idle[k] for k in ENERGY_FIELDS if k in idle}, "status": "ok"}
    )
    log(f"idle before: {idle['watts']:.1f} W, {idle['temp_c']} C")
    inp, key = None, None
    for dtype, pas, n, v in eplan:
        b, h = batch_heads(n)
        if (dtype, pas, n, v) in kept_e:
            energy_rows.append(kept_e[(dtype, pas, n, v)])
            continue
        if time.monotonic() - t_start > a.budget_s - a.energy_s:
            energy_rows.append(
                {
                    "variant": v,
                    "dtype": dtype,
                    "pass": pas,
                    "causal": False,
                    "batch": b,
                    "heads": h,
                    "seq_len": n,
                    "head_dim": ENERGY_HEAD_DIM,
                    "status": "skipped",
                    "note": f"past --budget-s {a.budget_s:g}",
                }
            )
            continue
        if key != (dtype, n):
            inp = None
            _free_device_memory()
            inp, key = Inputs(dtype, False, n, ENERGY_HEAD_DIM), (dtype, n)
        r = energy_case(inp, v, pas, counter, a.energy_s)
        energy_rows.append(r)
        log(
            f"energy {dtype} {pas:7s} N={n:5d} {v:13s} {r['status']:6s} {r.get('ms_per_call', 0):9.3f} ms "
            f"{r.get('joules_per_call', 0):8.4f} J {r.get('watts') or 0:5.0f} W {r.get('note', '')}"
        )
        torch.cuda.empty_cache()
        save("partial")
    inp = None
    _free_device_memory()
    idle2 = nvml_energy.measure_idle(counter, a.idle_s)
    energy_rows.append(
        {"variant": "idle", **{k: idle2[k] for k in ENERGY_FIELDS if k in idle2}, "status": "ok"}
    )
    log(f"idle after: {idle2['watts']:.1f} W, {idle2['temp_c']} C")
    with_idle(energy_rows, (idle["watts"] + idle2["watts"]) / 2)
    log(f"done at {time.monotonic() - t_start:.1f} s")
    log(summary(time_rows, energy_rows))
    save("complete")
    bad = [r for r in time_rows if r.get("reps") and not r["ok"]]
    bad += [r for r in energy_rows if r.get("status") == "WRONG RESULT"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
