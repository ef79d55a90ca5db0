"""Transfer events and their aggregate.

A schedule emits `Event`s: (level, op, tensor, phase, elements). `Traffic` sums them per key and
turns elements into bytes: the row statistics (l, m, L) and the softmax reduction scratch (red) are
fp32, as are flash-decoding's partial outputs (O_part, lse_part), the backward's D and the fp32
accumulators some kernels keep in HBM (O_acc, dQ_acc); the dropout
mask Z is one byte per element; everything else has the workload dtype.

>>> t = Traffic({("HBM", "read", "Q", "load_q"): 262144, ("HBM", "write", "L", "store"): 4096})
>>> t.bytes(2, "HBM", "read"), t.bytes(2, "HBM", "write")     # N·d fp16 elements; N fp32 stats
(524288, 16384)
"""

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from .units import STAT_BYTES

LEVELS = ("HBM", "SRAM")
OPS = ("read", "write")
STAT_TENSORS = frozenset({"l", "m", "L", "red", "O_part", "lse_part", "D", "O_acc", "dQ_acc"})  # always fp32
BYTE_TENSORS = frozenset({"Z"})  # one byte each

TrafficKey = tuple[str, str, str, str]  # (level, op, tensor, phase)
Count = int | np.integer | np.ndarray  # an event's elements: a number or one per tile


def tensor_bytes(tensor: str, element_bytes: int) -> int:
    """Bytes per element of `tensor` in a workload whose dtype has `element_bytes`."""
    if tensor in STAT_TENSORS:
        return STAT_BYTES
    return 1 if tensor in BYTE_TENSORS else element_bytes


class Event(NamedTuple):
    """`elements` moved at `level` by `op` for `tensor` in `phase`.

    `elements` may be an int or a numpy integer array (one entry per tile of a vectorised inner
    loop); the counter adds its sum.
    """

    level: str
    op: str
    tensor: str
    phase: str
    elements: Count


class Traffic:
    """Elements moved, per (level, op, tensor, phase), for one batch·head."""

    def __init__(self, counts: Mapping[TrafficKey, int] | None = None) -> None:
        self.counts: Counter[TrafficKey] = Counter()
        for key, value in (counts or {}).items():
            self.add(*key, value)

    def add(self, level: str, op: str, tensor: str, phase: str, elements: Count) -> None:
        if level not in LEVELS or op not in OPS:
            raise ValueError(f"unknown level/op {level!r}/{op!r}")
        total = int(np.sum(elements, dtype=np.int64)) if isinstance(elements, np.ndarray) else int(elements)
        if total:
            self.counts[(level, op, tensor, phase)] += total

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> "Traffic":
        traffic = cls()
        for event in events:
            traffic.add(*event)
        return traffic

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Traffic) and self.counts == other.counts

    def __repr__(self) -> str:
        return f"Traffic({dict(sorted(self.counts.items()))})"

    def elements(self, level: str | None = None, op: str | None = None, tensor: str | None = None) -> int:
        """Sum of elements matching the given fields (None matches all)."""
        return sum(
            n
            for (lv, o, t, _), n in self.counts.items()
            if (level is None or lv == level) and (op is None or o == op) and (tensor is None or t == tensor)
        )

    def bytes(self, element_bytes: int, level: str | None = None, op: str | None = None) -> int:
        """Bytes matching `level`/`op`, with fp32 statistics and `element_bytes` for the rest."""
        return sum(
            n * tensor_bytes(t, element_bytes)
            for (lv, o, t, _), n in self.counts.items()
            if (level is None or lv == level) and (op is None or o == op)
        )

    def frame(self, element_bytes: int, scale: int = 1) -> pd.DataFrame:
        """A DataFrame with one row per (level, op, tensor, phase): elements and bytes (× `scale`)."""
        rows = [
            {
                "level": lv,
                "op": o,
                "tensor": t,
                "phase": p,
                "elements": n * scale,
                "bytes": n * scale * tensor_bytes(t, element_bytes),
            }
            for (lv, o, t, p), n in sorted(self.counts.items())
        ]
        return pd.DataFrame(rows, columns=["level", "op", "tensor", "phase", "elements", "bytes"])
