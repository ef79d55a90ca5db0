"""Input checks and tile choices, in plain Python (no numba import).

Everything here runs before any kernel is compiled or launched, so a bad argument is a clear
``ValueError`` naming the parameter, never a CUDA error from deep inside a launch. The CLI calls
these functions before it imports numba (numba's CUDA simulator must be chosen before import).

Conventions (also in docs/COUNTING.md):

* inputs are fp32 arrays, C-contiguous: Q (B, H, N_q, d), K and V (B, H_kv, N_k, d) with H_kv
  dividing H (H_kv = H: multi-head; 1 < H_kv < H: grouped-query, GQA; H_kv = 1: multi-query, MQA)
  and N_q = N_k for self-attention (``query_len`` when they differ; causal needs N_q ≤ N_k);
  ``seq_len`` is always N_k, as in simlib's Workload;
* the tiled kernel's default blocks are the FlashAttention paper's for 48 KiB of shared memory:
  M = 48 KiB / 4 B elements, Bc = ceil(M / 4d), Br = min(Bc, d), each capped at N;
* explicit blocks are capped too (Br at N_q, Bc at N_k) (a block taller than the sequence moves only valid rows, so
  capping changes no count, only the thread-block size); the checks below then apply to the capped
  values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Static shared memory one thread block may use without opting in to more (CUDA's 48 KiB).
SHARED_LIMIT_BYTES = 48 * 1024
#: Threads per block on every CUDA GPU since compute capability 2.0.
MAX_THREADS_PER_BLOCK = 1024
#: Grid y and z dimensions are limited to 65535.
MAX_GRID_YZ = 65535
#: Largest per-thread local array the naive softmax compiles (ceil(N / t) elements).
MAX_SOFTMAX_PER_THREAD = 1024
#: Bytes per element: the kernels are fp32 only (ℓ, m, L are fp32 as well).
ITEMSIZE = 4

#: Naive defaults: on a GPU a 16×16 matmul tile (256 threads) and 128 softmax threads per row;
#: under the CUDA simulator (a Python thread per CUDA thread) much smaller ones.
NAIVE_DEFAULTS_GPU = {"matmul_tile": 16, "softmax_threads": 128}
NAIVE_DEFAULTS_SIM = {"matmul_tile": 4, "softmax_threads": 4}


@dataclass(frozen=True)
class Shape:
    """Attention geometry, simlib's conventions: ``seq_len`` = N_k (keys), ``heads`` = query heads.

    ``kv_heads`` and ``query_len`` are None for the plain case (multi-head, N_q = N_k), so a plain
    Shape(B, H, N, d) is what it always was.
    """

    batch: int
    heads: int
    seq_len: int
    head_dim: int
    kv_heads: int | None = None
    query_len: int | None = None

    @property
    def bh(self) -> int:
        return self.batch * self.heads

    @property
    def nq(self) -> int:
        """Query rows per head."""
        return self.seq_len if self.query_len is None else self.query_len

    @property
    def nk(self) -> int:
        """Key (and value) rows per head."""
        return self.seq_len

    @property
    def n_kv_heads(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def group(self) -> int:
        """Query heads sharing one K/V head: 1 (MHA) ... heads (MQA)."""
        return self.heads // self.n_kv_heads


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _layout(a):
    """(shape, dtype, c_contiguous) of a numpy array or any CUDA array (numba, cupy, ...)."""
    if isinstance(a, np.ndarray):
        return a.shape, a.dtype, bool(a.flags.c_contiguous)
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        dtype = np.dtype(cai["typestr"])
        strides = cai.get("strides")
        if strides is None:
            contiguous = True
        else:
            expect, acc = [], dtype.itemsize
            for n in reversed(shape):
                expect.append(acc)
                acc *= n
            expect = tuple(reversed(expect))
            contiguous = all(s == e for s, e, n in zip(strides, expect, shape) if n > 1)
        return shape, dtype, contiguous
    # The numba simulator's device arrays wrap a numpy array.
    inner = getattr(a, "_ary", None)
    if isinstance(inner, np.ndarray):
        return _layout(inner)
    raise ValueError(f"expected a numpy or CUDA array, got {type(a).__name__}")


def _check_arrays(q, k, v) -> dict:
    """Rank 4, float32, C-contiguous for each of q, k, v; returns their shapes by name."""
    layouts = {}
    for name, a in (("q", q), ("k", k), ("v", v)):
        shape, dtype, contiguous = _layout(a)
        if len(shape) != 4:
            raise ValueError(f"{name} must have rank 4 (batch, heads, seq_len, head_dim); got shape {shape}")
        if dtype != np.float32:
            raise ValueError(f"{name} must be float32; got {dtype}")
        if not contiguous:
            raise ValueError(f"{name} must be C-contiguous")
        layouts[name] = tuple(int(x) for x in shape)
    return layouts


def check_qkv(q, k, v) -> Shape:
    """Check q, k, v: rank 4, equal shapes, float32, C-contiguous, no zero dimension.

    The strict multi-head self-attention check (kernels without GQA or N_q ≠ N_k use it);
    ``check_attention_inputs`` is the general one.
    """
    layouts = _check_arrays(q, k, v)
    if not (layouts["q"] == layouts["k"] == layouts["v"]):
        raise ValueError(
            f"q, k, v must have the same shape; got q {layouts['q']}, k {layouts['k']}, v {layouts['v']}"
        )
    b, h, n, d = layouts["q"]
    return check_shape(b, h, n, d)


def check_attention_inputs(q, k, v, *, causal=False) -> Shape:
    """Check q (B, H, N_q, d), k and v (B, H_kv, N_k, d) for the naive and tiled kernels.

    K and V must have the same shape, Q the same batch and head_dim as K, H a multiple of H_kv, and
    with ``causal`` N_q ≤ N_k (the mask is aligned bottom-right: query q sees keys ≤ q + N_k − N_q,
    so a query with no key to see would have an empty softmax).
    """
    if not isinstance(causal, (bool, np.bool_)):
        raise ValueError(f"causal must be True or False; got {causal!r}")
    layouts = _check_arrays(q, k, v)
    if layouts["k"] != layouts["v"]:
        raise ValueError(f"k and v must have the same shape; got k {layouts['k']}, v {layouts['v']}")
    b, h, nq, d = layouts["q"]
    bk, hkv, nk, dk = layouts["k"]
    if (b, d) != (bk, dk):
        raise ValueError(
            f"q and k must have the same batch and head_dim; got q {layouts['q']}, k {layouts['k']}"
        )
    return check_shape(b, h, nk, d, kv_heads=hkv, query_len=nq, causal=bool(causal))


def check_shape(batch, heads, seq_len, head_dim, *, kv_heads=None, query_len=None, causal=False) -> Shape:
    """Check the geometry; ``kv_heads`` = H_kv (None: H), ``query_len`` = N_q (None: N_k = seq_len).

    The returned Shape stores kv_heads / query_len as None when they equal heads / seq_len.
    """
    for name, x in (("batch", batch), ("heads", heads), ("seq_len", seq_len), ("head_dim", head_dim)):
        if not _is_int(x) or x < 1:
            raise ValueError(f"{name} must be a positive integer; got {x!r}")
    for name, x in (("kv_heads", kv_heads), ("query_len", query_len)):
        if x is not None and (not _is_int(x) or x < 1):
            raise ValueError(f"{name} must be a positive integer; got {x!r}")
    if kv_heads is not None and heads % kv_heads:
        raise ValueError(
            f"kv_heads={kv_heads} must divide heads={heads} (each K/V head serves a whole group of query heads)"
        )
    if causal and query_len is not None and query_len > seq_len:
        raise ValueError(
            f"causal needs query_len <= seq_len (N_q <= N_k); got query_len={query_len}, seq_len={seq_len}"
        )
    if batch * heads > MAX_GRID_YZ:
        raise ValueError(f"batch*heads must be at most {MAX_GRID_YZ} (a grid dimension); got {batch * heads}")
    kv = None if kv_heads is None or kv_heads == heads else int(kv_heads)
    ql = None if query_len is None or query_len == seq_len else int(query_len)
    return Shape(int(batch), int(heads), int(seq_len), int(head_dim), kv, ql)


def tiled_smem_bytes(block_rows: int, block_cols: int, head_dim: int) -> int:
    """Shared memory of the tiled kernel by the contract's formula: Qs, Ks, Vs and the S tile."""
    br, bc, d = block_rows, block_cols, head_dim
    return (br * d + 2 * bc * d + br * bc) * ITEMSIZE


def default_blocks(seq_len: int, head_dim: int, sram_bytes: int = SHARED_LIMIT_BYTES,
                   query_len: int | None = None) -> tuple[int, int]:
    """FlashAttention's default blocks (Algorithm 1) for fp32: Bc = ceil(M/4d), Br = min(Bc, d),
    Br capped at N_q (``query_len``, default N) and Bc at N_k = N, as simlib's tiling does."""
    m = sram_bytes // ITEMSIZE
    bc = -(-m // (4 * head_dim))
    br = min(bc, head_dim)
    nq = seq_len if query_len is None else query_len
    return min(br, nq), min(bc, seq_len)


def resolve_tiled_blocks(shape: Shape, block_rows=None, block_cols=None) -> tuple[int, int]:
    """The (Br, Bc) the tiled kernel will use, after checks. None means the default."""
    dbr, dbc = default_blocks(shape.seq_len, shape.head_dim, query_len=shape.nq)
    for name, x in (("block_rows", block_rows), ("block_cols", block_cols)):
        if x is not None and (not _is_int(x) or x < 1):
            raise ValueError(f"{name} must be a positive integer; got {x!r}")
    br = dbr if block_rows is None else min(int(block_rows), shape.nq)
    bc = dbc if block_cols is None else min(int(block_cols), shape.nk)
    if br > MAX_THREADS_PER_BLOCK:
        raise ValueError(
            f"block_rows={br} needs {br} threads per block (one per query row); at most {MAX_THREADS_PER_BLOCK}"
        )
    smem = tiled_smem_bytes(br, bc, shape.head_dim)
    if smem > SHARED_LIMIT_BYTES:
        raise ValueError(
            f"block_rows={br}, block_cols={bc} with head_dim={shape.head_dim} need "
            f"(Br*d + 2*Bc*d + Br*Bc)*4 = {smem} bytes of shared memory; at most {SHARED_LIMIT_BYTES}"
        )
    tr = -(-shape.nq // br)
    if tr > 2**31 - 1:
        raise ValueError(f"query_len={shape.nq} gives too many Q blocks")
    return br, bc


def resolve_naive_params(shape: Shape, matmul_tile=None, softmax_threads=None, *, simulator=False) -> tuple[int, int]:
    """The (T, t) the naive kernels will use, after checks. None means the default."""
    defaults = NAIVE_DEFAULTS_SIM if simulator else NAIVE_DEFAULTS_GPU
    t_mm = defaults["matmul_tile"] if matmul_tile is None else matmul_tile
    t_sm = defaults["softmax_threads"] if softmax_threads is None else softmax_threads
    if not _is_int(t_mm) or t_mm < 1:
        raise ValueError(f"matmul_tile must be a positive integer; got {t_mm!r}")
    if t_mm * t_mm > MAX_THREADS_PER_BLOCK:
        raise ValueError(
            f"matmul_tile={t_mm} needs {t_mm * t_mm} threads per block (T*T); at most {MAX_THREADS_PER_BLOCK}"
        )
    if not _is_int(t_sm) or t_sm < 2 or (t_sm & (t_sm - 1)) != 0:
        raise ValueError(f"softmax_threads must be a power of two >= 2; got {t_sm!r}")
    if t_sm > MAX_THREADS_PER_BLOCK:
        raise ValueError(f"softmax_threads={t_sm} exceeds {MAX_THREADS_PER_BLOCK} threads per block")
    per_thread = -(-shape.seq_len // t_sm)
    if per_thread > MAX_SOFTMAX_PER_THREAD:
        raise ValueError(
            f"softmax_threads={t_sm} leaves ceil(N/t)={per_thread} elements per thread for seq_len="
            f"{shape.seq_len}; at most {MAX_SOFTMAX_PER_THREAD}: use more softmax threads"
        )
    # smem of the matmul: As (T×T) + Bs (T×(T+1)) fp32
    smem = (t_mm * t_mm + t_mm * (t_mm + 1)) * ITEMSIZE
    if smem > SHARED_LIMIT_BYTES:
        raise ValueError(f"matmul_tile={t_mm} needs {smem} bytes of shared memory; at most {SHARED_LIMIT_BYTES}")
    if -(-shape.nq // t_mm) > MAX_GRID_YZ:  # grid y of both matmuls: row tiles of the N_q query rows
        raise ValueError(f"matmul_tile={t_mm} gives more than {MAX_GRID_YZ} row tiles for {shape.nq} query rows")
    return int(t_mm), int(t_sm)


def softmax_per_thread(seq_len: int, softmax_threads: int) -> int:
    return -(-seq_len // softmax_threads)


def matmul_flops(shape: Shape) -> int:
    """FLOPs of the two matrix products (4·N_q·N_k·d per batch·head, 4·N²·d for self-attention)."""
    return 4 * shape.nq * shape.nk * shape.head_dim * shape.bh


def scale_for(head_dim: int) -> np.float32:
    """Softmax scale 1/sqrt(d) as float32, the value every kernel uses."""
    return np.float32(1.0 / math.sqrt(head_dim))
