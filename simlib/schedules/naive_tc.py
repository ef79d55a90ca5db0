"""Standard attention on tensor cores (fp16/bf16), as the kernel `naive_tc` runs it
(gpu_kernels/kernels/naive_tc.py): S = QKᵀ/√d and P = softmax(S) written to HBM in the dtype.

Three launches; a block of W warps owns Bm = 16·W query rows; tiles are compile-time sizes, so a
ragged tile is zero-filled in SRAM and stored and read whole, while HBM moves valid elements only.

    scores, per (Q block, key block) tile: HBM reads Q r·d and K c·d; SRAM writes (Bm + Bn)·d; SRAM
            reads Q Bm·d (each warp its 16 rows, by ldmatrix) and K W·Bn·d (each warp all of K);
            HBM writes S r·c. So Q is re-read ⌈N_k/Bn⌉ times and K ⌈N_q/Bm⌉ times.
    softmax, per row (t threads, t/32 warps): HBM reads S N_k, writes P N_k; the row max and sum go
            through SRAM once per warp each (2·t/32 fp32 writes) and every thread reads all t/32
            partials twice (2·t·t/32 fp32 reads).
    pv, per (Q block, key chunk of Bk): HBM reads P r·c and V c·d; SRAM writes Bm·Bk + Bk·d; SRAM
            reads P Bm·Bk and V W·Bk·d; per Q block HBM writes O r·d.

Causal masking happens in the softmax, which reads and writes whole rows: the counts do not change.
Worked number (N = 4096, d = 64, W = 4, Bn = Bk = 64, t = 256): HBM reads Q·64 + K·64 + S + P + V·64
= 3·64·N·d + 2N² = 83,886,080 elements (167.8 MB in bf16), writes 2N² + N·d = 33,816,576.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..kernel_layout import tc_tile_problem
from ..schedule_protocol import ParamValue, Schedule, WorkingSet
from ..tiling import BLOCK_COLS, block_sizes, ceil_div
from ..traffic import Event, Traffic, TrafficKey
from ..workload import Workload
from .fa2_tc import DEFAULT_WARPS, WARPS, check_tensor_core_workload
from .naive import SOFTMAX_THREADS  # one Parameter per name across schedules; naive_tc checks its own rule

MAX_PER_THREAD, MAX_THREADS = 16, 1024
DEFAULT_BLOCK_COLS = 64  # Bn = Bk of the kernel's default NaiveTcConfig


def default_softmax_threads(nk: int) -> int:
    """32·⌈⌈N_k/16⌉/32⌉, at most 1024 (the kernel's rule): N_k = 4096 → 256."""
    return min(MAX_THREADS, 32 * ceil_div(ceil_div(nk, MAX_PER_THREAD), 32))


@dataclass(frozen=True)
class NaiveTcMapping:
    """W warps (Bm = 16·W), Bn = Bk keys per tile and chunk, t softmax threads per row."""

    warps: int
    block_cols: int
    softmax_threads: int

    @property
    def block_rows(self) -> int:
        return 16 * self.warps

    def as_dict(self) -> dict[str, ParamValue]:
        return {"warps": self.warps, "block_cols": self.block_cols, "softmax_threads": self.softmax_threads}

    def summary(self) -> str:
        return (
            f"tiles: Bm={self.block_rows} ({self.warps} warps) Bn=Bk={self.block_cols}; "
            f"softmax {self.softmax_threads} threads per row"
        )


def build(
    workload: Workload,
    sram_bytes: int | None,
    warps: int | None = None,
    block_cols: int | None = None,
    softmax_threads: int | None = None,
) -> NaiveTcMapping:
    check_tensor_core_workload(workload, "naive_tc")
    w = DEFAULT_WARPS if warps is None else warps
    bc = DEFAULT_BLOCK_COLS if block_cols is None else block_cols
    problem = tc_tile_problem("naive_tc", workload.head_dim, w, bc)  # what the kernel's NaiveTcConfig refuses
    if problem:
        raise ValueError(problem)
    t = default_softmax_threads(workload.nk) if softmax_threads is None else softmax_threads
    if not isinstance(t, int) or isinstance(t, bool) or t < 32 or t % 32 or t > MAX_THREADS:
        raise ValueError(f"softmax_threads={t}: naive_tc needs a multiple of 32, at most {MAX_THREADS}")
    return NaiveTcMapping(w, bc, t)


def working_set(workload: Workload, m: NaiveTcMapping) -> WorkingSet:
    """The larger launch's block: scores (Q and K tiles, a Bm × Bn fp32 accumulator) or pv (P and V
    tiles, a Bm × d fp32 accumulator). d = 64, W = 4, Bn = Bk = 64: 16,384 B of SRAM either way."""
    bm, bc, d, eb = m.block_rows, m.block_cols, workload.head_dim, workload.element_bytes
    scores, pv = (bm + bc) * d * eb, (bm * bc + bc * d) * eb
    tiles = ("Q and K tiles (scores)", "SRAM", scores) if scores >= pv else ("P and V tiles (pv)", "SRAM", pv)
    return WorkingSet((tiles, ("accumulator (fp32)", "registers", bm * max(bc, d) * 4)), threads=2 * bm)


def units(workload: Workload) -> int:
    return workload.batch_heads


def trace(workload: Workload, m: NaiveTcMapping) -> Iterator[Event]:
    """Each launch's loop nest: Q blocks outside, key blocks (or chunks) vectorised inside."""
    nq, nk, d, bm, bc, w = workload.nq, workload.nk, workload.head_dim, m.block_rows, m.block_cols, m.warps
    keys = block_sizes(nk, bc)  # valid keys c of every key block (and PV chunk)
    ones = np.ones(len(keys), dtype=np.int64)
    for r in block_sizes(nq, bm):
        yield Event("HBM", "read", "Q", "qk", r * d * ones)
        yield Event("HBM", "read", "K", "qk", keys * d)
        yield Event("SRAM", "write", "Q", "qk", bm * d * ones)
        yield Event("SRAM", "write", "K", "qk", bc * d * ones)
        yield Event("SRAM", "read", "Q", "qk", bm * d * ones)
        yield Event("SRAM", "read", "K", "qk", w * bc * d * ones)
        yield Event("HBM", "write", "S", "qk", r * keys)
    partials = m.softmax_threads // 32
    rows = np.ones(nq, dtype=np.int64)
    yield Event("HBM", "read", "S", "softmax", nk * rows)
    yield Event("HBM", "write", "P", "softmax", nk * rows)
    yield Event("SRAM", "write", "red", "softmax", 2 * partials * rows)
    yield Event("SRAM", "read", "red", "softmax", 2 * m.softmax_threads * partials * rows)
    for r in block_sizes(nq, bm):
        yield Event("HBM", "read", "P", "pv", r * keys)
        yield Event("HBM", "read", "V", "pv", keys * d)
        yield Event("SRAM", "write", "P", "pv", bm * bc * ones)
        yield Event("SRAM", "write", "V", "pv", bc * d * ones)
        yield Event("SRAM", "read", "P", "pv", bm * bc * ones)
        yield Event("SRAM", "read", "V", "pv", w * bc * d * ones)
        yield Event("HBM", "write", "O", "pv", r * d)


def closed_form(workload: Workload, m: NaiveTcMapping) -> Traffic:
    nq, nk, d, bm, bc, w = workload.nq, workload.nk, workload.head_dim, m.block_rows, m.block_cols, m.warps
    tq, tk = ceil_div(nq, bm), ceil_div(nk, bc)
    tiles = tq * tk  # S tiles = (Q block, PV chunk) pairs
    partials = m.softmax_threads // 32
    counts: dict[TrafficKey, int] = {
        ("HBM", "read", "Q", "qk"): nq * d * tk,
        ("HBM", "read", "K", "qk"): nk * d * tq,
        ("SRAM", "write", "Q", "qk"): tiles * bm * d,
        ("SRAM", "write", "K", "qk"): tiles * bc * d,
        ("SRAM", "read", "Q", "qk"): tiles * bm * d,
        ("SRAM", "read", "K", "qk"): tiles * w * bc * d,
        ("HBM", "write", "S", "qk"): nq * nk,
        ("HBM", "read", "S", "softmax"): nq * nk,
        ("HBM", "write", "P", "softmax"): nq * nk,
        ("SRAM", "write", "red", "softmax"): 2 * partials * nq,
        ("SRAM", "read", "red", "softmax"): 2 * m.softmax_threads * partials * nq,
        ("HBM", "read", "P", "pv"): nq * nk,
        ("HBM", "read", "V", "pv"): nk * d * tq,
        ("SRAM", "write", "P", "pv"): tiles * bm * bc,
        ("SRAM", "write", "V", "pv"): tiles * bc * d,
        ("SRAM", "read", "P", "pv"): tiles * bm * bc,
        ("SRAM", "read", "V", "pv"): tiles * w * bc * d,
        ("HBM", "write", "O", "pv"): nq * d,
    }
    return Traffic(counts)


def flops(workload: Workload, m: NaiveTcMapping) -> int:
    """Both products over whole tiles, padding included: 2·2·(Tq·Bm)·(Tk·Bn)·d."""
    rows = ceil_div(workload.nq, m.block_rows) * m.block_rows
    cols = ceil_div(workload.nk, m.block_cols) * m.block_cols
    return 4 * rows * cols * workload.head_dim


def trace_size(workload: Workload, m: NaiveTcMapping) -> tuple[int, int]:
    """(longest array, entries): the softmax's per-row arrays and one entry per tile of each product."""
    tiles = ceil_div(workload.nq, m.block_rows) * ceil_div(workload.nk, m.block_cols)
    return max(workload.nq, ceil_div(workload.nk, m.block_cols)), 2 * tiles + workload.nq


SCHEDULE = Schedule(
    name="naive_tc",
    description="standard attention on tensor cores (fp16/bf16), S and P in HBM, as `naive_tc` runs it",
    parameters=(WARPS, BLOCK_COLS, SOFTMAX_THREADS),
    sram="checks",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
    working_set=working_set,
)
