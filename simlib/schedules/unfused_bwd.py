"""PyTorch-style unfused attention backward: every elementwise step's gradient is its own kernel.

The forward's steps in reverse (unfused.py): read P in dV; write dP; dropout r+w, read Z; softmax
r dP, r P, w dS; mask r+w (causal); scale r+w; read dS twice (dQ, dK): 9 + 2 (causal) + 2 (dropout)
N×N passes of the dtype, + 1 byte per score for Z. Counted: HBM only.

>>> from simlib import Workload
>>> t = closed_form(Workload(1024, 64, causal=True), UnfusedMapping(dropout=True))
>>> (t.elements("HBM") - 8 * 1024 * 64 - 1024**2) // 1024**2     # N×N passes of the dtype, + Z
13
"""

from collections.abc import Iterator

from ..schedule_protocol import Schedule
from ..traffic import Event, Traffic
from ..workload import Workload
from .unfused import DROPOUT, MatmulIO, Step, UnfusedMapping, build, sizes, steps_trace, trace_size, units


def backward_steps(causal: bool, dropout: bool) -> list[Step]:
    steps: list[Step] = [("dv", ("P",), ()), ("dp", (), ("dP",))]
    if dropout:
        steps.append(("dropout_bwd", ("dP", "Z"), ("dP",)))
    steps.append(("softmax_bwd", ("dP", "P"), ("dS",)))
    if causal:
        steps.append(("mask_bwd", ("dS",), ("dS",)))
    steps += [("scale_bwd", ("dS",), ("dS",)), ("dq", ("dS",), ()), ("dk", ("dS",), ())]
    return steps


BACKWARD_MATMUL_IO: MatmulIO = {
    "dv": ((("dO", "nq"),), (("dV", "nk"),)),
    "dp": ((("dO", "nq"), ("V", "nk")), ()),
    "dq": ((("K", "nk"),), (("dQ", "nq"),)),
    "dk": ((("Q", "nq"),), (("dK", "nk"),)),
}


def trace(workload: Workload, mapping: UnfusedMapping) -> Iterator[Event]:
    yield from steps_trace(workload, backward_steps(workload.causal, mapping.dropout), BACKWARD_MATMUL_IO)


def closed_form(workload: Workload, mapping: UnfusedMapping) -> Traffic:
    pairs, nd_q, nd_k, c, p = sizes(workload, mapping)
    return Traffic(
        {
            ("HBM", "read", "P", "dv"): pairs,
            ("HBM", "read", "dO", "dv"): nd_q,
            ("HBM", "write", "dV", "dv"): nd_k,
            ("HBM", "read", "dO", "dp"): nd_q,
            ("HBM", "read", "V", "dp"): nd_k,
            ("HBM", "write", "dP", "dp"): pairs,
            ("HBM", "read", "dP", "dropout_bwd"): pairs * p,
            ("HBM", "read", "Z", "dropout_bwd"): pairs * p,
            ("HBM", "write", "dP", "dropout_bwd"): pairs * p,
            ("HBM", "read", "dP", "softmax_bwd"): pairs,
            ("HBM", "read", "P", "softmax_bwd"): pairs,
            ("HBM", "write", "dS", "softmax_bwd"): pairs,
            ("HBM", "read", "dS", "mask_bwd"): pairs * c,
            ("HBM", "write", "dS", "mask_bwd"): pairs * c,
            ("HBM", "read", "dS", "scale_bwd"): pairs,
            ("HBM", "write", "dS", "scale_bwd"): pairs,
            ("HBM", "read", "dS", "dq"): pairs,
            ("HBM", "read", "K", "dq"): nd_k,
            ("HBM", "write", "dQ", "dq"): nd_q,
            ("HBM", "read", "dS", "dk"): pairs,
            ("HBM", "read", "Q", "dk"): nd_q,
            ("HBM", "write", "dK", "dk"): nd_k,
        }
    )


def flops(workload: Workload, mapping: UnfusedMapping) -> int:
    return 8 * workload.nq * workload.nk * workload.head_dim


SCHEDULE = Schedule(
    name="unfused_bwd",
    description="PyTorch-style unfused backward",
    parameters=(DROPOUT,),
    sram="unused",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
)
