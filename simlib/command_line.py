"""Command line: `python -m simlib count|sweep|kvcache|figure2|energy|predict ...`.

The schedule flags (--block-rows, --matmul-tile, --splits, --dropout/--no-dropout, --threads, ...)
are made from the schedules' own `Parameter`s (simlib/schedules/), so a new schedule's parameters
appear here without an edit. Every number is parsed exactly (integers; sizes with Decimal) and
bounded. `--sram` and `--gpu` together: the SRAM size given wins over the preset's shared memory
per block, the preset still gives the roofline, and the output says which SRAM was used.

Tiles that do not fit on chip: `count` refuses them (exit 2, the bytes needed and available);
`sweep` keeps the row, marked in an `infeasible` column with the same message.

Errors: bad input exits 2 with one line on stderr naming the parameter, before any work starts
(output files are checked first) and with nothing on stdout; an OSError or MemoryError exits 1,
Ctrl-C exits 130, each with one line on stderr and no traceback.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from .cli_evaluate import evaluate, options_of, workload_of
from .cli_values import NoLoneDashValue, int_type, key_type, pair_type, size_type
from .cost.predict_command import add_predict_command, run_predict_command
from .counts import ALGORITHMS, Result, all_parameters, schedule_of
from .energy_cli import add_energy_command, run_energy_command
from .hardware import load_preset, preset_keys
from .kvcache import WEIGHT_BYTES, load_model, max_context, model_keys
from .moved_commands import MOVED, forward
from .safe_write import check_destination, quiet_stdout, stdout_closed_message, write_atomic
from .schedule_protocol import DoesNotFit, Parameter
from .units import DTYPE_BYTES, parse_size
from .workload import MAX_BATCH_HEADS, MAX_HEAD_DIM, MAX_SEQ_LEN, Workload

#: A sweep evaluates at most this many configurations (a typo such as 1:2**40 is refused).
MAX_SWEEP_ROWS = 100_000


class UsageError(Exception):
    pass


class Parser(NoLoneDashValue, argparse.ArgumentParser):
    """argparse that reports a usage error in one line instead of usage text plus a line."""

    def error(self, message: str) -> Any:
        raise UsageError(message.replace("\n", " "))


def schedule_flag(p: argparse.ArgumentParser, param: Parameter, many: bool) -> None:
    """One CLI flag from a schedule Parameter, its help naming the schedules that take it."""
    takers = [name for name in ALGORITHMS if schedule_of(name).parameter(param.name)]
    text = f"{param.help} [{', '.join(takers)}]"
    if param.kind == "int":
        p.add_argument(param.flag, type=int_type(param.flag, MAX_SEQ_LEN, many), help=text)
    elif param.kind == "pair":
        p.add_argument(param.flag, type=pair_type(param.flag, many), help=text)
    elif param.kind == "choice":
        p.add_argument(param.flag, choices=param.choices, help=text)
    else:
        p.add_argument(param.flag, action=argparse.BooleanOptionalAction, default=None, help=text)


def _add_common(p: argparse.ArgumentParser, many: bool) -> None:
    algo_help = f"one of {', '.join(ALGORITHMS)}" + (" (comma list)" if many else "")
    if many:
        p.add_argument("--algorithm", default=",".join(ALGORITHMS), help=algo_help)
    else:
        p.add_argument("--algorithm", required=True, choices=ALGORITHMS, help=algo_help)
    lists = ": list or START:STOP (doubling)" if many else ""
    p.add_argument(
        "--seq-len", type=int_type("--seq-len", MAX_SEQ_LEN, many), required=True, help="N" + lists
    )
    p.add_argument(
        "--head-dim", type=int_type("--head-dim", MAX_HEAD_DIM, many), required=True, help="d" + lists
    )
    p.add_argument("--batch", type=int_type("--batch", MAX_BATCH_HEADS, many), default=[1] if many else 1)
    p.add_argument("--heads", type=int_type("--heads", MAX_BATCH_HEADS, many), default=[1] if many else 1)
    p.add_argument(
        "--kv-heads",
        type=int_type("--kv-heads", MAX_BATCH_HEADS, many),
        help="GQA/MQA: K/V heads, dividing --heads (default: --heads)",
    )
    p.add_argument(
        "--query-len",
        type=int_type("--query-len", MAX_SEQ_LEN, many),
        help="queries per head (decode: new tokens; default: --seq-len)",
    )
    p.add_argument("--dtype", default="fp16", choices=tuple(DTYPE_BYTES))
    p.add_argument("--causal", action="store_true", help="causal mask (fully masked tiles are skipped)")
    p.add_argument(
        "--sram",
        type=size_type("--sram", many),
        help="SRAM bytes for the tiling, e.g. 196608 or 192KiB (wins over --gpu's)"
        + (" (comma list)" if many else ""),
    )
    p.add_argument(
        "--gpu",
        type=key_type("hardware"),
        help=f"hardware preset ({', '.join(preset_keys())}): its SRAM per block and a roofline",
    )
    for param in all_parameters().values():
        schedule_flag(p, param, many)
    p.add_argument("--trace", action="store_true", help="walk the loop nest instead of the closed form")


def build_parser() -> Parser:
    parser = Parser(prog="python -m simlib", description="Exact HBM/SRAM traffic of attention schedules.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    p_count = sub.add_parser("count", help="traffic of one configuration")
    _add_common(p_count, many=False)
    p_count.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p_sweep = sub.add_parser("sweep", help="traffic over lists/ranges of N, d, SRAM or blocks")
    _add_common(p_sweep, many=True)
    p_sweep.add_argument("--csv", help="write CSV to this file ('-' for stdout) instead of a table")
    p_kv = sub.add_parser(
        "kvcache", help="weights + KV cache of a model on a GPU: the longest context that fits"
    )
    p_kv.add_argument(
        "--model", required=True, type=key_type("models"), help=f"one of {', '.join(model_keys())}"
    )
    memory = p_kv.add_mutually_exclusive_group(required=True)
    memory.add_argument(
        "--gpu-memory", type=size_type("--gpu-memory", False), help="GPU memory, e.g. 16GiB or 16GB"
    )
    memory.add_argument(
        "--gpu", type=key_type("hardware"), help="a hardware preset whose HBM capacity to use"
    )
    p_kv.add_argument("--batch", type=int_type("--batch", MAX_BATCH_HEADS, False), default=1)
    p_kv.add_argument("--weight-dtype", default="fp16", choices=tuple(WEIGHT_BYTES))
    p_kv.add_argument("--kv-dtype", default="fp16", choices=tuple(DTYPE_BYTES))
    p_kv.add_argument("--reserve", default="0", help="memory set aside for activations and the CUDA context")
    p_kv.add_argument("--json", action="store_true")
    # moved to the evidence package (model against measurement); forwarded by `main` (simlib.moved_commands)
    sub.add_parser(
        "figure2", help="Figure 2 (left) of the FlashAttention paper: HBM GB, model vs paper", add_help=False
    )
    sub.add_parser("claims", help="every claim of the posts: model, paper, H200, verdict", add_help=False)
    add_energy_command(sub, _add_common)
    add_predict_command(sub)
    return parser


def fmt_bytes(n: int) -> str:
    """Bytes with their binary unit: naive's reads at N = 4096, d = 64, fp16 are (3Nd + 2N²)·2 B.

    >>> fmt_bytes((3 * 4096 * 64 + 2 * 4096**2) * 2)
    '68,681,728 B (65.50 MiB)'
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n:,} B ({n / size:.2f} {unit})"
    return f"{n:,} B"


def traffic(n_bytes: int) -> str:
    """Traffic in bytes and decimal MB (10⁶ B), as the lectures write traffic (capacities stay binary).

    >>> traffic(34_078_720)
    '34,078,720 B (34.08 MB)'
    """
    return f"{n_bytes:,} B ({n_bytes / 1e6:,.2f} MB)"


def print_count(result: Result, row: dict[str, Any]) -> None:
    w = result.workload
    print(
        f"{result.algorithm}: N={w.seq_len} d={w.head_dim} B={w.batch} H={w.heads} {w.dtype} "
        f"({w.element_bytes} B/element, row statistics fp32)"
        + (f", kv_heads={w.n_kv_heads}" if w.group > 1 else "")
        + (f", queries={w.nq}" if w.nq != w.nk else "")
        + (", causal" if w.causal else "")
    )
    if result.sram_bytes:
        print(
            f"SRAM {result.sram_bytes:,} B → M = {result.sram_bytes // w.element_bytes:,} elements "
            f"[{row['sram_source']}]"
        )
    print(result.mapping.summary())
    ws = result.working_set
    if ws is not None and ws.items:
        of = f" of {result.sram_bytes:,} B" if result.sram_bytes else ""
        print(f"on chip per thread block: SRAM {ws.bytes('SRAM'):,} B{of} ({ws.describe('SRAM')})")
        registers = load_preset(row["gpu"]).register_file_bytes if row.get("gpu") else None
        if ws.bytes("registers"):
            print(
                f"  registers {ws.bytes('registers'):,} B ({ws.describe('registers')})"
                + (f" of {row['gpu']}'s {registers:,} B per SM" if registers else "")
            )
    elif ws is not None and ws.note:
        print(f"on chip: {ws.note}")
    if result.sram_overshoot_bytes and result.sram_bytes:
        print(
            f"  the paper's tile rule overshoots M: {result.sram_overshoot_bytes:,} B more than sram_bytes "
            f"({result.sram_overshoot_bytes / result.sram_bytes:.1%}); counted as the paper counts it"
        )
    if result.register_overshoot_bytes:
        print(
            f"  the paper's tile rule overshoots the register file by {result.register_overshoot_bytes:,} B"
        )
    for key in (
        "hbm_read_bytes",
        "hbm_write_bytes",
        "hbm_bytes",
        "sram_read_bytes",
        "sram_write_bytes",
        "compulsory_hbm_bytes",
    ):
        if row[key] is None:
            print(f"  {key:<24}not modelled ({result.algorithm} counts HBM traffic only)")
        else:
            print(f"  {key:<24}{traffic(row[key])}")
    if row["saha_ye_bytes_asymptotic"]:
        print(
            f"  {'saha_ye (asymptotic)':<24}{traffic(int(row['saha_ye_bytes_asymptotic']))}  "
            "min(N²d²/M, N²d/√M), constant 1"
        )
    print(f"  {'flops':<24}{row['flops']:,}  (performed; useful forward FLOPs {row['useful_flops']:,})")
    if "roofline_s" in row:
        print(
            f"roofline on {row['gpu']}: {row['roofline_s'] * 1e3:.3f} ms, {row['bound']} bound "
            f"(compute {row['compute_s'] * 1e3:.3f} ms, HBM {row['hbm_s'] * 1e3:.3f} ms); "
            f"intensity {row['arithmetic_intensity']:.1f} FLOP/B vs ridge {row['ridge_point']:.1f}"
        )
        if "decode_time_with_waves_s" in row:
            print(
                f"  with waves: {row['decode_ctas']} thread blocks, {row['decode_waves']} wave(s) on "
                f"{row['gpu']}'s SMs (+ the combine kernel when split): {row['decode_time_with_waves_s'] * 1e3:.3f} ms "
                "(simlib.decode_time)"
            )
        if row.get("sram_s"):
            print(
                f"  SRAM traffic would take {row['sram_s'] * 1e3:.3f} ms at the preset's shared-memory bandwidth; "
                "not binding: SRAM bytes count per-thread accesses (docs/COUNTING.md), an upper bound"
            )
    print("\nper tensor (bytes, all heads):")
    table = result.table()
    print(
        table.pivot_table(
            index=["level", "tensor"], columns="op", values="bytes", aggfunc="sum", fill_value=0
        ).to_string()
    )


def run_count(args: argparse.Namespace) -> None:
    if args.sram is not None and schedule_of(args.algorithm).sram == "unused":
        raise ValueError(f"--sram does not apply to {args.algorithm} (it uses no shared-memory tiles)")
    hardware = load_preset(args.gpu) if args.gpu else None
    result, row = evaluate(
        args.algorithm,
        workload_of(args),
        args.sram,
        hardware,
        options_of(args, args.algorithm, only_applicable=False),
        args.trace,
    )
    if args.json:
        print(json.dumps(row, allow_nan=False))
    else:
        print_count(result, row)


def sweep_configs(args: argparse.Namespace, algorithms: list[str]) -> list[tuple[Any, ...]]:
    """Every (algorithm, workload fields, sram, parameter values) of the sweep, checked for size."""
    none: list[Any] = [None]
    names = list(all_parameters())
    axes = [
        algorithms,
        args.seq_len,
        args.head_dim,
        args.batch,
        args.heads,
        args.kv_heads or none,
        args.query_len or none,
        args.sram or none,
    ]
    axes += [
        getattr(args, name) if isinstance(getattr(args, name), list) else [getattr(args, name)]
        for name in names
    ]
    total = 1
    for axis in axes:
        total *= len(axis)
    if total > MAX_SWEEP_ROWS:
        raise ValueError(f"sweep: {total:,} configurations, more than {MAX_SWEEP_ROWS:,}; give shorter lists")
    return list(itertools.product(*axes))


def run_sweep(args: argparse.Namespace) -> None:
    if args.csv is not None and args.csv != "-":
        check_destination(args.csv, "--csv")
    hardware = load_preset(args.gpu) if args.gpu else None
    algorithms = args.algorithm.split(",")
    for a in algorithms:
        schedule_of(a)
    names = list(all_parameters())
    rows = []
    for algo, n, d, b, h, kvh, q, sram, *values in sweep_configs(args, algorithms):
        workload = Workload(n, d, b, h, args.dtype, kv_heads=kvh, causal=args.causal, query_len=q)
        given = dict(zip(names, values))
        # in a sweep over several algorithms, each takes only the flags that apply to it
        options = {k: v for k, v in given.items() if schedule_of(algo).parameter(k) is not None}
        try:
            rows.append(evaluate(algo, workload, sram, hardware, options, args.trace)[1])
        except DoesNotFit as exc:  # a tile that does not fit: a row marked infeasible, not a stop
            rows.append(
                {
                    "algorithm": algo,
                    "seq_len": n,
                    "head_dim": d,
                    "batch": b,
                    "heads": h,
                    "kv_heads": workload.n_kv_heads,
                    "query_len": workload.nq,
                    "causal": args.causal,
                    "dtype": args.dtype,
                    "sram_bytes": sram if sram is not None else (hardware.sram_bytes if hardware else None),
                    **options,
                    "infeasible": str(exc),
                }
            )
    frame = pd.DataFrame(rows).drop_duplicates()
    for col in frame.columns:  # integer columns with gaps stay integers (not 232448.0)
        values = [row[col] for row in rows if row.get(col) is not None]
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            frame[col] = frame[col].astype("Int64")
    if args.csv == "-":
        print(frame.to_csv(index=False), end="")
    elif args.csv:
        write_atomic(args.csv, frame.to_csv(index=False))
        print(f"wrote {len(frame):,} rows, {len(frame.columns)} columns to {args.csv}")
    else:
        cols = [
            c
            for c in (
                "algorithm",
                "seq_len",
                "head_dim",
                "batch",
                "heads",
                "sram_bytes",
                "block_rows",
                "block_cols",
                "tile_rule",
                "hbm_bytes",
                "sram_read_bytes",
                "sram_write_bytes",
                "flops",
                "roofline_s",
                "bound",
                "infeasible",
            )
            if c in frame
        ]
        # '-' where a column does not apply (naive has no tiles): not pandas' NaN and <NA>
        shown = frame[cols].astype(object)
        shown = shown.where(shown.notna(), "-")
        if "roofline_s" in shown:  # 3 significant digits: pandas printed 1.37e-07 s as 0.0
            shown["roofline_s"] = [f"{v:.3g}" if isinstance(v, float) else v for v in shown["roofline_s"]]
        print(shown.to_string(index=False))
        note = sram_not_binding_note(rows)
        if note:
            print(note)


def sram_not_binding_note(rows: list[dict]) -> str:
    """One line when a row's SRAM bytes would take longer than its HBM bytes yet its bound says HBM:
    the roofline leaves SRAM out on purpose (simlib.roofline: thread-level SRAM bytes are an upper bound),
    which the table alone does not show."""
    over = [r for r in rows if r.get("sram_s") and r.get("hbm_s") and r["sram_s"] > r["hbm_s"]]
    if not over:
        return ""
    return (
        f"note: in {len(over)} of {len(rows)} rows the SRAM bytes would take longer than the HBM bytes at the "
        "preset's bandwidths; SRAM does not bind: its bytes count per-thread accesses (docs/COUNTING.md), an "
        "upper bound, so the bound column names HBM or compute (simlib.roofline; `simlib count --gpu` prints the SRAM time)"
    )


def run_kvcache(args: argparse.Namespace) -> None:
    model = load_model(args.model)
    gpu_bytes = load_preset(args.gpu).level("HBM").capacity_bytes if args.gpu else args.gpu_memory
    reserve = 0 if args.reserve.strip() == "0" else parse_size(args.reserve, "--reserve")
    tokens = max_context(model, gpu_bytes, args.batch, args.weight_dtype, args.kv_dtype, reserve)
    row = {
        "model": model.key,
        "params": model.params,
        "gpu_bytes": gpu_bytes,
        "batch": args.batch,
        "weight_dtype": args.weight_dtype,
        "kv_dtype": args.kv_dtype,
        "reserve_bytes": reserve,
        "weight_bytes": model.weight_bytes(args.weight_dtype),
        "kv_bytes_per_token": model.kv_bytes_per_token(args.kv_dtype),
        "max_context_tokens": tokens,
        "model_max_position": model.max_position_embeddings,
    }
    if args.json:
        print(json.dumps(row, allow_nan=False))
        return
    print(
        f"{model.name}: {model.params:,} parameters → weights {fmt_bytes(row['weight_bytes'])} in {args.weight_dtype}"
    )
    print(
        f"KV cache: 2·{model.num_hidden_layers} layers·{model.num_key_value_heads} kv_heads·{model.head_dim}·"
        f"{DTYPE_BYTES[args.kv_dtype]} B = {row['kv_bytes_per_token']:,} B per token"
    )
    print(
        f"GPU memory {fmt_bytes(gpu_bytes)}, reserve {fmt_bytes(reserve)}, batch {args.batch}: "
        f"longest context that fits = {tokens:,} tokens (the model was trained to {model.max_position_embeddings:,})"
    )


COMMANDS = {
    "count": run_count,
    "sweep": run_sweep,
    "kvcache": run_kvcache,
    "energy": run_energy_command,
    "predict": run_predict_command,
}


def run_commands(
    parser: argparse.ArgumentParser,
    commands: Mapping[str, Callable[[argparse.Namespace], None]],
    argv: Sequence[str] | None,
    moved: dict[str, str] | None = None,
) -> int:
    """Parse `argv`, run its command, and turn every failure into one line on stderr and an exit
    status (the error policy of the module docstring); `moved` subcommands are forwarded to their
    package's command line (simlib.moved_commands)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    closed = stdout_closed_message()
    if closed:
        print(closed, file=sys.stderr)
        return 1
    try:
        if moved and argv[:1] and argv[0] in moved:
            return forward(moved[argv[0]], argv)
        args = parser.parse_args(argv)
        commands[args.command](args)
        sys.stdout.flush()
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `python -m simlib ... | head`: the reader left; no traceback
        quiet_stdout()
        return 1
    except OSError as exc:  # a full disk, /dev/full, a file that vanished
        quiet_stdout()
        print(
            f"error: {exc.strerror or exc}" + (f": {exc.filename!r}" if exc.filename else ""), file=sys.stderr
        )
        return 1
    except MemoryError:
        print("error: out of memory (try a smaller --seq-len or the closed form)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_commands(build_parser(), COMMANDS, argv, MOVED)
