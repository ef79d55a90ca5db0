"""The curves Lectures 4 and 4b draw: each schedule's HBM bytes with its default tiles, and the two
reference lines (the compulsory traffic and the Saha–Ye expression with constant 1).

Worked number: at N = 1024, d = 64 in fp16 the compulsory traffic reads Q, K, V and writes O once,
4·1024·64 elements · 2 B = 524,288 B.

>>> from simlib import Workload, load_preset
>>> all_lines(Workload(1024, 64), load_preset("h200").sram_bytes)["compulsory"]
524288
"""

from simlib import Workload, compulsory_bytes, count, saha_ye_bytes

#: The curves `all_lines` returns, in drawing order.
LINES = ("naive", "fa1", "fa2", "compulsory", "saha_ye")


def traffic(algorithm: str, w: Workload, sram_bytes: int, **blocks: int) -> int:
    """HBM bytes of `algorithm` on workload `w` (naive ignores the SRAM size); `blocks` are tiles
    (block_rows, block_cols) instead of the schedule's own."""
    if algorithm == "naive":
        return count("naive", w).hbm_bytes
    return count(algorithm, w, sram_bytes=sram_bytes, **blocks).hbm_bytes  # type: ignore[arg-type]


def all_lines(w: Workload, sram_bytes: int) -> dict[str, float]:
    """The HBM bytes of naive, FA1 and FA2 (default tiles) and the two reference lines at `w`."""
    return {
        "naive": traffic("naive", w, sram_bytes),
        "fa1": traffic("fa1", w, sram_bytes),
        "fa2": traffic("fa2", w, sram_bytes),
        "compulsory": compulsory_bytes(w),
        "saha_ye": saha_ye_bytes(w, sram_bytes),
    }
