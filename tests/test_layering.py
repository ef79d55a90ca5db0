"""The import order of the packages, and no import cycle (issue 25).

    simlib  <  measurements  <  gpu_kernels  <  evidence  <  course

A module may import only from its own package or one to its left. Every import counts, the ones
inside functions too (gpu_kernels imports numba lazily, never to hide a cycle): over all of them the
module graph has no cycle. Importing the model loads nothing above it.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ORDER = ("simlib", "measurements", "gpu_kernels", "evidence", "course")


def module_of(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_of(p): p for package in ORDER for p in sorted((ROOT / package).rglob("*.py"))}


def imports_of(module, path):
    """(line, imported module) for every import statement of `module`, relative ones resolved;
    `from package import name` is the submodule package.name when there is one."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.append((node.lineno, sub if sub in MODULES else base))
    return [(line, name) for line, name in found if name.split(".")[0] in ORDER]


GRAPH = {m: sorted({name for _, name in imports_of(m, p) if name in MODULES}) for m, p in MODULES.items()}


def test_every_package_of_the_order_exists_and_the_modules_were_found():
    assert {m.split(".")[0] for m in MODULES} == set(ORDER)
    assert "simlib.counts" in GRAPH and "evidence.figure2" in GRAPH and "course.charts" in GRAPH


@pytest.mark.parametrize("package", ORDER)
def test_no_arrow_points_up(package):
    rank = ORDER.index(package)
    up = [
        f"{MODULES[m].relative_to(ROOT)}:{line} imports {name}"
        for m, path in MODULES.items()
        if m.split(".")[0] == package
        for line, name in imports_of(m, path)
        if ORDER.index(name.split(".")[0]) > rank
    ]
    assert not up, up


def find_cycle(graph):
    """One cycle of `graph` as a list of nodes (first == last), or None (depth-first, iterative)."""
    state = dict.fromkeys(graph, 0)  # 0 new, 1 on the stack, 2 done
    for start in graph:
        if state[start]:
            continue
        stack = [(start, iter(graph[start]))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state[child] == 1:
                path = [n for n, _ in stack]
                return path[path.index(child) :] + [child]
            elif state[child] == 0:
                state[child] = 1
                stack.append((child, iter(graph[child])))
    return None


def test_the_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"], "d": []}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b"], "b": [], "c": ["a", "b"]}) is None


def test_no_import_cycle_even_through_imports_inside_functions():
    assert find_cycle(GRAPH) is None, " -> ".join(find_cycle(GRAPH))


def test_importing_the_model_loads_nothing_above_it():
    core = sorted(m for m in MODULES if m.split(".")[0] == "simlib" and not m.endswith("__main__"))
    code = (
        "import importlib, sys\n"
        f"for name in {core!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {ORDER[1:]!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout
