"""The columns of the 16-bit baseline's two files, written by benchmarks/eager16_h200.py and read by
evidence.readers (data/measurements/README.md describes each column).

``eager16_h200.csv``: one row per (variant, dtype, pass, causal, N, d), CUDA-event time and the
float64 check. ``eager16_energy_h200.csv``: one row per energy case and two ``idle`` rows, NVML.

>>> TIME_FIELDS[:4], ENERGY_FIELDS[:len(KEY)] == KEY
(['variant', 'implementation', 'dtype', 'softmax_dtype'], True)
"""

#: what names a case in both files
KEY = ["variant", "dtype", "pass", "causal", "batch", "heads", "seq_len", "head_dim"]
TIME_FIELDS = [
    "variant",
    "implementation",
    "dtype",
    "softmax_dtype",
    *KEY[2:],
    "median_ms",
    "min_ms",
    "max_ms",
    "reps",
    "per_event",
    "matmul_flops",
    "tflops",
    "rel_err_o",
    "rel_err_grad",
    "tol_o",
    "tol_grad",
    "ok",
    "extra_alloc_bytes",
    "ratio_to_torch_flash",
    "note",
]
ENERGY_FIELDS = [
    *KEY,
    "status",
    "rel_err_o",
    "rel_err_grad",
    "calls",
    "seconds",
    "ms_per_call",
    "joules",
    "watts",
    "joules_per_call",
    "idle_watts",
    "joules_per_call_above_idle",
    "steps_seen",
    "sm_mhz",
    "sm_mhz_min",
    "mem_mhz",
    "temp_c",
    "note",
]
