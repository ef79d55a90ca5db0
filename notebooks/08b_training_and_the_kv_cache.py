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
# # Lecture 8b — Real attention II: the backward pass, Figure 2 and the KV cache
#
# Training and serving: the backward pass (FlashAttention-1's Algorithm 4 beside FlashAttention-2's),
# Figure 2 of the paper reproduced and measured on the H200, and how long a conversation fits.

# %% [markdown] slideshow={"slide_type": "notes"}
# Lecture 8 counted the forward pass of real models. Training adds the backward pass, which the paper's
# Figure 2 measures together with the forward; serving keeps K and V of every generated token in a
# cache, which ends with the question users ask most: how long a conversation fits on my GPU?

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Compare the standard backward (Algorithm 3), FlashAttention-1's (Algorithm 4) and
#   FlashAttention-2's: loop order, what each recomputes, and the traffic each moves.
# - Read the paper's Figure 2 against the model and an H200 measurement.
# - Size the KV cache of a real model, with GQA, a sliding window and the model's context limit.
#
# **Prerequisites**: Lecture 4 (tiles Br × Bc, FA1/FA2 traffic) and Lecture 8 (GQA); what a backward
# pass computes (dQ, dK, dV from dO); what a decoder LLM's layers, heads and KV cache are.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---:|---|
# | 3 | What the forward count leaves out: training and the cache |
# | 14 | 1. The backward pass: Algorithm 3, Algorithm 4 and FlashAttention-2's |
# | 12 | 2. Figure 2 of the paper, reproduced and measured on the H200 |
# | 8 | 3. The KV cache: how long a conversation fits |
# | 3 | Summary |
# | 10 | Exercises |

# %% slideshow={"slide_type": "skip"}
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from course import charts
from evidence import claims, paper
from evidence.figure2 import FIGURE2, figure2_flops, figure2_h200, figure2_left
from simlib import Workload, count, load_preset
from simlib.kvcache import load_model, max_context, memory_table, model_keys
from simlib.schedules import fa2_torch

charts.use_style()
H200 = load_preset("h200")
SRAM = H200.sram_bytes
GIB = 2**30

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The backward pass: materialised vs recomputed
#
# Standard backward (the paper's Algorithm 3) reads the saved N×N matrix P and writes and reads dP and
# dS: Θ(N²) traffic. FlashAttention's backward (Algorithm 4) saved only O and the row statistics ℓ, m;
# it recomputes S and P tile by tile (10·N²·d FLOPs instead of 8·N²·d) and moves Θ(N²d²/M).

# %%
rows = []
for n in (1024, 4096, 16384):
    w = Workload(n, 64)
    std, fl = count("naive_bwd", w), count("flash_bwd", w, sram_bytes=SRAM)
    rows.append(
        {
            "N": n,
            "standard bwd HBM (MB)": std.hbm_bytes / 1e6,
            "flash bwd HBM (MB)": fl.hbm_bytes / 1e6,
            "traffic ratio": std.hbm_bytes / fl.hbm_bytes,
            "standard GFLOP": std.flops / 1e9,
            "flash GFLOP (recompute)": fl.flops / 1e9,
        }
    )
pd.DataFrame(rows).round(2)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### FlashAttention-2's backward, next to Algorithm 4
#
# |  | FlashAttention-1 (Algorithm 4) | FlashAttention-2 (PyTorch's kernels) |
# |---|---|---|
# | loop order | outer over K/V blocks j, inner over Q blocks i; one thread block per (b, h) | the same nest, one thread block per K/V block (seqk-parallel) |
# | saved by the forward | O, ℓ, m | O, the logsumexp L |
# | recomputes | S_ij = Q_iK_jᵀ, P_ij from ℓ_i and m_i | S_ij, P_ij = exp(S_ij − L_i); D_i = rowsum(dO_i∘O_i) once, in a kernel of its own |
# | per visit of a Q block | reads Q_i, O_i, dO_i, dQ_i, ℓ_i, m_i; writes dQ_i | reads Q_i, dO_i, L_i, D_i; adds into an fp32 dQ (a read and a write) |
# | afterwards | writes dK_j, dV_j | writes dK_j, dV_j; a third kernel turns dQ into fp16 |

# %% [markdown] slideshow={"slide_type": "notes"}
# Both recompute S and P instead of reading them: that is what makes the backward Θ(N²d²/M)-ish
# instead of Θ(N²). FA2 saves one statistic instead of two and never reads O in the main loop (D
# replaces it), but its K/V blocks are small (128 rows at d = 64) so that many thread blocks run at once,
# and its dQ goes through fp32 atomics. The chart under this slide counts what that costs in bytes.

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="HBM bytes per tensor of the backward pass at N = 4096, d = 64: FlashAttention-1's Algorithm 4 against FlashAttention-2's kernels, whose fp32 dQ accumulator and smaller K/V blocks move more bytes"
W_BWD = Workload(4096, 64)
alg4 = count("flash_bwd", W_BWD, sram_bytes=SRAM)
torch_step = count("fa2_torch", W_BWD)
fa1_by_tensor = alg4.traffic.frame(W_BWD.element_bytes).groupby("tensor").bytes.sum()
step = torch_step.traffic.frame(W_BWD.element_bytes)
fa2_by_tensor = step[step.phase != "fwd"].groupby("tensor").bytes.sum()  # the backward's three kernels
bwd_once = fa2_torch.kernel_once(W_BWD, torch_step.mapping).frame(W_BWD.element_bytes)
fa2_once = bwd_once[bwd_once.phase != "fwd"].bytes.sum()

tensors = sorted(set(fa1_by_tensor.index) | set(fa2_by_tensor.index), key=str.lower)
x = np.arange(len(tensors))
fig, ax = plt.subplots(figsize=(10, 4.2))
for offset, (label, by_tensor, color) in enumerate(
    (
        (f"FA1, Algorithm 4 (Bc = {alg4.block_cols}, Tc = {alg4.tc})", fa1_by_tensor, charts.COLORS["fa1"]),
        (
            f"FA2, PyTorch ({torch_step.mapping.summary().split('; ')[1]})",
            fa2_by_tensor,
            charts.COLORS["fa2"],
        ),
    )
):
    ax.bar(
        x + (offset - 0.5) * 0.4, [by_tensor.get(t, 0) / 1e6 for t in tensors], 0.4, label=label, color=color
    )
ax.set_xticks(x, tensors)
ax.set_xlabel("tensor (l, m, L, D: fp32 row statistics; dQ_acc: FA2's fp32 dQ accumulator)")
ax.set_ylabel("HBM traffic (MB, every access)")
ax.set_title(
    f"The backward pass at N = {W_BWD.seq_len}, d = {W_BWD.head_dim}, fp16, one head ({H200.name} tiles for FA1)"
)
ax.legend(fontsize=9)
charts.name_device_memory(ax, H200)
plt.show()
assert alg4.flops == 10 * W_BWD.seq_len**2 * W_BWD.head_dim  # both recompute S: 10·N²·d

# %% slideshow={"slide_type": "notes"}
fa1_total, fa2_total = fa1_by_tensor.sum(), fa2_by_tensor.sum()
display(
    Markdown(
        f"Counting every access, FA2's backward moves {fa2_total / 1e6:.1f} MB against Algorithm 4's "
        f"{fa1_total / 1e6:.1f} MB ({fa2_total / fa1_total:.1f}×): {fa2_by_tensor['dQ_acc'] / fa2_total:.0%} of "
        f"its bytes are the fp32 dQ accumulator, read and written on every visit, and its "
        f"{-(-W_BWD.seq_len // fa2_torch.BWD_BLOCK)} K/V blocks of {fa2_torch.BWD_BLOCK} rows re-read Q and dO "
        f"more often than Algorithm 4's {alg4.tc}. What it buys is parallelism: one thread block per K/V block "
        f"instead of one per head. If the L2 serves every re-read inside a kernel (each kernel moves each "
        f"tensor once), its backward moves {fa2_once / 1e6:.1f} MB."
    )
)

# %% tags=["remove-input"] slideshow={"slide_type": "slide"}
a100 = load_preset("a100-40gb")
paper_m = a100.level("SRAM").capacity_bytes
paper_a100 = paper.section("section_2_1_a100")
assert paper_m == paper_a100["sram_per_sm_kb"] * 1024  # the preset's L1 + shared array is the paper's M
display(
    Markdown(
        f"## 2. Figure 2 (left) of the FlashAttention paper, reproduced\n\n"
        f"The paper's configuration is that of its benchmark script (`data/papers.json`, "
        f"`figure_2_left.configuration`, each number cited): B = {FIGURE2.batch}, H = {FIGURE2.heads}, "
        f"N = {FIGURE2.seq_len}, d = {FIGURE2.head_dim}, {FIGURE2.dtype}, **not causal**, dropout, a key-padding "
        f"mask, forward + backward. *Standard* = `attention_ref` as that script writes it, one kernel per "
        f"operation on the padded batch; *FlashAttention* = that commit's CUDA kernel (`fa1_2022`) on the "
        f"unpadded tokens; the paper's Algorithms 1 + 4 for contrast, with the paper's M = "
        f"{paper_m // 1024} KiB. GB = 10⁹ B."
    )
)

# %% slideshow={"slide_type": "subslide"}
fig2 = figure2_left(sram_bytes=paper_m)
columns = ["attention", "model_hbm_gb", "paper_hbm_gb", "model_over_paper", "model_gflop", "paper_gflop"]
fig2[columns].round(2)

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
f2 = fig2.set_index("attention")
std_row, fa_row = f2.loc["standard"], f2.loc["FlashAttention"]
flops = figure2_flops().set_index("attention")
per_block = figure2_left(sram_bytes=a100.sram_bytes).set_index("attention").loc["Algorithms 1 + 4"]
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
        f"workload's own count, so it cannot be this workload's total.\n\n"
        f'**Which M?** The paper sizes its tiles with "{paper_a100["sram_per_sm_kb"]} KB of on-chip SRAM per SM" '
        f"({paper_a100['citation']}): {paper_m:,} B = {paper_m // 1024} KiB, the A100 preset's `capacity_bytes`, "
        f"the combined L1 + shared-memory array (NVIDIA's KB are 1024 B). Lectures 1 and 4 "
        f"use {a100.sram_bytes:,} B = {a100.sram_bytes // 1024} KiB, the preset's `max_shared_per_block_bytes`: "
        f"what one thread block can really allocate, so what a kernel's tiles must fit. This table uses the "
        f"paper's {paper_m // 1024} KiB because it reproduces the paper's algorithms as the paper sized them; "
        f"with {a100.sram_bytes // 1024} KiB the Algorithms 1 + 4 row would move {per_block['model_hbm_gb']:.2f} GB "
        f"instead of {f2.loc['Algorithms 1 + 4', 'model_hbm_gb']:.2f} GB (tiles {int(per_block['block_rows'])}×"
        f"{int(per_block['block_cols'])} instead of {int(f2.loc['Algorithms 1 + 4', 'block_rows'])}×"
        f"{int(f2.loc['Algorithms 1 + 4', 'block_cols'])})."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The same step on the H200
#
# One forward + backward step of `attention_ref` and of PyTorch's FlashAttention-2 kernels, under Nsight
# Compute (DRAM bytes summed over every kernel of the step, caches flushed between kernels;
# `data/measurements/current/figure2_h200.csv`), next to the paper and the model of the kernels that ran
# (PyTorch's today, not the 2022 ones).

# %%
h200_fig2 = figure2_h200()
columns = ["attention", "dropout", "paper_gb", "h200_dram_gb", "model_h200_dram_gb", "paper_ms", "h200_ms"]
h200_fig2[columns].round(2).astype(object).fillna("—")  # no paper number for the padded SDPA run

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
h = h200_fig2[h200_fig2.dropout > 0].set_index("attention")
fewer = {  # standard over FlashAttention bytes of the step
    "in the paper": std_row["paper_hbm_gb"] / fa_row["paper_hbm_gb"],
    "in the model of the 2022 kernels": std_row["model_hbm_gb"] / fa_row["model_hbm_gb"],
    "on the H200 today": h.loc["standard", "h200_dram_gb"] / h.loc["FlashAttention", "h200_dram_gb"],
}
assert all(
    10**0.5 < x < 10**1.5 for x in fewer.values()
)  # what the summary says: about an order of magnitude
display(
    Markdown(
        f"With dropout, the H200 read and wrote {h.loc['standard', 'h200_dram_gb']:.1f} GB for standard attention "
        f"and {h.loc['FlashAttention', 'h200_dram_gb']:.2f} GB for FlashAttention-2 "
        f"({h.loc['standard', 'h200_dram_gb'] / h.loc['FlashAttention', 'h200_dram_gb']:.0f}× less); the model of "
        f"the kernels PyTorch launches today is within "
        f"{(h200_fig2['model_h200_over_measured'] - 1).abs().max() * 100:.1f} % of every measured step. The step took "
        f"{h.loc['standard', 'h200_ms']:.1f} ms and {h.loc['FlashAttention', 'h200_ms']:.1f} ms "
        f"(standard `attention_ref` vs PyTorch's FlashAttention-2, both fp16: "
        f"{h.loc['standard', 'h200_ms'] / h.loc['FlashAttention', 'h200_ms']:.1f}×; the paper's A100: "
        f"{h.loc['standard', 'paper_ms']} and {h.loc['FlashAttention', 'paper_ms']} ms). Standard attention moves "
        + ", ".join(f"{x:.1f}× the bytes {where}" for where, x in fewer.items())
        + ": the order of magnitude is robust, the exact ratio is not."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# An order of magnitude fewer bytes is the robust lesson; the absolute GB and the exact ratio depend on which
# kernels run and whether the L2 serves the re-reads inside a kernel. Cut for time and left to
# `python -m simlib figure2`: the per-kernel terms of the standard step (`figure2_terms`) and the same
# workload with a causal mask (`CAUSAL_EXTRA`).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The KV cache: how one long conversation fills a GPU
#
# Every generated token stores its K and V in every layer: 2·layers·H_kv·d·bytes per token. Parameters
# are computed from each model's published config (`data/models/`, with sources). Device-memory sizes
# (weights, cache, the GPU) are in GiB here, per-token sizes in KiB.

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
            "weights fp16 (GiB)": m.weight_bytes("fp16") / GIB,
            "context (tokens)": m.max_position_embeddings,
            "sliding window (tokens)": m.sliding_window or "—",
        }
    )
pd.DataFrame(kv_rows).round(2)

# %% tags=["remove-input"] slideshow={"slide_type": "slide"} alt="GPU memory in GiB for fp16 weights plus fp16 KV cache against conversation length for Llama-2-7B, Llama-3-8B and Mistral-7B at batch 1 and 8: each curve stops at the model's context, Mistral's flattens at its sliding window; a line marks the T4's memory"
T4 = load_preset("t4")
fig, ax = plt.subplots(figsize=(7.2, 4.4))
for key in ("llama-2-7b", "llama-3-8b", "mistral-7b"):
    m = load_model(key)
    contexts = np.arange(0, m.max_position_embeddings + 1, 256)
    for batch, ls in ((1, "-"), (8, "--")):
        color = ax.lines[-1].get_color() if batch > 1 else None  # batch 8 in its model's colour
        gib = memory_table(m, contexts, batch=batch)["total_bytes"] / GIB
        ax.plot(contexts / 1024, gib, ls=ls, color=color, label=f"{m.name}, B = {batch}")
t4_gib = T4.level("HBM").capacity_bytes / GIB
usable_gib = claims.usable_bytes("t4") / GIB  # what CUDA exposes with ECC on, the T4's default
ax.axhline(t4_gib, color="black", lw=1, ls=":")
ax.axhline(usable_gib, color="black", lw=1)
ax.text(
    0.98,
    t4_gib + 0.2,
    f"{T4.name}: {t4_gib:.0f} GiB on the box",
    ha="right",
    transform=ax.get_yaxis_transform(),
)
ax.text(
    0.98,
    usable_gib - 0.9,
    f"with ECC on: {usable_gib:.1f} GiB",
    ha="right",
    transform=ax.get_yaxis_transform(),
)
ax.set_xlabel("conversation length (K tokens, 1K = 1024)")
ax.set_ylabel("fp16 weights + fp16 KV cache (GiB)")
ax.set_title("each curve stops at the model's context; Mistral's cache stops at its window", fontsize=10)
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
plt.show()

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
m8, m7, mistral = load_model("llama-3-8b"), load_model("llama-2-7b"), load_model("mistral-7b")
t4_nominal = T4.level("HBM").capacity_bytes
t4_bytes = claims.usable_bytes("t4")  # with ECC on, the T4's default (data/hardware/t4.json)
fits_fp16 = max_context(m8, t4_bytes)
fits_nominal = max_context(m8, t4_nominal)
r_claim = claims.claim_r("llama-3-8b", "t4")  # the same GPU and model, with the context and activations
assert r_claim.tokens_weights_only == fits_fp16 == 0 and m8.weight_bytes() > t4_bytes
at_context = memory_table(m7, [m7.max_position_embeddings], batch=8)["total_bytes"].item()
windowed = memory_table(mistral, [mistral.max_position_embeddings])["kv_cache_bytes"].item()
# what the prose below says: Llama-3-8B's weights alone do not fit what the T4 exposes (its context would
# fit the 16 GiB on the box); Llama-2-7B's context fits at batch 1, not at batch 8
assert fits_nominal >= m8.max_position_embeddings and at_context > t4_bytes
assert memory_table(m7, [m7.max_position_embeddings])["total_bytes"].item() <= t4_bytes
display(
    Markdown(
        f"**Llama-3-8B on the {T4.name}**: {m8.params / 1e9:.2f} B parameters are "
        f"{m8.weight_bytes() / 2**20:,.0f} MiB in fp16, more than the {t4_bytes / 2**20:,.0f} MiB of its "
        f"{t4_nominal / GIB:.0f} GiB that CUDA exposes with ECC on (the T4's default): **no token** of KV cache "
        f"fits, before the activations and the CUDA context, and claim (r) of Lecture 6 holds. With ECC off the "
        f"whole 16 GiB would leave room for {fits_nominal:,} tokens ({m8.kv_bytes_per_token() // 1024} KiB each) at "
        f"batch 1, just above its {m8.max_position_embeddings:,}-token context, until the CUDA context measured on "
        f"the H200 ({charts.fmt_bytes(r_claim.context_bytes)}) and one {r_claim.chunk_tokens}-token prefill chunk's "
        f"activations ({charts.fmt_bytes(r_claim.prefill_activation_bytes)}) take that away. Llama-2-7B has no GQA "
        f"({m7.kv_bytes_per_token() // 1024} KiB per token) but only a {m7.max_position_embeddings:,}-token "
        f"context: at batch 1 it fits, at batch 8 its full context needs {at_context / GIB:.1f} GiB. Mistral-7B "
        f"attends a sliding window of {mistral.sliding_window:,} tokens, and its rolling-buffer cache keeps only "
        f"that window: at {mistral.max_position_embeddings:,} tokens its cache is {windowed / GIB:.2f} GiB, "
        f"not {mistral.max_position_embeddings * mistral.kv_bytes_per_token() / GIB:.0f} GiB."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - The FlashAttention backward recomputes S and P (10·N²·d FLOPs instead of 8·N²·d) to avoid Θ(N²)
#   traffic. Algorithm 4 and FlashAttention-2 share the loop order (K/V blocks outside, Q blocks inside);
#   FA2 saves one statistic, precomputes D = rowsum(dO∘O), runs one thread block per K/V block and
#   accumulates dQ in fp32: more bytes per access counted, far more parallelism.
# - In Figure 2's step FlashAttention moves about an order of magnitude fewer bytes than standard
#   attention in the paper, the model and on the H200; the GB and the exact ratio depend on the kernels
#   and the L2.
# - The KV cache is 2·layers·H_kv·d·bytes per token, capped by a sliding window; a model's context
#   limit and the batch decide whether it fills the GPU.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Each hidden cell computes the answer with `simlib` and checks it against a derivation by hand.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1 — Algorithm 4 by hand
#
# FlashAttention-1's backward at N = 2048, d = 64 in fp16 with the H200's tiles (Bc = ⌈M/4d⌉). From its
# loop nest (K_j, V_j read once; per K/V block Q_i, O_i, dO_i, dQ_i and ℓ_i, m_i read, dQ_i written;
# dQ, dK, dV initialised; dK_j, dV_j written), compute the bytes read and written. Check with `count()`.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
n1, d1 = 2048, 64
m1 = SRAM // 2
tc1 = -(-n1 // -(-m1 // (4 * d1)))
reads1 = 2 * (2 * n1 * d1 + tc1 * 4 * n1 * d1) + 4 * tc1 * 2 * n1  # fp16 K, V, Q, O, dO, dQ; fp32 ℓ, m
writes1 = 2 * (3 * n1 * d1 + tc1 * n1 * d1 + 2 * n1 * d1)  # dQ, dK, dV init; dQ per block; dK, dV
r1 = count("flash_bwd", Workload(n1, d1), sram_bytes=SRAM)
assert r1.tc == tc1 and (r1.hbm_read_bytes, r1.hbm_write_bytes) == (reads1, writes1)
print(f"Tc = {tc1}: {reads1:,} B read, {writes1:,} B written")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2 — FlashAttention-2's backward by hand
#
# The same N = 2048, d = 64, as PyTorch's kernels run it: D = rowsum(dO∘O) and the fp32 dQ accumulator
# zeroed; one thread block per K/V block of 128 rows, each reading K_j, V_j once and, for every Q block,
# Q_i, dO_i (fp16), L_i, D_i and dQ_i (fp32) and writing dQ_i back; dK, dV written once; dQ converted to
# fp16. Compute the backward's bytes, compare with `count("fa2_torch", ...)` without its forward
# phase, and say by what factor they exceed Exercise 1's.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
t2 = -(-n1 // 128)
nd = n1 * d1
dot_do_o = 2 * (2 * nd) + 4 * n1 + 4 * nd  # read dO, O; write D (fp32); zero the fp32 accumulator
main = (
    2 * (2 * nd) + t2 * (2 * 2 * nd + 4 * 2 * n1 + 2 * 4 * nd) + 2 * (2 * nd)
)  # K, V; per K/V block; dK, dV
convert = 4 * nd + 2 * nd  # read the accumulator, write dQ in fp16
by_hand2 = dot_do_o + main + convert
frame2 = count("fa2_torch", Workload(n1, d1)).traffic.frame(2)
assert frame2[frame2.phase != "fwd"].bytes.sum() == by_hand2
print(f"FA2's backward: {by_hand2:,} B, {by_hand2 / (reads1 + writes1):.2f}× Algorithm 4's")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3 — a batch of long conversations on the H200
#
# How much memory do fp16 weights plus an fp16 KV cache need for a batch of 32 conversations, each at
# the model's full context, for each model of section 6? Which fit in the H200's memory? Derive the
# cache from 2·layers·H_kv·d·2 B per token, remembering Mistral's window.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
capacity, batch = H200.level("HBM").capacity_bytes, 32
for key in model_keys():
    m = load_model(key)
    total = memory_table(m, [m.max_position_embeddings], batch=batch)["total_bytes"].item()
    cached = min(m.max_position_embeddings, m.sliding_window or m.max_position_embeddings)
    cache = batch * cached * 2 * m.num_hidden_layers * m.num_key_value_heads * m.head_dim * 2
    assert total == cache + m.weight_bytes("fp16")
    print(f"{m.name}: {total / GIB:.1f} GiB at {m.max_position_embeddings:,} tokens × {batch} "
          f"({'fits' if total <= capacity else 'does not fit'} in {capacity / GIB:.0f} GiB)")  # fmt: skip
