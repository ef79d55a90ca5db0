"""FlashAttention-2 forward + backward as PyTorch 2.11 launches it (the H200 run figure2-h200), d = 64.

Four kernels per step, named in the run's Nsight Compute records (pytorch_flash::...): the forward
`flash_fwd_kernel<Flash_fwd_kernel_traits<64, Br, Bc, 4>>` (Br = 128; Bc = 64 with dropout, 128
without: the FA2 reference kernel's choice, data/fa2_tiles.json), one CTA per (Q block, b, h), each
reading its Q block once and every K/V block; `flash_bwd_dot_do_o_kernel` (D = rowsum(dO∘O) and
zeroing the fp32 dQ accumulator); `flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits
<64, 128, 128, 8, ...>>`, one CTA per (K/V block, b, h) that reads its K_j, V_j once, loops over every
Q block (Q_i, dO_i, L_i, D_i read) and adds its dQ_i share into the fp32 accumulator with atomics
(a read and a write per visit), writing dK_j, dV_j; `flash_bwd_convert_dq_kernel` (fp32 → fp16 dQ).
Dropout is regenerated from the Philox seed: no mask in HBM.

Two counts: `closed_form` (every global access, the paper's notion of HBM traffic; here it is the
L2 traffic) and `kernel_once` (each kernel moves each tensor it touches once: DRAM traffic when L2
absorbs the re-reads inside a kernel and nothing survives from one kernel to the next, as under
`ncu --cache-control all`).

Per batch·head, N tokens, Tr = ⌈N/Br⌉ (forward), T = ⌈N/128⌉ (backward), not causal:
closed_form: forward Q N·d, K and V Tr·N·d each, O N·d, L N; D/zeroing dO, O N·d, D N, dQ_acc N·d;
backward K, V N·d, Q and dO T·N·d, L and D T·N, dQ_acc T·N·d read and written, dK, dV N·d;
convert dQ_acc N·d, dQ N·d.
kernel_once: 4 + 4 + 10 + 3 = 21 transfers of N·d in the dtype (a dQ_acc transfer counts 2: fp32).

>>> from simlib import Workload
>>> w, m, nd_bytes = Workload(1024, 64), TorchFa2Mapping(128, 64), 1024 * 64 * 2
>>> closed_form(w, m).bytes(2, "HBM") // nd_bytes, kernel_once(w, m).bytes(2, "HBM") // nd_bytes
(77, 21)
"""

from collections.abc import Iterator
from dataclasses import dataclass

from ..fa2_tile_rule import kernel_tiles
from ..schedule_protocol import ParamValue, Schedule, WorkingSet
from ..tiling import block_sizes
from ..traffic import Event, Traffic
from ..workload import Workload
from . import per_kernel
from .fa2 import onchip
from .unfused import (
    DROPOUT,
)  # the forward's tiles depend on it (kernel_tiles: Bc = 64 with dropout, 128 without)

BWD_BLOCK = 128  # Flash_bwd_kernel_traits<64, 128, 128, 8, ...>: kBlockM = kBlockN = 128


@dataclass(frozen=True)
class TorchFa2Mapping:
    block_rows: int
    block_cols: int

    def as_dict(self) -> dict[str, ParamValue]:
        return {"block_rows": self.block_rows, "block_cols": self.block_cols, "bwd_block": BWD_BLOCK}

    def summary(self) -> str:
        return f"forward Br={self.block_rows} Bc={self.block_cols}; backward {BWD_BLOCK}×{BWD_BLOCK}, seqk-parallel"


def build(workload: Workload, sram_bytes: int | None, dropout: bool | None = None) -> TorchFa2Mapping:
    if workload.head_dim != 64:
        raise ValueError(
            f"head_dim={workload.head_dim}: fa2_torch models the d = 64 kernels measured in run "
            "figure2-h200 only"
        )
    if workload.causal or workload.query_len not in (None, workload.seq_len):
        raise ValueError("fa2_torch: non-causal self-attention only (what run figure2-h200 measured)")
    return TorchFa2Mapping(*kernel_tiles(workload.head_dim, "sm90", dropout=dropout is not False))


def units(workload: Workload) -> int:
    return workload.batch_heads


def trace(workload: Workload, mapping: TorchFa2Mapping) -> Iterator[Event]:
    """The forward's CTAs (one per Q block), then the backward's (one per K/V block)."""
    n, d = workload.seq_len, workload.head_dim
    yield Event("HBM", "read", "dO", "dot_do_o", n * d)
    yield Event("HBM", "read", "O", "dot_do_o", n * d)
    yield Event("HBM", "write", "D", "dot_do_o", n)
    yield Event("HBM", "write", "dQ_acc", "dot_do_o", n * d)
    for r in block_sizes(n, mapping.block_rows):
        yield Event("HBM", "read", "Q", "fwd", r * d)
        for c in block_sizes(n, mapping.block_cols):
            yield Event("HBM", "read", "K", "fwd", c * d)
            yield Event("HBM", "read", "V", "fwd", c * d)
        yield Event("HBM", "write", "O", "fwd", r * d)
        yield Event("HBM", "write", "L", "fwd", r)
    for c in block_sizes(n, BWD_BLOCK):
        yield Event("HBM", "read", "K", "bwd", c * d)
        yield Event("HBM", "read", "V", "bwd", c * d)
        for r in block_sizes(n, BWD_BLOCK):
            for tensor, width in (("Q", d), ("dO", d), ("L", 1), ("D", 1)):
                yield Event("HBM", "read", tensor, "bwd", r * width)
            yield Event("HBM", "read", "dQ_acc", "bwd", r * d)
            yield Event("HBM", "write", "dQ_acc", "bwd", r * d)
        yield Event("HBM", "write", "dK", "bwd", c * d)
        yield Event("HBM", "write", "dV", "bwd", c * d)
    yield Event("HBM", "read", "dQ_acc", "convert_dq", n * d)
    yield Event("HBM", "write", "dQ", "convert_dq", n * d)


def closed_form(workload: Workload, mapping: TorchFa2Mapping) -> Traffic:
    n, d = workload.seq_len, workload.head_dim
    tr, t = -(-n // mapping.block_rows), -(-n // BWD_BLOCK)
    return Traffic(
        {
            ("HBM", "read", "Q", "fwd"): n * d,
            ("HBM", "read", "K", "fwd"): tr * n * d,
            ("HBM", "read", "V", "fwd"): tr * n * d,
            ("HBM", "write", "O", "fwd"): n * d,
            ("HBM", "write", "L", "fwd"): n,
            ("HBM", "read", "dO", "dot_do_o"): n * d,
            ("HBM", "read", "O", "dot_do_o"): n * d,
            ("HBM", "write", "D", "dot_do_o"): n,
            ("HBM", "write", "dQ_acc", "dot_do_o"): n * d,
            ("HBM", "read", "K", "bwd"): n * d,
            ("HBM", "read", "V", "bwd"): n * d,
            ("HBM", "read", "Q", "bwd"): t * n * d,
            ("HBM", "read", "dO", "bwd"): t * n * d,
            ("HBM", "read", "L", "bwd"): t * n,
            ("HBM", "read", "D", "bwd"): t * n,
            ("HBM", "read", "dQ_acc", "bwd"): t * n * d,
            ("HBM", "write", "dQ_acc", "bwd"): t * n * d,
            ("HBM", "write", "dK", "bwd"): n * d,
            ("HBM", "write", "dV", "bwd"): n * d,
            ("HBM", "read", "dQ_acc", "convert_dq"): n * d,
            ("HBM", "write", "dQ", "convert_dq"): n * d,
        }
    )


def kernel_once(workload: Workload, mapping: TorchFa2Mapping) -> Traffic:
    """Each kernel's tensors moved once: the closed form with every re-read inside a kernel removed."""
    return per_kernel.kernel_once(closed_form(workload, mapping), workload)


def working_set(workload: Workload, mapping: TorchFa2Mapping) -> WorkingSet:
    """The forward kernel's thread block (fa2.onchip): Q_i, K_j, V_j in shared memory, S/P, O, ℓ, m in
    registers; (128 + 2·64)·64·2 B = 32 KiB of shared memory with dropout (the kernel's kSmemSize)."""
    return onchip(mapping.block_rows, mapping.block_cols, workload.head_dim, workload.element_bytes)


def flops(workload: Workload, mapping: TorchFa2Mapping) -> int:
    """Forward 4·N²·d; backward recomputes QKᵀ and does dV, dP, dQ, dK: 10·N²·d."""
    return 14 * workload.seq_len**2 * workload.head_dim


def trace_size(workload: Workload, mapping: TorchFa2Mapping) -> tuple[int, int]:
    blocks = -(-workload.seq_len // min(mapping.block_cols, BWD_BLOCK))
    return blocks, blocks * blocks


SCHEDULE = Schedule(
    name="fa2_torch",
    description="FlashAttention-2 forward + backward as PyTorch 2.11 launches it (d = 64)",
    parameters=(DROPOUT,),
    sram="unused",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
    working_set=working_set,
)
