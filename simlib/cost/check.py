"""Predicted against measured: every committed timing and NVML energy of a modelled implementation.

`committed()` reads the measurement files of data/measurements/current/ (the energy run's NVML
joules and times, the side-by-side CUDA-event medians of the 16-bit kernels, causal included, the
fp32 benches), maps each row to an implementation and its workload, predicts it, and returns one
row per measurement: predicted / measured time (target ±20 %) and energy (±15 %), the binding roof,
and whether the row's time was one the calibration used (``in_fit``). Rows of implementations that
are measured only (cuDNN, memory-efficient) or of mappings the model does not cover are left out
and counted in `skipped()`.

``python -m simlib.cost.check [--out FILE.csv]`` writes the table (simlib.safe_write).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..energy import MEASUREMENTS
from ..measured_files import csv_rows, own_sidecar
from ..workload import Workload
from .common import workload_of_row
from .fit import (
    BLOCK_CLASSES,
    D128,
    FA3_FILE,
    FA3_PATH,
    NAIVE_TC_D128,
    V4_PATH,
    V5_PATH,
    WALL_FILES,
    is_default_build,
    round_rows_in_fit,
)
from .host import DISPATCH
from .implementations import IMPLEMENTATIONS
from .predict import predict
from .rates import load_cost_hardware

TIME_GOAL, ENERGY_GOAL = 0.20, 0.15
#: The H200's static power (W), which every launch pays for its predicted time (simlib.cost.model).
STATIC_W = load_cost_hardware("h200").static_w
#: What names one row of every table here: the implementation, its dtype and the shape.
KEY_COLUMNS = ["implementation", "dtype", "batch", "heads", "seq_len", "head_dim", "causal"]
#: The committed files with times (and joules), and how each names its implementations.
ALIASES = {"naive": "numba_naive", "tiled": "numba_tiled"}
NAIVE_TC_PARTS = {"naive_tc_scores": "scores", "naive_tc_softmax": "softmax", "naive_tc_pv": "pv"}
#: The tensor-core kernels' default mapping (configs named otherwise in the side-by-side ran other tiles).
TC_DEFAULT = {"fa2_tc": "w4_bc64", "naive_tc": "w4_bc64"}
_skipped: Counter = Counter()


#: The model's freeze (docs/COST.md): commit 56eacf1, committed at this time. A committed measurement made
#: later, at shapes fixed before it (a run that finished a grid the budget had cut), is labelled so.
FREEZE_UTC = "2026-12-01T22:57:35+00:00"
AFTER_FREEZE = "committed shapes measured after the freeze"


@functools.cache
def _sidecar(name: str) -> dict:
    """A committed file's sidecar, read once per process (measured_after_freeze asks per row)."""
    return own_sidecar(MEASUREMENTS / name)


def measured_after_freeze(name: str, case: list[str], kept: str) -> bool:
    """Whether the row of `case` in the committed file `name` was measured after the freeze: its run is
    dated after it and the row is not one the run kept from an earlier run (its sidecar's `kept` list,
    benchmarks/eager16_h200.py --resume)."""
    side = _sidecar(name)
    return side.get("date_utc", "") > FREEZE_UTC and case not in side.get(kept, [])


def _row(source, impl, w, ms, joules=None, launch=None, note="", after_freeze=False):
    return {
        "after_freeze": after_freeze,
        "source": source,
        "implementation": impl,
        "workload": w,
        "measured_ms": ms,
        "measured_j": joules,
        "launch": launch,
        "note": note,
    }


def _read(name: str) -> list[dict]:
    path = MEASUREMENTS / name
    if not path.is_file():
        return []
    return csv_rows(path)


def measured_rows(files: tuple[str, ...] | None = None) -> list[dict]:
    """Every committed measurement of a forward pass, as (source, implementation, workload, ms, J)."""
    out = []
    for r in _read("energy_attention_h200.csv"):
        if r["status"] != "ok" or r["pass"] != "fwd":
            continue
        v = r["variant"]
        impl = "naive_tc" if v in NAIVE_TC_PARTS else v
        w = workload_of_row(r, causal=False)
        out.append(
            _row(
                "energy_attention_h200.csv",
                impl,
                w,
                float(r["ms_per_call"]),
                float(r["joules_per_call"]),
                NAIVE_TC_PARTS.get(v),
            )
        )
    for r in _read("eager_bf16_h200.csv"):
        if r["status"] != "ok":
            continue
        impl, _, launch = r["variant"].partition(":")
        w = workload_of_row(r, causal=False)
        joules = float(r["joules_per_call"]) if r.get("joules_per_call") else None
        out.append(_row("eager_bf16_h200.csv", impl, w, float(r["ms_per_call"]), joules, launch or None))
    for name in ("tc_side_by_side_h200.csv", "tc_side_by_side_h200_causal.csv", "tc_bench_h200.csv"):
        for r in _read(name):
            v, config = r["kernel"], (r.get("config") or "").split(" ")[0]
            if not r.get("median_ms") or r.get("ok", "True") != "True":
                continue
            if v in TC_DEFAULT and config != TC_DEFAULT[v]:
                _skipped[f"{v} {config} (not the default tiles)"] += 1
                continue
            w = workload_of_row(r)
            out.append(_row(name, v, w, float(r["median_ms"])))
    # the 16-bit baseline's Hugging Face eager attention (helper baseline's runs: softmax to fp32, cast back),
    # timed at the side-by-side's shapes and NVML-measured at the energy run's: the model's eager_bf16
    for r in _read("eager16_h200.csv"):
        if (
            r["variant"] != "eager_hf"
            or r["pass"] != "fwd"
            or r.get("ok") != "True"
            or not r.get("median_ms")
        ):
            continue
        case = [r["dtype"], r["causal"], r["head_dim"], r["seq_len"]]
        late = measured_after_freeze("eager16_h200.csv", case, "time_cases_kept")
        out.append(
            _row(
                "eager16_h200.csv", "eager_bf16", workload_of_row(r), float(r["median_ms"]), after_freeze=late
            )
        )
    for r in _read("eager16_energy_h200.csv"):
        if r["variant"] != "eager_hf" or r["pass"] != "fwd" or r["status"] != "ok":
            continue
        w = workload_of_row(r)
        out.append(
            _row(
                "eager16_energy_h200.csv",
                "eager_bf16",
                w,
                float(r["ms_per_call"]),
                float(r["joules_per_call"]),
                after_freeze=measured_after_freeze(
                    "eager16_energy_h200.csv", [r["dtype"], r["pass"], r["seq_len"]], "energy_cases_kept"
                ),
            )
        )
    # fa2_tc version 4's default build (its run, archived) and version 5's (the current file)
    for path, variant in ((V4_PATH, "fa2_tc_v4"), (V5_PATH, "fa2_tc_v5")):
        for r in csv_rows(path) if path.is_file() else []:
            if r["kernel"] != "fa2_tc" or not r["config"].startswith("default") or r.get("ok") != "True":
                continue
            w = workload_of_row(r)
            out.append(_row("fa2_tc_speed.csv", variant, w, float(r["median_ms"])))
    # fa3_tc's default builds (the wgmma kernel), the every-kernel side by side (run every2-20261203)
    for r in csv_rows(FA3_PATH) if FA3_PATH.is_file() else []:
        if r["kernel"] != "fa3_tc" or not is_default_build(r["config"]) or r.get("ok") != "True":
            continue
        out.append(_row(FA3_FILE, "fa3_tc", workload_of_row(r), float(r["median_ms"])))
    for name in ("bench_h200.csv", "compare_h200.csv", "compare_h200_fast.csv"):
        for r in _read(name):
            if r["metric"] not in ("ms", "time_ms_median"):
                continue
            v = str(r.get("variant") or r.get("kernel"))
            v = ALIASES.get(v, v)
            w = workload_of_row(r, dtype="fp32", causal=False)
            out.append(_row(name, v, w, float(r["value"])))
    if files is not None:
        out = [r for r in out if r["source"] in files]
    return out


def _in_fit(source: str, klass: str, w: Workload) -> bool:
    """Whether the calibration used this row's time (the d = 128 single-launch classes' wall rows)."""
    if source == "eager_bf16_h200.csv":
        return True
    if source in ("fa2_tc_speed.csv", FA3_FILE):
        return not w.causal
    if w.causal:
        return False
    return (source in WALL_FILES and klass in D128) or (
        source == "tc_side_by_side_h200.csv" and (klass in BLOCK_CLASSES or klass in NAIVE_TC_D128)
    )


def compare(rows: list[dict]) -> pd.DataFrame:
    out = []
    for r in rows:
        impl, w = r["implementation"], r["workload"]
        spec = IMPLEMENTATIONS.get(impl)
        if spec is None or not spec.modelled:
            _skipped[
                f"{impl} (measured only)" if spec else f"{impl} (not an implementation of the model)"
            ] += 1
            continue
        if w.dtype not in spec.dtypes:
            _skipped[f"{impl} {w.dtype} (dtype not modelled)"] += 1
            continue
        try:
            p = predict(impl, w)
        except ValueError as e:
            _skipped[f"{impl}: {str(e).split(':')[0]}"] += 1
            continue
        costs = p.launches
        if r["launch"]:
            costs = tuple(c for c in costs if c.launch.name == r["launch"])
            t = sum(c.time_s for c in costs)
            joules = sum(c.energy_j for c in costs)
        else:  # the whole call: the host's floor applies (simlib.cost.host)
            t, joules = p.time_s, p.energy_j
        top = max(costs, key=lambda c: c.time_s)
        label = impl + (f".{r['launch']}" if r["launch"] else "")
        out.append(
            {
                "source": r["source"],
                "implementation": label,
                "dtype": w.dtype,
                "batch": w.batch,
                "heads": w.heads,
                "seq_len": w.seq_len,
                "head_dim": w.head_dim,
                "causal": w.causal,
                "measured_ms": r["measured_ms"],
                "predicted_ms": t * 1e3,
                "ratio_time": t * 1e3 / r["measured_ms"],
                "measured_j": r["measured_j"],
                "predicted_j": joules if r["measured_j"] is not None else None,
                "ratio_energy": joules / r["measured_j"] if r["measured_j"] else None,
                "bound": "host"
                if not r["launch"] and p.host_bound
                else top.bound
                if len(costs) == 1
                else f"{top.bound} ({top.launch.name})",
                "in_fit": any(_in_fit(r["source"], c.launch.klass, w) for c in costs),
                "after_freeze": r.get("after_freeze", False),
            }
        )
    df = pd.DataFrame(out)
    if len(df):
        df["time_ok"] = (df.ratio_time - 1).abs() <= TIME_GOAL
        df["energy_ok"] = df.ratio_energy.map(
            lambda x: None if x is None or pd.isna(x) else abs(x - 1) <= ENERGY_GOAL
        )
    return df


def committed() -> pd.DataFrame:
    _skipped.clear()
    return compare(measured_rows())


def skipped() -> dict[str, int]:
    return dict(_skipped)


#: What benchmarks/cost_validate_h200.py measures at each post-freeze shape: (implementation, dtype).
VALIDATED = (
    ("naive_tc", "bf16"),
    ("fa2_tc", "bf16"),
    ("torch_flash", "bf16"),
    ("torch_math", "bf16"),
    ("eager_bf16", "bf16"),
    ("numba_naive", "fp32"),
    ("numba_tiled", "fp32"),
    ("numba_fast", "fp32"),
    ("torch_math", "fp32"),
    ("cupy_naive", "fp32"),
)


def parse_shapes(text: str) -> list[tuple[int, int, int, int, bool]]:
    """'B,H,N,d,causal;...' (causal 0 or 1) as tuples; ValueError naming --predict otherwise."""
    out = []
    from ..cli_values import nonnegative_int

    for part in text.split(";"):
        try:  # ASCII digits only (int() also reads '1_6' and other scripts' digits)
            b, h, n, d, c = (nonnegative_int(x) for x in part.split(","))
        except (ValueError, argparse.ArgumentTypeError):
            raise ValueError(f"--predict: expected B,H,N,d,causal;... with integers, got {part!r}") from None
        try:
            Workload(n, d, b, h)  # the model's ranges: positive, B, H ≤ 2^32, N ≤ 2^40
        except ValueError as e:
            raise ValueError(f"--predict: {part!r}: {e}") from None
        if c not in (0, 1):
            raise ValueError(f"--predict: causal must be 0 or 1, got {c}")
        out.append((b, h, n, d, bool(c)))
    return out


def parse_variants(text: str) -> tuple[tuple[str, str], ...]:
    """'impl:dtype,...' as pairs of modelled implementations; ValueError naming --variants otherwise."""
    out = []
    for part in text.split(","):
        impl, _, dtype = part.partition(":")
        spec = IMPLEMENTATIONS.get(impl)
        if spec is None or not spec.modelled or dtype not in spec.dtypes:
            raise ValueError(f"--variants: expected modelled implementation:dtype, got {part!r}")
        out.append((impl, dtype))
    return tuple(out)


def predict_shapes(
    shapes: list[tuple[int, int, int, int, bool]],
    frozen_commit: str,
    variants: tuple[tuple[str, str], ...] = VALIDATED,
) -> pd.DataFrame:
    """The model's predictions at the post-freeze shapes, one row per (shape, implementation, dtype).

    From round 7 on the host's time per call is measured in the validation run itself (its host probes,
    simlib.cost.host), so a prediction is the GPU-alone one (``predicted_gpu_ms``, ``predicted_gpu_j``:
    the launches, their static power for their own time) and the rule: where ``host_class`` names a
    dispatch class, the call takes max(predicted GPU time, the run's host figure) and pays the static
    power for the wait (`post_freeze`)."""
    rows = []
    for b, h, n, d, causal in shapes:
        for impl, dtype in variants:
            spec = IMPLEMENTATIONS[impl]
            if causal and not spec.causal:
                continue
            p = predict(impl, Workload(n, d, batch=b, heads=h, dtype=dtype, causal=causal), host_s=0.0)
            rows.append(
                {
                    "frozen_commit": frozen_commit,
                    "implementation": impl,
                    "dtype": dtype,
                    "batch": b,
                    "heads": h,
                    "seq_len": n,
                    "head_dim": d,
                    "causal": causal,
                    "predicted_gpu_ms": p.gpu_s * 1e3,
                    "predicted_gpu_j": p.gpu_energy_j,
                    "host_class": DISPATCH.get(impl, ""),
                    "bound": p.bound,
                    **{f"predicted_{k}_j": v for k, v in p.gpu_energy_terms.items()},
                }
            )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simlib.cost.check", description=__doc__.splitlines()[0])
    p.add_argument("--out", help="write the table to this CSV")
    p.add_argument("--predict", help="instead: predict these shapes, 'B,H,N,d,causal;...' (post-freeze)")
    p.add_argument("--frozen-commit", default="", help="with --predict: the commit of the frozen model")
    p.add_argument(
        "--variants",
        default="",
        help="with --predict: implementation:dtype,... (default: the first round's ten)",
    )
    p.add_argument(
        "--table", action="store_true", help="write data/cost/predicted_vs_measured_h200.csv (+ provenance)"
    )
    p.add_argument("--markdown", action="store_true", help="print docs/COST.md's generated tables")
    args = p.parse_args(argv)
    try:  # the destination and the shapes before any work: one line naming the flag, exit 2
        if args.out is not None:
            from ..safe_write import check_destination

            check_destination(args.out, "--out")
        shapes = parse_shapes(args.predict) if args.predict else None
        args.variants = parse_variants(args.variants) if args.variants else VALIDATED
        return _main(args, shapes)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace, shapes: list[tuple[int, int, int, int, bool]] | None) -> int:
    if args.markdown:
        print(report_markdown(), end="")
        return 0
    if args.table:
        print(f"wrote {write_table()}")
        return 0
    if shapes:
        df = predict_shapes(shapes, args.frozen_commit, args.variants)
        if args.out:
            from ..safe_write import write_atomic

            write_atomic(args.out, df.to_csv(index=False, float_format="%.6g"))
        print(
            df[
                [
                    *KEY_COLUMNS,
                    "predicted_gpu_ms",
                    "predicted_gpu_j",
                    "host_class",
                    "bound",
                ]
            ].to_string()
        )
        return 0
    df = committed()
    if args.out:
        from ..safe_write import write_atomic

        write_atomic(args.out, df.to_csv(index=False))
    summary = df.groupby("implementation").agg(
        rows=("ratio_time", "size"),
        time_min=("ratio_time", "min"),
        time_max=("ratio_time", "max"),
        time_ok=("time_ok", "mean"),
        energy_min=("ratio_energy", "min"),
        energy_max=("ratio_energy", "max"),
    )
    print(summary.to_string(float_format=lambda x: f"{x:.2f}"))
    print("skipped:", skipped())
    return 0


PREDICTIONS = "predictions_after_freeze_h200.csv"
VALIDATION = "cost_validate_h200.csv"
TABLE = "predicted_vs_measured_h200.csv"


@dataclass(frozen=True)
class Round:
    """One round of the protocol: the frozen model's predictions (data/cost/, committed before the run)
    and the run that measured those shapes (data/measurements/current/)."""

    when: str
    predictions: str
    validation: str
    run_id: str
    #: round 7 on: the predictions are GPU-alone and the run's host probes give each call's floor
    host_per_run: bool = False
    #: round 8 on: a call's measured time is its loop's own (loop_ms_per_call, without the NVML window's
    #: wait for the step after the loop) and a probe's host figure its host time with the GPU kept busy
    #: (host_ms_per_call); before: both the window's ms_per_call
    loop_time: bool = False
    #: round 10 on: a dispatched call's host figure is its adjacent probes' (`adjacent_host_ms`: the probe
    #: taken just before and just after its own loop); before: the run's one probe per implementation
    host_adjacent: bool = False


#: Round 1: model 56eacf1, predictions 20d920b, run cost-validate-20261202. Round 2: the causal wave
#: model, frozen again (docs/COST.md), new shapes and fa2_tc version 4 and the fp16 eager baseline.
#: Round 3: the softmax's loop trips, the fp16 eager softmax class and fa2_tc version 5 (docs/COST.md). Round 4
#: (frozen f7ff79c): the legacy mask add, the fp16 softmax's two block kernels, the per-CTA fixed cost, fa3_tc;
#: a round whose run is not committed yet has no rows in the table.
ROUNDS = (
    Round("measured after the freeze", PREDICTIONS, VALIDATION, "cost-validate-20261202"),
    Round(
        "measured after the second freeze",
        "predictions_after_freeze2_h200.csv",
        "cost_validate2_h200.csv",
        "cost-validate2-20261202",
    ),
    Round(
        "measured after the third freeze",
        "predictions_after_freeze3_h200.csv",
        "cost_validate3_h200.csv",
        "cost-validate3-20261202",
    ),
    Round(
        "measured after the fourth freeze",
        "predictions_after_freeze4_h200.csv",
        "cost_validate4_h200.csv",
        "20261202T075622Z-0ecf16c",  # FLASHIO_RUN_ID unset: the script's own id
    ),
    Round(
        "measured after the fifth freeze",
        "predictions_after_freeze5_h200.csv",
        "cost_validate5_h200.csv",
        "cost-validate5-20261203",
    ),
    Round(
        "measured after the sixth freeze",
        "predictions_after_freeze6_h200.csv",
        "cost_validate6_h200.csv",
        "cost6-validate6-20261203",
    ),
    Round(
        "measured after the seventh freeze",
        "predictions_after_freeze7_h200.csv",
        "cost_validate7_h200.csv",
        "cost7-validate7-20261204",
        host_per_run=True,
    ),
    Round(
        "measured after the eighth freeze",
        "predictions_after_freeze8_h200.csv",
        "cost_validate8_h200.csv",
        "cost8-validate8-20261204",
        host_per_run=True,
        loop_time=True,
    ),
    Round(  # predicted (frozen a90cbb3), not yet measured: post_freeze gives no rows until the run is committed
        "measured after the ninth freeze",
        "predictions_after_freeze9_h200.csv",
        "cost_validate9_h200.csv",
        "cost9-validate9",
        host_per_run=True,
        loop_time=True,
    ),
)


def post_freeze(rnd: Round = ROUNDS[0]) -> pd.DataFrame:
    """A round's frozen predictions (data/cost/, written before the run) beside its measurements,
    unchanged: one row per (shape, implementation, dtype)."""
    from .rates import COST_DIR

    if not (COST_DIR / rnd.predictions).is_file():
        return pd.DataFrame()
    pred = pd.read_csv(COST_DIR / rnd.predictions)
    meas = pd.DataFrame(_read(rnd.validation))
    if meas.empty:
        return pd.DataFrame()
    meas, probes = measured_of_run(meas, rnd.loop_time)
    keys = KEY_COLUMNS
    extra = ["call_host_ms", "window_ms"] if rnd.loop_time else []
    extra += ["adjacent_host_ms"] if rnd.host_adjacent else []
    df = pred.merge(
        meas[[*keys, "measured_ms", "measured_j", "measured_gpu_ms", *extra]], on=keys, how="inner"
    )
    if rnd.host_per_run:
        df = with_host_of_run(df, probes, adjacent=rnd.host_adjacent)
    df["source"] = rnd.validation
    df["ratio_time"] = df.predicted_ms / df.measured_ms
    df["ratio_energy"] = df.predicted_j / df.measured_j
    df["time_ok"] = (df.ratio_time - 1).abs() <= TIME_GOAL
    df["energy_ok"] = (df.ratio_energy - 1).abs() <= ENERGY_GOAL
    df["in_fit"] = [
        round_rows_in_fit(
            rnd.validation,
            r.implementation,
            r.dtype,
            bool(r.causal),
            (r.batch, r.heads, r.seq_len, r.head_dim),
        )
        for r in df.itertuples()
    ]
    return df


def measured_of_run(meas: pd.DataFrame, loop_time: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A validation run's rows (benchmarks/cost_validate_h200.py) as (the calls, the host probes), each
    with measured_ms, measured_j and measured_gpu_ms; window_ms is the NVML window's time per call. With
    `loop_time` (round 8 on) a call's measured_ms is its loop's own time per call (loop_ms_per_call: round
    7's windows waited for the counter's step after the loop, up to 0.1 s on 0.3 s probe loops and 0.7 s
    kernel loops), call_host_ms its host time per call with the GPU kept busy (host_ms_per_call), and a
    probe's measured_ms is that host time: the host figure `host_of_run` takes."""
    meas = meas[meas.status == "ok"].rename(columns={"variant": "implementation"}).copy()
    for c in ("batch", "heads", "seq_len", "head_dim"):
        meas[c] = meas[c].astype(int)
    meas["causal"] = meas["causal"].map(lambda x: str(x) == "True")
    meas["window_ms"] = meas.ms_per_call.astype(float)
    meas["measured_ms"] = (
        pd.to_numeric(meas.loop_ms_per_call, errors="coerce") if loop_time else meas.window_ms
    )
    meas["measured_j"] = meas.joules_per_call.astype(float)
    gpu = meas.gpu_ms_per_call if "gpu_ms_per_call" in meas else pd.Series("", index=meas.index)
    meas["measured_gpu_ms"] = pd.to_numeric(gpu, errors="coerce")
    host = meas.host_ms_per_call if loop_time else pd.Series("", index=meas.index)
    meas["call_host_ms"] = pd.to_numeric(host, errors="coerce")
    blank = pd.Series("", index=meas.index)
    meas["adjacent_host_ms"] = adjacent_host_ms(
        pd.to_numeric(meas.get("probe_host_before_ms", blank), errors="coerce"),
        pd.to_numeric(meas.get("probe_host_after_ms", blank), errors="coerce"),
    )
    probes = meas[meas["pass"] == "host_probe"].copy()
    if loop_time:
        probes["measured_ms"] = probes.call_host_ms
    return meas[meas["pass"] == "fwd"], probes


def host_of_run(probes: pd.DataFrame) -> dict[tuple[str, str, int, bool], float]:
    """The run's host figure (ms per call) of each (implementation, dtype, head dim, mask): its host probe's
    measured_ms (benchmarks/cost_validate_h200.py, rows with pass = host_probe): round 7 the probe's loop
    time in its NVML window, round 8 on its host time per call with the GPU kept busy (`post_freeze`)."""
    return {
        (r.implementation, r.dtype, int(r.head_dim), bool(r.causal)): float(r.measured_ms)
        for r in probes.itertuples()
    }


def adjacent_host_ms(before: pd.Series, after: pd.Series) -> pd.Series:
    """A call's host figure from the probes adjacent to its loop (round 10 on): the mean of the probe's host
    time just before the loop and just after it, the one that was measured where the other is missing, NaN
    without either. The mean, not the max: the host's state drifts within a process (round 8 and 9: a numba
    plan's probe and the call's own host time up to 2x apart, in both directions), the loop lies between
    the two probes, and a drift between them averages to their mean over it; the host-time measure itself
    already sits at or above the host-bound loops it stands for (the four numba plan calls of rounds 8 and
    9: 1.03-1.24x their loops), so the larger of two would bias the floor further up.

    >>> list(adjacent_host_ms(pd.Series([0.080, None, None]), pd.Series([0.100, 0.090, None])))
    [0.09, 0.09, nan]
    """
    return pd.concat([before, after], axis=1).mean(axis=1, skipna=True)


def with_host_of_run(df: pd.DataFrame, probes: pd.DataFrame, adjacent: bool = False) -> pd.DataFrame:
    """A host-per-run round's frozen GPU-alone predictions with the rule applied: where ``host_class`` names
    a dispatch class, the call takes max(predicted GPU time, the run's host figure of the implementation at
    that head dim and mask) and pays the static power for the wait; ``ratio_gpu`` is the GPU-alone
    prediction over the call's GPU time alone in the same run (gpu_ms_per_call). With `adjacent` (round 10
    on) the host figure is the call's own ``adjacent_host_ms`` (its adjacent probes), the run's probe only
    where the call has none."""
    host = host_of_run(probes)
    df = df.copy()
    has = df.host_class.fillna("").astype(str) != ""
    own = df.adjacent_host_ms if adjacent else pd.Series(float("nan"), index=df.index)
    df["host_ms"] = [
        (a if pd.notna(a) else host.get((r.implementation, r.dtype, int(r.head_dim), bool(r.causal))))
        if h
        else None
        for r, h, a in zip(df.itertuples(), has, own.astype(float))
    ]
    wait_ms = (df.host_ms.astype(float) - df.predicted_gpu_ms).clip(lower=0).fillna(0.0)
    df["predicted_ms"] = df.predicted_gpu_ms + wait_ms
    df["predicted_j"] = df.predicted_gpu_j + STATIC_W * wait_ms * 1e-3
    df["bound"] = [("host" if w > 0 else b) for w, b in zip(wait_ms, df.bound)]
    df["ratio_gpu"] = df.predicted_gpu_ms / df.measured_gpu_ms
    return df


#: The rounds whose predictions came from a model before round 3's changes (softmax trips, fp16 class).
EARLY_ROUNDS = tuple(r.when for r in ROUNDS[:2])
#: The rounds predicted before round 4's changes (the legacy mask add, the fp16 softmax's two kernels,
#: the per-CTA fixed cost, fa3_tc).
PRE_ROUND4 = tuple(r.when for r in ROUNDS[:3])
#: The rounds predicted before round 5's changes (the numba kernels' toggle-free instruction price, fa3_tc's
#: L2-sectioned order).
PRE_ROUND5 = tuple(r.when for r in ROUNDS[:4])


#: The rounds predicted before round 6's changes (the softmax dispatch, fa3_tc's all64 rule, the host floor).
PRE_ROUND6 = tuple(r.when for r in ROUNDS[:5])
#: The implementations whose calls the host's floor covers.
FLASH_CALLS = tuple(DISPATCH)


def _energy_at_measured_time(row) -> float:
    """The predicted joules with the static power paid for the measured time, over the measured joules."""
    extra = STATIC_W * (row["measured_ms"] - row["predicted_ms"]) * 1e-3
    return (row["predicted_j"] + extra) / row["measured_j"]


def _static_explains(row) -> bool:
    """Whether the energy miss is the static power paid for a mispredicted time: at the measured time the
    energy would be within its target (rounds from round 4 on)."""
    if row.get("when") in PRE_ROUND4 or not row.get("measured_j") or pd.isna(row.get("predicted_j")):
        return False
    return abs(_energy_at_measured_time(row) - 1) <= ENERGY_GOAL


def cause(row) -> str:
    """Why a row misses its target: the explanations this project has for each kind of miss (empty
    when the row is within both targets)."""
    impl, out = row["implementation"], []
    t_ok = row.get("time_ok", True) is not False
    e_ok = row.get("energy_ok") is not False
    seventh = row.get("when") == ROUNDS[6].when
    eighth = row.get("when") == ROUNDS[7].when
    if not t_ok:
        if eighth and impl in ("fa2_tc_v5", "fa3_tc") and row.get("bound") == "host":
            out.append(
                "time: host-bound, and the numba plan launch's host time is not one figure per implementation in a "
                "run: with the GPU kept busy (calls queued behind a spin kernel, no NVML window) the probes at "
                "B = H = 1, N = 128, d = 64 causal took 110 µs a call (fa2_tc_v5) and 56 µs (fa3_tc), the calls "
                "at (6, 7, 1000, 64, causal) themselves 93 and 106 µs, measured the same way a few seconds "
                "later, against loops of 87 and 103 µs (GPU alone 40 and 33 µs): the call's own host time "
                "predicts its loop within 8 %, the probe's does not, in either direction (round 7: the probes "
                "longer, here fa3_tc's shorter), so neither the idle GPU nor the NVML tail is all of it; what "
                "moves a numba launch's host time by 2× within one process is not profiled"
            )
        elif eighth and impl == "torch_flash" and not row["causal"] and row["ratio_time"] > 1:
            out.append(
                "time: the wave model's last partial wave: 558 CTAs of torch flash (N = 3900, d = 128: 31 Q "
                "blocks × 18 heads) on 132 SMs × 2 slots are 2.11 waves, which the model prices as 3 (q = 1.42, "
                "each CTA of the last wave at half its SM under the latency rule), while the launch alone on the "
                "GPU took 1.21× less than predicted (0.472 against 0.569 ms): the 30 CTAs of the last wave, one "
                "per SM, run faster than half an SM's rate (round 7's (2, 15, 2600, 128): 2.39 waves, GPU-alone "
                "ratio 1.14)"
            )
        elif seventh and impl in ("fa2_tc_v5", "fa3_tc") and row.get("bound") == "host":
            out.append(
                "time: host-bound, and the run's host probe of the numba plan launch (B = H = 1, N = 128: "
                "106–122 µs a call, fa3_tc non-causal at d = 64 72 µs) is longer than this call's own loop "
                "(78–82 µs a call at (5, 9, 1200, 64, causal), GPU alone 49–58 µs); torch SDPA's probes "
                "(69–76 µs) were within 0–16 % of its host-bound loops (64–77 µs), and at (3, 8, 900, 128, "
                "causal) the numba probes within 4–17 % of the loops; during the probes the board drew 123 W (its "
                "idle, under the 141 W static: the GPU idle between the probe's calls); why the plan launch "
                "takes longer there is not profiled (round 8: each probe's NVML window, which its time per call is "
                "taken over, was a third longer than its loop, 0.4 s on 0.3 s, the kernels' up to a seventh, "
                "0.8 s on 0.7 s)"
            )
        elif seventh and impl == "eager_bf16" and row["dtype"] == "fp16" and row["seq_len"] > 1024:
            out.append(
                "time: the fp16 shared-memory block softmax's cost per row and per element (round 7), fitted on "
                "the committed rows at N = 2048–16384, is short for a row of 1200 (the chain alone on the GPU "
                "1.08 ms against 0.85 predicted): the kernel runs slower per score at N between 1024 and 2048 "
                "than the fit's rows say (round 4 saw the same at N = 1400–2048)"
            )
        elif seventh and impl == "eager_bf16" and row["seq_len"] <= 1024:
            out.append(
                "time: a short chain (0.25–0.34 ms) at N = 900, the warp softmax and the legacy causal mask "
                "add (not changed in round 7): the chain alone on the GPU took 0.25 (fp16) and 0.31 ms (bf16) "
                "against 0.19 and 0.26 predicted (GPU-alone ratios 0.75 and 0.85); six launches of 18–115 µs "
                "predicted each, whose per-launch fixed cost is the 3 µs lead (launch_s), not measured"
            )
        elif impl in FLASH_CALLS and row.get("when") not in PRE_ROUND6 and row["ratio_time"] < 1:
            out.append(
                "time: host-bound: a short call's loop time is the host's, not the GPU's (round 6's run: at "
                "(4, 9, 1100, 64, causal) and (3, 7, 1000, 128) the loop took 61–127 µs a call while the call "
                "alone on the GPU took 34–66 µs, gpu_ms_per_call, which the model's launches predict at "
                "0.87–1.19); the model's host floor (59–62 µs, the shortest of round 5's loops) is below this "
                "run's host time per call, which varies by run and by implementation (fa3_tc's plan launch "
                "127 µs here, 65 µs in round 5)"
            )
        elif impl == "eager_bf16" and row["dtype"] == "fp16" and row.get("when") not in PRE_ROUND6:
            out.append(
                "time: the fp16 block softmax priced at the fill of its 1024 × 8-element trips (0.13 at N = 1100, "
                "round 6) is slower than the kernel: the chain alone on the GPU took 0.87 ms against 1.42 "
                "predicted; a trip's time does not grow with its emptiness as the fill assumes (the committed "
                "fp16 rows at N = 2048, fill 0.25, show it too: 1.31)"
            )
        elif (
            impl in ("torch_flash", "fa2_tc", "fa2_tc_v4", "fa2_tc_v5", "numba_tiled", "fa3_tc")
            and row["causal"]
        ):
            if row.get("when") == ROUNDS[0].when:  # predicted by the model frozen before the wave model
                out.append(
                    "time: causal blocks do unequal work (block i visits i+1 K/V tiles) and launch in index order, "
                    "so the long ones finish last; the model frozen then let them even out (q = 1) and priced the "
                    "masked diagonal tiles as unmasked ones"
                )
            elif row.get("when") in PRE_ROUND4:
                out.append(
                    "time: the wave model list-schedules the causal blocks' unequal work; what it leaves out: "
                    "the masked diagonal tiles priced as unmasked ones, and each block's fixed cost (Q load, "
                    "epilogue) counted per generation rather than per block (per CTA from round 4 on)"
                )
            elif row.get("when") in PRE_ROUND5:
                out.append(
                    "time: the wave model list-schedules the causal blocks' unequal work, each CTA's fixed cost "
                    "(t_block) inside the schedule; what it leaves out: the masked diagonal tiles' mask code "
                    "(fa3_tc's SASS: 100 more instructions per masked visit at d = 64, 26 %), and a CTA's "
                    "latency floor at short launches"
                )
            else:
                out.append(
                    "time: a short causal launch: at round 5's N = 900 (d = 128) and 1340 (d = 64) torch flash, "
                    "fa2_tc_v5 and fa3_tc all took 59–70 µs whatever the work the model gives them (28–72 µs "
                    "predicted; fa3_tc, whose wgmma rate predicts it fastest, misses most); the list schedule with "
                    "each CTA's t_block does not reach that floor (its cause, the heaviest CTA's serial K/V visits "
                    "at one CTA per SM, cold K/V from DRAM, or launch overhead, is not profiled); the diagonal "
                    "tiles' mask code is not priced either"
                )
        elif (
            impl == "eager_bf16" and row["causal"] and row["ratio_time"] < 1 and row.get("when") in PRE_ROUND4
        ):
            out.append(
                "time: the broadcast (1, 1, N, N) mask add runs PyTorch's non-vectorized elementwise kernel "
                "(CUDALoops.cuh: the iterator is not contiguous, launch_legacy_kernel), which the model frozen "
                "then priced as the vectorized one (round 4 prices it as SDPA math's where, the same template)"
            )
        elif impl == "eager_bf16" and row["dtype"] == "fp16" and row.get("when") in EARLY_ROUNDS:
            out.append(
                "time: in fp16 the softmax to fp32 is one fused half-to-float kernel, in bf16 a cast to fp32 and an fp32 "
                "softmax (SoftMax.cpp), and the model frozen then priced fp16 with the bf16 class"
                if row["ratio_time"] > 1
                else "time: outside ±20 % (the fp16 chain runs about 1.7× slower per score at these N than at powers of "
                "two, where the bf16 one runs 1.3× slower: no cause established)"
            )
        elif impl == "eager_bf16" and row["dtype"] == "fp16" and row.get("when") in PRE_ROUND4:
            out.append(
                "time: the fp16 softmax class (the fused half-to-float kernel) had one eta over its committed rows, "
                "which spread 0.45–1.17 of its roof; round 4 splits it by SoftMax.cu's can_use_smem (N % 8: the "
                "row in shared memory or three passes over global memory)"
            )
        elif impl == "eager_bf16" and row["dtype"] == "fp16":
            out.append(
                "time: the fp16 block softmax (cunn_SoftMaxForwardSmem) runs slower per score at N = 1400–2048 than "
                "at 4096 and above, which its one eta does not follow (no mechanism established: the block is "
                "min(N, 1024) threads, so a row is one partly filled trip there)"
            )
        elif impl == "fa3_tc" and not row["causal"] and row["ratio_time"] < 1:
            out.append(
                "time: fa3_tc's t_block (5.6 µs at d = 128) rests on its two non-causal rows (N = 4096 and 16384, "
                "where the blocks' fixed costs are 7 % of the time or less); at N = 700 (6 K/V visits a block, the "
                "pipeline's prologue and its thrown-away S per block, 9 generations of one block per SM) they are "
                "30 % of the prediction, and the missing 61 µs is what a t_block of about 12 µs would add: the fit's "
                "rows do not determine a block's fixed cost (not profiled)"
            )
        elif impl == "torch_math" and row["causal"]:
            out.append(
                "time: SDPA math builds and applies its causal mask in launches the model does not list (it prices one masked_fill)"
            )
        elif impl == "cupy_naive" and row["seq_len"] <= 256:
            out.append(
                "time: host-bound: nine cupy calls of a few microseconds of GPU work each; the model has no host dispatch time"
            )
        elif impl.startswith("naive_tc.softmax") and row["seq_len"] >= 16384:
            out.append(
                "time: 1024 threads per row at N = 16K: the softmax class's one eta, fitted over N = 1K–16K, is set by the shorter rows"
            )
        elif impl == "eager_bf16" and row["ratio_time"] < 1 and row.get("when") in EARLY_ROUNDS:
            out.append(
                "time: the softmax's last loop trip is partly empty at N not a multiple of its trip (block · 4 "
                "elements: simlib.cost.softmax_trips, priced from round 3 on), which the model frozen then left out"
            )
        else:
            out.append("time: outside ±20 % (no specific cause established)")
    if not e_ok:
        if eighth and impl == "numba_naive":
            out.append(
                "energy: numba naive at d = 128 (1.16–1.18; at d = 64 1.10–1.13, round 7 1.07–1.10, every row "
                "within ±2 % in time): since round 7 its shared loads are priced by their distinct words per warp "
                "instruction, the matmul's 16-word Bs loads interpolated between the broadcast and lane-distinct "
                "figures (a multicast of 2–16 words is not measured) and its other instructions at the "
                "toggle-free IADD3 figure; the remaining excess at d = 128 is not established"
            )
        elif impl in ("numba_naive", "numba_tiled") and row.get("when") not in PRE_ROUND5:
            out.append(
                "energy: from round 5 these kernels' unpriced instructions (address arithmetic, counters, compares; "
                "43–45 % of numba naive's matmul instructions on the uniform pipe) are priced at IADD3 on "
                "operands that never toggle (203 pJ, run cost5-units-20261203, beside 427 pJ toggling); what is "
                "left over-predicted is shared memory: its price comes from the energy run's LDS.32 with random "
                "data and a FADD per 4 B (1554 pJ per instruction + 3.79 pJ/B, about 2040 pJ per LDS.32), 3× the "
                "same run's lane-distinct LDS.32 with its LEA on small data (666 pJ) and 4× its broadcast one "
                "(492 pJ): the shared-memory price depends on the data and the broadcast, which the model does not "
                "follow (one figure for every kernel)"
            )
        elif impl in ("numba_naive", "numba_tiled"):
            out.append(
                "energy: most of these kernels' instructions are address arithmetic, compares and branches, priced at "
                "IMAD's 377 pJ per warp instruction; the energy run's residual implies about 55 pJ for numba naive's, "
                "but the integer ALU pipe is not that cheap (run cost-int-20261202: IADD3 383, LOP3 264, ISETP/SEL "
                "210 pJ beside IMAD 348; numba_tiled's SASS, sass_tiled_d64/d128.txt, weighted by them: 0.96–0.97 of "
                "IMAD's), so the excess lies elsewhere; broadcast shared loads priced as full 128-byte wavefronts "
                "cannot be all of it: the whole byte part of numba_tiled's shared-memory energy is 12 % of its "
                "prediction (1.11 of 8.99 J at N = 4096) against a 38 % excess"
            )
        elif impl in ("torch_flash", "eager_bf16") and not t_ok and row.get("when") in PRE_ROUND4:
            out.append(
                "energy: the static power is paid for the predicted time, which is "
                + ("short" if row["ratio_time"] < 1 else "long")
                + " (see time)"
            )
        elif _static_explains(row):
            out.append(
                f"energy: the static power ({STATIC_W:.0f} W) is paid for the predicted time, "
                f"{row['ratio_time']:.2f} of the measured one; at the measured time the energy ratio would be "
                f"{_energy_at_measured_time(row):.2f}"
            )
        else:
            out.append("energy: outside ±15 % (no specific cause established)")
    return "; ".join(out)


def table() -> pd.DataFrame:
    """Every committed measurement and every post-freeze one, predicted/measured, with the misses' causes."""
    a = committed()
    a["when"] = a.after_freeze.map({True: AFTER_FREEZE, False: "committed before the freeze"})
    after = [post_freeze(r).assign(when=r.when) for r in ROUNDS]
    after = [x for x in after if len(x)]
    cols = [
        "when",
        "source",
        "implementation",
        "dtype",
        "batch",
        "heads",
        "seq_len",
        "head_dim",
        "causal",
        "measured_ms",
        "predicted_ms",
        "ratio_time",
        "time_ok",
        "measured_j",
        "predicted_j",
        "ratio_energy",
        "energy_ok",
        "bound",
        "in_fit",
        "host_ms",
        "predicted_gpu_ms",
        "measured_gpu_ms",
        "ratio_gpu",
        "call_host_ms",
        "window_ms",
    ]
    frames = [a, *after]
    for f in frames:
        for c in cols:
            if c not in f:
                f[c] = None
    df = pd.concat([f[cols] for f in frames], ignore_index=True)
    df["cause"] = [cause(r) for r in df.to_dict("records")]
    return df


def write_table(path: Path | None = None) -> Path:
    """data/cost/predicted_vs_measured_h200.csv and its provenance sidecar (computed, not measured)."""
    import hashlib
    import json

    from ..safe_write import write_atomic
    from .fit import inputs
    from .rates import COST_DIR

    path = Path(path) if path else COST_DIR / TABLE
    text = table().to_csv(index=False, float_format="%.6g")
    write_atomic(str(path), text)
    sources = [
        *inputs(),
        *(
            {
                "file": f"data/measurements/current/{n}",
                "sha256": hashlib.sha256((MEASUREMENTS / n).read_bytes()).hexdigest(),
            }
            for n in (
                "energy_attention_h200.csv",
                "tc_side_by_side_h200_causal.csv",
                "tc_bench_h200.csv",
                "compare_h200_fast.csv",
                "eager16_h200.csv",
                "eager16_energy_h200.csv",
                *(r.validation for r in ROUNDS),
            )
            if (MEASUREMENTS / n).is_file()
        ),
    ]
    for n in (
        *(r.predictions for r in ROUNDS if (COST_DIR / r.predictions).is_file()),
        "h200_fit.json",
        "h200.json",
    ):
        sources.append(
            {"file": f"data/cost/{n}", "sha256": hashlib.sha256((COST_DIR / n).read_bytes()).hexdigest()}
        )
    side = {
        "what": "predicted / measured time and energy of every modelled implementation at every measured shape "
        "(computed by the cost model, not measured: regenerate, never edit)",
        "generated_by": "python -m simlib.cost.check --table",
        "frozen_commit": str(pd.read_csv(COST_DIR / PREDICTIONS).frozen_commit.iloc[0]),
        "frozen_commits": {
            r.when: str(pd.read_csv(COST_DIR / r.predictions).frozen_commit.iloc[0])
            for r in ROUNDS
            if (COST_DIR / r.predictions).is_file()
        },
        "targets": {"time": TIME_GOAL, "energy": ENERGY_GOAL},
        "inputs": sources,
        "file": path.name,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    write_atomic(str(path) + ".provenance.json", json.dumps(side, indent=1) + "\n")
    return path


def _num(x, fmt: str) -> str:
    """A table cell: the number formatted, empty where there is none."""
    return "" if x is None or pd.isna(x) else format(float(x), fmt)


def report_markdown() -> str:
    """docs/COST.md's generated part: the H200's rates and prices with their sources, the targets met,
    the post-freeze table, every miss with its cause."""
    from .rates import COST_DIR, load_cost_hardware

    hw = load_cost_hardware("h200")
    lines = ["| rate | per second | measured | source |", "|---|---|---|---|"]
    lines += [
        f"| {k} | {v:.4g} | {'yes' if hw.measured['rate:' + k] else 'lead'} | {hw.sources['rate:' + k]} |"
        for k, v in hw.rate.items()
    ]
    lines += ["", "| price | pJ | measured | source |", "|---|---|---|---|"]
    lines += [
        f"| {k} | {v:.4g} | {'yes' if hw.measured['price:' + k] else 'lead'} | {hw.sources['price:' + k][:160]} |"
        for k, v in hw.price.items()
    ]
    lines += ["", f"Static power {hw.static_w:.1f} W (the energy run's nanosleep kernel).", ""]
    t = pd.read_csv(Path(__file__).resolve().parents[2] / "data" / "cost" / TABLE)
    lines += [
        "| shapes | rows | time within ±20 % | energy rows | energy within ±15 % |",
        "|---|---|---|---|---|",
    ]
    for when, g in t.groupby("when", sort=False):
        e = g.ratio_energy.notna()
        lines.append(
            f"| {when} | {len(g)} | {int(g.time_ok.sum())} | {int(e.sum())} | {int((g.energy_ok == True).sum())} |"  # noqa: E712
        )
    for rnd in ROUNDS:
        a = t[t.when == rnd.when]
        if not len(a):
            if (COST_DIR / rnd.predictions).is_file():  # predicted before its run: no measurement yet
                pred = pd.read_csv(COST_DIR / rnd.predictions)
                lines += [
                    "",
                    f"{rnd.when[0].upper()}{rnd.when[1:]}: **predicted, not yet measured** (model frozen at "
                    f"{pred.frozen_commit.iloc[0]}; {len(pred)} predictions in data/cost/{rnd.predictions}; "
                    f"run {rnd.run_id}, data/measurements/current/{rnd.validation}, not committed).",
                ]
            continue
        frozen = pd.read_csv(COST_DIR / rnd.predictions).frozen_commit.iloc[0]
        head = "| implementation | dtype | B | H | N | d | causal | predicted ms | measured ms | time ratio | predicted J | measured J | energy ratio | bound |"
        if rnd.host_per_run:
            head += " run's host ms | predicted GPU ms | measured GPU ms | GPU ratio |"
        if rnd.loop_time:
            head += " call's host ms | window ms |"
        lines += [
            "",
            f"{rnd.when[0].upper()}{rnd.when[1:]} (model frozen at {frozen}; predictions from data/cost/{rnd.predictions}, "
            f"measured in run {rnd.run_id}"
            + ("; a call's floor is that run's host figure, its host probe" if rnd.host_per_run else "")
            + (
                " with the GPU kept busy; measured ms: the loop's own time per call, window ms: the NVML window's"
                if rnd.loop_time
                else ""
            )
            + "):",
            "",
            head,
            "|---" * head.count(" | ") + "|---|",
        ]
        for r in a.itertuples():
            line = (
                f"| {r.implementation} | {r.dtype} | {r.batch} | {r.heads} | {r.seq_len} | {r.head_dim} | {'yes' if r.causal else 'no'} | "
                f"{r.predicted_ms:.4g} | {r.measured_ms:.4g} | {r.ratio_time:.2f} | {r.predicted_j:.4g} | {r.measured_j:.4g} | "
                f"{r.ratio_energy:.2f} | {r.bound} |"
            )
            if rnd.host_per_run:
                line += f" {_num(r.host_ms, '.4g')} | {r.predicted_gpu_ms:.4g} | {_num(r.measured_gpu_ms, '.4g')} | {_num(r.ratio_gpu, '.2f')} |"
            if rnd.loop_time:
                line += f" {_num(r.call_host_ms, '.4g')} | {_num(r.window_ms, '.4g')} |"
            lines.append(line)
    miss = t[t.cause.notna()]
    lines += [
        "",
        "Every miss, with its cause (all shapes):",
        "",
        "| when | implementation | dtype | N | d | causal | time | energy | cause |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.when} | {r.implementation} | {r.dtype} | {r.seq_len} | {r.head_dim} | {'yes' if r.causal else 'no'} | "
        f"{r.ratio_time:.2f} | {'' if pd.isna(r.ratio_energy) else f'{r.ratio_energy:.2f}'} | {r.cause} |"
        for r in miss.itertuples()
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
