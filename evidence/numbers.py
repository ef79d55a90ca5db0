"""Numbers as text and log–log slopes: what the claims, their verdicts and the lecture charts print.

>>> round(fit_loglog_slope([256, 512, 1024], [4 * 256**2, 4 * 512**2, 4 * 1024**2])[0], 6)
2.0
>>> fmt_bytes(2 * 4096**2)            # one fp16 4096×4096 matrix
'32 MiB'
>>> fmt_bytes(136_314_880, binary=False)
'136 MB'
>>> tokens_label(4096), tokens_label(1000)
('4K', '1000')
"""

import numpy as np

# ---------------------------------------------------------------------------------------------
# numbers as text
# ---------------------------------------------------------------------------------------------

_BINARY = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))
_DECIMAL = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))


def _sig(value, digits=3):
    """`value` with `digits` significant digits, without a trailing '.0'."""
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" in text:
        text = f"{value:.0f}"
    return text


def fmt_bytes(n, binary=True, digits=3):
    """Bytes as text: binary units (KiB, MiB, GiB: capacities) or decimal (kB, MB, GB: traffic)."""
    n = float(n)
    for scale, unit in _BINARY if binary else _DECIMAL:
        if abs(n) >= scale:
            return f"{_sig(n / scale, digits)} {unit}"
    return f"{_sig(n, digits)} B"


def fmt_count(n, digits=3):
    """A count as text with a decimal suffix: 16777216 → '16.8 M'."""
    n = float(n)
    for scale, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{_sig(n / scale, digits)} {unit}"
    return _sig(n, digits)


def fmt_seconds(s, digits=3):
    """Seconds as text in s, ms, µs or ns."""
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(s) >= scale:
            return f"{_sig(s / scale, digits)} {unit}"
    return f"{_sig(s / 1e-9, digits)} ns"


def tokens_label(n):
    """A sequence length for a tick: powers of two from 1024 up as '1K', '4K', '64K' (K = 1024)."""
    n = int(n)
    if n >= 1024 and n % 1024 == 0:
        k = n // 1024
        return f"{k // 1024}M" if k >= 1024 and k % 1024 == 0 else f"{k}K"
    return str(n)


# ---------------------------------------------------------------------------------------------
# log–log fits
# ---------------------------------------------------------------------------------------------


def fit_loglog_slope(x, y):
    """Least-squares fit of log10(y) = slope·log10(x) + intercept; returns (slope, intercept).

    Points with a non-positive or non-finite x or y are dropped; at least two must remain.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if keep.sum() < 2 or np.unique(x[keep]).size < 2:
        raise ValueError("a log–log fit needs at least two distinct positive points")
    slope, intercept = np.polyfit(np.log10(x[keep]), np.log10(y[keep]), 1)
    return float(slope), float(intercept)
