# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: kernelspec,-jupytext.text_representation.jupytext_version,-jupytext.formats
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Lecture 3 — Tiling and the online softmax
#
# The online softmax lets attention run one tile of keys at a time, exactly, so that S and P never
# leave the chip.

# %% [markdown] slideshow={"slide_type": "notes"}
# Lecture 2 showed that naive attention spends almost all of its HBM traffic on S and P. To keep
# them on chip we must compute attention **one tile of keys at a time**, with only a block of rows of
# Q, K and V in SRAM. The obstacle is the softmax, which needs the row maximum and the row sum over
# **all** N keys before a single probability is known. The way out is the online softmax.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - State the running-max and running-sum update of the online softmax and why the re-basing factor
#   $e^{m_{old} - m_{new}}$ makes it exact.
# - Show, with numbers, that the online softmax equals the two-pass softmax on random, large, masked
#   and padded rows, and that the naive $e^x$ overflows in fp16 and fp32 where it does not.
# - Write tiled attention in the FlashAttention-2 loop order and check it against a float64 reference.
# - Say which tiles of Q, K, V and S sit in shared memory and which in registers at one step.
#
# **Prerequisites**
#
# Lecture 2 (standard attention, S and P in HBM); the softmax and its max-subtraction; numpy arrays.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 5 | Why the softmax blocks tiling |
# | 10 | The running max and sum; one row, tile by tile (stepper) |
# | 8 | Is it exact? Random, large, masked inputs; overflow of the naive exp |
# | 10 | Tiled attention in the FlashAttention-2 order |
# | 7 | Which tiles sit on chip |
# | 3 | Summary |
# | 7 | Exercises |

# %% [markdown] slideshow={"slide_type": "notes"}
# The max subtraction is not optional: the naive exp overflows in fp16 already at modest logits (the
# overflow table below computes the threshold of each format). So the question is: can we know the max and the sum without
# seeing the whole row? We don't need to: we correct them as we go.

# %% slideshow={"slide_type": "skip"}
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from course import charts
from course.online_softmax_steps import draw_softmax_overview, online_softmax_steps, softmax_widget
from course.tile_walk import draw_walk_overview, tile_walk
from simlib import Workload, count, load_preset

charts.use_style()
rng = np.random.default_rng(2024)
EPS = np.finfo(np.float64).eps
H200 = load_preset("h200")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The running max and sum
#
# Split a row $x$ into blocks $x^{(1)}, \dots, x^{(T)}$. Keep two numbers per row, a running max
# $m_j$ and a running sum $\ell_j$, with the invariant $\ell_j = \sum_{k \in \text{blocks } 1..j} e^{x_k - m_j}$:
#
# $$ m_j = \max\big(m_{j-1},\, \max x^{(j)}\big), \qquad
#    \ell_j = e^{m_{j-1} - m_j}\,\ell_{j-1} + \sum_{k \in \text{block } j} e^{x_k - m_j}. $$
#
# Multiplying the old sum by $e^{m_{j-1}-m_j}$ re-bases it from the old max to the new one, so the
# invariant holds after every block, and at the end $\mathrm{softmax}(x)_k = e^{x_k - m_T} / \ell_T$.
# The same factor re-bases a running output $o_j = e^{m_{j-1}-m_j} o_{j-1} + e^{x^{(j)}-m_j} V^{(j)}$,
# and $O = o_T / \ell_T$.
#
# Source: M. Milakov and N. Gimelshein, *Online normalizer calculation for softmax* (2018),
# arXiv:1805.02867; FlashAttention (Dao et al. 2022) applies it to tiles of keys.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## One row, tile by tile
#
# One query row of S = q·Kᵀ/√d against N keys, cut into K/V tiles of FlashAttention-2's Bc on the
# H200. After each tile the bars are the weights $e^{x_k - m_j}/\ell_j$ of the keys seen so far; the
# dots are the exact softmax of the whole row. The static panels come first (for handouts and slides);
# in Jupyter, press play or move the slider under them.

# %% tags=["remove-input"] alt="Four panels: the weights of one attention row after the first, second, third and last K/V tile, converging to the exact softmax"
d = 64
bc = count("fa2", Workload(512, d), sram_bytes=H200.sram_bytes).block_cols
row_rng = np.random.default_rng(0)
q_row, k_row, v_row = (
    2 * row_rng.standard_normal(d),
    row_rng.standard_normal((4 * bc, d)),
    row_rng.standard_normal((4 * bc, d)),
)
row = k_row @ q_row / np.sqrt(d)
row_steps = online_softmax_steps(row, bc, values=v_row)
row_exact = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
draw_softmax_overview(row_steps, exact=row_exact)
plt.show()

# %% slideshow={"slide_type": "subslide"} alt="Stepper: the weights of one row after K/V tile j (left) and the running max m_j and sum \u2113_j (right)"
softmax_widget(row_steps, exact=row_exact)

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
prefix_error = [
    np.abs(
        s.weights
        - np.exp(row[: s.keys] - row[: s.keys].max()) / np.exp(row[: s.keys] - row[: s.keys].max()).sum()
    ).max()
    for s in row_steps
]
row_table = pd.DataFrame(
    {
        "keys seen": [s.keys for s in row_steps],
        "m_j": [s.m for s in row_steps],
        "ℓ_j": [s.ell for s in row_steps],
        "α_j = e^(m_old − m_new)": [s.rescale for s in row_steps],
        "max |weights − softmax(prefix)|": prefix_error,
        "max |o_j/ℓ_j − softmax(x)·V|": [np.abs(s.output - row_exact @ v_row).max() for s in row_steps],
    },
    index=pd.Index(range(1, len(row_steps) + 1), name="tile j"),
)
display(row_table)
moved = [j + 1 for j in range(1, len(row_steps)) if row_steps[j].m > row_steps[j - 1].m]
display(
    Markdown(
        f"The running max moved at tile(s) {', '.join(map(str, moved)) or 'none'}: there α < 1 shrinks the "
        f"old sum and output. After every tile the weights equal the exact softmax of the prefix to "
        f"{max(prefix_error):.1e}; only after the last tile does the output equal softmax(x)·V "
        f"({row_table.iloc[-1, -1]:.1e})."
    )
)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## Is it exact? Random, large and masked inputs
#
# The same update for a whole matrix of rows, against the textbook two-pass softmax:


# %%
def online_stats(x, block, guard=True):
    """Running row max m and row sum ℓ of exp(x − m), one block of columns at a time."""
    m = np.full(x.shape[0], -np.inf)
    ell = np.zeros(x.shape[0])
    for start in range(0, x.shape[1], block):
        xb = x[:, start : start + block]
        m_new = np.maximum(m, xb.max(axis=1))
        # guard: a row whose keys so far are all masked has m = −inf; use 0 as the base there
        base = np.where(np.isneginf(m_new), 0.0, m_new) if guard else m_new
        ell = np.exp(m - base) * ell + np.exp(xb - base[:, None]).sum(axis=1)
        m = m_new
    return m, ell


def online_softmax(x, block, guard=True):
    m, ell = online_stats(x, block, guard)
    return np.exp(x - m[:, None]) / ell[:, None]


def reference_softmax(x):
    """The textbook (two-pass, whole-row) stable softmax."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# %% [markdown] slideshow={"slide_type": "subslide"}
# Four inputs (the table's rows name their sizes): random logits; the same logits shifted by a
# constant beyond float64's exp range (the weights are unchanged, far from one-hot, but $e^x$
# overflows even in float64); a causal mask (−∞ above the diagonal); padding (the
# first keys of every row masked, more than one block, so a whole block is −∞). Differences in units of
# float64's machine epsilon ε.

# %%
n, block, pad, shift = 300, 64, 80, 1000.0
assert shift > np.log(np.finfo(np.float64).max) and block < pad < n  # as the text above says
x = rng.standard_normal((n, n))
causal = np.where(np.triu(np.ones((n, n), bool), k=1), -np.inf, x)
padded = x.copy()
padded[:, :pad] = -np.inf
LARGE, PADDED = f"logits + {shift:g}", f"first {pad} keys masked (block of {block} all −∞)"
cases = {"random N(0, 1) logits": x, LARGE: x + shift, "causal −∞ mask": causal, PADDED: padded}

rows = []
for name, logits in cases.items():
    ref, ours = reference_softmax(logits), online_softmax(logits, block)
    with np.errstate(all="ignore"):
        unguarded = online_softmax(logits, block, guard=False)
        no_max = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    rows.append(
        {
            "input": name,
            "max |online − reference|": np.abs(ours - ref).max(),
            "in ε": np.abs(ours - ref).max() / EPS,
            "weights > 10⁻³ per row (median)": np.median((ref > 1e-3).sum(axis=1)),
            "NaN without the −∞ guard": bool(np.isnan(unguarded).any()),
            "NaN/inf without the max": bool(~np.isfinite(no_max).all()),
        }
    )
exactness = pd.DataFrame(rows).set_index("input")
exactness

# %% tags=["remove-input"]
display(
    Markdown(
        f"Across all four inputs the online softmax differs from the two-pass reference by at most "
        f"{exactness['max |online − reference|'].max():.1e} = {exactness['in ε'].max():.2g} ε (ε = {EPS:.2g}): "
        f"the same answer up to rounding. The shifted logits are not a one-hot test: a median of "
        f"{exactness.loc[LARGE, 'weights > 10⁻³ per row (median)']:.0f} keys per row keep a weight above 10⁻³, "
        f"yet without the max the naive exp "
        f"{'overflows to inf/NaN' if exactness.loc[LARGE, 'NaN/inf without the max'] else 'stays finite'}. "
        f"Without the −∞ guard a fully masked first block "
        f"{'gives e^(−∞ − (−∞)) = NaN' if exactness.loc[PADDED, 'NaN without the −∞ guard'] else 'still works'}."
    )
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Where does the naive $e^x$ overflow? Each format's largest finite value, and rows of N(0, 1)
# logits shifted up by a constant (the column names say by how much), computed in that format:


# %%
def finite_softmax(row, dtype, subtract_max):
    """Is e^x / Σ e^x finite when computed in `dtype` (with or without the max subtracted first)?"""
    e = np.exp((row - row.max() if subtract_max else row).astype(dtype))
    return bool(np.isfinite(e / e.sum()).all())


with np.errstate(over="ignore", invalid="ignore"):
    overflow = pd.DataFrame(
        [
            {
                "dtype": np.dtype(dt).name,
                "largest finite value": float(np.finfo(dt).max),
                "e^x overflows above x =": float(np.log(np.finfo(dt).max)),
                **{f"naive, {c:g} + N(0,1): finite": finite_softmax(c + x[0], dt, False) for c in (20, 100)},
                "max subtracted, 100 + N(0,1): finite": finite_softmax(100 + x[0], dt, True),
            }
            for dt in (np.float16, np.float32, np.float64)
        ]
    ).set_index("dtype")
overflow

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The whole tiled attention (FlashAttention-2 order)
#
# Outer loop over blocks of Br query rows, inner loop over blocks of Bc keys. S_ij and P_ij exist only
# for one tile at a time — on the GPU, on chip.


# %%
def tiled_attention(q, k, v, br, bc, mask=None):
    n, d = q.shape
    out = np.empty_like(q)
    for i in range(0, n, br):  # Q block i: Q_i, O_i, m, ℓ on chip
        qi = q[i : i + br]
        m = np.full(len(qi), -np.inf)
        ell = np.zeros(len(qi))
        acc = np.zeros((len(qi), d))
        for j in range(0, n, bc):  # K/V block j streams through SRAM
            s = qi @ k[j : j + bc].T / np.sqrt(d)
            if mask is not None:
                s = np.where(mask[i : i + br, j : j + bc], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=1))
            base = np.where(np.isneginf(m_new), 0.0, m_new)
            alpha = np.exp(m - base)  # re-base the old sum and output
            p = np.exp(s - base[:, None])
            ell = alpha * ell + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ v[j : j + bc]
            m = m_new
        out[i : i + br] = acc / ell[:, None]
    return out


def reference_attention(q, k, v, mask=None):
    s = q @ k.T / np.sqrt(q.shape[1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return reference_softmax(s) @ v


n, d = 500, 64
q, k, v = (rng.standard_normal((n, d)) for _ in range(3))
lower = np.tril(np.ones((n, n), bool))
checks = pd.DataFrame(
    [
        {
            "case": case,
            "Br": br,
            "Bc": bc,
            "max |tiled − reference|": np.abs(
                tiled_attention(q, k, v, br, bc, mask) - reference_attention(q, k, v, mask)
            ).max(),
        }
        for case, mask in (("no mask", None), ("causal", lower))
        for br, bc in ((64, 128), (37, 100))
    ]
)
checks

# %% tags=["remove-input"]
display(
    Markdown(
        f"Tiled attention equals the reference to {checks['max |tiled − reference|'].max():.1e} "
        f"(largest difference over all cases, including ragged blocks of 37 × 100 that do not divide "
        f"N = {n})."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Which tiles sit on chip?
#
# One head at N = 1024, d = 64, with FlashAttention-2's default tiles for the H200's shared memory per
# thread block. What one thread block holds at one step (`count()`'s working set of the FA2 kernel):

# %%
w = Workload(1024, 64)
fa2 = count("fa2", w, sram_bytes=H200.sram_bytes)
on_chip = pd.DataFrame(
    [
        {"buffer": name, "where (FA2 kernel)": level, "KiB": size / 1024}
        for name, level, size in fa2.working_set.items
    ]
).set_index("buffer")
on_chip

# %% tags=["remove-input"]
shared = on_chip[on_chip["where (FA2 kernel)"] == "SRAM"].KiB.sum()
display(
    Markdown(
        f"Br = {fa2.block_rows}, Bc = {fa2.block_cols}: Tr = {fa2.tr} Q blocks and Tc = {fa2.tc} K/V blocks. "
        f"One step holds {shared:g} KiB of Q, K and V tiles in shared memory, within the "
        f"{H200.sram_bytes / 1024:g} KiB a thread block may use; the FA2 kernel keeps the score tile S/P, "
        f"the O accumulator, m and ℓ in registers (Algorithm 1 of the first paper keeps S_ij and P_ij in "
        f"SRAM too). Below, four steps of each loop order (the same tiles for FA1 here, to compare the "
        f"orders): the red tile is computed now, the green ones were computed and discarded."
    )
)

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="Score grid of N = 1024 at four steps of FlashAttention-2 (outer loop over Q blocks): one row of tiles after the other, HBM bytes so far in each title"
fa2_walk = tile_walk("fa2", w, sram_bytes=H200.sram_bytes)
draw_walk_overview(fa2_walk)
plt.show()

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="Score grid of N = 1024 at four steps of FlashAttention-1's order (outer loop over K/V blocks): one column of tiles after the other"
draw_walk_overview(tile_walk("fa1", w, block_rows=fa2.block_rows, block_cols=fa2.block_cols))
plt.show()

# %% [markdown] slideshow={"slide_type": "notes"}
# In the FA2 order each Q block is loaded once and all K/V blocks stream past it, so K and V are
# re-read Tr times; in the FA1 order K/V blocks are loaded once and Q, O, ℓ, m are re-read (and O
# re-written) Tc times. Lecture 4 steps through both with the byte counter.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# 1. The online softmax (Milakov & Gimelshein 2018) keeps a running max m and sum ℓ per row and re-bases
#    them, and the output, by $e^{m_{old}-m_{new}}$ whenever the max grows.
# 2. After every tile the weights are the exact softmax of the keys seen so far; after the last tile,
#    of the row: exact up to rounding, on random, large, masked and padded inputs.
# 3. Two details make it robust: subtracting the running max (the naive exp overflows in fp16 and fp32)
#    and a guard for blocks that are entirely masked.
# 4. With it attention runs tile by tile: S and P exist one Br×Bc tile at a time, on chip, never in HBM.
# 5. The loop order decides which inputs are re-read from HBM: the next lecture counts it.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Solutions are hidden under each exercise: try first, then open them.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1 — the online softmax by hand
#
# Run the online softmax by hand on the row x = (2, −1, 4, 0, 4, 7) in tiles of 2 keys: write down
# m_j, ℓ_j and the re-basing factor α_j after each tile. Then check with `online_softmax_steps`, and
# show by computing that the final weights are exactly softmax(x).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
import math  # noqa: E402

x1 = np.array([2.0, -1.0, 4.0, 0.0, 4.0, 7.0])
steps1 = online_softmax_steps(x1, block=2)
by_hand = [  # (m, ℓ, α) from the update rule, tile by tile
    (2.0, 1 + math.exp(-3), 0.0),
    (4.0, (1 + math.exp(-3)) * math.exp(-2) + 1 + math.exp(-4), math.exp(-2)),
]
by_hand.append((7.0, by_hand[1][1] * math.exp(-3) + math.exp(-3) + 1, math.exp(-3)))
print(pd.DataFrame([(s.m, s.ell, s.rescale) for s in steps1], columns=["m", "ℓ", "α"]))
for s, (m1, l1, a1) in zip(steps1, by_hand):
    assert s.m == m1 and math.isclose(s.ell, l1, rel_tol=1e-14) and math.isclose(s.rescale, a1, rel_tol=1e-14)
exact1 = [math.exp(v - 7.0) / math.fsum(math.exp(u - 7.0) for u in x1) for v in x1]
assert np.allclose(steps1[-1].weights, exact1, rtol=1e-14, atol=0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2 — tiles of a ragged grid
#
# For N = 1000 keys and queries, d = 64, and FlashAttention-2's default tiles on the H200: how many
# tiles Tr·Tc does the score grid have, and how many rows has the last (ragged) K/V block? With a
# causal mask, how many tiles are computed? Predict with ⌈N/B⌉, then check against `count()` and a
# brute-force count over a boolean causal mask.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
n2 = 1000
r2 = count("fa2", Workload(n2, 64), sram_bytes=H200.sram_bytes)
br2, bc2 = r2.block_rows, r2.block_cols
tiles2 = math.ceil(n2 / br2) * math.ceil(n2 / bc2)
last2 = n2 - (math.ceil(n2 / bc2) - 1) * bc2
mask2 = np.tril(np.ones((n2, n2), bool))
computed2 = sum(mask2[i : i + br2, j : j + bc2].any() for i in range(0, n2, br2) for j in range(0, n2, bc2))
walk2 = tile_walk("fa2", Workload(n2, 64, causal=True), sram_bytes=H200.sram_bytes)
print(f"Br = {br2}, Bc = {bc2}: {tiles2} tiles, last K/V block {last2} rows, causal: {computed2} computed")
assert r2.tr * r2.tc == tiles2 and len(walk2.steps) == computed2
# the trace's step at tile (0, Tc − 1) loads only the last K and V blocks: 2 · rows · d elements
full2 = tile_walk("fa2", Workload(n2, 64), sram_bytes=H200.sram_bytes)
assert full2.steps[r2.tc - 1].read_bytes == 2 * last2 * 64 * Workload(n2, 64).element_bytes

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3 — where the naive softmax overflows
#
# Predict, from the format's largest finite value, the largest integer logit x for which e^x is
# finite in fp16 and in fp32. Then find the smallest integer shift c for which the naive softmax of
# the row c + (0, 1, 2) overflows in fp32, and check that the same row re-based by its max (what the
# online softmax exponentiates) is finite in fp32 and gives softmax(0, 1, 2) = e^k / (1 + e + e²) to
# fp32 rounding.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
largest = {dt.__name__: math.floor(math.log(float(np.finfo(dt).max))) for dt in (np.float16, np.float32)}
for dt in (np.float16, np.float32):
    x3 = largest[dt.__name__]
    with np.errstate(over="ignore"):
        assert np.isfinite(np.exp(dt(x3))) and np.isinf(np.exp(dt(x3 + 1)))
print(largest)
base3 = np.array([0.0, 1.0, 2.0])
with np.errstate(over="ignore", invalid="ignore"):
    c3 = next(c for c in range(200) if not np.isfinite(np.exp((c + base3).astype(np.float32)).sum()))
assert c3 + 2 == largest["float32"] + 1  # the row's largest entry is the first to overflow
row3 = (c3 + base3).astype(np.float32)
rebased3 = np.exp(row3 - row3.max())  # e^(x − m) ≤ 1: cannot overflow
by_hand3 = [math.exp(k) / (1 + math.e + math.e**2) for k in (0, 1, 2)]
assert np.isfinite(rebased3).all() and np.allclose(rebased3 / rebased3.sum(), by_hand3, rtol=1e-6)
online3 = online_softmax_steps(c3 + base3, block=2)[-1].weights  # the same in float64, tile by tile
assert np.allclose(online3, by_hand3, rtol=1e-14)
print(f"c = {c3}: naive e^x overflows in fp32; re-based by the max: {np.round(rebased3 / rebased3.sum(), 6)}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 4 — a thread block's working set
#
# At d = 128 and Br = Bc = 128, how many KiB does one FlashAttention-2 thread block hold in shared
# memory and in registers (Q_i, K_j, V_j in the workload dtype fp16; S/P, the O accumulator, ℓ and m
# in fp32)? Work it out by hand, check against `count(...).working_set`, and say whether the shared
# part fits the H200's shared memory per thread block.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
br4 = bc4 = d4 = 128
ws4 = count("fa2", Workload(1024, d4), block_rows=br4, block_cols=bc4).working_set
sram4, regs4 = (br4 + 2 * bc4) * d4 * 2, (br4 * bc4 + br4 * d4 + 2 * br4) * 4
print(f"shared {ws4.bytes('SRAM') / 1024:g} KiB, registers {ws4.bytes('registers') / 1024:g} KiB")
assert (ws4.bytes("SRAM"), ws4.bytes("registers")) == (sram4, regs4)
assert sram4 <= H200.sram_bytes

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 5 — Why the online softmax is exact (proof)
#
# Prove by induction over the tiles that after tile j the running values satisfy
# $m_j = \max_{k \le n_j} x_k$ and $\ell_j = \sum_{k \le n_j} e^{x_k - m_j}$ (n_j keys seen), using the update
# $m_j = \max(m_{j-1}, \max \text{tile}_j)$, $\ell_j = \alpha_j \ell_{j-1} + \sum_{\text{tile}_j} e^{x_k - m_j}$ with
# $\alpha_j = e^{m_{j-1} - m_j}$. Conclude that the final weights are softmax(x) for *any* tile size. Check
# the invariant at every step, for random rows and several tile sizes, against sums computed from scratch.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Induction: after tile j, α_j ℓ_{j−1} = e^{m_{j−1} − m_j} Σ_{k ≤ n_{j−1}} e^{x_k − m_{j−1}} = Σ_{k ≤ n_{j−1}} e^{x_k − m_j};
# adding the new tile's terms gives Σ_{k ≤ n_j} e^{x_k − m_j}. At the end n_j = N, so e^{x_k − m}/ℓ is softmax(x).
rng5 = np.random.default_rng(5)
for block5 in (1, 3, 64, 1000):
    x5 = 10.0 * rng5.standard_normal(1000)
    for s in online_softmax_steps(x5, block=block5):
        seen = x5[: s.keys]
        assert s.m == seen.max()
        assert math.isclose(s.ell, math.fsum(math.exp(v - s.m) for v in seen), rel_tol=1e-12)
    exact5 = np.exp(x5 - x5.max()) / math.fsum(math.exp(v - x5.max()) for v in x5)
    assert np.allclose(online_softmax_steps(x5, block=block5)[-1].weights, exact5, rtol=1e-12, atol=0)
print("the invariant holds after every tile, for tiles of 1, 3, 64 and 1000 keys")
