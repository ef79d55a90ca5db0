"""Every attention implementation the harness can time, by name (fp32 forward, inputs (B, H, N, d)).

    numba_naive      gpu_kernels.kernels.naive: S = QKᵀ, softmax, PV through HBM (shared-memory matmuls)
    numba_tiled      gpu_kernels.kernels.tiled: the readable FlashAttention-2 kernel (one thread per row),
                     the paper's default blocks for 48 KiB (d=64: Br = Bc = 48)
    numba_tiled_wide the same kernel with more threads per block (kernel_layout.tiled_wide_blocks)
    numba_fast       gpu_kernels.kernels.fast: the optimised FlashAttention-2 kernel (register tiling)
    cupy_naive       cuBLAS matmuls (fp32, no TF32) + elementwise stable softmax, S in HBM
    torch_math       torch SDPA, math backend (fp32 matmuls, TF32 off; fp32 inside (upcast) for 16-bit inputs)
    torch_efficient  torch SDPA, memory-efficient backend (CUTLASS fp32 kernel)

The 16-bit variants (numba fa2_tc and naive_tc on tensor cores, cupy's naive attention in the dtype,
torch SDPA math / flash / cuDNN / efficient in bf16 and fp16) have their own registry,
``gpu_kernels.measure.side_by_side.VARIANTS``, run by ``python -m gpu_kernels side-by-side``: this
harness's inputs, float64 reference rows and 1e-4 tolerance are fp32's.

``make(name, case, fast_config)`` returns a ``Variant``: ``call(i)`` runs on input set i,
``output(i)`` gives (O, L or None), ``params`` describes the mapping, ``keep`` holds buffers, and
``intermediate_bytes`` is what a naive variant materialises (S, P), for the memory check.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simlib.kernel_layout import tiled_default_blocks, tiled_wide_blocks

from ..checks import resolve_naive_params, scale_for

#: N×N fp32 buffers each variant materialises (S and P for numba's naive, S for cupy, ~3 for torch math).
SQUARE_BUFFERS = {"numba_naive": 2, "cupy_naive": 1, "torch_math": 3}
VARIANTS = (
    "numba_naive",
    "numba_tiled",
    "numba_tiled_wide",
    "numba_fast",
    "cupy_naive",
    "torch_math",
    "torch_efficient",
)
#: Which simlib schedule counts each numba variant (None: the paper's model of the library call).
SIMLIB_SCHEDULE = {
    "numba_naive": "naive",
    "numba_tiled": "fa2",
    "numba_tiled_wide": "fa2",
    "numba_fast": "fa2_fast",
    "cupy_naive": "naive",
}


@dataclass
class Variant:
    call: object
    output: object
    params: dict
    keep: dict = field(default_factory=dict)


def intermediate_bytes(name: str, workload) -> int:
    return SQUARE_BUFFERS.get(name, 0) * workload.batch_heads * workload.nq * workload.nk * 4


def available(names) -> list[str]:
    """The names that can run here (torch's need torch with sdpa_kernel)."""
    out = []
    for v in names:
        if v.startswith("torch"):
            try:
                import torch  # noqa: F401
                from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: F401
            except ImportError:
                continue
        out.append(v)
    return out


def cupy_naive_attention(q, k, v, o, s_buf, scale):
    """O = softmax(scale·QKᵀ)V with cuBLAS fp32 matmuls and a stable in-place softmax on S (B,H,N,N)."""
    import cupy as cp

    cp.matmul(q, k.transpose(0, 1, 3, 2), out=s_buf)
    cp.multiply(s_buf, scale, out=s_buf)
    cp.subtract(s_buf, s_buf.max(axis=3, keepdims=True), out=s_buf)  # stable: the max becomes exp(0)
    cp.exp(s_buf, out=s_buf)
    cp.divide(s_buf, s_buf.sum(axis=3, keepdims=True), out=s_buf)
    cp.matmul(s_buf, v, out=o)


def fast_params(cfg) -> dict:
    return {
        "tm": cfg.tm,
        "tn": cfg.tn,
        "threads": f"{cfg.nty}x{cfg.ntx}",
        "block_rows": cfg.block_rows,
        "block_cols": cfg.block_cols,
        "max_registers": cfg.max_registers,
        "async_copy": cfg.async_copy,
        "vector_loads": cfg.vector_loads,
        "unroll": cfg.unroll,
        "smem_bytes": cfg.smem_bytes,
    }


def make(name, case, fast_config=None) -> Variant:
    """The Variant `name` on the input sets of `case`."""
    import cupy as cp
    from numba import cuda

    w = case.workload
    b, h, n, d = w.batch, w.heads, w.seq_len, w.head_dim
    dummy = cuda.to_device(np.zeros(4, dtype=np.int64))
    sets = case.sets

    def o_and_l(i):
        return sets[i]["o"], sets[i]["lse"]

    def o_only(i):
        return sets[i]["o"], None

    if name == "numba_fast":
        from ..kernels.fast import fast_plan

        plan = fast_plan(w, fast_config)

        def call(i):
            f = sets[i]["flat"]
            plan.launch(f["q"], f["k"], f["v"], f["o"], f["lse"], dummy)

        return Variant(call, o_and_l, fast_params(plan.config))
    if name in ("numba_tiled", "numba_tiled_wide"):
        from ..kernels.tiled import TiledPlan

        br, bc = tiled_default_blocks(n, d) if name == "numba_tiled" else tiled_wide_blocks(n, d)
        plan = TiledPlan(workload=w, block_rows=br, block_cols=bc)

        def call(i):
            f = sets[i]["nb3"]
            plan.launch(f["q"], f["k"], f["v"], f["o"], f["lse"], dummy)

        return Variant(call, o_and_l, {"block_rows": br, "block_cols": bc})
    if name == "numba_naive":
        from ..kernels.naive import NaivePlan

        t_mm, t_sm = resolve_naive_params(w)
        plan = NaivePlan(workload=w, matmul_tile=t_mm, softmax_threads=t_sm)
        keep = {
            "s": cuda.device_array((w.batch_heads, n, n), dtype=np.float32),
            "p": cuda.device_array((w.batch_heads, n, n), dtype=np.float32),
        }

        def call(i):
            f = sets[i]["nb3"]
            plan.launch(f["q"], f["k"], f["v"], keep["s"], keep["p"], f["o"], (dummy, dummy, dummy))

        return Variant(call, o_only, {"matmul_tile": t_mm, "softmax_threads": t_sm}, keep)
    if name == "cupy_naive":
        scale = float(scale_for(d))
        keep = {"s": cp.empty((b, h, n, n), dtype=cp.float32)}

        def call(i):
            st = sets[i]
            cupy_naive_attention(st["q"], st["k"], st["v"], st["o"], keep["s"], scale)

        return Variant(call, o_only, {"tf32": False}, keep)
    if name in ("torch_math", "torch_efficient"):
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        backend = SDPBackend.MATH if name == "torch_math" else SDPBackend.EFFICIENT_ATTENTION
        tq = [tuple(torch.from_dlpack(st[key]) for key in ("q", "k", "v")) for st in sets]
        outs = {}
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def call(i):
            with sdpa_kernel([backend]):
                outs[i] = sdpa(*tq[i])

        def output(i):
            return cp.from_dlpack(outs[i].detach()), None

        return Variant(
            call,
            output,
            {"backend": backend.name, "allow_tf32": False, "torch": torch.__version__},
            {"outs": outs},
        )
    raise ValueError(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")
