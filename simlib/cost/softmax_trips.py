"""PyTorch's softmax kernels at row lengths that are not a multiple of their trip: the fraction of
their loop trips that carry data (`Launch.trip_fill`).

aten/src/ATen/native/cuda/SoftMax.cu, ``host_softmax`` (the kernel of ``torch.softmax`` along the last
dimension):

* rows of at most 1024 elements (and 4096 bytes) run ``softmax_warp_forward``, one warp per row over
  the next power of two of N elements (``log2_ceil``), the lanes past N masked: fill N / 2^⌈log2 N⌉;
* longer rows run ``cunn_SoftMaxForward``, one block per row of ``SoftMax_getBlockSize(ILP, N)``
  threads: the next power of two at or above min(N / ILP, 1024) / 2 (at least one warp), ILP = 4
  (16-byte vectors of fp32 accumulators). Each thread walks the row in trips of block · ILP
  elements, every pass (max, sum, write) the same trips, so a row takes ⌈N / (block · ILP)⌉ trips,
  the last one partly empty: fill N / (trips · block · ILP).

The kernels' time per row follows their trips (each a dependent global load and a block or warp
reduction, the idle lanes waiting at the reduction), so a launch runs at `fill` of the rate the
calibration saw: 1 at every power of two (the committed shapes), 0.71 at N = 2900, 0.54 at 1100.

>>> softmax_fill(4096), round(softmax_fill(2900), 3), round(softmax_fill(1100), 3), softmax_fill(768)
(1.0, 0.708, 0.537, 0.75)
"""

from __future__ import annotations

from ..tiling import ceil_div

#: host_softmax's persistent (warp-per-row) kernel up to this many elements per row.
WARP_SOFTMAX_MAX = 1024
#: cunn_SoftMaxForward's elements per thread per trip (sizeof(float4) / sizeof(float)).
ILP = 4
MAX_THREADS = 1024


def _next_pow2(x: int) -> int:
    return 1 << max(int(x) - 1, 0).bit_length()


def block_threads(n: int) -> int:
    """SoftMax_getBlockSize(ILP, n): threads per row of cunn_SoftMaxForward."""
    return max(_next_pow2(min(n // ILP, MAX_THREADS) // 2), 32)


def softmax_fill(n: int) -> float:
    """The fraction of the softmax kernel's loop trips that carry data at rows of n elements."""
    if n < 1:
        raise ValueError(f"row length must be >= 1, got {n}")
    if n <= WARP_SOFTMAX_MAX:
        return n / _next_pow2(n)
    trip = block_threads(n) * ILP
    return n / (ceil_div(n, trip) * trip)
