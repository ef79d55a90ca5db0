"""The lab's autograder: a kernel is right when, on every test shape,

1. its output equals the float64 reference (`gpu_kernels.attention_reference`) within 1e-5, from fresh
   inputs and NaN-poisoned outputs, and counting changes none of its arithmetic;
2. its own counters (gpu_kernels.counting: one source, counters on) equal simlib's `count()` for the same
   workload and tiles, byte for byte, launch by launch;
3. on the simulator, those counters equal the accesses the kernel was *seen* to make (`audit`), and the
   kernel is race-free (no two threads touch an element between two barriers unless both only read).

`grade("fa2_inner", inner=my_inner)` returns a `Grade`: a pandas table of every check, a one-line verdict
and the hints its failures call for; in a notebook it shows itself.

>>> grade("fa3", inner=None)
Traceback (most recent call last):
...
ValueError: exercise must be one of naive, fa1, fa2_inner, got 'fa3'
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
import warnings
import zlib
from dataclasses import dataclass, field
from html import escape

import numpy as np
import pandas as pd

from . import audit, hints
from .exercises import EXERCISES, LEVEL_OPS, Exercise, Shape, scores

TOL = 1e-5
#: Bytes per element of the lab's fp32 kernels (gpu_kernels.counting).
ITEM = 4
PASS, FAIL = "✓", "✗"


@dataclass(repr=False)
class Grade:
    exercise: Exercise
    checks: pd.DataFrame  # shape, group, check, expected, got, passed
    hints: list[str] = field(default_factory=list)
    watched: bool = True  # False on a GPU: no access audit, no race check

    @property
    def passed(self) -> bool:
        return bool(len(self.checks)) and bool(self.checks.passed.all())

    @property
    def failures(self) -> pd.DataFrame:
        return self.checks[~self.checks.passed]

    def verdict(self) -> str:
        n, bad = len(self.checks), int((~self.checks.passed).sum())
        shapes = self.checks["shape"].nunique()
        where = "" if self.watched else " (on a GPU: counters not audited, races not checked)"
        if not bad:
            return f"PASS {self.exercise.name}: all {n} checks on {shapes} shapes{where}"
        return f"FAIL {self.exercise.name}: {bad} of {n} checks failed on {shapes} shapes{where}"

    def summary(self) -> pd.DataFrame:
        """✓/✗ per group of checks (rows: the output, each launch's bytes, the audit) and shape (columns)."""
        passed = self.checks.groupby(["group", "shape"], sort=False).passed.all().unstack("shape")
        order = list(dict.fromkeys(self.checks.group))
        columns = list(dict.fromkeys(self.checks["shape"]))
        return passed.reindex(index=order, columns=columns).map({True: PASS, False: FAIL}.get).fillna("—")

    def assert_passed(self) -> None:
        assert self.passed, str(self)

    def __str__(self) -> str:
        lines = [self.verdict()]
        if not self.passed:
            cols = ["shape", "check", "expected", "got"]
            lines.append(self.failures[cols].head(12).to_string(index=False))
            lines += [f"hint: {h}" for h in self.hints]
        return "\n".join(lines)

    __repr__ = __str__

    #: failed checks listed in the HTML view (a slide holds about this many under the summary)
    HTML_FAILURES = 4

    def _repr_html_(self) -> str:
        parts = [f"<p><b>{escape(self.verdict())}</b></p>", self.summary().to_html()]
        if not self.passed:
            cols = ["shape", "check", "expected", "got"]
            parts.append(self.failures[cols].head(self.HTML_FAILURES).to_html(index=False))
            more = len(self.failures) - self.HTML_FAILURES
            if more > 0:
                parts.append(
                    f"<p>… and {more} more failed checks (<code>.failures</code> lists them all)</p>"
                )
            hints = "".join(f"<li>{escape(h)}</li>" for h in self.hints)
            parts.append(f'<ul style="font-size: 0.6em; margin-top: 0.2em">{hints}</ul>')
        return "".join(parts)


def _check_parts(exercise: Exercise, parts: dict) -> None:
    unknown = sorted(set(parts) - set(exercise.parts))
    if unknown:
        raise TypeError(
            f"grade({exercise.name!r}) takes {', '.join(exercise.parts)}; got {', '.join(unknown)}"
        )
    given = {name for name, value in parts.items() if value is not None}
    need = {"fa2_inner": 1}.get(exercise.name, len(exercise.parts))
    if len(given) != need:
        wanted = " or ".join(exercise.parts) if need == 1 else " and ".join(exercise.parts)
        raise ValueError(f"grade({exercise.name!r}) needs {wanted}")
    for name in given:
        if not callable(parts[name]):
            raise TypeError(
                f"{name} must be a kernel factory or device function, got {type(parts[name]).__name__}"
            )


@contextlib.contextmanager
def _simulator_speed():
    """The simulator's threads hand over the GIL at barriers; a short switch interval makes that cheap."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, 5e-4))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _lse_error(out, ref) -> float:
    """L's error relative to |L| with a floor of 1 per element (L is a sum of scores, possibly near 0)."""
    out = np.asarray(out, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        return math.inf
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), math.sqrt(ref.size)))


def _execute(exercise, parts, q, k, v, shape, counting, watch):
    """Run the exercise's launches; (outputs, counted bytes per launch, tallies per launch or {})."""
    from numba import cuda

    from gpu_kernels.counting import counts_from

    def device_array(name, host):
        return audit.watched_array(host, name) if watch else cuda.to_device(np.ascontiguousarray(host))

    launches, counters, outputs = exercise.run(parts, q, k, v, shape, counting, device_array)
    tallies = {}
    for name, go in launches.items():
        if watch:
            with audit.launch(name) as tally:
                go()
            tallies[name] = tally
        else:
            go()
    cuda.synchronize()
    counted = {name: counts_from(c) for name, c in counters.items()}
    return outputs(), counted, tallies


def _grade_shape(exercise, parts, shape, index, watch, found):
    from gpu_kernels.counting import COUNT_KEYS
    from gpu_kernels.reference import attention_reference, random_qkv, rel_error

    rows = []

    def add(check, expected, got, passed, group=None):
        row = {"shape": shape.label, "group": group or check, "check": check}
        rows.append(row | {"expected": expected, "got": got, "passed": bool(passed)})

    seed = zlib.crc32(f"{exercise.name}/{index}".encode())
    q, k, v = random_qkv(shape.batch, shape.heads, shape.seq_len, shape.head_dim, seed=seed)
    ref = dict(zip(("O", "L"), attention_reference(q, k, v)))
    try:
        plain, _, _ = _execute(exercise, parts, q, k, v, shape, counting=False, watch=False)
        counted_out, counted, tallies = _execute(exercise, parts, q, k, v, shape, counting=True, watch=watch)
    except Exception as error:  # a student's kernel may fail in any way: report it, do not raise
        text = str(error).splitlines()[0] if str(error) else ""
        # The simulator names the thread that raised first, which depends on how its threads were
        # scheduled: say "a thread" so a report (and the handout) is the same on every run.
        text = re.sub(r"^tid=\[[\d, ]+\] ctaid=(\[[\d, ]+\])", r"a thread of block \1", text)
        message = f"{type(error).__name__}: {text}"
        add("runs", "no error", message, False)
        found.setdefault("errors", []).append(message)
        return rows
    add("runs", "no error", "no error", True)
    for name in exercise.outputs:
        err = rel_error(plain[name], ref[name]) if name == "O" else _lse_error(plain[name], ref[name])
        add(f"{name} = float64", f"error < {TOL:g}", f"{err:.1e}", err < TOL)
        if err >= TOL:
            found.setdefault("wrong", set()).add("nan" if math.isinf(err) else name)
    same = all(np.array_equal(plain[n], counted_out[n], equal_nan=True) for n in exercise.outputs)
    add("counters change nothing", "identical outputs", "identical" if same else "different", same)
    expected = exercise.expected(shape)
    for launch, by_op in expected.items():
        prefix = f"{launch}: " if len(expected) > 1 else ""
        for (level, op), key in zip(LEVEL_OPS, COUNT_KEYS):
            got, want = counted[launch][key], by_op[(level, op)]
            add(f"{prefix}{level} {op} B = simlib", want, got, got == want, f"{prefix}bytes = simlib")
            if got != want:
                found.setdefault("traffic", []).append(
                    (shape, launch, level, op, want, got, tallies.get(launch))
                )
            if watch:
                seen = tallies[launch].elements(level, op) * ITEM
                add(
                    f"{prefix}{level} {op} B = accesses seen",
                    seen,
                    got,
                    got == seen,
                    f"{prefix}counters = accesses seen",
                )
                if got != seen:
                    found.setdefault("dishonest", []).append((launch, level, op, got, seen, tallies[launch]))
    if watch:
        races = [m for t in tallies.values() for m in t.races + t.uninitialised]
        add("race-free", "no race", races[0] if races else "no race", not races)
        if races:
            found.setdefault("races", []).extend(races)
        if any(t.sliced for t in tallies.values()):
            found["sliced"] = True
    return rows


def _traffic_hint(exercise, shape, launch, level, op, want, got, tally) -> str:
    extra = (got - want) // ITEM
    per_score = extra / scores(shape)
    text = (
        f"{shape.label}, {launch}: {level} {op}s {got:,} B against simlib's {want:,} B "
        f"({extra:+,} elements, {per_score:+.2f} per score; d = {shape.head_dim})"
    )
    if tally is not None:
        seen = ", ".join(f"{name} {n:,}" for name, n in tally.by_array(level, op).items())
        text += f"; elements seen per array: {seen}"
    return text


def _hints(exercise: Exercise, found: dict) -> list[str]:
    out = [f"your kernel raised {m}" for m in found.get("errors", [])[:1]]
    if any("math domain error" in m for m in found.get("errors", [])):
        out.append(hints.LOG_OF_ZERO)
    wrong = found.get("wrong", set())
    if "nan" in wrong:
        out.append(hints.NAN_OUTPUT)
    elif wrong:
        out.append(hints.WRONG_OUTPUT[exercise.name]["L" if "L" in wrong else "O"])
    if found.get("dishonest"):
        launch, level, op, got, seen, tally = found["dishonest"][0]
        arrays = ", ".join(f"{name} {n:,}" for name, n in tally.by_array(level, op).items())
        out.append(
            f"{hints.COUNTERS} ({launch}: {level} {op}s counted {got:,} B, seen {seen:,} B; elements per array: {arrays})"
        )
    elif found.get("traffic"):
        out.append(hints.TRAFFIC)
        out += [_traffic_hint(exercise, *t) for t in found["traffic"][:2]]
    if found.get("races"):
        out.append(f"{hints.RACE} First seen: {found['races'][0]}")
    if found.get("sliced"):
        out.append(hints.SLICED)
    return out


def grade(exercise: str, /, **parts) -> Grade:
    """Grade a student's `parts` (the kernel factories or device function the exercise asks for)."""
    if exercise not in EXERCISES:
        raise ValueError(f"exercise must be one of {', '.join(EXERCISES)}, got {exercise!r}")
    ex = EXERCISES[exercise]
    _check_parts(ex, parts)
    from gpu_kernels.counting import simulator_enabled

    watch = simulator_enabled()
    found: dict = {}
    rows = []
    with (
        _simulator_speed(),
        audit.watching() if watch else contextlib.nullcontext(),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 in a student's kernel: the NaN check reports it
        for index, shape in enumerate(ex.shapes):
            rows += _grade_shape(ex, parts, shape, index, watch, found)
    return Grade(ex, pd.DataFrame(rows), _hints(ex, found), watched=watch)


def shapes(exercise: str) -> pd.DataFrame:
    """The shapes and tiles `exercise` is graded on, with simlib's bytes for each (what to aim at)."""
    if exercise not in EXERCISES:
        raise ValueError(f"exercise must be one of {', '.join(EXERCISES)}, got {exercise!r}")
    ex = EXERCISES[exercise]
    rows = []
    for shape in ex.shapes:
        for launch, by_op in ex.expected(shape).items():
            rows.append(
                {"shape": shape.label, **shape.tiles, "launch": launch}
                | {f"{level} {op} B": n for (level, op), n in by_op.items()}
            )
    return pd.DataFrame(rows)


__all__ = ["Grade", "Shape", "grade", "shapes"]
