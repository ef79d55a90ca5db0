"""docs/ENERGY.md's generated tables: `python -m evidence.energy_report` prints them (regenerate, never edit).

The calibrated table, every kernel's predicted against measured ratio (`energy_check`), the shared-memory
split, the unpriced warp instructions, and the "35–40 %" claim's numbers and verdict (`energy_claim`);
tests/test_energy.py checks that the committed note holds exactly this text.
"""

from __future__ import annotations

import pandas as pd

from simlib.energy import calibrate, load_energy_table, read_calibration

from .energy_check import (
    CALIBRATION_CSV,
    implied_instruction_cost,
    model_vs_measured,
    naive_tc_by_launch,
    sixteen_byte_sram,
    within,
)
from .energy_claim import attention_calls, energy_claim_verdict
from .energy_counters import shared_split


def report_markdown() -> str:
    """The note's tables (docs/ENERGY.md, between its markers): the calibrated table, every kernel's
    predicted/measured ratio, the claim's numbers and verdict. Regenerate, never edit."""
    table = load_energy_table("h200")
    fig = table.frame()
    lines = ["| figure | H200 measured | min | max | unit |", "|---|---|---|---|---|"]
    lines += [
        f"| {r.entry} | {r.value:.4g} | {r.min:.4g} | {r.max:.4g} | {r.unit} |" for r in fig.itertuples()
    ]
    sram16 = sixteen_byte_sram()
    if sram16 is not None:
        cal = calibrate(read_calibration(CALIBRATION_CSV))
        per_inst, per_byte = shared_split(cal["SRAM"]["mean"], cal["SRAM_16B"]["mean"])
        lines += [
            "",
            "Shared-memory loads, 4 against 16 bytes per lane (same run, same bytes per thread and trip, one "
            "FADD per 4 B subtracted):",
            "",
            "| load | pJ/byte | min | max |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {name} | {cal[e]['mean']:.4g} | {cal[e]['min']:.4g} | {cal[e]['max']:.4g} |"
            for name, e in (("LDS.32 (smem_read)", "SRAM"), ("LDS.128 (smem_read_v4)", "SRAM_16B"))
        ]
        lines += [
            "",
            f"Solved as a cost per warp instruction plus one per byte (`evidence.energy_counters.shared_split`): "
            f"{per_inst:.0f} pJ per shared-memory instruction and {per_byte:.3g} pJ per byte.",
        ]
    mvm = model_vs_measured(table=table)
    mvm["kernel"] = mvm["variant"] + " " + mvm["dtype"] + " " + mvm["pass"] + " (" + mvm["model"] + ")"
    ratios = mvm.pivot_table(index="kernel", columns="seq_len", values="ratio_total")
    dyn = mvm.pivot_table(index="kernel", columns="seq_len", values="ratio_dynamic")
    ns = list(ratios.columns)
    lines += [
        "",
        "| kernel | " + " | ".join(f"N={n}: total (above static)" for n in ns) + " |",
        "|---|" + "---|" * len(ns),
    ]
    for k in ratios.index:
        cells = [
            f"{ratios.loc[k, n]:.2f} ({dyn.loc[k, n]:.2f})" if pd.notna(ratios.loc[k, n]) else "-" for n in ns
        ]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| model | (kernel, dtype, pass) predicted | within ±15 % at every N | outside |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r.model} | {r.kernels} | {r.within} | {r.outside_names or '—'} |"
        for r in within(mvm).itertuples()
    ]
    implied = implied_instruction_cost(mvm)
    lines += [
        "",
        "What the counters model's residual comes to per warp instruction that no figure prices (min–max "
        "over N; one FFMA warp instruction costs "
        f"{implied.ffma_warp_instruction_pj.iloc[0]:.0f} pJ):",
        "",
        "| kernel | pJ per unpriced warp instruction |",
        "|---|---|",
    ]
    lines += [f"| {r.variant} {r.dtype} {r._3} | {r.min:.0f} – {r.max:.0f} |" for r in implied.itertuples()]
    launches = naive_tc_by_launch(mvm)
    lines += [
        "",
        "naive_tc one launch at a time (counters model; residual = measured − counters, per warp instruction "
        "that no figure prices):",
        "",
        "| N | launch | measured J | counters J | ratio | residual J | unpriced warp instructions | "
        "residual per instruction (pJ) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.seq_len} | {r.launch} | {r.measured_j:.3f} | {r.counters_j:.3f} | {r.ratio_counters:.2f} | "
        f"{r.residual_j:.3f} | {r.unpriced_warp_instructions:.3g} | {r.residual_pj_per_instruction:.0f} |"
        for r in launches.itertuples()
    ]
    lines += [
        "",
        f"One FFMA warp instruction (64 FLOPs at fp32_fma) costs {launches.ffma_warp_instruction_pj.iloc[0]:.0f} pJ.",
    ]
    calls = attention_calls()
    lines += [
        "",
        "| dtype | pass | N | B·H | standard | J | FlashAttention | J | saving per call |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {c.dtype} | {c._2} | {c.seq_len} | {c.batch_heads} | {c.standard} | {c.standard_j:.4g} | {c.flash} | "
        f"{c.flash_j:.4g} | {c.saving:.0%} |"
        for c in calls.itertuples()
    ]
    v = energy_claim_verdict()

    def multiple(x: float) -> str:
        return f"{x:.2f}" if x > 0 else "unreachable"

    lines += [
        "",
        "| case | standard attention (J) | FlashAttention (J) | rest of step (J) | attention share | "
        "saving per step | rest × for 40 % | rest × for 35 % |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in [*v["cases"], *v["fp32_cases"]]:
        lines.append(
            f"| {c['case']} | {c['standard_attention_j']:.3f} | {c['flash_attention_j']:.3f} | {c['rest_j']:.3f} "
            f"| {c['attention_share_standard']:.0%} | {c['saving']:.0%} | {multiple(c['rest_multiple_for_40pct'])} "
            f"| {multiple(c['rest_multiple_for_35pct'])} |"
        )
    lines += ["", f"**Verdict:** {v['verdict']}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(report_markdown(), end="")
