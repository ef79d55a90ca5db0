"""FlashAttention-2 forward, optimised (kernel ``fast``): register tiling, vector loads, exp2.

Same algorithm and HBM traffic as the readable ``tiled`` kernel (outer loop over Q blocks, K and V
streamed past, online softmax, O and L written once), but each thread now owns a TM×TN micro-tile
of the score block S and a TM×(d/NTX) micro-tile of the output O, so every value it loads from
shared memory feeds several multiply-adds (register tiling), as in a fast SGEMM.

Mapping (all sizes compile-time constants of one ``simlib.kernel_layout.FastConfig``):

    grid    = (Tr, B·H)                 one thread block per (query block i, batch·head)
    block   = NTY·NTX threads           thread (ty, tx) = (tid // NTX, tid % NTX)
    Br, Bc  = NTY·TM, NTX·TN            query rows, key rows per block
    S tile  : thread owns rows ty + NTY·a (a < TM) and key columns tx + NTX·b (b < TN)
    O tile  : thread owns rows ty + NTY·a and head-dim columns 4·tx + 4·NTX·g + e (e < 4, g < d/4NTX)
    shared  : Qs[Br][d+4], Ks[Bc][d+4], Vs[Bc][d], Ps[Br][Bc+pad], Red[Br][NTX]  (one dynamic array)

Per K/V block j: (1) K_j, V_j land in shared memory, either with 16-byte coalesced loads and stores
behind a barrier, or (``async_copy``) with cp.async copies issued one block ahead (K_j+1 while
softmax and PV of j run, V_j+1 during the next QK); rows past N are zero-filled. (2) S = Q K_jᵀ:
per step of 4 head-dim columns a thread reads TM float4 of Q and TN float4 of K and does 4·TM·TN
FMAs; Q was pre-multiplied by log2(e)/sqrt(d) when it was loaded, so S is already in base-2 units.
(3) Row max: each thread writes the max of its TN scores per row to Red and reads back the row's
NTX partial maxima (the NTX threads of a row group sit in one warp: a warp barrier suffices).
(4) P = exp2(S − m) goes to Ps; the output is rescaled by exp2(m_old − m_new) in registers; each
thread keeps a *partial* row sum over its own columns, reduced once at the end. (5) O += P V_j:
per step of 4 key rows a thread reads TM float4 of P and 4·(d/4NTX) float4 of V and does
4·TM·(d/NTX) FMAs. ``unroll`` puts 1, 2 or 4 such steps in one loop trip (numba has no
``#pragma unroll``; the compiler unrolls only the short inner loops), so the next step's loads can
be issued above this step's FMAs. The shared-memory element counts of every step are
docs/COUNTING.md §fa2_fast, and simlib's schedule ``fa2_fast`` counts exactly these.

Banks: row strides of d+4 (Q, K) keep 16-byte alignment and put the K rows read by a quarter-warp
into 8 different bank groups; the P stride is Bc rounded up to NTX (mod 32), so the 32/NTX row
groups of a warp store P into disjoint banks (ncu: 0 load and store conflicts at d = 64).

One source, three ways to run (as gpu_kernels.counting describes): ``counting`` adds per-thread
counters (pruned when False), and under numba's CUDA simulator the vector loads/stores and cp.async
are plain Python functions and the warp barrier becomes a block barrier (the simulator has no
syncwarp); neither changes what is counted.

Shared memory: the defaults need 107 KiB (d = 64) and 179 KiB (d = 128) per block. numba has no API
for the opt-in above 48 KiB, so ``allow_dynamic_shared`` sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_
SIZE_BYTES on the compiled kernel through the driver: cuKernelSetAttribute, the call numba itself
uses for the carveout (numba-cuda 0.30 loads kernels as CUkernel). It worked on the H200 (recorded in
compare_h200.provenance.json, ``smem_optin``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32  # module globals: the CUDA simulator swaps `cuda` in a kernel's globals

from simlib.kernel_layout import STATIC_SHARED_LIMIT_BYTES, FastConfig, fast_default_config
from simlib.workload import Workload

from ..checks import check_qkv
from ..counting import counts_from, new_counters, simulator_enabled
from ..flush import flush_counters
from ..plan import KernelPlan
from ..tensor_core.warp_ops import async_copies

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


# --- 16-byte loads and stores ---------------------------------------------------------------------
# numba has no float4 loads; these intrinsics emit one `ld/st.{global,shared}.v4.f32` for four
# consecutive floats at a flat index that must be a multiple of 4 (16-byte aligned). Under the
# simulator the kernel gets the plain Python versions below instead.


def _ld4_py(arr, idx):
    return arr[idx], arr[idx + 1], arr[idx + 2], arr[idx + 3]


def _st4_py(arr, idx, x0, x1, x2, x3):
    arr[idx] = x0
    arr[idx + 1] = x1
    arr[idx + 2] = x2
    arr[idx + 3] = x3


@functools.cache
def _scalar_device_functions():
    """ld4/st4 as four 4-byte accesses (numba's own indexing): the ablation of the vector loads."""
    return cuda.jit(device=True, inline=True)(_ld4_py), cuda.jit(device=True, inline=True)(_st4_py)


@functools.cache
def _vector_intrinsics():
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    f4 = ir.VectorType(ir.FloatType(), 4)

    def _vec_ptr(context, builder, aryty, ary_val, idx):
        ary = context.make_array(aryty)(context, builder, ary_val)
        ptr = builder.gep(ary.data, [idx])
        return builder.bitcast(ptr, f4.as_pointer(ptr.type.addrspace))

    @intrinsic
    def ld4(typingctx, arr, idx):
        ret = types.UniTuple(types.float32, 4)

        def codegen(context, builder, signature, args):
            vec = builder.load(_vec_ptr(context, builder, signature.args[0], args[0], args[1]), align=16)
            elems = [builder.extract_element(vec, ir.IntType(32)(i)) for i in range(4)]
            return context.make_tuple(builder, ret, elems)

        return ret(arr, idx), codegen

    @intrinsic
    def st4(typingctx, arr, idx, x0, x1, x2, x3):
        f32 = types.float32

        def codegen(context, builder, signature, args):
            vec = ir.Constant(f4, ir.Undefined)
            for i in range(4):
                vec = builder.insert_element(vec, args[2 + i], ir.IntType(32)(i))
            builder.store(vec, _vec_ptr(context, builder, signature.args[0], args[0], args[1]), align=16)
            return context.get_dummy_value()

        return types.void(arr, idx, f32, f32, f32, f32), codegen

    return ld4, st4


def kernel_signature():
    from numba.cuda import types

    a1 = types.Array(types.float32, 1, "C")
    return (a1, a1, a1, a1, a1, types.Array(types.int64, 1, "C"), types.int64)


@functools.cache
def fast_kernel_source(cfg: FastConfig, counting: bool, simulator: bool):
    """The kernel as a Python function (the one source), closed over cfg's constants."""
    D, TM, TN, NTX, NTY = cfg.head_dim, cfg.tm, cfg.tn, cfg.ntx, cfg.nty
    BR, BC, NT = cfg.block_rows, cfg.block_cols, cfg.threads
    D4, BC4, NTX4 = D // 4, BC // 4, NTX // 4
    DG = cfg.o_groups
    DX = 4 * DG  # output columns per thread
    QSTR, KSTR, VSTR, PSTR, RSTR = cfg.q_stride, cfg.k_stride, cfg.v_stride, cfg.p_stride, cfg.r_stride
    Q_OFF, K_OFF, V_OFF, P_OFF, R_OFF, _ = cfg.offsets()
    RPI = NT // D4  # tile rows copied per pass: thread t copies float4 column t % D4 of rows t // D4 + RPI·it
    Q_ITERS, KV_ITERS = BR // RPI, BC // RPI
    COUNTING = counting
    SIM = simulator
    ASYNC = cfg.async_copy
    UNROLL = cfg.unroll
    C_Q = np.float32(LOG2E / math.sqrt(D))  # softmax scale and log2(e), folded into Q
    F_LN2 = np.float32(LN2)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)
    if SIM:
        ld4, st4 = _ld4_py, _st4_py
    else:
        ld4, st4 = _vector_intrinsics() if cfg.vector_loads else _scalar_device_functions()
    copies = async_copies(SIM, 4)  # the one cp.async (tensor_core.warp_ops)
    cp_async16, cp_commit, cp_wait1 = copies.cp_async16_full, copies.cp_commit, copies.cp_wait1

    def copy_async(sm, off, stride, src, first, n, r0, c4):
        """cp.async my share of rows first..first+BC-1 of src (flat, row length D) to sm[off:];
        rows past n are zero-filled. Returns the elements read from global memory."""
        got = 0
        for it in range(KV_ITERS):
            row = r0 + RPI * it
            dst = off + row * stride + 4 * c4
            if first + row < n:
                cp_async16(sm, dst, src, (first + row) * D + 4 * c4)
                got += 4
            else:
                st4(sm, dst, ZERO, ZERO, ZERO, ZERO)
        return got

    copy_async = copy_async if SIM else cuda.jit(device=True, inline=True)(copy_async)

    def refill_async(sm, off, stride, src, next_first, n, more, r0, c4):
        """Once everyone is done with a K (or V) tile: start copying the next block's tile into its
        place if there is one (`more`), and close the commit group (an empty group after the last
        block keeps the wait counts uniform). Returns the elements read from global memory."""
        cuda.syncthreads()
        got = 0
        if more:
            got = copy_async(sm, off, stride, src, next_first, n, r0, c4)
        cp_commit()
        return got

    refill_async = refill_async if SIM else cuda.jit(device=True, inline=True)(refill_async)

    def fa2_fast(q, k, v, o, lse, counters, n):
        # q, k, v, o: flat (B·H·N·d,) fp32; lse: flat (B·H·N,); counters: int64[4]; n = N
        sm = cuda.shared.array(0, float32)
        tid = cuda.threadIdx.x
        ty = tid // NTX
        tx = tid - ty * NTX
        r0 = tid // D4  # tile copies: my first row and my float4 column
        c4 = tid - r0 * D4
        q_start = cuda.blockIdx.x * BR
        head = cuda.blockIdx.y * n  # first row of this batch·head in the flat arrays
        Tc = (n + BC - 1) // BC
        q_base = Q_OFF + ty * QSTR  # my rows are ty + NTY·a: row a starts at q_base + a·NTY·QSTR
        k_base = K_OFF + tx * KSTR  # my key columns are tx + NTX·b
        v_base = V_OFF + 4 * tx
        p_base = P_OFF + ty * PSTR
        r_base = R_OFF + ty * RSTR

        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0

        # --- Q_i -> Qs, pre-scaled by log2(e)/sqrt(d); rows past N are zeros.
        for it in range(Q_ITERS):
            row = r0 + RPI * it
            x0 = ZERO
            x1 = ZERO
            x2 = ZERO
            x3 = ZERO
            if q_start + row < n:
                x0, x1, x2, x3 = ld4(q, (head + q_start + row) * D + 4 * c4)
                x0 *= C_Q
                x1 *= C_Q
                x2 *= C_Q
                x3 *= C_Q
                if COUNTING:
                    n_gr += 4
            st4(sm, Q_OFF + row * QSTR + 4 * c4, x0, x1, x2, x3)
        if COUNTING:
            n_sw += 4 * Q_ITERS

        if ASYNC:  # prologue: K_0 and V_0 in flight, as two commit groups
            got = copy_async(sm, K_OFF, KSTR, k, head, head + n, r0, c4)
            cp_commit()
            got += copy_async(sm, V_OFF, VSTR, v, head, head + n, r0, c4)
            cp_commit()
            if COUNTING:
                n_gr += got
                n_sw += 8 * KV_ITERS

        m_i = cuda.local.array(TM, float32)  # running row max (base-2 units)
        l_i = cuda.local.array(TM, float32)  # this thread's partial row sum over its own columns
        acc = cuda.local.array((TM, DX), float32)  # output micro-tile
        s = cuda.local.array((TM, TN), float32)  # score micro-tile
        qf = cuda.local.array((UNROLL, TM, 4), float32)  # Q (then P) fragments: 4 columns of my TM rows
        vr = cuda.local.array(DX, float32)  # my DX columns of one V row
        for a in range(TM):
            m_i[a] = NEG_INF
            l_i[a] = ZERO
            for x in range(DX):
                acc[a, x] = ZERO

        for j in range(Tc):
            k_start = j * BC
            if ASYNC:
                cp_wait1()  # my copies of K_j have landed (V_j may still be in flight)
                cuda.syncthreads()  # ... and everyone's (and Qs is complete)
            else:
                cuda.syncthreads()  # everyone is done with the previous K_j, V_j (and Qs is complete)
                for it in range(KV_ITERS):
                    row = r0 + RPI * it
                    k0 = ZERO
                    k1 = ZERO
                    k2 = ZERO
                    k3 = ZERO
                    v0 = ZERO
                    v1 = ZERO
                    v2 = ZERO
                    v3 = ZERO
                    if k_start + row < n:
                        g = (head + k_start + row) * D + 4 * c4
                        k0, k1, k2, k3 = ld4(k, g)
                        v0, v1, v2, v3 = ld4(v, g)
                        if COUNTING:
                            n_gr += 8
                    st4(sm, K_OFF + row * KSTR + 4 * c4, k0, k1, k2, k3)
                    st4(sm, V_OFF + row * VSTR + 4 * c4, v0, v1, v2, v3)
                if COUNTING:
                    n_sw += 8 * KV_ITERS
                cuda.syncthreads()  # K_j, V_j complete

            # --- S = (Q·c) K_jᵀ on the micro-tile: per 4 head-dim columns, TM float4 of Q and
            # TN float4 of K feed 4·TM·TN FMAs.
            for a in range(TM):
                for b in range(TN):
                    s[a, b] = ZERO
            for k_out in range(D4 // UNROLL):  # UNROLL steps of 4 columns per trip (their loads can be
                # issued together); the short inner loops below are unrolled by the compiler
                for u in range(UNROLL):
                    for a in range(TM):
                        qf[u, a, 0], qf[u, a, 1], qf[u, a, 2], qf[u, a, 3] = ld4(
                            sm, q_base + a * (NTY * QSTR) + 4 * (k_out * UNROLL + u)
                        )
                for b in range(TN):
                    for u in range(UNROLL):
                        k0, k1, k2, k3 = ld4(sm, k_base + b * (NTX * KSTR) + 4 * (k_out * UNROLL + u))
                        for a in range(
                            TM
                        ):  # a chain of 4 FMAs (t + x·y contracts; a sum of products would not)
                            t = s[a, b] + qf[u, a, 0] * k0
                            t = t + qf[u, a, 1] * k1
                            t = t + qf[u, a, 2] * k2
                            s[a, b] = t + qf[u, a, 3] * k3
            if COUNTING:
                n_sr += D * (TM + TN)

            if ASYNC:  # K_j is used up: start copying K_j+1 into its place
                got = refill_async(sm, K_OFF, KSTR, k, head + k_start + BC, head + n, j + 1 < Tc, r0, c4)
                if COUNTING and j + 1 < Tc:  # rows past N were zero-filled: stored all the same
                    n_gr += got
                    n_sw += 4 * KV_ITERS

            if k_start + BC > n:  # ragged last block: keys past N get score -inf (p = 0)
                for b in range(TN):
                    if k_start + tx + NTX * b >= n:
                        for a in range(TM):
                            s[a, b] = NEG_INF

            # --- row max: partial max of my TN columns -> Red; the row's NTX partials back.
            for a in range(TM):
                mx = s[a, 0]
                for b in range(1, TN):
                    mx = max(mx, s[a, b])
                sm[r_base + a * (NTY * RSTR) + tx] = mx
            if COUNTING:
                n_sw += TM
            if SIM:
                cuda.syncthreads()
            else:
                cuda.syncwarp()  # the NTX threads of a row group sit in one warp

            for a in range(TM):
                m_new = m_i[a]
                for t4 in range(NTX4):
                    r0_, r1_, r2_, r3_ = ld4(sm, r_base + a * (NTY * RSTR) + 4 * t4)
                    m_new = max(m_new, max(max(r0_, r1_), max(r2_, r3_)))
                # While every score of the row so far is −inf (K rows of −inf), exp2(−inf − m_new)
                # would be NaN: measure from 0 instead, so they give p = 0 and nothing is rescaled
                # (l and acc are still 0).
                m_ref = ZERO if m_new == NEG_INF else m_new
                alpha = math.exp2(m_i[a] - m_ref)  # 0 while m = -inf
                m_i[a] = m_new
                l_sum = l_i[a] * alpha
                for x in range(DX):
                    acc[a, x] *= alpha
                for b in range(TN):
                    p = math.exp2(s[a, b] - m_ref)
                    l_sum += p
                    sm[p_base + a * (NTY * PSTR) + tx + NTX * b] = p
                l_i[a] = l_sum
            if COUNTING:
                n_sr += TM * NTX
                n_sw += TM * TN

            if ASYNC:
                cp_wait1()  # V_j has landed (K_j+1 may still be in flight)
                cuda.syncthreads()  # ... everyone's; this also orders the P stores below
            elif SIM:
                cuda.syncthreads()
            else:
                cuda.syncwarp()  # a row group reads back only the P rows its own warp wrote

            # --- O += P V_j on the micro-tile: per 4 key rows, TM float4 of P and 4·DG float4 of V
            # feed 4·TM·DX FMAs.
            for c_out in range(BC4 // UNROLL):
                for u in range(UNROLL):
                    for a in range(TM):
                        qf[u, a, 0], qf[u, a, 1], qf[u, a, 2], qf[u, a, 3] = ld4(
                            sm, p_base + a * (NTY * PSTR) + 4 * (c_out * UNROLL + u)
                        )
                for uc in range(4 * UNROLL):  # key row 4·(c_out·UNROLL + u) + cc, uc = 4u + cc
                    for gg in range(DG):
                        vr[4 * gg], vr[4 * gg + 1], vr[4 * gg + 2], vr[4 * gg + 3] = ld4(
                            sm, v_base + (4 * c_out * UNROLL + uc) * VSTR + 4 * NTX * gg
                        )
                    for a in range(TM):
                        pa = qf[uc // 4, a, uc % 4]
                        for x in range(DX):
                            acc[a, x] += pa * vr[x]
            if COUNTING:
                n_sr += BC * (TM + DX)

            if ASYNC:  # V_j is used up: start copying V_j+1 into its place
                got = refill_async(sm, V_OFF, VSTR, v, head + k_start + BC, head + n, j + 1 < Tc, r0, c4)
                if COUNTING and j + 1 < Tc:  # rows past N were zero-filled: stored all the same
                    n_gr += got
                    n_sw += 4 * KV_ITERS

        # --- full row sums from the NTX partial sums, then O = acc / l and L = (m + log2 l)·ln 2.
        if SIM:
            cuda.syncthreads()
        else:
            cuda.syncwarp()  # my row group's last reads of Red are done
        for a in range(TM):
            sm[r_base + a * (NTY * RSTR) + tx] = l_i[a]
        if COUNTING:
            n_sw += TM
        if SIM:
            cuda.syncthreads()
        else:
            cuda.syncwarp()
        for a in range(TM):
            l_row = ZERO
            for t4 in range(NTX4):
                r0_, r1_, r2_, r3_ = ld4(sm, r_base + a * (NTY * RSTR) + 4 * t4)
                l_row += (r0_ + r1_) + (r2_ + r3_)
            row = q_start + ty + NTY * a
            if row < n:
                inv_l = ONE / l_row
                for gg in range(DG):
                    st4(
                        o,
                        (head + row) * D + 4 * tx + 4 * NTX * gg,
                        acc[a, 4 * gg] * inv_l,
                        acc[a, 4 * gg + 1] * inv_l,
                        acc[a, 4 * gg + 2] * inv_l,
                        acc[a, 4 * gg + 3] * inv_l,
                    )
                if COUNTING:
                    n_gw += DX
                if tx == 0:
                    lse[head + row] = (m_i[a] + math.log2(l_row)) * F_LN2
                    if COUNTING:
                        n_gw += 1
        if COUNTING:
            n_sr += TM * NTX

        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    fa2_fast.__name__ = fa2_fast.__qualname__ = (
        f"fa2_fast_d{D}_tm{TM}_tn{TN}_t{NTY}x{NTX}{'_async' if ASYNC else ''}_u{UNROLL}{'_count' if COUNTING else ''}"
    )
    return fa2_fast


@functools.cache
def fast_kernel(cfg: FastConfig, counting: bool):
    """The compiled kernel (a dispatcher) for cfg; on a GPU compiled now, with its signature."""
    sim = simulator_enabled()
    fn = fast_kernel_source(cfg, counting, sim)
    if sim:
        return cuda.jit(fn)
    opts = {} if cfg.register_cap is None else {"max_registers": cfg.register_cap}
    return cuda.jit(kernel_signature(), fastmath=True, **opts)(fn)


#: How the shared-memory opt-in was made (filled in by allow_dynamic_shared; the benchmark records it).
SMEM_OPTIN = {}


def allow_dynamic_shared(dispatcher, nbytes: int) -> str:
    """Raise the kernel's dynamic shared-memory limit above 48 KiB; returns how it was done.

    numba-cuda (0.30) has no API for this. Its compiled kernel is a CUkernel (the library API), so
    the attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is set with cuKernelSetAttribute
    for the current device, as numba's own ``set_shared_memory_carveout`` does; if that fails, on
    the CUfunction (cuKernelGetFunction + cuFuncSetAttribute) through the cuda-python binding.
    """
    if nbytes <= STATIC_SHARED_LIMIT_BYTES:
        return "not needed"
    from numba.cuda.cudadrv import driver as drv

    kernel = next(iter(dispatcher.overloads.values()))
    cufunc = kernel._codelibrary.get_cufunc()
    attr = drv.binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    try:
        drv.driver.cuKernelSetAttribute(attr, int(nbytes), cufunc.handle, cufunc.device.id)
        how = "cuKernelSetAttribute (numba driver API)"
    except Exception as first:  # pragma: no cover - depends on the driver binding
        from cuda.bindings import driver as cbd

        err, func = cbd.cuKernelGetFunction(cufunc.handle)
        if err != cbd.CUresult.CUDA_SUCCESS:
            raise RuntimeError(
                f"cuKernelSetAttribute failed ({first!r}); cuKernelGetFunction: {err}"
            ) from first
        (err,) = cbd.cuFuncSetAttribute(func, attr, int(nbytes))
        if err != cbd.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuFuncSetAttribute: {err}") from first
        how = "cuFuncSetAttribute (cuda-python binding)"
    SMEM_OPTIN[dispatcher.py_func.__name__] = {"bytes": int(nbytes), "how": how}
    return how


@dataclass
class FastResult:
    o: np.ndarray  # (B, H, N, d) fp32
    lse: np.ndarray  # (B, H, N) fp32
    config: FastConfig
    counts: dict | None = None


@dataclass(frozen=True, kw_only=True)
class FastPlan(KernelPlan):
    """Everything a launch needs; built once, launched many times."""

    config: FastConfig

    @property
    def grid(self):
        return (-(-self.workload.nq // self.config.block_rows), self.workload.batch_heads)

    @property
    def block(self):
        return (self.config.threads,)

    def kernel(self):
        disp = fast_kernel(self.config, self.counting)
        if not simulator_enabled():
            _ensure_smem(disp, self.config.smem_bytes)
        return disp

    def launch(self, q, k, v, o, lse, counters):
        """Flat (1-D) device arrays: q, k, v, o of B·H·N·d floats, lse of B·H·N; no checks, no sync."""
        self.kernel()[self.grid, self.block, 0, self.config.smem_bytes](
            q, k, v, o, lse, counters, self.workload.seq_len
        )


_SMEM_SET = set()


def _ensure_smem(disp, nbytes):
    key = (id(disp), nbytes)
    if key not in _SMEM_SET:
        allow_dynamic_shared(disp, nbytes)
        _SMEM_SET.add(key)


def resolve_config(head_dim: int, config: FastConfig | None = None) -> FastConfig:
    cfg = fast_default_config(head_dim) if config is None else config
    if cfg.head_dim != head_dim:
        raise ValueError(f"config.head_dim={cfg.head_dim} does not match the inputs' head_dim={head_dim}")
    return cfg.check()


def fast_plan(workload: Workload, config: FastConfig | None = None, counting=False) -> FastPlan:
    """The plan for an fp32 self-attention workload (the fast kernel has no GQA, N_q ≠ N_k or mask)."""
    return FastPlan(
        workload=workload, config=resolve_config(workload.head_dim, config), counting=bool(counting)
    )


def plan_fast(q, k, v, *, config: FastConfig | None = None, counting=False) -> FastPlan:
    return fast_plan(check_qkv(q, k, v), config, counting)


def run_fast(q, k, v, *, config: FastConfig | None = None, count=False) -> FastResult:
    """Optimised FlashAttention-2 forward on host fp32 arrays (B, H, N, d); returns O, L (+ counts).

    Outputs are poisoned with NaN before the launch.
    """
    plan = plan_fast(q, k, v, config=config, counting=count)
    w = plan.workload
    b, h, n, d = w.batch, w.heads, w.seq_len, w.head_dim
    dq, dk, dv = (cuda.to_device(np.ascontiguousarray(x).reshape(-1)) for x in (q, k, v))
    do = cuda.to_device(np.full(b * h * n * d, np.nan, dtype=np.float32))
    dl = cuda.to_device(np.full(b * h * n, np.nan, dtype=np.float32))
    counters = new_counters()
    plan.launch(dq, dk, dv, do, dl, counters)
    if not simulator_enabled():
        cuda.synchronize()
    return FastResult(
        o=do.copy_to_host().reshape(b, h, n, d),
        lse=dl.copy_to_host().reshape(b, h, n),
        config=plan.config,
        counts=counts_from(counters) if count else None,
    )
