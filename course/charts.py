"""Plotting helpers for the lectures (notebooks/).

Every chart in the lectures goes through these so that they all follow the same rules: labelled axes
with units, log–log where growth is the point, and the fitted slope printed on the chart. Numbers as
text (`fmt_bytes`, `tokens_label`, ...) and the log–log fit come from `evidence.numbers`, which the
claims use too.
"""

from dataclasses import dataclass

import numpy as np

from evidence.numbers import fit_loglog_slope, fmt_bytes, tokens_label

COLORS = {
    "naive": "#d62728",  # red: the slow baseline
    "fa1": "#1f77b4",  # blue
    "fa2": "#2ca02c",  # green
    "compulsory": "#7f7f7f",
    "saha_ye": "#9467bd",
}
LABELS = {
    "naive": "naive (standard attention)",
    "fa1": "FlashAttention-1",
    "fa2": "FlashAttention-2 (forward)",
    "compulsory": "compulsory (read Q, K, V, write O once)",
    "saha_ye": "Saha–Ye bound (asymptotic, constant 1)",
}


def use_style():
    """One readable style for every lecture chart (large enough fonts for a projector)."""
    import matplotlib as mpl

    mpl.rcParams.update(
        {
            "figure.dpi": 100,
            "savefig.dpi": 120,
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "legend.fontsize": 9.5,
            "xtick.labelsize": 10,
            "ytick.labelsize": 10,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "figure.constrained_layout.use": True,
        }
    )


# ---------------------------------------------------------------------------------------------
# log–log fits
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    label: str
    slope: float
    fit_from: float | None
    fit_to: float | None


def plot_loglog(
    ax,
    x,
    y,
    label,
    *,
    fit=True,
    fit_from=None,
    fit_to=None,
    slope_in_label=True,
    color=None,
    marker="o",
    **kwargs,
):
    """Plot y(x) on log–log axes and (by default) fit and print its slope in the legend entry.

    The fit uses the points with fit_from ≤ x ≤ fit_to (all points by default); the legend says which
    range was fitted when it is not the whole curve. Returns a `Fit` (slope None without a fit).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    slope = None
    text = label
    if fit:
        lo = -np.inf if fit_from is None else fit_from
        hi = np.inf if fit_to is None else fit_to
        sel = (x >= lo) & (x <= hi)
        slope, _ = fit_loglog_slope(x[sel], y[sel])
        slope = 0.0 if abs(slope) < 0.005 else slope  # never print "-0.00"
        if slope_in_label:
            text = f"{label}: slope {slope:.2f}"
            if fit_from is not None or fit_to is not None:
                lo_t = tokens_label(x[sel].min()) if float(x[sel].min()).is_integer() else f"{x[sel].min():g}"
                hi_t = tokens_label(x[sel].max()) if float(x[sel].max()).is_integer() else f"{x[sel].max():g}"
                text += f" (fit {lo_t}–{hi_t})"
    ax.loglog(x, y, marker=marker, color=color, label=text, **kwargs)
    return Fit(label, slope, fit_from, fit_to)


def annotate_slope(ax, fit, x, y, *, offset=(6, 0), color=None, fontsize=10):
    """Write 'slope s' next to the point (x, y) in data coordinates (for charts without a legend)."""
    ax.annotate(
        f"slope {fit.slope:.2f}",
        (x, y),
        xytext=offset,
        textcoords="offset points",
        color=color,
        fontsize=fontsize,
        va="center",
    )


# ---------------------------------------------------------------------------------------------
# axis helpers
# ---------------------------------------------------------------------------------------------


def tokens_axis(ax, values, axis="x", label="sequence length N (tokens, 1K = 1024)"):
    """Ticks at exactly `values` (sequence lengths) labelled 256, 1K, 4K …; minor ticks hidden."""
    from matplotlib.ticker import FixedLocator, NullLocator

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(list(values)))
    target.set_minor_locator(NullLocator())
    target.set_major_formatter(lambda v, _pos: tokens_label(v))
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)


def pow2_axis(ax, values, axis="x", label=None):
    """Ticks at exactly `values` with plain integer labels (block sizes, head dims)."""
    from matplotlib.ticker import FixedLocator, NullLocator

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(list(values)))
    target.set_minor_locator(NullLocator())
    target.set_major_formatter(lambda v, _pos: f"{int(round(v))}")
    if label:
        (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)


def bytes_axis(ax, axis="y", label="HBM traffic", binary=False):
    """Log axis of bytes with tick labels in units ('1 MB', '10 GB'); the label states the units.

    Call it after plotting: the tick spacing depends on the data range.
    """
    from matplotlib.ticker import FixedLocator, LogLocator, NullFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    if binary:
        # ticks at powers of two, every `step`-th one, so that labels read 1 KiB, 16 KiB, 256 KiB …
        first, last = int(np.ceil(np.log2(lo))), int(np.floor(np.log2(hi)))
        step = next(s for s in (1, 2, 3, 4, 5, 10, 20) if (last - first) // s + 1 <= 8)
        target.set_major_locator(FixedLocator([2.0**e for e in range(first, last + 1) if e % step == 0]))
    else:
        # a narrow range (under two decades) gets ticks at 1, 2 and 5 × 10^k so it is never unlabelled
        subs = (1.0, 2.0, 5.0) if lo > 0 and hi / lo < 100 else (1.0,)
        target.set_major_locator(LogLocator(base=10, subs=subs, numticks=12))
    target.set_major_formatter(lambda v, _pos: fmt_bytes(v, binary=binary, digits=3))
    target.set_minor_formatter(NullFormatter())
    unit = "bytes, 1 MiB = 2²⁰ B" if binary else "bytes, 1 MB = 10⁶ B"
    (ax.set_ylabel if axis == "y" else ax.set_xlabel)(f"{label} ({unit})")


def ratio_axis(ax, axis="y", label="ratio (×)"):
    """Log axis of ratios with ticks at 1, 2, 5 × 10^k labelled '2×', '10×', '50×'."""
    from matplotlib.ticker import LogLocator, NullFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
    target.set_major_formatter(lambda v, _pos: f"{v:g}×")
    target.set_minor_formatter(NullFormatter())
    (ax.set_ylabel if axis == "y" else ax.set_xlabel)(label)


# ---------------------------------------------------------------------------------------------
# roofline
# ---------------------------------------------------------------------------------------------


def roofline_curve(peak_flops, bandwidth, intensity):
    """Attainable FLOP/s at arithmetic intensity `intensity` (FLOP/byte): min(peak, AI·bandwidth)."""
    return np.minimum(peak_flops, np.asarray(intensity, dtype=float) * bandwidth)


def plot_roofline(ax, hardware, dtype="fp16", points=(), intensity_range=(1, 10_000), title=None):
    """The HBM roofline of `hardware` for `dtype`, with `points` = [(label, FLOP/byte, color), …].

    Each point is drawn on the roof (the attainable FLOP/s at its intensity) and labelled with its
    intensity. The ridge point (peak / HBM bandwidth) is marked. Returns the ridge point.
    """
    peak = hardware.peak_flops[dtype]
    bandwidth = hardware.level("HBM").bandwidth_bytes_per_s
    ridge = peak / bandwidth
    ai = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 200)
    ax.loglog(ai, roofline_curve(peak, bandwidth, ai) / 1e12, color="black", lw=2)
    ax.axvline(ridge, color="gray", ls="--", lw=1)
    ax.annotate(
        f"ridge {ridge:.0f} FLOP/B",
        (ridge, peak / 1e12),
        xytext=(4, -14),
        textcoords="offset points",
        fontsize=9,
        color="gray",
    )
    ax.text(
        intensity_range[0] * 1.3,
        bandwidth * intensity_range[0] * 1.6 / 1e12,
        f"HBM {bandwidth / 1e12:.2f} TB/s",
        rotation=0,
        fontsize=9,
        color="black",
    )
    ax.text(
        intensity_range[1] / 1.3,
        peak / 1e12 * 1.25,
        f"peak {peak / 1e12:.0f} TFLOP/s",
        ha="right",
        fontsize=9,
    )
    for i, (label, intensity, color) in enumerate(points):
        y = float(roofline_curve(peak, bandwidth, intensity)) / 1e12
        ax.plot([intensity], [y], "o", color=color, ms=8, zorder=5)
        ax.annotate(
            f"{label}\n{intensity:.0f} FLOP/B",
            (intensity, y),
            xytext=(8, -22 - 4 * i) if i % 2 == 0 else (-8, 10),
            ha="left" if i % 2 == 0 else "right",
            textcoords="offset points",
            fontsize=9,
            color=color,
        )
    ax.set_xlim(*intensity_range)
    ax.set_ylim(peak / 1e12 / 2000, peak / 1e12 * 3)
    ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
    ax.set_ylabel("attainable (TFLOP/s)")
    ax.set_title(title or f"{hardware.name} ({dtype})")
    return ridge


# ---------------------------------------------------------------------------------------------
# tiles in SRAM
# ---------------------------------------------------------------------------------------------


def name_device_memory(ax, hardware):
    """Write the preset's memory technology where `ax`'s labels, title, texts and legend say "HBM".

    "HBM" is the model's name for device memory on every preset; what a reader sees should be the
    memory itself (`hardware.dram_name`: "HBM3e" on the H200, "GDDR6X" on the RTX 4090). Names
    such as "HBM3e" are left as they are, so calling it twice changes nothing. Returns `ax`.
    """
    import re

    legend = ax.get_legend()
    texts = [ax.xaxis.label, ax.yaxis.label, ax.title, *ax.texts, *(legend.get_texts() if legend else ())]
    for text in texts:
        text.set_text(re.sub(r"\bHBM\b", hardware.dram_name, text.get_text()))
    return ax


# ---------------------------------------------------------------------------------------------
# lecture 5: our kernels next to the standard implementations
# ---------------------------------------------------------------------------------------------

#: display names of the measured attention implementations (the side-by-side runs' variant names)
VARIANT_LABELS = {
    "numba_naive": "numba naive (ours)",
    "numba_tiled": "numba tiled (ours: readable FA2)",
    "numba_tiled_wide": "numba tiled, wide blocks (ours)",
    "numba_fast": "numba fast (ours: register-tiled FA2)",
    "naive_tc": "numba naive_tc (ours)",
    "fa2_tc": "numba fa2_tc (ours: FA2)",
    "cupy_naive": "cupy naive (cuBLAS + softmax)",
    "torch_math": "torch SDPA math (unfused, fp32 inside (upcast))",
    "eager": "eager 16-bit (matmul, softmax, matmul)",
    "eager_hf": "HF eager 16-bit (softmax in fp32, cast back)",
    "attention_ref": "attention_ref 16-bit (the FA paper's reference)",
    "torch_efficient": "torch SDPA memory-efficient",
    "torch_flash": "torch SDPA flash (FlashAttention-2)",
    "torch_cudnn": "torch SDPA cuDNN",
}
#: our kernels (drawn solid; the standard implementations dashed)
OUR_VARIANTS = ("numba_naive", "numba_tiled", "numba_tiled_wide", "numba_fast", "naive_tc", "fa2_tc")
_VARIANT_COLORS = {
    "numba_naive": COLORS["naive"],
    "naive_tc": COLORS["naive"],
    "numba_tiled": COLORS["fa2"],
    "fa2_tc": COLORS["fa2"],
    "numba_fast": "#17becf",
    "numba_tiled_wide": "#bcbd22",
    "cupy_naive": "#ff7f0e",
    "torch_math": "#8c564b",
    "eager": "#d62728",
    "eager_hf": "#ff9896",
    "attention_ref": "#7f7f7f",
    "torch_efficient": "#9467bd",
    "torch_flash": COLORS["fa1"],
    "torch_cudnn": "#e377c2",
}


def variant_color(name):
    """The colour every chart draws the measured variant `name` in (None: matplotlib's next)."""
    return _VARIANT_COLORS.get(name)


def plot_variants(ax, frame, variants, y="time_ms"):
    """One line per variant of `variants` (in that order; those absent from `frame` skipped): `y`
    (a column: 'time_ms' or 'tflops') against `seq_len`, log–log, our kernels solid and the standard
    implementations dashed. `frame` holds one dtype and head dim. Returns the variants drawn."""
    drawn = []
    for name in variants:
        sub = frame[frame["kernel"] == name].sort_values("seq_len")
        if sub.empty:
            continue
        ax.loglog(
            sub["seq_len"],
            sub[y],
            marker="o" if name in OUR_VARIANTS else "s",
            ls="-" if name in OUR_VARIANTS else "--",
            lw=2.2 if name in OUR_VARIANTS else 1.4,
            color=_VARIANT_COLORS.get(name),
            label=VARIANT_LABELS.get(name, name),
        )
        drawn.append(name)
    tokens_axis(ax, sorted(frame["seq_len"].unique()))
    ax.set_ylabel(
        "median wall time (ms, log)" if y == "time_ms" else "achieved TFLOP/s (4·N²·d·B·H / time, log)"
    )
    return drawn


def plot_model_vs_ncu(ax, table, metric_names, tolerance, lo=0.5, hi=20.0):
    """Physical model ÷ Nsight Compute for every launch and shape of a model-vs-ncu `table`: one column
    of points per metric (`metric_names`: ncu name -> short name, in order), one colour per
    'kernel launch', one marker per N, open markers for the larger head dim; ratios outside [lo, hi]
    drawn at the edge as arrows. Cells where ncu counts 0 are not drawn. Returns the legend handles."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    table = table.assign(launch_name=table["kernel"] + " " + table["launch"])
    launches = list(dict.fromkeys(table["launch_name"]))
    palette = plt_colors()
    colors = {name: palette[i % len(palette)] for i, name in enumerate(launches)}
    markers = dict(zip(sorted(table["seq_len"].unique()), "os^Dv"))
    big_d = table["head_dim"].max()
    ax.axhspan(1 - tolerance, 1 + tolerance, color=COLORS["fa2"], alpha=0.18)
    ax.axhline(1, color="black", lw=0.8)
    width = 0.7 / max(1, len(launches))
    for xi, metric in enumerate(metric_names):
        for _, r in table[(table["metric"] == metric) & table["ratio"].notna()].iterrows():
            x = xi + (launches.index(r["launch_name"]) - (len(launches) - 1) / 2) * width
            x += 0.04 if r["head_dim"] == big_d else -0.04
            y, color = float(r["ratio"]), colors[r["launch_name"]]
            ax.plot(
                [x],
                [min(max(y, lo), hi)],
                marker="$↑$" if y > hi else ("$↓$" if y < lo else markers[r["seq_len"]]),
                color=color,
                ms=9 if (y > hi or y < lo) else 6,
                ls="none",
                mfc="none" if r["head_dim"] == big_d else color,
            )
    ax.set_xticks(range(len(metric_names)), list(metric_names.values()), rotation=20, ha="right")
    ax.set_yscale("log")
    ratio_axis(ax, label="model / ncu (×, log)")
    ax.set_ylim(lo * 0.95, hi * 1.05)
    ax.grid(axis="x", alpha=0)
    handles = [Line2D([], [], color=c, marker="s", ls="none", label=name) for name, c in colors.items()]
    handles += [
        Line2D([], [], color="gray", marker=m, ls="none", label=f"N = {tokens_label(n)}")
        for n, m in markers.items()
    ]
    handles += [
        Line2D([], [], color="gray", marker="o", mfc="none", ls="none", label=f"open: d = {big_d}"),
        Line2D(
            [], [], color="gray", marker="$↑$", ls="none", ms=9, label=f"off scale (> {hi:g}× or < {lo:g}×)"
        ),
        Patch(color=COLORS["fa2"], alpha=0.18, label=f"±{tolerance:.0%}"),
    ]
    return handles


def plt_colors():
    """The colours of matplotlib's current property cycle."""
    import matplotlib.pyplot as plt

    return plt.rcParams["axes.prop_cycle"].by_key()["color"]
