"""Float64 numpy reference for attention, the independent check for every kernel."""

from __future__ import annotations

import math

import numpy as np


def repeat_kv(q, k, v):
    """K and V with their heads repeated to match Q's: GQA/MQA written the obvious way.

    K and V have H_kv heads, H_kv dividing H; each is repeated for its G = H / H_kv query heads
    (torch's ``repeat_interleave(G, dim=1)``), so query head h reads K/V head h // G.
    """
    k, v = np.asarray(k), np.asarray(v)
    h, hkv = np.shape(q)[1], k.shape[1]
    if k.shape != v.shape or h % hkv:
        raise ValueError(
            f"k, v must have equal shapes with heads dividing q's; got q {np.shape(q)}, "
            f"k {k.shape}, v {v.shape}"
        )
    if hkv == h:
        return k, v
    return np.repeat(k, h // hkv, axis=1), np.repeat(v, h // hkv, axis=1)


def causal_mask(nq, nk):
    """Boolean (nq, nk) mask, True where query q may see key k: k ≤ q + nk − nq (bottom-right
    aligned, as FlashAttention-2 and simlib's Workload; the square case is the lower triangle)."""
    return np.arange(nk)[None, :] <= np.arange(nq)[:, None] + (nk - nq)


def attention_reference(q, k, v, causal=False):
    """O = softmax(Q Kᵀ / sqrt(d)) V and the logsumexp L per row, in float64.

    q (B, H, N_q, d), k and v (B, H_kv, N_k, d) with H_kv dividing H, any float dtype; returns
    (O (B,H,N_q,d), L (B,H,N_q)) as float64. ``causal`` sets scores with k > q + N_k − N_q to −∞.
    Processes one batch·head at a time so N = 16384 stays within a few GiB of host memory.
    """
    q = np.asarray(q)
    b, h, n, d = q.shape
    k, v = repeat_kv(q, k, v)
    if causal and n > k.shape[2]:
        raise ValueError(f"causal needs N_q <= N_k (else the first rows see no key); got {n} > {k.shape[2]}")
    mask = causal_mask(n, k.shape[2]) if causal else None
    scale = 1.0 / math.sqrt(d)
    o = np.empty((b, h, n, d), dtype=np.float64)
    lse = np.empty((b, h, n), dtype=np.float64)
    for bi in range(b):
        for hi in range(h):
            q64 = q[bi, hi].astype(np.float64)
            k64 = np.asarray(k[bi, hi], dtype=np.float64)
            v64 = np.asarray(v[bi, hi], dtype=np.float64)
            s = (q64 @ k64.T) * scale
            if causal:
                s = np.where(mask, s, -np.inf)
            m = s.max(axis=1, keepdims=True)
            e = np.exp(s - m)
            z = e.sum(axis=1, keepdims=True)
            o[bi, hi] = (e / z) @ v64
            lse[bi, hi] = (m + np.log(z))[:, 0]
    return o, lse


def fp32_score_floor(q, k, v, causal=False) -> float:
    """Relative error of O that no fp32 kernel can avoid: the softmax taken exactly (float64) from
    scores first computed in float32 (numpy's own float32 matmul), against the float64 reference.

    With ordinary logits this is ~1e-7. With huge logits (say Q scaled by 1e4, scores ~3e4) a float32
    score carries an absolute error of ~1e-3, and rows whose two largest scores nearly tie turn that
    into output errors of ~1e-5 and more. Large-logit checks use ``max(1e-5, 2 * floor)`` as tolerance.
    """
    q = np.asarray(q)
    b, h, n, d = q.shape
    k, v = repeat_kv(q, k, v)
    scale = np.float32(1.0 / math.sqrt(d))
    ref, _ = attention_reference(q, k, v, causal=causal)
    mask = causal_mask(n, np.shape(k)[2]) if causal else None
    o = np.empty_like(ref)
    for bi in range(b):
        for hi in range(h):
            s = ((q[bi, hi] @ np.asarray(k[bi, hi]).T) * scale).astype(np.float32).astype(np.float64)
            if causal:
                s = np.where(mask, s, -np.inf)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            o[bi, hi] = (e / e.sum(axis=1, keepdims=True)) @ np.asarray(v[bi, hi], dtype=np.float64)
    return rel_error(o, ref)


def rel_error(out, ref) -> float:
    """‖out − ref‖ / ‖ref‖ over all elements; inf if out has any NaN or inf."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"shape mismatch {out.shape} vs {ref.shape}")
    if not np.all(np.isfinite(out)):
        return math.inf
    denom = np.linalg.norm(ref)
    return float(np.linalg.norm(out - ref) / (denom if denom > 0 else 1.0))


def random_qkv(batch, heads, seq_len, head_dim, *, seed=None, logit_scale=1.0, kv_heads=None, query_len=None):
    """Fresh standard-normal fp32 inputs; ``logit_scale`` multiplies Q (scales every logit).

    Q is (B, H, query_len or seq_len, d); K and V are (B, kv_heads or H, seq_len, d).
    """
    rng = np.random.default_rng(seed)
    nq = seq_len if query_len is None else query_len
    hkv = heads if kv_heads is None else kv_heads
    q = rng.standard_normal((batch, heads, nq, head_dim), dtype=np.float32)
    k = rng.standard_normal((batch, hkv, seq_len, head_dim), dtype=np.float32)
    v = rng.standard_normal((batch, hkv, seq_len, head_dim), dtype=np.float32)
    if logit_scale != 1.0:
        q = (q * np.float32(logit_scale)).astype(np.float32)
    return q, k, v
