"""Standard attention backward (the paper's Algorithm 3), P saved from the forward pass in HBM.

dV = PᵀdO; dP = dO Vᵀ; dS = P ∘ (dP − rowsum(dP ∘ P)); dQ = dS K; dK = dSᵀ Q. With T = ∞
(each matmul operand read once): reads 5·N² + 5·N·d, writes 2·N² + 3·N·d elements; 8·N²·d FLOPs.
Worked number (N=1024, d=64): reads 5,570,560 elements, writes 2,293,760.

>>> from simlib import Workload
>>> t = closed_form(Workload(1024, 64), NaiveMapping())
>>> t.elements("HBM", "read"), t.elements("HBM", "write")
(5570560, 2293760)
"""

from collections.abc import Iterator

import numpy as np

from ..schedule_protocol import Schedule
from ..traffic import Event, Traffic, TrafficKey
from ..workload import Workload
from .naive import (
    MATMUL_TILE,
    NaiveMapping,
    _matmul_closed_form,
    _matmul_trace,
    matmul_trace_size,
    working_set,
)
from .naive import build as build_naive

# (A, B, C, m, n, k) of each product C (m×n) = A (m×k)·B (k×n), in terms of nq, nk, d
PRODUCTS = (
    ("P", "dO", "dV", "nk", "d", "nq", "dv"),
    ("dO", "V", "dP", "nq", "nk", "d", "dp"),
    ("dS", "K", "dQ", "nq", "d", "nk", "dq"),
    ("dS", "Q", "dK", "nk", "d", "nq", "dk"),
)


def units(workload: Workload) -> int:
    return workload.batch_heads


def build(workload: Workload, sram_bytes: int | None, matmul_tile: int | None = None) -> NaiveMapping:
    return build_naive(workload, sram_bytes, matmul_tile)


def _dims(workload: Workload) -> dict[str, int]:
    return {"nq": workload.nq, "nk": workload.nk, "d": workload.head_dim}


def trace(workload: Workload, mapping: NaiveMapping) -> Iterator[Event]:
    dims = _dims(workload)
    for a, b, c, m, n, k, phase in PRODUCTS[:2]:
        yield from _matmul_trace(a, b, c, dims[m], dims[n], dims[k], mapping.matmul_tile, phase)
    rows = np.full(workload.nq, workload.nk, dtype=np.int64)  # dS row by row
    yield Event("HBM", "read", "P", "ds", rows)
    yield Event("HBM", "read", "dP", "ds", rows)
    yield Event("HBM", "write", "dS", "ds", rows)
    for a, b, c, m, n, k, phase in PRODUCTS[2:]:
        yield from _matmul_trace(a, b, c, dims[m], dims[n], dims[k], mapping.matmul_tile, phase)


def closed_form(workload: Workload, mapping: NaiveMapping) -> Traffic:
    dims, pairs = _dims(workload), workload.nq * workload.nk
    counts: dict[TrafficKey, int] = {
        ("HBM", "read", "P", "ds"): pairs,
        ("HBM", "read", "dP", "ds"): pairs,
        ("HBM", "write", "dS", "ds"): pairs,
    }
    for a, b, c, m, n, k, phase in PRODUCTS:
        _matmul_closed_form(counts, a, b, c, dims[m], dims[n], dims[k], mapping.matmul_tile, phase)
    return Traffic(counts)


def flops(workload: Workload, mapping: NaiveMapping) -> int:
    return 8 * workload.nq * workload.nk * workload.head_dim


def trace_size(workload: Workload, mapping: NaiveMapping) -> tuple[int, int]:
    dims = _dims(workload)
    sizes = [
        matmul_trace_size(dims[m], dims[n], dims[k], mapping.matmul_tile) for _, _, _, m, n, k, _ in PRODUCTS
    ]
    return max([workload.nq] + [s[0] for s in sizes]), workload.nq + sum(s[1] for s in sizes)


SCHEDULE = Schedule(
    name="naive_bwd",
    description="standard attention backward (Algorithm 3)",
    parameters=(MATMUL_TILE,),
    sram="checks",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
    working_set=working_set,
)
