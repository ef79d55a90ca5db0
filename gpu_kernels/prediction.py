"""simlib's prediction for exactly the tiling a kernel ran with (the other side of every comparison)."""

from __future__ import annotations

from .counting import COUNT_KEYS

#: Which simlib schedule counts each kernel, and the mapping parameters it takes.
SCHEDULES = {
    "tiled": ("fa2", ("block_rows", "block_cols")),
    "naive": ("naive", ("matmul_tile", "softmax_threads")),
}


def simlib_prediction(
    kernel: str,
    batch: int,
    heads: int,
    seq_len: int,
    head_dim: int,
    *,
    block_rows=None,
    block_cols=None,
    matmul_tile=None,
    softmax_threads=None,
    kv_heads=None,
    causal=False,
    query_len=None,
) -> dict:
    """simlib's four byte counts (totals over B·H) for ``kernel`` in {"tiled", "naive"}, fp32.

    ``seq_len`` is N_k; ``kv_heads`` (GQA/MQA), ``causal`` and ``query_len`` (N_q) go into simlib's
    Workload as they are (None: H_kv = H, N_q = N_k).
    """
    from simlib import Workload, count

    wl = Workload(
        batch=batch,
        heads=heads,
        seq_len=seq_len,
        head_dim=head_dim,
        dtype="fp32",
        kv_heads=kv_heads,
        causal=bool(causal),
        query_len=query_len,
    )
    if kernel not in SCHEDULES:
        raise ValueError(f"unknown kernel {kernel!r}; choose from {', '.join(SCHEDULES)}")
    schedule, names = SCHEDULES[kernel]
    given = {
        "block_rows": block_rows,
        "block_cols": block_cols,
        "matmul_tile": matmul_tile,
        "softmax_threads": softmax_threads,
    }
    r = count(schedule, wl, **{name: given[name] for name in names})
    return {key: int(getattr(r, key)) for key in COUNT_KEYS}


def diff_counts(measured: dict, predicted: dict) -> dict:
    """measured − predicted per key (all zero when the kernel follows the contract)."""
    return {key: measured[key] - predicted[key] for key in COUNT_KEYS}
