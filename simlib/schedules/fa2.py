"""FlashAttention-2 forward: outer loop over Q blocks, inner loop over K/V blocks.

Per Q block i (r rows): Q_i is read once; for every visited K/V block j (c rows) K_j and V_j are
read; O_i and the logsumexp L_i are written once at the end. O_i, ℓ_i, m_i stay in registers.
HBM reads Nd + Tr·2Nd elements, writes Nd elements + N fp32 stats (no mask; causal skips tiles).
Worked number (N=4096, d=64, Br=64, Bc=384 → Tr=64): reads 262,144 + 64·524,288 = 33,816,576
elements, writes 262,144 elements + 4,096 stats.
SRAM accesses follow docs/COUNTING.md §fa2 (the `tiled` kernel's code).
"""
import numpy as np

from ..tiling import block_sizes
from ..traffic import Event, Traffic
from .visits import key_blocks_seen, keys_seen_by_formula


def units(workload):
    return workload.batch_heads


def trace(workload, tiling):
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


def tile_events(r, cols, d, kv_phase):
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


def tile_counts(pairs, kv_rows, d, kv_phase):
    """Closed-form twin of `tile_events`: `pairs` = Σ r·c over visited tiles, `kv_rows` = Σ c."""
    counts = {}
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


def visited_pairs(workload, tiling):
    """(Σ r_i·keys_i, Σ keys_i) over Q blocks: score pairs computed and K/V rows loaded."""
    keys = keys_seen_by_formula(workload, tiling)
    rows = block_sizes(workload.nq, tiling.block_rows)
    return int(np.dot(rows, keys)), int(keys.sum())


def closed_form(workload, tiling):
    nq, d = workload.nq, workload.head_dim
    pairs, kv_rows = visited_pairs(workload, tiling)   # no mask: nq·nk and Tr·nk
    counts = tile_counts(pairs, kv_rows, d, "load_kv")
    counts.update({
        ("HBM", "read", "Q", "load_q"): nq * d,
        ("SRAM", "write", "Q", "load_q"): nq * d,
        ("HBM", "write", "O", "store"): nq * d,
        ("HBM", "write", "L", "store"): nq,
    })
    return Traffic(counts)


def flops(workload, tiling):
    """Matmul FLOPs performed per unit: 4·d per computed score (diagonal tiles computed whole)."""
    return 4 * visited_pairs(workload, tiling)[0] * workload.head_dim
