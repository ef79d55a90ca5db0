"""How a launch's blocks (CTAs) spread over the SMs, and how long the busiest SM takes: the wave model.

The hardware block scheduler hands a launch's CTAs out in launch order (blockIdx.x fastest), each to
an SM with a free slot (occupancy: `resident` CTAs per SM), breadth-first over the SMs when several
are free. An SM serves its resident CTAs together: under the model's latency rule (at most
`LATENCY_WARPS` warps per SM when full) each CTA progresses at 1/resident of the SM's rate whatever
its neighbours do, so every slot is its own machine and a CTA's time is its work × resident; above
that rule the SM's units are shared, a CTA alone on its SM running at the SM's full rate and k of
them at 1/k each (processor sharing). Work is in units of the SM's full rate, so the launch takes

    makespan  =  q × (Σ work / SMs)

and q is the factor `simlib.cost.model` multiplies the roof by (the roof counts Σ work on all SMs).

Blocks of equal work (every kernel without a causal mask; the naive kernels, which compute S whole,
and the library's elementwise kernels under one): q has a closed form, `equal_work_q`. Blocks of
unequal work (FlashAttention-type kernels under a causal mask: query block i of Tr visits
⌈(i+1)·Br/Bc⌉ key tiles): `makespan` list-schedules them; the long blocks of each head come last in
launch order (grid (Tr, B·H)), so the last wave runs long rows while other SMs idle.

Worked number: 2 SMs, 1 slot each (latency rule), works 3, 1, 1, 1 in launch order: CTA 0 goes to
SM 0 (busy until 3), CTAs 1, 2, 3 to SM 1 (free at 1, 2, 3): makespan 3; Σ work / SMs = 3, q = 1.
Works 1, 1, 1, 3: SMs free at 1, 1, then CTA 2 on SM 0 (until 2), CTA 3 on SM 1 (until 4): q = 4/3.

>>> makespan([3, 1, 1, 1], sms=2, resident=1, shared=False), makespan([1, 1, 1, 3], 2, 1, False)
(3.0, 4.0)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np

from ..tiling import ceil_div
from ..workload import Workload


def equal_work_q(blocks: int, sms: int, resident: int, shared: bool) -> float:
    """q of `blocks` CTAs of equal work: waves of sms·resident CTAs; in a wave of b CTAs the busiest
    SM holds ⌈b/SMs⌉ of them and takes ⌈b/SMs⌉ CTA-works (shared units) or `resident` (the
    latency rule: each slot at 1/resident of the SM whatever the others do)."""
    total, left = 0, blocks
    while left > 0:
        b = min(sms * resident, left)
        total += math.ceil(b / sms) if shared else resident
        left -= b
    return total / (blocks / sms)


def makespan(work: Sequence[float], sms: int, resident: int, shared: bool, fixed: float = 0.0) -> float:
    """The time until the last CTA of `work` (in launch order, in SM-full-rate units) finishes.
    `fixed`: each CTA's fixed latency (its Q load, pipeline fill and epilogue, in the same time units),
    which holds its slot without using the SM's units (under processor sharing it is added to the
    CTA's work, an upper bound)."""
    if resident < 1 or sms < 1:
        raise ValueError(f"sms and resident must be at least 1, got {sms}, {resident}")
    if not shared:  # every slot a machine of rate 1/resident: greedy list scheduling on sms·resident
        free = [(0.0, j, s) for j in range(resident) for s in range(sms)]  # breadth-first at start
        heapq.heapify(free)
        end = 0.0
        for x in work:
            t, j, s = heapq.heappop(free)
            done = t + x * resident + fixed
            end = max(end, done)
            heapq.heappush(free, (done, j, s))
        return end
    return _processor_sharing(np.asarray(work, dtype=float) + fixed, sms, resident)


def _processor_sharing(work: np.ndarray, sms: int, resident: int) -> float:
    """Event simulation: SM s with k_s resident CTAs gives each 1/k_s of its rate; a freed slot takes
    the next CTA in launch order (the SMs with the fewest resident first, then the lowest index)."""
    rem = np.full((sms, resident), np.inf)  # remaining work per slot (inf: empty)
    nxt, n, t = 0, len(work), 0.0
    while True:
        counts = np.isfinite(rem).sum(axis=1)
        while nxt < n and counts.min() < resident:
            s = int(np.argmin(counts))
            slot = int(np.argmax(~np.isfinite(rem[s])))
            rem[s, slot] = work[nxt]
            counts[s] += 1
            nxt += 1
        busy = np.isfinite(rem)
        if not busy.any():
            return t
        k = np.maximum(counts, 1)[:, None].astype(float)
        finish = np.where(busy, rem, np.inf) * k  # time to finish at the current sharing
        dt = float(finish.min())
        t += dt
        rem = np.where(busy, rem - dt / k, np.inf)
        rem[busy & (rem <= 1e-12 * max(1.0, dt))] = np.inf


def launch_q(work: Sequence[float], sms: int, resident: int, shared: bool, fixed: float = 0.0) -> float:
    """q = makespan / (Σ work / SMs) of CTAs of the given relative works (and fixed latency each, in
    units of the works)."""
    total = float(sum(work))
    return makespan(work, sms, resident, shared, fixed) / (total / sms)


def causal_cta_work(
    w: Workload, block_rows: int, block_cols: int, *, heavy_first: bool = False, sections: int | None = None
) -> tuple[float, ...]:
    """Score elements each CTA of a FlashAttention-type kernel visits under w's causal mask, in launch
    order: grid (Tr, B·H), the query block fastest; block i (rows r_i, last row last_i) visits the
    key tiles up to the last one its last row reaches, min(N_k, (⌊(last_i + off)/Bc⌋ + 1)·Bc) keys,
    whole (simlib.schedules.visits' rule; off = N_k − N_q). Without a mask every block visits N_k.
    `heavy_first` (fa2_tc version 5): grid (B·H, Tr), the head fastest, Q blocks from the last (the
    heaviest) to the first. `sections` (with heavy_first; fa3_tc): grid (S, Tr, ⌈B·H/S⌉), the heads in
    sections of S, each section's Q blocks heaviest first with its S heads fastest (the last section's
    unused head slots, CTAs that return at once, left out); None: one section of all B·H (version 5).

    >>> from simlib import Workload
    >>> w = Workload(4, 1, batch=1, heads=3, dtype="bf16", causal=True)
    >>> causal_cta_work(w, 2, 2, heavy_first=True, sections=2)
    (8.0, 8.0, 4.0, 4.0, 8.0, 4.0)
    """
    nq, nk, br, bc = w.nq, w.nk, block_rows, block_cols
    tr = ceil_div(nq, br)
    off = nk - nq
    per_head = []
    for i in range(tr):
        rows = min(br, nq - i * br)
        last = i * br + rows - 1
        keys = min(nk, ((last + off) // bc + 1) * bc) if w.causal else nk
        per_head.append(float(rows * keys))
    if heavy_first:
        bh = w.batch_heads
        s = min(sections or bh, bh)
        return tuple(x for z in range(0, bh, s) for x in reversed(per_head) for _ in range(min(s, bh - z)))
    return tuple(per_head) * w.batch_heads
