"""`python -m simlib energy`: the energy breakdown of one configuration (simlib.energy).

    python -m simlib energy --algorithm fa2 --seq-len 4096 --head-dim 64 --heads 16 --gpu h200 [--json]

Takes every flag of `count` (the same parser helper), needs --gpu, and --model: ``cost`` (the
default where the GPU has measured cost figures, the H200; simlib.cost: the implementation that runs
the algorithm, every launch predicted) or ``logical`` (the default elsewhere) (the paper's three-level count priced by simlib.energy, data/energy/<gpu>.json,
with --register-tile R: each SRAM operand element serves R outputs from registers; --time-s, the
seconds the call takes for the static power, default the roofline time; --published, the H200's
published figures instead of its measured ones). Bad input: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from .cli_evaluate import evaluate, options_of, workload_of
from .cli_values import float_type, int_type
from .energy import energy, load_energy_table
from .hardware import load_preset


def add_energy_command(sub: Any, add_common: Callable[[argparse.ArgumentParser, bool], None]) -> None:
    p = sub.add_parser("energy", help="joules per level, compute and static power of one configuration")
    add_common(p, False)
    p.add_argument(
        "--time-s",
        type=float_type("--time-s", minimum=0),
        help="seconds the call takes, for the static power (default: roofline)",
    )
    p.add_argument("--published", action="store_true", help="published figures, not the measured ones (h200)")
    p.add_argument(
        "--model",
        choices=("cost", "logical"),
        default=None,
        help="cost (the default on a GPU with measured cost figures: h200): the cost model's prediction; "
        "logical (the default elsewhere): the paper's HBM/SRAM count",
    )
    p.add_argument(
        "--register-tile",
        type=int_type("--register-tile", 1024, False),
        default=1,
        help="logical model: outputs per thread each SRAM operand element serves (1: the paper's count)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def run_energy_command(args: argparse.Namespace) -> None:
    if args.gpu is None:
        raise ValueError("--gpu is required: the energy figures are per preset (data/energy/<gpu>.json)")
    from .cost.rates import cost_keys

    model = args.model or ("cost" if args.gpu in cost_keys() else "logical")
    if model == "cost":
        from .cost.predict_command import energy_of_algorithm, text

        if args.published or args.time_s is not None or args.register_tile != 1:
            raise ValueError("--published, --time-s and --register-tile apply to --model logical")
        p = energy_of_algorithm(args.algorithm, workload_of(args), args.gpu)
        if args.json:
            print(
                json.dumps(
                    {"model": "cost", "algorithm": args.algorithm, "total_j": p.energy_j, **p.to_dict()},
                    allow_nan=False,
                )
            )
        else:
            print(f"model: cost (simlib.cost), {args.algorithm} as {p.implementation}")
            print(text(p))
        return
    from .cost.logical import register_tiled

    table = load_energy_table(args.gpu, measured=not args.published)
    result, row = evaluate(
        args.algorithm,
        workload_of(args),
        args.sram,
        load_preset(args.gpu),
        options_of(args, args.algorithm, only_applicable=False),
        args.trace,
    )
    e = register_tiled(energy(result, table, time_s=args.time_s), args.register_tile)
    figures = {
        "pj_per_byte": table.pj_per_byte,
        "pj_per_flop": table.pj_per_flop,
        "static_w": table.static_w,
        "measured": table.measured,
    }
    totals = {
        "hbm_j": e.level_j.get("HBM", 0.0),
        "sram_j": e.level_j.get("SRAM", 0.0),
        "compute_j": e.compute_j,
        "flop_unit": e.flop_unit,
        "static_j": e.static_j,
        "time_s": e.time_s,
        "dynamic_j": e.dynamic_j,
        "total_j": e.total_j,
    }
    if args.json:
        print(
            json.dumps(
                {
                    **row,
                    **totals,
                    "model": "logical",
                    "register_tile": args.register_tile,
                    "energy_table": figures,
                },
                allow_nan=False,
            )
        )
        return
    from .cost.predict_command import LOGICAL_LEAVES_OUT

    print(LOGICAL_LEAVES_OUT)
    w = result.workload
    print(
        f"{result.algorithm}: N={w.seq_len} d={w.head_dim} B={w.batch} H={w.heads} {w.dtype} on {args.gpu} "
        f"({'measured' if table.measured else 'published'} energy figures)"
    )
    print(result.mapping.summary())
    for term in e.summary().itertuples():
        print(f"  {term.term:<10}{term.joules * 1e3:14.4f} mJ  {term.share:6.1%}")
    print(
        f"  {'total':<10}{e.total_j * 1e3:14.4f} mJ  (FLOPs at {e.flop_unit}; static power "
        + (
            f"{table.static_w:.1f} W x {e.time_s * 1e3:.4f} ms)"
            if table.static_w and e.time_s is not None
            else "not given for this preset: dynamic energy only)"
        )
    )
    print("\nper tensor (mJ, all heads):")
    frame = e.rows.assign(mJ=e.rows["joules"] * 1e3)
    print(
        frame.pivot_table(
            index=["level", "tensor"], columns="op", values="mJ", aggfunc="sum", fill_value=0
        ).to_string(float_format=lambda x: f"{x:.4f}")
    )
