"""Flash-decoding's time on S SMs: more splits help until the GPU is full, then the reduction costs.

The plain roofline, max(FLOPs / peak, bytes / bandwidth), assumes every SM is busy. A decode step
with few (batch, KV head) units is not: without splits it launches only B·H_kv thread blocks (CTAs).
This model counts them. The split kernel launches C = B·H_kv·s CTAs, one per (unit, chunk of ⌈L/s⌉
keys). The model lets a CTA use at most its SM's share of the machine, b = BW / S of the HBM
bandwidth and P / S of the peak FLOP/s (the rate each SM must sustain for the whole GPU to reach peak;
CTAs sharing an SM share its rate, so how many fit at once does not matter). That is an idealisation:
one SM alone can pull more than BW / S, so with few CTAs the times below are upper bounds. The
busiest SM runs w = ⌈C / S⌉ CTAs (the waves), so

    t_split  = max(bytes / BW, FLOPs / P, w · max(bytes_cta / b, flops_cta / (P/S)))
    t_reduce = ⌈C_r / S⌉ · bytes_rcta / b          (s > 1 only)
    t        = t_split + t_reduce

where bytes_cta = Q (R·d) + K, V (2·⌈L/s⌉·d) in the workload dtype + its output (O, or the fp32
partial O and logsumexp: R·(d+1)·4 B), R = g·q_len the packed query rows. The reduction is a second
kernel shaped as FlashAttention-2's combine kernel: C_r = ⌈B·H·q_len / k⌉ CTAs of k rows
(k = 4 if d % 128 == 0, 8 if d % 64 == 0, else 16), each reading its rows' s partials in fp32 and
writing their O: bytes_rcta = k·(s·(d+1)·4 + d·e). With ``fused=True`` the combine is decode_tc's
default instead (gpu_kernels/kernels/decode_tc.py): no second kernel; the last split CTA of each unit
to finish combines that unit's R rows, so C_r = B·H_kv CTAs of R rows, bytes_rcta = R·(s·(d+1)·4 + d·e),
and t_reduce is their tail after the split kernel's. Where R equals k (a Llama-3-8B layer: g = 4,
d = 128) the two are the same number; with R = 16 (four queries of four heads) the fused tail is twice
the combine kernel's (⌈64/132⌉ waves of 16 rows against ⌈256/132⌉ of 4).

Worked number (a Llama-3-8B layer on the H200: B = 1, H = 32, H_kv = 8, L = 32768, d = 128, fp16;
S = 132, BW = 4.8 TB/s): s = 1 gives C = 8 CTAs of 16,779,264 B: 16,779,264 · 132 / 4.8e12 = 461.4 µs
although the bytes alone need 28.0 µs. s = 16 fills 128 of the 132 SMs: one wave of 1,051,664 B CTAs,
28.9 µs, plus a reduction of 8 CTAs of 34,048 B (0.94 µs) = 29.9 µs. s = 64 needs ⌈512/132⌉ = 4 waves
of 265,232 B (29.2 µs) and a reduction of 8 CTAs of 133,120 B (3.66 µs) = 32.8 µs: slower again.

>>> from simlib import Workload, load_preset
>>> w = Workload(32768, 128, heads=32, kv_heads=8, query_len=1)
>>> [round(split_k_time(w, load_preset("h200"), s).time_s * 1e6, 1) for s in (1, 16, 64)]
[461.4, 29.9, 32.8]
>>> [round(split_k_time(w, load_preset("h200"), s, fused=True).time_s * 1e6, 1) for s in (1, 16, 64)]
[461.4, 29.9, 32.8]
"""

from dataclasses import dataclass

import pandas as pd

from .counts import count
from .hardware import Hardware
from .schedules.decode import DecodeMapping, packed_rows, split_lengths
from .tiling import ceil_div
from .units import STAT_BYTES
from .workload import Workload, check_positive_int


@dataclass(frozen=True)
class SplitKTime:
    splits: int  # chunks actually made (fewer than asked when L < s)
    ctas: int  # split-kernel thread blocks C = B·H_kv·s
    waves: int  # ⌈C / S⌉: CTAs on the busiest SM
    cta_bytes: int  # HBM bytes of the largest split CTA
    memory_s: float  # all HBM bytes (both kernels) / BW: the plain roofline's memory time
    split_s: float  # the split kernel's time
    reduce_s: float  # the combine's time: the combine kernel's, or the fused combine's tail (0 when s = 1)
    reduce_ctas: int  # the combine kernel's CTAs, or (fused) the units' last split CTAs
    hbm_bytes: int  # both kernels, equal to count("decode", ...).hbm_bytes
    sms: int  # S

    @property
    def time_s(self) -> float:
        return self.split_s + self.reduce_s

    @property
    def sm_fill(self) -> float:
        """Fraction of the SM-slots of all waves that hold a CTA: C / (w·S)."""
        return self.ctas / (self.waves * self.sms)


def combine_rows_per_cta(head_dim: int) -> int:
    """Rows per CTA of FlashAttention-2's combine kernel: 4, 8 or 16 by head_dim (its kBlockM)."""
    return 4 if head_dim % 128 == 0 else 8 if head_dim % 64 == 0 else 16


def split_k_time(
    workload: Workload,
    hardware: Hardware,
    splits: int = 1,
    sram_bytes: int | None = None,
    fused: bool = False,
) -> SplitKTime:
    """Split-K decode time with waves on `hardware` (module docstring); `sram_bytes` defaults to the
    preset's per-block shared memory and sets the K/V tile inside a split (it does not change bytes);
    `fused`: the unit's last split CTA combines (decode_tc's default), else FlashAttention-2's combine
    kernel does."""
    if not isinstance(hardware, Hardware):
        raise TypeError(f"hardware must be a simlib Hardware (e.g. load_preset('h200')), got {hardware!r}")
    splits = check_positive_int("splits", splits)
    result = count("decode", workload, sram_bytes=sram_bytes or hardware.sram_bytes, splits=splits)
    sms = hardware.sm_count
    bandwidth = hardware.level("HBM").bandwidth_bytes_per_s
    if not bandwidth:
        raise ValueError(f"{hardware.key} has no HBM bandwidth")
    peak = hardware.peak_flops[workload.dtype]
    e, d, rows = workload.element_bytes, workload.head_dim, packed_rows(workload)
    assert isinstance(result.mapping, DecodeMapping)
    chunks = split_lengths(workload, result.mapping)
    s = len(chunks)
    output = rows * d * e if s == 1 else rows * (d + 1) * STAT_BYTES
    cta_bytes = rows * d * e + 2 * int(chunks.max()) * d * e + output
    cta_flops = 4 * rows * int(chunks.max()) * d
    ctas = result.units * s
    waves = ceil_div(ctas, sms)
    split_bytes = result.units * (s * rows * d * e + 2 * workload.nk * d * e + s * output)
    split_s = max(
        split_bytes / bandwidth,
        result.flops / peak,
        waves * max(cta_bytes * sms / bandwidth, cta_flops * sms / peak),
    )
    reduce_s, reduce_ctas = 0.0, 0
    if s > 1:
        if fused:
            reduce_ctas = result.units
            rcta_bytes = rows * (s * (d + 1) * STAT_BYTES + d * e)
        else:
            per_cta = combine_rows_per_cta(d)
            all_rows = workload.batch * workload.heads * workload.nq
            reduce_ctas = ceil_div(all_rows, per_cta)
            rcta_bytes = min(per_cta, all_rows) * (s * (d + 1) * STAT_BYTES + d * e)
        reduce_s = ceil_div(reduce_ctas, sms) * rcta_bytes * sms / bandwidth
    return SplitKTime(
        s,
        ctas,
        waves,
        cta_bytes,
        result.hbm_bytes / bandwidth,
        split_s,
        reduce_s,
        reduce_ctas,
        result.hbm_bytes,
        sms,
    )


def split_k_frame(workload: Workload, hardware: Hardware, splits: list[int]) -> pd.DataFrame:
    """One row per split count: CTAs, waves, HBM traffic and the three times (µs)."""
    rows = []
    for s in splits:
        t = split_k_time(workload, hardware, s)
        rows.append(
            {
                "splits s": t.splits,
                "CTAs (B·H_kv·s)": t.ctas,
                "waves ⌈C/S⌉": t.waves,
                "HBM traffic (MB)": t.hbm_bytes / 1e6,
                "bytes-only roofline (µs)": t.memory_s * 1e6,
                "split kernel (µs)": t.split_s * 1e6,
                "reduction (µs)": t.reduce_s * 1e6,
                "time with waves (µs)": t.time_s * 1e6,
            }
        )
    return pd.DataFrame(rows)
