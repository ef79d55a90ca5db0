"""The types every schedule module fills in: `Parameter`, `Mapping` and `Schedule`.

The registry's docstring (simlib/schedules/__init__.py) says what a schedule module provides; this
module holds the types and the checks shared by all of them, so that `count()`, the CLI and
`Result` need to know nothing about any one schedule.

>>> BLOCK = Parameter("block_rows", "Br: query rows per block")
>>> BLOCK.flag, BLOCK.check(128, "fa2")
('--block-rows', 128)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from .traffic import Event, Traffic
from .workload import Workload, check_positive_int

#: What a parameter may hold once checked (None: not given, the schedule's default applies).
ParamValue = int | bool | str | tuple[int, int] | None

KINDS = ("int", "bool", "pair", "choice")


class DoesNotFit(ValueError):
    """Tiles (or a thread grid) whose on-chip working set exceeds the SRAM or the register file.

    A ValueError like every refusal; a sweep marks such a configuration infeasible instead of
    stopping."""


SRAM_USES = ("sizes", "checks", "unused")


@dataclass(frozen=True)
class Parameter:
    """One explicit mapping parameter: its `count()` keyword, one line of help, and its kind.

    - "int": a positive integer (numpy integers accepted, bools refused);
    - "bool": True or False only;
    - "pair": two positive integers, e.g. (32, 8) (CLI: 32x8);
    - "choice": one of `choices`.
    """

    name: str
    help: str
    kind: str = "int"
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")

    @property
    def flag(self) -> str:
        """The CLI flag: --name with dashes."""
        return "--" + self.name.replace("_", "-")

    def check(self, value: object, algorithm: str) -> ParamValue:
        """The value, validated (ValueError naming the parameter); None stays None."""
        if value is None:
            return None
        if self.kind == "int":
            return check_positive_int(self.name, value)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{self.name} must be True or False, got {value!r}")
            return value
        if self.kind == "choice":
            if value not in self.choices:
                raise ValueError(
                    f"{self.name} of {algorithm} must be one of {', '.join(self.choices)}, got {value!r}"
                )
            return str(value)
        if not (isinstance(value, (tuple, list)) and len(value) == 2):
            raise ValueError(f"{self.name} must be a pair of positive integers, got {value!r}")
        first, second = value
        return (check_positive_int(f"{self.name}[0]", first), check_positive_int(f"{self.name}[1]", second))


class Mapping(Protocol):
    """How a schedule's loop nest is laid onto the hardware (tiles, threads, splits, ...)."""

    def as_dict(self) -> dict[str, ParamValue]:
        """The mapping's parameters as flat fields (keys of `Result.to_dict()` and CSV columns)."""
        ...

    def summary(self) -> str:
        """One line for the CLI's text output, e.g. 'tiles: Br=64 Bc=384 Tr=64 Tc=11'."""
        ...


@dataclass(frozen=True)
class WorkingSet:
    """What one thread block holds on chip at once: (what, level, bytes) per buffer.

    Levels are "SRAM" (shared memory, checked against the SRAM size) and "registers" (checked per
    thread when `threads`, the threads of the block that hold them, is known: at most the preset's
    registers per thread (255 on compute capability 9.0) × 4 B each; else against the register file
    per SM).

    >>> ws = WorkingSet((("Q_i", "SRAM", 16384), ("K_j, V_j", "SRAM", 32768), ("S/P (fp32)", "registers", 65536)))
    >>> ws.bytes("SRAM"), ws.describe("SRAM")
    (49152, 'Q_i 16,384 B + K_j, V_j 32,768 B')
    """

    items: tuple[tuple[str, str, int], ...]
    note: str = ""
    threads: int | None = None

    def bytes(self, level: str) -> int:
        return sum(n for _, lv, n in self.items if lv == level)

    def describe(self, level: str) -> str:
        return " + ".join(f"{what} {n:,} B" for what, lv, n in self.items if lv == level)

    def as_dict(self) -> dict[str, ParamValue]:
        return {"onchip_sram_bytes": self.bytes("SRAM"), "onchip_register_bytes": self.bytes("registers")}


@dataclass(frozen=True)
class Schedule:
    """One schedule: its parameters, how it builds its mapping, and how it counts.

    - `build(workload, sram_bytes, **params)`: the validated mapping; `params` holds every name in
      `parameters`, already checked by `Parameter.check` (None where not given).
    - `sram`: "sizes" (SRAM sets the default tiles), "checks" (SRAM only checks explicit tiles) or
      "unused" (an SRAM size is refused).
    - `trace(workload, mapping)`: Events per unit of work, walking the loop nest.
    - `closed_form(workload, mapping)`: the same Traffic from formulas (exact Python ints).
    - `flops(workload, mapping)`: matmul FLOPs performed per unit; `units(workload)`: how many units.
    - `trace_size(workload, mapping)`: (longest array, total array entries) the trace would
      allocate and walk, so that `count()` can refuse a trace too large before starting it.
    - `working_set(workload, mapping)` (optional): the `WorkingSet` one thread block holds on chip,
      which `count()` checks against the SRAM size and the preset's register file: tiles the user
      gave that do not fit are refused; tiles a published rule chose are reported with how far they
      overshoot (`Result.sram_overshoot_bytes`), not changed.
    """

    name: str
    description: str
    parameters: tuple[Parameter, ...]
    sram: str
    build: Callable[..., Any]
    trace: Callable[[Workload, Any], Iterable[Event]]
    closed_form: Callable[[Workload, Any], Traffic]
    flops: Callable[[Workload, Any], int]
    units: Callable[[Workload], int]
    trace_size: Callable[[Workload, Any], tuple[int, int]]
    working_set: Callable[[Workload, Any], WorkingSet] | None = None

    def __post_init__(self) -> None:
        if self.sram not in SRAM_USES:
            raise ValueError(f"sram must be one of {', '.join(SRAM_USES)}, got {self.sram!r}")

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)
