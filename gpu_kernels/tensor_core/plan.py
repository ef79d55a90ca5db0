"""What a tensor-core launch plan holds and how the runners get there: checked shape, config, dtype
and build; the inputs rounded to the dtype on the device; the byte counters read back.

Worked example: q (2, 8, 100, 64) with k, v (2, 2, 300, 64) gives shape (2, 8, 2, 100, 300, 64):
(B, H, H_kv, N_q, N_k, d), GQA with 4 query heads per K/V head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_attention_inputs
from .dtypes import DTYPE_MAX, check_dtype, from_bits, round_to, to_bits

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
    """Each host fp32 array rounded to `dtype` (round to nearest even) as flat uint16 device bits.
    An input that becomes ±inf on the way (|x| ≥ 65,520 in fp16) is refused, naming it."""
    from numba import cuda

    bits = [to_bits(x, dtype).reshape(-1) for x in arrays]
    for name, b in zip("qkv", bits):
        if not np.all(np.isfinite(from_bits(b, dtype))):
            raise ValueError(
                f"{name}: values beyond {dtype}'s largest finite number {DTYPE_MAX[dtype]:,.6g} "
                f"become inf when rounded to {dtype}"
            )
    return tuple(cuda.to_device(b) for b in bits)


def check_scores_fit(q, k, dtype, causal=False):
    """Refuse inputs whose scores S = QKᵀ/√d overflow `dtype` where a kernel stores S in it (naive_tc):
    in fp16 a score beyond 65,504 becomes inf and the row's softmax NaN (fa2_tc keeps S in fp32 and is
    right there). Cheap when it cannot happen: |s| ≤ ‖q‖·‖k‖/√d (Cauchy-Schwarz) below the limit needs
    no product; otherwise the scores the softmax uses (causal: the visible ones) are computed in
    float64 from the rounded inputs, one (batch, head) at a time."""
    limit = DTYPE_MAX[dtype]
    q64, k64 = (round_to(np.asarray(x, np.float32), dtype).astype(np.float64) for x in (q, k))
    d = q64.shape[-1]
    if np.linalg.norm(q64, axis=-1).max() * np.linalg.norm(k64, axis=-1).max() / np.sqrt(d) <= limit:
        return
    b, h, nq, _ = q64.shape
    group = h // k64.shape[1]
    nk = k64.shape[2]
    visible = np.arange(nk)[None, :] <= np.arange(nq)[:, None] + nk - nq if causal else None
    for bi in range(b):
        for hi in range(h):
            s = np.abs(q64[bi, hi] @ k64[bi, hi // group].T) / np.sqrt(d)
            if visible is not None:
                s = np.where(visible, s, 0.0)
            if s.max() > limit:
                row, col = np.unravel_index(int(np.argmax(s)), s.shape)
                raise ValueError(
                    f"q, k: score S[{bi}, {hi}, {row}, {col}] = {s[row, col]:,.6g} overflows {dtype} "
                    f"(largest finite {limit:,.6g}): naive_tc stores S in {dtype}, so that row's "
                    "softmax would be NaN; scale the inputs down, or use bf16 or fa2_tc (S in fp32)"
                )


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
