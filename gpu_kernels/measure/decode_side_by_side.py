"""The decode side by side: a few query tokens against a long 16-bit KV cache, on the GPU, in one run
(``python -m gpu_kernels side-by-side --shape B:H:H_kv:L:d:q_len ...``; shapes with a query length).

Variants, for the same call (q (B, H, q_len, d), k and v (B, H_kv, L, d), no mask): numba's
``decode_tc`` with the splits simlib's model picks (``default_splits``) and with half and twice as
many, with the other block size (8 warps and Bc = 128 at d = 128, 4 warps and Bc = 64 at d = 64) and with
the other fused-combine tail (the cluster tail at min(s, 16) splits where the default is the atomic
one, the atomic tail at 2 splits, where the default is the cluster one), numba's ``fa2_tc`` (the prefill kernel: one block per query head, K/V re-read by every head of a
group), torch SDPA's flash, cuDNN, memory-efficient and math backends (``enable_gqa`` when H_kv < H),
and ``hbm_copy``: a device-to-device copy of COPY_BYTES, counted as bytes read plus bytes written,
measured at the start and at the end of the run (its median is the ceiling each row is compared with).

Bytes: every row is credited with the same compulsory HBM bytes, the ``decode`` schedule's count with
one split (Q, K, V read once, O written once): ``gbps`` = those bytes / median time, ``frac_of_copy`` =
gbps / the copy's. decode_tc moves a little more (its fp32 partials: the ``decode_tc`` count, column
``kernel_hbm_bytes``).

Correctness, before timing: O poisoned with NaN, then ‖O − ref‖/‖ref‖ over every head against fp32
attention computed by torch from the same (rounded) inputs, within 2u of the dtype.
Timing: a decode step takes microseconds, less than a Python launch (numba's costs ~20-40 µs of CPU),
so launches timed back to back would measure the CPU. Each variant's timed launches are queued behind
``torch.cuda._sleep`` (a spin kernel long enough for the CPU to queue them all), each between two CUDA
events, input sets rotated so that consecutive launches read different caches (together more than
3× the 60 MB L2); the median of reps is reported. Writes decode_side_by_side_<tag>.csv + provenance.
"""

from __future__ import annotations

import math
import statistics
import time

from measurements.schemas import DECODE_SIDE_BY_SIDE

DECODE_FIELDS = list(DECODE_SIDE_BY_SIDE.columns)  # measurements.schemas: the one definition
SDPA = ("torch_flash", "torch_cudnn", "torch_efficient", "torch_math")
DECODE_VARIANTS = ("decode_tc", "fa2_tc", *SDPA)
COPY_BYTES = 2 * 2**30  # per buffer: 2 GiB copied, 4 GiB moved
L2_BYTES = 60 * 10**6
MAX_SETS = 16
TARGET_MS = 30.0  # timed launches per variant: about this much GPU time, within [min, max] reps
CLOCK_HZ = 1.98e9  # the H200's SM clock under load (KINDS.md): cycles of torch.cuda._sleep per second


def compulsory_bytes(batch, heads, kv_heads, query_len, seq_len, head_dim, dtype):
    """The decode schedule's HBM bytes with one split: Q + K + V read, O written, once each.
    Worked number: B = 1, H = 32, H_kv = 8, L = 8192, d = 128, bf16: 2·8·8192·128·2 B of K and V
    plus 2·32·128·2 B of Q and O = 33,570,816 B.

    >>> compulsory_bytes(1, 32, 8, 1, 8192, 128, "bf16")
    33570816
    """
    from simlib import Workload, count

    wl = Workload(seq_len, head_dim, batch, heads, dtype=dtype, kv_heads=kv_heads, query_len=query_len)
    return int(count("decode", wl, splits=1, block_cols=64).hbm_bytes)


def sets_for(kv_bytes):
    """Input sets to rotate: consecutive launches read different caches, all of them > 3× the L2.

    >>> sets_for(33_554_432), sets_for(2**30)
    (6, 2)
    """
    return max(2, min(MAX_SETS, math.ceil(3 * L2_BYTES / max(1, kv_bytes))))


class DecodeShape:
    """Input sets, outputs and the fp32 reference of one decode call."""

    def __init__(self, dtype, b, h, hkv, ql, n, d, torch):
        from .torch_views import bits_view

        self.dtype, self.b, self.h, self.hkv, self.ql, self.n, self.d = dtype, b, h, hkv, ql, n, d
        self.tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        kv_bytes = 2 * b * hkv * n * d * 2
        self.n_sets = sets_for(kv_bytes)
        self.qkv = [
            [
                torch.randn(b, hh, nn, d, device="cuda").to(self.tdt)
                for hh, nn in ((h, ql), (hkv, n), (hkv, n))
            ]
            for _ in range(self.n_sets)
        ]
        self.views = [[bits_view(x) for x in s] for s in self.qkv]
        self.out = torch.empty(b, h, ql, d, device="cuda", dtype=self.tdt)
        self.o_view = bits_view(self.out)
        self.lse = torch.empty(b, h, ql, device="cuda", dtype=torch.float32)
        self.l_view = bits_view(self.lse)
        q, k, v = (x.float() for x in self.qkv[0])
        g = h // hkv
        s = torch.einsum("bgrd,bgnd->bgrn", q.reshape(b, hkv, g * ql, d), k) / math.sqrt(d)
        self.ref = torch.einsum("bgrn,bgnd->bgrd", torch.softmax(s, dim=-1), v).reshape(b, h, ql, d)

    def err(self, o, torch):
        return float(torch.linalg.norm(o.float() - self.ref) / torch.linalg.norm(self.ref))


def copy_gbps(torch, reps=20):
    """Device-to-device copy bandwidth, GB/s (bytes read + written), median of `reps` event-timed copies."""
    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(reps):
        a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        e.record()
        e.synchronize()
        times.append(a.elapsed_time(e))
    del src, dst
    torch.cuda.empty_cache()
    return 2 * COPY_BYTES / (statistics.median(times) * 1e-3) / 1e9, times


def queued_times(launch, n_sets, torch, min_reps=20, max_reps=200):
    """Milliseconds of each of `reps` launches, queued behind a spin kernel so that the GPU runs them
    back to back (module docstring); also the reps and whether the queue stayed ahead of the GPU."""
    for i in range(2):
        launch(i % n_sets)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(5):
        launch(i % n_sets)
    cpu = (time.perf_counter() - t0) / 5  # enqueue cost (the GPU is not the bottleneck for 5 launches)
    torch.cuda.synchronize()
    a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    launch(0)
    e.record()
    e.synchronize()
    gpu_ms = max(1e-3, a.elapsed_time(e))
    reps = max(min_reps, min(max_reps, int(TARGET_MS / gpu_ms)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    spin_s = 2.0 * reps * cpu + 2e-3
    torch.cuda._sleep(int(spin_s * CLOCK_HZ))
    t0 = time.perf_counter()
    for r in range(reps):
        starts[r].record()
        launch((r + 1) % n_sets)
        ends[r].record()
    queued_s = time.perf_counter() - t0
    torch.cuda.synchronize()
    ahead = queued_s < spin_s  # the GPU was still spinning when the last launch was queued
    return [s.elapsed_time(x) for s, x in zip(starts, ends)], reps, ahead


def launchers(sh, torch, splits_default):
    """(kernel, config, splits, make) per variant; make() returns launch(i) -> O."""
    import dataclasses

    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from simlib.schedules.decode_tc import made_splits

    from ..counting import new_counters
    from ..kernels.decode_tc import DecodePlan, default_config
    from ..kernels.fa2_tc import Fa2TcPlan
    from ..kernels.fa2_tc import default_config as fa2_config
    from .torch_views import bits_view

    counters = new_counters()
    rows = (sh.h // sh.hkv) * sh.ql

    def decode(splits, cfg=None):
        config = default_config(sh.d, made_splits(sh.n, splits)) if cfg is None else cfg

        def make():
            plan = DecodePlan(
                (sh.b, sh.h, sh.hkv, sh.ql, sh.n, sh.d),
                config.check(rows, min(splits, sh.n)),
                sh.dtype,
                splits,
            )
            n_part, n_lse = plan.partial_sizes()
            pv = bits_view(torch.empty(n_part, device="cuda", dtype=torch.float32))
            lv = bits_view(torch.empty(n_lse, device="cuda", dtype=torch.float32))

            def launch(i):
                plan.launch(*sh.views[i], sh.o_view, pv, lv, counters)
                return sh.out

            return launch

        make.config = config  # the row's kernel_hbm_bytes: its own config's count
        return make

    def fa2():
        plan = Fa2TcPlan.of((sh.b, sh.h, sh.hkv, sh.ql, sh.n, sh.d), fa2_config(sh.d), sh.dtype)

        def launch(i):
            plan.launch(*sh.views[i], sh.o_view, sh.l_view, counters)
            return sh.out

        return launch

    gqa = {"enable_gqa": True} if sh.hkv != sh.h else {}

    def sdpa(backend):
        def make():
            def launch(i):
                with sdpa_kernel([backend]):
                    return F.scaled_dot_product_attention(*sh.qkv[i], **gqa)

            return launch

        return make

    s0 = splits_default
    d0 = default_config(sh.d, made_splits(sh.n, s0))
    alt = sorted({max(1, s0 // 2), min(128, 2 * s0)} - {s0})
    items = [("decode_tc", f"{d0.name} (default splits)", s0, decode(s0))]
    items += [("decode_tc", default_config(sh.d, made_splits(sh.n, s)).name, s, decode(s)) for s in alt]
    # the other block size (decode3: 8 warps, Bc = 128, 16 keys per warp and tile; the default at d = 64
    # since version 6; 4 warps, Bc = 64 the default at d = 128), at the default splits
    wv = 4 if d0.warps == 8 else 8
    other = dataclasses.replace(d0, warps=wv, block_cols=16 * wv)
    items.append(("decode_tc", f"{other.name} ({wv} warps, the default splits)", s0, decode(s0, other)))
    # decode5 (version 6): the other tail, at the default splits (the cluster one at most 16: one cluster
    # per unit); the default is the cluster tail at 2 splits, the atomic one elsewhere
    if d0.tail == "cluster":
        at = dataclasses.replace(d0, tail="atomic")
        items.append(("decode_tc", f"{at.name} (atomic tail, the default splits)", s0, decode(s0, at)))
    else:
        sc = min(s0, 16)
        cl = dataclasses.replace(d0, tail="cluster")
        items.append(("decode_tc", f"{cl.name} (cluster tail, splits min(default, 16))", sc, decode(sc, cl)))
    items.append(("fa2_tc", f"{fa2_config(sh.d).name} (prefill kernel)", "", fa2))
    names = {
        "torch_flash": SDPBackend.FLASH_ATTENTION,
        "torch_cudnn": SDPBackend.CUDNN_ATTENTION,
        "torch_efficient": SDPBackend.EFFICIENT_ATTENTION,
        "torch_math": SDPBackend.MATH,
    }
    items += [(name, "", "", sdpa(backend)) for name, backend in names.items()]
    return items


def bench_decode_shape(sh, names, copy, torch, log):
    """One row per variant: checked on poisoned output, then timed with the queue kept full."""
    from simlib import Workload, count

    from ..kernels.decode_tc import default_config, default_splits
    from .torch_views import checked_first_call, not_timed, tolerance

    rows_r = (sh.h // sh.hkv) * sh.ql
    s0 = default_splits(sh.b, sh.hkv, sh.n, sh.d, rows_r, sh.dtype)
    hbm = compulsory_bytes(sh.b, sh.h, sh.hkv, sh.ql, sh.n, sh.d, sh.dtype)
    base = {
        "dtype": sh.dtype,
        "batch": sh.b,
        "heads": sh.h,
        "kv_heads": sh.hkv,
        "query_len": sh.ql,
        "seq_len": sh.n,
        "head_dim": sh.d,
        "hbm_bytes": hbm,
        "copy_gbps": f"{copy:.1f}",
        "tol": f"{tolerance(sh.dtype):.2e}",
    }
    wl = Workload(sh.n, sh.d, sh.b, sh.h, dtype=sh.dtype, kv_heads=sh.hkv, query_len=sh.ql)
    from simlib.schedules.decode_tc import made_splits

    cfg = default_config(sh.d, made_splits(sh.n, s0))
    rows = []
    for name, config, splits, make in launchers(sh, torch, s0):
        if name not in names:
            continue
        row = {**base, "kernel": name, "config": config, "splits": splits, "reps": 0}
        if name == "decode_tc":
            c = getattr(make, "config", cfg)
            kw = dict(warps=c.warps, block_cols=c.block_cols, stages=c.stages, splits=splits, tail=c.tail)
            row["kernel_hbm_bytes"] = int(count("decode_tc", wl, **kw).hbm_bytes)
        try:
            launch = make()
            first_ms, e = checked_first_call(sh, launch, torch)
            t, reps, ahead = queued_times(launch, sh.n_sets, torch)
        except Exception as ex:  # a backend that refuses the shape, out of memory: say so, go on
            msg, at = not_timed(ex)
            log(
                f"decode {sh.dtype} B={sh.b} H={sh.h}/{sh.hkv} L={sh.n} d={sh.d} {name}: not timed ({msg}; at {at})"
            )
            rows.append({**row, "ok": False, "note": "not timed: " + msg})
            torch.cuda.empty_cache()
            continue
        med = statistics.median(t)
        ok = e < tolerance(sh.dtype)
        gbps = hbm / (med * 1e-3) / 1e9
        note = f"first call {first_ms:.0f} ms (compile included); {sh.n_sets} input sets"
        if not ahead:
            note += "; the CPU fell behind the queue: times may include launch gaps"
        rows.append(
            {
                **row,
                "median_ms": f"{med:.5f}",
                "min_ms": f"{min(t):.5f}",
                "max_ms": f"{max(t):.5f}",
                "reps": reps,
                "gbps": f"{gbps:.1f}",
                "frac_of_copy": f"{gbps / copy:.3f}",
                "rel_err": f"{e:.3e}",
                "ok": ok,
                "note": note,
            }
        )
        log(
            f"decode {sh.dtype} B={sh.b:2d} H={sh.h}/{sh.hkv} q={sh.ql} L={sh.n:6d} d={sh.d} {name:15s} "
            f"s={splits!s:>3} {med * 1e3:9.1f} us {gbps:7.1f} GB/s {gbps / copy:6.1%} of copy err {e:.1e}"
            f"{'' if ok else '  FAILED correctness'}"
        )
    sdpa = [float(r["median_ms"]) for r in rows if r["kernel"] in SDPA and r.get("median_ms") and r["ok"]]
    for r in rows:
        if sdpa and r.get("median_ms"):
            r["ratio_to_best_sdpa"] = f"{float(r['median_ms']) / min(sdpa):.3f}"
    return rows


def copy_row(gbps, times, when):
    return {
        "kernel": "hbm_copy",
        "config": f"torch copy_ of {COPY_BYTES} B, {when} of the run",
        "median_ms": f"{statistics.median(times):.5f}",
        "min_ms": f"{min(times):.5f}",
        "max_ms": f"{max(times):.5f}",
        "reps": len(times),
        "hbm_bytes": 2 * COPY_BYTES,
        "gbps": f"{gbps:.1f}",
        "copy_gbps": f"{gbps:.1f}",
        "frac_of_copy": "1.000",
        "ok": True,
        "note": "bytes read + bytes written",
    }
