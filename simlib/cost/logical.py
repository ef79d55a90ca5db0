"""The register level of the logical (paper) energy model: SRAM operand reads of a register-tiled matmul.

The paper's count reads both operands of every multiply-add from SRAM (docs/COUNTING.md: 2·N²·d
reads per matmul, thread level). A kernel keeps an r × r register tile of outputs per thread and
reads each operand element from shared memory once per r outputs, so the matmul operand reads that
reach SRAM are the thread-level ones / r; the rest are register reads, whose energy is inside the
per-FLOP figures (measured with register operands) and is reported at 0 pJ. `register_tiled(e, r)`
applies that to an `Energy` of `simlib.energy.energy` (rows whose elements reach half the matmul
FLOPs: the thread-level operand reads; schedules already counted per warp fragment, such as fa2_tc,
are untouched). r = 1 is the paper's count.

Worked number: naive, N = 4096, d = 64, B·H = 1 reads 2·2·4096²·64 = 4,294,967,296 operand elements
from SRAM at thread level (4,312,530,944 SRAM elements with the tile writes); with r = 8 an eighth
of the operand reads reach SRAM: 536,870,912 + 17,563,648 = 554,434,560:

>>> from simlib import Workload, count
>>> from simlib.energy import energy
>>> e = energy(count("naive", Workload(4096, 64)), "a100-40gb")
>>> t = register_tiled(e, 8)
>>> int(e.rows[e.rows.level == "SRAM"].elements.sum()), int(t.rows[t.rows.level == "SRAM"].elements.sum())
(4312530944, 554434560)
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from ..energy import Energy


def register_tiled(e: Energy, register_tile: int) -> Energy:
    if not isinstance(register_tile, int) or isinstance(register_tile, bool) or register_tile < 1:
        raise ValueError(f"register_tile must be an integer >= 1, got {register_tile!r}")
    if register_tile == 1:
        return e
    rows = e.rows.copy()
    reads = (rows.level == "SRAM") & (rows.op == "read")
    if not reads.any():
        return e
    # the thread-level operand reads: the largest SRAM reads and those of their order (one per multiply-add)
    operand = reads & (rows.elements >= rows.loc[reads, "elements"].max() / 2)
    moved = rows[operand].copy()
    keep = 1 / register_tile
    moved["level"] = "registers"
    moved["elements"] = moved["elements"] * (1 - keep)
    moved["bytes"] = moved["bytes"] * (1 - keep)
    moved["pj_per_byte"] = 0.0
    moved["joules"] = 0.0
    for col in ("elements", "bytes", "joules"):
        rows.loc[operand, col] = rows.loc[operand, col] * keep
    return replace(e, rows=pd.concat([rows, moved], ignore_index=True))
