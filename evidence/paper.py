"""The FlashAttention paper's own numbers (data/papers.json, each with its citation), for the claims.

>>> float(round(speedups("table_20_fwd_bwd_ms").set_index("N").loc[128, "speed-up"], 2))   # 0.67 / 0.31 ms
2.16
>>> float(training_speedups().set_index(["model", "baseline"]).loc[("gpt2_small", "huggingface"), "speed-up"].round(2))
3.52
"""

import json
from functools import cache

import pandas as pd

from simlib.hardware import DATA_DIR

PAPERS = DATA_DIR / "papers.json"


@cache
def flashattention():
    """The 'flashattention' entry of data/papers.json."""
    return json.loads(PAPERS.read_text())["flashattention"]


@cache
def flashattention_root():
    """The whole of data/papers.json (the paper's entry, the training-memory accounting, the unverified)."""
    return json.loads(PAPERS.read_text())


def unverified():
    """The claims no public number decides: [{key, claim, why}] (data/papers.json, "unverified")."""
    return list(flashattention_root()["unverified"])


def section(key):
    """One cited section of the paper's entry; KeyError naming the file and the key if absent."""
    entries = flashattention()
    if key not in entries:
        raise KeyError(f"{PAPERS}: flashattention has no {key!r}")
    return entries[key]


APPENDIX = "appendix_e6_benchmarks_a100_40gb"
#: Short names of the cited sections (the full citation is in data/papers.json).
WHERE = {
    "section_2_1_a100": "§2.1",
    "figure_1_left_memory_hierarchy": "Figure 1 (left)",
    "table_2_gpt2_training": "Table 2",
    "table_3_lra": "Table 3",
    APPENDIX: "Appendix E.6",
    "figure_2_left": "Figure 2 (left)",
}


def cite(key):
    """'FlashAttention paper, <where>' for a section of data/papers.json (checked to exist)."""
    section(key)
    return f"FlashAttention paper (arXiv:2205.14135), {WHERE[key]}"


def speedups(table):
    """PyTorch / FlashAttention time per N of one Appendix E.6 table (A100 40 GB, fp16); NaN = PyTorch OOM."""
    e6 = section(APPENDIX)
    t = e6[table]
    rows = [
        {
            "N": n,
            "pytorch_ms": p,
            "flashattention_ms": f,
            "speed-up": (p / f) if p is not None else float("nan"),
        }
        for n, p, f in zip(e6["seq_lens"], t["pytorch"], t["flashattention"])
    ]
    return pd.DataFrame(rows)


def standard_oom_seq_len():
    """The shortest N at which the paper's PyTorch standard attention ran out of memory (Table 21)."""
    e6 = section(APPENDIX)
    return min(n for n, mb in zip(e6["seq_lens"], e6["table_21_memory_mb"]["pytorch"]) if mb is None)


def memory_ratios():
    """Standard / FlashAttention memory per N (Table 21, MB, forward + backward)."""
    e6 = section(APPENDIX)
    t = e6["table_21_memory_mb"]
    return pd.DataFrame(
        [
            {"N": n, "standard (MB)": p, "FlashAttention (MB)": f, "ratio": p / f}
            for n, p, f in zip(e6["seq_lens"], t["pytorch"], t["flashattention"])
            if p is not None
        ]
    )


def training_speedups():
    """Baseline days / FlashAttention days for GPT-2 small and medium (Table 2, 8×A100, 1K context)."""
    days = section("table_2_gpt2_training")["training_days"]
    return pd.DataFrame(
        [
            {"model": model, "baseline": base, "speed-up": d[base] / d["flashattention"]}
            for model, d in days.items()
            for base in d
            if base != "flashattention"
        ]
    )
