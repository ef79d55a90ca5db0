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
# # Lecture 7 — Explore it yourself: a guided lab with sliders
#
# A guided lab: six controls (N, d, SRAM, Br, Bc, GPU) over one chart of traffic and roofline, and
# five predictions to check.

# %% [markdown] slideshow={"slide_type": "notes"}
# One chart, six controls: the sequence length **N**, the head dimension **d**, the shared memory per
# thread block **SRAM**, the tiles **Br** and **Bc** (0 = each schedule's own tiles) and the **GPU**.
# Left: HBM traffic of naive attention, FlashAttention (FA1) and FlashAttention-2 (FA2) against N, with
# the compulsory traffic and the Saha–Ye lower bound; right: the chosen GPU's roofline with the three
# schedules on it. Every number is recomputed by `simlib` when a control moves.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Predict how the HBM traffic of naive, FA1 and FA2 attention grows with N, then check it on the chart.
# - Explain with a number how the SRAM size M sets FA1's tiles and so its traffic (Θ(N²d²/M)).
# - Derive FA2's traffic from Br and find its arithmetic intensity (≈ Br FLOP per byte in fp16).
# - Decide which tiles fit on chip from their working set, and why FA1 runs out of SRAM before FA2.
# - Read a roofline: say whether a schedule is memory or compute bound on a GPU from its ridge point.
#
# **Prerequisites**: Lecture 2 (naive attention's traffic), Lecture 3 (tiling and the online softmax),
# Lecture 4 (IO complexity, the paper's tile rule, the roofline). A Jupyter kernel with ipywidgets
# (`make lab`); without widgets the static chart of the default setting is shown.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---:|---|
# | 5 | The chart and the controls, on the default setting |
# | 8 | Exercise 1: double N |
# | 9 | Exercise 2: shrink the SRAM |
# | 9 | Exercise 3: FA2's Br |
# | 9 | Exercise 4: tiles that do not fit |
# | 7 | Exercise 5: another GPU, another ridge |
# | 3 | Summary |

# %% [markdown] slideshow={"slide_type": "notes"}
# Let the students work in pairs: one moves the controls, the other writes the prediction down first.
# Reveal a solution (click the hidden cell under each exercise) only after the pair has a number. If
# time runs short, do exercises 1, 3 and 5: they carry the lecture's three ideas (N², Br, the ridge).

# %% slideshow={"slide_type": "skip"}
import math

import matplotlib.pyplot as plt

from course import charts
from course.explorer import DEFAULTS, MAX_TILE, TILE_STEP, explorer, figure, table, tiled
from simlib import Workload, count, load_preset, roofline
from simlib.schedule_protocol import DoesNotFit

charts.use_style()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The default setting (a static chart, always drawn)

# %% [markdown] slideshow={"slide_type": "notes"}
# The default: N = 4096, d = 64, fp16, the H200 preset's shared memory per block, each schedule's own
# tiles. Read the left panel first: three solid curves of HBM traffic against N, their fitted slopes in
# the legend, the dotted line at the chosen N. Then the right panel: where each schedule sits against
# the ridge. The table under the chart gives the numbers the exercises ask for.

# %% alt="HBM traffic per head against N for naive, FA1 and FA2 with the lower bounds (left) and the H200 roofline with the three schedules (right), at the default setting"
figure(**DEFAULTS)
plt.show()

# %% slideshow={"slide_type": "subslide"}
table(**DEFAULTS)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The controls
#
# **N**, **d**, **SRAM** (per thread block; "preset" is the chosen GPU's), **Br**, **Bc** (0 = the
# schedule's own tiles; each slider stops at the largest tile FA1 or FA2 accepts next to the smallest
# other tile) and **GPU**.

# %% [markdown] slideshow={"slide_type": "notes"}
# The chart below is drawn when the controls appear and redrawn on every move. A
# pair of tiles whose working set does not fit the SRAM (or the register file) is shown as
# *infeasible*, with the bytes it needs, instead of a curve.

# %% alt="The same two panels as the static chart, redrawn for the values of the six controls above them"
explorer(DEFAULTS)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Naive attention moves Θ(N²) bytes: doubling N multiplies its traffic by almost 4.
# - FA1's tiles come from the SRAM size (Bc = ⌈M/4d⌉): a smaller SRAM means more K/V blocks and more
#   re-reads of Q and O, the Θ(N²d²/M) of the paper.
# - FA2 reads K and V once per Q block: its traffic is ≈ 2·(N/Br)·N·d elements, so its arithmetic
#   intensity is ≈ Br FLOP/byte in fp16, whatever the GPU.
# - Tiles must fit: FA1 keeps Q, O, K, V and the score tile in SRAM, FA2 only Q, K, V (S, P and O live
#   in registers), so FA2 fits larger tiles in the same SRAM and is then limited by the register file.
# - Memory or compute bound is the intensity against the GPU's ridge point (peak FLOP/s over bandwidth):
#   the same schedule can be compute bound on one GPU and memory bound on another.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Each exercise: set the controls as it says, **write your prediction down**, then look at the chart
# and its table. The hidden cell under each exercise is the solution: it computes the same number with
# `simlib` and checks it against a derivation by hand.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1 — double N
#
# Set N = 4096, d = 64, SRAM preset, Br = Bc = 0, GPU H200; note the HBM traffic of naive and FA2 in the
# table. Predict the factor by which each grows when you set N = 8192, then set it and read the table.
# (Naive reads Q, K, V, S, P and writes S, P, O; FA2 reads Q once and K, V once per Q block.)

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
h200 = load_preset("h200")
r = {(a, n): count(a, Workload(n, 64), hardware=h200) for a in ("naive", "fa2") for n in (4096, 8192)}
naive_growth = r["naive", 8192].hbm_bytes / r["naive", 4096].hbm_bytes
fa2_growth = r["fa2", 8192].hbm_bytes / r["fa2", 4096].hbm_bytes


def naive_by_hand(n, d):  # fp16 elements read (Q, K, V, S, P) + written (S, P, O): 4N² + 4Nd
    return 2 * (4 * n * n + 4 * n * d)


def fa2_by_hand(n, d, br):  # Q once, K and V once per Q block, O written (fp16); L = logsumexp (fp32)
    return 2 * (n * d + 2 * math.ceil(n / br) * n * d + n * d) + 4 * n


br = r["fa2", 4096].block_rows
assert r["fa2", 8192].block_rows == br
assert math.isclose(naive_growth, naive_by_hand(8192, 64) / naive_by_hand(4096, 64), rel_tol=1e-12)
assert math.isclose(fa2_growth, fa2_by_hand(8192, 64, br) / fa2_by_hand(4096, 64, br), rel_tol=1e-12)
print(
    f"naive grows {naive_growth:.3f}x, FA2 (Br = {br}) {fa2_growth:.3f}x: both ~4x, FA2 from a far lower start"
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2 — shrink the SRAM
#
# Set N = 8192, d = 64, Br = Bc = 0, GPU H200 and note FA1's Bc, Tc and traffic with SRAM "preset". Now
# set SRAM = 64 KiB. Predict Bc = ⌈M/4d⌉ (M in fp16 elements), Tc = ⌈N/Bc⌉ and the factor by which FA1's
# traffic grows (FA1 reads K, V once, and reads Q, O, ℓ, m and writes O, ℓ, m once per K/V block).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
n, d = 8192, 64
preset, small = (
    count("fa1", Workload(n, d), sram_bytes=s, hardware=h200) for s in (h200.sram_bytes, 64 * 1024)
)


def fa1_by_hand(n, d, tc):
    """Algorithm 1 line by line: K, V once; per K/V block Q, O, ℓ, m read and O, ℓ, m written; O, ℓ, m
    initialised once. fp16 rows, fp32 statistics."""
    fp16 = 2 * n * d + tc * 2 * n * d + tc * n * d + n * d
    fp32 = tc * 2 * n + tc * 2 * n + 2 * n
    return 2 * fp16 + 4 * fp32


for r, sram in ((preset, h200.sram_bytes), (small, 64 * 1024)):
    assert r.block_cols == math.ceil(sram // 2 / (4 * d)) and r.tc == math.ceil(n / r.block_cols)
    assert r.hbm_bytes == fa1_by_hand(n, d, r.tc)
growth = small.hbm_bytes / preset.hbm_bytes
print(
    f"Bc {preset.block_cols} -> {small.block_cols}, Tc {preset.tc} -> {small.tc}: FA1 moves {growth:.2f}x more"
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3 — FA2's Br
#
# Set N = 16384, d = 128, SRAM preset, GPU H200, Bc = 64 and Br = 64; note FA2's traffic and intensity.
# Predict both for Br = 128, then set it. Why does the intensity come out close to Br?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
n, d = 16384, 128
by_br = {b: count("fa2", Workload(n, d), hardware=h200, block_rows=b, block_cols=64) for b in (64, 128)}
for b, r in by_br.items():
    assert r.hbm_bytes == fa2_by_hand(n, d, b)
    intensity = roofline(r, h200).arithmetic_intensity
    assert math.isclose(intensity, 4 * n * n * d / fa2_by_hand(n, d, b), rel_tol=1e-12)
    assert abs(intensity - b) / b < 0.02  # 4N²d FLOPs over ≈ 2·2·(N/Br)·N·d bytes = Br
    print(f"Br = {b}: {r.hbm_bytes / 1e6:.1f} MB, {intensity:.1f} FLOP/B")
print(f"doubling Br divides FA2's traffic by {by_br[64].hbm_bytes / by_br[128].hbm_bytes:.3f}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 4 — tiles that do not fit
#
# Set N = 4096, d = 128, SRAM = 64 KiB, GPU H200. Move Br and Bc together (Br = Bc = 16, 32, 48, …) and
# watch for *infeasible*. Predict, from the working sets, the largest Br = Bc each schedule accepts:
# FA1 keeps Q_i, O_i, K_j, V_j and S_ij (fp16) and ℓ_i, m_i (fp32) in SRAM, and its tiles may not exceed
# the paper's ⌈M/4d⌉ rows; FA2 keeps only Q_i, K_j, V_j in SRAM and S/P, O, ℓ, m (fp32) in registers.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
n, d, sram = 4096, 128, 64 * 1024
rule = math.ceil(sram / 2 / (4 * d))  # ⌈M/4d⌉ rows, M = the SRAM in fp16 elements


def accepts(algorithm, b):
    return not isinstance(tiled(algorithm, Workload(n, d), h200, sram, b, b), DoesNotFit)


def fa1_sram(b):  # Q_i, O_i, K_j, V_j (b·d each), S_ij (b·b) in fp16; ℓ_i, m_i in fp32
    return 2 * (4 * b * d + b * b) + 4 * 2 * b


def fa2_sram(b):  # Q_i, K_j, V_j in fp16
    return 2 * 3 * b * d


def fa2_registers(b):  # S/P (b·b), O (b·d), ℓ, m in fp32
    return 4 * (b * b + b * d + 2 * b)


sizes = range(TILE_STEP, MAX_TILE + 1, TILE_STEP)
largest = {a: max(b for b in sizes if accepts(a, b)) for a in ("fa1", "fa2")}
assert largest["fa1"] == max(b for b in sizes if b <= rule and fa1_sram(b) <= sram)
assert largest["fa2"] == max(
    b for b in sizes if fa2_sram(b) <= sram and fa2_registers(b) <= h200.register_file_bytes
)
print(f"largest Br = Bc: FA1 {largest['fa1']} (needs {fa1_sram(largest['fa1']):,} B of SRAM), FA2 {largest['fa2']} "
      f"(needs {fa2_sram(largest['fa2']):,} B); the SRAM holds {sram:,} B")  # fmt: skip

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 5 — another GPU, another ridge
#
# Set N = 4096, d = 64, SRAM preset, Bc = 64, Br = 256 and GPU H200. Read FA2's intensity and where it
# sits against the ridge. Predict what changes when you switch the GPU to the H100 SXM (same SRAM per
# block, different peak and bandwidth), then switch. Is FA2 compute or memory bound on each?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
n, d = 4096, 64
assert load_preset("h100-sxm").sram_bytes == h200.sram_bytes  # the same SRAM per block, as the exercise says
for key in ("h200", "h100-sxm"):
    hw = load_preset(key)
    r = count("fa2", Workload(n, d), hardware=hw, block_rows=256, block_cols=64)
    rl = roofline(r, hw)
    intensity = 4 * n * n * d / fa2_by_hand(n, d, 256)
    ridge = hw.peak_flops["fp16"] / hw.level("HBM").bandwidth_bytes_per_s
    assert math.isclose(rl.arithmetic_intensity, intensity, rel_tol=1e-12)
    assert rl.bound == ("compute" if intensity >= ridge else "memory (HBM)")
    print(f"{hw.name}: intensity {intensity:.0f} FLOP/B, ridge {ridge:.0f} FLOP/B -> {rl.bound}")
