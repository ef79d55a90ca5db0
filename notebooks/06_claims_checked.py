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
# # Lecture 6 — The popular claims, checked
#
# Every checkable claim of two popular FlashAttention posts, judged against the exact model, the
# paper's tables and the H200.

# %% [markdown] slideshow={"slide_type": "notes"}
# Two widely read explainer posts on FlashAttention make many checkable claims. Each is checked
# here against the exact model (`simlib`), the FlashAttention paper's own tables
# (`data/papers.json`, cited) and, where one exists, an H200 measurement (`data/measurements/current/`).
# `python -m simlib claims [--json]` prints the same table: this lecture shows it in slide-sized pieces.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Name the quantity that decides a claim and compute it with `simlib` (scores, bytes, slopes,
#   transactions).
# - Separate HBM *traffic* (still quadratic in N with FlashAttention) from extra *memory* (linear in N).
# - Judge a speed-up in the right regime, 16-bit on tensor cores (the posts') or fp32 on CUDA cores,
#   and name both sides and the dtype.
# - Turn a number into a verdict with a stated threshold: holds, holds with conditions, does not hold.
#
# **Prerequisites**
#
# Lectures 1–5: the roofline and its ridge point (1), naive attention's N×N traffic (2), tiling and the
# online softmax (3), IO complexity and Theorem 2 (4), the kernels timed on the H200 (5). Reading a
# pandas table.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 5 | How a claim is checked: quantity, model, paper, H200, rule |
# | 10 | Counting claims: (a), (b), (d), (m), (n), (s), (u) |
# | 8 | Memory claims: (c), (f), (g), (r), (v), (w) |
# | 5 | The hardware: (i), (j), (k), (l), (x) |
# | 12 | Speed-ups in two regimes: (e), (h) |
# | 5 | End to end: (o), (p), (q) |
# | 2 | Interface, history, and what cannot be checked: (t), (y), (z), U1, U2 |
# | 3 | Summary and exercises |

# %% [markdown] slideshow={"slide_type": "notes"}
# The point is not to mock the posts (most claims hold) but to practise stating the conditions under
# which a number is true: per head or per model, traffic or memory, model or measurement, fp32 or
# 16-bit. Each group slide is a table; the collapsed cards under it hold the full row for questions.

# %% slideshow={"slide_type": "skip"}
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from course import charts
from evidence import claims, paper, readers, verdicts
from simlib import Workload, count, load_preset
from simlib.kvcache import load_model

charts.use_style()
table = verdicts.table()


def group(name):
    """The slide table of one group of claims, and its cards (collapsed) below it."""
    keys = verdicts.GROUPS[name]
    with pd.option_context("display.max_colwidth", None):  # whole claims, wrapped, never cut at 50 characters
        display(verdicts.slide_table(keys, table))
    display(Markdown(verdicts.cards(keys, table)))


# %% [markdown] slideshow={"slide_type": "slide"}
# ## How a claim is checked
#
# Every row of the table has the same fields: the claim in the posts' words, the **quantity** that
# decides it, the **model**'s number (computed with `simlib` every time this runs), the **paper**'s
# number where it has one, the **H200** measurement where one exists, and the **rule**: the threshold
# that turns the number into a verdict. Claim (a) in full:

# %%
with pd.option_context("display.max_colwidth", None):
    display(table.loc["a", ["quantity", "model", "rule", "verdict"]].to_frame())

# %% tags=["remove-input"]
counts = table.verdict.value_counts()
display(
    Markdown(
        f"{len(table)} claims: "
        + ", ".join(f"**{v}** {counts.get(v, 0)}" for v in verdicts.VERDICTS if counts.get(v, 0))
        + ". In the tables below ✓ marks which evidence a row has (model, paper, H200), — none."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Counting claims

# %%
group("Counting")

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
b = claims.claim_b()
a = claims.claim_a().set_index("N (tokens)")["scores per head"]
display(
    Markdown(
        f"N = 4096 gives {a[4096]:,} scores per head. Scores and FLOPs grow exactly ×{b['scores ×'].iloc[0]:.0f} "
        f"per doubling; naive HBM traffic a little less (×{b['naive HBM bytes ×'].min():.2f} to "
        f"×{b['naive HBM bytes ×'].max():.2f}) because of its terms linear in N (reading Q, K, V, writing O)."
    )
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### (d) O(N²) vs O(N): traffic and memory are different quantities
#
# H200 tiles, d = 64, fp16, one head. Left: HBM traffic; right: memory beyond Q, K, V, O.

# %% tags=["remove-input"] alt="Two log-log panels against N: HBM traffic grows with slope about 2 for naive, FlashAttention-1 and FlashAttention-2, while extra memory grows with slope 2 for naive and 1 for FlashAttention"
growth = claims.claim_d()
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
for name, g in growth.groupby("algorithm", sort=False):
    charts.plot_loglog(ax1, g.N, g["HBM traffic (bytes)"], charts.LABELS[name], color=charts.COLORS[name])
    charts.plot_loglog(ax2, g.N, g["extra memory (bytes)"], charts.LABELS[name], color=charts.COLORS[name])
for ax in (ax1, ax2):
    charts.tokens_axis(ax, sorted(growth.N.unique()))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=9)
charts.bytes_axis(ax1, label="HBM traffic per head", binary=False)
charts.bytes_axis(ax2, label="memory beyond Q, K, V, O", binary=True)
ax1.set_title("HBM traffic: quadratic for all three")
ax2.set_title("extra memory: N² for naive, N for FlashAttention")
plt.show()

# %%
claims.slopes_d(growth).round(2)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Memory claims

# %% [markdown] slideshow={"slide_type": "notes"}
# (c) and (g) use two model shapes: Llama-2-7B (its published config in `data/models`) and a
# GPT-2-medium-like shape (stated in `evidence/claims.py`).

# %%
group("Memory")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### (f) The footprint ratio is not one number
#
# Forward activations per head: Q, K, V, O plus the N×N matrices standard attention keeps (S and P,
# or P alone when the softmax overwrites S) against FlashAttention-2's logsumexp.

# %% tags=["remove-input"] alt="Log-log chart of the memory footprint ratio, standard attention over FlashAttention-2, against N: both lines grow in proportion to N and cross the claimed 10x between 2K and 4K tokens"
footprint = claims.claim_f()
fig, ax = plt.subplots(figsize=(8.5, 4.8))
for col, color in (("ratio, S and P", charts.COLORS["naive"]), ("ratio, P only", "#ff7f0e")):
    charts.plot_loglog(ax, footprint.N, footprint[col], f"{col[7:]} kept", color=color, fit_from=4096)
ax.axhline(10, color="gray", ls="--", lw=1)
ax.text(footprint.N.min(), 10 * 1.08, "the claim: 10×", fontsize=9, color="gray")
charts.tokens_axis(ax, list(footprint.N))
charts.ratio_axis(ax, label="memory footprint ratio, standard / FlashAttention-2 (×)")
ax.set_title("Footprint ratio grows ∝ N (d = 64, fp16, per head)")
ax.legend(loc="upper left", fontsize=9)
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### (g) 8K context on an 80 GB A100

# %% [markdown] slideshow={"slide_type": "notes"}
# Only the N×N matrices are counted (weights, optimiser state and other activations come on top): if
# they alone exceed the memory, standard attention is out of memory for certain. Training keeps P of
# every layer for the backward pass; inference holds one layer's S and P at a time.

# %% tags=["remove-input"] alt="Horizontal bars of the GiB of N-by-N matrices at N = 8192 for two model shapes, inference and training, batch 1 to 8, on a log scale against the A100's 80 GiB line; training bars exceed it"
oom = claims.claim_g()
fig, ax = plt.subplots(figsize=(9, 5.2))
labels = [f"{r['model']}, {r['mode']}, batch {r['batch']}" for _, r in oom.iterrows()]
colors = [charts.COLORS["naive"] if x else charts.COLORS["fa2"] for x in oom["N×N alone exceed HBM"]]
ax.barh(labels, oom["N×N matrices (GiB)"], color=colors)
capacity = oom["HBM (GiB)"].iloc[0]
a100 = load_preset("a100-80gb")
ax.axvline(capacity, color="black", ls="--", label=f"{a100.name} {a100.dram_name}: {capacity:.0f} GiB")
ax.legend(loc="upper right", fontsize=9)
ax.set_xscale("log")
ax.xaxis.set_major_formatter(lambda v, _pos: f"{v:g}")
ax.set_xlabel("N×N matrices in memory at N = 8192, fp16 (GiB, log scale)")
ax.invert_yaxis()
ax.grid(axis="y", visible=False)
ax.set_title("Red: the N×N matrices alone exceed the GPU's memory")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The hardware
#
# Bandwidths and capacities from the presets (`data/hardware`, each with its datasheet source).

# %%
group("The hardware")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Speed-ups in two regimes
#
# The posts, the paper (fp16 on the A100) and every serving stack run attention in 16 bits on the
# tensor cores, where the H200's ridge point is far to the right and a kernel that writes S and P to
# memory is deeply memory-bound. Our first numba kernels run fp32 on the CUDA cores, another regime.
# Claim (e) is judged in the posts' regime against the standard attention practitioners run in 16
# bits: every N×N tensor in the dtype and both products on the tensor cores (`eager16_h200.csv`). Not
# against PyTorch's SDPA math backend: for bf16 inputs it is **fp32 inside (upcast)**, S, P and its
# products in fp32, so it pits FlashAttention's tensor cores against SGEMMs on the CUDA cores.

# %%
group("Speed-ups")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The 16-bit baseline (bf16, forward, d = 64)

# %% [markdown] slideshow={"slide_type": "notes"}
# Median ms per call, B·H·N fixed (`eager16_h200.csv`, CUDA events, each row checked against float64):
# `eager` is matmul → softmax → matmul with S and P in bf16; `eager_hf` is Hugging Face's eager
# attention, whose softmax runs in fp32 and is cast back; `attention_ref` is the FlashAttention
# paper's own benchmark reference; `torch_flash` is SDPA's FlashAttention-2 on the same inputs.

# %%
ms = claims.eager16_ms("bf16", "fwd")
ratios = {f"{v} / flash (×)": ms[v] / ms.torch_flash for v in readers.EAGER16_STANDARD}
ms.add_suffix(" (ms)").assign(**ratios).style.format("{:.2f}")

# %% tags=["remove-input"] alt="Two panels of speed-up against N on a log scale. Left, 16-bit on tensor cores: the fp16 HBM-roofline model, the paper's A100 fp16 tables, H200 bf16 measurements of eager, Hugging Face eager and attention_ref over flash, forward and forward plus backward, our naive_tc over fa2_tc, and SDPA math (fp32 inside, upcast) over flash in grey. Right, fp32 on CUDA cores: the fp32 model and three H200 fp32 pairs. A band marks the claimed 2 to 4x" slideshow={"slide_type": "subslide"}
SEQ = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
fp16_model = claims.model_speedups(SEQ, dtype="fp16")
fp32_model = claims.model_speedups(SEQ, dtype="fp32")
eager = readers.eager16_speedups()
eager = eager[(eager.dtype == "bf16") & ~eager.causal & (eager.head_dim == claims.DEFAULT_HEAD_DIM)]
sbs = readers.tc_bench_speedups(readers.lookup(readers.TC_SIDE_BY_SIDE))
sbs = sbs[(sbs.dtype == "bf16") & (sbs.head_dim == claims.DEFAULT_HEAD_DIM)]
fp32_pairs = pd.concat([claims.teaching_speedups(), claims.optimised_speedups()])
fp32_pairs = fp32_pairs[fp32_pairs.head_dim == claims.DEFAULT_HEAD_DIM]
NAMES = {
    ("torch_math", "torch_flash"): f"torch SDPA math ({readers.UPCAST_LABEL}) / flash",
    ("naive_tc", "fa2_tc"): "numba naive_tc / numba fa2_tc (ours)",
    ("naive", "tiled"): "numba naive / numba tiled (teaching)",
    ("cupy_naive", "numba_fast"): "cuBLAS naive (cupy) / numba fast FA2",
    ("torch_math", "torch_efficient"): "torch SDPA math / memory-efficient",
}
fig, (left, right) = plt.subplots(1, 2, figsize=(14, 6.2), sharey=True)
for ax, model, dtype in ((left, fp16_model, "fp16"), (right, fp32_model, "fp32")):
    speedup = model["HBM-roofline speed-up fa2"]
    ax.plot(
        SEQ, speedup, "-", color=charts.COLORS["fa2"], label=f"model {dtype}, H200 HBM roofline: naive / FA2"
    )
for key, marker in (("table_20_fwd_bwd_ms", "s"), ("table_11_fwd_bwd_dropout_mask_ms", "D")):
    t = paper.speedups(key).dropna()
    what = "fwd+bwd" if key.startswith("table_20") else "fwd+bwd, dropout + mask"
    left.plot(
        t.N,
        t["speed-up"],
        marker,
        mfc="none",
        mew=2,
        color="black",
        label=f"paper A100 fp16, {what}: PyTorch standard / FA1",
    )
for (std, pas), g in eager.groupby(["baseline", "pass"], sort=False):
    g = g.sort_values("seq_len")
    left.plot(
        g.seq_len,
        g["speed-up"],
        ("*-" if pas == "fwd" else "*:"),
        ms=10,
        color=charts.variant_color(std),
        label=f"H200 bf16 {pas.replace('_', '+')}: {std} / flash",
    )
for (base, kern), g in sbs.groupby(["baseline", "kernel"]):
    g = g.sort_values("seq_len")
    upcast = base == readers.UPCAST
    left.plot(
        g.seq_len,
        g["speed-up"],
        "x--",
        ms=7,
        color="0.6" if upcast else "#9467bd",
        label=f"H200 bf16 fwd: {NAMES[(base, kern)]}",
    )
for ((base, kern), g), color in zip(
    fp32_pairs.groupby(["baseline", "kernel"]), ("#d62728", "#9467bd", "#ff7f0e")
):
    g = g.sort_values("seq_len")
    right.plot(g.seq_len, g["speed-up"], "o--", ms=8, color=color, label=f"H200 fp32: {NAMES[(base, kern)]}")
for ax, title in (
    (left, "fp16/bf16 on tensor cores: the posts' regime"),
    (right, "fp32 on CUDA cores: another regime"),
):
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:g}×")
    ax.axhspan(2, 4, color="#ffdd57", alpha=0.3, label="claim (e): 2–4×")
    charts.tokens_axis(ax, list(SEQ))
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8, ncol=2)
left.set_ylabel("standard time / FlashAttention time (×, log)")
fig.suptitle(f"Speed-up of FlashAttention over standard attention, d = {claims.DEFAULT_HEAD_DIM}")
plt.show()

# %% tags=["remove-input"] slideshow={"slide_type": "subslide"}
long16 = verdicts.eager16_long()
ours_bf16 = verdicts.side_by_side_bf16()
upcast_bf16 = ours_bf16[ours_bf16.baseline == readers.UPCAST]["speed-up"]
ours_bf16 = ours_bf16[ours_bf16.baseline == "naive_tc"]["speed-up"]
long32 = fp32_pairs[fp32_pairs.seq_len >= claims.LONG_SEQ]
each32 = "; ".join(
    f"{NAMES[pair]} {g['speed-up'].min():.1f}–{g['speed-up'].max():.1f}×"
    for pair, g in long32.groupby(["baseline", "kernel"])
)
m16 = fp16_model.set_index("N")["HBM-roofline speed-up fa2"]
m32 = fp32_model.set_index("N")["HBM-roofline speed-up fa2"]


def span(frame):
    return f"{frame['speed-up'].min():.1f}–{frame['speed-up'].max():.1f}×"


plain = long16[long16.baseline == "eager"]
display(
    Markdown(
        f"**Two regimes.** In 16 bits at N ≥ 2K (bf16 and fp16, d = 64 and 128) the standard attention "
        f"practitioners run takes {span(long16)} the time of FlashAttention-2: plain `eager` "
        f"{span(plain[plain['pass'] == 'fwd'])} forward and {span(plain[plain['pass'] == 'fwd_bwd'])} forward + "
        f"backward, Hugging Face's `eager_hf` (its fp32 softmax adds N×N passes) "
        f"{span(long16[long16.baseline == 'eager_hf'])}, the paper's `attention_ref` "
        f"{span(long16[long16.baseline == 'attention_ref'])}; our `naive_tc` takes "
        f"{ours_bf16.min():.1f}–{ours_bf16.max():.1f}× the time of our `fa2_tc`. The fp16 HBM-roofline model predicts "
        f"{m16.loc[2048]:.1f}–{m16.loc[16384]:.1f}×. SDPA math ({readers.UPCAST_LABEL}) shows "
        f"{upcast_bf16.min():.0f}–{upcast_bf16.max():.0f}×: that is tensor cores against SGEMMs, not FlashAttention "
        f"against standard attention. In fp32 the model predicts {m32.loc[16384]:.2f}× (both compute bound on the "
        f'CUDA cores) and the fp32 pairs measure (d = 64, N ≥ 2K) {each32}. The posts\' "2–4×" holds for the '
        f"plainest eager attention with its backward pass and for the paper's 2022 tables; forward, and against "
        f"the eager attention libraries ship, FlashAttention is faster than claimed."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## End to end
#
# Whole-model training (o, p) is outside `simlib`: the paper's tables decide. The energy claim (q)
# is Lecture 9's subject.

# %%
group("End to end")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Interface, history, and what cannot be checked
#
# Three claims are facts of record (the authors' repository, the arXiv listing, Theorem 1), checked
# against the project's own runs where one exists. Two cannot be checked by anyone outside: no public
# number decides them, so they are listed with why, and not judged.

# %%
group("Interface, history, and what cannot be checked")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A claim is checked by naming the quantity that decides it, computing it, and applying a stated
#   threshold; most of the posts' claims hold only under a condition the posts do not state.
# - FlashAttention's HBM *traffic* is still quadratic in N (Θ(N²d²/M)); what becomes linear is the
#   extra *memory*.
# - Per head the N×N matrix is megabytes; gigabytes appear only once heads, batch and layers multiply it.
# - A speed-up names both sides, the dtype and the pass: against the 16-bit standard attention
#   practitioners run, FlashAttention's gain is about the posts' 2–4× for plain eager attention forward +
#   backward and larger forward or against Hugging Face's eager; a baseline that upcasts to fp32 (SDPA
#   math) inflates it far more.
# - On-chip memory is about one order of magnitude faster than HBM, not "orders of magnitude".


# %% tags=["remove-input"]
def listed(verdict):
    return ", ".join(f"({k})" for k in table.index if table.loc[k, "verdict"] == verdict) or "none"


display(Markdown("\n".join(f"- **{v}**: {listed(v)}" for v in verdicts.VERDICTS)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Each solution is hidden; it recomputes the answer by hand and checks it against the project's code.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1
#
# Claim (m) counts HBM transactions of standard attention for one head at N = 4096, d = 64, fp16.
# Naive attention reads Q, K, V and S, P and writes S, P and O: 3Nd + 2N² elements read, 2N² + Nd
# written. Compute the bytes and divide by the H200's HBM transaction size (its preset's
# `granularity_bytes`). Does your number match row (m)?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
N, d = 4096, 64
element = Workload(N, d).element_bytes  # fp16: 2 bytes
naive_bytes = element * (3 * N * d + 2 * N * N + 2 * N * N + N * d)
sector = load_preset("h200").level("HBM").granularity_bytes
transactions = naive_bytes / sector
print(
    f"{naive_bytes:,} B / {sector} B = {transactions / 1e6:.2f} M transactions; row (m): {table.loc['m', 'number']}"
)
assert count("naive", Workload(N, d)).hbm_bytes == naive_bytes
assert table.loc["m", "number"] == f"{transactions / 1e6:.1f} M per head"

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2
#
# Predict, then check: at N = 8192, d = 64 in bf16, is the plain eager attention (S and P in bf16) slower
# than SDPA's flash backend by more or by less than the fp16 HBM-roofline model's naive / FA2 ratio,
# forward? Read the two median times from `eager16_h200.csv` yourself with pandas, compute the
# speed-up, and check that it lies in the eager range of claim (e)'s measured text.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
raw = pd.read_csv(readers.lookup(readers.EAGER16))
rows = raw[
    (raw.dtype == "bf16")
    & (raw["pass"] == "fwd")
    & ~raw.causal.astype(bool)
    & (raw.seq_len == 8192)
    & (raw.head_dim == 64)
]
t = rows.set_index("variant")["median_ms"]
measured = t["eager"] / t["torch_flash"]
model = claims.model_speedups((8192,), dtype="fp16")["HBM-roofline speed-up fa2"].item()
fwd = verdicts.eager16_long()
fwd = fwd[(fwd.baseline == "eager") & (fwd["pass"] == "fwd")]["speed-up"]
print(f"measured {t['eager']} / {t['torch_flash']} ms = {measured:.1f}×; model {model:.1f}×")
assert fwd.min() <= measured <= fwd.max()
assert f"eager / torch_flash fwd {fwd.min():.1f}–{fwd.max():.1f}×" in table.loc["e", "measured"]
assert measured > model  # eager attention makes more passes over S and P than the model's two

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3
#
# Claim (r): one long conversation with Llama-3-8B (`data/models/llama-3-8b.json`) on a T4.
# Compute the fp16 KV cache by hand, K and V for every layer and key/value head, per token and at
# the model's full context (`max_position_embeddings`); then what is left of the memory a T4 exposes
# with ECC on (its default: `usable_memory_ecc_on_bytes` in `data/hardware/t4.json`, less than the
# 16 GiB on the box) after the fp16 weights and that cache. Then take off the CUDA context measured on the H200
# (`readers.read_cuda_context()`, PyTorch after cuBLAS and SDPA) and the activations of one 512-token
# prefill chunk (one layer's SwiGLU MLP: x, RMSNorm(x), gate, up, SiLU(gate)·up, plus the last token's
# logits in fp16 and fp32): how many tokens fit now? Compare with row (r).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
llama3 = load_model("llama-3-8b")
per_token = 2 * llama3.num_hidden_layers * llama3.num_key_value_heads * llama3.head_dim * 2  # K, V; fp16
cache = per_token * llama3.max_position_embeddings
capacity = claims.usable_bytes("t4")  # what CUDA exposes with ECC on (data/hardware/t4.json), not 16 GiB
spare = capacity - llama3.weight_bytes("fp16") - cache
context = readers.read_cuda_context()["bytes"][("torch", "sdpa")]
chunk = 512
mlp = chunk * 2 * (2 * llama3.hidden_size + 3 * llama3.intermediate_size)  # fp16
logits = llama3.vocab_size * (2 + 4)
tokens = max(0, (capacity - llama3.weight_bytes("fp16") - context - mlp - logits) // per_token)
print(
    f"{charts.fmt_bytes(per_token)} per token, {charts.fmt_bytes(cache)} at {llama3.max_position_embeddings:,} tokens"
)
print(
    f"usable {capacity / 2**20:,.0f} MiB, weights {llama3.weight_bytes('fp16') / 2**20:,.0f} MiB: spare "
    f"{spare / 2**20:,.0f} MiB; context {charts.fmt_bytes(context)}, activations {charts.fmt_bytes(mlp + logits)}"
)
print(f"tokens that fit: {tokens:,}; row (r): {table.loc['r', 'number']}")
assert per_token == llama3.kv_bytes_per_token("fp16")
assert table.loc["r", "number"].startswith(f"{tokens:,} of {llama3.max_position_embeddings:,} tokens fit")
assert tokens == 0 and table.loc["r", "verdict"] == verdicts.HOLDS

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 4
#
# Claim (g): training Llama-2-7B at N = 8192, batch 1, keeps P of every layer for the backward pass
# plus S of the current layer: (layers + 1) × heads × N² fp16 values. Compute the GiB by hand and
# compare with the memory of the A100-80GB preset. How far would inference (S and P of one layer) be from the limit?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
llama2 = load_model("llama-2-7b")
N = 8192
training = (llama2.num_hidden_layers + 1) * llama2.num_attention_heads * N * N * 2 / 2**30
inference = 2 * llama2.num_attention_heads * N * N * 2 / 2**30
hbm = load_preset("a100-80gb").level("HBM").capacity_bytes / 2**30
print(f"training {training:.0f} GiB, inference {inference:.0f} GiB, against {hbm:.0f} GiB")
g = claims.claim_g().query("model == @claims.LLAMA and batch == 1").set_index("mode")
assert (
    g.loc["training", "N×N matrices (GiB)"] == training
    and g.loc["inference", "N×N matrices (GiB)"] == inference
)
assert training > hbm > inference
assert table.loc["g", "number"] == f"{training:.0f} GiB vs {hbm:.0f} GiB (training)"
