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

from simlib import Workload, load_preset
from simlib.kvcache import load_model

from . import claims as c
from . import energy_claim, paper, readers
from .intensity import DATACENTER_GPUS
from .numbers import fmt_bytes, fmt_count, fmt_seconds, tokens_label

HOLDS, CONDITIONS, FAILS = c.HOLDS, c.CONDITIONS, c.FAILS
NOT_CHECKED = "not checked yet"
NOT_MEASURED = "not measured yet"
VERDICTS = (HOLDS, CONDITIONS, FAILS, NOT_CHECKED)
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
        "Θ(Nd + N²); Proposition 3: no exact algorithm does o(N²d²M⁻¹) for M in [d, Nd]",
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


def verdict_e(optimised=None, tensor_core=None, gpu=c.DEFAULT_GPU, side_by_side="current"):
    """Judged in the posts' regime (16-bit on tensor cores): on the H200 side-by-side run's bf16 pairs at
    N ≥ 2K (PyTorch math vs flash, our naive_tc vs fa2_tc) when it is there; else on the other H200
    tensor-core runs of PyTorch's standard attention; else on the paper's A100 fp16 tables. The fp32
    measurements (CUDA cores) are shown as the other regime."""
    optimised = c.optimised_speedups() if optimised is None else optimised
    tensor_core = readers.tensor_core_speedups() if tensor_core is None else tensor_core
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
    tc_text = (
        "H200 tensor cores: "
        + "; ".join(
            f"{b} / {k} {_span(g['speed-up'])} ({'/'.join(sorted(g.dtype.unique()))}, {_n_span(g.seq_len)}"
            + (", ours)" if b not in readers.STANDARD else ")")
            for (b, k), g in tensor_core.groupby(["baseline", "kernel"], sort=False)
        )
        if len(tensor_core)
        else f"H200 {POSTS_DTYPE}/bf16 tensor cores: {NOT_MEASURED}"
    )
    measured = f"{tc_text}; fp32 CUDA cores (not the posts' regime): {fp32 or NOT_MEASURED}"
    if len(bf16):
        values = list(bf16["speed-up"])
        heads = "/".join(str(d) for d in sorted(bf16.head_dim.unique()))
        source = f"H200 bf16: {_pair_spans(bf16)}"
        measured = (
            f"side-by-side run, bf16, forward, {_n_span(bf16.seq_len)}, d = {heads}: {_pair_spans(bf16)}; "
            + measured
        )
    elif len(tc_long):
        values, source = list(tc_long["speed-up"]), "H200 tensor cores"
    else:
        values, source = [v for vs in long.values() for v in vs], "paper, A100 fp16"
    verdict = HOLDS if all(2 <= v <= 4 for v in values) else FAILS if max(values) < 2 else CONDITIONS
    return _claim(
        "e",
        quantity="standard / FlashAttention wall time at N ≥ 2K in the posts' regime, 16-bit on tensor cores",
        model=model,
        paper=paper_text,
        measured=measured,
        rule="the posts mean fp16/bf16 on tensor cores (the paper's runs are fp16; fp32 on CUDA cores is "
        "another regime, where the gap is smaller): judged on the H200 side-by-side run in bf16 at N ≥ 2K "
        "(PyTorch's math vs flash backends, our naive_tc vs fa2_tc), else on the other H200 tensor-core runs "
        "of PyTorch's standard attention, else on the paper's tables; holds if every speed-up is in 2–4×, "
        "does not hold if none reaches 2×, else holds with conditions (the factor depends on the baseline: "
        "above 4× FlashAttention is faster than claimed)",
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


def verdict_j(gpu=c.DEFAULT_GPU, seq_len=4096, head_dim=64):
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
    return _claim(
        "j",
        quantity="HBM time / arithmetic time of standard attention (fp16, one head, N = 4096, d = 64)",
        model=f"{hw.name}: naive math {times['naive'][0] * 1e6:.1f} µs, HBM {times['naive'][1] * 1e6:.1f} µs "
        f"({_x(ratio)}); fa2 math {times['fa2'][0] * 1e6:.1f} µs, HBM {times['fa2'][1] * 1e6:.1f} µs",
        paper=NONE,
        measured=NONE,
        rule="µs vs ms is ~1000×: holds if the ratio is ≥ 100×, with conditions if memory still dominates "
        "(1–100×), does not hold if the math dominates",
        verdict=HOLDS if ratio >= 100 else CONDITIONS if ratio > 1 else FAILS,
        number=f"memory {_x(ratio)} the math ({fmt_seconds(times['naive'][1])} vs {fmt_seconds(times['naive'][0])})",
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


def _written_besides_o(result):
    t = result.table()
    return int(t[(t.level == "HBM") & (t.op == "write") & (t.tensor != "O")].elements.sum())


def verdict_n(gpu=c.DEFAULT_GPU, seq_len=4096, head_dim=64):
    w = Workload(seq_len, head_dim, dtype=POSTS_DTYPE)
    naive, fa2 = c.result_on("naive", w, gpu), c.result_on("fa2", w, gpu)
    s = c._hbm_elements(naive, "S")
    inter_naive, inter_fa2 = _written_besides_o(naive), _written_besides_o(fa2)
    share = inter_fa2 / inter_naive
    return _claim(
        "n",
        quantity="intermediate values written to HBM per head (everything but O), N = 4096",
        model=f"naive: S {s:,} + P = {inter_naive:,}; fa2: {inter_fa2:,} (its logsumexp), "
        f"{share:.3%} of naive's (it still computes all {s:,} scores, tile by tile on chip)",
        paper=NONE,
        measured=NONE,
        rule="holds if S has 15–17 million values and FlashAttention writes < 0.1 % of naive's",
        verdict=HOLDS if 15e6 <= s <= 17e6 and share < 1e-3 else FAILS,
        number=f"{s / 1e6:.1f} M vs {inter_fa2:,}",
    )


# ---------------------------------------------------------------------------------------------
# (o)–(r): end-to-end claims
# ---------------------------------------------------------------------------------------------


def verdict_o():
    t = paper.training_speedups()
    hf, mega = t[t.baseline == "huggingface"]["speed-up"], t[t.baseline == "megatron_lm"]["speed-up"]
    reaches = [v >= 3 * 0.95 for v in t["speed-up"]]
    return _claim(
        "o",
        quantity="GPT-2 training time at 1K context, baseline / FlashAttention (8×A100)",
        model="not modelled: end-to-end training (MLP, optimiser, other layers) is outside simlib",
        paper=f"{paper.cite('table_2_gpt2_training')}: vs Huggingface {_span(hf)}, vs Megatron-LM "
        f"{_span(mega)} (GPT-2 small and medium)",
        measured=NONE,
        rule="holds if every baseline gives ≥ 3× (within 5 %), with conditions if some do",
        verdict=HOLDS if all(reaches) else CONDITIONS if any(reaches) else FAILS,
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
    attn = calls[(calls.dtype == "bf16") & (calls["pass"] == "fwd_bwd")]["saving"]
    hi = cases.saving.max()
    return _claim(
        "q",
        quantity="energy saved per GPT-2-medium training step at N = 1K (24 layers of attention + the "
        "rest of the step priced as bf16 GEMMs, a lower bound)",
        model=f"step saving {_span(100 * cases.saving, 0, ' %')} (upper bounds: the rest of the step needs "
        f"{cases.rest_multiple_for_35pct.min():.1f}× the GEMMs' energy for 35 %)",
        paper="no energy number in data/papers.json",
        measured=f"H200 NVML, attention fwd+bwd bf16, SDPA math vs flash: {_span(100 * attn, 0, ' %')} "
        f"less energy per call",
        rule="does not hold if even the upper bound on the step saving is below 35 %; holds with "
        "conditions otherwise (the saving depends on what the rest of a step costs)",
        verdict=FAILS if hi < 0.35 else CONDITIONS,
        number=f"≤ {_span(100 * cases.saving, 0, ' %')} per step; {_span(100 * attn, 0, ' %')} per attention call",
    )


def verdict_r(model_key="llama-3-8b", gpu="t4", cuda_context=None):
    """Judged with the CUDA context measured on the H200 (`cuda_context`: `readers.read_cuda_context()`
    by default) standing in for the T4's, and the activations' peak of `claims.activation_buffers`.
    The measured context leaves out what PyTorch's allocator holds (cuBLAS's workspace among it), so
    the reserve is a lower bound: a larger one only makes the claim hold more clearly."""
    m, hw = load_model(model_key), load_preset(gpu)
    ctx = readers.read_cuda_context() if cuda_context is None else cuda_context
    r = c.claim_r(model_key, gpu, context_bytes=ctx["bytes"][c.CONTEXT_KEY])
    limit, capacity = int(r.model_context_tokens), int(r.gpu_bytes)
    fits = r.tokens_all >= limit
    others = [v for k, v in ctx["bytes"].items() if k != c.CONTEXT_KEY]
    chunk_fits = r.spare_weights_only - r.prefill_activation_bytes
    chunk_note = (
        "it does not fit even without a context" if chunk_fits < 0 else f"only below {fmt_bytes(chunk_fits)}"
    )
    return _claim(
        "r",
        quantity=f"KV-cache tokens that fit on a {capacity / GIB:.0f} GiB GPU ({hw.name}) beside {m.name}'s fp16 "
        f"weights, the CUDA context and the activations, against its {limit:,}-token context",
        model=f"{r.tokens_all:,} tokens: {fmt_bytes(capacity)} − weights {r.weight_bytes / GIB:.2f} GiB − CUDA context "
        f"{fmt_bytes(r.context_bytes)} − activations {fmt_bytes(r.prefill_activation_bytes)} (one "
        f"{r.chunk_tokens}-token prefill chunk; a decode step {fmt_bytes(r.decode_activation_bytes)}), over "
        f"{fmt_bytes(r.kv_bytes_per_token)} of KV per token; the weights alone leave room for "
        f"{r.tokens_weights_only:,} tokens ({fmt_bytes(r.spare_weights_only)} spare at {limit:,}); with int4 "
        f"weights {r.tokens_all_int4:,} tokens",
        paper=NONE,
        measured=f"CUDA context on the H200 (driver {ctx['driver_version']}; PyTorch after a first cuBLAS product "
        f"and SDPA call, beyond its allocator): {fmt_bytes(r.context_bytes)}; other stages "
        f"{fmt_bytes(min(others))}–{fmt_bytes(max(others))}. It stands in for the T4's, which depends on the GPU "
        f"and driver: with a decode step's activations alone the conversation fits only if the context is "
        f"below {fmt_bytes(r.largest_context_that_fits_decode_only)} (1/{r.context_bytes / r.largest_context_that_fits_decode_only:.0f} "
        f"of the measured one); with the prefill chunk {chunk_note}",
        rule="holds if one conversation at the model's context does not fit beside the weights, the CUDA "
        "context and the activations' peak; with conditions if it fits with less than 5 % of the GPU to spare",
        verdict=HOLDS if not fits else CONDITIONS if r.spare_all < 0.05 * capacity else FAILS,
        number=f"{r.tokens_all:,} of {limit:,} tokens fit ({fmt_bytes(r.spare_weights_only)} spare before the "
        f"CUDA context and activations)",
    )


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
}


def records():
    """Every claim as a dict (the `--json` output)."""
    return [asdict(fn()) for fn in VERDICTS_BY_KEY.values()]


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

#: The claims in five groups, one slide each: counting, memory, the hardware, speed-ups, end to end.
GROUPS = {
    "Counting": "abdmn",
    "Memory": "cfgr",
    "The hardware": "ijkl",
    "Speed-ups": "eh",
    "End to end": "opq",
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
