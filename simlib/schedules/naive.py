"""Standard attention (the paper's Algorithm 0): S = QKᵀ, P = softmax(S), O = PV, S and P in HBM.

The two matrix products are shared-memory tiled with a square tile T (output tile T×T, inner chunk
T). An output tile loads its operand rows once, so an operand is re-read once per output tile along
the other dimension. `matmul_tile=None` means T = ∞ (each operand read once): the paper's count,
reads 3Nd + 2N², writes 2N² + Nd elements.
Worked number (N=4096, d=64, T=∞): reads 3·262,144 + 2·16,777,216 = 34,340,864 elements, writes
2·16,777,216 + 262,144 = 33,816,576 elements: 137 MB in fp16 per head, against fa2's 68 MB.
With T=16 the kernel re-reads Q and K ⌈4096/16⌉ = 256 times each.

>>> from simlib import Workload
>>> t = closed_form(Workload(4096, 64), NaiveMapping())
>>> t.elements("HBM", "read"), t.elements("HBM", "write")
(34340864, 33816576)
>>> closed_form(Workload(4096, 64), NaiveMapping(matmul_tile=16)).elements("HBM", "read", "Q")
67108864
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..schedule_protocol import DoesNotFit, Parameter, ParamValue, Schedule, WorkingSet
from ..tiling import block_sizes, ceil_div, sram_elements
from ..traffic import Event, Traffic, TrafficKey
from ..workload import Workload

MATMUL_TILE = Parameter(
    "matmul_tile", "T: square shared-memory tile of the two matmuls (default ∞: the paper's count)"
)
SOFTMAX_THREADS = Parameter(
    "softmax_threads", "threads per softmax row, a power of two ≥ 2 (shared-memory reductions; default: none)"
)


@dataclass(frozen=True)
class NaiveMapping:
    """How the naive kernel maps to threads: matmul tile T (None: ∞) and softmax threads per row
    (None: the paper's model, no shared-memory reduction)."""

    matmul_tile: int | None = None
    softmax_threads: int | None = None

    def as_dict(self) -> dict[str, ParamValue]:
        return {"matmul_tile": self.matmul_tile, "softmax_threads": self.softmax_threads}

    def summary(self) -> str:
        return (
            f"matmul tile T={self.matmul_tile or '∞ (operands read once)'}, "
            f"softmax threads/row={self.softmax_threads or 'none (no shared-memory reduction)'}"
        )


def build(
    workload: Workload,
    sram_bytes: int | None,
    matmul_tile: int | None = None,
    softmax_threads: int | None = None,
) -> NaiveMapping:
    """Check T against SRAM (two T×T tiles) and t (a power of two ≥ 2)."""
    if matmul_tile is not None and sram_bytes is not None:
        m = sram_elements(sram_bytes, workload.element_bytes, workload.head_dim)
        if 2 * matmul_tile**2 > m:
            raise DoesNotFit(
                f"matmul_tile={matmul_tile} does not fit in SRAM: two T×T tiles need "
                f"{2 * matmul_tile**2} elements, sram_bytes={sram_bytes} holds {m}"
            )
    if softmax_threads is not None and (softmax_threads < 2 or softmax_threads & (softmax_threads - 1)):
        raise ValueError(f"softmax_threads must be a power of two ≥ 2, got {softmax_threads}")
    return NaiveMapping(matmul_tile, softmax_threads)


def working_set(workload: Workload, mapping: NaiveMapping) -> WorkingSet:
    """The larger launch's shared memory: the matmuls' A and B tiles (2·T²) or the softmax's t fp32
    partials. T = ∞ (the paper's count) models no on-chip tile."""
    t, threads = mapping.matmul_tile, mapping.softmax_threads
    items = [("A, B matmul tiles", "SRAM", 2 * t * t * workload.element_bytes)] if t else []
    if threads and (not t or 4 * threads > 2 * t * t * workload.element_bytes):
        items = [("softmax partials (fp32)", "SRAM", 4 * threads)]
    return WorkingSet(tuple(items), "" if t else "matmul tile T = ∞: operands read once, no tile modelled")


def matmul_trace_size(m: int, n: int, k: int, tile: int | None) -> tuple[int, int]:
    """(longest array, entries) of `_matmul_trace`: per row tile, one entry per (col tile, chunk)."""
    per_row = ceil_div(n, tile or n) * ceil_div(k, tile or k)
    return per_row, ceil_div(m, tile or m) * per_row


def reduction_accesses(threads: int) -> tuple[int, int]:
    """(writes, reads) of one shared-memory tree reduction over `threads` partials.

    t partial writes, t−1 pair-combines (2 reads + 1 write each), t reads of the result:
    2t − 1 writes, 3t − 2 reads. t = 128 → (255, 382).
    """
    return 2 * threads - 1, 3 * threads - 2


def _matmul_trace(
    a: str, b: str, out: str, m: int, n: int, k: int, tile: int | None, phase: str
) -> Iterator[Event]:
    """Events of C (m×n) = A (m×k)·B (k×n) with tile T; row tiles looped, column tiles vectorised."""
    cols = block_sizes(n, tile or n)
    chunks = block_sizes(k, tile or k)
    for r in block_sizes(m, tile or m):
        a_tile = np.outer(np.full_like(cols, r), chunks)  # A rows × chunk, per (col tile, chunk)
        b_tile = np.outer(cols, chunks)  # B chunk × cols, per (col tile, chunk)
        for tensor, loads in ((a, a_tile), (b, b_tile)):
            yield Event("HBM", "read", tensor, phase, loads)
            yield Event("SRAM", "write", tensor, phase, loads)
        # every multiply-add reads one A and one B element from shared memory
        yield Event("SRAM", "read", a, phase, np.outer(r * cols, chunks))
        yield Event("SRAM", "read", b, phase, np.outer(r * cols, chunks))
        yield Event("HBM", "write", out, phase, r * cols)


def units(workload: Workload) -> int:
    return workload.batch_heads


def trace(workload: Workload, mapping: NaiveMapping) -> Iterator[Event]:
    """S = QKᵀ, softmax row by row, O = PV. A causal mask is applied in the softmax pass, which
    still reads and writes whole rows (as PyTorch's masked softmax does)."""
    nq, nk, d = workload.nq, workload.nk, workload.head_dim
    yield from _matmul_trace("Q", "K", "S", nq, nk, d, mapping.matmul_tile, "qk")
    row_lengths = np.full(nq, nk, dtype=np.int64)
    yield Event("HBM", "read", "S", "softmax", row_lengths)
    yield Event("HBM", "write", "P", "softmax", row_lengths)
    if mapping.softmax_threads:
        writes, reads = reduction_accesses(mapping.softmax_threads)
        yield Event("SRAM", "write", "red", "softmax", np.full(nq, 2 * writes))  # max and sum
        yield Event("SRAM", "read", "red", "softmax", np.full(nq, 2 * reads))
    yield from _matmul_trace("P", "V", "O", nq, d, nk, mapping.matmul_tile, "pv")


def _matmul_closed_form(
    counts: dict[TrafficKey, int],
    a: str,
    b: str,
    out: str,
    m: int,
    n: int,
    k: int,
    tile: int | None,
    phase: str,
) -> None:
    a_loads = m * k * ceil_div(n, tile or n)  # A re-read once per column tile
    b_loads = n * k * ceil_div(m, tile or m)  # B re-read once per row tile
    for tensor, loads in ((a, a_loads), (b, b_loads)):
        counts[("HBM", "read", tensor, phase)] = loads
        counts[("SRAM", "write", tensor, phase)] = loads
        counts[("SRAM", "read", tensor, phase)] = m * n * k
    counts[("HBM", "write", out, phase)] = m * n


def closed_form(workload: Workload, mapping: NaiveMapping) -> Traffic:
    nq, nk, d = workload.nq, workload.nk, workload.head_dim
    counts: dict[TrafficKey, int] = {
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


def flops(workload: Workload, mapping: NaiveMapping) -> int:
    """The full S is computed, masked or not: 4·nq·nk·d per head."""
    return 4 * workload.nq * workload.nk * workload.head_dim


def trace_size(workload: Workload, mapping: NaiveMapping) -> tuple[int, int]:
    nq, nk, d, t = workload.nq, workload.nk, workload.head_dim, mapping.matmul_tile
    (qk_long, qk_all), (pv_long, pv_all) = matmul_trace_size(nq, nk, d, t), matmul_trace_size(nq, d, nk, t)
    return max(nq, qk_long, pv_long), nq + qk_all + pv_all


SCHEDULE = Schedule(
    name="naive",
    description="standard attention forward, S and P in HBM (Algorithm 0)",
    parameters=(MATMUL_TILE, SOFTMAX_THREADS),
    sram="checks",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
    working_set=working_set,
)
