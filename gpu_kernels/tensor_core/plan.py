"""What a tensor-core launch plan holds and how the runners get there: checked shape, config, dtype
and build; the inputs rounded to the dtype on the device; the byte counters read back.

Worked example: q (2, 8, 100, 64) with k, v (2, 2, 300, 64) gives shape (2, 8, 2, 100, 300, 64):
(B, H, H_kv, N_q, N_k, d), GQA with 4 query heads per K/V head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_attention_inputs
from .dtypes import check_dtype, to_bits

COUNT_KEYS = ("hbm_read_bytes", "hbm_write_bytes", "sram_read_bytes", "sram_write_bytes")


@dataclass(frozen=True)
class TcPlan:
    """Built once from checked inputs, launched many times (the benchmark does)."""

    shape: tuple  # (B, H, H_kv, N_q, N_k, d)
    config: object  # the kernel's config (TcConfig, NaiveTcConfig), checked
    dtype: str
    counting: bool = False
    causal: bool = False


def checked_plan(cls, q, k, v, *, dtype, config, default, counting, causal):
    """`cls(shape, config, ...)` from host or device q, k, v; `default(d)` when no config is given.
    A bad dtype, shape, head dim or config is a ValueError naming it, before anything is compiled."""
    check_dtype(dtype)
    shape = check_attention_inputs(q, k, v, causal=causal)
    b, h, nk, d = shape.batch, shape.heads, shape.seq_len, shape.head_dim
    cfg = default(d) if config is None else config.check()
    if cfg.head_dim != d:
        raise ValueError(f"config.head_dim={cfg.head_dim} does not match the inputs' head_dim={d}")
    return cls(
        (b, h, shape.kv_heads or h, shape.query_len or nk, nk, d), cfg, dtype, bool(counting), bool(causal)
    )


def upload(dtype, *arrays):
    """Each host fp32 array rounded to `dtype` (round to nearest even) as flat uint16 device bits."""
    from numba import cuda

    return tuple(cuda.to_device(to_bits(x, dtype).reshape(-1)) for x in arrays)


def counts_from_bytes(counters) -> dict:
    """The four byte counters (a device or host int64[4]) by name."""
    host = counters.copy_to_host() if hasattr(counters, "copy_to_host") else np.asarray(counters)
    return {key: int(host[i]) for i, key in enumerate(COUNT_KEYS)}


#: simlib's schedule for each tensor-core kernel (the mapping parameters are its config's).
SCHEDULES = {"fa2_tc": "fa2_tc", "naive_tc": "naive_tc"}


def tc_prediction(
    kernel,
    batch,
    heads,
    seq_len,
    head_dim,
    *,
    dtype="bf16",
    warps=4,
    block_cols=64,
    softmax_threads=None,
    kv_heads=None,
    causal=False,
    query_len=None,
    warp_rows=None,
    q_reload=None,
) -> dict:
    """simlib's four byte counts (totals over B·H) for the tensor-core `kernel` as configured.
    Worked number: fa2_tc, N = 4096, d = 64, W = 4 warps of 16 rows, Bc = 64, bf16, B·H = 1 reads
    33,816,576 elements (simlib/schedules/fa2_tc.py): 67,633,152 bytes."""
    from simlib import Workload, count

    wl = Workload(
        seq_len,
        head_dim,
        batch,
        heads,
        dtype=dtype,
        kv_heads=kv_heads,
        causal=bool(causal),
        query_len=query_len,
    )
    kw = {"warps": warps, "block_cols": block_cols}
    if kernel == "naive_tc":
        kw["softmax_threads"] = softmax_threads
    else:
        kw.update(warp_rows=warp_rows, q_reload=q_reload)
    r = count(SCHEDULES[kernel], wl, **kw)
    return {key: int(getattr(r, key)) for key in COUNT_KEYS}
