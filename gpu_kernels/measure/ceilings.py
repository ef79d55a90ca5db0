"""The card's own ceilings, measured in the same run as the kernels they are set against.

* fp32 FFMA rate: a numba kernel of 16 independent FFMA chains per thread (2 FLOP per FFMA);
* tensor-core rate: a register-only loop of ``mma.sync.m16n8k16`` in bf16 or fp16 with fp32
  accumulation (``tensor_core.mma_loop``: 8 independent chains per warp, 4096 FLOP per mma);
* cuBLAS SGEMM with TF32 off (torch.matmul), the library's fp32 rate, for reference;
* device-to-device copy bandwidth (cupy, bytes read + written).

Each time is then set against two floors: FLOPs / FFMA rate and compulsory bytes / copy bandwidth
(``floors``). Worked number: B = 1, H = 16, N = 16384, d = 64 is 4·16384²·64·16 = 1.10 TFLOP, 16.4 ms at
67 TFLOP/s; its compulsory 269.5 MB take 0.064 ms at 4200 GB/s:

>>> from simlib import Workload
>>> f = floors(Workload(16384, 64, heads=16, dtype="fp32"), {"tflops": 67.0}, {"gbps": 4200.0})
>>> round(f["floor_compute_ms"], 1), round(f["floor_memory_ms"], 3)
(16.4, 0.064)
"""

from __future__ import annotations

import numpy as np

from simlib.bounds import compulsory_bytes


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
    return {
        "tflops": flops / float(np.median(times)) / 1e12,
        "method": "numba FFMA-chain kernel, "
        f"{blocks}x{threads} threads, 16 chains, {64 * trips} FFMA per thread, median of {reps}",
        "ptx_fma_f32": ptx.count("fma.rn.ftz.f32") if isinstance(ptx, str) else None,
        "ptx_f64": ptx.count(".f64") if isinstance(ptx, str) else None,
    }


def measure_mma_peak(dtype="bf16", trips=4096, reps=7) -> dict:
    """mma.sync m16n8k16 rate (dtype in, fp32 accumulate) of a register-only loop, and the check
    that the loop computed CHAINS·trips·(A·B) for the fragments it was given (A = B = 1/64:
    every product sums 16 terms of 1/4096, so every output is exactly CHAINS·trips/256)."""
    from numba import cuda

    from ..tensor_core.mma_loop import CHAINS, MMA_FLOP, fragments, mma_loop_kernel

    sms = int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    threads, blocks = 256, sms * 8
    a, b = fragments(np.full((16, 16), 1 / 64), np.full((16, 8), 1 / 64), dtype)
    da, db = cuda.to_device(a), cuda.to_device(b)
    out = cuda.device_array(threads * blocks * 4, dtype=np.float32)
    k = mma_loop_kernel(dtype, False)
    k[blocks, threads](da, db, out, 4)  # compile + warm-up
    cuda.synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = cuda.event(), cuda.event()
        e0.record()
        k[blocks, threads](da, db, out, trips)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    got = out.copy_to_host()
    expect = CHAINS * trips / 256
    mmas = CHAINS * trips * blocks * threads // 32
    try:
        ptx = k.inspect_asm(next(iter(k.overloads)))
    except Exception as e:  # keep the measured rate; say why the PTX counts are missing
        ptx = f"(no PTX: {type(e).__name__})"
    return {
        "tflops": mmas * MMA_FLOP / float(np.median(times)) / 1e12,
        "dtype": dtype,
        "correct": bool(np.all(got == expect)),
        "expected_output": expect,
        "method": f"numba mma.sync.m16n8k16 {dtype}->f32 register loop, {blocks}x{threads} threads, "
        f"{CHAINS} chains x {trips} trips per warp, median of {reps}",
        "ptx_mma": ptx.count("mma.sync.aligned.m16n8k16"),
        "ptx_f64": ptx.count(".f64"),
        "ptx_local": ptx.count("ld.local") + ptx.count("st.local"),
    }


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
    return {
        "tflops": 2 * n**3 / float(np.median(times)) / 1e12,
        "method": f"torch.matmul {n}^3 fp32, allow_tf32=False, median of {reps}",
    }


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
    return {
        "gbps": 2 * nbytes / float(np.median(times)) / 1e9,
        "method": f"cupy device-to-device copy of {nbytes / 2**30:.0f} GiB, bytes read + written, median of {reps}",
    }


def floors(workload, peak: dict, bandwidth: dict | None) -> dict:
    """Compute and memory floors of one fp32 forward pass in ms: its matmul FLOPs at the FFMA rate,
    and its compulsory bytes (simlib.bounds: Q, K, V read, O written once; plus L, fp32, written
    once) at the copy bandwidth."""
    moved = compulsory_bytes(workload) + workload.batch_heads * workload.nq * 4
    return {
        "floor_compute_ms": workload.flops / (peak["tflops"] * 1e12) * 1e3,
        "floor_memory_ms": moved / (bandwidth["gbps"] * 1e9) * 1e3 if bandwidth else None,
    }
