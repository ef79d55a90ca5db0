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
