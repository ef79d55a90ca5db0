"""The lean instruction set of fa2_tc (issue 22): shared memory through 32-bit addresses, ftz exp2.

``warp_ops`` takes a shared *array* and an element index per call and computes a 64-bit generic
address inside each instruction's inline PTX (``cvta.to.shared.u64`` every time: the compiler cannot
share it between calls, and ptxas cannot fold a constant offset into the instruction). Here a kernel
asks once for ``base = smem_base(Xs)`` and passes ``(base, idx)``: on the GPU the base is the 32-bit
shared address of the array and the instruction's address is ``base + 2·idx``, plain integer
arithmetic outside the asm, so an index that is a lane-dependent part plus a compile-time constant
becomes ``LDSM [R + imm]`` (checked in the SASS: PERFORMANCE.md, version 4). Under numba's CUDA
simulator the "base" is the array itself and every operation is ``warp_ops``' simulator twin, with the
same per-lane semantics (one source for both).

    smem_base(arr)                  -> base (uint32 shared address; the array under the simulator)
    ldsm_x4(base, idx)              ldmatrix.x4 of rows whose addresses the lanes give (warp_ops')
    ldsm_x4_t(base, idx)            the same with .trans
    cp_async16(base, sidx, g, gidx) 16 bytes global -> shared, no zero-fill (a full tile's chunks)
    cp_async16z(base, sidx, g, gidx, nbytes)  with zero-fill past nbytes (a ragged tile's chunks)
    cp_wait1()                      wait until at most one group of my cp.async copies is in flight
    cp_wait_group(n, simulator)     the same for at most n groups (a ring of n + 1 tiles; decode_tc)
    ex2(x)                          2^x, ex2.approx.ftz.f32: one MUFU.EX2 (math.exp2 is four instructions)
    fmax(x, y)                      max.f32: one FMNMX (Python's max is a compare and a select)

Worked number: Ks at shared address 0x4000, element 600 (row 9, chunk 2 of a swizzled 64-wide tile:
tiles.swizzled) is byte address 0x4000 + 2·600 = 0x44B0.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from numba import cuda

from .warp_ops import warp_ops


class AddressedOps(NamedTuple):
    smem_base: object
    ldsm_x4: object
    ldsm_x4_t: object
    cp_async16: object
    cp_async16z: object
    cp_wait1: object
    ex2: object
    fmax: object


@functools.cache
def addressed_ops(dtype: str, simulator: bool) -> AddressedOps:
    return _simulated(dtype) if simulator else _intrinsics()


def _simulated(dtype: str) -> AddressedOps:
    ops = warp_ops(dtype, True)
    cp_z = ops.cp_async16
    tiny = np.float32(2.0**-126)

    def smem_base(arr):
        return arr

    def cp_async16(smem, sidx, gmem, gidx):
        cp_z(smem, sidx, gmem, gidx, 16)

    def nop():
        pass

    def ex2(x):
        y = np.float32(np.exp2(np.float32(x)))
        return np.float32(0.0) if y < tiny else y  # ftz: a subnormal result is flushed to +0

    def fmax(x, y):
        return np.float32(np.fmax(np.float32(x), np.float32(y)))

    jit = cuda.jit(device=True)
    return AddressedOps(
        jit(smem_base), ops.ldsm_x4, ops.ldsm_x4_t, jit(cp_async16), cp_z, jit(nop), jit(ex2), jit(fmax)
    )


def _intrinsics() -> AddressedOps:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()

    def asm(builder, ret, args, text, constraints, side_effect=True):
        fnty = ir.FunctionType(ret, [a.type for a in args])
        return builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=side_effect), args)

    def data_pointer(context, builder, aryty, ary):
        return context.make_array(aryty)(context, builder, ary).data

    def shared_address(context, builder, base, basety, idx, idxty):
        """base + 2·idx as an i32 (idx truncated to 32 bits: a tile is far below 2 GiB)."""
        b = context.cast(builder, base, basety, types.uint32)
        i = builder.trunc(context.cast(builder, idx, idxty, types.int64), i32)
        return builder.add(b, builder.shl(i, ir.Constant(i32, 1)))

    @intrinsic
    def smem_base(typingctx, arr):
        def codegen(context, builder, signature, args):
            ptr = data_pointer(context, builder, signature.args[0], args[0])
            shared = builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 3))
            return builder.ptrtoint(shared, i32)

        return types.uint32(arr), codegen

    def ldmatrix(trans):
        suffix = ".trans" if trans else ""

        @intrinsic
        def ldsm(typingctx, base, idx):
            ret = types.UniTuple(types.uint32, 4)

            def codegen(context, builder, signature, args):
                addr = shared_address(
                    context, builder, args[0], signature.args[0], args[1], signature.args[1]
                )
                out = asm(
                    builder,
                    ir.LiteralStructType([i32] * 4),
                    [addr],
                    f"ldmatrix.sync.aligned.m8n8.x4{suffix}.shared.b16 {{$0,$1,$2,$3}}, [$4];",
                    "=r,=r,=r,=r,r,~{memory}",
                )
                return context.make_tuple(builder, ret, [builder.extract_value(out, i) for i in range(4)])

            return ret(base, idx), codegen

        return ldsm

    def global_address(context, builder, aryty, ary, idx, idxty):
        data = data_pointer(context, builder, aryty, ary)
        i = context.cast(builder, idx, idxty, types.int64)
        ptr = builder.gep(data, [i])
        return builder.ptrtoint(builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 1)), i64)

    @intrinsic
    def cp_async16(typingctx, base, sidx, gmem, gidx):
        def codegen(context, builder, signature, args):
            sa = shared_address(context, builder, args[0], signature.args[0], args[1], signature.args[1])
            ga = global_address(context, builder, signature.args[2], args[2], args[3], signature.args[3])
            asm(
                builder, ir.VoidType(), [sa, ga], "cp.async.cg.shared.global [$0], [$1], 16;", "r,l,~{memory}"
            )
            return context.get_dummy_value()

        return types.void(base, sidx, gmem, gidx), codegen

    @intrinsic
    def cp_async16z(typingctx, base, sidx, gmem, gidx, nbytes):
        def codegen(context, builder, signature, args):
            sa = shared_address(context, builder, args[0], signature.args[0], args[1], signature.args[1])
            ga = global_address(context, builder, signature.args[2], args[2], args[3], signature.args[3])
            n = context.cast(builder, args[4], signature.args[4], types.uint32)
            asm(
                builder,
                ir.VoidType(),
                [sa, ga, n],
                "cp.async.cg.shared.global [$0], [$1], 16, $2;",
                "r,l,r,~{memory}",
            )
            return context.get_dummy_value()

        return types.void(base, sidx, gmem, gidx, nbytes), codegen

    @intrinsic
    def cp_wait1(typingctx):
        def codegen(context, builder, signature, args):
            asm(builder, ir.VoidType(), [], "cp.async.wait_group 1;", "~{memory}")
            return context.get_dummy_value()

        return types.void(), codegen

    @intrinsic
    def ex2(typingctx, x):
        def codegen(context, builder, signature, args):
            v = context.cast(builder, args[0], signature.args[0], types.float32)
            return asm(builder, f32, [v], "ex2.approx.ftz.f32 $0, $1;", "=f,f", side_effect=False)

        return types.float32(x), codegen

    @intrinsic
    def fmax(typingctx, x, y):
        def codegen(context, builder, signature, args):
            a, b = (context.cast(builder, v, t, types.float32) for v, t in zip(args, signature.args))
            return asm(builder, f32, [a, b], "max.f32 $0, $1, $2;", "=f,f,f", side_effect=False)

        return types.float32(x, y), codegen

    return AddressedOps(
        smem_base, ldmatrix(False), ldmatrix(True), cp_async16, cp_async16z, cp_wait1, ex2, fmax
    )


@functools.cache
def cp_wait_group(n: int, simulator: bool):
    """A device function: ``cp.async.wait_group n`` (n a compile-time constant: at most n of my
    groups of cp.async copies still in flight). Under the simulator the copies land at once: a no-op."""
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 7:
        raise ValueError(f"cp_wait_group: n must be an int in 0..7; got {n!r}")
    if simulator:

        def nop():
            pass

        return cuda.jit(device=True)(nop)
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def wait(typingctx):
        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(ir.VoidType(), [])
            builder.call(ir.InlineAsm(fnty, f"cp.async.wait_group {n};", "~{memory}", side_effect=True), [])
            return context.get_dummy_value()

        return types.void(), codegen

    return wait
