"""The model core does not depend on the lecture helpers: importing simlib (and every core module)
leaves simlib.lectures unimported, and no core module imports it at module level (the command line
may load it inside the function of the `claims` subcommand)."""

import ast
import subprocess
import sys
from pathlib import Path

SIMLIB = Path(__file__).resolve().parent.parent / "simlib"


def test_importing_the_core_does_not_import_the_lectures():
    core = sorted(
        p.relative_to(SIMLIB.parent).with_suffix("").as_posix().replace("/", ".")
        for p in SIMLIB.rglob("*.py")
        if "lectures" not in p.parts and p.name not in ("__main__.py",)
    )
    code = (
        "import importlib, sys\n"
        f"for name in {core!r}:\n"
        "    importlib.import_module(name.removesuffix('.__init__'))\n"
        "print(sorted(m for m in sys.modules if m.startswith('simlib.lectures')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=SIMLIB.parent, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_no_core_module_imports_the_lectures():
    offenders = []
    for path in SIMLIB.rglob("*.py"):
        if "lectures" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        inside = {
            id(n)
            for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            for n in ast.walk(f)
        }
        for node in ast.walk(tree):
            if id(node) in inside:
                continue
            if isinstance(node, ast.ImportFrom):
                target = ("." * node.level) + (node.module or "")
                names = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any("lectures" in n.split(".") for n in names):
                offenders.append(f"{path.relative_to(SIMLIB.parent)}:{node.lineno}")
    assert not offenders, offenders
