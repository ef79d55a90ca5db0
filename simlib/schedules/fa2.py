"""FlashAttention-2 forward: outer loop over Q blocks, inner loop over K/V blocks.

Per Q block i (r rows): Q_i is read once; for every K/V block j (c rows) K_j and V_j are read; O_i
and the logsumexp L_i are written once at the end. O_i, ℓ_i, m_i stay in registers.
HBM reads Nd + Tr·2Nd elements, writes Nd elements + N fp32 stats.
Worked number (N=4096, d=64, Br=64, Bc=384 → Tr=64): reads 262,144 + 64·524,288 = 33,816,576
elements, writes 262,144 elements + 4,096 stats.
SRAM accesses follow docs/COUNTING.md §fa2 (the `tiled` kernel's code).
"""
from ..tiling import block_sizes
from ..traffic import Event, Traffic


def trace(workload, tiling):
    """Walk the loop nest; the inner loop over K/V blocks is vectorised (one array entry per tile)."""
    n, d = workload.seq_len, workload.head_dim
    cols = block_sizes(n, tiling.block_cols)          # c_j for every K/V block
    for r in block_sizes(n, tiling.block_rows):       # outer loop: Q block i with r valid rows
        yield Event("HBM", "read", "Q", "load_q", r * d)
        yield Event("SRAM", "write", "Q", "load_q", r * d)
        for tensor in ("K", "V"):
            yield Event("HBM", "read", tensor, "load_kv", cols * d)
            yield Event("SRAM", "write", tensor, "load_kv", cols * d)
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
        yield Event("HBM", "write", "O", "store", r * d)
        yield Event("HBM", "write", "L", "store", r)


def closed_form(workload, tiling):
    n, d, tr = workload.seq_len, workload.head_dim, tiling.tr
    return Traffic({
        ("HBM", "read", "Q", "load_q"): n * d,
        ("HBM", "read", "K", "load_kv"): tr * n * d,
        ("HBM", "read", "V", "load_kv"): tr * n * d,
        ("HBM", "write", "O", "store"): n * d,
        ("HBM", "write", "L", "store"): n,
        ("SRAM", "write", "Q", "load_q"): n * d,
        ("SRAM", "write", "K", "load_kv"): tr * n * d,
        ("SRAM", "write", "V", "load_kv"): tr * n * d,
        ("SRAM", "read", "Q", "scores"): n * n * d,
        ("SRAM", "read", "K", "scores"): n * n * d,
        ("SRAM", "write", "S", "scores"): n * n,
        ("SRAM", "read", "S", "softmax"): n * n,
        ("SRAM", "write", "P", "softmax"): n * n,
        ("SRAM", "read", "P", "pv"): n * n,
        ("SRAM", "read", "V", "pv"): n * n * d,
    })
