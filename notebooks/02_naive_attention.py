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
# # Lecture 2 — Naive attention: three passes through the warehouse
#
# Standard attention (Algorithm 0 of the FlashAttention paper) for one head, with
# $Q, K, V \in \mathbb{R}^{N\times d}$:
#
# 1. $S = QK^\top$ — read Q and K from HBM, **write the N×N matrix S** to HBM;
# 2. $P = \mathrm{softmax}(S)$ row by row — **read S, write the N×N matrix P**;
# 3. $O = PV$ — **read P** and V, write O.
#
# Two N×N matrices each make a round trip through HBM. This lecture counts those trips exactly.

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: draw the three passes on the board as three trips to the warehouse. Each arrow
# carrying an N×N matrix is thick; the arrows carrying Q, K, V, O are thin (N×d, and d ≪ N).

# %% slideshow={"slide_type": "skip"}
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from simlib import Workload, compulsory_bytes, count
from simlib.lectures import charts, claims

charts.use_style()
N, D = 4096, 64

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The three passes in numpy
#
# A reference implementation for a small N; the arrays `S` and `P` are exactly what the GPU version
# stores in HBM.


# %%
def naive_attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[1])  # pass 1: S = QKᵀ (scaled), N×N
    p = np.exp(s - s.max(axis=1, keepdims=True))  # pass 2: P = softmax(S), N×N
    p /= p.sum(axis=1, keepdims=True)
    return p @ v, s, p  # pass 3: O = PV, N×d


rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((256, D)) for _ in range(3))
o, s, p = naive_attention(q, k, v)
pd.DataFrame(
    {
        "array": ["Q", "K", "V", "S", "P", "O"],
        "shape": [a.shape for a in (q, k, v, s, p, o)],
        "elements": [a.size for a in (q, k, v, s, p, o)],
    }
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Per-tensor HBM traffic at N = 4096, d = 64 (fp16, one head)
#
# `count("naive", …).table()` lists every transfer by level, direction, tensor and pass
# (`qk` = pass 1, `softmax` = pass 2, `pv` = pass 3).

# %%
w = Workload(N, D)
naive = count("naive", w)
table = naive.table()
hbm = table[table.level == "HBM"].drop(columns="level").reset_index(drop=True)
hbm["share of HBM bytes"] = (hbm.bytes / hbm.bytes.sum()).round(4)
hbm

# %%
passes = (
    hbm.groupby("phase", sort=False)[["elements", "bytes"]]
    .sum()
    .reindex(["qk", "softmax", "pv"])
    .rename(index={"qk": "1: S = QKᵀ", "softmax": "2: P = softmax(S)", "pv": "3: O = PV"})
)
passes["MB"] = passes.bytes / 1e6
passes

# %% tags=["remove-input"]
nn = hbm[hbm.tensor.isin(["S", "P"])].bytes.sum()
display(
    Markdown(
        f"Reads: {naive.hbm_read_bytes / 1e6:.1f} MB, writes: {naive.hbm_write_bytes / 1e6:.1f} MB, "
        f"total {naive.hbm_bytes / 1e6:.1f} MB for one head. The N×N matrices S and P account for "
        f"{nn / 1e6:.1f} MB of it ({nn / naive.hbm_bytes:.1%}); Q, K, V and O — the only data the caller "
        f"cares about — are {compulsory_bytes(w) / 1e6:.1f} MB. In elements this is exactly the paper's "
        f"count: reads 3Nd + 2N² = {naive.hbm_read_bytes // w.element_bytes:,}, writes 2N² + Nd = "
        f"{naive.hbm_write_bytes // w.element_bytes:,}."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## "4,000 tokens → 16 million scores"
#
# Every query attends to every key: N² scores per head. The count below is the number of elements of
# S the naive schedule writes to HBM.

# %%
scores = claims.claim_a(seq_lens=(1024, 2048, 4000, 4096, 8192))
scores

# %% tags=["remove-input"]
s4096 = scores.set_index("N (tokens)").loc[4096, "scores per head"]
s4000 = scores.set_index("N (tokens)").loc[4000, "scores per head"]
display(
    Markdown(
        f"At N = 4096: {s4096:,} scores ({s4096 / 1e6:.1f} million{', exactly 2²⁴' if s4096 == 2**24 else ''}); "
        f"at N = 4000: "
        f'{s4000:,} ({s4000 / 1e6:.1f} million). The popular "16 million" holds for either reading of '
        f'"4K" — per head and per layer.'
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## When is the N×N matrix "gigabytes"?
#
# One fp16 N×N matrix per head is 2·N² bytes. It becomes large when it is multiplied by heads, batch
# and layers. Two model shapes: Llama-2-7B (from `data/models`, its published config) and a
# GPT-2-medium-like shape (stated in `simlib/lectures/claims.py`).

# %%
pd.DataFrame(claims.model_configs()).T

# %%
sizes = claims.claim_c(seq_lens=(2048, 4096, 8192), batches=(1, 8))
sizes.round(2)

# %% tags=["remove-input"]
llama = sizes[(sizes.model == claims.LLAMA) & (sizes.N == 4096) & (sizes.batch == 8)].iloc[0]
n_gib = claims.min_seq_len_for(2**30)
display(
    Markdown(
        f"Per head the matrix is small: {charts.fmt_bytes(claims.nxn_bytes(4096))} at N = 4096. A single "
        f"head's matrix only reaches 1 GiB at N = {n_gib:,}. Multiply by {claims.LLAMA}'s {llama.heads} heads "
        f"and a batch of 8 and one layer's S is {llama['one layer × batch (GiB)']:.0f} GiB at N = 4096; kept for "
        f"all {llama.layers} layers "
        f'(as training does for P), {llama["all layers × batch (GiB)"]:.0f} GiB. "Gigabytes" is true '
        f"**for a layer or a model, not for one head**."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Traffic grows with N²
#
# Naive HBM traffic per head against sequence length, log–log: the fitted slope is the exponent.
# For contrast, the compulsory traffic (read Q, K, V and write O once) grows only linearly.

# %% slideshow={"slide_type": "subslide"}
seq = [2**k for k in range(8, 17)]
naive_bytes = [count("naive", Workload(n, D)).hbm_bytes for n in seq]
needed = [compulsory_bytes(Workload(n, D)) for n in seq]

fig, ax = plt.subplots(figsize=(8.5, 5))
fit_naive = charts.plot_loglog(
    ax, seq, naive_bytes, charts.LABELS["naive"], color=charts.COLORS["naive"], fit_from=2048
)
fit_needed = charts.plot_loglog(
    ax, seq, needed, charts.LABELS["compulsory"], color=charts.COLORS["compulsory"], ls="--"
)
charts.tokens_axis(ax, seq)
charts.bytes_axis(ax, label="HBM traffic per head")
ax.set_title(f"Naive attention, fp16, d = {D}: HBM traffic vs sequence length")
ax.legend(loc="upper left")
plt.show()

# %% tags=["remove-input"]
b = dict(zip(seq, naive_bytes))
display(
    Markdown(
        f"Fitted slope {fit_naive.slope:.2f} for naive attention (N ≥ 2K; at small N the linear N·d terms "
        f"still matter), {fit_needed.slope:.2f} for the compulsory traffic. Doubling N from 4K to 8K "
        f"multiplies naive traffic by {b[8192] / b[4096]:.2f}; at N = 64K one head moves "
        f"{charts.fmt_bytes(b[65536], binary=False)} through HBM."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: the slope is the message. The compulsory line is what any algorithm must move; the
# gap between the two lines is the S/P round trip. Lecture 3 removes it without changing the result.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Take-aways

# %% tags=["remove-input"]
display(
    Markdown(
        f"1. Naive attention writes and re-reads two N×N matrices: {nn / naive.hbm_bytes:.1%} of its HBM "
        f"traffic at N = {N}.\n"
        f'2. 4K tokens give {s4096 / 1e6:.1f} million scores per head and layer; "gigabytes" needs '
        f"heads × batch (× layers).\n"
        f"3. The traffic grows with slope {fit_naive.slope:.2f} on a log–log chart: quadratic in N."
    )
)
