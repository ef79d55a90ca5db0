"""decode_tc at small caches, taken apart on the GPU in one call (issue 22 item 3, helper kernel3).

    python benchmarks/decode_parts_h200.py --out DIR [--shapes 0,1,2]

Why is a decode step of a 34 MB cache at 0.37 of the copy bandwidth (run k22-decode-run1)? Per shape,
every part timed the decode side by side's way (``queued_times``: launches queued behind a spin
kernel, each between two CUDA events, input sets rotated beyond 3× the L2; median):

* ``step_fused``: the whole step, one launch (the unit's last split combines), at the model's splits
  s0 and at s0/2, 2·s0, 4·s0; ``step_2k``: the step as run 1 ran it (split kernel, then the combine
  kernel); ``split_only`` and ``combine_only``: the two launches of ``step_2k`` alone;
* ``step_fused_st<N>``: the whole step with a ring of N tiles instead of the default (run decode2);
* ``step_fused_w8``, ``split_only_w8``, ``stream_only_w8``: the step, its split kernel alone and the
  data path with 8 warps and Bc = 128 keys per tile (16 keys per warp as before; run decode3);
* ``step_fused_flagged``, ``step_fused_w8_flagged``: the step with ``tail="flagged"`` (split s − 1 of
  every unit polls the others' partials, 8-byte (value, tag) words; no arrival atomic; run decode4),
  4 and 8 warps; left out where the grid exceeds the SMs (the combiners wait for every split);
  ``..._kvg``: with ``kv_groups`` (K and V of a tile in two cp.async groups: S = Q Kᵀ and the softmax
  start when K has landed), ``split_only_kvg`` its split kernel alone (two kernels' split);
  ``step_fused_cluster``, ``step_fused_w8_cluster``: the step with ``tail="cluster"`` (decode5: the
  splits of a unit one thread-block cluster, partials through distributed shared memory; at most 16
  splits, so min(s0, 16));
* ``empty_kernel``: a numba kernel of one warp that does nothing (the floor of one launch in the queue);
  ``empty_split_launch``: a kernel of the split kernel's signature, grid, block and dynamic shared
  memory that does nothing (what the launch of that shape costs);
* ``stream_only``: the split kernel's data path alone (run decode2): the same grid, block, ring and
  16-byte ``cp.async`` copies of each split's K and V into shared memory, no arithmetic, one word
  written per block: what streaming the cache costs without the math, the merge and the combine;
* ``read_only_k<N>`` / ``copy_numba_k<N>``: the bytes read (or copied) by a plain numba kernel of many
  256-thread blocks, each thread N coalesced 8-byte loads (stores) in flight: a pure read of the
  step's bytes without shared memory, and a copy as simple as it gets;
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
    (1, 32, 8, 16384, 128, 1),  # 67 MB: with 8192, 32768 and 65536 at one grid (--splits 16), a line
    (1, 32, 8, 65536, 128, 1),  # 268 MB: through every part's time against the bytes (decode7)
]
FIELDS = [
    "batch", "heads", "kv_heads", "seq_len", "head_dim", "query_len", "cache_bytes", "hbm_bytes",
    "part", "splits", "median_us", "min_us", "max_us", "reps", "bytes_moved", "gbps", "rel_err", "ok",
    "note",
]  # fmt: skip


def probe_kernels(cuda):
    """The probes (module docstring): factories keyed by their compile-time shapes."""
    import functools

    import numpy as np
    from numba import uint16, uint64

    from gpu_kernels.tensor_core.addressed_ops import addressed_ops
    from gpu_kernels.tensor_core.tiles import block_copiers
    from gpu_kernels.tensor_core.warp_ops import cp_wait_group, warp_ops

    @functools.cache
    def stream(d, bc, stages, threads):
        smem_base, _, _, cp16, cp16z, _, _, _ = addressed_ops("bf16", False)
        copy_kv, copy_kv_ragged = block_copiers(cp16, cp16z, bc, d, threads, False)
        ops = warp_ops("bf16", False)
        commit, wait_all, wait_ring = ops.cp_commit, ops.cp_wait_all, cp_wait_group(stages - 2, False)
        tile = 2 * bc * d

        @cuda.jit(device=True, inline=True)
        def issue(base, so, k, v, g, ck, tid):
            if ck == bc:
                copy_kv(base, so, k, g, tid)
                copy_kv(base, so + bc * d, v, g, tid)
            else:
                copy_kv_ragged(base, so, k, g, ck, tid)
                copy_kv_ragged(base, so + bc * d, v, g, ck, tid)

        @cuda.jit
        def stream_only(k, v, out, n_k, chunk):
            sm = cuda.shared.array(0, uint16, alignment=128)
            base = smem_base(sm)
            tid = cuda.threadIdx.x
            sp = cuda.blockIdx.x
            u = cuda.blockIdx.y
            k0 = sp * chunk
            c = min(chunk, n_k - k0)
            nt = (c + bc - 1) // bc
            kvg = (u * n_k + k0) * d
            for st in range(stages - 1):
                if st < nt:
                    issue(base, st * tile, k, v, kvg + st * bc * d, min(bc, c - st * bc), tid)
                commit()
            acc = uint16(0)
            for j in range(nt):
                wait_ring()
                cuda.syncthreads()
                acc ^= sm[(j % stages) * tile + tid]  # a word of the landed tile: the data is used
                nx = j + stages - 1
                if nx < nt:
                    issue(base, (nx % stages) * tile, k, v, kvg + nx * bc * d, min(bc, c - nx * bc), tid)
                commit()
            wait_all()
            if tid == 0:
                out[u * cuda.gridDim.x + sp] = acc

        return stream_only

    @functools.cache
    def plain(per_thread, copy):
        magic = np.uint64(0x9E3779B97F4A7C15)

        @cuda.jit
        def read_only(x, out):
            i0 = cuda.blockIdx.x * 256 * per_thread + cuda.threadIdx.x
            acc = uint64(0)
            for r in range(per_thread):
                i = i0 + 256 * r
                if i < x.size:
                    acc ^= x[i]
            if acc == magic:  # never in practice: keeps the loads
                out[0] = acc

        @cuda.jit
        def copy_numba(x, out):
            i0 = cuda.blockIdx.x * 256 * per_thread + cuda.threadIdx.x
            for r in range(per_thread):
                i = i0 + 256 * r
                if i < x.size:
                    out[i] = x[i]

        return copy_numba if copy else read_only

    return stream, plain


def shape_rows(shape, torch, kit):
    """The rows of one (B, H, H_kv, L, d, q_len): every part of the step, then the copies."""
    import dataclasses

    b, h, hkv, n, d, ql = shape
    sh = kit.DecodeShape("bf16", b, h, hkv, ql, n, d, torch)
    rr = (h // hkv) * ql
    s0 = kit.splits or kit.default_splits(b, hkv, n, d, rr, "bf16")  # --splits: one grid at every L
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

    def timed_decode(
        part, splits, fused, what="step", stages=None, warps=None, tail="atomic", kv_groups=False
    ):
        try:
            timed_decode_or_raise(part, splits, fused, what, stages, warps, tail, kv_groups)
        except Exception as exc:  # a variant that fails (compile, check) is a row, not the end of the run
            record(part, splits, [0.0], 0, ok=False, note=f"failed: {type(exc).__name__}: {exc}"[:300])

    def timed_decode_or_raise(part, splits, fused, what, stages, warps, tail, kv_groups):
        cfg = dataclasses.replace(kit.default_config(d), fused_combine=fused, tail=tail, kv_groups=kv_groups)
        if stages is not None:
            cfg = dataclasses.replace(cfg, stages=stages)
        if warps is not None:  # W warps, the same 16 keys per warp and tile: Bc = 16·W
            cfg = dataclasses.replace(cfg, warps=warps, block_cols=16 * warps)
        cfg = cfg.check(rr, min(splits, n))
        pl = kit.DecodePlan((b, h, hkv, ql, n, d), cfg, "bf16", splits)
        if cfg.flagged:  # (value, tag) words, tags 0; the combiners poll: the grid must fit one wave
            if pl.splits_made * pl.units > kit.sms:
                return
            pv, lv = pl.new_partials()
        else:
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

    units = b * hkv
    fill2 = max(1, min(128, 2 * kit.sms // units))  # two blocks on every SM (when it divides)
    for s in sorted(
        {max(1, s0 // 2), s0, min(128, 2 * s0), min(128, 4 * s0), fill2} if kit.other_splits else {s0}
    ):
        timed_decode("step_fused", s, True)
    for st in kit.stage_variants.get(d, ()):
        timed_decode(f"step_fused_st{st}", s0, True, stages=st)
    # decode4 (version 5): the flagged tail (split s − 1 polls the others' tagged partials) and K, V of a
    # tile in two cp.async groups (kv_groups), alone and together, with 4 and 8 warps
    for tl, kvg in kit.v5_variants:
        name = ("" if tl == "atomic" else f"_{tl}") + ("_kvg" if kvg else "")
        sv = min(s0, 16) if tl == "cluster" else s0  # a cluster is at most 16 blocks
        timed_decode(f"step_fused{name}", sv, True, tail=tl, kv_groups=kvg)
        for wv in kit.warp_variants if d == 64 else ():  # 8 warps won at d = 64 only (decode3-run1)
            timed_decode(f"step_fused_w{wv}{name}", sv, True, warps=wv, tail=tl, kv_groups=kvg)
    if s0 > 1 and any(kvg for _, kvg in kit.v5_variants):
        timed_decode("split_only_kvg", s0, False, "split", kv_groups=True)
    if not kit.decode_only:
        timed_decode("step_2k", s0, False)
    if s0 > 1:
        timed_decode("split_only", s0, False, "split")
        if not kit.decode_only:
            timed_decode("combine_only", s0, False, "combine")
    for wv in kit.warp_variants:  # decode3: 8 warps (Bc = 128), the step and its split kernel alone
        timed_decode(f"step_fused_w{wv}", s0, True, warps=wv)
        if s0 > 1 and not kit.decode_only:
            timed_decode(f"split_only_w{wv}", s0, False, "split", warps=wv)
    if kit.decode_only:  # no probes, no copies of the same bytes (decode4's follow-up)
        return rows
    t, reps, _ = kit.queued_times(lambda i: kit.empty_kernel[1, 32](kit.dummy), 2, torch)
    record("empty_kernel", "", t, 0, reps=reps)
    cfg0 = kit.default_config(d).check(rr)
    plan0 = kit.DecodePlan((b, h, hkv, ql, n, d), cfg0, "bf16", s0)
    chunk, made = plan0.chunk, plan0.splits_made
    smem = plan0.smem_bytes
    kit.allow_dynamic_smem(kit.empty_split, smem, kit.split_signature())
    pv = kit.bits_view(torch.empty(max(1, plan0.partial_sizes()[0]), device="cuda", dtype=torch.float32))
    lv = kit.bits_view(torch.empty(max(1, plan0.partial_sizes()[1]), device="cuda", dtype=torch.float32))
    arr = kit.cuda.device_array(max(1, units), dtype="int32")

    def empty_split(i):
        kit.empty_split[(made, units), cfg0.threads, 0, smem](
            *sh.views[i], sh.o_view, pv, lv, kit.counters, arr, n, chunk, made, rr
        )

    t, reps, _ = kit.queued_times(empty_split, sh.n_sets, torch)
    record("empty_split_launch", made, t, 0, reps=reps, note=f"grid ({made}, {units}), {smem} B dynamic smem")
    out_words = kit.cuda.device_array(made * units, dtype="uint16")
    kv_bytes = 2 * b * hkv * n * d * 2
    for st in (cfg0.stages, *kit.stage_variants.get(d, ())):
        streamer = kit.stream(d, cfg0.block_cols, st, cfg0.threads)
        st_smem = 2 * st * cfg0.block_cols * d * 2
        kit.allow_dynamic_smem(streamer, st_smem, kit.stream_signature())

        def stream(i, streamer=streamer, st_smem=st_smem):
            streamer[(made, units), cfg0.threads, 0, st_smem](
                sh.views[i][1], sh.views[i][2], out_words, n, chunk
            )

        t, reps, _ = kit.queued_times(stream, sh.n_sets, torch)
        part = "stream_only" if st == cfg0.stages else f"stream_only_st{st}"
        record(part, made, t, kv_bytes, reps=reps, note=f"grid ({made}, {units}), ring of {st}, no math")
    for wv in kit.warp_variants:  # the same data path with W warps and Bc = 16·W keys per tile
        streamer = kit.stream(d, 16 * wv, cfg0.stages, 32 * wv)
        st_smem = 2 * cfg0.stages * 16 * wv * d * 2
        kit.allow_dynamic_smem(streamer, st_smem, kit.stream_signature())

        def stream_w(i, streamer=streamer, st_smem=st_smem, wv=wv):
            streamer[(made, units), 32 * wv, 0, st_smem](sh.views[i][1], sh.views[i][2], out_words, n, chunk)

        t, reps, _ = kit.queued_times(stream_w, sh.n_sets, torch)
        record(f"stream_only_w{wv}", made, t, kv_bytes, reps=reps,
               note=f"grid ({made}, {units}), {wv} warps, Bc = {16 * wv}, ring of {cfg0.stages}, no math")  # fmt: skip
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
        if part == "copy_same_reads":
            continue
        words = [kit.cuda.as_cuda_array(x.view(torch.int64)).view("uint64") for x in srcs]
        outs = [kit.cuda.as_cuda_array(x.view(torch.int64)).view("uint64") for x in dsts]
        for per_thread in kit.plain_per_thread:
            is_copy = part == "copy_same_bytes"
            kern = kit.plain(per_thread, is_copy)
            blocks = -(-words[0].size // (256 * per_thread))

            def plain(i, kern=kern, blocks=blocks, words=words, outs=outs):
                kern[blocks, 256](words[i], outs[i])

            dsts[0].zero_()  # poisoned: torch's copy above already filled it
            plain(0)
            kit.cuda.synchronize()
            if is_copy and not torch.equal(srcs[0], dsts[0]):
                record(f"copy_numba_k{per_thread}", "", [1.0], 0, ok=False, note="copy differs")
                continue
            t, reps, _ = kit.queued_times(plain, k, torch)
            name = f"copy_numba_k{per_thread}" if is_copy else f"read_only_k{per_thread}"
            record(name, "", t, moved, note=f"{blocks} blocks of 256, {k} buffer sets", reps=reps)
        del srcs, dsts
        torch.cuda.empty_cache()
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--shapes", default="", help="indices into SHAPES to run, e.g. 0,1,2 (default: all)")
    p.add_argument("--stages", default="128:4/6,64:8", help="rings to try besides the default, d:N/N,...")
    p.add_argument("--per-thread", default="4,16", help="loads per thread of the plain read/copy kernels")
    p.add_argument("--warps", default="8", help="warp counts to try besides the default (Bc = 16·W), e.g. 8")
    p.add_argument(
        "--v5", default="flagged,kvg,flagged+kvg,cluster",
        help="variants besides the default: flagged or cluster (tail), kvg (kv_groups), flagged+kvg, ...",
    )  # fmt: skip
    p.add_argument(
        "--other-splits", default="yes", choices=("yes", "no"), help="step_fused at s0/2, 2·s0, ..."
    )
    p.add_argument(
        "--splits", type=int, default=0,
        help="the splits s0 of every shape instead of the model's (0: the model's), e.g. 16: one grid at every L",
    )  # fmt: skip
    p.add_argument(
        "--decode-only", action="store_true",
        help="the decode steps and split_only alone: no step_2k, combine_only, probes or copies",
    )  # fmt: skip
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

    def empty_split(q, k, v, o, o_part, lse_part, counters, arrivals, n_k, chunk, n_splits, rows):
        pass

    from numba.cuda import types as nbtypes

    stream, plain = probe_kernels(cuda)
    u16 = nbtypes.Array(nbtypes.uint16, 1, "C")

    kit = types.SimpleNamespace(
        DecodeShape=dsbs.DecodeShape, compulsory_bytes=dsbs.compulsory_bytes, queued_times=dsbs.queued_times,
        sets_for=dsbs.sets_for, DecodePlan=decode_tc.DecodePlan, default_config=decode_tc.default_config,
        default_splits=decode_tc.default_splits, bits_view=torch_views.bits_view,
        checked_first_call=torch_views.checked_first_call, tolerance=torch_views.tolerance,
        counters=new_counters(), empty_kernel=empty_kernel, dummy=cuda.device_array(1, dtype="int32"),
        empty_split=cuda.jit(empty_split), split_signature=decode_tc.split_signature,
        allow_dynamic_smem=decode_tc.allow_dynamic_smem, stream=stream, plain=plain, cuda=cuda,
        stream_signature=lambda: (u16, u16, u16, nbtypes.int64, nbtypes.int64),
        sms=cuda.get_current_device().MULTIPROCESSOR_COUNT,
        stage_variants={int(k): tuple(int(x) for x in v.split("/")) for k, v in
                        (item.split(":") for item in a.stages.split(",") if item)},
        plain_per_thread=tuple(int(x) for x in a.per_thread.split(",") if x),
        warp_variants=tuple(int(x) for x in a.warps.split(",") if x),
        v5_variants=tuple((next((t for t in ("flagged", "cluster") if t in x), "atomic"), "kvg" in x)
                          for x in a.v5.split(",") if x),
        other_splits=a.other_splits == "yes",
        decode_only=a.decode_only,
        splits=a.splits,
    )  # fmt: skip
    t0 = time.monotonic()
    big, _ = dsbs.copy_gbps(torch)
    print(f"copy of 2 GiB: {big:.0f} GB/s", flush=True)
    from measurements.provenance import provenance, write_measurement

    def write(rows, big2):
        """The CSV and its sidecar, rewritten after every shape: a run cut short keeps the shapes done."""
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
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
                "copy_2GiB_gbps_start_end": [round(big, 1), big2 and round(big2, 1)],
                "shapes_done": len({(r["batch"], r["seq_len"], r["head_dim"]) for r in rows}),
                "elapsed_s": round(time.monotonic() - t0, 1),
            },
        )

    rows = []
    for shape in shapes:
        rows += shape_rows(shape, torch, kit)
        print(f"[{time.monotonic() - t0:6.1f} s] {shape} done", flush=True)
        write(rows, None)
    big2, _ = dsbs.copy_gbps(torch)
    write(rows, big2)
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
