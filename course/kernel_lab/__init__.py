"""The kernel-writing lab (lecture 11, GPU-Puzzles style, on numba's CUDA simulator: no GPU needed).

Students write three kernels from skeletons in the lecture: standard attention (a tiled matmul and a
row softmax), FlashAttention-1's tiled online-softmax kernel, and FlashAttention-2's inner loop. The
grader (`grade`) checks each against float64 and its counted HBM/SRAM bytes against `simlib.count` for
the same tiles, audits the counters against the accesses the simulator saw, and looks for races.

    audit       watches a kernel on the simulator: element accesses per array, barriers, races
    device      the tile copies every kernel uses, and the FA2 frame exercise 3's inner loop plugs into
    exercises   the three exercises: parts, launches, shapes, simlib schedule
    grader      grade(exercise, **parts) -> Grade; shapes(exercise)
    hints       hint(exercise, n): three per exercise, and the grader's targeted ones
    solutions   the hidden reference solutions (`make test` grades them)
    planted     wrong solutions made from the references by one stated edit (the grader must fail them)

numba is imported when the grader first runs: switch the simulator on (NUMBA_ENABLE_CUDASIM=1) before.
"""

from .grader import Grade, grade, shapes
from .hints import hint

__all__ = ["Grade", "grade", "hint", "shapes"]
