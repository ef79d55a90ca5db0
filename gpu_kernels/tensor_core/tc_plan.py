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

from simlib.workload import Workload

from ..checks import check_attention_inputs
from ..plan import KernelPlan
from .dtypes import check_dtype, to_bits


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
    """Each host fp32 array rounded to `dtype` (round to nearest even) as flat uint16 device bits."""
    from numba import cuda

    return tuple(cuda.to_device(to_bits(x, dtype).reshape(-1)) for x in arrays)
