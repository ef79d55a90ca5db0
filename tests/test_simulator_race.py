"""The simulator is deterministic: one shared array per line whatever the thread timing, and the kernels'
results are bit-for-bit the same under forced preemption (tests/sim_preempt.py) as without it.

Issue 26: fa2_tc and naive_tc failed at random under CPU load (relative errors 0.08 against tolerances
of 1e-3), because numba's simulator could hand two threads of one launch two different arrays for one
``cuda.shared.array`` line (gpu_kernels/simulator.py explains the race and the fix). This is the short
version that `make test` runs; ``make stress`` (tools/stress_simulator.py) runs the whole simulator
suites round after round under CPU load and forced preemption.
"""

import re
import threading
from pathlib import Path

import numpy as np
import pytest
import sim_preempt
from kernel_helpers import REPO, sim_only
from numba import cuda, float32, uint16  # a module global: the simulator swaps `cuda` in a kernel's globals

pytestmark = sim_only

THREADS = 32
TRIALS = 20


def arrays_handed_out(allocate) -> list[int]:
    """For each trial: how many distinct arrays THREADS threads got from one shared-array line."""
    from numba.cuda.simulator.kernelapi import FakeCUDAShared

    counts = []
    for _ in range(TRIALS):
        shared = FakeCUDAShared(0)
        got = [None] * THREADS
        start = threading.Barrier(THREADS)

        def body(i, shared=shared, got=got, start=start):
            start.wait()
            got[i] = allocate(shared, (64, 8), np.float64)  # one line: one __shared__ variable

        threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        counts.append(len({id(a) for a in got}))
    return counts


def test_one_shared_array_per_line_under_preemption():
    import gpu_kernels.simulator as sim

    assert sim.install()
    with sim_preempt.preempted(1.0):  # the GIL handed over inside every allocation
        counts = arrays_handed_out(sim.shared_array)
    assert counts == [1] * TRIALS


def test_numbas_allocator_races_under_the_same_preemption(monkeypatch):
    """The harness above has teeth: numba-cuda's allocator, preempted at the same point (np.empty inside
    its check-then-set), hands out private copies. If this fails, numba fixed the race upstream and
    gpu_kernels.simulator can go."""
    from numba.cuda.simulator import kernelapi

    import gpu_kernels.simulator as sim

    sim.install()
    monkeypatch.setattr(kernelapi, "np", sim_preempt.YieldingNumpy())
    counts = arrays_handed_out(sim.NUMBA_SHARED_ARRAY)
    assert max(counts) > 1, counts


def test_unwritten_shared_memory_reads_nan():
    """New shared arrays are poisoned (0xFF bytes): a read before any write is NaN every time, not
    whatever np.empty found (the same kernel gave different numbers run to run)."""
    import gpu_kernels.simulator as sim

    sim.install()
    out, bits = np.zeros(64, np.float32), np.zeros(64, np.uint16)
    read_unwritten[1, 64](out, bits)
    assert np.all(np.isnan(out))
    assert np.all(bits == 0xFFFF)  # NaN in fp16 and in bf16


@cuda.jit
def read_unwritten(out, bits):
    s = cuda.shared.array(64, float32)
    h = cuda.shared.array(64, uint16)
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]
    bits[cuda.threadIdx.x] = h[cuda.threadIdx.x]


def _tc_cases():
    from gpu_kernels.kernels.fa2_tc import TcConfig, run_fa2_tc
    from gpu_kernels.kernels.naive_tc import NaiveTcConfig, run_naive_tc

    # the two cases issue 26 saw fail, and a tensor-core one of each launch kind
    return {
        "fa2_tc B=2 N=16": lambda q, k, v: run_fa2_tc(q, k, v, dtype="bf16", config=TcConfig(64, 1, 16)).o,
        "naive_tc causal MQA": lambda q, k, v: (
            run_naive_tc(q, k, v, dtype="fp16", config=NaiveTcConfig(64, 1, 64), causal=True).o
        ),
    }


@pytest.mark.parametrize("case", ["fa2_tc B=2 N=16", "naive_tc causal MQA", "tiled fp32"])
def test_kernels_bit_identical_under_forced_preemption(case):
    from gpu_kernels import run_tiled
    from gpu_kernels.reference import attention_reference, random_qkv, rel_error
    from gpu_kernels.tensor_core.dtypes import round_to

    if case == "tiled fp32":
        q, k, v = random_qkv(2, 1, 40, 64, seed=3)
        run, dtype, tol = (lambda q, k, v: run_tiled(q, k, v).o), None, 1e-5
    elif case.startswith("fa2_tc"):
        q, k, v = random_qkv(2, 1, 16, 64, seed=16 + 7 + 64)
        run, dtype, tol = _tc_cases()[case], "bf16", 2 * 2.0**-8
    else:
        q, k, v = random_qkv(1, 2, 24, 64, seed=5, kv_heads=1, query_len=9)
        run, dtype, tol = _tc_cases()[case], "fp16", 2 * 2.0**-11
    calm = run(q, k, v)
    with sim_preempt.preempted(0.3):
        stormy = [run(q, k, v) for _ in range(2)]
    rounded = (q, k, v) if dtype is None else tuple(round_to(x, dtype) for x in (q, k, v))
    ref = attention_reference(*rounded, causal=case.startswith("naive_tc"))[0]
    assert rel_error(calm, ref) < tol
    for o in stormy:
        np.testing.assert_array_equal(o, calm)


def test_every_module_with_shared_arrays_installs_the_fix():
    """Each gpu_kernels module that declares a shared array imports flush or tensor_core.warp_ops,
    whose import installs gpu_kernels.simulator's allocator before any of its kernels can run."""
    missing = []
    for path in sorted((Path(REPO) / "gpu_kernels").rglob("*.py")):
        text = path.read_text()
        if "cuda.shared.array(" not in text or path.name == "simulator.py":
            continue
        if not re.search(r"from \.+(flush|tensor_core\.warp_ops|warp_ops|simulator) import", text):
            missing.append(str(path.relative_to(REPO)))
    assert not missing, f"declare shared arrays without importing flush or warp_ops: {missing}"
