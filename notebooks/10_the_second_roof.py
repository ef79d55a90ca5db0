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
# # Lecture 10 — The second roof: what limits FlashAttention after DRAM
#
# After FlashAttention, DRAM no longer bounds a fused attention kernel on the H200. What does, kernel by
# kernel: per-kernel rooflines, the exponential's roof, issue, registers and occupancy, and FlashAttention-3's
# three Hopper mechanisms.

# %% [markdown] slideshow={"slide_type": "notes"}
# FlashAttention took the N×N matrices off DRAM; on the H200 a fused attention kernel now moves so few
# bytes that DRAM is no longer what bounds it. This lecture finds what does, kernel by kernel, with the
# H200's measurements: the sum of per-kernel rooflines for a kernel sequence, the exponential's roof
# (the FlashAttention-3 paper, arXiv 2407.08608, §3.1), instruction issue, registers and occupancy, and
# the three Hopper mechanisms FlashAttention-3 uses to climb the next roof.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Bound a sequence of kernels by the sum of each kernel's roofline, and say why one roofline of the
#   summed work is too optimistic.
# - Compute the exponential's roof from the special-function rate and the head dimension, and say when
#   it binds with the matmul in series or overlapped.
# - Read an instruction mix, an issue rate, registers per thread and occupancy off Nsight Compute's
#   counters, and derive the occupancy the register file allows.
# - Explain what wgmma, TMA and warp specialisation each change, and place torch flash, cuDNN and
#   FlashAttention-3 against the bounds they face.
#
# **Prerequisites**
#
# Lecture 1 (roofline time), 4 (FA2's loop nest) and 5 (the kernels measured on the H200, the mma.sync
# ceiling, Nsight Compute's counters). Lecture 9, which prices ncu's counts of every kernel of a call,
# helps; lecture 11's lab is not needed.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 5 | DRAM is not the roof any more |
# | 9 | A kernel sequence: the sum of per-kernel rooflines |
# | 9 | The exponential's roof |
# | 9 | Issue, registers and occupancy |
# | 8 | FlashAttention-3's three mechanisms |
# | 7 | What torch flash and cuDNN reach, and why |
# | 3 | Summary and exercises |

# %% [markdown] slideshow={"slide_type": "notes"}
# The thread: after FlashAttention, bytes stop being the bottleneck and the *units* start to be: the
# tensor cores (and which instruction reaches them), the exponential unit, and the issue slots. Each
# section takes one roof, computes it from data, and puts a measured kernel under it. The bounds here
# are computed in course/second_roof.py from simlib and the committed measurements; the cost model
# (simlib.cost, issue 21) will predict them per launch when it lands in main.

# %% slideshow={"slide_type": "skip"}
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from course import charts
from course import second_roof as roof
from evidence import readers
from measurements.manifest import lookup, run_of
from simlib import Workload, compulsory_bytes, count, load_preset
from simlib.physical import occupancy as occ

charts.use_style()
pd.set_option("display.precision", 3)
H200 = load_preset("h200")
R = roof.rates()
FA3 = roof.fa3()
PING = FA3["section_3_1_pingpong"]
ms = 1e3

# %% tags=["remove-input"]
runs = {name: run_of(lookup(name)) for name in (roof.KERNEL_COUNTERS, roof.PROFILE_TC, readers.FA2_TC_SPEED)}
display(
    Markdown(
        "Measurements: "
        + "; ".join(f"`{name}` from run `{r['run_id']}` (commit `{r['commit']}`)" for name, r in runs.items())
        + f". Bounds: {roof.SOURCE}."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. DRAM is not the roof any more
#
# FlashAttention-2 reads Q once and K, V once per Q block; the K/V re-reads are served by the L2 when
# the heads' K and V fit it (lecture 5b), so what reaches DRAM is close to each tensor once. Put
# fa2_tc's measured time next to the time its bytes would take, with and without the L2's help:

# %% slideshow={"slide_type": "fragment"}
speed = readers.fa2_tc_speed()
rows = []
for d in (64, 128):
    row = speed[(speed.dtype == "bf16") & (~speed.causal.astype(str).eq("True")) & (speed.head_dim == d)]
    row = row.sort_values("seq_len").iloc[-1]
    n = int(row.seq_len)
    w = Workload(batch=1, heads=16, seq_len=n, head_dim=d, dtype="bf16")
    every_read = roof.roofs(dram_bytes=count("fa2_tc", w).hbm_bytes)["dram"]
    t = roof.roofs(dram_bytes=compulsory_bytes(w), tensor_flops=w.flops, exps=w.batch_heads * n * n)
    rows.append(
        {"d": d, "N": n, "DRAM roof ms (each tensor once)": t["dram"] * ms}
        | {"DRAM roof ms (every K/V re-read from DRAM)": every_read * ms}
        | {"tensor roof ms (mma.sync)": t["tensor"] * ms, "exp roof ms": t["mufu"] * ms}
        | {"fa2_tc measured ms": row.fa2_tc, "torch flash ms": row.torch_flash, "cuDNN ms": row.torch_cudnn}
    )
first_look = pd.DataFrame(rows)
first_look

# %% tags=["remove-input"]
worst = first_look.iloc[0]
display(
    Markdown(
        f"At d = {int(worst.d)}, N = {int(worst.N):,} the compulsory bytes take {worst['DRAM roof ms (each tensor once)']:.3f} ms; "
        f"fa2_tc takes {worst['fa2_tc measured ms']:.2f} ms, "
        f"**{worst['fa2_tc measured ms'] / worst['DRAM roof ms (each tensor once)']:.0f}× longer**, and even if every "
        f"K/V re-read went to DRAM it would take {worst['DRAM roof ms (every K/V re-read from DRAM)']:.2f} ms. The "
        "bytes are not the limit: the tensor-core and exponential roofs beside them are of the order of the "
        "measured times. The rest of the lecture is about those."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. A kernel sequence: the sum of per-kernel rooflines
#
# A kernel cannot start before the previous one ends, and within one kernel the slowest unit sets the
# pace. So a sequence of kernels k takes at least
#
# $$T \;\ge\; \sum_k \max\!\left(\frac{F_k}{P},\; \frac{B_k}{W}\right) \;\ge\; \max\!\left(\frac{\sum_k F_k}{P},\; \frac{\sum_k B_k}{W}\right),$$
#
# and the right-hand side — one roofline of the summed work, as lecture 5 drew it — is too optimistic
# whenever some kernels are bound by FLOPs and others by bytes. The unfused call that Nsight Compute
# counted kernel by kernel is PyTorch's math backend in bf16: fp32 inside (upcast), its matmuls fp32
# SGEMMs on FFMA, so not the 16-bit eager baseline of lecture 6 (`eager16_h200.csv` timed that one but
# did not profile it per kernel). Each kernel's DRAM bytes and FFMAs as ncu counted them; the roofs use
# the measured FFMA and copy ceilings:

# %% slideshow={"slide_type": "subslide"}
SEQ = {"variant": "torch_math", "dtype": "bf16", "batch": 1, "heads": 16, "seq_len": 4096}
kernels = roof.kernel_sequence(**SEQ)
totals = roof.sequence_totals(kernels)
kernels[["kernel", "measured_ms", "dram_GB", "ffma_GFLOP", "roof_ms", "bound"]]

# %% tags=["remove-input"] slideshow={"slide_type": "subslide"} alt="Horizontal bars for torch math bf16 at B=1, H=16, N=4096, d=64: the one-roofline bound, the sum of the fourteen kernels' rooflines and the measured time in milliseconds"
fig, ax = plt.subplots(figsize=(7.5, 2.4))
labels = list(totals)
ax.barh(labels, [totals[k] for k in labels], color=["#9ecae1", "#3182bd", "#636363"])
for i, k in enumerate(labels):
    ax.text(totals[k], i, f" {totals[k]:.2f} ms", va="center")
ax.set_xlabel("time of one forward call (ms)")
ax.set_title(f"{charts.VARIANT_LABELS[SEQ['variant']]}, bf16 inputs, B=1 H=16 N=4096 d=64", fontsize=10)
ax.invert_yaxis()
ax.set_xlim(0, max(totals.values()) * 1.25)
plt.show()

# %% tags=["remove-input"]
gap = totals["sum of per-kernel roofs"] / totals["one roofline"]
ffma_bound = kernels[kernels.bound == "FFMA"]
display(
    Markdown(
        f"{len(ffma_bound)} of the {len(kernels)} kernels (the SGEMMs) are bound by FFMA, the rest by DRAM: "
        f"the sum of the per-kernel roofs is **{gap:.2f}×** the single roofline. The measured call takes "
        f"{totals['measured'] / totals['sum of per-kernel roofs']:.2f}× the sum of roofs: each kernel also "
        "misses its own roof, which the per-kernel table shows kernel by kernel."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The exponential's roof
#
# Softmax needs one exponential per score, and exponentials run on the SM's special-function unit
# (MUFU), not on the tensor cores. FlashAttention-3's authors put numbers on it (§3.1):

# %% tags=["remove-input"]
display(Markdown(f"> {PING['quote'].split(' ... ')[0]}\n>\n> — FlashAttention-3, {PING['citation']}"))

# %% [markdown] slideshow={"slide_type": "fragment"}
# A score costs 4d matmul FLOPs (2d in QKᵀ, 2d in PV) and one exponential, so the exponential's share of
# the matmul's time is (1/R_exp) / (4d/R_mm). The H200 has the H100 SXM5's SMs and clocks
# (data/hardware/h200.json), so the paper's special-function rate applies to it; the matmul rate depends
# on the instruction: mma.sync (what FlashAttention-2 and our fa2_tc use) reached the measured ceiling,
# wgmma reaches the datasheet peak.

# %% slideshow={"slide_type": "subslide"}
share = pd.DataFrame(
    {
        "d": d,
        "matmul FLOPs per exp": 4 * d,
        "exp / matmul time (mma.sync)": roof.exp_share(d, R.mma_sync, R.mufu),
        "exp / matmul time (wgmma)": roof.exp_share(d, R.wgmma, R.mufu),
    }
    for d in (64, 128, 256)
)
share

# %% tags=["remove-input"]
check = roof.exp_share(PING["head_dim"], PING["fp16_matmul_tflops"] * 1e12, R.mufu)
display(
    Markdown(
        f"With the paper's own matmul figure ({PING['fp16_matmul_tflops']} TFLOPS) at d = {PING['head_dim']}: "
        f"{4 * PING['head_dim']} FLOPs per exponential, {PING['fp16_matmul_tflops'] / PING['special_function_tflops']:.0f}× "
        f"the throughput, share {check:.2f} — the paper's “{PING['exponential_share_of_matmul_cycle']:.0%} of the cycle”. "
        f"On the H200 at d = 64 on wgmma the exponential takes {roof.exp_share(64, R.wgmma, R.mufu):.0%} of the "
        "matmul's time: a kernel that does one after the other spends about half its time waiting for MUFU."
    )
)

# %% tags=["remove-input"] alt="TFLOP/s bound of an attention forward pass against head dimension 32 to 256 for mma.sync and for wgmma: the tensor roof alone (flat), and the bound with the exponential in series, which rises towards the tensor roof as d grows"
fig, ax = plt.subplots(figsize=(7.5, 3.6))
dims = np.array([32, 48, 64, 96, 128, 192, 256])
for instruction, color in (("mma.sync", "#e6550d"), ("wgmma", "#3182bd")):
    bounds = [roof.attention_bounds(int(d), instruction) for d in dims]
    ax.plot(
        dims, [b["tensor alone"] for b in bounds], color=color, ls="--", label=f"{instruction}: tensor roof"
    )
    ax.plot(
        dims,
        [b["tensor + exp in series"] for b in bounds],
        color=color,
        marker="o",
        label=f"{instruction}: tensor + exp in series",
    )
ax.set_xscale("log", base=2)
ax.set_xticks(dims, [str(d) for d in dims])
ax.set_xlabel("head dimension d")
ax.set_ylabel("attention forward bound (TFLOP/s)")
ax.set_title("The exponential roof: one exp per score against 4d matmul FLOPs")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Issue, registers and occupancy
#
# Every instruction — an HMMA, an exponential, the FFMA that scales a score, an address computation —
# takes an issue slot: an SM has four warp schedulers, each issuing one warp instruction per clock
# (the H100 whitepaper's SM diagram). Nsight Compute counted the instructions of one forward call of
# the three fused kernels by class; `other` holds MUFU (the exponentials), integer, shuffles and
# conversions, which ncu did not count apart in this run.

# %% slideshow={"slide_type": "subslide"}
mix = roof.instruction_mix()
mix.set_index("kernel").T

# %% tags=["remove-input"]
energy_run = run_of(lookup(roof.COUNTERS))
flash = mix.set_index("kernel").loc["torch_flash"]
display(
    Markdown(
        f"fa2_tc here is the build of run `{energy_run['run_id']}` (commit `{energy_run['commit']}`), before "
        "version 4. Instructions alone would fill "
        f"{flash['issue / measured']:.0%} of torch flash's time ({flash['IPC per SM']:.2f} warp instructions per "
        "clock per SM of the 4 possible): issue is not the roof by itself, but every instruction that is not an "
        "HMMA competes with the exponentials and the matmul for the same slots. The SASS opcode mix of fa2_tc "
        "(how many of `other` are MUFU.EX2) is not in the committed measurements: it needs a device run."
    )
)

# %% tags=["remove-input"] slideshow={"slide_type": "subslide"}
display(
    Markdown(
        f"**Registers per thread.** A thread may hold at most {H200.max_registers_per_thread} registers and an "
        f"SM's register file {occ.REGISTERS_PER_SM:,} (data/hardware/h200.json, simlib.physical.occupancy). "
        "fa2_tc keeps its O accumulator and S tile in registers, so its registers decide how many blocks an "
        "SM holds:"
    )
)

# %% slideshow={"slide_type": "fragment"}
regs = roof.registers_and_occupancy("fa2_tc")
regs

# %% tags=["remove-input"]
at_cap = regs[regs["registers per thread"] == H200.max_registers_per_thread]
display(
    Markdown(
        f"At d = 128 fa2_tc uses all {H200.max_registers_per_thread} registers a thread may have "
        f"({len(at_cap)} of {len(regs)} launches); the register file then holds "
        f"{int(regs['blocks per SM (registers)'].min())} blocks of {int(regs['warps per block'].iloc[0])} warps: "
        f"{regs['occupancy (model)'].iloc[0]:.1%} of the {occ.MAX_THREADS_PER_SM // occ.WARP_SIZE} warps an SM can "
        f"hold, and ncu measured {regs['warps active (ncu)'].min():.1%}–{regs['warps active (ncu)'].max():.1%} "
        f"warps active. {int(regs['warps per SM'].iloc[0])} warps must hide every latency: the next K/V tile's "
        "load, the MMA pipeline, MUFU."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. FlashAttention-3's three mechanisms
#
# FlashAttention-3 keeps FlashAttention-2's loop nest and traffic; what changes is *how the SM is kept
# busy* (§2.2, §3). The paper's words, and what each buys against the roofs above:

# %% tags=["remove-input"]
hop = FA3["section_2_2_hopper"]["mechanisms"]
EVERY = readers.tc_times(lookup("tc_side_by_side_h200_every.csv"))  # every kernel's default, one invocation
EVERY = EVERY.pivot_table(
    index=["causal", "head_dim", "seq_len"], columns="kernel", values=["time_ms", "ratio_to_torch_flash"]
)
FA3_TC = pd.DataFrame(
    {
        "fa3_tc / flash": EVERY["ratio_to_torch_flash", "fa3_tc"],  # the run's own ratio
        "fa3_tc / cuDNN": EVERY["time_ms", "fa3_tc"] / EVERY["time_ms", "torch_cudnn"],
    }
)
display(
    Markdown(
        f"- **wgmma** — {hop['wgmma']}. mma.sync's measured ceiling is {R.mma_sync / 1e12:.0f} TFLOP/s, "
        f"{R.mma_sync / R.wgmma:.0%} of the datasheet's {R.wgmma / 1e12:.0f}: an Ampere-style kernel cannot "
        "pass that line on Hopper, whatever its schedule.\n"
        f"- **TMA** — {hop['tma']}: the loads leave the issue slots and the registers of the warps that compute.\n"
        f"- **Warp specialisation** — {hop['warp_specialization']}; with two consumer warpgroups in *pingpong*, "
        "one group's softmax (MUFU) runs while the other's GEMMs use the tensor cores: the exponential is "
        "overlapped instead of in series. At d = "
        f"{PING['pingpong_workload']['head_dim']}, N = {PING['pingpong_workload']['seq_len']:,} the paper "
        f"measured {PING['tflops_without_pingpong']} → {PING['tflops_with_pingpong'][0]}–"
        f"{PING['tflops_with_pingpong'][1]} TFLOPS on the H100.\n\n"
        f"The project's own Hopper kernel, `fa3_tc` (wgmma for both products, two consumer warpgroups, the "
        "128-byte swizzle, FA3's intra-warpgroup pipeline and the two groups in pingpong at d = 128; no TMA or "
        "producer warp yet), "
        f"takes {FA3_TC['fa3_tc / flash'].min():.2f}–{FA3_TC['fa3_tc / flash'].max():.2f}× torch flash's time "
        f"and {FA3_TC['fa3_tc / cuDNN'].min():.2f}–{FA3_TC['fa3_tc / cuDNN'].max():.2f}× cuDNN's on the H200 "
        f"(bf16, N ≥ 4096, d = 64 and 128, causal and not; the side by side of every kernel, lecture 05): wgmma alone "
        "passes mma.sync's line; the mechanisms it lacks are what cuDNN still has."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. What torch flash and cuDNN reach, and why
#
# The H200 side by side (fa2_tc_speed.csv): torch's FlashAttention-2 kernel (`pytorch_flash::flash_fwd_kernel`,
# mma.sync), cuDNN's (`…sm90_flash_fprop_wgmma…`: wgmma) and our fa2_tc, each against the bound of its
# own tensor instruction with the exponential in series:

# %% slideshow={"slide_type": "subslide"}
reached = roof.achieved()
reached

# %% tags=["remove-input"] slideshow={"slide_type": "subslide"} alt="Grouped bars of measured TFLOP/s for fa2_tc, torch flash and cuDNN at d = 64 and 128, non-causal, each beside its tensor-plus-exponential bound (mma.sync for fa2_tc and torch flash, wgmma for cuDNN)"
plain = reached[reached.causal.astype(str) != "True"]
fig, ax = plt.subplots(figsize=(7.5, 3.4))
x = np.arange(len(plain))
ax.bar(x - 0.2, plain["TFLOP/s (median over N)"], 0.4, label="measured (median over N)", color="#636363")
ax.bar(x + 0.2, plain["tensor + exp roof"], 0.4, label="tensor + exp in series (bound)", color="#9ecae1")
ax.set_xticks(x, [f"{k}\nd={d}" for k, d in zip(plain.kernel, plain.head_dim)], fontsize=8)
ax.set_ylabel("TFLOP/s (bf16, forward)")
ax.set_title("Fused attention on the H200 against its second roof")
ax.legend(fontsize=8)
plt.show()

# %% tags=["remove-input"]
by = plain.set_index(["kernel", "head_dim"])["of tensor + exp"]
display(
    Markdown(
        f"cuDNN reaches {by[('torch_cudnn', 64)]:.0%} (d = 64) and {by[('torch_cudnn', 128)]:.0%} (d = 128) of "
        "the wgmma bound with the exponential in series: it is *at* the second roof, and can only pass it by "
        "overlapping MUFU with the MMAs, which is what FlashAttention-3's pingpong does. torch flash reaches "
        f"{by[('torch_flash', 64)]:.0%} and {by[('torch_flash', 128)]:.0%} of the lower mma.sync bound; fa2_tc "
        f"{by[('fa2_tc', 64)]:.0%} and {by[('fa2_tc', 128)]:.0%}. The paper's FlashAttention-2 utilisation on "
        f"the H100, {FA3['abstract']['fa2_utilization']:.0%} of the peak, is the same story: the mma.sync "
        "ceiling and the serial exponential, not DRAM."
    )
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A kernel sequence is bounded by the sum of its kernels' rooflines; one roofline of the summed work
#   hides that the matmuls are compute-bound and the elementwise kernels memory-bound.
# - Once DRAM is off the critical path, the bound is the tensor instruction's rate (mma.sync's measured
#   ceiling, or wgmma's peak) plus the exponentials: one per score on a unit over two orders of
#   magnitude slower than the datasheet's matmul, about as long as the matmul at d = 64 on wgmma.
# - Issue slots, registers per thread and occupancy decide how much of that latency can be hidden:
#   at its register count fa2_tc runs few warps per SM.
# - FlashAttention-3's wgmma lifts the tensor roof, TMA and warp specialisation free the issue slots and
#   registers, pingpong overlaps the exponential; cuDNN's wgmma kernel already sits at the serial bound.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Each solution is hidden; it redoes the arithmetic by hand and checks it against the lecture's data.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1
#
# cupy's naive attention in fp32 (B = 1, H = 16, N = 4096, d = 64) is a sequence of kernels. From its per-kernel
# table (`roof.kernel_sequence("cupy_naive", "fp32", 1, 16, 4096)`), compute by hand the sum of the
# kernels' rooflines and the single roofline of the summed work, with the measured FFMA and copy
# ceilings. Which kernels make the two differ?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
cupy = roof.kernel_sequence("cupy_naive", "fp32", 1, 16, 4096)
per_kernel = sum(max(g * 1e9 / R.ffma, b * 1e9 / R.dram) for g, b in zip(cupy.ffma_GFLOP, cupy.dram_GB))
single = max(cupy.ffma_GFLOP.sum() * 1e9 / R.ffma, cupy.dram_GB.sum() * 1e9 / R.dram)
print(
    f"sum of roofs {per_kernel * ms:.2f} ms, one roofline {single * ms:.2f} ms; FFMA-bound: {list(cupy[cupy.bound == 'FFMA'].kernel)}"
)
totals_cupy = roof.sequence_totals(cupy)
assert abs(per_kernel * ms - totals_cupy["sum of per-kernel roofs"]) < 1e-9
assert abs(single * ms - totals_cupy["one roofline"]) < 1e-9
assert per_kernel > single and (cupy.bound == "FFMA").sum() == 2  # the two SGEMMs

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2
#
# At which head dimension does the exponential take exactly as long as the matmul, for mma.sync and
# for wgmma on the H200? Then: FP8 doubles the matmul rate and leaves MUFU as it is (FA3 §3.1): what is
# the exponential's share at d = 128 in FP8 on wgmma?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
crossover = {name: rate / (4 * R.mufu) for name, rate in (("mma.sync", R.mma_sync), ("wgmma", R.wgmma))}
fp8_share = (1 / R.mufu) / (4 * 128 / (2 * R.wgmma))
print({k: round(v, 1) for k, v in crossover.items()}, f"FP8 share at d=128: {fp8_share:.2f}")
for name, d_star in crossover.items():
    rate = R.mma_sync if name == "mma.sync" else R.wgmma
    assert abs(roof.exp_share(d_star, rate, R.mufu) - 1) < 1e-12
assert crossover["mma.sync"] < crossover["wgmma"] < 64  # at d = 64 wgmma's matmul just outlasts the exp
assert abs(fp8_share - 2 * roof.exp_share(128, R.wgmma, R.mufu)) < 1e-12

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3
#
# An mma.sync.m16n8k16 does 2·16·8·16 FLOPs. How many tensor-pipe warp instructions should a forward
# pass at d = 64 issue per 1,000 scores (4d FLOPs each)? Compare with what ncu counted for torch flash
# and fa2_tc.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
per_mma = 2 * 16 * 8 * 16
expected = 4 * 64 * 1000 / per_mma
counted = mix.set_index("kernel")["tensor (HMMA/wgmma) per 1k scores"]
print(f"expected {expected} HMMA per 1k scores; counted {counted.to_dict()}")
assert counted["torch_flash"] == expected and counted["fa2_tc"] == expected

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 4
#
# Registers: a warp's registers are allocated in units of `occ.REGISTER_ALLOCATION_UNIT`. With 4 warps
# per block, how many blocks of fa2_tc fit an SM's `occ.REGISTERS_PER_SM` registers at the registers per
# thread ncu measured at d = 64 (§4's table)? What is the largest register count per thread that would
# let one block more fit? Check with `simlib.physical.occupancy`.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
unit, per_sm, warps = occ.REGISTER_ALLOCATION_UNIT, occ.REGISTERS_PER_SM, 4


def blocks(registers):
    per_warp = -(-registers * 32 // unit) * unit
    return per_sm // (per_warp * warps)


measured = int(regs[regs.d == 64]["registers per thread"].iloc[0])
now = blocks(measured)
largest = max(r for r in range(1, H200.max_registers_per_thread + 1) if blocks(r) > now)
print(f"{measured} registers: {now} blocks; {now + 1} blocks up to {largest} registers per thread")
assert now == occ.occupancy(threads=128, registers=measured).blocks_per_sm
assert occ.occupancy(threads=128, registers=largest).blocks_per_sm == now + 1
assert occ.occupancy(threads=128, registers=largest + 1).blocks_per_sm == now

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 5
#
# FlashAttention-3's pingpong raised the paper's d = 128 forward pass on the H100 (§5's numbers, from
# data/papers.json). Compute the wgmma bound with the exponential in series at that d with the paper's
# own matmul and special-function rates: what fraction of it did the throughput reach before and
# after pingpong? Is either above the serial bound?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
d = PING["head_dim"]
paper_mm, paper_exp = PING["fp16_matmul_tflops"] * 1e12, PING["special_function_tflops"] * 1e12
serial = 4 * d / (4 * d / paper_mm + 1 / paper_exp) / 1e12
overlapped = 4 * d / max(4 * d / paper_mm, 1 / paper_exp) / 1e12
fractions = [t / serial for t in (PING["tflops_without_pingpong"], *PING["tflops_with_pingpong"])]
print(
    f"serial bound {serial:.0f}, overlapped {overlapped:.0f} TFLOPS; reached {[f'{f:.0%}' for f in fractions]}"
)
assert all(f < 1 for f in fractions)  # still under the serial bound: better overlap, not yet beyond it
assert overlapped == paper_mm / 1e12  # with perfect overlap the exponential would not bind at d = 128
