"""Wrong solutions, each made from a reference solution by one stated edit of its source (a mutant), so
that the grader can be shown to fail them: the tests do, and lecture 11 shows what the grader says.

| name               | exercise  | the edit                                              | what it breaks              |
|--------------------|-----------|-------------------------------------------------------|-----------------------------|
| `no_rescale`       | fa2_inner | drops O_acc *= α                                      | the result (O)              |
| `pv_rereads_p`     | fa2_inner | reads p from Ss for every element of the V row        | SRAM traffic: +d per score  |
| `softmax_rereads_s`| naive     | reads S from HBM again for the exponential            | HBM traffic: +N² elements   |
| `uncounted_exp`    | fa2_inner | the exponential's S reads are left out of the counter | the counters (dishonest)    |
| `fa1_no_barrier`   | fa1       | drops the barrier between loading Q_i, O_i and using them | a race                  |

>>> sorted(PLANTED)[:2]
['fa1_no_barrier', 'no_rescale']
"""

from __future__ import annotations

import inspect
import linecache
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Planted:
    exercise: str
    part: str  # the grade() keyword it is handed in as
    function: str  # the reference it is made from, in course.kernel_lab.solutions
    edits: tuple[tuple[str, str], ...]  # (old, new) source replacements, each old occurring once
    breaks: str
    helpers: tuple[str, ...] = ()  # planted helpers the function must call instead of the references'


def mutant(function, edits, name, overrides=None):
    """`function` recompiled from its source with each (old, new) of `edits` applied once."""
    # numba's wrappers: a Dispatcher's py_func, the simulator's fn, functools.cache's __wrapped__
    python = getattr(function, "py_func", None) or getattr(function, "fn", None) or function
    source = inspect.getsource(python)
    for old, new in edits:
        if source.count(old) != 1:
            raise ValueError(f"{name}: {old!r} occurs {source.count(old)} times in the source, not once")
        source = source.replace(old, new)
    filename = f"<planted {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # tracebacks, names
    namespace = dict(vars(sys.modules[inspect.unwrap(python).__module__]), **(overrides or {}))
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own reference, edited as stated)
    return namespace[inspect.unwrap(python).__name__]


PLANTED = {
    "no_rescale": Planted(
        "fa2_inner",
        "inner",
        "fa2_inner",
        (("        O_acc[x] *= alpha\n", "        pass  # planted: O_acc is not rescaled\n"),),
        "O is wrong whenever a later tile raises the row max",
    ),
    "pv_rereads_p": Planted(
        "fa2_inner",
        "inner",
        "fa2_inner",
        (),
        "right O, but d more SRAM reads per score",
        helpers=("accumulate_pv_rereads",),
    ),
    "softmax_rereads_s": Planted(
        "naive",
        "softmax_kernel",
        "softmax_kernel",
        (
            ("x[c] = float32(math.exp(x[c] - row_max))", "x[c] = float32(math.exp(s[bh, row, c] - row_max))"),
            ("                n_gr += NK\n", "                n_gr += 2 * NK\n"),
        ),
        "right O, but S is read from HBM twice: N² more elements",
    ),
    "uncounted_exp": Planted(
        "fa2_inner",
        "inner",
        "fa2_inner",
        (("reads = 2 * c * Qs.shape[1] + c + ", "reads = 2 * c * Qs.shape[1] + "),),
        "right O and traffic, but the counters miss the exponential's c reads per row",
    ),
    "fa1_no_barrier": Planted(
        "fa1",
        "fa1_kernel",
        "fa1_kernel",
        (
            (
                "                cuda.syncthreads()  # Q_i, O_i, ℓ_i, m_i are in before anyone reads them\n",
                "                pass  # planted: no barrier\n",
            ),
        ),
        "a thread reads Q_i, O_i, ℓ_i, m_i elements another thread may not have written yet",
    ),
}

#: Planted helpers (device functions) that planted solutions call instead of the references'.
HELPERS = {
    "accumulate_pv_rereads": (
        "accumulate_pv",
        (
            ("acc[x] += p * Vs[cc, x]", "acc[x] += Ss[tid, cc] * Vs[cc, x]"),
            ("return c + c * acc.shape[0]", "return c + 2 * c * acc.shape[0]"),
        ),
    ),
}


def planted(name: str):
    """(exercise, {part: the planted function}) for `grade(exercise, **parts)`."""
    from . import solutions

    if name not in PLANTED:
        raise ValueError(f"name must be one of {', '.join(PLANTED)}, got {name!r}")
    spec = PLANTED[name]
    overrides = {}
    for helper in spec.helpers:
        base, edits = HELPERS[helper]
        overrides[base] = mutant(getattr(solutions, base), edits, helper)
    function = getattr(solutions, spec.function)
    if spec.edits or overrides:
        function = mutant(function, spec.edits, name, overrides)
    return spec.exercise, {spec.part: function}
