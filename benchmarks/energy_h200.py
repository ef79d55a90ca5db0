"""Energy on the H200 from NVML: the per-level calibration and the attention kernels, in one run.

Usage on the device (one call, about 3 minutes):

    python3 benchmarks/energy_h200.py --out $OUT [--budget-s 200]

Part 1, calibration (``energy_calibration_h200.csv``, one row per micro-benchmark and repeat): each
looped for ``--calib-s`` seconds between two steps of the energy counter
(``gpu_kernels.measure.nvml_energy``), ``--repeats`` times, in this order per repeat:

    idle       nothing running (the board's floor)
    static     a nanosleep kernel on every SM: clocks up, almost no work (the model's static power)
    hbm_copy   cupy device-to-device copy of 2 GiB: bytes read + written
    l2_read    a 16 MiB fp32 buffer (≪ 60 MiB L2) re-read 256 times per launch, each pass by a block
               131 blocks away (another SM, so L1 cannot serve it); one FADD per 4 B loaded
    smem_read  every thread re-reads 16 shared-memory words per trip (conflict-free, the address
               changes per trip so nothing is hoisted); one FADD per 4 B loaded
    smem_read_v4  the same 64 bytes per thread per trip as 4 ld.shared.v4.f32 (LDS.128); one FADD
               per 4 B loaded: a quarter of the load instructions for the same bytes
    fp32_fma   gpu_kernels.measure.ceilings' FFMA-chain kernel (2 FLOP per FFMA)
    tc_mma     a register-only mma.sync m16n8k16 bf16 loop (gpu_kernels.tensor_core.warp_ops), 4
               independent accumulators per warp, 4096 FLOP per mma
    tc_matmul  torch bf16 matmul 8192³ (2·n³ FLOP): the tensor cores with their operand traffic
    fp32_matmul  the same in fp32 with TF32 off (a cuBLAS SGEMM): the FP32 units with their operand
               traffic, the analogue of tc_matmul for the fp32 GEMMs of torch math and cupy

``simlib.energy.calibrate`` turns these rows into pJ per byte and per FLOP (the one derivation).

Part 2, attention (``energy_attention_h200.csv``): every kernel the project times, d = 64, at
N ∈ {1024, 4096, 16384} with B·H = 128, 32, 16 (H = 16), forward, and forward + backward for the
torch backends: checked first (output poisoned, sampled rows against gpu_kernels.reference's
float64 attention), then looped for ``--kernel-s`` seconds between counter steps. Inputs rotate
over sets that together exceed twice the L2. Order: N = 4096 first, then 16384, the backward
passes, then 1024, so a run cut short by ``--budget-s`` keeps what the claim needs. naive_tc is also
measured one launch at a time (``naive_tc_scores``, ``naive_tc_softmax``, ``naive_tc_pv``: a checked
full call first, then only that launch looped on the S and P it left), so the model can be checked
per launch.

``--benches``, ``--variants`` pick a subset (idle is always measured); ``--tag`` names the files
(energy_calibration_<tag>.csv, energy_attention_<tag>.csv; default h200).

Each file is rewritten with its provenance sidecar after every row (measurements.provenance).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from measurements.schemas import ENERGY_ATTENTION, ENERGY_CALIBRATION  # noqa: E402

CALIB_FIELDS = list(ENERGY_CALIBRATION.columns)  # measurements.schemas: one definition for writer and reader
ATTN_FIELDS = list(ENERGY_ATTENTION.columns)
HEADS, HEAD_DIM = 16, 64
BATCH_HEADS = {1024: 128, 4096: 32, 16384: 16}
BF16_TOL, FP32_TOL = 2e-2, 1e-4


def shape_of(n, batch_heads=None):
    """(batch, heads, N) of the energy run at N (B·H from BATCH_HEADS, H = 16), or with `batch_heads`
    instead (a multiple of 16; the counters run profiles some N at a smaller B·H)."""
    bh = BATCH_HEADS[n] if batch_heads is None else batch_heads
    if bh % HEADS:
        raise ValueError(f"batch_heads={bh}: must be a multiple of the {HEADS} heads")
    return bh // HEADS, HEADS, n


def only(rows, fields):
    """Each row cut to the CSV's columns (blank where absent)."""
    return [{k: r.get(k, "") for k in fields} for r in rows]


# --- calibration kernels ----------------------------------------------------------------------------


def spin_kernel():
    from numba import cuda, uint32

    @cuda.jit
    def spin(out, trips):
        for _ in range(trips):
            cuda.nanosleep(uint32(1000))
        if cuda.grid(1) == 0:
            out[0] = trips

    return spin


def l2_read_kernel():
    """The rotating L2 re-read probe of benchmarks/h200_diagnostics.py (pass p: thread g reads what
    thread g + p·131·256 read in pass 0, so another SM's L1 never serves it). Run energy-h200 ran
    commit 7aed8a5, whose copy of this kernel differed only in being compiled with fastmath."""
    from benchmarks.h200_diagnostics import _reread_rotating_kernel

    return _reread_rotating_kernel()


SMEM_WORDS, SMEM_THREADS = 16, 256
SMEM_ELEMS = 4096  # SMEM_WORDS · SMEM_THREADS: a literal, as cuda.shared.array needs


def smem_read_kernel():
    """Each trip: 16 conflict-free 4-byte shared loads per thread at lane t ^ (trip mod 32)."""
    from numba import cuda, float32, int32

    @cuda.jit(fastmath=True)
    def smem_read(out, trips):
        sm = cuda.shared.array(SMEM_ELEMS, float32)
        t = cuda.threadIdx.x
        for j in range(SMEM_WORDS):
            sm[j * SMEM_THREADS + t] = float32(t + j) * float32(1e-6)
        cuda.syncthreads()
        acc = cuda.local.array(SMEM_WORDS, float32)
        for j in range(SMEM_WORDS):
            acc[j] = float32(0)
        lane_base = t & int32(~31)
        for it in range(trips):
            x = lane_base + ((t ^ it) & int32(31))
            for j in range(SMEM_WORDS):
                acc[j] += sm[j * SMEM_THREADS + x]
        s = float32(0)
        for j in range(SMEM_WORDS):
            s += acc[j]
        out[cuda.grid(1)] = s

    return smem_read


SMEM_VECTORS = SMEM_WORDS // 4  # 16-byte loads per thread per trip: the same 64 bytes as smem_read


def shared_load_v4():
    """ld.shared.v4.f32 through inline PTX: (smem, idx) -> the four floats at smem[idx : idx + 4]
    (idx a multiple of 4), one LDS.128 whatever ptxas would have made of four scalar loads."""
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    f32, i64 = ir.FloatType(), ir.IntType(64)

    @intrinsic
    def ld_v4(typingctx, smem, idx):
        ret = types.UniTuple(types.float32, 4)

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            addr = builder.ptrtoint(builder.gep(data, [args[1]]), i64)
            fnty = ir.FunctionType(ir.LiteralStructType([f32] * 4), [i64])
            asm = ir.InlineAsm(
                fnty,
                "{ .reg .u64 sa; cvta.to.shared.u64 sa, $4; ld.shared.v4.f32 {$0,$1,$2,$3}, [sa]; }",
                "=f,=f,=f,=f,l,~{memory}",
                side_effect=True,
            )
            out = builder.call(asm, [addr])
            return context.make_tuple(builder, ret, [builder.extract_value(out, i) for i in range(4)])

        return ret(smem, idx), codegen

    return ld_v4


def smem_read_v4_kernel():
    """Each trip: 4 conflict-free 16-byte shared loads per thread (a warp's 32 loads cover 512
    contiguous bytes: 4 wavefronts, the minimum) at vector t ^ (trip mod 32) of its warp's row; one
    FADD per 4 B, as smem_read. Against smem_read it moves the same bytes with a quarter of the
    load instructions: the difference of the two figures is the per-instruction share."""
    from numba import cuda, float32, int32

    ld_v4 = shared_load_v4()

    @cuda.jit(fastmath=True)
    def smem_read_v4(out, trips):
        sm = cuda.shared.array(SMEM_ELEMS, float32)
        t = cuda.threadIdx.x
        for j in range(SMEM_WORDS):
            sm[j * SMEM_THREADS + t] = float32(t + j) * float32(1e-6)
        cuda.syncthreads()
        acc = cuda.local.array(SMEM_WORDS, float32)
        for j in range(SMEM_WORDS):
            acc[j] = float32(0)
        lane_base = t & int32(~31)
        for it in range(trips):
            x = lane_base + ((t ^ it) & int32(31))
            for j in range(SMEM_VECTORS):
                a0, a1, a2, a3 = ld_v4(sm, (j * SMEM_THREADS + x) * 4)
                acc[4 * j] += a0
                acc[4 * j + 1] += a1
                acc[4 * j + 2] += a2
                acc[4 * j + 3] += a3
        s = float32(0)
        for j in range(SMEM_WORDS):
            s += acc[j]
        out[cuda.grid(1)] = s

    return smem_read_v4


MMA_CHAINS = 4


def mma_kernel():
    """A register-only bf16 mma.sync loop: 4 independent accumulator tiles per warp."""
    from numba import cuda, float32, uint32

    from gpu_kernels.tensor_core.warp_ops import warp_ops

    mma = warp_ops("bf16", False).mma

    @cuda.jit
    def mma_loop(out, trips):
        lane = cuda.threadIdx.x
        a = uint32(0x3F803F80 + lane)  # bf16 pairs near 1.0
        b = uint32(0x3C003C00 + lane)
        z = float32(0)
        c0, c1, c2, c3, d0, d1, d2, d3 = z, z, z, z, z, z, z, z
        e0, e1, e2, e3, f0, f1, f2, f3 = z, z, z, z, z, z, z, z
        for _ in range(trips):  # MMA_CHAINS = 4 independent accumulator tiles
            c0, c1, c2, c3 = mma(a, a, a, a, b, b, c0, c1, c2, c3)
            d0, d1, d2, d3 = mma(a, a, a, a, b, b, d0, d1, d2, d3)
            e0, e1, e2, e3 = mma(a, a, a, a, b, b, e0, e1, e2, e3)
            f0, f1, f2, f3 = mma(a, a, a, a, b, b, f0, f1, f2, f3)
        out[cuda.grid(1)] = c0 + c1 + c2 + c3 + d0 + d1 + d2 + d3 + e0 + e1 + e2 + e3 + f0 + f1 + f2 + f3

    return mma_loop


def calibration_benches(sms):
    """(name, unit, units per call, call, note) for every micro-benchmark; buffers made here."""
    import cupy as cp
    import torch
    from numba import cuda

    from benchmarks.h200_diagnostics import ROTATE_BLOCKS
    from gpu_kernels.measure.ceilings import _ffma_kernel

    benches = []
    out = cuda.device_array(sms * 64 * 256, dtype=np.float32)
    spin = spin_kernel()
    benches.append(
        (
            "static",
            "launches",
            1,
            lambda: spin[sms * 8, 256](out, 2000),
            f"nanosleep(1000 ns) x 2000 per thread, {sms * 8}x256 threads",
        )
    )
    nbytes = 2 * 1024**3
    a = cp.random.standard_normal(nbytes // 4, dtype=cp.float32)
    b = cp.empty_like(a)

    def copy():
        b[...] = a

    benches.append(("hbm_copy", "bytes", 2 * nbytes, copy, "cupy copy of 2 GiB, bytes read + written"))
    l2_elems = 16 * 2**20 // 4
    x = cuda.to_device(np.random.default_rng(1).standard_normal(l2_elems).astype(np.float32))
    l2k, l2_passes, l2_grid = l2_read_kernel(), 256, sms * 8
    benches.append(
        (
            "l2_read",
            "bytes",
            l2_passes * l2_elems * 4,
            lambda: l2k[l2_grid, 256](x, out, l2_passes),
            f"16 MiB fp32 re-read {l2_passes}x per launch, reader rotated {ROTATE_BLOCKS} blocks per pass,"
            " one FADD per 4 B",
        )
    )
    smk, sm_trips, sm_grid = smem_read_kernel(), 4096, sms * 8
    benches.append(
        (
            "smem_read",
            "bytes",
            sm_grid * SMEM_THREADS * sm_trips * SMEM_WORDS * 4,
            lambda: smk[sm_grid, SMEM_THREADS](out, sm_trips),
            f"{SMEM_WORDS} conflict-free LDS.32 per thread per trip, {sm_trips} trips, "
            f"{sm_grid}x{SMEM_THREADS} threads, one FADD per 4 B",
        )
    )
    smk4 = smem_read_v4_kernel()
    benches.append(
        (
            "smem_read_v4",
            "bytes",
            sm_grid * SMEM_THREADS * sm_trips * SMEM_WORDS * 4,
            lambda: smk4[sm_grid, SMEM_THREADS](out, sm_trips),
            f"{SMEM_VECTORS} conflict-free ld.shared.v4.f32 (LDS.128) per thread per trip, {sm_trips} trips, "
            f"{sm_grid}x{SMEM_THREADS} threads, one FADD per 4 B",
        )
    )
    ffma, f_trips, f_grid = _ffma_kernel(), 256, sms * 16
    benches.append(
        (
            "fp32_fma",
            "flop",
            2 * 64 * f_trips * 256 * f_grid,
            lambda: ffma[f_grid, 256](out, f_trips),
            f"ceilings FFMA chains, {64 * f_trips} FFMA per thread, {f_grid}x256 threads",
        )
    )
    try:
        mk, m_trips, m_grid = mma_kernel(), 2048, sms * 4
        benches.append(
            (
                "tc_mma",
                "flop",
                4096 * MMA_CHAINS * m_trips * 4 * m_grid,
                lambda: mk[m_grid, 128](out, m_trips),
                f"mma.sync m16n8k16 bf16, {MMA_CHAINS} chains x {m_trips} trips per warp, "
                f"{m_grid}x128 threads",
            )
        )
    except Exception as e:  # D's intrinsics not usable here: recorded in the log, the rest goes on
        print(f"tc_mma unavailable: {type(e).__name__}: {e}", flush=True)
    n = 8192
    ma = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    mb = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    mc = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    benches.append(
        (
            "tc_matmul",
            "flop",
            2 * n**3,
            lambda: torch.matmul(ma, mb, out=mc),
            "torch bf16 matmul 8192^3 on random data",
        )
    )
    torch.backends.cuda.matmul.allow_tf32 = False  # an SGEMM on the FP32 units, as torch math runs it
    fa, fb = ma.float(), mb.float()
    fc = torch.empty_like(fa)
    benches.append(
        (
            "fp32_matmul",
            "flop",
            2 * n**3,
            lambda: torch.matmul(fa, fb, out=fc),
            "torch fp32 matmul 8192^3 on random data, TF32 off (cuBLAS SGEMM)",
        )
    )
    return benches, (a, b, x, out, ma, mb, mc, fa, fb, fc)


# --- attention variants -----------------------------------------------------------------------------


def torch_sets(shape, dtype, count, grad=False):
    import torch

    def one():
        return [
            torch.randn(*shape, HEAD_DIM, device="cuda", dtype=torch.float32).to(dtype).requires_grad_(grad)
            for _ in range(3)
        ]

    return [one() for _ in range(count)]


def sampled_error(o, q, k, v, rng):
    """‖O − ref‖/‖ref‖ on 48 sampled rows of the first and the last batch·head, float64 reference on
    the inputs as the kernel saw them (already rounded to its dtype)."""
    from gpu_kernels.reference import attention_reference

    def host(t):
        return t.detach().float().cpu().numpy() if hasattr(t, "detach") else np.asarray(t.get(), np.float32)

    b, h, n, _ = q.shape
    rows = np.unique(np.concatenate(([0, n - 1], rng.choice(n, size=min(n, 48), replace=False))))
    num = den = 0.0
    for bi, hi in sorted({(0, 0), (b - 1, h - 1)}):
        ref, _ = attention_reference(
            host(q[bi, hi])[rows][None, None], host(k[bi, hi])[None, None], host(v[bi, hi])[None, None]
        )
        got = host(o[bi, hi])[rows].astype(np.float64)
        num += float(np.sum((got - ref[0, 0]) ** 2))
        den += float(np.sum(ref[0, 0] ** 2))
    return math.sqrt(num / den) if np.isfinite(num) else math.inf


def torch_variant(backend_name, dtype_name, shape, backward):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]
    backend = getattr(SDPBackend, backend_name)
    sets = torch_sets(shape, dtype, 3, grad=backward)
    dout = torch.randn(*shape, HEAD_DIM, device="cuda", dtype=torch.float32).to(dtype)
    state = {}

    def call(i):
        q, k, v = sets[i % len(sets)]
        with sdpa_kernel([backend]):
            o = F.scaled_dot_product_attention(q, k, v)
            if backward:
                torch.autograd.grad(o, (q, k, v), dout)
        state["o"] = o

    def check():
        call(0)
        torch.cuda.synchronize()
        return state["o"], sets[0]

    return call, check, {"backend": backend_name, "torch": torch.__version__, "allow_tf32": False}


def fa2_tc_variant(shape):
    import torch

    from gpu_kernels.counting import new_counters
    from gpu_kernels.kernels.fa2_tc import Fa2TcPlan, TcConfig
    from gpu_kernels.measure.side_by_side import bits_view

    batch, heads, n = shape
    sets = torch_sets(shape, torch.bfloat16, 3)
    cfg = TcConfig(HEAD_DIM).check()
    plan = Fa2TcPlan((batch, heads, heads, n, n, HEAD_DIM), cfg, "bf16")
    o = torch.full((*shape, HEAD_DIM), float("nan"), device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(*shape, device="cuda", dtype=torch.float32)
    counters = new_counters()
    views = [[bits_view(t) for t in s] for s in sets]
    ov, lv = bits_view(o), bits_view(lse)

    def call(i):
        plan.launch(*views[i % len(views)], ov, lv, counters)

    def check():
        call(0)
        torch.cuda.synchronize()
        return o, sets[0]

    return call, check, {"block_rows": cfg.block_rows, "block_cols": getattr(cfg, "block_cols", None)}


def naive_tc_variant(shape, parts=None):
    """gpu_kernels' naive_tc in bf16 (its default tiles): S and P through HBM, three launches; with
    ``parts`` (names of NaiveTcPlan's launches) only those are timed, after a checked full call has
    left S and P in place."""
    import torch

    from gpu_kernels.counting import new_counters
    from gpu_kernels.kernels.naive_tc import LAUNCHES, NaiveTcConfig, NaiveTcPlan, row_stride
    from gpu_kernels.measure.side_by_side import bits_view

    batch, heads, n = shape
    bh = batch * heads
    sets = torch_sets(shape, torch.bfloat16, 3)
    cfg = NaiveTcConfig(HEAD_DIM).check()
    plan = NaiveTcPlan((batch, heads, heads, n, n, HEAD_DIM), cfg, "bf16")
    o = torch.full((*shape, HEAD_DIM), float("nan"), device="cuda", dtype=torch.bfloat16)
    sp = [torch.empty(bh * n * row_stride(n), device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    counters = new_counters()
    views = [[bits_view(t) for t in s] for s in sets]
    ov, s_view, p_view = bits_view(o), bits_view(sp[0]), bits_view(sp[1])

    def call(i, launched=parts or LAUNCHES):
        plan.launch(*views[i % len(views)], s_view, p_view, ov, (counters,) * 3, launched)

    def check():
        call(0, LAUNCHES)
        torch.cuda.synchronize()
        return o, sets[0]

    params = {"warps": cfg.warps, "block_cols": cfg.block_cols, "softmax_threads": plan.softmax_threads}
    if parts:
        params["launches"] = "+".join(parts)
    return call, check, params, sp


def numba_variant(name, shape, rng):
    """gpu_kernels.measure.variants' runner on a Case (fp32, its own float64 check)."""
    from gpu_kernels.device import l2_bytes
    from gpu_kernels.measure.cases import Case
    from gpu_kernels.measure.variants import make
    from simlib import Workload

    batch, heads, n = shape
    w = Workload(seq_len=n, head_dim=HEAD_DIM, batch=batch, heads=heads, dtype="fp32")
    case = Case(w, l2_bytes(), rng)
    variant = make(name, case)

    def call(i):
        variant.call(i % case.n_sets)

    def check():
        from numba import cuda

        case.poison()
        variant.call(0)
        cuda.synchronize()
        o, lse = variant.output(0)
        res = case.check(o, lse)
        return res["rel_err_o"] if res["finite"] else math.inf

    return call, check, dict(variant.params), (case, variant)


def attention_plan(seq_lens, with_tc):
    """(variant, dtype, pass, N) in the order they run (see the module docstring)."""
    fwd = [
        ("torch_math", "bf16"),
        ("torch_flash", "bf16"),
        ("torch_efficient", "bf16"),
        ("torch_cudnn", "bf16"),
        ("torch_math", "fp32"),
        ("torch_efficient", "fp32"),
        ("numba_naive", "fp32"),
        ("numba_tiled", "fp32"),
        ("numba_fast", "fp32"),
        ("cupy_naive", "fp32"),
    ]
    if with_tc:
        fwd[4:4] = [("fa2_tc", "bf16"), ("naive_tc", "bf16"), *((v, "bf16") for v in NAIVE_TC_PARTS)]
    bwd = [
        ("torch_math", "bf16"),
        ("torch_flash", "bf16"),
        ("torch_cudnn", "bf16"),
        ("torch_math", "fp32"),
        ("torch_efficient", "fp32"),
    ]
    order = [n for n in (4096, 16384, 1024) if n in seq_lens]
    plan = [(v, dt, "fwd", n) for n in order[:2] for v, dt in fwd]
    plan += [(v, dt, "fwd_bwd", n) for n in order[:2] for v, dt in bwd]
    plan += [(v, dt, "fwd", n) for n in order[2:] for v, dt in fwd]
    plan += [(v, dt, "fwd_bwd", n) for n in order[2:] for v, dt in bwd]
    return plan


#: naive_tc's launches measured one at a time (variant name -> NaiveTcPlan launch), to say which
#: of the three the energy model misses.
NAIVE_TC_PARTS = {"naive_tc_scores": "scores", "naive_tc_softmax": "softmax", "naive_tc_pv": "pv"}
TORCH_BACKENDS = {
    "torch_math": "MATH",
    "torch_flash": "FLASH_ATTENTION",
    "torch_efficient": "EFFICIENT_ATTENTION",
    "torch_cudnn": "CUDNN_ATTENTION",
}


def prepare(variant, dtype, pas, shape, rng):
    """(call(i), sync, rel_err, params, keep) of one (variant, dtype, pass) at `shape` = (B, H, N):
    built, and checked once against the float64 reference (output poisoned first); `keep` holds
    buffers the launches use that `call` itself does not reference."""
    import torch

    keep = None
    if variant in TORCH_BACKENDS:
        call, check, params = torch_variant(TORCH_BACKENDS[variant], dtype, shape, pas == "fwd_bwd")
    elif variant == "fa2_tc":
        call, check, params = fa2_tc_variant(shape)
    elif variant == "naive_tc" or variant in NAIVE_TC_PARTS:
        part = NAIVE_TC_PARTS.get(variant)
        call, check, params, keep = naive_tc_variant(shape, (part,) if part else None)
    else:
        call, check, params, keep = numba_variant(variant, shape, rng)
    if variant in TORCH_BACKENDS or variant in ("fa2_tc", "naive_tc", *NAIVE_TC_PARTS):
        o, (q, k, v) = check()
        err = sampled_error(o, q, k, v, rng)
        del o, q, k, v
        sync = torch.cuda.synchronize
    else:
        from numba import cuda

        err = check()
        sync = cuda.synchronize
    return call, sync, err, params, keep


def run_one(variant, dtype, pas, n, counter, seconds, rng) -> dict:
    """Check, then measure one (variant, dtype, pass, N); every buffer dies when this returns."""
    from gpu_kernels.measure import nvml_energy as energy

    call, sync, err, params, _keep = prepare(variant, dtype, pas, shape_of(n), rng)
    t0 = time.perf_counter()
    call(1)
    sync()
    one = time.perf_counter() - t0
    idx = [0]

    def step():
        idx[0] += 1
        call(idx[0])

    res = energy.measure(step, sync, counter, seconds, call_seconds=one)
    tol = BF16_TOL if dtype == "bf16" else FP32_TOL
    return {
        **res,
        "status": "ok" if err <= tol else "WRONG RESULT",
        "rel_err": err,
        "ms_per_call": 1e3 * res["seconds"] / res["calls"],
        "joules_per_call": res["joules"] / res["calls"],
        "params": ";".join(f"{a}={b}" for a, b in params.items()),
    }


def run_attention(counter, plan, seconds, rng, deadline, save, rows):
    from gpu_kernels.measure.timing import _free_device_memory

    for variant, dtype, pas, n in plan:
        row = {
            "variant": variant,
            "dtype": dtype,
            "pass": pas,
            "batch": shape_of(n)[0],
            "heads": HEADS,
            "seq_len": n,
            "head_dim": HEAD_DIM,
        }
        left = deadline - time.monotonic()
        if left < seconds + 3:
            row.update(status="skipped", note=f"time budget: {left:.0f} s left")
        else:
            try:
                row.update(run_one(variant, dtype, pas, n, counter, seconds, rng))
            except Exception as e:  # one variant's failure (unsupported dtype, OOM) must not lose the rest
                text = str(e).splitlines()[0][:200] if str(e) else ""
                row.update(status="error", note=f"{type(e).__name__}: {text}")
            _free_device_memory()
        rows.append({k: row.get(k, "") for k in ATTN_FIELDS})
        if row["status"] != "skipped":
            print(
                f"{variant:16s} {dtype} {pas:7s} N={n:6d} {row['status']:6s} {row.get('ms_per_call', 0):9.3f} ms "
                f"{row.get('joules_per_call', 0):9.4f} J {row.get('watts') or 0:6.0f} W err {row.get('rel_err', '')} "
                f"{row.get('note', '')}",
                flush=True,
            )
        save()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--calib-s", type=float, default=3.0)
    p.add_argument("--kernel-s", type=float, default=1.2)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--budget-s", type=float, default=200.0)
    p.add_argument("--seq-lens", default="1024,4096,16384")
    p.add_argument("--benches", default="", help="calibration benchmarks to run (default all; idle always)")
    p.add_argument("--variants", default="", help="attention variants to run (default all)")
    p.add_argument(
        "--tag", default="h200", help="files energy_calibration_<tag>.csv, energy_attention_<tag>.csv"
    )
    args = p.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9_-]+", args.tag):
        p.error(f"--tag: expected letters, digits, '_' or '-', got {args.tag!r}")
    wanted_benches = {b for b in args.benches.split(",") if b}
    wanted_variants = {v for v in args.variants.split(",") if v}
    from measurements.provenance import check_output_dir, csv_text, provenance, write_measurement

    check_output_dir(args.out)
    seq_lens = [int(s) for s in args.seq_lens.split(",")]
    deadline = time.monotonic() + args.budget_s
    from numba import cuda

    from gpu_kernels.device import silence_performance_warning
    from gpu_kernels.measure import nvml_energy as energy

    silence_performance_warning()
    counter = energy.NvmlCounter(0)
    sms = int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    meta = {
        "what": "NVML total-energy counter (nvmlDeviceGetTotalEnergyConsumption), edge-aligned windows "
        "(gpu_kernels.measure.nvml_energy); board energy, idle not subtracted in the raw rows",
        "limits": counter.limits(),
        "state_at_start": counter.state(),
        "calib_s": args.calib_s,
        "kernel_s": args.kernel_s,
        "repeats": args.repeats,
        "budget_s": args.budget_s,
    }
    try:
        import pynvml
        import torch

        meta.update(
            torch=torch.__version__,
            torch_cuda=torch.version.cuda,
            nvml_driver=pynvml.nvmlSystemGetDriverVersion(),
        )
    except Exception:
        pass
    record = provenance(meta)
    calib_path = os.path.join(args.out, f"energy_calibration_{args.tag}.csv")
    attn_path = os.path.join(args.out, f"energy_attention_{args.tag}.csv")
    calib_rows, attn_rows = [], []

    def save_calib():
        write_measurement(calib_path, csv_text(only(calib_rows, CALIB_FIELDS), CALIB_FIELDS), record)

    def save_attn():
        write_measurement(attn_path, csv_text(only(attn_rows, ATTN_FIELDS), ATTN_FIELDS), record)

    benches, keep = calibration_benches(sms)
    unknown = wanted_benches - {b[0] for b in benches}
    if unknown:
        p.error(f"--benches: unknown {', '.join(sorted(unknown))}")
    benches = [b for b in benches if not wanted_benches or b[0] in wanted_benches]
    import torch

    def sync_all():
        cuda.synchronize()
        torch.cuda.synchronize()

    usable = []
    for bench in benches:  # compile and warm up every kernel once; one that fails is dropped
        try:
            bench[3]()
            cuda.synchronize()
            torch.cuda.synchronize()
            usable.append(bench)
        except Exception as e:
            print(f"{bench[0]} failed to run: {type(e).__name__}: {str(e)[:300]}", flush=True)
    benches = usable
    for rep in range(args.repeats):
        res = energy.measure_idle(counter, args.calib_s)
        calib_rows.append({"bench": "idle", "repeat": rep, "units": 0, "unit": "", **res, "note": "sleep"})
        print(
            f"idle      rep {rep}: {res['watts']:7.1f} W  SM {res['sm_mhz']} MHz  {res['temp_c']} C",
            flush=True,
        )
        for name, unit, units, call, note in benches:
            t0 = time.perf_counter()
            call()
            sync_all()
            one = time.perf_counter() - t0
            try:
                res = energy.measure(call, sync_all, counter, args.calib_s, call_seconds=one)
            except Exception as e:
                print(f"{name} rep {rep} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            rate = units * res["calls"] / res["seconds"]
            calib_rows.append(
                {
                    "bench": name,
                    "repeat": rep,
                    "units": units * res["calls"],
                    "unit": unit,
                    **res,
                    "rate_per_s": rate,
                    "note": note,
                }
            )
            print(
                f"{name:9s} rep {rep}: {res['watts']:7.1f} W  {rate:.3e} {unit}/s  SM {res['sm_mhz']} MHz "
                f"{res['temp_c']} C  steps {res['steps_seen']}",
                flush=True,
            )
            save_calib()
    calib_rows = [{k: r.get(k, "") for k in CALIB_FIELDS} for r in calib_rows]
    save_calib()
    del keep, benches
    from gpu_kernels.measure.timing import _free_device_memory

    _free_device_memory()
    with_tc = True
    try:
        import gpu_kernels.kernels.fa2_tc  # noqa: F401
    except Exception as e:
        with_tc = False
        print(f"fa2_tc unavailable: {e}", flush=True)
    rng = np.random.default_rng(2026)
    try:
        plan = [
            x for x in attention_plan(seq_lens, with_tc) if not wanted_variants or x[0] in wanted_variants
        ]
        run_attention(counter, plan, args.kernel_s, rng, deadline, save_attn, attn_rows)
    except Exception:
        traceback.print_exc()
    idle = energy.measure_idle(counter, args.calib_s)
    calib_rows.append(
        {
            k: v
            for k, v in {
                "bench": "idle",
                "repeat": args.repeats,
                "units": 0,
                "unit": "",
                **idle,
                "note": "sleep, after the attention runs",
            }.items()
            if k in CALIB_FIELDS
        }
    )
    save_calib()
    print(f"idle at the end: {idle['watts']:.1f} W, {idle['temp_c']} C", flush=True)


if __name__ == "__main__":
    main()
