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
# # Lecture 1 — The memory hierarchy: a warehouse and a workbench
#
# *Why FlashAttention is fast* starts with a question that has nothing to do with attention:
# **where do the numbers live while the GPU computes with them?**
#
# - **HBM** (high-bandwidth memory) is the *warehouse*: tens of gigabytes, far away.
# - **SRAM** (shared memory, on the chip) is the *workbench*: a few hundred kilobytes per thread
#   block, right next to the arithmetic units.
#
# Every number in this lecture comes from the hardware presets in `data/hardware/` (each with its
# source) and from the exact traffic model in `simlib`.

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: open with the analogy before any formula. The warehouse is huge but every trip costs
# time; the workbench is tiny but free to reach. Ask the class: which one limits a carpenter who
# builds something simple from many parts? (The trips.)

# %% slideshow={"slide_type": "skip"}
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from simlib import Workload, count, load_preset, preset_keys, roofline
from simlib.lectures import charts, intensity
from simlib.reproduce import FIGURE2, figure2_h200_intensity

charts.use_style()
N, D = 4096, 64  # the running example: 4K tokens, head dimension 64, fp16
GPUS = preset_keys()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The presets: capacities and bandwidths
#
# One row per GPU. "SRAM per block" is what one thread block may allocate (the *M* of the
# FlashAttention paper); "SRAM per SM" is the whole on-chip array of one streaming multiprocessor.
# Bandwidths are decimal (1 TB/s = 10¹² B/s), capacities binary (1 GiB = 2³⁰ B).


# %%
def preset_row(key):
    hw = load_preset(key)
    sram, l2, hbm = hw.level("SRAM"), hw.level("L2"), hw.level("HBM")
    return {
        "GPU": hw.name,
        "SMs": hw.sm_count,
        "SRAM per block (KiB)": hw.sram_bytes / 2**10,
        "SRAM per SM (KiB)": sram.capacity_bytes / 2**10,
        "SRAM, all SMs (MiB)": sram.capacity_bytes * hw.sm_count / 2**20,
        "SRAM bandwidth, all SMs (TB/s)": sram.bandwidth_bytes_per_s / 1e12,
        "L2 (MiB)": l2.capacity_bytes / 2**20,
        "HBM (GiB)": hbm.capacity_bytes / 2**30,
        "HBM bandwidth (TB/s)": hbm.bandwidth_bytes_per_s / 1e12,
        "fp16 peak (TFLOP/s)": hw.peak_flops["fp16"] / 1e12,
    }


presets = pd.DataFrame([preset_row(k) for k in GPUS], index=GPUS)
presets.round(2)

# %% tags=["remove-input"]
h200 = load_preset("h200")
row = presets.loc["h200"]
display(
    Markdown(
        f"**On the {h200.name}** the warehouse holds {row['HBM (GiB)']:.0f} GiB; the workbench of one "
        f"thread block holds {row['SRAM per block (KiB)']:.0f} KiB — the warehouse is "
        f"{h200.level('HBM').capacity_bytes / h200.sram_bytes:,.0f}× bigger. Even all "
        f"{h200.sm_count} SMs' on-chip arrays together ({row['SRAM, all SMs (MiB)']:.0f} MiB) are "
        f"{row['HBM (GiB)'] * 1024 / row['SRAM, all SMs (MiB)']:,.0f}× smaller than HBM. "
        f"But the workbench is fast: {row['SRAM bandwidth, all SMs (TB/s)']:.1f} TB/s summed over the SMs "
        f"against {row['HBM bandwidth (TB/s)']:.1f} TB/s from HBM, "
        f"{row['SRAM bandwidth, all SMs (TB/s)'] / row['HBM bandwidth (TB/s)']:.1f}× more."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: point at the two ratios the cell printed: capacity (HBM ≫ SRAM, thousands of
# times) and bandwidth (SRAM ≫ HBM, several times). The whole course lives between those two facts.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The roofline: arithmetic or trips?
#
# A kernel does *F* floating-point operations and moves *B* bytes to and from HBM. It cannot finish
# faster than either
#
# $$ t \;\ge\; \max\!\left(\frac{F}{\text{peak FLOP/s}},\; \frac{B}{\text{HBM bandwidth}}\right). $$
#
# Divide by *t*: the attainable speed is $\min(\text{peak},\; I \cdot \text{bandwidth})$ with the
# **arithmetic intensity** $I = F / B$ (FLOP per HBM byte). Below the *ridge point*
# $I^* = \text{peak} / \text{bandwidth}$ a kernel waits for the warehouse; above it, for the
# arithmetic units.


# %%
def attention_points(key, n=N, d=D):
    """Naive and FlashAttention-2 at (n, d) in fp16 on preset `key`: FLOPs, HBM bytes, intensity."""
    hw = load_preset(key)
    w = Workload(n, d)
    out = {}
    for algorithm in ("naive", "fa2"):
        r = count(algorithm, w) if algorithm == "naive" else count(algorithm, w, sram_bytes=hw.sram_bytes)
        out[algorithm] = roofline(r, hw)
    return out


points = {key: attention_points(key) for key in GPUS}
pd.DataFrame(
    {
        key: {
            "ridge point (FLOP/B)": p["naive"].ridge_point,
            "naive intensity (FLOP/B)": p["naive"].arithmetic_intensity,
            "fa2 intensity (FLOP/B)": p["fa2"].arithmetic_intensity,
        }
        for key, p in points.items()
    }
).T.round(1)

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(2, 3, figsize=(13, 8), sharex=True)
for ax, key in zip(axes.flat, GPUS):
    p = points[key]
    charts.plot_roofline(
        ax,
        load_preset(key),
        "fp16",
        points=[
            ("naive", p["naive"].arithmetic_intensity, charts.COLORS["naive"]),
            ("fa2", p["fa2"].arithmetic_intensity, charts.COLORS["fa2"]),
        ],
    )
for ax in axes[0]:
    ax.set_xlabel("")
fig.suptitle(
    f"HBM roofline per GPU, fp16; attention at N = {N}, d = {D} "
    "(the intensity does not depend on batch or heads)",
    fontsize=13,
)
plt.show()

# %% tags=["remove-input"]
p = points["h200"]
left = [key for key in GPUS if points[key]["naive"].arithmetic_intensity < points[key]["naive"].ridge_point]
display(
    Markdown(
        f"At N = {N}, d = {D}, naive attention does {p['naive'].arithmetic_intensity:.0f} FLOP per HBM byte and "
        f"FlashAttention-2 with its default tiles {p['fa2'].arithmetic_intensity:.0f}, while the {h200.name} "
        f"needs {p['naive'].ridge_point:.0f} FLOP per byte in fp16 to keep its tensor cores busy. Naive attention "
        f"sits left of the ridge on {len(left)} of the {len(GPUS)} presets: it is limited by HBM bandwidth, and "
        f"the kernel that moves fewer bytes wins. Where FlashAttention lands is the punchline of the next slide."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: the memory-bound slope of the roof is 1 on log–log axes (speed ∝ intensity). Moving a
# kernel right along the roof means fewer bytes for the same FLOPs. That is exactly what tiling does.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The punchline: FlashAttention turns attention compute bound
#
# The same intensity for naive attention, FlashAttention-1 (Algorithm 1's tiles) and
# FlashAttention-2 (its default tiles) as N grows, against the H200's two ridges: fp16 on the tensor
# cores (what FlashAttention runs on) and fp32 on the CUDA cores (what our numba teaching kernels run
# on). The dashed line is FlashAttention-2 if the L2 absorbed every K/V re-read: the compulsory
# traffic (Q, K, V read once, O written once), a limit — this model has no L2 level; Lecture 5
# measures how much of it the H200's L2 really absorbs.

# %%
sweep = intensity.intensity_sweep("h200", seq_lens=tuple(2**k for k in range(8, 17)), head_dim=D)
measured = figure2_h200_intensity()  # ncu DRAM bytes of one fwd+bwd step, Figure 2 config
fig, ax = plt.subplots(figsize=(9.5, 5.2))
intensity.plot_intensity(ax, sweep, h200, charts.COLORS, charts.LABELS)
for variant, name, marker in (("standard", "naive", "X"), ("fa2_varlen", "fa2", "*")):
    m = measured[(measured.variant == variant) & (measured.dropout > 0)]
    ax.plot(
        [FIGURE2.seq_len],
        m.flop_per_dram_byte,
        marker,
        ms=14,
        color=charts.COLORS[name],
        label=f"measured on the H200: {variant}, fwd+bwd, Figure 2 config (ncu DRAM bytes)",
    )
charts.tokens_axis(ax, sorted(sweep.N.unique()))
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, fontsize=9)
plt.show()

# %% tags=["remove-input"]
mm = measured[measured.dropout > 0].set_index("variant")
display(
    Markdown(
        f"Measured, not modelled: one forward + backward step in the paper's Figure 2 configuration on the H200 "
        f"(N = {FIGURE2.seq_len}, B = {FIGURE2.batch}, H = {FIGURE2.heads}, fp16, Nsight Compute's DRAM bytes): "
        f"standard attention {mm.loc['standard', 'flop_per_dram_byte']:.0f} FLOP per DRAM byte at "
        f"{mm.loc['standard', 'dram_tb_per_s']:.1f} TB/s, FlashAttention-2 "
        f"{mm.loc['fa2_varlen', 'flop_per_dram_byte']:.0f} FLOP per DRAM byte at "
        f"{mm.loc['fa2_varlen', 'tflop_per_s']:.0f} TFLOP/s — right of the {h200.name}'s "
        f"{intensity.ridge(h200, 'fp16'):.0f} FLOP/B ridge: the L2 does absorb the re-reads."
    )
)

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(2, 2, figsize=(13, 8.5), sharex=True, sharey=True)
for ax, key in zip(axes.flat, intensity.DATACENTER_GPUS):
    intensity.plot_intensity(
        ax, intensity.intensity_sweep(key, head_dim=D), load_preset(key), charts.COLORS, charts.LABELS
    )
    charts.tokens_axis(ax, intensity.SWEEP_SEQ_LENS, label="N (tokens)" if ax in axes[1] else "")
    ax.set_title(load_preset(key).name)
handles, labels = axes.flat[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=9, bbox_to_anchor=(0.5, -0.06))
fig.suptitle(f"Every data-centre preset, d = {D}, fp16: the same story against each GPU's two ridges")
plt.show()

# %% slideshow={"slide_type": "subslide"}
punch = intensity.intensity_table(seq_len=N, head_dim=D)
punch[
    [
        "gpu",
        "schedule",
        "tiles",
        "FLOP per HBM byte",
        "ridge fp16 (FLOP/B)",
        "ridge fp32 (FLOP/B)",
        "fp16 tensor cores",
        "fp32 CUDA cores",
    ]
].round(1)

# %% tags=["remove-input"]
h = punch[punch.gpu == h200.name].set_index("schedule")
bound = {name: h.loc[name, "fp16 tensor cores"] for name in h.index}
across = [charts.LABELS[n] for n in ("fa1", "fa2") if bound[n] == "compute bound"]
crossing = (
    "Tiling moves attention right, across the ridge (" + ", ".join(across) + ")"
    if across
    else "Tiling moves attention right, though not across the ridge"
)
if bound["fa2"] != "compute bound" and bound[intensity.L2_LIMIT] == "compute bound":
    crossing += "; FlashAttention-2 crosses it once the L2 serves its K/V re-reads"
crossing += ": from waiting on HBM towards waiting on the tensor cores."
display(
    Markdown(
        f"On the {h200.name} at N = {N} (fp16): naive {h.loc['naive', 'FLOP per HBM byte']:.0f} FLOP/B is "
        f"**{bound['naive']}**; FlashAttention-1 {h.loc['fa1', 'FLOP per HBM byte']:.0f} FLOP/B is "
        f"**{bound['fa1']}**; FlashAttention-2 {h.loc['fa2', 'FLOP per HBM byte']:.0f} FLOP/B "
        f"({h.loc['fa2', 'tiles']} tiles, counting every K/V re-read from HBM) is **{bound['fa2']}**, and "
        f"{h.loc[intensity.L2_LIMIT, 'FLOP per HBM byte']:.0f} FLOP/B if the L2 absorbs the re-reads "
        f"(**{bound[intensity.L2_LIMIT]}**) — against a ridge of {h.loc['naive', 'ridge fp16 (FLOP/B)']:.0f} "
        f"FLOP/B. {crossing} In fp32 the ridge is only {h.loc['naive', 'ridge fp32 (FLOP/B)']:.1f} FLOP/B and even "
        f"naive attention is **{h.loc['naive', 'fp32 CUDA cores']}**: on CUDA cores the bytes matter much less, "
        f"which is why our fp32 kernels (Lecture 5) gain less than the posts' 2–4×."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Why the trips, not the arithmetic, cost the time
#
# The same two kernels on the H200, one head: how long the arithmetic takes at peak, how long the
# HBM traffic takes at full bandwidth.

# %%
w = Workload(N, D)
results = {"naive": count("naive", w), "fa2": count("fa2", w, sram_bytes=h200.sram_bytes)}
times = pd.DataFrame(
    {
        name: {
            "FLOPs (G)": r.flops / 1e9,
            "HBM traffic (MB)": r.hbm_bytes / 1e6,
            "arithmetic at peak (µs)": roofline(r, h200).compute_s * 1e6,
            "HBM trips at full bandwidth (µs)": roofline(r, h200).level_s["HBM"] * 1e6,
        }
        for name, r in results.items()
    }
).T
times.round(2)

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(8, 3.2))
bars = [
    (f"{name}: {what}", times.loc[name, column], color)
    for name in times.index
    for what, column, color in (
        ("arithmetic", "arithmetic at peak (µs)", "#aaaaaa"),
        ("HBM trips", "HBM trips at full bandwidth (µs)", charts.COLORS[name]),
    )
]
ax.barh([b[0] for b in bars], [b[1] for b in bars], color=[b[2] for b in bars])
for y, (_, v, _) in enumerate(bars):
    ax.text(v, y, f" {v:.1f} µs", va="center", fontsize=10)
ax.invert_yaxis()
ax.set_xlabel(f"time (µs, one head, N = {N}, d = {D}, fp16)")
ax.set_title(f"{h200.name}: the same arithmetic, different trips")
ax.set_xlim(0, max(b[1] for b in bars) * 1.2)
ax.grid(axis="y", visible=False)
plt.show()

# %% tags=["remove-input"]
naive_table = results["naive"].table()
hbm = naive_table[naive_table.level == "HBM"]
sp_share = hbm[hbm.tensor.isin(["S", "P"])].bytes.sum() / hbm.bytes.sum()
t = times.loc["naive"]
display(
    Markdown(
        f"Naive attention's arithmetic takes {t['arithmetic at peak (µs)']:.1f} µs, its HBM trips "
        f"{t['HBM trips at full bandwidth (µs)']:.1f} µs — "
        f"{t['HBM trips at full bandwidth (µs)'] / t['arithmetic at peak (µs)']:.1f}× longer. "
        f"{sp_share:.1%} of those bytes are the N×N score matrix S and the probabilities P going to HBM "
        f"and coming back. FlashAttention does the **same {t['FLOPs (G)']:.2f} GFLOP** and simply keeps S "
        f"and P on the workbench (Lecture 3 shows how)."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## A caveat: the workbench has a bandwidth too
#
# `roofline()` also reports how long the shared-memory (SRAM) bytes would take (`level_s["SRAM"]`).
# The model counts them with the convention of our *teaching* kernel (`docs/COUNTING.md`): every
# multiply-add reads both operands from shared memory, no register reuse — an upper bound. Production
# kernels on tensor cores keep operand fragments in registers and read shared memory far less, so by
# default only HBM binds the estimate.

# %%
rows = {}
for name, r in results.items():
    rl = roofline(r, h200)
    rows[name] = {
        "arithmetic (µs)": rl.compute_s * 1e6,
        "HBM (µs)": rl.level_s["HBM"] * 1e6,
        "SRAM, teaching-kernel convention (µs)": rl.level_s["SRAM"] * 1e6,
    }
full = pd.DataFrame(rows).T.round(1)
full["roofline() says"] = [roofline(r, h200).bound for r in results.values()]
full

# %% tags=["remove-input"]
display(
    Markdown(
        f"With that convention the SRAM term ({full.loc['fa2', 'SRAM, teaching-kernel convention (µs)']:.0f} µs "
        f"for fa2) is {full.loc['fa2', 'SRAM, teaching-kernel convention (µs)'] / full.loc['fa2', 'HBM (µs)']:.0f}× "
        f"the HBM term ({full.loc['fa2', 'HBM (µs)']:.1f} µs): a scalar kernel that really read shared memory "
        f"that often would be limited by its own workbench. Keep that in mind when Lecture 5 compares our numba "
        f"kernels with the model. The rest of this course follows the FlashAttention paper and counts "
        f"**HBM** trips."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: be honest here. The HBM argument is the paper's argument and it is right for
# tensor-core kernels; a naive scalar kernel has a second bottleneck (shared-memory bandwidth). Both
# bars come from the same counting contract that the instrumented kernels reproduce exactly.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Take-aways
#
# 1. HBM is thousands of times larger than SRAM, SRAM several times faster (the table above).
# 2. Standard attention sits left of the fp16 ridge: its time is set by HBM trips. FlashAttention's
#    tiling moves it right, across the ridge (FlashAttention-1's tiles, and FlashAttention-2 once the
#    L2 absorbs its K/V re-reads, as Lecture 5 measures on the H200): compute bound on the tensor
#    cores. In fp32 on CUDA cores even naive attention is compute bound — not the posts' regime.
# 3. FlashAttention does not do less arithmetic; it makes fewer trips. Next: where naive attention's
#    trips come from (Lecture 2).
