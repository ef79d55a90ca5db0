"""Lecture 9's helpers: where the joules of one attention call go, modelled per level and measured.

`model_vs_measured` (evidence.energy_check) gives, per kernel, dtype, pass and N of the NVML energy run
(energy_attention_h200.csv), the model's joules per level (`pred_hbm_j`, `pred_l2_j`, `pred_sram_j`),
for the FLOPs (`pred_compute_j`) and for the static power over the measured time (`pred_static_j`),
next to the measured joules (`measured_j`, and `measured_dynamic_j` above static power). This module
picks the standard-vs-FlashAttention pairs that the run has, draws them on one axes per pair, and
tabulates every model's predicted/measured ratio per kernel (docs/ENERGY.md says why they miss).

Worked number: torch math (fp32 inside: it upcasts bf16) bf16 forward at N = 4096, B·H = 32 measured 5.95 J per call in 9.24 ms; at
the static 141.2 W, 1.31 J of it is the chip being on, the other 4.64 J is the call's work.
"""

import numpy as np

#: (title, standard, FlashAttention, dtype, which prediction) in the order the lecture shows them; a pair
#: the energy run has not measured (e.g. naive_tc before its run) is left out by `pairs_measured`.
PAIRS = (
    ("numba, fp32 on CUDA cores", "numba_naive", "numba_tiled", "fp32", "physical"),
    ("numba tensor-core kernels, bf16", "naive_tc", "fa2_tc", "bf16", "logical"),
    ("torch SDPA, bf16 (math: fp32 inside (upcast))", "torch_math", "torch_flash", "bf16", "logical"),
)
#: model terms (columns of model_vs_measured) and their labels, bottom to top of a stacked bar
TERMS = (
    ("pred_hbm_j", "HBM (DRAM)"),
    ("pred_l2_j", "L2 hits"),
    ("pred_sram_j", "SRAM (shared memory)"),
    ("pred_compute_j", "compute"),
    ("pred_static_j", "static power × time"),
)
TERM_COLORS = ("#c44e52", "#dd8452", "#4c72b0", "#55a868", "#bbbbbb")


def _row(mvm, variant, dtype, model, seq_len, pass_):
    pick = mvm[
        (mvm.variant == variant)
        & (mvm.dtype == dtype)
        & (mvm.model == model)
        & (mvm["pass"] == pass_)
        & (mvm.seq_len == seq_len)
    ]
    return pick.iloc[0] if len(pick) else None


def pairs_measured(mvm, seq_len, pass_="fwd"):
    """[(title, standard row, FlashAttention row)] for each of PAIRS that `mvm` has at `seq_len`."""
    out = []
    for title, std, flash, dtype, model in PAIRS:
        a, b = (_row(mvm, v, dtype, model, seq_len, pass_) for v in (std, flash))
        if a is not None and b is not None:
            out.append((f"{title}: {std} vs {flash}", a, b))
    return out


def draw_joules(ax, rows, title):
    """Per kernel of `rows` two bars on one axes: the model stacked per level (TERMS) and the NVML
    measurement split into static power × the measured time and the rest."""
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for (term, label), color in zip(TERMS, TERM_COLORS):
        values = np.array([r[term] for r in rows])
        ax.bar(x - 0.19, values, 0.36, bottom=bottom, color=color, label=f"model: {label}")
        bottom += values
    static = np.array([r["measured_j"] - r["measured_dynamic_j"] for r in rows])
    dynamic = np.array([r["measured_dynamic_j"] for r in rows])
    ax.bar(
        x + 0.19, static, 0.36, color="#bbbbbb", hatch="//", edgecolor="0.3", label="measured: static × time"
    )
    ax.bar(x + 0.19, dynamic, 0.36, bottom=static, color="0.25", label="measured: above static (NVML)")
    ax.set_xticks(x, [f"{r['variant']} {r['dtype']}\nmodel | measured" for r in rows])
    ax.set_ylabel("energy per call (J)")
    ax.set_title(title, fontsize=10)


#: the predictions in the order the lecture's table shows them (evidence.energy_check's model names)
MODELS = (
    "logical",
    "logical, 16-byte SRAM",
    "physical",
    "physical, 16-byte SRAM",
    "counters",
    "counters + issue",
)
WITHIN = "within ±15 % at every N"


def ratio_table(mvm, goal=0.15):
    """Predicted / measured joules per call, the mean over N: one row per kernel (variant, dtype,
    pass), one column per model of MODELS that `mvm` has (NaN where that model does not predict the
    kernel), and WITHIN: the models inside 1 ± `goal` at every N ("none" if no model is).

    >>> import pandas as pd
    >>> mvm = pd.DataFrame([("fa2_tc", "bf16", "fwd", "counters", n, r) for n, r in ((1024, 0.84), (4096, 0.9))],
    ...                    columns=["variant", "dtype", "pass", "model", "seq_len", "ratio_total"])
    >>> t = ratio_table(mvm)
    >>> float(round(t.loc["fa2_tc bf16 fwd", "counters"], 2)), t.loc["fa2_tc bf16 fwd", WITHIN]
    (0.87, 'none')
    """
    named = mvm.assign(
        kernel=mvm.variant + " " + mvm.dtype + " " + mvm["pass"], ok=(mvm.ratio_total - 1).abs() <= goal
    )
    mean = named.pivot_table(index="kernel", columns="model", values="ratio_total", aggfunc="mean")
    every = named.groupby(["kernel", "model"]).ok.all()
    cols = [m for m in MODELS if m in mean.columns]
    table = mean[cols].copy()
    table[WITHIN] = [", ".join(m for m in cols if every.get((k, m), False)) or "none" for k in table.index]
    return table
