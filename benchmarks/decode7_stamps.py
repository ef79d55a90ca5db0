# ruff: noqa: B023  (each shape's launch closure is called only inside its own loop iteration)
"""Where a decode step's blocks spend their time, from %globaltimer stamps in the split kernel (decode7).

    python benchmarks/decode7_stamps.py --out DIR [--launches 30]

decode_tc's stamps build (``split_kernel(..., stamps=True)``: the same kernel, thread 0 of every block
writes the GPU's nanosecond clock at ``decode_tc.STAMP_POINTS``, one more block barrier after the
partials' stores) at the default config and splits of each shape, on input sets rotated beyond the L2,
one launch at a time (synchronized: no launch queue, so the times are the kernel's own, from its first
block's start). Per launch, times relative to the first block's start: each phase of every block
(the first tile's round trip, the stream, the last tile's math, the merge, the partial's stores, the
arrival, the combine), when the last block's stream ends, and when the last block ends. The first
launch's O is checked against fp32 attention. Writes decode7_stamps.csv (every block of every launch)
and decode7_stamps_summary.csv (+ provenance sidecars) and prints the summary last.
"""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import sys

SHAPES = [  # (B, H, H_kv, L, d, q_len, splits): one grid of 128 blocks at 134 MB, 34 MB and 268 MB; d = 64
    (1, 32, 8, 32768, 128, 1, 16),
    (1, 32, 8, 8192, 128, 1, 16),
    (1, 32, 8, 65536, 128, 1, 16),
    (4, 64, 8, 16384, 64, 1, 4),
]
PHASES = [  # (name, from point, to point)
    ("first_tile", "start", "tile0"),
    ("stream", "tile0", "last_tile"),
    ("last_math", "last_tile", "math_done"),
    ("merge_smem", "math_done", "merge_in_smem"),
    ("merge_store", "merge_in_smem", "partial_stored"),
    ("arrival", "partial_stored", "arrived"),
    ("combine", "arrived", "end"),
]


def summarize(blocks, points):
    """One launch's stamps (a list of per-block dicts point → ns, plus "combiner") → a dict of µs: the
    start spread, every phase's median and max over the blocks (the combine over the combiners only),
    when the last stream ends and when the last block ends (from the first start), and the combiners'
    wait for their unit's other blocks folded into "arrival"."""
    t0 = min(b["start"] for b in blocks)
    out = {"start_spread": (max(b["start"] for b in blocks) - t0) / 1e3}
    for name, a, z in PHASES:
        sel = [b for b in blocks if b["combiner"]] if name == "combine" else blocks
        vals = [(b[z] - b[a]) / 1e3 for b in sel]
        out[f"{name}_med"] = statistics.median(vals)
        out[f"{name}_max"] = max(vals)
    out["last_stream_end"] = (max(b["last_tile"] for b in blocks) - t0) / 1e3
    out["last_math_done"] = (max(b["math_done"] for b in blocks) - t0) / 1e3
    out["last_partial"] = (max(b["partial_stored"] for b in blocks) - t0) / 1e3
    out["last_end"] = (max(b["end"] for b in blocks) - t0) / 1e3
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--launches", type=int, default=30)
    p.add_argument("--shapes", default="", help="indices into SHAPES, e.g. 0,3 (default: all)")
    a = p.parse_args(argv)
    shapes = [SHAPES[int(i)] for i in a.shapes.split(",")] if a.shapes else SHAPES

    import numpy as np
    import torch
    from numba import cuda

    from gpu_kernels.device import select_backend

    select_backend(False)
    from gpu_kernels.kernels import decode_tc
    from gpu_kernels.measure import decode_side_by_side as dsbs
    from gpu_kernels.measure import torch_views
    from measurements.provenance import provenance, write_measurement

    points = decode_tc.STAMP_POINTS
    raw, summary = [], []
    for b, h, hkv, n, d, ql, s in shapes:
        sh = dsbs.DecodeShape("bf16", b, h, hkv, ql, n, d, torch)
        rr = (h // hkv) * ql
        cfg = decode_tc.default_config(d, s)
        plan = decode_tc.DecodePlan((b, h, hkv, ql, n, d), cfg, "bf16", s)
        made, units = plan.splits_made, plan.units
        kern = decode_tc.split_kernel(cfg, "bf16", -(-rr // 16), False, False, plan.cluster, True)
        decode_tc.allow_dynamic_smem(kern, plan.smem_bytes, decode_tc.split_signature())
        n_part, n_lse = plan.partial_sizes()
        pv = torch_views.bits_view(torch.empty(n_part, device="cuda", dtype=torch.float32))
        lv = torch_views.bits_view(torch.empty(n_lse, device="cuda", dtype=torch.float32))
        stamps = cuda.to_device(np.zeros(made * units * decode_tc.STAMPS, np.int64))
        arrivals = decode_tc.arrival_counts(units)

        def launch(i):
            q, k, v = sh.views[i % sh.n_sets]
            kern[(made, units), cfg.threads, 0, plan.smem_bytes](
                q, k, v, sh.o_view, pv, lv, stamps, arrivals, n, plan.chunk, made, rr
            )
            return sh.out

        _, err = torch_views.checked_first_call(sh, launch, torch)
        ok = err < torch_views.tolerance("bf16")
        for i in range(2):  # warm-up
            launch(i)
        cuda.synchronize()
        per_launch = []
        for it in range(a.launches):
            launch(it)
            cuda.synchronize()
            st = stamps.copy_to_host().reshape(units, made, decode_tc.STAMPS)
            blocks = []
            for uu in range(units):
                for sp in range(made):
                    rec = {pt: int(st[uu, sp, j]) for j, pt in enumerate(points)}
                    rec["combiner"] = int(st[uu, sp, -1])
                    blocks.append(rec)
            t0 = min(x["start"] for x in blocks)
            for uu in range(units):
                for sp in range(made):
                    x = blocks[uu * made + sp]
                    raw.append({"batch": b, "seq_len": n, "head_dim": d, "splits": made, "launch": it,
                                "unit": uu, "split": sp, "combiner": x["combiner"],
                                **{pt: x[pt] - t0 for pt in points}})  # fmt: skip
            per_launch.append(summarize(blocks, points))
        row = {"batch": b, "heads": h, "kv_heads": hkv, "seq_len": n, "head_dim": d, "query_len": ql,
               "splits": made, "config": cfg.name, "launches": a.launches, "rel_err": f"{err:.2e}", "ok": ok}  # fmt: skip
        for key in per_launch[0]:
            row[key] = f"{statistics.median(x[key] for x in per_launch):.3f}"
        all_t = [x[pt] for x in raw[-made * units * a.launches :] for pt in points]
        row["ns_grain"] = int(np.gcd.reduce(np.array(all_t, np.int64))) if any(all_t) else 0
        summary.append(row)
        print(f"{(b, h, hkv, n, d, ql, s)} done, err {err:.2e}", flush=True)
        sh.qkv = sh.views = None
        torch.cuda.empty_cache()

    for name, rows in (("decode7_stamps.csv", raw), ("decode7_stamps_summary.csv", summary)):
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
        write_measurement(
            f"{a.out}/{name}",
            buf.getvalue(),
            provenance(
                {
                    "what": "decode_tc's split kernel, %globaltimer stamps per block (decode7)",
                    "argv": sys.argv,
                }
            ),
        )
    keys = [k for k in summary[0] if k.endswith(("_med", "_max")) or k.startswith(("last_", "start_"))]
    print(f"{'shape':>22} " + " ".join(f"{k[:14]:>14}" for k in ["ns_grain", *keys]))
    for r in summary:
        print(
            f"{r['batch']}x{r['seq_len']} d{r['head_dim']} s{r['splits']:>3}{'' if r['ok'] else ' FAIL':5} "
            + " ".join(f"{r[k]!s:>14}" for k in ["ns_grain", *keys])
        )
    return 0 if all(r["ok"] for r in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
