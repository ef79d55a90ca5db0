"""Every lecture is teachable as it stands: goals, prerequisites, a 50-minute plan, a summary and 3-5
exercises whose solutions are hidden by default and check themselves.

The solutions are code cells tagged ``solution`` that end in ``assert`` statements comparing the answer
with an independent derivation; ``make test`` executes every lecture (nbmake), so a solution that goes
stale fails the suite. This file checks the shape; nbmake checks the content.
"""

import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
LECTURES = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.py"))
APPENDICES = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9][a-z]_appendix_*.py"))
PLAN_MINUTES = 50
ROW = re.compile(r"^\|\s*(\d+)\s*\|")


def _cells(path):
    return jupytext.read(path).cells


def _markdown_starting(cells, prefix):
    return [c for c in cells if c.cell_type == "markdown" and c.source.lstrip().startswith(prefix)]


def _section(text, heading):
    """The lines after `**heading**` up to the next bold heading or blank-line-separated heading."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(f"**{heading}"):
            body = []
            for follow in lines[i + 1 :]:
                if follow.strip().startswith("**") and body:
                    break
                body.append(follow)
            return "\n".join(body)
    return None


def test_there_are_lectures_and_the_names_say_which_is_which():
    assert len(LECTURES) >= 9
    for path in sorted(NOTEBOOKS.glob("*.py")):
        assert path in LECTURES or path in APPENDICES, (
            f"{path.name}: name it NN_topic.py or NNx_appendix_topic.py"
        )


@pytest.mark.parametrize("path", LECTURES + APPENDICES, ids=lambda p: p.stem)
def test_opening_cell_states_goals_and_prerequisites(path):
    opening = _cells(path)[0]
    assert opening.cell_type == "markdown"
    title = "# Appendix" if path in APPENDICES else f"# Lecture {int(path.stem[:2])} — "
    assert opening.source.startswith(title), f"{path.name}: the first cell starts with {title!r}"
    goals = _section(opening.source, "Learning goals")
    assert goals is not None and goals.count("\n- ") + goals.startswith("- ") >= 2, "2+ learning goals"
    assert _section(opening.source, "Prerequisites"), f"{path.name}: **Prerequisites** missing"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_plan_fills_fifty_minutes(path):
    plan = _section(_cells(path)[0].source, "Plan")
    assert plan is not None, f"{path.name}: **Plan (50 minutes)** table missing from the first cell"
    minutes = [int(m.group(1)) for line in plan.splitlines() if (m := ROW.match(line.strip()))]
    assert len(minutes) >= 3 and sum(minutes) == PLAN_MINUTES, f"{path.name}: plan rows sum to {sum(minutes)}"


@pytest.mark.parametrize("path", LECTURES + APPENDICES, ids=lambda p: p.stem)
def test_has_a_summary(path):
    assert _markdown_starting(_cells(path), "## Summary"), f"{path.name}: a '## Summary' cell"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_exercises_have_hidden_self_checking_solutions(path):
    cells = _cells(path)
    assert _markdown_starting(cells, "## Exercises"), f"{path.name}: a '## Exercises' cell"
    positions = [
        i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("### Exercise")
    ]
    assert 3 <= len(positions) <= 5, f"{path.name}: {len(positions)} exercises, want 3-5"
    for number, i in enumerate(positions, 1):
        assert cells[i].source.startswith(f"### Exercise {number}"), f"{path.name}: exercises numbered 1..n"
        solution = cells[i + 1] if i + 1 < len(cells) else None
        assert solution is not None and solution.cell_type == "code", (
            f"{path.name} exercise {number}: solution cell"
        )
        assert "solution" in solution.metadata.get("tags", []), (
            f"{path.name} exercise {number}: tag 'solution'"
        )
        hidden = solution.metadata.get("jupyter", {})
        assert hidden.get("source_hidden") and hidden.get("outputs_hidden"), f"{path.name} {number}: hide it"
        assert re.search(r"^\s*assert ", solution.source, re.M), f"{path.name} exercise {number}: no assert"
        assert "raises-exception" not in solution.metadata.get("tags", [])


def test_the_syllabus_lists_every_lecture_and_appendix():
    syllabus = (NOTEBOOKS.parent / "docs" / "SYLLABUS.md").read_text()
    for path in LECTURES + APPENDICES:
        assert f"`{path.stem}`" in syllabus, f"docs/SYLLABUS.md does not list {path.stem}"
    for path in LECTURES:
        row = next(line for line in syllabus.splitlines() if f"`{path.stem}`" in line)
        assert f"| {PLAN_MINUTES} min" in row, f"docs/SYLLABUS.md: {path.stem} is not {PLAN_MINUTES} minutes"
