"""One shape to time: input sets on the GPU, rotated beyond the L2, and float64 reference rows.

Every variant is checked on set 0 before it is timed: its output is poisoned with NaN first, must
be finite everywhere after the call, and is compared on a sample of rows (the first, the last and
``SAMPLE_ROWS`` random ones, of the first and the last head) with ``gpu_kernels.reference``'s
float64 attention, the one reference of the project. Sampling keeps N = 16384 cheap on the host.
Worked number: B = 1, H = 16, N = 16384, d = 64 is 16·16384·(4·64 + 1)·4 = 269 MB per set, so with
a 60 MiB L2 two sets already exceed 2 × L2 (``n_sets`` = 2).
"""

from __future__ import annotations

import math

import numpy as np

from ..reference import attention_reference

TOLERANCE = 1e-4  # ‖out − ref‖/‖ref‖ on the sampled rows; fp32 arithmetic lands near 1e-6
SAMPLE_ROWS = 48  # rows per checked head (plus the first and the last row)


def input_sets(workload, l2_bytes: int) -> int:
    """Sets of (Q, K, V, O, L) whose total exceeds twice the L2 (at least 2)."""
    set_bytes = workload.batch_heads * workload.seq_len * (4 * workload.head_dim + 1) * 4
    return max(2, -(-2 * l2_bytes // set_bytes))


class Case:
    """One fp32 self-attention shape: input sets on the GPU (cupy), sampled reference rows in float64."""

    def __init__(self, workload, l2_bytes: int, rng):
        import cupy as cp
        from numba import cuda

        self.workload = workload
        b, h, n, d = workload.batch, workload.heads, workload.seq_len, workload.head_dim
        bh = workload.batch_heads
        self.n_sets = input_sets(workload, l2_bytes)
        self.sets = []
        for _ in range(self.n_sets):
            q, k, v = (cp.random.standard_normal((b, h, n, d), dtype=cp.float32) for _ in range(3))
            o = cp.full((b, h, n, d), cp.nan, dtype=cp.float32)
            lse = cp.full((b, h, n), cp.nan, dtype=cp.float32)
            self.sets.append({"q": q, "k": k, "v": v, "o": o, "lse": lse})
        for s in self.sets:  # numba views, made once (a launch with cupy arrays re-types every call)
            s["nb"] = {key: cuda.as_cuda_array(s[key]) for key in ("q", "k", "v", "o", "lse")}
            s["nb3"] = {key: s["nb"][key].reshape(bh, n, d) for key in ("q", "k", "v", "o")}
            s["nb3"]["lse"] = s["nb"]["lse"].reshape(bh, n)
            s["flat"] = {key: s["nb"][key].reshape(s["nb"][key].size) for key in ("q", "k", "v", "o", "lse")}
        heads = sorted({(0, 0), (b - 1, h - 1)})
        rows = np.unique(np.concatenate(([0, n - 1], rng.choice(n, size=min(n, SAMPLE_ROWS), replace=False))))
        s0 = self.sets[0]
        self.ref = []
        for bi, hi in heads:
            qh = cp.asnumpy(s0["q"][bi, hi, rows])[None, None]
            kh = cp.asnumpy(s0["k"][bi, hi])[None, None]
            vh = cp.asnumpy(s0["v"][bi, hi])[None, None]
            ref_o, ref_l = attention_reference(qh, kh, vh)  # the sampled rows as N_q queries
            self.ref.append((bi, hi, rows, ref_o[0, 0], ref_l[0, 0]))

    def poison(self):
        for st in self.sets:
            st["o"].fill(np.nan)
            st["lse"].fill(np.nan)

    def check(self, o, lse=None) -> dict:
        """rel. error of O (and L) on the reference rows; all of O must be finite (it was NaN)."""
        import cupy as cp

        finite = bool(cp.isfinite(o).all())
        num = den = num_l = den_l = 0.0
        for bi, hi, rows, ref_o, ref_l in self.ref:
            got = cp.asnumpy(o[bi, hi, rows]).astype(np.float64)
            num += float(np.sum((got - ref_o) ** 2))
            den += float(np.sum(ref_o**2))
            if lse is not None:
                gl = cp.asnumpy(lse[bi, hi, rows]).astype(np.float64)
                num_l += float(np.sum((gl - ref_l) ** 2))
                den_l += float(np.sum(ref_l**2))
        err = math.sqrt(num / den) if finite else math.inf
        out = {"rel_err_o": err, "finite": finite}
        if lse is not None:
            out["rel_err_lse"] = (
                math.sqrt(num_l / max(den_l, 1e-30)) if bool(cp.isfinite(lse).all()) else math.inf
            )
        return out

    def free(self):
        self.sets = []
