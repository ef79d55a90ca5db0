"""A register-only loop of ``mma.sync.m16n8k16`` (bf16 or fp16 in, fp32 accumulation): the tensor
cores' FLOP/s ceiling as numba can reach it, measured by ``measure.ceilings.measure_mma_peak``.

Each warp loads one A fragment (16×16, four registers per lane) and one B fragment (16×8, two) from
global memory once, then runs ``trips`` rounds of CHAINS independent mma instructions, each chain
accumulating onto its own 16×8 fp32 tile (independent chains hide the instruction latency). At the
end each lane writes the sum over the chains of its four accumulator values. One mma is
2·16·8·16 = 4096 FLOP; with CHAINS = 8 and trips = 4096 a warp issues 8·4096 = 32768 of them.

After ``trips`` rounds every chain holds trips·(A·B), so lane 4g + t writes CHAINS·trips times
(A·B)[g, 2t], (A·B)[g, 2t + 1], (A·B)[g + 8, 2t], (A·B)[g + 8, 2t + 1]: what the simulator test
checks against numpy for one round (the layout is the PTX ISA's, ``warp_ops``).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float32  # module globals: the simulator swaps `cuda`

from .warp_ops import warp_ops

MMA_FLOP = 2 * 16 * 8 * 16
CHAINS = 8


@functools.cache
def mma_loop_kernel(dtype: str, simulator: bool):
    """kernel(a, b, out, trips): a (32·4,) and b (32·2,) uint32 fragments, out (threads·4,) fp32."""
    mma = warp_ops(dtype, simulator).mma
    ZERO = np.float32(0.0)

    def mma_loop(a, b, out, trips):
        lane = cuda.threadIdx.x & 31
        a0, a1, a2, a3 = a[4 * lane], a[4 * lane + 1], a[4 * lane + 2], a[4 * lane + 3]
        b0, b1 = b[2 * lane], b[2 * lane + 1]
        acc = cuda.local.array((CHAINS, 4), float32)
        for c in range(CHAINS):
            for e in range(4):
                acc[c, e] = ZERO
        for _ in range(trips):
            for c in range(CHAINS):
                acc[c, 0], acc[c, 1], acc[c, 2], acc[c, 3] = mma(
                    a0, a1, a2, a3, b0, b1, acc[c, 0], acc[c, 1], acc[c, 2], acc[c, 3]
                )
        i = cuda.grid(1)
        for e in range(4):
            t = ZERO
            for c in range(CHAINS):
                t += acc[c, e]
            out[4 * i + e] = t

    mma_loop.__name__ = mma_loop.__qualname__ = f"mma_loop_{dtype}"
    return cuda.jit(mma_loop)


def fragments(a_tile: np.ndarray, b_tile: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The per-lane mma registers of a 16×16 A and a 16×8 B (uint32, low half = lower column/k index):
    a[4·lane + i] = a_i, b[2·lane + i] = b_i, lane = 4g + t (the PTX ISA's m16n8k16 layout)."""
    from .dtypes import to_bits

    ab = to_bits(np.asarray(a_tile, np.float32), dtype).astype(np.uint32)
    bb = to_bits(np.asarray(b_tile, np.float32), dtype).astype(np.uint32)
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    a = np.stack(
        [
            ab[r, c] | (ab[r, c + 1] << 16)
            for r, c in ((g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8))
        ],
        axis=1,
    )
    b = np.stack([bb[k, g] | (bb[k + 1, g] << 16) for k in (2 * t, 2 * t + 8)], axis=1)
    return a.reshape(-1).astype(np.uint32), b.reshape(-1).astype(np.uint32)
