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
# # Lecture 4b — IO complexity II: the bounds, and how tight they are
#
# Theorem 2's upper bound proved from the loop nest, a Hong–Kung-style lower bound and what Saha & Ye
# (2024) proved, the matmul analogue Θ(N³/√M), and what "O(N)" really means.

# %% [markdown] slideshow={"slide_type": "notes"}
# Lecture 4 counted each schedule exactly and derived its constant. This lecture asks what those
# counts are worth against what *any* algorithm must move: it proves the paper's upper bound, sketches
# the lower bound, does the same for matrix multiplication (where the argument was born), and reads the
# sweeps over d, M and the block size against the bounds.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Prove Theorem 2's upper bound for Algorithm 1 from its loop nest, and say why it is also a lower
#   bound for that algorithm (Θ).
# - Sketch the segment argument (Hong & Kung 1981) that gives Ω(N²d²/M), say which assumption the sketch
#   makes and what Saha & Ye (2024) proved without it; say what Proposition 3 does and does not exclude.
# - Derive matrix multiplication's Θ(N³/√M): the tiled upper bound and the Loomis–Whitney lower bound,
#   and say why attention's bound is different.
# - Read the traffic against d, M and the block size, and say where "FlashAttention makes HBM traffic
#   O(N)" is right (extra memory) and wrong (traffic).
#
# **Prerequisites**
#
# Lecture 4 (the three schedules' formulas and their constants); log–log plots; a proof by counting.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 7 | Head dimension, SRAM size and block size |
# | 5 | "O(N)": extra memory against traffic |
# | 9 | Theorem 2's upper bound, proved; how tight it is |
# | 10 | The lower bound: Proposition 3, a Hong–Kung sketch, Saha & Ye (2024) |
# | 8 | The matmul analogue: Θ(N³/√M) |
# | 3 | Summary |
# | 8 | Exercises |

# %% slideshow={"slide_type": "skip"}
import math

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from course import charts
from course.traffic_lines import all_lines, traffic
from evidence import claims
from simlib import Workload, compulsory_bytes, count, load_preset, preset_keys, saha_ye_bytes

charts.use_style()
GPU = load_preset("h200")
SRAM = GPU.sram_bytes
N, D = 4096, 64
a100 = load_preset("a100-40gb")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Traffic against head dimension and SRAM size
#
# Left: N = 4096, H200 tiles, d from 16 to 256. Right: N = 4096, d = 64, shared memory per block from
# 16 KiB to 1 MiB (dotted lines: the presets' per-block shared memory).

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="HBM traffic per head against head dimension d (left) and against shared memory per thread block (right) for naive, FA1, FA2 and the bounds"
dims = [16, 32, 64, 128, 256]
by_d = pd.DataFrame([all_lines(Workload(N, d), SRAM) for d in dims], index=pd.Index(dims, name="d"))
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

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
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

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
sweep.round(2)

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
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
        f"{traffic('fa2', w8, SRAM) / traffic('fa2', w4, SRAM):.2f}×, FA1's {traffic('fa1', w8, SRAM) / traffic('fa1', w4, SRAM):.2f}×. "
        f"What tiling buys is a constant factor, and the next table measures it."
    )
)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## Theorem 2's upper bound, proved
#
# **Claim** (Dao et al. 2022): for d ≤ M ≤ Nd, Algorithm 1 makes Θ(N²d²/M) HBM accesses.
#
# **Proof.** Algorithm 1 takes Bc = ⌈M/4d⌉, so the outer loop runs Tc = ⌈N/Bc⌉ ≤ 4Nd/M + 1 times.
# K and V are read once (2Nd); O, ℓ, m are initialised (Nd + 2N); each outer iteration makes one pass
# over Q and O (3Nd) and the statistics (4N). Counting every access as one:
#
# $$A \le 3Nd + 2N + \Big(\frac{4Nd}{M} + 1\Big)(3Nd + 4N) = 12\frac{N^2d^2}{M}\Big(1 + \frac{4}{3d}\Big) + 6Nd + 6N,$$
#
# and Nd ≤ N²d²/M because M ≤ Nd: A = O(N²d²/M). Conversely Tc ≥ N/Bc ≥ 4Nd/(M + 4d) ≥ 4Nd/5M because
# d ≤ M, so A ≥ 3Nd·Tc ≥ 12N²d²/5M: Θ. ∎

# %% [markdown] slideshow={"slide_type": "notes"}
# The same argument for standard attention (Algorithm 0): it writes S and P (2N²), reads them (2N²)
# and reads Q, K, V and writes O (4Nd), Θ(Nd + N²) whatever M is. The code under this slide evaluates
# the exact count and both sides of the proof's inequalities on a grid of N, d and M inside d ≤ M ≤ Nd.


# %% slideshow={"slide_type": "subslide"}
def upper(n, d, m):
    """The proof's upper bound on Algorithm 1's accesses (elements, statistics counted as one each)."""
    return 12 * n * n * d * d / m * (1 + 4 / (3 * d)) + 6 * n * d + 6 * n


proof = []
for n in (1024, 8192, 65536):
    for d in (32, 64, 128):
        for m in (4 * d, 8 * d * d, 2**14, 2**17):  # M in elements, d ≤ M ≤ Nd (simlib needs M ≥ 4d)
            if not d <= m <= n * d:
                continue
            accesses = count("fa1", Workload(n, d), sram_bytes=2 * m).traffic.elements("HBM")
            assert 12 * n * n * d * d / (5 * m) <= accesses <= upper(n, d, m), (n, d, m)
            proof.append({"N": n, "d": d, "M": m, "A / (N²d²/M)": accesses / (n * n * d * d / m),
                          "upper bound / (N²d²/M)": upper(n, d, m) / (n * n * d * d / m)})  # fmt: skip
proof = pd.DataFrame(proof)
display(
    Markdown(
        f"On {len(proof)} points of the grid every exact count lies between the proof's two sides; "
        f"A/(N²d²/M) ranges from {proof['A / (N²d²/M)'].min():.1f} to {proof['A / (N²d²/M)'].max():.1f} "
        f"(the lower side is 2.4, the upper 12·(1 + 4/3d) plus the linear terms)."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The theorem's Θ, next to the counts
#
# The exact counts against both of Theorem 2's expressions (elements): standard attention (Algorithm 0)
# against Nd + N², FlashAttention-1 and -2 against N²d²/M. Θ hides a constant; here it is.

# %%
theorem = pd.DataFrame(
    [
        {
            "N": n,
            "naive / (Nd + N²)": count("naive", Workload(n, D)).hbm_bytes / 2 / (n * D + n * n),
            "fa1 / (N²d²/M)": traffic("fa1", Workload(n, D), SRAM) / 2 / (n * n * D * D / (SRAM // 2)),
            "fa2 / (N²d²/M)": traffic("fa2", Workload(n, D), SRAM) / 2 / (n * n * D * D / (SRAM // 2)),
        }
        for n in (1024, 4096, 16384, 65536)
    ]
).set_index("N")
theorem.round(2)

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
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

# %% tags=["remove-input"] slideshow={"slide_type": "notes"}
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
# ## What no algorithm can beat: Proposition 3 and the lower bound
#
# **Proposition 3** (Dao et al. 2022): no exact attention algorithm makes o(N²d²/M) HBM accesses for
# *all* M in [d, Nd]. Its proof looks at the top of the range: at M = Θ(Nd), N²d²/M = Θ(Nd), and every
# algorithm reads its inputs and writes its output, Ω(Nd). It says nothing about a smaller M.

# %% [markdown] slideshow={"slide_type": "notes"}
# Proposition 3 excludes only an algorithm that beats the bound at *every* M; one that beats it for
# some M is not excluded, so Proposition 3 alone does not make FlashAttention optimal. That took a real
# lower bound, for every M ≥ d²: Saha and Ye (2024, arXiv:2402.07443), next slide.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A segment argument (Hong & Kung 1981), sketched
#
# Cut any execution into segments of M HBM accesses. During one, at most 2M words are on chip (M at
# its start, M brought in): at most 2M/d whole rows of Q and 2M/d of K. *If every score q_i·k_j is formed
# from whole rows inside one segment*, a segment completes at most (2M/d)² of the N² scores, so
#
# $$\#\text{segments} \ge \frac{N^2 d^2}{4M^2}, \qquad \text{accesses} \ge M\Big(\frac{N^2d^2}{4M^2} - 1\Big) = \frac{N^2d^2}{4M} - M.$$
#
# **Saha & Ye (2024)** prove Ω(N²d²/M) for M ≥ d² without that assumption (partial dot products kept
# between segments, even fast matrix multiplication): FlashAttention is optimal up to a constant there.
# For M < d² splitting the dot products pays, and the bound becomes the matmul-like Θ(N²d/√M).

# %% [markdown] slideshow={"slide_type": "notes"}
# The charts' `saha_ye` line is min(N²d²/M, N²d/√M) with constant 1: the two branches meet at
# M = d² (Exercise 3). The sketch's assumption is exactly what FlashAttention does: Q_i and K_j sit whole in
# SRAM while their scores are formed, so its counts must respect the sketch's bound; the table under
# this slide checks that, and shows the constant between them.


# %% slideshow={"slide_type": "subslide"}
def segment_bound(n, d, m):
    """The sketch's lower bound on the accesses (elements): N²d²/4M − M."""
    return n * n * d * d / (4 * m) - m


rows = []
for n in (4096, 65536):
    for d in (64, 128):
        for kib in (64, 227):
            m = kib * 1024 // 2  # M in fp16 elements; M ≥ d² on this grid
            assert m >= d * d
            bound = segment_bound(n, d, m)
            got = {
                a: count(a, Workload(n, d), sram_bytes=2 * m).traffic.elements("HBM") for a in ("fa1", "fa2")
            }
            assert all(g >= bound for g in got.values())
            rows.append({"N": n, "d": d, "SRAM (KiB)": kib, "FA1 / bound": got["fa1"] / bound,
                         "FA2 / bound": got["fa2"] / bound})  # fmt: skip
pd.DataFrame(rows).set_index(["N", "d", "SRAM (KiB)"]).round(1)


# %% [markdown] slideshow={"slide_type": "notes"}
# FA1 sits about 4 × 12 = 48 times above the sketch's bound: 12 from its own constant (Lecture 4),
# 4 from the sketch's (2M/d)² rows. Neither constant is tight: the theory says only that no algorithm can
# do better than a constant times N²d²/M, not which constant.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The matmul analogue: Θ(N³/√M)
#
# C = AB for N×N matrices: N³ multiply-adds, a fast memory of M words.
#
# - **Upper bound**: b×b tiles with 3b² ≤ M. For each of the (N/b)² tiles of C, stream the N/b tiles
#   of A's row and of B's column: 2N³/b reads and N² writes; with b = √(M/3), 2√3·N³/√M + N².
# - **Lower bound** (Hong & Kung 1981; with constants, Irony, Toledo & Tiskin 2004): in a segment of M
#   accesses at most 2M entries each of A, B and C are at hand; by the Loomis–Whitney inequality it does
#   at most (2M)^{3/2} of the N³ products, so accesses ≥ N³/(2√2·√M) − M.

# %% [markdown] slideshow={"slide_type": "notes"}
# Both bounds are N³/√M: tiling is optimal for matmul up to the constant 2√3 · 2√2 ≈ 9.8. Why is
# attention's bound N²d²/M and not N²d/√M when M ≥ d²? Because the matmul argument charges every entry
# of C that a segment touches; attention's N×N scores are consumed on chip (exponentiated, summed into
# O) and never written, so its "C face" costs nothing: only the whole rows of Q and K count, which is the
# segment sketch of the previous slide.


# %% slideshow={"slide_type": "subslide"} alt="Words moved by a tiled 1024 by 1024 matrix multiplication against the fast-memory size M, log-log, with the Hong-Kung lower bound: both fall with slope about minus one half"
def tiled_matmul_accesses(n, b):
    """Walk the loop nest of a b×b-tiled N×N matmul and add up the words it moves: for every tile
    of C, each tile of A's block row and of B's block column is loaded; C's tile is written once."""
    moved = 0
    for i in range(0, n, b):
        for j in range(0, n, b):
            for k in range(0, n, b):
                moved += min(b, n - i) * min(b, n - k) + min(b, n - k) * min(b, n - j)
            moved += min(b, n - i) * min(b, n - j)
    return moved


n_mm = 1024
tiles_mm = [8, 16, 32, 64, 128]
memories = [3 * b * b for b in tiles_mm]  # the smallest M that holds three b×b tiles
moved = [tiled_matmul_accesses(n_mm, b) for b in tiles_mm]
assert all(got == 2 * n_mm**3 // b + n_mm**2 for got, b in zip(moved, tiles_mm))  # the upper bound's count
lower = [n_mm**3 / (2 * math.sqrt(2) * math.sqrt(m)) - m for m in memories]
assert all(lo <= got for lo, got in zip(lower, moved))

fig, ax = plt.subplots(figsize=(8.5, 4.6))
fit_mm = charts.plot_loglog(ax, memories, moved, "tiled matmul, counted", color=charts.COLORS["fa1"])
charts.plot_loglog(
    ax, memories, lower, "lower bound N³/(2√2·√M) − M", color=charts.COLORS["saha_ye"], ls="--"
)
charts.pow2_axis(ax, memories, label="fast memory M (words; b×b tiles with M = 3b²)")
ax.set_ylabel("words moved (log)")
ax.set_title(f"N×N matmul, N = {n_mm}: both curves fall like 1/√M")
ax.legend(fontsize=9)
plt.show()
assert abs(fit_mm.slope + 0.5) < 0.05

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# 1. Theorem 2's upper bound is a count of Algorithm 1's loop nest: Tc ≈ 4Nd/M passes over Q and O,
#    12·N²d²/M plus lower-order terms; the same count bounds it from below, so Θ(N²d²/M).
# 2. Proposition 3 is only the top of the range (M = Θ(Nd), where the compulsory traffic is the bound).
#    The real lower bound, Ω(N²d²/M) for every M ≥ d², is Saha & Ye's (2024); a segment argument with
#    whole rows of Q and K sketches it. Below M = d² the bound is Θ(N²d/√M).
# 3. Matrix multiplication has Θ(N³/√M): tiles of √(M/3) above, Loomis–Whitney below. Attention's scores
#    never leave the chip, which is why its bound falls like 1/M, not 1/√M.
# 4. Tiling changes the constant, not the exponent of N; FlashAttention's *extra memory* is linear in N
#    (that part of "O(N)" is right), its traffic is not.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Solutions are hidden under each exercise: try first, then open them.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1 — Proposition 3 at the top of the range (proof)
#
# At M = Nd (all of Q fits on chip), show that N²d²/M = Nd and that every exact algorithm moves at least
# the compulsory 4Nd (read Q, K, V, write O), so Ω(N²d²/M) holds at this M. Compute FlashAttention-1's
# traffic there by hand for N = 4096, d = 64 (Bc = ⌈M/4d⌉ = N/4, so Tc = 4) and its ratio to the
# compulsory traffic; check with `count()`.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
n1, d1 = 4096, 64
m1 = n1 * d1  # elements
assert n1 * n1 * d1 * d1 // m1 == n1 * d1 <= 4 * n1 * d1
bc1 = -(-m1 // (4 * d1))
tc1 = -(-n1 // bc1)
by_hand1 = 2 * (2 * n1 * d1 + 3 * tc1 * n1 * d1 + n1 * d1) + 4 * (2 * n1 + 4 * tc1 * n1)  # bytes
r1 = count("fa1", Workload(n1, d1), sram_bytes=2 * m1)
assert (bc1, tc1) == (n1 // 4, 4) and (r1.block_cols, r1.tc) == (bc1, tc1)
assert r1.hbm_bytes == by_hand1
ratio1 = r1.hbm_bytes / compulsory_bytes(Workload(n1, d1))
print(f"FA1 at M = Nd: Tc = {tc1}, {r1.hbm_bytes:,} B, {ratio1:.2f}× the compulsory traffic")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2 — a matmul tile for 64 KiB (design)
#
# A kernel multiplies 4096×4096 fp16 matrices with 64 KiB of shared memory per block (M = 32768 words).
# Choose the largest power-of-two tile b with three b×b tiles on chip, predict the words moved with
# 2N³/b + N², and compare with the lower bound N³/(2√2·√M) − M. How far above the bound is your design?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
n2, m2 = 4096, 64 * 1024 // 2
b2 = max(2**k for k in range(1, 12) if 3 * (2**k) ** 2 <= m2)
predicted2 = 2 * n2**3 // b2 + n2**2
assert 3 * b2 * b2 <= m2 < 3 * (2 * b2) ** 2
assert tiled_matmul_accesses(n2, b2) == predicted2  # the loop nest, walked
lower2 = n2**3 / (2 * math.sqrt(2) * math.sqrt(m2)) - m2
assert lower2 <= predicted2
print(f"b = {b2}: {predicted2:,} words, {predicted2 / lower2:.1f}× the lower bound")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3 — where the two regimes meet (proof)
#
# Show that min(N²d²/M, N²d/√M) takes its first branch exactly when M ≥ d². At d = 128 in fp16, at which
# shared-memory size in KiB do the branches meet? Check that `saha_ye_bytes` falls like 1/M above it
# and like 1/√M below it (the log–log slope between two sizes on the same side).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
d3 = 128
w3 = Workload(8192, d3)
meet_kib = d3 * d3 * 2 / 1024  # M = d² elements of 2 bytes
assert meet_kib == 32
for m in (d3 * d3 // 4, d3 * d3, 4 * d3 * d3):  # the first branch is the smaller one iff M ≥ d²
    first, second = d3 * d3 / m, d3 / math.sqrt(m)
    assert (first <= second) == (m >= d3 * d3)


def slope(kib_a, kib_b):
    a, b = saha_ye_bytes(w3, kib_a * 1024), saha_ye_bytes(w3, kib_b * 1024)
    return math.log(b / a) / math.log(kib_b / kib_a)


above, below = slope(64, 256), slope(2, 8)
assert math.isclose(above, -1, abs_tol=1e-9) and math.isclose(below, -0.5, abs_tol=1e-9)
print(f"the branches meet at {meet_kib:g} KiB; slope {above:.2f} above it, {below:.2f} below it")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 4 — how far above the sketch is FlashAttention-1? (design)
#
# For N = 8192, d = 64 and the H200's shared memory per block, compute FA1's accesses by hand
# (3Nd + 2N + Tc·(3Nd + 4N), Bc = ⌈M/4d⌉) and the segment bound N²d²/4M − M. By what factor does FA1
# exceed it, and which two constants (Lecture 4's and the sketch's) explain most of that factor?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
n4, d4 = 8192, 64
m4 = SRAM // 2
tc4 = -(-n4 // -(-m4 // (4 * d4)))
by_hand4 = 3 * n4 * d4 + 2 * n4 + tc4 * (3 * n4 * d4 + 4 * n4)
assert count("fa1", Workload(n4, d4), sram_bytes=SRAM).traffic.elements("HBM") == by_hand4
factor4 = by_hand4 / segment_bound(n4, d4, m4)
explained = 4 * (12 + 16 / d4)  # the sketch's 4 × FA1's 12 + 16/d (statistics as one access each)
print(f"FA1: {by_hand4:,} accesses, {factor4:.1f}× the bound; 4·(12 + 16/d) = {explained:.1f}")
assert factor4 >= explained > 48  # the rounding of Tc = ⌈N/Bc⌉ and the linear terms add the rest
