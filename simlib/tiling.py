"""Block sizes for the tiled schedules (FlashAttention, Algorithm 1, line 1).

M = SRAM bytes / element bytes. Bc = ⌈M / 4d⌉, Br = min(Bc, d), capped at the number of keys and
queries respectively.
Worked number: A100 with 192 KiB SRAM in fp16 → M = 98304; d = 64 → Bc = ⌈98304/256⌉ = 384,
Br = min(384, 64) = 64; N = 4096 → Tr = 64, Tc = 11 (the last K/V block holds 4096 − 10·384 = 256 rows).

>>> from simlib import Workload
>>> t = make_tiling(Workload(4096, 64), sram_bytes=192 * 1024)
>>> t.block_rows, t.block_cols, t.tr, t.tc
(64, 384, 64, 11)
"""

from dataclasses import dataclass

import numpy as np

from .schedule_protocol import DoesNotFit, Parameter, ParamValue
from .workload import Workload, check_positive_int

BLOCK_ROWS = Parameter("block_rows", "Br: query rows per block (default: the schedule's tile rule)")
BLOCK_COLS = Parameter("block_cols", "Bc: key/value rows per block (default: the schedule's tile rule)")
#: The paper's rule (Algorithm 1, line 1) may need more than M on chip; a result says by how much.
PAPER_RULE = "fa1"


def ceil_div(a: int, b: int) -> int:
    """⌈a / b⌉ for positive ints, exactly.

    >>> ceil_div(4096, 384)
    11
    """
    return -(-a // b)


def block_sizes(n: int, block: int) -> np.ndarray:
    """Valid rows of each block when `n` rows are cut into blocks of `block`: the last may be ragged.

    >>> block_sizes(10, 4).tolist()
    [4, 4, 2]
    """
    sizes = np.full(ceil_div(n, block), block, dtype=np.int64)
    sizes[-1] = n - block * (len(sizes) - 1)
    return sizes


@dataclass(frozen=True)
class Tiling:
    """Block rows Br (Q, O blocks), block cols Bc (K, V blocks) and the block counts Tr, Tc.

    `rule` says what chose the blocks: "fa1" (the paper's Algorithm 1 rule), "fa2" (the FA2
    kernel's table), "explicit" (given), or None where the schedule has its own (a kernel's config).
    """

    block_rows: int
    block_cols: int
    query_len: int
    key_len: int
    rule: str | None = None

    @property
    def tr(self) -> int:
        return ceil_div(self.query_len, self.block_rows)

    @property
    def tc(self) -> int:
        return ceil_div(self.key_len, self.block_cols)

    def as_dict(self) -> dict[str, ParamValue]:
        fields: dict[str, ParamValue] = {
            "block_rows": self.block_rows,
            "block_cols": self.block_cols,
            "tr": self.tr,
            "tc": self.tc,
        }
        if self.rule is not None:
            fields["tile_rule"] = self.rule
        return fields

    def summary(self) -> str:
        rule = f" (tile rule: {self.rule})" if self.rule else ""
        return f"tiles: Br={self.block_rows} Bc={self.block_cols} Tr={self.tr} Tc={self.tc}{rule}"


def tile_trace_size(workload: Workload, tiling: Tiling) -> tuple[int, int]:
    """(longest array, tiles) a tiled trace walks: one array entry per (Q block, K/V block) tile."""
    return max(tiling.tr, tiling.tc), tiling.tr * tiling.tc


def sram_elements(sram_bytes: int, element_bytes: int, head_dim: int) -> int:
    """M, the SRAM capacity in elements; ValueError if it cannot hold one row each of Q, K, V, O."""
    check_positive_int("sram_bytes", sram_bytes)
    m = sram_bytes // element_bytes
    if m < 4 * head_dim:
        raise DoesNotFit(
            f"sram_bytes={sram_bytes} holds {m} elements, too small for one tile: one row each of "
            f"Q, K, V, O needs 4·head_dim = {4 * head_dim}"
        )
    return m


def max_block(sram_bytes: int, element_bytes: int, head_dim: int) -> int:
    """⌈M / 4d⌉: the paper's largest block, a quarter of SRAM per tile (rounded up as the paper does).

    >>> max_block(192 * 1024, 2, 64)
    384
    """
    return ceil_div(sram_elements(sram_bytes, element_bytes, head_dim), 4 * head_dim)


def make_tiling(
    workload: Workload,
    sram_bytes: int | None = None,
    block_rows: int | None = None,
    block_cols: int | None = None,
) -> Tiling:
    """The tiling for a workload: the paper's defaults, or explicit blocks checked against SRAM.

    An explicit block must be at most ⌈M / 4d⌉ rows (the paper's quarter of SRAM per tile). Without
    `sram_bytes` both blocks must be given and nothing is checked against a capacity. The rule is
    "explicit" when a block is given (its working set must then fit), else "fa1".
    """
    d = workload.head_dim
    rule = "explicit" if block_rows is not None or block_cols is not None else PAPER_RULE
    if block_rows is not None:
        block_rows = check_positive_int("block_rows", block_rows)
    if block_cols is not None:
        block_cols = check_positive_int("block_cols", block_cols)
    if sram_bytes is None:
        if block_rows is None or block_cols is None:
            raise ValueError(
                "sram_bytes (--sram or --gpu) is required unless block_rows and block_cols are both given"
            )
    else:
        limit = max_block(sram_bytes, workload.element_bytes, d)
        for name, value in (("block_rows", block_rows), ("block_cols", block_cols)):
            if value is not None and value > limit:
                raise DoesNotFit(
                    f"{name}={value} does not fit in SRAM: sram_bytes={sram_bytes} allows at most "
                    f"⌈M/4d⌉ = {limit} rows of head_dim={d} per tile"
                )
        if block_cols is None:
            block_cols = limit
        if block_rows is None:
            block_rows = min(limit, d)
    assert block_rows is not None and block_cols is not None
    return Tiling(
        min(block_rows, workload.nq), min(block_cols, workload.nk), workload.nq, workload.nk, rule=rule
    )
