"""The program Nsight Compute profiles: one timing-build launch (three for naive and naive_tc) per shape.

    python -m gpu_kernels.measure.profile_driver --kernel tiled --shapes 1024x64,4096x128 \
        --batch 1 --heads 4 --manifest launches.json

A shape is ``NxD``, optionally followed by ``:bBhH`` (its own batch and heads) and ``:causal``
(``parse_shape``): ``4096x64,4096x128:causal,8192x128:b2h16``. Nothing is printed to stdout (ncu
writes its CSV there); the manifest lists the launches in the order they were made, which is the
order of ncu's result IDs, each with the index of its shape (``case``).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

#: The launches of each tensor-core kernel, in order (bf16 inputs, the kernels' default tiles).
TC_LAUNCHES = {"fa2_tc": ("fa2_tc",), "naive_tc": ("scores", "softmax", "pv"), "fa3_tc": ("fa3_tc",)}
#: The kernels whose launches take causal masking here.
CAUSAL_KERNELS = ("fa3_tc",)


def parse_shape(item, batch, heads):
    """One ``--shapes`` item as a dict (seq_len, head_dim, batch, heads, causal); a clear ValueError
    naming the item otherwise.

    >>> parse_shape("8192x128:b2h16:causal", 1, 4)
    {'seq_len': 8192, 'head_dim': 128, 'batch': 2, 'heads': 16, 'causal': True}
    """
    parts = item.strip().lower().split(":")
    try:
        n, d = (int(x) for x in parts[0].split("x"))
        case = {"seq_len": n, "head_dim": d, "batch": batch, "heads": heads, "causal": False}
        for part in parts[1:]:
            if part == "causal":
                case["causal"] = True
            elif part.startswith("b") and "h" in part:
                b_text, h_text = part[1:].split("h")
                case["batch"], case["heads"] = int(b_text), int(h_text)
            else:
                raise ValueError(part)
    except ValueError:
        raise ValueError(
            f"--shapes item {item!r}: expected NxD[:bBhH][:causal], e.g. 4096x64:b2h16:causal"
        ) from None
    if min(case["seq_len"], case["head_dim"], case["batch"], case["heads"]) < 1:
        raise ValueError(f"--shapes item {item!r}: sizes must be positive")
    return case


def tc_launch(kernel, q, k, v, base, causal=False):
    """One timing-build launch of fa2_tc or fa3_tc (or naive_tc's three) in bf16; the manifest entries."""
    from numba import cuda

    from ..tensor_core.dtypes import to_bits
    from ..tensor_core.tc_plan import upload

    b, h, n, d = q.shape
    dummy = cuda.to_device(np.zeros(4, dtype=np.int64))
    dq, dk, dv = upload("bf16", q, k, v)
    nan16 = int(to_bits(np.float32(np.nan), "bf16")[0])
    do = cuda.to_device(np.full(b * h * n * d, nan16, np.uint16))
    if kernel == "fa2_tc":
        from ..kernels.fa2_tc import plan_fa2_tc

        plan = plan_fa2_tc(q, k, v, dtype="bf16")
        plan.kernel()  # build the dispatcher before the launch
        plan.launch(dq, dk, dv, do, cuda.to_device(np.full(b * h * n, np.nan, np.float32)), dummy)
        params = {"warps": plan.config.warps, "block_cols": plan.config.block_cols, "dtype": "bf16"}
    elif kernel == "fa3_tc":
        from ..kernels.fa3_tc import plan_fa3_tc

        plan = plan_fa3_tc(q, k, v, dtype="bf16", causal=causal)
        plan.kernel()
        plan.launch(dq, dk, dv, do, cuda.to_device(np.full(b * h * n, np.nan, np.float32)), dummy)
        cfg = plan.config
        params = {
            "warpgroups": cfg.warpgroups,
            "block_cols": cfg.block_cols,
            "overlap": int(cfg.overlap),
            "swizzle": int(cfg.swizzle),
            "causal": int(causal),
            "dtype": "bf16",
        }
    else:
        from ..kernels.naive_tc import plan_naive_tc, row_stride

        plan = plan_naive_tc(q, k, v, dtype="bf16")
        s, pm = (cuda.device_array(b * h * n * row_stride(n), dtype=np.uint16) for _ in range(2))
        plan.launch(dq, dk, dv, s, pm, do, (dummy, dummy, dummy))
        params = {
            "warps": plan.config.warps,
            "block_cols": plan.config.block_cols,
            "softmax_threads": plan.softmax_threads,
            "dtype": "bf16",
        }
    cuda.synchronize()
    finite = bool(np.all((do.copy_to_host() & 0x7F80) != 0x7F80))  # no NaN/inf bit pattern left
    print(f"profiled {kernel} B·H={b * h} N={n} d={d} causal={causal} finite={finite}", file=sys.stderr)
    return [
        {**base, "launch": name, "params": params, "output_finite": finite} for name in TC_LAUNCHES[kernel]
    ]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--kernel", choices=("naive", "tiled", "fa2_tc", "naive_tc", "fa3_tc"), required=True)
    p.add_argument("--shapes", required=True, help="NxD[:bBhH][:causal],...")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--manifest", required=True)
    args = p.parse_args(argv)

    from numba import cuda  # the simulator switch is the caller's (ncu's environment)

    from simlib.safe_write import write_atomic

    from ..device import silence_performance_warning
    from ..kernels.naive import plan_naive
    from ..kernels.tiled import plan_tiled

    silence_performance_warning()

    rng = np.random.default_rng()
    dummy = cuda.to_device(np.zeros(4, dtype=np.int64))
    launches = []
    for index, item in enumerate(args.shapes.split(",")):
        case = parse_shape(item, args.batch, args.heads)
        b, h, n, d = case["batch"], case["heads"], case["seq_len"], case["head_dim"]
        if case["causal"] and args.kernel not in CAUSAL_KERNELS:
            raise SystemExit(f"--shapes {item!r}: causal profiles are for {CAUSAL_KERNELS} only")
        bh = b * h
        q, k, v = (rng.standard_normal((b, h, n, d), dtype=np.float32) for _ in range(3))
        base = {"kernel": args.kernel, "batch": b, "heads": h, "seq_len": n, "head_dim": d, "case": index}
        if args.kernel in TC_LAUNCHES:
            launches += tc_launch(args.kernel, q, k, v, base, causal=case["causal"])
            continue
        dq, dk, dv = (cuda.to_device(x.reshape(bh, n, d)) for x in (q, k, v))
        do = cuda.to_device(np.full((bh, n, d), np.nan, dtype=np.float32))
        if args.kernel == "tiled":
            plan = plan_tiled(q, k, v)
            dl = cuda.to_device(np.full((bh, n), np.nan, dtype=np.float32))
            plan.kernel()  # build the dispatcher before the launch (compilation launches nothing)
            plan.launch(dq, dk, dv, do, dl, dummy)
            params = {"block_rows": plan.block_rows, "block_cols": plan.block_cols}
            launches.append({**base, "launch": "fa2", "params": params})
        else:
            plan = plan_naive(q, k, v)
            ds = cuda.device_array((bh, n, n), dtype=np.float32)
            dp = cuda.device_array((bh, n, n), dtype=np.float32)
            plan.launch(dq, dk, dv, ds, dp, do, (dummy, dummy, dummy))
            params = {"matmul_tile": plan.matmul_tile, "softmax_threads": plan.softmax_threads}
            launches += [{**base, "launch": name, "params": params} for name in ("qk", "softmax", "pv")]
        cuda.synchronize()
        finite = bool(np.isfinite(do.copy_to_host()).all())
        for entry in launches[-(1 if args.kernel == "tiled" else 3) :]:
            entry["output_finite"] = finite
        print(f"profiled {args.kernel} N={n} d={d} finite={finite}", file=sys.stderr)
        del dq, dk, dv, do
    write_atomic(args.manifest, json.dumps(launches))


if __name__ == "__main__":
    main()
