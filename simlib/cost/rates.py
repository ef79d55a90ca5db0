"""The hardware half of the cost model: what one unit of work costs on the GPU, in seconds and joules.

`load_cost_hardware("h200")` reads data/cost/h200.json, which names for every rate and price the
measurement it comes from (files of data/measurements/current/): the ceilings run (copy, mma.sync,
FFMA), the energy calibration (NVML around micro-benchmarks: HBM, L2, shared memory, tensor core,
GEMMs, static power) and the unit calibration of this model (``cost_units_h200.csv``,
benchmarks/cost_units_h200.py: integer, MUFU, shuffle and conversion instructions, 16-byte and
cp.async global loads). A figure whose benchmark is not in the file yet falls back to its lead (a
documented peak, or one FFMA warp instruction for an unpriced instruction), and its source says so.

Rates are ceilings a benchmark reached, per unit of `simlib.cost.work.Work`; prices are dynamic
energy above the static power, per unit. Worked number (the shared-memory split of the energy run:
LDS.32 at 15.93 pJ/B and LDS.128 at 6.822 pJ/B give 1554 pJ per warp instruction and 3.79 pJ per byte):

>>> hw = load_cost_hardware("h200")
>>> round(hw.price["shared_instruction"]), round(hw.price["shared_byte"], 2)
(1554, 3.79)
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..energy import MEASUREMENTS, PJ, calibrate, load_energy_table, read_calibration
from ..hardware import load_preset
from ..measured_files import csv_rows, json_file
from ..presets import DATA_DIR

COST_DIR = DATA_DIR / "cost"
#: The unit calibration written by benchmarks/cost_units_h200.py (one row per benchmark and repeat).
UNITS_CSV = "cost_units_h200.csv"


@dataclass(frozen=True)
class CostHardware:
    """Rates (units per second) and prices (pJ per unit, W for static) of one GPU, with sources."""

    key: str
    sms: int
    clock_hz: float
    l2_bytes_capacity: int
    rate: dict[str, float]
    price: dict[str, float]
    static_w: float
    sources: dict[str, str]  # "rate:<unit>" and "price:<unit>" -> where the figure comes from
    measured: dict[str, bool]  # the same keys: a measurement (True) or a lead (False)

    def seconds(self, unit: str, amount: float) -> float:
        return amount / self.rate[unit] if amount else 0.0

    def joules(self, unit: str, amount: float) -> float:
        return amount * self.price[unit] * PJ if amount else 0.0


def shared_split(lds32: float, lds128: float) -> tuple[float, float]:
    """(pJ per shared-memory warp instruction, pJ per byte) from the pJ/B of conflict-free LDS.32
    (128 B per instruction) and LDS.128 (512 B): a + 128·b = 128·lds32 and a + 512·b = 512·lds128.

    >>> a, b = shared_split(15.93, 6.822)
    >>> round(a), round(b, 3)
    (1554, 3.786)
    """
    b = (512 * lds128 - 128 * lds32) / 384
    return 128 * (lds32 - b), b


def read_units(path: Path) -> list[dict[str, Any]]:
    """Rows of a unit-calibration CSV (benchmarks/cost_units_h200.py), numbers as floats."""
    rows: list[dict[str, Any]] = list(csv_rows(path))  # checked against its sidecar first
    for r in rows:
        for key in ("watts", "rate_per_s", "seconds", "joules", "fp32_per_unit", "int_per_unit"):
            r[key] = float(r[key]) if r.get(key) not in (None, "") else None
    return rows


def derive_units(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per benchmark: mean rate and mean pJ per unit, over its repeats.

    pJ per unit = (power − the same repeat's static power) / rate, less its companions: thread FP32
    instructions per unit (``fp32_per_unit``) at the same run's FFMA figure and integer warp
    instructions per unit (``int_per_unit``) at the same run's int_alu figure. Worked number: a
    benchmark at 300 W against 140 W static doing 1e12 warp instructions per second costs 160 pJ each:

    >>> rows = [{"bench": "static", "repeat": "0", "watts": 140.0, "rate_per_s": None},
    ...         {"bench": "int_alu", "repeat": "0", "watts": 300.0, "rate_per_s": 1e12,
    ...          "fp32_per_unit": None, "int_per_unit": None}]
    >>> derive_units(rows)["int_alu"]["pj"]
    160.0
    """
    static = {r["repeat"]: r["watts"] for r in rows if r["bench"] == "static"}
    if not static:
        raise ValueError("unit calibration has no 'static' rows")
    raw: dict[str, list[tuple[float, float, float, float]]] = {}
    for r in rows:
        if r["bench"] in ("static", "idle") or not r.get("rate_per_s"):
            continue
        base = static.get(r["repeat"], statistics.fmean(static.values()))
        pj = (r["watts"] - base) / r["rate_per_s"] / PJ
        raw.setdefault(r["bench"], []).append(
            (r["rate_per_s"], pj, r["fp32_per_unit"] or 0, r["int_per_unit"] or 0)
        )
    out: dict[str, dict[str, float]] = {}
    ffma_pj = statistics.fmean(p for _, p, *_ in raw["fp32_fma"]) if "fp32_fma" in raw else None
    int_pj = statistics.fmean(p for _, p, *_ in raw["int_alu"]) if "int_alu" in raw else None
    for bench, values in raw.items():
        pjs, raws = [], []
        for _, pj, fp32, ints in values:
            raws.append(pj)
            if fp32 and ffma_pj is not None:
                pj -= fp32 * ffma_pj
            if ints and int_pj is not None:
                pj -= ints * int_pj
            pjs.append(pj)
        out[bench] = {
            "rate": statistics.fmean(v[0] for v in values),
            "pj": statistics.fmean(pjs),
            "pj_raw": statistics.fmean(raws),
            "min": min(pjs),
            "max": max(pjs),
            "n": len(values),
        }
    return out


def _json_path(data: dict, dotted: str) -> float:
    for part in dotted.split("."):
        data = data[part]
    return float(data)  # type: ignore[arg-type]


def cost_keys() -> list[str]:
    """The GPUs with measured cost figures (data/cost/<key>.json)."""
    return sorted(p.stem for p in COST_DIR.glob("*.json") if not p.stem.endswith("_fit"))


def load_cost_hardware(key: str = "h200") -> CostHardware:
    """The rates and prices of preset `key` (only 'h200' has them: ValueError naming gpu otherwise)."""
    keys = cost_keys()
    if not isinstance(key, str) or key not in keys:
        raise ValueError(
            f"gpu must be one of {', '.join(keys)} (a GPU with measured cost figures), got {key!r}"
        )
    return _load(key)


@cache
def _load(key: str) -> CostHardware:
    spec = json.loads((COST_DIR / f"{key}.json").read_text())
    preset = load_preset(key)
    table = load_energy_table(key)
    clock = float(spec["clock_hz"]["value"])
    sms = preset.sm_count
    units_path = MEASUREMENTS / UNITS_CSV
    units = derive_units(read_units(units_path)) if units_path.is_file() else {}
    energy_cal = calibrate(read_calibration(MEASUREMENTS / "energy_calibration_h200.csv"))
    energy_rates = {
        r["bench"]: r["rate_per_s"]
        for r in read_calibration(MEASUREMENTS / "energy_calibration_h200.csv")
        if r.get("rate_per_s")
    }
    rate: dict[str, float] = {}
    price: dict[str, float] = {}
    sources: dict[str, str] = {}
    measured: dict[str, bool] = {}

    def bench_rate(bench: str, file: str) -> float:
        if file == UNITS_CSV:
            return units[bench]["rate"]
        return statistics.fmean(
            r["rate_per_s"] for r in read_calibration(MEASUREMENTS / file) if r["bench"] == bench
        )

    for name, s in spec["rates"].items():
        where = f"data/measurements/current/{s.get('file', '')}"
        if "value" in s:
            rate[name], sources[f"rate:{name}"], measured[f"rate:{name}"] = (
                float(s["value"]),
                s["source"],
                False,
            )
        elif "derived" in s:
            rate[name] = s["per_clock_per_sm"] * sms * clock
            sources[f"rate:{name}"], measured[f"rate:{name}"] = (
                f"{s['per_clock_per_sm']} per clock per SM × {sms} SMs × {clock / 1e6:.0f} MHz: {s['what']}",
                False,
            )
        elif "key" in s:
            raw = json_file(MEASUREMENTS / s["file"])
            rate[name] = _json_path(raw, s["key"]) * s["scale"]
            sources[f"rate:{name}"], measured[f"rate:{name}"] = (
                f"measured: {where} ({s['key']}): {s['what']}",
                True,
            )
        elif s.get("file") == UNITS_CSV and s["bench"] in units:
            rate[name] = units[s["bench"]]["rate"] * s.get("scale", 1)
            sources[f"rate:{name}"], measured[f"rate:{name}"] = (
                f"measured: {where} ({s['bench']}): {s['what']}",
                True,
            )
        elif s.get("file") != UNITS_CSV:
            rate[name] = bench_rate(s["bench"], s["file"])
            sources[f"rate:{name}"], measured[f"rate:{name}"] = (
                f"measured: {where} ({s['bench']}): {s['what']}",
                True,
            )
        elif "lead_bench" in s:
            rate[name] = energy_rates[s["lead_bench"]]
            sources[f"rate:{name}"] = (
                f"lead (no {s['bench']} in {UNITS_CSV} yet): {s['lead_file']} ({s['lead_bench']}, 4-byte loads)"
            )
            measured[f"rate:{name}"] = False
        else:
            rate[name] = s["lead_per_clock_per_sm"] * sms * clock
            sources[f"rate:{name}"], measured[f"rate:{name}"] = (
                f"lead (no {s['bench']} in {UNITS_CSV} yet): {s['lead_source']}",
                False,
            )
    ffma_warp = 64 * table.flop_cost("fp32_fma")
    per_inst, per_byte = shared_split(energy_cal["SRAM"]["mean"], energy_cal["SRAM_16B"]["mean"])
    for name, s in spec["prices"].items():
        if "energy_table" in s:
            entry = s["energy_table"]
            value = (
                table.static_power()
                if entry == "static_w"
                else (table.byte_cost(entry) if entry in table.pj_per_byte else table.flop_cost(entry))
            )
            price[name] = value * s.get("factor", 1)
            sources[f"price:{name}"], measured[f"price:{name}"] = f"{table.sources.get(entry, '')}", True
        elif name == "shared_instruction":
            price[name], sources[f"price:{name}"], measured[f"price:{name}"] = per_inst, s["derived"], True
        elif name == "shared_byte":
            price[name], sources[f"price:{name}"], measured[f"price:{name}"] = per_byte, s["derived"], True
        elif s.get("file", UNITS_CSV) != UNITS_CSV:  # another unit-calibration run (reported figures)
            rows = read_units(MEASUREMENTS / s["file"])
            if s.get("static") == "model":  # a run without its own nanosleep row: the model's static power
                rows = [{"bench": "static", "repeat": "model", "watts": table.static_power()}, *rows]
            other = derive_units(rows)[s["bench"]]
            price[name] = other["pj"]
            sources[f"price:{name}"] = (
                f"measured: data/measurements/current/{s['file']} ({s['bench']}): {s['what']}"
            )
            measured[f"price:{name}"] = True
        elif s["bench"] in units:
            price[name] = units[s["bench"]]["pj_raw" if s.get("raw") else "pj"]
            sources[f"price:{name}"] = (
                f"measured: data/measurements/current/{UNITS_CSV} ({s['bench']}): {s['what']}"
            )
            measured[f"price:{name}"] = True
        elif s.get("lead") == "ffma_warp":
            price[name] = ffma_warp
            sources[f"price:{name}"] = (
                f"lead (no {s['bench']} in {UNITS_CSV} yet): one FFMA warp instruction, 64 FLOPs at fp32_fma"
            )
            measured[f"price:{name}"] = False
        else:
            price[name] = table.byte_cost(s["lead_energy_table"])
            sources[f"price:{name}"] = (
                f"lead (no {s['bench']} in {UNITS_CSV} yet): the {s['lead_energy_table']} figure"
            )
            measured[f"price:{name}"] = False
    static = price.pop("static_w")
    return CostHardware(
        key, sms, clock, preset.level("L2").capacity_bytes, rate, price, static, sources, measured
    )
