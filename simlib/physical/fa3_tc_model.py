"""What Nsight Compute should count for one launch of the Hopper kernel ``fa3_tc`` (bf16/fp16, wgmma).

The rules of launches.py, applied to gpu_kernels/kernels/fa3_tc.py's mapping: grid (Tr, B·H), block
i of head bh run by G warpgroups of 128 threads (Br = 64·G query rows, warp w of the block owning 16
of them), Bc keys per K/V block, visited last to first; causal (bottom-right aligned): block i visits
the K/V blocks up to its last valid row's reach, tc_i = min(Tc, ⌊(i·Br + r_i − 1 + N_k − N_q)/Bc⌋ + 1).
The copies and the stores are fa2_tc's (fa2_tc_model.py's primitives on the lanes' addresses); what
Hopper changes is how the tensor cores read shared memory:

* global loads: every tile is copied by cp.async.cg, 16 bytes per thread and instruction, thread t
  taking chunks t, t + 128·G, ... of the row-major tile (``tiles.block_copiers``: a warp instruction
  is 32 consecutive chunks, 512 contiguous bytes, 16 sectors). Per block: Q once (``copy_sectors``
  of Br rows), K_j and V_j once per visited block. A ragged tile (the last Q block, r_i < Br rows;
  the last K/V block, c < Bc keys) is copied whole by the zero-filling copier: a lane past the valid
  rows issues a cp.async of src-size 0, counted here as an instruction that reads no sector
  (``model:l1_ld_sectors_if_zero_fill_reads`` gives the other reading: such a lane's source, the
  tile's first row, is one sector more per instruction with no valid lane).
* global stores: fa2_tc's O store (``fragment_store_sectors``: two 2-byte stores per accumulator
  pair, lane 4g + t, 8 sectors per instruction of a full warp) for each warp's valid rows (rows past
  N_q are not written); L, fp32, by the 8 lanes t = 0 of each row half (1 sector, 2 when the 8
  floats straddle a sector: B·H·N_q rows whose start is not a multiple of 8).
* shared memory through the LSU: none. The kernel has no ld.shared / st.shared / ldmatrix: Q and K
  reach S's wgmma through descriptors, V through O's, P comes from registers, cp.async writes shared
  memory itself (fa2_tc measured 0 st wavefronts for cp.async: profile_h200_tc.csv). So
  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld and _op_st are predicted 0.
* what the wgmma read (not an LSU counter): each wgmma reads its shared operands once per
  warpgroup (the counted schedule's rule): an SS k-step of S = Q K_jᵀ reads (64 + Bc)·16
  elements, an RS k-step of O += P V_j reads d·16; d/16 SS and Bc/16 RS per visit, one more S with
  the pipeline (``overlap``: the last visit's thrown-away S). ``model:wgmma_shared_read_bytes`` is
  that sum (it equals the fa3_tc schedule's SRAM reads); ``GMMA_INSTRUCTIONS``
  (sm__inst_executed_pipe_tensor_op_gmma: warp instructions, four per wgmma of a warpgroup) and
  ``LDGSTS_INSTRUCTIONS`` (cp.async warp instructions) are predicted too; which shared-memory
  counter sees the wgmma reads, and in what unit, is what docs/L2_INVESTIGATION.md ("fa3_tc")
  reads off the profile.
* the data banks (l1tex__data_bank_reads / _writes, 4-byte words): what the profile
  (run fa3phys-ncu-20261202, docs/L2_INVESTIGATION.md) showed the wgmma reads land in. Reads: the
  wgmma bytes / 4 (the unit was the open question before the run: 4-byte words or 128-byte
  wavefronts; ncu is 1.2-4.6 % above, unexplained). Writes, a rule read off that profile (so not a
  prediction made before it, and exact there at all five shapes): 4 words per lane of every cp.async,
  zero-filled ones included, plus one per 2-byte O element and per L value stored: the global stores
  pass through the L1's data banks too.
* L2: every L1 sector is an L2 request, times the partition factor (launches.py, rule 2).
* DRAM: Q, K, V once each (their footprint) plus the re-reads that miss L2 in the wave picture
  (waves.py, as the fp32 tiled kernel, same grid order): blocks run `resident` at a time
  (occupancy.py: 128·G threads, the compiler's registers, the schedule's shared memory), the blocks
  of one wave walk their K/V together, a head cut by a wave boundary is re-read by the next wave,
  from DRAM only if its reuse distance exceeds the L2. Causal blocks are shorter the lower they sit,
  so waves are not in lockstep: the same rule is applied as an estimate. Writes: O and L once.
  The wave picture is of grid (Tr, B·H) in index order, the order run fa3phys-ncu-20261202 profiled;
  since then the kernel launches causal blocks as (S, Tr, ⌈B·H/S⌉), heaviest first inside L2
  sections of S heads (``Fa3TcPlan.section_size``: ``section_heads`` at d = 128, all B·H heads in one
  section at d = 64). Per-block accesses, and so every counter here but causal DRAM re-reads, are
  the same; that order's re-reads are not modelled yet and have not been profiled. The persistent
  grid (``Fa3Config.persistent``, not a default) moves the same bytes per item and is not modelled.
  The ping-pong order of the two warpgroups (``Fa3Config.pingpong``, the default at d = 128 since
  run fa3-v6-pingpong-20261203) keeps the grid, the copies and the wgmma as they were and adds only
  named-barrier instructions, which none of the counters here sees; the profiles of
  run fa3phys-ncu-20261202 are of the build before it.

Worked number (B·H = 1, N = 256, d = 64, the d = 64 defaults G = 2, Bc = 64, no pipeline; Tr = 2,
Tc = 4): global-load sectors 2·(128·128 + 4·2·64·128)/32 = 5,120 (Q 512 per block, K and V 256 per
visit); 320 LDGSTS (32 for Q, 16 per K or V copy); O store sectors 256·64/4 = 4,096, L 2·8·2 = 32;
GMMA 2 blocks · 8 warps · 4 visits · (4 + 4) = 512; wgmma reads per block 2 groups · 4 visits ·
(4·128·16 + 4·64·16)·2 B = 196,608 B.

>>> from simlib.workload import Workload
>>> t, _, _, info = fa3_tc_launch(Workload(256, 64, dtype="bf16"), l2_bytes=60 * 2**20)
>>> t.units["global_ld"], t.units["global_st"], info["gmma_instructions"], info["wgmma_shared_read_bytes"]
(5120, 4128, 512, 393216)
"""

from __future__ import annotations

from collections import Counter

from ..schedules.fa3_tc import GROUP_ROWS, build, working_set
from .coalescing import warp_sectors
from .fa2_tc_model import ELEMENT, copy_sectors, fragment_store_sectors
from .occupancy import blocks_per_sm
from .tally import Tally
from .waves import head_rereads, waves

WARPS_PER_GROUP = 4
LSE_BYTES = 4  # L is fp32
BANK_WORD = 4  # bytes of one shared-memory data-bank access
CHUNK_WORDS = 16 // BANK_WORD  # bank words one lane's cp.async writes (zero-filled ones too)


def q_blocks(workload, br, bc):
    """(first row, valid rows r_i, K/V blocks visited tc_i) of each Q block, as the kernel computes them."""
    nq, nk = workload.nq, workload.nk
    tc_all = -(-nk // bc)
    out = []
    for q_start in range(0, nq, br):
        r = min(br, nq - q_start)
        tc = tc_all
        if workload.causal:
            tc = min(tc, (q_start + r - 1 + nk - nq) // bc + 1)
        out.append((q_start, r, tc))
    return out


def lse_sectors(rows_start_mod8, valid):
    """Store sectors of one L instruction: the 8 lanes t = 0 writing rows g = 0..7 (fp32) of a half
    whose first row has index ≡ `rows_start_mod8` (mod 8) in L, rows g < `valid` only."""
    return warp_sectors([(rows_start_mod8 + g) * LSE_BYTES for g in range(min(8, valid))], LSE_BYTES)


def fa3_tc_launch(
    workload,
    warpgroups=None,
    block_cols=None,
    overlap=None,
    swizzle=None,
    *,
    l2_bytes,
    sm_count=132,
    registers=None,
):
    """(Tally, DRAM read bytes, DRAM write bytes, details) of one fa3_tc launch; mapping parameters
    as the fa3_tc schedule names them (None: the kernel's defaults, through the schedule's build)."""
    if workload.n_kv_heads != workload.heads:
        raise ValueError("the fa3_tc model covers H_kv = H (no GQA/MQA): K/V per head are its DRAM unit")
    mapping = build(workload, None, warpgroups, block_cols, overlap, swizzle)
    g, br, bc, d = mapping.warpgroups, mapping.block_rows, mapping.block_cols, workload.head_dim
    bh, nq, nk = workload.batch_heads, workload.nq, workload.nk
    nt, kq, kp = 128 * g, d // 16, bc // 16
    tc_all = -(-nk // bc)
    c_last = nk - (tc_all - 1) * bc  # keys of the last K/V block (the first one visited)
    blocks = q_blocks(workload, br, bc)
    t = Tally()
    zero_fill_extra = 0  # sectors a src-size-0 lane's address would add, if ncu counted them

    def copies(rows, valid, count):
        """`count` copies of a rows × d tile with `valid` rows: sectors and cp.async instructions."""
        nonlocal zero_fill_extra
        sectors, instructions = copy_sectors(rows, d, nt, d, valid_rows=valid)
        t.units["global_ld"] += sectors * count
        t.instructions["global_ld"] += instructions * count
        empty = sum(1 for first in range(0, rows * d // 8, 32) if first // (d // 8) >= valid)
        zero_fill_extra += empty * count

    lse_mods = Counter((h * nq) % 8 for h in range(bh))
    gmma = smem_read = 0
    for q_start, r, tc in blocks:
        copies(br, r, bh)
        ragged_kv = tc == tc_all and c_last < bc
        copies(bc, bc, 2 * bh * (tc - ragged_kv))
        if ragged_kv:
            copies(bc, c_last, 2 * bh)
        for w in range(g * WARPS_PER_GROUP):
            valid = max(0, min(16, r - 16 * w))
            if not valid:
                continue
            o_sec, _ = fragment_store_sectors(d // 8, d, valid)
            t.add("global_st", o_sec, bh)
            for half in (0, 8):
                if valid > half:
                    for mod, n_heads in lse_mods.items():
                        first = (mod + q_start + 16 * w + half) % 8
                        t.add("global_st", lse_sectors(first, valid - half), n_heads)
        s_products = tc + (1 if mapping.overlap else 0)
        gmma += bh * g * WARPS_PER_GROUP * (s_products * kq + tc * kp)
        smem_read += bh * g * (s_products * kq * (GROUP_ROWS + bc) + tc * kp * d) * 16 * ELEMENT

    # DRAM: Q, K, V once; K/V re-read by a later wave of the same head, from DRAM past the L2
    shared = working_set(workload, mapping).bytes("SRAM")
    resident = blocks_per_sm(nt, registers, shared) * sm_count
    tr = len(blocks)
    wave_heads = waves(tr, bh, resident)
    q_bytes = bh * nq * d * ELEMENT
    kv_head = 2 * nk * d * ELEMENT
    wave_q = min(resident, tr * bh) * br * d * ELEMENT  # Q read and O written by one wave
    kv_dram, distance, rereads = head_rereads(wave_heads, bh, kv_head, 2 * wave_q, l2_bytes)
    written = bh * nq * (d * ELEMENT + LSE_BYTES)
    info = {
        "resident_blocks": resident,
        "waves": len(wave_heads),
        "kv_reuse_distance_bytes": distance,
        "kv_reread_bytes": rereads * kv_head,
        "gmma_instructions": gmma,
        "ldgsts_instructions": t.instructions["global_ld"],
        "wgmma_shared_read_bytes": smem_read,
        "l1_ld_sectors_if_zero_fill_reads": t.units["global_ld"] + zero_fill_extra,
        # the data banks (4-byte words; rules read off run fa3phys-ncu-20261202, see the docstring)
        "bank_reads": smem_read // BANK_WORD,
        "bank_writes": t.instructions["global_ld"] * 32 * CHUNK_WORDS + bh * nq * (d + 1),
    }
    return t, q_bytes + kv_dram, written, info
