"""Measure the cost model's implementations at shapes chosen after the model was frozen (one device call).

    python3 benchmarks/cost_validate_h200.py --out $OUT --shapes "3,12,1536,64,0;2,10,3000,128,0;..." \\
        [--seconds 1.1] [--budget-s 220]

Each shape is ``B,H,N,d,causal``. For every implementation the cost model predicts (data/cost/
predictions_after_freeze.csv lists them), in fp32 (numba naive, tiled, fast; torch SDPA math; cupy)
and bf16 (numba naive_tc, fa2_tc; torch SDPA flash and math; eager bf16 attention): the output is
poisoned, one call is checked against a float64 reference of the first and the last head (torch
SDPA in double, causal as the call), then the call is repeated for ``--seconds`` between two steps
of NVML's energy counter (gpu_kernels.measure.nvml_energy) on rotating input sets that exceed twice
the L2. ``cost_validate_h200.csv`` has energy_attention_h200.csv's columns plus ``causal``;
ms_per_call is the NVML window's wall time per call (from the step before the loop to the step after it:
it includes the wait for that step, up to one update period), loop_ms_per_call (round 8 on) the loop's
own time per call (to its last synchronisation), gpu_ms_per_call one call's time alone on the GPU (every
row from round 7 on; calls under 2 ms only in round 6), host_ms_per_call (round 8 on, calls under 2 ms)
the host's time to issue one call with the GPU kept busy (`host_time_ms`). The last lines are a short
table.

The host's time per call (round 7 of the cost model, simlib.cost.host): before the kernels, every
implementation with a dispatch class (simlib.cost.host.DISPATCH: torch SDPA, a numba plan launch) is
looped the same way at each head dim and mask of the plan on a tiny shape whose GPU work is negligible
(B = H = 1, N = ``--host-probe-n``, default 128: one Q block, one K/V tile), and recorded as a row with
``pass`` = ``host_probe``: its ms_per_call is that run's host figure for the implementation, which the
cost model's check takes as the call's floor (max(predicted GPU time, host figure)).

Round 8: the probe's figure is its host_ms_per_call, the host's time per call with the GPU kept busy (a
spin kernel queued first, the calls issued behind it and timed on the host clock: the plan, its
arguments and the launch path of the kernels' own loop, no wait for the GPU and no idle GPU between
the calls, no NVML tail), and the kernels' measured time is their loop's own (loop_ms_per_call).
Round 7's probes (0.3 s loops in 0.4 s windows, 123 W: the GPU idle between the calls) overstated
the numba plan's host time against the kernels' 0.7 s loops in 0.8 s windows.

Round 10: a numba plan launch's host time moves within one process (round 8 and 9: the run's probe and
the call's own host time up to 2x apart, in both directions), so every call with a dispatch class also
gets the probe's host time (host_time_ms of the same implementation at B = H = 1, N = ``--host-probe-n``)
just before and just after its own loop: probe_host_before_ms and probe_host_after_ms, which the cost
model's check takes for the host figure of that call (their mean, simlib.cost.check.adjacent_host_ms).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.energy_h200 import ATTN_FIELDS  # noqa: E402  (the energy run's columns)

FIELDS = [
    *ATTN_FIELDS[: ATTN_FIELDS.index("head_dim") + 1],
    "causal",
    *ATTN_FIELDS[ATTN_FIELDS.index("head_dim") + 1 :],
    "gpu_ms_per_call",  # round 6 on: one call's GPU time alone (gpu_time_ms), calls under 2 ms
    "loop_ms_per_call",  # round 8 on: the loop's own time per call (nvml_energy.measure's loop_seconds)
    "host_ms_per_call",  # round 8 on: the host's time per call with the GPU kept busy (host_time_ms)
    "probe_host_before_ms",  # round 10 on: the host probe's host_time_ms just before the call's loop
    "probe_host_after_ms",  # round 10 on: ... and just after it (calls with a dispatch class only)
]
FP32 = ("numba_naive", "numba_tiled", "numba_fast", "torch_math", "cupy_naive")
BF16 = ("naive_tc", "fa2_tc", "torch_flash", "torch_math", "eager_bf16")
NO_CAUSAL = ("numba_fast", "cupy_naive")
TOL = {"fp32": 1e-4, "bf16": 2e-2, "fp16": 2e-2}
#: --variants name:dtype pairs beyond the first round's: fa2_tc version 4 (single K/V buffers, Q blocks in
#: launch order) and version 5 (gpu_kernels' default build: the K/V ring, causal blocks heaviest first), and
#: the 16-bit eager baseline in fp16, and fa3_tc (the wgmma kernel, its default build).
EXTRA = ("fa2_tc_v4:bf16", "fa2_tc_v5:bf16", "eager_bf16:fp16", "fa3_tc:bf16")
#: fa2_tc version 4 rebuilt from version 5's code (benchmarks/fa2_tc_speed.py's "v4-single")
V4 = dict(kv_stages=1, heavy_first=False)


def parse_shapes(text):
    out = []
    for part in text.split(";"):
        b, h, n, d, c = (int(x) for x in part.split(","))
        out.append((b, h, n, d, bool(c)))
    return out


class Inputs:
    """Rotating (Q, K, V) sets of one shape and dtype, and the float64 reference of two heads."""

    def __init__(self, b, h, n, d, causal, dtype, torch, count=None):
        import torch.nn.functional as F

        self.b, self.h, self.n, self.d, self.causal = b, h, n, d, causal
        tdt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        per_set = 3 * b * h * n * d * (4 if dtype == "fp32" else 2)
        count = count or max(2, -(-2 * 62914560 // per_set))
        self.sets = [[torch.randn(b, h, n, d, device="cuda").to(tdt) for _ in range(3)] for _ in range(count)]
        q, k, v = (x.reshape(b * h, n, d) for x in self.sets[0])
        self.heads = [0, b * h - 1]
        self.ref = [
            F.scaled_dot_product_attention(
                q[i].double()[None], k[i].double()[None], v[i].double()[None], is_causal=causal
            )[0]
            for i in self.heads
        ]

    def err(self, o, torch):
        o = o.reshape(self.b * self.h, self.n, self.d)
        num = sum(float(torch.linalg.norm(o[i].double() - r)) ** 2 for i, r in zip(self.heads, self.ref))
        den = sum(float(torch.linalg.norm(r)) ** 2 for r in self.ref)
        return math.sqrt(num / den) if math.isfinite(num) else math.inf


def eager_call(inp, torch):
    """The Hugging Face eager attention: softmax(QKᵀ·s + mask, dtype=float32).to(dtype) @ V."""
    scale = 1 / math.sqrt(inp.d)
    mask = None
    if inp.causal:
        mask = torch.triu(torch.full((inp.n, inp.n), float("-inf"), device="cuda"), 1).to(
            inp.sets[0][0].dtype
        )[None, None]

    def call(i):
        q, k, v = inp.sets[i % len(inp.sets)]
        s = torch.matmul(q, k.transpose(-2, -1)) * scale
        if mask is not None:
            s = s + mask
        p = torch.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        return torch.matmul(p, v)

    mask_kind = f"additive (1,1,N,N) {inp.sets[0][0].dtype}" if inp.causal else "none"
    return call, {"softmax_dtype": "float32", "mask": mask_kind}


def sdpa_call(inp, backend_name, torch):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, backend_name)
    torch.backends.cuda.matmul.allow_tf32 = False

    def call(i):
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(*inp.sets[i % len(inp.sets)], is_causal=inp.causal)

    return call, {"backend": backend_name, "torch": torch.__version__, "allow_tf32": False}


def tc_call(inp, name, torch):
    from gpu_kernels.counting import new_counters
    from gpu_kernels.kernels.fa2_tc import Fa2TcPlan, TcConfig, default_config
    from gpu_kernels.kernels.naive_tc import NaiveTcConfig, NaiveTcPlan, row_stride
    from gpu_kernels.measure.side_by_side import bits_view

    b, h, n, d = inp.b, inp.h, inp.n, inp.d
    shape = (b, h, h, n, n, d)
    views = [[bits_view(x) for x in s] for s in inp.sets]
    out = torch.full((b, h, n, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(b, h, n, device="cuda", dtype=torch.float32)
    ov, lv = bits_view(out), bits_view(lse)
    counters = new_counters()
    if name == "fa3_tc":
        from gpu_kernels.kernels.fa3_tc import Fa3TcPlan
        from gpu_kernels.kernels.fa3_tc import default_config as fa3_default

        cfg = fa3_default(d)
        plan = Fa3TcPlan.of(shape, cfg, "bf16", causal=inp.causal)

        def call(i):
            plan.launch(*views[i % len(views)], ov, lv, counters)
            return out

        return call, {"config": cfg.name, "block_rows": cfg.block_rows, "block_cols": cfg.block_cols}, (lse,)
    if name in ("fa2_tc", "fa2_tc_v4", "fa2_tc_v5"):
        # fa2_tc: version 3's layout (4 warps of 16 rows, Bc = 64, Q in registers), the build the cost
        # model's fa2_tc describes and run cost-validate-20261202 measured (commit 20d920b);
        # fa2_tc_v4: version 4 (issue 22); fa2_tc_v5: gpu_kernels' default build (version 5, kernel3)
        if name == "fa2_tc":
            cfg = TcConfig(d, 4, 64, 16, True).check()
        elif name == "fa2_tc_v4":
            cfg = dataclasses.replace(default_config(d), **V4).check()
        else:
            cfg = default_config(d)
        plan = Fa2TcPlan.of(shape, cfg, "bf16", causal=inp.causal)

        def call(i):
            plan.launch(*views[i % len(views)], ov, lv, counters)
            return out

        return call, {"block_rows": cfg.block_rows, "block_cols": cfg.block_cols}, (lse,)
    cfg = NaiveTcConfig(d).check()
    plan = NaiveTcPlan.of(shape, cfg, "bf16", causal=inp.causal)
    sp = [torch.empty(b * h * n * row_stride(n), device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    s, p = (bits_view(x) for x in sp)

    def call(i):
        plan.launch(*views[i % len(views)], s, p, ov, (counters,) * 3)
        return out

    return (
        call,
        {"warps": cfg.warps, "block_cols": cfg.block_cols, "softmax_threads": plan.softmax_threads},
        (sp, lse),
    )


def numba_call(inp, name, torch):
    from numba import cuda

    from gpu_kernels.checks import resolve_naive_params
    from simlib import Workload
    from simlib.kernel_layout import tiled_default_blocks

    b, h, n, d = inp.b, inp.h, inp.n, inp.d
    w = Workload(n, d, batch=b, heads=h, dtype="fp32", causal=inp.causal)
    out = torch.full((b, h, n, d), float("nan"), device="cuda", dtype=torch.float32)
    lse = torch.empty(b, h, n, device="cuda", dtype=torch.float32)
    dummy = cuda.to_device(__import__("numpy").zeros(4, dtype="int64"))
    nb = [[cuda.as_cuda_array(x.reshape(b * h, n, d)) for x in s] for s in inp.sets]
    o3, l2 = cuda.as_cuda_array(out.reshape(b * h, n, d)), cuda.as_cuda_array(lse.reshape(b * h, n))
    if name == "numba_naive":
        from gpu_kernels.kernels.naive import NaivePlan

        t_mm, t_sm = resolve_naive_params(w)
        plan = NaivePlan(workload=w, matmul_tile=t_mm, softmax_threads=t_sm)
        sbuf = cuda.device_array((b * h, n, n), dtype="float32")
        pbuf = cuda.device_array((b * h, n, n), dtype="float32")

        def call(i):
            plan.launch(*nb[i % len(nb)], sbuf, pbuf, o3, (dummy, dummy, dummy))
            return out

        return call, {"matmul_tile": t_mm, "softmax_threads": t_sm}, (sbuf, pbuf, lse)
    if name == "numba_tiled":
        from gpu_kernels.kernels.tiled import TiledPlan

        br, bc = tiled_default_blocks(n, d)
        plan = TiledPlan(workload=w, block_rows=br, block_cols=bc)

        def call(i):
            plan.launch(*nb[i % len(nb)], o3, l2, dummy)
            return out

        return call, {"block_rows": br, "block_cols": bc}, (lse,)
    from gpu_kernels.kernels.fast import fast_plan
    from gpu_kernels.measure.variants import fast_params

    plan = fast_plan(w, None)
    flat = [[cuda.as_cuda_array(x.reshape(-1)) for x in s] for s in inp.sets]
    of, lf = cuda.as_cuda_array(out.reshape(-1)), cuda.as_cuda_array(lse.reshape(-1))

    def call(i):
        plan.launch(*flat[i % len(flat)], of, lf, dummy)
        return out

    return call, fast_params(plan.config), (lse,)


def cupy_call(inp, torch):
    import cupy as cp

    from gpu_kernels.measure.variants import cupy_naive_attention

    b, h, n, d = inp.b, inp.h, inp.n, inp.d
    sets = [[cp.from_dlpack(x) for x in s] for s in inp.sets]
    out = torch.full((b, h, n, d), float("nan"), device="cuda", dtype=torch.float32)
    o = cp.from_dlpack(out)
    s = cp.empty((b, h, n, n), dtype=cp.float32)

    def call(i):
        cupy_naive_attention(*sets[i % len(sets)], o, s, 1 / math.sqrt(d))
        return out

    return call, {"tf32": False}, (s,)


def build(name, dtype, inp, torch):
    keep = ()
    if name == "eager_bf16":
        call, params = eager_call(inp, torch)
    elif name == "torch_math":
        call, params = sdpa_call(inp, "MATH", torch)
    elif name == "torch_flash":
        call, params = sdpa_call(inp, "FLASH_ATTENTION", torch)
    elif name in ("fa2_tc", "fa2_tc_v4", "fa2_tc_v5", "fa3_tc", "naive_tc"):
        call, params, keep = tc_call(inp, name, torch)
    elif name == "cupy_naive":
        call, params, keep = cupy_call(inp, torch)
    else:
        call, params, keep = numba_call(inp, name, torch)
    return call, params, keep


def sync_all(torch):
    from numba import cuda

    cuda.synchronize()
    torch.cuda.synchronize()


#: Every call gets its GPU time alone (gpu_time_ms): GPU_REPS repetitions below this, GPU_REPS_LONG above
#: (round 6 timed only the calls below it).
GPU_TIMED_BELOW_S = 2e-3
GPU_REPS, GPU_REPS_LONG = 15, 3
#: The host probe's shape (B = H = 1) and its input sets (rotated as the kernels' are).
HOST_PROBE_SETS = 8
#: host_time_ms: calls issued behind one spin kernel, and repetitions (the median is kept).
HOST_CALLS, HOST_REPS = 50, 5
#: torch.cuda._sleep counts SM clock cycles: the spin's length at the H200's 1980 MHz (longer at lower clocks)
SPIN_HZ = 1.98e9


def gpu_time_ms(call, torch, reps=GPU_REPS):
    """The median GPU time of one call without the host's gaps: a spin kernel (torch.cuda._sleep, about
    1 ms) queued first, so the call is already enqueued when the GPU reaches it; CUDA events around it.
    Every launch here goes to the legacy default stream (numba's and torch's), so they serialise."""
    times = []
    for i in range(reps):
        sync_all(torch)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)
        start.record()
        call(i)
        end.record()
        sync_all(torch)
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def host_time_ms(call, torch, calls=HOST_CALLS, reps=HOST_REPS):
    """The host's time to issue one call while the GPU is busy (round 8): a spin kernel (torch.cuda._sleep)
    queued first, long enough to outlast the issue of `calls` calls (twice a rough figure from 5 calls,
    plus 2 ms), then the calls issued and timed on the host clock; they queue behind the spin, so the host
    never waits for the GPU and no launch arrives at an idle GPU. The median of `reps`, in ms. Every launch
    here goes to the legacy default stream (numba's and torch's): the calls queue behind the spin."""
    sync_all(torch)
    t0 = time.perf_counter()
    for i in range(5):
        call(i)
    rough = (time.perf_counter() - t0) / 5
    sync_all(torch)
    times = []
    for r in range(reps):
        torch.cuda._sleep(int((2 * calls * rough + 2e-3) * SPIN_HZ))
        t0 = time.perf_counter()
        for i in range(calls):
            call(r * calls + i)
        times.append((time.perf_counter() - t0) / calls)
        sync_all(torch)
    return 1e3 * sorted(times)[len(times) // 2]


def adjacent_probe(probe_call, torch, notes, when):
    """The host probe's host_time_ms (ms) taken next to a call's loop (round 10), or "" without a probe;
    a failure is noted, not raised (a figure beside the row's must not lose the row)."""
    if probe_call is None:
        return ""
    try:
        return host_time_ms(probe_call, torch)
    except Exception as e:
        notes.append(f"probe {when}: {type(e).__name__}: {str(e)[:80]}")
        return ""


def measure_one(name, dtype, inp, counter, seconds, torch, probe_call=None):
    """One implementation at one shape: checked against float64, then looped for `seconds` between two
    steps of NVML's counter, then its GPU time alone. With `probe_call` (round 10: the host probe's call of
    the same implementation, B = H = 1) its host time with the GPU kept busy is taken just before and just
    after the loop (probe_host_before_ms, probe_host_after_ms)."""
    from gpu_kernels.measure import nvml_energy as energy

    call, params, _keep = build(name, dtype, inp, torch)
    o = call(0)
    sync_all(torch)
    err = inp.err(o, torch)
    del o
    t0 = time.perf_counter()
    call(1)
    sync_all(torch)
    one = time.perf_counter() - t0
    idx = [0]

    def step():
        idx[0] += 1
        call(idx[0])

    notes: list[str] = []
    before = adjacent_probe(probe_call, torch, notes, "before")
    res = energy.measure(step, lambda: sync_all(torch), counter, seconds, call_seconds=one)
    after = adjacent_probe(probe_call, torch, notes, "after")
    gpu_ms = gpu_time_ms(call, torch, GPU_REPS if one < GPU_TIMED_BELOW_S else GPU_REPS_LONG)
    host_ms = ""
    if one < GPU_TIMED_BELOW_S:
        try:  # a figure beside the row's: its failure must not lose the row
            host_ms = host_time_ms(call, torch)
        except Exception as e:
            notes.append(f"host_time_ms: {type(e).__name__}: {str(e)[:120]}")
    return {
        **res,
        "gpu_ms_per_call": gpu_ms,
        "loop_ms_per_call": 1e3 * res["loop_seconds"] / res["calls"],
        "host_ms_per_call": host_ms,
        "probe_host_before_ms": before,
        "probe_host_after_ms": after,
        "status": "ok" if err <= TOL[dtype] else "WRONG RESULT",
        "rel_err": err,
        "ms_per_call": 1e3 * res["seconds"] / res["calls"],
        "joules_per_call": res["joules"] / res["calls"],
        "params": ";".join(f"{k}={v}" for k, v in params.items()),
        "note": "; ".join(notes),
    }


def build_plan(shapes, variants=""):
    """The (shape, dtype, name) triples to measure, in order: `variants` ('name:dtype,...') or the first
    round's bf16 and fp32 sets; causal shapes skip the implementations without a causal mask. ValueError
    names --variants for an unknown pair (before any device work)."""
    if variants:
        pairs = [tuple(x.split(":")) for x in variants.split(",")]
        known = (
            {(n, "bf16") for n in BF16} | {(n, "fp32") for n in FP32} | {tuple(e.split(":")) for e in EXTRA}
        )
        bad = [":".join(p) for p in pairs if p not in known]
        if bad:
            raise ValueError(f"--variants: unknown name:dtype {', '.join(bad)}")
        plan = [(s, dt, name) for s in shapes for name, dt in pairs]
    else:
        plan = [
            (s, dt, name) for s in shapes for dt, names in (("bf16", BF16), ("fp32", FP32)) for name in names
        ]
    return [(s, dt, name) for s, dt, name in plan if not (s[4] and name in NO_CAUSAL)]


def host_probe_plan(plan, n):
    """The host probes of a plan: (shape, dtype, name) at B = H = 1, N = n, once per implementation with a
    dispatch class (simlib.cost.host.DISPATCH), head dim and mask of the plan, in the plan's order."""
    from simlib.cost.host import DISPATCH

    seen = {}
    for (_b, _h, _n, d, causal), dtype, name in plan:
        if name in DISPATCH:
            seen.setdefault((name, dtype, d, causal), None)
    return [((1, 1, n, d, causal), dtype, name) for name, dtype, d, causal in seen]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--shapes", required=True, help="B,H,N,d,causal;... (causal 0 or 1)")
    p.add_argument("--seconds", type=float, default=1.1)
    p.add_argument("--budget-s", type=float, default=220.0)
    p.add_argument(
        "--variants",
        default="",
        help="name:dtype,... to measure (default: the first round's bf16 and fp32 sets); also "
        + ", ".join(EXTRA),
    )
    p.add_argument("--file", default="cost_validate_h200.csv", help="name of the CSV under --out")
    p.add_argument(
        "--host-probe-n",
        type=int,
        default=128,
        help="N of the host probes (B = H = 1), looped before the kernels; 0: none (rounds 1-6)",
    )
    p.add_argument("--host-probe-seconds", type=float, default=0.3, help="each host probe's loop")
    p.add_argument(
        "--plan", action="store_true", help="print the plan (one line per measurement) and exit: no GPU"
    )
    args = p.parse_args(argv)
    shapes = parse_shapes(args.shapes)
    try:
        plan = build_plan(shapes, args.variants)
    except ValueError as e:
        p.error(str(e))
    if args.host_probe_n < 0:
        p.error(f"--host-probe-n must be 0 or positive, got {args.host_probe_n}")
    probes = host_probe_plan(plan, args.host_probe_n) if args.host_probe_n else []
    steps = [("host_probe", *x) for x in probes] + [("fwd", *x) for x in plan]
    if args.plan:
        for kind, (b, h, n, d, causal), dtype, name in steps:
            print(f"{kind:10s} {name:12s} {dtype} B={b} H={h} N={n:5d} d={d:3d} causal={int(causal)}")
        loops = len(plan) * args.seconds + len(probes) * args.host_probe_seconds
        print(f"{len(plan)} measurements and {len(probes)} host probes, at least {loops:.0f} s of loops")
        return
    deadline = time.monotonic() + args.budget_s
    import torch

    from gpu_kernels.device import silence_performance_warning
    from gpu_kernels.measure import nvml_energy as energy
    from measurements.provenance import check_output_dir, csv_text, provenance, write_measurement
    from simlib.cost.host import DISPATCH

    check_output_dir(args.out)
    os.makedirs(args.out, exist_ok=True)
    silence_performance_warning()
    counter = energy.NvmlCounter(0)
    record = provenance(
        {
            "what": "time and NVML board energy per call of the cost model's implementations at shapes chosen after "
            "the model was frozen (benchmarks/cost_validate_h200.py); idle not subtracted",
            "shapes": args.shapes,
            "limits": counter.limits(),
            "state_at_start": counter.state(),
            "seconds": args.seconds,
            "torch": torch.__version__,
        }
    )
    path = os.path.join(args.out, args.file)
    rows = []
    if args.variants:
        record["variants"] = args.variants
    if probes:
        record["host_probe"] = (
            f"B = H = 1, N = {args.host_probe_n}, {HOST_PROBE_SETS} input sets, {args.host_probe_seconds} s loops, "
            "before the kernels (rows with pass = host_probe); round 10 on also just before and just after each "
            "dispatched call's loop (probe_host_before_ms, probe_host_after_ms: host_time_ms of that probe's call)"
        )
    current = {}
    adjacent = {}  # (name, dtype, d, causal) -> (inputs, the host probe's call, buffers it keeps)
    for kind, (b, h, n, d, causal), dtype, name in steps:
        probe = kind == "host_probe"
        row = {
            "variant": name,
            "dtype": dtype,
            "pass": kind,
            "batch": b,
            "heads": h,
            "seq_len": n,
            "head_dim": d,
            "causal": causal,
        }
        left = deadline - time.monotonic()
        if left < args.seconds + 8:
            row.update(status="skipped", note=f"time budget: {left:.0f} s left")
        else:
            try:
                key = (b, h, n, d, causal, dtype)
                if current.get("key") != key:
                    current.clear()
                    torch.cuda.empty_cache()
                    count = HOST_PROBE_SETS if probe else None
                    current.update(key=key, inp=Inputs(b, h, n, d, causal, dtype, torch, count))
                loop_s = args.host_probe_seconds if probe else args.seconds
                probe_call = None
                if not probe and args.host_probe_n and name in DISPATCH:
                    pkey = (name, dtype, d, causal)
                    if pkey not in adjacent:
                        pn = args.host_probe_n
                        pin = Inputs(1, 1, pn, d, causal, dtype, torch, HOST_PROBE_SETS)
                        adjacent[pkey] = (pin, *build(name, dtype, pin, torch)[::2])
                    probe_call = adjacent[pkey][1]
                row.update(measure_one(name, dtype, current["inp"], counter, loop_s, torch, probe_call))
            except Exception as e:  # one implementation's failure must not lose the rest
                at = traceback.extract_tb(e.__traceback__)[-1]
                row.update(
                    status="error",
                    note=f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''} at {os.path.basename(at.filename)}:{at.lineno}",
                )
            torch.cuda.empty_cache()
        rows.append(row)
        print(
            f"{'probe ' if probe else ''}{name:12s} {dtype} B={b} H={h} N={n:5d} d={d:3d} causal={int(causal)} {row['status']:6s} "
            f"{row.get('ms_per_call', 0):9.3f} ms loop {row.get('loop_ms_per_call', '')} gpu {row.get('gpu_ms_per_call', '')} host {row.get('host_ms_per_call', '')} {row.get('joules_per_call', 0):8.4f} J err {row.get('rel_err', '')} {row.get('note', '')}",
            flush=True,
        )
        write_measurement(path, csv_text([{k: r.get(k, "") for k in FIELDS} for r in rows], FIELDS), record)
    ok = [r for r in rows if r["status"] == "ok"]
    print(
        f"{len([r for r in ok if r['pass'] == 'fwd'])} of {len(plan)} measured ok, "
        f"{len([r for r in ok if r['pass'] == 'host_probe'])} of {len(probes)} host probes"
    )


if __name__ == "__main__":
    main()
