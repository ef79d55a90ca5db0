"""The registry of schedules: every name `count()` and the CLI accept, and nothing else.

A schedule is one module, `simlib/schedules/<name>.py`, that ends with

    SCHEDULE = Schedule(name=..., description=..., parameters=(...), sram=..., build=...,
                        trace=..., closed_form=..., flops=..., units=..., trace_size=...)

(`simlib.schedule_protocol`), and owns everything about itself:

- its **mapping**: a frozen dataclass with `as_dict()` (its parameters as flat fields: the keys
  `Result.to_dict()` and the sweep CSV show) and `summary()` (one line for the CLI's text output);
- `parameters`: the explicit `Parameter`s it accepts (name, one-line help, kind: "int", "bool",
  "pair" or "choice"). `count()` takes them as keywords and checks their kind; the CLI makes one
  flag per parameter name (`block_rows` → `--block-rows`) from the same objects, with the help;
- `sram`: "sizes" (the SRAM size sets its default tiles), "checks" (it only checks explicit tiles
  against it) or "unused" (an SRAM size is refused);
- `build(workload, sram_bytes, **parameters)`: the mapping, validated (ValueError naming the
  parameter); `trace(workload, mapping)`: Events per unit of work, walking the loop nest;
  `closed_form(workload, mapping)`: the same Traffic from formulas, in exact Python ints;
  `flops(workload, mapping)`: matmul FLOPs performed per unit; `units(workload)`: how many units
  (B·H, or B·kv_heads for decode); `trace_size(workload, mapping)`: (longest array, total entries)
  of the trace, so that `count()` refuses a trace too large before it starts.

Adding a schedule is that one file plus its name in `NAMES` below, one line (docs/COUNTING.md,
"Adding a schedule"); the module's name is the schedule's name.

>>> sorted(SCHEDULES)[:4]
['attention_ref', 'decode', 'decode_tc', 'fa1']
"""

from importlib import import_module

from ..schedule_protocol import Schedule

NAMES = (
    "naive",
    "fa1",
    "fa2",
    "fa2_fast",
    "fa2_tc",
    "fa3_tc",
    "naive_tc",
    "decode",
    "decode_tc",
    "naive_bwd",
    "flash_bwd",
    "unfused",
    "unfused_bwd",
    "attention_ref",
    "fa1_2022",
    "fa2_torch",
)


def _load(name: str) -> Schedule:
    schedule = import_module(f"{__name__}.{name}").SCHEDULE
    if not isinstance(schedule, Schedule) or schedule.name != name:
        raise ImportError(f"simlib/schedules/{name}.py must define SCHEDULE = Schedule(name={name!r}, ...)")
    return schedule


SCHEDULES: dict[str, Schedule] = {name: _load(name) for name in NAMES}
