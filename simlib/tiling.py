"""Block sizes for the tiled schedules (FlashAttention, Algorithm 1, line 1).

M = SRAM bytes / element bytes. Bc = ⌈M / 4d⌉, Br = min(Bc, d), capped at the number of keys and
queries respectively.
Worked number: A100 with 192 KiB SRAM in fp16 → M = 98304; d = 64 → Bc = ⌈98304/256⌉ = 384,
Br = min(384, 64) = 64; N = 4096 → Tr = 64, Tc = 11 (the last K/V block holds 4096 − 10·384 = 256 rows).
"""
from dataclasses import dataclass

import numpy as np

from .workload import check_positive_int


def ceil_div(a, b):
    return -(-a // b)


def block_sizes(n, block):
    """Valid rows of each block when `n` rows are cut into blocks of `block`: the last may be ragged.

    >>> block_sizes(10, 4).tolist()
    [4, 4, 2]
    """
    sizes = np.full(ceil_div(n, block), block, dtype=np.int64)
    sizes[-1] = n - block * (len(sizes) - 1)
    return sizes


@dataclass(frozen=True)
class Tiling:
    """Block rows Br (Q, O blocks), block cols Bc (K, V blocks) and the block counts Tr, Tc."""

    block_rows: int
    block_cols: int
    query_len: int
    key_len: int

    @property
    def tr(self):
        return ceil_div(self.query_len, self.block_rows)

    @property
    def tc(self):
        return ceil_div(self.key_len, self.block_cols)


def sram_elements(sram_bytes, element_bytes, head_dim):
    """M, the SRAM capacity in elements; ValueError if it cannot hold one row each of Q, K, V, O."""
    check_positive_int("sram_bytes", sram_bytes)
    m = sram_bytes // element_bytes
    if m < 4 * head_dim:
        raise ValueError(
            f"sram_bytes={sram_bytes} holds {m} elements, too small for one tile: one row each of "
            f"Q, K, V, O needs 4·head_dim = {4 * head_dim}"
        )
    return m


def max_block(sram_bytes, element_bytes, head_dim):
    """⌈M / 4d⌉: the paper's largest block, a quarter of SRAM per tile (rounded up as the paper does)."""
    return ceil_div(sram_elements(sram_bytes, element_bytes, head_dim), 4 * head_dim)


def make_tiling(workload, sram_bytes=None, block_rows=None, block_cols=None):
    """The tiling for a workload: the paper's defaults, or explicit blocks checked against SRAM.

    An explicit block must be at most ⌈M / 4d⌉ rows (the paper's quarter of SRAM per tile). Without
    `sram_bytes` both blocks must be given and nothing is checked against a capacity.
    """
    d = workload.head_dim
    for name, value in (("block_rows", block_rows), ("block_cols", block_cols)):
        if value is not None:
            check_positive_int(name, value)
    if sram_bytes is None:
        if block_rows is None or block_cols is None:
            raise ValueError("sram_bytes is required unless block_rows and block_cols are both given")
    else:
        limit = max_block(sram_bytes, workload.element_bytes, d)
        for name, value in (("block_rows", block_rows), ("block_cols", block_cols)):
            if value is not None and value > limit:
                raise ValueError(
                    f"{name}={value} does not fit in SRAM: sram_bytes={sram_bytes} allows at most "
                    f"⌈M/4d⌉ = {limit} rows of head_dim={d} per tile"
                )
        if block_cols is None:
            block_cols = limit
        if block_rows is None:
            block_rows = min(limit, d)
    return Tiling(min(block_rows, workload.nq), min(block_cols, workload.nk), workload.nq, workload.nk)
