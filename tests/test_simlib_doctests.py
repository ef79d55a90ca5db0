"""Every worked number in the docstrings of simlib, measurements and evidence is an executed doctest.

(simlib.physical, simlib.kernel_layout, the course and the claims' modules of evidence are run by their
owners' tests.)
"""

import doctest
import importlib
import pkgutil

import pytest

import evidence
import measurements
import simlib

SKIP = (
    "simlib.physical",
    "simlib.kernel_layout",
    "simlib.__main__",
    "evidence.__main__",
    *(f"evidence.{name}" for name in ("claims", "intensity", "paper", "readers", "verdicts")),
)
#: The model core's modules, each with at least one executed worked number; other modules'
#: doctests run too but may have none.
CORE = {
    "simlib",
    "simlib.bounds",
    "simlib.cli_values",
    "simlib.command_line",
    "simlib.counts",
    "simlib.fa2_tile_rule",
    "simlib.hardware",
    "simlib.kvcache",
    "simlib.presets",
    "simlib.roofline",
    "simlib.safe_write",
    "simlib.schedule_protocol",
    "simlib.schedules",
    "simlib.tiling",
    "simlib.traffic",
    "simlib.units",
    "simlib.workload",
    "evidence.figure2",
    "evidence.numbers",
} | {
    f"simlib.schedules.{name}"
    for name in (
        "decode",
        "fa1",
        "fa2",
        "fa2_fast",
        "flash_bwd",
        "naive",
        "naive_bwd",
        "unfused",
        "unfused_bwd",
        "visits",
    )
}
MODULES = ["simlib"] + sorted(
    m.name
    for package in (simlib, measurements, evidence)
    for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
    if not m.name.startswith(SKIP)
)


def test_the_core_modules_are_found():
    assert CORE - {"simlib"} <= set(MODULES)
    assert "measurements.manifest" in MODULES and "evidence.energy_check" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if name in CORE:
        assert result.attempted > 0, f"{name} has no executed worked number"
