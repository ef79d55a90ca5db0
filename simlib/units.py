"""Element sizes and human-readable byte sizes.

>>> parse_size("192KiB")
196608
>>> DTYPE_BYTES["fp16"] * 4096 * 64   # one fp16 Q of N=4096, d=64: 512 KiB
524288
"""
import re

DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}
STAT_BYTES = 4  # row statistics l, m and the logsumexp L are always fp32

_SIZE_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9,
    "kib": 2**10, "mib": 2**20, "gib": 2**30,
    "k": 2**10, "m": 2**20, "g": 2**30,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text, name="sram"):
    """Parse '196608', '192KiB', '192 KB' (decimal), '0.5MiB' into bytes (an int).

    Raises ValueError naming `name` for anything else, or for a size that is not a whole number of
    bytes or not positive.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = _SIZE_RE.match(str(text))
        unit = match.group(2).lower() if match else None
        if not match or unit not in _SIZE_UNITS:
            raise ValueError(f"{name}: cannot parse size {text!r} (use bytes or e.g. 192KiB, 100KB, 1MiB)")
        exact = float(match.group(1)) * _SIZE_UNITS[unit]
        if exact != int(exact):
            raise ValueError(f"{name}: {text!r} is not a whole number of bytes")
        value = int(exact)
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {text!r}")
    return value


def dtype_bytes(dtype):
    """Bytes per element of a workload dtype; ValueError naming `dtype` if unknown."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}") from None
