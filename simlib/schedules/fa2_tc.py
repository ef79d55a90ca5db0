"""FlashAttention-2 forward on tensor cores, as the kernel `fa2_tc` runs it (gpu_kernels/kernels/fa2_tc.py).

HBM: the fa2 loop nest. Q_i is read once, K_j and V_j once per visited (Q block, K/V block) tile, O_i
(in the dtype) and L_i (fp32) written once; a ragged block moves only its valid rows. Under causal
masking a Q block visits the K/V blocks up to its last valid row's reach (``visits``).
SRAM: a block of W warps owns Br = R·W query rows; warp w owns R of them (R = 16 or 32: one or two
m16 tiles, FA2's layout is R = 32 on 4 warps). Tiles are compile-time sizes, so a ragged block is
zero-filled in SRAM and stored and read whole. S and P never leave registers; the only shared-memory
reads are the ldmatrix fragment loads:

    per Q block:     Q lands (writes Br·d); each warp loads its R rows into registers once (reads Br·d),
                     unless Q is re-read from SRAM per tile (``q_reload``, FA2's choice at d = 128)
    per tile (i, j): K_j, V_j land (writes 2·Bc·d); every warp reads all of K_j (for S = Q K_jᵀ)
                     and all of V_j (for O += P V_j): reads 2·W·Bc·d; with q_reload also Br·d of Q

Per score that is 2·W·d/Br = 2d/R reads (+ d/Bc with q_reload), against 3d + 2 for the
one-thread-per-row fa2 kernel.
Defaults (the kernel's, gpu_kernels/kernels/fa2_tc.py): W = 4, R = 32 (Br = 128);
Bc = 64 with Q in registers at d = 64, Bc = 48 with Q re-read at d = 128; K and V in SRAM rings of
two stages each (``kv_stages``: the same transfers, twice the K/V footprint).
Worked number (N = 4096, d = 64, R = 16, W = 4, Br = Bc = 64, Tr = Tc = 64): HBM reads N·d + Tr·2N·d =
262,144 + 64·524,288 = 33,816,576 elements (67.6 MB in bf16); SRAM reads Tr·Br·d + Tr·Tc·2·W·Bc·d
= 262,144 + 4096·32,768 = 134,479,872 elements = N²·d/8 + N·d. With the default R = 32 (Br = 128,
Tr = 32): HBM reads 262,144 + 32·524,288 = 17,039,360; SRAM reads 262,144 + 2048·32,768 = 67,371,008.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..kernel_layout import tc_tile_problem
from ..schedule_protocol import Parameter, ParamValue, Schedule, WorkingSet
from ..tiling import BLOCK_COLS, Tiling, block_sizes, ceil_div, tile_trace_size
from ..traffic import Count, Event, Traffic, TrafficKey
from ..workload import Workload
from .visits import floor_sum, key_blocks_seen

#: The kernel's head dims, warps and default tiles (gpu_kernels/kernels/fa2_tc.py: TcConfig).
HEAD_DIMS = (64, 128)
DEFAULT_WARPS = 4
DEFAULT_WARP_ROWS = 32
DEFAULT_BLOCK_COLS = {64: 64, 128: 48}  # Bc per head dim (d = 128: 56 KiB, dynamic shared memory)
DEFAULT_Q_RELOAD = {64: False, 128: True}  # Q fragments re-read from SRAM per tile (registers: d = 128)
DEFAULT_KV_STAGES = 2  # SRAM buffers each of K and V: a ring of two (1: version 4's single buffers)
WARP_ROW_CHOICES = (16, 32)
WARPS = Parameter(
    "warps",
    "W: warps per block (default 4); fa2_tc: each owns warp_rows query rows (Br = warp_rows·W); "
    "decode_tc: each takes Bc/W keys of every tile",
)
WARP_ROWS = Parameter("warp_rows", "R: query rows per warp, 16 or 32 (one or two m16 tiles; default 32)")
Q_RELOAD = Parameter(
    "q_reload", "re-read Q's fragments from SRAM for every tile (default: at d = 128)", kind="bool"
)
KV_STAGES = Parameter(
    "kv_stages",
    "S: SRAM buffers each of K and V, 1 or 2 (default 2, a ring: the next block lands during this one's "
    "math); the same transfers, S times the K/V footprint",
)


@dataclass(frozen=True)
class TcMapping(Tiling):
    """fa2's tiling with Br = R·W (R query rows per warp); tiles not capped at N."""

    warp_rows: int = 16
    q_reload: bool = False
    kv_stages: int = DEFAULT_KV_STAGES

    @property
    def warps(self) -> int:
        return self.block_rows // self.warp_rows

    def as_dict(self) -> dict[str, ParamValue]:
        return {
            **super().as_dict(),
            "warps": self.warps,
            "warp_rows": self.warp_rows,
            "q_reload": self.q_reload,
            "kv_stages": self.kv_stages,
        }

    def summary(self) -> str:
        q = "; Q re-read per tile" if self.q_reload else ""
        st = f"; K/V ring of {self.kv_stages}" if self.kv_stages > 1 else ""
        return f"{super().summary()}; {self.warps} warps of {self.warp_rows} query rows{q}{st}"


def check_tensor_core_workload(workload: Workload, kernel: str) -> None:
    """The tensor-core kernels' common ground: fp16 or bf16 inputs, head dim 64 or 128 (ValueError
    naming the parameter and `kernel` otherwise)."""
    if workload.dtype not in ("fp16", "bf16"):
        raise ValueError(
            f"dtype: {kernel} runs fp16 or bf16 inputs on the tensor cores, got {workload.dtype!r}"
        )
    if workload.head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim={workload.head_dim}: the {kernel} kernel supports head_dim 64 and 128")


def build(
    workload: Workload,
    sram_bytes: int | None,
    warps: int | None = None,
    block_cols: int | None = None,
    warp_rows: int | None = None,
    q_reload: bool | None = None,
    kv_stages: int | None = None,
) -> TcMapping:
    check_tensor_core_workload(workload, "fa2_tc")
    w = DEFAULT_WARPS if warps is None else warps
    bc = DEFAULT_BLOCK_COLS[workload.head_dim] if block_cols is None else block_cols
    r = DEFAULT_WARP_ROWS if warp_rows is None else warp_rows
    st = DEFAULT_KV_STAGES if kv_stages is None else kv_stages
    if st not in (1, 2) or isinstance(st, bool):
        raise ValueError(f"kv_stages must be 1 or 2; got {st!r}")
    problem = tc_tile_problem("fa2_tc", workload.head_dim, w, bc, r, st)  # what the kernel's TcConfig refuses
    if problem:
        raise ValueError(problem)
    qr = DEFAULT_Q_RELOAD[workload.head_dim] if q_reload is None else bool(q_reload)
    return TcMapping(r * w, bc, workload.nq, workload.nk, warp_rows=r, q_reload=qr, kv_stages=st)


def working_set(workload: Workload, mapping: TcMapping) -> WorkingSet:
    """Qs, Ks, Vs in shared memory (the dtype); S/P and O in fp32 registers, Q's fragments in the dtype
    (unless Q is re-read per tile); K and V in a ring of S stages each. d = 64, Br = 64, Bc = 128, S = 2:
    73,728 B of SRAM, 32,768 + 16,384 + 8,192 B of registers."""
    br, bc, d, eb = mapping.block_rows, mapping.block_cols, workload.head_dim, workload.element_bytes
    regs = (("Q_i fragments", "registers", br * d * eb),) if not mapping.q_reload else ()
    return WorkingSet(
        (
            ("Q_i", "SRAM", br * d * eb),
            (
                "K_j, V_j" if mapping.kv_stages == 1 else "K, V ring",
                "SRAM",
                2 * mapping.kv_stages * bc * d * eb,
            ),
            ("S/P (fp32)", "registers", br * bc * 4),
            ("O_i (fp32)", "registers", br * d * 4),
        )
        + regs,
        threads=32 * mapping.warps,  # the warps' threads hold S/P, O (and Q's fragments)
    )


def units(workload: Workload) -> int:
    return workload.batch_heads


def _tile_events(m: TcMapping, d: int, tiles: Count) -> list[tuple[str, str, str, str, Count]]:
    """SRAM accesses of `tiles` visited (Q block, K/V block) tiles (an int or an array of ones)."""
    bc, w = m.block_cols, m.warps
    events = [
        ("SRAM", "write", "K", "load_kv", tiles * bc * d),
        ("SRAM", "write", "V", "load_kv", tiles * bc * d),
        ("SRAM", "read", "K", "scores", tiles * w * bc * d),
        ("SRAM", "read", "V", "pv", tiles * w * bc * d),
    ]
    if m.q_reload:
        events.append(("SRAM", "read", "Q", "scores", tiles * m.block_rows * d))
    return events


def trace(workload: Workload, mapping: TcMapping) -> Iterator[Event]:
    """Walk the loop nest: Q blocks outside, their visited K/V blocks inside (one array entry each)."""
    d, br = workload.head_dim, mapping.block_rows
    cols = block_sizes(workload.nk, mapping.block_cols)  # valid rows c_j of every K/V block
    last_row = -1
    for r in block_sizes(workload.nq, br):  # Q block i with r valid rows
        last_row += r
        seen = key_blocks_seen(workload, mapping, last_row)
        yield Event("HBM", "read", "Q", "load_q", r * d)
        yield Event("SRAM", "write", "Q", "load_q", br * d)
        if not mapping.q_reload:
            yield Event("SRAM", "read", "Q", "fragments", br * d)
        yield Event("HBM", "read", "K", "load_kv", cols[seen] * d)
        yield Event("HBM", "read", "V", "load_kv", cols[seen] * d)
        for level, op, tensor, phase, n in _tile_events(mapping, d, np.ones(int(seen.sum()), dtype=np.int64)):
            yield Event(level, op, tensor, phase, n)
        yield Event("HBM", "write", "O", "store", r * d)
        yield Event("HBM", "write", "L", "store", r)


def visited_tiles(workload: Workload, tiling: Tiling) -> tuple[int, int]:
    """(tiles, K/V rows): Σ_i tiles_i and Σ_i keys_i over Q blocks i, in exact ints.

    tiles_i = Tc without a mask; causal: min(Tc, ⌊(last_i + off)/Bc⌋ + 1), last_i the block's last
    valid row; keys_i = min(N_k, tiles_i·Bc). Full blocks before the first that sees every block are
    a floor sum (as in visits.visited_by_q_blocks)."""
    nq, nk, br, bc, tr, tc = (
        workload.nq,
        workload.nk,
        tiling.block_rows,
        tiling.block_cols,
        tiling.tr,
        tiling.tc,
    )
    if not workload.causal:
        return tr * tc, tr * nk
    off = nk - nq
    last_tiles = min(tc, (nq - 1 + off) // bc + 1)
    first_full = max(0, ceil_div((tc - 1) * bc + 1 - off, br) - 1)
    partial = min(first_full, tr - 1)  # full Q blocks that see fewer than Tc blocks
    partial_tiles = floor_sum(partial, bc, br, br - 1 + off) + partial
    tiles = partial_tiles + (tr - 1 - partial) * tc + last_tiles
    keys = partial_tiles * bc + (tr - 1 - partial) * nk + min(nk, last_tiles * bc)
    return tiles, keys


def closed_form(workload: Workload, mapping: TcMapping) -> Traffic:
    nq, d, br = workload.nq, workload.head_dim, mapping.block_rows
    tiles, kv_rows = visited_tiles(workload, mapping)
    counts: dict[TrafficKey, int] = {
        ("HBM", "read", "Q", "load_q"): nq * d,
        ("SRAM", "write", "Q", "load_q"): mapping.tr * br * d,
        ("HBM", "read", "K", "load_kv"): kv_rows * d,
        ("HBM", "read", "V", "load_kv"): kv_rows * d,
        ("HBM", "write", "O", "store"): nq * d,
        ("HBM", "write", "L", "store"): nq,
    }
    if not mapping.q_reload:
        counts[("SRAM", "read", "Q", "fragments")] = mapping.tr * br * d
    for level, op, tensor, phase, n in _tile_events(mapping, d, tiles):
        counts[(level, op, tensor, phase)] = int(n)
    return Traffic(counts)


def flops(workload: Workload, mapping: TcMapping) -> int:
    """Matmul FLOPs the kernel executes: whole tiles, padding included (4·d per computed score)."""
    tiles, _ = visited_tiles(workload, mapping)
    return 4 * tiles * mapping.block_rows * mapping.block_cols * workload.head_dim


SCHEDULE = Schedule(
    name="fa2_tc",
    description="FlashAttention-2 forward on tensor cores (fp16/bf16) as the kernel `fa2_tc` runs it",
    parameters=(WARPS, BLOCK_COLS, WARP_ROWS, Q_RELOAD, KV_STAGES),
    sram="checks",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=tile_trace_size,
    working_set=working_set,
)
