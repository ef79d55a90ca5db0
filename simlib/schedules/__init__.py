"""Schedules. Each provides `trace(workload, mapping)` (yields Events per unit of work),
`closed_form(workload, mapping)` (the same Traffic from formulas), `flops(workload, mapping)`
(matmul FLOPs performed per unit) and `units(workload)` (how many units: B·H, or B·kv_heads for
decode)."""
from typing import Callable, NamedTuple

from . import decode, fa1, fa2, fa2_fast, flash_bwd, naive, naive_bwd, unfused


class Schedule(NamedTuple):
    trace: Callable
    closed_form: Callable
    flops: Callable
    units: Callable
    description: str


def _from(module, description):
    return Schedule(module.trace, module.closed_form, module.flops, module.units, description)


SCHEDULES = {
    "naive": _from(naive, "standard attention forward, S and P in HBM (Algorithm 0)"),
    "fa1": _from(fa1, "FlashAttention forward, outer loop over K/V blocks (Algorithm 1)"),
    "fa2": _from(fa2, "FlashAttention-2 forward, outer loop over Q blocks"),
    "fa2_fast": _from(fa2_fast, "FlashAttention-2 forward as the register-tiled kernel `fast` runs it"),
    "decode": _from(decode, "decode step against a KV cache, flash-decoding split-K"),
    "naive_bwd": _from(naive_bwd, "standard attention backward (Algorithm 3)"),
    "flash_bwd": _from(flash_bwd, "FlashAttention backward with recomputation (Algorithm 4)"),
    "unfused": _from(unfused, "PyTorch-style unfused forward: scale, mask, softmax, dropout as kernels"),
    "unfused_bwd": Schedule(unfused.trace_backward, unfused.closed_form_backward, unfused.flops_backward,
                            unfused.units, "PyTorch-style unfused backward"),
}
