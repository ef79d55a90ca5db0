"""Library implementations as launches: PyTorch's FlashAttention-2, eager 16-bit attention as
practitioners write it, and the fp32 chains (PyTorch's SDPA math backend, cupy).

* ``torch_flash``: PyTorch's vendored FlashAttention-2 forward kernel, its tiles from
  data/fa2_tiles.json (simlib.fa2_tile_rule), 4 warps of 32 query rows; per K/V tile one ldmatrix of
  K and of V per warp, the two products on mma.sync, one exp2 per score; Q, K, V by 16-byte cp.async;
  K/V re-reads by the wave rule. Its split-KV kernel (too few blocks to fill the GPU) is not modelled.
* ``eager_bf16`` (and fp16): the Hugging Face eager attention (``eager_attention_forward``):
  ``softmax(Q Kᵀ · s [+ mask], dtype=float32).to(dtype) @ V`` — two cuBLAS 16-bit GEMMs, a scaling
  multiply, the additive causal mask, softmax to fp32 and a cast back: six 16/32-bit N×N passes.
* ``torch_math`` (fp32, and bf16 which it upcasts): SDPA's math backend as Nsight Compute lists its
  kernels: Q and K scaled, SGEMM, softmax, the NaN guard of ``_safe_softmax`` (S = −inf test, a
  row reduction, a where), SGEMM; bf16 inputs add casts.
* ``cupy_naive`` (fp32): the project's cupy reference: SGEMM, scale, row max, subtract, exp, row
  sum, divide, SGEMM.

Bytes per element are the tensors each launch reads and writes (their dtypes); instructions and the
achieved fraction of the roof come from the launch's calibration class. A GEMM's FLOPs are priced as
a whole GEMM (its operand traffic in L2 and shared memory inside the figure), plus its DRAM bytes.

Worked number (eager bf16, N = 4096, d = 64, B·H = 32): the six N×N passes move 2 (S written) + 4
(scale) + 6 (softmax) + 6 (cast) + 2 (P read) = 20 bytes per score, 10.7 GB:

>>> from simlib import Workload
>>> from simlib.cost.calibration import Calibration
>>> ls = eager_16bit(Workload(4096, 64, batch=2, heads=16, dtype="bf16"), Calibration({}))
>>> [l.name for l in ls], round(sum(l.work.dram_bytes for l in ls) / 1e9, 1)
(['qk_gemm', 'scale', 'softmax', 'cast', 'pv_gemm'], 10.8)
"""

from __future__ import annotations

from ..fa2_tile_rule import kernel_head_dim, kernel_tiles
from ..hardware import load_preset
from ..tiling import ceil_div
from ..workload import Workload
from .calibration import Calibration
from .common import MMA_REGISTER_BYTES, basis, flash_launch, kv_dram, resident_blocks, visited
from .softmax_trips import forward_kernel, softmax_fill
from .work import Launch, Work

#: FlashAttention-2's forward kernels keep S/P and O in registers: (Br·Bc + Br·d)/threads fp32 per
#: thread (192 at d = 64 with 128 × 128 tiles) plus fragments, so ptxas gives them the 255 maximum
#: (an assumption: the register count of PyTorch's build was not read).
FA2_REGISTERS = 255
FA2_WARPS = 4
#: The split-KV heuristic of FlashAttention-2's mha_fwd (flash_api.cpp, num_splits_heuristic): one
#: split once B·H·⌈N_q/64⌉ reaches 80 % of 2 × SMs.
SPLIT_KV_FILL = 0.8


def fa2_layout(
    w: Workload,
    cal: Calibration,
    *,
    name: str,
    klass: str,
    block_rows: int,
    block_cols: int,
    registers: int,
    kernel_head_dim: int,
    q_reload: bool = False,
    inherit: str | None = None,
    kv_stages: int = 1,
    heavy_first: bool = False,
) -> list[Launch]:
    """One launch of a FlashAttention-2-layout forward kernel: 4 warps of Br/4 query rows, K and V
    tiles of Bc rows by 16-byte cp.async, per tile one ldmatrix of K and of V per warp (and of Q when
    it is re-read per tile), the two products on mma.sync, one exp2 per score; K/V re-reads by the wave
    rule. `inherit`: the class whose instructions and wavefronts per score this one takes (the same
    layout), when the kernel was never profiled; `kv_stages` K/V tiles in flight in shared memory (2: a
    ring); `heavy_first`: under a causal mask the blocks launch heaviest first (schedule.causal_cta_work)."""
    hw = load_preset("h200")
    bh, nq, nk = w.batch_heads, w.nq, w.nk
    br, bc, dk = block_rows, block_cols, kernel_head_dim
    threads = 32 * FA2_WARPS
    shared = (br + 2 * kv_stages * bc) * dk * 2
    resident, limit = resident_blocks(threads, registers, shared, hw.sm_count)
    tr = ceil_div(nq, br)
    seen, kv_rows = visited(w, br, bc)
    el = bh * seen
    kv_head = 2 * nk * dk * 2
    wave_q = min(resident, tr * bh) * br * dk * 2
    kv, note = kv_dram(w, tr, resident, kv_head, 2 * wave_q, hw.level("L2").capacity_bytes)
    if w.causal:
        kv = bh * kv_head + (kv - bh * kv_head) * seen / (nq * nk)
    b = basis(el, dk)
    src = inherit or klass
    # Q re-read per tile: one ldmatrix of the warp's 32 rows × d (64·d bytes: d/2 wavefronts) per 32·Bc scores
    q_wavefronts = el * (dk / 2) / (32 * bc) if q_reload else 0.0
    flops = 4.0 * dk * el
    work = Work(
        dram_bytes=float(bh * nq * dk * 2 + kv + bh * nq * (dk * 2 + 4)),
        l2_bytes=float(bh * (2 * nq * dk + 2 * kv_rows * dk) * 2 + bh * nq * 4),
        global_path="cp.async",
        shared_wavefronts=cal.instructions(src + ":wavefronts", b) + q_wavefronts,
        shared_instructions=cal.instructions(src + ":shared_inst", b) + q_wavefronts / 4,
        register_bytes=flops / 4096 * MMA_REGISTER_BYTES,
        tensor_flops=flops,
        ffma=cal.ffma_per_element(src) * el,
        mufu=float(el + bh * tr * br * ceil_div(nk, bc)),
        instructions=cal.instructions(src, b),
    )
    return [
        flash_launch(
            name,
            klass,
            work,
            w,
            tiles=(br, bc),
            threads=threads,
            registers=registers,
            shared_bytes=shared,
            heavy_first=heavy_first,
            detail={"basis": b, "dram": note, "occupancy": f"{resident} blocks ({limit})"},
        )
    ]


def torch_flash(w: Workload, cal: Calibration) -> list[Launch]:
    if w.dtype not in ("fp16", "bf16"):
        raise ValueError(f"torch_flash runs fp16 and bf16 only, got dtype={w.dtype}")
    sms = load_preset("h200").sm_count
    if w.batch_heads * ceil_div(w.nq, 64) < SPLIT_KV_FILL * 2 * sms:
        raise ValueError(
            f"B·H·⌈N_q/64⌉ = {w.batch_heads * ceil_div(w.nq, 64)} < {SPLIT_KV_FILL * 2 * sms:.0f}: FlashAttention-2 "
            "runs its split-KV kernel here, which the model does not cover"
        )
    br, bc = kernel_tiles(w.head_dim, arch="sm90", causal=w.causal)
    dk = kernel_head_dim(w.head_dim) or w.head_dim
    return fa2_layout(
        w,
        cal,
        name="flash_fwd",
        klass=f"torch_flash.d{dk}.br{br}bc{bc}",
        block_rows=br,
        block_cols=bc,
        registers=FA2_REGISTERS,
        kernel_head_dim=dk,
    )


#: The project's fa2_tc version 4 (gpu_kernels/kernels/fa2_tc.py, issue 22): FlashAttention-2's layout,
#: 4 warps of 32 rows; Bc = 64 with Q in registers at d = 64, Bc = 48 with Q re-read per tile at d = 128;
#: 241 / 243 registers per thread (ptxas, the kernel helper's SASS read).
FA2_TC_V4 = {64: (64, False, 241), 128: (48, True, 243)}


def fa2_tc_v4(w: Workload, cal: Calibration) -> list[Launch]:
    if w.dtype not in ("fp16", "bf16") or w.head_dim not in FA2_TC_V4:
        raise ValueError(f"fa2_tc_v4 runs fp16/bf16 at head_dim 64 or 128, got {w.dtype}, d = {w.head_dim}")
    d = w.head_dim
    bc, q_reload, regs = FA2_TC_V4[d]
    dk, br = d, 128
    inherit = {64: "torch_flash.d64.br128bc128", 128: "torch_flash.d128.br128bc64"}[d]
    return fa2_layout(
        w,
        cal,
        name="fa2_tc",
        klass=f"fa2_tc_v4.d{d}.bc{bc}",
        block_rows=br,
        block_cols=bc,
        registers=regs,
        kernel_head_dim=dk,
        q_reload=q_reload,
        inherit=inherit,
    )


#: The project's fa2_tc version 5 (gpu_kernels/kernels/fa2_tc.py; gpu_kernels/tensor_core/PERFORMANCE.md,
#: version 5): version 4's tiles with a two-stage K/V cp.async ring ((Br + 4·Bc)·d·2 bytes of shared
#: memory), and under a causal mask the grid (B·H, Tr) with block (x, y) on Q block Tr − 1 − y, so every
#: head's heaviest block launches first. Registers per thread (ptxas 13.0 -v, PERFORMANCE.md):
#: d = 64 225 (241 causal), d = 128 250 (255 causal). (Bc, Q re-read per tile, registers, causal registers).
FA2_TC_V5 = {64: (64, False, 225, 241), 128: (48, True, 250, 255)}


def fa2_tc_v5(w: Workload, cal: Calibration) -> list[Launch]:
    if w.dtype not in ("fp16", "bf16") or w.head_dim not in FA2_TC_V5:
        raise ValueError(f"fa2_tc_v5 runs fp16/bf16 at head_dim 64 or 128, got {w.dtype}, d = {w.head_dim}")
    d = w.head_dim
    bc, q_reload, regs, regs_causal = FA2_TC_V5[d]
    inherit = {64: "torch_flash.d64.br128bc128", 128: "torch_flash.d128.br128bc64"}[d]
    return fa2_layout(
        w,
        cal,
        name="fa2_tc",
        klass=f"fa2_tc_v5.d{d}.bc{bc}",
        block_rows=128,
        block_cols=bc,
        registers=regs_causal if w.causal else regs,
        kernel_head_dim=d,
        q_reload=q_reload,
        inherit=inherit,
        kv_stages=2,
        heavy_first=True,
    )


def _elementwise(
    name: str,
    klass: str,
    read: float,
    written: float,
    elements: float,
    cal: Calibration,
    mufu: float = 0.0,
    trip_fill: float = 1.0,
    global_path: str = "ld.v4",
    l2_reads: int = 1,
    rows: float = 0.0,
) -> Launch:
    b = {"el": elements / 32}
    work = Work(
        dram_bytes=read + written,
        l2_bytes=l2_reads * read + written,
        global_path=global_path,
        mufu=mufu,
        ffma=cal.ffma_per_element(klass) * elements,
        instructions=cal.instructions(klass, b),
    )
    return Launch(name, klass, work, trip_fill=trip_fill, rows=rows, detail={"basis": b})


def _gemm(
    name: str, klass: str, unit: str, flops: float, dram: float, d: int, elements: float, cal: Calibration
) -> Launch:
    b = basis(elements, d)
    work = Work(
        dram_bytes=dram,
        l2_bytes=dram,
        gemm_flops=flops,
        gemm_unit=unit,
        instructions=cal.instructions(klass, b),
    )
    return Launch(name, klass, work, detail={"basis": b})


def _softmax_class(nk: int) -> str:
    """PyTorch's fp32 forward softmax kernel (softmax_trips.forward_kernel): the warp-per-row kernel up to
    2048 columns, then the row in registers (``cunn_SoftMaxForwardReg``), in shared memory (``..Smem``)
    or re-read from global memory (``cunn_SoftMaxForward``), each its own class (round 6)."""
    return "torch_softmax." + forward_kernel(nk, "fp32")


def _eager_softmax_class(w: Workload) -> str:
    """``softmax(x, dtype=float32)`` of 16-bit scores (aten/src/ATen/native/SoftMax.cpp, ``softmax``):
    fp16 on CUDA takes the fused half-to-float kernel (``_softmax(x, dim, half_to_float=True)``), the
    warp kernel up to 1024 columns and the block kernel above, which (SoftMax.cu, host_softmax's
    half_to_float branch) keeps the row in shared memory (``cunn_SoftMaxForwardSmem``) only when
    ``can_use_smem``: N_k % ILP == 0 (and 16-byte aligned pointers); otherwise ``cunn_SoftMaxForward``
    reads the row from global memory in each of its three passes (max, sum of exp, write), a class of
    its own ("block_global", 3 reads of S through the L2); bf16 is converted to fp32 first
    (``x.toType(float)``, its own elementwise launch) and then runs the fp32 softmax: two kernels,
    timed together as one launch in the calibration run (eager_bf16_h200.csv), a class per fp32 kernel
    (``torch_softmax_to_fp32.warp`` / ``.reg`` / ``.smem`` / ``.block``: round 6)."""
    if w.dtype == "fp16":
        kind = forward_kernel(w.nk, "fp16")
        return "torch_softmax_h2f." + {"warp": "warp", "smem": "block", "block": "block_global"}[kind]
    return "torch_softmax_to_fp32." + forward_kernel(w.nk, "fp32")


#: The fp16 block softmax classes (the half-to-float ``cunn_SoftMaxForwardSmem`` and ``cunn_SoftMaxForward``,
#: N > 1024), priced from round 7 as a fixed cost per row plus a cost per element (the class's eta), both
#: fitted on the committed fp16 rows (fit.fit_h2f_softmax), instead of the fill of their 1024 × 8-element
#: trips (round 6, which left the rows at N = 2048 at 1.31). PyTorch's SoftMax.cu: a row is one block of
#: min(N, 1024) threads, and each of its two reductions (max, sum of exp) ends in ``blockReduce`` (a
#: barrier, the warps' partials through shared memory, thread 0's serial pass over them, a barrier): a cost
#: per row whatever N. The elements go through ``ilpReduce``: a vectorized body over whole ILP·blockDim
#: stretches and a scalar epilogue, one element per thread per iteration, over the rest; below
#: ILP·blockDim = 8192 (fp16) the whole row is epilogue, so a short row's trip costs what its elements do,
#: not what a full trip does (the fill's assumption).
H2F_BLOCK_CLASSES = ("torch_softmax_h2f.block", "torch_softmax_h2f.block_global")


#: The class of PyTorch's non-vectorized elementwise kernel (``elementwise_kernel<128, unroll>``), whose
#: instructions per element and eta Nsight Compute measured on SDPA math's ``where`` (torch_math).
LEGACY_ELEMENTWISE = "torch_ew_legacy"


def _broadcast_mask_add(w: Workload, el: float, cal: Calibration) -> Launch:
    """``attn_weights + causal_mask`` with the mask (1, 1, N_q, N_k): its B and H strides are 0, so the
    TensorIterator is not contiguous and ATen's ``gpu_kernel_impl_nocast`` (aten/src/ATen/native/cuda/
    CUDALoops.cuh) skips ``launch_vectorized_kernel`` for ``launch_legacy_kernel<128, 4>``: per element an
    ``OffsetCalculator::get`` (an integer divmod per collapsed dimension), scalar 2-byte loads of S and
    the mask and a scalar store. The same template runs SDPA math's ``where`` (elementwise_kernel<128, 2>
    in the energy run's profile), whose instructions per element and eta the class takes
    (fit.fit_instructions: ``from``); eta is then refitted on the committed causal eager timings
    (fit.fit_broadcast_mask). Bytes: S read and written, the mask read once per head (L2-resident)."""
    return _elementwise(
        "mask", LEGACY_ELEMENTWISE, 2 * el + 2.0 * w.nq * w.nk, 2 * el, el, cal, global_path="ld"
    )


def eager_16bit(w: Workload, cal: Calibration) -> list[Launch]:
    if w.dtype not in ("fp16", "bf16"):
        raise ValueError(f"eager 16-bit attention runs fp16 or bf16, got dtype={w.dtype}")
    bh, nq, nk, d = w.batch_heads, w.nq, w.nk, w.head_dim
    kvh = w.batch * w.n_kv_heads
    el = float(bh * nq * nk)
    flops = 2.0 * el * d
    out = [
        _gemm(
            "qk_gemm", "cublas16.qk", "gemm16", flops, 2.0 * (bh * nq * d + kvh * nk * d) + 2 * el, d, el, cal
        ),
        _elementwise("scale", "torch_ew", 2 * el, 2 * el, el, cal),
    ]
    if w.causal:  # attn_weights + causal_mask: a (1, 1, N_q, N_k) 16-bit mask, broadcast (L2-resident)
        out.append(_broadcast_mask_add(w, el, cal))
    soft = _eager_softmax_class(w)
    passes = 3 if soft.endswith("block_global") else 1
    per_row = soft in H2F_BLOCK_CLASSES
    out += [
        _elementwise(
            "softmax",
            soft,
            2 * el,
            4 * el,
            el,
            cal,
            mufu=el,
            trip_fill=1.0 if per_row else softmax_fill(nk, "fp16" if w.dtype == "fp16" else "fp32"),
            l2_reads=passes,
            rows=float(bh * nq) if per_row else 0.0,
        ),
        _elementwise("cast", "torch_ew", 4 * el, 2 * el, el, cal),
        _gemm(
            "pv_gemm", "cublas16.pv", "gemm16", flops, 2 * el + 2.0 * (kvh * nk * d + bh * nq * d), d, el, cal
        ),
    ]
    return out


def torch_math(w: Workload, cal: Calibration) -> list[Launch]:
    """SDPA's math backend: fp32 inside for fp32 and (upcast) bf16/fp16 inputs."""
    bh, nq, nk, d = w.batch_heads, w.nq, w.nk, w.head_dim
    el, nd, kd = float(bh * nq * nk), float(bh * nq * d), float(bh * nk * d)
    flops = 2.0 * el * d
    out = []
    if w.dtype != "fp32":  # Q, K, V upcast to fp32
        out += [
            _elementwise(f"upcast_{t}", "torch_cast_small", 2 * n, 4 * n, n, cal)
            for t, n in (("q", nd), ("k", kd), ("v", kd))
        ]
    out += [
        _elementwise("scale_q", "torch_ew_small", 4 * nd, 4 * nd, nd, cal),
        _elementwise("scale_k", "torch_ew_small", 4 * kd, 4 * kd, kd, cal),
        _gemm("qk_sgemm", "sgemm.qk", "sgemm", flops, 4 * (nd + kd) + 4 * el, d, el, cal),
    ]
    if w.causal:  # the boolean mask applied to S (masked_fill): read S and the mask, write S
        out.append(_elementwise("mask", "torch_where", 4 * el + 1.0 * nq * nk, 4 * el, el, cal))
    out += [
        _elementwise(
            "softmax", _softmax_class(nk), 4 * el, 4 * el, el, cal, mufu=el, trip_fill=softmax_fill(nk)
        ),
        _elementwise("isneginf", "torch_ew", 4 * el, 1 * el, el, cal),
        _elementwise("all_rows", "torch_all", 1 * el, 0.0, el, cal),
        _elementwise("where", "torch_where", 4 * el, 4 * el, el, cal),
    ]
    if w.dtype != "fp32":
        out.append(_elementwise("downcast_p", "torch_ew", 4 * el, 2 * el, el, cal))
    out.append(_gemm("pv_sgemm", "sgemm.pv", "sgemm", flops, 4 * el + 4 * (kd + nd), d, el, cal))
    if w.dtype != "fp32":
        out.append(_elementwise("downcast_o", "torch_cast_small", 4 * nd, 2 * nd, nd, cal))
    return out


def cupy_naive(w: Workload, cal: Calibration) -> list[Launch]:
    """gpu_kernels.measure's cupy reference in fp32 (TF32 off)."""
    if w.dtype != "fp32":
        raise ValueError(f"cupy_naive is modelled in fp32 (its fp32 energy-run variant), got dtype={w.dtype}")
    bh, nq, nk, d = w.batch_heads, w.nq, w.nk, w.head_dim
    el, nd, kd = float(bh * nq * nk), float(bh * nq * d), float(bh * nk * d)
    flops = 2.0 * el * d
    reduce = "cupy_reduce.segmented" if nk <= 4096 else "cupy_reduce.cub"
    return [
        _elementwise("copy_k", "cupy_copy", 4 * kd, 4 * kd, kd, cal),
        _gemm("qk_sgemm", "sgemm.qk_cupy", "sgemm", flops, 4 * (nd + kd) + 4 * el, d, el, cal),
        _elementwise("scale", "cupy_ew", 4 * el, 4 * el, el, cal),
        _elementwise("row_max", reduce, 4 * el, 0.0, el, cal),
        _elementwise("subtract", "cupy_ew", 4 * el, 4 * el, el, cal),
        _elementwise("exp", "cupy_ew", 4 * el, 4 * el, el, cal, mufu=el),
        _elementwise("row_sum", reduce, 4 * el, 0.0, el, cal),
        _elementwise("divide", "cupy_ew", 4 * el, 4 * el, el, cal),
        _gemm("pv_sgemm", "sgemm.pv", "sgemm", flops, 4 * el + 4 * (kd + nd), d, el, cal),
    ]
