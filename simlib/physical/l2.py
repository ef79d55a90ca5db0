"""Reuse in L2: does a re-read tile come from L2 or from DRAM?

An LRU cache of C bytes serves a re-read from cache when fewer than C distinct bytes were touched
since the previous read of the same data (the reuse distance, Mattson et al. 1970). A tensor of F
bytes read t times, with a reuse distance D between consecutive reads of each element, costs F
bytes of DRAM reads if D ≤ C, and t·F if D > C (a streaming access pattern thrashes LRU).
Real L2s are not perfect LRU (set hashing, partitions; the H200's L2 is two partitions of 30 MB,
and data may be held in the far partition): the prediction states its assumption and the notebook
compares it with ncu.
Worked number: an H200 (C = 60 MiB) running fa2 with N = 4096, d = 64, fp32: K and V of one head
are 2 MiB; with 16 heads in flight the reuse distance is 32 MiB < 60 MiB, so K and V come from DRAM
once per head however many Q blocks re-read them.
"""


def dram_reads_of_rereads(footprint_bytes, reads, reuse_distance_bytes, l2_bytes):
    """DRAM bytes for `reads` reads of `footprint_bytes` with the given reuse distance.

    >>> dram_reads_of_rereads(2**21, 64, 2**25, 60 * 2**20)    # fits: read from DRAM once
    2097152
    >>> dram_reads_of_rereads(2**21, 64, 2**27, 60 * 2**20)    # does not fit: every read misses
    134217728
    """
    if reads <= 0:
        return 0
    return footprint_bytes if reuse_distance_bytes <= l2_bytes else footprint_bytes * reads


#: The H200's L2 is two partitions joined by the "LTC fabric" (NVIDIA A100 and H100 whitepapers:
#: "the L2 cache is divided into two partitions").
L2_PARTITIONS = 2


def l2_partition_factor(partitions=L2_PARTITIONS):
    """L2 lookups per L1 request: the near partition always, the far one for the (p−1)/p of the
    sectors homed there (ncu's lts__t_sectors_srcunit_ltcfabric).

    >>> l2_partition_factor(2)
    1.5
    """
    return 1 + (partitions - 1) / partitions
