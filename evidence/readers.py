"""What the lectures read of the project's measurement files, through the validating readers.

The files live in data/measurements/current/ (or archive/<run_id>/), found with
`measurements.manifest.lookup`, and are read with `measurements.read` against the one schema their
writer writes (`measurements.schemas`): a file whose columns differ from its writer's, that is cut off,
empty, changed since its run (its sidecar's sha256 and row count) or holds a time that is not a finite
number above zero raises `MeasurementFileError` naming the file, so nothing here charts damaged data.
Nothing here guesses a column name or a unit.

Schemas (long format: one row per kernel, shape and metric):

* `bench_h200.csv` (`python -m gpu_kernels bench` before the one harness): schemas.BENCH; wall time = metric
  `time_ms_median` in ms.
* `compare_h200.csv`, `compare_h200_fast.csv` (`python -m gpu_kernels compare`): schemas.HARNESS;
  wall time = metric `ms` (the median) in ms.
* the fp16/bf16 tensor-core runs (`tensor_core_speedups`): `figure2_h200.csv` (schemas.FIGURE2),
  `tc_bench_h200.csv` and `tc_side_by_side_h200.csv` (schemas.SIDE_BY_SIDE) and the energy run's
  `energy_attention_h200.csv` (read by evidence.energy_claim).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "bench.csv")
>>> _ = open(path, "w").write("kernel,batch,heads,seq_len,head_dim,params,metric,value,unit,note\\n"
...                           "tiled,1,16,4096,64,Br=64,time_ms_median,2.5,ms,\\n")
>>> median_times(read_frame(path, schemas.BENCH), "kernel", BENCH_TIME_METRIC).time_ms.item()
2.5
"""

from pathlib import Path

import pandas as pd

from measurements import schemas
from measurements.manifest import lookup
from measurements.read import keys_of, read_frame, read_json
from simlib import Workload, count, roofline
from simlib.physical import metrics

from . import energy_claim

BENCH_TIME_METRIC = "time_ms_median"
COMPARE_TIME_METRIC = "ms"
SHAPE = list(schemas.SHAPE)


def median_times(frame, name_column, metric):
    """One row per (name, shape, params) with the median wall time `time_ms` of metric `metric`."""
    rows = frame[frame["metric"] == metric]
    times = rows.assign(
        time_ms=pd.to_numeric(rows["value"], errors="raise"),
        params=rows["params"].astype("string").fillna(""),
    )
    return times[[name_column, *SHAPE, "params", "time_ms"]].rename(columns={name_column: "kernel"})


def fastest(times):
    """The fastest parameter set per (kernel, shape) of `median_times` (e.g. the best tile size)."""
    best = times.sort_values("time_ms").groupby(["kernel", *SHAPE], sort=False).head(1)
    return best.sort_values(["kernel", *SHAPE]).reset_index(drop=True)


def read_bench(path=None):
    """`bench_h200.csv` (`python -m gpu_kernels bench`) as written: every kernel, shape and metric."""
    return read_frame(path if path is not None else lookup("bench_h200.csv"), schemas.BENCH)


def read_compare(path=None):
    """`compare_h200.csv` (`python -m gpu_kernels compare`) as written."""
    return read_frame(path if path is not None else lookup("compare_h200.csv"), schemas.HARNESS)


def bench_times(path=None):
    """Wall times of the teaching kernels (`read_bench`), fastest params per shape."""
    return fastest(median_times(read_bench(path), "kernel", BENCH_TIME_METRIC))


def compare_times(path=None):
    """Wall times of the side-by-side run (numba, cupy, torch; `read_compare`), per variant and shape."""
    return fastest(median_times(read_compare(path), "variant", COMPARE_TIME_METRIC))


def speedups(times, pairs):
    """baseline time / kernel time for each (baseline, kernel) of `pairs` at every shape both have."""
    columns = ["baseline", "kernel", *SHAPE, "baseline_ms", "kernel_ms", "speed-up"]
    parts = []
    for baseline, kernel in pairs:
        base = times[times.kernel == baseline][SHAPE + ["time_ms"]].rename(columns={"time_ms": "baseline_ms"})
        mine = times[times.kernel == kernel][SHAPE + ["time_ms"]].rename(columns={"time_ms": "kernel_ms"})
        both = base.merge(mine, on=SHAPE).assign(baseline=baseline, kernel=kernel)
        parts.append(both.assign(**{"speed-up": both.baseline_ms / both.kernel_ms}))
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


# ---------------------------------------------------------------------------------------------
# the fp16/bf16 tensor-core runs: standard attention against FlashAttention-2 on the H200
# ---------------------------------------------------------------------------------------------

#: The tensor-core (fp16/bf16) runs of standard attention vs FlashAttention-2 on the H200, read when
#: they are in data/measurements/current/ (each with its writer's columns):
#: benchmarks/figure2_torch.py -> figure2_h200.csv (the paper's Figure 2 configuration, N = 1K, one
#: forward + backward step; standard = attention_ref, FA2 = PyTorch's varlen kernels) and
#: python -m gpu_kernels.measure.side_by_side -> tc_bench_h200.csv, later tc_side_by_side_h200.csv
#: (forward, bf16/fp16; PyTorch's math vs flash SDPA backends, and our naive_tc vs fa2_tc kernels in
#: their default configuration).
FIGURE2 = "figure2_h200.csv"
TC_BENCH = "tc_bench_h200.csv"
TC_SIDE_BY_SIDE = "tc_side_by_side_h200.csv"
TC_PAIRS = (("torch_math", "torch_flash"), ("naive_tc", "fa2_tc"))
#: benchmarks/energy_h200.py -> energy_attention_h200.csv (NVML energy and time per call; d = 64 in
#: every row of that run, stated in its sidecar's `what`).
ENERGY = "energy_attention_h200.csv"
ENERGY_HEAD_DIM = 64
TC_COLUMNS = ["run", "baseline", "kernel", "dtype", "seq_len", "head_dim", "dropout_p", "speed-up"]
#: benchmarks/eager16_h200.py -> eager16_h200.csv (CUDA-event time) and eager16_energy_h200.csv (NVML):
#: the 16-bit standard attention practitioners run, every N×N tensor in the dtype and both products on
#: the tensor cores, next to SDPA flash on the same inputs (columns: data/measurements/README.md).
EAGER16 = "eager16_h200.csv"
EAGER16_ENERGY = "eager16_energy_h200.csv"
#: The 16-bit standard attention practitioners run (eager16_h200.csv): plain eager (softmax in the
#: dtype), Hugging Face's eager (softmax in fp32, cast back), the paper's attention_ref; each is
#: paired with FLASH16. naive_tc / fa2_tc are our kernels (context).
EAGER16_STANDARD = ("eager", "eager_hf", "attention_ref")
FLASH16 = "torch_flash"
#: The standard attention the posts compare with, in 16 bits.
STANDARD = EAGER16_STANDARD
#: SDPA's math backend upcasts fp16/bf16 inputs (S, P and its products in fp32; PyTorch's docs: "the
#: Math backend by default accumulates in float32"): never the 16-bit baseline, always labelled so.
UPCAST = "torch_math"
UPCAST_LABEL = "fp32 inside (upcast)"


def _current(name):
    try:
        return lookup(name)
    except FileNotFoundError:
        return None


def figure2_speedups(path):
    """standard / FA2-varlen step time per dropout from figure2_h200.csv."""
    frame = read_frame(path, schemas.FIGURE2)
    frame = frame.assign(wall_ms_median=pd.to_numeric(frame["wall_ms_median"], errors="raise"))
    std = frame[frame.variant == "standard"].set_index("dropout_p")
    fa2 = frame[frame.variant == "fa2_varlen"].set_index("dropout_p")
    return pd.DataFrame(
        [
            {
                "run": "Figure 2 config, fwd+bwd",
                "baseline": "attention_ref",
                "kernel": "FA2 (varlen)",
                "dtype": std.loc[p, "dtype"],
                "seq_len": int(std.loc[p, "seq_len"]),
                "head_dim": int(std.loc[p, "head_dim"]),
                "dropout_p": p,
                "speed-up": std.loc[p, "wall_ms_median"] / fa2.loc[p, "wall_ms_median"],
            }
            for p in std.index.intersection(fa2.index)
        ],
        columns=TC_COLUMNS,
    )


def tc_bench_speedups(path, run="tensor-core bench, fwd"):
    """baseline / kernel forward time per (dtype, N, d) for TC_PAIRS from the tensor-core bench's CSV
    (tc_bench_h200.csv, or its successor tc_side_by_side_h200.csv: the same columns and more).
    Non-causal rows only; fa2_tc in its default configuration; a variant out of memory has no time
    and so no pair."""
    frame = read_frame(path, schemas.SIDE_BY_SIDE)
    frame = frame[
        (frame.causal.astype(str) == "False")
        & ((frame.kernel != "fa2_tc") | frame.config.astype(str).str.contains("default"))
    ]
    frame = frame.assign(median_ms=pd.to_numeric(frame["median_ms"], errors="coerce")).dropna(
        subset=["median_ms"]
    )
    times = frame.groupby(["kernel", "dtype", "seq_len", "head_dim"])["median_ms"].min()
    rows = []
    for base, kern in TC_PAIRS:
        for (name, dtype, n, d), t in times.items():
            if name == kern and (base, dtype, n, d) in times.index:
                rows.append(
                    {
                        "run": run,
                        "baseline": base,
                        "kernel": kern,
                        "dtype": dtype,
                        "seq_len": int(n),
                        "head_dim": int(d),
                        "dropout_p": 0.0,
                        "speed-up": times[(base, dtype, n, d)] / t,
                    }
                )
    return pd.DataFrame(rows, columns=TC_COLUMNS)


def energy_run_speedups(path):
    """SDPA math / flash time per call, bf16, from the NVML energy run (energy_attention_h200.csv, read
    by evidence.energy_claim): the math backend is fp32 inside (upcast), the flash backend is FA2."""
    calls = energy_claim.attention_calls(path, eager16_path=None, upcast=True)
    calls = calls[calls.upcast]
    return pd.DataFrame(
        [
            {
                "run": f"energy run, {r['pass'].replace('_', '+')}",
                "baseline": r["standard"],
                "kernel": r["flash"],
                "dtype": "bf16",
                "seq_len": int(r["seq_len"]),
                "head_dim": ENERGY_HEAD_DIM,
                "dropout_p": 0.0,
                "speed-up": r["standard_ms"] / r["flash_ms"],
            }
            for _, r in calls.iterrows()
        ],
        columns=TC_COLUMNS,
    )


def eager16_times(path=None):
    """The timed, checked rows of the 16-bit baseline run (`eager16_h200.csv`): kernel (= variant), dtype,
    pass, causal (bool), SHAPE, time_ms; rows past the run's time budget (no time) or failing their
    float64 check left out."""
    frame = read_frame(path if path is not None else lookup(EAGER16), schemas.EAGER16)
    frame = frame.assign(
        causal=frame["causal"].astype(str) == "True",
        ok=frame["ok"].astype(str) == "True",
        time_ms=pd.to_numeric(frame["median_ms"], errors="coerce"),
    )
    frame = frame[frame.ok & frame.time_ms.notna()].rename(columns={"variant": "kernel"})
    return frame[["kernel", "dtype", "pass", "causal", *SHAPE, "time_ms"]].reset_index(drop=True)


def eager16_speedups(path=None, standards=EAGER16_STANDARD):
    """standard / flash time per (standard, dtype, pass, causal, N, d) of the 16-bit baseline run: every
    variant of `standards` against FLASH16 at the shapes where both were timed.

    >>> import io
    >>> text = ("variant,dtype,pass,causal,batch,heads,seq_len,head_dim,median_ms,ok,rel_err_o,extra_alloc_bytes\\n"
    ...         "eager,bf16,fwd,False,4,16,4096,64,6.0,True,,\\ntorch_flash,bf16,fwd,False,4,16,4096,64,1.5,True,,\\n")
    >>> eager16_speedups(io.StringIO(text))["speed-up"].item()
    4.0
    """
    t = eager16_times(path)
    keys = ["dtype", "pass", "causal", *SHAPE]
    flash = t[t.kernel == FLASH16][keys + ["time_ms"]].rename(columns={"time_ms": "kernel_ms"})
    parts = []
    for std in standards:
        base = t[t.kernel == std][keys + ["time_ms"]].rename(columns={"time_ms": "baseline_ms"})
        both = base.merge(flash, on=keys).assign(baseline=std, kernel=FLASH16)
        parts.append(both.assign(**{"speed-up": both.baseline_ms / both.kernel_ms}))
    columns = ["baseline", "kernel", *keys, "baseline_ms", "kernel_ms", "speed-up"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def eager16_tc_speedups(path):
    """`eager16_speedups` (non-causal) in TC_COLUMNS, one run name per pass."""
    s = eager16_speedups(path)
    s = s[~s.causal]
    return pd.DataFrame(
        {
            "run": "16-bit baseline, " + s["pass"].str.replace("_", "+"),
            "baseline": s.baseline,
            "kernel": s.kernel,
            "dtype": s.dtype,
            "seq_len": s.seq_len.astype(int),
            "head_dim": s.head_dim.astype(int),
            "dropout_p": 0.0,
            "speed-up": s["speed-up"],
        },
        columns=TC_COLUMNS,
    )


def tensor_core_speedups(
    figure2="current", tc_bench="current", energy="current", side_by_side="current", eager16="current"
):
    """Every fp16/bf16 tensor-core speed-up of standard attention over FlashAttention-2 measured on the
    H200 (the 16-bit baseline's pairs first; SDPA math's, fp32 inside, as `UPCAST`): from the files in data/measurements/current/ ("current"), a path, or None to leave a run
    out; an empty frame when no run is there."""
    figure2 = _current(FIGURE2) if figure2 == "current" else figure2
    tc_bench = _current(TC_BENCH) if tc_bench == "current" else tc_bench
    energy = _current(ENERGY) if energy == "current" else energy
    side_by_side = _current(TC_SIDE_BY_SIDE) if side_by_side == "current" else side_by_side
    eager16 = _current(EAGER16) if eager16 == "current" else eager16
    parts = [
        eager16_tc_speedups(eager16) if eager16 is not None else None,
        figure2_speedups(figure2) if figure2 is not None else None,
        tc_bench_speedups(tc_bench) if tc_bench is not None else None,
        tc_bench_speedups(side_by_side, "tensor-core side by side, fwd")
        if side_by_side is not None
        else None,
        energy_run_speedups(energy) if energy is not None else None,
    ]
    parts = [p for p in parts if p is not None and len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=TC_COLUMNS)


# ---------------------------------------------------------------------------------------------
# lecture 5: the profiles (model vs kernel counters vs Nsight Compute) and the two side-by-side runs
# ---------------------------------------------------------------------------------------------

#: `python -m gpu_kernels profile` -> profile_h200.csv (fp32: naive, tiled) and profile_h200_tc.csv
#: (bf16: naive_tc, fa2_tc); `python -m gpu_kernels model-vs-ncu` -> model_vs_ncu_h200[_tc].csv.
PROFILE = "profile_h200.csv"
TC_PROFILE = "profile_h200_tc.csv"
MODEL_VS_NCU = "model_vs_ncu_h200.csv"
TC_MODEL_VS_NCU = "model_vs_ncu_h200_tc.csv"
CEILINGS = "ceilings_h200.json"
#: the pairs (kernel counter, simlib prediction) of a profile's counting build
COUNTERS = ("hbm_read_bytes", "hbm_write_bytes", "sram_read_bytes", "sram_write_bytes")
#: ncu metric names, from simlib.physical.metrics (the profiler's and the model's one list)
DRAM_READ_METRIC = metrics.DRAM_READ
L1_LOAD_SECTORS_METRIC = metrics.L1_LD
SECTOR_BYTES = 32


def read_profile(path):
    """A profile CSV (`python -m gpu_kernels profile`) with numeric `value` (ncu's 'n/a' → NaN)."""
    frame = read_frame(path, schemas.PROFILE)
    return frame.assign(value=pd.to_numeric(frame["value"], errors="coerce"))


def read_model_vs_ncu(path):
    """A model-vs-ncu table (`python -m gpu_kernels model-vs-ncu`) as written."""
    return read_frame(path, schemas.MODEL_VS_NCU)


def counter_differences(profile):
    """Per kernel, launch total and shape of a `read_profile` frame: each counter of the counting build
    (`counted_*`) next to simlib's (`simlib_*`) and their difference in bytes."""
    totals = profile[profile["launch"] == "total"]
    rows = []
    for (kernel, n, d), grp in totals.groupby(["kernel", "seq_len", "head_dim"]):
        values = grp.set_index("metric")["value"]
        for counter in COUNTERS:
            counted, model = values[f"counted_{counter}"], values[f"simlib_{counter}"]
            rows.append(
                {
                    "kernel": kernel,
                    "N": int(n),
                    "d": int(d),
                    "counter": counter,
                    "kernel counted (B)": counted,
                }
                | {"simlib (B)": model, "difference (B)": counted - model}
            )
    return pd.DataFrame(rows)


def bytes_by_level(profile, model_vs_ncu):
    """Per kernel and shape, the bytes read at three depths: the logical HBM reads (simlib, the
    paper's two-level model), what the warps request from L1 (ncu's global-load sectors × 32 B),
    and what DRAM delivered (ncu), next to the physical model's DRAM prediction; summed over
    launches. `profile` from `read_profile`, `model_vs_ncu` from `read_model_vs_ncu`."""
    launches = profile[profile["launch"] != "total"]
    ncu = launches[launches["source"] == "ncu"].groupby(["kernel", "seq_len", "head_dim", "metric"])["value"]
    ncu = ncu.sum()
    logical = profile[(profile["launch"] == "total") & (profile["metric"] == "simlib_hbm_read_bytes")]
    model = model_vs_ncu[model_vs_ncu["metric"] == DRAM_READ_METRIC]
    model = model.groupby(["kernel", "seq_len", "head_dim"])["model"].sum()
    rows = []
    for _, r in logical.iterrows():
        key = (r["kernel"], r["seq_len"], r["head_dim"])
        rows.append(
            {
                "kernel": r["kernel"],
                "N": int(r["seq_len"]),
                "d": int(r["head_dim"]),
                "logical HBM reads": float(r["value"]),
                "L1 sectors × 32 (ncu)": SECTOR_BYTES * float(ncu[(*key, L1_LOAD_SECTORS_METRIC)]),
                "DRAM reads (ncu)": float(ncu[(*key, DRAM_READ_METRIC)]),
                "DRAM reads (model)": float(model[key]),
            }
        )
    return pd.DataFrame(rows).sort_values(["kernel", "d", "N"]).reset_index(drop=True)


def read_ceilings(path=None):
    """The card's measured ceilings (`python -m gpu_kernels ceilings`): FLOP/s of the mma.sync
    register loop per 16-bit dtype and of the FFMA loop (fp32), and the copy bandwidth in B/s."""
    path = path if path is not None else lookup(CEILINGS)
    raw = read_json(path)
    return {
        "bf16": keys_of(raw, path, "mma_bf16", "tflops") * 1e12,
        "fp16": keys_of(raw, path, "mma_fp16", "tflops") * 1e12,
        "fp32": keys_of(raw, path, "ffma_fp32", "tflops") * 1e12,
        "copy_bytes_per_s": keys_of(raw, path, "copy", "gbps") * 1e9,
    }


#: the causal rows of the 16-bit side by side, measured in a run of their own (same columns); when it
#: is there, its rows replace the main file's causal rows (which then only say they were not run)
TC_SIDE_BY_SIDE_CAUSAL = "tc_side_by_side_h200_causal.csv"


def _tc_rows(path, causal_path):
    frame = read_frame(path if path is not None else lookup(TC_SIDE_BY_SIDE), schemas.SIDE_BY_SIDE)
    frame = frame.assign(causal=frame["causal"].astype(str) == "True")
    variant_run = _current(TC_SIDE_BY_SIDE_CUPY) if path is None and causal_path is None else None
    if path is None and causal_path is None:
        causal_path = _current(TC_SIDE_BY_SIDE_CAUSAL)
    if causal_path is not None:
        causal = read_frame(causal_path, schemas.SIDE_BY_SIDE)
        causal = causal.assign(causal=causal["causal"].astype(str) == "True")
        frame = pd.concat([frame[~frame["causal"]], causal[causal["causal"]]], ignore_index=True)
    frame = with_variant_run(frame, variant_run)
    return frame.assign(median_ms=pd.to_numeric(frame["median_ms"], errors="coerce"))


def tc_times(path=None, causal_path=None):
    """The timed rows of the 16-bit side by side: `path` (default tc_side_by_side_h200.csv) and the
    causal run's `causal_path` (default, when both are None: tc_side_by_side_h200_causal.csv if it is
    in current/), one row per variant, dtype, shape and causal flag, `time_ms` = the median, `tflops` as the bench wrote
    it (causal: the FLOPs of the unmasked half); fa2_tc in its default configuration; rows the run did
    not time (an error, past the budget) left out (`tc_untimed` lists them); `ratio_to_torch_flash` (the
    median over torch flash's at the same dtype, causal flag and shape in the same run) where the run wrote
    it."""
    frame = _tc_rows(path, causal_path)
    frame = frame[(frame.kernel != "fa2_tc") | frame.config.astype(str).str.contains("default")]
    frame = frame.assign(time_ms=frame["median_ms"], tflops=pd.to_numeric(frame["tflops"], errors="coerce"))
    frame = frame.dropna(subset=["time_ms"])
    ratio = ["ratio_to_torch_flash"] if "ratio_to_torch_flash" in frame else []
    if ratio:
        frame = frame.assign(
            ratio_to_torch_flash=pd.to_numeric(frame["ratio_to_torch_flash"], errors="coerce")
        )
    return frame[["kernel", "dtype", "causal", *SHAPE, "time_ms", "tflops", *ratio]].reset_index(drop=True)


def tc_untimed(path=None, causal_path=None):
    """The rows of the 16-bit side by side (as `tc_times` reads it) without a time, grouped by
    variant, dtype, causal flag and the run's note (e.g. cupy refusing bf16, rows past the time
    budget), with how many shapes."""
    frame = _tc_rows(path, causal_path)
    frame = frame[frame["median_ms"].isna()]
    return (
        frame.assign(note=frame["note"].astype(str))
        .groupby(["kernel", "dtype", "causal", "note"])
        .size()
        .rename("shapes")
        .reset_index()
    )


def attention_flops(seq_len, head_dim, batch, heads):
    """Useful FLOPs of one non-causal attention forward: QKᵀ and PV, 2·N²·d each, per batch·head.

    >>> attention_flops(4096, 64, 1, 1) / 1e9
    4.294967296
    """
    return 4 * seq_len**2 * head_dim * batch * heads


def with_tflops(times):
    """`times` (a frame with SHAPE and time_ms, e.g. `compare_times`) with the achieved TFLOP/s of a
    non-causal forward: attention_flops / time."""
    flops = attention_flops(times["seq_len"], times["head_dim"], times["batch"], times["heads"])
    return times.assign(tflops=flops / (times["time_ms"] * 1e-3) / 1e12)


def measured_hardware(hardware, ceilings):
    """`hardware` with the card's measured ceilings (`read_ceilings`) as its peak FLOP/s per dtype and
    its copy bandwidth as the HBM level's bandwidth: the roofline of what a kernel can reach."""
    import dataclasses

    peaks = {dtype: ceilings[dtype] for dtype in ("fp32", "bf16", "fp16") if dtype in ceilings}
    levels = tuple(
        dataclasses.replace(lv, bandwidth_bytes_per_s=ceilings["copy_bytes_per_s"])
        if lv.name == "HBM"
        else lv
        for lv in hardware.levels
    )
    return dataclasses.replace(
        hardware, key=f"{hardware.key}-measured", peak_flops=hardware.peak_flops | peaks, levels=levels
    )


def speedup_table(times, pairs, dtype, labels):
    """The speed-ups of `speedups(times, pairs)` as one row per pair, labelled 'B over A (dtype)' with
    `labels` naming the variants, one column per (d, N); NaN where a side was not timed."""
    s = speedups(times, pairs)
    order = [f"{labels.get(k, k)} over {labels.get(b, b)} ({dtype})" for b, k in pairs]
    s = s.assign(
        pair=[f"{labels.get(k, k)} over {labels.get(b, b)} ({dtype})" for b, k in zip(s.baseline, s.kernel)]
    )
    table = s.pivot_table(index="pair", columns=["head_dim", "seq_len"], values="speed-up")
    table = table.reindex([o for o in order if o in table.index])
    table.index.name, table.columns.names = "speed-up", ["d", "N"]
    return table


def roofline_speedups(times, naive, flash, hardware, flash_params=None):
    """Per shape of `times` (one dtype) with both `naive` and `flash` timed (their names are also
    simlib schedules): the roofline's predicted time ratio naive / flash from simlib's counts on
    `hardware`, next to the measured one. `flash_params` are the flash schedule's parameters of the
    version that was timed (e.g. fa2_tc version 3's layout for the committed side by side)."""
    rows = []
    dtype = times["dtype"].iloc[0]
    for (n, d, b, h), grp in times.groupby(["seq_len", "head_dim", "batch", "heads"]):
        t = grp.set_index("kernel")["time_ms"]
        if naive not in t or flash not in t:
            continue
        w = Workload(seq_len=int(n), head_dim=int(d), batch=int(b), heads=int(h), dtype=dtype)
        model = (
            roofline(count(naive, w), hardware).time_s
            / roofline(count(flash, w, **(flash_params or {})), hardware).time_s
        )
        rows.append(
            {"N": int(n), "d": int(d), "B·H": int(b * h), f"{naive} ms": t[naive], f"{flash} ms": t[flash]}
            | {"model speed-up": model, "measured speed-up": t[naive] / t[flash]}
        )
    return pd.DataFrame(rows).sort_values(["d", "N"]).reset_index(drop=True)


#: short names of the ncu metrics of the model-vs-ncu tables
METRIC_NAMES = {
    metrics.DRAM_READ: "DRAM read bytes",
    metrics.DRAM_WRITE: "DRAM write bytes",
    metrics.L2_READ: "L2 read sectors",
    metrics.L2_WRITE: "L2 write sectors",
    metrics.L1_LD: "L1 load sectors",
    metrics.L1_ST: "L1 store sectors",
    metrics.SHARED_LD: "shared load wavefronts",
    metrics.SHARED_ST: "shared store wavefronts",
}


def _ratio_range(ratios):
    lo, hi = ratios.min(), ratios.max()
    return f"{lo:.3g} (all)" if lo == hi else f"{lo:.3g}–{hi:.3g}"


def model_vs_ncu_summary(tables, min_seq_len, tolerance):
    """One row per metric, one column group per regime (`tables`: dtype -> `read_model_vs_ncu`): the
    range of model / ncu over every launch at N ≥ `min_seq_len` (cells where ncu counts 0 left out)
    and how many are within ±`tolerance`."""
    parts = {}
    for dtype, table in tables.items():
        sub = table[(table["seq_len"] >= min_seq_len) & table["ratio"].notna()]
        grouped = sub.groupby("metric")
        within = grouped["ratio"].apply(lambda r: int(((r - 1).abs() <= tolerance).sum()))
        parts[dtype] = pd.DataFrame(
            {
                "model ÷ ncu": grouped["ratio"].agg(_ratio_range),
                f"within ±{tolerance:.0%}": within.astype(str) + " of " + grouped.size().astype(str),
            }
        )
    frame = pd.concat(parts, axis=1)
    frame = frame.reindex([m for m in METRIC_NAMES if m in frame.index])
    frame.index = [METRIC_NAMES[m] for m in frame.index]
    return frame.fillna("—")


def target_misses(tables, min_seq_len):
    """The target cells (`target` column) of each regime's model-vs-ncu table (`tables`: dtype ->
    table with a `cause` column) at N ≥ `min_seq_len` that miss the tolerance, with the first clause
    of their cause (`short_cause`; the committed tables keep the whole text).

    >>> short_cause("not explained yet: the model reads Q once; ncu more")
    'not explained yet: the model reads Q once'
    """
    parts = []
    for dtype, table in tables.items():
        sub = table[
            table["target"]
            & ~table["within_5pct"]
            & table["ratio"].notna()
            & (table["seq_len"] >= min_seq_len)
        ]
        parts.append(
            sub.assign(
                regime=dtype, metric=sub["metric"].map(METRIC_NAMES), cause=sub["cause"].map(short_cause)
            )
        )
    columns = ["regime", "kernel", "launch", "seq_len", "head_dim", "metric", "ratio", "cause"]
    return pd.concat(parts, ignore_index=True)[columns].rename(columns={"seq_len": "N", "head_dim": "d"})


def short_cause(text, limit=160):
    """A model-vs-ncu `cause` up to its first ';', cut at a word before `limit` characters ('…')."""
    clause = str(text).split(";")[0].strip()
    if len(clause) <= limit:
        return clause
    return clause[:limit].rsplit(" ", 1)[0] + " …"


def causal_ratios(times):
    """Causal time / non-causal time per variant, dtype and shape of `tc_times` where both were
    timed: about 0.5 for a kernel that skips the masked tiles, about 1 for one that computes and
    then masks them."""
    keys = ["kernel", "dtype", *SHAPE]
    causal = times[times["causal"]][keys + ["time_ms"]]
    full = times[~times["causal"]][keys + ["time_ms"]]
    both = causal.merge(full, on=keys, suffixes=(" causal", ""))
    return both.assign(**{"causal ÷ non-causal": both["time_ms causal"] / both["time_ms"]})


#: cupy's naive attention in a run of its own (the side by side's columns, both dtypes and causal
#: flags): `tc_times` takes its rows instead of the cupy rows of the two files above
TC_SIDE_BY_SIDE_CUPY = "tc_side_by_side_h200_cupy.csv"


def with_variant_run(frame, run_path):
    """`frame` (side-by-side rows, `causal` as bool) with every row of each variant that the run at
    `run_path` holds replaced by that run's rows; `frame` itself when `run_path` is None."""
    if run_path is None:
        return frame
    run = read_frame(run_path, schemas.SIDE_BY_SIDE)
    run = run.assign(causal=run["causal"].astype(str) == "True")
    return pd.concat([frame[~frame["kernel"].isin(set(run["kernel"]))], run], ignore_index=True)


#: a CUDA context's device memory per framework and stage (`python -m gpu_kernels.measure.cuda_context`)
CUDA_CONTEXT = "cuda_context_h200.json"


def read_cuda_context(path=None):
    """The CUDA-context run: GPU, driver, and the median bytes per (framework, stage), e.g.
    ("torch", "sdpa"): the context after a first cuBLAS product and a first SDPA call, beyond what
    the framework's allocator holds."""
    path = Path(path if path is not None else lookup(CUDA_CONTEXT))
    raw = read_json(path)
    summary = keys_of(raw, path, "summary")
    return {
        "gpu_name": keys_of(raw, path, "gpu_name"),
        "driver_version": keys_of(raw, path, "driver_version"),
        "bytes": {
            (fw, st): keys_of(summary, path, fw, st, "median_bytes") for fw in summary for st in summary[fw]
        },
    }


#: fa2_tc's default build (version 5 since run k3-run1) against torch flash and cuDNN (benchmarks/fa2_tc_speed.py, issue 22).
FA2_TC_SPEED = "fa2_tc_speed.csv"


def _default_build_speed(name, kernel, path):
    """One kernel's default build next to the baselines timed in the same run, one row per (dtype,
    causal, d, N): ms of each kernel and `kernel` / flash (checked rows only)."""
    frame = read_frame(path if path is not None else lookup(name), schemas.FA2_TC_SPEED)
    frame = frame[frame["ok"].astype(str) == "True"]
    own = frame.kernel.isin(["fa2_tc", "fa3_tc"])
    frame = frame[~own | frame.config.astype(str).str.startswith("default")]
    wide = frame.pivot_table(
        index=["dtype", "causal", "head_dim", "seq_len"],
        columns="kernel",
        values="median_ms",
        aggfunc="first",
    )
    wide[f"{kernel} / flash"] = wide[kernel] / wide["torch_flash"]
    return wide


def fa2_tc_speed(path=None):
    """fa2_tc's default build next to torch flash and cuDNN, one row per (dtype, causal, d, N): ms of
    each and fa2_tc / flash, as `benchmarks/fa2_tc_speed.py` measured them (checked rows only)."""
    return _default_build_speed(FA2_TC_SPEED, "fa2_tc", path).reset_index()


#: fa3_tc's default build (wgmma, Hopper) against torch flash, cuDNN and fa2_tc in one run
#: (benchmarks/fa3_tc_speed.py --defaults, issue 22).
FA3_TC_SPEED = "fa3_tc_speed.csv"


def fa3_tc_speed(path=None):
    """fa3_tc's default build next to torch flash, cuDNN and fa2_tc's default, one row per (dtype,
    causal, d, N): ms of each, fa3_tc / flash and fa3_tc / cuDNN (checked rows only)."""
    wide = _default_build_speed(FA3_TC_SPEED, "fa3_tc", path)
    wide["fa3_tc / cuDNN"] = wide["fa3_tc"] / wide["torch_cudnn"]
    return wide.reset_index()
