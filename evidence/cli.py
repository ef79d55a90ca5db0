"""`python -m evidence figure2|claims|model-vs-ncu`: the model against the paper and the H200's runs.

    figure2       Figure 2 (left) of the FlashAttention paper: HBM GB, model vs paper vs H200 [--sram] [--json]
    claims        every checkable claim of the posts: model, paper, H200, verdict [--json]
    model-vs-ncu  the physical model next to a recorded Nsight Compute profile [--profile CSV] [--out CSV]

The old spellings `python -m simlib figure2|claims` and `python -m gpu_kernels model-vs-ncu` run these
(simlib.moved_commands). Errors follow simlib's command line: bad input exits 2 with one line on stderr
naming the parameter, before any work starts; an OSError exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os

from measurements.provenance import provenance, sidecar_path, write_measurement
from simlib.cli_values import size_type
from simlib.command_line import Parser, run_commands
from simlib.safe_write import check_destination

from . import model_vs_ncu
from .figure2 import figure2_cli
from .verdicts import print_claims


def build_parser() -> Parser:
    parser = Parser(prog="python -m evidence", description="The model against the paper and the H200's runs.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    p_fig = sub.add_parser(
        "figure2", help="Figure 2 (left) of the FlashAttention paper: HBM GB, model vs paper"
    )
    p_fig.add_argument(
        "--sram",
        type=size_type("--sram", False),
        default=192 * 1024,
        help="SRAM for FlashAttention's blocks (default: the paper's 192 KB)",
    )
    p_fig.add_argument(
        "--json", action="store_true", help="the figure, every term, FLOPs and the H200 run as JSON"
    )
    p_claims = sub.add_parser("claims", help="every claim of the posts: model, paper, H200, verdict")
    p_claims.add_argument("--json", action="store_true", help="every field of every claim as JSON")
    m = sub.add_parser("model-vs-ncu", help="the physical model next to a recorded profile (CPU)")
    m.add_argument(
        "--table",
        choices=sorted(model_vs_ncu.TABLES),
        default="fp32",
        help="which committed profile and table: fp32 (profile_h200.csv), tc (fa2_tc, naive_tc), fa3 (fa3_tc)",
    )
    m.add_argument(
        "--profile",
        default=None,
        help="profile CSV (default: the --table's, under data/measurements/current/)",
    )
    m.add_argument("--out", default=None, help="output CSV (default: the --table's model_vs_ncu_h200*.csv)")
    return parser


def run_figure2(args: argparse.Namespace) -> None:
    print(figure2_cli(args.sram, args.json))


def run_claims(args: argparse.Namespace) -> None:
    print_claims(args.json)


def run_model_vs_ncu(args: argparse.Namespace) -> None:
    """The physical model next to the profile, written with a sidecar naming the profile's run and sha256."""
    default_profile, default_out = model_vs_ncu.TABLES[args.table]
    profile = args.profile or str(default_profile)
    out = args.out or str(default_out)
    check_destination(out, "--out", inputs={"--profile": profile})
    if not os.path.isfile(profile):
        raise ValueError(f"--profile: {profile!r} is not a file")
    try:
        frame = model_vs_ncu.compare(profile)
    except KeyError as e:
        raise ValueError(str(e)) from None
    with open(profile, "rb") as f:
        source = {
            "profile": os.path.basename(profile),
            "profile_sha256": hashlib.sha256(f.read()).hexdigest(),
        }
    if os.path.isfile(sidecar_path(profile)):
        with open(sidecar_path(profile)) as f:
            source["profile_run_id"] = json.load(f).get("run_id")
    write_measurement(
        out,
        frame.to_csv(index=False, lineterminator="\n"),
        provenance(
            {"what": "computed, not measured: evidence.model_vs_ncu.compare of the profile", **source},
            gpu=False,
        ),
    )
    targets = frame[frame["target"]]
    print(
        f"wrote {out} ({len(frame)} rows); targets met: {int(targets['within_5pct'].sum())} of {len(targets)}"
    )


COMMANDS = {"figure2": run_figure2, "claims": run_claims, "model-vs-ncu": run_model_vs_ncu}


def main(argv: list[str] | None = None) -> int:
    return run_commands(build_parser(), COMMANDS, argv)
