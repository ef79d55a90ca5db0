"""fa3_tc's variants against torch flash, cuDNN and fa2_tc in one device call (issue 22, item 2).

    python benchmarks/fa3_tc_speed.py --out DIR [--jobs 12] [--seq-lens 4096,16384]

fa2_tc_speed.py's harness: one process per build compiles in parallel, the processes take turns
(one lock) to time, so no two timings overlap; torch flash, cuDNN and fa2_tc's default are its own
jobs (``fa2_tc_speed.worker``). Per fa3_tc build, before any timing: a ragged GQA case with N_q < N_k
(causal when the build is) against the float64 reference on fresh inputs with the outputs poisoned
(``run_fa3_tc``), then at every timed shape the first and last batch·head against torch's fp32 math.
If that first check fails, the build is checked again with the descriptor's stride fields read the
other way round (``wgmma_ops.K_MAJOR_SBO_ALONG_MN``, ``MN_MAJOR_SBO_ALONG_MN``), and the row says
which reading was right. Writes fa3_tc_speed.csv (+ provenance sidecar), prints a table last.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import fa2_tc_speed as fa2
from speed_pool import report, run_jobs

#: (name, Fa3Config keywords) per head dim (``--defaults``: the kernel's default build per head dim instead): timed in bf16 non-causal; CAUSAL_AND_FP16 elsewhere. Run 1
#: (20261202T045137Z-1ff3899ea4) timed version 1 (no overlap) at G = 1, 2 and Bc = 64, 128: g2_bc64
#: best (1.17-1.21x torch flash at d = 64, 1.50-1.53x at d = 128), G = 1 about 2x slower.
#: run 2 (20261202T050801Z-1ff3899ea4) timed the pipeline (overlap) and G = 3: g2_bc64_ov best
#: (1.16-1.28x at d = 64, 1.43-1.64x at d = 128), G = 3 slower non-causal. Run 3: the 128-byte swizzle.
DEFAULT = ("g2_bc64_ov", dict(warpgroups=2, block_cols=64, overlap=True))
VARIANTS = {
    64: [
        DEFAULT,
        ("g2_bc64_ov_sw", dict(warpgroups=2, block_cols=64, overlap=True, swizzle=True)),
        ("g2_bc64_sw", dict(warpgroups=2, block_cols=64, swizzle=True)),
        ("g1_bc64_sw", dict(warpgroups=1, block_cols=64, swizzle=True)),
        ("g2_bc32_sw", dict(warpgroups=2, block_cols=32, swizzle=True)),
        ("sec8", dict(warpgroups=2, block_cols=64, swizzle=True, sections=8)),
        ("sec64", dict(warpgroups=2, block_cols=64, swizzle=True, sections=64)),
        ("dflt", dict(warpgroups=2, block_cols=64, swizzle=True, section_rule="l2")),
        ("all64", dict(warpgroups=2, block_cols=64, swizzle=True, section_rule="all64")),
        ("p2", dict(warpgroups=2, block_cols=64, swizzle=True, persistent=2)),
        ("p2_all64", dict(warpgroups=2, block_cols=64, swizzle=True, persistent=2, section_rule="all64")),
        ("p2_r128", dict(warpgroups=2, block_cols=64, swizzle=True, persistent=2, max_registers=128)),
        ("pp", dict(warpgroups=2, block_cols=64, swizzle=True, pingpong=True)),
    ],
    128: [
        DEFAULT,
        ("g2_bc64_ov_sw", dict(warpgroups=2, block_cols=64, overlap=True, swizzle=True)),
        ("g2_bc128_ov_sw", dict(warpgroups=2, block_cols=128, overlap=True, swizzle=True)),
        ("g2_bc64_sw", dict(warpgroups=2, block_cols=64, swizzle=True)),
        ("g1_bc64_ov_sw", dict(warpgroups=1, block_cols=64, overlap=True, swizzle=True)),
        ("sec4", dict(warpgroups=2, block_cols=128, overlap=True, swizzle=True, sections=4)),
        ("sec16", dict(warpgroups=2, block_cols=128, overlap=True, swizzle=True, sections=16)),
        ("sec64", dict(warpgroups=2, block_cols=128, overlap=True, swizzle=True, sections=64)),
        ("dflt", dict(warpgroups=2, block_cols=128, overlap=True, swizzle=True)),
        ("p1", dict(warpgroups=2, block_cols=128, overlap=True, swizzle=True, persistent=1)),
        ("pp", dict(warpgroups=2, block_cols=128, overlap=True, swizzle=True, pingpong=True)),
    ],
}
#: timed causal (and in fp16) too. g1_bc64_sw, g2_bc32_sw (d = 64: 96 and 80 registers, 5 and 3 blocks per
#: SM) and g1_bc64_ov_sw (d = 128: 183 registers, 2 blocks per SM) against the causal defaults (hopper2)
#: secS: the default build with causal blocks in L2 sections of S heads (the plan's `sections`;
#: 64 = every head at once, as run fa3-heavy-first-20261202 launched them)
CAUSAL_AND_FP16 = ("g2_bc64_ov_sw", "g1_bc64_sw", "g2_bc32_sw", "g1_bc64_ov_sw", "sec4", "sec8")
CAUSAL_AND_FP16 += ("sec16", "sec64")
#: version 5 (helper hopper3): dflt = the version-4b default build as a variant (timed beside the
#: candidates in one invocation; at d = 64 with FA3's "l2" section rule), all64 = every head in one
#: causal section at d = 64 (the plan's section_rule, the default since run fa3-v5-persistent-20261203),
#: pN = the default build on a persistent grid of N blocks per SM (Fa3Config.persistent)
CAUSAL_AND_FP16 += ("dflt", "all64", "p2", "p2_all64", "p1")
#: version 6 (helper hopper4): p2_r128 = p2 (the counter's order, all heads in one causal section) capped at
#: 128 registers, so that two 256-thread blocks fit per SM causal too (p2 causal: 150)
CAUSAL_AND_FP16 += ("p2_r128",)
#: pp = the default build with the ping-pong order of its two warpgroups (Fa3Config.pingpong)
CAUSAL_AND_FP16 += ("pp",)


def builds(dtypes, causals, full_dtype="bf16"):
    out = []
    for causal in causals:
        for dtype in dtypes:
            for d, vs in VARIANTS.items():
                for name, kw in vs:
                    if name in CAUSAL_AND_FP16 or (dtype == full_dtype and not causal):
                        out.append((d, dtype, causal, name, kw))
    return out


def small_check(cfg, dtype, causal):
    """(O error, L error, reading): the ragged GQA case against float64, trying the other stride
    readings of the descriptor when the first fails."""
    import numpy as np

    from gpu_kernels.kernels import fa3_tc as mod
    from gpu_kernels.reference import attention_reference, random_qkv, rel_error
    from gpu_kernels.tensor_core import wgmma_ops
    from gpu_kernels.tensor_core.dtypes import round_to
    from simlib.units import UNIT_ROUNDOFF

    q, k, v = random_qkv(1, 4, 1000, cfg.head_dim, seed=11, kv_heads=2, query_len=777)
    ref_o, ref_l = attention_reference(*(round_to(x, dtype) for x in (q, k, v)), causal=causal)
    tried = []
    for kmaj, mnmaj in ((True, True), (True, False), (False, True), (False, False)):
        wgmma_ops.K_MAJOR_SBO_ALONG_MN, wgmma_ops.MN_MAJOR_SBO_ALONG_MN = kmaj, mnmaj
        mod.fa3_tc_kernel.cache_clear()
        r = mod.run_fa3_tc(q, k, v, dtype=dtype, config=cfg, causal=causal)
        ok = np.all(np.isfinite(r.o)) and np.all(np.isfinite(r.lse))
        e_o, e_l = (rel_error(r.o, ref_o), rel_error(r.lse, ref_l)) if ok else (float("inf"),) * 2
        reading = f"K-major SBO along MN {kmaj}, MN-major SBO along MN {mnmaj}"
        tried.append(f"{reading}: O {e_o:.2e}")
        if e_o < 2 * UNIT_ROUNDOFF[dtype] and e_l < 1e-5:
            return e_o, e_l, reading
    raise AssertionError("fa3_tc wrong under every descriptor reading: " + "; ".join(tried))


@dataclasses.dataclass(frozen=True)
class _Sectioned:
    """Fa3TcPlan.of with the causal grid's L2 sections fixed at `sections` heads (variants secS) or
    chosen by `section_rule` (variants *all64)."""

    sections: int | None
    section_rule: str = "l2"

    def of(self, *args, **kwargs):
        from gpu_kernels.kernels.fa3_tc import Fa3TcPlan

        plan = Fa3TcPlan.of(*args, **kwargs)
        return dataclasses.replace(plan, sections=self.sections, section_rule=self.section_rule)


def worker(job, seq_lens, lock):
    """fa3 jobs here; torch flash, cuDNN and fa2_tc jobs in fa2_tc_speed.worker."""
    if job[0] != "fa3":
        return fa2.worker(job, seq_lens, lock)
    import torch

    from gpu_kernels.device import select_backend

    select_backend(False)
    from gpu_kernels.kernels.fa3_tc import Fa3Config, Fa3TcPlan, default_config
    from gpu_kernels.measure import side_by_side as bench

    _, d, dtype, causal, name, kw = job
    kw = None if kw is None else dict(kw)
    sections = kw.pop("sections", None) if kw else None  # the plan's, not the config's: the causal grid
    rule = kw.pop("section_rule", None) if kw else None  # None: the plan's default rule
    cfg = (default_config(d) if kw is None else Fa3Config(d, **kw)).check()
    plan_class = Fa3TcPlan if not sections and rule is None else _Sectioned(sections, rule or "all64")
    t0 = time.perf_counter()
    e_o, e_l, reading = small_check(cfg, dtype, causal)
    compile_s = time.perf_counter() - t0
    rows = []
    with lock:
        for n in seq_lens:
            sh = bench.Shape(dtype, causal, n, d, torch)
            launch = fa2.plan_launch(plan_class, sh, cfg)
            row = {
                "kernel": "fa3_tc",
                "config": f"{name}: {cfg.name}",
                "note": f"small check (1x4/2 heads, N_q 777, N_k 1000): O {e_o:.2e}, L {e_l:.2e}; "
                f"{reading}; compile+check {compile_s:.1f} s",
            }
            rows.append(fa2.measured_row(row, sh, launch, torch, bench))
            del sh
            torch.cuda.empty_cache()
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=12)
    p.add_argument("--seq-lens", default="4096,16384")
    p.add_argument("--dtypes", default="bf16,fp16")
    p.add_argument("--causal", default="no,yes")
    p.add_argument("--variants", default="", help="comma-separated fa3 variant names (default: all)")
    p.add_argument("--file", default="fa3_tc_speed.csv", help="the CSV's name under --out")
    p.add_argument(
        "--defaults",
        action="store_true",
        help="time fa3_tc's default build per head dim (kernels.fa3_tc.default_config) at every dtype and "
        "causal value given, instead of the variants",
    )
    p.add_argument(
        "--head-dims", default="64,128", help="head dims of the fa3 builds (torch's jobs cover both)"
    )
    p.add_argument(
        "--no-fa2", action="store_true", help="leave fa2_tc's default out (torch flash and cuDNN stay)"
    )
    p.add_argument("--deadline-s", type=float, default=None, help="terminate builds still running after this")
    a = p.parse_args(argv)
    if os.path.basename(a.file) != a.file or not a.file.endswith(".csv"):
        p.error(f"--file must be a plain file name ending in .csv; got {a.file!r}")
    seq_lens = [int(x) for x in a.seq_lens.split(",")]
    causals = [c == "yes" for c in a.causal.split(",")]
    dtypes = a.dtypes.split(",")
    keep = set(a.variants.split(",")) if a.variants else None
    jobs = [(kind, dt, c) for kind in ("flash", "cudnn") for c in causals for dt in dtypes]
    if not a.no_fa2:
        jobs += [("fa2", d, "bf16", c, "default", {}) for c in causals for d in (64, 128)]
    if a.defaults:
        jobs += [("fa3", d, dt, c, "default", None) for c in causals for dt in dtypes for d in VARIANTS]
    else:
        dims = {int(x) for x in a.head_dims.split(",")}
        jobs += [
            ("fa3",) + b for b in builds(dtypes, causals) if (keep is None or b[3] in keep) and b[0] in dims
        ]
    # the fa3 builds first: their compiles are the long pole
    jobs = [j for j in jobs if j[0] == "fa3"] + [j for j in jobs if j[0] != "fa3"]
    t0 = time.monotonic()
    rows, errors = run_jobs(worker, jobs, seq_lens, processes=a.jobs, deadline_s=a.deadline_s)
    what = "fa3_tc (wgmma) variants vs torch flash, cuDNN, fa2_tc (issue 22)"
    return report(rows, errors, out=a.out, filename=a.file, what=what, started=t0, config_width=20)


if __name__ == "__main__":
    sys.exit(main())
