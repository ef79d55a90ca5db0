"""FlashAttention backward with recomputation (the paper's Algorithm 4); HBM traffic only.

dQ, dK, dV are initialised in HBM. Outer loop over K/V blocks j: K_j, V_j read; inner loop over
visited Q blocks i: Q_i, O_i, dO_i, dQ_i and ℓ_i, m_i read, S and P recomputed on chip, dQ_i written
back; dK_j, dV_j written at the end of the outer iteration.
Reads 2Nd + Tc·4Nd elements + Tc·2N stats; writes 3Nd + Tc·Nd + 2Nd elements (no mask).
FLOPs 10·N²·d: S recomputed, dV, dP, dQ, dK. SRAM traffic of the backward is not modelled (no
kernel implements it here). On chip at once (Algorithm 4, in SRAM): K_j, V_j, dK_j, dV_j (4·Bc·d),
Q_i, O_i, dO_i, dQ_i (4·Br·d), S_ij/P_ij and dP_ij/dS_ij (2·Br·Bc) in the workload dtype, ℓ_i,
m_i, D_i (3·Br) in fp32.
Worked number (N=1024, d=64, Bc=384 → Tc=3): reads 131,072 + 786,432 = 917,504 elements and 6,144
stats; writes 196,608 + 196,608 + 131,072 = 524,288 elements.

>>> from simlib import Workload
>>> t = closed_form(Workload(1024, 64), Tiling(64, 384, 1024, 1024))
>>> t.elements("HBM", "read") - t.elements("HBM", "read", "l") - t.elements("HBM", "read", "m")
917504
>>> t.elements("HBM", "write")
524288
>>> working_set(Workload(1024, 64), Tiling(64, 384, 1024, 1024)).bytes("SRAM")   # 196,608 + 32,768 + 98,304 + 768
328448
"""

from collections.abc import Iterator

from ..schedule_protocol import Schedule, WorkingSet
from ..tiling import BLOCK_COLS, BLOCK_ROWS, Tiling, block_sizes, make_tiling, tile_trace_size
from ..traffic import Event, Traffic
from ..units import STAT_BYTES
from ..workload import Workload
from .visits import query_blocks_seen, visited_by_kv_blocks

STAGED = (("Q", True), ("O", True), ("dO", True), ("dQ", True), ("l", False), ("m", False))


def units(workload: Workload) -> int:
    return workload.batch_heads


def working_set(workload: Workload, tiling: Tiling) -> WorkingSet:
    br, bc, d, eb = tiling.block_rows, tiling.block_cols, workload.head_dim, workload.element_bytes
    return WorkingSet(
        (
            ("K_j, V_j, dK_j, dV_j", "SRAM", 4 * bc * d * eb),
            ("Q_i, O_i, dO_i, dQ_i", "SRAM", 4 * br * d * eb),
            ("S_ij/P_ij, dP_ij/dS_ij", "SRAM", 2 * br * bc * eb),
            ("ℓ_i, m_i, D_i (fp32)", "SRAM", 3 * br * STAT_BYTES),
        )
    )


def trace(workload: Workload, tiling: Tiling) -> Iterator[Event]:
    nq, nk, d = workload.nq, workload.nk, workload.head_dim
    for tensor, n in (("dQ", nq), ("dK", nk), ("dV", nk)):
        yield Event("HBM", "write", tensor, "init", n * d)
    rows = block_sizes(nq, tiling.block_rows)
    first_key = 0
    for c in block_sizes(nk, tiling.block_cols):
        seen = rows[query_blocks_seen(workload, tiling, first_key)]
        first_key += c
        yield Event("HBM", "read", "K", "load_kv", c * d)
        yield Event("HBM", "read", "V", "load_kv", c * d)
        for tensor, wide in STAGED:
            yield Event("HBM", "read", tensor, "inner", seen * (d if wide else 1))
        yield Event("HBM", "write", "dQ", "inner", seen * d)
        yield Event("HBM", "write", "dK", "store", c * d)
        yield Event("HBM", "write", "dV", "store", c * d)


def closed_form(workload: Workload, tiling: Tiling) -> Traffic:
    nq, nk, d = workload.nq, workload.nk, workload.head_dim
    q_rows = visited_by_kv_blocks(workload, tiling)[1]  # no mask: Tc·nq
    counts = {
        ("HBM", "write", "dQ", "init"): nq * d,
        ("HBM", "write", "dK", "init"): nk * d,
        ("HBM", "write", "dV", "init"): nk * d,
        ("HBM", "read", "K", "load_kv"): nk * d,
        ("HBM", "read", "V", "load_kv"): nk * d,
        ("HBM", "write", "dQ", "inner"): q_rows * d,
        ("HBM", "write", "dK", "store"): nk * d,
        ("HBM", "write", "dV", "store"): nk * d,
    }
    for tensor, wide in STAGED:
        counts[("HBM", "read", tensor, "inner")] = q_rows * (d if wide else 1)
    return Traffic(counts)


def flops(workload: Workload, tiling: Tiling) -> int:
    return 10 * visited_by_kv_blocks(workload, tiling)[0] * workload.head_dim


SCHEDULE = Schedule(
    name="flash_bwd",
    description="FlashAttention backward with recomputation (Algorithm 4)",
    parameters=(BLOCK_ROWS, BLOCK_COLS),
    sram="sizes",
    build=make_tiling,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=tile_trace_size,
    working_set=working_set,
    sram_traffic_modelled=False,
)
