"""Every command in a command block of README.md, docs/*.md and data/measurements/README.md runs as
written (issue 26: `python -m gpu_kernels compare` failed for want of --out; bare `python -m` fails
outside the venv), every ```pycon block runs as a doctest, every relative link of those pages leads to
a file, and README.md stays a landing page (what it is, the two commands, what to open first, links).

A block is a fenced ```sh / ```bash / ```shell block; a backslash joins lines and `#` starts a comment.
`make TARGET` lines must name a Makefile target (`make -n` dry run: `make lab` would start a server and
`make test` is this suite). Every other line must start with `.venv/bin/python -m` and is run with this
interpreter from a scratch folder (so `--csv out.csv` writes there): exit 0, or, for a command that
needs a GPU, the one-line no-GPU answer and exit 2. Placeholders are filled in: DIR is a fresh folder;
RUN, in `import-run data/measurements/incoming/RUN`, stands for a device run's folder, so that command
must answer in one line that the folder is not there (tests/test_manifest.py files real ones).
"""

import doctest
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_helpers import REPO

ROOT = Path(REPO)
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "data" / "measurements" / "README.md",
]
BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.S | re.M)
PYCON = re.compile(r"^```pycon\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
NO_GPU = "error: no CUDA GPU found; "
#: gpu_kernels subcommands that need a GPU (run only with --simulate does not)
GPU_COMMANDS = ("bench", "compare", "tune", "ncu", "profile", "asm", "ceilings", "side-by-side", "run")


def commands() -> list[tuple[str, str]]:
    """(where, command) for every command line of every block."""
    out = []
    for doc in DOCS:
        for block in BLOCK.findall(doc.read_text()):
            text = block.replace("\\\n", " ")
            for line in text.splitlines():
                line = re.split(r"\s+#\s", " " + line, maxsplit=1)[0].strip()
                if line:
                    out.append((doc.relative_to(ROOT).as_posix(), line))
    return out


COMMANDS = commands()


def test_the_docs_have_command_blocks():
    where = {w for w, _ in COMMANDS}
    assert len(COMMANDS) >= 25, COMMANDS  # make targets, simlib, evidence, gpu_kernels, import-run
    assert {"README.md", "docs/COMMANDS.md", "docs/SETUP.md", "data/measurements/README.md"} <= where
    moved = [c for w, c in COMMANDS if w == "docs/COMMANDS.md"]  # the command reference left README
    for sub in (
        "count",
        "sweep",
        "predict",
        "energy",
        "kvcache",
        "figure2",
        "claims",
        "compare",
        "side-by-side",
    ):
        assert any(f" {sub} " in f" {c} " for c in moved), f"docs/COMMANDS.md has no {sub} command"


def test_readme_is_a_landing_page():
    """README was 201 lines before a newcomer learned what to open first; now: what it is, the two
    commands, what to open first, the lectures and links, with the reference in docs/."""
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    heads = [line for line in lines if line.startswith("## ")]
    assert heads[:2] == ["## Two commands", "## What to open first"], heads
    assert lines.index("## What to open first") < 40
    first_block = BLOCK.search(text).group(1)
    assert first_block.startswith("make lab ") and "\nmake test " in first_block
    assert len(lines) <= 100, len(lines)
    for page in ("docs/COMMANDS.md", "docs/SETUP.md", "docs/ARCHITECTURE.md", "docs/handouts/index.html"):
        assert f"]({page})" in text, f"README.md does not link {page}"


@pytest.mark.parametrize("doc", [d.relative_to(ROOT).as_posix() for d in DOCS])
def test_every_relative_link_leads_to_a_file(doc):
    path = ROOT / doc
    targets = [t for t in LINK.findall(path.read_text()) if "://" not in t and not t.startswith("mailto:")]
    missing = [t for t in targets if not (path.parent / t).exists()]
    assert not missing, f"{doc}: links to missing files {missing}"


PYCONS = [(d.relative_to(ROOT).as_posix(), b) for d in DOCS for b in PYCON.findall(d.read_text())]


@pytest.mark.parametrize("where,block", PYCONS, ids=[w for w, _ in PYCONS])
def test_python_block_runs_as_a_doctest(where, block):
    test = doctest.DocTestParser().get_doctest(block, {}, where, where, 0)
    assert test.examples, f"{where}: a pycon block without >>> examples"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0, f"{where}: the Python block's output differs"


def _argv(command: str, scratch: Path) -> list[str]:
    words = shlex.split(command)
    return [str(scratch / "DIR") if w == "DIR" else w for w in words]


@pytest.mark.parametrize("where,command", COMMANDS, ids=[c for _, c in COMMANDS])
def test_command_runs_as_written(where, command, tmp_path):
    words = _argv(command, tmp_path)
    if words[0] == "make":
        assert len(words) == 2, f"{where}: {command!r}: one target per line"
        dry = subprocess.run(["make", "-n", words[1]], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert dry.returncode == 0, f"{where}: `{command}` is not a Makefile target: {dry.stderr}"
        return
    assert words[:2] == [".venv/bin/python", "-m"], (
        f"{where}: `{command}` must start with .venv/bin/python -m (a bare `python` is not the venv's)"
    )
    env = {**os.environ, "PYTHONPATH": REPO}
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # each CLI decides by itself
    env.pop("FLASHIO_GPU", None)
    proc = subprocess.run(
        [sys.executable, *words[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    module, sub = words[2], words[3] if len(words) > 3 else ""
    needs_gpu = module == "gpu_kernels" and sub in GPU_COMMANDS and "--simulate" not in words
    if module == "gpu_kernels" and sub == "import-run":
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "incoming/RUN" in proc.stderr and "not a folder" in proc.stderr, proc.stderr
    elif needs_gpu:
        assert proc.returncode == 2 and proc.stderr.startswith(NO_GPU), (where, command, proc.stderr)
        assert proc.stderr.count("\n") == 1 and proc.stdout == "", proc.stderr
    else:
        assert proc.returncode == 0, f"{where}: `{command}` exited {proc.returncode}: {proc.stderr[-2000:]}"
        assert proc.stdout.strip(), f"{where}: `{command}` printed nothing"
