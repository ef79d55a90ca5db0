"""Standard attention backward (the paper's Algorithm 3), P saved from the forward pass in HBM.

dV = PᵀdO; dP = dO Vᵀ; dS = P ∘ (dP − rowsum(dP ∘ P)); dQ = dS K; dK = dSᵀ Q. With T = ∞
(each matmul operand read once): reads 5·N² + 5·N·d, writes 2·N² + 3·N·d elements; 8·N²·d FLOPs.
Worked number (N=1024, d=64): reads 5,570,560 elements, writes 2,293,760.
"""
import numpy as np

from ..traffic import Event, Traffic
from .naive import _matmul_closed_form, _matmul_trace

# (A, B, C, m, n, k) of each product C (m×n) = A (m×k)·B (k×n), in terms of nq, nk, d
PRODUCTS = (
    ("P", "dO", "dV", "nk", "d", "nq", "dv"),
    ("dO", "V", "dP", "nq", "nk", "d", "dp"),
    ("dS", "K", "dQ", "nq", "d", "nk", "dq"),
    ("dS", "Q", "dK", "nk", "d", "nq", "dk"),
)


def units(workload):
    return workload.batch_heads


def _dims(workload):
    return {"nq": workload.nq, "nk": workload.nk, "d": workload.head_dim}


def trace(workload, mapping):
    dims = _dims(workload)
    for a, b, c, m, n, k, phase in PRODUCTS[:2]:
        yield from _matmul_trace(a, b, c, dims[m], dims[n], dims[k], mapping.matmul_tile, phase)
    rows = np.full(workload.nq, workload.nk, dtype=np.int64)       # dS row by row
    yield Event("HBM", "read", "P", "ds", rows)
    yield Event("HBM", "read", "dP", "ds", rows)
    yield Event("HBM", "write", "dS", "ds", rows)
    for a, b, c, m, n, k, phase in PRODUCTS[2:]:
        yield from _matmul_trace(a, b, c, dims[m], dims[n], dims[k], mapping.matmul_tile, phase)


def closed_form(workload, mapping):
    dims, pairs = _dims(workload), workload.nq * workload.nk
    counts = {("HBM", "read", "P", "ds"): pairs, ("HBM", "read", "dP", "ds"): pairs,
              ("HBM", "write", "dS", "ds"): pairs}
    for a, b, c, m, n, k, phase in PRODUCTS:
        _matmul_closed_form(counts, a, b, c, dims[m], dims[n], dims[k], mapping.matmul_tile, phase)
    return Traffic(counts)


def flops(workload, mapping):
    return 8 * workload.nq * workload.nk * workload.head_dim
