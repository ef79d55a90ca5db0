"""The online softmax of one row, tile by tile (Milakov & Gimelshein 2018, arXiv:1805.02867).

After K/V tile j the row keeps a running max m_j, a running sum ℓ_j = Σ_{k seen} e^{x_k − m_j} and,
given V, an unnormalised output o_j = Σ_{k seen} e^{x_k − m_j} v_k. A new tile re-bases the old
ones by α_j = e^{m_{j−1} − m_j}: ℓ_j = α_j ℓ_{j−1} + Σ_{k ∈ tile j} e^{x_k − m_j}, and likewise o_j.
So after every tile the weights e^{x_k − m_j}/ℓ_j are the exact softmax of the keys seen so far, and
after the last one the exact softmax of the row.
Worked number: x = (1, 3, 2, 5) in tiles of 2: m = 3, ℓ = e^{−2} + 1 = 1.1353 after the first;
m = 5, ℓ = 1.1353·e^{−2} + e^{−3} + 1 = 0.1536 + 0.0498 + 1 = 1.2034 after the second (α = e^{3−5} = 0.1353).

>>> steps = online_softmax_steps(np.array([1.0, 3.0, 2.0, 5.0]), block=2)
>>> [(s.m, round(s.ell, 4), round(s.rescale, 4)) for s in steps]
[(3.0, 1.1353, 0.0), (5.0, 1.2034, 0.1353)]
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simlib.workload import check_positive_int


@dataclass(frozen=True)
class SoftmaxStep:
    """The row's state after K/V tile `tile` (0-based), which ends at key `keys` (exclusive)."""

    tile: int
    keys: int
    m: float  # running max m_j (−inf while every key seen is masked)
    ell: float  # running sum ℓ_j of e^{x_k − m_j} over the keys seen
    rescale: float  # α_j = e^{m_{j−1} − m_j}, applied to the old ℓ and o (0 at the first tile)
    weights: np.ndarray  # e^{x_k − m_j} / ℓ_j for the keys seen so far (length `keys`; 0 while ℓ_j = 0)
    output: np.ndarray | None  # o_j / ℓ_j, the output so far (None without values)


def online_softmax_steps(scores, block, values=None) -> list[SoftmaxStep]:
    """Run the online softmax over the 1-D row `scores` (float64; −inf = masked) in tiles of `block`
    keys, with `values` (keys × d) optional. The weights of the keys already seen are kept unnormalised
    and re-based by α like ℓ and o, exactly what the kernel does to its O accumulator."""
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0:
        raise ValueError(f"scores must be a non-empty 1-D row, got shape {x.shape}")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("scores must be finite or −inf (masked), got NaN or +inf")
    block = check_positive_int("block", block)
    v = None if values is None else np.asarray(values, dtype=np.float64)
    if v is not None and (v.ndim != 2 or len(v) != len(x)):
        raise ValueError(f"values must be keys × d with {len(x)} keys, got shape {v.shape}")
    m, ell = -np.inf, 0.0
    p = np.zeros(0)
    o = None if v is None else np.zeros(v.shape[1])
    steps = []
    for j, start in enumerate(range(0, len(x), block)):
        tile = x[start : start + block]
        m_new = max(m, float(tile.max()))
        base = 0.0 if m_new == -np.inf else m_new  # all keys so far masked: keep e^{−inf} = 0, not NaN
        alpha = float(np.exp(m - base))
        p_tile = np.exp(tile - base)
        ell = alpha * ell + float(p_tile.sum())
        p = np.concatenate((alpha * p, p_tile))
        if o is not None and v is not None:
            o = alpha * o + p_tile @ v[start : start + block]
        m = m_new
        if ell == 0.0:  # every key so far masked: no weight yet
            steps.append(SoftmaxStep(j, start + len(tile), m, ell, alpha, np.zeros_like(p), o))
        else:
            steps.append(
                SoftmaxStep(j, start + len(tile), m, ell, alpha, p / ell, None if o is None else o / ell)
            )
    return steps


MAX_TICK_LABELS = 8  # tile edges labelled on the key axis, at most about


def _edges(steps: Sequence[SoftmaxStep]) -> list[int]:
    return [0] + [s.keys for s in steps]


def draw_softmax_weights(ax, steps: Sequence[SoftmaxStep], k: int, exact=None) -> None:
    """Bars: the weights after tile k over the keys seen (the current tile darker); dots: `exact`
    (the row's full softmax, if given), where the bars must end up. Dotted lines at tile edges."""
    s, edges = steps[k], _edges(steps)
    n = edges[-1]
    keys = np.arange(s.keys)
    new = keys >= edges[k]
    ax.bar(keys[~new], s.weights[~new], width=1.0, color="#1f77b4", alpha=0.55, label="keys of earlier tiles")
    ax.bar(keys[new], s.weights[new], width=1.0, color="#d62728", alpha=0.8, label="the tile just read")
    if exact is not None:
        ax.plot(np.arange(n), exact, ".", color="black", ms=3, label="exact softmax of the whole row")
    ax.axvspan(s.keys - 0.5, n - 0.5, color="0.9", zorder=0, label="not read yet")
    for e in edges:
        ax.axvline(e - 0.5, color="0.5", ls=":", lw=0.8)
    every = -(-(len(edges) - 1) // MAX_TICK_LABELS)  # label every k-th tile edge, and the last
    shown = sorted({*edges[::every], n})
    ax.set_xticks([e - 0.5 for e in shown], [str(e) for e in shown])
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xlabel("key index (ticks at tile edges)")
    ax.set_ylabel("weight e^(x − m_j) / ℓ_j")


def draw_softmax_step(steps: Sequence[SoftmaxStep], k: int, exact=None, axes=None):
    """Step k: the weights (left, `draw_softmax_weights`) and the running m_j and ℓ_j (right), the
    current tile ringed. Returns the figure."""
    import matplotlib.pyplot as plt

    if axes is None:
        fig, axes = plt.subplots(
            1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [2.2, 1]}, layout="constrained"
        )
    left, right = axes
    draw_softmax_weights(left, steps, k, exact)
    s = steps[k]
    left.set_title(
        f"after tile {k + 1} of {len(steps)} ({s.keys} keys seen): m = {s.m:.3g}, ℓ = {s.ell:.4g}, "
        f"α = e^(m_old − m_new) = {s.rescale:.3g}",
        fontsize=10,
    )
    left.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4)
    tiles = np.arange(1, len(steps) + 1)
    right.plot(tiles, [t.m for t in steps], "o-", color="0.75", ms=4)
    right.plot(tiles[: k + 1], [t.m for t in steps[: k + 1]], "o-", color="#1f77b4", label="running max m_j")
    right.set_xlabel("K/V tile j")
    right.set_ylabel("m_j", color="#1f77b4")
    twin = right.twinx()
    twin.plot(tiles, [t.ell for t in steps], "s--", color="0.8", ms=4)
    twin.plot(
        tiles[: k + 1], [t.ell for t in steps[: k + 1]], "s--", color="#ff7f0e", label="running sum ℓ_j"
    )
    twin.set_ylabel("ℓ_j", color="#ff7f0e")
    right.plot([k + 1], [s.m], "o", ms=12, mfc="none", mec="black")
    right.set_title("grey: the tiles still to come", fontsize=10)
    right.set_xticks(tiles)
    return left.figure


def draw_softmax_overview(steps: Sequence[SoftmaxStep], exact=None, picks: Sequence[int] | None = None):
    """Small multiples of chosen steps (default: first, two inside, last): the static fallback."""
    import matplotlib.pyplot as plt

    n = len(steps)
    picks = list(picks) if picks is not None else sorted({0, n // 3, (2 * n) // 3, n - 1})
    fig, axes = plt.subplots(
        1, len(picks), figsize=(4.2 * len(picks), 3.6), sharey=True, squeeze=False, layout="constrained"
    )
    for ax, k in zip(axes[0], picks):
        draw_softmax_weights(ax, steps, k, exact)
        ax.set_title(f"after tile {k + 1}/{n}: m = {steps[k].m:.3g}, ℓ = {steps[k].ell:.3g}", fontsize=9.5)
        if ax is not axes[0][0]:
            ax.set_ylabel("")
    handles, labels = axes[0][-1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(handles), fontsize=8.5)
    return fig


def softmax_widget(steps: Sequence[SoftmaxStep], exact=None, start: int = 0):
    """Play button and slider over the tiles, redrawing `draw_softmax_step`; shows `start` at once."""
    from .stepper import stepper

    return stepper(
        len(steps),
        lambda k: draw_softmax_step(steps, k, exact),
        start=start,
        description="tile",
        name="online softmax",
    )
