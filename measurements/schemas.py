"""Every measured CSV's schema, defined once: its writer writes `columns`, its reader needs `required`.

A `Schema` names the columns a writer writes (in order), the subset a reader needs (files of older
runs of the same writer may lack the columns added since), and which values must be finite positive
numbers wherever they are given: `positive` columns (wide files: one row per variant and shape), or
the `value` of rows whose `metric` is in `positive_metrics` (long files: one row per metric). An empty
cell means "not measured" (a variant out of memory, past the time budget) and stays allowed.
`measurements.read` checks a file against its schema.

>>> SIDE_BY_SIDE.columns[:4], SIDE_BY_SIDE.required == SIDE_BY_SIDE.columns[:9]
(('kernel', 'config', 'dtype', 'batch'), True)
"""

from __future__ import annotations

from dataclasses import dataclass

from simlib.energy import CALIBRATION_COLUMNS

from . import eager16


@dataclass(frozen=True)
class Schema:
    name: str  # what the file holds, for error messages
    columns: tuple[str, ...]  # what its writer writes, in order
    required: tuple[str, ...] = ()  # what a reader needs (default: every column)
    positive: tuple[str, ...] = ()  # columns whose non-empty cells are finite and > 0
    positive_metrics: tuple[str, ...] = ()  # metrics whose non-empty `value` is finite and > 0

    def __post_init__(self):
        if not self.required:
            object.__setattr__(self, "required", self.columns)
        unknown = set(self.required) - set(self.columns)
        if unknown:
            raise ValueError(f"{self.name}: required columns {sorted(unknown)} are not written")


SHAPE = ("batch", "heads", "seq_len", "head_dim")
LONG = ("params", "metric", "value", "unit", "note")

#: the teaching kernels' bench (`python -m gpu_kernels bench` before the one harness): bench_h200.csv.
BENCH = Schema("the teaching kernels' bench", ("kernel", *SHAPE, *LONG), positive_metrics=("time_ms_median",))
#: the one harness (`python -m gpu_kernels bench|compare`): compare_h200*.csv and later benches.
HARNESS = Schema(
    "the timing harness",
    ("variant", *SHAPE, *LONG),
    positive_metrics=("ms", "ms_p10", "ms_p90", "ms_min", "tflops"),
)
#: the 16-bit side by side (`python -m gpu_kernels side-by-side`, gpu_kernels/measure/side_by_side.py)
#: and the runs written with its columns (tc_bench_h200.csv, benchmarks/fa2_tc_speed.py).
SIDE_BY_SIDE = Schema(
    "the 16-bit side by side",
    (
        "kernel",
        "config",
        "dtype",
        *SHAPE,
        "causal",
        "median_ms",
        "min_ms",
        "max_ms",
        "reps",
        "per_event",
        "flops",
        "tflops",
        "rel_err",
        "tol",
        "ok",
        "checked_heads",
        "kv_heads",
        "ratio_to_torch_flash",
        "note",
    ),
    required=("kernel", "config", "dtype", *SHAPE, "causal", "median_ms"),
    positive=("median_ms", "min_ms", "max_ms", "tflops"),
)
#: fa2_tc against torch flash and cuDNN (benchmarks/fa2_tc_speed.py, written with the side by side's columns).
FA2_TC_SPEED = Schema(
    "fa2_tc's speed against torch",
    SIDE_BY_SIDE.columns,
    required=("kernel", "config", "dtype", "seq_len", "head_dim", "causal", "median_ms", "tflops", "ok"),
    positive=SIDE_BY_SIDE.positive,
)
#: the decode side by side (`python -m gpu_kernels side-by-side --shape B:H:H_kv:L:d:q_len`,
#: gpu_kernels/measure/decode_side_by_side.py): decode_tc, fa2_tc and SDPA against the copy bandwidth.
DECODE_SIDE_BY_SIDE = Schema(
    "the decode side by side",
    (
        "kernel",
        "config",
        "dtype",
        "batch",
        "heads",
        "kv_heads",
        "query_len",
        "seq_len",
        "head_dim",
        "splits",
        "median_ms",
        "min_ms",
        "max_ms",
        "reps",
        "hbm_bytes",
        "kernel_hbm_bytes",
        "gbps",
        "copy_gbps",
        "frac_of_copy",
        "ratio_to_best_sdpa",
        "rel_err",
        "tol",
        "ok",
        "note",
    ),
    positive=("median_ms", "min_ms", "max_ms", "gbps", "copy_gbps", "frac_of_copy"),
)
#: Nsight Compute per launch next to the model and the counters (`python -m gpu_kernels profile`).
PROFILE = Schema(
    "the Nsight Compute profile",
    ("kernel", "launch", *SHAPE, "params", "metric", "value", "unit", "source", "note"),
)
#: the physical model next to a profile (`python -m evidence model-vs-ncu`).
MODEL_VS_NCU = Schema(
    "the model next to Nsight Compute",
    (
        "kernel",
        "launch",
        *SHAPE,
        "params",
        "metric",
        "model",
        "ncu",
        "ratio",
        "within_5pct",
        "target",
        "cause",
    ),
)
#: Figure 2's configuration on the H200 (benchmarks/figure2_torch.py): one row per variant and dropout.
FIGURE2 = Schema(
    "Figure 2 on the H200",
    (
        "variant",
        "dropout_p",
        "batch",
        "seq_len",
        "heads",
        "head_dim",
        "dtype",
        "tokens",
        "real_tokens",
        "wall_ms_median",
        "wall_ms_min",
        "wall_ms_max",
        "timed_steps",
        "kernels",
        "dram_read_bytes",
        "dram_write_bytes",
        "l2_read_bytes",
        "l2_write_bytes",
        "ncu_duration_ns",
        "ncu_status",
        "note",
    ),
    required=("variant", "dropout_p", "batch", "seq_len", "heads", "head_dim", "dtype", "wall_ms_median"),
    positive=("wall_ms_median", "wall_ms_min", "wall_ms_max"),
)
FIGURE2_KERNELS = Schema(
    "Figure 2's kernels on the H200",
    (
        "variant",
        "dropout_p",
        "index",
        "kernel",
        "dram_read_bytes",
        "dram_write_bytes",
        "l2_read_sectors",
        "l2_write_sectors",
        "ncu_duration_ns",
    ),
)
#: NVML energy per call of the attention kernels (benchmarks/energy_h200.py).
ENERGY_ATTENTION = Schema(
    "the attention kernels' energy",
    (
        "variant",
        "dtype",
        "pass",
        *SHAPE,
        "status",
        "rel_err",
        "calls",
        "seconds",
        "ms_per_call",
        "joules",
        "watts",
        "joules_per_call",
        "steps_seen",
        "sm_mhz",
        "sm_mhz_min",
        "mem_mhz",
        "temp_c",
        "params",
        "note",
    ),
    positive=("seconds", "ms_per_call"),
)
#: NVML energy of the calibration kernels (benchmarks/energy_h200.py; read by simlib.energy).
ENERGY_CALIBRATION = Schema("the energy calibration", CALIBRATION_COLUMNS, positive=("seconds",))
#: the 16-bit standard attention practitioners run (benchmarks/eager16_h200.py; the columns are
#: measurements.eager16's, where the writer takes them): CUDA-event times, and NVML energy.
EAGER16 = Schema(
    "the 16-bit baseline",
    tuple(eager16.TIME_FIELDS),
    required=(*eager16.KEY, "median_ms", "ok", "rel_err_o", "extra_alloc_bytes"),
    positive=("median_ms", "min_ms", "max_ms", "tflops"),
)
EAGER16_ENERGY = Schema(
    "the 16-bit baseline's energy", tuple(eager16.ENERGY_FIELDS), positive=("seconds", "ms_per_call")
)
