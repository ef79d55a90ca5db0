"""The kernel-writing lab (course.kernel_lab, lecture 11) on numba's CUDA simulator.

The grader must pass the reference solutions (and the project's own `tiled` kernel), and fail each
planted wrong solution for the reason it was planted: a wrong result, right result with extra traffic,
counters that miss an access, a race. The expected extra traffic of each plant comes from its stated
edit (so many reads per score), and the FA1 reference's counts from docs/COUNTING.md's closed form
written out here, not from the code under test.
"""

import doctest
import importlib

import numpy as np
import pytest
from kernel_helpers import ceil_div, sim_only
from numba import cuda, float32  # module globals: the simulator swaps `cuda` in a kernel's globals

from course.kernel_lab import audit, grade, hint, shapes, solutions
from course.kernel_lab.exercises import EXERCISES
from course.kernel_lab.planted import PLANTED, planted

pytestmark = sim_only

REFERENCES = {
    "naive": {"matmul_kernel": solutions.matmul_kernel, "softmax_kernel": solutions.softmax_kernel},
    "fa1": {"fa1_kernel": solutions.fa1_kernel},
    "fa2_inner": {"inner": solutions.fa2_inner},
}


def failed_checks(result):
    """The distinct check names that failed (over all shapes)."""
    return set(result.failures.check)


def got(result, check):
    """{shape label: the value a check saw}."""
    rows = result.checks[result.checks.check == check]
    return dict(zip(rows["shape"], rows["got"]))


@pytest.mark.parametrize("exercise", sorted(REFERENCES))
def test_the_reference_solutions_pass_every_check(exercise):
    result = grade(exercise, **REFERENCES[exercise])
    assert result.passed, str(result)
    checks = set(result.checks.check)
    assert "race-free" in checks and any("accesses seen" in c for c in checks), "the simulator audit ran"
    assert result.checks["shape"].nunique() == len(EXERCISES[exercise].shapes)
    assert result.verdict().startswith("PASS")


def test_the_projects_own_tiled_kernel_passes_the_fa2_exercise():
    from gpu_kernels.kernels.tiled import fa2_kernel

    result = grade("fa2_inner", kernel=fa2_kernel)
    assert result.passed, str(result)


def fa1_closed_form(b, h, n, d, br, bc):
    """docs/COUNTING.md §fa1, elements per batch·head (stats ℓ, m included), × B·H × 4 bytes."""
    tc = ceil_div(n, bc)
    el = {
        "HBM read B = simlib": 2 * n * d + tc * 2 * n * d + tc * 2 * n,
        "HBM write B = simlib": n * d + 2 * n + tc * (n * d + 2 * n),
        "SRAM read B = simlib": n * n * (3 * d + 2) + tc * n * d + tc * 2 * n,
        "SRAM write B = simlib": 2 * n * d + tc * 2 * n * d + 2 * n * n + tc * 2 * n,
    }
    return {k: v * b * h * 4 for k, v in el.items()}


def test_the_fa1_reference_moves_what_the_counting_contract_says():
    """The first FA1 kernel of the project: its counters equal the closed form of docs/COUNTING.md."""
    result = grade("fa1", **REFERENCES["fa1"])
    for shape in EXERCISES["fa1"].shapes:
        t = shape.tiles
        form = fa1_closed_form(
            shape.batch, shape.heads, shape.seq_len, shape.head_dim, t["block_rows"], t["block_cols"]
        )
        for check, value in form.items():
            assert got(result, check)[shape.label] == value, (shape.label, check)


def test_planted_wrong_result_fails_on_the_output_only():
    exercise, parts = planted("no_rescale")
    result = grade(exercise, **parts)
    assert not result.passed
    assert failed_checks(result) == {"O = float64"}  # L, traffic, audit and races all fine
    assert any("rescaled by α" in h for h in result.hints)


def test_planted_extra_sram_traffic_fails_on_simlib_with_honest_counters():
    exercise, parts = planted("pv_rereads_p")
    result = grade(exercise, **parts)
    assert failed_checks(result) == {"SRAM read B = simlib"}  # right O and L, honest counters
    by_shape = {s.label: s for s in EXERCISES[exercise].shapes}
    for label, extra in (
        result.failures.assign(extra=result.failures.got - result.failures.expected)
        .groupby("shape")
        .extra.sum()
        .items()
    ):
        s = by_shape[label]
        # the edit reads p once more for each of the d elements of a V row: d reads per score
        assert extra == s.head_dim * s.batch * s.heads * s.seq_len**2 * 4
    assert any(f"+{float(EXERCISES[exercise].shapes[0].head_dim):.2f} per score" in h for h in result.hints)


def test_planted_extra_hbm_traffic_fails_on_the_softmax_launch():
    exercise, parts = planted("softmax_rereads_s")
    result = grade(exercise, matmul_kernel=solutions.matmul_kernel, **parts)
    assert failed_checks(result) == {"softmax: HBM read B = simlib"}
    for s in EXERCISES[exercise].shapes:
        # the row softmax reads S once (N² elements per batch·head); the edit reads it a second time
        assert (
            got(result, "softmax: HBM read B = simlib")[s.label] == 2 * s.batch * s.heads * s.seq_len**2 * 4
        )


def test_planted_uncounted_access_fails_the_audit():
    exercise, parts = planted("uncounted_exp")
    result = grade(exercise, **parts)
    assert failed_checks(result) == {"SRAM read B = simlib", "SRAM read B = accesses seen"}
    for s in EXERCISES[exercise].shapes:
        # the exponential reads each score once: B·H·N² reads left out of the counter
        seen = result.checks[
            (result.checks.check == "SRAM read B = accesses seen") & (result.checks["shape"] == s.label)
        ]
        assert int(seen.expected.iloc[0]) - int(seen.got.iloc[0]) == s.batch * s.heads * s.seq_len**2 * 4
    assert any("watched every access" in h for h in result.hints)


def test_planted_missing_barrier_is_a_race():
    exercise, parts = planted("fa1_no_barrier")
    result = grade(exercise, **parts)
    assert "race-free" in failed_checks(result)
    assert any("syncthreads" in h for h in result.hints)


@cuda.jit(device=True)
def out_of_range(Qs, Ks, Vs, Ss, O_acc, m, l, tid, c, scale):  # noqa: E741
    Ss[tid, 10_000] = m  # beyond the tile
    return m, l, 0, 1


def test_every_planted_solution_has_its_test_here():
    tested = {"no_rescale", "pv_rereads_p", "softmax_rereads_s", "uncounted_exp", "fa1_no_barrier"}
    assert set(PLANTED) == tested


def test_a_kernel_that_raises_is_reported_not_raised():
    result = grade("fa2_inner", inner=out_of_range)
    assert failed_checks(result) == {"runs"}
    assert "IndexError" in result.hints[0]


def test_bad_calls_fail_in_one_line_naming_the_argument():
    with pytest.raises(ValueError, match="exercise must be one of naive, fa1, fa2_inner"):
        grade("fa3", inner=solutions.fa2_inner)
    with pytest.raises(TypeError, match="takes inner, kernel; got kernal"):
        grade("fa2_inner", kernal=solutions.fa2_inner)
    with pytest.raises(ValueError, match="needs matmul_kernel and softmax_kernel"):
        grade("naive", matmul_kernel=solutions.matmul_kernel)
    with pytest.raises(ValueError, match="needs inner or kernel"):
        grade("fa2_inner", inner=solutions.fa2_inner, kernel=solutions.fa1_kernel)
    with pytest.raises(TypeError, match="fa1_kernel must be a kernel factory"):
        grade("fa1", fa1_kernel=3)
    with pytest.raises(ValueError, match="number must be 1 to 3"):
        hint("fa1", 4)
    with pytest.raises(ValueError, match="name must be one of"):
        planted("nothing")


def test_shapes_table_matches_the_fa2_closed_form():
    """Exercise 3's targets, against docs/COUNTING.md §fa2 written out (elements × B·H × 4 bytes)."""
    table = shapes("fa2_inner")
    for shape, (_, row) in zip(EXERCISES["fa2_inner"].shapes, table.iterrows()):
        b, h, n, d = shape.batch, shape.heads, shape.seq_len, shape.head_dim
        tr = ceil_div(n, shape.tiles["block_rows"])
        assert row["HBM read B"] == (n * d + tr * 2 * n * d) * b * h * 4
        assert row["HBM write B"] == (n * d + n) * b * h * 4
        assert row["SRAM read B"] == n * n * (3 * d + 2) * b * h * 4
        assert row["SRAM write B"] == (n * d + 2 * tr * n * d + 2 * n * n) * b * h * 4


# --- the audit on its own ----------------------------------------------------------------------


def _run_watched(kernel, grid, block, *arrays):
    with audit.watching(), audit.launch("test") as tally:
        kernel[grid, block](*arrays)
    cuda.synchronize()
    return tally


@cuda.jit
def copy_then_shift(src, dst, sync):
    tile = cuda.shared.array(8, float32)
    t = cuda.threadIdx.x
    tile[t] = src[t]
    if sync:
        cuda.syncthreads()
    dst[t] = tile[(t + 1) % 8]


@cuda.jit
def everyone_writes_zero(dst):
    tile = cuda.shared.array(4, float32)
    dst[0] = tile[cuda.threadIdx.x]  # never written by this block


def test_the_audit_counts_element_accesses_and_finds_races():
    src = np.arange(8, dtype=np.float32)
    for sync in (True, False):
        dst = audit.watched_array(np.zeros(8, np.float32), "dst")
        tally = _run_watched(copy_then_shift, 1, 8, audit.watched_array(src, "src"), dst, sync)
        assert tally.by_array("HBM", "read") == {"src": 8} and tally.by_array("HBM", "write") == {"dst": 8}
        assert tally.by_array("SRAM", "read") == {"tile": 8} and tally.by_array("SRAM", "write") == {
            "tile": 8
        }
        if sync:
            assert not tally.races and not tally.uninitialised
            np.testing.assert_array_equal(dst.copy_to_host(), np.roll(src, -1))
        else:
            # thread t reads tile[t + 1], written by thread t + 1 in the same epoch: a race or a stale read
            assert tally.races or tally.uninitialised


def test_the_audit_flags_cross_block_writes_and_uninitialised_shared_reads():
    tally = _run_watched(everyone_writes_zero, 2, 4, audit.watched_array(np.zeros(4, np.float32), "dst"))
    assert tally.uninitialised and "before its block wrote it" in tally.uninitialised[0]
    assert any("blocks" in r or "both wrote" in r for r in tally.races)


@pytest.mark.parametrize(
    "module", ["audit", "exercises", "grader", "hints", "planted"], ids=lambda m: f"course.kernel_lab.{m}"
)
def test_worked_numbers_in_docstrings(module):
    result = doctest.testmod(importlib.import_module(f"course.kernel_lab.{module}"))
    assert result.attempted and not result.failed
