"""The posts' energy claim, "a 35–40 % reduction in energy per training run", judged on the H200.

Two steps, every number read from committed files (data/measurements/current/):

1. **Energy per attention call** (`attention_calls`), measured with NVML: standard attention against
   FlashAttention, forward and forward + backward, at each N. In 16 bits the standard attention is
   the one practitioners run (eager16_energy_h200.csv, benchmarks/eager16_h200.py): every N×N tensor
   in the dtype, both products on the tensor cores, as `eager` (matmul, softmax in the dtype,
   matmul), `eager_hf` (Hugging Face's eager attention: softmax in fp32, cast back) and
   `attention_ref` (the FlashAttention paper's benchmark reference), each against SDPA's flash
   backend on the same inputs, in bf16 and fp16. In fp32 the pair is SDPA math against SDPA
   memory-efficient (energy_attention_h200.csv; flash has no fp32 kernel). SDPA math on bf16 inputs
   is **fp32 inside (upcast)**: it accumulates and stores S and P in fp32 (PyTorch's docs: "the Math
   backend by default accumulates in float32"), so its bf16 rows are shown with that label (`upcast`)
   and never decide the 16-bit claim.
2. **A GPT-2-medium training step** (`training_step`): 24 layers, d_model 1024, 16 heads of 64,
   vocabulary 50,257, N = 1024 (the configuration the FlashAttention paper trains, Table 2;
   Hugging Face `gpt2-medium` config). Per sequence the step runs the attention core 24 times
   (forward + backward) and the rest of the model: its matmuls, 6 FLOPs per weight per token
   (forward 2, backward 4) over 24·12·d² layer weights plus the d·V LM head, at the measured joules
   per FLOP of a bf16 GEMM (the 8192³ matmul of the calibration, static power included). The rest
   is therefore a *lower* bound (no layer norm, GELU, dropout, optimizer traffic), so attention's
   share and the saving are *upper* bounds. Attention per sequence = the measured call / (B·H / 16)
   (B·H = 256 at N = 1024 in the 16-bit run: 16 sequences of 16 heads).

   saving = (E_attn,std − E_attn,flash) / (E_attn,std + E_rest)

In fp32 the rest of the step is priced at the FFMA chains' joules per FLOP (registers only: again a
lower bound). One more 16-bit standard is modelled, not measured by NVML: the eager fp16 attention of
the paper's baseline (helper E's figure2_h200.csv: DRAM and L2 bytes under Nsight Compute, CUDA-event
time, of `attention_ref` and FA2 at B = 64, H = 16, N = 1024, forward + backward, dropout 0), priced
with the calibrated table (`ncu_priced_step`): DRAM bytes at the HBM figure, the L1-side L2 bytes that
hit (ncu's lts bytes / 1.5, the two-partition factor of simlib.physical, less DRAM) at the L2 figure,
the FLOPs at the bf16 GEMM figure, the static power for the measured time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from measurements.readers import read_rows
from measurements.schemas import EAGER16_ENERGY, ENERGY_ATTENTION, FIGURE2
from simlib.energy import MEASUREMENTS, PJ, load_energy_table, read_calibration
from simlib.physical.l2 import l2_partition_factor

from .energy_check import ATTENTION_CSV, read_attention

FIGURE2_CSV = MEASUREMENTS / "figure2_h200.csv"
CALIBRATION_CSV = MEASUREMENTS / "energy_calibration_h200.csv"
EAGER16_CSV = MEASUREMENTS / "eager16_energy_h200.csv"
#: GPT-2 medium (Hugging Face openai-community/gpt2-medium config.json: n_layer 24, n_embd 1024,
#: n_head 16, vocab_size 50257, n_ctx 1024).
GPT2_MEDIUM = {"layers": 24, "d_model": 1024, "heads": 16, "vocab": 50257, "seq_len": 1024}
#: The 16-bit standard attention practitioners run (eager16_energy_h200.csv), each against SDPA flash.
STANDARD16 = ("eager", "eager_hf", "attention_ref")
#: (dtype, standard, FlashAttention, file): the 16-bit pairs of the eager16 run, the fp32 pair of the
#: energy run ("eager16": EAGER16_CSV, "energy": ATTENTION_CSV).
PAIRS = (
    *((dt, std, "torch_flash", "eager16") for dt in ("bf16", "fp16") for std in STANDARD16),
    ("fp32", "torch_math", "torch_efficient", "energy"),
)
#: SDPA math on bf16 inputs against flash (the energy run): fp32 inside, shown with that label only.
UPCAST_PAIR = ("bf16", "torch_math", "torch_flash", "energy")
UPCAST_LABEL = "fp32 inside (upcast)"
CLAIM = (0.35, 0.40)
#: N×N×d matmuls of one forward + backward: 2 forward, 4 backward (dV, dP, dQ, dK), FA2 one more
#: (it recomputes S in the backward pass).
MATMULS = {"standard": 6, "fa2_varlen": 7}


#: the schema of each file of `attention_calls`
SCHEMAS = {"energy": ENERGY_ATTENTION, "eager16": EAGER16_ENERGY}


def attention_calls(
    path: Path = ATTENTION_CSV, eager16_path: Path | None = EAGER16_CSV, upcast: bool = False
) -> pd.DataFrame:
    """Measured joules per call, standard vs FlashAttention, per pair of PAIRS (and, with `upcast`, the
    labelled UPCAST_PAIR), pass and N, and their ratio. `path` is the energy run's file (the fp32 pair),
    `eager16_path` the 16-bit baseline's (None leaves its pairs out)."""
    files = {"energy": path, "eager16": eager16_path}
    rows = {
        key: {
            (r["variant"], r["dtype"], r["pass"], int(r["seq_len"])): r
            for r in read_attention(f, SCHEMAS[key])
            if r["seq_len"]
        }
        for key, f in files.items()
        if f is not None
    }
    out = []
    for dtype, std, flash, key in (*PAIRS, *([UPCAST_PAIR] if upcast else [])):
        found = rows.get(key, {})
        for (v, dt, pas, n), r in sorted(found.items(), key=lambda kv: (kv[0][2], kv[0][3])):
            if v == std and dt == dtype and (flash, dtype, pas, n) in found:
                f = found[(flash, dtype, pas, n)]
                js, jf = float(r["joules_per_call"]), float(f["joules_per_call"])
                out.append(
                    {
                        "dtype": dtype,
                        "pass": pas,
                        "seq_len": n,
                        "batch_heads": int(r["batch"]) * int(r["heads"]),
                        "standard": std,
                        "flash": flash,
                        "upcast": (dtype, std, flash, key) == UPCAST_PAIR,
                        "run_file": r["run_file"],
                        "standard_j": js,
                        "flash_j": jf,
                        "standard_ms": float(r["ms_per_call"]),
                        "flash_ms": float(f["ms_per_call"]),
                        "flash_over_standard": jf / js,
                        "saving": 1 - jf / js,
                    }
                )
    return pd.DataFrame(out)


def gemm_joules_per_flop(path: Path = CALIBRATION_CSV, bench: str = "tc_matmul") -> float:
    """Total board joules per FLOP of a calibration benchmark (mean over repeats): the bf16 8192³
    matmul by default; "fp32_fma" gives the FFMA chains', a lower bound for an fp32 GEMM."""
    rows = [r for r in read_calibration(path) if r["bench"] == bench]
    if not rows:
        raise ValueError(f"{path}: no {bench} rows")
    return sum(r["watts"] / r["rate_per_s"] for r in rows) / len(rows)


def rest_of_step_flops(model: dict[str, int] = GPT2_MEDIUM) -> int:
    """Matmul FLOPs per sequence outside the attention core, forward + backward: 6 per weight per token.

    >>> rest_of_step_flops()     # 6·1024·(301,989,888 + 51,463,168) = 6144·353,453,056
    2171615576064
    """
    d, n = model["d_model"], model["seq_len"]
    weights = model["layers"] * 12 * d * d + d * model["vocab"]
    return 6 * n * weights


def ncu_priced_step(variant: str, path: Path = FIGURE2_CSV) -> dict[str, float]:
    """Joules of one figure-2 step (dropout 0) priced from its ncu counts and time, per sequence·layer."""
    table = load_energy_table("h200")
    row = next(
        r for r in read_rows(path, FIGURE2) if r["variant"] == variant and float(r["dropout_p"]) == 0.0
    )
    dram = float(row["dram_read_bytes"]) + float(row["dram_write_bytes"])
    l1_side = (float(row["l2_read_bytes"]) + float(row["l2_write_bytes"])) / l2_partition_factor()
    hits = max(l1_side - dram, 0.0)
    b, h, n, d = (int(row[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
    flops = 2 * n * n * d * b * h * MATMULS[variant]
    t = float(row["wall_ms_median"]) / 1e3
    joules = (
        dram * table.byte_cost("HBM")
        + hits * table.byte_cost("L2")
        + flops * table.flop_cost("tensor_core_gemm")
    ) * PJ
    joules += table.static_power() * t
    return {
        "variant": variant,
        "dram_bytes": dram,
        "l2_hit_bytes": hits,
        "flops": flops,
        "seconds": t,
        "joules_step": joules,
        "joules_per_sequence_layer": joules / b,
    }


def training_step(
    standard_j: float, flash_j: float, rest_j_per_flop: float, model: dict[str, int] = GPT2_MEDIUM
) -> dict[str, float]:
    """Energy per sequence of a training step from attention joules per sequence·layer (fwd + bwd).

    Worked number: 0.4 J standard, 0.05 J flash per sequence·layer, 1e-12 J/FLOP for the rest:
    rest 2.172 J, standard step 24·0.4 + 2.172 = 11.77 J, saving 24·0.35 / 11.77 = 71.4 %:

    >>> s = training_step(0.4, 0.05, 1e-12)
    >>> round(s["rest_j"], 3), round(s["standard_step_j"], 2), round(s["saving"], 3)
    (2.172, 11.77, 0.714)
    """
    layers = model["layers"]
    rest = rest_of_step_flops(model) * rest_j_per_flop
    std_attn, flash_attn = layers * float(standard_j), layers * float(flash_j)
    std_step, flash_step = std_attn + rest, flash_attn + rest
    # the rest of the step at which the saving falls to the claim's 40 % and 35 %: R = ΔA / s − A_std
    needed = {
        f"rest_multiple_for_{round(c * 100)}pct": ((std_attn - flash_attn) / c - std_attn) / rest
        for c in CLAIM
    }
    return {
        "rest_j": rest,
        "standard_attention_j": std_attn,
        "flash_attention_j": flash_attn,
        "standard_step_j": std_step,
        "flash_step_j": flash_step,
        "attention_share_standard": std_attn / std_step,
        "saving": 1 - flash_step / std_step,
        **needed,
    }


def measured_cases(calls: pd.DataFrame, rest_j_per_flop: dict[str, float]) -> list[dict[str, Any]]:
    """One training step per measured forward + backward pair at the step's N (`calls` from
    `attention_calls`), its rest priced at `rest_j_per_flop[dtype]` ("16": the 16-bit pairs)."""
    seq = GPT2_MEDIUM["seq_len"]
    out = []
    fb = calls[(calls["pass"] == "fwd_bwd") & (calls["seq_len"] == seq)]
    for _, r in fb.iterrows():
        per_seq = r["batch_heads"] // GPT2_MEDIUM["heads"]
        label = UPCAST_LABEL if r["upcast"] else ""
        what = (
            f"{r['standard']} {r['dtype']}{' (' + label + ')' if label else ''} vs {r['flash']} {r['dtype']}"
        )
        rest = rest_j_per_flop["fp32" if r["dtype"] == "fp32" else "16"]
        out.append(
            {
                "case": f"measured (NVML): {what}",
                "dtype": r["dtype"],
                "standard": r["standard"],
                "upcast": bool(r["upcast"]),
                **training_step(r["standard_j"] / per_seq, r["flash_j"] / per_seq, rest),
            }
        )
    return out


def _pct(values) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%}–{hi:.0%}"


def verdict_text(cases: list[dict[str, Any]], fp32_cases: list[dict[str, Any]], calls: pd.DataFrame) -> str:
    """The one-line verdict from the 16-bit `cases` (upper bounds on the step saving): which baselines can
    reach the claim's 35 % and how much the rest of the step must cost for the saving to fall to 35–40 %."""
    seq = GPT2_MEDIUM["seq_len"]
    reach = [c for c in cases if c["saving"] >= CLAIM[0]]
    short = [c for c in cases if c["saving"] < CLAIM[0]]
    fb = calls[(calls["pass"] == "fwd_bwd") & (calls["seq_len"] == seq) & ~calls["upcast"]]
    fb = fb[fb["dtype"] != "fp32"]
    per_call = (
        f"; per attention call (fwd+bwd, N = {seq}) FlashAttention saves {_pct(fb['saving'])}"
        if len(fb)
        else ""
    )
    fp32 = [c["saving"] for c in fp32_cases]
    tail = f"; in fp32 (no tensor cores) at most {max(fp32):.0%}" if fp32 else ""
    if not reach:
        return (
            f"not supported: at most {_pct([c['saving'] for c in cases])} less energy per GPT-2-medium step at "
            f"N = {seq} in fp16/bf16, below 35 %{per_call}{tail}"
        )
    names = sorted({c["standard"] for c in reach})
    text = (
        f"right only under a condition: against {', '.join(names)} (16-bit, the rest of the step costed as bare "
        f"bf16 GEMMs, a lower bound) a GPT-2-medium step at N = {seq} takes at most "
        f"{_pct([c['saving'] for c in reach])} less energy with FlashAttention, which falls to 40 % / 35 % once the "
        f"rest of the step costs {_pct_x([c['rest_multiple_for_40pct'] for c in reach])} / "
        f"{_pct_x([c['rest_multiple_for_35pct'] for c in reach])} those GEMMs' energy"
    )
    if short:
        text += (
            f"; against {', '.join(sorted({c['standard'] for c in short}))} (softmax in the 16-bit type) at most "
            f"{_pct([c['saving'] for c in short])}, below 35 % however little the rest costs"
        )
    return text + per_call + tail


def _pct_x(values) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.1f}×" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}–{hi:.1f}×"


def energy_claim_verdict() -> dict[str, Any]:
    """The claim judged: `cases`, the steps in the posts' regime (fp16/bf16: the practitioners' 16-bit
    standard attention measured, and attention_ref priced from ncu counts); `fp32_cases`, the fp32 pair;
    `upcast_cases`, SDPA math bf16 (fp32 inside), shown and not judged; the measured attention calls;
    and a one-line verdict."""
    calls = attention_calls(upcast=True)
    per_gemm = gemm_joules_per_flop()
    rest = {"16": per_gemm, "fp32": gemm_joules_per_flop(bench="fp32_fma")}
    measured = measured_cases(calls, rest)
    cases = [c for c in measured if c["dtype"] != "fp32" and not c["upcast"]]
    try:
        std, fa = ncu_priced_step("standard"), ncu_priced_step("fa2_varlen")
        cases.append(
            {
                "case": "modelled from ncu counts: eager fp16 attention_ref vs FA2 (figure 2 run)",
                "dtype": "fp16",
                "standard": "attention_ref",
                "upcast": False,
                **training_step(std["joules_per_sequence_layer"], fa["joules_per_sequence_layer"], per_gemm),
            }
        )
    except (FileNotFoundError, StopIteration):
        pass
    fp32_cases = [c for c in measured if c["dtype"] == "fp32"]
    upcast_cases = [c for c in measured if c["upcast"]]
    verdict = verdict_text(cases, fp32_cases, calls)
    return {
        "cases": cases,
        "fp32_cases": fp32_cases,
        "upcast_cases": upcast_cases,
        "attention_calls": calls.to_dict("records"),
        "rest_j_per_flop": per_gemm,
        "verdict": verdict,
        "claim": "35–40 % reduction in energy per training run",
    }
