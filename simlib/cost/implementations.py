"""Every implementation the course compares, by name: how it is modelled, or that it is measured only.

`IMPLEMENTATIONS[name]` holds the dtypes it runs in, whether it supports a causal mask, a builder
(workload, calibration) → launches, and a one-line description. cuDNN's and PyTorch's
memory-efficient (CUTLASS) attention are library kernels whose internals this project has not
read: they are listed, measured only, and `predict` refuses them, saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..workload import Workload
from .calibration import Calibration
from .library import cupy_naive, eager_16bit, fa2_tc_v4, fa2_tc_v5, torch_flash, torch_math
from .numba_fp32 import numba_fast, numba_naive, numba_tiled
from .tensor_core import fa2_tc, fa3_tc, naive_tc
from .work import Launch


@dataclass(frozen=True)
class Implementation:
    name: str
    description: str
    dtypes: tuple[str, ...]
    causal: bool
    build: Callable[[Workload, Calibration], list[Launch]] | None

    @property
    def modelled(self) -> bool:
        return self.build is not None

    def launches(self, workload: Workload, cal: Calibration) -> list[Launch]:
        """The launches the builder makes (ValueError for a measured-only implementation)."""
        if self.build is None:
            raise ValueError(f"{self.name} is measured only: {self.description}")
        return self.build(workload, cal)


IMPLEMENTATIONS: dict[str, Implementation] = {
    i.name: i
    for i in (
        Implementation(
            "numba_naive",
            "numba: S = QKᵀ, softmax, O = PV, three fp32 launches (S, P through HBM)",
            ("fp32",),
            True,
            numba_naive,
        ),
        Implementation(
            "numba_tiled",
            "numba: the readable FlashAttention-2, one thread per query row",
            ("fp32",),
            True,
            numba_tiled,
        ),
        Implementation(
            "numba_fast", "numba: register-tiled FlashAttention-2 (fp32 FFMA)", ("fp32",), False, numba_fast
        ),
        Implementation(
            "naive_tc",
            "numba: three 16-bit launches on tensor cores (S, P through HBM)",
            ("bf16", "fp16"),
            True,
            naive_tc,
        ),
        Implementation(
            "fa2_tc",
            "numba: FlashAttention-2 on tensor cores, version 3 (4 warps of 16 rows, Bc = 64: the build the "
            "energy runs and the post-freeze run measured)",
            ("bf16", "fp16"),
            True,
            fa2_tc,
        ),
        Implementation(
            "fa2_tc_v4",
            "numba: fa2_tc version 4, gpu_kernels' default since issue 22 (FlashAttention-2's layout, 4 warps "
            "of 32 rows); calibrated on its committed timings only, not measured after the freeze",
            ("bf16", "fp16"),
            True,
            fa2_tc_v4,
        ),
        Implementation(
            "fa2_tc_v5",
            "numba: fa2_tc version 5, gpu_kernels' default since run k3-run1 (version 4's tiles, a two-stage K/V "
            "cp.async ring, causal blocks heaviest first); calibrated on its committed non-causal timings",
            ("bf16", "fp16"),
            True,
            fa2_tc_v5,
        ),
        Implementation(
            "fa3_tc",
            "numba: FlashAttention on Hopper's wgmma (two consumer warpgroups of 64 rows, the 128-byte swizzle; "
            "d = 128 with FA3's intra-warpgroup pipeline); calibrated on its committed non-causal timings",
            ("bf16", "fp16"),
            True,
            fa3_tc,
        ),
        Implementation(
            "torch_flash",
            "PyTorch SDPA FlashAttention-2 (its vendored FA2 forward kernel)",
            ("bf16", "fp16"),
            True,
            torch_flash,
        ),
        Implementation(
            "eager_bf16",
            "eager 16-bit attention (Hugging Face style): cuBLAS GEMMs, scale, softmax to fp32, cast",
            ("bf16", "fp16"),
            True,
            eager_16bit,
        ),
        Implementation(
            "torch_math",
            "PyTorch SDPA math backend (fp32 inside: bf16 inputs are upcast)",
            ("fp32", "bf16", "fp16"),
            True,
            torch_math,
        ),
        Implementation(
            "cupy_naive",
            "cupy: SGEMM, softmax in elementwise kernels, SGEMM (fp32)",
            ("fp32",),
            False,
            cupy_naive,
        ),
        Implementation(
            "torch_cudnn",
            "PyTorch SDPA cuDNN attention: measured only (the library's kernel is not modelled)",
            ("bf16",),
            True,
            None,
        ),
        Implementation(
            "torch_efficient",
            "PyTorch SDPA memory-efficient (CUTLASS) attention: measured only",
            ("bf16", "fp32"),
            True,
            None,
        ),
    )
}


def implementation(name: str) -> Implementation:
    if not isinstance(name, str) or name not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}, got {name!r}")
    return IMPLEMENTATIONS[name]
