"""FlashAttention-1 forward (the paper's Algorithm 1): outer loop over K/V blocks, inner over Q blocks.

O, ℓ, m are initialised in HBM; for every K/V block j (c rows) K_j, V_j are read once; for every Q
block i (r rows) Q_i, O_i, ℓ_i, m_i are read and O_i, ℓ_i, m_i written back.
HBM reads 2Nd + Tc·2Nd elements + Tc·2N stats; writes Nd + Tc·Nd elements + 2N + Tc·2N stats.
Worked number (N=4096, d=64, Bc=384 → Tc=11): reads 524,288 + 11·524,288 = 6,291,456 elements and
90,112 stats; writes 262,144 + 11·262,144 = 3,145,728 elements and 8,192 + 90,112 = 98,304 stats.
SRAM accesses follow docs/COUNTING.md §fa1.
"""
from ..tiling import block_sizes
from ..traffic import Event, Traffic


def trace(workload, tiling):
    """Walk the loop nest; the inner loop over Q blocks is vectorised (one array entry per tile)."""
    n, d = workload.seq_len, workload.head_dim
    yield Event("HBM", "write", "O", "init", n * d)
    yield Event("HBM", "write", "l", "init", n)
    yield Event("HBM", "write", "m", "init", n)
    rows = block_sizes(n, tiling.block_rows)          # r_i for every Q block
    for c in block_sizes(n, tiling.block_cols):       # outer loop: K/V block j with c valid rows
        for tensor in ("K", "V"):
            yield Event("HBM", "read", tensor, "load_kv", c * d)
            yield Event("SRAM", "write", tensor, "load_kv", c * d)
        for tensor, width in (("Q", d), ("O", d), ("l", 1), ("m", 1)):
            yield Event("HBM", "read", tensor, "load_qo", rows * width)
            yield Event("SRAM", "write", tensor, "load_qo", rows * width)
        yield Event("SRAM", "read", "Q", "scores", rows * c * d)
        yield Event("SRAM", "read", "K", "scores", rows * c * d)
        yield Event("SRAM", "write", "S", "scores", rows * c)
        yield Event("SRAM", "read", "S", "softmax", rows * c)
        yield Event("SRAM", "write", "P", "softmax", rows * c)
        yield Event("SRAM", "read", "P", "pv", rows * c)
        yield Event("SRAM", "read", "V", "pv", rows * c * d)
        for tensor, width in (("O", d), ("l", 1), ("m", 1)):
            yield Event("SRAM", "read", tensor, "update", rows * width)
            yield Event("HBM", "write", tensor, "store", rows * width)


def closed_form(workload, tiling):
    n, d, tc = workload.seq_len, workload.head_dim, tiling.tc
    counts = {
        ("HBM", "write", "O", "init"): n * d,
        ("HBM", "write", "l", "init"): n,
        ("HBM", "write", "m", "init"): n,
        ("SRAM", "read", "Q", "scores"): n * n * d,
        ("SRAM", "read", "K", "scores"): n * n * d,
        ("SRAM", "write", "S", "scores"): n * n,
        ("SRAM", "read", "S", "softmax"): n * n,
        ("SRAM", "write", "P", "softmax"): n * n,
        ("SRAM", "read", "P", "pv"): n * n,
        ("SRAM", "read", "V", "pv"): n * n * d,
    }
    for tensor in ("K", "V"):
        counts[("HBM", "read", tensor, "load_kv")] = n * d
        counts[("SRAM", "write", tensor, "load_kv")] = n * d
    for tensor, width in (("Q", d), ("O", d), ("l", 1), ("m", 1)):
        counts[("HBM", "read", tensor, "load_qo")] = tc * n * width
        counts[("SRAM", "write", tensor, "load_qo")] = tc * n * width
    for tensor, width in (("O", d), ("l", 1), ("m", 1)):
        counts[("SRAM", "read", tensor, "update")] = tc * n * width
        counts[("HBM", "write", tensor, "store")] = tc * n * width
    return Traffic(counts)
