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
# Lecture 2 showed that naive attention spends almost all of its HBM traffic on S and P. To keep
# them on the workbench, we must compute attention **one tile of keys at a time**, with only a block
# of rows of Q, K and V in SRAM.
#
# The obstacle is the softmax: $\mathrm{softmax}(x)_k = e^{x_k - m} / \sum_l e^{x_l - m}$ needs the
# row maximum $m$ and the row sum over **all** N keys before a single probability is known.

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: the max subtraction is not optional; exp(1e4) overflows in every floating-point
# format. So the question is: can we know the max and the sum without seeing the whole row? Answer:
# we don't need to, we can correct them as we go.

# %% slideshow={"slide_type": "skip"}
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display
from matplotlib.patches import Patch

from simlib import Workload, count, load_preset
from simlib.lectures import charts

charts.use_style()
rng = np.random.default_rng(2024)
EPS = np.finfo(np.float64).eps

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
# The same correction factor re-bases a running output $o_j = e^{m_{j-1}-m_j} o_{j-1} + e^{x^{(j)}-m_j} V^{(j)}$,
# and $O = o_T / \ell_T$.


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


# %% [markdown] slideshow={"slide_type": "slide"}
# ## Is it exact? Random and extreme inputs
#
# The identity is exact in real arithmetic; in floating point the two computations round differently,
# so we measure the largest difference in units of machine epsilon (float64, ε ≈ 2.2·10⁻¹⁶).
#
# - random logits; the same logits × 10⁴ (exp would overflow without the max);
# - a causal mask (−∞ above the diagonal);
# - padding: the first keys of every row masked, more than one block, so the whole first block is −∞.

# %%
n, block, pad = 300, 64, 80
x = rng.standard_normal((n, n))
causal = np.where(np.triu(np.ones((n, n), bool), k=1), -np.inf, x)
padded = x.copy()
padded[:, :pad] = -np.inf
PADDED = f"first {pad} keys masked (block of {block} all −∞)"
cases = {"random N(0, 1) logits": x, "logits × 10⁴": x * 1e4, "causal −∞ mask": causal, PADDED: padded}

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
            "rows sum to 1 (max error)": np.abs(ours.sum(axis=1) - 1).max(),
            "NaN without the −∞ guard": bool(np.isnan(unguarded).any()),
            "NaN/inf without the max": bool(~np.isfinite(no_max).all()),
        }
    )
exactness = pd.DataFrame(rows).set_index("input")
exactness

# %% tags=["remove-input"]
worst = exactness["in ε"].max()
overflow = exactness.loc["logits × 10⁴", "NaN/inf without the max"]
masked = exactness.loc[PADDED, "NaN without the −∞ guard"]
display(
    Markdown(
        f"Across all four inputs the online softmax differs from the two-pass reference by at most "
        f"{exactness['max |online − reference|'].max():.1e} = {worst:.2g} ε: the same answer up to rounding. "
        f"Two details make it robust. Subtracting the running max: without it the ×10⁴ logits "
        f"{'overflow to inf/NaN' if overflow else 'stay finite'}. The −∞ guard: without it a fully masked "
        f"first block {'gives e^(−∞ − (−∞)) = NaN' if masked else 'still works'}."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The whole tiled attention (FlashAttention-2 order)
#
# Outer loop over blocks of Br query rows, inner loop over blocks of Bc keys. S_ij and P_ij exist only
# for one tile at a time — on the GPU, in SRAM.


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
                tiled_attention(q * scale, k, v, br, bc, mask) - reference_attention(q * scale, k, v, mask)
            ).max(),
        }
        for case, scale, mask in (("random", 1, None), ("Q × 10⁴", 1e4, None), ("causal", 1, lower))
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
# ## Which tiles are on the workbench?
#
# The score matrix of one head at N = 1024, d = 64 with FlashAttention-2's default tiles for the
# H200's shared memory per thread block (both rows use the same tiles, to compare the orders). Top row: FlashAttention-2 (outer loop over Q blocks);
# bottom row: FlashAttention-1 (outer loop over K/V blocks). Gray tiles were computed and discarded:
# S and P never go to HBM.

# %%
h200 = load_preset("h200")
w = Workload(1024, 64)
tiles = count("fa2", w, sram_bytes=h200.sram_bytes)
br, bc, tr, tc = tiles.block_rows, tiles.block_cols, tiles.tr, tiles.tc
e = w.element_bytes
in_sram = pd.DataFrame(
    [
        {
            "tile": "Q_i",
            "shape": f"{br} × {w.head_dim}",
            "where (FA2 kernel)": "shared memory",
            "KiB": br * w.head_dim * e / 1024,
        },
        {
            "tile": "K_j",
            "shape": f"{bc} × {w.head_dim}",
            "where (FA2 kernel)": "shared memory",
            "KiB": bc * w.head_dim * e / 1024,
        },
        {
            "tile": "V_j",
            "shape": f"{bc} × {w.head_dim}",
            "where (FA2 kernel)": "shared memory",
            "KiB": bc * w.head_dim * e / 1024,
        },
        {
            "tile": "S_ij, then P_ij over it",
            "shape": f"{br} × {bc}",
            "where (FA2 kernel)": "registers",
            "KiB": br * bc * e / 1024,
        },
    ]
)
in_sram

# %% tags=["remove-input"]
shared = in_sram[in_sram["where (FA2 kernel)"] == "shared memory"].KiB.sum()
last = w.seq_len - (tc - 1) * bc
display(
    Markdown(
        f"Br = {br}, Bc = {bc}: Tr = {tr} Q blocks and Tc = {tc} K/V blocks"
        + (f" (the last one ragged: {last} keys)" if last != bc else "")
        + f". One step holds {shared:.1f} KiB of "
        f"Q, K and V tiles in shared memory, within the {h200.sram_bytes / 1024:.0f} KiB a thread block may use; "
        f"the FlashAttention-2 kernel keeps the {in_sram.KiB.iloc[-1]:.1f} KiB score tile, the running O_i, m and "
        f"ℓ in registers (Algorithm 1 of the first paper keeps S_ij and P_ij in SRAM too)."
    )
)

# %% slideshow={"slide_type": "subslide"}
fa2_steps = [(0, 0), (0, 1), (0, tc - 1), (1, 0), (tr // 2, 1), (tr - 1, tc - 1)]
fa1_steps = [(0, 0), (1, 0), (tr - 1, 0), (0, 1), (tr // 2, 1), (tr - 1, tc - 1)]
fig, axes = plt.subplots(2, 6, figsize=(16, 6.4))
for row, (order, steps) in enumerate((("fa2", fa2_steps), ("fa1", fa1_steps))):
    for ax, (i, j) in zip(axes[row], steps):
        n_done = i * tc + j if order == "fa2" else j * tr + i
        charts.draw_tiling_step(
            ax,
            w.seq_len,
            br,
            bc,
            i,
            j,
            order=order,
            title=f"{order} step {n_done + 1}/{tr * tc}: i={i}, j={j}",
        )
        if ax is not axes[row][0]:
            ax.set_ylabel("")
        ax.set_xticks([0, 512, 1024])
        ax.set_yticks([0, 512, 1024])
fig.legend(
    handles=[
        Patch(facecolor="#ff7f0e", alpha=0.4, label="Q block i in SRAM (rows)"),
        Patch(facecolor="#1f77b4", alpha=0.35, label="K/V block j in SRAM (columns)"),
        Patch(facecolor="#d62728", label="score tile S_ij being computed"),
        Patch(facecolor="0.82", label="tiles already done (discarded)"),
    ],
    loc="lower center",
    ncol=4,
    bbox_to_anchor=(0.5, -0.06),
)
fig.suptitle(
    f"N = {w.seq_len}, d = {w.head_dim}, Br = {br}, Bc = {bc} (FA2's default tiles, H200); "
    "top: FlashAttention-2 order, bottom: FlashAttention-1 order",
    fontsize=13,
)
plt.show()

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: in the FA2 order each Q block is loaded once and all K/V blocks stream past it, so
# K and V are re-read Tr times; in the FA1 order K/V blocks are loaded once and Q, O, ℓ, m are re-read
# (and O re-written) Tc times. Lecture 4 counts what each order costs.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Take-aways
#
# 1. The online softmax keeps a running max and sum and re-bases them with $e^{m_{old}-m_{new}}$:
#    exact up to rounding, on random, huge and masked inputs (with a guard for all-masked blocks).
# 2. With it, attention runs tile by tile; S and P never leave SRAM.
# 3. The loop order decides which inputs are re-read: next lecture.
