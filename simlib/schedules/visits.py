"""Which (Q block, K/V block) tiles a tiled schedule visits.

Without a mask every tile is visited. Under causal masking query q sees keys k ≤ q + off, with
off = nk − nq; a tile whose first key lies beyond its last query's reach is fully masked and
skipped, a diagonal tile is visited whole (the kernel masks inside it). Two derivations:
`*_blocks_seen` tests each tile (numpy masks, used by the traces); `visited_by_q_blocks` and
`visited_by_kv_blocks` sum the same visits with ⌊·⌋ formulas in exact Python ints (the closed forms),
in O(log Tr) steps, so they hold for any N.
Worked number: N = 10, Br = Bc = 4, causal: Q block 0 (rows 0–3) visits K/V block 0 only (4 keys);
block 1 (rows 4–7) visits blocks 0, 1 (8 keys); block 2 (rows 8–9) all 10 keys: 4·4 + 4·8 + 2·10
= 68 scores computed, 22 K/V rows loaded.

>>> from simlib import Workload
>>> from simlib.tiling import Tiling
>>> visited_by_q_blocks(Workload(10, 8, causal=True), Tiling(4, 4, 10, 10))
(68, 22)
"""

import numpy as np

from ..tiling import Tiling, block_sizes, ceil_div
from ..workload import Workload


def starts(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(sizes)[:-1]))


def key_blocks_seen(workload: Workload, tiling: Tiling, last_query: int) -> np.ndarray:
    """Boolean mask over K/V blocks visited by a Q block whose last row is `last_query`."""
    cols = block_sizes(workload.nk, tiling.block_cols)
    if not workload.causal:
        return np.ones(len(cols), dtype=bool)
    seen: np.ndarray = starts(cols) <= last_query + workload.nk - workload.nq
    return seen


def query_blocks_seen(workload: Workload, tiling: Tiling, first_key: int) -> np.ndarray:
    """Boolean mask over Q blocks that visit a K/V block whose first key is `first_key`."""
    rows = block_sizes(workload.nq, tiling.block_rows)
    if not workload.causal:
        return np.ones(len(rows), dtype=bool)
    seen: np.ndarray = starts(rows) + rows - 1 + workload.nk - workload.nq >= first_key
    return seen


def floor_sum(n: int, m: int, a: int, b: int) -> int:
    """Σ_{i=0}^{n−1} ⌊(a·i + b)/m⌋ for n, a, b ≥ 0 and m ≥ 1, exactly, in O(log m) steps.

    >>> floor_sum(5, 3, 2, 1), sum((2 * i + 1) // 3 for i in range(5))    # 0 + 1 + 1 + 2 + 3
    (7, 7)
    """
    total = 0
    while n > 0:
        if a >= m:
            total += (n - 1) * n // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        top = a * n + b
        if top < m:
            break
        n, b, m, a = top // m, top % m, a, m
    return total


def visited_by_q_blocks(workload: Workload, tiling: Tiling) -> tuple[int, int]:
    """(Σ_i r_i·keys_i, Σ_i keys_i) over Q blocks i: scores computed and K/V rows loaded.

    keys_i = nk without a mask; causal: min(nk, (⌊(last_i + off)/Bc⌋ + 1)·Bc), last_i the block's
    last valid row. Full blocks up to the first that sees every key are a floor sum; the rest see nk.
    """
    nq, nk, br, bc, tr = workload.nq, workload.nk, tiling.block_rows, tiling.block_cols, tiling.tr
    if not workload.causal:
        return nq * nk, tr * nk
    off = nk - nq
    last_rows = nq - br * (tr - 1)  # valid rows of the last Q block
    last_keys = min(nk, ((nq - 1 + off) // bc + 1) * bc)
    # full block i (last row (i+1)·Br − 1) sees every key once (i+1)·Br − 1 + off ≥ (Tc − 1)·Bc
    first_full = max(0, ceil_div((tiling.tc - 1) * bc + 1 - off, br) - 1)
    partial = min(first_full, tr - 1)  # full blocks that see fewer than nk keys
    keys = bc * (floor_sum(partial, bc, br, br - 1 + off) + partial) + (tr - 1 - partial) * nk
    return br * keys + last_rows * last_keys, keys + last_keys


def visited_by_kv_blocks(workload: Workload, tiling: Tiling) -> tuple[int, int]:
    """(Σ_j c_j·queries_j, Σ_j queries_j) over K/V blocks j: scores computed and Q rows staged.

    queries_j = nq without a mask; causal: nq − ⌊max(0, j·Bc − off)/Br⌋·Br.
    """
    nq, nk, br, bc, tc = workload.nq, workload.nk, tiling.block_rows, tiling.block_cols, tiling.tc
    if not workload.causal:
        return nq * nk, tc * nq
    off = nk - nq

    def skipped(blocks: int) -> int:  # Σ_{j<blocks} ⌊max(0, j·Bc − off)/Br⌋
        first = min(blocks, ceil_div(off, bc))  # j·Bc ≤ off below this: nothing skipped
        return floor_sum(blocks - first, br, bc, first * bc - off)

    last_cols = nk - bc * (tc - 1)
    last_queries = nq - max(0, (tc - 1) * bc - off) // br * br
    queries_before = (tc - 1) * nq - br * skipped(tc - 1)
    return bc * queries_before + last_cols * last_queries, queries_before + last_queries
