"""Nsight Compute on the fast kernel (and torch's efficient kernel, the readable one): where to
find ncu, the program it profiles, and the metrics asked for.

``python -m gpu_kernels ncu --out DIR`` runs ``ncu --clock-control none`` on ``python -m gpu_kernels
launch`` (one launch per spec 'variant:N:d'); the per-launch profile of the naive and readable
kernels next to simlib is ``ncu_profile``.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np

from measurements.provenance import provenance, write_measurement
from simlib.kernel_layout import tiled_default_blocks
from simlib.physical.metrics import DRAM_READ, DURATION, REGISTERS, SHARED_LD, WARPS_ACTIVE
from simlib.workload import Workload

from .tuning import config_dict


def find_ncu(explicit=None):
    if explicit:
        return explicit if os.path.exists(explicit) or shutil.which(explicit) else None
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in (
        "/opt/nvidia/nsight-compute/*/ncu",
        "/usr/local/cuda*/bin/ncu",
        "/usr/local/cuda*/nsight-compute*/ncu",
    ):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


#: What the fast kernel's ncu run records (next to torch's efficient kernel).
FAST_METRICS = [
    REGISTERS,
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__block_size",
    WARPS_ACTIVE,
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__inst_executed.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    SHARED_LD,
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    DRAM_READ,
    DURATION,
]


STALL_METRICS = [
    f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio"
    for r in (
        "barrier",
        "short_scoreboard",
        "long_scoreboard",
        "mio_throttle",
        "math_pipe_throttle",
        "not_selected",
        "selected",
        "wait",
        "dispatch_stall",
        "no_instruction",
        "lg_throttle",
        "branch_resolving",
        "membar",
        "drain",
        "sleeping",
        "misc",
        "tex_throttle",
        "imc_miss",
    )
] + ["smsp__issue_active.avg.pct_of_peak_sustained_active"]


def launch_once(specs, fast_configs=None):
    """The program ncu profiles (``python -m gpu_kernels launch``): one launch per spec 'variant:N:d'
    (fast, tiled or torch_efficient), B = 1, H = 16, fresh inputs."""
    import cupy as cp
    from numba import cuda

    for spec in specs:
        name, n, d = spec.split(":")
        n, d = int(n), int(d)
        w = Workload(seq_len=n, head_dim=d, heads=16, dtype="fp32")
        q, k, v = (cp.random.standard_normal((1, 16, n, d), dtype=cp.float32) for _ in range(3))
        if name == "fast":
            from ..kernels.fast import fast_plan

            plan = fast_plan(w, (fast_configs or {}).get(d))
            o = cp.full(q.shape, cp.nan, dtype=cp.float32)
            lse = cp.full((1, 16, n), cp.nan, dtype=cp.float32)
            flat = [cuda.as_cuda_array(x).reshape(x.size) for x in (q, k, v, o, lse)]
            plan.kernel()
            plan.launch(*flat, cuda.to_device(np.zeros(4, dtype=np.int64)))
        elif name == "tiled":
            from ..kernels.tiled import TiledPlan

            br, bc = tiled_default_blocks(n, d)
            o = cp.full((16, n, d), cp.nan, dtype=cp.float32)
            lse = cp.full((16, n), cp.nan, dtype=cp.float32)
            TiledPlan(workload=w, block_rows=br, block_cols=bc).launch(
                *[cuda.as_cuda_array(x).reshape(16, n, d) for x in (q, k, v)],
                cuda.as_cuda_array(o),
                cuda.as_cuda_array(lse),
                cuda.to_device(np.zeros(4, dtype=np.int64)),
            )
        else:
            import torch
            from torch.nn.attention import SDPBackend, sdpa_kernel

            with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
                o = torch.nn.functional.scaled_dot_product_attention(
                    *(torch.from_dlpack(x) for x in (q, k, v))
                )
            o = cp.from_dlpack(o)
        cuda.synchronize()
        print(
            f"launched {name} N={n} d={d} finite={bool(cp.isfinite(o).all())} flops={w.flops}",
            file=sys.stderr,
        )


def run_ncu(specs, out_dir, tag="h200", fast_configs=None, timeout_s=300, sections_spec=None):
    """ncu --clock-control none on ``launch_once(specs)``: ``ncu_<tag>.csv`` (FAST_METRICS per launch)
    and ``ncu_<tag>.log`` (commands, stderr, the stall reasons of ``sections_spec``), each with its
    provenance. Returns ncu's exit status."""
    ncu = find_ncu()
    if ncu is None:
        raise RuntimeError("ncu (Nsight Compute) not found on PATH or under /opt/nvidia")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    cfg_arg = json.dumps({str(d): config_dict(c) for d, c in (fast_configs or {}).items()})

    def program(spec):
        return [sys.executable, "-m", "gpu_kernels", "launch", "--specs", spec, "--configs", cfg_arg]

    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--kernel-name",
        "regex:fa2_fast|fmha|fa2_forward",
        "--csv",
        "--page",
        "raw",
        "--metrics",
        ",".join(FAST_METRICS),
    ] + program(",".join(specs))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    log = [" ".join(cmd), f"returncode {p.returncode}", p.stderr[-6000:]]
    if sections_spec:  # why warps wait: stall reasons per issued instruction
        cmd2 = [
            ncu,
            "--clock-control",
            "none",
            "--kernel-name",
            "regex:fa2_fast|fmha",
            "--csv",
            "--page",
            "raw",
            "--metrics",
            ",".join(STALL_METRICS),
        ] + program(sections_spec)
        p2 = subprocess.run(cmd2, capture_output=True, text=True, timeout=timeout_s, env=env)
        log += [
            "",
            " ".join(cmd2),
            f"returncode {p2.returncode}",
            "STALLS-CSV-BEGIN",
            p2.stdout,
            "STALLS-CSV-END",
            p2.stderr[-3000:],
        ]
    record = provenance(
        {
            "what": "Nsight Compute metrics of the fast kernel and torch's efficient kernel",
            "specs": list(specs),
            "sections_spec": sections_spec,
            "metrics": FAST_METRICS,
            "returncode": p.returncode,
        }
    )
    write_measurement(os.path.join(out_dir, f"ncu_{tag}.csv"), p.stdout, record)
    write_measurement(os.path.join(out_dir, f"ncu_{tag}.log"), "\n".join(log) + "\n", record)
    return p.returncode
