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


def shared_wavefronts(byte_addresses, banks=BANKS, word_bytes=BANK_WORD_BYTES):
    """Wavefronts of one warp's shared-memory access of 4-byte words at `byte_addresses`.

    >>> shared_wavefronts([4 * lane for lane in range(32)])     # consecutive words: no conflict
    1
    >>> shared_wavefronts([0] * 32)                             # one word, broadcast
    1
    >>> shared_wavefronts([4 * 64 * lane for lane in range(32)])  # stride 64 words: 32-way conflict
    32
    >>> shared_wavefronts([4 * 65 * lane for lane in range(32)])  # padded stride 65: conflict free
    1
    """
    words_per_bank = defaultdict(set)
    for address in byte_addresses:
        word = address // word_bytes
        words_per_bank[word % banks].add(word)
    return max((len(words) for words in words_per_bank.values()), default=0)
