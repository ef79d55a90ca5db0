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
# # Appendix to lecture 5 — The H200's L2, and why the readable kernel is slow
#
# A reading: what the H200's L2 keeps between kernels, and why the readable fp32 kernel, with far
# fewer bytes, is not faster than cuBLAS.

# %% [markdown] slideshow={"slide_type": "notes"}
# Lecture 5 showed that the physical model predicts Nsight Compute's counters within tolerance almost
# everywhere. This appendix works through the places where it does not, and through the one question
# the lecture left open: why the readable fp32 kernel, with far fewer bytes, is not faster than cuBLAS.
# It is reading for a seminar or for the curious, not part of the 50 minutes.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Read a model-vs-hardware table metric by metric and name the cause of each miss.
# - Design a micro-benchmark that measures what a cache keeps (reuse distance against miss share).
# - Explain why lines read from SMs on both halves of the H200's L2 see a smaller cache than the
#   nominal capacity, with the numbers of the probes.
# - Explain with occupancy and the instruction mix why fewer HBM bytes do not make a kernel fast.
#
# **Prerequisites**
#
# Lecture 5 (model, kernels and hardware; the physical model), lecture 4 (the roofline). What an L2
# cache, a warp, a thread block and occupancy are.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Reading (30 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 8 | 1. Model vs hardware, metric by metric |
# | 12 | 2. A head cut by a wave boundary: three L2 probes and a trace |
# | 6 | 3. Why the readable kernel is slow: occupancy and the instruction mix |
# | 4 | Quiz: three questions, each checked against the H200's counters |
#
# Not a lecture: read it after lecture 5, alone or for a seminar, and end with the quiz.

# %% slideshow={"slide_type": "skip"} tags=["remove-input"]
import dataclasses

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from course import charts
from evidence import l2_evidence, readers
from evidence.model_vs_ncu import TARGET_MIN_N, TOLERANCE
from measurements.manifest import lookup, run_of
from simlib import Workload, load_preset
from simlib.kernel_layout import ITEM_BYTES, tiled_default_blocks, tiled_shared_bytes
from simlib.physical import launches as K
from simlib.physical import metrics as M
from simlib.physical.l2 import L2_PARTITIONS, l2_partition_factor
from simlib.physical.occupancy import occupancy

charts.use_style()
pd.set_option("display.width", 160)
H200 = load_preset("h200")
L2_BYTES = H200.level("L2").capacity_bytes
PROFILE = readers.read_profile(lookup(readers.PROFILE))
NCU = PROFILE[(PROFILE["source"] == "ncu") & (PROFILE["launch"] != "total")]
MVN = {
    "fp32": readers.read_model_vs_ncu(lookup(readers.MODEL_VS_NCU)),
    "bf16": readers.read_model_vs_ncu(lookup(readers.TC_MODEL_VS_NCU)),
}


def ncu_value(kernel, metric, n, d, profile=NCU):
    """ncu's `metric` summed over the launches of `kernel` at (N, d) in `profile`."""
    sel = profile[
        (profile["kernel"] == kernel)
        & (profile["metric"] == metric)
        & (profile["seq_len"] == n)
        & (profile["head_dim"] == d)
    ]
    return float(sel["value"].sum())


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Model vs hardware, metric by metric
#
# The physical model (`simlib.physical`, no fitted constant) divided by Nsight Compute, for every
# profiled launch and shape; first the fp32 kernels, then the bf16 tensor-core kernels.

# %% [markdown] slideshow={"slide_type": "notes"}
# `simlib.physical` writes out the byte addresses of one representative warp instruction per access
# pattern (thread mapping, grid order, shared-memory padding), counts its 32-byte sectors or
# shared-memory wavefronts, and multiplies by the number of such instructions; DRAM comes from reuse
# distances against the L2. No constant is fitted: sectors, banks, the L2's size and its two partitions,
# the occupancy limits come from the CUDA guide, NVIDIA's whitepapers or the device query
# (`docs/L2_INVESTIGATION.md`). Every profiled launch and shape:


# %% tags=["remove-input"] alt="The physical model divided by Nsight Compute for eight metrics of the fp32 naive and tiled kernels, one point per launch and shape, with the \u00b15 % band around 1"
def model_over_ncu(regime):
    table = MVN[regime]
    fig, ax = plt.subplots(figsize=(11, 4.6))
    handles = charts.plot_model_vs_ncu(ax, table, readers.METRIC_NAMES, TOLERANCE)
    ax.legend(handles=handles, fontsize=8.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    shape = f"B = {table['batch'].iloc[0]}, H = {table['heads'].iloc[0]}"
    ax.set_title(f"Physical model / Nsight Compute, {regime} kernels ({shape}, H200)", fontsize=11)
    plt.show()


model_over_ncu("fp32")

# %% tags=["remove-input"] slideshow={"slide_type": "subslide"} alt="The physical model divided by Nsight Compute for eight metrics of the bf16 tensor-core kernels naive_tc and fa2_tc, one point per launch and shape, with the \u00b15 % band around 1"
model_over_ncu("bf16")


# %% slideshow={"slide_type": "notes"} tags=["remove-input"]
def spread(metric, table, sel=None):
    sub = table[(table["metric"] == metric) & table["ratio"].notna()]
    sub = sub[sel(sub)] if sel is not None else sub
    return sub["ratio"].min(), sub["ratio"].max()


fp32 = MVN["fp32"]
dw = fp32[(fp32["metric"] == K.DRAM_WRITE) & (fp32["kernel"] == "tiled")]
dw = dw[dw["seq_len"] == dw["seq_len"].min()]
softmax_l2 = spread(K.L2_READ, fp32, lambda s: s["launch"] == "softmax")
other_l2 = spread(K.L2_READ, fp32, lambda s: s["launch"] != "softmax")
sector_items = H200.level("HBM").granularity_bytes // ITEM_BYTES
display(
    Markdown(
        f"* **L1 load and store sectors** are exact in both regimes, *including* the tiled kernel's "
        f"uncoalesced O stores (one thread per row: each {ITEM_BYTES}-byte store lands in its own "
        f"{H200.level('HBM').granularity_bytes}-byte sector, {sector_items}× the bytes).\n"
        f"* **DRAM writes**: the model writes every byte back; ncu counts only write-backs *during* the "
        f"kernel, and a small output stays dirty in L2 (tiled, N = {charts.tokens_label(dw['seq_len'].iloc[0])}: ncu "
        f"counts {int(dw['ncu'].min())} bytes written). Judge reads, or L2 write sectors, not DRAM writes.\n"
        f"* **L2 sectors**: a sector homed in the far one of the {L2_PARTITIONS} partitions is looked up in "
        f"both (L1 sectors × {l2_partition_factor():g}); exact for the streaming softmax "
        f"({softmax_l2[0]:.3f}–{softmax_l2[1]:.3f}×). Kernels whose blocks share tiles come out "
        f"{other_l2[0]:.1f}–{other_l2[1]:.1f}× high: blocks on the same SM hit each other's tiles in L1, "
        "which the model leaves out.\n"
        "* **DRAM reads** within 5 % except where a head is cut by a wave boundary (below)."
    )
)

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
readers.target_misses(MVN, TARGET_MIN_N).style.format({"ratio": "{:.3g}"}).hide(axis="index")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The tiled kernel's miss: a head cut by a wave boundary
#
# At the largest N, the blocks of one head do not all fit on the GPU at once, so a head is cut by a
# wave boundary and the next wave reads its K and V again. The model puts that re-read at a reuse
# distance under the L2's capacity (the waves walk in lockstep), so it predicts an L2 hit.

# %% tags=["remove-input"]
N_BIG = int(fp32["seq_len"].max())
D_BIG = int(fp32["head_dim"].max())
H_PROF = int(fp32["heads"].iloc[0])
BR, BC = tiled_default_blocks(N_BIG, D_BIG)
w = Workload(seq_len=N_BIG, head_dim=D_BIG, batch=1, heads=H_PROF, dtype="fp32")
regs = int(ncu_value("tiled", M.REGISTERS, N_BIG, D_BIG))
blocks = {"block_rows": BR, "block_cols": BC}
full_pred = K.predict("tiled", "fa2", w, blocks, H200, registers=regs, details=True)
half_l2 = dataclasses.replace(
    H200,
    levels=tuple(
        dataclasses.replace(lv, capacity_bytes=lv.capacity_bytes // L2_PARTITIONS) if lv.name == "L2" else lv
        for lv in H200.levels
    ),
)
half_pred = K.predict("tiled", "fa2", w, blocks, half_l2, registers=regs)
measured = ncu_value("tiled", K.DRAM_READ, N_BIG, D_BIG)
mb = lambda b: charts.fmt_bytes(b, binary=False)  # noqa: E731
display(
    Markdown(
        f"Tiled, N = {charts.tokens_label(N_BIG)}, d = {D_BIG}, H = {H_PROF}: {full_pred['model:waves']} waves of "
        f"{full_pred['model:resident_blocks']} blocks; {mb(full_pred['model:kv_reread_bytes'])} of K/V is read "
        f"again by a later wave, after at most {mb(full_pred['model:kv_reuse_distance_bytes'])} of other data. "
        f"DRAM reads: model with the {charts.fmt_bytes(L2_BYTES)} L2 {mb(full_pred[K.DRAM_READ])} (every re-read "
        f"a hit), with one {charts.fmt_bytes(L2_BYTES // L2_PARTITIONS)} partition {mb(half_pred[K.DRAM_READ])} "
        f"(every re-read a miss), measured **{mb(measured)}**."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### What does the L2 keep? Three micro-benchmarks
#
# One kernel re-reads a buffer of F bytes (reuse distance F); the share of re-reads served from DRAM,
# with the element re-read by its own thread, a neighbouring block, or a random block (as the tiled kernel's
# K/V tiles are).

# %% [markdown] slideshow={"slide_type": "notes"}
# One kernel reads a buffer of F bytes several times over, so between two reads of an element the
# whole buffer passes through (reuse distance F). ncu's DRAM read bytes, minus the first (compulsory)
# pass, over the re-reads, is the share of re-reads the L2 did not serve
# (`benchmarks/h200_diagnostics.py`). Who re-reads an element:
# * **own**: the same thread every pass (its SM's L1 and near L2 partition can keep it);
# * **rotating**: a block a fixed number of blocks away (mostly a neighbouring SM);
# * **shuffled**: a random block each pass, so every line is read from SMs of both L2 partitions —
#   as every K/V tile of the tiled kernel is.

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
# each probe's first launch only compiles (its footprint is left unnamed: NaN), then one per size
sizes = (np.nan, *l2_evidence.NCU_SIZES_MIB)
probes = {}
for name in ("own", "rotating", "shuffled"):
    t = l2_evidence.probe_misses(lookup(f"l2_ncu_{name}_h200.csv"), sizes, l2_evidence.NCU_PASSES).iloc[1:]
    probes[name] = t.assign(**{"footprint (MiB)": t["footprint (MiB)"].astype(int)})
l2_table = pd.concat(
    {name: t.set_index("footprint (MiB)")["re-reads missed"] for name, t in probes.items()}, axis=1
)
l2_table.style.format("{:.1%}")

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="Share of re-reads served from DRAM against the reuse distance (buffer footprint in MiB) for the own, rotating and shuffled L2 probes on the H200, with the 60 MiB L2 capacity marked"
fig, ax = plt.subplots(figsize=(6.6, 3.9))
for name, t in probes.items():
    ax.plot(t["footprint (MiB)"], 100 * t["re-reads missed"].clip(lower=0), marker="o", label=name)
ax.axvline(L2_BYTES / 2**20, color="black", ls="--", lw=1)
ax.text(L2_BYTES / 2**20 + 1, 8, f"L2 = {charts.fmt_bytes(L2_BYTES)}", fontsize=10)
ax.set_xlabel("reuse distance = buffer footprint (MiB)")
ax.set_ylabel("re-reads served from DRAM (%)")
ax.set_title(f"H200 L2: what a re-read finds (ncu, {l2_evidence.NCU_PASSES} passes)")
ax.legend(title="re-read by")
plt.show()


# %% slideshow={"slide_type": "notes"} tags=["remove-input"]
def first_miss(name, share=0.01):
    t = probes[name]
    return int(t[t["re-reads missed"] >= share]["footprint (MiB)"].min())


shuffled = probes["shuffled"].set_index("footprint (MiB)")
below_l2 = int(max(f for f in shuffled.index if f * 2**20 < L2_BYTES))
smallest = int(shuffled.index.min())
display(
    Markdown(
        f"Re-read by its own thread, data starts to miss at **{first_miss('own')} MiB**; re-read from random "
        f"SMs, at **{first_miss('shuffled')} MiB**, and at {below_l2} MiB — still under the L2's "
        f"{charts.fmt_bytes(L2_BYTES)} — {shuffled.loc[below_l2, 're-reads missed']:.0%} of it misses. Lines read "
        "from both halves of the L2 take room in both (the A100/H100 whitepapers: each partition caches data "
        "for the SMs attached to it). The fabric counter shows the copies: with random readers about half of "
        f"the reads would need the other partition every pass if lines were not copied, yet at {smallest} MiB "
        f"only {shuffled.loc[smallest, 'over the fabric']:.0%} of the L2's read sectors crossed the fabric (the "
        "first pass brings the copies). So data every SM reads sees a smaller cache than the one on the box."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The tiled kernel's re-reads, measured
#
# The same kernel under ncu at several N and heads: the K/V a later wave reads again, and how much of
# that re-read came from DRAM. The model predicts 0 % in every row.

# %% [markdown] slideshow={"slide_type": "notes"}
# The same kernel under ncu at several N with the profile's heads, and with fewer heads
# (`benchmarks/l2_shuffled_run.sh`, `l2_heads_run.sh`). The model's re-read K/V is what a later wave
# reads again; "re-reads missed" is the DRAM traffic beyond the compulsory Q, K, V over it. The model
# predicts 0 % in every row (each reuse distance is under the L2's capacity).

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
tiled_n = l2_evidence.tiled_rereads(
    lookup("tiled_l2_ncu_h200.csv"), [(n, d, H_PROF) for n, d in l2_evidence.TILED_NCU_SHAPES], H200
)
tiled_h = l2_evidence.tiled_rereads(
    lookup("tiled_heads_l2_ncu_h200.csv"), l2_evidence.TILED_HEADS_NCU_SHAPES, H200
)
reread_cols = [
    "N",
    "d",
    "H",
    "K/V per head (MiB)",
    "waves",
    "reuse distance (MiB, model)",
    "re-read K/V (MB)",
    "DRAM read (MB)",
    "model (MB)",
    "re-reads missed",
]
tiled_all = pd.concat([tiled_n, tiled_h], ignore_index=True)[reread_cols]
tiled_all.style.format(
    {c: "{:.1f}" for c in reread_cols[3:9] if c != "waves"} | {"re-reads missed": "{:.0%}"}, na_rep="—"
).hide(axis="index")

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"] alt="Share of the tiled kernel's re-read K/V served from DRAM against the size of one head's K and V in MiB, one colour per number of heads"
fig, ax = plt.subplots(figsize=(6.6, 3.9))
for h, t in tiled_all[tiled_all["re-reads missed"].notna()].groupby("H"):
    ax.scatter(t["K/V per head (MiB)"], 100 * t["re-reads missed"].clip(lower=0), label=f"H = {h}", s=40)
ax.set_xlabel("K and V of one head (MiB)")
ax.set_ylabel("re-read K/V served from DRAM (%)")
ax.set_title("Tiled kernel: a cut head's K/V, read again by the next wave")
ax.legend()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Do the waves walk in lockstep? A trace
#
# Thread 0 of every block writes its SM and `%globaltimer` at the block's start and end; one line per
# block, coloured by head:

# %% [markdown] slideshow={"slide_type": "notes"}
# The kernel's trace build (`tiled.fa2_kernel(..., trace=True)`) has thread 0 of every block write its
# SM and the GPU clock (`%globaltimer`) at the block's start and end (`benchmarks/h200_diagnostics.py
# --trace`, `tiled_trace_h200.csv`). One line per block, from its start to its end, coloured by head:

# %% tags=["remove-input"] alt="Start and end time of every block of the traced tiled kernel (one horizontal line per block, coloured by head) at the largest traced shape: the blocks run in waves"
trace = pd.read_csv(lookup("tiled_trace_h200.csv"))
trace["start (ms)"], trace["end (ms)"] = trace["start_ns"] / 1e6, trace["end_ns"] / 1e6
TN, TD, TH = int(trace["N"].max()), int(trace["d"].max()), int(trace["H"].max())
traced = trace[(trace["N"] == TN) & (trace["d"] == TD) & (trace["H"] == TH)].reset_index(drop=True)
t_br, t_bc = tiled_default_blocks(TN, TD)
t_work = Workload(seq_len=TN, head_dim=TD, batch=1, heads=TH, dtype="fp32")
t_pred = K.predict(
    "tiled", "fa2", t_work, {"block_rows": t_br, "block_cols": t_bc}, H200, registers=regs, details=True
)
resident = int(t_pred["model:resident_blocks"])
fig, ax = plt.subplots(figsize=(7.2, 4.0))
colors = charts.plt_colors()
for h, g in traced.groupby("head"):
    ax.hlines(g.index, g["start (ms)"], g["end (ms)"], color=colors[h], lw=0.6, label=f"head {h}")
ax.set_xlabel("time since the first block started (ms)")
ax.set_ylabel("block (launch order)")
ax.set_title(
    f"Tiled kernel, N = {charts.tokens_label(TN)}, d = {TD}, H = {TH}: {resident} blocks at a time (model)"
)
ax.legend(loc="lower right")
plt.show()


# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
def waves_of(table):
    """Blocks grouped by start time (a gap of more than 1 ms starts a new wave), per head."""
    t = table.sort_values("start_ns")
    wave = (t["start_ns"].diff().fillna(0) > 1e6).cumsum()
    t = t.assign(wave=wave.to_numpy(), duration=(t["end_ns"] - t["start_ns"]) / 1e6)
    return t.groupby(["wave", "head"]).agg(
        blocks=("i", "size"),
        start_spread_ms=("start_ns", lambda s: (s.max() - s.min()) / 1e6),
        duration_ms=("duration", "median"),
    )


two_heads = waves_of(trace[(trace["N"] == TN) & (trace["d"] == TD) & (trace["H"] == 2)])
two_heads.round(2)

# %% slideshow={"slide_type": "notes"} tags=["remove-input"]
alone = tiled_h[(tiled_h["N"] == TN) & (tiled_h["d"] == TD) & (tiled_h["H"] == 1)].iloc[0]
beside = tiled_h[(tiled_h["N"] == TN) & (tiled_h["d"] == TD) & (tiled_h["H"] == 2)].iloc[0]
four = tiled_n[(tiled_n["N"] == TN) & (tiled_n["d"] == TD)].iloc[0]
tail, main = two_heads.loc[(1, 0)], two_heads.loc[(1, 1)]
# one L2 partition while the cut head's tail re-reads it beside the next head: a copy of the cut head's
# K/V, and its share of a wave's Q and O rows (each line in one partition)
partition = L2_BYTES / L2_PARTITIONS
kv_head = 2 * TN * TD * ITEM_BYTES
wave_qo = 2 * resident * t_br * TD * ITEM_BYTES / L2_PARTITIONS
share_kept = max(0.0, (partition - kv_head - wave_qo) / kv_head)
# the same shape in the archived profile of an earlier, slower build of the readable kernel
old_path = lookup("profile_h200.csv", run_id="run03")
old = readers.read_profile(old_path)
old = old[(old["source"] == "ncu") & (old["launch"] != "total")]
old_dram = ncu_value("tiled", K.DRAM_READ, TN, TD, old)
old_missed = (old_dram - 3 * H_PROF * TN * TD * ITEM_BYTES) / (four["re-read K/V (MB)"] * 1e6)
slower = ncu_value("tiled", M.DURATION, TN, TD, old) / ncu_value("tiled", M.DURATION, TN, TD)
display(
    Markdown(
        f"**The waves do walk in lockstep**: in each wave the blocks start within "
        f"{two_heads['start_spread_ms'].max():.2f} ms of each other, and the cut head's {int(tail['blocks'])} tail "
        f"blocks run beside the next head's {int(main['blocks'])} blocks in {tail['duration_ms']:.1f} ms against "
        f"their {main['duration_ms']:.1f} ms: they do not fall behind. So the model's timing is right and the miss "
        "is in what the L2 keeps.\n\n"
        f"Alone (H = 1) the tail's {alone['re-read K/V (MB)']:.1f} MB re-read comes "
        f"{1 - alone['re-reads missed']:.0%} from L2, as the model says; beside the next head (H = 2) "
        f"{beside['re-reads missed']:.0%} comes from DRAM, with {H_PROF} heads {four['re-reads missed']:.0%}. The "
        "shuffled probe says why: a line read from SMs on both halves of the L2 is kept in both. Per partition "
        f"({charts.fmt_bytes(partition)}) that is a whole copy of the cut head's K/V ({charts.fmt_bytes(kv_head)}) "
        f"plus its share of a wave's Q and O rows ({charts.fmt_bytes(wave_qo)}), which leaves room for the first "
        f"{share_kept:.0%} of the next head's K/V; once that has streamed in, every further re-read tile has been "
        f"evicted: about {1 - share_kept:.0%} of the re-read from DRAM, against {beside['re-reads missed']:.0%} "
        "measured. That estimate assumes LRU partitions and where each line lives, which NVIDIA does not "
        "document, so the model keeps its one-level L2 and the table marks these cells with this cause. Not "
        "explained: the share also depends on the kernel's speed — an earlier build of the same kernel, "
        f"{slower:.1f}× slower under ncu at this shape (run {run_of(old_path)['run_id']} in `manifest.csv`), "
        f"missed {old_missed:.0%}."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Why the readable kernel is slow: occupancy and the instruction mix
#
# One thread per query row, Br threads per block, the tiles in shared memory: how many blocks fit on an
# SM, and what ncu measured.

# %% [markdown] slideshow={"slide_type": "notes"}
# The readable kernel (`gpu_kernels/kernels/tiled.py`) uses one thread per query row, so a block has Br
# threads, and keeps its Q, K, V and S tiles in shared memory within the static shared-memory limit of a block
# (`simlib.kernel_layout.STATIC_SHARED_LIMIT_BYTES`). How many
# such blocks fit on an SM, and what ncu measured:

# %% tags=["remove-input"]
rows = []
for d in sorted(PROFILE["head_dim"].unique()):
    n = int(PROFILE["seq_len"].max())
    br, bc = tiled_default_blocks(n, int(d))
    regs_d = int(ncu_value("tiled", M.REGISTERS, n, int(d)))
    occ = occupancy(br, regs_d, tiled_shared_bytes(br, bc, int(d)))
    rows.append(
        {
            "d": int(d),
            "Br × Bc": f"{br} × {bc}",
            "threads per block": br,
            "shared memory per block": charts.fmt_bytes(tiled_shared_bytes(br, bc, int(d))),
            "registers per thread (ncu)": regs_d,
            "blocks per SM (model)": occ.blocks_per_sm,
            "limited by": occ.limited_by,
            "warps active, % of peak (ncu)": ncu_value("tiled", M.WARPS_ACTIVE, n, int(d)),
        }
    )
occupancy_table = pd.DataFrame(rows)
occupancy_table.style.format({"warps active, % of peak (ncu)": "{:.1f}"}).hide(axis="index")

# %% slideshow={"slide_type": "notes"} tags=["remove-input"]
ceilings = readers.read_ceilings()
cmp_path = lookup("compare_h200.csv")
cmp = readers.with_tflops(readers.compare_times(cmp_path))
readable = cmp[(cmp["kernel"] == "numba_tiled") & (cmp["seq_len"] >= 4096)]
fastest_ours = cmp[(cmp["kernel"] == "numba_fast") & (cmp["seq_len"] >= 4096)]
t = occupancy_table
display(
    Markdown(
        f"From N = 4K on, the readable kernel runs {readable['tflops'].min():.1f}–{readable['tflops'].max():.1f} "
        f"TFLOP/s, {100 * readable['tflops'].min() * 1e12 / ceilings['fp32']:.0f}–"
        f"{100 * readable['tflops'].max() * 1e12 / ceilings['fp32']:.0f} % of the card's measured FFMA ceiling "
        f"({ceilings['fp32'] / 1e12:.0f} TFLOP/s). **It is not memory-bound**: one thread per query row leaves the "
        f"SMs nearly empty ({' or '.join(str(x) for x in t['threads per block'])} threads per block, at most "
        f"{' or '.join(str(x) for x in t['blocks per SM (model)'])} blocks per SM, limited by "
        f"{' and '.join(sorted(set(t['limited by'])))}), and every multiply-add reads two operands from shared "
        "memory. How fast it is depends on how the compiler turns its loops into instructions "
        "(`docs/performance.md` §7 and the SASS in `sass_tiled_d64.txt`) and on the warps per SM, not on the "
        f"bytes. The register-tiled fast kernel, with the same HBM traffic, runs "
        f"{fastest_ours['tflops'].min():.1f}–{fastest_ours['tflops'].max():.1f} TFLOP/s (`docs/performance.md`)."
    )
)

# %% slideshow={"slide_type": "subslide"} tags=["remove-input"]
ms = cmp.pivot_table(index="kernel", columns=["head_dim", "seq_len"], values="time_ms")
ms.index = [charts.VARIANT_LABELS.get(k, k) for k in ms.index]
display(
    Markdown(
        f"Median ms of every fp32 variant in the side-by-side run, B = {cmp['batch'].iloc[0]}, "
        f"H = {cmp['heads'].iloc[0]} (`current/{cmp_path.name}`, run {run_of(cmp_path)['run_id']}), the wide-block "
        "variant of the readable kernel included:"
    )
)
ms.sort_values(ms.columns[-1]).style.format("{:.4g}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# * The physical model's misses have causes: DRAM writes that ncu does not count while they sit dirty
#   in L2, blocks sharing tiles in L1, and — the one that took measuring — a head cut by a wave
#   boundary whose K/V re-read misses the L2.
# * A re-read probe (reuse distance against miss share) measures what a cache keeps: on the H200, data
#   read from SMs on both L2 partitions starts to miss well before the L2's nominal capacity.
# * The trace shows the waves in lockstep: the model's timing holds; its one-level L2 does not.
# * Fewer bytes are not speed by themselves: the readable kernel is limited by occupancy and
#   shared-memory loads, not by HBM; the fast kernel keeps the bytes and fixes the compute side.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Quiz
#
# Three questions; each hidden answer derives the number by hand and checks it against the H200's
# counters (`make test` runs them).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Question 1 — the uncoalesced O stores, in sectors
#
# The readable kernel stores O with one thread per query row: a warp's 32 stores of 4 bytes land in 32
# different 32-byte sectors. Its row statistic (one fp32 per row) is stored coalesced. Predict ncu's
# L1 global-store sectors (`l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum`) of the tiled kernel at the
# profile's largest N, for each d, and say how many times the useful bytes the O stores cost.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
store_sectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
sector = H200.level("HBM").granularity_bytes
n_q, h_q = int(PROFILE["seq_len"].max()), int(PROFILE["heads"].iloc[0])
for d_q in sorted(int(d) for d in PROFILE["head_dim"].unique()):
    o_sectors = n_q * d_q * h_q  # every 4-byte element of O in a sector of its own
    stat_sectors = n_q * h_q * ITEM_BYTES // sector  # one fp32 per row, 8 rows to a sector
    measured_sectors = ncu_value("tiled", store_sectors, n_q, d_q)
    assert o_sectors + stat_sectors == measured_sectors, (d_q, o_sectors + stat_sectors, measured_sectors)
    print(
        f"d = {d_q}: {o_sectors + stat_sectors:,} sectors predicted and measured; O costs {sector // ITEM_BYTES}x its bytes"
    )

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Question 2 — occupancy by hand
#
# From section 3's table (threads per block, registers per thread, shared memory per block) and the
# H200's limits (65,536 registers and 233,472 B of shared memory per SM, 1,024 B reserved per block,
# 2,048 threads, 32 blocks; registers allocated per warp in units of 256), derive the blocks per SM and
# the share of the 64 warp slots they fill. Is ncu's "warps active" above or below it?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
for d_q in sorted(int(d) for d in PROFILE["head_dim"].unique()):
    br_q, bc_q = tiled_default_blocks(n_q, d_q)
    regs_q = int(ncu_value("tiled", M.REGISTERS, n_q, d_q))
    warps_q = -(-br_q // 32)
    by_registers = 65536 // (warps_q * (-(-regs_q * 32 // 256) * 256))
    by_shared = 233472 // (tiled_shared_bytes(br_q, bc_q, d_q) + 1024)
    by_threads = 2048 // (warps_q * 32)
    blocks_q = min(by_registers, by_shared, by_threads, 32)
    assert blocks_q == occupancy(br_q, regs_q, tiled_shared_bytes(br_q, bc_q, d_q)).blocks_per_sm
    theory = 100 * blocks_q * warps_q / 64
    active = ncu_value("tiled", M.WARPS_ACTIVE, n_q, d_q)
    assert 0.9 * theory <= active <= theory + 0.01, (d_q, theory, active)  # ncu: at most the theory
    print(
        f"d = {d_q}: {blocks_q} blocks x {warps_q} warp(s) = {theory:.2f} % of the warp slots; ncu {active:.2f} %"
    )

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Question 3 — where random readers start to miss
#
# If every line read from SMs on both halves of the L2 is kept in both partitions, how large a buffer
# can the shuffled probe re-read before its re-reads miss? Which probed footprint should be the first
# to miss (≥ 1 % of re-reads from DRAM), and does the own-thread probe miss there too?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
half_mib = L2_BYTES / L2_PARTITIONS / 2**20  # a copy in each partition: half the L2 holds the buffer
probed = sorted(int(f) for f in probes["shuffled"]["footprint (MiB)"])
expected = min(f for f in probed if f > half_mib)
assert first_miss("shuffled") == expected, (first_miss("shuffled"), expected)
assert first_miss("own") > half_mib  # its own thread's lines stay in one partition
print(
    f"half the L2 = {half_mib:g} MiB: shuffled misses from {first_miss('shuffled')} MiB, own from {first_miss('own')} MiB"
)
