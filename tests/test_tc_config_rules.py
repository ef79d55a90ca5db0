"""simlib counts a tensor-core configuration exactly when the kernel accepts it (issue 26: simlib counted
`fa2_tc --warps 9`, which TcConfig refuses). One rule, simlib.kernel_layout.tc_tile_problem, against
the kernels' own checks (TcConfig.check, NaiveTcConfig.check) over every W, a range of Bc and both d."""

import pytest

from gpu_kernels.kernels.fa2_tc import TcConfig
from gpu_kernels.kernels.naive_tc import NaiveTcConfig
from simlib import Workload, count

GRID = [
    (d, w, bc, r)
    for d in (64, 128)
    for w in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16)
    for bc in range(0, 528, 16)
    for r in (16, 32, 8)
]


def kernel_accepts(config) -> bool:
    try:
        config.check()
    except ValueError:
        return False
    return True


def simlib_accepts(kernel, d, w, bc, **kw) -> bool:
    try:
        count(kernel, Workload(256, d, dtype="bf16"), warps=w, block_cols=bc, method="closed", **kw)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("kernel,config", [("fa2_tc", TcConfig), ("naive_tc", NaiveTcConfig)])
def test_simlib_refuses_what_the_kernel_refuses(kernel, config):
    disagree = []
    for d, w, bc, r in GRID:
        if kernel == "naive_tc" and r != 16:
            continue  # naive_tc has no warp_rows parameter: one m16 tile per warp
        rows = {"warp_rows": r} if kernel == "fa2_tc" else {}
        if kernel_accepts(config(d, w, bc, **rows)) != simlib_accepts(kernel, d, w, bc, **rows):
            disagree.append((d, w, bc, r))
    assert not disagree, f"{kernel}: simlib and the kernel disagree on (d, W, Bc, R) {disagree[:10]}"
    assert kernel_accepts(config(64, 4, 64)) and not simlib_accepts(kernel, 64, 9, 64)


def test_naive_tc_softmax_threads_rule_is_the_kernels():
    for t in (1, 16, 31, 32, 48, 64, 96, 1024, 1056, 2048):
        ok = kernel_accepts(NaiveTcConfig(64, 4, 64, softmax_threads=t))
        assert ok == simlib_accepts("naive_tc", 64, 4, 64, softmax_threads=t), t
