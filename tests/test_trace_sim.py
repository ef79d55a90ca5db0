"""The readable kernel's trace build (when and where each block ran), on the CUDA simulator."""

import importlib.util
from pathlib import Path

import numpy as np

from gpu_kernels.kernels.tiled import run_tiled
from gpu_kernels.reference import random_qkv

spec = importlib.util.spec_from_file_location(
    "h200_diagnostics", Path(__file__).resolve().parents[1] / "benchmarks" / "h200_diagnostics.py"
)
diag = importlib.util.module_from_spec(spec)
spec.loader.exec_module(diag)


def test_trace_records_every_block_once():
    # N = 64, d = 16: default blocks Br = min(⌈12288/64⌉, 16) = 16 -> Tr = 4 query blocks per head,
    # 2 heads: 8 blocks, each with a start no later than its end
    table = diag.tiled_trace(64, 16, 2)
    assert len(table) == 8
    assert sorted(zip(table["head"], table["i"])) == [(h, i) for h in range(2) for i in range(4)]
    assert (table["start_ns"] >= 0).all() and (table["end_ns"] >= table["start_ns"]).all()
    assert table["start_ns"].min() == 0


def test_trace_build_computes_the_same_output():
    import dataclasses

    from gpu_kernels.kernels.tiled import plan_tiled

    q, k, v = random_qkv(1, 2, 64, 16)
    plain = run_tiled(q, k, v)
    plan = dataclasses.replace(plan_tiled(q, k, v), trace=True)
    o = np.full((2, 64, 16), np.nan, np.float32)
    lse = np.full((2, 64), np.nan, np.float32)
    counters = np.zeros(4 + 3 * 8, np.int64)
    plan.launch(q.reshape(2, 64, 16), k.reshape(2, 64, 16), v.reshape(2, 64, 16), o, lse, counters)
    np.testing.assert_array_equal(o, plain.o.reshape(2, 64, 16))
    np.testing.assert_array_equal(lse, plain.lse.reshape(2, 64))
    assert (counters[:4] == 0).all()  # the access counters are not touched by a timing build
