"""What every kernel launch plan shares: the problem shape, the build (counting, causal) and the
attention variant (GQA's K/V heads, fewer queries than keys).

``naive.NaivePlan`` and ``tiled.TiledPlan`` add their mapping (matmul tile and softmax threads;
Br and Bc). Plans are frozen and keyword-only: built once from checked inputs, launched many times.
Worked example: shape (1, 16, 4096, 64) with query_len None has nq = 4096.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class KernelPlan:
    shape: tuple  # (B, H, N, d), N = N_k
    counting: bool = False
    causal: bool = False
    kv_heads: int | None = None  # H_kv; None: H (multi-head)
    query_len: int | None = None  # N_q; None: N

    @property
    def nq(self):
        return self.shape[2] if self.query_len is None else self.query_len

    @property
    def n_kv_heads(self):
        return self.shape[1] if self.kv_heads is None else self.kv_heads
