"""What `roofline` and `energy` read of a `count()` result: `Counted`, the base class of `simlib.counts.Result`.

They take a Result and refuse anything else (a TypeError naming it), yet cannot import `counts`:
`Result.energy()` calls `energy`, which calls `roofline`. So the type they check lives here, below all
three (counts → energy → roofline → counted), and `Result` is its only subclass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from .workload import Workload


class Counted(ABC):
    """Exact traffic and FLOPs of one algorithm on one workload (implemented by `simlib.counts.Result`)."""

    workload: Workload

    @property
    @abstractmethod
    def flops(self) -> int: ...

    @property
    @abstractmethod
    def hbm_bytes(self) -> int: ...

    @property
    @abstractmethod
    def sram_bytes_moved(self) -> int: ...

    @abstractmethod
    def table(self) -> pd.DataFrame: ...
