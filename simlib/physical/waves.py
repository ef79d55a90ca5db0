"""Blocks in waves: which heads each wave touches, and the reuse distance of a re-read between waves.

Blocks are dispatched in launch order (batch·head slowest), ``resident`` at a time
(``blocks_per_sm × SMs``); the blocks of one wave walk their loops together.
Worked number: 2 heads of 3 blocks, 4 resident: wave 0 runs head 0's three blocks and head 1's
first, wave 1 the rest of head 1:

>>> waves(3, 2, 4)
[{0, 1}, {1}]
"""

import numpy as np

from .l2 import dram_reads_of_rereads


def waves(blocks_per_head, bh, resident):
    """Heads touched by each wave when blocks run `resident` at a time in launch order (bh slowest)."""
    block_head = np.repeat(np.arange(bh), blocks_per_head)
    return [set(block_head[w : w + resident].tolist()) for w in range(0, len(block_head), resident)]


def cross_wave_distance(wave_heads, mine, head, head_bytes, wave_bytes):
    """Reuse distance of a head's re-read tiles between consecutive waves `mine` that both touch it.

    The blocks of a wave walk the loop together, so between wave a reading step j of this head and
    wave b reading it again, a reads the rest (steps > j) of each of its other heads, b the start
    (steps < j) of each of its other heads, and this head's other steps are read too: at most
    head_bytes · (1 + max(others in a, others in b)), plus each wave's own data (`wave_bytes`:
    Q rows read and O rows written, or the A rows and C tiles of a matmul).
    """
    worst = 0
    for a, b in zip(mine, mine[1:]):
        others = max(len(wave_heads[a] - {head}), len(wave_heads[b] - {head}))
        worst = max(worst, head_bytes * (1 + others) + wave_bytes)
    return worst


def head_rereads(wave_heads, bh, head_bytes, wave_bytes, l2_bytes):
    """Each head's `head_bytes` (its K/V, or a matmul's B) read once per wave the head is in.

    Returns (DRAM bytes, largest reuse distance, re-reads: reads beyond the first, over all heads).
    """
    dram, worst, rereads = 0, 0, 0
    for h in range(bh):
        mine = [w for w, heads_in in enumerate(wave_heads) if h in heads_in]
        distance = cross_wave_distance(wave_heads, mine, h, head_bytes, wave_bytes)
        worst = max(worst, distance)
        rereads += len(mine) - 1
        dram += dram_reads_of_rereads(head_bytes, len(mine), distance, l2_bytes)
    return dram, worst, rereads
