"""``python -m gpu_kernels``: run a kernel and check it, time it, profile it, look at its PTX.

This module is the argument parser and the one place errors become exit codes; what each
subcommand does is ``commands.py``.

    run           one kernel on fresh random inputs (GPU or --simulate), checked, counters vs simlib
    bench         the harness (measure/harness.py): numba naive and tiled vs cupy, N 256-32768
    compare       the same harness: every variant (fast kernel, torch SDPA...) at N 1K, 4K, 16K
    tune          the fast kernel's configuration sweep        ncu      Nsight Compute on the fast kernel
    profile       Nsight Compute per launch, next to simlib    asm      PTX of timing vs counting builds
    ceilings      mma.sync bf16/fp16, FFMA and copy-bandwidth ceilings, measured
    side-by-side  the 16-bit kernels (fa2_tc, naive_tc) vs cupy and torch SDPA (measure/side_by_side.py)
    model-vs-ncu  the physical model next to a recorded profile (CPU; runs `python -m evidence model-vs-ncu`)
    import-run    add a device run's folder to data/measurements (measurements/manifest.py, CPU)

Arguments and output destinations are checked before numba is imported (numba's CUDA simulator
must be switched on before the import) and before any work starts. Every bad argument, a missing
GPU, an unwritable destination, running out of memory or Ctrl-C ends the program with one line on
stderr and a non-zero exit (2 for usage and no GPU, 1 for failed work, 130 for Ctrl-C); nothing
else goes to stdout. Measured files are written with their provenance (measurements/provenance.py).
"""

from __future__ import annotations

import argparse
import sys

from simlib.cli_values import float_type, int_type, nonnegative_int, tag_type
from simlib.moved_commands import forward
from simlib.presets import DEFAULT_GPU
from simlib.safe_write import quiet_stdout, stdout_closed_message
from simlib.units import TENSOR_CORE_DTYPES
from simlib.workload import MAX_SEQ_LEN

from .commands import COMMANDS, OneLineParser, UsageError
from .device import NoGPU
from .kernels import KERNELS

# The one value parser of both CLIs (simlib.cli_values): ASCII digits only ('1_6' and '١٦' are refused as
# simlib refuses them), finite floats, bounded.
_positive_int = int_type("value", None, many=False)  # the bounds are check_shape's, naming the parameter
_seed = nonnegative_int
_positive_float = float_type("value", above=0)
_int_list = int_type("value", MAX_SEQ_LEN, many=True)


def _shape_list(text):
    """--shapes: profile_driver's items, checked here (before numba is imported)."""
    import argparse

    from .measure.profile_driver import parse_shape

    items = [item for item in text.split(",") if item.strip()]
    try:
        for item in items:
            parse_shape(item, 1, 1)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return items


def _add_out(p, default_tag=DEFAULT_GPU):
    p.add_argument("--out", required=True, help="folder for the files (e.g. $OUT on the device machine)")
    p.add_argument(
        "--tag",
        type=tag_type("--tag"),
        default=default_tag,
        help="file names: <what>_<tag>.csv and its .provenance.json (letters, digits, '_', '-')",
    )
    p.add_argument(
        "--run-id",
        default=None,
        help="the run's id in every sidecar (default: FLASHIO_RUN_ID or <UTC time>-<commit>)",
    )
    p.add_argument("--no-progress", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    from .measure.variants import VARIANTS

    p = OneLineParser(prog="python -m gpu_kernels", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(
        dest="command",
        required=True,
        metavar="{run,bench,compare,tune,ncu,profile,asm,ceilings,side-by-side,model-vs-ncu,import-run}",
    )

    r = sub.add_parser("run", help="run one kernel on fresh random inputs and check it")
    r.add_argument("--kernel", choices=[k.name for k in KERNELS.values() if k.in_run_command], required=True)
    r.add_argument(
        "--dtype",
        choices=TENSOR_CORE_DTYPES,
        default=None,
        help="fa2_tc, fa3_tc, naive_tc, decode_tc: the 16-bit input type (default bf16; naive and tiled are fp32)",
    )
    r.add_argument(
        "--warps",
        type=_positive_int,
        help="fa2_tc, naive_tc, decode_tc: W warps per block (Br = 32·W for fa2_tc, 16·W for naive_tc; "
        "decode_tc: Bc/W keys of every tile per warp; default 4, decode_tc at d = 64 8)",
    )
    r.add_argument(
        "--warpgroups",
        type=_positive_int,
        help="fa3_tc: G consumer warpgroups of 64 query rows, 1-3 (default 2)",
    )
    r.add_argument(
        "--splits",
        type=_positive_int,
        help="decode_tc: flash-decoding splits of the cache, at most 128 (default: simlib.decode_time's best)",
    )
    r.add_argument(
        "--stages",
        type=_positive_int,
        help="decode_tc: K/V tiles in the cp.async ring, 2..8 (default 4 / 3 at d = 64 / 128)",
    )
    r.add_argument(
        "--seq-len", type=_positive_int, required=True, help="N (keys; queries too unless --query-len)"
    )
    r.add_argument("--head-dim", type=_positive_int, required=True, help="d")
    r.add_argument("--batch", type=_positive_int, default=1)
    r.add_argument("--heads", type=_positive_int, default=1)
    r.add_argument(
        "--kv-heads",
        type=_positive_int,
        default=None,
        metavar="H_KV",
        help="K/V heads, dividing --heads (GQA; 1 = MQA; default: --heads)",
    )
    r.add_argument(
        "--query-len",
        type=_positive_int,
        default=None,
        metavar="NQ",
        help="query rows N_q (default: --seq-len, 1 for decode_tc; with --causal at most --seq-len)",
    )
    r.add_argument(
        "--causal",
        action="store_true",
        help="causal mask: query q sees keys k <= q + N - N_q (aligned bottom-right)",
    )
    r.add_argument(
        "--block-rows",
        type=_positive_int,
        help="tiled: Br (default: the paper's Algorithm 1 tiles for 48 KiB)",
    )
    r.add_argument("--block-cols", type=_positive_int, help="tiled, fa2_tc, fa3_tc, naive_tc: Bc")
    r.add_argument("--matmul-tile", type=_positive_int, help="naive: matmul tile T (T*T threads)")
    r.add_argument(
        "--softmax-threads", type=_positive_int, help="naive: threads per softmax row (power of two)"
    )
    r.add_argument("--count", action="store_true", help="counting build; compare the counters with simlib")
    r.add_argument("--simulate", action="store_true", help="run on numba's CUDA simulator (no GPU needed)")
    r.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    r.add_argument("--seed", type=_seed, default=None, help="random seed (default: fresh inputs every run)")
    r.add_argument(
        "--logit-scale", type=_positive_float, default=1.0, help="multiply Q (every logit) by this"
    )

    for name, seq_lens, variants, help_text in (
        (
            "bench",
            [2**i for i in range(8, 16)],
            "cupy_naive,numba_naive,numba_tiled",
            "time numba naive and tiled and cupy's naive attention (the harness)",
        ),
        (
            "compare",
            [1024, 4096, 16384],
            ",".join(VARIANTS),
            "every variant side by side: numba, cupy, torch SDPA (the harness)",
        ),
    ):
        b = sub.add_parser(name, help=help_text)
        _add_out(b)
        b.add_argument("--seq-lens", type=_int_list, default=seq_lens)
        b.add_argument("--head-dims", type=_int_list, default=[64, 128])
        b.add_argument("--batch", type=_positive_int, default=1)
        b.add_argument("--heads", type=_positive_int, default=16)
        b.add_argument("--reps", type=_positive_int, default=10, help="timed calls per config")
        b.add_argument(
            "--budget-s",
            type=_positive_float,
            default=240.0 if name == "bench" else None,
            help="skip configs predicted not to fit in what is left of this",
        )
        b.add_argument("--variants", default=variants, help=f"comma-separated, from {', '.join(VARIANTS)}")
        b.add_argument("--configs", default="", help="fast kernel: JSON {d: FastConfig keyword arguments}")
        b.add_argument("--tuned", default="", help="fast kernel: a tune JSON, its best config per d")
        b.add_argument("--seed", type=_seed, default=None)

    t = sub.add_parser("tune", help="time the fast kernel's configuration sweep")
    _add_out(t)
    t.add_argument("--seq-lens", type=_int_list, default=[4096, 16384])
    t.add_argument("--reps", type=_positive_int, default=10)

    n = sub.add_parser("ncu", help="Nsight Compute on the fast kernel and torch's efficient kernel")
    _add_out(n)
    n.add_argument(
        "--specs", default="fast:4096:64,fast:4096:128,torch_efficient:4096:64,torch_efficient:4096:128"
    )
    n.add_argument("--sections-spec", default="fast:4096:64,fast:4096:128,torch_efficient:4096:64")
    n.add_argument("--configs", default="")
    n.add_argument("--tuned", default="")
    n.add_argument("--timeout-s", type=_positive_float, default=300.0, help="per ncu process")

    # the program `ncu` profiles (measure/ncu.py): one launch per spec variant:N:d; internal, not in --help
    ln = sub.add_parser("launch")  # no help=: argparse then leaves it out of the listing
    ln.add_argument("--specs", required=True)
    ln.add_argument("--configs", default="")

    f = sub.add_parser("profile", help="Nsight Compute counters per kernel launch, next to simlib")
    _add_out(f)
    f.add_argument("--seq-lens", type=_int_list, default=[1024, 4096, 16384])
    f.add_argument("--head-dims", type=_int_list, default=[64, 128])
    f.add_argument("--batch", type=_positive_int, default=1)
    f.add_argument("--heads", type=_positive_int, default=4)
    f.add_argument(
        "--kernels", default="naive,tiled", help="from naive, tiled, fa2_tc, naive_tc, fa3_tc (bf16)"
    )
    f.add_argument(
        "--shapes",
        type=_shape_list,
        default=None,
        help="NxD[:bBhH][:causal],... instead of --seq-lens x --head-dims (causal: fa3_tc)",
    )
    f.add_argument("--extra-metrics", default="", help="more ncu metrics to record, comma-separated")
    f.add_argument(
        "--no-counted", action="store_true", help="leave out the counting build's rows (no second compile)"
    )
    f.add_argument("--ncu", default=None, help="path of ncu (default: found on PATH or under /opt/nvidia)")
    f.add_argument("--timeout-s", type=_positive_float, default=240.0, help="per ncu process")

    a = sub.add_parser("asm", help="PTX of the timing and counting builds: atomics, float64, local memory")
    a.add_argument("--head-dims", type=_int_list, default=[64, 128])
    a.add_argument("--json", dest="json_out", default=None, help="also write the table to this JSON file")
    a.add_argument("--run-id", default=None)

    c = sub.add_parser("ceilings", help="mma.sync (bf16, fp16), FFMA and copy-bandwidth ceilings of the GPU")
    _add_out(c)

    # moved to the evidence package: forwarded to `python -m evidence model-vs-ncu` (simlib.moved_commands)
    sub.add_parser("model-vs-ncu", help="the physical model next to a recorded profile (CPU)", add_help=False)
    sub.add_parser(
        "import-run", help="add a device run's folder to data/measurements (see its --help)", add_help=False
    )
    sub.add_parser(
        "side-by-side", help="16-bit attention side by side on the GPU (see its --help)", add_help=False
    )
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    closed = stdout_closed_message()
    if closed:
        sys.stderr.write(closed + "\n")
        return 1
    if argv[:1] == ["import-run"]:
        from measurements.manifest import main as import_run

        return import_run(argv[1:])
    if argv[:1] == ["side-by-side"]:
        from .measure.side_by_side import main as side_by_side

        return side_by_side(argv[1:])
    try:
        if argv[:1] == ["model-vs-ncu"]:
            return forward("evidence", argv)
        args = build_parser().parse_args(argv)
        status = COMMANDS[args.command](args)
        sys.stdout.flush()  # a full disk or closed pipe shows up here, not at exit
        return status
    except UsageError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except NoGPU as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except BrokenPipeError:  # output piped into `head`: the reader left; no traceback
        quiet_stdout()
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("interrupted (files already written are complete, each with its provenance)\n")
        return 130
    except MemoryError:
        sys.stderr.write("error: out of host memory; try a smaller --seq-len, --batch or --heads\n")
        return 1
    except OSError as e:  # a write that failed (disk full, /dev/full, permissions)
        quiet_stdout()
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        sys.stderr.write(f"error: {e.strerror or e}{where}\n")
        return 1
