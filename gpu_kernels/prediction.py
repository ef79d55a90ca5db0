"""simlib's prediction for exactly the configuration a kernel ran with (the other side of every
comparison): one function for every kernel, through the registry (gpu_kernels.kernels.KERNELS).

Worked number: tiled at N = 4096, d = 64 with Br = Bc = 64 reads Q once and K, V once per Q block:
(4096·64 + 64·2·4096·64) fp32 elements = 135,266,304 bytes.

>>> prediction("tiled", 1, 1, 4096, 64, block_rows=64, block_cols=64)["hbm_read_bytes"]
135266304
"""

from __future__ import annotations

from simlib import Workload

from .counting import COUNT_KEYS
from .kernels import kernel as registered


def prediction(
    kernel: str,
    batch: int,
    heads: int,
    seq_len: int,
    head_dim: int,
    *,
    dtype: str | None = None,
    kv_heads=None,
    causal=False,
    query_len=None,
    **mapping,
) -> dict:
    """simlib's four byte counts (totals over B·H) for `kernel` as configured by `mapping` (the
    parameters its registry entry names; others are ignored), in `dtype` (default: the kernel's first).

    ``seq_len`` is N_k; ``kv_heads`` (GQA/MQA), ``causal`` and ``query_len`` (N_q) go into simlib's
    Workload as they are (None: H_kv = H, N_q = N_k)."""
    k = registered(kernel)
    workload = Workload(
        seq_len,
        head_dim,
        batch,
        heads,
        dtype=dtype or k.dtypes[0],
        kv_heads=kv_heads,
        causal=bool(causal),
        query_len=query_len,
    )
    return k.counts(workload, **mapping)


def diff_counts(measured: dict, predicted: dict) -> dict:
    """measured − predicted per key (all zero when the kernel follows the contract)."""
    return {key: measured[key] - predicted[key] for key in COUNT_KEYS}
