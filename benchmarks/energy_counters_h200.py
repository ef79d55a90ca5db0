"""Nsight Compute's counts of one call of every kernel the energy run measures, to price them.

The energy model (evidence.energy_check) prices what a kernel moves and computes. For the project's
own kernels simlib counts that; for library kernels (cuBLAS, cuDNN, torch's fused attention) it
cannot see the shared-memory and L2 traffic inside the call. This script asks Nsight Compute for
it: each (variant, dtype, pass) of ``benchmarks/energy_h200.py``'s plan, built by the same code
(`energy_h200.prepare`, checked against the float64 reference first), runs once under ncu
(``--cache-control all``, ``--clock-control none``, a torch.cuda._sleep marker kernel before each
call), and the counters of every kernel of the call are summed:

    DRAM bytes read and written; L2 sectors requested by the SMs (lts srcunit tex, read and
    write); shared-memory wavefronts (all, and the load, store and ldmatrix parts) and the warp
    instructions behind them (LDS, STS, LDSM, LDGSTS); global load and store instructions; all
    warp instructions; FFMA thread instructions; the tensor pipe's warp instructions; duration.

Configurations are N × B·H (H = 16, d = 64): by default the energy run's own shapes (4096 × 32,
16384 × 16, 1024 × 128) and 4096 × 16, which shows whether the counts scale with B·H. Each
configuration is one ncu process with its own time limit, so a slow one loses only itself.
naive_tc's one-launch variants are not profiled: their kernels are naive_tc's.

Writes under --out: energy_counters_<tag>.csv (one row per call) and energy_counters_<tag>_kernels.csv
(one row per kernel), each with a provenance sidecar, and energy_counters_<tag>.log (tag: h200).
``--variants`` profiles a subset, so a long configuration can be split over processes.

Usage on the device: python3 benchmarks/energy_counters_h200.py --out $OUT [--configs 4096x32,...]
[--variants torch_math,...] [--tag h200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import energy_h200 as run  # noqa: E402
from benchmarks.figure2_torch import (  # noqa: E402
    find_ncu,
    ncu_reads_counters,
    parse_raw_csv,
    provenance_writer,
    split_by_marker,
)

DEFAULT_CONFIGS = "4096x32,16384x16,1024x128,4096x16"
METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_ldsm.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__inst_executed.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__inst_executed_pipe_tensor.sum",
    "gpu__time_duration.sum",
]
CALL_FIELDS = ["variant", "dtype", "pass", "batch", "heads", "seq_len", "head_dim", "status", "rel_err"]
CALL_FIELDS += ["kernels", "params", *METRICS, "kernel_names"]
KERNEL_FIELDS = ["variant", "dtype", "pass", "batch", "heads", "seq_len", "kernel", *METRICS]
#: With --pipes: warp instructions by the pipe that executed them (the cost model prices the integer
#: ALU pipe's apart from the FMA pipe's IMADs).
PIPE_METRICS = [
    f"smsp__inst_executed_pipe_{p}.sum"
    for p in ("alu", "fma", "fmaheavy", "fmalite", "fp16", "lsu", "adu", "cbu", "uniform", "xu", "tensor")
]


def configs_of(text):
    """[(N, B·H)] from '4096x32,1024x128'; ValueError naming --configs otherwise."""
    out = []
    for item in text.split(","):
        try:
            n, bh = (int(x) for x in item.split("x"))
            run.shape_of(n, bh)
        except (ValueError, KeyError) as e:
            raise ValueError(f"--configs: {item!r} is not N x B·H of the energy run ({e})") from None
        out.append((n, bh))
    return out


def plan_for(n, variants=()):
    """The energy run's (variant, dtype, pass) at N (only `variants` if given), without naive_tc's
    one-launch variants."""
    return [
        (v, dt, p)
        for v, dt, p, m in run.attention_plan([n], True)
        if m == n and v not in run.NAIVE_TC_PARTS and (not variants or v in variants)
    ]


def driver(n, bh, variants=()):
    """Under ncu --profile-from-start off: every variant built and checked, warmed up, then one call
    profiled after a marker kernel; one status line per variant on stdout."""
    import numpy as np
    import torch

    from gpu_kernels.device import silence_performance_warning
    from gpu_kernels.measure.timing import _free_device_memory

    silence_performance_warning()
    rng = np.random.default_rng(2026)
    for variant, dtype, pas in plan_for(n, variants):
        tag = f"{variant} {dtype} {pas}"
        try:
            call, sync, err, params, keep = run.prepare(variant, dtype, pas, run.shape_of(n, bh), rng)
            call(1)
            sync()
        except Exception as e:  # noqa: BLE001 - recorded; the other variants still run
            print(
                f"counters-driver: FAILED {tag} before profiling: {type(e).__name__}: {str(e)[:200]}",
                flush=True,
            )
            _free_device_memory()
            continue
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        torch.cuda._sleep(1000)
        try:
            call(2)
            sync()
            torch.cuda.synchronize()
            text = ";".join(f"{a}={b}" for a, b in params.items())
            print(f"counters-driver: ok {tag} err={err:.3e} params={text}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(
                f"counters-driver: FAILED {tag} while profiled: {type(e).__name__}: {str(e)[:200]}",
                flush=True,
            )
        torch.cuda.profiler.stop()
        del call, keep
        _free_device_memory()


def available(ncu, log):
    """METRICS that this ncu lists for the GPU (by base name); all of them if the query fails."""
    proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    names = {ln.split()[0] for ln in proc.stdout.splitlines() if ln.strip() and "__" in ln.split()[0]}
    if proc.returncode or not names:
        log.append(f"ncu --query-metrics rc={proc.returncode}: using every metric asked for")
        return list(METRICS)
    keep = [m for m in METRICS if m.rsplit(".", 1)[0] in names]
    log.append(f"ncu lists {len(names)} base metrics; not available here: {sorted(set(METRICS) - set(keep))}")
    return keep


def profile(ncu, n, bh, variants, metrics, timeout_s, log):
    """One ncu process over driver(n, bh): (kernels per profiled call, status lines)."""
    cmd = [ncu, "--profile-from-start", "off", "--cache-control", "all", "--clock-control", "none"]
    cmd += ["--metrics", ",".join(metrics), "--csv", "--page", "raw", "--print-units", "base"]
    cmd += [
        sys.executable,
        os.path.abspath(__file__),
        "--driver",
        f"{n}x{bh}",
        "--variants",
        ",".join(variants),
    ]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        log.append(f"N={n} B·H={bh}: ncu timed out after {time.time() - t0:.0f} s; nothing recorded")
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        log.extend(ln for ln in out.splitlines() if ln.startswith("counters-driver"))
        return [], []
    log.append(f"N={n} B·H={bh}: ncu rc={proc.returncode} in {time.time() - t0:.0f} s")
    log.append(proc.stderr[-3000:])
    status = [ln for ln in proc.stdout.splitlines() if ln.startswith("counters-driver:")]
    log.extend(status)
    return split_by_marker(parse_raw_csv(proc.stdout, metrics)), status


def summed(kernels, metric):
    values = [k[metric] for k in kernels]
    return "" if any(v is None for v in values) else sum(values)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for the CSV files and their provenance")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="N x B·H, comma separated")
    ap.add_argument("--timeout-s", type=float, default=200.0, help="time limit of one configuration's ncu")
    ap.add_argument("--variants", default="", help="only these variants (default: every one of the plan)")
    ap.add_argument("--tag", default="h200", help="files energy_counters_<tag>.csv, _kernels.csv, .log")
    ap.add_argument("--pipes", action="store_true", help="also count warp instructions per pipe")
    ap.add_argument("--driver", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.pipes:
        METRICS.extend(m for m in PIPE_METRICS if m not in METRICS)
    try:
        configs = configs_of(args.driver or args.configs)
    except ValueError as e:
        ap.error(str(e))
    variants = tuple(v for v in args.variants.split(",") if v)
    if args.driver:
        return driver(*configs[0], variants)
    if not args.out:
        ap.error("--out: required")
    os.makedirs(args.out, exist_ok=True)
    log = []
    ncu = find_ncu()
    if not ncu or not ncu_reads_counters(ncu, log):
        print("\n".join(log))
        ap.error("ncu: not found, or it cannot read counters here")
    metrics = available(ncu, log)
    extra = [m for m in metrics if m in PIPE_METRICS and m not in KERNEL_FIELDS]
    CALL_FIELDS[-1:-1] = extra
    KERNEL_FIELDS.extend(extra)
    record, write = provenance_writer(log)
    rec = record(
        {
            "what": "Nsight Compute counters summed over every kernel of one call of each energy-run variant "
            "(benchmarks/energy_h200.py's plan and builders); --cache-control all, --clock-control none",
            "metrics": metrics,
            "configs": configs,
        }
    )
    calls, kernels = [], []
    for n, bh in configs:
        steps, status = profile(ncu, n, bh, variants, metrics, args.timeout_s, log)
        marked = [s for s in status if s.startswith("counters-driver: ok ") or " while profiled: " in s]
        if len(steps) != len(marked):
            log.append(
                f"N={n} B·H={bh}: {len(steps)} marked steps for {len(marked)} profiled calls; not recorded"
            )
            continue
        batch, heads, _ = run.shape_of(n, bh)
        done = [(line, step) for line, step in zip(marked, steps) if line.startswith("counters-driver: ok ")]
        for line, step in done:
            variant, dtype, pas, err, params = line.split()[2:7]
            base = {
                "variant": variant,
                "dtype": dtype,
                "pass": pas,
                "batch": batch,
                "heads": heads,
                "seq_len": n,
            }
            kernels += [{**base, "kernel": k["kernel"][:120], **{m: k[m] for m in metrics}} for k in step]
            names = sorted({k["kernel"].split("(")[0][:60] for k in step})
            calls.append(
                {
                    **base,
                    "head_dim": run.HEAD_DIM,
                    "status": "ok",
                    "rel_err": err.removeprefix("err="),
                    "kernels": len(step),
                    "params": params.removeprefix("params="),
                    **{m: summed(step, m) for m in metrics},
                    "kernel_names": "; ".join(names)[:400],
                }
            )
        print(f"N={n} B·H={bh}: {len(done)} calls profiled, {len(status) - len(done)} failed", flush=True)
        write(os.path.join(args.out, f"energy_counters_{args.tag}.csv"), calls, CALL_FIELDS, rec)
        write(os.path.join(args.out, f"energy_counters_{args.tag}_kernels.csv"), kernels, KERNEL_FIELDS, rec)
    with open(os.path.join(args.out, f"energy_counters_{args.tag}.log"), "w") as f:
        f.write("\n".join(log) + "\n")
    print(
        f"{'variant':16s} {'dtype':5s} {'pass':7s} {'N':>6s} {'B·H':>4s} {'kern':>4s} {'DRAM GB':>8s} {'L2 GB':>8s} {'smem wf':>10s}"
    )
    for c in calls:
        dram = (c["dram__bytes_read.sum"] or 0) + (c["dram__bytes_write.sum"] or 0)
        l2 = 32 * (
            (c.get("lts__t_sectors_srcunit_tex_op_read.sum") or 0)
            + (c.get("lts__t_sectors_srcunit_tex_op_write.sum") or 0)
        )
        wf = c.get("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") or 0
        print(
            f"{c['variant']:16s} {c['dtype']:5s} {c['pass']:7s} {c['seq_len']:6d} {c['batch'] * c['heads']:4d} "
            f"{c['kernels']:4d} {dram / 1e9:8.3f} {l2 / 1e9:8.3f} {wf:10.3e}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
