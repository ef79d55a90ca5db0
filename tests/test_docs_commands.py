"""Every command in a command block of README.md and docs/*.md runs as written (issue 26: `python -m
gpu_kernels compare` failed for want of --out; bare `python -m` fails outside the venv).

A block is a fenced ```sh / ```bash / ```shell block; a backslash joins lines and `#` starts a comment.
`make TARGET` lines must name a Makefile target (`make -n` dry run: `make lab` would start a server and
`make test` is this suite). Every other line must start with `.venv/bin/python -m` and is run with this
interpreter from a scratch folder (so `--csv out.csv` writes there): exit 0, or, for a command that
needs a GPU, the one-line no-GPU answer and exit 2. Placeholders are filled in: DIR is a fresh folder;
RUN, in `import-run data/measurements/incoming/RUN`, stands for a device run's folder, so that command
must answer in one line that the folder is not there (tests/test_manifest.py files real ones).
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_helpers import REPO

ROOT = Path(REPO)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.S | re.M)
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
    assert len(COMMANDS) >= 20, COMMANDS  # README's blocks: make targets, simlib, evidence, gpu_kernels


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
