"""Why Nsight Compute disagrees with the naive_tc model: SASS counts and extra counters, one run.

Usage on the device (about 2 minutes):

    python3 -m benchmarks.naive_tc_diagnostics --out $OUT [--timeout-s 240]

The three misses of data/measurements/current/model_vs_ncu_h200_tc.csv and what would explain them
(the predictions, written before the run):

1. scores, DRAM reads 1.1-3.9x the model's Q + K: K (and Q) tiles re-read by later rows of blocks
   that miss in L2 while 128 MiB-2 GiB of S streams through it. Then L2 read misses from L1
   (lts__t_sectors_srcunit_tex_op_read_lookup_miss) × 32 B ≈ dram__bytes_read, and the misses
   grow with the S stream, not with d.
2. scores, shared-load wavefronts 14-22 % above the ldmatrix count: the SASS has exactly 20
   (d = 64) / 40 (d = 128) LDSM per warp and the extra wavefronts show up as
   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld although the swizzled addresses are
   conflict-free: data-bank contention with other traffic of the SM (this kernel's 2-byte STG of S
   overlap the ldmatrix of other warps and blocks; fa2_tc and pv store only at the end). A one-block-
   per-SM shape (B·H = 1, N = 512: 64 blocks) should show fewer extra wavefronts.
3. softmax, model/ncu = 1.93-2.00 on shared loads: ptxas pairs the adjacent warp partials
   red_max[i], red_max[i + 1] into one LDS.64 (one broadcast wavefront for two partials); the SASS
   shows t/32/2 LDS.64 per reduction, and smsp__sass_inst_executed_op_shared_ld = half the PTX's
   ld.shared.f32.

Writes under --out: naive_tc_diag_h200.csv (one row per launch, shape and metric, + sidecar),
naive_tc_sass_h200.json (per-kernel SASS opcode counts, + sidecar), the SASS texts, and, if the
profiler can, ncu's per-instruction source counters of one scores launch (naive_tc_source_h200.csv).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time

#: Counters asked for; those this ncu does not list are dropped (and named in the sidecar).
CANDIDATES = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum",
    "lts__t_sectors_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
    "smsp__inst_executed_op_ldsm.sum",
    "smsp__sass_inst_executed_op_ldsm.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "launch__registers_per_thread",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_warps",
    "launch__waves_per_multiprocessor",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "gpu__time_duration.sum",
]
#: Used if the filtered list fails: names earlier runs of this project read on this H200.
FALLBACK = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed.sum",
    "launch__registers_per_thread",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_registers",
]
#: (batch, heads, shapes): the profile's shapes, then few blocks per SM (N = 512: 64 scores blocks).
GROUPS = [
    (1, 4, "4096x64,4096x128,16384x64,16384x128"),
    (1, 1, "512x64,1024x64,2048x64"),
]
FIELDS = ["kernel", "launch", "batch", "heads", "seq_len", "head_dim", "params", "metric", "value", "unit"]
OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


def available(ncu, wanted):
    """The metrics of `wanted` whose base name `ncu --query-metrics` lists (all of them if the
    query fails), and the dropped ones."""
    try:
        text = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    except Exception:
        return list(wanted), []
    if "dram__bytes" not in text:
        return list(wanted), []
    names = set(re.findall(r"^\s*([a-z0-9]+__[a-z0-9_]+)", text, re.M))
    keep = [m for m in wanted if m.split(".")[0] in names]
    return keep, [m for m in wanted if m not in keep]


def profile(ncu, metrics, batch, heads, shapes, timeout_s, env):
    """[(manifest entry, {metric: (value, unit)})] for one profile_driver run of naive_tc."""
    from measurements.ncu_csv import parse_ncu_csv

    with tempfile.TemporaryDirectory() as tmp:
        manifest = os.path.join(tmp, "launches.json")
        cmd = [ncu, "--clock-control", "none", "--cache-control", "all", "--csv", "--page", "details",
               "--print-units", "base", "--metrics", ",".join(metrics), "--kernel-name", "regex:naive_tc_",
               sys.executable, "-m", "gpu_kernels.measure.profile_driver", "--kernel", "naive_tc",
               "--shapes", shapes, "--batch", str(batch), "--heads", str(heads), "--manifest", manifest]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
        parsed = parse_ncu_csv(proc.stdout)
        if not parsed or not os.path.exists(manifest):
            raise RuntimeError(f"ncu gave no results (rc {proc.returncode}): {proc.stderr[-600:]}")
        with open(manifest) as f:
            expected = json.load(f)
    if len(expected) != len(parsed):
        raise RuntimeError(f"{len(parsed)} ncu results for {len(expected)} launches")
    return list(zip(expected, (p["metrics"] for p in parsed)))


def source_counters(ncu, env, timeout_s):
    """ncu's per-SASS-instruction counters (SourceCounters) of the first scores launch at B·H = 4,
    N = 4096, d = 64, as CSV text; None if this ncu cannot."""
    with tempfile.TemporaryDirectory() as tmp:
        rep = os.path.join(tmp, "scores")
        collect = [ncu, "--clock-control", "none", "--cache-control", "all", "--section", "SourceCounters",
                   "--kernel-name", "regex:naive_tc_scores", "--launch-count", "1", "-o", rep,
                   sys.executable, "-m", "gpu_kernels.measure.profile_driver", "--kernel", "naive_tc",
                   "--shapes", "4096x64", "--batch", "1", "--heads", "4",
                   "--manifest", os.path.join(tmp, "m.json")]  # fmt: skip
        try:
            subprocess.run(collect, capture_output=True, text=True, timeout=timeout_s, env=env, check=True)
            page = subprocess.run(
                [ncu, "-i", rep + ".ncu-rep", "--page", "source", "--csv", "--print-source", "sass"],
                capture_output=True, text=True, timeout=120, check=True,
            ).stdout  # fmt: skip
        except Exception as e:
            print(f"source counters unavailable: {type(e).__name__}: {str(e)[:300]}", flush=True)
            return None
    return page


def sass_counts(out):
    """Compile naive_tc's timing builds (bf16) at the profiled configurations, dump their SASS, and
    count the memory opcodes of each."""
    import numpy as np
    from numba import cuda

    from gpu_kernels.kernels.naive_tc import NaiveTcConfig, pv_kernel, scores_kernel, softmax_kernel

    result = {}
    dummy = cuda.to_device(np.zeros(4, dtype=np.int64))
    for d in (64, 128):
        cfg = NaiveTcConfig(d).check()
        n = 128
        q = cuda.to_device(np.zeros(n * d, np.uint16))
        s = cuda.to_device(np.zeros(n * n, np.uint16))
        o = cuda.to_device(np.zeros(n * d, np.uint16))
        k = scores_kernel(cfg, "bf16", False, False)
        k[(n // cfg.block_cols, n // cfg.block_rows, 1), cfg.threads](q, q, s, dummy, n, n, n, 1)
        p = pv_kernel(cfg, "bf16", False, False)
        p[(n // cfg.block_rows, 1), cfg.threads](s, q, o, dummy, n, n, n, 1)
        result[f"scores_d{d}"], result[f"pv_d{d}"] = k, p
    for t in (256, 1024):
        k = softmax_kernel(t, 16, "bf16", False, False, False)
        s = cuda.to_device(np.zeros(16 * t, np.uint16))
        k[(1, 1), t](s, s, dummy, 1, 16 * t, 16 * t)
        result[f"softmax_t{t}"] = k
    cuda.synchronize()
    counts = {}
    for name, kern in result.items():
        text = kern.inspect_sass()
        if isinstance(text, dict):
            text = "\n".join(text.values())
        with open(os.path.join(out, f"sass_naive_tc_{name}.txt"), "w") as f:
            f.write(text)
        ops = collections.Counter(OPCODE.findall(text))
        counts[name] = {
            op: c for op, c in sorted(ops.items()) if op.split(".")[0] in ("LDSM", "LDS", "STS", "LDGSTS", "STG", "LDG", "LDL", "STL", "BAR", "HMMA")
        }  # fmt: skip
        print(name, counts[name], flush=True)
    return counts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--timeout-s", type=float, default=240.0)
    a = p.parse_args(argv)
    from gpu_kernels.device import silence_performance_warning
    from gpu_kernels.measure.ncu import find_ncu
    from measurements.provenance import check_output_dir, csv_text, provenance, write_measurement

    check_output_dir(a.out)
    silence_performance_warning()
    t0 = time.monotonic()
    meta = {"what": "naive_tc diagnostics: SASS opcode counts and extra ncu counters (see the script)"}
    try:
        counts = sass_counts(a.out)
        write_measurement(
            os.path.join(a.out, "naive_tc_sass_h200.json"), json.dumps(counts, indent=1), provenance(meta)
        )
    except Exception as e:
        print(f"SASS step failed: {type(e).__name__}: {str(e)[:400]}", flush=True)
    ncu = find_ncu()
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    metrics, dropped = available(ncu, CANDIDATES)
    print(f"metrics: {len(metrics)} kept, dropped: {dropped}", flush=True)
    rows = []
    for batch, heads, shapes in GROUPS:
        left = a.timeout_s - (time.monotonic() - t0)
        try:
            try:
                got = profile(ncu, metrics, batch, heads, shapes, left, env)
                used = metrics
            except RuntimeError as e:
                print(f"retrying with the fallback metrics: {e}", flush=True)
                got = profile(ncu, FALLBACK, batch, heads, shapes, left, env)
                used = FALLBACK
        except Exception as e:
            print(f"ncu B={batch} H={heads} failed: {type(e).__name__}: {str(e)[:400]}", flush=True)
            continue
        for exp, values in got:
            params = ";".join(f"{k}={v}" for k, v in exp["params"].items())
            for metric, (value, unit) in values.items():
                rows.append({**{k: exp[k] for k in FIELDS[:6]}, "params": params, "metric": metric,
                             "value": value, "unit": unit})  # fmt: skip
        write_measurement(
            os.path.join(a.out, "naive_tc_diag_h200.csv"),
            csv_text(rows, FIELDS),
            provenance({**meta, "metrics": used, "dropped_metrics": dropped, "groups": GROUPS}),
        )
        print(f"ncu B={batch} H={heads} {shapes}: {len(got)} launches", flush=True)
    page = source_counters(ncu, env, max(30.0, a.timeout_s - (time.monotonic() - t0)))
    if page:
        write_measurement(
            os.path.join(a.out, "naive_tc_source_h200.csv"),
            page,
            provenance({**meta, "what": "ncu SourceCounters, --page source --print-source sass, scores N=4096 d=64 B·H=4"}),
        )  # fmt: skip
    for r in rows:  # the short table the reply carries
        if r["metric"] in ("dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
                           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                           "smsp__sass_inst_executed_op_ldsm.sum", "smsp__sass_inst_executed_op_shared_ld.sum"):  # fmt: skip
            print(r["launch"], r["heads"], r["seq_len"], r["head_dim"], r["metric"], r["value"], flush=True)
    print(f"diagnostics done in {time.monotonic() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
