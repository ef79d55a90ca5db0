"""Schedules: each module has `trace(workload, mapping)` (yields Events per batch·head) and
`closed_form(workload, mapping)` (the same Traffic from formulas)."""
from . import fa1, fa2, naive

SCHEDULES = {"naive": naive, "fa1": fa1, "fa2": fa2}
