"""The cost model: every kernel's time and energy, predicted from its shape (issue 21).

Workload (`simlib.Workload`), hardware (`hardware`: measured rates and pJ per unit) and mapping (each
implementation's tiles, warps, registers: `implementations`) are separate inputs, as in
Timeloop/Accelergy. `predict(name, workload)` builds the implementation's launches (`work`), prices
each unit (`model`: per-unit times, the binding roof, the launch time; energy = work × pJ + static
power × time) and sums the sequence. `python -m simlib predict --implementation NAME ...`.
"""

from .implementations import IMPLEMENTATIONS, implementation
from .model import LaunchCost, launch_cost
from .predict import Prediction, predict
from .rates import CostHardware, load_cost_hardware
from .work import Launch, Work

__all__ = [
    "IMPLEMENTATIONS",
    "CostHardware",
    "Launch",
    "LaunchCost",
    "Prediction",
    "Work",
    "implementation",
    "launch_cost",
    "load_cost_hardware",
    "predict",
]
