"""The second roof (lecture 10): what bounds an attention kernel once DRAM does not.

Each roof is a time: work over the rate of the unit that does it. Works come from the shape (simlib's
FLOPs, one exponential per score) or from Nsight Compute's counts of the kernel (committed under
data/measurements/); rates from the card's measured ceilings (`evidence.readers.read_ceilings`: the
mma.sync and FFMA loops, the copy), the H200 preset (its datasheet tensor peak, which Hopper's
asynchronous wgmma reaches and mma.sync does not), the FlashAttention-3 paper (the exponential:
3.9 TFLOPS on the H100 SXM5, whose SMs and clocks the H200 shares, data/hardware/h200.json's notes) and
the SM's issue slots (data/papers.json: four warp schedulers per SM, one warp instruction per clock
each, at the clock the energy runs measured under load).

    roof          work                               rate
    dram          DRAM bytes                         the copy ceiling
    tensor        matmul FLOPs                       mma.sync ceiling (FA2-style kernels), or the
                                                     datasheet peak (wgmma: cuDNN, FlashAttention-3)
    ffma          FP32 FLOPs                          the FFMA ceiling
    mufu          exponentials                       the paper's special-function rate
    issue         warp instructions                  4 per clock per SM × 132 SMs

A kernel takes at least the largest of its roofs; one warp that issues its matmul and then its
exponentials in turn (FlashAttention-2) takes at least their *sum*; a sequence of kernels takes at
least the sum over kernels of each one's largest roof — never one roofline of the summed work.

The cost model (simlib.cost, issue 21) will predict these per launch; until it is in main, the roofs
are computed here, and `SOURCE` says so. Its `predict(...)` launches carry `unit_s` with the same
keys (dram, tensor, ffma, mufu, issue): switching is replacing `roofs` by that dict.

Worked number (FA3 §3.1): at d = 128 a score costs 4d = 512 matmul FLOPs and one exponential, so the
exponential takes (1/3.9e12) / (512/989e12) = 0.495 of the matmul's time:

>>> round(exp_share(128, matmul_rate=989e12, exp_rate=3.9e12), 3)
0.495
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import cache

import pandas as pd

from evidence import readers
from measurements import schemas
from measurements.manifest import lookup
from measurements.read import read_frame, read_rows
from simlib import load_preset
from simlib.hardware import DATA_DIR
from simlib.physical import occupancy as occ

#: Where the per-kernel roofs come from (the one place to switch to simlib.cost.predict).
SOURCE = "course.second_roof: simlib's FLOPs, the measured ceilings and the FA3 paper's exp rate (simlib.cost not in main yet)"
COUNTERS = "energy_counters_h200.csv"  # ncu, one row per call
KERNEL_COUNTERS = "energy_counters_h200_kernels.csv"  # ncu, one row per kernel of each call
PROFILE_TC = "profile_h200_tc.csv"  # ncu: fa2_tc's and naive_tc's registers and warps active
CALIBRATION = "energy_calibration_h200.csv"  # nvidia-smi clocks under load
ROOFS = ("dram", "tensor", "ffma", "mufu", "issue")
WARP = 32


@cache
def papers() -> dict:
    return json.loads((DATA_DIR / "papers.json").read_text())


def fa3() -> dict:
    """FlashAttention-3's numbers (data/papers.json), each with its citation."""
    return papers()["flashattention3"]


@dataclass(frozen=True)
class Rates:
    dram: float  # B/s, the copy ceiling
    mma_sync: float  # FLOP/s, bf16 mma.sync register loop
    wgmma: float  # FLOP/s, the datasheet's dense bf16 tensor peak (reached only by wgmma)
    ffma: float  # FLOP/s, fp32 FFMA loop
    mufu: float  # exponentials/s (FA3 paper, H100 SXM5)
    issue: float  # warp instructions/s
    clock_hz: float
    sms: int

    def tensor(self, instruction: str) -> float:
        """The tensor roof's rate for kernels built on `instruction` ("mma.sync" or "wgmma")."""
        if instruction not in ("mma.sync", "wgmma"):
            raise ValueError(f"instruction must be 'mma.sync' or 'wgmma', got {instruction!r}")
        return self.mma_sync if instruction == "mma.sync" else self.wgmma


def sm_clock_hz() -> float:
    """The SM clock under load in the energy run's calibration (nvidia-smi, every bench but the
    power-limited bf16 matmul): the clock of the ncu runs, which did not lock clocks."""
    rows = read_rows(lookup(CALIBRATION), schemas.ENERGY_CALIBRATION)
    clocks = {float(r["sm_mhz"]) for r in rows if r["bench"] in ("static", "hbm_copy", "fp32_fma")}
    if len(clocks) != 1:
        raise ValueError(f"{CALIBRATION}: expected one SM clock under load, found {sorted(clocks)}")
    return clocks.pop() * 1e6


@cache
def rates() -> Rates:
    h200 = load_preset("h200")
    ceilings = readers.read_ceilings()
    sm = papers()["nvidia_h100_whitepaper"]["figure_gh100_sm"]
    clock = sm_clock_hz()
    return Rates(
        dram=ceilings["copy_bytes_per_s"],
        mma_sync=ceilings["bf16"],
        wgmma=h200.peak_flops["bf16"],
        ffma=ceilings["fp32"],
        mufu=fa3()["section_3_1_pingpong"]["special_function_tflops"] * 1e12,
        issue=sm["sm_partitions"] * sm["warp_instructions_per_clock_per_partition"] * h200.sm_count * clock,
        clock_hz=clock,
        sms=h200.sm_count,
    )


def exp_share(head_dim: int, matmul_rate: float, exp_rate: float) -> float:
    """Time of a score's exponential over the time of its 4d matmul FLOPs."""
    return (1 / exp_rate) / (4 * head_dim / matmul_rate)


def attention_bounds(head_dim: int, instruction: str, r: Rates | None = None) -> dict[str, float]:
    """TFLOP/s a forward pass can reach per its tensor roof alone, with the exponential overlapped
    (max) and with it in series (sum, one warp issuing both in turn): 4d FLOPs and 1 exp per score."""
    r = r or rates()
    t_mm, t_exp = 4 * head_dim / r.tensor(instruction), 1 / r.mufu
    flops = 4 * head_dim
    return {
        "tensor alone": flops / t_mm / 1e12,
        "tensor, exp overlapped": flops / max(t_mm, t_exp) / 1e12,
        "tensor + exp in series": flops / (t_mm + t_exp) / 1e12,
    }


def roofs(
    *,
    dram_bytes=0.0,
    tensor_flops=0.0,
    ffma_flops=0.0,
    exps=0.0,
    warp_instructions=0.0,
    instruction="mma.sync",
) -> dict[str, float]:
    """Seconds each unit needs for the given work (keys `ROOFS`)."""
    r = rates()
    return {
        "dram": dram_bytes / r.dram,
        "tensor": tensor_flops / r.tensor(instruction),
        "ffma": ffma_flops / r.ffma,
        "mufu": exps / r.mufu,
        "issue": warp_instructions / r.issue,
    }


def _rows(name: str) -> list[dict[str, str]]:
    """The rows of an energy-counters file (ncu's columns; no schema of its own in measurements)."""
    with lookup(name).open(newline="") as f:
        return list(csv.DictReader(f))


def _number(row, key) -> float:
    return float(row[key] or 0.0)


def kernel_sequence(variant: str, dtype: str, batch: int, heads: int, seq_len: int) -> pd.DataFrame:
    """One forward call of `variant` as Nsight Compute counted it, kernel by kernel: measured time,
    DRAM bytes and FFMA FLOPs, and each kernel's DRAM and FFMA roofs and the larger of the two."""
    rows = [
        r
        for r in _rows(KERNEL_COUNTERS)
        if (r["variant"], r["dtype"], r["pass"]) == (variant, dtype, "fwd")
        and (int(r["batch"]), int(r["heads"]), int(r["seq_len"])) == (batch, heads, seq_len)
    ]
    if not rows:
        raise ValueError(
            f"{KERNEL_COUNTERS} has no forward call of {variant} {dtype} at B={batch} H={heads} N={seq_len}"
        )
    out = []
    for r in rows:
        dram = _number(r, "dram__bytes_read.sum") + _number(r, "dram__bytes_write.sum")
        flops = 2 * _number(r, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")
        t = roofs(dram_bytes=dram, ffma_flops=flops)
        out.append(
            {
                "kernel": r["kernel"].split("(")[0][:48],
                "measured_ms": _number(r, "gpu__time_duration.sum") * 1e-6,
                "dram_GB": dram / 1e9,
                "ffma_GFLOP": flops / 1e9,
                "dram_roof_ms": t["dram"] * 1e3,
                "ffma_roof_ms": t["ffma"] * 1e3,
                "roof_ms": max(t["dram"], t["ffma"]) * 1e3,
                "bound": "DRAM" if t["dram"] >= t["ffma"] else "FFMA",
            }
        )
    return pd.DataFrame(out)


def sequence_totals(kernels: pd.DataFrame) -> dict[str, float]:
    """ms: the sum of the kernels' roofs (Σ max), one roofline of the summed work (max Σ), measured."""
    r = rates()
    one_roofline = max(kernels.dram_GB.sum() * 1e9 / r.dram, kernels.ffma_GFLOP.sum() * 1e9 / r.ffma) * 1e3
    return {
        "sum of per-kernel roofs": kernels.roof_ms.sum(),
        "one roofline": one_roofline,
        "measured": kernels.measured_ms.sum(),
    }


#: The fused kernels whose instruction mix ncu counted (``COUNTERS``), and the tensor-core
#: instruction each is built on (from the kernel names the counters run recorded: `..._wgmma_...` for
#: cuDNN; FlashAttention-2's and the project's kernels use mma.sync).
FUSED = {"fa2_tc": "mma.sync", "torch_flash": "mma.sync", "torch_cudnn": "wgmma"}


def instruction_mix(batch=2, heads=16, seq_len=4096, head_dim=64, dtype="bf16") -> pd.DataFrame:
    """Per fused kernel (one forward call): warp instructions by class per score as ncu counted them,
    the measured time and the roofs of that call (DRAM, tensor, one exp per score, issue)."""
    scores = batch * heads * seq_len**2
    out = []
    for r in _rows(COUNTERS):
        if r["variant"] not in FUSED or (r["dtype"], r["pass"]) != (dtype, "fwd"):
            continue
        if (int(r["batch"]), int(r["heads"]), int(r["seq_len"]), int(r["head_dim"])) != (
            batch,
            heads,
            seq_len,
            head_dim,
        ):
            continue
        n = {key: _number(r, key) for key in r if key.startswith(("smsp__", "dram__"))}
        classes = {
            "tensor (HMMA/wgmma)": n["smsp__inst_executed_pipe_tensor.sum"],
            "FFMA": n["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] / WARP,
            "shared ld/st, ldmatrix": n["smsp__sass_inst_executed_op_shared_ld.sum"]
            + n["smsp__sass_inst_executed_op_shared_st.sum"]
            + n["smsp__sass_inst_executed_op_ldsm.sum"],
            "global ld/st, cp.async": n["smsp__sass_inst_executed_op_global_ld.sum"]
            + n["smsp__sass_inst_executed_op_global_st.sum"]
            + n["smsp__sass_inst_executed_op_ldgsts.sum"],
        }
        total = n["smsp__inst_executed.sum"]
        classes["other (MUFU, integer, shuffles, conversions, ...)"] = total - sum(classes.values())
        t = roofs(
            dram_bytes=n["dram__bytes_read.sum"] + n["dram__bytes_write.sum"],
            tensor_flops=4 * head_dim * scores,
            exps=scores,
            warp_instructions=total,
            instruction=FUSED[r["variant"]],
        )
        measured = _number(r, "gpu__time_duration.sum") * 1e-9
        out.append(
            {"kernel": r["variant"], "tensor instruction": FUSED[r["variant"]]}
            | {f"{k} per 1k scores": v / scores * 1e3 for k, v in classes.items()}
            | {"warp instructions per 1k scores": total / scores * 1e3, "measured_ms": measured * 1e3}
            | {f"{k}_ms": v * 1e3 for k, v in t.items() if k != "ffma"}
            | {
                "issue / measured": t["issue"] / measured,
                "IPC per SM": total / (measured * rates().clock_hz * rates().sms),
            }
        )
    return pd.DataFrame(out)


def registers_and_occupancy(kernel: str = "fa2_tc") -> pd.DataFrame:
    """`kernel`'s registers per thread and warps active as ncu measured them (profile_h200_tc.csv), next
    to the blocks per SM and warps the register file allows (simlib.physical.occupancy)."""
    found: dict[tuple, dict] = {}
    for r in read_rows(lookup(PROFILE_TC), schemas.PROFILE):
        if r["kernel"] != kernel or r["launch"] == "total":
            continue
        key = (r["launch"], int(r["seq_len"]), int(r["head_dim"]), r["params"])
        found.setdefault(key, {})[r["metric"]] = float(r["value"])
    out = []
    max_warps = occ.MAX_THREADS_PER_SM // occ.WARP_SIZE
    for (launch, n, d, params), metrics in sorted(found.items()):
        warps = int(dict(p.split("=") for p in params.split(";")).get("warps", 4))
        registers = int(metrics["launch__registers_per_thread"])
        limit = occ.occupancy(threads=warps * WARP, registers=registers)
        out.append(
            {
                "launch": launch,
                "N": n,
                "d": d,
                "warps per block": warps,
                "registers per thread": registers,
                "blocks per SM (registers)": limit.blocks_per_sm,
                "warps per SM": limit.blocks_per_sm * warps,
                "occupancy (model)": limit.blocks_per_sm * warps / max_warps,
                "warps active (ncu)": metrics["sm__warps_active.avg.pct_of_peak_sustained_active"] / 100,
            }
        )
    return pd.DataFrame(out)


def achieved(path=None) -> pd.DataFrame:
    """TFLOP/s of fa2_tc, torch flash and cuDNN (fa2_tc_speed.csv, checked rows, the median over N), next
    to the tensor + exp bound of each one's tensor instruction."""
    raw = read_frame(path if path is not None else lookup(readers.FA2_TC_SPEED), schemas.FA2_TC_SPEED)
    raw = raw[(raw["ok"].astype(str) == "True")]
    raw = raw[(raw.kernel != "fa2_tc") | raw.config.astype(str).str.startswith("default")]
    raw = raw.assign(tflops=pd.to_numeric(raw["tflops"]), head_dim=raw["head_dim"].astype(int))
    table = (
        raw.groupby(["kernel", "head_dim", "causal"])
        .tflops.median()
        .rename("TFLOP/s (median over N)")
        .reset_index()
    )
    instruction = table.kernel.map(FUSED)
    serial = [
        attention_bounds(d, ins)["tensor + exp in series"] for d, ins in zip(table.head_dim, instruction)
    ]
    alone = [attention_bounds(d, ins)["tensor alone"] for d, ins in zip(table.head_dim, instruction)]
    return table.assign(
        **{
            "tensor instruction": instruction,
            "tensor roof": alone,
            "tensor + exp roof": serial,
            "of tensor + exp": table["TFLOP/s (median over N)"] / serial,
        }
    )
