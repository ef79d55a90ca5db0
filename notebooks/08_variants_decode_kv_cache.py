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
# # Lecture 8 — Real attention: causal masks, GQA, decode, the backward pass and the KV cache
#
# The earlier lectures counted one square, unmasked, multi-head forward pass. Real models mask the
# future (causal), share K/V heads between query heads (GQA/MQA), generate one token at a time
# against a KV cache (decode), and train (the backward pass). Each changes the traffic; this
# lecture counts each change exactly and ends with the question users ask most: how long a
# conversation fits on my GPU?

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: the four variants change different terms of the same count. Causal removes tiles,
# GQA removes K/V heads (from the cache, not from the forward's reads), decode removes the Q side
# almost entirely, the backward adds Q/O/dO/dQ re-reads. Ask the class to guess each before the cell.

# %% slideshow={"slide_type": "skip"}
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from simlib import Workload, count, load_preset, roofline
from simlib.kvcache import load_model, max_context, memory_table, model_keys
from simlib.lectures import charts
from simlib.reproduce import CAUSAL_EXTRA, figure2_flops, figure2_h200, figure2_left, figure2_terms

charts.use_style()
H200 = load_preset("h200")
SRAM = H200.sram_bytes

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Causal masking: skip the tiles above the diagonal
#
# Query q may only see keys k ≤ q. A tiled kernel skips every tile that lies entirely above the
# diagonal and computes the diagonal tiles whole (masking inside them). The *useful* FLOPs are
# 4·d per unmasked score, N(N+1)/2 scores, which is a little more than half of N².

# %%
rows = []
for n in (256, 1024, 4096, 16384):
    full = count("fa2", Workload(n, 64, dtype="fp16"), block_rows=128, block_cols=128)
    causal = count("fa2", Workload(n, 64, dtype="fp16", causal=True), block_rows=128, block_cols=128)
    rows.append(
        {
            "N": n,
            "useful FLOPs / N²·4d": causal.useful_flops / full.flops,
            "performed FLOPs / N²·4d": causal.flops / full.flops,
            "HBM bytes causal / full": causal.hbm_bytes / full.hbm_bytes,
        }
    )
causal_table = pd.DataFrame(rows)
causal_table

# %%
last = causal_table.iloc[-1]
display(
    Markdown(
        f"With 128×128 tiles at N = {int(last['N']):,}, the causal kernel performs "
        f"{last['performed FLOPs / N²·4d']:.4f} of the unmasked FLOPs (the useful fraction is "
        f"{last['useful FLOPs / N²·4d']:.4f} = (N+1)/2N) and moves {last['HBM bytes causal / full']:.3f} of the "
        f"bytes. At N = 256 the diagonal tiles are a larger share: {causal_table.iloc[0]['performed FLOPs / N²·4d']:.3f} "
        "of the FLOPs are still performed."
    )
)

# %% slideshow={"slide_type": "slide"}
n_demo, b_demo = 1024, 128
w_demo = Workload(n_demo, 64, causal=True)
visited = np.zeros((n_demo // b_demo, n_demo // b_demo))
for i in range(n_demo // b_demo):
    for j in range(n_demo // b_demo):
        visited[i, j] = 1.0 if j * b_demo <= (i + 1) * b_demo - 1 else 0.0
fig, ax = plt.subplots(figsize=(4.6, 4.2))
ax.imshow(visited, cmap="Greens", vmin=0, vmax=1.4, extent=(0, n_demo, n_demo, 0))
ax.set_xlabel("key index k (tokens)")
ax.set_ylabel("query index q (tokens)")
ax.plot([0, n_demo], [0, n_demo], color="black", lw=1)
tiles = int(visited.sum())
ax.set_title(f"causal, N={n_demo}, {b_demo}×{b_demo} tiles: {tiles} of {visited.size} visited")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. GQA and MQA: fewer K/V heads
#
# With H query heads and H_kv K/V heads, g = H/H_kv query heads share one K/V head.
#
# * **Forward (prefill/training)**: each query head still runs its own thread blocks and streams
#   all of K/V (FlashAttention-2 indexes K/V by h // g). In the two-level model the K/V *reads*
#   are unchanged; the group's re-reads of the same K/V are served from L2 on a real GPU. What
#   GQA shrinks is the K/V *footprint*: the compulsory traffic and, above all, the KV cache.
# * **Decode**: the g query rows of a group are packed into one block (as flash-decoding and
#   FlashInfer do), so each K/V element is read once per K/V head. Traffic falls by g.

# %%
rows = []
for kv_heads in (32, 8, 1):
    w_prefill = Workload(4096, 128, heads=32, kv_heads=kv_heads, dtype="fp16")
    w_decode = Workload(8192, 128, heads=32, kv_heads=kv_heads, query_len=1, dtype="fp16")
    pre = count("fa2", w_prefill, sram_bytes=SRAM)
    dec = count("decode", w_decode, sram_bytes=SRAM)
    rows.append(
        {
            "kv_heads": kv_heads,
            "group g": 32 // kv_heads,
            "prefill HBM (GB)": pre.hbm_bytes / 1e9,
            "decode HBM (MB)": dec.hbm_bytes / 1e6,
            "decode FLOP/byte": dec.flops / dec.hbm_bytes,
        }
    )
gqa_table = pd.DataFrame(rows)
gqa_table

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: the prefill column does not move with kv_heads; the decode column falls by g. This
# is why GQA was introduced for serving, not for training speed.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Decode: one token against the cache is memory bound
#
# One new token per head against a cache of L tokens: the kernel reads all of K and V
# (2·L·d elements per K/V head) to do 4·g·L·d FLOPs. Arithmetic intensity ≈ g FLOP per byte in
# fp16: about 1 for multi-head attention, far below the H200's ridge point. Flash-decoding splits
# the cache into s chunks so that enough thread blocks run; each chunk writes a partial O and
# logsumexp in fp32 that a second kernel reduces.

# %%
w_dec = Workload(32768, 128, batch=1, heads=32, kv_heads=8, query_len=1, dtype="fp16")
rows = []
for splits in (1, 2, 4, 8, 16, 32, 64):
    r = count("decode", w_dec, sram_bytes=SRAM, splits=splits)
    extra = r.traffic.elements("HBM", tensor="O_part") + r.traffic.elements("HBM", tensor="lse_part")
    rows.append(
        {
            "splits s": splits,
            "HBM (MB)": r.hbm_bytes / 1e6,
            "partial-result traffic (kB)": extra * 4 * r.units / 1e3,
            "thread blocks (B·H_kv·s)": r.units * splits,
            "roofline time (µs)": roofline(r, H200).time_s * 1e6,
            "bound": roofline(r, H200).bound,
        }
    )
decode_table = pd.DataFrame(rows)
decode_table

# %%
d0, d64 = decode_table.iloc[0], decode_table.iloc[-1]
display(
    Markdown(
        f"Splitting the 32K-token cache 64 ways adds {d64['partial-result traffic (kB)']:.0f} kB of partial results to "
        f"{d0['HBM (MB)']:.1f} MB of K/V reads ({(d64['HBM (MB)'] / d0['HBM (MB)'] - 1) * 100:.2f} % more traffic) and "
        f"raises the number of thread blocks from {int(d0['thread blocks (B·H_kv·s)'])} to "
        f"{int(d64['thread blocks (B·H_kv·s)'])}: enough to fill the H200's {H200.sm_count} SMs. That is the whole "
        "trick of flash-decoding: parallelism bought with a few kB."
    )
)

# %% slideshow={"slide_type": "slide"}
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for kv_heads, marker in ((32, "o"), (8, "s"), (1, "^")):
    lengths = [2**k for k in range(10, 18)]
    times = [
        roofline(
            count(
                "decode",
                Workload(L, 128, heads=32, kv_heads=kv_heads, query_len=1, dtype="fp16"),
                sram_bytes=SRAM,
                splits=16,
            ),
            H200,
        ).level_s["HBM"]
        * 1e6
        for L in lengths
    ]
    charts.plot_loglog(ax, lengths, times, f"H_kv = {kv_heads} (g = {32 // kv_heads})", marker=marker)
charts.tokens_axis(ax, lengths, label="KV cache length L (tokens)")
ax.set_ylabel("HBM time per decode step per layer (µs, H200)")
ax.set_title("decode is a stream over the cache: time ∝ L / g")
ax.legend()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. The backward pass: materialised vs recomputed
#
# Standard backward (the paper's Algorithm 3) reads the saved N×N matrix P and writes and reads
# dP and dS: Θ(N²) traffic. FlashAttention's backward (Algorithm 4) saved only O and the row
# statistics ℓ, m; it recomputes S and P tile by tile (10·N²·d FLOPs instead of 8·N²·d) and moves
# Θ(N²d²/M).

# %%
rows = []
for n in (1024, 4096, 16384):
    w = Workload(n, 64, dtype="fp16")
    std, fl = count("naive_bwd", w), count("flash_bwd", w, sram_bytes=SRAM)
    rows.append(
        {
            "N": n,
            "standard bwd HBM (GB)": std.hbm_bytes / 1e9,
            "flash bwd HBM (GB)": fl.hbm_bytes / 1e9,
            "traffic ratio": std.hbm_bytes / fl.hbm_bytes,
            "standard GFLOP": std.flops / 1e9,
            "flash GFLOP (recompute)": fl.flops / 1e9,
        }
    )
backward_table = pd.DataFrame(rows)
backward_table

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Figure 2 (left) of the FlashAttention paper, reproduced
#
# The paper's configuration is that of its benchmark script (`data/papers.json`,
# `figure_2_left.configuration`, each number cited): B = 64, H = 16, N = 1024, d = 64, fp16,
# **not causal**, dropout 0.1, a key-padding mask (lengths 1004–1023), forward + backward.
# *Standard* = `attention_ref` as that script writes it, one kernel per operation on the padded
# batch; *FlashAttention* = that commit's CUDA kernel (`fa1_2022`) on the unpadded tokens; the
# paper's Algorithms 1 + 4 for contrast. GB = 10⁹ B.

# %%
fig2 = figure2_left()
fig2[
    [
        "attention",
        "implementation",
        "model_hbm_gb",
        "paper_hbm_gb",
        "model_over_paper",
        "model_gflop",
        "paper_gflop",
    ]
].round(2)

# %% tags=["remove-input"]
f2 = fig2.set_index("attention")
std_row, fa_row = f2.loc["standard"], f2.loc["FlashAttention"]
flops = figure2_flops().set_index("attention")
display(
    Markdown(
        f"Standard attention: **{std_row['model_hbm_gb']:.1f} GB** in the model against the paper's "
        f"{std_row['paper_hbm_gb']} GB ({(std_row['model_over_paper'] - 1) * 100:+.0f} %). FlashAttention's 2022 "
        f"kernel: **{fa_row['model_hbm_gb']:.2f} GB** counting every access ({(fa_row['model_over_paper'] - 1) * 100:+.0f} "
        f"%), {fa_row['model_dram_gb_if_l2_holds_rereads']:.2f} GB if the L2 served every re-read inside a kernel; "
        f"the paper's {fa_row['paper_hbm_gb']} GB lies between the two. FLOPs: FlashAttention does "
        f"{flops.loc['FlashAttention', 'flash_over_standard']:.2f}× standard's "
        f"({flops.loc['FlashAttention', 'model_gflop']:.0f} vs {flops.loc['standard', 'model_gflop']:.0f} GFLOP: "
        f"it recomputes S in the backward pass), as in the paper ({fa_row['paper_gflop']} > {std_row['paper_gflop']}); "
        f"but the paper's GFLOPs row is {flops.loc['standard', 'model_over_paper']:.1f}× smaller than the "
        f"workload's own count, so it cannot be this workload's total."
    )
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Every term of the standard count: GB read + written by each kernel of the forward and backward
# step, largest first.

# %%
terms = figure2_terms()
standard_terms = terms[terms.attention == "standard"].assign(
    step=lambda t: t.kernel.str.split(":").str[0], op=lambda t: t.kernel.str.split(":").str[1]
)
per_op = standard_terms.pivot_table(index="op", columns="step", values="gb", aggfunc="sum", fill_value=0)
per_op.assign(total=per_op.sum(axis=1)).sort_values("total", ascending=False).round(3)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The same step on the H200
#
# One forward + backward step of `attention_ref` and of PyTorch's FlashAttention-2 kernels, under
# Nsight Compute (DRAM bytes summed over every kernel of the step, caches flushed between kernels;
# `data/measurements/current/figure2_h200.csv`), next to the paper and the model of the kernels that
# ran (PyTorch's today, not the 2022 ones).

# %%
h200_fig2 = figure2_h200()
h200_fig2[
    [
        "attention",
        "dropout",
        "paper_gb",
        "h200_dram_gb",
        "model_h200_dram_gb",
        "model_h200_over_measured",
        "paper_ms",
        "h200_ms",
    ]
].round(2)

# %% tags=["remove-input"]
h = h200_fig2[h200_fig2.dropout > 0].set_index("attention")
display(
    Markdown(
        f"With dropout, the H200 read and wrote {h.loc['standard', 'h200_dram_gb']:.1f} GB for standard attention "
        f"and {h.loc['FlashAttention', 'h200_dram_gb']:.2f} GB for FlashAttention-2 "
        f"({h.loc['standard', 'h200_dram_gb'] / h.loc['FlashAttention', 'h200_dram_gb']:.0f}× less); the model of "
        f"the kernels PyTorch launches today is within "
        f"{(h200_fig2['model_h200_over_measured'] - 1).abs().max() * 100:.1f} % of every measured step. The step took "
        f"{h.loc['standard', 'h200_ms']:.1f} ms and {h.loc['FlashAttention', 'h200_ms']:.1f} ms "
        f"({h.loc['standard', 'h200_ms'] / h.loc['FlashAttention', 'h200_ms']:.1f}×; the paper's A100: "
        f"{h.loc['standard', 'paper_ms']} and {h.loc['FlashAttention', 'paper_ms']} ms)."
    )
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# A clearly labelled extra: the same workload **with** a causal mask (not the paper's configuration).

# %%
figure2_left(workload=CAUSAL_EXTRA)[["attention", "model_hbm_gb", "paper_hbm_gb", "model_gflop"]].round(2)

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: the ratio of standard to FlashAttention bytes is the robust lesson; the absolute GB
# depend on which kernels run and whether the L2 serves the re-reads inside a kernel.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. The KV cache: how one long conversation fills a GPU
#
# Every generated token stores its K and V in every layer: 2·layers·H_kv·d·bytes per token.
# Parameters are computed from each model's published config (`data/models/`).

# %%
kv_rows = []
for key in model_keys():
    m = load_model(key)
    kv_rows.append(
        {
            "model": m.name,
            "params (B)": m.params / 1e9,
            "layers": m.num_hidden_layers,
            "kv_heads": m.num_key_value_heads,
            "KV cache per token (KiB, fp16)": m.kv_bytes_per_token() / 1024,
            "weights fp16 (GB)": m.weight_bytes("fp16") / 1e9,
            "tokens per GiB of cache": 2**30 // m.kv_bytes_per_token(),
        }
    )
pd.DataFrame(kv_rows)

# %% slideshow={"slide_type": "slide"}
GPU_16 = 16 * 2**30
fig, ax = plt.subplots(figsize=(6.8, 4.2))
contexts = np.arange(0, 65_537, 1024)
for key, weights in (("llama-2-7b", "int8"), ("llama-3-8b", "int8"), ("mistral-7b", "int4")):
    m = load_model(key)
    table = memory_table(m, contexts, weight_dtype=weights)
    ax.plot(contexts / 1024, table["total_bytes"] / 2**30, label=f"{m.name}, {weights} weights + fp16 cache")
ax.axhline(GPU_16 / 2**30, color="black", ls="--", lw=1)
ax.text(1, GPU_16 / 2**30 + 0.3, "16 GiB GPU", fontsize=10)
ax.set_xlabel("conversation length (K tokens, 1K = 1024)")
ax.set_ylabel("GPU memory (GiB)")
ax.set_ylim(0, 40)
ax.set_title("weights + KV cache at batch 1")
ax.legend(loc="upper left")
plt.show()

# %%
m8 = load_model("llama-3-8b")
fits_fp16 = max_context(m8, GPU_16)
fits_int8 = max_context(m8, GPU_16, weight_dtype="int8")
m7 = load_model("llama-2-7b")
display(
    Markdown(
        f"**Llama-3-8B on a 16 GiB GPU**: {m8.params / 1e9:.2f} B parameters are {m8.weight_bytes() / 1e9:.2f} GB in "
        f"fp16, leaving room for **{fits_fp16:,} tokens** of fp16 KV cache ({m8.kv_bytes_per_token() // 1024} KiB each) at "
        f"batch 1, before activations and the CUDA context. With int8 weights: {fits_int8:,} tokens, beyond the "
        f"{m8.max_position_embeddings:,} the model was trained for. Llama-2-7B has no GQA: "
        f"{m7.kv_bytes_per_token() // 1024} KiB per token, so even with int8 weights a single conversation of "
        f"{max_context(m7, GPU_16, weight_dtype='int8'):,} tokens exhausts the card."
    )
)
