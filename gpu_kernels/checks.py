"""Input checks and tile choices, in plain Python (no numba import).

Everything here runs before any kernel is compiled or launched, so a bad argument is a clear
``ValueError`` naming the parameter, never a CUDA error from deep inside a launch. The CLI calls
these functions before it imports numba (numba's CUDA simulator must be chosen before import).

Conventions (also in docs/COUNTING.md):

* inputs are fp32 arrays, C-contiguous: Q (B, H, N_q, d), K and V (B, H_kv, N_k, d) with H_kv
  dividing H (H_kv = H: multi-head; 1 < H_kv < H: grouped-query, GQA; H_kv = 1: multi-query, MQA)
  and N_q = N_k for self-attention (``query_len`` when they differ; causal needs N_q ≤ N_k);
  ``seq_len`` is always N_k. The checked geometry is simlib's own ``Workload`` (fp32), so the
  kernels and the model describe a launch with one type;
* the layout rules (padding, default tiles, the 48 KiB limit, item size) live in
  ``simlib.kernel_layout``; explicit blocks are capped (Br at N_q, Bc at N_k: a block taller than
  the sequence moves only valid rows, so capping changes no count), then checked.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from simlib.kernel_layout import (
    MAX_GRID_YZ,
    MAX_THREADS_PER_BLOCK,
    NAIVE_DEFAULTS_GPU,
    NAIVE_DEFAULTS_SIM,
    STATIC_SHARED_LIMIT_BYTES,
    matmul_shared_bytes,
    tiled_contract_bytes,
    tiled_default_blocks,
)
from simlib.workload import Workload

#: Largest per-thread local array the naive softmax compiles (ceil(N / t) elements).
MAX_SOFTMAX_PER_THREAD = 1024


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


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
        host = a if isinstance(a, np.ndarray) else getattr(a, "_ary", None)  # host or simulator array
        if isinstance(host, np.ndarray) and np.isnan(host).any():  # ±inf stays: −∞ keys mask (tests)
            raise ValueError(f"{name} has NaN values; every input must be a number (±inf masks a key)")
        layouts[name] = tuple(int(x) for x in shape)
    return layouts


def check_qkv(q, k, v) -> Workload:
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


def check_attention_inputs(q, k, v, *, causal=False) -> Workload:
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


def check_shape(batch, heads, seq_len, head_dim, *, kv_heads=None, query_len=None, causal=False) -> Workload:
    """Check the geometry; ``kv_heads`` = H_kv (None: H), ``query_len`` = N_q (None: N_k = seq_len).

    Returns simlib's fp32 Workload with kv_heads / query_len None when they equal heads / seq_len.
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
    return Workload(
        seq_len=int(seq_len),
        head_dim=int(head_dim),
        batch=int(batch),
        heads=int(heads),
        dtype="fp32",
        kv_heads=kv,
        causal=bool(causal),
        query_len=ql,
    )


def resolve_tiled_blocks(shape: Workload, block_rows=None, block_cols=None) -> tuple[int, int]:
    """The (Br, Bc) the tiled kernel will use, after checks. None means the default."""
    dbr, dbc = tiled_default_blocks(shape.seq_len, shape.head_dim, query_len=shape.nq)
    for name, x in (("block_rows", block_rows), ("block_cols", block_cols)):
        if x is not None and (not _is_int(x) or x < 1):
            raise ValueError(f"{name} must be a positive integer; got {x!r}")
    br = dbr if block_rows is None else min(int(block_rows), shape.nq)
    bc = dbc if block_cols is None else min(int(block_cols), shape.nk)
    if br > MAX_THREADS_PER_BLOCK:
        raise ValueError(
            f"block_rows={br} needs {br} threads per block (one per query row); at most {MAX_THREADS_PER_BLOCK}"
        )
    smem = tiled_contract_bytes(br, bc, shape.head_dim)
    if smem > STATIC_SHARED_LIMIT_BYTES:
        raise ValueError(
            f"block_rows={br}, block_cols={bc} with head_dim={shape.head_dim} need "
            f"(Br*d + 2*Bc*d + Br*Bc)*4 = {smem} bytes of shared memory; at most {STATIC_SHARED_LIMIT_BYTES}"
        )
    tr = -(-shape.nq // br)
    if tr > 2**31 - 1:
        raise ValueError(f"query_len={shape.nq} gives too many Q blocks")
    return br, bc


def resolve_naive_params(
    shape: Workload, matmul_tile=None, softmax_threads=None, *, simulator=False
) -> tuple[int, int]:
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
    per_thread = softmax_per_thread(shape.seq_len, t_sm)
    if per_thread > MAX_SOFTMAX_PER_THREAD:
        raise ValueError(
            f"softmax_threads={t_sm} leaves ceil(N/t)={per_thread} elements per thread for seq_len="
            f"{shape.seq_len}; at most {MAX_SOFTMAX_PER_THREAD}: use more softmax threads"
        )
    smem = matmul_shared_bytes(t_mm)
    if smem > STATIC_SHARED_LIMIT_BYTES:
        raise ValueError(
            f"matmul_tile={t_mm} needs {smem} bytes of shared memory; at most {STATIC_SHARED_LIMIT_BYTES}"
        )
    if -(-shape.nq // t_mm) > MAX_GRID_YZ:  # grid y of both matmuls: row tiles of the N_q query rows
        raise ValueError(
            f"matmul_tile={t_mm} gives more than {MAX_GRID_YZ} row tiles for {shape.nq} query rows"
        )
    return int(t_mm), int(t_sm)


def softmax_per_thread(seq_len: int, softmax_threads: int) -> int:
    return -(-seq_len // softmax_threads)


def scale_for(head_dim: int) -> np.float32:
    """Softmax scale 1/sqrt(d) as float32, the value every kernel uses."""
    return np.float32(1.0 / math.sqrt(head_dim))
