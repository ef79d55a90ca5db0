"""Hardware: ordered memory levels (capacity, bandwidth, transfer granularity) and peak FLOP/s.

Presets live in data/hardware/<key>.json, each number with its source.
The SRAM a tiled schedule may use is the level's `max_shared_per_block_bytes` (what one thread
block can allocate), not the whole per-SM L1/shared capacity.

>>> h200 = load_preset("h200")
>>> h200.sram_bytes, h200.level("HBM").bandwidth_bytes_per_s    # 227 KiB per block, 4.8 TB/s
(232448, 4800000000000)

The level "HBM" is the model's name for the device memory of every preset; `dram_name` is what that
memory really is, for labels:

>>> h200.dram_name, load_preset("rtx-4090").dram_name
('HBM3e', 'GDDR6X')
"""

from dataclasses import dataclass
from functools import cache
from typing import Any

from . import presets
from .presets import DATA_DIR, DEFAULT_GPU  # noqa: F401  (where claims, reproduce and the lectures find data/)


@dataclass(frozen=True)
class MemoryLevel:
    name: str
    capacity_bytes: int
    bandwidth_bytes_per_s: float | None
    granularity_bytes: int
    max_shared_per_block_bytes: int | None = None


@dataclass(frozen=True)
class Hardware:
    key: str
    name: str
    peak_flops: dict[str, float]  # dtype -> FLOP/s
    levels: tuple[MemoryLevel, ...]  # closest to compute first
    sm_count: int
    sources: dict[str, str]
    compute_capability: str | None = None  # e.g. "9.0"
    register_file_bytes: int | None = None  # 32-bit registers per SM × 4 B
    max_registers_per_thread: int | None = None
    dram_name: str = "device memory"  # the "HBM" level's technology: "HBM3e", "GDDR6X" …

    def level(self, name: str) -> MemoryLevel:
        for level in self.levels:
            if level.name == name:
                return level
        raise ValueError(f"{self.key} has no memory level {name!r}")

    @property
    def sram_bytes(self) -> int:
        """Shared memory one thread block may use: the M of the paper's tiling."""
        sram = self.level("SRAM")
        return sram.max_shared_per_block_bytes or sram.capacity_bytes


def preset_keys() -> list[str]:
    return presets.keys("hardware")


def load_preset(key: str) -> Hardware:
    """The Hardware preset `key` (e.g. 'a100-40gb'); ValueError naming `gpu` and the keys if unknown."""
    return _load(presets.checked_key("hardware", key, "gpu"))


@cache
def _load(key: str) -> Hardware:
    raw: dict[str, Any] = presets.read("hardware", key, "gpu")
    fields = MemoryLevel.__dataclass_fields__
    levels = tuple(MemoryLevel(**{k: v for k, v in lv.items() if k in fields}) for lv in raw["levels"])
    return Hardware(
        raw["key"],
        raw["name"],
        dict(raw["peak_flops"]),
        levels,
        raw["sm_count"],
        dict(raw.get("sources", {})),
        raw.get("compute_capability"),
        raw.get("register_file_bytes_per_sm"),
        raw.get("max_registers_per_thread"),
        _dram_name(raw),
    )


def _dram_name(raw: dict[str, Any]) -> str:
    """The preset's `dram_name` (with its source); ValueError naming the preset if it lacks either."""
    name = raw.get("dram_name")
    if not isinstance(name, str) or not name or not raw.get("sources", {}).get("dram_name"):
        raise ValueError(f"data/hardware/{raw['key']}.json: dram_name (and its source) missing")
    return name
