"""Element sizes and human-readable byte sizes, parsed exactly (no float).

>>> parse_size("192KiB")
196608
>>> parse_size("0.5MiB"), parse_size("100 KB")
(524288, 100000)
>>> DTYPE_BYTES["fp16"] * 4096 * 64   # one fp16 Q of N=4096, d=64: 512 KiB
524288
>>> DTYPE_MAX["fp16"]                  # fp16's largest finite number
65504.0
"""

import re
from decimal import Decimal

DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}
#: The 16-bit types of the tensor-core kernels (bf16 first: their default).
TENSOR_CORE_DTYPES = ("bf16", "fp16")
#: u = 2⁻ᵖ for p significand bits: the largest relative error of one rounding to the dtype.
UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8, "fp32": 2.0**-24}
#: Largest finite value, (2 − 2¹⁻ᵖ)·2^emax: fp16 (2 − 2⁻¹⁰)·2¹⁵ = 65,504; bf16 (2 − 2⁻⁷)·2¹²⁷ ≈ 3.39e38;
#: fp32 (2 − 2⁻²³)·2¹²⁷ ≈ 3.40e38.
DTYPE_MAX = {
    "fp16": (2 - 2.0**-10) * 2.0**15,
    "bf16": (2 - 2.0**-7) * 2.0**127,
    "fp32": (2 - 2.0**-23) * 2.0**127,
}
STAT_BYTES = 4  # row statistics l, m and the logsumexp L are always fp32

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "k": 2**10,
    "m": 2**20,
    "g": 2**30,
    "t": 2**40,
}
_SIZE_RE = re.compile(r"([0-9]{1,30}(?:\.[0-9]{1,30})?) ?([a-zA-Z]{0,3})", re.ASCII)
#: The largest size accepted: 2⁶⁰ bytes (1 EiB), far beyond any memory; larger is a typo.
MAX_SIZE_BYTES = 2**60


def parse_size(text: object, name: str = "sram") -> int:
    """Parse 196608, '196608', '192KiB', '192 KB' (decimal), '0.5MiB' into bytes (an int), exactly.

    Raises ValueError naming `name` for anything else: a size that is not a whole number of bytes,
    not positive, or above 2⁶⁰ bytes (1 EiB).
    """
    if isinstance(text, bool):
        raise ValueError(f"{name}: cannot parse size {text!r} (use bytes or e.g. 192KiB, 100KB, 1MiB)")
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE_RE.fullmatch(text.strip()) if isinstance(text, str) and len(text) <= 80 else None
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _SIZE_UNITS:
            raise ValueError(f"{name}: cannot parse size {text!r} (use bytes or e.g. 192KiB, 100KB, 1MiB)")
        exact = Decimal(match.group(1)) * _SIZE_UNITS[unit]
        if exact != exact.to_integral_value():
            raise ValueError(f"{name}: {text!r} is not a whole number of bytes")
        value = int(exact)
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {text!r}")
    if value > MAX_SIZE_BYTES:
        raise ValueError(f"{name}: {text!r} is more than 2**60 bytes (1 EiB)")
    return value


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a workload dtype; ValueError naming `dtype` if unknown."""
    try:
        return DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}") from None
