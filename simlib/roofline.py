"""Roofline time estimate: max(FLOPs / peak, bytes_level / bandwidth_level) over the binding levels.

Every level's time is reported; by default only HBM binds. SRAM bytes follow the thread-level
counting convention (docs/COUNTING.md: a warp broadcast counts once per thread, no register reuse),
an upper bound on the shared-memory bandwidth a kernel needs, so SRAM binds only when asked
(`levels=("HBM", "SRAM")`).

Worked number: fa2, N=4096, d=64, fp16, B·H=1 on an A100 (312 TFLOP/s fp16, 1.555 TB/s HBM):
4.29 GFLOP / 312e12 = 13.8 µs of compute; HBM traffic ≈ 68 MB / 1.555e12 = 43.5 µs → memory bound.

>>> from simlib import Workload, count, load_preset
>>> r = count("naive", Workload(4096, 64))
>>> roof = roofline(r, load_preset("a100-40gb"))
>>> roof.bound, round(roof.level_s["HBM"] * 1e6, 1)     # 136,314,880 B / 1.555 TB/s = 87.7 µs
('memory (HBM)', 87.7)
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .counted import Counted
from .hardware import Hardware


@dataclass(frozen=True)
class Roofline:
    compute_s: float
    level_s: dict[str, float]  # level name -> seconds to move that level's bytes
    time_s: float
    bound: str  # "compute" or "memory (<level>)"
    arithmetic_intensity: float  # FLOPs per HBM byte
    ridge_point: float  # peak FLOP/s / HBM bandwidth: above it, compute bound

    def frame(self) -> pd.DataFrame:
        rows = [{"term": "compute", "seconds": self.compute_s}]
        rows += [{"term": f"{name} traffic", "seconds": s} for name, s in self.level_s.items()]
        return pd.DataFrame(rows)


def roofline(result: Counted, hardware: Hardware, levels: tuple[str, ...] = ("HBM",)) -> Roofline:
    """Roofline estimate for a `Result` on `hardware`; `levels` are the memory levels that bind."""
    if not isinstance(result, Counted):
        raise TypeError(f"result must be a simlib Result (from count()), got {type(result).__name__}")
    if not isinstance(hardware, Hardware):
        raise TypeError(f"hardware must be a simlib Hardware (e.g. load_preset('h200')), got {hardware!r}")
    dtype = result.workload.dtype
    peak = hardware.peak_flops.get(dtype)
    if peak is None:
        raise ValueError(f"{hardware.key} has no peak FLOP/s for dtype {dtype}")
    compute_s = result.flops / peak
    moved = {"HBM": result.hbm_bytes, "SRAM": result.sram_bytes_moved}
    level_s = {}
    for name, nbytes in moved.items():
        bandwidth = hardware.level(name).bandwidth_bytes_per_s
        if bandwidth:
            level_s[name] = nbytes / bandwidth
    binding = {name: level_s[name] for name in levels if name in level_s}
    if not binding:
        raise ValueError(f"{hardware.key} has no bandwidth for levels {levels}")
    slowest = max(binding, key=lambda name: binding[name])
    time_s = max(compute_s, binding[slowest])
    bound = "compute" if compute_s >= level_s[slowest] else f"memory ({slowest})"
    hbm_bw = hardware.level("HBM").bandwidth_bytes_per_s
    if not hbm_bw:
        raise ValueError(f"{hardware.key} has no HBM bandwidth")
    return Roofline(compute_s, level_s, time_s, bound, result.flops / result.hbm_bytes, peak / hbm_bw)
