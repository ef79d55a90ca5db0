"""Which re-reads of Figure 2's FlashAttention kernels an L2 serves: resident thread blocks, reuse distances.

Every thread block (CTA) of these kernels does the same work, so the resident CTAs walk their loops
together (docs/L2_INVESTIGATION.md, item 4, measured on the H200). A tile read again comes from L2
only if fewer distinct bytes than the L2 holds were touched, by all resident CTAs together, since
its previous read: the reuse distance (simlib/physical/l2.py). Two patterns occur:

- **a CTA re-reads its own rows** (`fa1_2022`, the A100 kernel of commit 9dbc491a: grid (h, b), one
  CTA per (b, h) that sweeps all of its query rows once per K/V block of Bc = 256 keys). Between two
  reads of the same rows the CTA touches its whole Q, O_acc (fp32) and L (forward), or Q, dO,
  dQ_acc (fp32), L and D (backward), plus one K/V block (and dK_j, dV_j written): distance =
  resident CTAs × those bytes.
- **co-resident CTAs of one head read the same tile at the same step** (`fa2_torch`, PyTorch 2.11's
  FA2 kernels on the H200: grid (blocks, b, h), blockIdx.x fastest, so a head's Tr or Tc CTAs are
  adjacent): distance = resident CTAs × the bytes one CTA reads in one step.

Resident CTAs per SM from the kernels' shared memory (compute capability 8.0 on the A100: 164 KiB per
SM, 1 KiB reserved per CTA; CUDA C++ Programming Guide, 'Technical Specifications per Compute
Capability'); registers per thread are the compiler's and not in the source, so they bound the count:

- fa1_2022 forward, FMHA_kernel_traits<256, 64, 16, 1, 4, 0x08>: Q 2 × 16·64·2 B + max(K (shared
  with V) 256·64·2 B, O 16·64·4·4 B + softmax 512 B) + the lse buffer 2·16·4 B = 36,992 B
  (fmha_fprop_kernel_1xN.h lines 89-97, 193-195; fmha_fprop_fp16_kernel.sm80.cu line 53): 4 CTAs by
  shared memory; 128 threads at ≤ 255 registers always leave room for 2 (2 × 4 warps × 32 × 256 =
  65,536 registers), 3 would need ≤ 168 while the K and V fragments kept in registers take 128 per
  thread: `FWD_CTAS_PER_SM` = 2 (the lower bound; more only lengthens the distance).
- fa1_2022 backward, <256, 64, 16, 1, 8, 0x100>: 2·(2·16·64·2) + 2·256·64·2 + 16·64·4·8 +
  2·16·256·2 + 128 = 123,008 B (fmha_dgrad_fp16_kernel_loop.sm80.cu lines 14-26): 1 CTA per SM.

What the L2 then serves (`miss_share`): "lru", the project's rule (physical.l2: all of a re-read
stream once its distance exceeds the L2, none before); "h200-own", the H200's measured answer for
the same pattern (l2_ncu_own_h200.csv: a buffer re-read by the thread that first read it), taken at
the same distance/capacity ratio — an assumption for the A100, whose L2 was not measured here.

Worked number (Figure 2, lengths 1004-1023, mean 1013.375 tokens): forward 1013.375·(128 + 256 +
4) + 65,536 = 458,725.5 B per CTA × 216 CTAs = 99.1 MB = 2.36 L2s of 41.9 MB; backward
1013.375·(128 + 128 + 256 + 8) + 131,072 = 658,027 B × 108 = 71.1 MB = 1.69 L2s. LRU serves none
of the re-reads, so the 2022 kernel moves its every access, 6.04 GB; with the H200's curve (76 %
missed at both ratios) 5.11 GB; the paper's 4.4 GB would need 42 % of the 3.90 GB of re-traffic
(every access 6.04 − each tensor once 2.14) served by L2.

>>> round(fa1_2022_distances(1013.375)["fwd"] * 216 / 41_943_040, 2)
2.36
"""

import math
from collections import Counter
from collections.abc import Sequence
from functools import cache

import numpy as np
import pandas as pd

from simlib.hardware import load_preset
from simlib.physical.l2 import dram_reads_of_rereads
from simlib.physical.occupancy import blocks_per_sm
from simlib.presets import DATA_DIR
from simlib.schedules import fa1_2022, fa2_torch
from simlib.traffic import Traffic, tensor_bytes
from simlib.workload import Workload

from .l2_evidence import NCU_PASSES, NCU_SIZES_MIB, probe_misses

#: fa1_2022's dynamic shared memory per CTA (derivations in the module docstring) and threads.
FWD_SMEM_BYTES, FWD_THREADS = 36_992, 128
BWD_SMEM_BYTES, BWD_THREADS = 123_008, 256
#: Compute capability 8.0 (CUDA C++ Programming Guide): shared memory per SM, reserved per CTA, threads.
CC80_SHARED_PER_SM, CC80_RESERVED_PER_CTA, CC80_THREADS_PER_SM = 167_936, 1024, 2048
#: Forward CTAs per SM: the register file's lower bound (see the docstring); shared memory allows 4.
FWD_CTAS_PER_SM = 2
#: FA2's backward (Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 4, 4, false, false>) shared memory:
#: kSmemSize1colblock = Q, dO 3·128·64·2 + K, V 2·128·64·2 + dS 128·128·2 + P 128·128·2 = 147,456 B
#: (Dao-AILab/flash-attention csrc/flash_attn/src/kernel_traits.h lines 278-290 at 0251105a;
#: flash_bwd_launch_template.h line 95 launches the seqk-parallel kernel with it).
FA2_BWD_SMEM_BYTES, FA2_BWD_THREADS, FA2_BLOCK = 147_456, 256, 128
FA2_FWD_THREADS = 128  # 4 warps (data/fa2_tiles.json, d = 64)
OWN_PROBE = DATA_DIR / "measurements" / "current" / "l2_ncu_own_h200.csv"
OWN_PROBE_FIRST_MIB = 1  # the probe's first (compiling) launch, before NCU_SIZES_MIB
MIB = 2**20
GB = 1e9


def fa1_2022_ctas_per_sm() -> dict[str, int]:
    """Resident CTAs per SM of the 2022 kernels on compute capability 8.0.

    >>> fa1_2022_ctas_per_sm()
    {'fwd': 2, 'bwd': 1}
    """
    limits = {
        kernel: min(CC80_SHARED_PER_SM // (smem + CC80_RESERVED_PER_CTA), CC80_THREADS_PER_SM // threads)
        for kernel, smem, threads in (
            ("fwd", FWD_SMEM_BYTES, FWD_THREADS),
            ("bwd", BWD_SMEM_BYTES, BWD_THREADS),
        )
    }
    return {"fwd": min(limits["fwd"], FWD_CTAS_PER_SM), "bwd": limits["bwd"]}


def fa1_2022_distances(n: float, d: int = 64, block_cols: int = 256) -> dict[str, float]:
    """Bytes one CTA of fa1_2022 touches between two reads of the same rows (n tokens, fp16, fp32
    accumulators and statistics): forward Q, O_acc, L and the next K/V block; backward Q, dO,
    dQ_acc, L, D, the next K/V block and the dK_j, dV_j it writes.

    >>> fa1_2022_distances(1024)
    {'fwd': 462848, 'bwd': 663552}
    """
    kv_block = 2 * block_cols * d * 2
    return {
        "fwd": n * (d * 2 + d * 4 + 4) + kv_block,
        "bwd": n * (2 * d * 2 + d * 4 + 2 * 4) + 2 * kv_block,
    }


@cache
def _own_probe() -> tuple[np.ndarray, np.ndarray]:
    """The H200's 'own' re-read probe: footprint (bytes) and the share of re-reads from DRAM."""
    table = probe_misses(OWN_PROBE, (OWN_PROBE_FIRST_MIB, *NCU_SIZES_MIB), NCU_PASSES)
    footprint = table["footprint (MiB)"].to_numpy(dtype=float) * MIB
    return footprint, table["re-reads missed"].clip(0, 1).to_numpy(dtype=float)


def miss_share(distance: float, l2_bytes: int, rule: str = "lru") -> float:
    """Share of a re-read stream with this reuse distance that comes from DRAM.

    "lru": 0 or 1 (simlib.physical.l2); "h200-own": the H200 probe's share at the same
    distance / L2 ratio (linear between its points, its last value beyond them).

    >>> miss_share(99e6, 41_943_040), miss_share(30e6, 41_943_040)
    (1, 0)
    >>> round(miss_share(2 * 41_943_040, 41_943_040, "h200-own"), 2)
    0.76
    """
    if rule == "lru":
        return dram_reads_of_rereads(1, 2, distance, l2_bytes) - 1
    if rule != "h200-own":
        raise ValueError(f"rule must be 'lru' or 'h200-own', got {rule!r}")
    footprint, missed = _own_probe()
    h200_l2 = load_preset("h200").level("L2").capacity_bytes
    return float(np.interp(distance / l2_bytes * h200_l2, footprint, missed))


def fa1_2022_l2(lengths: Sequence[int], workload: Workload, gpu: str = "a100-40gb") -> pd.DataFrame:
    """Per kernel of fa1_2022 on `gpu`: every access, each tensor once, reuse distance, DRAM GB.

    DRAM = once + share × (every − once), the share from `miss_share`: the re-traffic (Q, dO
    re-reads, the fp32 accumulators' reads and re-writes, L, D) all has the kernel's distance. The
    distance is taken at the batch's mean length (all lengths share the same block counts).
    """
    if workload.causal:
        raise ValueError("causal: fa1_2022_l2 models the non-causal sweeps (every row at every step)")
    hw = load_preset(gpu)
    l2 = hw.level("L2").capacity_bytes
    ctas = fa1_2022_ctas_per_sm()
    distances = fa1_2022_distances(sum(lengths) / len(lengths), workload.head_dim)
    every = {"fwd": 0, "bwd": 0}
    once = {"fwd": 0, "bwd": 0}
    for n, k in sorted(Counter(lengths).items()):
        w = Workload(n, workload.head_dim, batch=k, heads=workload.heads, dtype=workload.dtype)
        mapping = fa1_2022.build(w, None)
        for traffic, totals in (
            (fa1_2022.closed_form(w, mapping), every),
            (fa1_2022.kernel_once(w, mapping), once),
        ):
            for kernel in totals:
                totals[kernel] += w.batch_heads * _phase_bytes(traffic, kernel, w)
    rows = []
    for kernel in ("fwd", "bwd"):
        resident = ctas[kernel] * hw.sm_count
        distance = distances[kernel] * resident
        row = {
            "kernel": kernel,
            "every_access_gb": every[kernel] / GB,
            "once_gb": once[kernel] / GB,
            "ctas_per_sm": ctas[kernel],
            "resident_ctas": resident,
            "bytes_per_cta": distances[kernel],
            "reuse_distance_mb": distance / 1e6,
            "distance_over_l2": distance / l2,
        }
        for rule in ("lru", "h200-own"):
            share = miss_share(distance, l2, rule)
            row[f"missed_{rule}"] = share
            row[f"dram_{rule}_gb"] = (once[kernel] + share * (every[kernel] - once[kernel])) / GB
        rows.append(row)
    return pd.DataFrame(rows)


def _phase_bytes(traffic: Traffic, kernel: str, workload: Workload) -> int:
    return sum(
        n * tensor_bytes(t, workload.element_bytes)
        for (_, _, t, phase), n in traffic.counts.items()
        if phase.split(":")[0] == kernel
    )


def fa2_torch_distances(workload: Workload, dropout: bool, gpu: str = "h200") -> dict[str, float]:
    """Reuse distance (bytes) of fa2_torch's shared tiles on `gpu`: the most CTAs shared memory lets
    reside (registers not a limit: an upper bound) × the bytes one CTA reads in one step (forward
    K_j, V_j; backward Q_i, dO_i, L_i, D_i and dQ_acc_i, fp32).

    >>> {k: round(v / 2**20, 1) for k, v in fa2_torch_distances(Workload(1024, 64), True).items()}
    {'fwd': 12.4, 'bwd': 8.4}
    """
    hw = load_preset(gpu)
    d, e = workload.head_dim, workload.element_bytes
    mapping = fa2_torch.build(workload, None, dropout=dropout)
    fwd_smem = fa2_torch.working_set(workload, mapping).bytes("SRAM")
    fwd_ctas = blocks_per_sm(threads=FA2_FWD_THREADS, shared_bytes=fwd_smem)
    bwd_ctas = blocks_per_sm(threads=FA2_BWD_THREADS, shared_bytes=FA2_BWD_SMEM_BYTES)
    return {
        "fwd": hw.sm_count * fwd_ctas * 2 * mapping.block_cols * d * e,
        "bwd": hw.sm_count * bwd_ctas * FA2_BLOCK * (2 * d * e + d * 4 + 2 * 4),
    }


def served_share_needed(paper_gb: float, every_gb: float, once_gb: float) -> float:
    """Share of the re-traffic (every − once) an L2 must serve for the paper's number.

    >>> round(served_share_needed(4.4, 6.0, 2.0), 3)
    0.4
    """
    return math.nan if every_gb == once_gb else (every_gb - paper_gb) / (every_gb - once_gb)
