"""``python -m gpu_kernels``: run a kernel and check it, benchmark, profile, look at the PTX.

Arguments are parsed and checked before numba is imported, because numba's CUDA simulator must
be switched on (``NUMBA_ENABLE_CUDASIM=1``) before the import. Every bad argument ends the
program with exit code 2 and one line on stderr naming the parameter; nothing goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import checks

TOLERANCE = 1e-5  # relative error allowed against the float64 reference (fp32 arithmetic)
NO_GPU = "no CUDA GPU found; use --simulate to run on numba's CUDA simulator (CPU, slow: keep N and d small)"
NO_GPU_ONLY = "no CUDA GPU found; `{cmd}` needs a real GPU (only `run --simulate` works without one)"


class UsageError(Exception):
    """A bad argument: one line on stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        raise UsageError(message)


def _number(parse, accept, what):
    """An argparse type: `parse` the text, keep it if `accept(value)`, else one line naming `what`."""
    def convert(text):
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    return convert


_positive_int = _number(int, lambda x: x >= 1, "a positive integer")
_seed = _number(int, lambda x: x >= 0, "a non-negative integer")
_positive_float = _number(float, lambda x: 0 < x < float("inf"), "a positive number")


def _int_list(text):
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of positive integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of positive integers, got {text!r}")
    return values


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m gpu_kernels", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", metavar="{run,bench,profile,asm}", required=True)

    r = sub.add_parser("run", help="run one kernel on fresh random inputs and check it")
    r.add_argument("--kernel", choices=("naive", "tiled"), required=True)
    r.add_argument("--seq-len", type=_positive_int, required=True, help="N (keys; queries too unless --query-len)")
    r.add_argument("--head-dim", type=_positive_int, required=True, help="d")
    r.add_argument("--batch", type=_positive_int, default=1)
    r.add_argument("--heads", type=_positive_int, default=1)
    r.add_argument("--kv-heads", type=_positive_int, default=None, metavar="H_KV",
                   help="K/V heads, dividing --heads (GQA; 1 = MQA; default: --heads)")
    r.add_argument("--query-len", type=_positive_int, default=None, metavar="NQ",
                   help="query rows N_q (default: --seq-len; with --causal at most --seq-len)")
    r.add_argument("--causal", action="store_true",
                   help="causal mask: query q sees keys k <= q + N - N_q (aligned bottom-right)")
    r.add_argument("--block-rows", type=_positive_int, help="tiled: Br (default: simlib's tiles for 48 KiB)")
    r.add_argument("--block-cols", type=_positive_int, help="tiled: Bc")
    r.add_argument("--matmul-tile", type=_positive_int, help="naive: matmul tile T (T*T threads)")
    r.add_argument("--softmax-threads", type=_positive_int, help="naive: threads per softmax row (power of two)")
    r.add_argument("--count", action="store_true", help="counting build; compare the counters with simlib")
    r.add_argument("--simulate", action="store_true", help="run on numba's CUDA simulator (no GPU needed)")
    r.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    r.add_argument("--seed", type=_seed, default=None, help="random seed (default: fresh inputs every run)")
    r.add_argument("--logit-scale", type=_positive_float, default=1.0, help="multiply Q (every logit) by this")

    b = sub.add_parser("bench", help="time the kernels and cupy's naive attention on the GPU")
    b.add_argument("--out", default="data/measurements")
    b.add_argument("--tag", default="h200", help="file names: bench_<tag>.csv, bench_<tag>.provenance.json")
    b.add_argument("--seq-lens", type=_int_list, default=[2**i for i in range(8, 16)])
    b.add_argument("--head-dims", type=_int_list, default=[64, 128])
    b.add_argument("--batch", type=_positive_int, default=1)
    b.add_argument("--heads", type=_positive_int, default=16)
    b.add_argument("--reps", type=_positive_int, default=10, help="timed calls per config, at least")
    b.add_argument("--budget-s", type=_positive_float, default=240.0, help="stop timing new configs after this")
    b.add_argument("--kernels", default="cupy_naive,naive,tiled")
    b.add_argument("--no-progress", action="store_true")
    b.add_argument("--compare", action="store_true",
                   help="side by side: numba naive/tiled/fast, cupy naive, torch SDPA math/efficient "
                        "(gpu_kernels.compare; default N 1024,4096,16384; writes compare_<tag>.csv)")

    f = sub.add_parser("profile", help="Nsight Compute counters per kernel launch, next to simlib")
    f.add_argument("--out", default="data/measurements")
    f.add_argument("--tag", default="h200")
    f.add_argument("--seq-lens", type=_int_list, default=[1024, 4096, 16384])
    f.add_argument("--head-dims", type=_int_list, default=[64, 128])
    f.add_argument("--batch", type=_positive_int, default=1)
    f.add_argument("--heads", type=_positive_int, default=4)
    f.add_argument("--kernels", default="naive,tiled")
    f.add_argument("--ncu", default=None, help="path of ncu (default: found on PATH or under /opt/nvidia)")
    f.add_argument("--timeout-s", type=_positive_float, default=240.0, help="per ncu process")
    f.add_argument("--no-progress", action="store_true")

    a = sub.add_parser("asm", help="PTX of the timing and counting builds: atomics, float64, local memory")
    a.add_argument("--head-dims", type=_int_list, default=[64, 128])
    a.add_argument("--json", dest="json_out", default=None, help="also write the table to this JSON file")
    return p


def _kernel_list(text, allowed):
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in allowed]
    if not names or bad:
        raise UsageError(f"argument --kernels: unknown kernel(s) {bad or text!r}; choose from {', '.join(allowed)}")
    return names


def _validate_run(args):
    """All checks that need no numba: shape, tiles, and which options belong to which kernel."""
    if args.kernel == "naive" and (args.block_rows is not None or args.block_cols is not None):
        raise UsageError("argument --block-rows/--block-cols: only for --kernel tiled")
    if args.kernel == "tiled" and (args.matmul_tile is not None or args.softmax_threads is not None):
        raise UsageError("argument --matmul-tile/--softmax-threads: only for --kernel naive")
    try:
        shape = checks.check_shape(args.batch, args.heads, args.seq_len, args.head_dim, kv_heads=args.kv_heads,
                                   query_len=args.query_len, causal=args.causal)
        if args.kernel == "tiled":
            br, bc = checks.resolve_tiled_blocks(shape, args.block_rows, args.block_cols)
            params = {"block_rows": br, "block_cols": bc}
        else:
            t, ts = checks.resolve_naive_params(shape, args.matmul_tile, args.softmax_threads,
                                                simulator=args.simulate)
            params = {"matmul_tile": t, "softmax_threads": ts}
    except ValueError as e:
        raise UsageError(str(e)) from None
    return shape, params


def _select_backend(simulate: bool):
    """Set the simulator switch, then import numba (never before this point)."""
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if simulate else "0"
    if simulate:
        # The simulator runs a Python thread per CUDA thread and a polling manager; a short GIL
        # switch interval makes its syncthreads() rounds far cheaper.
        sys.setswitchinterval(5e-4)
    import warnings

    from numba import cuda

    try:
        from numba.core.errors import NumbaPerformanceWarning

        warnings.simplefilter("ignore", NumbaPerformanceWarning)
    except ImportError:  # pragma: no cover
        pass
    return cuda


def _device_name(cuda, simulate):
    if simulate:
        return "numba CUDA simulator"
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def cmd_run(args) -> int:
    shape, params = _validate_run(args)
    cuda = _select_backend(args.simulate)
    if not args.simulate and not cuda.is_available():
        raise UsageError(NO_GPU)

    from .counting import COUNT_KEYS
    from .reference import attention_reference, random_qkv, rel_error

    q, k, v = random_qkv(shape.batch, shape.heads, shape.seq_len, shape.head_dim, seed=args.seed,
                         logit_scale=args.logit_scale, kv_heads=shape.kv_heads, query_len=shape.query_len)
    if args.kernel == "tiled":
        from .tiled import run_tiled

        res = run_tiled(q, k, v, count=args.count, causal=args.causal, **params)
    else:
        from .naive import run_naive

        res = run_naive(q, k, v, count=args.count, causal=args.causal, **params)
    ref_o, ref_lse = attention_reference(q, k, v, causal=args.causal)
    errors = {"o": rel_error(res.o, ref_o)}
    if args.kernel == "tiled":
        errors["lse"] = rel_error(res.lse, ref_lse)
    ok = all(e <= TOLERANCE for e in errors.values())

    out = {
        "kernel": args.kernel,
        "device": _device_name(cuda, args.simulate),
        "batch": shape.batch, "heads": shape.heads, "seq_len": shape.seq_len, "head_dim": shape.head_dim,
        "kv_heads": shape.n_kv_heads, "query_len": shape.nq, "causal": args.causal,
        "params": params,
        "logit_scale": args.logit_scale,
        "rel_error": errors,
        "tolerance": TOLERANCE,
    }
    if args.count:
        from .model import diff_counts, simlib_prediction

        predicted = simlib_prediction(args.kernel, shape.batch, shape.heads, shape.seq_len, shape.head_dim,
                                      kv_heads=shape.kv_heads, causal=args.causal, query_len=shape.query_len,
                                      **params)
        diff = diff_counts(res.counts, predicted)
        out.update(counts=res.counts, predicted=predicted, diff=diff)
        ok = ok and all(v == 0 for v in diff.values())
    out["ok"] = ok

    if args.json:
        print(json.dumps(out))
    else:
        ptxt = " ".join(f"{k}={v}" for k, v in params.items())
        variant = "".join([f" H_kv={shape.kv_heads}" if shape.kv_heads is not None else "",
                           f" N_q={shape.query_len}" if shape.query_len is not None else "",
                           " causal" if args.causal else ""])
        print(f"kernel {args.kernel} on {out['device']}: B={shape.batch} H={shape.heads} "
              f"N={shape.seq_len} d={shape.head_dim}{variant} {ptxt}")
        for name, e in errors.items():
            flag = "ok" if e <= TOLERANCE else "FAIL"
            print(f"rel. error {name:<4} {e:.3e}  (limit {TOLERANCE:.0e})  {flag}")
        if args.count:
            print(f"{'counter':<18}{'kernel':>16}{'simlib':>16}{'diff':>8}")
            for key in COUNT_KEYS:
                print(f"{key:<18}{out['counts'][key]:>16}{out['predicted'][key]:>16}{out['diff'][key]:>8}")
        print("OK" if ok else "FAIL")
    return 0 if ok else 1


def _require_gpu(command):
    cuda = _select_backend(False)
    if not cuda.is_available():
        raise UsageError(NO_GPU_ONLY.format(cmd=command))
    return cuda


def cmd_bench(args) -> int:
    kernels = _kernel_list(args.kernels, ("cupy_naive", "naive", "tiled"))
    _require_gpu("bench")
    if args.compare:
        from .compare import run_compare

        default_n = build_parser().parse_args(["bench"]).seq_lens
        seq_lens = [1024, 4096, 16384] if args.seq_lens == default_n else args.seq_lens
        csv_path, _, _ = run_compare(out_dir=args.out, tag=args.tag, seq_lens=seq_lens, head_dims=args.head_dims,
                                     batch=args.batch, heads=args.heads, reps=args.reps,
                                     progress=not args.no_progress)
        print(f"wrote {csv_path}")
        return 0
    from .bench import run_bench

    csv_path, _ = run_bench(out_dir=args.out, tag=args.tag, seq_lens=args.seq_lens, head_dims=args.head_dims,
                            batch=args.batch, heads=args.heads, min_reps=args.reps, budget_s=args.budget_s,
                            kernels=kernels, progress=not args.no_progress)
    print(f"wrote {csv_path}")
    return 0


def cmd_profile(args) -> int:
    kernels = _kernel_list(args.kernels, ("naive", "tiled"))
    _require_gpu("profile")
    from .profile import run_profile

    try:
        csv_path, _ = run_profile(out_dir=args.out, tag=args.tag, seq_lens=args.seq_lens, head_dims=args.head_dims,
                                  batch=args.batch, heads=args.heads, kernels=kernels, ncu=args.ncu,
                                  timeout_s=args.timeout_s, progress=not args.no_progress)
    except RuntimeError as e:  # ncu missing or no counters (e.g. a sandbox without profiler access)
        sys.stderr.write(f"error: {e}\n")
        return 1
    print(f"wrote {csv_path}")
    return 0


def cmd_asm(args) -> int:
    _select_backend(False)
    from .asm import check_report, format_report, ptx_report

    rows = []
    for d in args.head_dims:
        rows += ptx_report(head_dim=d)
    print(format_report(rows))
    problems = check_report(rows)
    for p in problems:
        print("PROBLEM:", p)
    if args.json_out:
        from .provenance import write_json_atomic

        write_json_atomic(args.json_out, {"rows": rows, "problems": problems})
    return 1 if problems else 0


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return {"run": cmd_run, "bench": cmd_bench, "profile": cmd_profile, "asm": cmd_asm}[args.command](args)
    except UsageError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except BrokenPipeError:            # output piped into `head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
