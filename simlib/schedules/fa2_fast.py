"""FlashAttention-2 forward as the optimised kernel `fast` runs it (gpu_kernels/kernels/fast.py).

HBM: the fa2 loop nest (Q_i once, K_j and V_j once per Q block, O_i and L_i once); a ragged block
moves only its valid rows. SRAM: register tiling. A thread block of NTY×NTX threads owns Br = NTY·TM
query rows and streams K/V blocks of Bc = NTX·TN rows; each thread keeps a TM×TN micro-tile of S and
a TM×(d/NTX) micro-tile of O in registers. Tiles are compile-time sizes: a ragged block is
zero-filled in SRAM and computed whole (its padded scores masked to −∞), so SRAM counts use the
full Br and Bc while HBM counts use valid rows. Per (Q block, K/V block) pair, in elements:

    K, V land:            writes 2·Bc·d
    S = Q Kᵀ:             reads Q Br·NTX·d (each Q row by the NTX threads of its row group),
                          reads K Bc·NTY·d (each K row by the NTY threads of its column group)
    row max:              writes red Br·NTX (one partial per thread and row), reads red Br·NTX²
    P = exp2(S − m):      writes P Br·Bc
    O += P V:             reads P Br·NTX·Bc, reads V NTY·Bc·d
Per Q block: Q lands (writes Br·d); the final row sums write red Br·NTX and read red Br·NTX².
Per score that is d/TN + 2·d/TM + NTX + NTX/TN reads (49 for d = 64, TM×TN = 4×8, NTX = 8; 84 for
d = 128, 8×4, NTX = 16) where the one-thread-per-row fa2 kernel needs 3d + 2 (194; 386).
docs/COUNTING.md §fa2_fast has the details. The defaults are the kernel's (kernel_layout.fast_default_config):
d = 128 (a multiple of 64 above 64): TM×TN = 8×4, NTY×NTX = 16×16; otherwise 4×8, 32×NTX with
NTX = 8 (4 when d is not a multiple of 32).

Worked number (N = 4096, d = 64, TM×TN = 4×8, NTY×NTX = 32×8 → Br = 128, Bc = 64, Tr = 32, Tc = 64):
HBM reads Nd + Tr·2Nd = 262,144 + 32·524,288 = 17,039,360 elements; SRAM reads 49·N² + N·NTX²
(the final row sums) = 822,083,584 + 262,144 = 822,345,728.

>>> from simlib import Workload
>>> m = build(Workload(4096, 64), None)
>>> t = closed_form(Workload(4096, 64), m)
>>> (m.block_rows, m.block_cols), t.elements("HBM", "read"), t.elements("SRAM", "read")
((128, 64), 17039360, 822345728)
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..kernel_layout import FastConfig, fast_default_config
from ..schedule_protocol import DoesNotFit, Parameter, ParamValue, Schedule, WorkingSet
from ..tiling import BLOCK_COLS, BLOCK_ROWS, Tiling, block_sizes, ceil_div, tile_trace_size
from ..traffic import Count, Event, Traffic, TrafficKey
from ..workload import Workload, check_positive_int

THREADS = Parameter(
    "threads", "thread grid NTY×NTX per block, e.g. 32x8 (default: the kernel's)", kind="pair"
)


@dataclass(frozen=True)
class FastMapping(Tiling):
    """fa2's tiling plus the thread grid: NTY (thread_rows) × NTX (thread_cols) threads per block.

    block_rows = NTY·TM and block_cols = NTX·TN are the kernel's compile-time tiles (not capped at N).
    """

    thread_rows: int = 32
    thread_cols: int = 8

    @property
    def tm(self) -> int:
        return self.block_rows // self.thread_rows

    @property
    def tn(self) -> int:
        return self.block_cols // self.thread_cols

    def as_dict(self) -> dict[str, ParamValue]:
        return {**super().as_dict(), "thread_rows": self.thread_rows, "thread_cols": self.thread_cols}

    def summary(self) -> str:
        return (
            f"{super().summary()}; threads {self.thread_rows}×{self.thread_cols}, "
            f"micro-tile TM×TN = {self.tm}×{self.tn}"
        )


def build(
    workload: Workload,
    sram_bytes: int | None,
    block_rows: int | None = None,
    block_cols: int | None = None,
    threads: tuple[int, int] | None = None,
) -> FastMapping:
    """The kernel's default tiles and threads for head_dim, or explicit ones, checked."""
    if workload.causal:
        raise ValueError("causal: fa2_fast has no causal mask (the kernel computes every tile)")
    d = workload.head_dim
    kernel = fast_default_config(d)
    tm, tn, nty, ntx = kernel.tm, kernel.tn, kernel.nty, kernel.ntx
    if threads is not None:
        nty, ntx = threads
    br = check_positive_int("block_rows", nty * tm if block_rows is None else block_rows)
    bc = check_positive_int("block_cols", ntx * tn if block_cols is None else block_cols)
    if br % nty or bc % ntx:
        raise ValueError(
            f"block_rows={br} and block_cols={bc} must be multiples of the thread grid "
            f"{nty}×{ntx} (each thread owns a TM×TN micro-tile)"
        )
    if sram_bytes is not None:
        need = FastConfig(d, br // nty, bc // ntx, ntx=ntx, nty=nty).smem_elements * workload.element_bytes
        if need > sram_bytes:
            raise DoesNotFit(
                f"sram_bytes={sram_bytes}: fa2_fast with Br={br}, Bc={bc}, d={d} needs {need} bytes"
            )
    rule = (
        "explicit"
        if block_rows is not None or block_cols is not None or threads is not None
        else "fa2_fast kernel"
    )
    return FastMapping(br, bc, workload.nq, workload.nk, rule=rule, thread_rows=nty, thread_cols=ntx)


def working_set(workload: Workload, mapping: FastMapping) -> WorkingSet:
    """The kernel's padded shared layout (kernel_layout.FastConfig) and its per-thread S and O micro-tiles."""
    br, bc, d = mapping.block_rows, mapping.block_cols, workload.head_dim
    config = FastConfig(d, mapping.tm, mapping.tn, ntx=mapping.thread_cols, nty=mapping.thread_rows)
    return WorkingSet(
        (
            ("Qs, Ks, Vs, Ps, Red (padded)", "SRAM", config.smem_elements * workload.element_bytes),
            ("S micro-tiles (fp32)", "registers", br * bc * 4),
            ("O micro-tiles (fp32)", "registers", br * d * 4),
        ),
        threads=mapping.thread_rows * mapping.thread_cols,
    )


def units(workload: Workload) -> int:
    return workload.batch_heads


def _pair_events(m: FastMapping, d: int, tiles: Count) -> list[tuple[str, str, str, str, Count]]:
    """Tile arithmetic of `tiles` (Q block, K/V block) pairs (an int or an array of ones)."""
    br, bc, nty, ntx = m.block_rows, m.block_cols, m.thread_rows, m.thread_cols
    return [
        ("SRAM", "write", "K", "load_kv", tiles * bc * d),
        ("SRAM", "write", "V", "load_kv", tiles * bc * d),
        ("SRAM", "read", "Q", "scores", tiles * br * ntx * d),
        ("SRAM", "read", "K", "scores", tiles * bc * nty * d),
        ("SRAM", "write", "red", "row_max", tiles * br * ntx),
        ("SRAM", "read", "red", "row_max", tiles * br * ntx * ntx),
        ("SRAM", "write", "P", "softmax", tiles * br * bc),
        ("SRAM", "read", "P", "pv", tiles * br * ntx * bc),
        ("SRAM", "read", "V", "pv", tiles * nty * bc * d),
    ]


def _block_events(m: FastMapping, d: int, blocks: Count) -> list[tuple[str, str, str, str, Count]]:
    br, ntx = m.block_rows, m.thread_cols
    return [
        ("SRAM", "write", "Q", "load_q", blocks * br * d),
        ("SRAM", "write", "red", "row_sum", blocks * br * ntx),
        ("SRAM", "read", "red", "row_sum", blocks * br * ntx * ntx),
    ]


def trace(workload: Workload, mapping: FastMapping) -> Iterator[Event]:
    """Walk the loop nest: Q blocks outside, K/V blocks inside (vectorised, one entry per block)."""
    d = workload.head_dim
    cols = block_sizes(workload.nk, mapping.block_cols)  # valid rows c_j of every K/V block
    ones = np.ones(len(cols), dtype=np.int64)
    for r in block_sizes(workload.nq, mapping.block_rows):  # Q block i with r valid rows
        yield Event("HBM", "read", "Q", "load_q", r * d)
        for level, op, tensor, phase, n in _block_events(mapping, d, 1):
            yield Event(level, op, tensor, phase, n)
        yield Event("HBM", "read", "K", "load_kv", cols * d)
        yield Event("HBM", "read", "V", "load_kv", cols * d)
        for level, op, tensor, phase, n in _pair_events(mapping, d, ones):
            yield Event(level, op, tensor, phase, n)
        yield Event("HBM", "write", "O", "store", r * d)
        yield Event("HBM", "write", "L", "store", r)


def closed_form(workload: Workload, mapping: FastMapping) -> Traffic:
    nq, nk, d = workload.nq, workload.nk, workload.head_dim
    tr, tc = ceil_div(nq, mapping.block_rows), ceil_div(nk, mapping.block_cols)
    counts: dict[TrafficKey, int] = {
        ("HBM", "read", "Q", "load_q"): nq * d,
        ("HBM", "read", "K", "load_kv"): tr * nk * d,
        ("HBM", "read", "V", "load_kv"): tr * nk * d,
        ("HBM", "write", "O", "store"): nq * d,
        ("HBM", "write", "L", "store"): nq,
    }
    for level, op, tensor, phase, n in _pair_events(mapping, d, tr * tc) + _block_events(mapping, d, tr):
        counts[(level, op, tensor, phase)] = int(n)
    return Traffic(counts)


def flops(workload: Workload, mapping: FastMapping) -> int:
    """Matmul FLOPs the kernel executes: whole tiles, padding included (4·d per computed score)."""
    rows = ceil_div(workload.nq, mapping.block_rows) * mapping.block_rows
    cols = ceil_div(workload.nk, mapping.block_cols) * mapping.block_cols
    return 4 * rows * cols * workload.head_dim


SCHEDULE = Schedule(
    name="fa2_fast",
    description="FlashAttention-2 forward as the register-tiled kernel `fast` runs it",
    parameters=(BLOCK_ROWS, BLOCK_COLS, THREADS),
    sram="checks",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=tile_trace_size,
    working_set=working_set,
)
