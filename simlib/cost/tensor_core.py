"""The project's 16-bit tensor-core kernels as launches: naive_tc (three launches) and fa2_tc.

Sectors and wavefronts per instruction class come from `simlib.physical` (fa2_tc_model,
naive_tc_model), which covers non-causal self-attention with N a multiple of the tiles; other N
are modelled at N rounded up to the tiles (the kernels zero-fill the ragged tile and compute it
whole), and fa2_tc under a causal mask by the tiles it visits (`common.visited`). DRAM of fa2_tc's
K/V re-reads follows the wave rule of `common.kv_dram` (the physical model's own rule, "all heads'
K/V fit in L2 or every re-read misses", is an upper bound). naive_tc computes S whole under a
causal mask (the softmax masks inside the row), so its work is the unmasked one.

Worked number (fa2_tc, N = 4096, d = 64, B·H = 32): the two products are 4·N²·d·BH =
137,438,953,472 tensor-core FLOPs; each score takes one exp2 and each row one rescale per K/V tile
(Tc = 64): N²·BH + N·Tc·BH = 536,870,912 + 8,388,608 exp2:

>>> from simlib import Workload
>>> from simlib.cost.calibration import Calibration
>>> (l,) = fa2_tc(Workload(4096, 64, batch=2, heads=16, dtype="bf16"), Calibration({}))
>>> int(l.work.tensor_flops), int(l.work.mufu), l.blocks
(137438953472, 545259520, 2048)
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..hardware import load_preset
from ..physical.coalescing import SECTOR_BYTES
from ..physical.fa2_tc_model import fa2_tc_launch
from ..physical.naive_tc_model import naive_tc_launch
from ..tiling import ceil_div
from ..workload import Workload
from .calibration import Calibration
from .common import MMA_REGISTER_BYTES, basis, flash_launch, kv_dram, resident_blocks, visited
from .schedule import causal_cta_work
from .work import Grid, Launch, Work

ELEMENT = 2
#: Registers per thread of the compiled kernels (Nsight Compute launch__registers_per_thread in
#: data/measurements/current/profile_h200_tc.csv), by head dim: fa2_tc 216 / 255; naive_tc
#: scores 56 / 59, softmax 48 (t = 256) and 52 (t = 1024), pv 128 / 254.
FA2_TC_REGISTERS = {64: 216, 128: 255}
NAIVE_TC_REGISTERS = {"scores": {64: 56, 128: 59}, "softmax": {64: 50, 128: 50}, "pv": {64: 128, 128: 254}}
#: The kernels' defaults (gpu_kernels.tensor_core: TcConfig, NaiveTcConfig, softmax_threads_for).
WARPS, BLOCK_COLS, MAX_PER_THREAD = 4, 64, 16


def softmax_threads_for(nk: int) -> int:
    """naive_tc's softmax threads per row: 32·⌈⌈N_k/16⌉/32⌉, at most 1024 (naive_tc_kernel.py)."""
    return min(1024, 32 * ceil_div(ceil_div(nk, MAX_PER_THREAD), 32))


def _padded(w: Workload, multiple: int) -> Workload:
    n = ceil_div(w.nk, multiple) * multiple
    return replace(w, seq_len=n, query_len=None, causal=False)


def _units(tally) -> dict[str, float]:
    u = tally.units
    return {
        "l2": float(SECTOR_BYTES * (u["global_ld"] + u["global_st"])),
        "wavefronts": float(u["shared_ld"] + u["shared_st"]),
    }


def fa2_tc(
    w: Workload, cal: Calibration, *, warps: int = WARPS, block_cols: int = BLOCK_COLS
) -> list[Launch]:
    bh, nq, nk, d = w.batch_heads, w.nq, w.nk, w.head_dim
    br, bc = 16 * warps, block_cols
    hw = load_preset("h200")
    pw = _padded(w, max(br, bc))
    tally, _, _, _ = fa2_tc_launch(pw, warps, bc, hw.level("L2").capacity_bytes)
    u = _units(tally)
    seen, _ = visited(w, br, bc)
    full = pw.nq * pw.nk
    tiles = seen / full if w.causal else (ceil_div(nq, br) * br * ceil_div(nk, bc) * bc) / full
    el = bh * seen
    regs = FA2_TC_REGISTERS.get(d, 255)
    shared = (br + 2 * bc) * d * ELEMENT
    resident, limit = resident_blocks(32 * warps, regs, shared, hw.sm_count)
    tr = ceil_div(nq, br)
    kv_head = 2 * nk * d * ELEMENT
    wave_q = min(resident, tr * bh) * br * d * ELEMENT
    kv, note = kv_dram(w, tr, resident, kv_head, 2 * wave_q, hw.level("L2").capacity_bytes)
    dram = bh * nq * d * ELEMENT + kv + bh * nq * (d * ELEMENT + 4)
    if w.causal:  # the re-reads a causal block skips
        kv = bh * kv_head + (kv - bh * kv_head) * seen / (nq * nk)
        dram = bh * nq * d * ELEMENT + kv + bh * nq * (d * ELEMENT + 4)
    klass = f"fa2_tc.d{d}.w{warps}bc{bc}"
    b = basis(el, d)
    flops = 4.0 * d * el
    work = Work(
        dram_bytes=float(dram),
        l2_bytes=u["l2"] * tiles,
        global_path="cp.async",
        shared_wavefronts=u["wavefronts"] * tiles,
        shared_instructions=u["wavefronts"] * tiles / 4,  # ldmatrix.x4: 4 wavefronts each, conflict-free
        register_bytes=flops / 4096 * MMA_REGISTER_BYTES,
        tensor_flops=flops,
        ffma=cal.ffma_per_element(klass) * el,
        mufu=float(el + bh * tr * br * ceil_div(nk, bc)),
        instructions=cal.instructions(klass, b),
    )
    geometry = Grid(bh * tr, 32 * warps, shared)
    return [
        geometry.launch(
            "fa2_tc",
            klass,
            work,
            registers=regs,
            serial=("tensor", "mufu"),
            cta_work=causal_cta_work(w, br, bc) if w.causal else (),
            detail={"basis": b, "dram": note, "occupancy": f"{resident} blocks resident ({limit})"},
        )
    ]


def naive_tc(
    w: Workload,
    cal: Calibration,
    *,
    warps: int = WARPS,
    block_cols: int = BLOCK_COLS,
    softmax_threads: int | None = None,
) -> list[Launch]:
    bh, nq, nk, d = w.batch_heads, w.nq, w.nk, w.head_dim
    bm, bn = 16 * warps, block_cols
    t = softmax_threads or softmax_threads_for(nk)
    el = bh * nq * nk
    out = []
    for name in ("scores", "softmax", "pv"):
        # the physical model wants N a multiple of the tiles and of the softmax threads: each launch at N
        # rounded up to that (the matmuls' ragged tiles are computed whole), scaled back to N_q·N_k scores
        pw = _padded(w, math.lcm(bm, bn, t))
        scale = el / (pw.batch_heads * pw.nq * pw.nk)
        tally, dram_r, dram_w, _ = naive_tc_launch(name, pw, warps, bn, t)
        u = _units(tally)
        regs = NAIVE_TC_REGISTERS[name].get(d, 255)
        if name == "softmax":
            klass = "naive_tc.softmax" + (".causal" if w.causal else "")
            b = {"el": el / 32, "row_warps": bh * nq * t / 32}
            geometry = Grid(bh * nq, t, 8 * t)
            flops, mufu = 0.0, float(el)
            shared_inst = float(tally.instructions["shared_ld"] + tally.instructions["shared_st"])
        else:
            klass = f"naive_tc.{name}.d{d}.w{warps}bc{bn}"
            b = basis(el, d)
            flops = 2.0 * d * el
            mufu = 0.0
            shared_inst = u["wavefronts"] / 4
            blocks = bh * ceil_div(nq, bm) * (ceil_div(nk, bn) if name == "scores" else 1)
            shared = (bm + bn) * d * ELEMENT if name == "scores" else (bm * bn + bn * d) * ELEMENT
            geometry = Grid(blocks, 32 * warps, shared)
        work = Work(
            dram_bytes=float(dram_r + dram_w) * scale,
            l2_bytes=u["l2"] * scale,
            global_path="ld" if name == "softmax" else "cp.async",
            shared_wavefronts=u["wavefronts"] * scale,
            shared_instructions=shared_inst * scale,
            register_bytes=flops / 4096 * MMA_REGISTER_BYTES,
            tensor_flops=flops,
            ffma=cal.ffma_per_element(klass) * el,
            mufu=mufu,
            instructions=cal.instructions(klass, b),
        )
        out.append(geometry.launch(name, klass, work, registers=regs, detail={"basis": b}))
    return out


#: fa3_tc's default builds (gpu_kernels/kernels/fa3_tc.py, default_config; simlib/schedules/fa3_tc.py):
#: G = 2 consumer warpgroups of 64 query rows (Br = 128, 256 threads), the 128-byte swizzle (no padding),
#: d = 64: Bc = 64 without the pipeline, 4 K/V tiles in shared memory; d = 128: Bc = 128 with FA3's
#: intra-warpgroup pipeline, 5 tiles (V triple-buffered) and one thrown-away S per Q block, and since
#: fa3_tc version 6 (run fa3-v6-pingpong-20261203) the two warpgroups' ping-pong (named barriers; no byte
#: and no product moves, a few barrier instructions per visit; its overlap of one group's softmax with the
#: other's products is in the class's eta, fitted on the ping-pong build's rows). Registers (ptxas 13.0 -v,
#: sm_90a, bf16; non-causal, causal): 98, 98 at d = 64; 248, 255 at d = 128 with the ping-pong
#: (fa3_tc_v6_pingpong_registers.log; 246, 247 without it): one block per SM either way.
#: Instructions per warp per K/V visit, from the SASS (nvdisasm 13.0 of those cubins): the main loop's
#: body less the mask code an unmasked tile branches over: d = 64 483 − 100 = 383 (8 HGMMA, 34 MUFU,
#: 4 LDGSTS), d = 128 (unrolled by two) (1838 − 2·193)/2 = 726 (16 HGMMA, 66 MUFU, 16 LDGSTS). A warp
#: holds 16 rows × Bc scores of the warpgroup's 64 × Bc accumulator: per 32 scores 383/32 and 726/64.
#: (Bc, K/V tiles, overlap, registers, causal registers, warp instructions per visit)
FA3_TC = {64: (64, 4, False, 98, 98, 383), 128: (128, 5, True, 248, 255, 726)}
FA3_WARPGROUPS, FA3_GROUP_ROWS = 2, 64
#: the kernel's causal launch order: grid (Tr, B·H), Q blocks in index order (commit c7d1c99); True when
#: it launches heaviest first (grid (B·H, Tr), as fa2_tc version 5)
#: Under a causal mask fa3_tc (main at 3140ab9, run fa3-l2-sections-20261202) launches grid
#: (S, Tr, ⌈B·H/S⌉): the heads in L2 sections of S, each section's Q blocks heaviest first.
FA3_TC_HEAVY_FIRST = True
#: The bytes of K and V one section's heads may hold (FA3's tile scheduler: a quarter of the L2, 16 MiB).
FA3_SECTION_KV_BYTES = 16 * 2**20


#: The kernel's default section rule (gpu_kernels/kernels/fa3_tc.py, ``section_rule="all64"`` since fa3_tc
#: version 5, run fa3-v5-persistent-20261203): at d = 64 every head is one causal section; at d = 128
#: FA3's 16 MiB rule. Round 6 of the cost model (docs/COST.md) models it; round 5 modelled the 16 MiB rule
#: at both head dims.
FA3_ALL_HEADS_D = 64


def fa3_section_heads(w: Workload) -> int:
    """The heads of one L2 section of fa3_tc's causal grid: at d = FA3_ALL_HEADS_D all B·H; otherwise the
    most K/V heads, a power of two, whose K and V (2 · N_k · d · 2 B each head) fit in
    FA3_SECTION_KV_BYTES, at least one, times the query heads sharing each, at most B·H. Worked number:
    N_k = 2500, d = 128 holds 13 heads of 1,280,000 B, so 8; at d = 64 a launch of B·H = 32 is one section.

    >>> from simlib import Workload
    >>> fa3_section_heads(Workload(2500, 128, batch=4, heads=8, dtype="bf16", causal=True))
    8
    >>> fa3_section_heads(Workload(2500, 64, batch=4, heads=8, dtype="bf16", causal=True))
    32
    """
    if w.head_dim == FA3_ALL_HEADS_D:
        return w.batch_heads
    per_head = 2 * w.nk * w.head_dim * ELEMENT
    fit = max(1, FA3_SECTION_KV_BYTES // per_head)
    return min(w.batch_heads, 2 ** (fit.bit_length() - 1) * w.group)


def fa3_tc(w: Workload, cal: Calibration) -> list[Launch]:
    """fa3_tc, Hopper's wgmma FlashAttention (gpu_kernels/kernels/fa3_tc.py): per Q block of Br = 128
    rows, per visited K/V tile S = Q K_jᵀ by d/16 wgmma m64nBck16 with both operands in shared memory,
    the online softmax on the accumulator in registers (one exp2 per score, one rescale per row and
    tile), O += P V_j by Bc/16 wgmma with P from registers and V from shared memory. The products run
    at the wgmma rate (rates: wgmma_flops), in turn with the exponentials (serial, as fa2_tc; at d = 128
    the default build's ping-pong of the two warpgroups overlaps them partly, which its fitted eta holds). Shared memory: each warpgroup's wgmma read their operands once,
    (64 + Bc)·d elements for S and Bc·d for P V per tile, and the cp.async copies write 2·Bc·d per tile
    (swizzled: conflict-free, one wavefront per 128 bytes). DRAM: fa2_tc's, K/V re-reads by the wave rule.
    Instructions from the default builds' SASS (FA3_TC); eta and t_block fitted on the committed
    non-causal timings (fit.fit_block_latency, tc_side_by_side_h200_every.csv: the default builds)."""
    if w.dtype not in ("fp16", "bf16") or w.head_dim not in FA3_TC:
        raise ValueError(f"fa3_tc runs fp16/bf16 at head_dim 64 or 128, got {w.dtype}, d = {w.head_dim}")
    hw = load_preset("h200")
    bh, nq, nk, d = w.batch_heads, w.nq, w.nk, w.head_dim
    bc, tiles, overlap, regs, regs_causal, per_visit = FA3_TC[d]
    g = FA3_WARPGROUPS
    br = FA3_GROUP_ROWS * g
    threads = 128 * g
    shared = (br + tiles * bc) * d * ELEMENT
    registers = regs_causal if w.causal else regs
    resident, limit = resident_blocks(threads, registers, shared, hw.sm_count)
    tr = ceil_div(nq, br)
    seen, kv_rows = visited(w, br, bc)
    el = bh * seen
    visits = el / (br * bc)  # K/V tiles visited, all Q blocks
    kv_head = 2 * nk * d * ELEMENT
    wave_q = min(resident, tr * bh) * br * d * ELEMENT
    kv, note = kv_dram(w, tr, resident, kv_head, 2 * wave_q, hw.level("L2").capacity_bytes)
    if w.causal:
        kv = bh * kv_head + (kv - bh * kv_head) * seen / (nq * nk)
    extra_s = bh * tr * 2.0 * br * bc * d if overlap else 0.0  # the pipeline's last S, thrown away
    flops = 4.0 * d * el + extra_s
    per_tile_bytes = (g * ((FA3_GROUP_ROWS + bc) * d + bc * d) + 2 * bc * d) * ELEMENT
    extra_bytes = bh * tr * g * (FA3_GROUP_ROWS + bc) * d * ELEMENT if overlap else 0.0
    wavefronts = (visits * per_tile_bytes + extra_bytes) / 128
    copies = visits * 2 * bc * d * ELEMENT / 16 / 32  # LDGSTS.128 warp instructions
    warps_per_visit = threads // 32
    work = Work(
        dram_bytes=float(bh * nq * d * ELEMENT + kv + bh * nq * (d * ELEMENT + 4)),
        l2_bytes=float(bh * (2 * nq * d + 2 * kv_rows * d) * ELEMENT + bh * nq * 4),
        global_path="cp.async",
        shared_wavefronts=wavefronts,
        shared_instructions=copies,
        register_bytes=0.0,  # the B operands (and S's A) come from shared memory: counted there
        tensor_flops=flops,
        tensor_unit="wgmma",
        tensor_flops_per_instruction=512.0 * bc if d == 64 else 512.0 * 128,
        ffma=cal.ffma_per_element(f"fa3_tc.d{d}") * el,
        mufu=float(el + bh * tr * br * ceil_div(nk, bc)),
        instructions=float(visits * warps_per_visit * per_visit),
    )
    return [
        flash_launch(
            "fa3_tc",
            f"fa3_tc.d{d}",
            work,
            w,
            tiles=(br, bc),
            threads=threads,
            registers=registers,
            shared_bytes=shared,
            heavy_first=FA3_TC_HEAVY_FIRST,
            sections=fa3_section_heads(w) if FA3_TC_HEAVY_FIRST else None,
            detail={
                "basis": basis(el, d),
                "dram": note,
                "occupancy": f"{resident} blocks resident ({limit})",
            },
        )
    ]
