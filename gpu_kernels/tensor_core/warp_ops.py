"""Tensor-core building blocks for numba.cuda: mma.sync, ldmatrix, cp.async, fp32 -> 16-bit packing,
quad reductions. Each has two implementations with the same per-lane semantics:

* on the GPU, an ``@intrinsic`` whose codegen emits one inline-PTX instruction (numba-cuda has no
  wmma/mma API; llvmlite's ``ir.InlineAsm`` reaches any PTX instruction);
* under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, CI), a Python function that reproduces
  the PTX ISA's fragment layout exactly. The simulator runs every CUDA thread as a Python thread, so a
  warp-collective instruction becomes: each lane writes its operands to a per-block shared scratch,
  a barrier, each lane computes its own result registers from its warp's 32 entries, a barrier. The
  simulator has no warp barrier, so the block barrier stands in: every warp of a block must reach
  every collective the same number of times (the kernels here compute whole tiles, so they do).

Registers (PTX ISA, "Warp-level matrix fragments for mma.m16n8k16 with floating point type"):
lane = 4·g + t (g = groupID 0..7, t = threadID_in_group 0..3); a 32-bit register holds two 16-bit
values, the lower column (or k) index in the low half.

    A (16×16, row-major), four registers: a0 = A[g, 2t:2t+2], a1 = A[g+8, 2t:2t+2],
                                           a2 = A[g, 2t+8:2t+10], a3 = A[g+8, 2t+8:2t+10]
    B (16×8, "col"), two registers:        b0 = B[2t:2t+2, g], b1 = B[2t+8:2t+10, g]
    C, D (16×8, fp32), four floats:        c0, c1 = C[g, 2t], C[g, 2t+1]; c2, c3 = C[g+8, 2t], C[g+8, 2t+1]

ldmatrix.sync.aligned.m8n8.x4.shared.b16: lanes 8i..8i+7 give the shared addresses of rows 0..7 of
8×8 matrix i (16 bytes each); lane 4g + t receives in register i the pair (row g, columns 2t, 2t+1)
of matrix i, or with ``.trans`` the pair (rows 2t, 2t+1, column g).

Arrays are uint16 bit patterns (``dtypes``) indexed by element; an ldmatrix row address or a cp.async
destination must be a multiple of 8 elements (16 bytes).

cp.async is the project's one implementation for every element size (``async_copies``): the
tensor-core kernels copy 16-bit tiles with it, the fast fp32 kernel (kernels/fast.py) float tiles.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from numba import cuda, float64  # under the simulator, `cuda` is swapped per kernel launch

from ..simulator import install
from .dtypes import check_dtype, from_bits, to_bits

install()  # one shared scratch per launch, whatever the thread timing (gpu_kernels.simulator)


class WarpOps(NamedTuple):
    mma: object  # (a0..a3, b0, b1, c0..c3) -> (d0..d3): D = A·B + C, fp32 accumulation
    ldsm_x4: object  # (smem, idx) -> 4 registers: four 8×8 matrices
    ldsm_x4_t: object  # the same with .trans
    cp_async16: (
        object  # (smem, sidx, gmem, gidx, nbytes): copy nbytes (0..16, even) of 16, zero-fill the rest
    )
    cp_commit: object  # () close a group of cp.async copies
    cp_wait_all: object  # () wait until all of this thread's groups have landed
    pack2: object  # (lo, hi) fp32 -> one register of two 16-bit values, round to nearest even
    to_f32: object  # (uint16 bits) -> fp32
    quad_max: object  # x -> max over the 4 lanes of my quad (lanes 4g..4g+3: one row of an mma tile)
    quad_sum: object  # x -> sum over my quad, as the butterfly (x + x^1) + (x^2 + x^3)
    warp_max: object  # x -> max over the 32 lanes (butterfly over lane masks 16, 8, 4, 2, 1)
    warp_sum: object  # x -> sum over the 32 lanes, the same butterfly


class AsyncCopies(NamedTuple):
    cp_async16: object  # (smem, sidx, gmem, gidx, nbytes): copy nbytes (0..16) of 16, zero-fill the rest
    cp_async16_full: object  # (smem, sidx, gmem, gidx): all 16 bytes (no src-size operand)
    cp_commit: object  # () close a group of cp.async copies
    cp_wait_all: object  # () wait until all of this thread's groups have landed
    cp_wait1: object  # () wait until at most the newest group is still in flight


def cp_async_asm(shared_address: bool, zero_fill: bool) -> tuple[str, str]:
    """The one spelling of the cp.async instruction: (inline-PTX text, constraints), operands
    $0 = destination, $1 = source, $2 = src-size in bytes (with `zero_fill`). With `shared_address`
    the destination is a 32-bit shared address and the source a global one (``addressed_ops``);
    without, both are generic 64-bit addresses converted inside the asm (``async_copies``).

    >>> cp_async_asm(True, False)
    ('cp.async.cg.shared.global [$0], [$1], 16;', 'r,l,~{memory}')
    """
    size = ", $2" if zero_fill else ""
    extra = ",r" if zero_fill else ""
    if shared_address:
        return f"cp.async.cg.shared.global [$0], [$1], 16{size};", f"r,l{extra},~{{memory}}"
    text = (
        "{ .reg .u64 sa, ga; cvta.to.shared.u64 sa, $0; cvta.to.global.u64 ga, $1; "
        f"cp.async.cg.shared.global [sa], [ga], 16{size}; }}"
    )
    return text, f"l,l{extra},~{{memory}}"


def ldmatrix_asm(shared_address: bool, trans: bool) -> tuple[str, str]:
    """The one spelling of ldmatrix.x4 (with `trans`, ``.trans``): (inline-PTX text, constraints),
    operands $0..$3 = the four result registers, $4 = the shared address of my row. With
    `shared_address` $4 is a 32-bit shared address (``addressed_ops``); without, a generic 64-bit
    address converted inside the asm (``warp_ops``).

    >>> ldmatrix_asm(True, True)
    ('ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {$0,$1,$2,$3}, [$4];', '=r,=r,=r,=r,r,~{memory}')
    """
    instruction = f"ldmatrix.sync.aligned.m8n8.x4{'.trans' if trans else ''}.shared.b16 {{$0,$1,$2,$3}}"
    if shared_address:
        return f"{instruction}, [$4];", "=r,=r,=r,=r,r,~{memory}"
    return f"{{ .reg .u64 sa; cvta.to.shared.u64 sa, $4; {instruction}, [sa]; }}", "=r,=r,=r,=r,l,~{memory}"


def ldmatrix_intrinsic(trans: bool, shared_address: bool, address):
    """The one ldmatrix.x4 intrinsic ``(where, idx) -> 4 registers`` (``ldmatrix_asm``'s text);
    `address(context, builder, signature, args)` gives its operand $4 from the call's two arguments:
    an i64 generic address of element `idx` of the shared array `where` (``warp_ops``), or the i32
    ``base + 2·idx`` (``addressed_ops``, `shared_address`). Its simulator twin is ``warp_ops``' ``_ldsm``.
    """
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    text, constraints = ldmatrix_asm(shared_address, trans)
    i32 = ir.IntType(32)

    @intrinsic
    def ldsm(typingctx, where, idx):
        ret = types.UniTuple(types.uint32, 4)

        def codegen(context, builder, signature, args):
            addr = address(context, builder, signature, args)
            fnty = ir.FunctionType(ir.LiteralStructType([i32] * 4), [addr.type])
            out = builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), [addr])
            return context.make_tuple(builder, ret, [builder.extract_value(out, i) for i in range(4)])

        return ret(where, idx), codegen

    return ldsm


@functools.cache
def async_copies(simulator: bool, element_bytes: int = 2) -> AsyncCopies:
    """cp.async (compute capability ≥ 8.0): 16-byte global→shared copies that bypass registers, for
    arrays of `element_bytes`-byte elements indexed by element (both indices 16-byte aligned). On the
    GPU inline PTX whose every asm clobbers memory, so the compiler moves no shared-memory access
    across it; under the simulator plain Python functions: the copy happens at once (nothing to wait
    for), elements past `nbytes` are zero.

    Worked number: with 4-byte elements one copy moves 4 of them, with 2-byte elements 8."""
    if simulator:
        return _simulated_copies(element_bytes)
    return _copy_intrinsics()


def _simulated_copies(element_bytes: int) -> AsyncCopies:
    per_copy = 16 // element_bytes

    def cp_async16(smem, sidx, gmem, gidx, nbytes):
        for e in range(per_copy):
            smem[sidx + e] = gmem[gidx + e] if element_bytes * e < nbytes else 0

    def cp_async16_full(smem, sidx, gmem, gidx):
        for e in range(per_copy):
            smem[sidx + e] = gmem[gidx + e]

    def nop():
        pass

    return AsyncCopies(cp_async16, cp_async16_full, nop, nop, nop)


@functools.cache
def cp_wait_group(n: int, simulator: bool):
    """A device function: ``cp.async.wait_group n`` (n a compile-time constant: at most n of my
    groups of cp.async copies still in flight; 1 for a double buffer, stages − 1 for a ring). Under
    the simulator the copies land at once: a no-op."""
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 7:
        raise ValueError(f"cp_wait_group: n must be an int in 0..7; got {n!r}")
    if simulator:

        def nop():
            pass

        return cuda.jit(device=True)(nop)
    return _plain_asm(f"cp.async.wait_group {n};")


def _plain_asm(text: str):
    """An intrinsic with no operands and no result: one inline-PTX statement that clobbers memory."""
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def op(typingctx):
        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(ir.VoidType(), [])
            builder.call(ir.InlineAsm(fnty, text, "~{memory}", side_effect=True), [])
            return context.get_dummy_value()

        return types.void(), codegen

    return op


@functools.cache
def _copy_intrinsics() -> AsyncCopies:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    i64 = ir.IntType(64)

    def element_address(context, builder, aryty, ary, idx):
        data = context.make_array(aryty)(context, builder, ary).data
        return builder.ptrtoint(builder.gep(data, [idx]), i64)

    def copy(zero_fill):
        text, constraints = cp_async_asm(False, zero_fill)

        def codegen(context, builder, signature, args):
            sa = element_address(context, builder, signature.args[0], args[0], args[1])
            ga = element_address(context, builder, signature.args[2], args[2], args[3])
            ops = [sa, ga]
            if zero_fill:
                ops.append(context.cast(builder, args[4], signature.args[4], types.uint32))
            fnty = ir.FunctionType(ir.VoidType(), [o.type for o in ops])
            builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), ops)
            return context.get_dummy_value()

        return codegen

    @intrinsic
    def cp_async16(typingctx, smem, sidx, gmem, gidx, nbytes):
        return types.void(smem, sidx, gmem, gidx, nbytes), copy(True)

    @intrinsic
    def cp_async16_full(typingctx, smem, sidx, gmem, gidx):
        return types.void(smem, sidx, gmem, gidx), copy(False)

    return AsyncCopies(
        cp_async16,
        cp_async16_full,
        _plain_asm("cp.async.commit_group;"),
        _plain_asm("cp.async.wait_all;"),
        cp_wait_group(1, False),
    )


@functools.cache
def warp_ops(dtype: str, simulator: bool) -> WarpOps:
    """The building blocks for `dtype` ('bf16' or 'fp16'): GPU intrinsics, or simulator functions."""
    check_dtype(dtype)
    return _simulated(dtype) if simulator else _intrinsics(dtype)


# --- simulator ------------------------------------------------------------------------------------

_LANE = np.arange(32)
_G, _T = _LANE >> 2, _LANE & 3
_XCHG_COLS = 8


def _warp_gather(values, width=32):
    """All 32 lanes' `values` (a tuple of at most 8 numbers) as a (32, len) float64 array (with
    `width`, the `width` threads of my aligned group: 128 for a Hopper warpgroup, ``wgmma_ops``).

    float64 holds a uint32 register or an fp32 value exactly. Two block barriers: the first makes
    every lane's entry visible, the second keeps the scratch from being overwritten by a faster lane's
    next collective before everyone has read it."""
    xchg = cuda.shared.array((1024, _XCHG_COLS), float64)  # one scratch per launch (keyed by this line)
    tid = cuda.threadIdx.x
    for i, x in enumerate(values):
        xchg[tid, i] = x
    cuda.syncthreads()
    base = tid - tid % width
    out = xchg[base : base + width, : len(values)].copy()
    cuda.syncthreads()
    return out


def _halves(regs, dtype):
    """uint32 registers (any shape) -> fp32 values of their (low, high) halves, shape (..., 2)."""
    r = np.asarray(regs, dtype=np.uint64).astype(np.uint32)
    return np.stack(
        [from_bits((r & 0xFFFF).astype(np.uint16), dtype), from_bits((r >> 16).astype(np.uint16), dtype)],
        axis=-1,
    )


def _simulated(dtype: str) -> WarpOps:
    def mma(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        regs = _warp_gather((a0, a1, a2, a3, b0, b1))
        h = _halves(regs, dtype).astype(np.float64)  # (lane, register, half)
        a = np.empty((16, 16))
        b = np.empty((16, 8))
        for e in range(2):
            a[_G, 2 * _T + e] = h[:, 0, e]
            a[_G + 8, 2 * _T + e] = h[:, 1, e]
            a[_G, 2 * _T + 8 + e] = h[:, 2, e]
            a[_G + 8, 2 * _T + 8 + e] = h[:, 3, e]
            b[2 * _T + e, _G] = h[:, 4, e]
            b[2 * _T + 8 + e, _G] = h[:, 5, e]
        d = a @ b
        lane = cuda.threadIdx.x & 31
        g, t = lane >> 2, lane & 3
        return (
            np.float32(d[g, 2 * t] + c0),
            np.float32(d[g, 2 * t + 1] + c1),
            np.float32(d[g + 8, 2 * t] + c2),
            np.float32(d[g + 8, 2 * t + 1] + c3),
        )

    def _ldsm(smem, idx, trans):
        rows = _warp_gather((idx,))[:, 0].astype(np.int64)  # lane 8i + r: row r of matrix i
        lane = cuda.threadIdx.x & 31
        g, t = lane >> 2, lane & 3
        out = []
        for i in range(4):
            if trans:
                lo, hi = smem[rows[8 * i + 2 * t] + g], smem[rows[8 * i + 2 * t + 1] + g]
            else:
                lo, hi = smem[rows[8 * i + g] + 2 * t], smem[rows[8 * i + g] + 2 * t + 1]
            out.append(int(lo) | (int(hi) << 16))
        return tuple(out)

    def ldsm_x4(smem, idx):
        return _ldsm(smem, idx, False)

    def ldsm_x4_t(smem, idx):
        return _ldsm(smem, idx, True)

    copies = _simulated_copies(2)
    cp_async16, nop = copies.cp_async16, copies.cp_commit

    def pack2(lo, hi):
        bits = to_bits(np.array([lo, hi], dtype=np.float32), dtype)
        return int(bits[0]) | (int(bits[1]) << 16)

    def to_f32(bits):
        return from_bits(np.array([bits], dtype=np.uint16), dtype)[0]

    def _butterfly(x, masks, combine):
        v = _warp_gather((x,))[:, 0].astype(np.float32)
        for m in masks:  # every lane's value after this step, as the shuffles compute it
            v = np.array([combine(v[i], v[i ^ m]) for i in range(32)], dtype=np.float32)
        return v[cuda.threadIdx.x & 31]

    def quad_max(x):
        return _butterfly(x, (1, 2), max)

    def quad_sum(x):
        return _butterfly(x, (1, 2), np.add)

    def warp_max(x):
        return _butterfly(x, (16, 8, 4, 2, 1), max)

    def warp_sum(x):
        return _butterfly(x, (16, 8, 4, 2, 1), np.add)

    return WarpOps(
        *(
            cuda.jit(device=True)(f)
            for f in (
                mma,
                ldsm_x4,
                ldsm_x4_t,
                cp_async16,
                nop,
                nop,
                pack2,
                to_f32,
                quad_max,
                quad_sum,
                warp_max,
                warp_sum,
            )
        )
    )


# --- GPU: inline PTX --------------------------------------------------------------------------------


def _intrinsics(dtype: str) -> WarpOps:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    ptx_type = {"bf16": "bf16", "fp16": "f16"}[dtype]
    i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()

    def asm(builder, ret, args, text, constraints):
        fnty = ir.FunctionType(ret, [a.type for a in args])
        return builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), args)

    def element_address(context, builder, aryty, ary, idx):
        """Flat address of element `idx` of a numba array (a generic pointer, as an i64)."""
        data = context.make_array(aryty)(context, builder, ary).data
        return builder.ptrtoint(builder.gep(data, [idx]), i64)

    @intrinsic
    def mma(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        ret = types.UniTuple(types.float32, 4)
        u32, fl = types.uint32, types.float32
        sig = ret(u32, u32, u32, u32, u32, u32, fl, fl, fl, fl)

        def codegen(context, builder, signature, args):
            args = [context.cast(builder, v, ty, to) for v, ty, to in zip(args, signature.args, sig.args)]
            out = asm(
                builder,
                ir.LiteralStructType([f32] * 4),
                args,
                f"mma.sync.aligned.m16n8k16.row.col.f32.{ptx_type}.{ptx_type}.f32 "
                "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};",
                "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f",
            )
            return context.make_tuple(builder, ret, [builder.extract_value(out, i) for i in range(4)])

        return sig, codegen

    def smem_address(context, builder, signature, args):
        return element_address(context, builder, signature.args[0], args[0], args[1])

    def ldmatrix(trans):
        return ldmatrix_intrinsic(trans, False, smem_address)

    @intrinsic
    def pack2(typingctx, lo, hi):
        def codegen(context, builder, signature, args):
            lo_, hi_ = (context.cast(builder, v, t, types.float32) for v, t in zip(args, signature.args))
            # cvt.rn.<t>x2.f32 d, a, b puts a in the upper half and b in the lower half
            return asm(builder, i32, [hi_, lo_], f"cvt.rn.{ptx_type}x2.f32 $0, $1, $2;", "=r,f,f")

        return types.uint32(lo, hi), codegen

    @intrinsic
    def to_f32(typingctx, bits):
        text = (
            "cvt.f32.f16 $0, $1;"
            if dtype == "fp16"
            else "{ .reg .b32 t; cvt.u32.u16 t, $1; shl.b32 t, t, 16; mov.b32 $0, t; }"
        )

        def codegen(context, builder, signature, args):
            b = context.cast(builder, args[0], signature.args[0], types.uint16)
            return asm(builder, f32, [b], text, "=f,h")

        return types.float32(bits), codegen

    full = np.uint32(0xFFFFFFFF)
    m1, m2, m4, m8, m16 = (np.int32(m) for m in (1, 2, 4, 8, 16))

    @cuda.jit(device=True, inline=True)
    def quad_max(x):
        x = max(x, cuda.shfl_xor_sync(full, x, m1))
        return max(x, cuda.shfl_xor_sync(full, x, m2))

    @cuda.jit(device=True, inline=True)
    def quad_sum(x):
        x = x + cuda.shfl_xor_sync(full, x, m1)
        return x + cuda.shfl_xor_sync(full, x, m2)

    @cuda.jit(device=True, inline=True)
    def warp_max(x):
        x = max(x, cuda.shfl_xor_sync(full, x, m16))
        x = max(x, cuda.shfl_xor_sync(full, x, m8))
        return quad_max(max(x, cuda.shfl_xor_sync(full, x, m4)))

    @cuda.jit(device=True, inline=True)
    def warp_sum(x):
        x = x + cuda.shfl_xor_sync(full, x, m16)
        x = x + cuda.shfl_xor_sync(full, x, m8)
        return quad_sum(x + cuda.shfl_xor_sync(full, x, m4))

    copies = _copy_intrinsics()
    return WarpOps(
        mma,
        ldmatrix(False),
        ldmatrix(True),
        copies.cp_async16,
        copies.cp_commit,
        copies.cp_wait_all,
        pack2,
        to_f32,
        quad_max,
        quad_sum,
        warp_max,
        warp_sum,
    )


@functools.cache
def lane_broadcast(simulator: bool):
    """A device function ``bcast(x, src)``: lane `src`'s fp32 `x`, in every lane of the warp
    (``shfl.sync.idx``; the decode combine hands each split's weight to the lanes that use it). Under
    the simulator, through ``_warp_gather`` (every warp of the block must call it equally often)."""
    if simulator:

        def bcast(x, src):
            return np.float32(_warp_gather((x,))[src, 0])

        return cuda.jit(device=True)(bcast)
    full = np.uint32(0xFFFFFFFF)

    @cuda.jit(device=True, inline=True)
    def bcast_gpu(x, src):
        return cuda.shfl_sync(full, x, src)

    return bcast_gpu


@functools.cache
def arrive_acq_rel(simulator: bool):
    """A device function ``arrive(counts, i) -> old``: ``atom.acq_rel.gpu.global.add.s32`` of 1 on the
    int32 ``counts[i]``, returning the value before it. Release: called by one thread after a block
    barrier, it publishes every store the block made before the barrier (PTX's release is cumulative
    over what the barrier made it observe: CUTLASS's semaphores do the same); acquire: the block's
    loads after the next barrier see every store published by the arrivals counted before this one
    (ptxas puts a MEMBAR.ALL.GPU before the atomic and an L1 invalidation, CCTL.IVALL, after it). It
    replaces a ``membar.gl`` (MEMBAR.SC.GPU, the sequentially consistent fence) in every thread. Under
    the simulator, ``cuda.atomic.add``: the simulator's memory is sequentially consistent and its
    atomics take a lock, so the twin is race-free whatever the thread timing."""
    if simulator:

        def arrive(counts, i):
            return cuda.atomic.add(counts, i, 1)

        return cuda.jit(device=True)(arrive)
    return _arrive_intrinsic()


@functools.cache
def _arrive_intrinsic():
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    i32, i64 = ir.IntType(32), ir.IntType(64)

    @intrinsic
    def arrive(typingctx, counts, i):
        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            addr = builder.ptrtoint(builder.gep(data, [args[1]]), i64)
            fnty = ir.FunctionType(i32, [i64])
            text = "atom.acq_rel.gpu.global.add.s32 $0, [$1], 1;"
            return builder.call(ir.InlineAsm(fnty, text, "=r,l,~{memory}", side_effect=True), [addr])

        return types.int32(counts, i), codegen

    return arrive


@functools.cache
def tagged_ops(simulator: bool):
    """Two device functions for values that carry their own "ready" flag (NCCL's LL protocol): an fp32
    value and a 32-bit tag in one 8-byte word of a uint64 array, written and read whole.

    * ``st_tagged(a, i, x, tag)``: ``st.relaxed.gpu.global.b64`` of (tag << 32) | bits(x) into ``a[i]``;
    * ``ld_tagged(a, i) -> (x, tag)``: ``ld.relaxed.gpu.global.b64`` of ``a[i]``, split in two.

    An aligned 8-byte access is single-copy atomic (PTX memory model), so a reader that sees the tag it
    waits for sees the value stored with it: no fence, no flag of its own, no atomic; relaxed
    gpu-scope accesses are morally strong (no data race) and bypass the non-coherent L1, so a polling
    loop sees another SM's store. The decode kernel's flagged tail polls these (decode_tc.py). Under the
    simulator, plain element accesses of the uint64 array: one numpy element is written and read whole
    under the interpreter lock, so the twin has the same all-or-nothing semantics whatever the timing.

    >>> import numpy as np
    >>> st, ld = tagged_ops(True)
    >>> a = np.zeros(1, np.uint64)
    >>> st.py_func(a, 0, np.float32(1.5), np.uint32(7)); hex(int(a[0]))
    '0x73fc00000'
    >>> x, tag = ld.py_func(a, 0); float(x), int(tag)
    (1.5, 7)
    """
    if simulator:

        def st_tagged(a, i, x, tag):
            a[i] = np.uint64((int(tag) << 32) | int(np.float32(x).view(np.uint32)))

        def ld_tagged(a, i):
            raw = int(a[i])
            return np.uint32(raw & 0xFFFFFFFF).view(np.float32), np.uint32(raw >> 32)

        return cuda.jit(device=True)(st_tagged), cuda.jit(device=True)(ld_tagged)
    return _tagged_intrinsics()


@functools.cache
def _tagged_intrinsics():
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()

    def address(context, builder, aryty, ary, idx):
        data = context.make_array(aryty)(context, builder, ary).data
        return builder.ptrtoint(builder.gep(data, [idx]), i64)

    @intrinsic
    def st_tagged(typingctx, a, i, x, tag):
        def codegen(context, builder, signature, args):
            addr = address(context, builder, signature.args[0], args[0], args[1])
            xv = context.cast(builder, args[2], signature.args[2], types.float32)
            tv = context.cast(builder, args[3], signature.args[3], types.uint32)
            fnty = ir.FunctionType(ir.VoidType(), [i64, f32, i32])
            text = "{ .reg .b64 t; .reg .b32 lo; mov.b32 lo, $1; mov.b64 t, {lo, $2}; st.relaxed.gpu.global.b64 [$0], t; }"
            builder.call(ir.InlineAsm(fnty, text, "l,f,r,~{memory}", side_effect=True), [addr, xv, tv])
            return context.get_dummy_value()

        return types.void(a, i, x, tag), codegen

    @intrinsic
    def ld_tagged(typingctx, a, i):
        ret = types.Tuple((types.float32, types.uint32))

        def codegen(context, builder, signature, args):
            addr = address(context, builder, signature.args[0], args[0], args[1])
            fnty = ir.FunctionType(ir.LiteralStructType([f32, i32]), [i64])
            text = "{ .reg .b64 t; .reg .b32 lo; ld.relaxed.gpu.global.b64 t, [$2]; mov.b64 {lo, $1}, t; mov.b32 $0, lo; }"
            out = builder.call(ir.InlineAsm(fnty, text, "=f,=r,l,~{memory}", side_effect=True), [addr])
            return context.make_tuple(builder, ret, [builder.extract_value(out, k) for k in range(2)])

        return ret(a, i), codegen

    return st_tagged, ld_tagged
