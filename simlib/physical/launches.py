"""What Nsight Compute should measure for each numba kernel launch, predicted from the kernel code.

`predict(kernel, launch, workload, mapping, hardware, registers=None)` returns a dict of ncu metric
name → predicted value for one launch of gpu_kernels' `naive` (launches "qk", "softmax", "pv") or
`tiled` (launch "fa2"). How:

1. **Warp instructions, by class.** Each global, local or shared-memory access in the kernel source
   (gpu_kernels/kernels/naive.py, gpu_kernels/kernels/tiled.py) is a class of warp instructions. For each class the
   lanes' byte addresses of one warp instruction are written out from the kernel's thread mapping
   (grid order, thread → element, the shared-memory layout with its padding), the primitives turn
   them into 32-byte sectors (`warp_sectors`) or shared-memory wavefronts (`shared_wavefronts`),
   and the result is multiplied by how many such instructions the launch issues. Instructions
   that differ (a ragged last tile, a tile whose start is not 32-byte aligned, a copy-loop
   iteration that crosses a padded row) are separate classes. One source-level access is one
   instruction (one LDS/STS/LDG/STG per access), except where the sm_90 SASS shows the compiler
   merging four reads of a shared-memory row into one LDS.128 (the tiled kernel's Q, K and V
   rows, `tiled_model.tiled_vector_width`; docs/L2_INVESTIGATION.md).
2. **L1 → L2 sectors.** Global loads are not assumed to hit in L1 across instructions (no reuse
   inside a thread block; reuse between blocks depends on the undocumented block-to-SM placement),
   so every L1 sector is an L2 request, and every store sector is. The H200's L2 is two partitions
   joined by the "LTC fabric"; a sector whose home is the far partition is looked up in both
   (ncu's lts__t_sectors_srcunit_ltcfabric), so with addresses spread evenly over the partitions
   lts__t_sectors = L1 sectors × (1 + 1/2). `L2_PARTITIONS` = 2: NVIDIA A100 and H100 whitepapers
   ("the L2 cache is divided into two partitions").
3. **DRAM.** Each tensor is read from DRAM once (its footprint, in full sectors) plus the re-reads
   that miss L2, decided by the reuse distance against the preset's L2 capacity
   (`dram_reads_of_rereads`). Distances follow the wave picture: blocks are dispatched in launch
   order, `blocks_per_sm × SMs` at a time (occupancy.py), and the blocks of one wave walk their
   loops together, so a tile read by several blocks of a wave at the same step is fetched once and
   a later wave re-reads it only if it is still in L2. Local memory (a per-thread array the compiler
   could not keep in registers) goes to DRAM when the wave's local footprint exceeds the L2.
   ncu flushes every cache before each profiled launch (--cache-control all), so nothing is reused
   across launches (S between naive's qk and softmax, P between softmax and pv): each launch starts
   from a cold L2, and so does the model. DRAM writes are predicted as every byte written; ncu
   counts fewer when dirty lines are still in L2 when the kernel ends.

The numbers this gives, next to ncu's, are in data/measurements/model_vs_ncu_h200.csv
(`python -m gpu_kernels model-vs-ncu`); every gap is explained in docs/L2_INVESTIGATION.md.

The rules per kernel are in tiled_model.py and naive_model.py (fp32), fa2_tc_model.py,
naive_tc_model.py and fa3_tc_model.py (the tensor-core kernels); this module only dispatches.
"""

from ..kernel_layout import ITEM_BYTES
from .fa2_tc_model import fa2_tc_launch, kernel_layout
from .fa3_tc_model import fa3_tc_launch
from .l2 import l2_partition_factor
from .metrics import (
    DRAM_READ,
    DRAM_WRITE,
    GMMA_INSTRUCTIONS,
    L1_LD,
    L1_ST,
    L2_READ,
    L2_WRITE,
    LDGSTS_INSTRUCTIONS,
    METRICS,
    SHARED_BANK_READS,
    SHARED_BANK_WRITES,
    SHARED_LD,
    SHARED_LD_INSTRUCTIONS,
    SHARED_ST,
    SHARED_ST_INSTRUCTIONS,
)
from .naive_model import matmul_dram, matmul_launch, softmax_launch
from .naive_tc_model import LAUNCHES as NAIVE_TC_LAUNCHES
from .naive_tc_model import naive_tc_launch
from .tiled_model import tiled_launch

KERNEL_LAUNCHES = {
    "naive": ("qk", "softmax", "pv"),
    "tiled": ("fa2",),
    "fa2_tc": ("fa2_tc",),
    "naive_tc": NAIVE_TC_LAUNCHES,
    "fa3_tc": ("fa3_tc",),
}

__all__ = [
    "DRAM_READ",
    "DRAM_WRITE",
    "KERNEL_LAUNCHES",
    "L1_LD",
    "L1_ST",
    "L2_READ",
    "L2_WRITE",
    "METRICS",
    "SHARED_LD",
    "SHARED_ST",
    "predict",
]


def _opt(mapping, name):
    """The mapping's `name` (a dict key or an attribute), None when absent."""
    return mapping.get(name) if isinstance(mapping, dict) else getattr(mapping, name, None)


def _get(mapping, name):
    value = _opt(mapping, name)
    if value is None:
        raise ValueError(f"mapping needs {name}")
    return int(value)


def _flag(mapping, name):
    """A boolean mapping entry (True/False or 1/0, as a profile's params write it), None when absent."""
    value = _opt(mapping, name)
    if value is None or isinstance(value, bool):
        return value
    if value in (0, 1, "0", "1", "True", "False"):
        return value in (1, "1", "True")
    raise ValueError(f"mapping's {name} must be true or false (1 or 0), got {value!r}")


def _launch(kernel, launch, workload, mapping, hardware, registers):
    """(Tally, DRAM read bytes, DRAM write bytes, details) from the kernel's model."""
    bh, n, d = workload.batch_heads, workload.seq_len, workload.head_dim
    if kernel == "fa2_tc":
        warp_rows, q_reload = kernel_layout(d, _opt(mapping, "warp_rows"), _opt(mapping, "q_reload"))
        l2 = hardware.level("L2").capacity_bytes
        return fa2_tc_launch(
            workload, _get(mapping, "warps"), _get(mapping, "block_cols"), l2, warp_rows, q_reload
        )
    if kernel == "fa3_tc":
        return fa3_tc_launch(
            workload,
            _opt(mapping, "warpgroups"),
            _opt(mapping, "block_cols"),
            _flag(mapping, "overlap"),
            _flag(mapping, "swizzle"),
            l2_bytes=hardware.level("L2").capacity_bytes,
            sm_count=hardware.sm_count,
            registers=registers,
        )
    if kernel == "naive_tc":
        return naive_tc_launch(
            launch,
            workload,
            _get(mapping, "warps"),
            _get(mapping, "block_cols"),
            _get(mapping, "softmax_threads") if launch == "softmax" else 32,
        )
    if kernel == "tiled":
        return tiled_launch(
            workload, _get(mapping, "block_rows"), _get(mapping, "block_cols"), hardware, registers
        )
    if launch == "softmax":
        return softmax_launch(bh, n, _get(mapping, "softmax_threads"), hardware, registers)
    tile = _get(mapping, "matmul_tile")
    m_, n_, k_, trans = (n, n, d, True) if launch == "qk" else (n, d, n, False)
    dram_read, info = matmul_dram(bh, m_, n_, k_, tile, trans, hardware, registers)
    return matmul_launch(bh, m_, n_, k_, tile, trans), dram_read, bh * m_ * n_ * ITEM_BYTES, info


def predict(kernel, launch, workload, mapping, hardware, registers=None, details=False):
    """Predicted ncu metrics (METRICS) of one launch; `details=True` adds the model's intermediate
    numbers (resident blocks, waves, reuse distances) under keys starting with 'model:'.

    kernel 'tiled' (launch 'fa2'; mapping block_rows, block_cols) or 'naive' (launches 'qk',
    'softmax', 'pv'; mapping matmul_tile, softmax_threads). `registers`: registers per thread of
    the compiled launch (ncu launch__registers_per_thread), for occupancy and local memory.
    fp32 for naive and tiled; the tensor-core kernels 'fa2_tc' (launch 'fa2_tc') and 'naive_tc'
    (launches 'scores', 'softmax', 'pv'), 16-bit, take mapping warps and block_cols (naive_tc's
    softmax also softmax_threads; fa2_tc also warp_rows and q_reload, by default the kernel's own,
    version 4's: 32 rows per warp, Q re-read at d = 128): fa2_tc_model.py, naive_tc_model.py.
    'fa3_tc' (launch 'fa3_tc'; mapping warpgroups, block_cols, overlap, swizzle, each defaulting to
    the kernel's; the workload may be causal and N any length) adds its instruction counters
    (GMMA, LDGSTS, LSU shared-memory instructions): fa3_tc_model.py.
    """
    if kernel not in KERNEL_LAUNCHES or launch not in KERNEL_LAUNCHES[kernel]:
        raise ValueError(f"unknown launch {kernel}/{launch}; known: {KERNEL_LAUNCHES}")
    tally, dram_read, dram_write, info = _launch(kernel, launch, workload, mapping, hardware, registers)
    u = tally.units
    factor = l2_partition_factor()
    out = {
        DRAM_READ: int(dram_read),
        DRAM_WRITE: int(dram_write),
        L2_READ: (u["global_ld"] + u["local_ld"]) * factor,
        L2_WRITE: (u["global_st"] + u["local_st"]) * factor,
        L1_LD: u["global_ld"],
        L1_ST: u["global_st"],
        SHARED_LD: u["shared_ld"],
        SHARED_ST: u["shared_st"],
    }
    if kernel == "fa3_tc":  # its instruction counters (fa3_tc_model.py)
        out[GMMA_INSTRUCTIONS] = info["gmma_instructions"]
        for name in LDGSTS_INSTRUCTIONS:
            out[name] = info["ldgsts_instructions"]
        out[SHARED_LD_INSTRUCTIONS] = out[SHARED_ST_INSTRUCTIONS] = 0
        out[SHARED_BANK_READS] = info["bank_reads"]
        out[SHARED_BANK_WRITES] = info["bank_writes"]
    if details:
        out.update({f"model:{k}": v for k, v in info.items()})
        out.update({f"model:local_{op}_sectors": u[f"local_{op}"] for op in ("ld", "st")})
        out.update({f"model:{k}_instructions": v for k, v in tally.instructions.items()})
    return out
