"""Tuning the fast kernel: check and time a list of FastConfigs, keep the fastest correct one per d.

``python -m gpu_kernels tune --out DIR`` runs ``sweep_configs()`` (the sweep that chose
``simlib.kernel_layout.fast_default_config``; docs/performance.md lists what each config tests) and
writes ``tune_<tag>.json`` with its provenance.
"""

from __future__ import annotations

import json
import time

import numpy as np

from simlib.kernel_layout import FastConfig as F
from simlib.workload import Workload

from ..device import l2_bytes
from .cases import Case
from .timing import measure_variant


def tune(configs, seq_lens=(4096, 16384), batch=1, heads=16, reps=10, progress=True, seed=None):
    """Check and time each FastConfig; returns result dicts (one per config and N)."""
    import cupy as cp

    rng = np.random.default_rng(seed)
    l2 = l2_bytes()
    out = []
    by_d = {}
    for cfg in configs:
        by_d.setdefault(cfg.head_dim, []).append(cfg)
    for d, cfgs in by_d.items():
        for n in seq_lens:
            case = Case(Workload(seq_len=n, head_dim=d, batch=batch, heads=heads, dtype="fp32"), l2, rng)
            for cfg in cfgs:
                t1 = time.monotonic()
                r = measure_variant("numba_fast", case, reps, cfg)
                r.update(seq_len=n, head_dim=d, config=repr(cfg))
                if r.get("ms"):
                    r["tflops"] = case.workload.flops / (r["ms"] / 1e3) / 1e12
                if progress:
                    print(
                        f"tune d={d} N={n} {cfg.tm}x{cfg.tn} {cfg.nty}x{cfg.ntx} reg={cfg.max_registers} "
                        f"async={int(cfg.async_copy)} vec={int(cfg.vector_loads)} unroll={cfg.unroll}: {r.get('ms', float('nan')):.3f} ms "
                        f"{r.get('tflops', float('nan')):.2f} TFLOP/s err {r.get('rel_err_o', float('nan')):.1e} "
                        f"{r.get('status')} {r.get('error', '')} ({time.monotonic() - t1:.0f} s)",
                        flush=True,
                    )
                out.append(r)
            case.free()
            cp.get_default_memory_pool().free_all_blocks()
    return out


def best_configs(tune_results, configs):
    """Per head_dim, the correct config with the smallest time at the largest N."""
    best = {}
    for cfg in configs:
        rs = [r for r in tune_results if r.get("config") == repr(cfg) and r.get("ok") and r.get("ms")]
        if not rs:
            continue
        n_max = max(r["seq_len"] for r in rs)
        ms = next(r["ms"] for r in rs if r["seq_len"] == n_max)
        cur = best.get(cfg.head_dim)
        if cur is None or (n_max, -ms) > (cur[1], -cur[2]):
            best[cfg.head_dim] = (cfg, n_max, ms)
    return {d: v[0] for d, v in best.items()}


def sweep_configs():
    """The configurations the tuning run tries (docs/performance.md lists what each one tests).

    A first sweep tried micro-tile shapes, the register cap, cp.async and the vector loads; this list
    is the second (compare_tune_h200.json): the first one's best, loop unrolling, and 8×8 micro-tiles.
    """

    return [
        F(64, 4, 8, ntx=8, nty=32, async_copy=False),  # the first sweep's best for d = 64
        F(64, 4, 8, ntx=8, nty=32),  # the first sweep's default (cp.async)
        F(64, 4, 8, ntx=8, nty=32, async_copy=False, unroll=2),  # two k-steps per loop trip
        F(64, 4, 8, ntx=8, nty=32, unroll=2),
        F(64, 4, 8, ntx=8, nty=32, async_copy=False, unroll=4),
        F(64, 4, 8, ntx=8, nty=32, async_copy=False, max_registers=128),  # 2 blocks/SM
        F(64, 8, 8, ntx=8, nty=16, async_copy=False),  # 8x8: 1 B of LDS per FFMA, 2 blocks/SM
        F(64, 8, 8, ntx=8, nty=16),
        F(64, 8, 8, ntx=8, nty=16, async_copy=False, unroll=2),
        F(128, 4, 8, ntx=8, nty=32),  # the first sweep's best for d = 128
        F(128, 4, 8, ntx=8, nty=32, async_copy=False),
        F(128, 4, 8, ntx=8, nty=32, unroll=2),
        F(128, 8, 4, ntx=16, nty=16),
        F(128, 8, 4, ntx=16, nty=16, unroll=2),
        F(128, 4, 4, ntx=16, nty=32),  # the first sweep's default
    ]


RUN1_SWEEP = """F(64,4,8,8,32); F(64,4,8,8,32,max_registers=128); F(64,4,8,8,32,async_copy=False);
F(64,4,8,8,32,vector_loads=False); F(64,4,4,16,32); F(64,4,4,16,16); F(64,8,4,16,16);
F(128,4,4,16,32); F(128,4,4,16,32,async_copy=False); F(128,4,8,8,32); F(128,4,4,16,16); F(128,2,8,8,64)"""


def config_dict(cfg):
    return {
        "tm": cfg.tm,
        "tn": cfg.tn,
        "ntx": cfg.ntx,
        "nty": cfg.nty,
        "max_registers": cfg.max_registers,
        "async_copy": cfg.async_copy,
        "vector_loads": cfg.vector_loads,
        "unroll": cfg.unroll,
    }


def configs_from_json(text):
    """{d: FastConfig} from JSON {d: FastConfig keyword arguments} (empty text: {})."""
    if not text:
        return {}
    return {int(d): F(int(d), **kw) for d, kw in json.loads(text).items()}


def configs_from_tune_file(path):
    """The best configuration per d recorded by a `tune` run's JSON."""
    with open(path) as f:
        return configs_from_json(json.dumps(json.load(f)["best"]))
