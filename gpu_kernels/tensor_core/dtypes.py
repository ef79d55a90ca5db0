"""The two 16-bit input types, as the tensor-core kernels see them: uint16 bit patterns.

One representation for both dtypes: every fp16 or bf16 array a kernel reads or writes is a
``numpy.uint16`` array holding the bit patterns (numba has no bf16 array type, and its simulator none
at all; a uint16 array works the same on the GPU and in the simulator). The kernel is compiled for
one dtype and picks the matching ``mma`` and ``cvt`` instructions; the bits are never interpreted
by numba itself.

* bf16 = the upper 16 bits of an fp32, rounded to nearest, ties to even (what ``cvt.rn.bf16x2.f32``
  does on the GPU). Worked number: 1 + 2⁻⁸ (0x3F808000) is a tie between 0x3F80 and 0x3F81 and
  rounds to the even 0x3F80 = 1.0; 1 + 3·2⁻⁹ rounds up to 0x3F81 = 1.0078125.
* fp16 = IEEE binary16, numpy's own float16 conversion (round to nearest even as well).

The vocabulary is simlib's, one for the project (``simlib.units``): ``DTYPES`` are its
``TENSOR_CORE_DTYPES``; ``UNIT_ROUNDOFF`` (u = 2⁻ᵖ for p significand bits, 8 for bf16, 11 for fp16:
the largest relative error of one rounding, used by the tolerances), ``DTYPE_MAX`` (the largest finite
value, which an upload may not exceed) and the bytes per element live there.
"""

from __future__ import annotations

import numpy as np

from simlib.units import TENSOR_CORE_DTYPES as DTYPES


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    return dtype


def to_bits(x, dtype: str) -> np.ndarray:
    """fp32 (or any float) array -> uint16 bit patterns of `dtype`, round to nearest even."""
    check_dtype(dtype)
    x = np.atleast_1d(np.asarray(x, dtype=np.float32))
    if dtype == "fp16":
        with np.errstate(over="ignore"):  # beyond 65,504 becomes inf, as the GPU's cvt does; callers check
            return x.astype(np.float16).view(np.uint16)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # add half an ulp (less on a tie to even), truncate
    nan = np.isnan(x)
    out = rounded.astype(np.uint16)
    out[nan] = 0x7FC0  # a quiet NaN (rounding could have carried a NaN's payload into inf)
    return out


def from_bits(bits, dtype: str) -> np.ndarray:
    """uint16 bit patterns of `dtype` -> the exact fp32 values they encode."""
    check_dtype(dtype)
    bits = np.asarray(bits, dtype=np.uint16)
    if dtype == "fp16":
        return bits.view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def round_to(x, dtype: str) -> np.ndarray:
    """x rounded to `dtype` and back to fp32: the values a kernel fed with to_bits(x) really sees."""
    return from_bits(to_bits(x, dtype), dtype)
