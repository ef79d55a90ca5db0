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
# # Lecture 4 — IO complexity: how many trips does each schedule make?
#
# Lecture 3 made attention run tile by tile. This lecture counts, exactly, what each loop order costs
# in HBM traffic, steps through the tiles with a byte counter, and checks the paper's Θ claims and the
# posts' "O(N)" against the counts.
#
# **Learning goals**
#
# - Derive the HBM reads and writes of naive attention, FlashAttention-1 and FlashAttention-2 from
#   their loop nests, and evaluate them for a given N, d and SRAM size.
# - Follow a tile walk step by step and say which blocks are loaded, what sits in SRAM and registers,
#   and how many bytes have crossed HBM so far; say which tiles a causal mask skips.
# - Explain why tiling changes the constant but not the exponent of N, and how Br and Bc set it.
# - Say where "FlashAttention makes HBM traffic O(N)" is right (extra memory) and wrong (traffic).
#
# **Prerequisites**
#
# Lectures 2 and 3 (naive attention; the online softmax and the tiled loop); Br, Bc, Tr = ⌈N/Br⌉,
# Tc = ⌈N/Bc⌉; log–log plots.
#
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 4 | Three schedules, three formulas |
# | 10 | Step through naive, FA1 and FA2 (tile walk, causal) |
# | 6 | The tiles on each GPU; traffic against N: the exponent does not change |
# | 7 | FA1 against FA2: the tiles decide; what else FA2 changed |
# | 6 | Head dimension, SRAM size and block size |
# | 7 | "O(N)", Theorem 2 and how tight it is |
# | 3 | Summary |
# | 7 | Exercises |

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Three schedules, three formulas
#
# Counted exactly by `simlib` (elements; fp16 = 2 B, the row statistics fp32):
#
# | schedule | HBM reads | HBM writes |
# |---|---|---|
# | naive (Algorithm 0) | 3Nd + 2N² | 2N² + Nd |
# | FlashAttention-1 (outer loop over K/V blocks) | 2Nd + Tc·2Nd, + Tc·2N stats | Nd + Tc·Nd, + (1 + Tc)·2N stats |
# | FlashAttention-2 forward (outer loop over Q blocks) | Nd + Tr·2Nd | Nd, + N stats |
#
# with Tr = ⌈N / Br⌉, Tc = ⌈N / Bc⌉. FlashAttention-1's tiles come from the paper's Algorithm-1 rule
# (M = SRAM bytes / 2, Bc = ⌈M / 4d⌉, Br = min(Bc, d)); FlashAttention-2's are `count()`'s default for
# `fa2` (the FA2 kernel's own). Two reference lines: the **compulsory** traffic (read Q, K, V and write
# O once, 4Nd) and the **Saha–Ye lower bound** Θ(min(N²d²/M, N²d/√M)), which is *asymptotic*: its
# constant is unknown, and we draw it with constant 1.

# %% [markdown] slideshow={"slide_type": "notes"}
# FA1 re-reads Q and re-reads and re-writes O once per K/V block (Tc times); FA2
# re-reads K and V once per Q block (Tr times). Which is cheaper depends on Br versus Bc. Keep the
# table visible while going through the charts.

# %% slideshow={"slide_type": "skip"}
import re

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from course import charts
from course.tile_walk import draw_walk_overview, tile_walk, walks_widget
from evidence import claims
from simlib import Workload, compulsory_bytes, count, load_preset, preset_keys, saha_ye_bytes

charts.use_style()
GPU = load_preset("h200")
SRAM = GPU.sram_bytes
N, D = 4096, 64


def traffic(algorithm, w, sram_bytes=SRAM, **blocks):
    """HBM bytes of `algorithm` on workload `w` (naive ignores the SRAM size)."""
    if algorithm == "naive":
        return count("naive", w).hbm_bytes
    return count(algorithm, w, sram_bytes=sram_bytes, **blocks).hbm_bytes


def all_lines(w, sram_bytes=SRAM):
    return {
        "naive": traffic("naive", w),
        "fa1": traffic("fa1", w, sram_bytes),
        "fa2": traffic("fa2", w, sram_bytes),
        "compulsory": compulsory_bytes(w),
        "saha_ye": saha_ye_bytes(w, sram_bytes),
    }


# %% [markdown] slideshow={"slide_type": "slide"}
# ## Step through naive, FA1 and FA2
#
# One head at N = 1024, d = 64, fp16, with the **real tiles** on the H200: FA1 with Algorithm 1's
# rule, FA2 with its kernel's own. Naive attention with the paper's count (T = ∞) has one step per
# pass, so it walks with a shared-memory matmul tile T equal to FA2's Br, which keeps its grid
# comparable (and re-reads Q and K once per tile: its counter is `count("naive", ..., matmul_tile=T)`).
# Each step's bytes come from the schedule's own trace; the last step equals `count()`. The static
# panels are for handouts and slides; in Jupyter pick a schedule and press play.

# %%
W_WALK = Workload(1024, D)
fa2_tiles = count("fa2", W_WALK, sram_bytes=SRAM)
NAIVE_WALK = f"naive (T = {fa2_tiles.block_rows})"
walks = {
    NAIVE_WALK: tile_walk("naive", W_WALK, matmul_tile=fa2_tiles.block_rows),
    "fa1 (Algorithm 1's tiles)": tile_walk("fa1", W_WALK, sram_bytes=SRAM),
    "fa2 (its own tiles)": tile_walk("fa2", W_WALK, sram_bytes=SRAM),
    "fa1, causal": tile_walk("fa1", Workload(1024, D, causal=True), sram_bytes=SRAM),
    "fa2, causal": tile_walk("fa2", Workload(1024, D, causal=True), sram_bytes=SRAM),
}

# %% tags=["remove-input"] alt="Naive attention's walk at four steps: every S tile is written to HBM, then the softmax reads S and writes P, then O = PV reads P back; bytes so far in the titles"
draw_walk_overview(walks[NAIVE_WALK])
plt.show()

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="FlashAttention-1's walk at four steps: one column of K/V tiles at a time, Q and O blocks re-read for every tile"
draw_walk_overview(walks["fa1 (Algorithm 1's tiles)"])
plt.show()

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="FlashAttention-2's walk at four steps: one row of tiles per Q block, K and V streamed past it"
draw_walk_overview(walks["fa2 (its own tiles)"])
plt.show()

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="FlashAttention-2's causal walk at four steps: tiles above the diagonal hatched as skipped, diagonal tiles marked"
draw_walk_overview(walks["fa2, causal"])
plt.show()

# %% slideshow={"slide_type": "subslide"} alt="Stepper over the chosen schedule's tiles: the score grid at step k beside what is loaded, what sits in SRAM and registers, and the HBM bytes so far"
walks_widget(walks)

# %% [markdown] slideshow={"slide_type": "notes"}
# Before pressing play, ask: how many bytes has FA2 read after its first row of tiles? (Q_0 once, then
# every K_j and V_j: Br·d + 2Nd elements.) Let the counter confirm it, then switch to FA1 and ask the
# same for its first column. In the causal walks point at the hatched tiles: never loaded, never
# computed; the diagonal ones are loaded whole and masked inside.

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
walk_table = pd.DataFrame(
    [
        {
            "walk": name,
            "tiles": f"{wk.block_rows}×{wk.block_cols}",
            "steps": len(wk.steps),
            "read at the last step (MB)": wk.steps[-1].read_so_far / 1e6,
            "written at the last step (MB)": wk.steps[-1].write_so_far / 1e6,
            "count() read (MB)": wk.result.hbm_read_bytes / 1e6,
            "count() written (MB)": wk.result.hbm_write_bytes / 1e6,
            "equal to the byte": (wk.steps[-1].read_so_far, wk.steps[-1].write_so_far)
            == (wk.result.hbm_read_bytes, wk.result.hbm_write_bytes),
        }
        for name, wk in walks.items()
    ]
).set_index("walk")
display(walk_table.round(3))
full, causal_walk = walks["fa2 (its own tiles)"], walks["fa2, causal"]
display(
    Markdown(
        f"Every walk ends on `count()`'s bytes exactly. FA2 visits {len(full.steps)} tiles without a mask and "
        f"{len(causal_walk.steps)} with the causal mask (the diagonal tiles are computed whole and masked "
        f"inside), so it reads {causal_walk.steps[-1].read_so_far / full.steps[-1].read_so_far:.0%} of the "
        f"bytes; naive attention computes and stores the whole S either way."
    )
)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## The tiles on each GPU
#
# FlashAttention-2's default Br, Bc, Tr, Tc on every preset (its kernel table, read for the preset's
# architecture and per-block shared memory), at N = 4096.

# %% tags=["remove-input"]
rows = []
for key in preset_keys():
    hw = load_preset(key)
    for d in (64, 128):
        r = count("fa2", Workload(N, d), hardware=hw)
        rows.append(
            {
                "GPU": hw.name,
                "compute capability": hw.compute_capability,
                "FA2 kernel runs": "yes" if float(hw.compute_capability) >= 8.0 else "no (Turing: FA1 only)",
                "d": d,
                "shared + L1 per SM (KiB)": hw.level("SRAM").capacity_bytes / 1024,
                "SRAM per block (KiB)": hw.sram_bytes / 1024,
                "M (elements)": hw.sram_bytes // 2,
                "Br": r.block_rows,
                "Bc": r.block_cols,
                "Tr": r.tr,
                "Tc": r.tc,
            }
        )
tiles = pd.DataFrame(rows)
tiles

# %% tags=["remove-input"]
a100 = load_preset("a100-40gb")
same_tiles = (tiles.groupby("d")[["Br", "Bc"]].nunique() == 1).all().all()
display(
    Markdown(
        f"Two numbers describe a GPU's SRAM. The paper's is the per-SM total of shared memory and L1 "
        f"({a100.level('SRAM').capacity_bytes / 1024:g} KiB on the A100); the tiles must fit what **one thread "
        f"block** may allocate, {a100.sram_bytes / 1024:g} KiB on the A100 (the CUDA programming guide's "
        f"per-block limit, cited in the preset). simlib's M is the second: lectures that quote the first say so. "
        f"FlashAttention-2's tiles are {'the same on every preset' if same_tiles else 'not the same on every preset'} "
        f"for a given d: its kernel table picks them by head dimension and architecture, not by M (at d = 128 "
        f"{', '.join(f'{r.GPU} {r.Br}×{r.Bc}' for r in tiles[tiles.d == 128].drop_duplicates(['Br', 'Bc']).itertuples())}; "
        f"FA1's Algorithm-1 rule does use M). And FlashAttention-2 does not run on Turing "
        f"({', '.join(sorted(set(tiles[tiles['FA2 kernel runs'] != 'yes'].GPU)))}): the authors point Turing users "
        f"to FlashAttention 1.x, so its row is the model's count of the algorithm, not of a kernel that exists there."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Traffic against sequence length
#
# Default tiles on the H200's shared memory per block (FA1: Algorithm 1's rule; FA2: its own), d = 64,
# one head, fp16.
# Log–log: the slope is the exponent of N.

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="Log-log HBM traffic per head against N for naive, FA1, FA2, the compulsory traffic and the Saha-Ye bound; all three schedules have slope about 2"
seq = [2**k for k in range(8, 17)]
by_n = pd.DataFrame([all_lines(Workload(n, D)) for n in seq], index=pd.Index(seq, name="N"))

fig, ax = plt.subplots(figsize=(9.5, 6))
fits_n = {}
for name in by_n.columns:
    fits_n[name] = charts.plot_loglog(
        ax,
        seq,
        by_n[name],
        charts.LABELS[name],
        color=charts.COLORS[name],
        fit_from=2048,
        ls="--" if name in ("compulsory", "saha_ye") else "-",
    )
charts.tokens_axis(ax, seq)
charts.bytes_axis(ax, label="HBM traffic per head")
ax.set_title(f"HBM traffic vs N ({GPU.name} tiles, d = {D}, fp16)")
ax.legend(loc="upper left", fontsize=9)
charts.name_device_memory(ax, GPU)
plt.show()

# %% tags=["remove-input"]
b = by_n.loc[N]
display(
    Markdown(
        f"At N = {N}: naive {charts.fmt_bytes(b['naive'], False)}, FlashAttention-1 "
        f"{charts.fmt_bytes(b['fa1'], False)} ({b['naive'] / b['fa1']:.1f}× less), FlashAttention-2 "
        f"{charts.fmt_bytes(b['fa2'], False)} ({b['naive'] / b['fa2']:.1f}× less), compulsory "
        f"{charts.fmt_bytes(b['compulsory'], False)}. All three schedules grow with slope ≈ 2 "
        f"(naive {fits_n['naive'].slope:.2f}, fa1 {fits_n['fa1'].slope:.2f}, fa2 {fits_n['fa2'].slope:.2f}): "
        f"tiling changes the constant, not the exponent. With constant 1 the Saha–Ye expression "
        f"({charts.fmt_bytes(b['saha_ye'], False)}) lies *below* the compulsory traffic here — a reminder "
        f"that an asymptotic bound says nothing about constants."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## FlashAttention-1 against FlashAttention-2: the tiles decide
#
# FA2 re-reads K and V once per Q block: Tr = ⌈N / Br⌉ times. FA1 re-reads Q and O once per K/V block:
# Tc = ⌈N / Bc⌉ times. So FA2's traffic is set by its Q-block height Br. Under the paper's Algorithm-1
# rule Br = min(Bc, d) = d; the FA2 kernel itself uses taller Q blocks. A tile that does not fit the
# H200's shared memory per block or its register file (S/P and the O accumulator live there) is
# refused (the row says which).

# %% tags=["remove-input"]
w = Workload(N, D)
fa1_tiles = count("fa1", w, sram_bytes=SRAM)


def variant(name, algorithm, **blocks):
    try:
        r = count(algorithm, w, hardware=GPU, **blocks)  # checks shared memory and the register file
    except ValueError as exc:  # "block_rows=…: fa2 needs … B of registers per thread block (…), … holds … B"
        return {
            "schedule": name,
            "Br": blocks.get("block_rows"),
            "Bc": blocks.get("block_cols"),
            "HBM traffic (MB)": float("nan"),
            "note": "refused: " + re.sub(r" \(.*\)", "", str(exc).split(": ", 1)[-1]),
        }
    return {
        "schedule": name,
        "Br": r.block_rows,
        "Bc": r.block_cols,
        "Tr": r.tr,
        "Tc": r.tc,
        "HBM traffic (MB)": r.hbm_bytes / 1e6,
        "note": "",
    }


variants = pd.DataFrame(
    [
        variant("fa1, Algorithm 1's tiles", "fa1"),
        variant("fa2, default tiles", "fa2"),
        variant(
            "fa2 with Algorithm 1's tiles",
            "fa2",
            block_rows=fa1_tiles.block_rows,
            block_cols=fa1_tiles.block_cols,
        ),
        variant("fa2, Br = Bc = 128", "fa2", block_rows=128, block_cols=128),
        variant(
            f"fa2, Br = Bc = {fa1_tiles.block_cols}",
            "fa2",
            block_rows=fa1_tiles.block_cols,
            block_cols=fa1_tiles.block_cols,
        ),
    ]
).set_index("schedule")
variants = variants.astype({"Tr": "Int64", "Tc": "Int64"})  # a refused row has none
variants.round(2)

# %% tags=["remove-input"]
v = variants["HBM traffic (MB)"]
default, paper_rule, fa1_mb = (
    v["fa2, default tiles"],
    v["fa2 with Algorithm 1's tiles"],
    v["fa1, Algorithm 1's tiles"],
)
big = f"fa2, Br = Bc = {fa1_tiles.block_cols}"
taller = (
    f"Square tiles of {fa1_tiles.block_cols} would cut the K/V re-reads further, but count() refuses them: "
    f"{variants.loc[big, 'note'].removeprefix('refused: ')}."
    if variants.loc[big, "note"]
    else f"Square tiles of {fa1_tiles.block_cols} would move {v[big]:.1f} MB."
)
display(
    Markdown(
        f"With Algorithm 1's tiles (Br = {fa1_tiles.block_rows}) FA2 moves {paper_rule:.1f} MB, "
        f"{paper_rule / fa1_mb:.1f}× FA1's {fa1_mb:.1f} MB — the "
        f"wrong lesson that FA2 is an IO regression. With its default tiles "
        f"({variants.loc['fa2, default tiles', 'Br']:.0f}×{variants.loc['fa2, default tiles', 'Bc']:.0f}) it moves "
        f"{default:.1f} MB ({default / fa1_mb:.2f}× FA1's traffic). {taller} Real FA2 kernels also "
        f"run many Q blocks of the same head at once, so on a GPU most K/V re-reads hit the L2 cache (K and V of "
        f"one head are {charts.fmt_bytes(2 * w.matrix_bytes('K'))} at N = {N}; the H200's L2 holds "
        f"{charts.fmt_bytes(GPU.level('L2').capacity_bytes)}). **The model has no L2 level**: it counts every "
        f"re-read as an HBM trip. Lecture 5 compares with measured DRAM traffic."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What FlashAttention-2 changed beyond the loop order
#
# Dao (2023), *FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning*:
#
# 1. **Parallelism over the sequence.** FA1 launched one thread block per (batch, head); FA2 adds the
#    Q blocks as a grid dimension, so a long sequence with few heads still fills the GPU.
# 2. **Fewer non-matmul FLOPs.** Tensor cores run matmuls many times faster than the exponentials,
#    divisions and rescalings around them. FA2 keeps O unnormalised and divides by ℓ once at the end,
#    and stores one logsumexp L per row instead of ℓ and m.
# 3. **Work split between warps.** FA1 split K/V across the warps of a block ("split-K"), which then
#    had to add their partial results through shared memory; FA2 splits Q ("split-Q"): each warp owns
#    its rows, and S, P and the O accumulator stay in registers.

# %%
h = 16  # heads, batch 1: a long-context inference step
fa2_default = count("fa2", Workload(N, D), sram_bytes=SRAM)
parallel = pd.DataFrame(
    {
        "thread blocks, FA1-style grid (B·H)": [h],
        f"thread blocks, FA2 grid (B·H·Tr, Tr = {fa2_default.tr})": [h * fa2_default.tr],
        "SMs on the H200": [GPU.sm_count],
        f"O divisions by ℓ per head, FA1 (Tc·N·d, Tc = {fa1_tiles.tc})": [fa1_tiles.tc * N * D],
        "O divisions by ℓ per head, FA2 (N·d)": [N * D],
    },
    index=[f"N = {N}, d = {D}, B = 1, H = {h}"],
).T
parallel

# %% tags=["remove-input"]
display(
    Markdown(
        f"At B = 1, H = {h}, an FA1-style grid has {h} blocks for {GPU.sm_count} SMs (most of the GPU idle); FA2's "
        f"grid has {h * fa2_default.tr}. FA1 rescales and divides its O rows after each of its {fa1_tiles.tc} K/V "
        f"blocks; FA2 divides once: {fa1_tiles.tc}× fewer divisions. None of this changes the HBM bytes this "
        f"lecture counts — it changes how fast the tensor cores get through the same FLOPs."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Traffic against head dimension and SRAM size
#
# Left: N = 4096, H200 tiles, d from 16 to 256. Right: N = 4096, d = 64, shared memory per block from
# 16 KiB to 1 MiB (dotted lines: the presets' per-block shared memory).

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="HBM traffic per head against head dimension d (left) and against shared memory per thread block (right) for naive, FA1, FA2 and the bounds"
dims = [16, 32, 64, 128, 256]
by_d = pd.DataFrame([all_lines(Workload(N, d)) for d in dims], index=pd.Index(dims, name="d"))
kib = [16, 32, 64, 128, 256, 512, 1024]
by_m = pd.DataFrame([all_lines(Workload(N, D), k * 1024) for k in kib], index=pd.Index(kib, name="KiB"))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 6.6))
fits_d, fits_m = {}, {}
for name in by_d.columns:
    dashed = "--" if name in ("compulsory", "saha_ye") else "-"
    fits_d[name] = charts.plot_loglog(
        ax1, dims, by_d[name], charts.LABELS[name].split(" (")[0], color=charts.COLORS[name], ls=dashed
    )
    fits_m[name] = charts.plot_loglog(
        ax2, kib, by_m[name], charts.LABELS[name].split(" (")[0], color=charts.COLORS[name], ls=dashed
    )
charts.pow2_axis(ax1, dims, label="head dimension d")
charts.bytes_axis(ax1, label="HBM traffic per head")
ax1.set_title(f"vs head dimension (N = {N}, {GPU.name} tiles)")
charts.pow2_axis(ax2, kib, label="shared memory per thread block (KiB)")
charts.bytes_axis(ax2, label="device-memory (HBM) traffic per head")
ax2.set_title(f"vs SRAM size (N = {N}, d = {D})")
ax2.set_ylim(bottom=ax2.get_ylim()[0] / 3)  # room for the presets' names below the bound
preset_sizes = {}
for key in preset_keys():
    preset_sizes.setdefault(load_preset(key).sram_bytes / 1024, []).append(key)
for size, keys in preset_sizes.items():
    ax2.axvline(size, color="gray", ls=":", lw=1)
    ax2.text(
        size,
        ax2.get_ylim()[0] * 1.3,
        " " + ", ".join(keys),
        rotation=90,
        fontsize=8,
        color="gray",
        va="bottom",
        ha="right",
    )
for ax in (ax1, ax2):
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
plt.show()

# %% tags=["remove-input"]
display(
    Markdown(
        f"Against d (left) naive traffic barely moves (slope {fits_d['naive'].slope:.2f}: the N² terms "
        f"dominate), FA1 grows almost like d² (slope {fits_d['fa1'].slope:.2f}; N²d²/M alone would give 2, "
        f"the linear terms pull it down), and FA2 has slope {fits_d['fa2'].slope:.2f}; at d = 256 its default "
        f"tiles are {count('fa2', Workload(N, 256), sram_bytes=SRAM).block_rows}×"
        f"{count('fa2', Workload(N, 256), sram_bytes=SRAM).block_cols} and it moves "
        f"{by_d.loc[256, 'fa2'] / by_d.loc[256, 'naive']:.2f}× naive's bytes. Against SRAM size (right), "
        f"FA1 falls with slope {fits_m['fa1'].slope:.2f} (∝ 1/M) like the bound "
        f"({fits_m['saha_ye'].slope:.2f}); FA2's slope is {fits_m['fa2'].slope:.2f}: its traffic follows its "
        f"Q-block height Br, which its tile rule ties to d and the kernel's table, not to M."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Block size, in the style of Figure 2 (middle) of the FlashAttention paper
#
# N = 1024, d = 64; block sizes 64 to 512. FA1 with Bc = block size, FA2 with Br = block size (the
# other block equal). The paper's figure shows **runtime too; this model counts HBM bytes only**, and
# per head (the paper's absolute GB also depend on its batch × heads, which scale these bars linearly).

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="HBM accesses per head against block size at N = 1024 for FA1 and FA2, blocks whose tiles exceed the A100 shared memory or register file shaded"
blocks = [64, 128, 256, 512]
w = Workload(1024, 64)


def too_big(algorithm, block):
    """What of the A100 the on-chip working set with Br = Bc = block overflows ('' if it fits): its shared
    memory per thread block or its register file (S/P and the O accumulator of FA2 live there)."""
    ws = count(algorithm, w, block_rows=block, block_cols=block).working_set
    over = [
        name
        for name, need, have in (
            ("shared memory", ws.bytes("SRAM"), a100.sram_bytes),
            ("registers", ws.bytes("registers"), a100.register_file_bytes),
        )
        if need > have
    ]
    try:  # count() with the preset checks the same two capacities
        count(algorithm, w, hardware=a100, block_rows=block, block_cols=block)
        assert not over, (algorithm, block, over)
    except ValueError:
        assert over, (algorithm, block)
    return " and ".join(over)


sweep = pd.DataFrame(
    {
        "fa1 (Bc = block)": [count("fa1", w, block_rows=b, block_cols=b).hbm_bytes / 1e6 for b in blocks],
        "fa2 (Br = block)": [count("fa2", w, block_rows=b, block_cols=b).hbm_bytes / 1e6 for b in blocks],
        "fa1 on the A100: too big for": [too_big("fa1", b) for b in blocks],
        "fa2 on the A100: too big for": [too_big("fa2", b) for b in blocks],
    },
    index=pd.Index(blocks, name="block size"),
)

fig, ax = plt.subplots(figsize=(8.5, 5.2))
sweep_fits = {}
for col, name in (("fa1 (Bc = block)", "fa1"), ("fa2 (Br = block)", "fa2")):
    sweep_fits[name] = charts.plot_loglog(
        ax, blocks, sweep[col] * 1e6, f"{charts.LABELS[name]}, {col[5:-1]}", color=charts.COLORS[name]
    )
for b, row in sweep.iterrows():
    over = [f"{name}: {row[f'{name} on the A100: too big for']}" for name in ("fa1", "fa2")]
    over = [o for o in over if not o.endswith(": ")]
    if over:
        ax.axvspan(b / 1.25, b * 1.25, color="gray", alpha=0.15)
        ax.text(
            b,
            ax.get_ylim()[1] / 1.15,
            "exceeds the A100's\n" + "\n".join(over),
            ha="center",
            va="top",
            fontsize=8,
        )
ax.axhline(
    compulsory_bytes(w), color=charts.COLORS["compulsory"], ls="--", lw=1, label=charts.LABELS["compulsory"]
)
charts.pow2_axis(ax, blocks, label="block size (rows)")
charts.bytes_axis(ax, label="HBM accesses per head")
ax.set_title("Effect of block size on HBM accesses (N = 1024, d = 64); model: bytes only, no runtime")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=9)
plt.show()
sweep.round(2)

# %% tags=["remove-input"]
halving = (sweep.iloc[1:, :2].values / sweep.iloc[:-1, :2].values).ravel()
limits = {name: sweep[f"{name} on the A100: too big for"] for name in ("fa1", "fa2")}
fit_up_to = {name: max([b for b in blocks if not col[b]], default="none") for name, col in limits.items()}
stops = {name: next((x for x in col if x), "nothing in this range") for name, col in limits.items()}
display(
    Markdown(
        f"Each doubling of the block cuts the HBM accesses to "
        f"{halving.min():.0%}–{halving.max():.0%} of the previous value (fitted slopes {sweep_fits['fa1'].slope:.2f} "
        f"for FA1, {sweep_fits['fa2'].slope:.2f} for FA2), approaching the compulsory "
        f"{charts.fmt_bytes(compulsory_bytes(w), False)} as one block covers the whole sequence. On an A100 "
        f"({a100.sram_bytes // 1024} KiB of shared memory per block, {a100.register_file_bytes // 1024} KiB of "
        f"registers per SM) the on-chip working set of Br = Bc = block fits up to {fit_up_to['fa1']} for FA1 "
        f"(beyond it: its {stops['fa1']}, where Algorithm 1 keeps S and P) and up to {fit_up_to['fa2']} for FA2 "
        f"(beyond it: its {stops['fa2']}, which hold S, P and the O accumulator in fp32); larger blocks are "
        f"shaded. Whether fewer bytes also mean less time (the paper's runtime curve) is for the hardware to say."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## "O(N) HBM reads/writes": where it is right and where not
#
# The popular posts say FlashAttention makes attention's HBM reads/writes O(N). Two different
# quantities hide in that sentence.

# %% [markdown] slideshow={"slide_type": "notes"}
# Write the two quantities side by side on the board: *extra memory* (what must be stored besides Q, K,
# V and O) and *traffic* (what crosses the memory bus, counting re-reads). Ask which one the slope of
# the previous chart measured. Only the first is linear in N.

# %%
growth = claims.claim_d(seq_lens=tuple(2**k for k in range(10, 17)))
slopes = claims.slopes_d(growth)
slopes.round(3)

# %% tags=["remove-input"]
s = slopes.set_index("algorithm")
g = growth.set_index(["algorithm", "N"])
w4, w8 = Workload(4096, D), Workload(8192, D)
display(
    Markdown(
        f"- **Extra memory: O(N) is right.** Beyond Q, K, V and O, naive attention stores S and P "
        f"({charts.fmt_bytes(g.loc[('naive', 4096), 'extra memory (bytes)'])} per head at N = 4096, slope "
        f"{s.loc['naive', 'extra-memory slope']:.2f}); FlashAttention-2 stores only the logsumexp "
        f"({charts.fmt_bytes(g.loc[('fa2', 4096), 'extra memory (bytes)'])}, slope "
        f"{s.loc['fa2', 'extra-memory slope']:.2f}).\n"
        f"- **HBM traffic: O(N) is wrong.** FlashAttention's traffic is Θ(N²d²/M): fitted slopes "
        f"{s.loc['fa1', 'traffic slope']:.2f} (FA1) and {s.loc['fa2', 'traffic slope']:.2f} (FA2), like "
        f"naive's {s.loc['naive', 'traffic slope']:.2f}. From N = 4096 to 8192 FA2's traffic grows "
        f"{traffic('fa2', w8) / traffic('fa2', w4):.2f}×, FA1's {traffic('fa1', w8) / traffic('fa1', w4):.2f}×. "
        f"What tiling buys is a constant factor, and the next table measures it."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Theorem 2 and Proposition 3, next to the counts
#
# **Theorem 2** (Dao et al. 2022): standard attention (Algorithm 0) makes Θ(Nd + N²) HBM accesses;
# FlashAttention (Algorithm 1) makes Θ(N²d²M⁻¹). **Proposition 3**: no exact attention algorithm makes
# o(N²d²M⁻¹) HBM accesses for *all* M in [d, Nd]. That excludes only an algorithm that beats the bound at
# every M; one that beats it for some M is not excluded, so Proposition 3 alone does not make
# FlashAttention optimal. A lower bound that matches for M ≥ d² is Saha and Ye's (2024, arXiv:2402.07443).
# The exact counts against both expressions (elements):

# %%
theorem = pd.DataFrame(
    [
        {
            "N": n,
            "naive / (Nd + N²)": count("naive", Workload(n, D)).hbm_bytes / 2 / (n * D + n * n),
            "fa1 / (N²d²/M)": traffic("fa1", Workload(n, D)) / 2 / (n * n * D * D / (SRAM // 2)),
            "fa2 / (N²d²/M)": traffic("fa2", Workload(n, D)) / 2 / (n * n * D * D / (SRAM // 2)),
        }
        for n in (1024, 4096, 16384, 65536)
    ]
).set_index("N")
theorem.round(2)

# %% tags=["remove-input"]
display(
    Markdown(
        f"Both ratios settle to constants as N grows (naive → {theorem['naive / (Nd + N²)'].iloc[-1]:.2f}: its "
        f"4N² element accesses over N²; FA1 → {theorem['fa1 / (N²d²/M)'].iloc[-1]:.1f}, FA2 → "
        f"{theorem['fa2 / (N²d²/M)'].iloc[-1]:.1f} on the {GPU.name}, M = {SRAM // 2:,} elements): the theorem's Θ "
        f"hides exactly these constants. FA2's is larger because its K/V re-reads are set by Br, not by M: with "
        f"its table tiles FlashAttention-2 moves Θ(N²d/Br) whatever M is, so its ratio to N²d²/M grows with M "
        f"(the SRAM sweep above: slope ≈ 0)."
    )
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# How tight is Θ(N²d²/M)? The ratio of FA1's exact traffic to N²d²/M (both in elements) over a grid of
# N, d and SRAM sizes:

# %% tags=["remove-input"]
rows = []
for n in (2048, 8192, 32768):
    for d in (32, 64, 128):
        for k in (64, 128, 227):
            wl = Workload(n, d)
            r = count("fa1", wl, sram_bytes=k * 1024)
            m = k * 1024 // wl.element_bytes
            rows.append(
                {
                    "N": n,
                    "d": d,
                    "SRAM (KiB)": k,
                    "Tc": r.tc,
                    "fa1 elements / (N²d²/M)": r.hbm_bytes / wl.element_bytes / (n * n * d * d / m),
                }
            )
ratio = pd.DataFrame(rows)
ratio.pivot_table(index=["N", "d"], columns="SRAM (KiB)", values="fa1 elements / (N²d²/M)").round(1)

# %% tags=["remove-input"]
col = ratio["fa1 elements / (N²d²/M)"]
big = ratio[ratio.N == 32768]["fa1 elements / (N²d²/M)"]
display(
    Markdown(
        f"At N = 32768 the ratio lies between {big.min():.1f} and {big.max():.1f}: FA1's traffic is a "
        f"fixed multiple of N²d²/M, so Theorem 2's upper bound is tight for Algorithm 1. That is not "
        f"optimality: that no exact algorithm can do better (for M ≥ d²) is a lower bound, proved separately by "
        f"Saha and Ye (2024). Over the "
        f"whole grid it ranges from {col.min():.1f} to {col.max():.1f} (small N: the compulsory 4Nd and the "
        f"rounding of Tc = ⌈N/Bc⌉ still matter)."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# 1. Naive attention moves Θ(Nd + N²) elements: S and P go to HBM and back. FA1 re-reads Q and O
#    (and re-writes O) once per K/V block, Tc times; FA2 re-reads K and V once per Q block, Tr times.
# 2. A tile walk's byte counter, step by step from the schedule's own trace, ends exactly on
#    `count()`; a causal mask skips the tiles above the diagonal and computes the diagonal ones whole.
# 3. Tiling does not change the exponent: FlashAttention's HBM traffic is still quadratic in N, with a
#    constant ∝ d²/M for FA1 (more SRAM, fewer re-reads) and ∝ d/Br for FA2 (taller Q blocks, fewer
#    re-reads): FA2 with its table tiles moves Θ(N²d/Br), independent of M.
# 4. Its *extra memory* is linear in N: that part of "O(N)" is right; the traffic part is wrong.
# 5. What FlashAttention-2 changed beyond the loop order (parallelism over the sequence, fewer
#    non-matmul FLOPs, split-Q across warps) buys speed on the tensor cores, not fewer bytes; on a GPU
#    the L2 cache absorbs many K/V re-reads, which this model does not have.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Solutions are hidden under each exercise: try first, then open them.

# %% [markdown]
# ### Exercise 1
#
# FlashAttention-1 on the A100-40GB preset, N = 2048, d = 64, fp16: compute by hand M, Bc = ⌈M/4d⌉,
# Br = min(Bc, d) and Tc, then the HBM bytes read and written with the formulas at the top (elements
# × 2 B, the statistics ℓ, m × 4 B). Check against `count("fa1", ...)`.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
a100_40 = load_preset("a100-40gb")
n1, d1 = 2048, 64
m1 = a100_40.sram_bytes // 2
bc1 = -(-m1 // (4 * d1))
br1, tc1 = min(bc1, d1), -(-n1 // bc1)
reads1 = (2 * n1 * d1 + tc1 * 2 * n1 * d1) * 2 + tc1 * 2 * n1 * 4
writes1 = (n1 * d1 + tc1 * n1 * d1) * 2 + (2 * n1 + tc1 * 2 * n1) * 4
r1 = count("fa1", Workload(n1, d1), sram_bytes=a100_40.sram_bytes)
print(f"M = {m1}, Bc = {bc1}, Br = {br1}, Tc = {tc1}: {reads1:,} B read, {writes1:,} B written")
assert (r1.block_rows, r1.block_cols, r1.tc) == (br1, bc1, tc1)
assert (r1.hbm_read_bytes, r1.hbm_write_bytes) == (reads1, writes1)

# %% [markdown]
# ### Exercise 2
#
# FlashAttention-2 keeps Q_i, K_j and V_j in shared memory: (Br + 2·Bc)·d elements. With Br = 128 and
# d = 128 in fp16, what is the largest Bc (a multiple of 16) that fits the RTX 4090's shared memory
# per thread block? Solve the inequality by hand, then find it by asking `count()` (which refuses
# tiles that do not fit).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
rtx = load_preset("rtx-4090")
br2, d2 = 128, 128
by_hand2 = (rtx.sram_bytes // (2 * d2) - br2) // 2 // 16 * 16


def fits2(bc):
    try:
        count("fa2", Workload(4096, d2), sram_bytes=rtx.sram_bytes, block_rows=br2, block_cols=bc)
        return True
    except ValueError:
        return False


largest2 = max(bc for bc in range(16, 1025, 16) if fits2(bc))
print(f"{rtx.name}: {rtx.sram_bytes / 1024:g} KiB per block → largest Bc = {largest2}")
assert (
    largest2 == by_hand2
    and (br2 + 2 * largest2) * d2 * 2 <= rtx.sram_bytes < (br2 + 2 * (largest2 + 16)) * d2 * 2
)

# %% [markdown]
# ### Exercise 3
#
# Causal FlashAttention-2 at N = 1024, d = 64 with its H200 tiles: count, from a boolean causal mask,
# which tiles hold at least one unmasked score, and from that the bytes read (Q once, K_j and V_j for
# every visited tile). Predict the fraction of the unmasked reads; check against `count()` and the
# last step of the tile walk.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
import numpy as np  # noqa: E402

w3 = Workload(1024, D, causal=True)
r3 = count("fa2", w3, sram_bytes=SRAM)
n3, br3, bc3 = w3.seq_len, r3.block_rows, r3.block_cols
mask3 = np.tril(np.ones((n3, n3), bool))
reads3 = 0
for i in range(0, n3, br3):
    reads3 += min(br3, n3 - i) * D  # Q_i
    for j in range(0, n3, bc3):
        if mask3[i : i + br3, j : j + bc3].any():
            reads3 += 2 * min(bc3, n3 - j) * D  # K_j, V_j
reads3 *= w3.element_bytes
unmasked3 = count("fa2", Workload(1024, D), sram_bytes=SRAM).hbm_read_bytes
print(f"causal reads {reads3:,} B = {reads3 / unmasked3:.1%} of the unmasked {unmasked3:,} B")
assert reads3 == r3.hbm_read_bytes == tile_walk("fa2", w3, sram_bytes=SRAM).steps[-1].read_so_far

# %% [markdown]
# ### Exercise 4
#
# At N = 4096, d = 64, fp16: what is the smallest power-of-two block B (Br = Bc = B) for which FA2
# moves fewer HBM bytes in total than FA1 with Algorithm 1's tiles on the H200? Predict from the
# formulas, check with `count()`, then ask `count(..., hardware=...)` whether that tile fits the
# H200's register file (S/P, the O accumulator, ℓ and m in fp32: (B² + B·d + 2B)·4 B).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
w4 = Workload(4096, D)
fa1_total = count("fa1", w4, sram_bytes=SRAM).hbm_bytes
n4 = w4.seq_len


def fa2_total_by_hand(b):
    return (n4 * D + -(-n4 // b) * 2 * n4 * D + n4 * D) * 2 + n4 * 4  # reads Q, K, V; writes O; L fp32


sizes4 = [2**k for k in range(4, 11)]
smallest4 = next(b for b in sizes4 if fa2_total_by_hand(b) < fa1_total)
assert all(fa2_total_by_hand(b) == count("fa2", w4, block_rows=b, block_cols=b).hbm_bytes for b in sizes4)
assert count("fa2", w4, block_rows=smallest4, block_cols=smallest4).hbm_bytes < fa1_total
registers4 = (smallest4**2 + smallest4 * D + 2 * smallest4) * 4
try:
    count("fa2", w4, hardware=GPU, block_rows=smallest4, block_cols=smallest4)
    fits4 = True
except ValueError:
    fits4 = False
print(
    f"B = {smallest4}: {registers4:,} B of registers, the H200 has {GPU.register_file_bytes:,} B; fits: {fits4}"
)
assert fits4 == (registers4 <= GPU.register_file_bytes)
