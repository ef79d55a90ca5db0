"""FlashAttention as its May 2022 CUDA kernel ran it: forward + backward, one thread block per (b, h).

Dao-AILab/flash-attention at commit 9dbc491a (csrc/flash_attn/src/): `fmha_fprop_fp16_kernel.sm80.cu`
launches one CTA per (head, batch) with FMHA_kernel_traits<256, 64, 16, 1, 4> for d = 64 (Bc = 256 keys
per loop step, Br = 16 query rows per inner step, 4 warps; 128 keys when N = 128, and for d = 128);
`fmha_fprop_kernel_1xN.h` loops over the K/V blocks (outer, `loop_step_idx`) and, inside, over all
query rows 16 at a time. Per K/V block j: K_j and V_j are read once; every visited Q row is read;
the running output is read back (j > 0) and written as an fp32 accumulator `o_tmp` (O_acc here)
unless the row is final, when fp16 O is written; the logsumexp L (fp32) is read (j > 0) and
written. The backward (`fmha_dgrad_kernel_1xN_loop.h`, FMHA_kernel_traits<256, 64, 16, 1, 8>) has
the same loop nest: K_j, V_j read once; Q, dO and L read per visited row and block; O read once
(step 0) to form D = rowsum(dO∘O) (fp32, written at step 0, read later); dQ accumulated in fp32
`dq_tmp` (dQ_acc) read (j > 0) and written until its final step, fp16 dQ written once; dK_j and
dV_j written at the end of step j. Dropout is regenerated from the Philox seed: no mask in HBM.
Causal (an extra; the paper's Figure 2 is not causal): step j starts at query row j·Bc.

Per batch·head, not causal, Tc = ⌈N/Bc⌉ (elements; O_acc, dQ_acc, L, D fp32):
forward  reads K, V: N·d each; Q: Tc·N·d; O_acc: (Tc−1)·N·d; L: (Tc−1)·N
         writes O_acc: (Tc−1)·N·d; O: N·d; L: Tc·N
backward reads K, V, O: N·d each; Q, dO: Tc·N·d each; dQ_acc: (Tc−1)·N·d; L: Tc·N; D: (Tc−1)·N
         writes dQ_acc: (Tc−1)·N·d; dQ, dK, dV: N·d each; D: N
Worked number (N = 1024, d = 64, Tc = 4): 38 + 52 = 90 bytes per N·d element (fp16 2 B, fp32 4 B)
and 60 bytes per row of statistics: 65,536 × 90 + 1024 × 60 = 5,959,680 B per batch·head.

>>> from simlib import Workload
>>> closed_form(Workload(1024, 64), Fa1Mapping(16, 256)).bytes(2, "HBM")
5959680
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..schedule_protocol import ParamValue, Schedule
from ..tiling import BLOCK_COLS  # default here: the 2022 kernel's (256 for d ≤ 64 and N > 128, else 128)
from ..traffic import Event, Traffic
from ..workload import Workload
from . import per_kernel

BLOCK_ROWS = 16  # query rows per inner step (Cta_tile_p::M = STEP = 16 in every launch of that commit)
HEAD_DIMS = (16, 32, 64, 128)


@dataclass(frozen=True)
class Fa1Mapping:
    block_rows: int
    block_cols: int

    def as_dict(self) -> dict[str, ParamValue]:
        return {"block_rows": self.block_rows, "block_cols": self.block_cols}

    def summary(self) -> str:
        return (
            f"2022 kernel: Br={self.block_rows} rows per inner step, Bc={self.block_cols} keys per loop step"
        )


def default_block_cols(workload: Workload) -> int:
    """The kernel of commit 9dbc491a: S = 128 for d = 128 or N = 128, else S = 256 (run_fmha_fp16_sm80)."""
    return 128 if workload.head_dim == 128 or workload.seq_len <= 128 else 256


def build(workload: Workload, sram_bytes: int | None, block_cols: int | None = None) -> Fa1Mapping:
    if workload.head_dim not in HEAD_DIMS:
        raise ValueError(
            f"head_dim={workload.head_dim}: the 2022 kernel has head dimensions {HEAD_DIMS} only"
        )
    if workload.query_len is not None and workload.query_len != workload.seq_len:
        raise ValueError("query_len: the 2022 kernel is self-attention only (query_len = seq_len)")
    if workload.kv_heads is not None and workload.kv_heads != workload.heads:
        raise ValueError("kv_heads: the 2022 kernel has no grouped-query attention")
    cols = default_block_cols(workload) if block_cols is None else block_cols
    if cols % BLOCK_ROWS:
        raise ValueError(
            f"block_cols={cols} must be a multiple of the kernel's {BLOCK_ROWS} query rows per step"
        )
    return Fa1Mapping(BLOCK_ROWS, cols)


def units(workload: Workload) -> int:
    return workload.batch_heads


def _steps(workload: Workload, mapping: Fa1Mapping) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per K/V block j: (valid keys c_j, visited query rows r_j, rows whose output is final at j)."""
    n, bc = workload.seq_len, mapping.block_cols
    starts = np.arange(0, n, bc, dtype=np.int64)
    cols = np.minimum(bc, n - starts)
    first = starts if workload.causal else np.zeros_like(starts)  # causal: step j starts at row j·Bc
    rows = n - first
    final = np.where(
        np.arange(len(starts)) == len(starts) - 1, rows, np.minimum(cols, rows) * workload.causal
    )
    return cols, rows, final


def trace(workload: Workload, mapping: Fa1Mapping) -> Iterator[Event]:
    """Walk the loop steps of the forward, then of the backward (rows of one step as one event)."""
    d = workload.head_dim
    cols, rows, final = _steps(workload, mapping)
    for j, (c, r, f) in enumerate(zip(cols, rows, final)):
        first = j == 0
        yield Event("HBM", "read", "K", "fwd:load_kv", c * d)
        yield Event("HBM", "read", "V", "fwd:load_kv", c * d)
        yield Event("HBM", "read", "Q", "fwd:load_q", r * d)
        if not first:
            yield Event("HBM", "read", "O_acc", "fwd:update", r * d)
            yield Event("HBM", "read", "L", "fwd:update", r)
        yield Event("HBM", "write", "L", "fwd:store", r)
        yield Event("HBM", "write", "O", "fwd:store", f * d)
        yield Event("HBM", "write", "O_acc", "fwd:store", (r - f) * d)
    for j, (c, r, f) in enumerate(zip(cols, rows, final)):
        first = j == 0
        yield Event("HBM", "read", "K", "bwd:load_kv", c * d)
        yield Event("HBM", "read", "V", "bwd:load_kv", c * d)
        for tensor in ("Q", "dO"):
            yield Event("HBM", "read", tensor, "bwd:inner", r * d)
        yield Event("HBM", "read", "L", "bwd:inner", r)
        if first:
            yield Event("HBM", "read", "O", "bwd:dot_do_o", r * d)
            yield Event("HBM", "write", "D", "bwd:dot_do_o", r)
        else:
            yield Event("HBM", "read", "D", "bwd:inner", r)
            yield Event("HBM", "read", "dQ_acc", "bwd:inner", r * d)
        yield Event("HBM", "write", "dQ", "bwd:store_dq", f * d)
        yield Event("HBM", "write", "dQ_acc", "bwd:store_dq", (r - f) * d)
        yield Event("HBM", "write", "dK", "bwd:store_kv", c * d)
        yield Event("HBM", "write", "dV", "bwd:store_kv", c * d)


def closed_form(workload: Workload, mapping: Fa1Mapping) -> Traffic:
    """The sums of the loop steps as formulas (R = Σ r_j visited rows, R₀ = r_0, F = Σ f_j = N)."""
    n, d = workload.seq_len, workload.head_dim
    cols, rows, final = _steps(workload, mapping)
    visited, later = int(rows.sum()), int(rows[1:].sum())  # Σ_j r_j, Σ_{j>0} r_j
    acc = visited - int(final.sum())  # rows written to the accumulator
    return Traffic(
        {
            ("HBM", "read", "K", "fwd:load_kv"): n * d,
            ("HBM", "read", "V", "fwd:load_kv"): n * d,
            ("HBM", "read", "Q", "fwd:load_q"): visited * d,
            ("HBM", "read", "O_acc", "fwd:update"): later * d,
            ("HBM", "read", "L", "fwd:update"): later,
            ("HBM", "write", "L", "fwd:store"): visited,
            ("HBM", "write", "O", "fwd:store"): n * d,
            ("HBM", "write", "O_acc", "fwd:store"): acc * d,
            ("HBM", "read", "K", "bwd:load_kv"): n * d,
            ("HBM", "read", "V", "bwd:load_kv"): n * d,
            ("HBM", "read", "Q", "bwd:inner"): visited * d,
            ("HBM", "read", "dO", "bwd:inner"): visited * d,
            ("HBM", "read", "L", "bwd:inner"): visited,
            ("HBM", "read", "O", "bwd:dot_do_o"): n * d,
            ("HBM", "write", "D", "bwd:dot_do_o"): n,
            ("HBM", "read", "D", "bwd:inner"): later,
            ("HBM", "read", "dQ_acc", "bwd:inner"): later * d,
            ("HBM", "write", "dQ", "bwd:store_dq"): n * d,
            ("HBM", "write", "dQ_acc", "bwd:store_dq"): acc * d,
            ("HBM", "write", "dK", "bwd:store_kv"): n * d,
            ("HBM", "write", "dV", "bwd:store_kv"): n * d,
        }
    )


def kernel_once(workload: Workload, mapping: Fa1Mapping) -> Traffic:
    """The forward and the backward kernel each moving each tensor once, and their own fp32 scratch
    (O_acc and L in the forward, D and dQ_acc in the backward) never read back from DRAM: an L2
    holding every re-read, the lower end of this kernel's DRAM traffic; `closed_form` (no re-read
    hits) is the upper end (evidence/figure2_l2.py: on an A100 the re-reads' reuse distances exceed
    the L2, so an LRU L2 gives the upper end). Worked number (N = 1024, d = 64): forward 12 B and backward 20 B per N·d
    element (K, V, Q read, O, O_acc written; K, V, O, Q, dO read, dQ, dK, dV, dQ_acc written), 12 B
    per row (L written; L read, D written): 65,536 × 32 + 1024 × 12 = 2,109,440 B per batch·head."""
    return per_kernel.kernel_once(
        closed_form(workload, mapping), workload, produced={"fwd": ("O_acc", "L"), "bwd": ("D", "dQ_acc")}
    )


def flops(workload: Workload, mapping: Fa1Mapping) -> int:
    """Forward QKᵀ, PV (4·d per visited score); backward recomputes QKᵀ and does dV, dP, dQ, dK (10·d)."""
    cols, rows, _ = _steps(workload, mapping)
    return 14 * workload.head_dim * int(np.dot(cols, rows))


def trace_size(workload: Workload, mapping: Fa1Mapping) -> tuple[int, int]:
    steps = -(-workload.seq_len // mapping.block_cols)
    return steps, 2 * steps


SCHEDULE = Schedule(
    name="fa1_2022",
    description="FlashAttention's May 2022 CUDA kernel (commit 9dbc491a), forward + backward "
    "with recompute, fp32 accumulators in HBM",
    parameters=(BLOCK_COLS,),
    sram="unused",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
)
