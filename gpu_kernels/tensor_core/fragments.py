"""One warp's products against a tile in shared memory: the inner loop every tensor-core kernel here
shares (S = Q Kᵀ and O += P V in fa2_tc, the same two in naive_tc's scores and pv kernels).

``tile_products(mma, ldsm, PAIRS, COLS, ROW_STEP, CHUNK_STEP, simulator)`` returns a device function
``products(acc, a0, a1, a2, a3, Bs, row, chunk, swz)``: for p < PAIRS, one ldmatrix.x4 of the
swizzled tile Bs (COLS wide) at row ``row + ROW_STEP·p``, 16-byte chunk ``chunk + CHUNK_STEP·p``
yields the B fragments of n-tiles 2p and 2p + 1, and two mma add A·B to ``acc[2p]`` and
``acc[2p + 1]`` (4 fp32 each). With K stored key-major (B = Kᵀ): ldmatrix, ROW_STEP 16 (16 keys per
pair), CHUNK_STEP 0; with V stored key-major (B = V): ldmatrix.trans, ROW_STEP 0, CHUNK_STEP 2 (16
head-dim columns per pair). Worked number: d = 64, Bc = 64: S = Q Kᵀ is 4 k-steps × 4 pairs = 16
ldmatrix and 32 mma per warp and K/V block.
"""

from __future__ import annotations

from numba import cuda


def tile_products(mma, ldsm, PAIRS, COLS, ROW_STEP, CHUNK_STEP, simulator):
    def products(acc, a0, a1, a2, a3, Bs, row, chunk, swz):
        for p in range(PAIRS):
            b0, b1, b2, b3 = ldsm(Bs, (row + ROW_STEP * p) * COLS + (((chunk + CHUNK_STEP * p) ^ swz) << 3))
            acc[2 * p, 0], acc[2 * p, 1], acc[2 * p, 2], acc[2 * p, 3] = mma(
                a0, a1, a2, a3, b0, b1, acc[2 * p, 0], acc[2 * p, 1], acc[2 * p, 2], acc[2 * p, 3]
            )
            acc[2 * p + 1, 0], acc[2 * p + 1, 1], acc[2 * p + 1, 2], acc[2 * p + 1, 3] = mma(
                a0,
                a1,
                a2,
                a3,
                b2,
                b3,
                acc[2 * p + 1, 0],
                acc[2 * p + 1, 1],
                acc[2 * p + 1, 2],
                acc[2 * p + 1, 3],
            )

    return cuda.jit(device=True)(products) if simulator else cuda.jit(device=True, inline=True)(products)
