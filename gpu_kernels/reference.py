"""Float64 numpy reference for attention, the independent check for every kernel."""

from __future__ import annotations

import math

import numpy as np


def attention_reference(q, k, v):
    """O = softmax(Q Kᵀ / sqrt(d)) V and the logsumexp L per row, in float64.

    Inputs (B, H, N, d) of any float dtype; returns (O (B,H,N,d), L (B,H,N)) as float64.
    Processes one batch·head at a time so N = 16384 stays within a few GiB of host memory.
    """
    q = np.asarray(q)
    b, h, n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    o = np.empty((b, h, n, d), dtype=np.float64)
    lse = np.empty((b, h, n), dtype=np.float64)
    for bi in range(b):
        for hi in range(h):
            q64 = q[bi, hi].astype(np.float64)
            k64 = np.asarray(k[bi, hi], dtype=np.float64)
            v64 = np.asarray(v[bi, hi], dtype=np.float64)
            s = (q64 @ k64.T) * scale
            m = s.max(axis=1, keepdims=True)
            e = np.exp(s - m)
            z = e.sum(axis=1, keepdims=True)
            o[bi, hi] = (e / z) @ v64
            lse[bi, hi] = (m + np.log(z))[:, 0]
    return o, lse


def fp32_score_floor(q, k, v) -> float:
    """Relative error of O that no fp32 kernel can avoid: the softmax taken exactly (float64) from
    scores first computed in float32 (numpy's own float32 matmul), against the float64 reference.

    With ordinary logits this is ~1e-7. With huge logits (say Q scaled by 1e4, scores ~3e4) a float32
    score carries an absolute error of ~1e-3, and rows whose two largest scores nearly tie turn that
    into output errors of ~1e-5 and more. Large-logit checks use ``max(1e-5, 2 * floor)`` as tolerance.
    """
    q = np.asarray(q)
    b, h, n, d = q.shape
    scale = np.float32(1.0 / math.sqrt(d))
    ref, _ = attention_reference(q, k, v)
    o = np.empty_like(ref)
    for bi in range(b):
        for hi in range(h):
            s = ((q[bi, hi] @ np.asarray(k[bi, hi]).T) * scale).astype(np.float32).astype(np.float64)
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


def random_qkv(batch, heads, seq_len, head_dim, *, seed=None, logit_scale=1.0):
    """Fresh standard-normal fp32 inputs; ``logit_scale`` multiplies Q (scales every logit)."""
    rng = np.random.default_rng(seed)
    shape = (batch, heads, seq_len, head_dim)
    q = rng.standard_normal(shape, dtype=np.float32)
    k = rng.standard_normal(shape, dtype=np.float32)
    v = rng.standard_normal(shape, dtype=np.float32)
    if logit_scale != 1.0:
        q = (q * np.float32(logit_scale)).astype(np.float32)
    return q, k, v
