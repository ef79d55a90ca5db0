"""The workload: what attention is computed, independent of hardware and schedule."""
from dataclasses import dataclass

from .units import dtype_bytes


def check_positive_int(name, value):
    """Raise ValueError naming `name` unless `value` is an int ≥ 1 (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class Workload:
    """One attention forward pass: batch B, heads H, sequence length N, head dimension d, dtype.

    Counts are made per batch·head and multiplied by `batch_heads`.

    >>> w = Workload(seq_len=4096, head_dim=64, batch=2, heads=16, dtype="fp16")
    >>> w.batch_heads, w.element_bytes, w.matrix_bytes("Q")   # Q is N·d·2 B = 512 KiB per head
    (32, 2, 524288)
    """

    seq_len: int
    head_dim: int
    batch: int = 1
    heads: int = 1
    dtype: str = "fp16"

    def __post_init__(self):
        check_positive_int("seq_len", self.seq_len)
        check_positive_int("head_dim", self.head_dim)
        check_positive_int("batch", self.batch)
        check_positive_int("heads", self.heads)
        dtype_bytes(self.dtype)

    @property
    def batch_heads(self):
        return self.batch * self.heads

    @property
    def element_bytes(self):
        return dtype_bytes(self.dtype)

    def matrix_bytes(self, name):
        """Bytes of one per-head matrix: Q, K, V, O are N×d; S, P are N×N."""
        n, d = self.seq_len, self.head_dim
        elements = {"Q": n * d, "K": n * d, "V": n * d, "O": n * d, "S": n * n, "P": n * n}[name]
        return elements * self.element_bytes

    @property
    def flops(self):
        """Matrix-product FLOPs, 4·N²·d per batch·head (QKᵀ and PV, 2 FLOPs per multiply-add).

        N=4096, d=64, B·H=1: 4·4096²·64 = 4.29 GFLOP.
        """
        return 4 * self.seq_len**2 * self.head_dim * self.batch_heads
