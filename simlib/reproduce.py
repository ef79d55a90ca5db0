"""Figure 2 (left) of the FlashAttention paper, reproduced by the model.

GPT-2 medium attention, forward + backward: seq 1024, head dim 64, 16 heads, batch 64, fp16, causal,
on an A100. Conventions:
- standard attention = `unfused` + `unfused_bwd` (HF GPT-2 eager: matmul, scale, causal where,
  softmax, dropout with a one-byte mask, matmul; cuBLAS reads each matmul operand once);
- FlashAttention = `fa1` + `flash_bwd` (Algorithms 1 and 4, causal tiles skipped), blocks from the
  SRAM size given (default: the paper's 192 KB per SM);
- GB = 10⁹ bytes.
The paper's numbers come from data/papers.json.

Worked number (standard): 1024 heads × (23 N×N passes × 2 B + two 1-byte masks) × 2²⁰ scores, plus
12 N×d transfers × 2 B × 65,536: 1024 × 51,904,512 B = 53.15 GB (the paper measured 40.3).

>>> frame = figure2_left()
>>> round(float(frame.loc[0, "model_hbm_gb"]), 2), float(frame.loc[0, "paper_hbm_gb"])
(53.15, 40.3)
"""
import json
from typing import Any

import pandas as pd

from .counts import count
from .presets import DATA_DIR
from .workload import Workload

GPT2_MEDIUM = Workload(seq_len=1024, head_dim=64, batch=64, heads=16, dtype="fp16", causal=True)


def paper_figure2_left() -> dict[str, Any]:
    figure: dict[str, Any] = json.loads((DATA_DIR / "papers.json").read_text())["flashattention"]["figure_2_left"]
    return figure


def figure2_left(sram_bytes: int = 192 * 1024, workload: Workload = GPT2_MEDIUM) -> pd.DataFrame:
    """A DataFrame: model HBM GB (forward, backward, total) and FLOPs next to the paper's numbers."""
    paper = paper_figure2_left()
    cases: tuple[tuple[str, str, str, dict[str, Any], dict[str, Any]], ...] = (("standard", "unfused", "unfused_bwd", {}, paper["standard_attention"]),
             ("FlashAttention", "fa1", "flash_bwd", {"sram_bytes": sram_bytes}, paper["flashattention"]))
    rows = []
    for label, fwd_name, bwd_name, kw, published in cases:
        fwd, bwd = count(fwd_name, workload, **kw), count(bwd_name, workload, **kw)
        total = fwd.hbm_bytes + bwd.hbm_bytes
        rows.append({
            "attention": label, "forward_gb": fwd.hbm_bytes / 1e9, "backward_gb": bwd.hbm_bytes / 1e9,
            "model_hbm_gb": total / 1e9, "paper_hbm_gb": published["hbm_rw_gb"],
            "model_over_paper": total / 1e9 / published["hbm_rw_gb"],
            "model_gflop": (fwd.flops + bwd.flops) / 1e9, "paper_gflop": published["gflops"],
            "block_rows": fwd.block_rows, "block_cols": fwd.block_cols,
        })
    return pd.DataFrame(rows)
