"""The lab's three exercises: what a student hands in, how the grader launches it, and which simlib
schedule its traffic must equal, for which tiles.

| exercise    | hand in                                   | launches          | simlib schedule          |
|-------------|-------------------------------------------|-------------------|--------------------------|
| `naive`     | matmul_kernel(tile, trans_b, counting),   | qk, softmax, pv   | naive, matmul_tile=T     |
|             | softmax_kernel(n_keys, counting)          |                   |                          |
| `fa1`       | fa1_kernel(d, Br, Bc, counting)           | fa1               | fa1, block_rows/cols     |
| `fa2_inner` | inner (a device function), or a whole     | fa2               | fa2, block_rows/cols     |
|             | kernel(d, Br, Bc, counting)               |                   |                          |

The kernels' signatures are gpu_kernels' (the project's `naive` matmul and `tiled` kernel are valid
answers to exercises 1 and 3). Inputs are (B·H, N, d) fp32; outputs start as NaN (poisoned), so an
element a kernel never writes shows up. Shapes are tiny (the simulator runs one Python thread per CUDA
thread) and ragged on purpose: N and d are not multiples of the tiles.

>>> [(s.label, s.tiles) for s in EXERCISES["fa1"].shapes][1]
('B=1 H=1 N=11 d=8', {'block_rows': 4, 'block_cols': 3})
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from simlib import Workload, count

#: Counter order of gpu_kernels.counting, as (level, op).
LEVEL_OPS = (("HBM", "read"), ("HBM", "write"), ("SRAM", "read"), ("SRAM", "write"))


@dataclass(frozen=True)
class Shape:
    batch: int
    heads: int
    seq_len: int
    head_dim: int
    tiles: dict = field(hash=False)

    @property
    def label(self) -> str:
        return f"B={self.batch} H={self.heads} N={self.seq_len} d={self.head_dim}"

    @property
    def workload(self) -> Workload:
        return Workload(
            batch=self.batch, heads=self.heads, seq_len=self.seq_len, head_dim=self.head_dim, dtype="fp32"
        )


@dataclass(frozen=True)
class Exercise:
    name: str
    title: str
    schedule: str  # simlib's schedule whose counts the kernel must equal
    parts: tuple[str, ...]  # what the student hands in (keyword names of `grade`)
    launches: dict[str, tuple[str, ...]]  # launch -> simlib phases it performs
    outputs: tuple[str, ...]  # checked against float64: "O" and, where the kernel writes it, "L"
    shapes: tuple[Shape, ...]
    #: (parts, q, k, v, shape, counting, device_array) -> (launches, counters, outputs)
    run: Callable = field(repr=False)

    def expected(self, shape: Shape) -> dict[str, dict[tuple[str, str], int]]:
        """simlib's bytes per launch and (level, op) for `shape`'s workload and tiles."""
        table = count(self.schedule, shape.workload, **shape.tiles).table()
        found = {}
        for launch, phases in self.launches.items():
            rows = table[table.phase.isin(phases)] if phases else table
            found[launch] = {
                lo: int(rows[(rows.level == lo[0]) & (rows.op == lo[1])].bytes.sum()) for lo in LEVEL_OPS
            }
        return found


def _heads(q):
    b, h, n, d = q.shape
    return b * h, n, d


def _device_inputs(q, k, v, device_array, *stats):
    """Q, K, V as (B·H, N, d) device arrays, O and each row statistic in `stats` NaN-poisoned."""
    bh, n, d = _heads(q)
    arrays = [device_array(name, x.reshape(bh, n, d)) for name, x in zip("QKV", (q, k, v))]
    arrays.append(device_array("O", np.full((bh, n, d), np.nan, np.float32)))
    arrays += [device_array(name, np.full((bh, n), np.nan, np.float32)) for name in stats]
    return arrays


def _new_counters():
    from gpu_kernels.counting import new_counters

    return new_counters()


def run_naive(parts, q, k, v, shape, counting, device_array):
    """S = scale·Q Kᵀ, P = softmax(S), O = P V: three launches, S and P through HBM."""
    from gpu_kernels.checks import scale_for
    from gpu_kernels.kernels.naive import NaivePlan

    from .frame import SOFTMAX_ROWS

    bh, n, d = _heads(q)
    tile = shape.tiles["matmul_tile"]
    plan = NaivePlan(workload=shape.workload, matmul_tile=tile, softmax_threads=SOFTMAX_ROWS)
    (g_qk, b_qk), _, (g_pv, b_pv) = plan.grids()
    dq, dk, dv, do = _device_inputs(q, k, v, device_array)
    ds = device_array("S", np.full((bh, n, n), np.nan, np.float32))
    dp = device_array("P", np.full((bh, n, n), np.nan, np.float32))
    matmul, softmax = parts["matmul_kernel"], parts["softmax_kernel"]
    counters = {name: _new_counters() for name in ("qk", "softmax", "pv")}
    launches = {
        "qk": lambda: matmul(tile, True, counting)[g_qk, b_qk](dq, dk, ds, scale_for(d), counters["qk"]),
        "softmax": lambda: softmax(n, counting)[(-(-n // SOFTMAX_ROWS), bh), (SOFTMAX_ROWS,)](
            ds, dp, counters["softmax"]
        ),
        "pv": lambda: matmul(tile, False, counting)[g_pv, b_pv](dp, dv, do, np.float32(1.0), counters["pv"]),
    }
    return launches, counters, lambda: {"O": do.copy_to_host().reshape(q.shape)}


def run_fa1(parts, q, k, v, shape, counting, device_array):
    """FlashAttention-1: one block of Br threads per batch·head; O, ℓ, m in HBM."""
    bh, n, d = _heads(q)
    br, bc = shape.tiles["block_rows"], shape.tiles["block_cols"]
    dq, dk, dv, do, dl, dm = _device_inputs(q, k, v, device_array, "l", "m")
    counters = {"fa1": _new_counters()}
    kernel = parts["fa1_kernel"]
    launches = {
        "fa1": lambda: kernel(d, br, bc, counting)[(bh,), (br,)](dq, dk, dv, do, dl, dm, counters["fa1"])
    }

    def outputs():
        with np.errstate(divide="ignore", invalid="ignore"):
            lse = dm.copy_to_host() + np.log(dl.copy_to_host())
        return {"O": do.copy_to_host().reshape(q.shape), "L": lse.reshape(q.shape[:3])}

    return launches, counters, outputs


def run_fa2(parts, q, k, v, shape, counting, device_array):
    """FlashAttention-2: grid (Tr, B·H), block (Br,); the lab's frame around `inner`, or a whole kernel."""
    from .frame import fa2_frame

    bh, n, d = _heads(q)
    br, bc = shape.tiles["block_rows"], shape.tiles["block_cols"]
    dq, dk, dv, do, dl = _device_inputs(q, k, v, device_array, "L")
    counters = {"fa2": _new_counters()}
    if parts.get("kernel") is not None:
        kernel = parts["kernel"](d, br, bc, counting)
    else:
        kernel = fa2_frame(parts["inner"], d, br, bc, counting)
    grid = (-(-n // br), bh)
    launches = {"fa2": lambda: kernel[grid, (br,)](dq, dk, dv, do, dl, counters["fa2"])}
    return (
        launches,
        counters,
        lambda: {"O": do.copy_to_host().reshape(q.shape), "L": dl.copy_to_host().reshape(q.shape[:3])},
    )


def _tiled_shapes(*rows):
    return tuple(Shape(b, h, n, d, {"block_rows": br, "block_cols": bc}) for b, h, n, d, br, bc in rows)


EXERCISES: dict[str, Exercise] = {
    "naive": Exercise(
        "naive",
        "Standard attention: a tiled matmul and a row softmax, S and P through HBM",
        "naive",
        ("matmul_kernel", "softmax_kernel"),
        {"qk": ("qk",), "softmax": ("softmax",), "pv": ("pv",)},
        ("O",),
        (Shape(1, 2, 12, 8, {"matmul_tile": 4}), Shape(1, 1, 10, 8, {"matmul_tile": 3})),
        run_naive,
    ),
    "fa1": Exercise(
        "fa1",
        "FlashAttention-1: tiles and the online softmax, O, ℓ, m through HBM",
        "fa1",
        ("fa1_kernel",),
        {"fa1": ()},
        ("O", "L"),
        _tiled_shapes((1, 2, 12, 8, 4, 4), (1, 1, 11, 8, 4, 3)),
        run_fa1,
    ),
    "fa2_inner": Exercise(
        "fa2_inner",
        "FlashAttention-2's inner loop: O, ℓ, m in registers",
        "fa2",
        ("inner", "kernel"),
        {"fa2": ()},
        ("O", "L"),
        _tiled_shapes((1, 2, 12, 8, 4, 4), (1, 1, 11, 8, 4, 3), (2, 1, 9, 16, 8, 4)),
        run_fa2,
    ),
}


def scores(shape: Shape) -> int:
    """Scores (query, key pairs) of `shape` over all heads: the unit the hints measure extra traffic in."""
    return shape.batch * shape.heads * shape.seq_len**2
