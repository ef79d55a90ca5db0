"""The workload: what attention is computed, independent of hardware and schedule."""

import operator
from dataclasses import dataclass

from .units import dtype_bytes

#: Largest sequence length (and query length) the model accepts: 2⁴⁰ ≈ 1.1·10¹² tokens. Every
#: count stays an exact Python int beyond it, but floats derived from it (roofline seconds) would
#: not; nothing real comes near it.
MAX_SEQ_LEN = 2**40
MAX_HEAD_DIM = 2**16
MAX_BATCH_HEADS = 2**32  # batch, heads and kv_heads each


def _check_int(name: str, value: object, minimum: int, maximum: int | None, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{name} must be {what}, got {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} must be {what}, got {number!r}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {number:,}")
    return number


def check_positive_int(name: str, value: object, maximum: int | None = None) -> int:
    """`value` as an int ≥ 1 (and ≤ `maximum`); ValueError naming `name` otherwise.

    Python and numpy integers are accepted (converted with operator.index); bools, floats and
    strings are refused.

    >>> import numpy as np
    >>> check_positive_int("seq_len", np.int64(4096))
    4096
    """
    return _check_int(name, value, 1, maximum, "a positive integer")


def check_nonnegative_int(name: str, value: object, maximum: int | None = None) -> int:
    """`value` as an int ≥ 0 (and ≤ `maximum`): a count that may be zero (a context of 0 tokens)."""
    return _check_int(name, value, 0, maximum, "an integer ≥ 0")


def check_real(name: str, value: object, minimum: float | None = None, maximum: float | None = None) -> float:
    """`value` as a finite float in [minimum, maximum]; ValueError naming `name` otherwise.

    Python and numpy reals are accepted; bools, strings, NaN and ±inf are refused.

    >>> check_real("time_s", 1e-3, minimum=0)
    0.001
    """
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        low = "" if minimum is None else f"≥ {minimum:g}"
        high = "" if maximum is None else f"≤ {maximum:g}"
        raise ValueError(
            f"{name} must be a number {' and '.join(x for x in (low, high) if x)}, got {value!r}"
        )
    return number


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

    def __post_init__(self) -> None:
        limits = {
            "seq_len": MAX_SEQ_LEN,
            "head_dim": MAX_HEAD_DIM,
            "batch": MAX_BATCH_HEADS,
            "heads": MAX_BATCH_HEADS,
            "kv_heads": MAX_BATCH_HEADS,
            "query_len": MAX_SEQ_LEN,
        }
        for name, limit in limits.items():
            value = getattr(self, name)
            if value is not None or name in ("seq_len", "head_dim", "batch", "heads"):
                object.__setattr__(self, name, check_positive_int(name, value, limit))
        if not isinstance(self.dtype, str):
            raise ValueError(f"dtype must be one of fp16, bf16, fp32, got {self.dtype!r}")
        dtype_bytes(self.dtype)
        if self.kv_heads is not None and (self.kv_heads > self.heads or self.heads % self.kv_heads):
            raise ValueError(f"kv_heads must divide heads={self.heads}, got {self.kv_heads}")
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be True or False, got {self.causal!r}")
        if self.query_len is not None and self.causal and self.query_len > self.seq_len:
            raise ValueError(
                f"query_len={self.query_len} exceeds seq_len={self.seq_len} under causal masking"
            )

    @property
    def nq(self) -> int:
        """Queries per head."""
        return self.seq_len if self.query_len is None else self.query_len

    @property
    def nk(self) -> int:
        """Keys (and values) per head."""
        return self.seq_len

    @property
    def n_kv_heads(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def group(self) -> int:
        """Query heads sharing one K/V head: 1 for MHA, heads for MQA."""
        return self.heads // self.n_kv_heads

    @property
    def batch_heads(self) -> int:
        return self.batch * self.heads

    @property
    def element_bytes(self) -> int:
        return dtype_bytes(self.dtype)

    def matrix_bytes(self, name: str) -> int:
        """Bytes of one per-head matrix: Q, O are nq×d; K, V are nk×d; S, P are nq×nk."""
        d = self.head_dim
        elements = {
            "Q": self.nq * d,
            "O": self.nq * d,
            "K": self.nk * d,
            "V": self.nk * d,
            "S": self.nq * self.nk,
            "P": self.nq * self.nk,
        }[name]
        return elements * self.element_bytes

    @property
    def score_pairs(self) -> int:
        """(query, key) pairs that are not masked, per head: nq·nk, or under causal masking
        Σ_q (q + N − nq + 1) = nq·(N − nq) + nq(nq + 1)/2 (N(N+1)/2 for a square mask)."""
        if not self.causal:
            return self.nq * self.nk
        return self.nq * (self.nk - self.nq) + self.nq * (self.nq + 1) // 2

    @property
    def flops(self) -> int:
        """Useful matrix-product FLOPs, 4·d per unmasked score (QKᵀ and PV), over all heads.

        N=4096, d=64, B·H=1: 4·4096²·64 = 4.29 GFLOP; causal: 4·64·4096·4097/2 = 2.148 GFLOP.
        """
        return 4 * self.score_pairs * self.head_dim * self.batch_heads
