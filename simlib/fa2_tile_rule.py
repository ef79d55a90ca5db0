"""FlashAttention-2's own tile rule: the (Br, Bc) its reference CUDA kernel launches.

The table is data/fa2_tiles.json, read from Dao-AILab/flash-attention
(csrc/flash_attn/src/flash_fwd_launch_template.h, run_mha_fwd_hdim32 … hdim256; the file cites the
commit and lines). The kernel is compiled for head dimensions 32, 64, 96, 128, 192 and 256
(HEADDIM_SWITCH rounds d up); for each it picks kBlockM = Br and kBlockN = Bc by architecture,
dropout and causal masking. The first matching entry of the table is the one the kernel launches.
S/P and the O accumulator live in registers; Q_i, K_j, V_j in shared memory.

Worked number: d = 64, no dropout, any architecture → Br = Bc = 128 (4 warps); at N = 4096 that
is Tr = 32, so fa2 reads Nd(1 + 2N/Br) = 262,144·(1 + 64) = 17,039,360 elements.

>>> kernel_tiles(64)
(128, 128)
>>> kernel_tiles(128), kernel_tiles(128, arch="sm8x", causal=True), kernel_tiles(256, arch="sm80")
((128, 64), (64, 64), (128, 64))
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from .presets import DATA_DIR

#: Head dimensions the reference kernel is compiled for (static_switch.h HEADDIM_SWITCH).
KERNEL_HEAD_DIMS = (32, 64, 96, 128, 192, 256)
ARCHS = ("sm80", "sm8x", "sm90")


@cache
def table() -> dict[str, Any]:
    """data/fa2_tiles.json, parsed."""
    data: dict[str, Any] = json.loads((DATA_DIR / "fa2_tiles.json").read_text())
    return data


def kernel_head_dim(head_dim: int) -> int | None:
    """The head dimension the kernel is compiled for: d rounded up to the list (None above 256)."""
    return next((k for k in KERNEL_HEAD_DIMS if head_dim <= k), None)


def arch_of(compute_capability: str | None) -> str | None:
    """'8.0' → sm80, '8.6'/'8.9' → sm8x, '9.0' → sm90; None for GPUs FA2 does not support (< 8.0)."""
    if not compute_capability:
        return None
    major, _, minor = compute_capability.partition(".")
    if major == "8":
        return "sm80" if minor == "0" else "sm8x"
    return "sm90" if major == "9" else None


def kernel_tiles(
    head_dim: int, arch: str | None = None, causal: bool = False, dropout: bool = False
) -> tuple[int, int]:
    """(Br, Bc) of the FA2 kernel for this head dimension; `arch` None reads as sm90 (the entries
    for any architecture). ValueError naming head_dim above 256 (no FA2 kernel)."""
    kernel_d = kernel_head_dim(head_dim)
    if kernel_d is None:
        raise ValueError(
            f"head_dim={head_dim}: FlashAttention-2's kernel supports head_dim ≤ 256; give "
            f"block_rows and block_cols, or tile_rule='fa1'"
        )
    case = {"arch": arch or "sm90", "dropout": dropout, "causal": causal}
    for entry in table()["entries"]:
        if entry["head_dim"] == kernel_d and all(entry[k] is None or entry[k] == v for k, v in case.items()):
            return entry["block_rows"], entry["block_cols"]
    raise LookupError(f"data/fa2_tiles.json has no entry for head_dim={kernel_d}, {case}")
