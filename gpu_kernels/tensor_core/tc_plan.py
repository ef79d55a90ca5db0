"""What a tensor-core launch plan holds and how the runners get there: the one plan type
(`gpu_kernels.plan.KernelPlan`: the workload, the build) with the kernel's checked config; the
inputs rounded to the dtype on the device.

The workload is the one shape object (simlib's `Workload`, its dtype the 16-bit input type); `shape`
spells it as the kernels' launch code unpacks it, (B, H, H_kv, N_q, N_k, d). Worked example: q
(2, 8, 100, 64) with k, v (2, 2, 300, 64) gives shape (2, 8, 2, 100, 300, 64), GQA with 4 query heads
per K/V head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simlib.units import DTYPE_MAX
from simlib.workload import Workload

from ..checks import check_attention_inputs
from ..plan import KernelPlan
from .dtypes import check_dtype, from_bits, round_to, to_bits


@dataclass(frozen=True, kw_only=True)
class TcPlan(KernelPlan):
    """Built once from checked inputs, launched many times (the benchmark does)."""

    config: object  # the kernel's config (TcConfig, NaiveTcConfig), checked

    @classmethod
    def of(cls, shape, config, dtype, counting=False, causal=False):
        """The plan of `shape` = (B, H, H_kv, N_q, N_k, d) in `dtype` (bf16 or fp16)."""
        b, h, hkv, nq, nk, d = shape
        workload = Workload(
            nk, d, b, h, dtype=check_dtype(dtype), kv_heads=hkv, causal=bool(causal), query_len=nq
        )
        return cls(workload=workload, config=config, counting=bool(counting))

    @property
    def dtype(self) -> str:
        return self.workload.dtype

    @property
    def shape(self) -> tuple[int, int, int, int, int, int]:
        """(B, H, H_kv, N_q, N_k, d) of the workload."""
        w = self.workload
        return (w.batch, w.heads, w.n_kv_heads, w.nq, w.nk, w.head_dim)


def checked_plan(cls, q, k, v, *, dtype, config, default, counting, causal):
    """`cls(shape, config, ...)` from host or device q, k, v; `default(d)` when no config is given.
    A bad dtype, shape, head dim or config is a ValueError naming it, before anything is compiled."""
    check_dtype(dtype)
    shape = check_attention_inputs(q, k, v, causal=causal)
    b, h, nk, d = shape.batch, shape.heads, shape.seq_len, shape.head_dim
    cfg = default(d) if config is None else config.check()
    if cfg.head_dim != d:
        raise ValueError(f"config.head_dim={cfg.head_dim} does not match the inputs' head_dim={d}")
    return cls.of((b, h, shape.kv_heads or h, shape.query_len or nk, nk, d), cfg, dtype, counting, causal)


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
