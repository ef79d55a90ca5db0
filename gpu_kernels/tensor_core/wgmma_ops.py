"""Hopper's warpgroup MMA (``wgmma.mma_async``, sm_90a) for numba.cuda, with simulator twins.

A *warpgroup* is 4 consecutive warps (128 threads, the first warp's index a multiple of 4). One
``wgmma.mma_async.m64nNk16`` computes D (64×N, fp32) = A (64×16) · B (16×N) + D for the whole group:
B always from shared memory, A from shared memory ("SS") or from registers ("RS"). Shared-memory
operands are named by a 64-bit *matrix descriptor*; the instruction is asynchronous: it is issued
after ``wgmma.fence``, closed into a group by ``wgmma.commit_group``, and its results (the
accumulator registers) may be read only after ``wgmma.wait_group n`` (at most n groups in flight).

Accumulator layout (PTX ISA, "Register fragments", m64nNk16; the same for A in registers): warp w
of the group owns rows 16w .. 16w + 15; lane 4g + t holds, per 8-wide column tile i (i < N/8),
D[16w + g, 8i + 2t + e] in acc[i, e] and D[16w + g + 8, 8i + 2t + e] in acc[i, 2 + e] (e = 0, 1):
mma.m16n8k16's accumulator layout repeated over N/8 tiles, so fa2_tc's softmax and P packing
(``flash_tile``) apply unchanged with one m-tile. A from registers: four 32-bit registers per
thread, mma.m16n8k16's A layout for the warp's 16 rows (a0 = A[16w + g, 2t:2t+2], a1 = rows + 8,
a2 = k + 8, a3 = both).

Shared-memory layout (no swizzle, "interleave"): the unit is a *core matrix* of 8 rows × 16 bytes
(8 elements), stored as 128 contiguous bytes. The descriptor holds the start address, and two
strides between core matrices, in 16-byte units (CUTLASS's canonical layouts, ``mma_sm90_desc``):

    K-major (the default, transpose flag 0): element (row r of M or N, k) at
        start + (r // 8)·SBO + (r % 8)·16 + (k // 8)·LBO + (k % 8)·2
    MN-major (transpose flag 1, 16-bit types only): element (k, n) at
        start + (n // 8)·SBO + (n % 8)·2 + (k // 8)·LBO + (k % 8)·16

The tiles here are stored *chunk-major* (``core_matrix_index``): 16-byte chunk c of row r of an
R-row tile at element c·(8R + 8) + 8r, i.e. chunk column c is R rows × 16 bytes contiguous, and 16
bytes of padding after each column. Then a row-major tile (rows = M or N, columns = k: Q and K for
S = Q Kᵀ) is K-major with SBO = 128 and LBO = 16R + 16, and a row-major tile whose columns are N (V
for O = P V: rows are k = keys) is MN-major with SBO = 16R + 16 and LBO = 128. One k-step of 16
moves the start by 2 chunk columns (K-major) or by 16 rows (MN-major, 256 bytes). The padding is
for the copies: the 8 chunks of one row (one quarter-warp's cp.async) land in 8 different groups of
4 banks ((c + r) mod 8) instead of one (an 8-way conflict without it). Worked number: a 64-key V
tile, k-step 2 starts 512 bytes in; its strides are SBO = 1040 and LBO = 128 bytes (fields 65, 8).

Operations (``wgmma_ops(dtype, simulator, n_ss, n_rs)``):

    desc(base, offset, hi)            the descriptor of the matrix at element `offset` of the shared
                                      array whose base is `base` (``addressed_ops.smem_base``); `hi`
                                      = ``descriptor_bits(lbo, sbo)``, a compile-time constant
    fence()                           wgmma.fence.sync.aligned (before the first wgmma of a batch,
                                      after registers it reads were written)
    commit()                          wgmma.commit_group.sync.aligned
    wait0(), wait1()                  wgmma.wait_group.sync.aligned 0 / 1
    proxy_fence()                     fence.proxy.async.shared::cta: shared memory written by the
                                      generic proxy (stores, cp.async) becomes visible to wgmma
    mma_ss(acc, base, da, db, scale)  D = A·B + scale·D, A and B K-major (S = Q Kᵀ), N = n_ss
    mma_rs(acc, a0, a1, a2, a3, base, db, scale)
                                      the same, A in registers, B MN-major (O += P V), N = n_rs

``order_barriers(simulator)`` gives ``(sync(bar), arrive(bar))``: ``bar.sync bar, 256`` and ``bar.arrive
bar, 256``, a named barrier (ids 1-15; 0 is ``syncthreads``'s) of two warpgroups, the one waiting, the
other passing; ``fa3_tc``'s ping-pong of its two consumer warpgroups (FA3 §3.1) takes turns on them.
A phase completes when 256 threads have reached it, waiters and arrivers together.

``pin_f32(n)`` / ``pin_u32(n)`` give ``pin(arr)``: an empty asm that reads and writes the first n
elements of a local array. The compiler may move plain arithmetic across an asm statement, but not
one asm statement across another: pinning the accumulators after ``wait`` keeps every use of them
after the wait, and pinning them (and P's registers) before ``fence`` keeps every write before it
(CUTLASS's ``warpgroup_fence_operand``).

Simulator twins (``NUMBA_ENABLE_CUDASIM=1``): the copies land at once and the MMA happens at issue,
so fence, commit, wait and the proxy fence are no-ops and pins do nothing. ``mma_ss`` decodes both
descriptors against the shared array (the "base" under the simulator) and computes the thread's own
two rows: it only reads shared memory, which the kernels' barriers keep still. ``mma_rs`` needs the
whole group's A registers: each thread writes its four to a per-block scratch, a block barrier,
each reads its group's 128 entries, a block barrier (``warp_ops._warp_gather`` over 128 lanes);
every thread of the block must issue it equally often. The order barriers' twins do not block (a
waiting warpgroup would stall the other's ``mma_rs`` at its block barriers, and with the products done
at issue the order of two groups' products changes no value): each adds one to a tally per (block,
barrier, wait or arrive) under a lock (``ORDER_TALLY``), so a test can check that every phase a group
waits on is matched by the other group's arrivals, which the hardware needs not to hang.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from typing import NamedTuple

import numpy as np
from numba import cuda  # module global: the simulator swaps `cuda` per launch

from .dtypes import check_dtype, from_bits
from .warp_ops import _plain_asm, _warp_gather

GROUP = 128  # threads per warpgroup
ROWS = 64  # M of every wgmma
MAX_N = 256
_FIELD = 0x3FFF  # 14-bit address and stride fields, in 16-byte units


class WgmmaOps(NamedTuple):
    desc: object
    fence: object
    commit: object
    wait0: object
    wait1: object
    proxy_fence: object
    mma_ss: object
    mma_rs: object


def descriptor_bits(lbo: int, sbo: int) -> np.uint64:
    """The descriptor's stride fields (no swizzle, base offset 0): LBO in bits 16-29, SBO in bits
    32-45, both in 16-byte units. ``descriptor_bits(128, 1024)`` = 8·2¹⁶ + 64·2³² = 274,878,431,232.

    >>> int(descriptor_bits(128, 1024))
    274878431232
    """
    for name, value in (("lbo", lbo), ("sbo", sbo)):
        if value % 16 or not 0 <= value >> 4 <= _FIELD:
            raise ValueError(f"{name}={value}: a stride must be a multiple of 16 bytes below 256 KiB")
    return np.uint64(((lbo >> 4) << 16) | ((sbo >> 4) << 32))


#: Which descriptor field holds which stride (CUTLASS's canonical layouts: in both major-nesses SBO
#: is the stride between 8-row groups along M or N, LBO between 8-element groups along k). A device
#: run that finds the hardware reading them the other way round flips the flag, and the simulator
#: twins, which decode through the same flag, follow.
K_MAJOR_SBO_ALONG_MN = True
MN_MAJOR_SBO_ALONG_MN = True


SWIZZLE_128B = 1  # the descriptor's layout type (bits 62-63) for the 128-byte swizzle on sm_90
ATOM_BYTES = 1024  # one 128-byte-swizzle atom: 8 rows of 128 bytes; tiles start on a multiple of it


def swizzle128_bits(lbo: int, sbo: int) -> np.uint64:
    """A 128-byte-swizzled layout's descriptor fields: LBO, SBO (as ``descriptor_bits``) and layout
    type 1 in bits 62-63. K-major: SBO = 1024 (8 rows of 128 B), LBO unused (1, CUTLASS's value);
    MN-major: SBO = 1024 between 8-row groups along k, LBO between 64-element blocks along MN."""
    return np.uint64(int(descriptor_bits(lbo, sbo)) | (SWIZZLE_128B << 62))


def swizzle128_index(rows: int):
    """A device function ``(row, chunk) -> element index`` of the 128-byte-swizzled layout of a
    `rows`-row tile: the tile as 64-column halves, each rows × 128 bytes, chunk c of row r at chunk
    (c mod 8) ^ (r mod 8) of its row (tiles.swizzled's pattern), half c div 8 after the first. A tile
    64 rows deep: row 9, chunk 10 at element 64·64 + 9·64 + ((2 ^ 1)·8) = 4,696."""
    HALF = 64 * rows

    def index(row, chunk):
        return (chunk >> 3) * HALF + (row << 6) + (((chunk & 7) ^ (row & 7)) << 3)

    return cuda.jit(device=True, inline=True)(index)


def layout_bits(mn_stride: int, k_stride: int, trans: bool) -> np.uint64:
    """The stride fields of a K-major (`trans` False) or MN-major operand whose 8-row (M or N) groups
    are `mn_stride` bytes apart and whose 8-element k groups `k_stride` bytes apart."""
    along_mn = MN_MAJOR_SBO_ALONG_MN if trans else K_MAJOR_SBO_ALONG_MN
    return descriptor_bits(k_stride, mn_stride) if along_mn else descriptor_bits(mn_stride, k_stride)


def _strides(lbo: int, sbo: int, trans: bool) -> tuple[int, int]:
    """(stride along MN, stride along k) of a descriptor's two fields (``layout_bits`` inverted)."""
    along_mn = MN_MAJOR_SBO_ALONG_MN if trans else K_MAJOR_SBO_ALONG_MN
    return (sbo, lbo) if along_mn else (lbo, sbo)


def descriptor(offset_bytes: int, hi) -> int:
    """A descriptor as the simulator twins hold it: the start address is the byte offset into the
    shared array (the array itself is the base), `hi` the stride fields (``layout_bits``)."""
    return ((int(offset_bytes) >> 4) & _FIELD) | int(hi)


def chunk_column(rows: int) -> int:
    """Elements between chunk columns of a `rows`-row chunk-major tile: 8·rows plus 8 of padding."""
    return 8 * rows + 8


def core_matrix_index(rows: int):
    """A device function ``(row, chunk) -> element index`` of the chunk-major layout of a `rows`-row
    tile: 16-byte chunk `chunk` of row `row` at element (8·rows + 8)·chunk + 8·row (a tile 64 rows
    deep: row 9, chunk 2 at element 1,112)."""
    R8 = chunk_column(rows)

    def index(row, chunk):
        return chunk * R8 + (row << 3)

    return cuda.jit(device=True, inline=True)(index)


def operand(tile_bits, desc, rows, trans, dtype):
    """The (rows, 16) matrix a descriptor names in a shared array of 16-bit bits, as float64:
    X[r, k] = element (row r of M or N, k), for either major-ness, no swizzle or the 128-byte one
    (whose XOR pattern is taken from the array's start: tiles there start on 1024-byte multiples);
    the simulator twins' decoder, and the tests' reference."""
    d = int(desc)
    start, lbo, sbo = (d & _FIELD) << 4, ((d >> 16) & _FIELD) << 4, ((d >> 32) & _FIELD) << 4
    r = np.arange(rows)[:, None]
    k = np.arange(16)[None, :]
    if (d >> 62) == SWIZZLE_128B:  # canonical address, then bits 4-6 ^= bits 7-9 (Swizzle<3,4,3>)
        if trans:
            byte = start + (r // 64) * lbo + (r % 64) * 2 + (k // 8) * sbo + (k % 8) * 128
        else:
            byte = start + (r // 8) * sbo + (r % 8) * 128 + k * 2
        byte = byte ^ (((byte >> 7) & 7) << 4)
        return from_bits(np.asarray(tile_bits)[byte // 2], dtype).astype(np.float64)
    mn, ks = _strides(lbo, sbo, trans)
    if trans:
        byte = start + (r // 8) * mn + (r % 8) * 2 + (k // 8) * ks + (k % 8) * 16
    else:
        byte = start + (r // 8) * mn + (r % 8) * 16 + (k // 8) * ks + (k % 8) * 2
    return from_bits(np.asarray(tile_bits)[byte // 2], dtype).astype(np.float64)


def _check_n(n, name):
    if not isinstance(n, int) or isinstance(n, bool) or not 8 <= n <= MAX_N or n % 8:
        raise ValueError(f"{name} must be a multiple of 8 in 8..{MAX_N} (the wgmma N); got {n!r}")


@functools.cache
def wgmma_ops(dtype: str, simulator: bool, n_ss: int, n_rs: int) -> WgmmaOps:
    """The operations for `dtype` ('bf16' or 'fp16'), SS products of N = `n_ss`, RS of N = `n_rs`."""
    check_dtype(dtype)
    _check_n(n_ss, "n_ss")
    _check_n(n_rs, "n_rs")
    return _simulated(dtype, n_ss, n_rs) if simulator else _intrinsics(dtype, n_ss, n_rs)


@functools.cache
def pin_f32(n: int, simulator: bool):
    return _pin(n, "f", simulator)


@functools.cache
def pin_u32(n: int, simulator: bool):
    return _pin(n, "r", simulator)


ORDER_THREADS = 2 * GROUP  # the threads of one order-barrier phase: two warpgroups

#: the simulator twins' tally of order-barrier calls: (blockIdx, barrier id, "sync" or "arrive") -> threads
ORDER_TALLY: Counter = Counter()
_ORDER_LOCK = threading.Lock()


class OrderBarriers(NamedTuple):
    sync: object
    arrive: object


@functools.cache
def order_barriers(simulator: bool) -> OrderBarriers:
    """``sync(bar)``: wait at named barrier `bar` (an int32 at run time, 1-15) until 256 threads have
    reached its phase; ``arrive(bar)``: reach it without waiting."""
    if simulator:

        def tally(bar, what):
            key = ((cuda.blockIdx.x, cuda.blockIdx.y, cuda.blockIdx.z), int(bar), what)
            with _ORDER_LOCK:
                ORDER_TALLY[key] += 1

        def sync(bar):
            tally(bar, "sync")

        def arrive(bar):
            tally(bar, "arrive")

        jit = cuda.jit(device=True)
        tally = jit(tally)
        return OrderBarriers(jit(sync), jit(arrive))
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    def barrier(op):
        text = f"bar.{op} $0, {ORDER_THREADS};"

        def codegen(context, builder, signature, args):
            bar = context.cast(builder, args[0], signature.args[0], types.int32)
            fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(32)])
            builder.call(ir.InlineAsm(fnty, text, "r,~{memory}", side_effect=True), [bar])
            return context.get_dummy_value()

        return codegen

    @intrinsic
    def sync(typingctx, bar):
        return types.void(bar), barrier("sync")

    @intrinsic
    def arrive(typingctx, bar):
        return types.void(bar), barrier("arrive")

    return OrderBarriers(sync, arrive)


# --- simulator ------------------------------------------------------------------------------------


def _my_rows():
    wt = cuda.threadIdx.x % GROUP
    lane = wt & 31
    return 16 * (wt >> 5) + (lane >> 2), lane & 3


def _accumulate(acc, d, scale_d, t):
    """Thread's two rows of the product `d` (2, N) into acc (N/8, 4), plus acc when scale_d."""
    for i in range(d.shape[1] // 8):
        for e in range(2):
            col = 8 * i + 2 * t + e
            acc[i, e] = np.float32(d[0, col] + (acc[i, e] if scale_d else 0.0))
            acc[i, 2 + e] = np.float32(d[1, col] + (acc[i, 2 + e] if scale_d else 0.0))


def _simulated(dtype: str, n_ss: int, n_rs: int) -> WgmmaOps:
    # a device function, so that the simulator hands warp_ops' module its per-launch `cuda` too
    gather = cuda.jit(device=True)(_warp_gather)

    def desc(base, offset, hi):
        return descriptor(2 * int(offset), hi)

    def nop():
        pass

    def mma_ss(acc, base, da, db, scale_d):
        g, t = _my_rows()
        a = operand(base, da, ROWS, False, dtype)[[g, g + 8]]  # my two rows of A (2, 16)
        b = operand(base, db, n_ss, False, dtype)  # (N, 16)
        _accumulate(acc, a @ b.T, scale_d, t)

    def mma_rs(acc, a0, a1, a2, a3, base, db, scale_d):
        regs = gather((a0, a1, a2, a3), GROUP)  # my group's 128 threads' A registers
        bits = np.asarray(regs, dtype=np.uint64).astype(np.uint32)
        halves = np.stack([bits & 0xFFFF, bits >> 16], axis=-1).astype(np.uint16)  # (128, 4, 2)
        h = from_bits(halves, dtype).astype(np.float64)
        a = np.empty((ROWS, 16))
        wt = np.arange(GROUP)
        rg, tt = 16 * (wt >> 5) + ((wt & 31) >> 2), wt & 3
        for e in range(2):
            a[rg, 2 * tt + e] = h[:, 0, e]
            a[rg + 8, 2 * tt + e] = h[:, 1, e]
            a[rg, 2 * tt + 8 + e] = h[:, 2, e]
            a[rg + 8, 2 * tt + 8 + e] = h[:, 3, e]
        g, t = _my_rows()
        b = operand(base, db, n_rs, True, dtype)  # (N, 16): B[k, n] = b[n, k]
        _accumulate(acc, a[[g, g + 8]] @ b.T, scale_d, t)

    jit = cuda.jit(device=True)
    nop_ = jit(nop)
    return WgmmaOps(jit(desc), nop_, nop_, nop_, nop_, nop_, jit(mma_ss), jit(mma_rs))


# --- GPU: inline PTX --------------------------------------------------------------------------------


def mma_asm(dtype: str, n: int, registers_a: bool) -> tuple[str, str]:
    """The one spelling of the wgmma instruction: (inline-PTX text, constraints). Operands: $0 ..
    $(n/2 − 1) the accumulators (tied to the next n/2 inputs), then A's four registers (RS) or its
    descriptor (SS), B's descriptor, and the scale-d flag (0: D = A·B, else D = A·B + D). SS reads B
    K-major (transpose 0); RS reads B MN-major (transpose 1).

    >>> mma_asm("bf16", 8, False)[0].split(";")[1].strip()
    'wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0,$1,$2,$3}, $8, $9, p, 1, 1, 0, 0'
    """
    t = {"bf16": "bf16", "fp16": "f16"}[check_dtype(dtype)]
    acc = n // 2
    d = ",".join(f"${i}" for i in range(acc))
    x = 2 * acc  # first operand after the tied inputs
    if registers_a:
        a, b, scale, tail = "{" + ",".join(f"${x + i}" for i in range(4)) + "}", f"${x + 4}", f"${x + 5}", "1"
        inputs = "r,r,r,r,l,r"
    else:
        a, b, scale, tail = f"${x}", f"${x + 1}", f"${x + 2}", "0, 0"
        inputs = "l,l,r"
    text = (
        f"{{ .reg .pred p; setp.ne.b32 p, {scale}, 0; "
        f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{d}}}, {a}, {b}, p, 1, 1, {tail}; }}"
    )
    constraints = ",".join(["=f"] * acc + [str(i) for i in range(acc)]) + f",{inputs},~{{memory}}"
    return text, constraints


def _intrinsics(dtype: str, n_ss: int, n_rs: int) -> WgmmaOps:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    f32, i64 = ir.FloatType(), ir.IntType(64)
    FIELD = np.uint32(_FIELD)
    FOUR = np.uint32(4)

    @cuda.jit(device=True, inline=True)
    def desc(base, offset, hi):
        addr = base + np.uint32(2 * offset)
        return np.uint64((addr >> FOUR) & FIELD) | hi

    def product(n, registers_a):
        text, constraints = mma_asm(dtype, n, registers_a)
        acc_n = n // 2

        def codegen(context, builder, signature, args):
            ptr = context.make_array(signature.args[0])(context, builder, args[0]).data
            slots = [builder.gep(ptr, [ir.Constant(i64, j)]) for j in range(acc_n)]
            vals = [builder.load(p) for p in slots]
            rest = []
            if registers_a:
                for v, ty in zip(args[1:5], signature.args[1:5]):
                    rest.append(context.cast(builder, v, ty, types.uint32))
                db, dbt, sc, sct = args[6], signature.args[6], args[7], signature.args[7]
                rest.append(context.cast(builder, db, dbt, types.uint64))
            else:
                for v, ty in zip(args[2:4], signature.args[2:4]):
                    rest.append(context.cast(builder, v, ty, types.uint64))
                sc, sct = args[4], signature.args[4]
            rest.append(context.cast(builder, sc, sct, types.int32))
            ops = vals + rest
            fnty = ir.FunctionType(ir.LiteralStructType([f32] * acc_n), [o.type for o in ops])
            out = builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), ops)
            for j, p in enumerate(slots):
                builder.store(builder.extract_value(out, j), p)
            return context.get_dummy_value()

        return codegen

    @intrinsic
    def mma_ss(typingctx, acc, base, da, db, scale_d):
        return types.void(acc, base, da, db, scale_d), product(n_ss, False)

    @intrinsic
    def mma_rs(typingctx, acc, a0, a1, a2, a3, base, db, scale_d):
        return types.void(acc, a0, a1, a2, a3, base, db, scale_d), product(n_rs, True)

    return WgmmaOps(
        desc,
        _plain_asm("wgmma.fence.sync.aligned;"),
        _plain_asm("wgmma.commit_group.sync.aligned;"),
        _plain_asm("wgmma.wait_group.sync.aligned 0;"),
        _plain_asm("wgmma.wait_group.sync.aligned 1;"),
        _plain_asm("fence.proxy.async.shared::cta;"),
        mma_ss,
        mma_rs,
    )


def _pin(n: int, code: str, simulator: bool):
    """``pin(arr)``: an empty asm that reads and writes arr's first n elements (see the module text)."""
    if simulator:

        def nop(arr):
            pass

        return cuda.jit(device=True)(nop)
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    i64 = ir.IntType(64)
    constraints = ",".join([f"={code}"] * n + [str(i) for i in range(n)])

    @intrinsic
    def pin(typingctx, arr):
        def codegen(context, builder, signature, args):
            ptr = context.make_array(signature.args[0])(context, builder, args[0]).data
            slots = [builder.gep(ptr, [ir.Constant(i64, j)]) for j in range(n)]
            vals = [builder.load(p) for p in slots]
            fnty = ir.FunctionType(ir.LiteralStructType([v.type for v in vals]), [v.type for v in vals])
            out = builder.call(ir.InlineAsm(fnty, "", constraints, side_effect=True), vals)
            for j, p in enumerate(slots):
                builder.store(builder.extract_value(out, j), p)
            return context.get_dummy_value()

        return types.void(arr), codegen

    return pin
