"""The energy model against NVML on the H200: every attention kernel of the energy run, predicted.

For each row of data/measurements/current/energy_attention_h200.csv (one kernel, dtype, pass and
N; d = 64, H = 16) the energy is predicted from counts and the measured calibration table
(`simlib.energy`), with the static power paid for the *measured* time (the model says what the
bytes and FLOPs cost; how long the call takes is the timing model's business), and set against
the NVML joules per call. Two predictions where the project has them:

* ``logical``: simlib's own counts of the schedule that models the kernel (KERNEL_COUNTS below):
  every HBM-level byte reaches DRAM, SRAM bytes by docs/COUNTING.md's per-thread convention;
* ``physical`` (numba naive and tiled, naive_tc and its launches, fa2_tc): simlib.physical's prediction
  of what Nsight Compute counts: DRAM bytes at the HBM figure, the other L1→L2 sectors at the L2
  figure, shared-memory wavefronts × 128 B at the SRAM figure (the calibration kernel's LDS.32 is one
  wavefront of 128 B);
* ``counters`` and ``counters + issue`` (every kernel): what Nsight Compute counted in one call of
  it, priced by `evidence.energy_counters`; the second adds the warp instructions no figure prices.

In the logical model library kernels (cuBLAS GEMMs, torch's fused kernels) have no shared-memory
counts of their own: a bf16 GEMM's FLOPs are charged at ``tensor_core_gemm``, an fp32 one at
``fp32_gemm`` (the 8192³ matmuls' joules per FLOP, their operand traffic included).

Worked number (the first line of the table): numba_naive, N = 4096, B·H = 32, physical: DRAM
8.76 GB at 119.5 pJ/B, 32.1 GB of L2 hits at 90.9 pJ/B, 4.70e9 wavefronts × 128 B at 15.9 pJ/B,
1.37e11 FLOPs at 4.34 pJ and 141.2 W × 76.4 ms: 24.9 J predicted against 27.1 J measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from measurements.read import read_rows
from measurements.schemas import ENERGY_ATTENTION, Schema
from simlib.counts import Result, count
from simlib.energy import (
    MEASUREMENTS,
    PJ,
    EnergyTable,
    calibrate,
    energy,
    load_energy_table,
    read_calibration,
)
from simlib.hardware import load_preset
from simlib.physical import predict
from simlib.physical.fa2_tc_model import V3_LAYOUT
from simlib.physical.metrics import DRAM_READ, DRAM_WRITE, L1_LD, L1_ST, SHARED_LD, SHARED_ST
from simlib.presets import DEFAULT_GPU
from simlib.workload import Workload

from .energy_counters import NAIVE_TC_LAUNCHES, counted, counter_terms, shared_split, tensor_flops

ATTENTION_CSV = MEASUREMENTS / "energy_attention_h200.csv"
#: The calibration of the same run (the H200 table's file), with 4-byte (LDS.32) and 16-byte
#: (ld.shared.v4, LDS.128) shared loads.
CALIBRATION_CSV = MEASUREMENTS / "energy_calibration_h200.csv"
#: Kernels whose shared-memory reads are 16 bytes per lane: ldmatrix (fa2_tc, naive_tc, FlashAttention-2
#: in torch flash and cuDNN), LDS.128 (numba tiled: 48 of its 56 LDS at d = 64), float4 (numba fast).
SIXTEEN_BYTE_LOADS = (
    "fa2_tc",
    "naive_tc",
    "naive_tc_scores",
    "naive_tc_pv",
    "numba_tiled",
    "numba_fast",
    "torch_flash",
    "torch_cudnn",
)
H200_SRAM = 232448
#: FlashAttention-2's forward tiles at d = 64 (data/fa2_tiles.json: run_mha_fwd_hdim64, 128 x 128).
FA2_BLOCK = 128
#: The energy runs measured fa2_tc's version 3 (each warp one m16 tile of rows, Q in registers); the
#: kernel's default since issue 22 is 32 rows per warp, so their counts name the old layout.
FA2_TC_V3 = dict(V3_LAYOUT)


@dataclass(frozen=True)
class Part:
    """One counted piece of a kernel call: a Result, the unit of its FLOPs, whether its SRAM counts."""

    result: Result
    flop_unit: str
    sram: bool


def _params(text: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in text.split(";") if "=" in p) if text else {}


def kernel_parts(
    variant: str, dtype: str, pas: str, w: Workload, params: dict[str, str]
) -> tuple[list[Part], str]:
    """The counted pieces of one measured call, and a note on what models it."""
    gemm = "tensor_core_gemm" if dtype == "bf16" else "fp32_gemm"
    if variant == "numba_naive":
        r = count(
            "naive", w, matmul_tile=int(params["matmul_tile"]), softmax_threads=int(params["softmax_threads"])
        )
        return [Part(r, "fp32_fma", True)], "simlib naive with the kernel's matmul tile and softmax threads"
    if variant == "numba_tiled":
        r = count("fa2", w, block_rows=int(params["block_rows"]), block_cols=int(params["block_cols"]))
        return [Part(r, "fp32_fma", True)], "simlib fa2 with the kernel's blocks"
    if variant == "numba_fast":
        nty, ntx = (int(x) for x in params["threads"].split("x"))
        r = count(
            "fa2_fast",
            w,
            block_rows=int(params["block_rows"]),
            block_cols=int(params["block_cols"]),
            threads=(nty, ntx),
        )
        return [Part(r, "fp32_fma", True)], "simlib fa2_fast with the kernel's configuration"
    if variant == "fa2_tc":
        r = count(
            "fa2_tc",
            w,
            warps=int(params["block_rows"]) // 16,
            block_cols=int(params["block_cols"]),
            **FA2_TC_V3,
        )
        return [
            Part(r, "tensor_core", True)
        ], "simlib fa2_tc (the kernel's own schedule) with the tiles that ran"
    if variant == "naive_tc":
        r = count(
            "naive_tc",
            w,
            warps=int(params["warps"]),
            block_cols=int(params["block_cols"]),
            softmax_threads=int(params["softmax_threads"]),
        )
        return [
            Part(r, "tensor_core", True)
        ], "simlib naive_tc (the kernel's own schedule: S and P through HBM in bf16) with the tiles that ran"
    if variant in ("cupy_naive", "torch_math"):
        # torch's math backend accumulates in fp32 for fp16/bf16 inputs by default (PyTorch's numerical
        # accuracy notes: allow_fp16_bf16_reduction_math_sdp is off), and TF32 is off in the run: its
        # S and P are fp32 and its GEMMs SGEMMs, so a bf16 call is counted as the fp32 one
        w32 = Workload(w.seq_len, w.head_dim, batch=w.batch, heads=w.heads, dtype="fp32")
        parts = [Part(count("unfused", w32, dropout=False), "fp32_gemm", False)]
        if pas == "fwd_bwd":
            parts.append(Part(count("unfused_bwd", w32, dropout=False), "fp32_gemm", False))
        return (
            parts,
            f"simlib unfused{' + unfused_bwd' if pas == 'fwd_bwd' else ''} in fp32 (S, P through HBM; "
            "torch's math backend upcasts bf16); SGEMM FLOPs at fp32_gemm (a whole SGEMM's joules per "
            "FLOP, its operand traffic included)",
        )
    if variant in ("torch_flash", "torch_cudnn", "torch_efficient"):
        if dtype == "bf16" and variant != "torch_efficient":
            fwd = Part(
                count("fa2_tc", w, warps=FA2_BLOCK // 16, block_cols=FA2_BLOCK, **FA2_TC_V3),
                "tensor_core",
                True,
            )
            note = (
                "simlib fa2_tc with FA2's 128 x 128 tiles (its SRAM reads counted for 8 warps of 16 rows; FA2 "
                "runs 4 warps of 32: 2x its SRAM reads)"
            )
        elif dtype == "bf16":
            fwd = Part(count("fa2_tc", w, warps=4, block_cols=64, **FA2_TC_V3), "tensor_core", True)
            note = (
                "simlib fa2_tc with 64 x 64 tiles (the CUTLASS kernel's tiles are not read from its source)"
            )
        else:
            fwd = Part(count("fa2", w, block_rows=64, block_cols=64), "fp32_fma", False)
            note = (
                "simlib fa2 with 64 x 64 tiles at fp32_fma; SRAM not counted (the kernel's layout is not "
                "modelled; ncu counts no FFMA in it: its products are TF32 mma, see the counters model)"
            )
        parts = [fwd]
        if pas == "fwd_bwd":
            parts.append(Part(count("flash_bwd", w, sram_bytes=H200_SRAM), gemm, False))
            note += "; + simlib flash_bwd (HBM only), its FLOPs at " + gemm
        return parts, note
    raise ValueError(f"no counts for kernel {variant!r}")


def physical_parts(variant: str, w: Workload, params: dict[str, str]) -> dict[str, float] | None:
    """DRAM bytes, other L1→L2 bytes, shared bytes (wavefronts × 128) from simlib.physical (numba naive
    and tiled, naive_tc, fa2_tc), or None."""
    hw = load_preset(DEFAULT_GPU)
    if variant == "numba_naive":
        mapping: dict[str, Any] = {
            "matmul_tile": int(params["matmul_tile"]),
            "softmax_threads": int(params["softmax_threads"]),
        }
        launches = [("naive", name) for name in ("qk", "softmax", "pv")]
    elif variant == "numba_tiled":
        mapping = {"block_rows": int(params["block_rows"]), "block_cols": int(params["block_cols"])}
        launches = [("tiled", "fa2")]
    elif variant == "naive_tc" or variant in NAIVE_TC_LAUNCHES:
        mapping = {k: int(params[k]) for k in ("warps", "block_cols", "softmax_threads")}
        names = [NAIVE_TC_LAUNCHES[variant]] if variant in NAIVE_TC_LAUNCHES else NAIVE_TC_LAUNCHES.values()
        launches = [("naive_tc", name) for name in names]
    elif variant == "fa2_tc":
        mapping = {
            "warps": int(params["block_rows"]) // 16,
            "block_cols": int(params["block_cols"]),
            **FA2_TC_V3,
        }
        launches = [("fa2_tc", "fa2_tc")]
    else:
        return None
    dram = l1 = shared = 0.0
    for kernel, launch in launches:
        m = predict(kernel, launch, w, mapping, hw)
        dram += m[DRAM_READ] + m[DRAM_WRITE]
        l1 += 32 * (m[L1_LD] + m[L1_ST])
        shared += 128 * (m[SHARED_LD] + m[SHARED_ST])
    return {"HBM": dram, "L2": max(l1 - dram, 0.0), "SRAM": shared}


def sixteen_byte_sram(path: Path = CALIBRATION_CSV) -> float | None:
    """pJ per byte of conflict-free 16-byte shared loads (the calibration's smem_read_v4, less one FP32
    instruction per 4 B, as the 4-byte SRAM figure), or None without that calibration file."""
    if not Path(path).is_file():
        return None
    cal = calibrate(read_calibration(Path(path)))
    return cal["SRAM_16B"]["mean"] if "SRAM_16B" in cal else None


def predict_row(row: dict[str, str], table: EnergyTable, sram16: float | None = None) -> list[dict[str, Any]]:
    """The logical, physical and counters predictions of one measured row (each where it exists; a
    one-launch naive_tc row has no logical one); for a kernel of SIXTEEN_BYTE_LOADS and a 16-byte SRAM
    figure `sram16` (pJ/B), the logical and physical again with their shared-memory bytes priced at
    that figure (model "<model>, 16-byte SRAM")."""
    n, bh = int(row["seq_len"]), int(row["batch"]) * int(row["heads"])
    variant, dtype, pas = row["variant"], row["dtype"], row["pass"]
    w = Workload(n, int(row["head_dim"]), batch=int(row["batch"]), heads=int(row["heads"]), dtype=dtype)
    params = _params(row.get("params", ""))
    t = float(row["ms_per_call"]) / 1e3
    measured = float(row["joules_per_call"])
    base = {
        "run_file": row.get("run_file", ATTENTION_CSV.name),
        "variant": variant,
        "dtype": dtype,
        "pass": pas,
        "seq_len": n,
        "batch_heads": bh,
        "ms": t * 1e3,
        "measured_j": measured,
        "measured_dynamic_j": measured - table.static_power() * t,
    }
    models = []
    if variant in NAIVE_TC_LAUNCHES:  # one launch of naive_tc: one product, or none (softmax)
        matmul_flops = 0.0 if variant == "naive_tc_softmax" else float(2 * n * n * w.head_dim * bh)
    else:
        parts, note = kernel_parts(variant, dtype, pas, w, params)
        terms = {"HBM": 0.0, "L2": 0.0, "SRAM": 0.0, "compute": 0.0}
        for p in parts:
            e = energy(p.result, table, time_s=0.0, flop_unit=p.flop_unit)
            terms["HBM"] += e.level_j.get("HBM", 0.0)
            terms["SRAM"] += e.level_j.get("SRAM", 0.0) if p.sram else 0.0
            terms["compute"] += e.compute_j
        models.append(("logical", note, terms))
        matmul_flops = float(sum(p.result.flops for p in parts))
    phys = physical_parts(variant, w, params)
    if phys is not None:
        moved = {lv: b * table.byte_cost(lv) * PJ for lv, b in phys.items()}
        fma = table.flop_cost("tensor_core" if dtype == "bf16" else "fp32_fma")
        models.append(
            (
                "physical",
                "simlib.physical: DRAM, L1->L2 sectors, shared wavefronts x 128 B",
                {**moved, "compute": matmul_flops * fma * PJ},
            )
        )
    if sram16 is not None and variant in SIXTEEN_BYTE_LOADS:
        scale = sram16 / table.byte_cost("SRAM")
        models += [
            (
                f"{m}, 16-byte SRAM",
                f"{n}; SRAM bytes at the 16-byte-load figure",
                {**x, "SRAM": x["SRAM"] * scale},
            )
            for m, n, x in list(models)
        ]
    c = counted(variant, dtype, pas, n, bh)
    if c is not None:
        split = shared_split(
            table.byte_cost("SRAM"), sram16 if sram16 is not None else table.byte_cost("SRAM")
        )
        terms = counter_terms(c, table, split, tensor_flops(variant, dtype, matmul_flops))
        issue = terms.pop("issue")
        note = f"Nsight Compute's counts of one call ({c['file']}), priced by evidence.energy_counters"
        models.append(("counters", note, dict(terms)))
        models.append(
            (
                "counters + issue",
                note + "; other warp instructions at one FFMA's energy",
                {**terms, "issue": issue},
            )
        )
    return [_finish({**base, "model": m, "note": n}, x, table.static_power() * t) for m, n, x in models]


def _finish(row: dict[str, Any], terms: dict[str, float], static_j: float) -> dict[str, Any]:
    dynamic = sum(terms.values())
    row.update({f"pred_{k.lower()}_j": v for k, v in terms.items()})
    row.update(
        pred_static_j=static_j,
        pred_dynamic_j=dynamic,
        pred_total_j=dynamic + static_j,
        ratio_total=(dynamic + static_j) / row["measured_j"],
        ratio_dynamic=dynamic / row["measured_dynamic_j"] if row["measured_dynamic_j"] > 0 else float("nan"),
    )
    return row


def read_attention(path: Path = ATTENTION_CSV, schema: Schema = ENERGY_ATTENTION) -> list[dict[str, str]]:
    """The rows of an energy CSV (the energy run's, or with `schema` another run's, e.g. the 16-bit
    baseline's EAGER16_ENERGY) that passed their check, each with its file's name."""
    rows = read_rows(path, schema)
    return [{**r, "run_file": Path(path).name} for r in rows if r["status"] == "ok"]


def model_vs_measured(path: Path = ATTENTION_CSV, table: EnergyTable | None = None) -> pd.DataFrame:
    """One row per measured kernel call and model: predicted and measured joules, their ratios."""
    table = table or load_energy_table(DEFAULT_GPU)
    sram16 = sixteen_byte_sram()
    return pd.DataFrame([p for r in read_attention(path) for p in predict_row(r, table, sram16)])


def within(mvm: pd.DataFrame, goal: float = 0.15) -> pd.DataFrame:
    """Per model: how many (kernel, dtype, pass) it predicts, and how many of them within ±`goal` at
    every N (the issue's goal), with their names."""
    rows = []
    for model, group in mvm.groupby("model"):
        ok = (
            group.assign(ok=(group.ratio_total - 1).abs() <= goal)
            .groupby(["variant", "dtype", "pass"])
            .ok.all()
        )
        rows.append(
            {
                "model": model,
                "kernels": len(ok),
                "within": int(ok.sum()),
                "within_names": ", ".join(" ".join(k) for k, v in ok.items() if v),
                "outside_names": ", ".join(" ".join(k) for k, v in ok.items() if not v),
            }
        )
    return pd.DataFrame(rows)


def residuals(mvm: pd.DataFrame) -> pd.DataFrame:
    """The "counters + issue" rows of `mvm` with what the counters model leaves: ``counters_j`` (the
    prediction without the issue term), ``residual_j`` (measured − that), ``unpriced_warp_instructions``
    (the instructions the issue term priced, at 64 FLOPs of fp32_fma each) and
    ``residual_pj_per_instruction``, the residual per such instruction, in pJ."""
    ffma_warp_pj = 64 * load_energy_table(DEFAULT_GPU).flop_cost("fp32_fma")
    c = mvm[mvm.model == "counters + issue"]
    counters = c.pred_total_j - c.pred_issue_j
    unpriced = c.pred_issue_j / (ffma_warp_pj * PJ)
    return c.assign(
        counters_j=counters,
        ratio_counters=counters / c.measured_j,
        residual_j=c.measured_j - counters,
        unpriced_warp_instructions=unpriced,
        residual_pj_per_instruction=(c.measured_j - counters) / unpriced / PJ,
        ffma_warp_instruction_pj=ffma_warp_pj,
    )


def implied_instruction_cost(mvm: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (kernel, dtype, pass): the counters model's residual per warp instruction that no figure
    prices (`residuals`), min and max over N, in pJ, beside one FFMA warp instruction's energy (the
    "counters + issue" assumption)."""
    r = residuals(model_vs_measured() if mvm is None else mvm)
    out = (
        r.groupby(["variant", "dtype", "pass"]).residual_pj_per_instruction.agg(["min", "max"]).reset_index()
    )
    return out.assign(ffma_warp_instruction_pj=r.ffma_warp_instruction_pj.iloc[0])


def naive_tc_by_launch(mvm: pd.DataFrame | None = None) -> pd.DataFrame:
    """naive_tc's three launches, each measured alone: NVML joules against the counters model, and
    what the residual comes to per warp instruction that no figure prices (`residuals`), next to one
    FFMA warp instruction's energy (64 FLOPs at fp32_fma)."""
    r = residuals(model_vs_measured() if mvm is None else mvm)
    r = r[r.variant.isin(list(NAIVE_TC_LAUNCHES))].assign(launch=lambda f: f.variant.map(NAIVE_TC_LAUNCHES))
    columns = ["launch", "seq_len", "batch_heads", "measured_j", "counters_j", "ratio_counters", "residual_j"]
    columns += ["unpriced_warp_instructions", "residual_pj_per_instruction", "ffma_warp_instruction_pj"]
    return r[columns].sort_values(["seq_len", "launch"]).reset_index(drop=True)
