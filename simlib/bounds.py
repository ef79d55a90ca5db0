"""Lower bounds on HBM traffic.

- Compulsory: read Q, K, V once and write O once: 4·N·d elements per batch·head (Q and O per query
  head, K and V per KV head). No schedule can move less. N=4096, d=64, fp16: 4·4096·64·2 B = 2 MiB
  per head.
- Saha & Ye (2024), "The I/O Complexity of Attention, or How Optimal is FlashAttention?": any exact
  attention algorithm needs Θ(min(N²d²/M, N²d/√M)) transfers with M elements of SRAM (the first
  term applies for M ≥ d², the second below). It is ASYMPTOTIC: the constant is unknown, and this
  function returns the expression with constant 1, in elements, with N² read as nq·nk when there
  are fewer queries than keys. N=4096, d=64, M=98304:
  min(4096²·64²/98304, 4096²·64/√98304) = min(699,051, 3,386,741) ≈ 0.70 M elements.

>>> from simlib import Workload
>>> w = Workload(4096, 64)
>>> compulsory_bytes(w), round(saha_ye_elements(w, 98304))
(2097152, 699051)
"""

import math

from .workload import Workload


def compulsory_elements(workload: Workload) -> int:
    """Q read and O written once per query head, K and V read once per KV head."""
    w = workload
    return 2 * w.head_dim * w.batch * (w.nq * w.heads + w.nk * w.n_kv_heads)


def compulsory_bytes(workload: Workload) -> int:
    return compulsory_elements(workload) * workload.element_bytes


def saha_ye_elements(workload: Workload, sram_elements: int) -> float:
    """min(N²d²/M, N²d/√M) per head × B·H (asymptotic, constant taken as 1); M ≥ 1 element."""
    if isinstance(sram_elements, bool) or not isinstance(sram_elements, int) or sram_elements < 1:
        raise ValueError(
            f"sram: the Saha–Ye bound needs at least one element of SRAM, got M = {sram_elements!r}"
        )
    pairs, d, m = workload.nq * workload.nk, workload.head_dim, sram_elements
    return min(pairs * d * d / m, pairs * d / math.sqrt(m)) * workload.batch_heads


def saha_ye_bytes(workload: Workload, sram_bytes: int) -> float:
    return saha_ye_elements(workload, sram_bytes // workload.element_bytes) * workload.element_bytes
