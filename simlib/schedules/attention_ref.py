"""Standard attention as the FlashAttention paper's benchmark ran it: `attention_ref`, forward + backward.

Dao-AILab/flash-attention, benchmarks/benchmark_flash_attention.py at commit 9dbc491a (May 2022):
q, k, v are unbound from one packed (B, N, 3, H, d) tensor; S = einsum(q, k/√d); S.masked_fill_ of
the padded keys (−inf); P = softmax(S); P̃ = F.dropout(P, 0.1); O = einsum(P̃, v). PyTorch runs
every step as its own kernel and autograd runs each step's gradient as its own kernel, so every
kernel reads and writes whole tensors: one N×N pass per kernel read or write. Counted per
batch·head, HBM only, each kernel moving each operand once (cuBLAS re-reads its tiles from L2).

Kernels (forward): K/√d; the two einsum reshape copies of the strided q and k/√d views; S = QKᵀ;
masked_fill_ (key padding); masked_fill_ (causal, if the workload is causal); softmax; dropout
(writes P̃ and a one-byte mask Z); the copy of v; O = P̃V. Backward: the copy of dO; dV = P̃ᵀdO;
dP̃ = dO Vᵀ; dropout backward (reads Z); softmax backward (reads dP and P); the masked_fill
backwards; dQ = dS K; dK = dSᵀQ; dK/√d; the stack of dQ, dK, dV into the packed gradient.
`kernels="torch-2.11"` adds what PyTorch 2.11 launched on the H200 beyond that list (run
figure2-h200): an N×N elementwise multiply (two reads, one write) before the softmax backward and
an N×N fill (one write) before each masked_fill backward. The (B, N) key mask itself (N bytes per
batch row) is not counted: 64 KiB in a 47 GB step.

N×N passes per score (fp16, 2 B; Z 1 B), key mask and dropout on, not causal:
forward 8 passes + Z, backward 11 passes + Z → 19 × 2 + 2 = 40 B per score; N×d transfers: 12
forward + 18 backward.
Worked number (B·H = 1024, N = 1024, d = 64): 1024 × (40 × 2²⁰ + 30 × 65,536 × 2) B = 46.98 GB.

>>> from simlib import Workload
>>> t = closed_form(Workload(1024, 64), RefMapping())
>>> (t.bytes(2, "HBM") - 30 * 1024 * 64 * 2) // 1024**2          # bytes per score
40
"""

from collections.abc import Iterator
from dataclasses import dataclass

from ..schedule_protocol import Parameter, ParamValue, Schedule
from ..traffic import Event, Traffic
from ..workload import Workload
from .unfused import DROPOUT

KEY_MASK = Parameter(
    "key_mask", "masked_fill_ of the padded keys, as the paper's script (default True)", kind="bool"
)
KERNELS = Parameter(
    "kernels",
    "ops: one kernel per op and per autograd formula; torch-2.11: what PyTorch 2.11 "
    "launched on the H200 (two more N×N kernels)",
    kind="choice",
    choices=("ops", "torch-2.11"),
)

#: operand sizes: "pairs" = N_q·N_k scores, "q" = N_q·d, "k" = N_k·d
Kernel = tuple[str, tuple[tuple[str, str, str], ...]]


@dataclass(frozen=True)
class RefMapping:
    dropout: bool = True
    key_mask: bool = True
    kernels: str = "ops"

    def as_dict(self) -> dict[str, ParamValue]:
        return {"dropout": self.dropout, "key_mask": self.key_mask, "kernels": self.kernels}

    def summary(self) -> str:
        return (
            f"one kernel per op ({self.kernels}), dropout {'on' if self.dropout else 'off'}, key mask "
            f"{'on' if self.key_mask else 'off'}"
        )


def build(
    workload: Workload,
    sram_bytes: int | None,
    dropout: bool | None = None,
    key_mask: bool | None = None,
    kernels: str | None = None,
) -> RefMapping:
    return RefMapping(dropout is not False, key_mask is not False, kernels or "ops")


def units(workload: Workload) -> int:
    return workload.batch_heads


def kernels(causal: bool, mapping: RefMapping) -> list[Kernel]:
    """(phase, ((op, tensor, size), ...)) per kernel, in launch order (forward, then backward)."""
    torch211 = mapping.kernels == "torch-2.11"
    p = "Pd" if mapping.dropout else "P"  # what O = P·V reads
    fwd: list[Kernel] = [
        ("fwd:scale_k", (("read", "K", "k"), ("write", "Ks", "k"))),
        ("fwd:copy_q", (("read", "Q", "q"), ("write", "Qc", "q"))),
        ("fwd:copy_k", (("read", "Ks", "k"), ("write", "Kc", "k"))),
        ("fwd:qk", (("read", "Qc", "q"), ("read", "Kc", "k"), ("write", "S", "pairs"))),
    ]
    masks = [name for name, on in (("key_mask", mapping.key_mask), ("causal", causal)) if on]
    fwd += [(f"fwd:{name}", (("read", "S", "pairs"), ("write", "S", "pairs"))) for name in masks]
    fwd.append(("fwd:softmax", (("read", "S", "pairs"), ("write", "P", "pairs"))))
    if mapping.dropout:
        fwd.append(
            ("fwd:dropout", (("read", "P", "pairs"), ("write", "Pd", "pairs"), ("write", "Z", "pairs")))
        )
    fwd += [
        ("fwd:copy_v", (("read", "V", "k"), ("write", "Vc", "k"))),
        ("fwd:pv", (("read", p, "pairs"), ("read", "Vc", "k"), ("write", "O", "q"))),
    ]
    dp = "dPd" if mapping.dropout else "dP"
    bwd: list[Kernel] = [
        ("bwd:copy_do", (("read", "dO", "q"), ("write", "dOc", "q"))),
        ("bwd:dv", (("read", p, "pairs"), ("read", "dOc", "q"), ("write", "dVc", "k"))),
        ("bwd:dp", (("read", "dOc", "q"), ("read", "Vc", "k"), ("write", dp, "pairs"))),
    ]
    if mapping.dropout:
        bwd.append(
            ("bwd:dropout", (("read", "dPd", "pairs"), ("read", "Z", "pairs"), ("write", "dP", "pairs")))
        )
    if torch211:
        bwd.append(("bwd:mul", (("read", "dP", "pairs"), ("read", "P", "pairs"), ("write", "dPP", "pairs"))))
    bwd.append(("bwd:softmax", (("read", "dP", "pairs"), ("read", "P", "pairs"), ("write", "dS", "pairs"))))
    for name in reversed(masks):
        if torch211:
            bwd.append((f"bwd:{name}_fill", (("write", "dS", "pairs"),)))
        bwd.append((f"bwd:{name}", (("read", "dS", "pairs"), ("write", "dS", "pairs"))))
    bwd += [
        ("bwd:dq", (("read", "dS", "pairs"), ("read", "Kc", "k"), ("write", "dQ", "q"))),
        ("bwd:dk", (("read", "dS", "pairs"), ("read", "Qc", "q"), ("write", "dKs", "k"))),
        ("bwd:scale_k", (("read", "dKs", "k"), ("write", "dK", "k"))),
        (
            "bwd:stack",
            (
                ("read", "dQ", "q"),
                ("read", "dK", "k"),
                ("read", "dVc", "k"),
                ("write", "dQKV", "q"),
                ("write", "dQKV", "k"),
                ("write", "dQKV", "k"),
            ),
        ),
    ]
    return fwd + bwd


def _sizes(workload: Workload) -> dict[str, int]:
    d = workload.head_dim
    return {"pairs": workload.nq * workload.nk, "q": workload.nq * d, "k": workload.nk * d}


def trace(workload: Workload, mapping: RefMapping) -> Iterator[Event]:
    """The kernels in launch order: one event per operand."""
    sizes = _sizes(workload)
    for phase, operands in kernels(workload.causal, mapping):
        for op, tensor, size in operands:
            yield Event("HBM", op, tensor, phase, sizes[size])


def closed_form(workload: Workload, mapping: RefMapping) -> Traffic:
    """Each kernel moves each operand once, so the totals are the kernel table's sizes, summed."""
    sizes, counts = _sizes(workload), Traffic()
    for phase, operands in kernels(workload.causal, mapping):
        for op, tensor, size in operands:
            counts.add("HBM", op, tensor, phase, sizes[size])
    return counts


def flops(workload: Workload, mapping: RefMapping) -> int:
    """QKᵀ and PV forward (4·N²·d), dV, dP, dQ, dK backward (8·N²·d): every score, masked or not."""
    return 12 * workload.nq * workload.nk * workload.head_dim


def trace_size(workload: Workload, mapping: RefMapping) -> tuple[int, int]:
    return 1, len(kernels(workload.causal, mapping))


SCHEDULE = Schedule(
    name="attention_ref",
    description="standard attention as the paper's 2022 benchmark ran it (attention_ref, "
    "forward + backward, one kernel per op)",
    parameters=(DROPOUT, KEY_MASK, KERNELS),
    sram="unused",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
)
