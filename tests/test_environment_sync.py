"""environment.yml and pyproject.toml must list the same dependencies with the same bounds."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _norm(spec):
    name, bounds = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", spec).groups()
    return name.lower().replace("_", "-"), bounds.replace(" ", "")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_norm(s) for s in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted |= {_norm(s) for s in extra}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    listed = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            listed |= {_norm(s) for s in dep["pip"]}
        elif not dep.startswith(("python", "pip")):
            listed.add(_norm(dep))
    assert listed == wanted


def test_gpu_compile_path_imports_with_the_installed_numpy():
    """numba-cuda's array lowering (the module every kernel compile for a real GPU goes through)
    imports with this numpy. numba-cuda 0.30 registers `np.row_stack` there at import time, which
    numpy 2.5 removed: every CPU test would still pass on the simulator, but no kernel would compile
    on the GPU. Imported in a fresh process with the simulator off, as a GPU run does."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    p = subprocess.run(
        [sys.executable, "-c", "import numba.cuda.np.arrayobj"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, f"numba.cuda.np.arrayobj does not import with this numpy:\n{p.stderr[-1500:]}"
