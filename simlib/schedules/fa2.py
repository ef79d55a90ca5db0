"""FlashAttention-2 forward: outer loop over Q blocks, inner loop over K/V blocks.

Per Q block i (r rows): Q_i is read once; for every visited K/V block j (c rows) K_j and V_j are
read; O_i and the logsumexp L_i are written once at the end. O_i, ℓ_i, m_i stay in registers.
HBM reads Nd + Tr·2Nd elements, writes Nd elements + N fp32 stats (no mask; causal skips tiles).
Worked number (N=4096, d=64, Br=64, Bc=384 → Tr=64): reads 262,144 + 64·524,288 = 33,816,576
elements, writes 262,144 elements + 4,096 stats.
SRAM accesses follow docs/COUNTING.md §fa2 (the `tiled` kernel's code).

>>> from simlib import Workload
>>> t = closed_form(Workload(4096, 64), Tiling(64, 384, 4096, 4096))
>>> t.elements("HBM", "read"), t.elements("HBM", "write")
(33816576, 266240)
"""
from collections.abc import Iterator

from ..schedule_protocol import Schedule
from ..tiling import BLOCK_COLS, BLOCK_ROWS, Tiling, block_sizes, make_tiling, tile_trace_size
from ..traffic import Count, Event, Traffic, TrafficKey
from ..workload import Workload
from .visits import key_blocks_seen, visited_by_q_blocks


def units(workload: Workload) -> int:
    return workload.batch_heads


def trace(workload: Workload, tiling: Tiling) -> Iterator[Event]:
    """Walk the loop nest; the inner loop over K/V blocks is vectorised (one array entry per tile)."""
    d = workload.head_dim
    cols = block_sizes(workload.nk, tiling.block_cols)        # c_j for every K/V block
    last_row = -1
    for r in block_sizes(workload.nq, tiling.block_rows):     # outer loop: Q block i, r valid rows
        last_row += r
        seen = cols[key_blocks_seen(workload, tiling, last_row)]
        yield Event("HBM", "read", "Q", "load_q", r * d)
        yield Event("SRAM", "write", "Q", "load_q", r * d)
        yield from tile_events(r, seen, d, kv_phase="load_kv")
        yield Event("HBM", "write", "O", "store", r * d)
        yield Event("HBM", "write", "L", "store", r)


def tile_events(r: Count, cols: Count, d: int, kv_phase: str) -> Iterator[Event]:
    """One Q block of r rows against K/V blocks of `cols` rows (an array): loads and tile arithmetic."""
    for tensor in ("K", "V"):
        yield Event("HBM", "read", tensor, kv_phase, cols * d)
        yield Event("SRAM", "write", tensor, kv_phase, cols * d)
    # S_ij = Q_i K_jᵀ: each of r·c scores reads a Q row and a K row, writes one score.
    yield Event("SRAM", "read", "Q", "scores", r * cols * d)
    yield Event("SRAM", "read", "K", "scores", r * cols * d)
    yield Event("SRAM", "write", "S", "scores", r * cols)
    # P̃_ij = exp(S_ij − m_new), written over S (the running max was kept in a register).
    yield Event("SRAM", "read", "S", "softmax", r * cols)
    yield Event("SRAM", "write", "P", "softmax", r * cols)
    # O_i += P̃_ij V_j with O_i in registers: p once per score, a V row per score.
    yield Event("SRAM", "read", "P", "pv", r * cols)
    yield Event("SRAM", "read", "V", "pv", r * cols * d)


def tile_counts(pairs: int, kv_rows: int, d: int, kv_phase: str) -> dict[TrafficKey, int]:
    """Closed-form twin of `tile_events`: `pairs` = Σ r·c over visited tiles, `kv_rows` = Σ c."""
    counts: dict[TrafficKey, int] = {}
    for tensor in ("K", "V"):
        counts[("HBM", "read", tensor, kv_phase)] = kv_rows * d
        counts[("SRAM", "write", tensor, kv_phase)] = kv_rows * d
    counts.update({
        ("SRAM", "read", "Q", "scores"): pairs * d,
        ("SRAM", "read", "K", "scores"): pairs * d,
        ("SRAM", "write", "S", "scores"): pairs,
        ("SRAM", "read", "S", "softmax"): pairs,
        ("SRAM", "write", "P", "softmax"): pairs,
        ("SRAM", "read", "P", "pv"): pairs,
        ("SRAM", "read", "V", "pv"): pairs * d,
    })
    return counts


def closed_form(workload: Workload, tiling: Tiling) -> Traffic:
    nq, d = workload.nq, workload.head_dim
    pairs, kv_rows = visited_by_q_blocks(workload, tiling)   # no mask: nq·nk and Tr·nk
    counts = tile_counts(pairs, kv_rows, d, "load_kv")
    counts.update({
        ("HBM", "read", "Q", "load_q"): nq * d,
        ("SRAM", "write", "Q", "load_q"): nq * d,
        ("HBM", "write", "O", "store"): nq * d,
        ("HBM", "write", "L", "store"): nq,
    })
    return Traffic(counts)


def flops(workload: Workload, tiling: Tiling) -> int:
    """Matmul FLOPs performed per unit: 4·d per computed score (diagonal tiles computed whole)."""
    return 4 * visited_by_q_blocks(workload, tiling)[0] * workload.head_dim


SCHEDULE = Schedule(
    name="fa2", description="FlashAttention-2 forward, outer loop over Q blocks",
    parameters=(BLOCK_ROWS, BLOCK_COLS), sram="sizes", build=make_tiling, trace=trace,
    closed_form=closed_form, flops=flops, units=units, trace_size=tile_trace_size,
)
