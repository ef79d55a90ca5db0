"""Calibrate the cost model on committed measurements and freeze it in data/cost/h200_fit.json.

``python -m simlib.cost.fit`` (``--check``: exit 1 if the committed file differs). Two steps:

1. **Instructions** per unit of each launch class's basis, from Nsight Compute's counts of one call
   of every kernel of the energy run (``energy_counters_h200*_kernels.csv``, d = 64, N = 1K, 4K, 16K):
   for fused kernels the instructions that scale with d (FFMA, shared-memory, tensor-pipe and
   global-load instructions: the head-dimension loops) per 32 scores per 64 of d, the rest per 32
   scores; matmuls all per 32 scores per 64 of d; row softmaxes per score and per warp-row (least
   squares over N); thread FFMAs outside the matmuls per score. Classes the run did not profile at
   d = 128 take the d = 64 class of the same kernel source (``from`` in the file).
2. **eta**, the fraction of its binding roof each class reached: the geometric mean over its
   committed timings of (predicted roof time × q) / (measured time − launch overhead), where the
   measured time is Nsight Compute's duration of that kernel (the energy run's profile; the fp16
   eager GEMMs and softmax of the Figure 2 run), the CUDA-event median of each launch of the eager
   bf16 attention timed alone (eager_bf16_h200.csv), or for a single-launch kernel whose mapping at
   d = 128 nobody profiled, its CUDA-event median at d = 128 (bench_h200.csv, compare_h200.csv,
   tc_side_by_side_h200.csv; non-causal rows only). FlashAttention-type classes fit eta together
   with t_block, a time per generation of resident blocks, on Nsight Compute's durations and the
   side-by-side's non-causal medians (N = 512–16384); naive_tc's causal softmax build, which no
   profile saw, takes its eta from the causal side-by-side's medians less the other two launches.

Nothing is fitted per shape; the committed shapes not used here (causal, the wall-clock and NVML
rows) test the fit, and so do the shapes measured after the freeze.
"""

from __future__ import annotations

import argparse
import csv
import functools
import hashlib
import json
import math
import statistics
import sys
from typing import Any

from ..energy import MEASUREMENTS
from ..measured_files import csv_rows
from ..workload import Workload
from .calibration import FIT_FILE, Calibration
from .common import resident_blocks, workload_of_row
from .implementations import IMPLEMENTATIONS
from .library import _elementwise, _gemm
from .model import launch_cost
from .rates import load_cost_hardware
from .work import Launch

NCU_FILES = (
    "energy_counters_h200_kernels.csv",
    "energy_counters_h200_16k_other_kernels.csv",
    "energy_counters_h200_16k_torch_kernels.csv",
)
FIGURE2_FILE = "figure2_h200_kernels.csv"
#: The eager bf16 attention of the unit-calibration run (the run of cost_units_h200.csv): each launch
#: timed alone.
EAGER_FILE = "eager_bf16_h200.csv"
WALL_FILES = ("bench_h200.csv", "compare_h200.csv", "tc_side_by_side_h200.csv")
INST = "smsp__inst_executed.sum"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
D_SCALING = (
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_ldsm.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
    "smsp__inst_executed_pipe_tensor.sum",
)
SHARED_INST = D_SCALING[:3]
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
DURATION = "gpu__time_duration.sum"
#: Classes whose instructions all scale with d (every instruction sits in the k loop of a matmul).
ALL_D = ("numba_naive.qk", "numba_naive.pv", "sgemm.qk", "sgemm.qk_cupy", "sgemm.pv")
#: Classes at d = 128 that no Nsight Compute run profiled: instructions from the d = 64 class of the
#: same kernel source, eta from CUDA-event medians (file, implementation) at d = 128.
D128 = {
    "fa2_tc.d128.w4bc64": ("fa2_tc.d64.w4bc64", "fa2_tc"),
    "numba_tiled.br24bc24": ("numba_tiled.br48bc48", "numba_tiled"),
    "numba_fast.d128": ("numba_fast.d64", "numba_fast"),
    "torch_flash.d128.br128bc64": ("torch_flash.d64.br128bc128", "torch_flash"),
}


def _num(x) -> float:
    return float(x) if x not in (None, "") else 0.0


def _ncu_groups() -> dict[tuple[str, str, int, int], list[dict]]:
    out: dict[tuple[str, str, int, int], list[dict]] = {}
    for name in NCU_FILES:
        for r in csv_rows(MEASUREMENTS / name):
            if r["pass"] != "fwd" or r["variant"] not in IMPLEMENTATIONS:
                continue
            key = (r["variant"], r["dtype"], int(r["seq_len"]), int(r["batch"]) * int(r["heads"]))
            out.setdefault(key, []).append({**r, "file": name})
    return out


def _assign(variant: str, kernels: list[dict]) -> dict[str, list[dict]]:
    """ncu's kernels of one call, in launch order, by the model's launch names."""
    out: dict[str, list[dict]] = {}

    def put(name, k):
        out.setdefault(name, []).append(k)

    names = [k["kernel"] for k in kernels]
    if variant == "numba_naive":
        for k, n in zip(kernels, names):
            put("qk" if "matmul_t16_bt" in n else "softmax" if "softmax_t" in n else "pv", k)
    elif variant == "naive_tc":
        for k, n in zip(kernels, names):
            put(next(x for x in ("scores", "softmax", "pv") if f"naive_tc_{x}" in n), k)
    elif variant in ("numba_tiled", "numba_fast", "fa2_tc", "torch_flash"):
        launch = {
            "numba_tiled": "fa2",
            "numba_fast": "fa2_fast",
            "fa2_tc": "fa2_tc",
            "torch_flash": "flash_fwd",
        }[variant]
        for k in kernels:
            put(launch, k)
    elif variant == "torch_math":
        copies = [k for k, n in zip(kernels, names) if "direct_copy" in n]
        for i, k in enumerate(copies):
            put(("upcast_q", "upcast_k", "upcast_v")[i], k)
        scales = [k for k, n in zip(kernels, names) if "AUnary" in n]
        for i, k in enumerate(scales):
            put(("scale_q", "scale_k")[i], k)
        casts = [k for k, n in zip(kernels, names) if "vectorized_elementwise_kernel<8, native::bfloat" in n]
        for k in casts[:-1]:
            put("downcast_p", k)
        if casts:
            put("downcast_o", casts[-1])
        for k, n in zip(kernels, names):
            if "gemm" in n:
                put("qk_sgemm" if "_tn_" in n else "pv_sgemm", k)
            elif "SoftMax" in n or "softmax_warp" in n:
                put("softmax", k)
            elif "vectorized_elementwise_kernel<4, native::<unnamed>" in n:
                put("isneginf", k)
            elif "reduce_kernel" in n:
                put("all_rows", k)
            elif "elementwise_kernel<128, 2" in n:
                put("where", k)
    elif variant == "cupy_naive":
        gemms = iter(("qk_sgemm", "pv_sgemm"))
        reduces = iter(("row_max", "row_sum"))
        for k, n in zip(kernels, names):
            if "gemm" in n:
                put(next(gemms), k)
            elif "Reduce" in n or "cupy_cub" in n:
                put(next(reduces), k)
            else:
                op = next(x for x in ("copy", "multiply", "subtract", "exp", "divide") if x in n)
                put({"copy": "copy_k", "multiply": "scale"}.get(op, op), k)
    return out


def _launches(variant: str, dtype: str, n: int, bh: int, cal: Calibration, causal: bool = False, d: int = 64):
    w = Workload(n, d, batch=bh // 16, heads=16, dtype=dtype, causal=causal)
    return IMPLEMENTATIONS[variant].launches(w, cal)


def observations() -> list[dict]:
    """One row per (ncu call, model launch): the launch built at that shape and ncu's summed counts."""
    empty = Calibration({})
    rows = []
    for (variant, dtype, n, bh), kernels in sorted(_ncu_groups().items()):
        if not IMPLEMENTATIONS[variant].modelled:
            continue
        assigned = _assign(variant, kernels)
        for launch in _launches(variant, dtype, n, bh, empty):
            ks = assigned.get(launch.name)
            if not ks:
                continue
            summed = {m: sum(_num(k[m]) for k in ks) for m in (INST, FFMA, WAVEFRONTS, DURATION, *D_SCALING)}
            rows.append(
                {"variant": variant, "dtype": dtype, "seq_len": n, "bh": bh, "launch": launch, "ncu": summed}
            )
    return rows


def _least_squares(xs: list[list[float]], ys: list[float]) -> list[float]:
    """Two-unknown (or one) least squares by the normal equations."""
    if len(xs[0]) == 1:
        return [sum(x[0] * y for x, y in zip(xs, ys)) / sum(x[0] ** 2 for x in xs)]
    a = sum(x[0] ** 2 for x in xs)
    b = sum(x[0] * x[1] for x in xs)
    c = sum(x[1] ** 2 for x in xs)
    p = sum(x[0] * y for x, y in zip(xs, ys))
    q = sum(x[1] * y for x, y in zip(xs, ys))
    det = a * c - b * b
    return [(c * p - b * q) / det, (a * q - b * p) / det]


def fit_instructions(obs: list[dict]) -> dict[str, dict[str, Any]]:
    by_class: dict[str, list[dict]] = {}
    for o in obs:
        by_class.setdefault(o["launch"].klass, []).append(o)
    classes: dict[str, dict[str, Any]] = {}
    for klass, group in sorted(by_class.items()):
        b0 = group[0]["launch"].detail["basis"]
        keys = sorted(b0)
        c: dict[str, float] = {}
        if keys == ["el", "el_d"] and klass not in ALL_D:
            dpart = [sum(o["ncu"][m] for m in D_SCALING) + o["ncu"][FFMA] / 32 for o in group]
            c["el_d"] = statistics.fmean(
                p / o["launch"].detail["basis"]["el_d"] for p, o in zip(dpart, group)
            )
            c["el"] = statistics.fmean(
                (o["ncu"][INST] - p) / o["launch"].detail["basis"]["el"] for p, o in zip(dpart, group)
            )
        elif (
            keys == ["el", "row_warps"]
            and len(
                {
                    round(o["launch"].detail["basis"]["el"] / o["launch"].detail["basis"]["row_warps"], 6)
                    for o in group
                }
            )
            > 1
        ):
            c.update(
                zip(
                    keys,
                    _least_squares(
                        [[o["launch"].detail["basis"][k] for k in keys] for o in group],
                        [o["ncu"][INST] for o in group],
                    ),
                )
            )
        else:
            key = "el_d" if "el_d" in keys else "el"
            c[key] = statistics.fmean(o["ncu"][INST] / o["launch"].detail["basis"][key] for o in group)
        elements = [
            o["launch"].detail["basis"].get("el", o["launch"].detail["basis"].get("el_d", 0)) * 32
            for o in group
        ]
        model_ffma = [o["launch"].work.ffma for o in group]  # the matmuls' FFMAs (the builder's own)
        extra = [(o["ncu"][FFMA] - m) / e for o, m, e in zip(group, model_ffma, elements)]
        if not group[0]["launch"].work.gemm_flops and max(abs(x) for x in extra) > 1e-3:
            c["ffma_el"] = statistics.fmean(extra)
        if klass.startswith(("numba_fast", "torch_flash")):
            for what, metric in ((":wavefronts", (WAVEFRONTS,)), (":shared_inst", SHARED_INST)):
                classes[klass + what] = {
                    "el_d": statistics.fmean(
                        sum(o["ncu"][m] for m in metric) / o["launch"].detail["basis"]["el_d"] for o in group
                    )
                }
        c["n_ncu"] = len(group)
        classes[klass] = c
    # the spilled numba softmax: its per-row cost as the unspilled one's, the rest per score
    if "numba_naive.softmax_spilled" in classes and "row_warps" in classes.get("numba_naive.softmax", {}):
        spilled = [o for o in obs if o["launch"].klass == "numba_naive.softmax_spilled"]
        a = classes["numba_naive.softmax"]["row_warps"]
        classes["numba_naive.softmax_spilled"]["row_warps"] = a
        classes["numba_naive.softmax_spilled"]["el"] = statistics.fmean(
            (o["ncu"][INST] - a * o["launch"].detail["basis"]["row_warps"])
            / o["launch"].detail["basis"]["el"]
            for o in spilled
        )
    if (
        "torch_softmax.block" in classes
    ):  # the eager softmax to fp32 (no profile): the block softmax's instructions
        block = {k: v for k, v in classes["torch_softmax.block"].items() if k in ("el", "ffma_el")}
        classes["torch_softmax_to_fp32"] = {**block, "from": "torch_softmax.block"}
        # cunn_SoftMaxForwardSmem (N = 9217–12255 in fp32), never profiled: the global-memory block kernel's
        classes.setdefault("torch_softmax.smem", {**block, "from": "torch_softmax.block"})
    for klass, (source, _) in D128.items():
        if source in classes:
            for suffix in ("", ":wavefronts", ":shared_inst"):
                if source + suffix in classes:
                    classes[klass + suffix] = {**classes[source + suffix], "from": source + suffix}
                    classes[klass + suffix].pop("n_ncu", None)
    return classes


def _figure2_observations(cal: Calibration) -> list[tuple[Launch, float]]:
    """(launch, ncu seconds) for the Figure 2 run's fp16 eager GEMMs and softmax (no dropout)."""
    rows = []
    kernels = [
        r
        for r in csv_rows(MEASUREMENTS / FIGURE2_FILE)
        if r["variant"] == "standard" and float(r["dropout_p"]) == 0.0
    ]
    b, h, n, d = 64, 16, 1024, 64  # data/papers.json's Figure 2 configuration
    el = float(b * h * n * n)
    flops = 2.0 * el * d
    forward = [k for k in kernels if int(k["index"]) <= 8]
    gemms = [k for k in forward if "nvjet" in k["kernel"] or "gemm" in k["kernel"]]
    soft = [k for k in forward if "softmax_warp_forward" in k["kernel"]]
    if len(gemms) >= 2:
        for k, klass, name in ((gemms[0], "cublas16.qk", "qk_gemm"), (gemms[1], "cublas16.pv", "pv_gemm")):
            dram = _num(k["dram_read_bytes"]) + _num(k["dram_write_bytes"])
            rows.append(
                (_gemm(name, klass, "gemm16", flops, dram, d, el, cal), _num(k["ncu_duration_ns"]) * 1e-9)
            )
    for k in soft:
        rows.append(
            (
                _elementwise("softmax", "torch_softmax.warp", 2 * el, 2 * el, el, cal, mufu=el),
                _num(k["ncu_duration_ns"]) * 1e-9,
            )
        )
    return rows


def _eager_observations(cal: Calibration) -> list[tuple[Launch, float]]:
    """(launch, CUDA-event median seconds) of each launch of the eager bf16 attention, timed alone."""
    path = MEASUREMENTS / EAGER_FILE
    if not path.is_file():
        return []
    rows = []
    for r in csv_rows(path):
        impl, _, name = r["variant"].partition(":")
        if not name or r["status"] != "ok":
            continue
        w = workload_of_row(r, causal=False)
        launch = next(x for x in IMPLEMENTATIONS["eager_bf16"].launches(w, cal) if x.name == name)
        rows.append((launch, float(r["ms_per_call"]) / 1e3))
    return rows


def fit_eager_softmax(classes: dict[str, dict[str, Any]]) -> None:
    """Instructions of the eager softmax to fp32 (no profile of it exists): from the eager chain's NVML
    joules, less the static power over its measured time and the other launches' predicted dynamic
    energy, less the softmax's own DRAM and MUFU energy, at the other-instruction price; per 32
    scores, the mean over the three shapes."""
    from .model import energy_terms

    path = MEASUREMENTS / EAGER_FILE
    if not path.is_file():
        return
    hw = load_cost_hardware("h200")
    cal = Calibration(classes)
    values = []
    for r in csv_rows(path):
        if r["variant"] != "eager_bf16" or r["status"] != "ok":
            continue
        w = workload_of_row(r, causal=False)
        launches = IMPLEMENTATIONS["eager_bf16"].launches(w, cal)
        seconds = float(r["ms_per_call"]) / 1e3
        rest = float(r["joules_per_call"]) - hw.static_w * seconds
        for x in launches:
            terms = energy_terms(x, hw, 0.0)
            if x.name == "softmax":
                rest -= sum(v for k, v in terms.items() if k != "other_instructions")
                basis = x.detail["basis"]["el"]
            else:
                rest -= sum(terms.values())
        values.append(rest / (hw.price["other_instruction"] * 1e-12) / basis)
    entry = classes["torch_softmax_to_fp32"]
    entry.update(el=statistics.fmean(values), el_from="eager_bf16_h200.csv NVML joules (no profile)")
    entry.pop("from", None)
    for kind in SOFTMAX_KERNELS:  # one class per fp32 kernel (round 6), the instructions shared
        classes[f"torch_softmax_to_fp32.{kind}"] = {
            "el": entry["el"],
            "ffma_el": entry.get("ffma_el", 0.0),
            "from": "torch_softmax_to_fp32",
        }


#: host_softmax's fp32 forward kernels (softmax_trips.forward_kernel).
SOFTMAX_KERNELS = ("warp", "reg", "smem", "block")
#: Kernels no committed timing saw, and the class whose eta each takes: cunn_SoftMaxForwardSmem runs
#: the global-memory kernel's three passes, over shared memory.
UNTIMED_SOFTMAX = {
    "torch_softmax.smem": "torch_softmax.block",
    "torch_softmax_to_fp32.smem": "torch_softmax_to_fp32.block",
}


def fit_untimed_softmax(classes: dict[str, dict[str, Any]]) -> None:
    """eta of the softmax kernels no committed timing covers: their sibling's (UNTIMED_SOFTMAX)."""
    for klass, source in UNTIMED_SOFTMAX.items():
        if klass in classes and "eta" not in classes[klass] and "eta" in classes.get(source, {}):
            classes[klass].update(eta=classes[source]["eta"], eta_from=source)


def _wall_rows(klass: str, variant: str) -> list[tuple[Workload, float]]:
    """(workload, CUDA-event median seconds) of `variant` at d = 128, non-causal, from WALL_FILES."""
    out = []
    for name in WALL_FILES:
        path = MEASUREMENTS / name
        for r in csv_rows(path):
            v = str(r.get("variant") or r.get("kernel"))
            v = {"naive": "numba_naive", "tiled": "numba_tiled"}.get(v, v)
            if v != variant or int(r["head_dim"]) != 128 or r.get("causal", "False") == "True":
                continue
            if "metric" in r:
                if r["metric"] not in ("ms", "time_ms_median"):
                    continue
                ms, dtype = float(r["value"]), "fp32"
            else:
                config = r.get("config") or ""
                if not r.get("median_ms") or r.get("ok") != "True" or (config and "default" not in config):
                    continue
                ms, dtype = float(r["median_ms"]), r["dtype"]
            w = Workload(int(r["seq_len"]), 128, batch=int(r["batch"]), heads=int(r["heads"]), dtype=dtype)
            out.append((w, ms / 1e3))
    return out


def fit_eta(obs: list[dict], classes: dict[str, dict[str, Any]]) -> None:
    hw = load_cost_hardware("h200")
    cal = Calibration(classes)
    ratios: dict[str, list[float]] = {}

    def add(launch, seconds):
        c = launch_cost(
            launch, hw, Calibration({**classes, launch.klass: {**classes.get(launch.klass, {}), "eta": 1.0}})
        )
        if seconds > hw.rate["launch_s"]:
            ratios.setdefault(launch.klass, []).append(
                (c.time_s - hw.rate["launch_s"]) / (seconds - hw.rate["launch_s"])
            )

    for o in obs:
        variant, dtype, n, bh = o["variant"], o["dtype"], o["seq_len"], o["bh"]
        launch = next(x for x in _launches(variant, dtype, n, bh, cal) if x.name == o["launch"].name)
        add(launch, o["ncu"][DURATION] * 1e-9)
    for launch, seconds in _figure2_observations(cal):
        add(launch, seconds)
    for launch, seconds in _eager_observations(cal):
        add(launch, seconds)
    for klass, (_, variant) in D128.items():
        for w, seconds in _wall_rows(klass, variant):
            if w.dtype not in IMPLEMENTATIONS[variant].dtypes:
                continue
            try:
                (launch,) = IMPLEMENTATIONS[variant].launches(w, cal)
            except ValueError:  # e.g. torch_flash's split-KV regime
                continue
            if launch.klass == klass:
                add(launch, seconds)
    for klass, values in ratios.items():
        entry = classes.setdefault(klass, {})
        entry["eta"] = math.exp(statistics.fmean(math.log(v) for v in values))
        entry["n_time"] = len(values)
        entry["eta_spread"] = [min(values), max(values)]


#: FlashAttention-type classes whose eta and t_block are fitted together, on Nsight Compute's
#: durations and the side-by-side's non-causal medians (default tiles).
V4_FILE = "fa2_tc_speed.csv"
#: the run that timed version 4's default build: since run k3-run1 (version 5, the K/V ring and causal
#: blocks heaviest first: another instruction mix and launch order) the current file is version 5's
V4_RUN = "k22-fa2v4-run3"
V4_PATH = MEASUREMENTS.parent / "archive" / V4_RUN / V4_FILE
V5_PATH = MEASUREMENTS / V4_FILE
#: fa2_tc version 4 (issue 22), never profiled: eta and t_block from its committed non-causal medians.
V4_CLASSES = {"fa2_tc_v4.d64.bc64": 64, "fa2_tc_v4.d128.bc48": 128}
#: fa2_tc version 5 (run k3-run1), never profiled: eta and t_block from its committed non-causal medians
#: (the current fa2_tc_speed.csv's default builds).
V5_CLASSES = {"fa2_tc_v5.d64.bc64": 64, "fa2_tc_v5.d128.bc48": 128}
#: fa3_tc (the wgmma kernel), never profiled: eta and t_block from its committed non-causal medians of
#: the current default builds (the every-kernel side by side, rows "... (default)": d = 64 g2_bc64_sw with
#: the all64 section rule, d = 128 g2_bc128_ov_sw_pp, the two warpgroups' ping-pong; round 7 of the cost
#: model). Until round 6 the entry was fitted on fa3_tc_speed.csv of run fa3-l2-sections-20261202, the
#: build before the ping-pong (d = 128 g2_bc128_ov_sw; causal d = 64 under the 16 MiB section rule).
FA3_FILE = "tc_side_by_side_h200_every.csv"
#: the run of the kernel the cost entry models (main at 1cd7a2d: fa3_tc version 6's defaults)
FA3_RUN = "every2-20261203"
FA3_PATH = MEASUREMENTS / FA3_FILE


def is_default_build(config: str) -> bool:
    """Whether a speed or side-by-side row's config names the kernel's default build ("default: NAME" in
    the speed files, "NAME (default)" in the side by side)."""
    return config.startswith("default") or config.endswith("(default)")


FA3_CLASSES = {"fa3_tc.d64": 64, "fa3_tc.d128": 128}
BLOCK_CLASSES = {
    "fa2_tc.d64.w4bc64": "fa2_tc",
    "fa2_tc.d128.w4bc64": "fa2_tc",
    "torch_flash.d64.br128bc128": "torch_flash",
    "torch_flash.d128.br128bc64": "torch_flash",
    **dict.fromkeys(V4_CLASSES, "fa2_tc_v4"),
    **dict.fromkeys(V5_CLASSES, "fa2_tc_v5"),
    **dict.fromkeys(FA3_CLASSES, "fa3_tc"),
}
SIDE_BY_SIDE = "tc_side_by_side_h200.csv"
SIDE_BY_SIDE_CAUSAL = "tc_side_by_side_h200_causal.csv"


def _side_by_side(variant: str, causal: bool) -> list[tuple[Workload, float]]:
    name = SIDE_BY_SIDE_CAUSAL if causal else SIDE_BY_SIDE
    out = []
    with (MEASUREMENTS / name).open(newline="") as f:
        for r in csv.DictReader(f):
            config = (r.get("config") or "").split(" ")[0]
            if r["kernel"] != variant or not r.get("median_ms") or r.get("ok") != "True":
                continue
            if variant in ("fa2_tc", "naive_tc") and config != "w4_bc64":
                continue
            w = workload_of_row(r, causal=causal)
            out.append((w, float(r["median_ms"]) / 1e3))
    return out


def _v4_rows(causal: bool, path=V4_PATH, kernel: str = "fa2_tc") -> list[tuple[Workload, float]]:
    """(workload, CUDA-event median seconds) of fa2_tc version 4's default build (its run's fa2_tc_speed.csv),
    or with `path` the current file, version 5's; with `kernel` fa3_tc's default builds (fa3_tc_speed.csv)."""
    if not path.is_file():
        return []
    out = []
    for r in csv_rows(path):
        if r["kernel"] != kernel or not is_default_build(r["config"]) or r.get("ok") != "True":
            continue
        if (r["causal"] == "True") != causal:
            continue
        w = workload_of_row(r, causal=causal)
        out.append((w, float(r["median_ms"]) / 1e3))
    return out


def fit_block_latency(obs: list[dict], classes: dict[str, dict[str, Any]]) -> None:
    """eta and t_block of the FlashAttention-type classes: weighted least squares of
    t − t_launch = (roof·q)·(1/eta) + generations·t_block over their non-causal timings."""
    hw = load_cost_hardware("h200")
    for klass, variant in BLOCK_CLASSES.items():
        base = {**classes, klass: {**classes.get(klass, {}), "eta": 1.0, "t_block": 0.0}}
        cal = Calibration(base)
        points = []
        timed = [(o, o["ncu"][DURATION] * 1e-9) for o in obs if o["launch"].klass == klass]
        for o, seconds in timed:
            launch = next(
                x
                for x in _launches(o["variant"], o["dtype"], o["seq_len"], o["bh"], cal)
                if x.name == o["launch"].name
            )
            points.append((launch, seconds))
        for w, seconds in _side_by_side(variant, causal=False):
            (launch,) = IMPLEMENTATIONS[variant].launches(w, cal)
            if launch.klass == klass:
                points.append((launch, seconds))
        for classes_, variant_, path in (
            (V4_CLASSES, "fa2_tc_v4", V4_PATH),
            (V5_CLASSES, "fa2_tc_v5", V5_PATH),
        ):
            if klass in classes_:
                for w, seconds in _v4_rows(causal=False, path=path):
                    (launch,) = IMPLEMENTATIONS[variant_].launches(w, cal)
                    if launch.klass == klass:
                        points.append((launch, seconds))
        if klass in FA3_CLASSES:
            for w, seconds in _v4_rows(causal=False, path=FA3_PATH, kernel="fa3_tc"):
                (launch,) = IMPLEMENTATIONS["fa3_tc"].launches(w, cal)
                if launch.klass == klass:
                    points.append((launch, seconds))
        xs, ys = [], []
        for launch, seconds in points:
            c = launch_cost(launch, hw, cal)
            weight = 1.0 / seconds
            xs.append([c.roof_s * c.quantization * weight, math.ceil(c.waves) * weight])
            ys.append((seconds - hw.rate["launch_s"]) * weight)
        inv_eta, t_block = _least_squares(xs, ys)
        entry = classes.setdefault(klass, {})
        entry.update(eta=1.0 / inv_eta, t_block=max(t_block, 0.0), n_time=len(points))
        entry.pop("eta_spread", None)


#: The committed validation runs that timed each call alone on the GPU (gpu_ms_per_call: a spin kernel
#: queued first, CUDA events around the call; rounds 6–8): the only committed times of a launch whose last
#: wave leaves CTAs alone on their SMs that neither the host nor an NVML window is in.
GPU_ALONE_FILES = ("cost_validate6_h200.csv", "cost_validate7_h200.csv", "cost_validate8_h200.csv")
#: The lone shares tried (`fit_lone_rate`): a grid of 0.005 from 1/resident to 1.
LONE_STEP = 0.005
#: The fewest shapes a class's lone share is fitted on (one shape would be a fit per shape).
LONE_MIN_ROWS = 2


def _lone_gain(launch: Launch, hw) -> bool:
    """Whether a launch of equal-work CTAs under the latency rule has a wave that leaves CTAs alone on
    their SMs (its q moves with the lone share)."""
    from .model import LATENCY_WARPS, waves
    from .work import WARP

    if not launch.blocks or not launch.threads or (launch.cta_work and len(set(launch.cta_work)) > 1):
        return False
    per_sm = resident_blocks(launch.threads, launch.registers, launch.shared_bytes, 1)[0]
    if per_sm < 2 or per_sm * -(-launch.threads // WARP) > LATENCY_WARPS:
        return False
    return waves(launch, hw, 1.0)[1] < waves(launch, hw)[1]


def lone_rows(cal: Calibration) -> dict[str, list[tuple[str, Workload, float]]]:
    """Per FlashAttention-type class: (file, workload, GPU-alone seconds) of its committed non-causal calls
    whose launch has a wave that leaves CTAs alone on their SMs (`_lone_gain`; GPU_ALONE_FILES)."""
    hw = load_cost_hardware("h200")
    out: dict[str, list[tuple[str, Workload, float]]] = {}
    for name in GPU_ALONE_FILES:
        path = MEASUREMENTS / name
        for r in csv_rows(path) if path.is_file() else []:
            if (
                r["pass"] != "fwd"
                or r["status"] != "ok"
                or r["causal"] == "True"
                or not r.get("gpu_ms_per_call")
            ):
                continue
            if r["variant"] not in BLOCK_CLASSES.values():
                continue
            w = workload_of_row(r, causal=False)
            (launch,) = IMPLEMENTATIONS[r["variant"]].launches(w, cal)
            if launch.klass in BLOCK_CLASSES and _lone_gain(launch, hw):
                out.setdefault(launch.klass, []).append((name, w, float(r["gpu_ms_per_call"]) / 1e3))
    return out


def _lone_error(classes: dict, klass: str, points: list, lone: float, hw) -> float:
    """Σ log(predicted / GPU-alone time)² of `points` with `klass`'s lone share set to `lone`."""
    cal = Calibration({**classes, klass: {**classes[klass], "lone": lone}})
    total = 0.0
    for _, w, seconds in points:
        (launch,) = IMPLEMENTATIONS[BLOCK_CLASSES[klass]].launches(w, cal)
        total += math.log(launch_cost(launch, hw, cal).time_s / seconds) ** 2
    return total


@functools.cache
def _lone_fit_rows() -> frozenset[tuple]:
    """(file, implementation, dtype, B, H, N, d) of the post-freeze calls a class's lone share was fitted
    on (the committed fit's `lone_from` classes, `lone_rows`)."""
    from .calibration import load_calibration

    cal = load_calibration()
    out = set()
    for klass, points in lone_rows(cal).items():
        if "lone" in cal.classes.get(klass, {}):
            variant = BLOCK_CLASSES[klass]
            out |= {(n, variant, w.dtype, w.batch, w.heads, w.seq_len, w.head_dim) for n, w, _ in points}
    return frozenset(out)


def fit_lone_rate(classes: dict[str, dict[str, Any]]) -> None:
    """`lone` of the FlashAttention-type classes (round 9, simlib.cost.schedule): the share of its SM a CTA
    alone there reaches, the value on a grid of LONE_STEP from 1/resident to 1 that minimises the squared
    log ratios of predicted to GPU-alone time over the class's rows (`lone_rows`), eta and t_block as fitted
    (no fitted row has such a wave: their q does not move). A class with fewer than LONE_MIN_ROWS such rows
    keeps the latency rule (no `lone`)."""
    hw = load_cost_hardware("h200")
    rows = lone_rows(Calibration(classes))
    for klass, points in sorted(rows.items()):
        if len(points) < LONE_MIN_ROWS:
            continue
        variant = BLOCK_CLASSES[klass]

        (first,) = IMPLEMENTATIONS[variant].launches(points[0][1], Calibration(classes))
        low = 1.0 / resident_blocks(first.threads, first.registers, first.shared_bytes, 1)[0]
        grid = [low + LONE_STEP * i for i in range(int((1.0 - low) / LONE_STEP + 1e-9) + 1)]
        best = min(grid, key=lambda lone: _lone_error(classes, klass, points, lone, hw))
        shapes = "; ".join(f"{n}: {w.batch}, {w.heads}, {w.seq_len}, {w.head_dim}" for n, w, _ in points)
        classes[klass].update(lone=best, lone_from=shapes)


NAIVE_TC_D128 = ("naive_tc.scores.d128.w4bc64", "naive_tc.pv.d128.w4bc64")


def fit_naive_tc_d128(classes: dict[str, dict[str, Any]]) -> None:
    """naive_tc's two matmul launches at d = 128 (no profile): the d = 64 classes' instructions and
    eta times one factor, the geometric mean over the side-by-side's non-causal d = 128 medians of
    (predicted scores + pv) / (measured − predicted softmax)."""
    hw = load_cost_hardware("h200")
    for klass in NAIVE_TC_D128:
        source = klass.replace(".d128.", ".d64.")
        classes[klass] = {
            **{k: v for k, v in classes[source].items() if k not in ("n_ncu", "n_time", "eta_spread")},
            "from": source,
        }
    cal = Calibration(classes)
    ratios = []
    for w, seconds in _side_by_side("naive_tc", causal=False):
        if w.head_dim != 128:
            continue
        costs = {
            c.launch.name: c
            for c in (launch_cost(x, hw, cal) for x in IMPLEMENTATIONS["naive_tc"].launches(w, cal))
        }
        rest = seconds - costs["softmax"].time_s
        ratios.append((costs["scores"].time_s + costs["pv"].time_s) / rest)
    factor = math.exp(statistics.fmean(math.log(r) for r in ratios))
    for klass in NAIVE_TC_D128:
        classes[klass].update(eta=classes[klass]["eta"] * factor, n_time=len(ratios))


EAGER16_FILE = "eager16_h200.csv"
H2F_CLASSES = {
    "torch_softmax_h2f.warp": "torch_softmax.warp",
    "torch_softmax_h2f.block": "torch_softmax.block",
    "torch_softmax_h2f.block_global": "torch_softmax.block",
}
#: Round 2's measurements (check.ROUNDS) that the fp16 softmax's eta uses: the fp16 eager chain,
#: non-causal (these rows count as calibration in the table, in_fit, no longer as validation).
ROUND2_FILE = "cost_validate2_h200.csv"


def _fp16_eager_rows() -> list[tuple[str, Workload, float]]:
    """(file, workload, seconds) of the fp16 eager chain's committed non-causal timings: the Hugging
    Face eager medians (eager16_h200.csv, forward) and round 2's wall-clock rows."""
    out = []
    for r in csv_rows(MEASUREMENTS / EAGER16_FILE):
        if (
            r["variant"] == "eager_hf"
            and r["dtype"] == "fp16"
            and r["pass"] == "fwd"
            and r["causal"] != "True"
            and r.get("ok") == "True"
            and r.get("median_ms")
        ):
            out.append((EAGER16_FILE, workload_of_row(r, causal=False), float(r["median_ms"]) / 1e3))
    for r in csv_rows(MEASUREMENTS / ROUND2_FILE):
        if (
            r["variant"] == "eager_bf16"
            and r["dtype"] == "fp16"
            and r["status"] == "ok"
            and r["causal"] != "True"
        ):
            out.append((ROUND2_FILE, workload_of_row(r, causal=False), float(r["ms_per_call"]) / 1e3))
    return out


def round_rows_in_fit(
    source: str, implementation: str, dtype: str, causal: bool, shape: tuple | None = None
) -> bool:
    """Whether a post-freeze row (check.post_freeze) is one the calibration now uses: round 2's fp16
    eager rows, the loop row that sets a dispatch class's host floor (`shape`: B, H, N, d), and the calls a
    class's lone share was fitted on (round 9, `fit_lone_rate`)."""
    if source == ROUND2_FILE and implementation == "eager_bf16" and dtype == "fp16" and not causal:
        return True
    if shape is None:
        return False
    if not causal and (source, implementation, dtype, *shape) in _lone_fit_rows():
        return True
    for _, name, r in host_floor_rows().values():
        key = (int(r["batch"]), int(r["heads"]), int(r["seq_len"]), int(r["head_dim"]))
        if (
            name == source
            and r["variant"] == implementation
            and key == tuple(shape)
            and (r["causal"] == "True") == causal
        ):
            return True
    return False


def fit_h2f_softmax(classes: dict[str, dict[str, Any]]) -> None:
    """The fp16 eager softmax (the fused half-to-float kernel, library._eager_softmax_class), never
    profiled: the instructions of the fp32 softmax kernel of the same row regime (the same
    host_softmax templates), eta the geometric mean over the fp16 eager chain's committed non-causal
    timings (`_fp16_eager_rows`) of (predicted softmax − t_launch) / (measured − the other launches'
    predictions − t_launch). The block classes (library.H2F_BLOCK_CLASSES, round 7): a cost per element
    (1/eta on the per-element roof) and a fixed cost per row (t_row), weighted least squares of
    measured − the other launches − t_launch = roof/eta + rows·t_row over the same rows; where a class's
    rows do not determine two parameters (fewer than three, or a negative t_row: the global-memory kernel's
    two rows, of 99,000 and 90,000 rows), it takes the shared-memory kernel's t_row (the same block of
    min(N, 1024) threads and the same block reductions per row) and fits eta alone."""
    from .library import H2F_BLOCK_CLASSES

    hw = load_cost_hardware("h200")
    for klass, source in H2F_CLASSES.items():
        classes[klass] = {
            **{k: v for k, v in classes[source].items() if k in ("el", "ffma_el")},
            "from": source,
        }
    cal = Calibration({**classes, **{k: {**classes[k], "eta": 1.0} for k in H2F_CLASSES}})
    ratios: dict[str, list[float]] = {}
    per_row: dict[str, list[tuple[list[float], float]]] = {}
    for _, w, seconds in _fp16_eager_rows():
        costs = {
            c.launch.name: c
            for c in (launch_cost(x, hw, cal) for x in IMPLEMENTATIONS["eager_bf16"].launches(w, cal))
        }
        soft = costs.pop("softmax")
        rest = seconds - sum(c.time_s for c in costs.values()) - hw.rate["launch_s"]
        if soft.launch.klass in H2F_BLOCK_CLASSES:
            weight = 1.0 / seconds
            per_row.setdefault(soft.launch.klass, []).append(
                ([soft.roof_s * weight, soft.launch.rows * weight], rest * weight)
            )
        elif rest > 0:
            ratios.setdefault(soft.launch.klass, []).append((soft.time_s - hw.rate["launch_s"]) / rest)
    shared_t_row = None
    for klass in H2F_BLOCK_CLASSES:  # the shared-memory kernel first
        points = per_row.get(klass, [])
        if not points:
            continue
        inv_eta, t_row = _least_squares([x for x, _ in points], [y for _, y in points])
        how = "least squares of the per-element roof and a fixed cost per row (t_row)"
        if (len(points) < 3 or t_row < 0) and shared_t_row is not None:
            t_row = shared_t_row
            inv_eta = sum(y - x[1] * t_row for x, y in points) / sum(x[0] for x, _ in points)
            how = f"t_row of {H2F_BLOCK_CLASSES[0]} (same block, same reductions per row), eta alone"
        if klass == H2F_BLOCK_CLASSES[0]:
            shared_t_row = t_row
        classes[klass].update(
            eta=1.0 / inv_eta,
            t_row=t_row,
            n_time=len(points),
            eta_from=f"{EAGER16_FILE} and {ROUND2_FILE}: the fp16 eager chain, non-causal; {how}",
        )
    for klass, values in ratios.items():
        classes[klass].update(
            eta=math.exp(statistics.fmean(math.log(v) for v in values)),
            n_time=len(values),
            eta_spread=[min(values), max(values)],
            eta_from=f"{EAGER16_FILE} and {ROUND2_FILE}: the fp16 eager chain, non-causal",
        )


def fit_causal_softmax(classes: dict[str, dict[str, Any]]) -> None:
    """eta of naive_tc's causal softmax build: the causal side-by-side's medians less the predicted
    scores and pv launches (geometric mean over the rows); its instructions are the unmasked build's."""
    hw = load_cost_hardware("h200")
    src = classes["naive_tc.softmax"]
    classes["naive_tc.softmax.causal"] = {k: v for k, v in src.items() if k in ("el", "row_warps", "ffma_el")}
    classes["naive_tc.softmax.causal"]["from"] = "naive_tc.softmax"
    cal = Calibration(
        {**classes, "naive_tc.softmax.causal": {**classes["naive_tc.softmax.causal"], "eta": 1.0}}
    )
    ratios = []
    for w, seconds in _side_by_side("naive_tc", causal=True):
        costs = {
            c.launch.name: c
            for c in (launch_cost(x, hw, cal) for x in IMPLEMENTATIONS["naive_tc"].launches(w, cal))
        }
        rest = seconds - costs["scores"].time_s - costs["pv"].time_s - hw.rate["launch_s"]
        if rest > 0:
            ratios.append((costs["softmax"].time_s - hw.rate["launch_s"]) / rest)
    classes["naive_tc.softmax.causal"].update(
        eta=math.exp(statistics.fmean(math.log(r) for r in ratios)), n_time=len(ratios)
    )


def fit_broadcast_mask(classes: dict[str, dict[str, Any]]) -> None:
    """The eager attention's broadcast mask add (library._broadcast_mask_add), never profiled: ATen's
    legacy elementwise kernel, the template SDPA math's ``where`` runs, so its instructions per element
    and eta are where's (Nsight Compute, the energy run)."""
    src = classes["torch_where"]
    classes["torch_ew_legacy"] = {k: v for k, v in src.items() if k in ("el", "ffma_el", "eta")}
    classes["torch_ew_legacy"]["from"] = "torch_where"


#: The committed back-to-back loops (benchmarks/cost_validate_h200.py, every round's file).
LOOP_FILES = (
    "cost_validate_h200.csv",
    "cost_validate2_h200.csv",
    "cost_validate3_h200.csv",
    "cost_validate4_h200.csv",
    "cost_validate5_h200.csv",
)


def host_floor_rows() -> dict[str, tuple[float, str, dict]]:
    """Per dispatch class (simlib.cost.host.DISPATCH): the shortest per-call seconds of any committed loop
    of its implementations, with the file and the row."""
    from .host import DISPATCH

    out: dict[str, tuple[float, str, dict]] = {}
    for name in LOOP_FILES:
        path = MEASUREMENTS / name
        for r in csv_rows(path) if path.is_file() else []:
            klass = DISPATCH.get(r["variant"])
            if klass is None or r["status"] != "ok":
                continue
            seconds = float(r["ms_per_call"]) / 1e3
            if klass not in out or seconds < out[klass][0]:
                out[klass] = (seconds, name, r)
    return out


def fit_host_floor(classes: dict[str, dict[str, Any]]) -> None:
    """t_host of each dispatch class: its shortest committed per-call time in a loop (simlib.cost.host)."""
    for klass, (seconds, name, r) in host_floor_rows().items():
        shape = ", ".join(r[k] for k in ("batch", "heads", "seq_len", "head_dim", "causal"))
        classes[klass] = {"t_host": seconds, "t_host_from": f"{name}: {r['variant']} at ({shape})"}


def inputs() -> list[dict[str, str]]:
    names = (
        *NCU_FILES,
        FIGURE2_FILE,
        *WALL_FILES,
        SIDE_BY_SIDE_CAUSAL,
        EAGER16_FILE,
        *LOOP_FILES,
        *GPU_ALONE_FILES,
        "ceilings_h200.json",
        "energy_calibration_h200.csv",
        "cost_units_h200.csv",
    )
    paths = [(f"data/measurements/current/{name}", MEASUREMENTS / name) for name in names]
    paths.append((f"data/measurements/current/{FA3_FILE}", FA3_PATH))
    return [
        {"file": label, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
        for label, path in paths
        if path.is_file()
    ]


def fit() -> dict:
    obs = observations()
    classes = fit_instructions(obs)
    fit_eager_softmax(classes)
    fit_eta(obs, classes)
    fit_untimed_softmax(classes)
    fit_broadcast_mask(classes)
    fit_block_latency(obs, classes)
    fit_lone_rate(classes)
    fit_naive_tc_d128(classes)
    fit_causal_softmax(classes)
    fit_h2f_softmax(classes)
    fit_host_floor(classes)

    def sig(x):
        return float(f"{x:.6g}")

    rounded = {
        k: {
            kk: (sig(vv) if isinstance(vv, float) else [sig(x) for x in vv] if isinstance(vv, list) else vv)
            for kk, vv in v.items()
        }
        for k, v in sorted(classes.items())
    }
    return {
        "generated_by": "python -m simlib.cost.fit",
        "what": __doc__.strip().splitlines()[0],
        "inputs": inputs(),
        "classes": rounded,
    }


def text(data: dict) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simlib.cost.fit", description=__doc__.splitlines()[0])
    p.add_argument(
        "--check", action="store_true", help="exit 1 if data/cost/h200_fit.json differs from a fresh fit"
    )
    args = p.parse_args(argv)
    fresh = text(fit())
    if args.check:
        same = FIT_FILE.is_file() and FIT_FILE.read_text() == fresh
        print(
            "data/cost/h200_fit.json is " + ("up to date" if same else "stale: run python -m simlib.cost.fit")
        )
        return 0 if same else 1
    FIT_FILE.write_text(fresh)
    print(f"wrote {FIT_FILE.relative_to(FIT_FILE.parents[2])}: {len(json.loads(fresh)['classes'])} classes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
