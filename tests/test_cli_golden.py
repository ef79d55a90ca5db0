"""The command lines' outputs are what they were before the re-layout (issue 25, "behaviour unchanged").

tests/cli_golden.py names ~20 commands of simlib, evidence and gpu_kernels (--simulate); tests/golden/
holds what each printed and wrote at commit 7fc7805, before simlib's lectures, Figure 2, the energy checks
and model-vs-ncu moved out (recorded there, as cli_golden.py's docstring says). Each command, under its
old spelling and its new one where it moved, must print the same bytes today.

Some outputs changed on purpose after that commit, by other work than the re-layout. Those are listed in
INTENDED with why: every line that differs must match the entry's pattern (and a pattern that no longer
matches anything is an error too, so the list cannot go stale); every other line is still compared.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import NamedTuple

import pytest
from cli_golden import COMMANDS, run

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden"


class Intended(NamedTuple):
    why: str
    lines: str = "(?!)"  # a regex every removed and every added line must match in full
    squeeze_spaces: bool = False  # compare with runs of spaces folded to one (a table's column widths)


INTENDED = {
    "sweep_naive_fa2": Intended(
        "sweep --csv says what it wrote (issue 26, first hour: commit 5686a6f)",
        r"wrote 16 rows, 34 columns to \{out\}/sweep\.csv",
    ),
    "sweep_table": Intended(
        "sweep's table shows '-' where a column does not apply, so its columns are strings and pandas pads "
        "them differently (commit 5686a6f); the values are the same",
        squeeze_spaces=True,
    ),
    "energy_fa2": Intended(
        "energy's default model is the cost model (issue 21); the paper's count, the old output, is "
        "--model logical, which says so in a first line",
        r"logical \(the paper's count\): HBM and SRAM bytes at thread level .*",
    ),
    "claims": Intended(
        "claims re-judged on the 16-bit eager baseline, and claims (s)-(z), U1, U2 added (commit c3f5c67)",
        r"\((?:e|j|n|o|q|r|s|t|u|v|w|x|y|z|U1|U2)\) .*",
    ),
    "model_vs_ncu": Intended(
        "the comparison moved to evidence.model_vs_ncu (the re-layout), and the provenance sidecar records "
        "its row count (issue 26: one writer policy)",
        r' "what": "computed, not measured: (?:simlib\.physical|evidence)\.model_vs_ncu\.compare of the profile",'
        r'| "bytes": 32850,?| "rows": 192',
    ),
    "run_fa2_tc_sim": Intended(
        "fa2_tc version 4: 32 query rows per warp by default (Br = 32·W), shown in run's header; the "
        "counters still equal simlib's to the byte (diff 0)",
        r"kernel fa2_tc on numba CUDA simulator: B=1 H=1 N=48 d=64 causal dtype=bf16 warps=1 block_cols=64"
        r"(?: warp_rows=32 q_reload=False)?"
        r"|(?:hbm_read_bytes|sram_read_bytes|sram_write_bytes) +(\d+) +\1 +0",
    ),
    "bad_kernel_shape": Intended(
        "one value parser for every command line (issue 26, reliability): its one-line error words it so",
        r"error: argument --seq-len: (?:must be a positive integer, got|not a positive integer:) '-3'",
    ),
}


def changed_lines(want: str, got: str) -> list[str]:
    """The lines removed from `want` and added in `got`, in order."""
    matcher = difflib.SequenceMatcher(a=want.splitlines(), b=got.splitlines(), autojunk=False)
    out = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            out += matcher.a[i1:i2] + matcher.b[j1:j2]
    return out


def cases():
    for name, before, after in COMMANDS:
        package = before.split()[0]
        for command in after or [before]:
            yield pytest.param(name, command, id=f"{name}:{command.split()[0]}")
        if after and all(c.split()[0] != package for c in after):  # moved: the old spelling still works
            yield pytest.param(name, before, id=f"{name}:{package}")


def test_the_list_and_the_golden_files_agree():
    names = [name for name, _, _ in COMMANDS]
    assert len(set(names)) == len(names)
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(names)
    assert set(INTENDED) <= set(names)


@pytest.mark.parametrize(("name", "command"), list(cases()))
def test_output_as_before_the_relayout(name, command):
    want = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
    got = run(command, ROOT)
    intended = INTENDED.get(name)
    if intended is None:
        assert got == want, "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), lineterm=""))
        return
    assert got != want, f"{name}: the output is as before; drop it from INTENDED"
    if intended.squeeze_spaces:
        want, got = (re.sub(r" +", " ", t) for t in (want, got))
    changed = changed_lines(want, got)
    stray = [line for line in changed if not re.fullmatch(intended.lines, line)]
    assert not stray, f"{name}: lines changed beyond the intended ({intended.why}):\n" + "\n".join(stray)
