"""Subcommands that moved up to the evidence package, still reachable by their old names.

`python -m simlib figure2` and `python -m simlib claims` compare the model with the paper and the
H200's runs, and `python -m gpu_kernels model-vs-ncu` the physical model with a recorded profile: they
live in `evidence` now (`python -m evidence figure2|claims|model-vs-ncu`). The old spellings keep
working: `forward` runs the same arguments through `python -m evidence` in a process of its own and
passes on its output and exit status, so neither simlib nor gpu_kernels imports the package above them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

#: simlib subcommand -> the package whose command line runs it now.
MOVED = {"figure2": "evidence", "claims": "evidence"}


def forward(package: str, argv: Sequence[str]) -> int:
    """Run `python -m <package> <argv>`; write its stdout and stderr to ours; return its exit status."""
    sys.stdout.flush()
    done = subprocess.run(
        [sys.executable, "-m", package, *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode
