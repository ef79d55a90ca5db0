"""The program Nsight Compute profiles: one timing-build launch (three for naive and naive_tc) per shape.

    python -m gpu_kernels.measure.profile_driver --kernel tiled --shapes 1024x64,4096x128 \
        --batch 1 --heads 4 --manifest launches.json

Nothing is printed to stdout (ncu writes its CSV there); the manifest lists the launches in the
order they were made, which is the order of ncu's result IDs.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

#: The launches of each tensor-core kernel, in order (bf16 inputs, the kernels' default tiles).
TC_LAUNCHES = {"fa2_tc": ("fa2_tc",), "naive_tc": ("scores", "softmax", "pv")}


def tc_launch(kernel, q, k, v, base):
    """One timing-build launch of fa2_tc (or naive_tc's three) in bf16; the manifest entries."""
    from numba import cuda

    from ..tensor_core.dtypes import to_bits
    from ..tensor_core.plan import upload

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
    print(f"profiled {kernel} N={n} d={d} finite={finite}", file=sys.stderr)
    return [
        {**base, "launch": name, "params": params, "output_finite": finite} for name in TC_LAUNCHES[kernel]
    ]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--kernel", choices=("naive", "tiled", "fa2_tc", "naive_tc"), required=True)
    p.add_argument("--shapes", required=True, help="NxD,NxD,...")
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
    b, h = args.batch, args.heads
    bh = b * h
    dummy = cuda.to_device(np.zeros(4, dtype=np.int64))
    launches = []
    for item in args.shapes.split(","):
        n, d = (int(x) for x in item.lower().split("x"))
        q, k, v = (rng.standard_normal((b, h, n, d), dtype=np.float32) for _ in range(3))
        dq, dk, dv = (cuda.to_device(x.reshape(bh, n, d)) for x in (q, k, v))
        do = cuda.to_device(np.full((bh, n, d), np.nan, dtype=np.float32))
        base = {"kernel": args.kernel, "batch": b, "heads": h, "seq_len": n, "head_dim": d}
        if args.kernel in TC_LAUNCHES:
            launches += tc_launch(args.kernel, q, k, v, base)
            continue
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
