"""The one plan type: every kernel launch plan holds the workload (simlib's ``Workload``, the one
shape object: shape, GQA's K/V heads, fewer queries than keys, causal; fp32 for the CUDA-core kernels,
the 16-bit input type for the tensor-core ones) and the build (counting or timing).

``naive.NaivePlan``, ``tiled.TiledPlan`` and ``fast.FastPlan`` add their mapping (matmul tile and
softmax threads; Br and Bc; the fast kernel's config), ``tensor_core.tc_plan.TcPlan`` the tensor-core
kernels' config. Plans are frozen and keyword-only: built
once from checked inputs, launched many times.
Worked example: Workload(seq_len=4096, head_dim=64, heads=16, dtype="fp32") has nq = 4096 and
batch_heads = 16.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simlib.workload import Workload


@dataclass(frozen=True, kw_only=True)
class KernelPlan:
    workload: Workload  # seq_len = N_k, query_len = N_q (None: N_k), kv_heads (None: H), causal
    counting: bool = False

    @property
    def causal(self) -> bool:
        return self.workload.causal

    def device_inputs(self, q, k, v):
        """Host q, k, v on the device as the launches view them: q (B·H, N_q, d), k and v (B·H_kv, N_k, d)."""
        from numba import cuda

        w = self.workload
        kv_shape = (w.batch * w.n_kv_heads, w.nk, w.head_dim)
        return (
            cuda.to_device(np.ascontiguousarray(q).reshape(w.batch_heads, w.nq, w.head_dim)),
            cuda.to_device(np.ascontiguousarray(k).reshape(kv_shape)),
            cuda.to_device(np.ascontiguousarray(v).reshape(kv_shape)),
        )
