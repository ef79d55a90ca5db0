"""`python -m simlib predict` and the cost model behind `python -m simlib energy` (its default model).

    python -m simlib predict --implementation fa2_tc --seq-len 4096 --head-dim 64 --batch 2 --heads 16 \\
        --dtype bf16 --gpu h200 [--kv-heads H] [--causal] [--json]

prints, per launch and in total, the time, the binding roof (and by how much it binds), the
achieved fraction η, and the energy per unit; ``--json`` gives one object (keys ``time_ms``,
``energy_j``, ``bound``, ``energy_by_unit_j``, ``launches``). `energy_of_algorithm` answers
``python -m simlib energy --algorithm A ...`` through the same model: the implementation that runs
simlib schedule A as practitioners run it (`ALGORITHM_IMPLEMENTATION`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..cli_values import int_type
from ..workload import MAX_BATCH_HEADS, MAX_HEAD_DIM, MAX_SEQ_LEN, Workload
from .implementations import IMPLEMENTATIONS
from .model import TERMS, UNITS
from .predict import Prediction, predict

#: `simlib energy --algorithm A --model cost`: the implementation that runs schedule A, per dtype
#: class (16-bit, fp32): FlashAttention-2 as PyTorch's kernel (16-bit) or the project's fp32 FA2
#: (numba fast); standard attention as practitioners run it: eager 16-bit attention, SDPA math in fp32.
ALGORITHM_IMPLEMENTATION = {
    "fa2": ("torch_flash", "numba_fast"),
    "fa2_fast": (None, "numba_fast"),
    "fa2_tc": ("fa2_tc", None),
    "naive_tc": ("naive_tc", None),
    "naive": ("eager_bf16", "torch_math"),
    "unfused": ("eager_bf16", "torch_math"),
}
LOGICAL_LEAVES_OUT = (
    "logical (the paper's count): HBM and SRAM bytes at thread level and matmul FLOPs; it leaves out the L2's "
    "reuse, the register file's (beyond --register-tile), instruction issue, the exp unit, occupancy and the "
    "launches' own times: `--model cost` (the default) predicts them"
)


def add_predict_command(sub: Any) -> None:
    p = sub.add_parser("predict", help="time and energy of one implementation, per launch: the cost model")
    p.add_argument("--implementation", required=True, choices=tuple(IMPLEMENTATIONS), help="what runs")
    p.add_argument("--seq-len", required=True, type=int_type("--seq-len", MAX_SEQ_LEN, False))
    p.add_argument("--head-dim", required=True, type=int_type("--head-dim", MAX_HEAD_DIM, False))
    p.add_argument("--batch", type=int_type("--batch", MAX_BATCH_HEADS, False), default=1)
    p.add_argument("--heads", type=int_type("--heads", MAX_BATCH_HEADS, False), default=1)
    p.add_argument(
        "--kv-heads", type=int_type("--kv-heads", MAX_BATCH_HEADS, False), help="GQA/MQA K/V heads"
    )
    p.add_argument("--causal", action="store_true", help="causal mask (bottom-right aligned)")
    p.add_argument("--dtype", required=True, choices=("bf16", "fp16", "fp32"))
    p.add_argument("--gpu", default="h200", choices=("h200",), help="a GPU with measured cost figures")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def workload_from(args: argparse.Namespace) -> Workload:
    return Workload(
        args.seq_len,
        args.head_dim,
        batch=args.batch,
        heads=args.heads,
        kv_heads=args.kv_heads,
        dtype=args.dtype,
        causal=bool(args.causal),
    )


def text(p: Prediction) -> str:
    w = p.workload
    lines = [
        f"{p.implementation}: B={w.batch} H={w.heads} N={w.seq_len} d={w.head_dim} {w.dtype}"
        f"{' causal' if w.causal else ''} on {p.gpu}: {IMPLEMENTATIONS[p.implementation].description}",
        f"{'launch':<12}{'ms':>10}  {'bound (x next)':<26}{'eta':>6}{'J':>10}   unit times (ms)",
    ]
    for c in p.launches:
        margin = f"{c.margin:.1f}x" if c.margin != float("inf") else "only"
        units = " ".join(f"{UNITS[u].split(' ')[0]}={c.unit_s[u] * 1e3:.3g}" for u in UNITS if c.unit_s[u])
        lines.append(
            f"{c.launch.name:<12}{c.time_s * 1e3:10.4f}  {c.bound + ' (' + margin + ')':<26}{c.eta:6.2f}{c.energy_j:10.4f}   {units}"
        )
    lines.append(f"{'total':<12}{p.time_s * 1e3:10.4f}  {p.bound}  {p.energy_j:.4f} J")
    terms = p.energy_terms
    lines.append("energy by unit (J): " + ", ".join(f"{t} {terms[t]:.4g}" for t in TERMS if terms[t]))
    if p.missing:
        lines.append(f"uncalibrated classes (no instructions, eta 1): {', '.join(p.missing)}")
    return "\n".join(lines)


def run_predict_command(args: argparse.Namespace) -> None:
    p = predict(args.implementation, workload_from(args), args.gpu)
    print(json.dumps(p.to_dict()) if args.json else text(p))


def energy_of_algorithm(algorithm: str, workload: Workload, gpu: str) -> Prediction:
    """The cost model's prediction for `simlib energy --algorithm A` (ValueError naming --model when
    no implementation runs A in this dtype)."""
    choice = ALGORITHM_IMPLEMENTATION.get(algorithm)
    impl = None if choice is None else choice[0 if workload.dtype in ("fp16", "bf16") else 1]
    if impl is None:
        raise ValueError(
            f"--model cost has no implementation of {algorithm} in {workload.dtype} "
            f"(it models {', '.join(sorted(ALGORITHM_IMPLEMENTATION))}); use --model logical"
        )
    if gpu != "h200":
        raise ValueError(
            f"--model cost needs --gpu h200 (the GPU with measured cost figures), got {gpu}; use --model logical"
        )
    try:
        return predict(impl, workload, gpu)
    except ValueError as e:
        raise ValueError(f"{e}; use --model logical") from None
