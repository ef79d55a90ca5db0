"""Every lecture is teachable as it stands: goals, prerequisites, a 50-minute plan, a summary and 3-5
exercises whose solutions are hidden by default and check themselves; every appendix is a reading with
its time and a short quiz of the same kind.

The solutions are code cells tagged ``solution`` that end in ``assert`` statements comparing the answer
with an independent derivation; ``make test`` executes every lecture (nbmake), so a solution that goes
stale fails the suite. This file checks the shape; nbmake checks the content, and `make test-browser`
checks that every slide of every deck fits a 1280×800 projector.

The shape, for a projector: the opening is a title slide, then the goals and prerequisites on a slide of
their own and the plan on another; every exercise (and quiz question) on its own slide; the theory
lectures have at least one proof or design exercise (its title says "(proof)" or "(design)").
"""

import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
APPENDICES = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9][a-z]_appendix_*.py"))
#: NN_topic.py, and NNx_topic.py for the second lecture of a topic that one lecture could not hold (04b)
LECTURES = sorted(
    p for p in NOTEBOOKS.glob("[0-9][0-9]*_*.py") if p not in APPENDICES and re.match(r"\d\d[a-z]?_", p.name)
)
#: The lectures that teach a model or a proof (not a lab, a measurement or a claim check): each has at
#: least one exercise that asks for a proof or a design, not only a number to look up.
THEORY = ("02_", "03_", "04_", "04b_")
PLAN_MINUTES = 50
ROW = re.compile(r"^\|\s*(\d+)\s*\|")
READING = re.compile(r"\*\*Reading \((\d+) minutes\)\*\*")


def _cells(path):
    return jupytext.read(path).cells


def _number(path):
    """'4' for 04_io_complexity.py, '4b' for 04b_..."""
    stem = path.stem.split("_")[0]
    return str(int(stem[:2])) + stem[2:]


def _slide_type(cell):
    return cell.metadata.get("slideshow", {}).get("slide_type", "-")


def _opening(cells):
    """The markdown cells before the first code cell, speaker notes left out: what the audience sees first."""
    opening = []
    for cell in cells:
        if cell.cell_type != "markdown":
            break
        if _slide_type(cell) != "notes":
            opening.append(cell)
    return opening


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
            f"{path.name}: name it NN_topic.py, NNx_topic.py (a topic's second lecture) or NNx_appendix_topic.py"
        )


def _opening_text(path):
    return "\n\n".join(c.source for c in _opening(_cells(path)))


@pytest.mark.parametrize("path", LECTURES + APPENDICES, ids=lambda p: p.stem)
def test_opening_states_goals_and_prerequisites(path):
    first = _cells(path)[0]
    assert first.cell_type == "markdown"
    title = "# Appendix" if path in APPENDICES else f"# Lecture {_number(path)} — "
    assert first.source.startswith(title), f"{path.name}: the first cell starts with {title!r}"
    opening = _opening_text(path)
    goals = _section(opening, "Learning goals")
    assert goals is not None and goals.count("\n- ") + goals.startswith("- ") >= 2, "2+ learning goals"
    assert _section(opening, "Prerequisites"), f"{path.name}: **Prerequisites** missing"


@pytest.mark.parametrize("path", LECTURES + APPENDICES, ids=lambda p: p.stem)
def test_the_opening_is_three_slides_title_goals_plan(path):
    """A projector shows the title alone, then goals and prerequisites, then the plan (or reading time):
    one idea per slide. The title slide carries one short paragraph at most (the rest is speaker notes)."""
    opening = _opening(_cells(path))
    goals = next((c for c in opening if "**Learning goals**" in c.source), None)
    plan = next((c for c in opening if "**Plan (" in c.source or READING.search(c.source)), None)
    assert goals is not None and plan is not None, (
        f"{path.name}: goals and plan (or reading time) in the opening"
    )
    assert opening[0] is not goals and goals is not plan, (
        f"{path.name}: title, goals and plan in separate cells"
    )
    assert _slide_type(opening[0]) == "slide", f"{path.name}: the title cell starts a slide"
    for cell in (goals, plan):
        assert _slide_type(cell) in ("slide", "subslide"), f"{path.name}: {cell.source[:30]!r} starts a slide"
    paragraphs = [p for p in opening[0].source.split("\n\n")[1:] if p.strip()]
    assert len(paragraphs) <= 1, (
        f"{path.name}: the title slide has {len(paragraphs)} paragraphs; move prose to notes"
    )
    assert len(" ".join(paragraphs).split()) <= 60, (
        f"{path.name}: the title slide's paragraph is over 60 words"
    )


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_plan_fills_fifty_minutes(path):
    plan = _section(_opening_text(path), "Plan")
    assert plan is not None, f"{path.name}: **Plan (50 minutes)** table missing from the opening"
    minutes = [int(m.group(1)) for line in plan.splitlines() if (m := ROW.match(line.strip()))]
    assert len(minutes) >= 3 and sum(minutes) == PLAN_MINUTES, f"{path.name}: plan rows sum to {sum(minutes)}"


@pytest.mark.parametrize("path", APPENDICES, ids=lambda p: p.stem)
def test_an_appendix_is_a_reading_with_its_time_and_a_quiz(path):
    cells = _cells(path)
    reading = READING.search(_opening_text(path))
    assert reading and 10 <= int(reading.group(1)) <= 50, (
        f"{path.name}: **Reading (N minutes)** in the opening"
    )
    assert _markdown_starting(cells, "## Quiz"), f"{path.name}: a '## Quiz' cell"
    _check_exercises(path, cells, "### Question", 2, 5)


@pytest.mark.parametrize("path", LECTURES + APPENDICES, ids=lambda p: p.stem)
def test_has_a_summary(path):
    assert _markdown_starting(_cells(path), "## Summary"), f"{path.name}: a '## Summary' cell"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_exercises_have_hidden_self_checking_solutions(path):
    cells = _cells(path)
    assert _markdown_starting(cells, "## Exercises"), f"{path.name}: a '## Exercises' cell"
    _check_exercises(path, cells, "### Exercise", 3, 5)


@pytest.mark.parametrize("path", [p for p in LECTURES if p.name.startswith(THEORY)], ids=lambda p: p.stem)
def test_a_theory_lecture_asks_for_a_proof_or_a_design(path):
    titles = [c.source.splitlines()[0] for c in _cells(path) if c.source.startswith("### Exercise")]
    assert any(re.search(r"\((proof|design)\)", t) for t in titles), (
        f"{path.name}: no (proof) or (design) exercise"
    )


def _check_exercises(path, cells, heading, least, most):
    """`heading` n cells numbered 1..n, each on its own slide, each followed by a hidden solution that asserts."""
    positions = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith(heading)]
    assert least <= len(positions) <= most, (
        f"{path.name}: {len(positions)} × {heading!r}, want {least}-{most}"
    )
    for number, i in enumerate(positions, 1):
        assert cells[i].source.startswith(f"{heading} {number}"), f"{path.name}: {heading} numbered 1..n"
        assert _slide_type(cells[i]) in ("slide", "subslide"), (
            f"{path.name}: {heading} {number} starts a slide"
        )
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
    for path in APPENDICES:
        row = next(line for line in syllabus.splitlines() if f"`{path.stem}`" in line)
        minutes = READING.search(_opening_text(path)).group(1)
        assert f"reading, {minutes} min" in row, (
            f"docs/SYLLABUS.md: {path.stem} is not 'reading, {minutes} min'"
        )


def test_both_tracks_and_the_readme_name_every_lecture():
    """The syllabus's two tracks say where each lecture goes (a lecture split in two stays together), and
    the README's table has a row per lecture and appendix."""
    syllabus = (NOTEBOOKS.parent / "docs" / "SYLLABUS.md").read_text()
    tracks = [line for line in syllabus.splitlines() if line.startswith("- **")]
    assert len(tracks) == 2, "docs/SYLLABUS.md: two tracks, each a '- **Name:**' line"
    for track in tracks:
        for path in LECTURES + APPENDICES:
            if path in APPENDICES:
                continue
            number = _number(path)
            assert re.search(rf"(?<![\w.]){re.escape(number)}(?![\w.])", track), (
                f"a track does not place {number}"
            )
    readme = (NOTEBOOKS.parent / "README.md").read_text()
    for path in LECTURES + APPENDICES:
        assert f"| {path.stem} |" in readme, f"README.md's lecture table has no row for {path.stem}"
