"""docs/ARCHITECTURE.md names every module of every package, and nothing that is not there.

Each package's section (`## <package>: ...`) has a table whose first column holds its modules
(`name.py`) and subpackages (`name/`); together they must be the package's own files and folders.
A subpackage's row names each of its modules as `name.py` in its second column, and only those.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
PACKAGES = ("simlib", "measurements", "gpu_kernels", "evidence", "course")


def documented(package):
    """The backticked names in the first column of the package's section table."""
    section = re.search(rf"^## {package}:.*?(?=^## |\Z)", DOC, re.S | re.M)
    assert section, f"docs/ARCHITECTURE.md has no '## {package}:' section"
    names = set()
    for row in re.findall(r"^\| (.+?) \|", section.group(0), re.M):
        names |= set(re.findall(r"`([\w/.]+)`", row))
    return names


def on_disk(package):
    folder = ROOT / package
    modules = {p.name for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    subpackages = {f"{p.name}/" for p in folder.iterdir() if (p / "__init__.py").is_file()}
    return modules | subpackages


@pytest.mark.parametrize("package", PACKAGES)
def test_the_architecture_page_lists_exactly_the_package_modules(package):
    doc, disk = documented(package), on_disk(package)
    assert not disk - doc, f"{package}: on disk but not in docs/ARCHITECTURE.md: {sorted(disk - doc)}"
    assert not doc - disk, f"{package}: in docs/ARCHITECTURE.md but not on disk: {sorted(doc - disk)}"


def subpackages():
    return [
        (package, p.name)
        for package in PACKAGES
        for p in sorted((ROOT / package).iterdir())
        if (p / "__init__.py").is_file()
    ]


def row_of(package, sub):
    """The second column of the package table's row whose first column names `sub/`."""
    section = re.search(rf"^## {package}:.*?(?=^## |\Z)", DOC, re.S | re.M).group(0)
    rows = [r for r in re.findall(r"^\| (.+?) \|(.*)$", section, re.M) if f"`{sub}/`" in r[0]]
    assert len(rows) == 1, f"{package}: one table row names `{sub}/`; found {len(rows)}"
    return rows[0][1]


@pytest.mark.parametrize(("package", "sub"), subpackages())
def test_each_subpackage_row_names_exactly_its_modules(package, sub):
    """Inside a subpackage too (kernels/decode_tc.py, tensor_core/flash_tile.py, ...): its row names
    every module as `name.py`, and every `name.py` it names is there."""
    folder = ROOT / package / sub
    disk = {p.name for p in folder.glob("*.py") if p.name != "__init__.py"}
    doc = {Path(n).name for n in re.findall(r"`([\w/]+\.py)`", row_of(package, sub))} - {"__init__.py"}
    assert not disk - doc, f"{package}/{sub}: not in its row of docs/ARCHITECTURE.md: {sorted(disk - doc)}"
    assert not doc - disk, f"{package}/{sub}: in its row but not on disk: {sorted(doc - disk)}"
