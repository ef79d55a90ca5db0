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
from .kvcache import WEIGHT_BYTES, load_model, max_context, model_keys
from .model import ALGORITHMS, count
from .reproduce import figure2_left
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
    p.add_argument("--matmul-tile", type=kind, help="naive, naive_bwd: shared-memory matmul tile T (default ∞: the paper's count)")
    p.add_argument("--softmax-threads", type=kind, help="naive: threads per softmax row (shared-memory reductions)")
    p.add_argument("--kv-heads", type=kind, help="GQA/MQA: K/V heads, dividing --heads (default: --heads)")
    p.add_argument("--query-len", type=kind, help="queries per head (decode: new tokens; default: --seq-len)")
    p.add_argument("--causal", action="store_true", help="causal mask (fully masked tiles are skipped)")
    p.add_argument("--splits", type=kind, help="decode: flash-decoding split-K chunks (default 1)")
    p.add_argument("--no-dropout", action="store_true", help="unfused, unfused_bwd: no dropout kernel")
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
    p_kv = sub.add_parser("kvcache", help="weights + KV cache of a model on a GPU: the longest context that fits")
    p_kv.add_argument("--model", required=True, help=f"one of {', '.join(model_keys())}")
    memory = p_kv.add_mutually_exclusive_group(required=True)
    memory.add_argument("--gpu-memory", help="GPU memory, e.g. 16GiB or 16GB")
    memory.add_argument("--gpu", help="a hardware preset whose HBM capacity to use")
    p_kv.add_argument("--batch", type=int, default=1)
    p_kv.add_argument("--weight-dtype", default="fp16", choices=tuple(WEIGHT_BYTES))
    p_kv.add_argument("--kv-dtype", default="fp16", choices=tuple(DTYPE_BYTES))
    p_kv.add_argument("--reserve", default="0", help="memory set aside for activations and the CUDA context")
    p_kv.add_argument("--json", action="store_true")
    p_fig = sub.add_parser("figure2", help="Figure 2 (left) of the FlashAttention paper: HBM GB, model vs paper")
    p_fig.add_argument("--sram", default="192KiB", help="SRAM for FlashAttention's blocks (default: the paper's 192 KB)")
    return parser


def _sram(args_sram, hardware):
    if args_sram is not None:
        return parse_size(args_sram, "sram")
    return hardware.sram_bytes if hardware else None


NEEDS_SRAM = ("fa1", "fa2", "flash_bwd", "decode")


def schedule_options(algorithm, block_rows, block_cols, matmul_tile, softmax_threads, splits, no_dropout):
    """The keyword arguments of count() that `algorithm` takes, from the CLI's flags.

    A flag given for an algorithm that does not take it is passed on, so count() refuses it by name.
    """
    return dict(block_rows=block_rows, block_cols=block_cols, matmul_tile=matmul_tile,
                softmax_threads=softmax_threads, splits=splits, dropout=False if no_dropout else None)


def evaluate(algorithm, workload, sram, hardware, options, trace):
    """count() plus bounds and (with a preset) the roofline, as one flat dict."""
    if algorithm in NEEDS_SRAM and sram is None and (options.get("block_rows") is None
                                                     or options.get("block_cols") is None):
        raise ValueError("sram: give --sram or --gpu (or --block-rows and --block-cols)")
    if algorithm not in NEEDS_SRAM and not (algorithm == "naive" and options.get("matmul_tile")):
        sram = None   # only the tiled schedules (and naive's matmul tile) use SRAM capacity
    result = count(algorithm, workload, sram_bytes=sram, method="trace" if trace else "closed", **options)
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
          f"({w.element_bytes} B/element, row statistics fp32)"
          + (f", kv_heads={w.n_kv_heads}" if w.group > 1 else "") + (f", queries={w.nq}" if w.nq != w.nk else "")
          + (", causal" if w.causal else ""))
    if result.sram_bytes:
        print(f"SRAM {result.sram_bytes:,} B → M = {result.sram_bytes // w.element_bytes:,} elements")
    if result.block_rows:
        print(f"tiles: Br={result.block_rows} Bc={result.block_cols} Tr={result.tr} Tc={result.tc}")
    elif result.algorithm in ("naive", "naive_bwd"):
        print(f"matmul tile T={row['matmul_tile'] or '∞ (operands read once)'}, "
              f"softmax threads/row={row['softmax_threads'] or 'none (no shared-memory reduction)'}")
    for key in ("hbm_read_bytes", "hbm_write_bytes", "hbm_bytes", "sram_read_bytes", "sram_write_bytes",
                "compulsory_hbm_bytes"):
        print(f"  {key:<24}{_fmt_bytes(row[key])}")
    if row["saha_ye_bytes_asymptotic"]:
        print(f"  {'saha_ye (asymptotic)':<24}{_fmt_bytes(int(row['saha_ye_bytes_asymptotic']))}  "
              "min(N²d²/M, N²d/√M), constant 1")
    print(f"  {'flops':<24}{row['flops']:,}  (performed; useful forward FLOPs {row['useful_flops']:,})")
    if "roofline_s" in row:
        print(f"roofline on {row['gpu']}: {row['roofline_s'] * 1e3:.3f} ms, {row['bound']} bound "
              f"(compute {row['compute_s'] * 1e3:.3f} ms, HBM {row['hbm_s'] * 1e3:.3f} ms); "
              f"intensity {row['arithmetic_intensity']:.1f} FLOP/B vs ridge {row['ridge_point']:.1f}")
        if row.get("sram_s"):
            print(f"  SRAM traffic would take {row['sram_s'] * 1e3:.3f} ms at the preset's shared-memory bandwidth; "
                  "not binding: SRAM bytes count per-thread accesses (docs/COUNTING.md), an upper bound")
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
    workload = Workload(args.seq_len, args.head_dim, args.batch, args.heads, args.dtype,
                        kv_heads=args.kv_heads, causal=args.causal, query_len=args.query_len)
    options = schedule_options(args.algorithm, args.block_rows, args.block_cols, args.matmul_tile,
                               args.softmax_threads, args.splits, args.no_dropout)
    result, row = evaluate(args.algorithm, workload, sram, hardware, options, args.trace)
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
    for algo, n, d, b, h, kvh, q, sram, br, bc, t, st, sp in itertools.product(
            algorithms, args.seq_len, args.head_dim, args.batch, args.heads, args.kv_heads or none,
            args.query_len or none, srams, args.block_rows or none, args.block_cols or none,
            args.matmul_tile or none, args.softmax_threads or none, args.splits or none):
        workload = Workload(n, d, b, h, args.dtype, kv_heads=kvh, causal=args.causal, query_len=q)
        options = schedule_options(algo, br, bc, t, st, sp, args.no_dropout)
        # in a sweep over several algorithms, each takes only the flags that apply to it
        options = {k: v for k, v in options.items() if v is None or k in ACCEPTS[algo]}
        rows.append(evaluate(algo, workload, sram, hardware, options, args.trace)[1])
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


ACCEPTS = {
    "naive": {"matmul_tile", "softmax_threads"}, "naive_bwd": {"matmul_tile"},
    "fa1": {"block_rows", "block_cols"}, "fa2": {"block_rows", "block_cols"}, "fa2_fast": {"block_rows", "block_cols"},
    "flash_bwd": {"block_rows", "block_cols"}, "decode": {"block_cols", "splits"},
    "unfused": {"dropout"}, "unfused_bwd": {"dropout"},
}


def run_kvcache(args):
    model = load_model(args.model)
    gpu_bytes = load_preset(args.gpu).level("HBM").capacity_bytes if args.gpu else parse_size(args.gpu_memory, "gpu-memory")
    reserve = 0 if args.reserve in ("0", 0) else parse_size(args.reserve, "reserve")
    tokens = max_context(model, gpu_bytes, args.batch, args.weight_dtype, args.kv_dtype, reserve)
    row = {"model": model.key, "params": model.params, "gpu_bytes": gpu_bytes, "batch": args.batch,
           "weight_dtype": args.weight_dtype, "kv_dtype": args.kv_dtype, "reserve_bytes": reserve,
           "weight_bytes": model.weight_bytes(args.weight_dtype),
           "kv_bytes_per_token": model.kv_bytes_per_token(args.kv_dtype), "max_context_tokens": tokens,
           "model_max_position": model.max_position_embeddings}
    if args.json:
        print(json.dumps(row))
        return
    print(f"{model.name}: {model.params:,} parameters → weights {_fmt_bytes(row['weight_bytes'])} in {args.weight_dtype}")
    print(f"KV cache: 2·{model.num_hidden_layers} layers·{model.num_key_value_heads} kv_heads·{model.head_dim}·"
          f"{DTYPE_BYTES[args.kv_dtype]} B = {row['kv_bytes_per_token']:,} B per token")
    print(f"GPU memory {_fmt_bytes(gpu_bytes)}, reserve {_fmt_bytes(reserve)}, batch {args.batch}: "
          f"longest context that fits = {tokens:,} tokens (the model was trained to {model.max_position_embeddings:,})")


def run_figure2(args):
    frame = figure2_left(parse_size(args.sram, "sram"))
    print(frame.to_string(index=False, float_format=lambda x: f"{x:.2f}"))


COMMANDS = {"count": run_count, "sweep": run_sweep, "kvcache": run_kvcache, "figure2": run_figure2}


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        COMMANDS[args.command](args)
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:            # `python -m simlib ... | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
