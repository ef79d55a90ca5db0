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
    ex2(x)                          2^x, ex2.approx.ftz.f32: one MUFU.EX2 (math.exp2 is four instructions)
    fmax(x, y)                      max.f32: one FMNMX (Python's max is a compare and a select)

The cp.async and ldmatrix instructions are spelled once, in ``warp_ops`` (``cp_async_asm``,
``cp_wait_group``, ``ldmatrix_asm``, ``ldmatrix_intrinsic`` and their simulator twins); here they take
the 32-bit shared address.

Worked number: Ks at shared address 0x4000, element 600 (row 9, chunk 2 of a swizzled 64-wide tile:
tiles.swizzled) is byte address 0x4000 + 2·600 = 0x44B0.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from numba import cuda

from .warp_ops import async_copies, cp_async_asm, cp_wait_group, ldmatrix_intrinsic, warp_ops


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
    tiny = np.float32(2.0**-126)

    def smem_base(arr):
        return arr

    def ex2(x):
        y = np.float32(np.exp2(np.float32(x)))
        return np.float32(0.0) if y < tiny else y  # ftz: a subnormal result is flushed to +0

    def fmax(x, y):
        return np.float32(np.fmax(np.float32(x), np.float32(y)))

    jit = cuda.jit(device=True)
    cp_full = jit(async_copies(True, 2).cp_async16_full)
    return AddressedOps(
        jit(smem_base),
        ops.ldsm_x4,
        ops.ldsm_x4_t,
        cp_full,
        ops.cp_async16,
        cp_wait_group(1, True),
        jit(ex2),
        jit(fmax),
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

    def row_address(context, builder, signature, args):
        return shared_address(context, builder, args[0], signature.args[0], args[1], signature.args[1])

    def ldmatrix(trans):
        return ldmatrix_intrinsic(trans, True, row_address)

    def global_address(context, builder, aryty, ary, idx, idxty):
        data = data_pointer(context, builder, aryty, ary)
        i = context.cast(builder, idx, idxty, types.int64)
        ptr = builder.gep(data, [i])
        return builder.ptrtoint(builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 1)), i64)

    def copy(zero_fill):
        text, constraints = cp_async_asm(True, zero_fill)

        def codegen(context, builder, signature, args):
            ops = [
                shared_address(context, builder, args[0], signature.args[0], args[1], signature.args[1]),
                global_address(context, builder, signature.args[2], args[2], args[3], signature.args[3]),
            ]
            if zero_fill:
                ops.append(context.cast(builder, args[4], signature.args[4], types.uint32))
            asm(builder, ir.VoidType(), ops, text, constraints)
            return context.get_dummy_value()

        return codegen

    @intrinsic
    def cp_async16(typingctx, base, sidx, gmem, gidx):
        return types.void(base, sidx, gmem, gidx), copy(False)

    @intrinsic
    def cp_async16z(typingctx, base, sidx, gmem, gidx, nbytes):
        return types.void(base, sidx, gmem, gidx, nbytes), copy(True)

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
        smem_base,
        ldmatrix(False),
        ldmatrix(True),
        cp_async16,
        cp_async16z,
        cp_wait_group(1, False),
        ex2,
        fmax,
    )
