"""Hardware counters from Nsight Compute, per kernel launch, next to the model's and the kernel's counts.

For each kernel, one ``ncu`` process profiles ``gpu_kernels.measure.profile_driver``, which makes one
timing-build launch per shape (three for naive). ncu runs with ``--clock-control none`` (the
card's clocks are left alone) and ``--cache-control all`` (caches flushed before each replay pass,
so inputs start in HBM). Recorded per launch and per kernel total (sum over the launches of one
shape):

* ncu: DRAM bytes read/written, L2 sectors read/written, L1 global load/store sectors, shared-memory
  load/store wavefronts, registers per thread, achieved occupancy, duration under the profiler;
* ``counted_*``: the counting build's own counters for the same launch (docs/COUNTING.md);
* ``simlib_*`` (kernel totals): simlib's prediction for the same tiling.

Read DRAM bytes with care: a working set that fits in the 60 MB L2 is served from L2 after the
first touch, so DRAM reads can fall far below the model's HBM reads (the ``fits_in_l2`` column
says when); and dirty lines still in L2 when the kernel ends are not counted as DRAM writes. The
L2 sector counts (32 B each) are the closer match to the model's "HBM" traffic in those cases.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time

from measurements.ncu_csv import parse_ncu_csv
from measurements.provenance import csv_text, provenance, write_measurement
from measurements.schemas import PROFILE
from simlib.physical.metrics import PROFILE_METRICS
from simlib.presets import DEFAULT_GPU

from ..counting import COUNT_KEYS
from ..device import l2_bytes
from ..kernels import KERNELS
from ..prediction import prediction
from .ncu import find_ncu

METRICS = list(PROFILE_METRICS)
SUMMABLE = [m for m in METRICS if m.endswith(".sum")]
KERNEL_REGEX = "regex:fa2_forward|matmul_t|softmax_t|fa2_tc_|naive_tc_|fa3_tc_"
#: Bytes per element of each kernel's Q, K, V, O (the tensor-core kernels run bf16).
ITEM = {"naive": 4, "tiled": 4, "fa2_tc": 2, "naive_tc": 2, "fa3_tc": 2}
#: The kernels that write L (fp32 per row) beside O.
WRITES_L = ("tiled", "fa2_tc", "fa3_tc")
FIELDS = list(PROFILE.columns)  # measurements.schemas: the one definition, the readers check it


def _launch_kind(name: str) -> str:
    for tc, kind in (
        ("fa2_tc_", "fa2_tc"),
        ("fa3_tc_", "fa3_tc"),
        ("naive_tc_scores", "scores"),
        ("naive_tc_softmax", "softmax"),
        ("naive_tc_pv", "pv"),
    ):
        if tc in name:
            return kind
    if "fa2_forward" in name:
        return "fa2"
    if "softmax_t" in name:
        return "softmax"
    if re.search(r"matmul_t\d+_bt", name):
        return "qk"
    if "matmul_t" in name:
        return "pv"
    return "?"


def _counted(kernel, batch, heads, n, d, causal=False):
    """Per-launch counters of the counting build for the same shape (on the GPU, not under ncu); a
    16-bit kernel in bf16."""
    from ..reference import random_qkv

    q, k, v = random_qkv(batch, heads, n, d)
    registered = KERNELS[kernel]
    extra = {"dtype": "bf16"} if registered.sixteen_bit else {}
    res = registered.run(q, k, v, count=True, **extra, **({"causal": True} if causal else {}))
    by_launch = getattr(res, "counts_by_launch", None)
    return by_launch if by_launch is not None else {registered.physical_launches[0]: res.counts}


def _ncu_command(ncu, kernel, shapes, batch, heads, manifest, base_units=True, metrics=METRICS):
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--cache-control",
        "all",
        "--csv",
        "--page",
        "details",
        "--metrics",
        ",".join(metrics),
        "--kernel-name",
        KERNEL_REGEX,
    ]
    if base_units:
        cmd += ["--print-units", "base"]
    cmd += [
        sys.executable,
        "-m",
        "gpu_kernels.measure.profile_driver",
        "--kernel",
        kernel,
        "--shapes",
        ",".join(shapes),
        "--batch",
        str(batch),
        "--heads",
        str(heads),
        "--manifest",
        manifest,
    ]
    return cmd


def run_profile(
    *,
    out_dir="data/measurements",
    tag=DEFAULT_GPU,
    seq_lens=(1024, 4096, 16384),
    head_dims=(64, 128),
    batch=1,
    heads=4,
    kernels=("naive", "tiled"),
    ncu=None,
    timeout_s=240.0,
    progress=True,
    shapes=None,
    extra_metrics=(),
    counted_build=True,
):
    """Profile `kernels` at seq_lens × head_dims (batch, heads), or at `shapes` (the driver's
    ``NxD[:bBhH][:causal]`` items) when given; `extra_metrics` are recorded beside PROFILE_METRICS;
    `counted_build=False` leaves out the counting build's rows (it compiles and runs every shape again)."""
    from tqdm import tqdm

    from .profile_driver import parse_shape

    ncu_path = find_ncu(ncu)
    log = {"ncu": ncu_path, "runs": []}
    if ncu_path is None:
        raise RuntimeError("ncu (Nsight Compute) not found on PATH or under /opt/nvidia")
    try:
        log["ncu_version"] = (
            subprocess.run([ncu_path, "--version"], capture_output=True, text=True, timeout=60)
            .stdout.strip()
            .splitlines()[-1]
        )
    except Exception as e:
        log["ncu_version"] = f"unknown ({e!r})"
    l2 = l2_bytes()

    env = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["NUMBA_ENABLE_CUDASIM"] = "0"

    shapes = list(shapes) if shapes else [f"{n}x{d}" for n in seq_lens for d in head_dims]
    for item in shapes:  # a bad item fails here, before ncu starts
        parse_shape(item, batch, heads)
    metrics = METRICS + [m for m in extra_metrics if m not in METRICS]
    rows = []
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for kernel in tqdm(list(kernels), disable=not progress, desc="profile", unit="kernel"):
            manifest = os.path.join(tmp, f"{kernel}.json")
            run = {"kernel": kernel}
            parsed, proc = [], None
            for base_units in (True, False):
                cmd = _ncu_command(ncu_path, kernel, shapes, batch, heads, manifest, base_units, metrics)
                run["command"] = " ".join(cmd)
                t0 = time.monotonic()
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
                except subprocess.TimeoutExpired as e:
                    run["error"] = f"ncu timed out after {timeout_s} s"
                    run["stderr_tail"] = (
                        (e.stderr or b"")[-2000:].decode(errors="replace")
                        if isinstance(e.stderr, bytes)
                        else str(e.stderr)[-2000:]
                    )
                    break
                run["seconds"] = round(time.monotonic() - t0, 1)
                run["returncode"] = proc.returncode
                parsed = parse_ncu_csv(proc.stdout)
                if parsed or "print-units" not in (proc.stderr + proc.stdout):
                    break
            if proc is not None:
                run["stderr_tail"] = proc.stderr[-3000:]
                run["stdout_head"] = proc.stdout[:1500]
            log["runs"].append(run)
            if not parsed or not os.path.exists(manifest):
                run.setdefault("error", "no ncu results parsed")
                continue
            with open(manifest) as f:
                expected = json.load(f)
            if len(expected) != len(parsed):
                run["error"] = f"{len(parsed)} ncu results for {len(expected)} launches"
                continue

            # Group the launches by shape, in order.
            per_shape = {}
            for exp, got in zip(expected, parsed):
                kind = _launch_kind(got["name"])
                if kind != exp["launch"]:
                    run["error"] = f"launch order mismatch: ncu {got['name']!r} vs expected {exp['launch']}"
                    break
                per_shape.setdefault(exp.get("case", (exp["seq_len"], exp["head_dim"])), []).append(
                    (exp, got)
                )
            if "error" in run:
                continue

            for items in per_shape.values():
                first = items[0][0]
                n, d, cb, ch = first["seq_len"], first["head_dim"], first["batch"], first["heads"]
                causal = bool(first["params"].get("causal", 0))
                params = first["params"]
                ptxt = ";".join(f"{k}={v}" for k, v in params.items())
                base = {
                    "kernel": kernel,
                    "batch": cb,
                    "heads": ch,
                    "seq_len": n,
                    "head_dim": d,
                    "params": ptxt,
                }
                bh, item = cb * ch, ITEM[kernel]
                inter = 2 * bh * n * n * item if kernel in ("naive", "naive_tc") else 0
                ws = bh * n * d * item * 4 + (bh * n * 4 if kernel in WRITES_L else 0) + inter
                note = (
                    "working set fits in L2: DRAM counts measure first touches, not re-reads"
                    if ws <= l2
                    else ""
                )
                try:
                    counted = _counted(kernel, cb, ch, n, d, causal) if counted_build else {}
                except Exception as e:  # keep the ncu numbers even if this fails
                    counted = {}
                    run.setdefault("counted_errors", []).append(f"N={n} d={d}: {e!r}")
                totals = {m: 0 for m in SUMMABLE}
                for exp, got in items:
                    launch = exp["launch"]
                    lnote = (
                        note if exp.get("output_finite", True) else (note + "; output not finite").strip("; ")
                    )
                    for metric, (value, unit) in got["metrics"].items():
                        rows.append(
                            {
                                **base,
                                "launch": launch,
                                "metric": metric,
                                "value": value,
                                "unit": unit,
                                "source": "ncu",
                                "note": lnote,
                            }
                        )
                        if metric in totals and value is not None and totals[metric] is not None:
                            totals[metric] += value
                        elif metric in totals:
                            totals[metric] = None
                    for key in COUNT_KEYS:
                        if launch in counted:
                            rows.append(
                                {
                                    **base,
                                    "launch": launch,
                                    "metric": f"counted_{key}",
                                    "value": counted[launch][key],
                                    "unit": "byte",
                                    "source": "kernel counters",
                                    "note": "",
                                }
                            )
                for metric, value in totals.items():
                    unit = next(
                        (got["metrics"][metric][1] for _, got in items if metric in got["metrics"]), ""
                    )
                    rows.append(
                        {
                            **base,
                            "launch": "total",
                            "metric": metric,
                            "value": value,
                            "unit": unit,
                            "source": "ncu",
                            "note": note,
                        }
                    )
                if counted:
                    for key in COUNT_KEYS:
                        rows.append(
                            {
                                **base,
                                "launch": "total",
                                "metric": f"counted_{key}",
                                "value": sum(c[key] for c in counted.values()),
                                "unit": "byte",
                                "source": "kernel counters",
                                "note": "",
                            }
                        )
                try:
                    pred = prediction(kernel, cb, ch, n, d, **params)
                    for key in COUNT_KEYS:
                        rows.append(
                            {
                                **base,
                                "launch": "total",
                                "metric": f"simlib_{key}",
                                "value": pred[key],
                                "unit": "byte",
                                "source": "simlib",
                                "note": "",
                            }
                        )
                except Exception as e:
                    run.setdefault("simlib_errors", []).append(f"N={n} d={d}: {e!r}")
                rows.append(
                    {
                        **base,
                        "launch": "total",
                        "metric": "working_set_bytes",
                        "value": ws,
                        "unit": "byte",
                        "source": "computed",
                        "note": f"L2 = {l2} bytes",
                    }
                )

    log["elapsed_s"] = round(time.monotonic() - t_start, 1)
    csv_path = os.path.join(out_dir, f"profile_{tag}.csv")
    meta = {
        "what": "Nsight Compute counters per kernel launch (timing build), one launch per shape",
        "ncu_options": "--clock-control none --cache-control all --csv --page details --print-units base",
        "metrics": metrics,
        "batch": batch,
        "heads": heads,
        "seq_lens": list(seq_lens),
        "head_dims": list(head_dims),
        "shapes": shapes,
        "counted_build": counted_build,
        "kernels": list(kernels),
        "l2_bytes": l2,
        **log,
    }
    if not rows:
        errors = "; ".join(f"{r['kernel']}: {r.get('error', '?')}" for r in log["runs"])
        raise RuntimeError(f"no profile results ({errors})")
    write_measurement(csv_path, csv_text(rows, FIELDS), provenance(meta))
    return csv_path
