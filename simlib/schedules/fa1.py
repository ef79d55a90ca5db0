"""FlashAttention-1 forward (the paper's Algorithm 1): outer loop over K/V blocks, inner over Q blocks.

O, ℓ, m are initialised in HBM; for every K/V block j (c rows) K_j, V_j are read once; for every
visited Q block i (r rows) Q_i, O_i, ℓ_i, m_i are read and O_i, ℓ_i, m_i written back.
HBM reads 2Nd + Tc·2Nd elements + Tc·2N stats; writes Nd + Tc·Nd elements + 2N + Tc·2N stats.
Worked number (N=4096, d=64, Bc=384 → Tc=11): reads 524,288 + 11·524,288 = 6,291,456 elements and
90,112 stats; writes 262,144 + 11·262,144 = 3,145,728 elements and 8,192 + 90,112 = 98,304 stats.
SRAM accesses follow docs/COUNTING.md §fa1. On chip at once (Algorithm 1, all in SRAM): Q_i, O_i
(2·Br·d), K_j, V_j (2·Bc·d), S_ij/P_ij (Br·Bc, P written over S) in the workload dtype, ℓ_i, m_i
(2·Br) in fp32. The paper's rule keeps each of Q_i, K_j, V_j, O_i within M/4 but not S_ij: with
192 KiB in fp16 and d = 128 (Br = 128, Bc = 192) the blocks need (2·128·128 + 2·192·128 + 128·192)·2
+ 2·128·4 = 214,016 B, 17,408 B (8.9 %) more than M (`Result.sram_overshoot_bytes`).

>>> from simlib import Workload
>>> t = closed_form(Workload(4096, 64), Tiling(64, 384, 4096, 4096))
>>> stats = t.elements("HBM", "read", "l") + t.elements("HBM", "read", "m")
>>> t.elements("HBM", "read") - stats, stats
(6291456, 90112)
>>> working_set(Workload(4096, 128), Tiling(128, 192, 4096, 4096)).bytes("SRAM")
214016
"""

from collections.abc import Iterator

import numpy as np

from ..schedule_protocol import Schedule, WorkingSet
from ..tiling import BLOCK_COLS, BLOCK_ROWS, Tiling, block_sizes, make_tiling, tile_trace_size
from ..traffic import Event, Traffic
from ..units import STAT_BYTES
from ..workload import Workload
from .fa2 import tile_counts, tile_events
from .visits import query_blocks_seen, visited_by_kv_blocks

STAGED = (("Q", True), ("O", True), ("l", False), ("m", False))  # (tensor, is a d-wide row)


def units(workload: Workload) -> int:
    return workload.batch_heads


def working_set(workload: Workload, tiling: Tiling) -> WorkingSet:
    br, bc, d, eb = tiling.block_rows, tiling.block_cols, workload.head_dim, workload.element_bytes
    return WorkingSet(
        (
            ("Q_i, O_i", "SRAM", 2 * br * d * eb),
            ("K_j, V_j", "SRAM", 2 * bc * d * eb),
            ("S_ij/P_ij", "SRAM", br * bc * eb),
            ("ℓ_i, m_i (fp32)", "SRAM", 2 * br * STAT_BYTES),
        )
    )


def trace(workload: Workload, tiling: Tiling) -> Iterator[Event]:
    """Walk the loop nest; the inner loop over Q blocks is vectorised (one array entry per tile)."""
    nq, d = workload.nq, workload.head_dim
    yield Event("HBM", "write", "O", "init", nq * d)
    yield Event("HBM", "write", "l", "init", nq)
    yield Event("HBM", "write", "m", "init", nq)
    rows = block_sizes(nq, tiling.block_rows)
    first_key = 0
    for c in block_sizes(workload.nk, tiling.block_cols):  # outer loop: K/V block j, c valid rows
        seen = rows[query_blocks_seen(workload, tiling, first_key)]
        first_key += c
        yield from tile_events(seen, np.int64(c), d, kv_phase="load_kv")
        for tensor, wide in STAGED:
            yield Event("HBM", "read", tensor, "load_qo", seen * (d if wide else 1))
            yield Event("SRAM", "write", tensor, "load_qo", seen * (d if wide else 1))
        for tensor, wide in STAGED[1:]:
            yield Event("SRAM", "read", tensor, "update", seen * (d if wide else 1))
            yield Event("HBM", "write", tensor, "store", seen * (d if wide else 1))


def closed_form(workload: Workload, tiling: Tiling) -> Traffic:
    nq, nk, d = workload.nq, workload.nk, workload.head_dim
    pairs, q_rows = visited_by_kv_blocks(workload, tiling)  # no mask: nq·nk and Tc·nq
    counts = tile_counts(pairs, nk, d, "load_kv")  # every K/V block is loaded once
    counts.update(
        {
            ("HBM", "write", "O", "init"): nq * d,
            ("HBM", "write", "l", "init"): nq,
            ("HBM", "write", "m", "init"): nq,
        }
    )
    for tensor, wide in STAGED:
        counts[("HBM", "read", tensor, "load_qo")] = q_rows * (d if wide else 1)
        counts[("SRAM", "write", tensor, "load_qo")] = q_rows * (d if wide else 1)
    for tensor, wide in STAGED[1:]:
        counts[("SRAM", "read", tensor, "update")] = q_rows * (d if wide else 1)
        counts[("HBM", "write", tensor, "store")] = q_rows * (d if wide else 1)
    return Traffic(counts)


def flops(workload: Workload, tiling: Tiling) -> int:
    return 4 * visited_by_kv_blocks(workload, tiling)[0] * workload.head_dim


SCHEDULE = Schedule(
    name="fa1",
    description="FlashAttention forward, outer loop over K/V blocks (Algorithm 1)",
    parameters=(BLOCK_ROWS, BLOCK_COLS),
    sram="sizes",
    build=make_tiling,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=tile_trace_size,
    working_set=working_set,
)
