"""Price what Nsight Compute counted in one call: the energy model on measured counts, for any kernel.

simlib's own counts describe the project's kernels; a library call (cuBLAS, cuDNN, torch's fused
attention) moves operands through shared memory and L2 that no simlib schedule describes. The
energy run's counters profiled one call of every kernel of the NVML energy run under ncu
(``benchmarks/energy_counters_h200.py``: energy_counters_h200*.csv, one row per call, and
*_kernels.csv, one per kernel). This module prices those counts with the measured table:

* HBM: DRAM bytes read + written × the HBM figure;
* L2: sectors the SMs asked the L2 for (``lts__t_sectors_srcunit_tex``, read + write) × 32 B, less
  the DRAM bytes, × the L2 figure;
* SRAM: per shared-memory instruction (LDS, STS, LDSM) and per byte of shared-memory wavefront
  (× 128 B), with the two costs solved from the two shared-load calibrations of the same run
  (`shared_split`): a 4-byte LDS.32 moves 128 B per warp instruction, a 16-byte LDS.128 512 B;
* compute: FFMA thread instructions × 2 FLOPs at the fp32_fma figure; for tensor-core kernels the
  attention's matmul FLOPs at the register-only tensor_core figure (torch's memory-efficient kernel
  in fp32 does each product as three TF32 mma, "FastF32": 3× the FLOPs at that figure, an assumption,
  as no TF32 mma was calibrated);
* and, for the model "counters + issue", every other warp instruction (integer, branch, MUFU,
  shuffle, conversion, FMUL...) at the energy of one FFMA warp instruction (64 FLOPs at fp32_fma):
  an assumption, not a calibration.

Worked number (`shared_split`): LDS.32 at 15.93 pJ/B and LDS.128 at 6.822 pJ/B give
b = (512·6.822 − 128·15.93) / 384 = 3.786 pJ per byte and a = 128·(15.93 − 3.786) = 1,554 pJ per
warp instruction.

>>> a, b = shared_split(15.93, 6.822)
>>> round(a), round(b, 3)
(1554, 3.786)
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path
from typing import Any

from simlib.cost.rates import shared_split  # noqa: F401  (re-exported: energy_check and energy_report use it)
from simlib.energy import MEASUREMENTS, PJ, EnergyTable

DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
L2_SECTORS = ("lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum")
SHARED_INST = (
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_ldsm.sum",
)
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
MEMORY_INST = (
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
)
ALL_INST = "smsp__inst_executed.sum"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
#: Kernels whose matmuls run on the tensor cores (from their code: mma.sync, ldmatrix, FA2, cuDNN,
#: CUTLASS): their matmul FLOPs are priced at the tensor_core figure. torch math upcasts bf16 to fp32
#: (cuBLAS SGEMM: FFMA), cupy and the numba fp32 kernels use FFMA.
TENSOR_CORE = {"fa2_tc", "naive_tc", "naive_tc_scores", "naive_tc_pv", "torch_flash", "torch_cudnn"}
#: naive_tc's launches measured one at a time, and the kernel name each has under ncu.
NAIVE_TC_LAUNCHES = {"naive_tc_scores": "scores", "naive_tc_softmax": "softmax", "naive_tc_pv": "pv"}


def _files(kernels: bool) -> list[Path]:
    return sorted(
        p
        for p in MEASUREMENTS.glob("energy_counters_h200*.csv")
        if p.name.endswith("_kernels.csv") == kernels
    )


@cache
def _read(kernels: bool) -> dict[tuple[str, str, str, int, int], list[dict[str, str]]]:
    out: dict[tuple[str, str, str, int, int], list[dict[str, str]]] = {}
    for path in _files(kernels):
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                key = (
                    r["variant"],
                    r["dtype"],
                    r["pass"],
                    int(r["seq_len"]),
                    int(r["batch"]) * int(r["heads"]),
                )
                out.setdefault(key, []).append({**r, "file": path.name})
    return out


def counted(variant: str, dtype: str, pas: str, seq_len: int, batch_heads: int) -> dict[str, Any] | None:
    """ncu's counts of one call (naive_tc's one-launch variants: that launch of naive_tc's call), as
    floats, with the file they came from; None if the counters run did not profile it."""
    if variant in NAIVE_TC_LAUNCHES:
        rows = _read(True).get(("naive_tc", dtype, pas, seq_len, batch_heads), [])
        rows = [r for r in rows if f"naive_tc_{NAIVE_TC_LAUNCHES[variant]}" in r["kernel"]]
    else:
        rows = _read(False).get((variant, dtype, pas, seq_len, batch_heads), [])
    if len(rows) != 1:
        return None
    row = rows[0]
    names = (*DRAM, *L2_SECTORS, *SHARED_INST, WAVEFRONTS, *MEMORY_INST, ALL_INST, FFMA)
    return {"file": row["file"], **{m: float(row[m] or 0) for m in names}}


def tensor_flops(variant: str, dtype: str, matmul_flops: float) -> float:
    """The FLOPs a call does on the tensor cores, given its matmul FLOPs (see the module docstring)."""
    if variant == "torch_efficient":
        return matmul_flops * (1 if dtype == "bf16" else 3)
    return matmul_flops if variant in TENSOR_CORE else 0.0


def counter_terms(c: dict[str, Any], table: EnergyTable, split: tuple[float, float], tc_flops: float) -> dict:
    """Joules per term of one call's counts `c` (counted()), priced with `table` and the shared-memory
    `split`; "issue" is the other warp instructions at one FFMA warp instruction each."""
    per_inst, per_byte = split
    dram = sum(c[m] for m in DRAM)
    l2 = max(32 * sum(c[m] for m in L2_SECTORS) - dram, 0.0)
    shared_inst = sum(c[m] for m in SHARED_INST)
    fma = table.flop_cost("fp32_fma")
    other = c[ALL_INST] - shared_inst - sum(c[m] for m in MEMORY_INST) - c[FFMA] / 32
    return {
        "HBM": dram * table.byte_cost("HBM") * PJ,
        "L2": l2 * table.byte_cost("L2") * PJ,
        "SRAM": (shared_inst * per_inst + 128 * c[WAVEFRONTS] * per_byte) * PJ,
        "compute": (2 * c[FFMA] * fma + tc_flops * table.flop_cost("tensor_core")) * PJ,
        "issue": max(other, 0.0) * 64 * fma * PJ,
    }
