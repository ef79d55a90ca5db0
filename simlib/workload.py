"""The workload: what attention is computed, independent of hardware and schedule."""
from dataclasses import dataclass

from .units import dtype_bytes


def check_positive_int(name, value):
    """Raise ValueError naming `name` unless `value` is an int ≥ 1 (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class Workload:
    """One attention pass: batch B, query heads H, key/value length N, head dimension d, dtype.

    - `kv_heads` (GQA/MQA): heads of K and V, dividing `heads`; None means `heads` (MHA).
    - `causal`: query q attends keys k ≤ q + (N − query_len) (aligned bottom-right, as FlashAttention 2).
    - `query_len`: queries per head; None means `seq_len` (self-attention). A decode step has
      query_len = 1 (or a few) against a KV cache of seq_len = L.

    Counts are made per unit of parallel work (batch·head, or batch·kv_head for decode).

    >>> w = Workload(seq_len=4096, head_dim=64, batch=2, heads=16, dtype="fp16")
    >>> w.batch_heads, w.element_bytes, w.matrix_bytes("Q")   # Q is N·d·2 B = 512 KiB per head
    (32, 2, 524288)
    """

    seq_len: int
    head_dim: int
    batch: int = 1
    heads: int = 1
    dtype: str = "fp16"
    kv_heads: int | None = None
    causal: bool = False
    query_len: int | None = None

    def __post_init__(self):
        check_positive_int("seq_len", self.seq_len)
        check_positive_int("head_dim", self.head_dim)
        check_positive_int("batch", self.batch)
        check_positive_int("heads", self.heads)
        dtype_bytes(self.dtype)
        if self.kv_heads is not None:
            check_positive_int("kv_heads", self.kv_heads)
            if self.kv_heads > self.heads or self.heads % self.kv_heads:
                raise ValueError(f"kv_heads must divide heads={self.heads}, got {self.kv_heads}")
        if self.query_len is not None:
            check_positive_int("query_len", self.query_len)
            if self.causal and self.query_len > self.seq_len:
                raise ValueError(f"query_len={self.query_len} exceeds seq_len={self.seq_len} under causal masking")
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be True or False, got {self.causal!r}")

    @property
    def nq(self):
        """Queries per head."""
        return self.seq_len if self.query_len is None else self.query_len

    @property
    def nk(self):
        """Keys (and values) per head."""
        return self.seq_len

    @property
    def n_kv_heads(self):
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def group(self):
        """Query heads sharing one K/V head: 1 for MHA, heads for MQA."""
        return self.heads // self.n_kv_heads

    @property
    def batch_heads(self):
        return self.batch * self.heads

    @property
    def element_bytes(self):
        return dtype_bytes(self.dtype)

    def matrix_bytes(self, name):
        """Bytes of one per-head matrix: Q, O are nq×d; K, V are nk×d; S, P are nq×nk."""
        d = self.head_dim
        elements = {"Q": self.nq * d, "O": self.nq * d, "K": self.nk * d, "V": self.nk * d,
                    "S": self.nq * self.nk, "P": self.nq * self.nk}[name]
        return elements * self.element_bytes

    @property
    def score_pairs(self):
        """(query, key) pairs that are not masked, per head: nq·nk, or under causal masking
        Σ_q (q + N − nq + 1) = nq·(N − nq) + nq(nq + 1)/2 (N(N+1)/2 for a square mask)."""
        if not self.causal:
            return self.nq * self.nk
        return self.nq * (self.nk - self.nq) + self.nq * (self.nq + 1) // 2

    @property
    def flops(self):
        """Useful matrix-product FLOPs, 4·d per unmasked score (QKᵀ and PV), over all heads.

        N=4096, d=64, B·H=1: 4·4096²·64 = 4.29 GFLOP; causal: 4·64·4096·4097/2 = 2.148 GFLOP.
        """
        return 4 * self.score_pairs * self.head_dim * self.batch_heads
