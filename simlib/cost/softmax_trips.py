"""PyTorch's forward softmax kernels by row length, and the fraction of their loop trips that carry
data (`Launch.trip_fill`).

aten/src/ATen/native/cuda/SoftMax.cu, ``host_softmax`` (the kernel of ``torch.softmax`` along the last
dimension), as torch 2.11 on the H200 dispatches it (run cost5-units-20261203's
``benchmarks/softmax_kernels_h200.py``: data/measurements/current/softmax_kernels_h200.csv, the kernel
name by row length):

* fp32 rows (SDPA math's softmax, and the bf16 eager chain's after its cast to fp32) of at most 2048
  elements run ``softmax_warp_forward``, one warp per row over the next power of two of N elements
  (``log2_ceil``), the lanes past N masked: fill N / 2^⌈log2 N⌉. fp16's half-to-float path (the fp16
  eager chain) runs it up to 1024.
* longer rows run one block per row of ``SoftMaxForward_getBlockSize``: min(N, 1024) threads rounded up
  to a warp, so 1024 here. For fp32, when a thread's share ⌈N / 1024⌉ is below 10,
  ``cunn_SoftMaxForwardReg`` keeps the row in registers: each thread holds ⌈N / 1024⌉ elements, a
  row of ⌈N / 1024⌉·1024 slots, fill N / that. Otherwise (and always for fp16's half-to-float path),
  ``cunn_SoftMaxForwardSmem`` keeps the row in shared memory when N is a multiple of ILP =
  16 B / element bytes (4 for fp32, 8 for fp16) and fits (48 KiB less the reduction's words), else
  ``cunn_SoftMaxForward`` reads it from global memory in each of its three passes; both walk it in trips
  of 1024·ILP elements: ⌈N / (1024·ILP)⌉ trips, the last partly empty, fill N / (trips·1024·ILP).

The kernels' time per row follows their trips (each a dependent load and a block or warp reduction,
the idle lanes waiting at the reduction), so a launch runs at `fill` of the rate the calibration saw.
Until round 6 the model took the backward's block rule (the next power of two at or above
min(N/4, 1024)/2 threads) and the warp kernel to 1024 for both paths.

>>> [forward_kernel(n, "fp32") for n in (2048, 2900, 9000, 12000, 16384)]
['warp', 'reg', 'reg', 'smem', 'block']
>>> [forward_kernel(n, "fp16") for n in (1024, 1100, 1400, 16384)]
['warp', 'block', 'smem', 'smem']
>>> softmax_fill(4096), round(softmax_fill(2900), 3), round(softmax_fill(1100), 3), softmax_fill(768)
(1.0, 0.944, 0.537, 0.75)
>>> softmax_fill(1400, "fp16"), softmax_fill(4096, "fp16")
(0.1708984375, 0.5)
"""

from __future__ import annotations

from ..tiling import ceil_div

#: host_softmax's persistent (warp-per-row) kernel up to this many elements per row, by path.
WARP_SOFTMAX_MAX = {"fp32": 2048, "fp16": 1024}
#: Elements per thread per trip of the block kernels: sizeof(float4) / sizeof(input element).
ILP = {"fp32": 4, "fp16": 8}
MAX_THREADS = 1024
#: cunn_SoftMaxForwardReg while a thread's share of the row is below this (fp32 only, as measured).
REG_MAX_PER_THREAD = 10
#: The block kernels' shared memory per block (sharedMemPerBlock) and the reduction's buffer.
SMEM_BYTES = 48 * 1024
ELEMENT_BYTES = {"fp32": 4, "fp16": 2}
PATHS = tuple(ILP)


def _next_pow2(x: int) -> int:
    return 1 << max(int(x) - 1, 0).bit_length()


def _check(n: int, path: str) -> None:
    if n < 1:
        raise ValueError(f"row length must be >= 1, got {n}")
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")


def block_threads(n: int) -> int:
    """SoftMaxForward_getBlockSize(n): threads per row of the forward block kernels."""
    return ceil_div(min(n, MAX_THREADS), 32) * 32


def forward_kernel(n: int, path: str = "fp32") -> str:
    """Which forward kernel host_softmax runs for rows of n elements: 'warp', 'reg', 'smem' or 'block'
    (`path`: 'fp32' input, or 'fp16' for the half-to-float kernel)."""
    _check(n, path)
    if n <= WARP_SOFTMAX_MAX[path]:
        return "warp"
    threads = block_threads(n)
    if path == "fp32" and ceil_div(n, threads) < REG_MAX_PER_THREAD:
        return "reg"
    smem_elements = (SMEM_BYTES - threads // 32 * 4) // ELEMENT_BYTES[path]
    if n % ILP[path] == 0 and n < smem_elements:
        return "smem"
    return "block"


def softmax_fill(n: int, path: str = "fp32") -> float:
    """The fraction of the forward softmax kernel's loop trips that carry data at rows of n elements."""
    kind = forward_kernel(n, path)
    if kind == "warp":
        return n / _next_pow2(n)
    threads = block_threads(n)
    trip = threads if kind == "reg" else threads * ILP[path]
    return n / (ceil_div(n, trip) * trip)
