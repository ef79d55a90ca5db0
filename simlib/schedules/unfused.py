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
This module is the forward (`unfused`); unfused_bwd.py the backward, with the same mapping.

>>> from simlib import Workload
>>> t = closed_form(Workload(1024, 64, causal=True), UnfusedMapping(dropout=True))
>>> (t.elements("HBM") - 4 * 1024 * 64 - 1024**2) // 1024**2     # N×N passes of the dtype, + Z
10
"""

from collections.abc import Iterator
from dataclasses import dataclass

from ..schedule_protocol import Parameter, ParamValue, Schedule
from ..traffic import Event, Traffic
from ..workload import Workload

DROPOUT = Parameter(
    "dropout",
    "dropout in the forward: unfused and attention_ref run a dropout kernel with a one-byte mask Z (default "
    "on); fa2 and fa2_torch fuse it (its mask is drawn on chip, no traffic) and only the FA2 kernel's tiles "
    "change (default off for fa2, on for fa2_torch)",
    kind="bool",
)


@dataclass(frozen=True)
class UnfusedMapping:
    dropout: bool = True

    def as_dict(self) -> dict[str, ParamValue]:
        return {"dropout": self.dropout}

    def summary(self) -> str:
        return f"one kernel per step, dropout {'on (one-byte mask)' if self.dropout else 'off'}"


def build(workload: Workload, sram_bytes: int | None, dropout: bool | None = None) -> UnfusedMapping:
    return UnfusedMapping(True if dropout is None else dropout)


def units(workload: Workload) -> int:
    return workload.batch_heads


Step = tuple[str, tuple[str, ...], tuple[str, ...]]
MatmulIO = dict[str, tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]]


def forward_steps(causal: bool, dropout: bool) -> list[Step]:
    """(phase, reads, writes) of N×N tensors per kernel of the forward pass, in launch order."""
    steps: list[Step] = [("qk", (), ("S",)), ("scale", ("S",), ("S",))]
    if causal:
        steps.append(("mask", ("S",), ("S",)))
    steps.append(("softmax", ("S",), ("P",)))
    if dropout:
        steps.append(("dropout", ("P",), ("P", "Z")))
    steps.append(("pv", ("P",), ()))
    return steps


# N×d operands of the matrix products: phase -> (reads, writes); x is nq- or nk-long
FORWARD_MATMUL_IO: MatmulIO = {"qk": ((("Q", "nq"), ("K", "nk")), ()), "pv": ((("V", "nk"),), (("O", "nq"),))}


def steps_trace(workload: Workload, steps: list[Step], matmul_io: MatmulIO) -> Iterator[Event]:
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


def trace(workload: Workload, mapping: UnfusedMapping) -> Iterator[Event]:
    yield from steps_trace(workload, forward_steps(workload.causal, mapping.dropout), FORWARD_MATMUL_IO)


def sizes(workload: Workload, mapping: UnfusedMapping) -> tuple[int, int, int, bool, bool]:
    """(N_q·N_k scores, N_q·d, N_k·d, causal, dropout): the terms of the closed forms."""
    d = workload.head_dim
    return workload.nq * workload.nk, workload.nq * d, workload.nk * d, workload.causal, mapping.dropout


def closed_form(workload: Workload, mapping: UnfusedMapping) -> Traffic:
    """The forward's traffic per tensor, written out as formulas."""
    pairs, nd_q, nd_k, c, p = sizes(workload, mapping)
    return Traffic(
        {
            ("HBM", "read", "Q", "qk"): nd_q,
            ("HBM", "read", "K", "qk"): nd_k,
            ("HBM", "write", "S", "qk"): pairs,
            ("HBM", "read", "S", "scale"): pairs,
            ("HBM", "write", "S", "scale"): pairs,
            ("HBM", "read", "S", "mask"): pairs * c,
            ("HBM", "write", "S", "mask"): pairs * c,
            ("HBM", "read", "S", "softmax"): pairs,
            ("HBM", "write", "P", "softmax"): pairs,
            ("HBM", "read", "P", "dropout"): pairs * p,
            ("HBM", "write", "P", "dropout"): pairs * p,
            ("HBM", "write", "Z", "dropout"): pairs * p,
            ("HBM", "read", "P", "pv"): pairs,
            ("HBM", "read", "V", "pv"): nd_k,
            ("HBM", "write", "O", "pv"): nd_q,
        }
    )


def flops(workload: Workload, mapping: UnfusedMapping) -> int:
    return 4 * workload.nq * workload.nk * workload.head_dim


def trace_size(workload: Workload, mapping: UnfusedMapping) -> tuple[int, int]:
    """No arrays: one event per tensor and kernel."""
    return 1, 1


SCHEDULE = Schedule(
    name="unfused",
    description="PyTorch-style unfused forward: scale, mask, softmax, dropout as kernels",
    parameters=(DROPOUT,),
    sram="unused",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
)
