"""The committed handouts (docs/handouts/, written by `make handouts`) are the current lectures, work
offline and describe every image.

Each handout records the sha256 of the lecture script it was executed from; when a lecture changes and
its handout is not rebuilt, this test fails and says which one (so the rendered course cannot go stale
silently). Nothing is executed here: the pages are read as text.
"""

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

pytest.importorskip("jupytext")  # tools.build_course needs it (a dev dependency; absent on the GPU machine)

from tools.build_course import recorded_source, source_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HANDOUTS = ROOT / "docs" / "handouts"
LECTURES = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
MAX_TOTAL_MB = 20
REBUILD = "run `make handouts` and commit docs/handouts"


@pytest.mark.parametrize("script", LECTURES, ids=lambda p: p.stem)
def test_each_lecture_has_a_handout_built_from_its_current_script(script):
    page = HANDOUTS / f"{script.stem}.html"
    assert page.is_file(), f"docs/handouts/{page.name} missing: {REBUILD}"
    assert recorded_source(page.read_text(encoding="utf-8")) == source_record(script), (
        f"docs/handouts/{page.name} was built from an older notebooks/{script.name}: {REBUILD}"
    )


def test_the_index_links_every_handout_and_nothing_else():
    pages = {p.stem for p in HANDOUTS.glob("*.html")} - {"index"}
    assert pages == {p.stem for p in LECTURES}, (
        f"handouts without a lecture or lectures without one: {REBUILD}"
    )
    index = (HANDOUTS / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'href="([^"]+)"', index) == [f"{p.stem}.html" for p in LECTURES]


@pytest.mark.parametrize("script", LECTURES, ids=lambda p: p.stem)
def test_handout_is_offline_describes_its_images_and_collapses_its_solutions(script):
    jupytext = pytest.importorskip("jupytext")
    page = HANDOUTS / f"{script.stem}.html"
    if not page.is_file():
        pytest.fail(f"docs/handouts/{page.name} missing: {REBUILD}")
    text = page.read_text(encoding="utf-8")
    for ref in re.findall(r'<(?:script|link|img)\b[^>]*?\b(?:src|href)=["\']([^"\']+)["\']', text):
        if ref.startswith("data:"):
            continue
        assert not urlparse(ref).scheme and not ref.startswith("//"), (
            f"{page.name} loads {ref} from the network"
        )
        assert (page.parent / unquote(urlparse(ref).path)).resolve().is_file(), f"{page.name}: {ref} missing"
    images = re.findall(r"<img\b[^>]*>", text)
    undescribed = [
        img[:80] for img in images if not re.search(r'\balt=(?:"\s*[^"\s][^"]*"|\'\s*[^\'\s][^\']*\')', img)
    ]
    assert not undescribed, f"{page.name}: {len(undescribed)} image(s) without alt text"
    solutions = [c for c in jupytext.read(script).cells if "solution" in c.metadata.get("tags", [])]
    assert text.count('<details class="flashio-solution">') == len(solutions), (
        f"{page.name}: solutions not collapsed"
    )


def test_the_rendered_course_stays_a_sane_size():
    total = sum(p.stat().st_size for p in HANDOUTS.rglob("*") if p.is_file())
    assert total < MAX_TOTAL_MB * 1e6, f"docs/handouts is {total / 1e6:.1f} MB; lower the figures' dpi"


def test_lecture_01_says_how_many_times_the_single_roofline_the_launch_sum_is():
    """The printed multiple equals the two printed times' quotient (a unit slip once printed 35549×)."""
    text = re.sub(r"<[^>]+>", "", (HANDOUTS / "01_memory_hierarchy.html").read_text(encoding="utf-8"))
    found = re.search(r"\(([\d.]+) ms\); launch by launch.*?, ([\d.]+) ms in all \((\d+)× the single", text)
    assert found, "lecture 01's roofline sentence is missing from its handout"
    single, launches, multiple = float(found[1]), float(found[2]), int(found[3])
    assert abs(launches / single - multiple) <= 1  # both times are printed rounded
