"""Decode: q_len new query tokens per head against a KV cache of L = seq_len tokens.

One unit of work is a (batch, KV head): the group's g query heads are packed into one block of
R = g·q_len rows (as flash-decoding and FlashInfer do for GQA), so each K/V element is read once
per KV head, not once per query head. Flash-decoding splits the cache into s chunks processed in
parallel; each writes a partial O and logsumexp in fp32, and a reduction reads them back.

Per unit: reads s·R·d (Q, once per split) + 2·L·d (K, V); writes R·d (O); with s > 1 also
s·R·(d+1) fp32 written and read back. FLOPs 4·R·L·d, so the arithmetic intensity is
4·R·L·d / (2·L·d·bytes) ≈ 2·R/bytes FLOP/B: about 1 for MHA in fp16 (R = 1), about g for GQA.
Worked number (Llama-3-8B layer, fp16, L=8192, d=128, g=4, q_len=1, s=1): K+V = 2·8192·128·2 B =
4 MiB per KV head, FLOPs 4·4·8192·128 = 16.8 M → intensity 4.0 FLOP/B.
"""
from dataclasses import dataclass

from ..tiling import block_sizes, ceil_div
from ..traffic import Event, Traffic
from .fa2 import tile_counts, tile_events


@dataclass(frozen=True)
class DecodeMapping:
    block_cols: int       # K/V tile rows Bc inside a split
    splits: int = 1       # flash-decoding split-K chunks s


def units(workload):
    return workload.batch * workload.n_kv_heads


def packed_rows(workload):
    return workload.group * workload.nq


def split_lengths(workload, mapping):
    """Keys per split: ⌈L/s⌉ each, the last ragged (fewer splits if L < s)."""
    return block_sizes(workload.nk, ceil_div(workload.nk, mapping.splits))


def trace(workload, mapping):
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


def closed_form(workload, mapping):
    rows, nk, d = packed_rows(workload), workload.nk, workload.head_dim
    s = ceil_div(nk, ceil_div(nk, mapping.splits))     # splits actually made
    counts = tile_counts(rows * nk, nk, d, "load_kv")
    counts[("HBM", "read", "Q", "load_q")] = s * rows * d
    counts[("SRAM", "write", "Q", "load_q")] = s * rows * d
    if s == 1:
        counts[("HBM", "write", "O", "store")] = rows * d
    else:
        counts.update({
            ("HBM", "write", "O_part", "store"): s * rows * d,
            ("HBM", "write", "lse_part", "store"): s * rows,
            ("HBM", "read", "O_part", "reduce"): s * rows * d,
            ("HBM", "read", "lse_part", "reduce"): s * rows,
            ("HBM", "write", "O", "reduce"): rows * d,
        })
    return Traffic(counts)


def flops(workload, mapping):
    return 4 * packed_rows(workload) * workload.nk * workload.head_dim
