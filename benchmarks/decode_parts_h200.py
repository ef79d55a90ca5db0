"""decode_tc at small caches, taken apart on the GPU in one call (issue 22 item 3, helper kernel3).

    python benchmarks/decode_parts_h200.py --out DIR [--shapes 0,1,2]

Why is a decode step of a 34 MB cache at 0.37 of the copy bandwidth (run k22-decode-run1)? Per shape,
every part timed the decode side by side's way (``queued_times``: launches queued behind a spin
kernel, each between two CUDA events, input sets rotated beyond 3× the L2; median):

* ``step_fused``: the whole step, one launch (the unit's last split combines), at the model's splits
  s0 and at s0/2, 2·s0, 4·s0; ``step_2k``: the step as run 1 ran it (split kernel, then the combine
  kernel); ``split_only`` and ``combine_only``: the two launches of ``step_2k`` alone;
* ``empty_kernel``: a numba kernel of one warp that does nothing (the floor of one launch in the queue);
* ``copy_same_bytes``: torch ``copy_`` of C/2 bytes (C = the step's compulsory bytes: C moved, read +
  written); ``copy_same_reads``: ``copy_`` of C bytes (C read, C written); ``sum_same_reads``: torch
  ``sum`` of the C bytes as bf16 (C read, nothing written). The large-copy bandwidth (2 GiB) at the start.

Every decode variant is checked (O poisoned, against fp32 attention) before it is timed. Writes
decode_parts_h200.csv (+ provenance sidecar) and prints a table last.
"""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import sys
import time

SHAPES = [  # (B, H, H_kv, L, d, q_len): run 1's small caches, and two where run 1 met the target
    (1, 32, 8, 8192, 128, 1),  # 34 MB
    (1, 32, 8, 32768, 128, 1),  # 134 MB
    (4, 64, 8, 16384, 64, 1),  # 134 MB, d = 64
    (8, 32, 8, 8192, 128, 1),  # 269 MB
    (1, 32, 8, 131072, 128, 1),  # 537 MB
]
FIELDS = [
    "batch", "heads", "kv_heads", "seq_len", "head_dim", "query_len", "cache_bytes", "hbm_bytes",
    "part", "splits", "median_us", "min_us", "max_us", "reps", "bytes_moved", "gbps", "rel_err", "ok",
    "note",
]  # fmt: skip


def shape_rows(shape, torch, kit):
    """The rows of one (B, H, H_kv, L, d, q_len): every part of the step, then the copies."""
    import dataclasses

    b, h, hkv, n, d, ql = shape
    sh = kit.DecodeShape("bf16", b, h, hkv, ql, n, d, torch)
    rr = (h // hkv) * ql
    s0 = kit.default_splits(b, hkv, n, d, rr, "bf16")
    hbm = kit.compulsory_bytes(b, h, hkv, ql, n, d, "bf16")
    base = dict(batch=b, heads=h, kv_heads=hkv, seq_len=n, head_dim=d, query_len=ql,
                cache_bytes=2 * b * hkv * n * d * 2, hbm_bytes=hbm)  # fmt: skip
    rows = []

    def record(part, splits, times, moved, err="", ok=True, note="", reps=None):
        med = statistics.median(times)
        rows.append({**base, "part": part, "splits": splits, "median_us": f"{med * 1e3:.2f}",
                     "min_us": f"{min(times) * 1e3:.2f}", "max_us": f"{max(times) * 1e3:.2f}",
                     "reps": reps or len(times), "bytes_moved": moved,
                     "gbps": f"{moved / (med * 1e-3) / 1e9:.1f}" if moved else "", "rel_err": err, "ok": ok,
                     "note": note})  # fmt: skip

    def timed_decode(part, splits, fused, what="step"):
        cfg = dataclasses.replace(kit.default_config(d), fused_combine=fused).check(rr)
        pl = kit.DecodePlan((b, h, hkv, ql, n, d), cfg, "bf16", splits)
        n_part, n_lse = pl.partial_sizes()
        pv = kit.bits_view(torch.empty(n_part, device="cuda", dtype=torch.float32))
        lv = kit.bits_view(torch.empty(n_lse, device="cuda", dtype=torch.float32))

        def step(i):
            pl.launch(*sh.views[i], sh.o_view, pv, lv, kit.counters)
            return sh.out

        def split(i):
            pl.launch_split(*sh.views[i], sh.o_view, pv, lv, kit.counters)

        def combine(i):
            pl.launch_combine(sh.o_view, pv, lv, kit.counters)

        _, err = kit.checked_first_call(sh, step, torch)  # the whole step, checked, before any timing
        ok = err < kit.tolerance("bf16")
        t, reps, ahead = kit.queued_times(
            {"step": step, "split": split, "combine": combine}[what], sh.n_sets, torch
        )
        note = f"{pl.config.name}; {sh.n_sets} input sets" + ("" if ahead else "; CPU fell behind the queue")
        record(part, pl.splits_made, t, hbm if what == "step" else 0, f"{err:.2e}", ok, note, reps)

    for s in sorted({max(1, s0 // 2), s0, min(128, 2 * s0), min(128, 4 * s0)}):
        timed_decode("step_fused", s, True)
    timed_decode("step_2k", s0, False)
    if s0 > 1:
        timed_decode("split_only", s0, False, "split")
        timed_decode("combine_only", s0, False, "combine")
    t, reps, _ = kit.queued_times(lambda i: kit.empty_kernel[1, 32](kit.dummy), 2, torch)
    record("empty_kernel", "", t, 0, reps=reps)
    sh.qkv = sh.views = None  # the caches freed before the copies' buffers
    torch.cuda.empty_cache()
    for part, src_bytes, moved in (
        ("copy_same_bytes", hbm // 2, 2 * (hbm // 2)),
        ("copy_same_reads", hbm, 2 * hbm),
        ("sum_same_reads", hbm, hbm),
    ):
        k = kit.sets_for(src_bytes)
        srcs = [torch.empty(src_bytes // 2, dtype=torch.bfloat16, device="cuda").normal_() for _ in range(k)]
        dsts = [torch.empty_like(x) for x in srcs]

        def copy(i, srcs=srcs, dsts=dsts):
            dsts[i].copy_(srcs[i])

        def total(i, srcs=srcs):
            return srcs[i].sum(dtype=torch.float32)

        t, reps, _ = kit.queued_times(copy if part.startswith("copy") else total, k, torch)
        record(part, "", t, moved, note=f"{k} buffer sets", reps=reps)
        del srcs, dsts
        torch.cuda.empty_cache()
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--shapes", default="", help="indices into SHAPES to run, e.g. 0,1,2 (default: all)")
    a = p.parse_args(argv)
    shapes = [SHAPES[int(i)] for i in a.shapes.split(",")] if a.shapes else SHAPES
    import types

    import torch
    from numba import cuda

    from gpu_kernels.counting import new_counters
    from gpu_kernels.device import select_backend

    select_backend(False)
    from gpu_kernels.kernels import decode_tc
    from gpu_kernels.measure import decode_side_by_side as dsbs
    from gpu_kernels.measure import torch_views

    @cuda.jit
    def empty_kernel(x):
        pass

    kit = types.SimpleNamespace(
        DecodeShape=dsbs.DecodeShape, compulsory_bytes=dsbs.compulsory_bytes, queued_times=dsbs.queued_times,
        sets_for=dsbs.sets_for, DecodePlan=decode_tc.DecodePlan, default_config=decode_tc.default_config,
        default_splits=decode_tc.default_splits, bits_view=torch_views.bits_view,
        checked_first_call=torch_views.checked_first_call, tolerance=torch_views.tolerance,
        counters=new_counters(), empty_kernel=empty_kernel, dummy=cuda.device_array(1, dtype="int32"),
    )  # fmt: skip
    t0 = time.monotonic()
    big, _ = dsbs.copy_gbps(torch)
    print(f"copy of 2 GiB: {big:.0f} GB/s", flush=True)
    rows = []
    for shape in shapes:
        rows += shape_rows(shape, torch, kit)
        print(f"[{time.monotonic() - t0:6.1f} s] {shape} done", flush=True)
    big2, _ = dsbs.copy_gbps(torch)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS)
    w.writeheader()
    w.writerows(rows)
    from measurements.provenance import provenance, write_measurement

    write_measurement(
        f"{a.out}/decode_parts_h200.csv",
        buf.getvalue(),
        {
            **provenance(
                {
                    "what": "decode_tc's parts against copies of the same bytes (issue 22 item 3)",
                    "argv": sys.argv,
                }
            ),  # fmt: skip
            "copy_2GiB_gbps_start_end": [round(big, 1), round(big2, 1)],
            "elapsed_s": round(time.monotonic() - t0, 1),
        },
    )
    print(f"copy of 2 GiB: {big:.0f} GB/s at the start, {big2:.0f} at the end")
    print(f"{'B':>2} {'L':>6} {'d':>3} {'MB':>5} {'part':16} {'s':>3} {'us':>8} {'GB/s':>7} {'err':>8}")
    for r in rows:
        print(
            f"{r['batch']:2} {r['seq_len']:6} {r['head_dim']:3} {r['cache_bytes'] / 1e6:5.0f} {r['part']:16} "
            f"{r['splits']!s:>3} {r['median_us']:>8} {r['gbps']:>7} {r['rel_err']:>8}{'' if r['ok'] else ' FAIL'}"
        )
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
