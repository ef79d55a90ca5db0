"""`python -m gpu_kernels run --kernel fa2_tc|naive_tc --simulate --count`: the CLI path of the
tensor-core kernels on numba's simulator, its counters against simlib and against the hand counts of
the kernel tests (independent of simlib), and its one-line refusals."""

import json

import pytest
from kernel_helpers import sim_only
from test_tensor_core_fa2 import hand_counts as fa2_hand_counts
from test_tensor_core_naive import hand_counts as naive_hand_counts

from gpu_kernels.cli import main
from gpu_kernels.kernels.fa2_tc import TcConfig
from gpu_kernels.kernels.naive_tc import NaiveTcConfig, softmax_threads_for


def _run_json(capsys, *args):
    rc = main(["run", "--simulate", "--count", "--json", "--seed", "3", *args])
    return rc, json.loads(capsys.readouterr().out)


@sim_only
@pytest.mark.parametrize("kernel,dtype", [("fa2_tc", "fp16"), ("naive_tc", "bf16")])
def test_run_tc_counts_equal_simlib_and_hand_counts(kernel, dtype, capsys):
    rc, out = _run_json(
        capsys,
        "--kernel",
        kernel,
        "--dtype",
        dtype,
        "--seq-len",
        "40",
        "--head-dim",
        "64",
        "--warps",
        "1",
        "--block-cols",
        "64",
        "--causal",
    )
    assert rc == 0 and out["ok"]
    assert set(out["diff"].values()) == {0}
    if kernel == "fa2_tc":
        hand = fa2_hand_counts(1, 1, 40, 40, 64, TcConfig(64, 1, 64, warp_rows=32), True)  # the CLI default
    else:
        hand = naive_hand_counts(1, 1, 40, 40, 64, NaiveTcConfig(64, 1, 64), softmax_threads_for(40))
    assert out["counts"] == hand
    assert out["rel_error"]["o"] < out["tolerance"]["o"]


@pytest.mark.parametrize(
    "args,name",
    [
        (["--kernel", "fa2_tc", "--head-dim", "96"], "--head-dim"),
        (["--kernel", "tiled", "--head-dim", "64", "--dtype", "bf16"], "--dtype"),
        (["--kernel", "naive_tc", "--head-dim", "64", "--matmul-tile", "8"], "--matmul-tile"),
        (["--kernel", "fa2_tc", "--head-dim", "64", "--block-cols", "24"], "block_cols"),
    ],
)
def test_run_tc_refuses_in_one_line(args, name, capsys):
    rc = main(["run", "--simulate", "--seq-len", "40", *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and name in err[0]


def test_asm_checks_the_tensor_core_instructions():
    """summarize_ptx counts mma, ldmatrix and cp.async; check_report flags a tensor-core build that
    lacks one of them or touches local memory (the PTX lines are the ones numba emits)."""
    from gpu_kernels.ptx_check import check_report, summarize_ptx

    ptx = "\n".join(
        [
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, "
            "{%f5,%f6,%f7,%f8};",
            "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r1,%r2,%r3,%r4}, [sa];",
            "cp.async.cg.shared.global [sa], [ga], 16, %r7;",
            "// mma.sync in a comment is not an instruction",
        ]
    )
    s = summarize_ptx(ptx)
    assert (s["mma"], s["ldmatrix"], s["cp_async"], s["f64"]) == (1, 1, 1, 0)
    good = {"kernel": "fa2_tc", "build": "timing", "atom": 0, **s, "tensor_core": True}
    assert check_report([good]) == []
    no_mma = {**good, "mma": 0}
    assert len(check_report([no_mma])) == 1 and "mma" in check_report([no_mma])[0]
    assert check_report([{**good, "ld_local": 2}])
