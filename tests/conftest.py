"""Test session setup shared by all test files (kept minimal).

gpu_kernels runs on numba's CUDA simulator unless FLASHIO_GPU=1 (the device run: `make test-gpu`,
i.e. FLASHIO_GPU=1 pytest -m gpu). The switch must be set before numba is imported anywhere, hence
here. With FLASHIO_GPU=1 the session stops at once, in one line, if no CUDA GPU is usable, and fails
if GPU tests were selected and none of them passed (all skipped is not a green GPU run).
"""

import os
import sys

import pytest

ON_GPU = os.environ.get("FLASHIO_GPU") == "1"

if not ON_GPU:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    # The simulator runs a Python thread per CUDA thread plus a busy-polling block manager; a
    # shorter GIL switch interval makes each syncthreads() round several times cheaper.
    sys.setswitchinterval(5e-4)
    if os.environ.get("FLASHIO_SIM_PREEMPT"):  # tools/stress_simulator.py: forced preemption (sim_preempt)
        import sim_preempt

        sim_preempt.enable(float(os.environ["FLASHIO_SIM_PREEMPT"]))
        if os.environ.get("FLASHIO_SIM_NUMBA_ALLOCATOR") == "1":
            sim_preempt.numba_allocator()


def _gpu_items(items):
    return [item for item in items if item.get_closest_marker("gpu") is not None]


def pytest_collection_modifyitems(session, config, items):
    if not ON_GPU or not _gpu_items(items):
        return
    from gpu_kernels.device import gpu_available

    if not gpu_available():
        pytest.exit(
            "FLASHIO_GPU=1 but numba finds no usable CUDA GPU here: run the GPU tests on a GPU machine "
            "(without FLASHIO_GPU the suite runs on numba's CUDA simulator)",
            returncode=2,
        )
    session.gpu_selected = len(_gpu_items(items))


def pytest_sessionfinish(session, exitstatus):
    selected = getattr(session, "gpu_selected", 0)
    if not selected:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = [r for r in reporter.stats.get("passed", []) if "gpu" in r.keywords] if reporter else []
    if not passed:
        sys.stderr.write(
            f"\nFAIL: FLASHIO_GPU=1 on a GPU, {selected} GPU tests selected and none passed "
            "(all skipped or failed)\n"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
