"""A toy kernel, added the way docs/ARCHITECTURE.md says a kernel is added (tests/test_kernel_registry.py
registers it with one `Kernel(...)` line): the readable FlashAttention-2 source (gpu_kernels.kernels.tiled)
with its tiles fixed at Br = Bc = 16, in a file of its own. Its plan and runner have the registry's
signatures; its counters must equal simlib's fa2 schedule at those tiles."""

from gpu_kernels.kernels.tiled import plan_tiled, run_tiled

BLOCK = 16


def plan_toy(q, k, v, *, counting=False, causal=False):
    return plan_tiled(q, k, v, block_rows=BLOCK, block_cols=BLOCK, counting=counting, causal=causal)


def run_toy(q, k, v, *, count=False, causal=False):
    return run_tiled(q, k, v, block_rows=BLOCK, block_cols=BLOCK, count=count, causal=causal)
