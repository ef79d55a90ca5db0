"""The cost model in the lectures: launch-by-launch roofs, predicted beside measured, energy savings.

* `launches(name, workload)`: one row per launch of an implementation (simlib.cost.predict): each
  unit's time, the binding roof and by how much it binds, the predicted time and energy;
* `comparison()`: data/cost/predicted_vs_measured_h200.csv (every committed shape and the shapes
  measured after the model was frozen), and `plot_predicted_vs_measured` its log-log chart with the
  ±20 % (time) and ±15 % (energy) bands;
* `savings()`: FlashAttention's energy saving over the standard attention of its regime, predicted
  and measured, at every shape where both were measured.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simlib import Workload
from simlib.cost import predict
from simlib.cost.check import ENERGY_GOAL, TABLE, TIME_GOAL
from simlib.cost.model import UNITS
from simlib.cost.rates import COST_DIR

#: Standard attention against FlashAttention in each regime: (regime, standard, FlashAttention, dtype).
REGIMES = (
    ("16-bit, as practitioners run it", "eager_bf16", "torch_flash", "bf16"),
    ("16-bit, SDPA math (fp32 inside)", "torch_math", "torch_flash", "bf16"),
    ("fp32 on CUDA cores", "torch_math", "numba_fast", "fp32"),
    ("the project's 16-bit kernels", "naive_tc", "fa2_tc", "bf16"),
)


def launches(name: str, workload: Workload) -> pd.DataFrame:
    """One row per launch: unit times (µs), binding roof, margin over the next roof, time, energy."""
    p = predict(name, workload)
    rows = []
    for c in p.launches:
        row = {"launch": c.launch.name}
        row.update({f"{UNITS[u]} (µs)": c.unit_s[u] * 1e6 for u in UNITS if c.unit_s[u]})
        row.update(
            {
                "binding roof": c.bound,
                "× the next roof": c.margin,
                "eta": c.eta,
                "predicted (µs)": c.time_s * 1e6,
                "predicted (mJ)": c.energy_j * 1e3,
            }
        )
        rows.append(row)
    return pd.DataFrame(rows).fillna(0.0)


def comparison() -> pd.DataFrame:
    """The committed predicted-vs-measured table (regenerate with python -m simlib.cost.check --table)."""
    return pd.read_csv(COST_DIR / TABLE)


def _base(name: str) -> str:
    return name.split(".")[0]


def plot_predicted_vs_measured(ax_time, ax_energy, table: pd.DataFrame, colors: dict | None = None) -> None:
    """Predicted against measured, log-log, one point per (implementation, shape): time (±20 % band)
    and energy (±15 % band); filled markers for shapes measured after the freeze."""
    impls = sorted({_base(i) for i in table.implementation})
    cmap = colors or {i: c for i, c in zip(impls, _palette(len(impls)))}
    for ax, (meas, pred, goal, unit) in (
        (ax_time, ("measured_ms", "predicted_ms", TIME_GOAL, "ms")),
        (ax_energy, ("measured_j", "predicted_j", ENERGY_GOAL, "J")),
    ):
        t = table.dropna(subset=[meas, pred])
        t = t[(t[meas] > 0) & (t[pred] > 0)]
        lo, hi = t[meas].min() / 2, t[meas].max() * 2
        x = np.geomspace(lo, hi, 50)
        ax.loglog(x, x, color="k", lw=1, label="predicted = measured")
        ax.fill_between(x, x * (1 - goal), x * (1 + goal), color="0.85", label=f"±{goal:.0%}")
        for impl in impls:
            for after, marker in ((False, "o"), (True, "D")):
                s = t[
                    (t.implementation.map(_base) == impl) & (t.when.str.startswith("measured after") == after)
                ]
                if s.empty:
                    continue
                ax.loglog(
                    s[meas],
                    s[pred],
                    marker,
                    ms=5 if not after else 7,
                    color=cmap[impl],
                    mfc="none" if not after else cmap[impl],
                    alpha=0.8,
                    label=f"{impl}{' (after the freeze)' if after else ''}",
                )
        ax.set_xlabel(f"measured ({unit} per call)")
        ax.set_ylabel(f"predicted ({unit} per call)")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax_time.set_title(f"time: the cost model against the H200 (±{TIME_GOAL:.0%})")
    ax_energy.set_title(f"energy (NVML): the cost model against the H200 (±{ENERGY_GOAL:.0%})")


def _palette(n: int) -> list:
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab20")
    return [cmap(i % 20) for i in range(n)]


def savings(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per regime and shape where both sides have NVML joules: FlashAttention's saving over the
    standard attention of that regime, predicted (the cost model) and measured (the H200)."""
    t = comparison() if table is None else table
    t = t.dropna(subset=["measured_j", "predicted_j"])
    t = t[~t.implementation.str.contains(r"\.")]  # whole calls, not one launch
    keys = ["batch", "heads", "seq_len", "head_dim", "causal"]
    rows = []
    for regime, std, fa, dtype in REGIMES:
        a = t[(t.implementation == std) & (t.dtype == dtype)]
        b = t[(t.implementation == fa) & (t.dtype == dtype)]
        m = a.merge(b, on=keys, suffixes=("_std", "_fa"))
        for r in m.itertuples():
            rows.append(
                {
                    "regime": regime,
                    "standard": std,
                    "FlashAttention": fa,
                    "shape": f"B={r.batch} H={r.heads} N={r.seq_len} d={r.head_dim}{' causal' if r.causal else ''}",
                    "when": "after the freeze" if r.when_fa.startswith("measured after") else "committed",
                    "predicted saving": 1 - r.predicted_j_fa / r.predicted_j_std,
                    "measured saving": 1 - r.measured_j_fa / r.measured_j_std,
                }
            )
    return pd.DataFrame(rows)
