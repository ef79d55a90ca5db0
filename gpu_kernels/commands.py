"""What each ``python -m gpu_kernels`` subcommand does, after ``cli.py`` has parsed its arguments.

Each ``cmd_*`` checks what it can without numba (names, shapes, tiles, logit scale, host memory,
output destinations), then asks for the GPU (``device.require_gpu``: one line if there is none),
then works. Bad input raises ``UsageError`` (one line, exit 2 in ``cli.main``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from simlib.cli_values import NoLoneDashValue
from simlib.units import UNIT_ROUNDOFF

from . import checks
from .device import NO_GPU, NoGPU, require_gpu, select_backend
from .kernels import KERNELS
from .tensor_core.dtypes import round_to

TOLERANCE = 1e-5  # relative error allowed against the float64 reference (fp32 arithmetic)


class UsageError(Exception):
    """A bad argument: one line on stderr, exit code 2."""


class OneLineParser(NoLoneDashValue, argparse.ArgumentParser):
    """argparse whose usage errors are a UsageError (one line, exit 2), not a usage block: every
    parser of `python -m gpu_kernels` (cli.py, measure/side_by_side.py)."""

    def error(self, message):
        raise UsageError(message)


def _name_list(text, allowed, option):
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in allowed]
    if not names or bad:
        raise UsageError(
            f"argument {option}: unknown name(s) {bad or text!r}; choose from {', '.join(allowed)}"
        )
    return names


def _validate_run(args):
    """All checks that need no numba: shape, tiles, and which options belong to which kernel."""
    tc = KERNELS[args.kernel].sixteen_bit
    if not tc and (args.dtype is not None or args.warps is not None):
        raise UsageError("argument --dtype/--warps: only for --kernel fa2_tc, naive_tc or decode_tc")
    if args.kernel != "decode_tc" and (args.splits is not None or args.stages is not None):
        raise UsageError("argument --splits/--stages: only for --kernel decode_tc")
    if tc and (
        args.block_rows is not None or args.matmul_tile is not None or args.softmax_threads is not None
    ):
        raise UsageError(
            "argument --block-rows/--matmul-tile/--softmax-threads: not for the tensor-core kernels "
            "(they take --warps and --block-cols)"
        )
    if tc:
        return _validate_tc_run(args)
    if args.kernel == "naive" and (args.block_rows is not None or args.block_cols is not None):
        raise UsageError("argument --block-rows/--block-cols: only for --kernel tiled")
    if args.kernel == "tiled" and (args.matmul_tile is not None or args.softmax_threads is not None):
        raise UsageError("argument --matmul-tile/--softmax-threads: only for --kernel naive")
    if args.kernel not in ("naive", "tiled") and any(
        getattr(args, name) is not None
        for name in ("block_rows", "block_cols", "matmul_tile", "softmax_threads")
    ):
        raise UsageError(
            f"argument --block-rows/--block-cols/--matmul-tile/--softmax-threads: not for --kernel {args.kernel}"
        )
    shape = _checked_shape(args)
    try:
        if args.kernel == "tiled":
            br, bc = checks.resolve_tiled_blocks(shape, args.block_rows, args.block_cols)
            params = {"block_rows": br, "block_cols": bc}
        elif args.kernel == "naive":
            t, ts = checks.resolve_naive_params(
                shape, args.matmul_tile, args.softmax_threads, simulator=args.simulate
            )
            params = {"matmul_tile": t, "softmax_threads": ts}
        else:  # a kernel without mapping flags runs its own defaults
            params = {}
    except ValueError as e:
        raise UsageError(str(e)) from None
    _check_logit_scale(args.logit_scale, shape.head_dim)
    _check_host_memory(shape, args.kernel)
    return shape, params


def _checked_shape(args):
    """The run's shape from its flags (checks.check_shape), a bad value as a UsageError."""
    try:
        return checks.check_shape(
            args.batch,
            args.heads,
            args.seq_len,
            args.head_dim,
            kv_heads=args.kv_heads,
            query_len=args.query_len,
            causal=args.causal,
        )
    except ValueError as e:
        raise UsageError(str(e)) from None


def _validate_tc_run(args):
    """Shape and config of fa2_tc / naive_tc, checked before numba is imported (the configs are plain
    dataclasses; their modules import numba, so only the check's rules are used here via a config)."""
    if args.kernel == "decode_tc" and args.query_len is None:
        args.query_len = 1  # one new token per query head
    shape = _checked_shape(args)
    if args.head_dim not in (64, 128):
        raise UsageError(
            f"argument --head-dim: the tensor-core kernels support 64 and 128, got {args.head_dim}"
        )
    _check_logit_scale(args.logit_scale, shape.head_dim)
    _check_host_memory(shape, "naive" if args.kernel == "naive_tc" else "tiled")
    if args.kernel == "decode_tc":
        return shape, _decode_params(args, shape)
    if args.kernel == "fa3_tc":  # the kernel's defaults, from simlib's schedule (no numba import here)
        from simlib.schedules.fa3_tc import (
            DEFAULT_BLOCK_COLS,
            DEFAULT_OVERLAP,
            DEFAULT_PINGPONG,
            DEFAULT_SWIZZLE,
            DEFAULT_WARPGROUPS,
        )

        d = shape.head_dim
        g = args.warpgroups or DEFAULT_WARPGROUPS
        return shape, {
            "dtype": args.dtype or "bf16",
            "warpgroups": g,
            "block_cols": args.block_cols or DEFAULT_BLOCK_COLS[d],
            "overlap": DEFAULT_OVERLAP[d],
            "swizzle": DEFAULT_SWIZZLE,
            "pingpong": DEFAULT_PINGPONG[d] and g == 2,  # two groups take turns
        }
    params = {"dtype": args.dtype or "bf16", "warps": args.warps or 4, "block_cols": args.block_cols or 64}
    if args.kernel == "fa2_tc":  # the kernel's defaults, from simlib's table (no numba import here)
        from simlib.schedules.fa2_tc import DEFAULT_BLOCK_COLS, DEFAULT_Q_RELOAD, DEFAULT_WARP_ROWS

        d = shape.head_dim
        params["block_cols"] = args.block_cols or DEFAULT_BLOCK_COLS[d]
        params.update(warp_rows=DEFAULT_WARP_ROWS, q_reload=DEFAULT_Q_RELOAD[d])
    return shape, params


def _decode_params(args, shape):
    """decode_tc's mapping, checked by simlib's decode_tc schedule (no numba); splits default to the
    kernel's choice from simlib.decode_time."""
    from simlib import Workload
    from simlib.schedules.decode_tc import SCHEDULE

    if args.causal:
        raise UsageError("argument --causal: a decode step attends the whole cache (decode_tc has no mask)")
    dtype = args.dtype or "bf16"
    wl = Workload(
        shape.seq_len, shape.head_dim, shape.batch, shape.heads, dtype=dtype, kv_heads=shape.kv_heads,
        query_len=shape.nq,
    )  # fmt: skip
    splits = args.splits
    if splits is None:
        from simlib.schedules.decode_tc import default_splits

        splits = default_splits(
            shape.batch, shape.n_kv_heads, shape.seq_len, shape.head_dim, wl.group * wl.nq, dtype
        )
    try:  # with the splits known: the default tail is the splits' (cluster at 2)
        m = SCHEDULE.build(wl, None, args.warps, args.block_cols, splits, args.stages)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return {
        "dtype": dtype,
        "warps": m.warps,
        "block_cols": m.block_cols,
        "stages": m.stages,
        "splits": splits,
        "tail": m.tail,
    }


def _dims(shape):
    """(B, H, N, d): the positional shape every runner, reference and prediction takes."""
    return shape.batch, shape.heads, shape.seq_len, shape.head_dim


def _variant(shape):
    """The GQA and query-length keywords that go with `_dims`."""
    return {"kv_heads": shape.kv_heads, "query_len": shape.query_len}


def _run_kernel(args, shape, params):
    """The registered kernel on fresh random inputs (a 16-bit one's rounded to its dtype first): its
    errors against the float64 reference, their limits, its counts (or None) and simlib's prediction
    for the same configuration (or None)."""
    from .prediction import prediction
    from .reference import attention_reference, random_qkv, rel_error

    kernel = KERNELS[args.kernel]
    mapping = dict(params)
    dtype = mapping.pop("dtype", None)
    config = None
    if kernel.sixteen_bit:
        try:
            config = kernel.config_for(shape.head_dim, **mapping)
        except ValueError as e:
            raise UsageError(str(e)) from None
    q, k, v = random_qkv(*_dims(shape), seed=args.seed, logit_scale=args.logit_scale, **_variant(shape))
    if kernel.sixteen_bit:
        q, k, v = (round_to(x, dtype) for x in (q, k, v))
        res = kernel.run(q, k, v, dtype=dtype, config=config, count=args.count, causal=args.causal, **mapping)
    else:
        res = kernel.run(q, k, v, count=args.count, causal=args.causal, **mapping)
    ref_o, ref_lse = attention_reference(q, k, v, causal=args.causal)
    errors = {"o": rel_error(res.o, ref_o)}
    if getattr(res, "lse", None) is not None:
        errors["lse"] = rel_error(res.lse, ref_lse)
    if kernel.sixteen_bit:  # O rounded to the dtype (tolerance_u times); L in fp32
        tols = {"o": kernel.tolerance_u * UNIT_ROUNDOFF[dtype], "lse": 1e-5}
        tols = {key: tols[key] for key in errors}
    else:
        tols = {key: TOLERANCE for key in errors}
    predicted = None
    if args.count:
        chosen = {p: getattr(res, p) for p in kernel.parameters if p not in mapping and hasattr(res, p)}
        predicted = prediction(
            args.kernel,
            *_dims(shape),
            dtype=dtype,
            causal=args.causal,
            **_variant(shape),
            **mapping,
            **chosen,
        )
    return errors, tols, res.counts, predicted


#: |x| of a standard-normal input stays below this (P(|x| > 8) ≈ 1e-15 per element).
INPUT_BOUND = 8.0


def _check_logit_scale(scale, head_dim):
    """Refuse a --logit-scale whose scores could leave fp32: |s| ≤ scale·8·8·d/√d."""
    import math

    import numpy as np

    largest = scale * INPUT_BOUND * INPUT_BOUND * math.sqrt(head_dim)
    if not largest < float(np.finfo(np.float32).max):
        raise UsageError(
            f"argument --logit-scale: {scale:g} lets fp32 scores reach {largest:.3g}, beyond fp32's "
            f"{float(np.finfo(np.float32).max):.3g}; use a smaller scale"
        )


def _check_host_memory(shape, kernel):
    """Refuse a run whose host arrays (fp32 Q, K, V, O and the float64 reference's N_q×N_k scores of
    one head, twice; naive: S and P too) exceed this machine's memory, before allocating any."""
    w = shape
    need = (
        4 * (2 * w.batch_heads * w.nq + 2 * w.batch * w.n_kv_heads * w.nk) * w.head_dim + 2 * 8 * w.nq * w.nk
    )
    if kernel == "naive":
        need += 2 * 4 * w.batch_heads * w.nq * w.nk
    try:
        have = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX system
        return
    if need > have:
        raise UsageError(
            f"arguments --batch, --heads, --seq-len: this run needs about {need / 1e9:,.1f} GB of host memory "
            f"(inputs and the float64 reference), this machine has {have / 1e9:,.1f} GB"
        )


def _check_specs(text):
    """'variant:N:d,...' with variant fast, tiled or torch_efficient and positive N, d."""
    import re

    for spec in text.split(","):
        parts = spec.split(":")
        ok = len(parts) == 3 and parts[0] in ("fast", "tiled", "torch_efficient")
        ok = ok and all(re.fullmatch(r"[1-9][0-9]{0,9}", p, re.ASCII) for p in parts[1:])  # ASCII digits
        if not ok:
            raise UsageError(
                f"argument --specs: {spec!r} is not variant:N:d (variant fast, tiled or torch_efficient)"
            )


def _device_name(cuda, simulate):
    if simulate:
        return "numba CUDA simulator"
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def cmd_run(args) -> int:
    shape, params = _validate_run(args)
    if args.simulate:
        cuda = select_backend(True)
    else:
        try:
            cuda = require_gpu("run")
        except NoGPU:
            raise UsageError(NO_GPU) from None

    errors, tols, counts, predicted = _run_kernel(args, shape, params)
    return _report_run(args, cuda, shape, params, errors, tols, counts, predicted)


def _report_run(args, cuda, shape, params, errors, tols, counts, predicted):
    """Print the run's table (or JSON): errors against their limits, counters against simlib."""
    from .counting import COUNT_KEYS

    ok = all(errors[key] <= tols[key] for key in errors)
    out = {
        "kernel": args.kernel,
        "device": _device_name(cuda, args.simulate),
        "batch": shape.batch,
        "heads": shape.heads,
        "seq_len": shape.seq_len,
        "head_dim": shape.head_dim,
        "kv_heads": shape.n_kv_heads,
        "query_len": shape.nq,
        "causal": args.causal,
        "params": params,
        "logit_scale": args.logit_scale,
        "rel_error": errors,
        "tolerance": tols,
    }
    if args.count:
        from .prediction import diff_counts

        diff = diff_counts(counts, predicted)
        out.update(counts=counts, predicted=predicted, diff=diff)
        ok = ok and all(v == 0 for v in diff.values())
    out["ok"] = ok

    if args.json:
        print(json.dumps(out))
    else:
        ptxt = " ".join(f"{k}={v}" for k, v in params.items())
        variant = "".join(
            [
                f" H_kv={shape.kv_heads}" if shape.kv_heads is not None else "",
                f" N_q={shape.query_len}" if shape.query_len is not None else "",
                " causal" if args.causal else "",
            ]
        )
        print(
            f"kernel {args.kernel} on {out['device']}: B={shape.batch} H={shape.heads} "
            f"N={shape.seq_len} d={shape.head_dim}{variant} {ptxt}"
        )
        for name, e in errors.items():
            flag = "ok" if e <= tols[name] else "FAIL"
            print(f"rel. error {name:<4} {e:.3e}  (limit {tols[name]:.1e})  {flag}")
        if args.count:
            print(f"{'counter':<18}{'kernel':>16}{'simlib':>16}{'diff':>8}")
            for key in COUNT_KEYS:
                print(f"{key:<18}{out['counts'][key]:>16}{out['predicted'][key]:>16}{out['diff'][key]:>8}")
        print("OK" if ok else "FAIL")
    return 0 if ok else 1


def _configs(args):
    """{d: FastConfig} from --configs JSON and --tuned FILE, checked before any work."""
    from .measure.tuning import configs_from_json, configs_from_tune_file

    try:
        cfgs = configs_from_json(args.configs)
    except (ValueError, TypeError, AttributeError) as e:
        raise UsageError(f"argument --configs: not JSON of {{d: FastConfig arguments}} ({e})") from None
    if getattr(args, "tuned", ""):
        try:
            cfgs = {**configs_from_tune_file(args.tuned), **cfgs}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise UsageError(
                f"argument --tuned: cannot read a tune result from {args.tuned!r} ({e})"
            ) from None
    for cfg in cfgs.values():
        try:
            cfg.check()
        except ValueError as e:
            raise UsageError(f"argument --configs: {e}") from None
    return cfgs


def _prepare_out(args):
    """The output folder and run id, checked before any work (and before numba is imported); the
    folder is created by ``_make_out`` once the GPU is there."""
    from measurements.provenance import check_output_dir, set_run_id

    try:
        check_output_dir(args.out)
        if getattr(args, "run_id", None):
            set_run_id(args.run_id)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _make_out(args):
    os.makedirs(args.out, exist_ok=True)


def cmd_harness(args) -> int:
    from .measure.variants import VARIANTS

    variants = _name_list(args.variants, VARIANTS, "--variants")
    configs = _configs(args)
    _prepare_out(args)
    require_gpu(args.command)
    _make_out(args)
    from .measure.harness import run

    csv_path, results = run(
        out_dir=args.out,
        prefix=args.command,
        tag=args.tag,
        seq_lens=args.seq_lens,
        head_dims=args.head_dims,
        batch=args.batch,
        heads=args.heads,
        reps=args.reps,
        variants=variants,
        fast_configs=configs,
        budget_s=args.budget_s,
        progress=not args.no_progress,
        seed=args.seed,
    )
    print(f"wrote {csv_path}")
    return 0 if all(r.get("status") != "ok" or r.get("ok") for r in results) else 1


def cmd_tune(args) -> int:
    _prepare_out(args)
    require_gpu("tune")
    _make_out(args)
    import json

    from measurements.provenance import provenance, write_measurement

    from .measure.tuning import best_configs, config_dict, sweep_configs, tune

    cfgs = sweep_configs()
    res = tune(cfgs, seq_lens=args.seq_lens, reps=args.reps, progress=not args.no_progress)
    best = best_configs(res, cfgs)
    path = os.path.join(args.out, f"tune_{args.tag}.json")
    text = json.dumps(
        {"results": res, "best": {str(d): config_dict(c) for d, c in best.items()}}, indent=1, default=str
    )
    write_measurement(path, text, provenance({"what": "fast kernel configuration sweep"}))
    for d, cfg in best.items():
        print(f"best d={d}: {cfg}")
    return 0


def cmd_ncu(args) -> int:
    _check_specs(args.specs)
    if args.sections_spec:
        _check_specs(args.sections_spec)
    configs = _configs(args)
    _prepare_out(args)
    require_gpu("ncu")
    _make_out(args)
    from .measure.ncu import run_ncu

    rc = run_ncu(
        args.specs.split(","),
        args.out,
        args.tag,
        configs,
        timeout_s=args.timeout_s,
        sections_spec=args.sections_spec,
    )
    print(f"ncu returncode {rc}")
    return 0 if rc == 0 else 1


def cmd_launch(args) -> int:
    _check_specs(args.specs)
    configs = _configs(args)
    require_gpu("launch")
    from .measure.ncu import launch_once

    launch_once(args.specs.split(","), configs)
    return 0


def cmd_profile(args) -> int:
    kernels = _name_list(args.kernels, ("naive", "tiled", "fa2_tc", "naive_tc", "fa3_tc"), "--kernels")
    _prepare_out(args)
    require_gpu("profile")
    _make_out(args)
    from .measure.ncu_profile import run_profile

    try:
        csv_path = run_profile(
            out_dir=args.out,
            tag=args.tag,
            seq_lens=args.seq_lens,
            head_dims=args.head_dims,
            batch=args.batch,
            heads=args.heads,
            kernels=kernels,
            ncu=args.ncu,
            timeout_s=args.timeout_s,
            progress=not args.no_progress,
            shapes=args.shapes,
            extra_metrics=[m for m in args.extra_metrics.split(",") if m.strip()],
            counted_build=not args.no_counted,
        )
    except RuntimeError as e:  # ncu missing or no counters (e.g. a sandbox without profiler access)
        sys.stderr.write(f"error: {e}\n")
        return 1
    print(f"wrote {csv_path}")
    return 0


def cmd_ceilings(args) -> int:
    """The card's ceilings in one file: mma.sync (bf16, fp16), FFMA, copy bandwidth."""
    _prepare_out(args)
    require_gpu("ceilings")
    _make_out(args)
    from measurements.provenance import provenance, write_measurement

    from .measure.ceilings import measure_copy_bandwidth, measure_ffma_peak, measure_mma_peak

    result = {
        "mma_bf16": measure_mma_peak("bf16"),
        "mma_fp16": measure_mma_peak("fp16"),
        "ffma_fp32": measure_ffma_peak(),
        "copy": measure_copy_bandwidth(),
    }
    path = os.path.join(args.out, f"ceilings_{args.tag}.json")
    write_measurement(
        path, json.dumps(result, indent=1), provenance({"what": "the card's ceilings, measured"})
    )
    for name in ("mma_bf16", "mma_fp16", "ffma_fp32"):
        print(
            f"{name}: {result[name]['tflops']:.1f} TFLOP/s"
            + (f" (output correct: {result[name]['correct']})" if "correct" in result[name] else "")
        )
    if result["copy"]:
        print(f"copy: {result['copy']['gbps']:.0f} GB/s")
    return 0 if all(result[k]["correct"] for k in ("mma_bf16", "mma_fp16")) else 1


def cmd_asm(args) -> int:
    if args.json_out:
        from measurements.provenance import set_run_id
        from simlib.safe_write import check_destination

        try:
            check_destination(args.json_out, "--json")
            if args.run_id:
                set_run_id(args.run_id)
        except ValueError as e:
            raise UsageError(str(e)) from None
    require_gpu("asm")
    from .ptx_check import check_report, format_report, ptx_report

    rows = []
    for d in args.head_dims:
        rows += ptx_report(head_dim=d)
    print(format_report(rows))
    problems = check_report(rows)
    for p in problems:
        print("PROBLEM:", p)
    if args.json_out:
        from measurements.provenance import provenance, write_measurement

        write_measurement(
            args.json_out,
            json.dumps({"rows": rows, "problems": problems}, indent=1),
            provenance({"what": "PTX of the timing and counting builds"}),
        )
    return 1 if problems else 0


COMMANDS = {
    "run": cmd_run,
    "bench": cmd_harness,
    "compare": cmd_harness,
    "tune": cmd_tune,
    "ncu": cmd_ncu,
    "launch": cmd_launch,
    "profile": cmd_profile,
    "asm": cmd_asm,
    "ceilings": cmd_ceilings,
}
