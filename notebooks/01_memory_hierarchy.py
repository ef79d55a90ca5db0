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
# Where do the numbers live while the GPU computes with them? Device memory is the warehouse, shared
# memory the workbench, and the roofline says which of the two a kernel waits for.

# %% [markdown] slideshow={"slide_type": "notes"}
# *Why FlashAttention is fast* starts with a question that has nothing to do with attention:
# **where do the numbers live while the GPU computes with them?**

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Read a GPU preset: device memory ("HBM"), L2 and shared memory ("SRAM"), their capacities and
#   bandwidths, and the unit each is given in.
# - Compute a kernel's arithmetic intensity and a GPU's ridge point, and tell from the two whether the
#   kernel waits for memory or for arithmetic.
# - Explain why standard attention is memory bound in fp16 on every preset, and how tiling moves it
#   towards (and, with the L2's help, across) the ridge.
# - Compare the time of the arithmetic and of the memory trips of one attention head, and name the
#   second bottleneck of a scalar kernel: shared-memory bandwidth.
#
# **Prerequisites**
#
# - None of the other lectures: this is the first.
# - Matrix products and their FLOP count (2·m·n·k for an m×k by k×n product), the softmax.
# - What a kernel, a thread block and a streaming multiprocessor (SM) are, in one sentence each
#   ([the glossary](../docs/GLOSSARY.md)).

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 5 | The warehouse and the workbench |
# | 10 | The presets: capacities, bandwidths, units |
# | 10 | The roofline and the ridge point |
# | 8 | The punchline: FlashAttention turns attention compute bound |
# | 5 | Why the trips, not the arithmetic, cost the time |
# | 7 | A sequence is not one roofline: each launch against its own roofs |
# | 3 | A caveat: the workbench has a bandwidth too |
# | 2 | Summary and exercises |

# %% [markdown] slideshow={"slide_type": "notes"}
# Open with the analogy before any formula. The warehouse is huge but every trip costs time; the
# workbench is tiny but free to reach. Ask the class: which one limits a carpenter who builds something
# simple from many parts? (The trips.)

# %% slideshow={"slide_type": "skip"}
import math
from fractions import Fraction

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from course import charts
from evidence import claims, intensity, paper
from evidence.figure2 import FIGURE2, figure2_h200_intensity
from simlib import Workload, count, load_preset, preset_keys, roofline

charts.use_style()
N, D = 4096, 64  # the running example: 4K tokens, head dimension 64, fp16
GPUS = preset_keys()
h200 = load_preset("h200")

# %% tags=["remove-input"] slideshow={"slide_type": "slide"}
hws = [load_preset(k) for k in GPUS]
gib = [hw.level("HBM").capacity_bytes / 2**30 for hw in hws]
kib = [hw.sram_bytes / 2**10 for hw in hws]
memories = sorted({hw.dram_name for hw in hws})
display(
    Markdown(
        "## The warehouse and the workbench\n\n"
        f"- **HBM**, the *warehouse*: the GPU's device memory, {min(gib):.0f}–{max(gib):.0f} GiB on the "
        f'{len(GPUS)} GPUs of this course, off the chip. "HBM" (high-bandwidth memory) is the paper\'s and '
        f"the model's name for it; the chips really carry {', '.join(memories)} — the {h200.name} has "
        f"{h200.dram_name}, the {load_preset('rtx-4090').name} {load_preset('rtx-4090').dram_name}.\n"
        f"- **SRAM**, the *workbench*: shared memory on the chip, {min(kib):.0f}–{max(kib):.0f} KiB per "
        "thread block, right next to the arithmetic units.\n\n"
        "Every number in this lecture comes from the hardware presets in `data/hardware/` (each with its "
        "source), from the exact traffic model in `simlib`, from the paper's text in `data/papers.json` and, "
        "for the two measured points, from the H200 run in `data/measurements/current/`."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The presets: capacities and bandwidths
#
# One row per GPU. "SRAM per block" is what one thread block may allocate (the *M* of the
# FlashAttention paper); "SRAM per SM" is the whole on-chip array of one streaming multiprocessor.


# %% [markdown] slideshow={"slide_type": "notes"}
# Units, one per quantity: on-chip capacities are binary (KiB per block and per SM, MiB for the L2
# and for all SMs together), device memory in GiB; bandwidths and, later, traffic are decimal
# (1 TB/s = 10¹² B/s, 1 MB = 10⁶ B).


# %%
def preset_row(key):
    hw = load_preset(key)
    sram, l2, dram = hw.level("SRAM"), hw.level("L2"), hw.level("HBM")
    return {
        "GPU": hw.name,
        "device memory": hw.dram_name,
        "SMs": hw.sm_count,
        "SRAM per block (KiB)": hw.sram_bytes / 2**10,
        "SRAM per SM (KiB)": sram.capacity_bytes / 2**10,
        "SRAM, all SMs (MiB)": sram.capacity_bytes * hw.sm_count / 2**20,
        "SRAM bandwidth, all SMs (TB/s)": sram.bandwidth_bytes_per_s / 1e12,
        "L2 (MiB)": l2.capacity_bytes / 2**20,
        "device memory (GiB)": dram.capacity_bytes / 2**30,
        "device memory bandwidth (TB/s)": dram.bandwidth_bytes_per_s / 1e12,
        "fp16 peak (TFLOP/s)": hw.peak_flops["fp16"] / 1e12,
    }


presets = pd.DataFrame([preset_row(k) for k in GPUS], index=GPUS)
SPEEDS = ["SRAM bandwidth, all SMs (TB/s)", "device memory bandwidth (TB/s)", "fp16 peak (TFLOP/s)"]
presets.drop(columns=SPEEDS).round(2)  # capacities; the speeds on the next slide

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
presets[["GPU", "device memory", *SPEEDS]].round(2)

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
row = presets.loc["h200"]
display(
    Markdown(
        f"**On the {h200.name}** the warehouse ({h200.dram_name}) holds {row['device memory (GiB)']:.0f} GiB; "
        f"the workbench of one thread block holds {row['SRAM per block (KiB)']:.0f} KiB — the warehouse is "
        f"{h200.level('HBM').capacity_bytes / h200.sram_bytes:,.0f}× bigger. Even all "
        f"{h200.sm_count} SMs' on-chip arrays together ({row['SRAM, all SMs (MiB)']:.0f} MiB) are "
        f"{row['device memory (GiB)'] * 1024 / row['SRAM, all SMs (MiB)']:,.0f}× smaller than the warehouse. "
        f"But the workbench is fast: {row['SRAM bandwidth, all SMs (TB/s)']:.1f} TB/s summed over the SMs "
        f"against {row['device memory bandwidth (TB/s)']:.1f} TB/s from {h200.dram_name}, "
        f"{row['SRAM bandwidth, all SMs (TB/s)'] / row['device memory bandwidth (TB/s)']:.1f}× more."
    )
)

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
a100 = load_preset("a100-40gb")
paper_a100 = paper.section("section_2_1_a100")
display(
    Markdown(
        f"**Two A100 numbers, not to be confused.** {a100.sram_bytes / 2**10:.0f} KiB is what one thread "
        f"block may allocate — the *M* that sizes FlashAttention's tiles, used in every lecture — while the "
        f'paper\'s "{paper_a100["sram_per_sm_kb"]} KB of on-chip SRAM per SM" ({paper_a100["citation"]}) is '
        f"the SM's whole L1 + shared-memory array, the preset's "
        f"{a100.level('SRAM').capacity_bytes / 2**10:.0f} KiB per SM (NVIDIA's KB are 1024 B): part of that "
        "array always stays L1 cache."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# Point at the two ratios the cell printed: capacity (the warehouse is far larger) and bandwidth (the
# workbench is faster). The whole course lives between those two facts.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The roofline: arithmetic or trips?
#
# A kernel does *F* floating-point operations and moves *B* bytes to and from device memory. It cannot
# finish faster than either
#
# $$ t \;\ge\; \max\!\left(\frac{F}{\text{peak FLOP/s}},\; \frac{B}{\text{memory bandwidth}}\right). $$
#
# Divide by *t*: the attainable speed is $\min(\text{peak},\; I \cdot \text{bandwidth})$ with the
# **arithmetic intensity** $I = F / B$ (FLOP per byte of device memory). Below the *ridge point*
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

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="Roofline of every GPU preset in fp16: attainable TFLOP/s against FLOP per byte of the preset's own device memory, with naive attention and FlashAttention-2 marked on the roof"
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
    charts.name_device_memory(ax, load_preset(key))
for ax in axes[0]:
    ax.set_xlabel("")
fig.suptitle(
    f"Device-memory roofline per GPU, fp16; attention at N = {N}, d = {D} "
    "(the intensity does not depend on batch or heads)",
    fontsize=13,
)
plt.show()

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
p = points["h200"]
left = [key for key in GPUS if points[key]["naive"].arithmetic_intensity < points[key]["naive"].ridge_point]
display(
    Markdown(
        f"At N = {N}, d = {D}, naive attention does {p['naive'].arithmetic_intensity:.1f} FLOP per byte and "
        f"FlashAttention-2 with its default tiles {p['fa2'].arithmetic_intensity:.0f}, while the {h200.name} "
        f"needs {p['naive'].ridge_point:.0f} FLOP per {h200.dram_name} byte in fp16 to keep its tensor cores "
        f"busy. Naive attention sits left of the ridge on {len(left)} of the {len(GPUS)} presets: it is limited "
        "by memory bandwidth, and the kernel that moves fewer bytes wins. Where FlashAttention lands is the "
        "punchline of the next slide."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# The memory-bound slope of the roof is one on log–log axes (speed ∝ intensity). Moving a kernel right
# along the roof means fewer bytes for the same FLOPs. That is exactly what tiling does.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The punchline: FlashAttention turns attention compute bound


# %% [markdown] slideshow={"slide_type": "notes"}
# The same intensity for naive attention, FlashAttention-1 (Algorithm 1's tiles) and
# FlashAttention-2 (its default tiles) as N grows, against the H200's two ridges: fp16 on the tensor
# cores (what FlashAttention runs on) and fp32 on the CUDA cores (what our numba teaching kernels run
# on). The dashed line is FlashAttention-2 if the L2 absorbed every K/V re-read: the compulsory
# traffic (Q, K, V read once, O written once), a limit — this model has no L2 level; Lecture 5
# measures how much of it the H200's L2 really absorbs. The solid curves are fp16 data (2 bytes per
# element); an fp32 kernel moves twice the bytes for the same FLOPs, so the dotted red curve, naive
# attention in fp32, is the one to hold against the fp32 ridge.


# %% tags=["remove-input"] alt="Arithmetic intensity against sequence length on the H200, log-log: naive attention flat below the fp16 ridge, FlashAttention-2 below it, FlashAttention-1 crossing it, the L2-absorbed limit climbing far above it, naive attention in fp32 against the fp32 ridge, and the two measured Figure 2 points"
def fp32_naive(ax, key, seq_lens):
    """Naive attention with fp32 data (4 bytes per element: twice the bytes, half the intensity) on
    `ax`: the curve that the fp32 CUDA-core ridge is to be compared with."""
    s32 = intensity.intensity_sweep(key, seq_lens=seq_lens, head_dim=D, dtype="fp32")
    s32 = s32[s32.schedule == "naive"]
    ax.loglog(
        s32.N,
        s32["FLOP per HBM byte"],
        "o:",
        color=charts.COLORS["naive"],
        mfc="none",
        label="naive, fp32 data",
    )


def ridges_in_legend(ax, ridges, with_values=True):
    """Move `plot_intensity`'s ridge labels, which cross the curves, into the ridge lines' legend entries."""
    labels = [t for t in ax.texts if t.get_text().startswith("ridge")]
    for r, text in zip(ridges, labels):
        for line in ax.get_lines():
            if list(line.get_ydata()) == [r, r]:
                line.set_label(text.get_text() if with_values else text.get_text().split(":")[0])
        text.remove()


sweep = intensity.intensity_sweep("h200", seq_lens=intensity.SWEEP_SEQ_LENS, head_dim=D)
measured = figure2_h200_intensity()  # ncu DRAM bytes of one fwd+bwd step, Figure 2 config
fig, ax = plt.subplots(figsize=(9.5, 5.6))
ridges = intensity.plot_intensity(ax, sweep, h200, charts.COLORS, charts.LABELS)
fp32_naive(ax, "h200", intensity.SWEEP_SEQ_LENS)
ridges_in_legend(ax, ridges)
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
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, fontsize=8.5)
charts.name_device_memory(ax, h200)
plt.show()

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
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

# %% [markdown] slideshow={"slide_type": "notes"}
# The two measured points are a whole training step (forward and backward), the curves the forward
# pass alone. Standard attention's backward pass sends more N×N matrices (dP, dS) through device
# memory, so its point sits below the forward-only naive curve; FlashAttention-2's sits far above its
# forward-only curve because the H200's L2 serves most K/V re-reads (Lecture 5 measures it).

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="The intensity-against-sequence-length chart repeated for every data-centre preset, each against its own fp16 and fp32 ridges, with naive attention in fp32 beside the fp32 ridge"
fig, axes = plt.subplots(2, 2, figsize=(13, 8.5), sharex=True, sharey=True)
for ax, key in zip(axes.flat, intensity.DATACENTER_GPUS):
    hw = load_preset(key)
    ridges = intensity.plot_intensity(
        ax, intensity.intensity_sweep(key, head_dim=D), hw, charts.COLORS, charts.LABELS
    )
    fp32_naive(ax, key, intensity.SWEEP_SEQ_LENS)
    ridges_in_legend(ax, ridges, with_values=False)
    charts.tokens_axis(ax, intensity.SWEEP_SEQ_LENS, label="N (tokens)" if ax in axes[1] else "")
    ax.set_title(f"{hw.name}: ridges {ridges[0]:.0f} (fp16) and {ridges[1]:.0f} (fp32) FLOP/B", fontsize=11)
    charts.name_device_memory(ax, hw)
handles, labels = axes.flat[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=9, bbox_to_anchor=(0.5, -0.01))
fig.suptitle(f"Every data-centre preset, d = {D}, fp16 and naive in fp32, against each GPU's two ridges")
plt.show()

# %% slideshow={"slide_type": "skip"} tags=["remove-input"]
punch = intensity.intensity_table(seq_len=N, head_dim=D)  # fp16 data: against the fp16 ridge
punch32 = intensity.intensity_table(seq_len=N, head_dim=D, dtype="fp32")  # fp32 data: the fp32 ridge
assert (punch32[["gpu", "schedule"]].values == punch[["gpu", "schedule"]].values).all()
punch["FLOP per HBM byte, fp32 data"] = punch32["FLOP per HBM byte"].values
punch["fp32 CUDA cores"] = punch32["fp32 CUDA cores"].values  # fp32 intensity against the fp32 ridge
punch["tiles, fp32 data"] = punch32["tiles"].values  # the same SRAM holds half as many fp32 elements
punch[
    [
        "gpu",
        "schedule",
        "tiles",
        "FLOP per HBM byte",
        "ridge fp16 (FLOP/B)",
        "fp16 tensor cores",
        "tiles, fp32 data",
        "FLOP per HBM byte, fp32 data",
        "ridge fp32 (FLOP/B)",
        "fp32 CUDA cores",
    ]
].round(1)

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
h = punch[punch.gpu == h200.name].set_index("schedule")
naive32 = punch[punch.schedule == "naive"].set_index("gpu")
memory_bound32 = [gpu for gpu in naive32.index if naive32.loc[gpu, "fp32 CUDA cores"] == "memory bound"]
assert h.loc["naive", "fp32 CUDA cores"] == "compute bound"  # the summary says so
bound = {name: h.loc[name, "fp16 tensor cores"] for name in h.index}
across = [charts.LABELS[n] for n in ("fa1", "fa2") if bound[n] == "compute bound"]
crossing = (
    "Tiling moves attention right, across the ridge (" + ", ".join(across) + ")"
    if across
    else "Tiling moves attention right, though not across the ridge"
)
if bound["fa2"] != "compute bound" and bound[intensity.L2_LIMIT] == "compute bound":
    crossing += "; FlashAttention-2 crosses it once the L2 serves its K/V re-reads"
crossing += ": from waiting on memory towards waiting on the tensor cores."
display(
    Markdown(
        f"On the {h200.name} at N = {N} (fp16): naive {h.loc['naive', 'FLOP per HBM byte']:.0f} FLOP/B is "
        f"**{bound['naive']}**; FlashAttention-1 {h.loc['fa1', 'FLOP per HBM byte']:.0f} FLOP/B is "
        f"**{bound['fa1']}**; FlashAttention-2 {h.loc['fa2', 'FLOP per HBM byte']:.0f} FLOP/B "
        f"({h.loc['fa2', 'tiles']} tiles, counting every K/V re-read from {h200.dram_name}) is "
        f"**{bound['fa2']}**, and {h.loc[intensity.L2_LIMIT, 'FLOP per HBM byte']:.0f} FLOP/B if the L2 "
        f"absorbs the re-reads (**{bound[intensity.L2_LIMIT]}**) — against a ridge of "
        f"{h.loc['naive', 'ridge fp16 (FLOP/B)']:.0f} FLOP/B. {crossing} In fp32 the ridge is only "
        f"{h.loc['naive', 'ridge fp32 (FLOP/B)']:.1f} FLOP/B and even naive attention, at "
        f"{h.loc['naive', 'FLOP per HBM byte, fp32 data']:.1f} FLOP/B with 4-byte elements, is "
        f"**{h.loc['naive', 'fp32 CUDA cores']}** (not on every GPU: "
        f"{', '.join(memory_bound32) or 'none'} {'has' if len(memory_bound32) == 1 else 'have'} a higher fp32 "
        "ridge; Exercise 2): on CUDA cores the bytes matter much less, which is why our "
        f'fp32 kernels (Lecture 5) gain less than the posts claim ("{claims.CLAIMS["e"]}", checked in '
        "Lecture 6)."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Why the trips, not the arithmetic, cost the time
#
# The same two kernels on the H200, one head: how long the arithmetic takes at peak, how long the
# device-memory traffic takes at full bandwidth.

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

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="Horizontal bars on the H200, one head: the arithmetic at peak and the device-memory trips at full bandwidth, for naive attention and FlashAttention-2; naive's trips are the longest bar"
fig, ax = plt.subplots(figsize=(8, 3.2))
bars = [
    (f"{name}: {what}", times.loc[name, column], color)
    for name in times.index
    for what, column, color in (
        ("arithmetic", "arithmetic at peak (µs)", "#aaaaaa"),
        (f"{h200.dram_name} trips", "HBM trips at full bandwidth (µs)", charts.COLORS[name]),
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
        f"Naive attention's arithmetic takes {t['arithmetic at peak (µs)']:.1f} µs, its {h200.dram_name} trips "
        f"{t['HBM trips at full bandwidth (µs)']:.1f} µs — "
        f"{t['HBM trips at full bandwidth (µs)'] / t['arithmetic at peak (µs)']:.1f}× longer. "
        f"{sp_share:.1%} of those bytes are the N×N score matrix S and the probabilities P going to device "
        f"memory and coming back. FlashAttention does the **same {t['FLOPs (G)']:.2f} GFLOP** and simply keeps "
        "S and P on the workbench (Lecture 3 shows how)."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## A sequence is not one roofline: each launch against its own roofs
#
# `roofline()` treats naive attention as one kernel with one pile of FLOPs and one pile of bytes.

# %% [markdown] slideshow={"slide_type": "notes"}
# It
# is a sequence of launches, and each launch waits on its own slowest unit: a matmul on the tensor
# cores or on instruction issue, the softmax on device memory or on issue, FlashAttention on its
# matmuls and its exponentials, which a warp issues one after the other. The cost model
# (`simlib.cost`, `python -m simlib predict`) gives every launch its per-unit times on the H200 — each
# unit's work over the rate a micro-benchmark reached — names the binding roof, and adds the launches.
# Its calibration and its test on shapes measured after it was frozen are in Lecture 5.

# %% tags=["remove-input"] slideshow={"slide_type": "skip"}
from course import predictions  # noqa: E402  (the cost model's lecture helpers)

per_launch = {
    name: predictions.launches(name, Workload(4096, D, batch=2, heads=16, dtype=dtype))
    for name, dtype in (
        ("eager_bf16", "bf16"),
        ("torch_flash", "bf16"),
        ("numba_naive", "fp32"),
        ("numba_fast", "fp32"),
    )
}
table = pd.concat(
    {k: v.set_index("launch") for k, v in per_launch.items()}, names=["implementation", "launch"]
)
table.round(2)

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="Predicted time of every launch of four attention implementations on the H200 at N = 4096, d = 64, B\u00b7H = 32, log scale, each bar coloured by the roof that binds it"
roofs = list(dict.fromkeys(table["binding roof"]))
roof_colors = dict(zip(roofs, charts.plt_colors()))
labels = [f"{impl}: {launch}" for impl, launch in table.index]
fig, ax = plt.subplots(figsize=(10, 4.6))
ax.barh(labels, table["predicted (µs)"], color=[roof_colors[r] for r in table["binding roof"]])
for y, (t, nxt) in enumerate(zip(table["predicted (µs)"], table["× the next roof"])):
    ax.text(t, y, f" {t:,.0f} µs (next roof ×{nxt:.2f})", va="center", fontsize=8.5)
ax.set_xscale("log")
ax.set_xlim(right=table["predicted (µs)"].max() * 20)
ax.invert_yaxis()
ax.set_xlabel("predicted time per launch (µs, log), the cost model on the H200")
ax.set_title(f"N = 4096, d = {D}, B·H = 32: each launch against its own roofs")
ax.legend(
    handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in roof_colors.values()],
    labels=[f"binding roof: {r}" for r in roof_colors],
    fontsize=8.5,
    loc="upper right",
)
ax.grid(axis="y", visible=False)
plt.show()

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
one = count("naive", Workload(4096, D, batch=2, heads=16, dtype="fp32"))
whole = roofline(one, h200)
eager, flash = per_launch["eager_bf16"], per_launch["torch_flash"].iloc[0]
naive32 = per_launch["numba_naive"]
display(
    Markdown(
        f"At N = 4096, d = {D}, B·H = 32: `roofline()` calls fp32 naive attention **{whole.bound}** "
        f"({whole.time_s * 1e3:.2f} ms); launch by launch the binding roofs are "
        + ", ".join(f"{launch} **{bound}**" for launch, bound in zip(naive32.launch, naive32["binding roof"]))
        + f", {naive32['predicted (µs)'].sum() / 1e3:.1f} ms in all "
        f"({naive32['predicted (µs)'].sum() * 1e-6 / whole.time_s:.0f}× the single roofline): the numba "
        "matmul issues dozens of instructions per multiply-add. In bf16 as practitioners run it (eager "
        f"attention), the launches take {eager['predicted (µs)'].sum() / 1e3:.2f} ms, the slowest being "
        f"**{eager.loc[eager['predicted (µs)'].idxmax(), 'launch']}** "
        f"({eager.loc[eager['predicted (µs)'].idxmax(), 'binding roof']}-bound). FlashAttention-2 (PyTorch's "
        f"kernel) no longer waits on DRAM ({flash['DRAM (µs)']:.0f} µs of it): it waits on its tensor cores "
        f"({flash['tensor cores (µs)']:.0f} µs) and its exponentials ({flash['exp (MUFU) (µs)']:.0f} µs), "
        f"which one warp issues in turn, next to instruction issue ({flash['instruction issue (µs)']:.0f} µs), "
        f"at {flash['eta']:.0%} of that roof with 2 blocks (8 warps) per SM: "
        f"{flash['predicted (µs)'] / 1e3:.2f} ms predicted."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# The ratio "× the next roof" says how much faster the binding unit would have to become before
# another one binds. For FlashAttention-2 the exponential unit is the new wall: the table's tensor-core
# and exp columns are of the same order at d = 64, and a warp cannot overlap them (FlashAttention-3,
# §3, is built around that); what remains is latency that 8 warps per SM cannot hide (eta).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## A caveat: the workbench has a bandwidth too
#
# `roofline()` also reports how long the shared-memory (SRAM) bytes would take (`level_s["SRAM"]`).
# The model counts them with the convention of our *teaching* kernel (`docs/COUNTING.md`): every
# multiply-add reads both operands from shared memory, no register reuse — an upper bound. Production
# kernels on tensor cores keep operand fragments in registers and read shared memory far less, so by
# default only device memory binds the estimate.

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
        f"**device-memory (HBM)** trips."
    )
)

# %% [markdown] slideshow={"slide_type": "notes"}
# Be honest here. The HBM argument is the paper's argument and it is right for tensor-core kernels; a
# naive scalar kernel has a second bottleneck (shared-memory bandwidth). Both bars come from the same
# counting contract that the instrumented kernels reproduce exactly.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# 1. Device memory ("HBM" in the model, whatever the chip's technology) is far larger than the
#    on-chip shared memory ("SRAM"); SRAM has several times the bandwidth. Capacities are binary
#    (KiB, MiB, GiB), bandwidths and traffic decimal (TB/s, MB).
# 2. The roofline: $t \ge \max(F/\text{peak},\, B/\text{bandwidth})$. Left of the ridge point
#    $I^* = \text{peak}/\text{bandwidth}$ a kernel is memory bound, right of it compute bound.
# 3. Standard attention sits left of the fp16 ridge on every preset: its time is set by memory trips,
#    most of them S and P going out and coming back.
# 4. FlashAttention does the same arithmetic with fewer trips; tiling moves it right, across the ridge
#    once the L2 absorbs its K/V re-reads (measured on the H200). In fp32 the single roofline puts even
#    naive attention right of the ridge — but a kernel sequence is never one roofline: launch by launch
#    each kernel waits on its own unit (the cost model names it), and FlashAttention, free of DRAM,
#    waits on its matmuls and exponentials.
# 5. A scalar kernel that reads every operand from shared memory has a second bottleneck: SRAM bandwidth.
#    Next: where naive attention's trips come from (Lecture 2).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Predict first (write the number down), then compute, then open the hidden solution cell: it
# computes the answer with `simlib` and checks it against an independent derivation.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1 — Ridge points
#
# Predict from the presets table which GPU has the **highest** and which the **lowest** fp16 ridge
# point. Then compute $I^* = \text{peak}/\text{bandwidth}$ for every preset from the table's two
# columns, and find the same point a second way: the smallest intensity at which the roof
# (`charts.roofline_curve`) reaches the peak, by bisection.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
ridges = {}
for key in GPUS:
    hw = load_preset(key)
    peak, bandwidth = hw.peak_flops["fp16"], hw.level("HBM").bandwidth_bytes_per_s
    from_table = presets.loc[key, "fp16 peak (TFLOP/s)"] / presets.loc[key, "device memory bandwidth (TB/s)"]
    lo, hi = 1e-3, 1e6  # the roof is below the peak at lo and at the peak at hi
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if charts.roofline_curve(peak, bandwidth, mid) < peak else (lo, mid)
    ridges[key] = from_table
    assert math.isclose(hi, from_table, rel_tol=1e-9), (key, hi, from_table)
    assert math.isclose(points[key]["naive"].ridge_point, from_table, rel_tol=1e-12)  # simlib's roofline()
ranked = pd.Series(ridges, name="fp16 ridge (FLOP/B)").sort_values()
print(f"highest: {ranked.index[-1]}, lowest: {ranked.index[0]}")
ranked.round(1)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2 — The ceiling of naive attention
#
# Naive attention does $F = 4N^2d$ FLOPs and moves $4Nd + 4N^2$ elements (Lecture 2 counts them:
# reads $3Nd + 2N^2$, writes $2N^2 + Nd$). Show that in fp16 its intensity is
# $I(N) = \frac{Nd}{2(N+d)}$ FLOP/B, which grows with N but never reaches $d/2$. Predict: is there a
# sequence length at which naive attention at the running d becomes compute bound in fp16 on any preset?
# And in fp32 (4 B per element)? Check $I(N)$ against `count()` for N = 256 … 64K.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
for dtype in ("fp16", "fp32"):
    element = Workload(1, 1, dtype=dtype).element_bytes
    for n in (2**k for k in range(8, 17)):
        r = count("naive", Workload(n, D, dtype=dtype))
        assert Fraction(r.flops, r.hbm_bytes) == Fraction(4 * n * n * D, (4 * n * D + 4 * n * n) * element)
    ceiling = Fraction(4 * D, 4 * element)  # the limit N → ∞ of 4N²d / ((4Nd + 4N²)·bytes)
    reachable = [k for k in GPUS if intensity.ridge(load_preset(k), dtype) < ceiling]
    ridge32 = intensity.ridge(h200, "fp32")
    print(
        f"{dtype}: ceiling {float(ceiling):.0f} FLOP/B; presets whose {dtype} ridge is below it: {reachable}"
    )
    if dtype == "fp16":
        assert ceiling == Fraction(D, 2) and reachable == []  # memory bound at every N on every preset
    else:
        assert "h200" in reachable  # fp32 on CUDA cores: compute bound at long N
        r = count("naive", Workload(N, D, dtype="fp32"))
        print(f"fp32 at N = {N}: {r.flops / r.hbm_bytes:.2f} FLOP/B, H200 fp32 ridge {ridge32:.2f}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3 — How much longer do the trips take?
#
# For naive attention at the running N and d, predict on which preset the memory trips outlast the
# arithmetic by the **largest** factor — the T4 (slow memory) or the H200 (fast memory)? Show that
# $\frac{B/\text{bandwidth}}{F/\text{peak}} = I^*/I$, compute it for every preset from the ridge and
# the intensity, and check it against `roofline()`'s two times.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
factor = {}
for key in GPUS:
    rl = points[key]["naive"]
    factor[key] = rl.ridge_point / rl.arithmetic_intensity
    assert math.isclose(rl.level_s["HBM"] / rl.compute_s, factor[key], rel_tol=1e-12)
    hw, r = load_preset(key), count("naive", Workload(N, D))  # the same from the raw numbers
    by_hand = (r.hbm_bytes / hw.level("HBM").bandwidth_bytes_per_s) / (r.flops / hw.peak_flops["fp16"])
    assert math.isclose(by_hand, factor[key], rel_tol=1e-12)
# the intensity is the same on every GPU, so the factor ranks like the ridge: compare Exercise 1
assert max(factor, key=factor.get) == max(ridges, key=ridges.get)
larger = "H200" if factor["h200"] > factor["t4"] else "T4"
print(f"T4 {factor['t4']:.2f}×, H200 {factor['h200']:.2f}×: larger on the {larger} (its ridge is higher)")
pd.Series(factor, name="trips / arithmetic (×)").round(2)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 4 — How much of S fits on the workbench?
#
# A square tile of the score matrix S, b×b in fp16, has to fit in one thread block's shared memory
# (alone: no Q, K, V). Predict b on the H200 and on the T4, then compute the largest b from each
# preset's SRAM per block and check it by brute force. What fraction of the N×N matrix at the
# running N is one such tile? (This is why Lecture 3 cuts S into tiles and never stores it.)

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
element = Workload(N, D).element_bytes
tiles = {}
for key in ("h200", "t4"):
    m = load_preset(key).sram_bytes
    b = math.isqrt(m // element)
    brute = 0
    while (brute + 1) ** 2 * element <= m:
        brute += 1
    assert b == brute and b * b * element <= m < (b + 1) ** 2 * element
    tiles[key] = {"SRAM per block (KiB)": m / 2**10, "largest b": b, "share of S": b * b / N**2}
pd.DataFrame(tiles).T.astype({"largest b": int})
