"""PyTorch-style unfused attention, forward and backward: every elementwise step is its own kernel.

Like HuggingFace GPT-2's eager attention: S = QKᵀ; S = S/√d; S = where(causal, S, −inf); P =
softmax(S); P = dropout(P) (saving a one-byte mask Z); O = PV. Each step reads and writes N×N. The
matrix products are cuBLAS calls that read each operand once. The backward runs the steps' gradients
in reverse. Counted: HBM only (what Figure 2 (left) of the FlashAttention paper reports).

Forward N×N passes: write S; scale r+w; mask r+w (causal); softmax r+w; dropout r+w and Z; read P
in PV: 6 + 2 (causal) + 2 (dropout) passes of the dtype, + 1 byte per score for Z.
Backward: read P in dV; write dP; dropout r+w, read Z; softmax r dP, r P, w dS; mask r+w; scale r+w;
read dS twice (dQ, dK): 9 + 2 (causal) + 2 (dropout) passes, + 1 byte per score.
Worked number (GPT-2 medium, N=1024, d=64, causal, dropout, fp16, B·H=1024): 23 passes × 2 B × 2²⁰
scores × 1024 heads = 49.4 GB, + 2 × 1.07 GB of dropout masks.
"""
from dataclasses import dataclass

from ..traffic import Event, Traffic


@dataclass(frozen=True)
class UnfusedMapping:
    dropout: bool = True


def units(workload):
    return workload.batch_heads


def forward_steps(causal, dropout):
    """(phase, reads, writes) of N×N tensors per kernel of the forward pass, in launch order."""
    steps = [("qk", (), ("S",)), ("scale", ("S",), ("S",))]
    if causal:
        steps.append(("mask", ("S",), ("S",)))
    steps.append(("softmax", ("S",), ("P",)))
    if dropout:
        steps.append(("dropout", ("P",), ("P", "Z")))
    steps.append(("pv", ("P",), ()))
    return steps


def backward_steps(causal, dropout):
    steps = [("dv", ("P",), ()), ("dp", (), ("dP",))]
    if dropout:
        steps.append(("dropout_bwd", ("dP", "Z"), ("dP",)))
    steps.append(("softmax_bwd", ("dP", "P"), ("dS",)))
    if causal:
        steps.append(("mask_bwd", ("dS",), ("dS",)))
    steps += [("scale_bwd", ("dS",), ("dS",)), ("dq", ("dS",), ()), ("dk", ("dS",), ())]
    return steps


# N×d operands of the matrix products: phase -> (reads, writes); x is nq- or nk-long
FORWARD_MATMUL_IO = {"qk": ((("Q", "nq"), ("K", "nk")), ()), "pv": ((("V", "nk"),), (("O", "nq"),))}
BACKWARD_MATMUL_IO = {
    "dv": ((("dO", "nq"),), (("dV", "nk"),)),
    "dp": ((("dO", "nq"), ("V", "nk")), ()),
    "dq": ((("K", "nk"),), (("dQ", "nq"),)),
    "dk": ((("Q", "nq"),), (("dK", "nk"),)),
}


def _trace(workload, steps, matmul_io):
    pairs = workload.nq * workload.nk
    rows = {"nq": workload.nq, "nk": workload.nk}
    for phase, reads, writes in steps:
        for tensor in reads:
            yield Event("HBM", "read", tensor, phase, pairs)
        for tensor in writes:
            yield Event("HBM", "write", tensor, phase, pairs)
        io_reads, io_writes = matmul_io.get(phase, ((), ()))
        for tensor, length in io_reads:
            yield Event("HBM", "read", tensor, phase, rows[length] * workload.head_dim)
        for tensor, length in io_writes:
            yield Event("HBM", "write", tensor, phase, rows[length] * workload.head_dim)


def trace(workload, mapping):
    yield from _trace(workload, forward_steps(workload.causal, mapping.dropout), FORWARD_MATMUL_IO)


def trace_backward(workload, mapping):
    yield from _trace(workload, backward_steps(workload.causal, mapping.dropout), BACKWARD_MATMUL_IO)


def closed_form(workload, mapping):
    """The forward's traffic per tensor, written out as formulas."""
    pairs, nd_q, nd_k = workload.nq * workload.nk, workload.nq * workload.head_dim, workload.nk * workload.head_dim
    c, p = workload.causal, mapping.dropout
    return Traffic({
        ("HBM", "read", "Q", "qk"): nd_q, ("HBM", "read", "K", "qk"): nd_k,
        ("HBM", "write", "S", "qk"): pairs,
        ("HBM", "read", "S", "scale"): pairs, ("HBM", "write", "S", "scale"): pairs,
        ("HBM", "read", "S", "mask"): pairs * c, ("HBM", "write", "S", "mask"): pairs * c,
        ("HBM", "read", "S", "softmax"): pairs, ("HBM", "write", "P", "softmax"): pairs,
        ("HBM", "read", "P", "dropout"): pairs * p, ("HBM", "write", "P", "dropout"): pairs * p,
        ("HBM", "write", "Z", "dropout"): pairs * p,
        ("HBM", "read", "P", "pv"): pairs, ("HBM", "read", "V", "pv"): nd_k,
        ("HBM", "write", "O", "pv"): nd_q,
    })


def closed_form_backward(workload, mapping):
    pairs, nd_q, nd_k = workload.nq * workload.nk, workload.nq * workload.head_dim, workload.nk * workload.head_dim
    c, p = workload.causal, mapping.dropout
    return Traffic({
        ("HBM", "read", "P", "dv"): pairs, ("HBM", "read", "dO", "dv"): nd_q, ("HBM", "write", "dV", "dv"): nd_k,
        ("HBM", "read", "dO", "dp"): nd_q, ("HBM", "read", "V", "dp"): nd_k, ("HBM", "write", "dP", "dp"): pairs,
        ("HBM", "read", "dP", "dropout_bwd"): pairs * p, ("HBM", "read", "Z", "dropout_bwd"): pairs * p,
        ("HBM", "write", "dP", "dropout_bwd"): pairs * p,
        ("HBM", "read", "dP", "softmax_bwd"): pairs, ("HBM", "read", "P", "softmax_bwd"): pairs,
        ("HBM", "write", "dS", "softmax_bwd"): pairs,
        ("HBM", "read", "dS", "mask_bwd"): pairs * c, ("HBM", "write", "dS", "mask_bwd"): pairs * c,
        ("HBM", "read", "dS", "scale_bwd"): pairs, ("HBM", "write", "dS", "scale_bwd"): pairs,
        ("HBM", "read", "dS", "dq"): pairs, ("HBM", "read", "K", "dq"): nd_k, ("HBM", "write", "dQ", "dq"): nd_q,
        ("HBM", "read", "dS", "dk"): pairs, ("HBM", "read", "Q", "dk"): nd_q, ("HBM", "write", "dK", "dk"): nd_k,
    })


def flops(workload, mapping):
    return 4 * workload.nq * workload.nk * workload.head_dim


def flops_backward(workload, mapping):
    return 8 * workload.nq * workload.nk * workload.head_dim
