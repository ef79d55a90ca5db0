"""Warp coalescing (global memory) and bank conflicts (shared memory), for one warp instruction.

Global: the L1 splits a warp's request into 32-byte sectors; ncu's
l1tex__t_sectors_pipe_lsu_mem_global_op_ld counts them. A warp reading 32 consecutive fp32 values
from a 32-B-aligned address touches 128 B = 4 sectors; reading a column of a row-major fp32 matrix
with 64-element rows touches 32 sectors (one per lane): 8× the traffic for the same data.

Shared: 32 banks of 4 bytes; a warp instruction takes as many wavefronts as the most-loaded bank
has distinct 4-byte words (lanes reading the same word are served by one broadcast). Sources: CUDA
C++ Programming Guide, 'Device Memory Accesses' (32-byte segments) and 'Shared Memory' (32 banks,
successive 32-bit words in successive banks, broadcast of one word to several threads).
"""

from collections import defaultdict

SECTOR_BYTES = 32
BANKS = 32
BANK_WORD_BYTES = 4


def warp_sectors(byte_addresses, access_bytes=4, sector_bytes=SECTOR_BYTES):
    """Distinct `sector_bytes` sectors touched by the active lanes' accesses of `access_bytes` each.

    >>> warp_sectors([4 * lane for lane in range(32)])          # coalesced row of fp32
    4
    >>> warp_sectors([256 * lane for lane in range(32)])        # column of a 64-wide fp32 matrix
    32
    """
    sectors = set()
    for address in byte_addresses:
        first, last = address // sector_bytes, (address + access_bytes - 1) // sector_bytes
        sectors.update(range(first, last + 1))
    return len(sectors)


def shared_wavefronts(byte_addresses, access_bytes=4, lanes=None, banks=BANKS, word_bytes=BANK_WORD_BYTES):
    """Wavefronts of one warp's shared-memory access of `access_bytes` each at `byte_addresses`.

    4-byte accesses: the most-loaded bank's count of distinct words (lanes reading one word share
    a broadcast). 16-byte accesses (LDS.128): served a half-warp at a time (lanes 0–15, then
    16–31), each half as above with every lane covering 4 consecutive words; the halves add up.
    `lanes` are the active lanes' positions in the warp (default 0, 1, 2, …). The half-warp rule
    is not in NVIDIA's guide; it is what the H200 profile of the tiled kernel's previous build shows (profile_h200.csv, archived): its
    all-lanes-same-address LDS.128 of V cost 1.98 wavefronts with 24 active lanes and 1.47 on
    average over warps of 32 and 16 lanes (docs/ARCHITECTURE.md).

    >>> shared_wavefronts([4 * lane for lane in range(32)])     # consecutive words: no conflict
    1
    >>> shared_wavefronts([0] * 32)                             # one word, broadcast
    1
    >>> shared_wavefronts([4 * 64 * lane for lane in range(32)])  # stride 64 words: 32-way conflict
    32
    >>> shared_wavefronts([4 * 65 * lane for lane in range(32)])  # padded stride 65: conflict free
    1
    >>> shared_wavefronts([0] * 32, access_bytes=16)            # a float4 broadcast: one per half
    2
    >>> shared_wavefronts([4 * 68 * lane for lane in range(32)], access_bytes=16)  # float4 rows, stride 68
    4
    """
    if access_bytes not in (4, 16):
        raise ValueError(f"access_bytes must be 4 or 16, got {access_bytes}")
    addresses = list(byte_addresses)
    lanes = list(range(len(addresses))) if lanes is None else list(lanes)
    group = 32 if access_bytes == 4 else 16
    halves = defaultdict(lambda: defaultdict(set))
    for lane, address in zip(lanes, addresses):
        first = address // word_bytes
        for word in range(first, first + access_bytes // word_bytes):
            halves[lane // group][word % banks].add(word)
    return sum(max(len(words) for words in per_bank.values()) for per_bank in halves.values())
