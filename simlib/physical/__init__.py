"""The physical model: what an H200 moves, next to the paper's two-level logical model.

The logical counts (simlib.count) are kept exactly as they are. This package predicts what Nsight
Compute measures: 32-byte sectors between L1 and L2 after warp coalescing, shared-memory
wavefronts after bank conflicts and broadcasts, and DRAM bytes after reuse in L2.
"""
from .coalescing import shared_wavefronts, warp_sectors
from .l2 import dram_reads_of_rereads

__all__ = ["dram_reads_of_rereads", "shared_wavefronts", "warp_sectors"]
