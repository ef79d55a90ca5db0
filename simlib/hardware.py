"""Hardware: ordered memory levels (capacity, bandwidth, transfer granularity) and peak FLOP/s.

Presets live in data/hardware/<key>.json, each number with its source.
The SRAM a tiled schedule may use is the level's `max_shared_per_block_bytes` (what one thread
block can allocate), not the whole per-SM L1/shared capacity.
"""
from dataclasses import dataclass
from functools import lru_cache

from . import presets
from .presets import DATA_DIR  # noqa: F401  (where claims, reproduce and the lectures find data/)


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
    peak_flops: dict          # dtype -> FLOP/s
    levels: tuple             # MemoryLevel, closest to compute first
    sm_count: int
    sources: dict

    def level(self, name):
        for level in self.levels:
            if level.name == name:
                return level
        raise ValueError(f"{self.key} has no memory level {name!r}")

    @property
    def sram_bytes(self):
        """Shared memory one thread block may use: the M of the paper's tiling."""
        sram = self.level("SRAM")
        return sram.max_shared_per_block_bytes or sram.capacity_bytes


def preset_keys():
    return presets.keys("hardware")


@lru_cache(maxsize=None)
def load_preset(key):
    """The Hardware preset `key` (e.g. 'a100-40gb'); ValueError naming `gpu` if unknown."""
    raw = presets.read("hardware", key, "gpu")
    fields = MemoryLevel.__dataclass_fields__
    levels = tuple(MemoryLevel(**{k: v for k, v in lv.items() if k in fields}) for lv in raw["levels"])
    return Hardware(raw["key"], raw["name"], dict(raw["peak_flops"]), levels, raw["sm_count"],
                    dict(raw.get("sources", {})))
