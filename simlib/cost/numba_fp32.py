"""The project's fp32 numba kernels as launches: naive (three), tiled (the readable FA2), fast.

Bytes at each level come from `simlib.physical` where it models the kernel (naive, tiled: every
access of the source as a class of warp instructions, sectors, wavefronts, DRAM after L2 in the
wave picture); the fast kernel, which simlib.physical does not model, gets closed forms (its
tiles, K/V re-reads by the same wave rule, wavefronts per score calibrated). Instructions come
from `simlib.cost.calibration` (per 32 scores, fitted on Nsight Compute's counts).

Worked number (naive, N = 4096, d = 64, B·H = 32): the two matmuls do BH·N²·d = 34,359,738,368
FFMAs each:

>>> from simlib import Workload
>>> from simlib.cost.calibration import Calibration
>>> qk, sm, pv = numba_naive(Workload(4096, 64, batch=2, heads=16, dtype="fp32"), Calibration({}))
>>> int(qk.work.ffma), int(pv.work.ffma), qk.blocks
(34359738368, 34359738368, 2097152)
"""

from __future__ import annotations

from dataclasses import replace

from ..hardware import load_preset
from ..kernel_layout import (
    ITEM_BYTES,
    NAIVE_DEFAULTS_GPU,
    fast_default_config,
    matmul_shared_bytes,
    tiled_default_blocks,
    tiled_shared_bytes,
)
from ..physical import predict
from ..physical.metrics import DRAM_READ, DRAM_WRITE, L1_LD, L1_ST, SHARED_LD, SHARED_ST
from ..tiling import ceil_div
from ..workload import Workload
from .calibration import Calibration
from .common import FFMA_REGISTER_BYTES, basis, kv_dram, resident_blocks, visited
from .schedule import causal_cta_work
from .work import Grid, Launch, Work

#: Registers per thread of the compiled kernels (Nsight Compute launch__registers_per_thread in
#: data/measurements/current/profile_h200.csv): the matmuls 32; the softmax 32
#: with 8 scores per thread, 109 with 32 (its row in registers) and 34 with 128 (spilled to local
#: memory); the readable kernel 128 at d = 64 (48 × 48 blocks), 254 at d = 128 (24 × 24).
MATMUL_REGISTERS = 32
TILED_REGISTERS = {64: 128, 128: 254}
#: The softmax keeps its row in registers up to this many scores per thread (32 seen in registers,
#: 128 seen spilled; between them an assumption: a local array above 64 floats is not kept).
SOFTMAX_IN_REGISTERS = 64
#: The price of the naive and readable kernels' warp instructions that no other figure covers (round 5).
#: Nsight Compute's per-pipe counts (energy_counters_pipes_numba_h200_kernels.csv, run
#: cost5-units-20261203, N = 1024, B·H = 32): of the naive matmuls' warp instructions 43–45 % run on the
#: uniform pipe (one scalar operation per warp: loop counters, tile offsets), 23–24 % on the integer ALU
#: and 15–16 % as IMAD (fmaheavy), FFMA 3 %; of the readable kernel's 10 % uniform, 21 % ALU. These
#: are address arithmetic, counters and compares whose operands change in a few low bits and are
#: equal across a warp's lanes, unlike the IMAD chain behind "other_instruction" (x·x + c: about half
#: its bits flip each time). They are priced at IADD3 on operands that never toggle (iadd3_zero in
#: cost_units_toggle_h200.csv: 203 pJ, beside 427 pJ for the same chain toggling, same run). The fast
#: kernel (FFMA-bound, 5 % ALU, no uniform work) keeps the IMAD figure.
TOGGLE_FREE = "toggle_free_instruction"
#: Round 7: the shared-memory instructions of the naive and readable kernels are priced by their access
#: kind (model.shared_energy: a broadcast LDS.32 on random data 646 pJ, a lane-distinct one 860 pJ, run
#: cost7-units-20261204, against the energy run's ~2040 pJ for a conflict-free LDS.32 with its FADD),
#: from each kernel's source: the mean distinct 4-byte words its warp instructions move.
LANES = 32


def matmul_shared_words(tile: int) -> float:
    """The naive matmul's mean distinct words per shared warp instruction (gpu_kernels/kernels/naive.py):
    per k step every thread loads As[ty, x] (a warp spans 32/T rows: that many words) and Bs[x, tx]
    (min(T, 32) words), and per T steps stores one As and one Bs element (lane-distinct). Worked
    number, T = 16: (2 + 16 + 2/16 · 32) / (2 + 2/16) = 10.35.

    >>> round(matmul_shared_words(16), 2)
    10.35
    """
    a_words, b_words = max(1, LANES // tile), min(tile, LANES)
    stores = 2 / tile
    return (a_words + b_words + stores * LANES) / (2 + stores)


def tiled_shared_words(d: int, br: int) -> float:
    """The readable kernel's (gpu_kernels/kernels/tiled.py, one thread per query row) mean distinct words
    per shared warp instruction: per score d loads of Qs[tid, x] (lane-distinct), d of Ks[cc, x]
    (broadcast), the S store, its load and store for exp, its load for P V (lane-distinct), d loads of
    Vs[cc, x] (broadcast); per key row and block 2·d stores filling K_j and V_j (lane-distinct). Worked
    number, d = 64, Br = 48: (2·64 + (64 + 4 + 128/48)·32) / (3·64 + 4 + 128/48) = 12.0.

    >>> round(tiled_shared_words(64, 48), 1)
    12.0
    """
    lane = d + 4 + 2 * d / br
    return (2 * d + lane * LANES) / (2 * d + lane)


def _fp32(w: Workload, causal: bool | None = None) -> Workload:
    return replace(w, dtype="fp32", causal=w.causal if causal is None else causal)


def _physical(kernel, launch, w, mapping, registers):
    m = predict(kernel, launch, w, mapping, load_preset("h200"), registers=registers, details=True)
    return {
        "dram": m[DRAM_READ] + m[DRAM_WRITE],
        "l2": 32.0
        * (m[L1_LD] + m[L1_ST] + m.get("model:local_ld_sectors", 0) + m.get("model:local_st_sectors", 0)),
        "wavefronts": float(m[SHARED_LD] + m[SHARED_ST]),
        "shared_inst": float(
            m.get("model:shared_ld_instructions", 0) + m.get("model:shared_st_instructions", 0)
        ),
    }


def softmax_registers(per_thread: int) -> int:
    """The softmax's registers per thread by scores per thread (the seen builds: 8 → 32, 32 → 109,
    128 → 34 spilled; the nearest of them otherwise)."""
    if per_thread > SOFTMAX_IN_REGISTERS:
        return 34
    return 32 if per_thread <= 8 else 109


def numba_naive(
    w: Workload, cal: Calibration, *, matmul_tile: int | None = None, softmax_threads: int | None = None
) -> list[Launch]:
    """qk (S = QKᵀ·scale), softmax (P, whole rows; causal masks inside the row), pv (O = PV)."""
    t = matmul_tile or NAIVE_DEFAULTS_GPU["matmul_tile"]
    ts = softmax_threads or NAIVE_DEFAULTS_GPU["softmax_threads"]
    w32 = _fp32(w, causal=False)  # S is computed whole and the softmax reads whole rows, causal or not
    bh, nq, nk, d = w.batch_heads, w.nq, w.nk, w.head_dim
    el = bh * nq * nk
    mapping = {"matmul_tile": t, "softmax_threads": ts}
    per = ceil_div(nk, ts)
    out = []
    for name, (rows, cols) in (("qk", (nq, nk)), ("softmax", (nq, nk)), ("pv", (nq, d))):
        spilled = name == "softmax" and per > SOFTMAX_IN_REGISTERS
        regs = softmax_registers(per) if name == "softmax" else MATMUL_REGISTERS
        p = _physical("naive", name, w32, mapping, regs)
        klass = f"numba_naive.{name}" + ("_spilled" if spilled else "")
        if name == "softmax":
            b = {"el": el / 32, "row_warps": bh * nq * ceil_div(ts, 32)}
            ffma = cal.ffma_per_element(klass) * el
            geometry = Grid(bh * nq, ts, 2 * ts * ITEM_BYTES)
            mufu = float(el)
            words = float(LANES)  # the reductions' scratch: each thread its own word
        else:
            b = {"el_d": el / 32 * d / 64}
            ffma = float(el * d)
            geometry = Grid(bh * ceil_div(rows, t) * ceil_div(cols, t), t * t, matmul_shared_bytes(t))
            mufu = 0.0
            words = matmul_shared_words(t)
        work = Work(
            dram_bytes=p["dram"],
            l2_bytes=p["l2"],
            shared_wavefronts=p["wavefronts"],
            shared_instructions=p["shared_inst"],
            register_bytes=ffma * FFMA_REGISTER_BYTES,
            ffma=ffma,
            mufu=mufu,
            instructions=cal.instructions(klass, b),
            other_price=TOGGLE_FREE,
            shared_words=words,
        )
        out.append(
            geometry.launch(name, klass, work, registers=regs, detail={"basis": b, "spilled": spilled})
        )
    return out


def numba_tiled(
    w: Workload, cal: Calibration, *, block_rows: int | None = None, block_cols: int | None = None
) -> list[Launch]:
    """The readable FA2 kernel: one thread per query row; causal skips the K/V tiles past a block's reach."""
    bh, nq, nk, d = w.batch_heads, w.nq, w.nk, w.head_dim
    if block_rows is None or block_cols is None:
        br, bc = tiled_default_blocks(nk, d, query_len=nq)
    else:
        br, bc = block_rows, block_cols
    regs = TILED_REGISTERS.get(d)
    p = _physical("tiled", "fa2", _fp32(w, causal=False), {"block_rows": br, "block_cols": bc}, regs)
    seen, _ = visited(w, br, bc)
    frac = seen / (nq * nk)
    el = bh * seen
    compulsory = bh * (nq * d + 2 * nk * d + nq * (d + 1)) * ITEM_BYTES
    dram = compulsory + (p["dram"] - compulsory) * frac if frac < 1 else p["dram"]
    klass = f"numba_tiled.br{br}bc{bc}"
    b = basis(el, d)
    ffma = 2.0 * d * el + cal.ffma_per_element(klass) * el
    work = Work(
        dram_bytes=dram,
        l2_bytes=p["l2"] * frac,
        shared_wavefronts=p["wavefronts"] * frac,
        shared_instructions=p["shared_inst"] * frac,
        register_bytes=ffma * FFMA_REGISTER_BYTES,
        ffma=ffma,
        mufu=float(el),
        instructions=cal.instructions(klass, b),
        other_price=TOGGLE_FREE,
        shared_words=tiled_shared_words(d, br),
    )
    geometry = Grid(bh * ceil_div(nq, br), br, tiled_shared_bytes(br, bc, d))
    return [
        geometry.launch(
            "fa2",
            klass,
            work,
            registers=regs,
            cta_work=causal_cta_work(w, br, bc) if w.causal else (),
            detail={"basis": b, "tiles": (br, bc)},
        )
    ]


def numba_fast(w: Workload, cal: Calibration) -> list[Launch]:
    """The register-tiled FA2 kernel (simlib.kernel_layout.fast_default_config): 16-byte loads of
    Q, K, V; K/V re-read per Q block, from L2 while a wave's heads fit; no causal variant."""
    if w.causal:
        raise ValueError("numba_fast has no causal variant (gpu_kernels/fast.py)")
    cfg = fast_default_config(w.head_dim)
    bh, nq, nk, d = w.batch_heads, w.nq, w.nk, w.head_dim
    br = cfg.block_rows
    tr = ceil_div(nq, br)
    el = bh * nq * nk
    resident, _ = resident_blocks(cfg.threads, None, cfg.smem_bytes, load_preset("h200").sm_count)
    kv_head = 2 * nk * d * ITEM_BYTES
    wave_q = min(resident, tr * bh) * br * d * ITEM_BYTES
    kv, note = kv_dram(w, tr, resident, kv_head, 2 * wave_q, load_preset("h200").level("L2").capacity_bytes)
    klass = f"numba_fast.d{d}"
    b = basis(el, d)
    ffma = 2.0 * d * el + cal.ffma_per_element(klass) * el
    work = Work(
        dram_bytes=float(bh * nq * (2 * d + 1) * ITEM_BYTES + kv),
        l2_bytes=float(bh * (2 * nq * d + tr * 2 * nk * d + nq) * ITEM_BYTES),
        global_path="ld.v4",
        shared_wavefronts=cal.instructions(klass + ":wavefronts", b),
        shared_instructions=cal.instructions(klass + ":shared_inst", b),
        register_bytes=ffma * FFMA_REGISTER_BYTES,
        ffma=ffma,
        mufu=float(el),
        instructions=cal.instructions(klass, b),
    )
    geometry = Grid(bh * tr, cfg.threads, cfg.smem_bytes)
    return [geometry.launch("fa2_fast", klass, work, detail={"basis": b, "dram": note})]
