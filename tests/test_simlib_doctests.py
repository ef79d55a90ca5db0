"""Every worked number in simlib's model-core docstrings is an executed doctest.

(simlib.physical, simlib.lectures and simlib.kernel_layout are run by their owners' tests.)
"""
import doctest
import importlib
import pkgutil

import pytest

import simlib

SKIP = ("simlib.physical", "simlib.lectures", "simlib.kernel_layout", "simlib.__main__")
# the CLI's numbers are checked by test_simlib_cli.py; the tensor-core schedules are helper D's
NO_WORKED_NUMBER = ("simlib.cli", "simlib.schedules.fa2_tc", "simlib.schedules.naive_tc")
MODULES = sorted(m.name for m in pkgutil.walk_packages(simlib.__path__, "simlib.")
                 if not m.name.startswith(SKIP))


def test_the_core_modules_are_found():
    assert {"simlib.counts", "simlib.tiling", "simlib.schedules.fa2", "simlib.cli"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if name not in NO_WORKED_NUMBER:
        assert result.attempted > 0, f"{name} has no executed worked number"
