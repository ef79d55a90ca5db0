"""The course build (tools/build_course.py, tools/alt_text.py, tools/templates) and make lab's save hook,
on small notebooks made here: no lecture is executed, no browser is started."""

import base64
import html
import re
import runpy
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

nbformat = pytest.importorskip("nbformat")  # a dev dependency: absent on the GPU machine's python3

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402

from tools import build_course  # noqa: E402
from tools.alt_text import missing_alt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
).decode()


WIDGET = {"model_id": "0123abcd", "version_major": 2, "version_minor": 0}


def _image_cell(source, alt=None, **metadata):
    cell = new_code_cell(source, metadata=dict(metadata, **({"alt": alt} if alt else {})))
    cell.outputs = [new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})]
    return cell


def _lecture(alt="Traffic against N"):
    notebook = new_notebook(
        cells=[
            new_markdown_cell(
                "# Lecture 99 — A test\n\nThe opening.", metadata={"slideshow": {"slide_type": "slide"}}
            ),
            new_markdown_cell(
                "Say the secret line out loud.", metadata={"slideshow": {"slide_type": "notes"}}
            ),
            _image_cell("draw_the_chart()", alt=alt),
            new_code_cell("hidden_helper_code()", metadata={"tags": ["remove-input"]}),
            new_markdown_cell("### Exercise 1\n\nCompute it."),
            new_code_cell(
                "answer = 42\nassert answer == 6 * 7",
                metadata={"tags": ["solution"], "jupyter": {"source_hidden": True, "outputs_hidden": True}},
            ),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    notebook.cells[3].outputs = [
        new_output("stream", name="stdout", text="the helper's output\n"),
        new_output(
            "display_data", data={"application/vnd.jupyter.widget-view+json": WIDGET, "text/plain": "VBox()"}
        ),
    ]
    notebook.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}
    }
    notebook.metadata["flashio"] = {"source": "notebooks/99_test.py", "sha256": "ab" * 32}
    return notebook


def _write(tmp_path, notebook, name="99_test.ipynb"):
    path = tmp_path / "executed" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


def _local_assets(page):
    """Every src/href of a <script>, <link> or <img> that is not inline data or an anchor."""
    text = page.read_text()
    refs = re.findall(r'<(?:script|link|img)\b[^>]*?\b(?:src|href)=["\']([^"\']+)["\']', text)
    return [r for r in refs if not r.startswith(("data:", "#"))]


def test_missing_alt_names_the_lecture_and_the_cell():
    notebook = _lecture(alt=None)
    assert missing_alt(notebook, "notebooks/99_test.py") == [
        "notebooks/99_test.py: cell 3 ('draw_the_chart()') draws an image but has no alt text: "
        'add alt="..." to its # %% line'
    ]
    assert missing_alt(_lecture(), "notebooks/99_test.py") == []


@pytest.mark.parametrize("kind", ["slides", "handouts"])
def test_an_image_without_alt_stops_the_build_and_writes_nothing(tmp_path, kind, capsys):
    path = _write(tmp_path, _lecture(alt=None))
    with pytest.raises(SystemExit) as stop:
        build_course.export(kind, [path], tmp_path / kind)
    assert "1 image(s) without alt text" in str(stop.value)
    assert "cell 3" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.html")), "pages were written despite the missing alt text"


def test_slides_are_offline_with_notes_aside_alt_text_and_no_solutions(tmp_path):
    path = _write(tmp_path, _lecture())
    build_course.export("slides", [path], tmp_path / "slides")
    page = tmp_path / "slides" / "99_test.slides.html"
    text = page.read_text()
    assert re.search(r'<aside class="notes">\s*.*Say the secret line out loud\.', text, re.S)
    assert "answer = 42" not in text, "a solution reached the slides"
    assert "hidden_helper_code" not in text and "the helper" in text
    assert re.search(r'<img[^>]*alt=["\']Traffic against N["\']', text)
    assert "Interactive controls appear here" in text and "widget-state" not in text
    assets = _local_assets(page)
    assert any("reveal.js/dist/reveal.css" in a for a in assets) and any("MathJax.js" in a for a in assets)
    for ref in assets:
        assert not urlparse(ref).scheme and not ref.startswith("//"), f"{ref} is not a local file"
        assert (page.parent / unquote(urlparse(ref).path)).resolve().is_file(), f"{ref} does not exist"
    for script in re.findall(r'"([^"]+\.js)"', text):  # what require.js loads: reveal.js and its notes plugin
        if not script.startswith(("http", "//")) and "/" in script:
            assert (page.parent / script).resolve().is_file(), f"{script} does not exist"
    assert not re.search(r'(?:src|href)=["\'](?:https?:)?//', text)
    assert "unpkg.com" not in text and "cdnjs" not in text and "cdn.jsdelivr" not in text


def test_handouts_collapse_solutions_record_the_source_and_link_each_page(tmp_path):
    path = _write(tmp_path, _lecture())
    build_course.export("handouts", [path], tmp_path / "handouts")
    page = tmp_path / "handouts" / "99_test.html"
    text = page.read_text()
    assert build_course.recorded_source(text) == {"source": "notebooks/99_test.py", "sha256": "ab" * 32}
    solution = re.search(
        r'<details class="flashio-solution"><summary>Solution</summary>(.*?)</details>', text, re.S
    )
    assert solution and "answer" in solution.group(1)
    assert re.search(r'<img[^>]*alt=["\']Traffic against N["\']', text)
    assert "hidden_helper_code" not in text
    assert "Interactive controls appear here" in text and "widget-state" not in text
    assert re.search(r'<aside class="flashio-notes">\s*.*Say the secret line out loud\.', text, re.S)
    for ref in _local_assets(page):
        assert (page.parent / unquote(urlparse(ref).path)).resolve().is_file(), f"{ref} does not exist"
    assert not re.search(r'(?:src|href)=["\'](?:https?:)?//', text)
    index = (tmp_path / "handouts" / "index.html").read_text()
    assert '<a href="99_test.html">Lecture 99 — A test</a>' in index


def test_source_record_is_the_sha256_of_the_script_bytes(tmp_path, monkeypatch):
    import hashlib

    script = ROOT / "notebooks" / "07_interactive.py"
    record = build_course.source_record(script)
    assert record == {
        "source": "notebooks/07_interactive.py",
        "sha256": hashlib.sha256(script.read_bytes()).hexdigest(),
    }


LECTURE_TEXT = """# %% [markdown]
# ### Exercise 1

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
assert 6 * 7 == 42

# %% alt="a chart"
draw()
"""


def _lab_hook():
    class Stub:
        def __getattr__(self, name):
            setattr(self, name, Stub())
            return getattr(self, name)

    config = runpy.run_path(
        str(ROOT / "tools" / "lab" / "jupyter_lab_config.py"), init_globals={"get_config": Stub}
    )
    return config["keep_solutions_hidden"]


def test_lab_save_hook_keeps_solutions_collapsed_as_jupyterlab_uncollapses_them_on_run(tmp_path):
    """JupyterLab sets outputs_hidden to false on every cell it runs; the saved script must not change."""
    import jupytext

    (tmp_path / "notebooks").mkdir()
    notebook = jupytext.reads(LECTURE_TEXT, fmt="py:percent")
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.metadata.get("jupyter", {}).pop("outputs_hidden", None)  # what a run in JupyterLab does
    saved = jupytext.writes(notebook, fmt="py:percent")
    assert "outputs_hidden" not in saved
    model = {"type": "file", "format": "text", "content": saved}
    contents_manager = type("CM", (), {"root_dir": str(tmp_path)})()
    _lab_hook()(model=model, path="notebooks/99_test.py", contents_manager=contents_manager)
    assert model["content"].split("\n# %%")[1:] == LECTURE_TEXT.split("\n# %%")[1:]
    untouched = {"type": "file", "format": "text", "content": "print('not a lecture')\n"}
    _lab_hook()(model=untouched, path="script.py", contents_manager=contents_manager)
    assert untouched["content"] == "print('not a lecture')\n"


@pytest.mark.parametrize("script", sorted((ROOT / "notebooks").glob("[0-9]*.py")), ids=lambda p: p.stem)
def test_running_and_saving_a_lecture_in_jupyterlab_leaves_its_script_unchanged(script):
    """What JupyterLab does to a lecture that a student runs (outputs, counts, kernel info, UI state, every
    cell's outputs_hidden turned off), written back by jupytext with jupytext.toml and passed through make
    lab's save hook."""
    import jupytext
    from jupytext.config import load_jupytext_config

    text = script.read_text()
    notebook = jupytext.reads(text, fmt="py:percent")
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    for number, cell in enumerate(notebook.cells, 1):
        cell.metadata.update({"trusted": True, "scrolled": True, "execution": {"iopub.status.idle": "now"}})
        if cell.cell_type == "code":
            cell.execution_count = number
            cell.outputs = [new_output("stream", name="stdout", text="ran\n")]
            cell.metadata.get("jupyter", {}).pop("outputs_hidden", None)
    notebook.metadata["language_info"] = {"name": "python", "version": "3.12.3"}
    representation = notebook.metadata.setdefault("jupytext", {}).setdefault("text_representation", {})
    representation["jupytext_version"] = "9.9.9"  # another jupytext than the one that wrote the script
    config = load_jupytext_config(str(script.parent))
    assert config is not None, "jupytext.toml not found"
    model = {
        "type": "file",
        "format": "text",
        "content": jupytext.writes(notebook, fmt="py:percent", config=config),
    }
    contents_manager = type("CM", (), {"root_dir": str(ROOT)})()
    _lab_hook()(model=model, path=f"notebooks/{script.name}", contents_manager=contents_manager)
    assert model["content"] == text, (
        f"{script.name} changes when run and saved in make lab: run `make format`"
    )


# --- reproducible handouts (issue 26): a rebuild of an unchanged lecture is byte-identical --------------

STYLED_LECTURE = """# %% [markdown]
# # Lecture 98 — styled tables

# %%
import pandas as pd

frame = pd.DataFrame({"N": [1024, 4096], "GB": [0.5, 8.25]})
frame.style.format({"GB": "{:.2f}"}).highlight_max(color="#ffd")

# %%
frame.style.format({"GB": "{:.1f}"})
"""


def _scratch_lecture(name, text):
    """A lecture script inside the repo (build/ is not tracked): build_course records its repo path."""
    folder = ROOT / "build" / "test_lectures"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(text)
    return script


def test_a_rebuilt_handout_is_byte_identical(tmp_path):
    """make handouts rewrote 5 committed pages on an untouched clone: pandas Styler's random table ids
    (T_327e5...) and the kernel's /tmp/ipykernel_<pid> cell files changed on every run."""
    script = _scratch_lecture(f"98_styled_{tmp_path.name}.py", STYLED_LECTURE)
    pages = []
    for run in ("first", "second"):
        build_course.execute(script, tmp_path / run / "executed", timeout=300)
        executed = tmp_path / run / "executed" / f"{script.stem}.ipynb"
        build_course.export("handouts", [executed], tmp_path / run / "handouts")
        pages.append((tmp_path / run / "handouts" / f"{script.stem}.html").read_bytes())
    script.unlink()
    assert b"T_s1" in pages[0] and b"T_s2" in pages[0]  # two tables, ids in order of appearance
    assert pages[0] == pages[1]


def test_kernel_cell_files_and_styler_ids_are_normalised():
    cell = new_code_cell("x")
    cell.outputs = [
        new_output("stream", name="stderr", text="/tmp/ipykernel_5260/3151.py:3: note\n"),
        new_output("display_data", data={"text/html": '<style>#T_327e5_row0 {}</style><table id="T_327e5">'}),
    ]
    nb = build_course.make_deterministic(new_notebook(cells=[new_markdown_cell("# t"), cell]))
    assert nb.cells[1].outputs[0]["text"] == "<cell 2>:3: note\n"
    assert nb.cells[1].outputs[1]["data"]["text/html"] == '<style>#T_s1_row0 {}</style><table id="T_s1">'


def test_a_lecture_that_prints_a_warning_stops_the_build(tmp_path, capsys):
    """Lecture 08's handout showed a Pandas4Warning (fillna with a str on float columns)."""
    script = _scratch_lecture(
        f"97_warns_{tmp_path.name}.py",
        "# %% [markdown]\n# # Lecture 97\n\n# %%\nimport warnings\n\nwarnings.warn('old API', FutureWarning)\n",
    )
    with pytest.raises(SystemExit, match="prints 1 warning"):
        build_course.execute(script, tmp_path / "executed", timeout=300)
    script.unlink()
    assert "cell 2 prints a warning: " in capsys.readouterr().err
    assert not (tmp_path / "executed").exists()


def test_lab_config_applied_twice_does_not_warn_about_its_own_hook():
    """`make lab` printed "Overriding existing pre_save_hook (keep_solutions_hidden) with a new one
    (keep_solutions_hidden)" twice: the server applies the config to its contents manager again when
    Jupytext derives its own. A different hook replacing ours must still warn."""
    import warnings

    from jupyter_server.services.contents.manager import ContentsManager
    from traitlets.config.loader import PyFileConfigLoader

    config_file = ROOT / "tools" / "lab" / "jupyter_lab_config.py"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = PyFileConfigLoader(config_file.name, path=str(config_file.parent)).load_config()
        manager = ContentsManager(config=config)
        manager.update_config(config)  # the second application
        assert not [w for w in caught if "pre_save_hook" in str(w.message)], [str(w.message) for w in caught]

        def other_hook(model, path, contents_manager, **kwargs):
            pass

        manager.pre_save_hook = other_hook
    assert any("Overriding existing pre_save_hook" in str(w.message) for w in caught)


@pytest.mark.parametrize("script", sorted((ROOT / "notebooks").glob("[0-9]*.py")), ids=lambda p: p.stem)
def test_the_index_gives_each_lecture_a_summary_its_time_and_prerequisites(script):
    """The handout index's row of every lecture: the title slide's one-paragraph summary, 50 minutes (an
    appendix: its reading time) and the Prerequisites paragraph, each read from the opening."""
    import jupytext

    from tools.build_course import handouts_index, lecture_card

    notebook = jupytext.read(script)
    summary, time, prerequisites = lecture_card(notebook)
    assert 5 <= len(summary.split()) <= 60, f"{script.name}: summary {summary!r}"
    appendix = "_appendix_" in script.name
    assert time.endswith("min (reading)") if appendix else time == "50 min", f"{script.name}: time {time!r}"
    assert len(prerequisites.split()) >= 3 and "**" not in prerequisites, f"{script.name}: {prerequisites!r}"
    page = handouts_index([(f"{script.stem}.html", "t", (summary, time, prerequisites))])
    for text in (summary, time, prerequisites):
        assert html.escape(text) in page
