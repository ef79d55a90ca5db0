"""How a launch's blocks (CTAs) spread over the SMs, and how long the busiest SM takes: the wave model.

The hardware block scheduler hands a launch's CTAs out in launch order (blockIdx.x fastest), each to
an SM with a free slot (occupancy: `resident` CTAs per SM), breadth-first over the SMs when several
are free. An SM serves its resident CTAs together: under the model's latency rule (at most
`LATENCY_WARPS` warps per SM when full) each CTA progresses at 1/resident of the SM's rate whatever
its neighbours do, so every slot is its own machine and a CTA's time is its work × resident; above
that rule the SM's units are shared, a CTA alone on its SM running at the SM's full rate and k of
them at 1/k each (processor sharing). Since round 9 a latency-rule class may carry `lone`, the share of
its SM one CTA reaches when it is alone there (`Calibration.lone_rate`, fitted per class on the committed
launches whose last wave leaves CTAs alone on their SMs): a CTA then runs at min(lone, 1/k) of its SM
when k CTAs of the launch work there (the SM's tensor and issue throughput shared among its resident
CTAs, each capped by its own warps' latency); lone = 1/resident is the latency rule as before, lone = 1
processor sharing. Work is in units of the SM's full rate, so the launch takes

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

A CTA alone on its SM (round 9): 2 SMs, 2 slots, five CTAs of work 1. Latency rule: CTAs 0–3 fill the
four slots at 1/2 of their SM (done at 2), CTA 4 alone on SM 0 at 1/2 (done at 4): q = 4 / (5/2) = 1.6.
With lone = 0.8 the last CTA runs at 0.8 of its SM: 2 + 1/0.8 = 3.25, q = 1.3.

>>> equal_work_q(5, 2, 2, False), equal_work_q(5, 2, 2, False, lone=0.8), makespan([1.0] * 5, 2, 2, False, lone=0.8)
(1.6, 1.3, 3.25)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np

from ..tiling import ceil_div
from ..workload import Workload


def _lone(resident: int, shared: bool, lone: float | None) -> float:
    """The share of its SM a CTA alone there reaches: 1 above the latency rule, `lone` (at least
    1/resident, at most 1) or 1/resident under it."""
    if shared:
        return 1.0
    if lone is None:
        return 1.0 / resident
    if not 0.0 < lone <= 1.0:
        raise ValueError(f"lone must be in (0, 1], got {lone}")
    return max(lone, 1.0 / resident)


def equal_work_q(blocks: int, sms: int, resident: int, shared: bool, lone: float | None = None) -> float:
    """q of `blocks` CTAs of equal work: waves of sms·resident CTAs; in a wave of b CTAs the busiest
    SM holds k = ⌈b/SMs⌉ of them, each at min(a, 1/k) of the SM (a: `_lone`), so the wave takes
    max(1/a, k) CTA-works: k with shared units, `resident` under the latency rule (each slot at
    1/resident of the SM whatever the others do) unless `lone` lets a wave of one CTA per SM run faster."""
    a = _lone(resident, shared, lone)
    total, left = 0.0, blocks
    while left > 0:
        b = min(sms * resident, left)
        total += max(1.0 / a, math.ceil(b / sms))
        left -= b
    return total / (blocks / sms)


def makespan(
    work: Sequence[float],
    sms: int,
    resident: int,
    shared: bool,
    fixed: float = 0.0,
    lone: float | None = None,
) -> float:
    """The time until the last CTA of `work` (in launch order, in SM-full-rate units) finishes.
    `fixed`: each CTA's fixed latency (its Q load, pipeline fill and epilogue, in the same time units),
    which holds its slot without using the SM's units (under processor sharing it is added to the
    CTA's work, an upper bound). `lone` (latency rule only): the share of its SM a CTA alone there
    reaches (`_latency_sharing`)."""
    if resident < 1 or sms < 1:
        raise ValueError(f"sms and resident must be at least 1, got {sms}, {resident}")
    share = _lone(resident, shared, lone)
    if not shared and share > 1.0 / resident:
        return _latency_sharing(work, sms, resident, share, fixed)
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


def _latency_sharing(work: Sequence[float], sms: int, resident: int, lone: float, fixed: float) -> float:
    """Event simulation of the latency rule with a lone CTA's share: on an SM where k CTAs are past their
    fixed latency each works at min(lone, 1/k) of the SM; a CTA first spends `fixed` holding its slot
    without using the SM's units; a freed slot takes the next CTA in launch order (the earliest free slot
    first, breadth-first over the SMs at the start, as `makespan`'s list schedule)."""
    fix = [[0.0] * resident for _ in range(sms)]  # fixed latency left per slot
    rem: list[list[float | None]] = [[None] * resident for _ in range(sms)]  # work left (None: empty)
    at = [0.0] * sms  # the time each SM's state was last advanced to
    version = [0] * sms
    heap: list[tuple[float, int, int]] = []
    n, nxt, end = len(work), 0, 0.0

    def rate(s: int) -> float:
        k = sum(1 for j in range(resident) if rem[s][j] is not None and fix[s][j] <= 0)
        return min(lone, 1.0 / k) if k else 0.0

    def advance(s: int, t: float) -> None:
        dt, r = t - at[s], rate(s)
        for j in range(resident):
            x = rem[s][j]
            if x is None:
                continue
            if fix[s][j] > 0:
                fix[s][j] -= dt
            else:
                rem[s][j] = x - dt * r
        at[s] = t

    def schedule(s: int) -> None:
        r, best = rate(s), math.inf
        for j in range(resident):
            x = rem[s][j]
            if x is not None:
                best = min(best, fix[s][j] if fix[s][j] > 0 else x / r)
        version[s] += 1
        if best < math.inf:
            heapq.heappush(heap, (at[s] + max(best, 0.0), version[s], s))

    for j in range(resident):  # breadth-first: slot 0 of every SM, then slot 1, ...
        for s in range(sms):
            if nxt < n:
                fix[s][j], rem[s][j] = fixed, float(work[nxt])
                nxt += 1
    for s in range(sms):
        schedule(s)
    while heap:
        t, v, s = heapq.heappop(heap)
        if v != version[s]:
            continue
        advance(s, t)
        tol = 1e-12 * max(1.0, t)
        for j in range(resident):
            x = rem[s][j]
            if x is None:
                continue
            if 0 < fix[s][j] <= tol:
                fix[s][j] = 0.0
            if fix[s][j] <= 0 and x <= tol:
                end = max(end, t)
                rem[s][j], fix[s][j] = None, 0.0
                if nxt < n:
                    fix[s][j], rem[s][j] = fixed, float(work[nxt])
                    nxt += 1
        schedule(s)
    return end


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


def launch_q(
    work: Sequence[float],
    sms: int,
    resident: int,
    shared: bool,
    fixed: float = 0.0,
    lone: float | None = None,
) -> float:
    """q = makespan / (Σ work / SMs) of CTAs of the given relative works (and fixed latency each, in
    units of the works; `lone`: a CTA alone on its SM's share, latency rule only)."""
    total = float(sum(work))
    return makespan(work, sms, resident, shared, fixed, lone) / (total / sms)


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
