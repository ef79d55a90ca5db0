"""Element-by-element interpreters of the three schedules, for tiny sizes only.

They walk every tile, every row, every score and every inner index the way the kernels' code does
and count each access one at a time: an independent derivation of the counting contract
(docs/COUNTING.md), sharing no code with simlib's vectorised traces or closed forms.
"""

from collections import Counter


def _blocks(n, b):
    return [(start, min(start + b, n)) for start in range(0, n, b)]


def _visible(i1, j0, nq, nk, causal):
    """A tile is visited unless every key in it lies beyond the reach of its last query."""
    return not causal or j0 <= (i1 - 1) + (nk - nq)


def fa2(n, d, br, bc, causal=False, nq=None):
    nq = n if nq is None else nq
    c = Counter()
    for i0, i1 in _blocks(nq, br):
        for _ in range(i0, i1):
            for _ in range(d):
                c["HBM read"] += 1
                c["SRAM write"] += 1  # Q_i row element lands
        for j0, j1 in _blocks(n, bc):
            if not _visible(i1, j0, nq, n, causal):
                continue
            for _ in range(j0, j1):
                for _ in range(2 * d):
                    c["HBM read"] += 1
                    c["SRAM write"] += 1  # K_j and V_j elements land
            for _ in range(i0, i1):  # one thread per query row
                for _ in range(j0, j1):
                    for _ in range(d):
                        c["SRAM read"] += 2  # Q[row,k] and K[col,k]
                    c["SRAM write"] += 1  # score into S
                for _ in range(j0, j1):
                    c["SRAM read"] += 1
                    c["SRAM write"] += 1  # p = exp(S - m) over S
                for _ in range(j0, j1):
                    c["SRAM read"] += 1  # p
                    for _ in range(d):
                        c["SRAM read"] += 1  # V[col,k]
        for _ in range(i0, i1):
            c["HBM write"] += d  # O row
            c["HBM write stat"] += 1  # L
    return c


def fa1(n, d, br, bc, causal=False, nq=None):
    nq = n if nq is None else nq
    c = Counter()
    c["HBM write"] += nq * d
    c["HBM write stat"] += 2 * nq
    for j0, j1 in _blocks(n, bc):
        for _ in range(j0, j1):
            for _ in range(2 * d):
                c["HBM read"] += 1
                c["SRAM write"] += 1
        for i0, i1 in _blocks(nq, br):
            if not _visible(i1, j0, nq, n, causal):
                continue
            for _ in range(i0, i1):
                c["HBM read"] += 2 * d
                c["SRAM write"] += 2 * d  # Q_i, O_i rows
                c["HBM read stat"] += 2
                c["SRAM write stat"] += 2  # l_i, m_i
                for _ in range(j0, j1):
                    c["SRAM read"] += 2 * d + 1 + 1 + d  # scores, exp, p, V row
                    c["SRAM write"] += 2  # S, P
                c["SRAM read"] += d
                c["SRAM read stat"] += 2  # update reads O, l, m
                c["HBM write"] += d
                c["HBM write stat"] += 2  # store O, l, m
    return c


def _matmul(c, m, n, k, t):
    t_m, t_n, t_k = (t or m), (t or n), (t or k)
    for r0, r1 in _blocks(m, t_m):
        for c0, c1 in _blocks(n, t_n):
            for k0, k1 in _blocks(k, t_k):
                loads = (r1 - r0) * (k1 - k0) + (k1 - k0) * (c1 - c0)
                c["HBM read"] += loads
                c["SRAM write"] += loads
                for _ in range((r1 - r0) * (c1 - c0)):
                    for _ in range(k0, k1):
                        c["SRAM read"] += 2
            c["HBM write"] += (r1 - r0) * (c1 - c0)


def naive(n, d, tile, threads):
    c = Counter()
    _matmul(c, n, n, d, tile)  # S = Q Kᵀ
    for _ in range(n):  # softmax, one block per row
        c["HBM read"] += n
        c["HBM write"] += n
        if threads:
            for _ in range(2):  # max, then sum
                c["SRAM write stat"] += threads  # partials
                stride = threads // 2
                while stride:
                    c["SRAM read stat"] += 2 * stride
                    c["SRAM write stat"] += stride
                    stride //= 2
                c["SRAM read stat"] += threads  # every thread reads the result
    _matmul(c, n, d, n, tile)  # O = P V
    return c


def flash_bwd(n, d, br, bc, causal=False):
    """Algorithm 4, HBM only: element reads/writes and fp32 statistics."""
    c = Counter()
    c["HBM write"] += 3 * n * d  # dQ, dK, dV zeroed in HBM
    for j0, j1 in _blocks(n, bc):
        c["HBM read"] += 2 * (j1 - j0) * d  # K_j, V_j
        for i0, i1 in _blocks(n, br):
            if not _visible(i1, j0, n, n, causal):
                continue
            for _ in range(i0, i1):
                c["HBM read"] += 4 * d  # Q, O, dO, dQ rows
                c["HBM read stat"] += 2  # l, m
                c["HBM write"] += d  # dQ row
        c["HBM write"] += 2 * (j1 - j0) * d  # dK_j, dV_j
    return c


def naive_bwd(n, d, tile):
    c = Counter()
    _matmul(c, n, d, n, tile)  # dV = Pᵀ dO
    _matmul(c, n, n, d, tile)  # dP = dO Vᵀ
    c["HBM read"] += 2 * n * n
    c["HBM write"] += n * n  # dS from P and dP
    _matmul(c, n, d, n, tile)  # dQ = dS K
    _matmul(c, n, d, n, tile)  # dK = dSᵀ Q
    return c


def decode(n, d, group, q_len, bc, splits):
    """One (batch, KV head): the group's query rows packed, the cache cut into `splits` chunks."""
    rows = group * q_len
    chunk = -(-n // splits)
    chunks = _blocks(n, chunk)
    c = Counter()
    for k0, k1 in chunks:
        c["HBM read"] += rows * d
        c["SRAM write"] += rows * d
        for j0, j1 in _blocks(k1 - k0, bc):
            cols = j1 - j0
            c["HBM read"] += 2 * cols * d
            c["SRAM write"] += 2 * cols * d
            c["SRAM read"] += rows * cols * (3 * d + 2)
            c["SRAM write"] += 2 * rows * cols
        if len(chunks) == 1:
            c["HBM write"] += rows * d
        else:
            c["HBM write stat"] += rows * d + rows  # fp32 partial O and logsumexp
    if len(chunks) > 1:
        c["HBM read stat"] += len(chunks) * (rows * d + rows)
        c["HBM write"] += rows * d
    return c
