"""Readers of the project's own measurement files, each with the one schema its writer produces.

The files live in data/measurements/current/ (or archive/<run_id>/), found with
`gpu_kernels.measure.manifest.lookup`; nothing here guesses a column name or a unit. A file whose
columns differ from its writer's raises `MeasurementFileError` naming the file and the missing
columns, so a changed writer breaks the lecture loudly instead of silently dropping a number.

Schemas (long format: one row per kernel, shape and metric):

* `bench_h200.csv` (`python -m gpu_kernels bench`): BENCH_COLUMNS; wall time = metric
  `time_ms_median` in ms.
* `compare_h200.csv`, `compare_h200_fast.csv` (`python -m gpu_kernels bench --compare`):
  COMPARE_COLUMNS; wall time = metric `ms` (the median) in ms.
* the fp16/bf16 tensor-core runs (`tensor_core_speedups`): `figure2_h200.csv` (FIGURE2_COLUMNS),
  `tc_bench_h200.csv` (TC_BENCH_COLUMNS) and the energy run's `energy_attention_h200.csv` (read by
  simlib.energy_claim).

>>> import io
>>> text = "kernel,batch,heads,seq_len,head_dim,params,metric,value,unit,note\\n" \\
...        "tiled,1,16,4096,64,Br=64,time_ms_median,2.5,ms,\\n"
>>> median_times(read_csv(io.StringIO(text), BENCH_COLUMNS), "kernel", BENCH_TIME_METRIC).time_ms.item()
2.5
"""

import json

import pandas as pd

from gpu_kernels.measure.manifest import lookup, sidecar_of

from .. import energy_claim

SHAPE_COLUMNS = ("batch", "heads", "seq_len", "head_dim", "params", "metric", "value", "unit", "note")
BENCH_COLUMNS = ("kernel", *SHAPE_COLUMNS)
COMPARE_COLUMNS = ("variant", *SHAPE_COLUMNS)
BENCH_TIME_METRIC = "time_ms_median"
COMPARE_TIME_METRIC = "ms"
SHAPE = ["batch", "heads", "seq_len", "head_dim"]


class MeasurementFileError(ValueError):
    """A measurement file that does not have its writer's schema; the message names the file."""


def read_csv(path, columns):
    """The CSV at `path` with at least `columns`; MeasurementFileError naming the file and the
    missing columns otherwise."""
    frame = pd.read_csv(path)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise MeasurementFileError(
            f"{path}: missing column(s) {', '.join(missing)} (its writer's columns: {', '.join(columns)})"
        )
    return frame


def read_provenance(path):
    """The sidecar of the measurement file at `path` (F.provenance.json or <stem>.provenance.json)."""
    side = sidecar_of(path)
    if side is None:
        raise FileNotFoundError(f"{path}: no provenance sidecar beside it")
    return json.loads(side.read_text())


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
    return read_csv(path if path is not None else lookup("bench_h200.csv"), BENCH_COLUMNS)


def read_compare(path=None):
    """`compare_h200.csv` (`python -m gpu_kernels bench --compare`) as written."""
    return read_csv(path if path is not None else lookup("compare_h200.csv"), COMPARE_COLUMNS)


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
#: python -m gpu_kernels.tensor_core.bench -> tc_bench_h200.csv, later tc_side_by_side_h200.csv
#: (forward, bf16/fp16; PyTorch's math vs flash SDPA backends, and our naive_tc vs fa2_tc kernels in
#: their default configuration).
FIGURE2 = "figure2_h200.csv"
FIGURE2_COLUMNS = ("variant", "dropout_p", "batch", "seq_len", "heads", "head_dim", "dtype", "wall_ms_median")
TC_BENCH = "tc_bench_h200.csv"
TC_SIDE_BY_SIDE = "tc_side_by_side_h200.csv"
TC_BENCH_COLUMNS = (
    "kernel",
    "config",
    "dtype",
    "batch",
    "heads",
    "seq_len",
    "head_dim",
    "causal",
    "median_ms",
)
TC_PAIRS = (("torch_math", "torch_flash"), ("naive_tc", "fa2_tc"))
#: benchmarks/energy_h200.py -> energy_attention_h200.csv (NVML energy and time per call; d = 64 in
#: every row of that run, stated in its sidecar's `what`).
ENERGY = "energy_attention_h200.csv"
ENERGY_HEAD_DIM = 64
TC_COLUMNS = ["run", "baseline", "kernel", "dtype", "seq_len", "head_dim", "dropout_p", "speed-up"]
#: The standard attention the posts compare with (PyTorch's); naive_tc / fa2_tc are our kernels (context).
STANDARD = ("attention_ref", "torch_math")


def _current(name):
    try:
        return lookup(name)
    except FileNotFoundError:
        return None


def figure2_speedups(path):
    """standard / FA2-varlen step time per dropout from figure2_h200.csv."""
    frame = read_csv(path, FIGURE2_COLUMNS)
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
    frame = read_csv(path, TC_BENCH_COLUMNS)
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
    by simlib.energy_claim): the math backend accumulates in fp32, the flash backend is FA2."""
    calls = energy_claim.attention_calls(path)
    calls = calls[calls.dtype == "bf16"]
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


def tensor_core_speedups(figure2="current", tc_bench="current", energy="current", side_by_side="current"):
    """Every fp16/bf16 tensor-core speed-up of standard attention over FlashAttention-2 measured on the
    H200: from the files in data/measurements/current/ ("current"), a path, or None to leave a run
    out; an empty frame when no run is there."""
    figure2 = _current(FIGURE2) if figure2 == "current" else figure2
    tc_bench = _current(TC_BENCH) if tc_bench == "current" else tc_bench
    energy = _current(ENERGY) if energy == "current" else energy
    side_by_side = _current(TC_SIDE_BY_SIDE) if side_by_side == "current" else side_by_side
    parts = [
        figure2_speedups(figure2) if figure2 is not None else None,
        tc_bench_speedups(tc_bench) if tc_bench is not None else None,
        tc_bench_speedups(side_by_side, "tensor-core side by side, fwd")
        if side_by_side is not None
        else None,
        energy_run_speedups(energy) if energy is not None else None,
    ]
    parts = [p for p in parts if p is not None and len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=TC_COLUMNS)
