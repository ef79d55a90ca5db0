"""`predict(implementation, workload)`: every launch's time, binding roof and energy, and the total.

The three inputs stay apart, as in Timeloop/Accelergy: the workload (`simlib.Workload`), the
hardware with its measured rates and prices (`simlib.cost.rates`), and the mapping each
implementation's builder applies (its tiles, warps, registers: `simlib.cost.implementations`).
The calibrated constants (instructions per score, achieved fraction of the roof) are frozen in
data/cost/h200_fit.json.

Worked number: naive attention in numba at N = 4096, d = 64, B·H = 32 is three launches whose
sum is the prediction; the two matmuls are bound by instruction issue:

>>> from simlib import Workload
>>> p = predict("numba_naive", Workload(4096, 64, batch=2, heads=16, dtype="fp32"))
>>> [c.launch.name for c in p.launches], [c.bound for c in p.launches][0]
(['qk', 'softmax', 'pv'], 'issue')
>>> round(p.time_s, 6) == round(sum(c.time_s for c in p.launches), 6)
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from ..workload import Workload
from .calibration import load_calibration
from .host import DISPATCH
from .implementations import implementation
from .model import TERMS, UNITS, LaunchCost, launch_cost
from .rates import load_cost_hardware


@dataclass(frozen=True)
class Prediction:
    implementation: str
    workload: Workload
    gpu: str
    launches: tuple[LaunchCost, ...]
    missing: tuple[str, ...]  # calibration classes the fit file lacks (their instructions 0, eta 1)
    host_s: float = 0.0  # the host's time per call (simlib.cost.host), 0 where none is known
    static_w: float = 0.0  # the static power paid while the GPU waits on the host

    @property
    def gpu_s(self) -> float:
        """The launches' predicted time on the GPU."""
        return sum(c.time_s for c in self.launches)

    @property
    def time_s(self) -> float:
        """A call's time: its launches', or the host's floor when that is longer (simlib.cost.host)."""
        return max(self.gpu_s, self.host_s)

    @property
    def host_bound(self) -> bool:
        return self.host_s > self.gpu_s

    @property
    def gpu_energy_terms(self) -> dict[str, float]:
        """The launches' energy terms alone (the static power for their predicted time only)."""
        return {t: sum(c.energy_terms.get(t, 0.0) for c in self.launches) for t in TERMS}

    @property
    def gpu_energy_j(self) -> float:
        return sum(self.gpu_energy_terms.values())

    @property
    def energy_terms(self) -> dict[str, float]:
        terms = self.gpu_energy_terms
        terms["static"] += self.static_w * max(self.host_s - self.gpu_s, 0.0)
        return terms

    @property
    def energy_j(self) -> float:
        return sum(self.energy_terms.values())

    @property
    def bound(self) -> str:
        """The binding roof of the launch that takes the most time (with the launch named when
        there are several)."""
        top = max(self.launches, key=lambda c: c.time_s)
        if self.host_bound:
            return "host"
        if len(self.launches) == 1:
            return top.bound
        return f"{top.bound} ({top.launch.name}, {top.time_s / self.time_s:.0%} of the time)"

    def to_dict(self) -> dict:
        w = self.workload
        return {
            "implementation": self.implementation,
            "gpu": self.gpu,
            "workload": {
                "batch": w.batch,
                "heads": w.heads,
                "kv_heads": w.n_kv_heads,
                "seq_len": w.seq_len,
                "head_dim": w.head_dim,
                "dtype": w.dtype,
                "causal": w.causal,
            },
            "time_ms": self.time_s * 1e3,
            "gpu_ms": self.gpu_s * 1e3,
            "host_floor_ms": self.host_s * 1e3,
            "energy_j": self.energy_j,
            "bound": self.bound,
            "energy_by_unit_j": self.energy_terms,
            "launches": [c.as_dict() for c in self.launches],
            "uncalibrated_classes": list(self.missing),
        }

    def frame(self) -> pd.DataFrame:
        """One row per launch: time, binding roof, each unit's time, energy."""
        rows = []
        for c in self.launches:
            row = {"launch": c.launch.name, "time_ms": c.time_s * 1e3, "bound": c.bound, "eta": c.eta}
            row.update({f"{u}_ms": c.unit_s[u] * 1e3 for u in UNITS})
            row["energy_j"] = c.energy_j
            rows.append(row)
        return pd.DataFrame(rows)


def predict(name: str, workload: Workload, gpu: str = "h200", host_s: float | None = None) -> Prediction:
    """The predicted launches of implementation `name` on `workload` (ValueError naming what does not
    apply: an unknown name, a dtype it does not run, a causal mask it lacks, a measured-only library).
    `host_s`: the host's time per call of this implementation, measured in the run being predicted (the
    validation run's host probe, simlib.cost.host); None takes the committed floor of its dispatch class."""
    impl = implementation(name)
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a simlib.Workload, got {type(workload).__name__}")
    if not impl.modelled:
        raise ValueError(f"{name} is measured only: {impl.description}")
    if workload.dtype not in impl.dtypes:
        raise ValueError(f"dtype must be one of {', '.join(impl.dtypes)} for {name}, got {workload.dtype!r}")
    if workload.causal and not impl.causal:
        raise ValueError(f"causal: {name} has no causal variant")
    if workload.nq != workload.nk:
        raise ValueError("query_len: the cost model covers self-attention (query_len = seq_len)")
    hw = load_cost_hardware(gpu)
    cal = load_calibration()
    launches = impl.launches(workload, cal)
    costs = tuple(launch_cost(launch, hw, cal) for launch in launches)
    if name not in DISPATCH:
        host = 0.0
    elif host_s is None:
        host = cal.classes.get(DISPATCH[name], {}).get("t_host", 0.0)
    else:
        host = host_s
    return Prediction(name, workload, gpu, costs, tuple(sorted(cal.missing)), host, hw.static_w)


def with_dtype(workload: Workload, dtype: str) -> Workload:
    return replace(workload, dtype=dtype)
