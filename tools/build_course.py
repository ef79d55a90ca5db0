"""Build the course from the lecture scripts: execute each once, then export offline slides and handouts.

    python -m tools.build_course execute notebooks/07_interactive.py --out build/executed
    python -m tools.build_course slides build/executed/*.ipynb --out build/slides
    python -m tools.build_course handouts build/executed/*.ipynb --out docs/handouts

`make slides` and `make handouts` run these (the Makefile re-executes a lecture only when it, simlib,
measurements, evidence, course or data/ changed). The pages load reveal.js, require.js, jQuery and MathJax from tools/vendor by a relative
path, so they open and work without network (tools/vendor/README.md: versions, sources, licences).
Slides (a 1120×700 slide, the shape of a 1280×800 projector, that never scrolls): cells tagged `solution`
removed, code cells show their output only unless tagged `slide-code`, slide_type "notes" cells only in
the speaker view (S). Handouts: code and outputs, each solution collapsed under
"Solution", the lecture script's sha256 in a <meta> tag (tests/test_build_handouts.py compares it); the
lab template's stylesheets, the same on every page, are written once beside the pages and linked.
An image without alt text stops the build with one line per cell (tools/alt_text.py).
"""

import argparse
import hashlib
import html
import os
import re
import sys
import time
from pathlib import Path

import jupytext
import markupsafe
import nbformat
from nbconvert import HTMLExporter, SlidesExporter
from nbconvert.preprocessors import CellExecutionError, ExecutePreprocessor
from traitlets.config import Config

from tools.alt_text import AltTextPreprocessor, missing_alt

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "tools" / "vendor"
TEMPLATES = ROOT / "tools" / "templates"
MATHJAX_CONFIG = "TeX-AMS_CHTML-full,Safe"


def source_record(script):
    """What a built page says about the lecture it came from: its path in the repo and its sha256."""
    script = Path(script).resolve()
    return {
        "source": script.relative_to(ROOT).as_posix(),
        "sha256": hashlib.sha256(script.read_bytes()).hexdigest(),
    }


def recorded_source(page):
    """The source record that a handout's <meta> tags hold ({} if none)."""
    tags = re.findall(r"<meta\b[^>]*>", page)
    found = {}
    for key, name in (("source", "flashio-source"), ("sha256", "flashio-source-sha256")):
        tag = next((t for t in tags if re.search(rf'name="{name}"', t)), "")
        value = re.search(r'content="([^"]*)"', tag)
        if value:
            found[key] = html.unescape(value.group(1))
    return found


#: pandas Styler's random table ids (uuid4, 5 hex digits: `T_327e5`, `#T_327e5_row0_col1`)
STYLER_ID = re.compile(r"\bT_([0-9a-f]{5})(?=[_\"' {])")
#: the kernel's temporary file of a cell, in warnings and tracebacks (`/tmp/ipykernel_5260/3151.py`)
KERNEL_CELL_FILE = re.compile(r"/tmp/ipykernel_\d+/\d+\.py")
#: a warning printed by a cell (`...: FutureWarning: ...`): a handout must not show one
PRINTED_WARNING = re.compile(r"\b\w*Warning: ")


def _output_texts(notebook):
    """(cell number, output, key) of every text an output holds: stream text and text/* data."""
    for number, cell in enumerate(notebook.cells, 1):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                yield number, output, "text"
            for mime in output.get("data", {}):
                if mime.startswith("text/"):
                    yield number, output["data"], mime


def make_deterministic(notebook):
    """Replace what differs between two runs of an unchanged lecture: Styler ids become T_s1, T_s2, ...
    in order of appearance (the same table keeps its id on every rebuild) and the kernel's temporary
    cell files become `<cell N>`. Returns the notebook."""
    ids = {}
    for number, holder, key in _output_texts(notebook):
        text = holder[key]
        joined = "".join(text) if isinstance(text, list) else text
        joined = STYLER_ID.sub(lambda m: ids.setdefault(m.group(1), f"T_s{len(ids) + 1}"), joined)
        joined = KERNEL_CELL_FILE.sub(f"<cell {number}>", joined)
        holder[key] = joined
    return notebook


def printed_warnings(notebook, source):
    """One line per cell whose output shows a warning (lecture 08 showed a Pandas4Warning)."""
    lines = []
    for number, holder, key in _output_texts(notebook):
        text = holder[key] if isinstance(holder[key], str) else "".join(holder[key])
        if key == "text" and holder.get("name") == "stderr" and PRINTED_WARNING.search(text):
            first = next(line for line in text.splitlines() if PRINTED_WARNING.search(line))
            lines.append(f"{source}: cell {number} prints a warning: {first.strip()[:160]}")
    return lines


def execute(script, out_dir, timeout=600):
    """Run every cell of one lecture script (in notebooks/, with the python3 kernel) into OUT/NN_topic.ipynb."""
    script = Path(script).resolve()
    notebook = jupytext.read(script)
    notebook.metadata["flashio"] = source_record(script)
    for number, cell in enumerate(notebook.cells, 1):
        cell.id = f"cell-{number}"  # jupytext makes random ids; fixed ones keep rebuilt pages' diffs small
    started = time.monotonic()
    try:
        ExecutePreprocessor(timeout=timeout, kernel_name="python3").preprocess(
            notebook, {"metadata": {"path": str(script.parent)}}
        )
    except CellExecutionError as err:
        sys.exit(f"build_course: {script.relative_to(ROOT)} failed while executing:\n{err}")
    make_deterministic(notebook)
    warned = printed_warnings(notebook, script.relative_to(ROOT).as_posix())
    if warned:
        print("\n".join(warned), file=sys.stderr)
        sys.exit(f"build_course: {script.relative_to(ROOT)} prints {len(warned)} warning(s); fix the cell")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{script.stem}.ipynb"
    nbformat.write(notebook, target)
    print(f"executed {script.relative_to(ROOT)} in {time.monotonic() - started:.0f} s -> {target}")


def asset_urls(out_dir):
    """The vendored scripts' URLs relative to the folder the pages are written to."""
    prefix = Path(os.path.relpath(VENDOR, Path(out_dir).resolve())).as_posix()
    return {
        "reveal": f"{prefix}/reveal.js",
        "mathjax": f"{prefix}/mathjax/MathJax.js?config={MATHJAX_CONFIG}",
        "require": f"{prefix}/requirejs/require.js",
        "jquery": f"{prefix}/jquery/jquery.min.js",
    }


class HandoutExporter(HTMLExporter):
    """nbconvert's HTML exporter, except that the stylesheets the lab template includes (about 7,000 lines,
    identical on every page) are linked, not inlined: `stylesheets` collects them (template-relative name
    -> text) for `export` to write once beside the pages. They embed their icons as data: URLs, so the
    linked copies need no other file."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.stylesheets = {}

    def _init_resources(self, resources):
        resources = super()._init_resources(resources)

        def link_css(name):
            env = self.environment
            self.stylesheets[name] = env.loader.get_source(env, name)[0]
            return markupsafe.Markup(f'<link rel="stylesheet" href="{html.escape(name)}">')

        resources["include_css"] = link_css
        return resources


def exporter(kind, out_dir):
    """nbconvert's exporter for `slides` or `handouts`, with the templates under tools/templates."""
    urls = asset_urls(out_dir)
    c = Config()
    c.TemplateExporter.extra_template_basedirs = [str(TEMPLATES)]
    c.TemplateExporter.extra_template_paths = [str(TEMPLATES)]  # for flashio_outputs.j2
    c.TemplateExporter.exclude_input_prompt = True
    c.TemplateExporter.exclude_output_prompt = True
    c.HTMLExporter.mathjax_url = urls["mathjax"]
    c.HTMLExporter.require_js_url = urls["require"]
    c.HTMLExporter.jquery_url = urls["jquery"]
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_input_tags = {"remove-input"}
    if kind == "slides":
        c.TagRemovePreprocessor.remove_cell_tags = {"solution"}
        c.SlidesExporter.reveal_url_prefix = urls["reveal"]
        c.SlidesExporter.reveal_theme = "white"  # vendored; other themes import web fonts
        made = SlidesExporter(config=c, template_name="flashio_slides")
    else:
        made = HandoutExporter(config=c, template_name="flashio_handout")
    made.register_preprocessor(AltTextPreprocessor(), enabled=True)
    return made


#: A code cell shows its code on a slide only when tagged so; otherwise the slide shows its output alone
#: (the code stays in the handout and in JupyterLab).
SLIDE_CODE = "slide-code"


def _outputs_only(notebook):
    """Slides: every code cell not tagged `slide-code` is shown by its output only (tag remove-input)."""
    for cell in notebook.cells:
        tags = cell.metadata.setdefault("tags", [])
        if cell.cell_type == "code" and SLIDE_CODE not in tags and "remove-input" not in tags:
            tags.append("remove-input")


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = "<p><em>Interactive controls appear here when the lecture runs in Jupyter (<code>make lab</code>).</em></p>"


def _without_widgets(notebook):
    """Widgets need a renderer that only exists on a CDN: each widget output becomes a line saying where
    the controls are, and the stored widget state (which only that renderer reads) is dropped."""
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                output["data"] = {"text/html": WIDGET_NOTE}


def _title(notebook, fallback):
    first = notebook.cells[0].source.splitlines() if notebook.cells else []
    return first[0].lstrip("# ").strip() if first else fallback


#: The opening's timing line: "**Plan (50 minutes)**" or, for a reading, "**Reading (30 minutes)**".
TIMING = re.compile(r"\*\*(Plan|Reading) \((\d+) minutes\)\*\*")


def lecture_card(notebook):
    """(summary, time, prerequisites) of a lecture, from its opening (the markdown before the first code
    cell): the title slide's paragraph, the plan's or the reading's minutes, the Prerequisites paragraph."""
    opening = []
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            break
        if cell.metadata.get("slideshow", {}).get("slide_type") != "notes":
            opening.append(cell.source)
    title = opening[0].split("\n\n") if opening else []
    summary = " ".join(title[1].split()) if len(title) > 1 else ""
    text = "\n\n".join(opening)
    timing = TIMING.search(text)
    time = (
        ""
        if not timing
        else f"{timing.group(2)} min" + (" (reading)" if timing.group(1) == "Reading" else "")
    )
    prerequisites = ""
    marker = text.find("**Prerequisites**")
    if marker >= 0:
        after = text[marker + len("**Prerequisites**") :].lstrip(": \n")
        prerequisites = " ".join(after.split("\n\n")[0].split())
    return summary, time, prerequisites


def handouts_index(entries):
    """index.html: one row per handout, in lecture order: its link, its one-line summary, time and
    prerequisites (`entries`: (page name, title, (summary, time, prerequisites)))."""
    rows = "\n".join(
        f'<tr><td><a href="{html.escape(name)}">{html.escape(title)}</a><br><small>{html.escape(summary)}</small></td>'
        f"<td>{html.escape(time)}</td><td><small>{html.escape(prerequisites)}</small></td></tr>"
        for name, title, (summary, time, prerequisites) in entries
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<title>flash-io: the lectures, executed</title>\n"
        "<style>body{font-family:sans-serif;max-width:72em;margin:2em auto}td{vertical-align:top;padding:.4em}"
        "th{text-align:left}</style>\n</head>\n<body>\n"
        "<h1>flash-io: the lectures, executed</h1>\n"
        "<p>Each page is a lecture run top to bottom without a GPU (code, outputs and charts; the exercise "
        "solutions are collapsed under <em>Solution</em>). Built by <code>make handouts</code> from "
        "<code>notebooks/</code>; the order, the two tracks and the timing are in docs/SYLLABUS.md.</p>\n"
        f"<table>\n<tr><th>Lecture</th><th>Time</th><th>Prerequisites</th></tr>\n{rows}\n</table>\n"
        "</body>\n</html>\n"
    )


def export(kind, executed, out_dir):
    """Write the slides (NN_topic.slides.html) or handouts (NN_topic.html and index.html) of EXECUTED."""
    notebooks = [(Path(p), nbformat.read(p, as_version=4)) for p in sorted(executed)]
    problems = [
        line
        for path, nb in notebooks
        for line in missing_alt(nb, nb.metadata.get("flashio", {}).get("source", path.name))
    ]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(f"build_course: {len(problems)} image(s) without alt text; no {kind} written")
    out_dir.mkdir(parents=True, exist_ok=True)
    made = exporter(kind, out_dir)
    suffix = ".slides.html" if kind == "slides" else ".html"
    entries = []
    for path, nb in notebooks:
        _without_widgets(nb)
        if kind == "slides":
            _outputs_only(nb)
        body, _ = made.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
        (out_dir / f"{path.stem}{suffix}").write_text(body, encoding="utf-8")
        entries.append((f"{path.stem}{suffix}", _title(nb, path.stem), lecture_card(nb)))
    if kind == "handouts":
        (out_dir / "index.html").write_text(handouts_index(entries), encoding="utf-8")
        for name, text in made.stylesheets.items():
            (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
            (out_dir / name).write_text(text, encoding="utf-8")
    total = sum(f.stat().st_size for f in out_dir.rglob("*") if f.is_file())
    print(f"{kind}: {len(entries)} pages in {out_dir}, {total / 1e6:.1f} MB")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.build_course", description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["execute", "slides", "handouts"])
    parser.add_argument(
        "inputs", nargs="+", type=Path, help="lecture scripts (execute) or executed notebooks"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder to write to")
    args = parser.parse_args(argv)
    for path in args.inputs:
        if not path.is_file():
            parser.error(f"inputs: {path} does not exist")
    if args.step == "execute":
        for script in args.inputs:
            execute(script, args.out)
    else:
        export(args.step, args.inputs, args.out)


if __name__ == "__main__":
    main()
