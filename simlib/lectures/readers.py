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

>>> import io
>>> text = "kernel,batch,heads,seq_len,head_dim,params,metric,value,unit,note\\n" \\
...        "tiled,1,16,4096,64,Br=64,time_ms_median,2.5,ms,\\n"
>>> median_times(read_csv(io.StringIO(text), BENCH_COLUMNS), "kernel", BENCH_TIME_METRIC).time_ms.item()
2.5
"""

import json

import pandas as pd

from gpu_kernels.measure.manifest import lookup, sidecar_of

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
