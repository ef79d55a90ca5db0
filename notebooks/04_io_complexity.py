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
# # Lecture 4 — IO complexity I: how many trips does each schedule make?
#
# Each schedule's HBM traffic derived from its loop nest, constants included, walked tile by tile with a
# byte counter, and checked against `count()`.

# %% [markdown] slideshow={"slide_type": "notes"}
# Lecture 3 made attention run tile by tile. This lecture counts, exactly, what each loop order costs
# in HBM traffic, derives the constants that the paper's Θ hides, and steps through the tiles with a
# byte counter. Lecture 4b proves the bounds around these counts (Theorem 2, the lower bound, the matmul
# analogue) and checks the posts' "O(N)".

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Derive the HBM reads and writes of naive attention, FlashAttention-1 and FlashAttention-2 from
#   their loop nests, and evaluate them for a given N, d and SRAM size.
# - Derive the constants in front of the traffic: 12 + 32/d (in units of N²d²/M) for FA1 with
#   Algorithm 1's tiles, 2M/(Br·d) for FA2 with its kernel's tiles.
# - Follow a tile walk step by step and say which blocks are loaded, what sits in SRAM and registers,
#   and how many bytes have crossed HBM so far; say which tiles a causal mask skips.
# - Explain why tiling changes the constant but not the exponent of N, and how Br and Bc set it.
#
# **Prerequisites**
#
# Lectures 2 and 3 (naive attention; the online softmax and the tiled loop); Br, Bc, Tr = ⌈N/Br⌉,
# Tc = ⌈N/Bc⌉; log–log plots.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 4 | Three schedules, three formulas |
# | 8 | Where the constants come from: FA1's 12 + 32/d, FA2's 2M/(Br·d) |
# | 10 | Step through naive, FA1 and FA2 (tile walk, causal) |
# | 4 | The tiles on each GPU |
# | 5 | Traffic against N: the exponent does not change |
# | 7 | FA1 against FA2: the tiles decide; what else FA2 changed |
# | 3 | Summary |
# | 9 | Exercises |

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
# with Tr = ⌈N / Br⌉, Tc = ⌈N / Bc⌉.

# %% [markdown] slideshow={"slide_type": "notes"}
# FlashAttention-1's tiles come from the paper's Algorithm-1 rule (M = SRAM bytes / 2,
# Bc = ⌈M / 4d⌉, Br = min(Bc, d)); FlashAttention-2's are `count()`'s default for `fa2` (the FA2 kernel's
# own). Two reference lines appear in the charts: the **compulsory** traffic (read Q, K, V and write O
# once, 4Nd) and the **Saha–Ye lower bound** Θ(min(N²d²/M, N²d/√M)), which is *asymptotic*: its constant
# is unknown, and we draw it with constant 1 (Lecture 4b).

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
from course.traffic_lines import all_lines
from simlib import Workload, count, load_preset, preset_keys

charts.use_style()
GPU = load_preset("h200")
SRAM = GPU.sram_bytes
N, D = 4096, 64


# %% [markdown] slideshow={"slide_type": "slide"}
# ## Where the constants come from: FlashAttention-1
#
# Algorithm 1's loop nest, outer loop over the Tc K/V blocks:
#
# - K_j and V_j are read once each: **2Nd** in all;
# - for every K/V block, every Q block: Q_i and O_i read, O_i written: **3Nd per K/V block**;
# - ℓ and m (fp32): 2N written at the start, 2N read and 2N written per K/V block.
#
# With Bc = M/4d the outer loop runs Tc = N/Bc = 4Nd/M times:
#
# $$\frac{\text{bytes}/2}{N^2d^2/M} \;\to\; \underbrace{3\cdot 4}_{Q,\,O\ \text{per K/V block}} + \underbrace{\frac{4\cdot 4\cdot 2}{d}}_{\ell,\,m\ \text{in fp32}} = 12 + \frac{32}{d}.$$

# %% [markdown] slideshow={"slide_type": "notes"}
# Say it in words: every K/V block costs one pass over Q and O (read Q, read O, write O: three N×d
# matrices), and there are 4Nd/M K/V blocks. The statistics are 4N fp32 numbers per K/V block, which is
# 8N in units of 2 bytes: 8N·4Nd/M = 32N²d/M, a d-th of the main term. The 2Nd for K and V and the
# initial writes are lower order: they vanish from the ratio as N grows.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### … and FlashAttention-2
#
# Outer loop over the Tr Q blocks: Q_i read once (**Nd**), K and V read once per Q block
# (**2Nd per Q block**), O written once (**Nd**), the logsumexp L once (N, fp32). With Tr = N/Br:
#
# $$\frac{\text{bytes}/2}{N^2d^2/M} \;\to\; \frac{2\,N^2d/B_r}{N^2d^2/M} = \frac{2M}{B_r\,d}.$$
#
# FA2's constant depends on M only through the tiles it picks: its kernel table fixes Br by d and the
# architecture, so its ratio to N²d²/M *grows* with M.


# %% slideshow={"slide_type": "subslide"}
def fa1_bytes(n, d, tc):
    """Algorithm 1 line by line (bytes): fp16 K, V once and Q, O read + O written per K/V block,
    O initialised; fp32 ℓ, m written at the start and read + written per K/V block."""
    return 2 * (2 * n * d + 3 * tc * n * d + n * d) + 4 * (2 * n + 4 * tc * n)


def fa2_bytes(n, d, tr):
    """FA2's forward (bytes): fp16 Q once, K and V once per Q block, O once; fp32 L once."""
    return 2 * (n * d + 2 * tr * n * d + n * d) + 4 * n


m_el = SRAM // 2  # M in fp16 elements
rows = []
for d in (64, 128):
    for n in (2**12, 2**16, 2**20):
        w, base = Workload(n, d), n * n * d * d / m_el
        r1, r2 = count("fa1", w, sram_bytes=SRAM), count("fa2", w, sram_bytes=SRAM)
        assert r1.hbm_bytes == fa1_bytes(n, d, r1.tc) and r2.hbm_bytes == fa2_bytes(n, d, r2.tr)
        rows.append(
            {
                "d": d,
                "N": n,
                "FA1 (bytes/2) / (N²d²/M)": r1.hbm_bytes / 2 / base,
                "12 + 32/d": 12 + 32 / d,
                "FA2 (bytes/2) / (N²d²/M)": r2.hbm_bytes / 2 / base,
                "2M/(Br·d)": 2 * m_el / (r2.block_rows * d),
            }
        )
constants = pd.DataFrame(rows).set_index(["d", "N"])
last = constants.xs(2**20, level="N")
assert ((last.iloc[:, 0] / last["12 + 32/d"] - 1).abs() < 0.005).all()  # the limit, derived above
assert ((last.iloc[:, 2] / last["2M/(Br·d)"] - 1).abs() < 0.005).all()
constants.round(3)

# %% [markdown] slideshow={"slide_type": "notes"}
# The code above checks the loop-nest formulas against `count()` to the byte at every N, and the
# limits at N = 2²⁰ within half a per cent. At small N the lower-order terms (the 2Nd for K and V, the
# rounding of Tc and Tr) still show; they fall off as 1/N.

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
per_gpu = [
    "GPU",
    "compute capability",
    "FA2 kernel runs",
    "shared + L1 per SM (KiB)",
    "SRAM per block (KiB)",
    "M (elements)",
]
tiles[per_gpu].drop_duplicates().set_index("GPU")

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
tiles.assign(tiles=tiles.Br.astype(str) + "×" + tiles.Bc.astype(str)).pivot_table(
    index="GPU", columns="d", values=["tiles", "Tr", "Tc"], aggfunc="first", sort=False
)

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
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
by_n = pd.DataFrame([all_lines(Workload(n, D), SRAM) for n in seq], index=pd.Index(seq, name="N"))

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

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
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

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
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

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
display(
    Markdown(
        f"At B = 1, H = {h}, an FA1-style grid has {h} blocks for {GPU.sm_count} SMs (most of the GPU idle); FA2's "
        f"grid has {h * fa2_default.tr}. FA1 rescales and divides its O rows after each of its {fa1_tiles.tc} K/V "
        f"blocks; FA2 divides once: {fa1_tiles.tc}× fewer divisions. None of this changes the HBM bytes this "
        f"lecture counts — it changes how fast the tensor cores get through the same FLOPs."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# 1. Naive attention moves Θ(Nd + N²) elements: S and P go to HBM and back. FA1 re-reads Q and O
#    (and re-writes O) once per K/V block, Tc times; FA2 re-reads K and V once per Q block, Tr times.
# 2. The constants follow from the loop nests: FA1 with Algorithm 1's tiles moves (12 + 32/d)·N²d²/M
#    (in 2-byte units) as N grows, FA2 with its kernel's tiles 2M/(Br·d)·N²d²/M = 2N²d/Br.
# 3. A tile walk's byte counter, step by step from the schedule's own trace, ends exactly on
#    `count()`; a causal mask skips the tiles above the diagonal and computes the diagonal ones whole.
# 4. Tiling does not change the exponent: FlashAttention's HBM traffic is still quadratic in N. What
#    FlashAttention-2 changed beyond the loop order buys speed on the tensor cores, not fewer bytes.
#    Lecture 4b: how close these counts are to what any algorithm must move.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Solutions are hidden under each exercise: try first, then open them.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1 — FA1 by hand
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2 — the largest Bc that fits (design)
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3 — causal tiles
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 4 — when FA2 beats FA1 (design)
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 5 — FA2's constant if its tiles came from M (proof)
#
# Suppose FlashAttention-2 took the largest square tiles B = Br = Bc whose Q_i, K_j and V_j fit in M
# elements of shared memory (3·B·d ≤ M), as Algorithm 1 sizes FA1's tiles from M. Prove that its traffic
# then tends to 6·N²d²/M (2-byte units) as N grows, half of FA1's 12. Check it with `count()` on the
# H200's shared memory at d = 64 and N = 2²⁰ (no register-file check: pass no `hardware`).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
d5, n5 = 64, 2**20
b5 = m_el // (3 * d5)  # the largest B with 3·B·d ≤ M
r5 = count("fa2", Workload(n5, d5), block_rows=b5, block_cols=b5)
assert 3 * b5 * d5 <= m_el < 3 * (b5 + 1) * d5
assert r5.hbm_bytes == fa2_bytes(n5, d5, r5.tr)  # the loop nest, as above
# 2·Tr·N·d elements with Tr = N/B and B = M/3d: 2·N²d·3d/M = 6·N²d²/M
ratio5 = r5.hbm_bytes / 2 / (n5 * n5 * d5 * d5 / m_el)
print(f"B = {b5}: FA2 moves {ratio5:.3f} × N²d²/M (the proof's limit: 6; FA1's: {12 + 32 / d5})")
assert abs(ratio5 / 6 - 1) < 0.01
