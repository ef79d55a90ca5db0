"""Decode: q_len new query tokens per head against a KV cache of L = seq_len tokens.

One unit of work is a (batch, KV head): the group's g query heads are packed into one block of
R = g·q_len rows (as flash-decoding and FlashInfer do for GQA), so each K/V element is read once
per KV head, not once per query head. Flash-decoding splits the cache into s chunks processed in
parallel; each writes a partial O and logsumexp in fp32, and a reduction reads them back. Their
time on S SMs (thread blocks, waves, the combine kernel): simlib.decode_time.

Per unit: reads s·R·d (Q, once per split) + 2·L·d (K, V); writes R·d (O); with s > 1 also
s·R·(d+1) fp32 written and read back. FLOPs 4·R·L·d, so the arithmetic intensity is
4·R·L·d / (2·L·d·bytes) ≈ 2·R/bytes FLOP/B: about 1 for MHA in fp16 (R = 1), about g for GQA.
Worked number (Llama-3-8B layer, fp16, L=8192, d=128, g=4, q_len=1, s=1): K+V = 2·8192·128·2 B =
4.19 MB per KV head, FLOPs 4·4·8192·128 = 16.8 M → intensity 4.0 FLOP/B.

>>> from simlib import Workload
>>> w = Workload(8192, 128, heads=32, kv_heads=8, query_len=1)
>>> t = closed_form(w, DecodeMapping(block_cols=64))
>>> t.elements("HBM", "read", "K") + t.elements("HBM", "read", "V"), flops(w, DecodeMapping(64))
(2097152, 16777216)
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..schedule_protocol import DoesNotFit, Parameter, ParamValue, Schedule, WorkingSet
from ..tiling import BLOCK_COLS, PAPER_RULE, block_sizes, ceil_div, make_tiling, max_block
from ..traffic import Event, Traffic
from ..workload import Workload
from .fa2 import onchip, tile_counts, tile_events

SPLITS = Parameter("splits", "flash-decoding split-K chunks of the cache (default 1)")


@dataclass(frozen=True)
class DecodeMapping:
    block_cols: int  # K/V tile rows Bc inside a split
    splits: int = 1  # flash-decoding split-K chunks s
    rule: str = "explicit"  # what chose Bc: "fa1" (⌈M/4d⌉, the paper's rule) or "explicit"

    def as_dict(self) -> dict[str, ParamValue]:
        return {"block_cols": self.block_cols, "splits": self.splits, "tile_rule": self.rule}

    def summary(self) -> str:
        return f"tiles: Bc={self.block_cols}, flash-decoding splits={self.splits}"


def units(workload: Workload) -> int:
    return workload.batch * workload.n_kv_heads


def packed_rows(workload: Workload) -> int:
    return workload.group * workload.nq


def build(
    workload: Workload, sram_bytes: int | None, block_cols: int | None = None, splits: int | None = None
) -> DecodeMapping:
    """Bc as fa2's (from SRAM or explicit); the group's packed query rows must fit a block."""
    if workload.causal:
        raise ValueError("causal: a decode step attends the whole cache; use causal with prefill algorithms")
    tiling = make_tiling(workload, sram_bytes, 1, block_cols)
    if sram_bytes is not None and packed_rows(workload) > max_block(
        sram_bytes, workload.element_bytes, workload.head_dim
    ):
        raise DoesNotFit(
            f"query_len: the packed query block of group·query_len = {packed_rows(workload)} "
            f"rows does not fit in sram_bytes={sram_bytes}"
        )
    return DecodeMapping(tiling.block_cols, splits or 1, "explicit" if block_cols is not None else PAPER_RULE)


def working_set(workload: Workload, mapping: DecodeMapping) -> WorkingSet:
    """As FA2's kernel: the packed Q block and K_j, V_j in SRAM; S/P, O, ℓ, m in registers."""
    return onchip(packed_rows(workload), mapping.block_cols, workload.head_dim, workload.element_bytes)


def split_lengths(workload: Workload, mapping: DecodeMapping) -> np.ndarray:
    """Keys per split: ⌈L/s⌉ each, the last ragged (fewer splits if L < s)."""
    return block_sizes(workload.nk, ceil_div(workload.nk, mapping.splits))


def trace(workload: Workload, mapping: DecodeMapping) -> Iterator[Event]:
    rows, d = packed_rows(workload), workload.head_dim
    chunks = split_lengths(workload, mapping)
    for keys in chunks:
        yield Event("HBM", "read", "Q", "load_q", rows * d)
        yield Event("SRAM", "write", "Q", "load_q", rows * d)
        yield from tile_events(rows, block_sizes(int(keys), mapping.block_cols), d, kv_phase="load_kv")
        if len(chunks) == 1:
            yield Event("HBM", "write", "O", "store", rows * d)
        else:
            yield Event("HBM", "write", "O_part", "store", rows * d)
            yield Event("HBM", "write", "lse_part", "store", rows)
    if len(chunks) > 1:
        yield Event("HBM", "read", "O_part", "reduce", len(chunks) * rows * d)
        yield Event("HBM", "read", "lse_part", "reduce", len(chunks) * rows)
        yield Event("HBM", "write", "O", "reduce", rows * d)


def closed_form(workload: Workload, mapping: DecodeMapping) -> Traffic:
    rows, nk, d = packed_rows(workload), workload.nk, workload.head_dim
    s = ceil_div(nk, ceil_div(nk, mapping.splits))  # splits actually made
    counts = tile_counts(rows * nk, nk, d, "load_kv")
    counts[("HBM", "read", "Q", "load_q")] = s * rows * d
    counts[("SRAM", "write", "Q", "load_q")] = s * rows * d
    if s == 1:
        counts[("HBM", "write", "O", "store")] = rows * d
    else:
        counts.update(
            {
                ("HBM", "write", "O_part", "store"): s * rows * d,
                ("HBM", "write", "lse_part", "store"): s * rows,
                ("HBM", "read", "O_part", "reduce"): s * rows * d,
                ("HBM", "read", "lse_part", "reduce"): s * rows,
                ("HBM", "write", "O", "reduce"): rows * d,
            }
        )
    return Traffic(counts)


def flops(workload: Workload, mapping: DecodeMapping) -> int:
    return 4 * packed_rows(workload) * workload.nk * workload.head_dim


def trace_size(workload: Workload, mapping: DecodeMapping) -> tuple[int, int]:
    tiles = ceil_div(workload.nk, mapping.block_cols)
    return max(tiles, mapping.splits), tiles + mapping.splits


SCHEDULE = Schedule(
    name="decode",
    description="decode step against a KV cache, flash-decoding split-K",
    parameters=(BLOCK_COLS, SPLITS),
    sram="sizes",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
    working_set=working_set,
)
