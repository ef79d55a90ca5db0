"""How many thread blocks an SM holds at once, and so how many run together (a wave).

The limits are compute capability 9.0's, each named with its source; the per-SM shared memory,
the per-block reservation and the register file were also read off the H200 itself
(data/hardware/evidence/h200-device-query-2026-11-29.json: sharedMemPerMultiprocessor 233472,
reservedSharedMemPerBlock 1024, regsPerMultiprocessor 65536). Registers per thread are the
compiler's output: ncu reports them per launch (launch__registers_per_thread).

Worked number: the tiled kernel at d = 128 (24 threads, 254 registers, 39360 B of shared memory):
registers allow 65536 / (32·256) = 8 blocks, shared memory ⌊233472 / (39360 + 1024)⌋ = 5, threads
2048 / 24 = 85, the block limit 32: 5 blocks per SM, 660 on the 132 SMs of an H200.

>>> blocks_per_sm(threads=24, registers=254, shared_bytes=39360)
5
"""

from dataclasses import dataclass

#: CUDA C++ Programming Guide, Table 'Technical Specifications per Compute Capability', CC 9.0.
MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
WARP_SIZE = 32
#: Measured on the H200 (device query above); also the guide's table for CC 9.0.
REGISTERS_PER_SM = 65536
SHARED_BYTES_PER_SM = 233472
RESERVED_SHARED_PER_BLOCK = 1024
#: Register allocation unit: 256 registers per warp (CUDA Occupancy Calculator, 'Register
#: allocation unit size' for CC 9.0; Nsight Compute's launch__registers_per_thread_allocated).
REGISTER_ALLOCATION_UNIT = 256


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    limited_by: str


def occupancy(threads, registers=None, shared_bytes=0):
    """Resident blocks per SM and the resource that limits them (registers=None: not a limit)."""
    warps = -(-threads // WARP_SIZE)
    limits = {
        "threads": MAX_THREADS_PER_SM // (warps * WARP_SIZE),
        "blocks": MAX_BLOCKS_PER_SM,
        "shared memory": SHARED_BYTES_PER_SM // (shared_bytes + RESERVED_SHARED_PER_BLOCK),
    }
    if registers is not None:
        per_warp = -(-registers * WARP_SIZE // REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
        limits["registers"] = REGISTERS_PER_SM // (per_warp * warps)
    name = min(limits, key=limits.get)
    return Occupancy(limits[name], name)


def blocks_per_sm(threads, registers=None, shared_bytes=0):
    return occupancy(threads, registers, shared_bytes).blocks_per_sm
