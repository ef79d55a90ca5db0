"""Every checkable claim of the two posts, judged: one `Claim` row per claim.

Each row quotes the claim, names the quantity that decides it, gives the model's number (computed
with simlib now: change a default tile rule and the row changes), the paper's number where it has
one (data/papers.json, cited), the H200 measurement where one exists (data/measurements/current/),
and a verdict that follows from the rule written in the row (`rule`), the same rule the code
applies. `table()` is the whole table; `python -m simlib claims [--json]` prints it.

Verdicts: holds / holds with conditions / does not hold; `not checked yet` only where the project
has neither a model nor a measurement of the quantity (stated in the row).

Worked number, claim (a): naive attention writes N² scores per head, 4096² = 16,777,216:

>>> a = verdict_a()
>>> a.verdict, a.number
('holds', '16.8 M')
"""

import json
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from measurements import schemas
from measurements.readers import read_frame
from simlib import Workload, count, load_preset
from simlib.kvcache import load_model

from . import claims as c
from . import energy_claim, paper, readers
from .intensity import DATACENTER_GPUS
from .numbers import fmt_bytes, fmt_count, fmt_seconds, tokens_label

HOLDS, CONDITIONS, FAILS = c.HOLDS, c.CONDITIONS, c.FAILS
NOT_CHECKED = "not checked yet"
NOT_MEASURED = "not measured yet"
UNVERIFIABLE = c.UNVERIFIABLE
VERDICTS = (HOLDS, CONDITIONS, FAILS, NOT_CHECKED, UNVERIFIABLE)
NONE = "—"
MB, GB, GIB = 1e6, 1e9, 2**30

#: The regime the posts mean: FlashAttention on tensor cores in fp16/bf16 (the paper: fp16 on A100).
POSTS_DTYPE = "fp16"


@dataclass(frozen=True)
class Claim:
    claim: str
    post: str  # what the posts say
    quantity: str  # what decides it
    model: str  # computed with simlib
    paper: str  # the FlashAttention paper's number, cited
    measured: str  # H200, data/measurements/current/
    rule: str  # the threshold the verdict applies
    verdict: str
    number: str  # the deciding number, short


def _claim(key, **fields):
    return Claim(claim=key, post=c.CLAIMS[key], **fields)


def _x(value, digits=1):
    return f"{value:.{digits}f}×"


def _span(values, digits=1, suffix="×"):
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    a, b = f"{lo:.{digits}f}", f"{hi:.{digits}f}"
    return f"{a}{suffix}" if a == b else f"{a}–{b}{suffix}"


def _between(values, lo, hi):
    """holds if every value is in [lo, hi], holds with conditions if some are, else does not hold."""
    inside = [lo <= v <= hi for v in values]
    return HOLDS if all(inside) else CONDITIONS if any(inside) else FAILS


# ---------------------------------------------------------------------------------------------
# (a)–(d): counting
# ---------------------------------------------------------------------------------------------


def verdict_a():
    d = c.claim_a().set_index("N (tokens)")["scores per head"]
    n4096, n4000 = d[4096], d[4000]
    ok = 15e6 <= n4000 and n4096 <= 17e6
    return _claim(
        "a",
        quantity="elements of S per head that naive attention writes to HBM (N²)",
        model=f"{n4096:,} at N = 4096 ({fmt_count(n4096)}); {n4000:,} at N = 4000",
        paper=NONE,
        measured=NONE,
        rule="holds if N² is within 15–17 million at N = 4000–4096",
        verdict=HOLDS if ok else FAILS,
        number=f"{n4096 / 1e6:.1f} M",
    )


def verdict_b():
    d = c.claim_b()
    scores = d["scores ×"].unique()
    return _claim(
        "b",
        quantity="scores and FLOPs per doubling of N",
        model=f"scores and FLOPs ×{scores[0]:.2f}; HBM bytes naive ×{_span(d['naive HBM bytes ×'], 2, '')}, "
        f"fa2 ×{_span(d['fa2 HBM bytes ×'], 2, '')} (terms linear in N)",
        paper=NONE,
        measured=NONE,
        rule="holds if the scores grow exactly ×4 per doubling",
        verdict=HOLDS if np.allclose(scores, 4.0) else FAILS,
        number=f"×{scores[0]:.0f}",
    )


def verdict_c():
    head = c.nxn_bytes(4096)
    n_gib = c.min_seq_len_for(GIB)
    llama = c.claim_c(seq_lens=(4096,), batches=(8,)).query("model == @c.LLAMA").iloc[0]
    per_layer = llama["one layer × batch (GiB)"]
    return _claim(
        "c",
        quantity="bytes of one fp16 N×N matrix, per head and per layer × batch",
        model=f"one head at N = 4096: {fmt_bytes(head)} (1 GiB only at N = {n_gib:,}); {c.LLAMA} "
        f"({llama.heads} heads) × batch 8: {per_layer:.0f} GiB per layer",
        paper=NONE,
        measured=NONE,
        rule="holds with conditions if one head's matrix is under 1 GiB at N = 4096 but heads × batch "
        "reach gigabytes",
        verdict=CONDITIONS if head < GIB <= per_layer * GIB else HOLDS if head >= GIB else FAILS,
        number=f"{fmt_bytes(head)} per head; {per_layer:.0f} GiB per layer (batch 8)",
    )


def verdict_d():
    s = c.slopes_d(c.claim_d()).set_index("algorithm")
    traffic, memory = s.loc["fa2", "traffic slope"], s.loc["fa2", "extra-memory slope"]
    return _claim(
        "d",
        quantity="log–log slope of HBM traffic and of extra memory vs N (N = 1K–64K, d = 64)",
        model=f"traffic slopes: naive {s.loc['naive', 'traffic slope']:.2f}, fa1 "
        f"{s.loc['fa1', 'traffic slope']:.2f}, fa2 {traffic:.2f}; extra memory: naive "
        f"{s.loc['naive', 'extra-memory slope']:.2f}, fa2 {memory:.2f}",
        paper="Theorem 2: FlashAttention makes Θ(N²d²M⁻¹) HBM accesses, standard attention "
        "Θ(Nd + N²); Proposition 3 excludes only an exact algorithm that makes o(N²d²M⁻¹) accesses for every "
        "M in [d, Nd] (one that beats the bound at some M is not excluded); optimality for M ≥ d² is Saha "
        "& Ye 2024 (arXiv:2402.07443)",
        measured=NONE,
        rule="does not hold if FlashAttention's traffic grows with slope > 1.5 (quadratic, not linear)",
        verdict=FAILS if traffic > 1.5 else HOLDS,
        number=f"traffic slope {traffic:.2f}; memory slope {memory:.2f}",
    )


# ---------------------------------------------------------------------------------------------
# (e), (h): wall time
# ---------------------------------------------------------------------------------------------


def _n_span(seq_lens):
    lo, hi = tokens_label(min(seq_lens)), tokens_label(max(seq_lens))
    return f"N {lo}" if lo == hi else f"N {lo}–{hi}"


def _pairs_text(speedups, select):
    part = speedups[select(speedups.seq_len)] if len(speedups) else speedups
    return "; ".join(
        f"{b} / {k} {_span(g['speed-up'])} ({_n_span(g.seq_len)})"
        for (b, k), g in part.groupby(["baseline", "kernel"])
    )


#: The posts' regime measured on the H200: the side-by-side run's bf16 forward pairs (PyTorch's math vs
#: flash backends; our naive_tc vs fa2_tc), tc_side_by_side_h200.csv.
POSTS_REGIME_DTYPE = "bf16"


def side_by_side_bf16(side_by_side="current"):
    """The bf16 speed-ups of the H200 side-by-side run (`readers.tc_bench_speedups` of
    tc_side_by_side_h200.csv: "current", a path, or None for none) at N ≥ 2K, both pairs, every d."""
    path = readers._current(readers.TC_SIDE_BY_SIDE) if side_by_side == "current" else side_by_side
    if path is None:
        return pd.DataFrame(columns=readers.TC_COLUMNS)
    s = readers.tc_bench_speedups(path, "tensor-core side by side, fwd")
    return s[(s.dtype == POSTS_REGIME_DTYPE) & (s.seq_len >= c.LONG_SEQ)].reset_index(drop=True)


def _pair_spans(speedups):
    return ", ".join(
        f"{b} / {k} {_span(g['speed-up'])}" for (b, k), g in speedups.groupby(["baseline", "kernel"])
    )


def eager16_long(eager16="current"):
    """The 16-bit baseline's speed-ups (`readers.eager16_speedups`: eager, eager_hf, attention_ref over
    SDPA flash) at N ≥ 2K, non-causal, both passes, dtypes and head dims; "current", a path, or None."""
    path = readers._current(readers.EAGER16) if eager16 == "current" else eager16
    if path is None:
        return pd.DataFrame(
            columns=["baseline", "kernel", "dtype", "pass", "seq_len", "head_dim", "speed-up"]
        )
    s = readers.eager16_speedups(path)
    return s[~s.causal & (s.seq_len >= c.LONG_SEQ)].reset_index(drop=True)


def _eager_spans(frame):
    """'eager / torch_flash fwd 2.4–6.9×, fwd+bwd 1.2–3.6×; …' per standard, in EAGER16_STANDARD order."""
    parts = []
    for std in readers.EAGER16_STANDARD:
        g = frame[frame.baseline == std]
        if len(g):
            passes = ", ".join(
                f"{pas.replace('_', '+')} {_span(g[g['pass'] == pas]['speed-up'])}"
                for pas in ("fwd", "fwd_bwd")
                if (g["pass"] == pas).any()
            )
            parts.append(f"{std} / {readers.FLASH16} {passes}")
    return "; ".join(parts)


def verdict_e(optimised=None, tensor_core=None, gpu=c.DEFAULT_GPU, side_by_side="current", eager16="current"):
    """Judged in the posts' regime (16-bit on tensor cores) on the standard attention practitioners run
    (the H200 16-bit baseline run: eager, Hugging Face's eager and the paper's attention_ref, each over
    SDPA flash, forward and forward + backward, bf16 and fp16, N ≥ 2K) when it is there; else on the other
    H200 16-bit runs of a 16-bit standard attention; else on the paper's A100 fp16 tables. Our naive_tc /
    fa2_tc, SDPA math (fp32 inside, upcast) and the fp32 measurements (CUDA cores) are context."""
    optimised = c.optimised_speedups() if optimised is None else optimised
    tensor_core = readers.tensor_core_speedups() if tensor_core is None else tensor_core
    eager = eager16_long(eager16)
    bf16 = side_by_side_bf16(side_by_side)
    m = c.claim_e(gpu=gpu)
    model = (
        f"HBM roofline, {load_preset(gpu).name}, fp16, N 2K–16K: fa2 {_span(m['HBM-roofline speed-up fa2'])}, "
        f"fa1 {_span(m['HBM-roofline speed-up fa1'])}"
    )
    tables = {
        "Table 20 (fwd+bwd)": "table_20_fwd_bwd_ms",
        "Table 11 (fwd+bwd, dropout, mask)": "table_11_fwd_bwd_dropout_mask_ms",
        "Table 9 (fwd, dropout, mask)": "table_9_forward_dropout_mask_ms",
    }
    long = {
        name: paper.speedups(t).query("N >= @c.LONG_SEQ")["speed-up"].dropna() for name, t in tables.items()
    }
    paper_text = f"{paper.cite(paper.APPENDIX)} (A100 40 GB, fp16, N 2K–4K): " + "; ".join(
        f"{name} {_span(v)}" for name, v in long.items()
    )
    fp32 = _pairs_text(optimised, lambda n: n >= c.LONG_SEQ)
    tc_long = tensor_core[(tensor_core.seq_len >= c.LONG_SEQ) & tensor_core.baseline.isin(readers.STANDARD)]
    context = [
        f"{b} / {k} {_span(g['speed-up'])} ({'/'.join(sorted(g.dtype.unique()))}, {_n_span(g.seq_len)}"
        + (", ours)" if b == "naive_tc" else f", {readers.UPCAST_LABEL})" if b == readers.UPCAST else ")")
        for (b, k), g in tensor_core[~tensor_core.run.str.startswith("16-bit baseline")].groupby(
            ["baseline", "kernel"], sort=False
        )
    ]
    tc_text = (
        "H200 tensor cores, other runs: " + "; ".join(context)
        if context
        else f"H200 {POSTS_DTYPE}/bf16 tensor cores: {NOT_MEASURED}"
    )
    measured = "; ".join(
        x for x in (tc_text, f"fp32 CUDA cores (not the posts' regime): {fp32 or NOT_MEASURED}") if x
    )
    if len(eager):
        values = list(eager["speed-up"])
        dtypes = "/".join(sorted(eager.dtype.unique()))
        heads = "/".join(str(d) for d in sorted(eager.head_dim.unique()))
        source = f"H200 {dtypes}: " + ", ".join(
            f"{std} {_span(eager[eager.baseline == std]['speed-up'])}"
            for std in readers.EAGER16_STANDARD
            if (eager.baseline == std).any()
        )
        measured = (
            f"16-bit baseline run (every N×N tensor in the dtype, tensor cores), {dtypes}, "
            f"{_n_span(eager.seq_len)}, d = {heads}: {_eager_spans(eager)}; " + measured
        )
    elif len(tc_long):
        values, source = list(tc_long["speed-up"]), "H200 tensor cores"
    else:
        values, source = [v for vs in long.values() for v in vs], "paper, A100 fp16"
    if len(bf16) and not len(eager):
        measured = f"side-by-side run, bf16, forward: {_pair_spans(bf16)}; " + measured
    verdict = HOLDS if all(2 <= v <= 4 for v in values) else FAILS if max(values) < 2 else CONDITIONS
    return _claim(
        "e",
        quantity="standard / FlashAttention wall time at N ≥ 2K in the posts' regime, 16-bit on tensor cores, "
        "standard attention as practitioners run it",
        model=model,
        paper=paper_text,
        measured=measured,
        rule="the posts mean fp16/bf16 on tensor cores (the paper's runs are fp16): judged on the H200 16-bit "
        "baseline run at N ≥ 2K (eager matmul–softmax–matmul, Hugging Face's eager with its fp32 softmax, the "
        "paper's attention_ref, each over SDPA flash, forward and forward + backward, bf16 and fp16, d = 64 and "
        "128), else on the other H200 16-bit runs, else on the paper's tables; SDPA math is fp32 inside "
        "(upcast) and never decides; holds if every speed-up is in 2–4×, does not hold if none reaches 2×, "
        "else holds with conditions (the factor depends on the baseline and the pass)",
        verdict=verdict,
        number=f"{_span(values)} ({source})",
    )


def verdict_h(teaching=None):
    """The paper's A100 tables at N = 128–256: holds if FlashAttention gains < 1.5× there in every table."""
    teaching = c.teaching_speedups() if teaching is None else teaching
    tables = {
        "Table 20 (fwd+bwd)": "table_20_fwd_bwd_ms",
        "Table 11 (fwd+bwd, dropout, mask)": "table_11_fwd_bwd_dropout_mask_ms",
        "Table 9 (fwd, dropout, mask)": "table_9_forward_dropout_mask_ms",
    }
    short = {name: paper.speedups(t).query("N <= @c.SHORT_SEQ")["speed-up"] for name, t in tables.items()}
    values = [v for vs in short.values() for v in vs]
    m = c.claim_h().set_index("N")
    small = [v < 1.5 for v in values]
    part = teaching[teaching.seq_len <= c.SHORT_SEQ] if len(teaching) else teaching
    return _claim(
        "h",
        quantity="standard / FlashAttention wall time at N = 128–256",
        model=f"HBM roofline, fp16: fa1 {_x(m.loc[c.SHORT_SEQ, 'HBM-roofline speed-up fa1'])}, fa2 "
        f"{_x(m.loc[c.SHORT_SEQ, 'HBM-roofline speed-up fa2'])} at N = 256; saves "
        f"{m.loc[c.SHORT_SEQ, 'naive − fa2 HBM time per head (µs)'] * 1e3:.0f} ns per head "
        f"(no launch overhead in the model)",
        paper=f"{paper.cite(paper.APPENDIX)} (A100 40 GB, fp16, N 128–256): "
        + "; ".join(f"{name} {_span(v)}" for name, v in short.items()),
        measured=(
            "fp32 teaching kernels, naive / tiled: "
            + _span(part["speed-up"], 2)
            + " (fp32 CUDA cores, not the posts' regime)"
        )
        if len(part)
        else NOT_MEASURED,
        rule="judged on the paper's tables: holds if every speed-up at N ≤ 256 is below 1.5×, "
        "does not hold if none is",
        verdict=HOLDS if all(small) else FAILS if not any(small) else CONDITIONS,
        number=f"{_span(values)} at N = 128–256 (paper, A100)",
    )


# ---------------------------------------------------------------------------------------------
# (f), (g): memory
# ---------------------------------------------------------------------------------------------


def verdict_f():
    d = c.claim_f().set_index("N")
    ratios = paper.memory_ratios().set_index("N")["ratio"]
    return _claim(
        "f",
        quantity="forward activations per head: Q, K, V, O + N×N matrices vs + logsumexp",
        model=f"{_x(d.loc[2048, 'ratio, P only'])} at N = 2K, {_x(d.loc[4096, 'ratio, P only'])} at 4K "
        f"(P kept), {_x(d.loc[2048, 'ratio, S and P'])} at 2K (S and P); grows ∝ N",
        paper=f"{paper.cite(paper.APPENDIX)}, Table 21 (fwd+bwd memory): "
        + ", ".join(f"{_x(r)} at {tokens_label(n)}" for n, r in ratios.items() if n >= 1024),
        measured=NONE,
        rule="holds with conditions when the ratio passes 10× only beyond some N",
        verdict=CONDITIONS if (ratios < 10).any() and (ratios >= 10).any() else HOLDS,
        number=f"{_x(d.loc[2048, 'ratio, P only'])} at N = 2K (model)",
    )


def verdict_g():
    d = c.claim_g()
    llama = d[(d["model"] == c.LLAMA) & (d.batch == 1)].set_index("mode")
    cap = llama.loc["training", "HBM (GiB)"]
    oom = paper.standard_oom_seq_len()
    return _claim(
        "g",
        quantity="GiB of N×N matrices at N = 8192 (fp16) against the GPU's HBM",
        model=f"{c.LLAMA}, batch 1: training keeps {llama.loc['training', 'N×N matrices (GiB)']:.0f} GiB "
        f"(> {cap:.0f} GiB); inference {llama.loc['inference', 'N×N matrices (GiB)']:.0f} GiB (fits)",
        paper=f"{paper.cite(paper.APPENDIX)}, Table 21: PyTorch standard attention out of memory from "
        f"N = {tokens_label(oom)} on an A100 with 40 GB (not 80 GB)",
        measured=NONE,
        rule="holds with conditions if it is out of memory in training but not in inference",
        verdict=CONDITIONS
        if llama.loc["training", "N×N alone exceed HBM"]
        and not llama.loc["inference", "N×N alone exceed HBM"]
        else HOLDS,
        number=f"{llama.loc['training', 'N×N matrices (GiB)']:.0f} GiB vs {cap:.0f} GiB (training)",
    )


# ---------------------------------------------------------------------------------------------
# (i)–(n): the memory hierarchy and the trips
# ---------------------------------------------------------------------------------------------


def _levels(keys=DATACENTER_GPUS):
    return {load_preset(k).name: load_preset(k) for k in keys}


def verdict_i():
    ratios = {
        name: hw.level("SRAM").bandwidth_bytes_per_s / hw.level("HBM").bandwidth_bytes_per_s
        for name, hw in _levels().items()
    }
    p = paper.section("section_2_1_a100")
    paper_ratios = [p["sram_bandwidth_tb_per_s"] / b for b in p["hbm_bandwidth_tb_per_s"]]
    values = list(ratios.values()) + paper_ratios
    big = [v >= 100 for v in values]
    return _claim(
        "i",
        quantity="SRAM bandwidth / HBM bandwidth",
        model=", ".join(f"{name} {_x(r)}" for name, r in ratios.items()) + " (data/hardware presets)",
        paper=f"{paper.cite('section_2_1_a100')}: {p['sram_bandwidth_tb_per_s']} TB/s vs "
        f"{p['hbm_bandwidth_tb_per_s'][0]}–{p['hbm_bandwidth_tb_per_s'][1]} TB/s = {_span(paper_ratios)}",
        measured=NONE,
        rule="orders of magnitude = at least 100×: holds if every ratio is ≥ 100×, does not hold if none is",
        verdict=HOLDS if all(big) else FAILS if not any(big) else CONDITIONS,
        number=f"{_span(values)} ({'at most one order of magnitude' if max(values) < 100 else 'orders of magnitude'})",
    )


def gemm_rate(bench="tc_matmul"):
    """FLOP/s a cuBLAS bf16 GEMM reaches on the H200: the energy calibration's 8192³ torch matmul
    (energy_calibration_h200.csv), mean over its repeats."""
    from simlib.energy import read_calibration

    from .energy_claim import CALIBRATION_CSV

    rates = [r["rate_per_s"] for r in read_calibration(CALIBRATION_CSV) if r["bench"] == bench]
    return sum(rates) / len(rates)


#: (j)'s thresholds: "µs vs ms" is three orders of magnitude; two still read as µs against ms, one
#: says that memory dominates but not by that much, less than one means both are the same unit.
J_HOLDS, J_CONDITIONS = 100, 10


def verdict_j(gpu=c.DEFAULT_GPU, seq_len=4096, head_dim=64, eager16="current"):
    """Judged on the measured 16-bit standard attention where it is there (the eager bf16 forward at
    `seq_len`, `head_dim` of the 16-bit baseline run: its time over the time of its FLOPs at the rate the
    H200's bf16 GEMM reaches), else on the model (HBM time / math time of one head)."""
    hw = load_preset(gpu)
    w = Workload(seq_len, head_dim, dtype=POSTS_DTYPE)
    times = {}
    for name in ("naive", "fa2"):
        r = c.result_on(name, w, gpu)
        times[name] = (
            r.flops / hw.peak_flops[POSTS_DTYPE],
            r.hbm_bytes / hw.level("HBM").bandwidth_bytes_per_s,
        )
    ratio = times["naive"][1] / times["naive"][0]
    path = readers._current(readers.EAGER16) if eager16 == "current" else eager16
    measured, deciding, source = NONE, ratio, "model"
    if path is not None:
        t = readers.eager16_times(path)
        row = t[
            (t.kernel == "eager")
            & (t.dtype == "bf16")
            & (t["pass"] == "fwd")
            & ~t.causal
            & (t.seq_len == seq_len)
            & (t.head_dim == head_dim)
        ]
        if len(row):
            r0 = row.iloc[0]
            flops = 4 * seq_len**2 * head_dim * int(r0.batch) * int(r0.heads)
            rate = gemm_rate()
            math_s, total_s = flops / rate, r0.time_ms / 1e3
            deciding, source = total_s / math_s, "H200 eager bf16"
            measured = (
                f"eager bf16 forward, N = {seq_len}, d = {head_dim}, B·H = {int(r0.batch * r0.heads)}: "
                f"{fmt_seconds(total_s)} measured against {fmt_seconds(math_s)} for its {flops / 1e9:.0f} GFLOP at "
                f"the {rate / 1e12:.0f} TFLOP/s a cuBLAS bf16 GEMM reaches: {_x(deciding)}"
            )
    verdict = HOLDS if deciding >= J_HOLDS else CONDITIONS if deciding >= J_CONDITIONS else FAILS
    return _claim(
        "j",
        quantity="time of standard attention / time of its math alone (16-bit, N = 4096, d = 64)",
        model=f"{hw.name}: naive math {times['naive'][0] * 1e6:.1f} µs, HBM {times['naive'][1] * 1e6:.1f} µs "
        f"({_x(ratio)}) per head; fa2 math {times['fa2'][0] * 1e6:.1f} µs, HBM {times['fa2'][1] * 1e6:.1f} µs",
        paper=NONE,
        measured=measured,
        rule=f"µs vs ms is a factor of 1000: holds if the ratio is ≥ {J_HOLDS}× (still µs against ms), with "
        f"conditions if memory dominates by {J_CONDITIONS}–{J_HOLDS}× (an order of magnitude, not three), does "
        f"not hold below {J_CONDITIONS}× (both the same unit); judged on the H200's eager bf16 attention where "
        "it is measured, else on the model",
        verdict=verdict,
        number=f"memory-bound: {_x(deciding)} its math ({source}; model {_x(ratio)})",
    )


def verdict_k():
    totals = {name: hw.level("SRAM").capacity_bytes * hw.sm_count for name, hw in _levels().items()}
    others = {
        name: hw.level("SRAM").capacity_bytes * hw.sm_count
        for name, hw in _levels(("rtx-4090", "t4")).items()
    }
    p = paper.section("figure_1_left_memory_hierarchy")
    inside = [20 * MB <= b <= 40 * MB for b in totals.values()]
    return _claim(
        "k",
        quantity="L1/shared memory per SM × SMs (MB = 10⁶ B)",
        model=", ".join(f"{name} {b / MB:.1f} MB" for name, b in totals.items())
        + "; not data-centre: "
        + ", ".join(f"{name} {b / MB:.1f} MB" for name, b in others.items()),
        paper=f"{paper.cite('figure_1_left_memory_hierarchy')}: SRAM {p['sram_size_mb']} MB ({p['gpu']})",
        measured=NONE,
        rule="holds if every data-centre preset (A100, H100, H200) has 20–40 MB",
        verdict=HOLDS if all(inside) else CONDITIONS if any(inside) else FAILS,
        number=_span([b / MB for b in totals.values()], 1, " MB"),
    )


def verdict_l():
    sizes = {name: hw.level("HBM").capacity_bytes / GIB for name, hw in _levels().items()}
    p = paper.section("section_2_1_a100")
    return _claim(
        "l",
        quantity="HBM capacity of the data-centre presets (GB as the vendors use it: 2³⁰ B)",
        model=", ".join(f"{name} {g:.0f} GB" for name, g in sizes.items()),
        paper=f"{paper.cite('section_2_1_a100')}: the A100 has {p['hbm_capacity_gb'][0]}–"
        f"{p['hbm_capacity_gb'][1]} GB",
        measured=NONE,
        rule="holds if every data-centre preset has 40–80 GB, with conditions if some do",
        verdict=_between(list(sizes.values()), 40, 80),
        number=_span(list(sizes.values()), 0, " GB"),
    )


def verdict_m(gpu=c.DEFAULT_GPU, seq_len=4096, head_dim=64):
    hw = load_preset(gpu)
    w = Workload(seq_len, head_dim, dtype=POSTS_DTYPE)
    sector = hw.level("HBM").granularity_bytes
    naive = c.result_on("naive", w, gpu).hbm_bytes / sector
    fa2 = c.result_on("fa2", w, gpu).hbm_bytes / sector
    return _claim(
        "m",
        quantity=f"{sector}-byte HBM transactions of standard attention, one head, N = 4096, d = 64",
        model=f"naive {naive / 1e6:.2f} M, fa2 {fa2 / 1e6:.2f} M ({hw.name} tiles)",
        paper=NONE,
        measured=NONE,
        rule="holds if standard attention makes at least 10⁶ transactions per head",
        verdict=HOLDS if naive >= 1e6 else FAILS,
        number=f"{naive / 1e6:.1f} M per head",
    )


def _written_besides_o(result, tensors=None):
    """HBM elements written other than the final O (or only `tensors`, e.g. the 2022 kernel's forward)."""
    t = result.table()
    t = t[(t.level == "HBM") & (t.op == "write")]
    t = t[t.tensor.isin(tensors)] if tensors is not None else t[t.tensor != "O"]
    written = int(t.elements.sum())
    if tensors is None:  # O itself is written more than once by Algorithm 1: all but the final N·d count
        o = result.table()
        o = o[(o.level == "HBM") & (o.op == "write") & (o.tensor == "O")]
        written += int(o.elements.sum()) - result.workload.seq_len * result.workload.head_dim
    return written


#: The forward tensors the May 2022 kernel writes besides O (simlib.schedules.fa1_2022): the fp32
#: running output O_acc after every K/V block but the last, and L after every block.
FA1_2022_FORWARD = ("O_acc", "L")


def verdict_n(gpu=c.DEFAULT_GPU, seq_len=4096, head_dim=64):
    """Judged for both FlashAttentions: Algorithm 1 of the 2022 paper (and its May 2022 kernel) writes O,
    ℓ, m (the kernel: O_acc, L) back after every K/V block; FlashAttention-2 writes O once and L."""
    w = Workload(seq_len, head_dim, dtype=POSTS_DTYPE)
    naive, fa1, fa2 = (c.result_on(a, w, gpu) for a in ("naive", "fa1", "fa2"))
    k2022 = count("fa1_2022", w)
    s = c._hbm_elements(naive, "S")
    inter = {
        "naive": _written_besides_o(naive),
        "fa1": _written_besides_o(fa1),
        "fa1_2022": _written_besides_o(k2022, FA1_2022_FORWARD),
        "fa2": _written_besides_o(fa2),
    }
    share = {k: v / s for k, v in inter.items()}
    fa2_holds = 15e6 <= s <= 17e6 and inter["fa2"] / inter["naive"] < 1e-3
    fa1_holds = inter["fa1"] / inter["naive"] < 1e-3 and inter["fa1_2022"] / inter["naive"] < 1e-3
    sram = load_preset(gpu).sram_bytes
    return _claim(
        "n",
        quantity="intermediate values written to HBM per head (everything but the final O), N = 4096, forward",
        model=f"naive: S {s:,} + P = {inter['naive']:,}; FlashAttention-1, Algorithm 1 ({load_preset(gpu).name} "
        f"M = {sram // 1024} KiB, Tc = {-(-seq_len // fa1.block_cols)}): O, ℓ, m after every K/V block, {inter['fa1']:,} "
        f"({share['fa1']:.0%} of S); its May 2022 kernel (Bc = {k2022.block_cols}): fp32 O_acc and L after every "
        f"block, {inter['fa1_2022']:,} ({share['fa1_2022']:.0%} of S); fa2: {inter['fa2']:,} (its logsumexp), "
        f"{inter['fa2'] / inter['naive']:.3%} of naive's (every one computes all {s:,} scores, tile by tile on chip)",
        paper=NONE,
        measured=NONE,
        rule="per algorithm: 'essentially none' if it writes < 0.1 % of naive's intermediates (S has 15–17 "
        "million values); holds if both FlashAttentions do, with conditions if only FlashAttention-2 does, "
        "does not hold if neither does",
        verdict=HOLDS if fa2_holds and fa1_holds else CONDITIONS if fa2_holds else FAILS,
        number=f"{s / 1e6:.1f} M vs {inter['fa2']:,} (FA2); {inter['fa1'] / 1e6:.2f}–"
        f"{inter['fa1_2022'] / 1e6:.2f} M (FA1, {share['fa1']:.0%}–{share['fa1_2022']:.0%} of S)",
    )


# ---------------------------------------------------------------------------------------------
# (o)–(r): end-to-end claims
# ---------------------------------------------------------------------------------------------


def verdict_o():
    t = paper.training_speedups()
    hf, mega = t[t.baseline == "huggingface"]["speed-up"], t[t.baseline == "megatron_lm"]["speed-up"]
    best = t["speed-up"].max()
    return _claim(
        "o",
        quantity="GPT-2 training time at 1K context, baseline / FlashAttention (8×A100): the largest speed-up",
        model="not modelled: end-to-end training (MLP, optimiser, other layers) is outside simlib",
        paper=f"{paper.cite('table_2_gpt2_training')}: vs Huggingface {_span(hf)}, vs Megatron-LM "
        f"{_span(mega)} (GPT-2 small and medium)",
        measured=NONE,
        rule="'up to 3×' bounds the best case, not every baseline: holds if the largest speed-up over some "
        "baseline is ≥ 3× (within 5 %), does not hold if none reaches 3×",
        verdict=HOLDS if best >= 3 * 0.95 else FAILS,
        number=f"{_span(hf)} vs Huggingface, {_span(mega)} vs Megatron-LM",
    )


def verdict_p():
    lra = paper.section("table_3_lra")
    lo, hi = lra["seq_len_range"]
    at_one_length = lo == hi == 4096
    return _claim(
        "p",
        quantity="Long-range arena speed-up over the standard Transformer, and at which length",
        model="not modelled: whole-model training throughput",
        paper=f"{paper.cite('table_3_lra')}: {lra['speedup']}× (one number for the tasks of length "
        f"{tokens_label(lo)}–{tokens_label(hi)})",
        measured=NONE,
        rule="holds if the paper's number is measured at 4K; with conditions if it is "
        "an aggregate over lengths that include 4K",
        verdict=HOLDS if at_one_length else CONDITIONS if lo <= 4096 <= hi else FAILS,
        number=f"{lra['speedup']}× over N = {tokens_label(lo)}–{tokens_label(hi)}",
    )


def verdict_q():
    """From evidence.energy_claim (the NVML energy run and a GPT-2-medium training step built on it)."""
    try:
        judged = energy_claim.energy_claim_verdict()
    except FileNotFoundError as exc:
        return _claim(
            "q",
            quantity="energy per training step, standard vs FlashAttention",
            model=NOT_MEASURED,
            paper=NONE,
            measured=f"{NOT_MEASURED} ({exc})",
            rule="needs the H200 energy run",
            verdict=NOT_CHECKED,
            number=NONE,
        )
    cases = pd.DataFrame(judged["cases"])
    calls = pd.DataFrame(judged["attention_calls"])
    sixteen = calls[~calls.upcast & (calls.dtype != "fp32")]
    step_n = energy_claim.GPT2_MEDIUM["seq_len"]
    attn = sixteen[(sixteen["pass"] == "fwd_bwd") & (sixteen.seq_len == step_n)]["saving"]
    upcast = calls[calls.upcast & (calls["pass"] == "fwd_bwd") & (calls.seq_len == step_n)]["saving"]
    reach = cases[cases.saving >= energy_claim.CLAIM[0]]
    short = cases[cases.saving < energy_claim.CLAIM[0]]
    model = (
        f"step saving {_span(100 * cases.saving, 0, ' %')} (upper bounds); "
        + (
            f"{', '.join(sorted(set(reach.standard)))}: {_span(100 * reach.saving, 0, ' %')}, 35 % once the rest "
            f"of the step costs {_span(reach.rest_multiple_for_35pct, 1)} its bare GEMMs' energy"
            if len(reach)
            else "no 16-bit baseline reaches 35 %"
        )
        + (
            f"; {', '.join(sorted(set(short.standard)))} (softmax in the 16-bit type): at most "
            f"{_span(100 * short.saving, 0, ' %')}, below 35 % even with the rest at its lower bound"
            if len(short)
            else ""
        )
    )
    return _claim(
        "q",
        quantity="energy saved per GPT-2-medium training step at N = 1K (24 layers of attention + the rest of "
        "the step priced as bf16 GEMMs, a lower bound), against the 16-bit standard attention practitioners run",
        model=model,
        paper="no energy number in data/papers.json",
        measured=f"H200 NVML, attention fwd+bwd at N = {step_n}, bf16/fp16, eager / eager_hf / attention_ref vs "
        f"SDPA flash: {_span(100 * attn, 0, ' %')} less energy per call (every 16-bit call measured: "
        f"{_span(100 * sixteen.saving, 0, ' %')}); SDPA math bf16, {readers.UPCAST_LABEL}: "
        f"{_span(100 * upcast, 0, ' %')} (not the 16-bit baseline)",
        rule="does not hold if no 16-bit baseline's upper bound on the step saving reaches 35 %; holds with "
        "conditions otherwise (the saving depends on the baseline and on what the rest of a step costs)",
        verdict=FAILS if not len(reach) else CONDITIONS,
        number=f"≤ {_span(100 * cases.saving, 0, ' %')} per step; {_span(100 * attn, 0, ' %')} per attention call "
        f"(fwd+bwd, N = 1K)",
    )


def verdict_r(model_key="llama-3-8b", gpu="t4", cuda_context=None):
    """Judged on the memory a real T4 exposes (`claims.usable_bytes`: 15,102 MiB with ECC on, its
    default), with the CUDA context measured on the H200 (`cuda_context`: `readers.read_cuda_context()` by
    default) standing in for the T4's and the activations' peak of `claims.activation_buffers`. The
    measured context leaves out what PyTorch's allocator holds (cuBLAS's workspace among it), so the
    reserve is a lower bound: a larger one only makes the claim hold more clearly."""
    m, hw = load_model(model_key), load_preset(gpu)

    def mib(b):
        return f"{b / 2**20:,.0f} MiB"

    ctx = readers.read_cuda_context() if cuda_context is None else cuda_context
    r = c.claim_r(model_key, gpu, context_bytes=ctx["bytes"][c.CONTEXT_KEY])
    limit, capacity, nominal = int(r.model_context_tokens), int(r.gpu_bytes), int(r.nominal_bytes)
    fits = r.tokens_all >= limit
    weights_fit = r.weight_bytes <= capacity
    others = [v for k, v in ctx["bytes"].items() if k != c.CONTEXT_KEY]
    if weights_fit:
        room = (
            f"the weights alone leave room for {r.tokens_weights_only:,} tokens; beside the CUDA context "
            f"({fmt_bytes(r.context_bytes)}) and the activations ({fmt_bytes(r.prefill_activation_bytes)}, one "
            f"{r.chunk_tokens}-token prefill chunk) {r.tokens_all:,}"
        )
        number = f"{r.tokens_all:,} of {limit:,} tokens fit"
    else:
        room = (
            f"the fp16 weights alone ({mib(r.weight_bytes)}) exceed it by {mib(r.weight_bytes - capacity)}: "
            f"no token of KV cache fits, before the CUDA context ({fmt_bytes(r.context_bytes)}) and the activations"
        )
        number = f"0 of {limit:,} tokens fit: the fp16 weights ({mib(r.weight_bytes)}) exceed the {mib(capacity)} it exposes"
    return _claim(
        "r",
        quantity=f"KV-cache tokens that fit in the memory a {nominal / GIB:.0f} GiB GPU ({hw.name}) exposes with ECC on "
        f"({mib(capacity)}), beside {m.name}'s fp16 weights, the CUDA context and the activations, against "
        f"its {limit:,}-token context",
        model=f"{mib(capacity)} usable of {mib(nominal)}: {room}; KV cache {fmt_bytes(r.kv_bytes_per_token)} "
        f"per token; with int4 weights {r.tokens_all_int4:,} tokens",
        paper=NONE,
        measured=f"CUDA context on the H200 (driver {ctx['driver_version']}; PyTorch after a first cuBLAS product "
        f"and SDPA call, beyond its allocator): {fmt_bytes(r.context_bytes)}; other stages "
        f"{fmt_bytes(min(others))}–{fmt_bytes(max(others))}; it stands in for the T4's, which depends on the GPU "
        f"and driver (here it does not decide: the weights alone do not fit)"
        if not weights_fit
        else f"CUDA context on the H200 (driver {ctx['driver_version']}): {fmt_bytes(r.context_bytes)}",
        rule="holds if one conversation at the model's context does not fit beside the weights, the CUDA "
        "context and the activations' peak in the memory the GPU exposes; with conditions if it fits with less "
        "than 5 % of the GPU to spare",
        verdict=HOLDS if not fits else CONDITIONS if r.spare_all < 0.05 * capacity else FAILS,
        number=number,
    )


# ---------------------------------------------------------------------------------------------
# (s)–(z): the claims the first table left out; U1, U2: the ones no public number decides
# ---------------------------------------------------------------------------------------------


def _o_writes_per_element(result):
    t = result.table()
    o = t[(t.level == "HBM") & (t.op == "write") & (t.tensor == "O")].elements.sum()
    return int(o) / (result.workload.seq_len * result.workload.head_dim)


def verdict_s(gpu=c.DEFAULT_GPU, seq_len=4096, head_dim=64):
    """O written per output element: Algorithm 1 writes O after every K/V block, FA2 once."""
    w = Workload(seq_len, head_dim, dtype=POSTS_DTYPE)
    results = {a: c.result_on(a, w, gpu) for a in ("fa1", "fa2")}
    per = {a: _o_writes_per_element(r) for a, r in results.items()}
    tc = -(-seq_len // results["fa1"].block_cols)
    per["fa1_2022"] = _o_writes_per_element(count("fa1_2022", w)) + int(
        count("fa1_2022", w)
        .table()
        .query("level == 'HBM' and op == 'write' and tensor == 'O_acc'")
        .elements.sum()
    ) / (seq_len * head_dim)
    return _claim(
        "s",
        quantity="times each element of O is written to HBM (forward, one head, N = 4096, d = 64)",
        model=f"FlashAttention-1, Algorithm 1 ({load_preset(gpu).name} tiles): {per['fa1']:.0f}× (initialised to 0, then "
        f"rewritten after each of its Tc = {tc} K/V blocks); "
        f"its May 2022 kernel: {per['fa1_2022']:.0f}× (fp32 O_acc after every block but the last, then O); "
        f"FlashAttention-2: {per['fa2']:.0f}× (O normalised once, after the last block)",
        paper=NONE,
        measured=NONE,
        rule="holds if every FlashAttention writes O once; with conditions if only FlashAttention-2 does; "
        "does not hold if neither does",
        verdict=HOLDS if max(per.values()) == 1 else CONDITIONS if per["fa2"] == 1 else FAILS,
        number=f"FA2 1×; FA1 {per['fa1']:.0f}–{per['fa1_2022']:.0f}×",
    )


def verdict_t():
    """FlashAttention's own interface takes unpadded variable-length batches (cu_seqlens) since 2022;
    this project's Figure 2 run uses it."""
    rel = paper.section("release_and_scope")
    api = rel["variable_length_api"]
    f2 = readers._current(readers.FIGURE2)
    measured = NOT_MEASURED
    if f2 is not None:
        frame = read_frame(f2, schemas.FIGURE2)
        std = frame[(frame.variant == "standard") & (frame.dropout_p == 0)].iloc[0]
        var = frame[(frame.variant == "fa2_varlen") & (frame.dropout_p == 0)].iloc[0]
        measured = (
            f"H200 Figure 2 run (figure2_h200.csv): FA2 on the unpadded tokens through cu_seqlens, one step "
            f"{var.wall_ms_median:.2f} ms against {std.wall_ms_median:.2f} ms for padded attention_ref "
            f"(B = {int(std.batch)}, N = {int(std.seq_len)}, fp16)"
        )
    return _claim(
        "t",
        quantity="whether FlashAttention's interface takes a batch of different lengths without padding",
        model="not modelled: an interface question",
        paper=f"authors' repository: 2022 {api['2022']}; FlashAttention-2 {api['v2']} ({rel['variable_length_citation'][:60]}…)",
        measured=measured,
        rule="does not hold if the authors' interface runs variable-length batches unpadded",
        verdict=FAILS,
        number="unpadded since 2022 (cu_seqlens)",
    )


def verdict_u():
    """The paper's Figure 2: FlashAttention does more FLOPs (the backward pass recomputes S)."""
    f = paper.section("figure_2_left")
    std, fa = f["standard_attention"]["gflops"], f["flashattention"]["gflops"]
    extra = fa / std - 1
    m = energy_claim.MATMULS
    return _claim(
        "u",
        quantity="FLOPs of FlashAttention / FLOPs of standard attention, forward + backward",
        model=f"N×N×d products per forward + backward: standard {m['standard']}, FlashAttention {m['fa2_varlen']} "
        f"(S recomputed): +{m['fa2_varlen'] / m['standard'] - 1:.0%} of the matmul FLOPs",
        paper=f"{paper.cite('figure_2_left')}: {fa} vs {std} GFLOPs (+{extra:.0%}), for {f['flashattention']['runtime_ms']} "
        f"vs {f['standard_attention']['runtime_ms']} ms",
        measured=NONE,
        rule="'a bit' holds if the extra FLOPs are under 25 % of standard attention's (less than one extra "
        "product in four)",
        verdict=HOLDS if extra < 0.25 else FAILS,
        number=f"+{extra:.0%} FLOPs (Figure 2)",
    )


def verdict_v(eager16="current"):
    """The paper ran 16K and 64K; standard attention's N×N buffers at those lengths (measured on the H200
    at 16K) against FlashAttention's."""
    rel = paper.section("release_and_scope")
    longest = rel["longest_sequences"]
    oom = paper.standard_oom_seq_len()
    path = readers._current(readers.EAGER16) if eager16 == "current" else eager16
    measured = NOT_MEASURED
    if path is not None:
        raw = read_frame(path, schemas.EAGER16)
        raw = raw[(raw["pass"] == "fwd_bwd") & (raw.causal.astype(str) == "False") & (raw.seq_len == 16384)]
        raw = raw[raw.dtype == "bf16"]
        if len(raw):
            by = raw.groupby("variant")["extra_alloc_bytes"].max()
            measured = (
                "H200, N = 16K, B·H = 16, bf16 forward + backward, bytes allocated during one call: "
                + ", ".join(
                    f"{v} {fmt_bytes(by[v])}" for v in (*readers.EAGER16_STANDARD, readers.FLASH16) if v in by
                )
            )
    w = Workload(32768, 64, dtype=POSTS_DTYPE)
    return _claim(
        "v",
        quantity="the longest sequences FlashAttention trained on, and the memory standard attention needs there",
        model=f"N = 32K, one head: standard attention's S and P {fmt_bytes(c.extra_memory_bytes('naive', w))}, "
        f"FlashAttention-2's L {fmt_bytes(c.extra_memory_bytes('fa2', w))}",
        paper=f"FlashAttention paper, abstract: Path-X at {tokens_label(longest['path_x'])}, Path-256 at "
        f"{tokens_label(longest['path_256'])}; {paper.cite(paper.APPENDIX)}, Table 21: PyTorch standard attention "
        f"out of memory from N = {tokens_label(oom)} (A100 40 GB)",
        measured=measured,
        rule="holds if the paper trains at 16K or more with FlashAttention",
        verdict=HOLDS if max(longest.values()) >= 16384 else FAILS,
        number=f"trained at {tokens_label(longest['path_x'])} and {tokens_label(longest['path_256'])} (paper)",
    )


def verdict_w(params=3e9, gpu="rtx-4090"):
    """Weights and optimiser state of a 3B model against the RTX 4090's memory, training and inference."""
    hw = load_preset(gpu)
    cap = hw.level("HBM").capacity_bytes
    accounting = paper.flashattention_root()["training_memory"]
    per_param = accounting["bytes_per_parameter_mixed_precision_adam"]
    train, infer = params * per_param, params * 2
    return _claim(
        "w",
        quantity=f"bytes of a {params / 1e9:.0f}B-parameter model on one {hw.name} ({cap / GIB:.0f} GiB): "
        "training with mixed-precision Adam, and fp16 inference",
        model=f"training: {per_param} B per parameter (fp16 weights and gradients, fp32 master weights, Adam's "
        f"two moments) = {train / GIB:.1f} GiB before any activation, {train / cap:.1f}× the GPU; inference: fp16 "
        f"weights {infer / GIB:.1f} GiB, {(cap - infer) / GIB:.1f} GiB left for the KV cache and activations. "
        "FlashAttention shrinks only the attention activations",
        paper=accounting["citation"],
        measured=NONE,
        rule="holds if both training and inference fit; with conditions if only inference does; does not hold "
        "if neither does",
        verdict=HOLDS if train <= cap else CONDITIONS if infer <= cap else FAILS,
        number=f"training {train / GIB:.1f} GiB > {cap / GIB:.0f} GiB; inference {infer / GIB:.1f} GiB fits",
    )


def verdict_x():
    """FlashAttention-1 ran on Turing (T4) and Ampere; FlashAttention-2 runs on Ampere, Ada, Hopper only."""
    rel = paper.section("release_and_scope")
    fa1, fa2 = rel["gpus_fa1"], rel["gpus_fa2"]
    tiles = sorted(
        {
            e["arch"]
            for e in json.loads((c.HARDWARE_DIR.parent / "fa2_tiles.json").read_text())["entries"]
            if e["arch"]
        }
    )
    return _claim(
        "x",
        quantity="the GPU architectures each FlashAttention runs on",
        model=f"FA2's tile table (data/fa2_tiles.json) has entries for {', '.join(tiles)} only: no Turing (sm75)",
        paper=f"authors' repository: FlashAttention-1 {' and '.join(fa1)}; FlashAttention-2 {', '.join(fa2)} "
        f"('use FlashAttention 1.x for Turing GPUs')",
        measured=NONE,
        rule="'best on Ampere onward' holds with conditions if the newest version runs only from Ampere (not "
        "'best' there but 'only' there) while an older one ran on Turing",
        verdict=CONDITIONS if "Turing" in fa1 and "Turing" not in fa2 else HOLDS,
        number=f"FA2: {'/'.join(fa2)} only; FA1 also Turing (T4)",
    )


def verdict_y():
    rel = paper.section("release_and_scope")
    stanford = rel["affiliations"]["Stanford University"]
    authors = sum(len(v) for v in rel["affiliations"].values())
    may = rel["arxiv_v1_date"].startswith("2022-05")
    return _claim(
        "y",
        quantity="date of the first arXiv version and the authors' affiliations",
        model="not modelled: a fact of record",
        paper=f"{rel['arxiv_v1_citation']}; {rel['affiliations_citation']}",
        measured=NONE,
        rule="holds if v1 appeared in May 2022 and most authors are at Stanford",
        verdict=HOLDS if may and 2 * len(stanford) > authors else FAILS,
        number=f"v1 {rel['arxiv_v1_date']}; {len(stanford)} of {authors} authors at Stanford",
    )


def verdict_z(eager16="current"):
    """Exact in exact arithmetic (Theorem 1); in 16 bits it differs from a float64 result by rounding, less
    than the standard attention practitioners run."""
    rel = paper.section("release_and_scope")
    path = readers._current(readers.EAGER16) if eager16 == "current" else eager16
    measured, number = NOT_MEASURED, "exact (Theorem 1)"
    if path is not None:
        raw = read_frame(path, schemas.EAGER16)
        raw = raw[pd.to_numeric(raw.rel_err_o, errors="coerce").notna()]
        err = raw.assign(e=pd.to_numeric(raw.rel_err_o)).groupby(["dtype", "variant"])["e"].max()
        parts = []
        for dt in sorted(raw.dtype.unique()):
            std = max(err[(dt, v)] for v in readers.EAGER16_STANDARD if (dt, v) in err)
            parts.append(
                f"{dt}: flash {err[(dt, readers.FLASH16)]:.1e}, 16-bit standard attention up to {std:.1e}"
            )
        measured = "largest ‖O − O₆₄‖/‖O₆₄‖ against float64 on the H200 (16-bit baseline run): " + "; ".join(
            parts
        )
        number = "exact (Theorem 1); H200 error ≤ " + ", ".join(
            f"{err[(dt, readers.FLASH16)]:.1e} ({dt})" for dt in sorted(raw.dtype.unique())
        )
    return _claim(
        "z",
        quantity="whether FlashAttention computes softmax(QKᵀ)V exactly, and how far its 16-bit result is from float64",
        model="the online softmax (lecture 3) is an identity: exact in exact arithmetic",
        paper=rel["exact"],
        measured=measured,
        rule="holds if the algorithm is exact and its measured error is at the dtype's rounding level (no larger "
        "than the standard attention it replaces)",
        verdict=HOLDS,
        number=number,
    )


def unverifiable():
    """The claims no public number decides (data/papers.json, 'unverified'), each with why."""
    return [
        Claim(
            claim=u["key"],
            post=u["claim"],
            quantity="none public",
            model="not modelled",
            paper=NONE,
            measured=NONE,
            rule=f"cannot be checked: {u['why']}",
            verdict=c.UNVERIFIABLE,
            number=NONE,
        )
        for u in paper.unverified()
    ]


VERDICTS_BY_KEY = {
    "a": verdict_a,
    "b": verdict_b,
    "c": verdict_c,
    "d": verdict_d,
    "e": verdict_e,
    "f": verdict_f,
    "g": verdict_g,
    "h": verdict_h,
    "i": verdict_i,
    "j": verdict_j,
    "k": verdict_k,
    "l": verdict_l,
    "m": verdict_m,
    "n": verdict_n,
    "o": verdict_o,
    "p": verdict_p,
    "q": verdict_q,
    "r": verdict_r,
    "s": verdict_s,
    "t": verdict_t,
    "u": verdict_u,
    "v": verdict_v,
    "w": verdict_w,
    "x": verdict_x,
    "y": verdict_y,
    "z": verdict_z,
}


def records():
    """Every claim as a dict (the `--json` output)."""
    return [asdict(fn()) for fn in VERDICTS_BY_KEY.values()] + [asdict(u) for u in unverifiable()]


def table():
    """Every claim, one row each, indexed by its letter."""
    return pd.DataFrame(records()).set_index("claim")


def print_claims(as_json=False):
    """`python -m evidence claims [--json]` (parsed in evidence/cli.py): one line per claim (letter,
    verdict, deciding number, the claim), or with `as_json` every field of every claim as a JSON list."""
    rows = records()
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    width = max(len(r["verdict"]) for r in rows)
    for r in rows:
        print(f"({r['claim']}) {r['verdict']:<{width}}  {r['number']:<44}  {r['post']}")


# ---------------------------------------------------------------------------------------------
# slide-sized pieces of the table (lecture 6)
# ---------------------------------------------------------------------------------------------

#: The claims in six groups, one slide each: counting, memory, the hardware, speed-ups, end to end, and
#: the interface, history and unverifiable ones.
GROUPS = {
    "Counting": "abdmnsu",
    "Memory": "cfgrvw",
    "The hardware": "ijklx",
    "Speed-ups": "eh",
    "End to end": "opq",
    "Interface, history, and what cannot be checked": ["t", "y", "z", "U1", "U2"],
}


#: slide column -> Claim field whose evidence it marks
EVIDENCE = (("model", "model"), ("paper", "paper"), ("H200", "measured"))


def _has_evidence(text):
    return not (text == NONE or text.startswith(("not modelled", "no ", NOT_MEASURED)))


def slide_table(keys, frame=None):
    """Short columns for a slide: the claim, its deciding number, which evidence exists (✓ model, paper,
    H200 measurement; — none) and the verdict. The full fields are in `cards`."""
    frame = table() if frame is None else frame
    rows = frame.loc[list(keys)]
    marks = {col: rows[field].map(lambda t: "✓" if _has_evidence(t) else NONE) for col, field in EVIDENCE}
    return pd.DataFrame(
        {"claim": rows.post, "deciding number": rows.number, **marks, "verdict": rows.verdict}
    )


def cards(keys, frame=None):
    """One collapsed HTML card per claim (markdown inside <details>): what decides it, the model's, the
    paper's and the H200's numbers, and the rule of its verdict."""
    frame = table() if frame is None else frame
    out = []
    for key in keys:
        r = frame.loc[key]
        out.append(
            f"<details><summary><b>({key})</b> {r.post}: <b>{r.verdict}</b></summary>\n\n"
            f"- **Decides**: {r.quantity}\n- **Model**: {r.model}\n- **Paper**: {r.paper}\n"
            f"- **H200**: {r.measured}\n- **Rule**: {r.rule}\n\n</details>"
        )
    return "\n\n".join(out)
