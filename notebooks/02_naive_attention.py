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
# Standard attention writes the N×N matrices S and P to device memory and reads them back: this
# lecture counts those trips exactly.

# %% [markdown] slideshow={"slide_type": "notes"}
# Standard attention (Algorithm 0 of the FlashAttention paper) for one head, with
# $Q, K, V \in \mathbb{R}^{N\times d}$:
#
# 1. $S = QK^\top$ — read Q and K from HBM, **write the N×N matrix S** to HBM;
# 2. $P = \mathrm{softmax}(S)$ row by row — **read S, write the N×N matrix P**;
# 3. $O = PV$ — **read P** and V, write O.
#
# Two N×N matrices each make a round trip through HBM (the device memory, Lecture 1). This lecture
# counts those trips exactly.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Write standard attention as three passes and say which arrays each pass reads from and writes to
#   device memory.
# - Count its HBM traffic exactly, per tensor and per pass — reads $3Nd + 2N^2$, writes $2N^2 + Nd$
#   elements — and the share that S and P take.
# - Explain why that traffic grows as N², and read the exponent off a log–log slope.
# - Judge the posts' claims about how many scores a 4K-token sequence has and whether the N×N matrix
#   takes "gigabytes": per head, per layer, per batch or per model.
#
# **Prerequisites**
#
# - Lecture 1: HBM (device memory) against SRAM, arithmetic intensity, the roofline.
# - Scaled dot-product attention, $\mathrm{softmax}(QK^\top/\sqrt{d})\,V$, and numpy.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 5 | Algorithm 0 in three passes |
# | 5 | The three passes in numpy |
# | 10 | Per-tensor and per-pass HBM traffic |
# | 5 | The posts' first claim: how many scores? |
# | 10 | When is the N×N matrix "gigabytes"? |
# | 10 | Traffic grows with N² |
# | 5 | Summary and exercises |

# %% [markdown] slideshow={"slide_type": "notes"}
# Draw the three passes on the board as three trips to the warehouse. Each arrow carrying an N×N matrix
# is thick; the arrows carrying Q, K, V, O are thin (N×d, and d ≪ N).

# %% slideshow={"slide_type": "skip"}
import math
from fractions import Fraction

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from course import charts
from evidence import claims
from simlib import Workload, compulsory_bytes, count, load_preset

charts.use_style()
N, D = 4096, 64  # the running example: 4K tokens, head dimension 64, fp16
SMALL_N = 256  # the numpy reference's size
BATCH = 8  # the batch of the "gigabytes" slide
FIT_FROM = 2048  # the slope fit starts here
DECIMAL_4K = 4000  # the other reading of "4K tokens"
h200 = load_preset("h200")

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
q, k, v = (rng.standard_normal((SMALL_N, D)) for _ in range(3))
o, s, p = naive_attention(q, k, v)
pd.DataFrame(
    {
        "array": ["Q", "K", "V", "S", "P", "O"],
        "shape": [a.shape for a in (q, k, v, s, p, o)],
        "elements": [a.size for a in (q, k, v, s, p, o)],
    }
)

# %% tags=["remove-input"] slideshow={"slide_type": "slide"}
display(
    Markdown(
        f"## Per-tensor HBM traffic at N = {N}, d = {D} (fp16, one head)\n\n"
        '`count("naive", …).table()` lists every transfer by level, direction, tensor and pass '
        "(`qk` = pass 1, `softmax` = pass 2, `pv` = pass 3)."
    )
)

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

# %% tags=["remove-input"] slideshow={"slide_type": "slide"}
display(
    Markdown(
        f'## The posts\' first claim: "{claims.CLAIMS["a"]}"\n\n'
        "Every query attends to every key: N² scores per head. The count below is the number of elements "
        "of S the naive schedule writes to HBM."
    )
)

# %%
scores = claims.claim_a(seq_lens=(N // 4, N // 2, DECIMAL_4K, N, 2 * N))
scores

# %% tags=["remove-input"]
s4096 = scores.set_index("N (tokens)").loc[N, "scores per head"]
s4000 = scores.set_index("N (tokens)").loc[DECIMAL_4K, "scores per head"]
display(
    Markdown(
        f"At N = {N}: {s4096:,} scores ({s4096 / 1e6:.1f} million{', exactly 2²⁴' if s4096 == 2**24 else ''}); "
        f"at N = {DECIMAL_4K}: {s4000:,} ({s4000 / 1e6:.1f} million). The popular figure holds for either reading of "
        '"4K" — per head and per layer.'
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## When is the N×N matrix "gigabytes"?
#
# One fp16 N×N matrix per head is 2·N² bytes. It becomes large when it is multiplied by heads, batch
# and layers. Two model shapes: Llama-2-7B (from `data/models`, its published config) and a
# GPT-2-medium-like shape (stated in `evidence/claims.py`).

# %%
pd.DataFrame(claims.model_configs()).T

# %% slideshow={"slide_type": "subslide"}
sizes = claims.claim_c(seq_lens=(N // 2, N, 2 * N), batches=(1, BATCH))
sizes.round(2)

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
llama = sizes[(sizes.model == claims.LLAMA) & (sizes.N == N) & (sizes.batch == BATCH)].iloc[0]
n_gib = claims.min_seq_len_for(2**30)
display(
    Markdown(
        f"Per head the matrix is small: {charts.fmt_bytes(claims.nxn_bytes(N))} at N = {N} (a footprint, so in "
        f"binary units; as traffic the same bytes are the {claims.nxn_bytes(N) / 1e6:.1f} MB of S in the table above). A single "
        f"head's matrix only reaches 1 GiB at N = {n_gib:,}. Multiply by {claims.LLAMA}'s {llama.heads} heads "
        f"and a batch of {BATCH} and one layer's S is {llama['one layer × batch (GiB)']:.0f} GiB at N = {N}; "
        f"kept for all {llama.layers} layers (as training does for P), "
        f'{llama["all layers × batch (GiB)"]:.0f} GiB. "Gigabytes" is true '
        "**for a layer or a model, not for one head**."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Traffic grows with N²
#
# Naive HBM traffic per head against sequence length, log–log: the fitted slope is the exponent.
# For contrast, the compulsory traffic (read Q, K, V and write O once) grows only linearly.

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="Log-log chart of device-memory traffic per head against sequence length: naive attention rises with slope two, the compulsory traffic of Q, K, V and O with slope one, the gap between them is the S and P round trip"
seq = [2**k for k in range(8, 17)]
naive_bytes = [count("naive", Workload(n, D)).hbm_bytes for n in seq]
needed = [compulsory_bytes(Workload(n, D)) for n in seq]

fig, ax = plt.subplots(figsize=(8.5, 5))
fit_naive = charts.plot_loglog(
    ax, seq, naive_bytes, charts.LABELS["naive"], color=charts.COLORS["naive"], fit_from=FIT_FROM
)
fit_needed = charts.plot_loglog(
    ax, seq, needed, charts.LABELS["compulsory"], color=charts.COLORS["compulsory"], ls="--"
)
charts.tokens_axis(ax, seq)
charts.bytes_axis(ax, label="device-memory (HBM) traffic per head")
ax.set_title(f"Naive attention, fp16, d = {D}: device-memory traffic vs sequence length (any GPU)")
ax.legend(loc="upper left")
plt.show()

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
b = dict(zip(seq, naive_bytes))
display(
    Markdown(
        f"Fitted slope {fit_naive.slope:.2f} for naive attention (N ≥ {charts.tokens_label(FIT_FROM)}; at small "
        f"N the linear N·d terms still matter), {fit_needed.slope:.2f} for the compulsory traffic. Doubling N "
        f"from {charts.tokens_label(N)} to {charts.tokens_label(2 * N)} multiplies naive traffic by "
        f"{b[2 * N] / b[N]:.2f}; at N = {charts.tokens_label(seq[-1])} one head moves "
        f"{charts.fmt_bytes(b[seq[-1]], binary=False)} through device memory. The count is the same on every "
        f"GPU: it is {h200.dram_name} on the {h200.name}, {load_preset('rtx-4090').dram_name} on the "
        f"{load_preset('rtx-4090').name}."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# The slope is the message. The compulsory line is what any algorithm must move; the gap between the
# two lines is the S/P round trip. Lecture 3 removes it without changing the result.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary

# %% tags=["remove-input"]
display(
    Markdown(
        "1. Standard attention is three passes; passes 1 and 2 write the N×N matrices S and P to device "
        "memory, passes 2 and 3 read them back.\n"
        f"2. Reads 3Nd + 2N², writes 2N² + Nd elements: S and P are {nn / naive.hbm_bytes:.1%} of the HBM "
        f"traffic at N = {N}, d = {D}, and the share N/(N + d) only grows with N.\n"
        f"3. The traffic grows with slope {fit_naive.slope:.2f} on a log–log chart: quadratic in N, while the "
        "compulsory traffic is linear.\n"
        f"4. {charts.tokens_label(N)} tokens give {s4096 / 1e6:.1f} million scores per head and layer; "
        '"gigabytes" needs heads × batch (× layers).\n'
        "5. Next: compute attention tile by tile so that S and P never leave the chip (Lecture 3)."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Predict first (write the number down), then compute, then open the hidden solution cell: it
# computes the answer with `simlib` and checks it against an independent derivation.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1 — Count the trips by hand
#
# Without running anything, list for each pass which arrays it reads and which it writes, and add
# them up in elements. Evaluate the total in bytes for the running N and d in fp16 and predict the
# share of S and P. Check your per-pass numbers against the `passes` table and your total against
# `count()`; show that the share is $N/(N+d)$.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
e = w.element_bytes
by_hand = {  # (reads, writes) in elements
    "1: S = QKᵀ": (N * D + N * D, N * N),  # read Q, K; write S
    "2: P = softmax(S)": (N * N, N * N),  # read S; write P
    "3: O = PV": (N * N + N * D, N * D),  # read P, V; write O
}
for name, (reads, writes) in by_hand.items():
    assert passes.loc[name, "bytes"] == (reads + writes) * e, name
total = sum(r + wr for r, wr in by_hand.values()) * e
assert total == naive.hbm_bytes == (4 * N * D + 4 * N * N) * e
assert (
    naive.hbm_read_bytes == (3 * N * D + 2 * N * N) * e and naive.hbm_write_bytes == (2 * N * N + N * D) * e
)
assert Fraction(int(nn), naive.hbm_bytes) == Fraction(N, N + D)
print(f"{total:,} B = {total / 1e6:.1f} MB; S and P: {N / (N + D):.2%}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2 — Does S fit in the L2?
#
# The H200's L2 (its capacity is in the preset; Lecture 1's table) sits between the SMs and device
# memory. Predict how many fp16 N×N matrices of one head fit in it at the running N. Then compute the
# largest N for which S alone fits, and the largest for which S and P fit together — if the L2 could
# keep both, passes 2 and 3 would read them from the L2, not from HBM. Check both by brute force.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
l2 = h200.level("L2").capacity_bytes
assert claims.nxn_bytes(N) == 2 * N * N  # fp16: 2 B per score
fit_at_n = l2 // claims.nxn_bytes(N)


def largest_n(matrices):
    """Largest N whose `matrices` fp16 N×N matrices fit in the L2, by walking N up one at a time."""
    n = 0
    while matrices * claims.nxn_bytes(n + 1) <= l2:
        n += 1
    return n


only_s, s_and_p = largest_n(1), largest_n(2)
assert only_s == math.isqrt(l2 // 2) and s_and_p == math.isqrt(l2 // 4)  # 2N² ≤ L2, 4N² ≤ L2
print(
    f"L2 {l2 / 2**20:.0f} MiB: {fit_at_n} fp16 N×N matrix{'' if fit_at_n == 1 else 'es'} at N = {N}; S alone fits up to N = {only_s:,}, "
    f"S and P together up to N = {s_and_p:,} ({'below' if s_and_p < N else 'above'} the running N)"
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3 — When is the slope really two?
#
# Predict: is the local log–log slope of naive traffic at the smallest N of the chart closer to one
# or to two? From the count $(4Nd + 4N^2)$ derive the doubling ratio
# $\text{traffic}(2N)/\text{traffic}(N) = 2(d + 2N)/(d + N)$, check it exactly for every N of the chart,
# and find the smallest power-of-two N whose local slope $\log_2$ of that ratio reaches 1.9.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
slopes = {}
for n in seq[:-1]:
    ratio = Fraction(count("naive", Workload(2 * n, D)).hbm_bytes, count("naive", Workload(n, D)).hbm_bytes)
    assert ratio == Fraction(2 * (D + 2 * n), D + n), n
    slopes[n] = math.log2(ratio)
steep = min(n for n, slope in slopes.items() if slope >= 1.9)
# by hand: 2(d + 2N)/(d + N) ≥ 2^1.9  ⇔  N ≥ d (2^1.9 − 2) / (4 − 2^1.9)
assert steep == min(n for n in seq if n >= D * (2**1.9 - 2) / (4 - 2**1.9))
print(f"local slope at N = {seq[0]}: {slopes[seq[0]]:.2f}; reaches 1.9 from N = {steep}")
pd.Series(slopes, name="local slope").round(3)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 4 — "Gigabytes" against a real device memory
#
# Training keeps P of every layer for the backward pass. For Llama-2-7B (`data/models`) at the
# running N, predict the smallest batch whose P matrices of all layers no longer fit in the H200's
# device memory (its capacity is in the preset). Compute it from the model's heads and layers, and
# check it against the `claim_c` table computed for batches 1, 2, 3, ….

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
cfg = claims.model_configs()[claims.LLAMA]
capacity = h200.level("HBM").capacity_bytes
per_batch = 2 * N * N * cfg["heads"] * cfg["layers"]  # fp16 bytes of P, all heads and layers, one sequence
smallest = capacity // per_batch + 1  # the first batch with batch · per_batch > capacity
table_c = claims.claim_c(seq_lens=(N,), batches=range(1, smallest + 2))
table_c = table_c[table_c.model == claims.LLAMA].set_index("batch")["all layers × batch (GiB)"]
over = [batch for batch, gib in table_c.items() if gib * 2**30 > capacity]
assert over[0] == smallest and (smallest - 1) * per_batch <= capacity
print(
    f"{claims.LLAMA}: {per_batch / 2**30:.0f} GiB of P per sequence; batch {smallest} exceeds the "
    f"{h200.name}'s {capacity / 2**30:.0f} GiB of {h200.dram_name}"
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 5 — What materialising costs (proof)
#
# Prove that any schedule that writes the N×N matrix S to device memory and reads it back moves at
# least 2N² elements beyond the compulsory 4Nd (read Q, K, V, write O), whatever its SRAM: its
# traffic is Ω(N²). How many beyond the compulsory does naive attention move, and why exactly that
# many? Check your answer against `count()` and `compulsory_bytes` for several N and d.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Every one of the N² entries of S is written once and read at least once: 2N² element transfers that
# are not in the compulsory 4Nd. Naive attention also materialises P (written by pass 2, read by pass 3):
# 4N² beyond the compulsory traffic, exactly.
for n5 in (256, 1000, 4096):
    for d5 in (32, 64, 128):
        w5 = Workload(n5, d5)
        extra = count("naive", w5).hbm_bytes - compulsory_bytes(w5)
        assert extra == 4 * n5 * n5 * w5.element_bytes >= 2 * n5 * n5 * w5.element_bytes
print("naive attention moves exactly 4N² elements (S and P, each written and read once) beyond 4Nd")
