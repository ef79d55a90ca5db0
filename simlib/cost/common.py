"""Shared pieces of the launch builders: score elements a tiled kernel visits, K/V re-reads in L2,
register operand bytes, and the instruction basis.

Worked number: N = 10, Br = Bc = 4, causal: the visited tiles hold 68 score elements and load 22
K/V rows (simlib.schedules.visits):

>>> from simlib import Workload
>>> visited(Workload(10, 8, causal=True), 4, 4)
(68, 22)
"""

from __future__ import annotations

from ..physical.occupancy import occupancy
from ..physical.waves import head_rereads, waves
from ..schedules.visits import visited_by_q_blocks
from ..tiling import Tiling, ceil_div
from ..workload import Workload
from .schedule import causal_cta_work
from .work import WARP, Launch, Work

#: Register operand bytes per FFMA (three 4-byte operands read) and per mma.sync m16n8k16 bf16
#: (A 16×16×2 B + B 16×8×2 B read, C 16×8×4 B read and written, per warp): 4096 FLOPs.
FFMA_REGISTER_BYTES = 12
MMA_REGISTER_BYTES = 16 * 16 * 2 + 16 * 8 * 2 + 2 * 16 * 8 * 4


def workload_of_row(r: dict, dtype: str | None = None, causal: bool | None = None) -> Workload:
    """The workload of one measurement row (columns seq_len, head_dim, batch, heads, and dtype and
    causal unless given)."""
    return Workload(
        int(r["seq_len"]),
        int(r["head_dim"]),
        batch=int(r["batch"]),
        heads=int(r["heads"]),
        dtype=dtype or r["dtype"],
        causal=(str(r.get("causal", "False")) == "True") if causal is None else causal,
    )


def visited(w: Workload, block_rows: int, block_cols: int) -> tuple[int, int]:
    """(score elements computed per batch·head, K/V rows loaded per batch·head) of a kernel that
    skips the tiles a causal mask empties and computes the diagonal ones whole."""
    return visited_by_q_blocks(w, Tiling(block_rows, block_cols, w.nq, w.nk))


def basis(elements: float, head_dim: int) -> dict[str, float]:
    """Per 32 score elements, and per 32 score elements per 64 of d (the instruction basis)."""
    return {"el": elements / WARP, "el_d": elements / WARP * head_dim / 64}


def resident_blocks(threads: int, registers: int | None, shared_bytes: int, sms: int) -> tuple[int, str]:
    occ = occupancy(threads, registers, shared_bytes)
    return max(occ.blocks_per_sm, 1) * sms, occ.limited_by


def kv_dram(
    w: Workload, tr: int, resident: int, head_bytes: int, wave_bytes: int, l2_bytes: int
) -> tuple[float, str]:
    """DRAM bytes of K and V when each of the Tr blocks of a head re-reads them, blocks dispatched
    `resident` at a time in launch order (simlib.physical.waves: the blocks of a wave walk their
    loop together, and a re-read in a later wave hits when its reuse distance fits the L2)."""
    bh = w.batch_heads
    if tr * bh <= resident:
        return float(bh * head_bytes), "one wave: K/V read once per head"
    dram, worst, _ = head_rereads(waves(tr, bh, resident), bh, head_bytes, wave_bytes, l2_bytes)
    return float(dram), f"waves of {resident} blocks, reuse distance up to {worst / 2**20:.0f} MiB"


def flash_launch(
    name: str,
    klass: str,
    work: Work,
    w: Workload,
    *,
    tiles: tuple[int, int],
    threads: int,
    registers: int,
    shared_bytes: int,
    detail: dict,
    heavy_first: bool = False,
    sections: int | None = None,
) -> Launch:
    """One FlashAttention-type launch: a block per Q tile of Br rows and batch·head, the matmuls and the
    exponentials in turn (`Launch.serial`), under a causal mask each CTA's own work in launch order."""
    br, bc = tiles
    return Launch(
        name,
        klass,
        work,
        blocks=w.batch_heads * ceil_div(w.nq, br),
        threads=threads,
        registers=registers,
        shared_bytes=shared_bytes,
        serial=("tensor", "mufu"),
        cta_work=causal_cta_work(w, br, bc, heavy_first=heavy_first, sections=sections) if w.causal else (),
        detail={**detail, "tiles": tiles},
    )
