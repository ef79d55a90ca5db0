"""Counting sectors and wavefronts by class of warp instruction (the bookkeeping of every kernel model).

A kernel model writes out the lanes' byte addresses of one warp instruction, turns them into
32-byte sectors or shared-memory wavefronts, and adds units per instruction × instructions here.
Worked number: 3 instructions of 4 sectors each are 12 sectors:

>>> t = Tally(); t.add("global_ld", 4, 3); (t.units["global_ld"], t.instructions["global_ld"])
(12, 3)
"""

from collections import Counter

import numpy as np

from ..kernel_layout import ITEM_BYTES
from .coalescing import SECTOR_BYTES
from .occupancy import WARP_SIZE

#: Elements per sector: a tile's sector pattern depends only on its start mod 8 (fp32).
ALIGN = SECTOR_BYTES // ITEM_BYTES


class Tally:
    """Sectors and wavefronts by (space, op), accumulated as units per instruction × instructions."""

    def __init__(self):
        self.units = Counter()
        self.instructions = Counter()

    def add(self, key, units, count=1):
        self.units[key] += int(units) * int(count)
        self.instructions[key] += int(count)

    def merge(self, other, times=1):
        for key, value in other.units.items():
            self.units[key] += value * times
        for key, value in other.instructions.items():
            self.instructions[key] += value * times


def lanes(warp, nthreads):
    """Thread ids of warp `warp` in a block of `nthreads` threads (the last warp may be partial)."""
    return np.arange(WARP_SIZE * warp, min(WARP_SIZE * (warp + 1), nthreads))


def residue_counts(offsets):
    """{offset mod 8 elements: how many} for an array of element offsets (tile starts)."""
    values, counts = np.unique(np.asarray(offsets, dtype=np.int64) % ALIGN, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))
