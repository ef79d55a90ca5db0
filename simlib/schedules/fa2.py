"""FlashAttention-2 forward: outer loop over Q blocks, inner loop over K/V blocks.

Tiles: by default FA2's own (`tile_rule="fa2"`): the reference kernel's Br×Bc for the head
dimension (simlib/fa2_tile_rule.py, data/fa2_tiles.json: d = 64 → 128×128), the larger halved (Bc on
a tie) only while the on-chip working set does not fit the SRAM size; `tile_rule="fa1"` takes the paper's
Algorithm 1 rule instead (Bc = ⌈M/4d⌉, Br = min(Bc, d)), to show why it was the wrong choice for
FA2. On chip (the FA2 kernel): Q_i, K_j, V_j in shared memory, (Br + 2·Bc)·d elements; S/P
(Br·Bc), the O accumulator (Br·d) and ℓ, m (2·Br) in registers, fp32.

Per Q block i (r rows): Q_i is read once; for every visited K/V block j (c rows) K_j and V_j are
read; O_i and the logsumexp L_i are written once at the end. O_i, ℓ_i, m_i stay in registers.
HBM reads Nd + Tr·2Nd elements, writes Nd elements + N fp32 stats (no mask; causal skips tiles).
Worked number (N=4096, d=64, FA2's Br = Bc = 128 → Tr = 32): reads 262,144 + 32·524,288 =
17,039,360 elements (34,078,720 B in fp16), writes 262,144 elements + 4,096 fp32 stats (540,672 B);
with the paper's Br = 64, Bc = 384 (192 KiB) it reads 262,144 + 64·524,288 = 33,816,576.
SRAM accesses follow docs/COUNTING.md §fa2 (the readable `tiled` kernel's code, which stages S in
shared memory; the on-chip budget above is the FA2 kernel's).

>>> from simlib import Workload
>>> w = Workload(4096, 64)
>>> t = closed_form(w, build(w, None))
>>> t.elements("HBM", "read"), t.elements("HBM", "write")
(17039360, 266240)
>>> closed_form(w, Tiling(64, 384, 4096, 4096)).elements("HBM", "read")
33816576
>>> working_set(w, build(w, None)).as_dict()       # (128 + 256)·64·2 B; (128·128 + 128·64 + 256)·4 B
{'onchip_sram_bytes': 49152, 'onchip_register_bytes': 99328}
"""

from collections.abc import Iterator
from dataclasses import dataclass

from ..fa2_tile_rule import ARCHS, kernel_tiles
from ..schedule_protocol import DoesNotFit, Parameter, ParamValue, Schedule, WorkingSet
from ..tiling import BLOCK_COLS, BLOCK_ROWS, Tiling, block_sizes, make_tiling, tile_trace_size
from ..traffic import Count, Event, Traffic, TrafficKey
from ..units import STAT_BYTES
from ..workload import Workload, check_positive_int
from .unfused import DROPOUT
from .visits import key_blocks_seen, visited_by_q_blocks

TILE_RULE = Parameter(
    "tile_rule",
    "which rule picks the default tiles: fa2 = the FA2 kernel's table "
    "(default), fa1 = the paper's Algorithm 1 rule",
    kind="choice",
    choices=("fa2", "fa1"),
)
DOUBLE_BUFFER = Parameter(
    "double_buffer",
    "a second K_j, V_j buffer in shared memory for the next tile's copy (default off, as the FA2 kernel)",
    kind="bool",
)
ARCH = Parameter(
    "arch",
    "GPU architecture whose FA2 kernel tiles to take (default sm90; --gpu sets it)",
    kind="choice",
    choices=ARCHS,
)
#: Smallest block the FA2 rule shrinks to before it refuses.
MIN_BLOCK = 16


def units(workload: Workload) -> int:
    return workload.batch_heads


@dataclass(frozen=True)
class FA2Tiling(Tiling):
    """fa2's tiles and whether K/V are double-buffered in shared memory (the FA2 kernel is not: it
    overlaps its cp.async copies with the arithmetic of the tile it holds)."""

    double_buffer: bool = False
    arch: str | None = None  # the architecture whose kernel table chose the tiles (rule "fa2")
    dropout: bool = False  # the table's entry with dropout (the tiles change; the traffic does not)

    def as_dict(self) -> dict[str, ParamValue]:
        extra = {"double_buffer": self.double_buffer, "tile_arch": self.arch, "dropout": self.dropout}
        return {**super().as_dict(), **extra}

    def summary(self) -> str:
        arch = f", {self.arch} kernel table{' with dropout' if self.dropout else ''}" if self.arch else ""
        return super().summary() + arch + ("; K/V double-buffered" if self.double_buffer else "")


def onchip(rows: int, cols: int, d: int, element_bytes: int, double_buffer: bool = False) -> WorkingSet:
    """The FA2 kernel's working set for a Q block of `rows` and K/V blocks of `cols` rows."""
    spare = (("K_j+1, V_j+1 (double buffer)", "SRAM", 2 * cols * d * element_bytes),) if double_buffer else ()
    return WorkingSet(
        (
            ("Q_i", "SRAM", rows * d * element_bytes),
            ("K_j, V_j", "SRAM", 2 * cols * d * element_bytes),
            *spare,
            ("S/P (fp32)", "registers", rows * cols * STAT_BYTES),
            ("O accumulator (fp32)", "registers", rows * d * STAT_BYTES),
            ("ℓ, m (fp32)", "registers", 2 * rows * STAT_BYTES),
        )
    )


def working_set(workload: Workload, tiling: FA2Tiling) -> WorkingSet:
    """FA2's buffers, whichever rule chose the tiles."""
    return onchip(
        tiling.block_rows, tiling.block_cols, workload.head_dim, workload.element_bytes, tiling.double_buffer
    )


def build(
    workload: Workload,
    sram_bytes: int | None,
    block_rows: int | None = None,
    block_cols: int | None = None,
    tile_rule: str | None = None,
    arch: str | None = None,
    double_buffer: bool | None = None,
    dropout: bool | None = None,
) -> FA2Tiling:
    """FA2's tiles (the kernel's table for the head dimension, causal mask and dropout, shrunk to fit
    `sram_bytes`), the paper's, or explicit ones. Dropout changes only the table's tiles: the FA2
    kernel draws its mask on chip (Philox), so no byte of it reaches HBM."""
    spare = bool(double_buffer)
    if tile_rule == "fa1":
        t = make_tiling(workload, sram_bytes, block_rows, block_cols)
        return FA2Tiling(t.block_rows, t.block_cols, t.query_len, t.key_len, rule=t.rule, double_buffer=spare)
    nq, nk, d, eb = workload.nq, workload.nk, workload.head_dim, workload.element_bytes
    explicit = block_rows is not None and block_cols is not None
    br, bc = (None, None) if explicit else kernel_tiles(d, arch, workload.causal, dropout=bool(dropout))
    br = check_positive_int("block_rows", block_rows) if block_rows is not None else br
    bc = check_positive_int("block_cols", block_cols) if block_cols is not None else bc
    assert br is not None and bc is not None
    br, bc = min(br, nq), min(bc, nk)
    rule = "explicit" if block_rows is not None or block_cols is not None else "fa2"
    if rule == "fa2" and sram_bytes is not None:
        while onchip(br, bc, d, eb, spare).bytes("SRAM") > sram_bytes and max(br, bc) > MIN_BLOCK:
            if bc >= br:
                bc //= 2
            else:
                br //= 2
        need = onchip(br, bc, d, eb, spare).bytes("SRAM")
        if need > sram_bytes:
            raise DoesNotFit(
                f"sram_bytes={sram_bytes}: even {br}×{bc} FA2 tiles need {need:,} B of "
                f"Q_i, K_j, V_j at head_dim={d}"
            )
    return FA2Tiling(
        br,
        bc,
        nq,
        nk,
        rule=rule,
        double_buffer=spare,
        arch=(arch or "sm90") if rule == "fa2" else None,
        dropout=bool(dropout),
    )


def trace(workload: Workload, tiling: Tiling) -> Iterator[Event]:
    """Walk the loop nest; the inner loop over K/V blocks is vectorised (one array entry per tile)."""
    d = workload.head_dim
    cols = block_sizes(workload.nk, tiling.block_cols)  # c_j for every K/V block
    last_row = -1
    for r in block_sizes(workload.nq, tiling.block_rows):  # outer loop: Q block i, r valid rows
        last_row += r
        seen = cols[key_blocks_seen(workload, tiling, last_row)]
        yield Event("HBM", "read", "Q", "load_q", r * d)
        yield Event("SRAM", "write", "Q", "load_q", r * d)
        yield from tile_events(r, seen, d, kv_phase="load_kv")
        yield Event("HBM", "write", "O", "store", r * d)
        yield Event("HBM", "write", "L", "store", r)


def tile_events(r: Count, cols: Count, d: int, kv_phase: str) -> Iterator[Event]:
    """One Q block of r rows against K/V blocks of `cols` rows (an array): loads and tile arithmetic."""
    for tensor in ("K", "V"):
        yield Event("HBM", "read", tensor, kv_phase, cols * d)
        yield Event("SRAM", "write", tensor, kv_phase, cols * d)
    # S_ij = Q_i K_jᵀ: each of r·c scores reads a Q row and a K row, writes one score.
    yield Event("SRAM", "read", "Q", "scores", r * cols * d)
    yield Event("SRAM", "read", "K", "scores", r * cols * d)
    yield Event("SRAM", "write", "S", "scores", r * cols)
    # P̃_ij = exp(S_ij − m_new), written over S (the running max was kept in a register).
    yield Event("SRAM", "read", "S", "softmax", r * cols)
    yield Event("SRAM", "write", "P", "softmax", r * cols)
    # O_i += P̃_ij V_j with O_i in registers: p once per score, a V row per score.
    yield Event("SRAM", "read", "P", "pv", r * cols)
    yield Event("SRAM", "read", "V", "pv", r * cols * d)


def tile_counts(pairs: int, kv_rows: int, d: int, kv_phase: str) -> dict[TrafficKey, int]:
    """Closed-form twin of `tile_events`: `pairs` = Σ r·c over visited tiles, `kv_rows` = Σ c."""
    counts: dict[TrafficKey, int] = {}
    for tensor in ("K", "V"):
        counts[("HBM", "read", tensor, kv_phase)] = kv_rows * d
        counts[("SRAM", "write", tensor, kv_phase)] = kv_rows * d
    counts.update(
        {
            ("SRAM", "read", "Q", "scores"): pairs * d,
            ("SRAM", "read", "K", "scores"): pairs * d,
            ("SRAM", "write", "S", "scores"): pairs,
            ("SRAM", "read", "S", "softmax"): pairs,
            ("SRAM", "write", "P", "softmax"): pairs,
            ("SRAM", "read", "P", "pv"): pairs,
            ("SRAM", "read", "V", "pv"): pairs * d,
        }
    )
    return counts


def closed_form(workload: Workload, tiling: Tiling) -> Traffic:
    nq, d = workload.nq, workload.head_dim
    pairs, kv_rows = visited_by_q_blocks(workload, tiling)  # no mask: nq·nk and Tr·nk
    counts = tile_counts(pairs, kv_rows, d, "load_kv")
    counts.update(
        {
            ("HBM", "read", "Q", "load_q"): nq * d,
            ("SRAM", "write", "Q", "load_q"): nq * d,
            ("HBM", "write", "O", "store"): nq * d,
            ("HBM", "write", "L", "store"): nq,
        }
    )
    return Traffic(counts)


def flops(workload: Workload, tiling: Tiling) -> int:
    """Matmul FLOPs performed per unit: 4·d per computed score (diagonal tiles computed whole)."""
    return 4 * visited_by_q_blocks(workload, tiling)[0] * workload.head_dim


SCHEDULE = Schedule(
    name="fa2",
    description="FlashAttention-2 forward, outer loop over Q blocks (FA2's own tiles)",
    parameters=(BLOCK_ROWS, BLOCK_COLS, TILE_RULE, ARCH, DOUBLE_BUFFER, DROPOUT),
    sram="sizes",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=tile_trace_size,
    working_set=working_set,
)
