"""Command line: `python -m simlib count ...` and `python -m simlib sweep ...`.

Bad input exits with status 2 and one line on stderr naming the parameter; nothing on stdout.
"""
import argparse
import itertools
import json
import os
import sys
import tempfile

import pandas as pd

from .bounds import compulsory_bytes, saha_ye_bytes
from .hardware import load_preset, preset_keys
from .model import ALGORITHMS, count
from .roofline import roofline
from .units import DTYPE_BYTES, parse_size
from .workload import Workload


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line instead of usage text plus a line."""

    def error(self, message):
        raise UsageError(message)


def positive_int_list(text):
    """'64' → [64]; '256,1024' → [256, 1024]; '256:4096' → powers of two 256, 512, …, 4096."""
    if ":" in text:
        start, stop = (int(x) for x in text.split(":"))
        if start < 1 or stop < start:
            raise argparse.ArgumentTypeError(f"range {text!r} needs 1 ≤ START ≤ STOP")
        values = []
        while start <= stop:
            values.append(start)
            start *= 2
        return values
    return [int(x) for x in text.split(",")]


def _add_common(p, many):
    kind = positive_int_list if many else int
    algo_help = f"one of {', '.join(ALGORITHMS)}" + (" (comma list)" if many else "")
    if many:
        p.add_argument("--algorithm", default=",".join(ALGORITHMS), help=algo_help)
    else:
        p.add_argument("--algorithm", required=True, choices=ALGORITHMS, help=algo_help)
    p.add_argument("--seq-len", type=kind, required=True, help="N" + (": list or START:STOP (doubling)" if many else ""))
    p.add_argument("--head-dim", type=kind, required=True, help="d")
    p.add_argument("--batch", type=kind, default=[1] if many else 1)
    p.add_argument("--heads", type=kind, default=[1] if many else 1)
    p.add_argument("--dtype", default="fp16", choices=tuple(DTYPE_BYTES))
    p.add_argument("--sram", help="SRAM bytes for the tiling, e.g. 196608 or 192KiB" + (" (comma list)" if many else ""))
    p.add_argument("--gpu", help=f"hardware preset ({', '.join(preset_keys())}): its SRAM per block and a roofline estimate")
    p.add_argument("--block-rows", type=kind, help="Br (fa1, fa2)")
    p.add_argument("--block-cols", type=kind, help="Bc (fa1, fa2)")
    p.add_argument("--matmul-tile", type=kind, help="naive: shared-memory matmul tile T (default ∞: the paper's count)")
    p.add_argument("--softmax-threads", type=kind, help="naive: threads per softmax row (shared-memory reductions)")
    p.add_argument("--trace", action="store_true", help="walk the loop nest instead of the closed form")


def build_parser():
    parser = Parser(prog="python -m simlib", description="Exact HBM/SRAM traffic of attention schedules.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    p_count = sub.add_parser("count", help="traffic of one configuration")
    _add_common(p_count, many=False)
    p_count.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p_sweep = sub.add_parser("sweep", help="traffic over lists/ranges of N, d, SRAM or blocks")
    _add_common(p_sweep, many=True)
    p_sweep.add_argument("--csv", help="write CSV to this file ('-' for stdout) instead of a table")
    return parser


def _sram(args_sram, hardware):
    if args_sram is not None:
        return parse_size(args_sram, "sram")
    return hardware.sram_bytes if hardware else None


def evaluate(algorithm, workload, sram, hardware, block_rows, block_cols, matmul_tile, softmax_threads, trace):
    """count() plus bounds and (with a preset) the roofline, as one flat dict."""
    if algorithm != "naive" and sram is None and (block_rows is None or block_cols is None):
        raise ValueError("sram: give --sram or --gpu (or both --block-rows and --block-cols)")
    result = count(algorithm, workload, sram_bytes=sram, block_rows=block_rows, block_cols=block_cols,
                   matmul_tile=matmul_tile, softmax_threads=softmax_threads,
                   method="trace" if trace else "closed")
    row = result.to_dict()
    row["compulsory_hbm_bytes"] = compulsory_bytes(workload)
    row["saha_ye_bytes_asymptotic"] = saha_ye_bytes(workload, sram) if sram else None
    if hardware:
        roof = roofline(result, hardware)
        row.update(gpu=hardware.key, roofline_s=roof.time_s, compute_s=roof.compute_s,
                   hbm_s=roof.level_s.get("HBM"), sram_s=roof.level_s.get("SRAM"), bound=roof.bound,
                   arithmetic_intensity=roof.arithmetic_intensity, ridge_point=roof.ridge_point)
    return result, row


def _fmt_bytes(n):
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n:,} B ({n / size:.2f} {unit})"
    return f"{n:,} B"


def print_count(result, row):
    w = result.workload
    print(f"{result.algorithm}: N={w.seq_len} d={w.head_dim} B={w.batch} H={w.heads} {w.dtype} "
          f"({w.element_bytes} B/element, row statistics fp32)")
    if result.sram_bytes:
        print(f"SRAM {result.sram_bytes:,} B → M = {result.sram_bytes // w.element_bytes:,} elements")
    if result.block_rows:
        print(f"tiles: Br={result.block_rows} Bc={result.block_cols} Tr={result.tr} Tc={result.tc}")
    elif result.algorithm == "naive":
        print(f"matmul tile T={row['matmul_tile'] or '∞ (operands read once)'}, "
              f"softmax threads/row={row['softmax_threads'] or 'none (no shared-memory reduction)'}")
    for key in ("hbm_read_bytes", "hbm_write_bytes", "hbm_bytes", "sram_read_bytes", "sram_write_bytes",
                "compulsory_hbm_bytes"):
        print(f"  {key:<24}{_fmt_bytes(row[key])}")
    if row["saha_ye_bytes_asymptotic"]:
        print(f"  {'saha_ye (asymptotic)':<24}{_fmt_bytes(int(row['saha_ye_bytes_asymptotic']))}  "
              "min(N²d²/M, N²d/√M), constant 1")
    print(f"  {'flops':<24}{row['flops']:,}  (4·N²·d·B·H)")
    if "roofline_s" in row:
        print(f"roofline on {row['gpu']}: {row['roofline_s'] * 1e3:.3f} ms, {row['bound']} bound "
              f"(compute {row['compute_s'] * 1e3:.3f} ms, HBM {row['hbm_s'] * 1e3:.3f} ms); "
              f"intensity {row['arithmetic_intensity']:.1f} FLOP/B vs ridge {row['ridge_point']:.1f}")
    print("\nper tensor (bytes, all heads):")
    table = result.table()
    print(table.pivot_table(index=["level", "tensor"], columns="op", values="bytes", aggfunc="sum",
                            fill_value=0).to_string())


def write_atomic(path, text):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def run_count(args):
    hardware = load_preset(args.gpu) if args.gpu else None
    sram = _sram(args.sram, hardware)
    workload = Workload(args.seq_len, args.head_dim, args.batch, args.heads, args.dtype)
    result, row = evaluate(args.algorithm, workload, sram, hardware, args.block_rows, args.block_cols,
                           args.matmul_tile, args.softmax_threads, args.trace)
    if args.json:
        print(json.dumps(row))
    else:
        print_count(result, row)


def run_sweep(args):
    hardware = load_preset(args.gpu) if args.gpu else None
    algorithms = args.algorithm.split(",")
    for a in algorithms:
        if a not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {a!r}")
    srams = [parse_size(s, "sram") for s in args.sram.split(",")] if args.sram else [_sram(None, hardware)]
    none = [None]
    rows = []
    for algo, n, d, b, h, sram, br, bc, t, st in itertools.product(
            algorithms, args.seq_len, args.head_dim, args.batch, args.heads, srams,
            args.block_rows or none, args.block_cols or none, args.matmul_tile or none,
            args.softmax_threads or none):
        naive = algo == "naive"
        _, row = evaluate(algo, Workload(n, d, b, h, args.dtype), sram, hardware,
                          None if naive else br, None if naive else bc,
                          t if naive else None, st if naive else None, args.trace)
        rows.append(row)
    frame = pd.DataFrame(rows).drop_duplicates()
    for col in ("block_rows", "block_cols", "tr", "tc", "sram_bytes", "matmul_tile", "softmax_threads"):
        if col in frame:
            frame[col] = frame[col].astype("Int64")
    if args.csv == "-":
        print(frame.to_csv(index=False), end="")
    elif args.csv:
        write_atomic(args.csv, frame.to_csv(index=False))
    else:
        cols = [c for c in ("algorithm", "seq_len", "head_dim", "batch", "heads", "sram_bytes", "block_rows",
                            "block_cols", "hbm_bytes", "sram_read_bytes", "sram_write_bytes", "flops",
                            "roofline_s", "bound") if c in frame]
        print(frame[cols].to_string(index=False))


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        (run_count if args.command == "count" else run_sweep)(args)
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
