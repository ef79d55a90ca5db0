"""docs/ARCHITECTURE.md names every module of every package, and nothing that is not there.

Each package's section (`## <package>: ...`) has a table whose first column holds its modules
(`name.py`) and subpackages (`name/`); together they must be the package's own files and folders.
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
