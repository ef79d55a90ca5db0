"""Do naive_tc's partial-sector stores of S make L2 fill sectors from DRAM? One ncu run (device).

Usage on the device (about a minute):

    python3 -m benchmarks.naive_tc_partial_sectors --out $OUT [--timeout-s 200]

The scores kernel stores S as 2-byte values: each 32-byte sector is written by four 8-byte pieces
from different store instructions. At N = 16384, d = 64, B·H = 4 its DRAM reads are 66.2 MB while
its L2 read misses are 33.7 MB (naive_tc_diag_h200.csv): about 32 MB (1.0 M sectors, 1.5 % of S's
67 M sectors) is read from DRAM by no L2 read miss. The hypothesis (helper G, run
g-tc-leftovers-20261201): a sector of S that leaves L2 before all four pieces arrived is filled from
DRAM to merge. Prediction, written before this run: L2's fills from device memory × 32 B cover
dram__bytes_read (66 MB) and exceed the read misses by about 1.0 M sectors at N = 16384, and by about
none at N = 4096 (where the read misses already cover the DRAM reads); the softmax and pv launches,
whose stores are whole sectors, show no such excess. Refuted if the fills equal the read misses while
DRAM reads stay 2x higher (then the extra reads are not L2 fills).

Writes under --out: naive_tc_partial_sectors_h200.csv (one row per launch, shape and metric, + sidecar)
and ncu_lts_metrics_h200.txt (the lts__/dram__ names this ncu lists, + sidecar).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import time

#: Counters asked for; those this ncu does not list are dropped (and named in the sidecar). Names
#: this ncu lists that match DISCOVER are added.
CANDIDATES = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__sectors_read.sum",
    "dram__sectors_write.sum",
    "lts__d_sectors_fill_device.sum",
    "lts__d_sectors_fill_sysmem.sum",
    "lts__t_sectors_op_read_lookup_miss.sum",
    "lts__t_sectors_op_write_lookup_miss.sum",
    "lts__t_sectors_op_write_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_write_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum",
    "lts__t_requests_srcunit_tex_op_write.sum",
    "lts__t_sectors_lookup_miss.sum",
    "lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum",
    "gpu__time_duration.sum",
]
DISCOVER = re.compile(r"^lts__(d_sectors_fill\w*|\w*partial\w*|\w*_fill\w*)$")
MAX_METRICS = 30
SHAPES = "4096x64,16384x64"


def listed(ncu):
    """The lts__, dram__ and fbpa__ base names `ncu --query-metrics` lists (empty if it fails)."""
    try:
        text = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    except Exception:
        return []
    return sorted(set(re.findall(r"^\s*((?:lts|dram|fbpa)__[a-z0-9_]+)", text, re.M)))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--timeout-s", type=float, default=200.0)
    a = p.parse_args(argv)
    from benchmarks.naive_tc_diagnostics import FIELDS, profile
    from gpu_kernels.device import silence_performance_warning
    from gpu_kernels.measure.ncu import find_ncu
    from measurements.provenance import check_output_dir, csv_text, provenance, write_measurement

    check_output_dir(a.out)
    silence_performance_warning()
    t0 = time.monotonic()
    meta = {"what": "naive_tc partial-sector stores: L2 fill and write-miss counters (see the script)"}
    ncu = find_ncu()
    names = listed(ncu)
    write_measurement(
        os.path.join(a.out, "ncu_lts_metrics_h200.txt"), "\n".join(names) + "\n", provenance(meta)
    )
    print(
        f"{len(names)} lts/dram/fbpa names; fill/partial: {[n for n in names if DISCOVER.match(n)]}",
        flush=True,
    )
    metrics = [m for m in CANDIDATES if not names or m.split(".")[0] in names]
    metrics += [n + ".sum" for n in names if DISCOVER.match(n) and n + ".sum" not in metrics]
    metrics = metrics[:MAX_METRICS]
    dropped = [m for m in CANDIDATES if m not in metrics]
    print(f"metrics: {metrics}; dropped: {dropped}", flush=True)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    try:
        got = profile(ncu, metrics, 1, 4, SHAPES, a.timeout_s - (time.monotonic() - t0), env)
    except RuntimeError as e:  # a discovered name ncu cannot collect: the listed candidates alone
        print(f"retrying without the discovered names: {e}", flush=True)
        metrics = [m for m in metrics if m in CANDIDATES]
        got = profile(ncu, metrics, 1, 4, SHAPES, a.timeout_s - (time.monotonic() - t0), env)
    rows = []
    for exp, values in got:
        params = ";".join(f"{k}={v}" for k, v in exp["params"].items())
        for metric, (value, unit) in values.items():
            rows.append({**{k: exp[k] for k in FIELDS[:6]}, "params": params, "metric": metric,
                         "value": value, "unit": unit})  # fmt: skip
            print(exp["launch"], exp["seq_len"], exp["head_dim"], metric, value, flush=True)
    write_measurement(
        os.path.join(a.out, "naive_tc_partial_sectors_h200.csv"),
        csv_text(rows, FIELDS),
        provenance({**meta, "metrics": metrics, "dropped_metrics": dropped, "batch": 1, "heads": 4, "shapes": SHAPES}),
    )  # fmt: skip
    print(f"done in {time.monotonic() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
