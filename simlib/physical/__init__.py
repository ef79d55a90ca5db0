"""The physical model: what an H200 moves, next to the paper's two-level logical model.

The logical counts (simlib.count) are kept exactly as they are. This package predicts what Nsight
Compute measures: 32-byte sectors between L1 and L2 after warp coalescing, shared-memory
wavefronts after bank conflicts and broadcasts, and DRAM bytes after reuse in L2.
`predict` (launches.py, a dispatcher to tiled_model.py and naive_model.py) does it for each launch
of the numba kernels; `model_vs_ncu.compare` (written by `python -m gpu_kernels model-vs-ncu`) puts
it next to the recorded Nsight Compute profile. docs/L2_INVESTIGATION.md says what matches and why
the rest misses.
"""

from .coalescing import shared_wavefronts, warp_sectors
from .l2 import dram_reads_of_rereads
from .launches import METRICS, predict
from .occupancy import blocks_per_sm

__all__ = [
    "METRICS",
    "blocks_per_sm",
    "dram_reads_of_rereads",
    "predict",
    "shared_wavefronts",
    "warp_sectors",
]
