"""Real attention kernels in numba.cuda, counted against simlib's model.

* ``run_naive``  — the paper's Algorithm 0: S = QKᵀ, P = softmax(S), O = PV through HBM.
* ``run_tiled``  — FlashAttention-2 forward, one thread per query row (teaching style).

Each kernel is one source compiled with counters on (``count=True``) or off (for timing), and runs
on a GPU or under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set before numba is
imported). Importing this package does not import numba; the names below load it on first use.
CLI: ``python -m gpu_kernels`` (run, bench, compare, tune, ncu, profile, asm, model-vs-ncu, import-run).
The layout rules (padding, default tiles, the fast kernel's config) live in ``simlib.kernel_layout``.
"""

_LAZY = {
    "run_naive": ".kernels.naive",
    "run_tiled": ".kernels.tiled",
    "plan_naive": ".kernels.naive",
    "plan_tiled": ".kernels.tiled",
    "attention_reference": ".reference",
    "rel_error": ".reference",
    "random_qkv": ".reference",
}

__all__ = list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name], __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
