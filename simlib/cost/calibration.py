"""The calibrated constants of the cost model, per launch class: read from data/cost/h200_fit.json.

Two kinds, both fitted by `simlib.cost.fit` from committed measurements and frozen in that file
(regenerate with ``python -m simlib.cost.fit``; tests/test_cost.py fails if it differs):

* **instructions** per unit of a launch's *basis* (`Launch.detail["basis"]`): warp instructions
  per 32 score elements that do not scale with d ("el") and per 32 score elements per 64 of d
  ("el_d"), and thread FFMAs outside the matmuls per score element ("ffma_el"), from Nsight
  Compute's counts of one call of each kernel (energy_counters_h200*_kernels.csv, d = 64);
* **eta**, the fraction of its binding roof the launch class reached in the committed timings:
  measured time = roof time / eta (one number per class, all its shapes; never per shape);
* **lone** (FlashAttention-type classes under the latency rule, round 9): the share of its SM one CTA
  reaches alone there (`simlib.cost.schedule`), fitted on the committed launches whose last wave leaves
  CTAs alone on their SMs;
* **t_block** (FlashAttention-type classes), seconds each generation of resident blocks spends
  outside its steady state (Q tile load and pipeline fill, the epilogue that rescales and writes O),
  fitted with eta on the side-by-side's non-causal medians over N = 512–16384.

A class the file lacks gives no instructions and eta = 1, and `missing` says so.

>>> c = Calibration({"x": {"el": 2.0, "el_d": 1.0, "eta": 0.5}})
>>> c.instructions("x", {"el": 10.0, "el_d": 4.0}), c.eta("x"), c.missing
(24.0, 0.5, set())
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from ..presets import DATA_DIR

FIT_FILE = DATA_DIR / "cost" / "h200_fit.json"


class Calibration:
    def __init__(self, classes: dict[str, dict]):
        self.classes = classes
        self.missing: set[str] = set()

    def _get(self, klass: str) -> dict:
        if klass not in self.classes:
            self.missing.add(klass)
            return {}
        return self.classes[klass]

    def instructions(self, klass: str, basis: dict[str, float]) -> float:
        c = self._get(klass)
        return sum(c.get(k, 0.0) * v for k, v in basis.items())

    def ffma_per_element(self, klass: str) -> float:
        return self._get(klass).get("ffma_el", 0.0)

    def eta(self, klass: str) -> float:
        return self._get(klass).get("eta", 1.0)

    def block_latency(self, klass: str) -> float:
        return self._get(klass).get("t_block", 0.0)

    def lone_rate(self, klass: str) -> float | None:
        """The share of its SM one CTA of a latency-rule class reaches when it is alone there (round 9,
        `simlib.cost.schedule`); None for classes without one (1/resident: the latency rule)."""
        return self._get(klass).get("lone")

    def row_latency(self, klass: str) -> float:
        """Seconds a row kernel's launch spends per row beyond its per-element roof (the GPU's rows in
        parallel folded in: a launch of R rows adds R · t_row), 0 for classes without one."""
        return self._get(klass).get("t_row", 0.0)


@cache
def _read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {"classes": {}}


def load_calibration(path: Path = FIT_FILE) -> Calibration:
    """A fresh Calibration of the committed fit (its `missing` set starts empty)."""
    return Calibration(dict(_read(Path(path))["classes"]))
