"""Which (Q block, K/V block) tiles a tiled schedule visits.

Without a mask every tile is visited. Under causal masking query q sees keys k ≤ q + off, with
off = nk − nq; a tile whose first key lies beyond its last query's reach is fully masked and
skipped, a diagonal tile is visited whole (the kernel masks inside it). Two derivations:
`*_by_walk` tests each tile (used by the traces), `*_by_formula` counts with ⌊·⌋ (the closed forms).
Worked number: N = 10, Br = Bc = 4, causal: Q block 0 (rows 0–3) visits K/V block 0 only (4 keys);
block 1 (rows 4–7) visits blocks 0, 1 (8 keys); block 2 (rows 8–9) all 10 keys.
"""
import numpy as np

from ..tiling import block_sizes


def starts(sizes):
    return np.concatenate(([0], np.cumsum(sizes)[:-1]))


def key_blocks_seen(workload, tiling, last_query):
    """Boolean mask over K/V blocks visited by a Q block whose last row is `last_query`."""
    cols = block_sizes(workload.nk, tiling.block_cols)
    if not workload.causal:
        return np.ones(len(cols), dtype=bool)
    return starts(cols) <= last_query + workload.nk - workload.nq


def query_blocks_seen(workload, tiling, first_key):
    """Boolean mask over Q blocks that visit a K/V block whose first key is `first_key`."""
    rows = block_sizes(workload.nq, tiling.block_rows)
    if not workload.causal:
        return np.ones(len(rows), dtype=bool)
    return starts(rows) + rows - 1 + workload.nk - workload.nq >= first_key


def keys_seen_by_formula(workload, tiling):
    """Keys visited by each Q block: nk, or causal min(nk, (⌊(i_last + off)/Bc⌋ + 1)·Bc)."""
    nq, nk, br, bc = workload.nq, workload.nk, tiling.block_rows, tiling.block_cols
    last = np.minimum(np.arange(1, tiling.tr + 1) * br, nq) - 1
    if not workload.causal:
        return np.full(tiling.tr, nk, dtype=np.int64)
    return np.minimum(nk, ((last + nk - nq) // bc + 1) * bc)


def queries_seen_by_formula(workload, tiling):
    """Query rows visiting each K/V block: nq, or causal nq − ⌊max(0, j_first − off)/Br⌋·Br."""
    nq, nk, br = workload.nq, workload.nk, tiling.block_rows
    first = np.arange(tiling.tc) * tiling.block_cols
    if not workload.causal:
        return np.full(tiling.tc, nq, dtype=np.int64)
    return nq - (np.maximum(0, first - (nk - nq)) // br) * br
