"""Energy of an attention schedule: what the bytes and FLOPs that `count()` finds cost in joules.

    E = Σ_levels bytes(level) · e(level)  +  FLOPs · e(unit)  +  P_static · t

per level, tensor and phase exactly like the traffic table (`Result.table()`): every row of it
gets `bytes × pJ/byte` of its level; the FLOPs go to the unit that runs them (``tensor_core`` for
fp16/bf16, ``fp32_fma`` for fp32, or a unit named by the caller, e.g. ``tensor_core_gemm`` for a
library GEMM whose own shared-memory traffic is not counted); the static power is paid for the
time the call takes (the roofline time unless a time is given). Units: pJ/byte, pJ/FLOP, W, s, J.

The figures (one home: data/energy/<preset>.json, keyed like data/hardware) come with a source
each. For the H200 they are this project's own measurement (`calibrate`, from
data/measurements/current/energy_calibration_h200.csv: the NVML counter around micro-benchmarks,
benchmarks/energy_h200.py); every other preset carries published figures (Horowitz, ISSCC 2014,
45 nm, not scaled to the chip's node; HBM per bit from O'Connor et al., MICRO 2017, or a vendor)
and no static power, so its energy is the dynamic part only. `load_energy_table(key,
measured=False)` gives the published figures for the H200 too.

Worked number (published table of a100-40gb: HBM 31.2 pJ/B, SRAM 1.25 pJ/B, fp16 tensor core
0.75 pJ/FLOP, no static power): naive, N = 4096, d = 64, fp16, B·H = 1 moves 136,314,880 HBM bytes
and 8,625,061,888 SRAM bytes (2·N²·d reads per matmul, thread-level) and does 4·4096²·64 =
4,294,967,296 FLOPs: 136,314,880·31.2 pJ = 4.253 mJ, 8,625,061,888·1.25 pJ = 10.781 mJ,
4,294,967,296·0.75 pJ = 3.221 mJ, 18.256 mJ in all:

>>> from simlib import Workload, count
>>> e = energy(count("naive", Workload(4096, 64)), "a100-40gb")
>>> [round(e.level_j[lv] * 1e3, 3) for lv in ("HBM", "SRAM")], round(e.compute_j * 1e3, 3), round(e.total_j * 1e3, 3)
([4.253, 10.781], 3.221, 18.256)
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from .counted import Counted
from .hardware import Hardware, load_preset
from .measured_files import csv_rows
from .presets import DATA_DIR
from .roofline import roofline
from .workload import check_real

ENERGY_DIR = DATA_DIR / "energy"
MEASUREMENTS = DATA_DIR / "measurements" / "current"
LEVELS = ("HBM", "L2", "SRAM")
UNITS = ("tensor_core", "tensor_core_gemm", "fp32_fma", "fp32_gemm")
#: The unit that runs a dtype's matmul FLOPs unless the caller names another.
DTYPE_UNIT = {"fp16": "tensor_core", "bf16": "tensor_core", "fp32": "fp32_fma"}
PJ = 1e-12
#: Micro-benchmark → (table entry, what it calibrates) in energy_calibration_<gpu>.csv.
BENCH_ENTRY = {
    "hbm_copy": ("HBM", "byte"),
    "l2_read": ("L2", "byte"),
    "smem_read": ("SRAM", "byte"),
    "smem_read_v4": ("SRAM_16B", "byte"),
    "fp32_fma": ("fp32_fma", "flop"),
    "tc_mma": ("tensor_core", "flop"),
    "tc_matmul": ("tensor_core_gemm", "flop"),
    "fp32_matmul": ("fp32_gemm", "flop"),
}
#: The columns of energy_calibration_<gpu>.csv, as benchmarks/energy_h200.py writes them (the
#: measurement layer's schema of that file, measurements.schemas.ENERGY_CALIBRATION, is this list).
CALIBRATION_COLUMNS = (
    "bench",
    "repeat",
    "units",
    "unit",
    "calls",
    "seconds",
    "joules",
    "watts",
    "steps_seen",
    "sm_mhz",
    "sm_mhz_min",
    "sm_mhz_max",
    "mem_mhz",
    "temp_c_start",
    "temp_c",
    "power_w",
    "rate_per_s",
    "note",
)
#: The L2 and shared-memory benchmarks add one FP32 instruction (FADD) per 4 bytes loaded; an
#: FP32 instruction is charged as one FFMA, i.e. 2 FLOPs of the fp32_fma figure.
FADD_BYTES = 4


@dataclass(frozen=True)
class EnergyTable:
    """Per-level pJ/byte, per-unit pJ/FLOP and the static power of one GPU, each with its source."""

    key: str
    pj_per_byte: dict[str, float | None]
    pj_per_flop: dict[str, float | None]
    static_w: float | None
    idle_w: float | None
    sources: dict[str, str]
    measured: bool
    spread: dict[str, tuple[float, float]] = field(default_factory=dict)  # entry -> (min, max) over repeats

    def byte_cost(self, level: str) -> float:
        value = self.pj_per_byte.get(level)
        if value is None:
            raise ValueError(
                f"{self.key} has no energy per {level} byte with a source (data/energy/{self.key}.json)"
            )
        return value

    def flop_cost(self, unit: str) -> float:
        if unit not in UNITS:
            raise ValueError(f"flop_unit must be one of {', '.join(UNITS)}, got {unit!r}")
        value = self.pj_per_flop.get(unit)
        if value is None:
            raise ValueError(
                f"{self.key} has no energy per {unit} FLOP with a source (data/energy/{self.key}.json)"
            )
        return value

    def static_power(self) -> float:
        if self.static_w is None:
            raise ValueError(f"{self.key} has no static power with a source (data/energy/{self.key}.json)")
        return self.static_w

    def frame(self) -> pd.DataFrame:
        """One row per figure: entry, value, unit, min and max over the repeats, source."""
        rows: list[dict[str, Any]] = [
            {"entry": k, "value": v, "unit": "pJ/byte"} for k, v in self.pj_per_byte.items()
        ]
        rows += [{"entry": k, "value": v, "unit": "pJ/FLOP"} for k, v in self.pj_per_flop.items()]
        rows += [
            {"entry": "static_w", "value": self.static_w, "unit": "W"},
            {"entry": "idle_w", "value": self.idle_w, "unit": "W"},
        ]
        for r in rows:
            r["min"], r["max"] = self.spread.get(r["entry"], (float("nan"), float("nan")))
            r["source"] = self.sources.get(r["entry"], "")
        return pd.DataFrame(rows)


def energy_keys() -> list[str]:
    return sorted(p.stem for p in ENERGY_DIR.glob("*.json"))


def read_calibration(path: Path) -> list[dict[str, Any]]:
    """The rows of a calibration CSV written by benchmarks/energy_h200.py, numbers as floats (the file
    checked against its sidecar first: simlib.measured_files)."""
    rows: list[dict[str, Any]] = list(csv_rows(path))
    for r in rows:
        for key in ("watts", "rate_per_s", "seconds", "joules"):
            r[key] = float(r[key]) if r.get(key) not in (None, "") else None
    return rows


def calibrate(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per-figure mean, min and max over the repeats, from the calibration rows.

    static = mean power of the nanosleep kernel (clocks up, no work); idle = mean power with
    nothing running. A benchmark's figure is (its power − the same repeat's static power) / its
    rate (bytes or FLOPs per second), in pJ; the L2 and SRAM ones (SRAM_16B: the same loads as
    16-byte ld.shared.v4, a calibration entry that is not a level of the traffic) less one FP32 instruction
    (2 FLOPs at the fp32_fma figure) per 4 bytes. Worked number: 652 W against 147 W static at
    4.2e12 B/s is (652 − 147) / 4.2e12 = 120 pJ per HBM byte.

    >>> rows = [{"bench": "static", "repeat": "0", "watts": 147.0, "rate_per_s": None},
    ...         {"bench": "idle", "repeat": "0", "watts": 127.0, "rate_per_s": None},
    ...         {"bench": "hbm_copy", "repeat": "0", "watts": 652.0, "rate_per_s": 4.2e12}]
    >>> out = calibrate(rows)
    >>> round(out["HBM"]["mean"], 1), out["static_w"]["mean"], out["idle_w"]["mean"]
    (120.2, 147.0, 127.0)
    """
    static = {r["repeat"]: r["watts"] for r in rows if r["bench"] == "static"}
    if not static:
        raise ValueError("calibration has no 'static' rows")
    out = {
        "static_w": _stats(list(static.values())),
        "idle_w": _stats([r["watts"] for r in rows if r["bench"] == "idle"] or [float("nan")]),
    }
    per: dict[str, list[float]] = {}
    for r in rows:
        if r["bench"] in BENCH_ENTRY and r.get("rate_per_s"):
            base = static.get(r["repeat"], out["static_w"]["mean"])
            per.setdefault(BENCH_ENTRY[r["bench"]][0], []).append((r["watts"] - base) / r["rate_per_s"] / PJ)
    if "fp32_fma" in per:
        fadd = 2 * statistics.fmean(per["fp32_fma"]) / FADD_BYTES
        for level in ("L2", "SRAM", "SRAM_16B"):
            if level in per:
                per[level] = [v - fadd for v in per[level]]
    out.update({entry: _stats(values) for entry, values in per.items()})
    return out


def _stats(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "n": len(values)}


def load_energy_table(key: str, measured: bool = True) -> EnergyTable:
    """The energy figures of preset `key`: measured ones where data/energy/<key>.json names a
    calibration file (and `measured`), else the published ones. ValueError naming `gpu` if unknown."""
    if not isinstance(key, str) or key not in energy_keys():
        raise ValueError(
            f"gpu must be one of {', '.join(energy_keys())} (a preset with energy figures), got {key!r}"
        )
    return _load(key, bool(measured))


@cache
def _load(key: str, measured: bool) -> EnergyTable:
    raw = json.loads((ENERGY_DIR / f"{key}.json").read_text())
    sources = dict(raw["sources"])
    if measured and raw.get("calibration"):
        path = MEASUREMENTS / raw["calibration"]
        cal = calibrate(read_calibration(path))
        where = f"measured: {path.relative_to(DATA_DIR.parent).as_posix()} (simlib.energy.calibrate)"
        levels = {lv: cal[lv]["mean"] if lv in cal else None for lv in LEVELS}
        units = {u: cal[u]["mean"] if u in cal else None for u in UNITS}
        spread = {k: (v["min"], v["max"]) for k, v in cal.items()}
        srcs = {
            k: f"{where}; {raw['calibration_notes'].get(k, '')}".rstrip("; ")
            for k in [*levels, *units, "static_w", "idle_w"]
        }
        return EnergyTable(
            key, levels, units, cal["static_w"]["mean"], cal["idle_w"]["mean"], srcs, True, spread
        )
    levels = {lv: raw["pj_per_byte"].get(lv) for lv in LEVELS}
    units = {u: raw["pj_per_flop"].get(u) for u in UNITS}
    return EnergyTable(key, levels, units, raw.get("static_w"), raw.get("idle_w"), sources, False)


@dataclass(frozen=True)
class Energy:
    """Joules of one `count()` result: per traffic row, compute, static; totals per level."""

    rows: pd.DataFrame  # the traffic table plus pj_per_byte and joules
    compute_j: float
    flop_unit: str
    static_j: float
    time_s: float | None
    table: EnergyTable

    @property
    def level_j(self) -> dict[str, float]:
        return {str(k): float(v) for k, v in self.rows.groupby("level")["joules"].sum().items()}

    @property
    def movement_j(self) -> float:
        return float(self.rows["joules"].sum())

    @property
    def dynamic_j(self) -> float:
        return self.movement_j + self.compute_j

    @property
    def total_j(self) -> float:
        return self.dynamic_j + self.static_j

    def frame(self) -> pd.DataFrame:
        """Per (level, op, tensor, phase) joules, then one row for compute and one for static power."""
        extra = [
            {
                "level": "compute",
                "op": self.flop_unit,
                "tensor": "",
                "phase": "matmuls",
                "joules": self.compute_j,
            },
            {"level": "static", "op": "", "tensor": "", "phase": "P_static x t", "joules": self.static_j},
        ]
        return pd.concat([self.rows, pd.DataFrame(extra)], ignore_index=True)

    def summary(self) -> pd.DataFrame:
        """Joules per level (HBM, L2, SRAM), compute and static, and their share of the total."""
        parts = {**self.level_j, "compute": self.compute_j, "static": self.static_j}
        total = self.total_j
        return pd.DataFrame(
            [{"term": k, "joules": v, "share": v / total if total else 0.0} for k, v in parts.items()]
        )


def as_table(hardware: str | Hardware | EnergyTable) -> EnergyTable:
    if isinstance(hardware, EnergyTable):
        return hardware
    if isinstance(hardware, Hardware):
        return load_energy_table(hardware.key)
    return load_energy_table(hardware)


def energy(
    result: Counted,
    hardware: str | Hardware | EnergyTable,
    *,
    time_s: float | None = None,
    flop_unit: str | None = None,
    dram_fraction: float | None = None,
) -> Energy:
    """Energy of `result` (from count()) on `hardware` (a preset key, a Hardware or an EnergyTable).

    `time_s`: seconds the call takes, for the static power (default: the roofline time on the
    preset; no static term where the table has no static power). `flop_unit`: who runs the FLOPs
    (default by dtype: fp16/bf16 → tensor_core, fp32 → fp32_fma). `dram_fraction`: the share of the
    HBM-level bytes that really reach DRAM (from the physical model or ncu); the rest are L2 hits,
    charged at the L2 figure. Default 1: every HBM byte the schedule moves reaches DRAM.
    """
    if not isinstance(result, Counted):
        raise TypeError(f"result must be a simlib Result (from count()), got {type(result).__name__}")
    table = as_table(hardware)
    unit = flop_unit or DTYPE_UNIT[result.workload.dtype]
    compute_j = result.flops * table.flop_cost(unit) * PJ
    if dram_fraction is not None:
        dram_fraction = check_real("dram_fraction", dram_fraction, minimum=0, maximum=1)
    rows = result.table().copy()
    costs = {lv: table.byte_cost(lv) for lv in rows["level"].unique()}
    rows["pj_per_byte"] = rows["level"].map(costs)
    rows["joules"] = rows["bytes"] * rows["pj_per_byte"] * PJ
    if dram_fraction is not None and dram_fraction < 1:
        hbm = rows["level"] == "HBM"
        hits = rows[hbm].copy()
        hits["level"], hits["bytes"] = "L2", hits["bytes"] * (1 - dram_fraction)
        hits["elements"] = hits["elements"] * (1 - dram_fraction)
        hits["pj_per_byte"] = table.byte_cost("L2")
        hits["joules"] = hits["bytes"] * hits["pj_per_byte"] * PJ
        rows.loc[hbm, "bytes"] = rows.loc[hbm, "bytes"] * dram_fraction
        rows.loc[hbm, "elements"] = rows.loc[hbm, "elements"] * dram_fraction
        rows.loc[hbm, "joules"] = rows.loc[hbm, "bytes"] * rows.loc[hbm, "pj_per_byte"] * PJ
        rows = pd.concat([rows, hits], ignore_index=True)
    if time_s is not None:
        time_s = check_real("time_s", time_s, minimum=0)  # True, NaN and inf refused
    elif table.static_w is not None:
        time_s = roofline(result, load_preset(table.key)).time_s
    static_j = (table.static_w or 0.0) * (time_s or 0.0)
    return Energy(rows, compute_j, unit, static_j, time_s, table)
