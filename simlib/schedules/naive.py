"""Standard attention (the paper's Algorithm 0): S = QKᵀ, P = softmax(S), O = PV, S and P in HBM.

The two matrix products are shared-memory tiled with a square tile T (output tile T×T, inner chunk
T). An output tile loads its operand rows once, so an operand is re-read once per output tile along
the other dimension. `matmul_tile=None` means T = ∞ (each operand read once): the paper's count,
reads 3Nd + 2N², writes 2N² + Nd elements.
Worked number (N=4096, d=64, T=∞): reads 3·262,144 + 2·16,777,216 = 34,340,864 elements, writes
2·16,777,216 + 262,144 = 33,816,576 elements: 137 MB in fp16 per head, against fa2's 68 MB.
With T=16 the kernel re-reads Q and K ⌈4096/16⌉ = 256 times each.
"""
from dataclasses import dataclass

import numpy as np

from ..tiling import block_sizes, ceil_div
from ..traffic import Event, Traffic


@dataclass(frozen=True)
class NaiveMapping:
    """How the naive kernel maps to threads: matmul tile T (None: ∞) and softmax threads per row
    (None: the paper's model, no shared-memory reduction)."""

    matmul_tile: int | None = None
    softmax_threads: int | None = None


def reduction_accesses(threads):
    """(writes, reads) of one shared-memory tree reduction over `threads` partials.

    t partial writes, t−1 pair-combines (2 reads + 1 write each), t reads of the result:
    2t − 1 writes, 3t − 2 reads. t = 128 → (255, 382).
    """
    return 2 * threads - 1, 3 * threads - 2


def _matmul_trace(a, b, out, m, n, k, tile, phase):
    """Events of C (m×n) = A (m×k)·B (k×n) with tile T; row tiles looped, column tiles vectorised."""
    cols = block_sizes(n, tile or n)
    chunks = block_sizes(k, tile or k)
    for r in block_sizes(m, tile or m):
        a_tile = np.outer(np.full_like(cols, r), chunks)   # A rows × chunk, per (col tile, chunk)
        b_tile = np.outer(cols, chunks)                     # B chunk × cols, per (col tile, chunk)
        for tensor, loads in ((a, a_tile), (b, b_tile)):
            yield Event("HBM", "read", tensor, phase, loads)
            yield Event("SRAM", "write", tensor, phase, loads)
        # every multiply-add reads one A and one B element from shared memory
        yield Event("SRAM", "read", a, phase, np.outer(r * cols, chunks))
        yield Event("SRAM", "read", b, phase, np.outer(r * cols, chunks))
        yield Event("HBM", "write", out, phase, r * cols)


def units(workload):
    return workload.batch_heads


def trace(workload, mapping):
    """S = QKᵀ, softmax row by row, O = PV. A causal mask is applied in the softmax pass, which
    still reads and writes whole rows (as PyTorch's masked softmax does)."""
    nq, nk, d = workload.nq, workload.nk, workload.head_dim
    yield from _matmul_trace("Q", "K", "S", nq, nk, d, mapping.matmul_tile, "qk")
    row_lengths = np.full(nq, nk, dtype=np.int64)
    yield Event("HBM", "read", "S", "softmax", row_lengths)
    yield Event("HBM", "write", "P", "softmax", row_lengths)
    if mapping.softmax_threads:
        writes, reads = reduction_accesses(mapping.softmax_threads)
        yield Event("SRAM", "write", "red", "softmax", np.full(nq, 2 * writes))   # max and sum
        yield Event("SRAM", "read", "red", "softmax", np.full(nq, 2 * reads))
    yield from _matmul_trace("P", "V", "O", nq, d, nk, mapping.matmul_tile, "pv")


def _matmul_closed_form(counts, a, b, out, m, n, k, tile, phase):
    a_loads = m * k * ceil_div(n, tile or n)   # A re-read once per column tile
    b_loads = n * k * ceil_div(m, tile or m)   # B re-read once per row tile
    for tensor, loads in ((a, a_loads), (b, b_loads)):
        counts[("HBM", "read", tensor, phase)] = loads
        counts[("SRAM", "write", tensor, phase)] = loads
        counts[("SRAM", "read", tensor, phase)] = m * n * k
    counts[("HBM", "write", out, phase)] = m * n


def closed_form(workload, mapping):
    nq, nk, d = workload.nq, workload.nk, workload.head_dim
    counts = {
        ("HBM", "read", "S", "softmax"): nq * nk,
        ("HBM", "write", "P", "softmax"): nq * nk,
    }
    _matmul_closed_form(counts, "Q", "K", "S", nq, nk, d, mapping.matmul_tile, "qk")
    _matmul_closed_form(counts, "P", "V", "O", nq, d, nk, mapping.matmul_tile, "pv")
    if mapping.softmax_threads:
        writes, reads = reduction_accesses(mapping.softmax_threads)
        counts[("SRAM", "write", "red", "softmax")] = 2 * nq * writes
        counts[("SRAM", "read", "red", "softmax")] = 2 * nq * reads
    return Traffic(counts)


def flops(workload, mapping):
    """The full S is computed, masked or not: 4·nq·nk·d per head."""
    return 4 * workload.nq * workload.nk * workload.head_dim
