"""The cost model's unit calibration on the H200: what the energy run left unpriced, one device call.

    python3 benchmarks/cost_units_h200.py --out $OUT [--seconds 1.5] [--budget-s 150]

Each micro-benchmark is looped for ``--seconds`` between two steps of NVML's energy counter
(``gpu_kernels.measure.nvml_energy``), its rate counted from the work each launch does; the
static power is this run's own nanosleep kernel (``simlib.cost.rates.derive_units`` subtracts
it, and the companions each row names). ``cost_units_h200.csv``, one row per benchmark:

    idle, static     nothing running; a nanosleep kernel on every SM (clocks up)
    fp32_fma         gpu_kernels.measure.ceilings' FFMA chains (per thread FFMA: the companion price)
    int_alu          8 independent IMAD chains (x = x·x + c) per thread, 8 per trip (per warp instruction)
    issue_mix        8 FFMA and 8 IMAD chains interleaved (warp instructions of both, per second:
                     what one scheduler issues when two pipes share it)
    mufu_ex2         8 chains of ex2.approx.ftz.f32 (MUFU.EX2), per warp instruction
    shfl             8 chains of shfl.sync.bfly, per warp instruction
    cvt_bf16         cvt.rn.bf16x2.f32 packing two fp32 (F2FP), unpacked by 2 integer instructions
                     (the companion), per warp instruction
    l2_read_v4       a 16 MiB buffer (≪ L2) re-read 64 times per launch with ld.global.cg.v4.f32
                     (LDG.128), each pass by the block 131 blocks away; companions: 4 FADD per 16 B
                     and ~6 integer warp instructions (index, compare, branch) per warp load of 512 B
    hbm_read_v4      a 2 GiB buffer read once per launch with LDG.128; the same companions
    imad_zero, iadd3_zero  int_alu's and iadd3's chains on operands that are 0 at run time (no
                     toggling): the data-independent floor of a warp instruction (round 5)
    lds_bcast, lds_lane  8 chains x = sm[x] of LDS.32: every lane word 0 (broadcast), or each lane its
                     own word; per warp LDS, its address arithmetic included (round 5)
    lds_bcast_rand, lds_lane_rand  the same on random words read from another row each load, so the
                     loaded data toggles as the kernels' random inputs do (round 7); an AND per load
                     (x & 1023) is the companion
    cp_async_l2      cp.async.cg 16 B from the 16 MiB L2-resident buffer into shared memory, each
                     thread 8 in flight, then wait; per byte; companions ~5 integer warp
                     instructions per 512 B (the PTX of these loops, compiled here, was read)

and ``eager_bf16_h200.csv`` (the energy run's columns): the Hugging Face eager attention in bf16,
``softmax(QKᵀ·s, dtype=float32).to(bf16) @ V``, at the energy run's three shapes (d = 64, H = 16,
N = 1K, 4K, 16K with B·H = 128, 32, 16), checked against the float64 reference, NVML-looped, and
each of its five launches timed alone with CUDA events (rows ``eager_bf16:<launch>``, ms only).
The last line is a short table.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

UNIT_FIELDS = [
    "bench",
    "repeat",
    "units",
    "unit",
    "calls",
    "seconds",
    "joules",
    "watts",
    "steps_seen",
    "sm_mhz",
    "sm_mhz_min",
    "mem_mhz",
    "temp_c",
    "rate_per_s",
    "fp32_per_unit",
    "int_per_unit",
    "note",
]
ROTATE = 131
THREADS = 256
CP_SLOTS = 8192  # THREADS x 8 slots of 16 B, as uint32: a literal, as cuda.shared.array needs


def intrinsics():
    """ex2.approx.ftz.f32, ld.global.cg.v4.f32 and cvt.rn.bf16x2.f32 through inline PTX."""
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    f32, i32, i64 = ir.FloatType(), ir.IntType(32), ir.IntType(64)

    def asm(builder, ret, args, text, constraints):
        fnty = ir.FunctionType(ret, [a.type for a in args])
        return builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), args)

    @intrinsic
    def ex2(typingctx, x):
        def codegen(context, builder, signature, args):
            return asm(builder, f32, [args[0]], "ex2.approx.ftz.f32 $0, $1;", "=f,f")

        return types.float32(types.float32), codegen

    @intrinsic
    def ldg_v4(typingctx, ary, idx):
        ret = types.UniTuple(types.float32, 4)

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            addr = builder.ptrtoint(builder.gep(data, [args[1]]), i64)
            out = asm(
                builder,
                ir.LiteralStructType([f32] * 4),
                [addr],
                "{ .reg .u64 ga; cvta.to.global.u64 ga, $4; ld.global.cg.v4.f32 {$0,$1,$2,$3}, [ga]; }",
                "=f,=f,=f,=f,l",
            )
            return context.make_tuple(builder, ret, [builder.extract_value(out, i) for i in range(4)])

        return ret(ary, idx), codegen

    @intrinsic
    def pack_bf16x2(typingctx, a, b):
        def codegen(context, builder, signature, args):
            return asm(builder, i32, [args[0], args[1]], "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f")

        return types.uint32(types.float32, types.float32), codegen

    @intrinsic
    def imad_sq(typingctx, x, c):
        """x·x + c in 32 bits: one IMAD (numba would widen uint32 arithmetic to 64 bits)."""

        def codegen(context, builder, signature, args):
            return asm(builder, i32, [args[0], args[1]], "mad.lo.u32 $0, $1, $1, $2;", "=r,r,r")

        return types.uint32(types.uint32, types.uint32), codegen

    def int3(text):
        """An integer instruction of three 32-bit operands through inline PTX (numba widens uint32)."""

        @intrinsic
        def op(typingctx, a, b, c):
            def codegen(context, builder, signature, args):
                return asm(builder, i32, list(args), text, "=r,r,r,r")

            return types.uint32(types.uint32, types.uint32, types.uint32), codegen

        return op

    # IADD3 (a + b + c), LOP3.LUT (a ^ b ^ c: lut 0x96), ISETP + SEL (a < b ? c : a): the ALU pipe's
    # address arithmetic, logic and compares, each chain fed by its neighbour so nothing folds
    iadd3 = int3("add.u32 $0, $1, $2; add.u32 $0, $0, $3;")
    lop3 = int3("lop3.b32 $0, $1, $2, $3, 0x96;")
    setp_sel = int3("{ .reg .pred p; setp.lt.u32 p, $1, $2; selp.u32 $0, $3, $1, p; }")

    @intrinsic
    def bits_f32(typingctx, bits):
        def codegen(context, builder, signature, args):
            return asm(builder, f32, [args[0]], "mov.b32 $0, $1;", "=f,r")

        return types.float32(types.uint32), codegen

    return ex2, ldg_v4, pack_bf16x2, bits_f32, imad_sq, iadd3, lop3, setp_sel


def kernels(jit=None):
    """The micro-benchmark kernels; `jit` (default numba.cuda.jit) lets a check compile them to PTX
    on a machine without a GPU."""
    from numba import cuda, float32, int32, uint32

    jit = jit or cuda.jit

    ex2, ldg_v4, pack, bits_f32, imad_sq, iadd3, lop3, setp_sel = intrinsics()
    from gpu_kernels.tensor_core.warp_ops import warp_ops

    ops = warp_ops("bf16", False)
    cp_async16, commit, wait_all = ops.cp_async16, ops.cp_commit, ops.cp_wait_all

    @jit()
    def int_alu(out, trips):
        t = uint32(cuda.grid(1))
        c = uint32(1013904223)
        x0, x1, x2, x3 = uint32(t + 1), uint32(t + 2), uint32(t + 3), uint32(t + 4)
        x4, x5, x6, x7 = uint32(t + 5), uint32(t + 6), uint32(t + 7), uint32(t + 8)
        for _ in range(trips):
            for _u in range(8):  # x = x·x + c: one IMAD each, a recurrence no compiler can fold
                x0 = imad_sq(x0, c)
                x1 = imad_sq(x1, c)
                x2 = imad_sq(x2, c)
                x3 = imad_sq(x3, c)
                x4 = imad_sq(x4, c)
                x5 = imad_sq(x5, c)
                x6 = imad_sq(x6, c)
                x7 = imad_sq(x7, c)
        out[cuda.grid(1)] = float32(x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7)

    def alu_chains(op):
        """8 chains x 8 per trip of `op`(x_i, x_{i+1}, c): each reads its neighbour (no folding)."""

        @jit()
        def kern(out, trips):
            t = uint32(cuda.grid(1))
            c = uint32(2654435761)
            x0, x1, x2, x3 = uint32(t + 1), uint32(t + 2), uint32(t + 3), uint32(t + 4)
            x4, x5, x6, x7 = uint32(t + 5), uint32(t + 6), uint32(t + 7), uint32(t + 8)
            for _ in range(trips):
                for _u in range(8):
                    x0 = op(x0, x1, c)
                    x1 = op(x1, x2, c)
                    x2 = op(x2, x3, c)
                    x3 = op(x3, x4, c)
                    x4 = op(x4, x5, c)
                    x5 = op(x5, x6, c)
                    x6 = op(x6, x7, c)
                    x7 = op(x7, x0, c)
            out[cuda.grid(1)] = float32(x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7)

        return kern

    @jit(fastmath=True)
    def issue_mix(out, trips):
        t = uint32(cuda.grid(1))
        f = float32(t) * float32(1e-9)
        m, k = float32(0.999), float32(1e-7)
        f0, f1, f2, f3 = f, f + k, f + k + k, f - k
        f4, f5, f6, f7 = f0 * m, f1 * m, f2 * m, f3 * m
        c = uint32(1013904223)
        x0, x1, x2, x3 = uint32(t + 1), uint32(t + 2), uint32(t + 3), uint32(t + 4)
        x4, x5, x6, x7 = uint32(t + 5), uint32(t + 6), uint32(t + 7), uint32(t + 8)
        for _ in range(trips):
            for _u in range(8):
                f0 = f0 * m + k
                x0 = imad_sq(x0, c)
                f1 = f1 * m + k
                x1 = imad_sq(x1, c)
                f2 = f2 * m + k
                x2 = imad_sq(x2, c)
                f3 = f3 * m + k
                x3 = imad_sq(x3, c)
                f4 = f4 * m + k
                x4 = imad_sq(x4, c)
                f5 = f5 * m + k
                x5 = imad_sq(x5, c)
                f6 = f6 * m + k
                x6 = imad_sq(x6, c)
                f7 = f7 * m + k
                x7 = imad_sq(x7, c)
        out[cuda.grid(1)] = (
            f0 + f1 + f2 + f3 + f4 + f5 + f6 + f7 + float32(x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7)
        )

    @jit()
    def mufu(out, trips):
        t = float32(cuda.grid(1)) * float32(1e-9)
        x0, x1, x2, x3, x4, x5, x6, x7 = t, t, t, t, t, t, t, t
        for _ in range(trips):
            for _u in range(8):
                x0 = ex2(-x0)
                x1 = ex2(-x1)
                x2 = ex2(-x2)
                x3 = ex2(-x3)
                x4 = ex2(-x4)
                x5 = ex2(-x5)
                x6 = ex2(-x6)
                x7 = ex2(-x7)
        out[cuda.grid(1)] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7

    full = uint32(0xFFFFFFFF)

    @jit()
    def shfl(out, trips):
        t = cuda.grid(1)
        x0, x1, x2, x3 = int32(t + 1), int32(t + 2), int32(t + 3), int32(t + 4)
        x4, x5, x6, x7 = int32(t + 5), int32(t + 6), int32(t + 7), int32(t + 8)
        for _ in range(trips):
            for _u in range(8):
                x0 = cuda.shfl_xor_sync(full, x0, int32(1))
                x1 = cuda.shfl_xor_sync(full, x1, int32(2))
                x2 = cuda.shfl_xor_sync(full, x2, int32(4))
                x3 = cuda.shfl_xor_sync(full, x3, int32(8))
                x4 = cuda.shfl_xor_sync(full, x4, int32(16))
                x5 = cuda.shfl_xor_sync(full, x5, int32(3))
                x6 = cuda.shfl_xor_sync(full, x6, int32(5))
                x7 = cuda.shfl_xor_sync(full, x7, int32(9))
        out[cuda.grid(1)] = float32(x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7)

    sixteen, low = uint32(16), uint32(0xFFFF0000)

    @jit()
    def cvt(out, trips):
        t = float32(cuda.grid(1)) * float32(1e-3)
        a0, b0, a1, b1, a2, b2, a3, b3 = t, t, t, t, t, t, t, t
        for _ in range(trips):
            for _u in range(4):
                p0 = pack(a0, b0)
                p1 = pack(a1, b1)
                p2 = pack(a2, b2)
                p3 = pack(a3, b3)
                a0 = bits_f32(p0 & low)
                b0 = bits_f32(p0 << sixteen)
                a1 = bits_f32(p1 & low)
                b1 = bits_f32(p1 << sixteen)
                a2 = bits_f32(p2 & low)
                b2 = bits_f32(p2 << sixteen)
                a3 = bits_f32(p3 & low)
                b3 = bits_f32(p3 << sixteen)
        out[cuda.grid(1)] = a0 + b0 + a1 + b1 + a2 + b2 + a3 + b3

    @jit(fastmath=True)
    def l2_read_v4(x, out, passes):
        g = cuda.grid(1)
        threads = cuda.gridsize(1)
        a0 = a1 = a2 = a3 = float32(0.0)
        n4 = x.shape[0] // 4
        for p in range(passes):
            i = (g + p * ROTATE * cuda.blockDim.x) % threads
            while i < n4:
                v0, v1, v2, v3 = ldg_v4(x, i * 4)
                a0 += v0
                a1 += v1
                a2 += v2
                a3 += v3
                i += threads
        out[g] = a0 + a1 + a2 + a3

    @jit()
    def cp_async_l2(x, out, passes):
        sm = cuda.shared.array(CP_SLOTS, uint32)  # 8 slots of 16 B per thread
        g = cuda.grid(1)
        tid = cuda.threadIdx.x
        threads = cuda.gridsize(1)
        n4 = x.shape[0] // 4
        for p in range(passes):
            i = (g + p * ROTATE * cuda.blockDim.x) % threads
            while i < n4:
                for s in range(8):
                    j = i + s * threads
                    if j < n4:
                        cp_async16(sm, (s * THREADS + tid) * 4, x, j * 4, 16)
                commit()
                wait_all()
                i += 8 * threads
        cuda.syncthreads()
        out[g] = float32(sm[tid * 4])

    def alu_zero(op):
        """The chains of `alu_chains` on operands that are 0 at run time (z = trips >> 40, unknown to
        the compiler): the same instructions with no bit toggling in their operands or results: the
        floor of an ALU warp instruction's energy (issue, operand collection, no data switching)."""

        @jit()
        def kern(out, trips):
            z = uint32(trips >> 40)
            x0, x1, x2, x3, x4, x5, x6, x7 = z, z, z, z, z, z, z, z
            for _ in range(trips):
                for _u in range(8):
                    x0 = op(x0, x1, z)
                    x1 = op(x1, x2, z)
                    x2 = op(x2, x3, z)
                    x3 = op(x3, x4, z)
                    x4 = op(x4, x5, z)
                    x5 = op(x5, x6, z)
                    x6 = op(x6, x7, z)
                    x7 = op(x7, x0, z)
            out[cuda.grid(1)] = float32(x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7)

        return kern

    @jit()
    def imad_zero(out, trips):
        z = uint32(trips >> 40)
        x0, x1, x2, x3, x4, x5, x6, x7 = z, z, z, z, z, z, z, z
        for _ in range(trips):
            for _u in range(8):  # x = x·x + 0 with x = 0: IMAD on operands that never toggle
                x0 = imad_sq(x0, z)
                x1 = imad_sq(x1, z)
                x2 = imad_sq(x2, z)
                x3 = imad_sq(x3, z)
                x4 = imad_sq(x4, z)
                x5 = imad_sq(x5, z)
                x6 = imad_sq(x6, z)
                x7 = imad_sq(x7, z)
        out[cuda.grid(1)] = float32(x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7)

    def lds_chains(broadcast):
        """8 chains x = sm[x] per thread (LDS.32, each load's address the previous load's value):
        broadcast, every lane of a warp reads word 0 (one bank, one wavefront, the naive matmul's
        sA[ty, k]); otherwise each lane its own word (32 banks, one wavefront)."""

        @jit()
        def kern(out, trips):
            sm = cuda.shared.array(256, uint32)
            tid = cuda.threadIdx.x
            z = uint32(trips >> 40)
            sm[tid] = z if broadcast else uint32(uint32(tid) + z)
            cuda.syncthreads()
            x = z if broadcast else uint32(uint32(tid) + z)
            x0, x1, x2, x3, x4, x5, x6, x7 = x, x, x, x, x, x, x, x
            for _ in range(trips):
                for _u in range(8):
                    x0 = sm[x0]
                    x1 = sm[x1]
                    x2 = sm[x2]
                    x3 = sm[x3]
                    x4 = sm[x4]
                    x5 = sm[x5]
                    x6 = sm[x6]
                    x7 = sm[x7]
            out[cuda.grid(1)] = float32(x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7)

        return kern

    def lds_rand_chains(broadcast):
        """`lds_chains` on random data that changes from load to load (round 7): 1024 words, 32 rows of
        32 columns, word (r, c) = random high bits (22, an integer hash of its index, filled once) | the
        index of (r + 1 mod 32, c); 8 chains x = sm[x & 1023] per thread start at rows 0-7, so each load
        reads another row than the last and its loaded value has about half its 22 high bits flipped
        (random fp32 attention inputs in the kernels' tiles do the same). Broadcast: every lane column 0
        (one word, one wavefront: the naive matmul's As[ty, x], the readable kernel's Ks[cc, x]); otherwise
        lane l column l (32 banks). One AND per load beside lds_chains' address arithmetic (a companion)."""
        mask = uint32(1023)
        high = uint32(0xFFFFFC00)

        @jit()
        def kern(out, trips):
            sm = cuda.shared.array(1024, uint32)
            tid = cuda.threadIdx.x
            for i in range(tid, 1024, THREADS):
                h = uint32((i * 2654435761) & 0xFFFFFFFF)
                h = uint32(h ^ (h >> 13))
                h = uint32((h * 1274126177) & 0xFFFFFFFF)
                sm[i] = uint32((h & high) | ((((i >> 5) + 1) & 31) << 5) | (i & 31))
            cuda.syncthreads()
            z = uint32(trips >> 40)
            col = z if broadcast else uint32(uint32(tid & 31) + z)
            x0, x1, x2, x3 = col, uint32(col + 32), uint32(col + 64), uint32(col + 96)
            x4, x5, x6, x7 = uint32(col + 128), uint32(col + 160), uint32(col + 192), uint32(col + 224)
            for _ in range(trips):
                for _u in range(8):
                    x0 = sm[x0 & mask]
                    x1 = sm[x1 & mask]
                    x2 = sm[x2 & mask]
                    x3 = sm[x3 & mask]
                    x4 = sm[x4 & mask]
                    x5 = sm[x5 & mask]
                    x6 = sm[x6 & mask]
                    x7 = sm[x7 & mask]
            out[cuda.grid(1)] = float32(x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7)

        return kern

    return {
        "int_alu": int_alu,
        "iadd3": alu_chains(iadd3),
        "lop3": alu_chains(lop3),
        "isetp_sel": alu_chains(setp_sel),
        "issue_mix": issue_mix,
        "mufu_ex2": mufu,
        "shfl": shfl,
        "cvt_bf16": cvt,
        "l2_read_v4": l2_read_v4,
        "cp_async_l2": cp_async_l2,
        "iadd3_zero": alu_zero(iadd3),
        "imad_zero": imad_zero,
        "lds_bcast": lds_chains(True),
        "lds_lane": lds_chains(False),
        "lds_bcast_rand": lds_rand_chains(True),
        "lds_lane_rand": lds_rand_chains(False),
    }


def benches(sms):
    """(name, unit, units per call, call, fp32 companions per unit, int companions per unit, note)."""
    import cupy as cp
    from numba import cuda

    from benchmarks.energy_h200 import spin_kernel
    from gpu_kernels.measure.ceilings import _ffma_kernel

    k = kernels()
    grid = sms * 16
    threads = grid * THREADS
    warps = threads // 32
    out = cuda.device_array(threads, dtype=np.float32)
    spin = spin_kernel()
    ffma = _ffma_kernel()
    l2 = cuda.to_device(np.random.default_rng(1).standard_normal(16 * 2**20 // 4).astype(np.float32))
    hbm = cp.random.standard_normal(2 * 1024**3 // 4, dtype=cp.float32)
    hbm_nb = cuda.as_cuda_array(hbm)
    t = 256
    rows = [
        (
            "static",
            "launches",
            1,
            lambda: spin[sms * 8, 256](out, 2000),
            0,
            0,
            "nanosleep(1000 ns) x 2000 per thread",
        ),
        (
            "fp32_fma",
            "ffma",
            64 * t * threads,
            lambda: ffma[grid, THREADS](out, t),
            0,
            0,
            "ceilings FFMA chains, thread FFMAs",
        ),
        (
            "int_alu",
            "warp_instructions",
            64 * t * warps,
            lambda: k["int_alu"][grid, THREADS](out, t),
            0,
            0,
            "8 IMAD chains x 8 per trip (loop overhead ~3 instructions per 64 not counted)",
        ),
        *(
            (
                name,
                "warp_instructions",
                64 * t * warps * per,
                (lambda name=name: k[name][grid, THREADS](out, t)),
                0,
                0,
                note,
            )
            for name, per, note in (
                ("iadd3", 1, "8 chains of IADD3 (a + b + c, PTX add.u32 x2) x 8 per trip"),
                ("lop3", 1, "8 chains of LOP3.LUT 0x96 (a ^ b ^ c) x 8 per trip"),
                ("isetp_sel", 2, "8 chains of ISETP.LT.U32 + SEL x 8 per trip: 2 warp instructions each"),
            )
        ),
        (
            "imad_zero",
            "warp_instructions",
            64 * t * warps,
            lambda: k["imad_zero"][grid, THREADS](out, t),
            0,
            0,
            "int_alu's 8 IMAD chains on operands 0 at run time (no toggling), x 8 per trip",
        ),
        (
            "iadd3_zero",
            "warp_instructions",
            64 * t * warps,
            lambda: k["iadd3_zero"][grid, THREADS](out, t),
            0,
            0,
            "iadd3's 8 chains on operands 0 at run time (no toggling), x 8 per trip",
        ),
        *(
            (
                name,
                "warp_instructions",
                64 * t * warps,
                (lambda name=name: k[name][grid, THREADS](out, t)),
                0,
                ints,
                note,
            )
            for name, ints, note in (
                ("lds_bcast", 0, "8 chains x = sm[x] (LDS.32), every lane word 0 (broadcast); per LDS"),
                ("lds_lane", 0, "8 chains x = sm[x] (LDS.32), each lane its own word (32 banks); per LDS"),
                (
                    "lds_bcast_rand",
                    1,
                    "8 chains x = sm[x & 1023] (LDS.32) on random words, every lane column 0 (broadcast), "
                    "another row each load; per LDS, its AND a companion",
                ),
                (
                    "lds_lane_rand",
                    1,
                    "8 chains x = sm[x & 1023] (LDS.32) on random words, lane l column l (32 banks), "
                    "another row each load; per LDS, its AND a companion",
                ),
            )
        ),
        (
            "issue_mix",
            "warp_instructions",
            128 * t * warps,
            lambda: k["issue_mix"][grid, THREADS](out, t),
            0,
            0,
            "8 FFMA + 8 IMAD chains interleaved, 128 per trip",
        ),
        (
            "mufu_ex2",
            "warp_instructions",
            64 * t * warps,
            lambda: k["mufu_ex2"][grid, THREADS](out, t),
            0,
            0,
            "8 chains of ex2.approx.ftz.f32 x 8 per trip",
        ),
        (
            "shfl",
            "warp_instructions",
            64 * t * warps,
            lambda: k["shfl"][grid, THREADS](out, t),
            0,
            0,
            "8 chains of shfl.sync.bfly x 8 per trip",
        ),
        (
            "cvt_bf16",
            "warp_instructions",
            16 * t * warps,
            lambda: k["cvt_bf16"][grid, THREADS](out, t),
            0,
            2,
            "4 chains of cvt.rn.bf16x2.f32 x 4 per trip; 2 integer unpacks each (companions)",
        ),
        (
            "l2_read_v4",
            "bytes",
            64 * l2.shape[0] * 4,
            lambda: k["l2_read_v4"][grid, THREADS](l2, out, 64),
            0.25,
            6 / 512,
            "16 MiB re-read 64x per launch with LDG.128, reader rotated 131 blocks per pass; 4 FADD per 16 B",
        ),
        (
            "hbm_read_v4",
            "bytes",
            hbm.nbytes,
            lambda: k["l2_read_v4"][grid, THREADS](hbm_nb, out, 1),
            0.25,
            6 / 512,
            "2 GiB read once per launch with LDG.128; 4 FADD per 16 B",
        ),
        (
            "cp_async_l2",
            "bytes",
            64 * l2.shape[0] * 4,
            lambda: k["cp_async_l2"][grid, THREADS](l2, out, 64),
            0,
            5 / 512,
            "cp.async.cg 16 B from the 16 MiB buffer into shared memory, 8 per thread in flight, wait_all",
        ),
    ]
    return rows, (out, l2, hbm)


# --- eager bf16 attention (Hugging Face style) --------------------------------------------------------

EAGER_SHAPES = ((8, 16, 1024), (2, 16, 4096), (1, 16, 16384))


def eager_steps(q, k, v, scale):
    import torch

    s = torch.matmul(q, k.transpose(-2, -1))
    s2 = s * scale
    p32 = torch.softmax(s2, dim=-1, dtype=torch.float32)
    p = p32.to(q.dtype)
    return torch.matmul(p, v), (s, s2, p32, p)


def eager_shape(b, h, n, counter, seconds, rng):
    """Rows of one shape: the whole chain NVML-looped (checked first), then each launch timed alone."""
    import torch

    from benchmarks.energy_h200 import sampled_error
    from gpu_kernels.measure import nvml_energy as energy

    sets = [[torch.randn(b, h, n, 64, device="cuda").to(torch.bfloat16) for _ in range(3)] for _ in range(2)]
    scale = 1 / math.sqrt(64)
    o, _ = eager_steps(*sets[0], scale)
    torch.cuda.synchronize()
    err = sampled_error(o, *sets[0], rng)
    del o
    idx = [0]

    def call():
        idx[0] += 1
        eager_steps(*sets[idx[0] % 2], scale)

    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    res = energy.measure(
        call, torch.cuda.synchronize, counter, seconds, call_seconds=time.perf_counter() - t0
    )
    base = {"dtype": "bf16", "pass": "fwd", "batch": b, "heads": h, "seq_len": n, "head_dim": 64}
    rows = [
        {
            **base,
            **res,
            "variant": "eager_bf16",
            "status": "ok" if err <= 2e-2 else "WRONG RESULT",
            "rel_err": err,
            "ms_per_call": 1e3 * res["seconds"] / res["calls"],
            "joules_per_call": res["joules"] / res["calls"],
            "params": f"torch={torch.__version__};softmax_dtype=float32",
        }
    ]
    q, k, v = sets[0]
    _, (s, s2, p32, p) = eager_steps(q, k, v, scale)
    steps = {
        "qk_gemm": lambda: torch.matmul(q, k.transpose(-2, -1)),
        "scale": lambda: s * scale,
        "softmax": lambda: torch.softmax(s2, dim=-1, dtype=torch.float32),
        "cast": lambda: p32.to(torch.bfloat16),
        "pv_gemm": lambda: torch.matmul(p, v),
    }
    for name, fn in steps.items():
        for _ in range(3):
            fn()
        times = []
        for _ in range(10):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
        rows.append(
            {
                **base,
                "variant": f"eager_bf16:{name}",
                "status": "ok",
                "ms_per_call": float(np.median(times)),
                "calls": 10,
                "note": "CUDA events, median of 10 after 3 warm-up",
            }
        )
    return rows


def measure_eager(counter, seconds, rng, deadline):
    import torch

    rows = []
    for b, h, n in EAGER_SHAPES:
        if time.monotonic() > deadline - seconds - 5:
            rows.append({"variant": "eager_bf16", "batch": b, "heads": h, "seq_len": n, "status": "skipped"})
            continue
        try:
            rows += eager_shape(b, h, n, counter, seconds, rng)
        except Exception as e:  # one shape's failure (out of memory) must not lose the others
            rows.append(
                {
                    "variant": "eager_bf16",
                    "batch": b,
                    "heads": h,
                    "seq_len": n,
                    "status": "error",
                    "note": f"{type(e).__name__}: {str(e)[:150]}",
                }
            )
        torch.cuda.empty_cache()
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--budget-s", type=float, default=150.0)
    p.add_argument(
        "--only", default="", help="only these benches (comma separated; the eager attention skipped)"
    )
    p.add_argument("--units-file", default="cost_units_h200.csv", help="name of the unit-calibration CSV")
    args = p.parse_args(argv)
    deadline = time.monotonic() + args.budget_s
    from numba import cuda

    from benchmarks.energy_h200 import ATTN_FIELDS
    from gpu_kernels.device import silence_performance_warning
    from gpu_kernels.measure import nvml_energy as energy
    from measurements.provenance import check_output_dir, csv_text, provenance, write_measurement

    check_output_dir(args.out)
    os.makedirs(args.out, exist_ok=True)
    silence_performance_warning()
    counter = energy.NvmlCounter(0)
    sms = int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    record = provenance(
        {
            "what": "NVML total-energy counter around the cost model's unit micro-benchmarks and the eager bf16 "
            "attention (benchmarks/cost_units_h200.py); board energy, static not subtracted in the raw rows",
            "limits": counter.limits(),
            "state_at_start": counter.state(),
            "seconds": args.seconds,
        }
    )
    units_path = os.path.join(args.out, args.units_file)
    eager_path = os.path.join(args.out, "eager_bf16_h200.csv")
    rows = []

    def save():
        write_measurement(
            units_path, csv_text([{k: r.get(k, "") for k in UNIT_FIELDS} for r in rows], UNIT_FIELDS), record
        )

    bench_list, keep = benches(sms)
    only = [x for x in args.only.split(",") if x]
    if only:
        bench_list = [b for b in bench_list if b[0] in only]
        record["benches"] = only
        record["sass_opcodes"] = sass_histograms(only)
    for name, _unit, _units, call, *_ in bench_list:  # compile and warm up; a failure drops the bench
        try:
            call()
            cuda.synchronize()
        except Exception as e:
            print(f"{name} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            bench_list = [b for b in bench_list if b[0] != name]
    idle = energy.measure_idle(counter, 1.0)
    rows.append({"bench": "idle", "repeat": 0, "units": 0, **idle, "note": "sleep"})
    for name, unit, units, call, fp32, ints, note in bench_list:
        if time.monotonic() > deadline - 60:
            print(f"{name}: skipped (budget)", flush=True)
            continue
        t0 = time.perf_counter()
        call()
        cuda.synchronize()
        res = energy.measure(
            call, cuda.synchronize, counter, args.seconds, call_seconds=time.perf_counter() - t0
        )
        rate = units * res["calls"] / res["seconds"]
        rows.append(
            {
                "bench": name,
                "repeat": 0,
                "units": units * res["calls"],
                "unit": unit,
                **res,
                "rate_per_s": rate,
                "fp32_per_unit": fp32 or "",
                "int_per_unit": ints or "",
                "note": note,
            }
        )
        print(f"{name:12s} {res['watts']:7.1f} W {rate:.4e} {unit}/s SM {res['sm_mhz']} MHz", flush=True)
        save()
    del keep
    if only:
        return summary(rows, [])
    rng = np.random.default_rng(2027)
    eager = measure_eager(counter, args.seconds, rng, deadline)
    write_measurement(
        eager_path, csv_text([{k: r.get(k, "") for k in ATTN_FIELDS} for r in eager], ATTN_FIELDS), record
    )
    summary(rows, eager)


def sass_histograms(names):
    """Opcode counts of each bench kernel's SASS (nvdisasm through numba), to check what ran."""
    import re
    from collections import Counter

    k = kernels()
    out = {}
    for name in names:
        if name not in k:
            continue
        try:
            k[name].compile("(float32[::1], int64)")
            sass = k[name].inspect_sass()
            sass = sass if isinstance(sass, str) else next(iter(sass.values()))
            ops = Counter(
                m.group(1).split(".")[0]
                for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)
            )
            out[name] = dict(ops.most_common(12))
        except Exception as e:  # noqa: BLE001 - recorded, the measurement still runs
            out[name] = f"{type(e).__name__}: {str(e)[:200]}"
        print(f"SASS {name}: {out[name]}", flush=True)
    return out


def summary(rows, eager):
    static = next((r["watts"] for r in rows if r["bench"] == "static"), float("nan"))
    print(f"{'bench':12s} {'W':>7s} {'rate/s':>11s} {'pJ/unit':>9s}")
    for r in rows:
        if r.get("rate_per_s"):
            print(
                f"{r['bench']:12s} {r['watts']:7.1f} {r['rate_per_s']:11.4e} {(r['watts'] - static) / r['rate_per_s'] * 1e12:9.2f}"
            )
    for r in eager:
        print(
            f"{r['variant']:18s} N={r['seq_len']:6d} {r.get('ms_per_call', 0):9.3f} ms {r.get('joules_per_call', '') or ''}"
        )


if __name__ == "__main__":
    main()
