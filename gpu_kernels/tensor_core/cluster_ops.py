"""Thread-block clusters from numba.cuda (sm_90): the cluster shape, the cluster barrier, and stores
into another block's shared memory (distributed shared memory, DSMEM). decode_tc's cluster tail uses
them (kernels/decode_tc.py: the split blocks of one unit combine in the leader's shared memory).

numba-cuda 0.30.4 has no cluster launch argument. ``cluster_shape(n)`` is an intrinsic that, called in
a kernel's body, adds the NVVM annotations ``cluster_dim_x = n, cluster_dim_y = cluster_dim_z = 1`` to
that kernel (numba's own ``launch_bounds`` add ``maxntidx``/``minctasm``/``cluster_max_blocks`` the same
way, nvvm.set_launch_bounds); NVVM turns them into ``.explicitcluster`` and ``.reqnctapercluster n, 1,
1``, so an ordinary launch of a grid whose x is a multiple of n forms clusters of n consecutive blocks
along x (block rank = blockIdx.x mod n). More than 8 blocks need the function attribute
CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (``allow_cluster``).

    cluster_shape()                 (compile-time n) annotate the calling kernel: clusters of n blocks
    cluster_arrive()                barrier.cluster.arrive.release.aligned (every thread of the block)
    cluster_wait()                  barrier.cluster.wait.acquire.aligned: every thread of the cluster
                                    has arrived; their memory operations before the arrive are visible
    st_cluster(base, i, rank, x, g, gi)  fp32 x into word i (a 4-byte index from the 32-bit shared
                                    address `base`) of block `rank`'s shared memory: mapa.shared::cluster
                                    then st.shared::cluster.f32
    ld_gathered(smf, i, g, gi)      word i of my own shared memory (smf: an fp32 view of it)

Simulator twin (numba's simulator runs the blocks of a grid one after another, in blockIdx order, x
slowest, each block's threads as Python threads): a block cannot see another's shared memory, so the
"leader's shared memory" is a global array `g` indexed by `gi` (the kernel passes the index it would
use for the same value in a global buffer of partials): ``st_cluster`` writes ``g[gi]``,
``ld_gathered`` reads it; ``cluster_arrive`` is a no-op and ``cluster_wait`` a block barrier. A kernel
whose leader is the cluster's highest rank (it runs after every other block of its cluster) and reads
only after ``cluster_wait`` then sees every value, and within the leader's block the barrier orders
its own threads' stores before its reads: race-free under any thread timing.

Worked number: word 1,000 of the block whose shared window starts at 0x400 is byte 0x400 + 4·1,000 =
0x13A0 of the rank's window (mapa maps it into the cluster's shared address space).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from numba import cuda  # under the simulator, `cuda` is swapped per kernel launch

PORTABLE_CLUSTER = 8  # the largest cluster every sm_90 launch may use without the non-portable attribute
MAX_CLUSTER = 16  # with it (H100/H200)


class ClusterOps(NamedTuple):
    cluster_shape: object
    cluster_arrive: object
    cluster_wait: object
    st_cluster: object
    ld_gathered: object


@functools.cache
def cluster_ops(n: int, simulator: bool) -> ClusterOps:
    """The five operations for clusters of `n` blocks along x (1 <= n <= 16)."""
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_CLUSTER:
        raise ValueError(f"cluster size must be an int in 1..{MAX_CLUSTER}; got {n!r}")
    if simulator:
        return _simulated()
    return _intrinsics(n)


@functools.cache
def _simulated() -> ClusterOps:
    jit = cuda.jit(device=True)

    def cluster_shape():
        pass

    def cluster_arrive():
        pass

    def cluster_wait():
        cuda.syncthreads()

    def st_cluster(base, i, rank, x, g, gi):
        g[gi] = x

    def ld_gathered(smf, i, g, gi):
        return g[gi]

    return ClusterOps(
        *(jit(f) for f in (cluster_shape, cluster_arrive, cluster_wait, st_cluster, ld_gathered))
    )


@functools.cache
def _intrinsics(n: int) -> ClusterOps:
    from llvmlite import ir
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic

    from .warp_ops import _plain_asm

    i32, f32 = ir.IntType(32), ir.FloatType()

    @intrinsic
    def cluster_shape(typingctx):
        def codegen(context, builder, signature, args):
            fn, mod = builder.function, builder.module
            ann = cgutils.get_or_insert_named_metadata(mod, "nvvm.annotations")
            for prop, value in (("cluster_dim_x", n), ("cluster_dim_y", 1), ("cluster_dim_z", 1)):
                ann.add(mod.add_metadata((fn, ir.MetaDataString(mod, prop), ir.Constant(i32, value))))
            return context.get_dummy_value()

        return types.void(), codegen

    @intrinsic
    def st_cluster(typingctx, base, i, rank, x, g, gi):
        def codegen(context, builder, signature, args):
            b = context.cast(builder, args[0], signature.args[0], types.uint32)
            w = builder.trunc(context.cast(builder, args[1], signature.args[1], types.int64), i32)
            addr = builder.add(b, builder.shl(w, ir.Constant(i32, 2)))
            r = context.cast(builder, args[2], signature.args[2], types.uint32)
            xv = context.cast(builder, args[3], signature.args[3], types.float32)
            text = "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $0, $1; st.shared::cluster.f32 [ra], $2; }"
            fnty = ir.FunctionType(ir.VoidType(), [i32, i32, f32])
            builder.call(ir.InlineAsm(fnty, text, "r,r,f,~{memory}", side_effect=True), [addr, r, xv])
            return context.get_dummy_value()

        return types.void(base, i, rank, x, g, gi), codegen

    @cuda.jit(device=True, inline=True)
    def ld_gathered(smf, i, g, gi):
        return smf[i]

    return ClusterOps(
        cluster_shape,
        _plain_asm("barrier.cluster.arrive.release.aligned;"),
        _plain_asm("barrier.cluster.wait.acquire.aligned;"),
        st_cluster,
        ld_gathered,
    )


def allow_cluster(dispatcher, n: int, signature) -> None:
    """Let the compiled kernel run clusters of more than 8 blocks (the non-portable size), once."""
    if n <= PORTABLE_CLUSTER or getattr(dispatcher, "_flashio_cluster", 0) >= n:
        return
    from numba.cuda.cudadrv.driver import binding, driver

    kernel = dispatcher.compile(signature)
    cufunc = kernel._codelibrary.get_cufunc()
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    driver.cuKernelSetAttribute(attr, 1, cufunc.handle, cufunc.device.id)
    dispatcher._flashio_cluster = n
