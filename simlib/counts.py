"""`count()`: one call from (algorithm, workload, SRAM or explicit parameters) to exact traffic.

Nothing here knows any one schedule: the schedule's module (simlib/schedules/<name>.py) says which
parameters it takes, builds its mapping and counts; `Result` serialises whatever mapping it built.

>>> r = count("fa1", Workload(seq_len=4096, head_dim=64), sram_bytes="192KiB")
>>> r.block_rows, r.block_cols, r.hbm_read_bytes, r.hbm_write_bytes     # README's worked example
(64, 384, 12943360, 6684672)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from .counted import Counted
from .energy import Energy, energy
from .fa2_tile_rule import arch_of
from .hardware import Hardware
from .schedule_protocol import DoesNotFit, Mapping, Parameter, ParamValue, Schedule, WorkingSet
from .schedules import SCHEDULES
from .tiling import PAPER_RULE
from .traffic import Traffic
from .units import parse_size
from .workload import Workload

ALGORITHMS = tuple(SCHEDULES)
#: The fields every Result.to_dict() has, None where the mapping has no such thing.
TILE_FIELDS = ("block_rows", "block_cols", "tr", "tc")
#: A trace allocates arrays of at most this many entries (one per tile of a vectorised loop) ...
TRACE_MAX_ARRAY = 2**22
#: ... and walks at most this many entries in all (about a minute of numpy); beyond, refused.
TRACE_MAX_ENTRIES = 2**28
#: Per-event element counts of a trace are summed in int64; refused if N_q·N_k·d could overflow it.
TRACE_MAX_SCORE_ELEMENTS = 2**58


def schedule_of(algorithm: object) -> Schedule:
    """The registered schedule called `algorithm`; ValueError listing the names otherwise."""
    if not isinstance(algorithm, str) or algorithm not in SCHEDULES:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    return SCHEDULES[algorithm]


def all_parameters() -> dict[str, Parameter]:
    """Every parameter name any schedule takes (one definition per name), in registry order."""
    found: dict[str, Parameter] = {}
    for schedule in SCHEDULES.values():
        for p in schedule.parameters:
            if found.setdefault(p.name, p) != p:
                raise TypeError(f"parameter {p.name!r} of {schedule.name} differs from another schedule's")
    return found


@dataclass(frozen=True)
class Result(Counted):
    """Exact traffic of one algorithm on one workload. Byte totals are over all B·H heads."""

    algorithm: str
    workload: Workload
    sram_bytes: int | None  # the SRAM size the schedule used (None: not given or not used)
    mapping: Mapping  # the schedule's own mapping (tiles, threads, splits, ...)
    traffic: Traffic  # per unit of work (batch·head), in elements
    working_set: WorkingSet | None = None  # what one thread block holds on chip (None: not modelled)
    sram_overshoot_bytes: int | None = None  # bytes the paper's tile rule needs beyond sram_bytes
    register_overshoot_bytes: int | None = None  # ... beyond the registers per thread (or per SM)

    @property
    def schedule(self) -> Schedule:
        return SCHEDULES[self.algorithm]

    @property
    def units(self) -> int:
        """Independent units of work the per-unit traffic is multiplied by (B·H, or B·kv_heads)."""
        return self.schedule.units(self.workload)

    def _bytes(self, level: str, op: str | None = None) -> int:
        return self.traffic.bytes(self.workload.element_bytes, level, op) * self.units

    @property
    def hbm_read_bytes(self) -> int:
        return self._bytes("HBM", "read")

    @property
    def hbm_write_bytes(self) -> int:
        return self._bytes("HBM", "write")

    @property
    def hbm_bytes(self) -> int:
        return self._bytes("HBM")

    @property
    def sram_read_bytes(self) -> int:
        return self._bytes("SRAM", "read")

    @property
    def sram_write_bytes(self) -> int:
        return self._bytes("SRAM", "write")

    @property
    def sram_bytes_moved(self) -> int:
        return self._bytes("SRAM")

    @property
    def flops(self) -> int:
        """Matmul FLOPs the schedule performs (masked scores inside visited tiles included)."""
        return self.schedule.flops(self.workload, self.mapping) * self.units

    @property
    def useful_flops(self) -> int:
        """4·d per unmasked score, over all heads: what the forward pass needs, exactly."""
        return self.workload.flops

    def mapping_fields(self) -> dict[str, ParamValue]:
        """The tile fields (None where absent) and the mapping's own fields."""
        return {**dict.fromkeys(TILE_FIELDS), **self.mapping.as_dict()}

    def _tile(self, name: str) -> int | None:
        value = self.mapping_fields()[name]
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def block_rows(self) -> int | None:
        return self._tile("block_rows")

    @property
    def block_cols(self) -> int | None:
        return self._tile("block_cols")

    @property
    def tr(self) -> int | None:
        return self._tile("tr")

    @property
    def tc(self) -> int | None:
        return self._tile("tc")

    def table(self) -> pd.DataFrame:
        """Per (level, op, tensor, phase) elements and bytes, over all B·H heads, as a DataFrame."""
        return self.traffic.frame(self.workload.element_bytes, scale=self.units)

    def energy(self, hardware: Any = "h200", **options: Any) -> Energy:
        """Joules of this result on `hardware` (a preset key): simlib.energy.energy, per level."""
        return energy(self, hardware, **options)

    def to_dict(self) -> dict[str, Any]:
        w = self.workload
        return {
            "algorithm": self.algorithm,
            "seq_len": w.seq_len,
            "head_dim": w.head_dim,
            "batch": w.batch,
            "heads": w.heads,
            "kv_heads": w.n_kv_heads,
            "query_len": w.nq,
            "causal": w.causal,
            "dtype": w.dtype,
            "sram_bytes": self.sram_bytes,
            **self.mapping_fields(),
            "onchip_sram_bytes": self.working_set.bytes("SRAM") if self.working_set else None,
            "onchip_register_bytes": self.working_set.bytes("registers") if self.working_set else None,
            "sram_overshoot_bytes": self.sram_overshoot_bytes,
            "register_overshoot_bytes": self.register_overshoot_bytes,
            "hbm_read_bytes": self.hbm_read_bytes,
            "hbm_write_bytes": self.hbm_write_bytes,
            "hbm_bytes": self.hbm_bytes,
            "sram_read_bytes": self.sram_read_bytes,
            "sram_write_bytes": self.sram_write_bytes,
            "flops": self.flops,
            "useful_flops": self.useful_flops,
        }


def build_mapping(
    schedule: Schedule, workload: Workload, sram_bytes: int | None, params: dict[str, object]
) -> Mapping:
    """Check every given parameter against the schedule's list and kind, then build its mapping."""
    known = all_parameters()
    for name, value in params.items():
        if name not in known:
            raise TypeError(f"count() got an unexpected keyword argument {name!r}")
        if value is not None and schedule.parameter(name) is None:
            takes = ", ".join(p.name for p in schedule.parameters) or "none"
            raise ValueError(f"{name} does not apply to {schedule.name} (it takes: {takes})")
    checked = {p.name: p.check(params.get(p.name), schedule.name) for p in schedule.parameters}
    mapping: Mapping = schedule.build(workload, sram_bytes, **checked)
    return mapping


def check_onchip(
    schedule: Schedule, workload: Workload, mapping: Mapping, sram: int | None, hardware: Hardware | None
) -> tuple[WorkingSet | None, int | None, int | None]:
    """(working set, SRAM overshoot, register overshoot). Tiles the user (or a kernel's table) chose
    that do not fit are refused, naming them with the bytes needed and available; tiles the paper's
    rule chose are kept as the paper counts them, with how far they overshoot."""
    if schedule.working_set is None:
        return None, None, None
    ws = schedule.working_set(workload, mapping)
    fields = mapping.as_dict()
    chosen_by_paper = fields.get("tile_rule") == PAPER_RULE
    given = (
        ", ".join(
            f"{p.name}={fields[p.name]}"
            for p in schedule.parameters
            if p.kind in ("int", "pair") and fields.get(p.name) is not None
        )
        or "its tiles"
    )
    per_thread = bool(ws.threads and hardware and hardware.max_registers_per_thread)
    if per_thread:  # registers per thread: the compiler's limit (255 on CC 9.0) × 4 B × the block's threads
        assert hardware is not None and hardware.max_registers_per_thread is not None and ws.threads
        limit = hardware.max_registers_per_thread
        register_capacity: int | None = limit * 4 * ws.threads
        holds_registers = (
            f"{hardware.key}'s {limit} registers per thread hold {{:,}} B for {ws.threads} threads "
            f"({-(-ws.bytes('registers') // (4 * ws.threads)):,} registers per thread needed)"
        )
    else:
        register_capacity = hardware.register_file_bytes if hardware else None
        holds_registers = f"{hardware.key if hardware else ''}'s register file holds {{:,}} B per SM"
    capacities = (
        ("SRAM", sram, "sram_bytes holds {:,} B"),
        ("registers", register_capacity, holds_registers),
    )
    overshoots: list[int | None] = []
    for level, capacity, holds in capacities:
        need = ws.bytes(level)
        if capacity is None or need <= capacity:
            overshoots.append(None)
        elif chosen_by_paper:
            overshoots.append(need - capacity)
        else:
            raise DoesNotFit(
                f"{given}: {schedule.name} needs {need:,} B of {level} per thread block "
                f"({ws.describe(level)}), {holds.format(capacity)}"
            )
    return ws, overshoots[0], overshoots[1]


def check_traceable(schedule: Schedule, workload: Workload, mapping: Mapping) -> None:
    """Refuse, before it starts, a trace that would allocate or walk too much (or overflow int64)."""
    longest, entries = schedule.trace_size(workload, mapping)
    if workload.nq * workload.nk * workload.head_dim > TRACE_MAX_SCORE_ELEMENTS:
        raise ValueError(
            f"method='trace' (--trace): seq_len={workload.seq_len} is too large to trace "
            f"(N_q·N_k·d over 2**58 elements); use the closed form"
        )
    if longest > TRACE_MAX_ARRAY or entries > TRACE_MAX_ENTRIES:
        raise ValueError(
            f"method='trace' (--trace): {schedule.name} on seq_len={workload.seq_len} would walk "
            f"{entries:,} tiles (arrays of {longest:,}); the limit is {TRACE_MAX_ENTRIES:,} "
            f"(arrays of {TRACE_MAX_ARRAY:,}): use the closed form or larger blocks"
        )


def count(
    algorithm: str,
    workload: Workload,
    *,
    sram_bytes: int | str | None = None,
    hardware: Hardware | None = None,
    method: str = "closed",
    **params: object,
) -> Result:
    """Exact HBM and SRAM traffic of `algorithm` on `workload`.

    `sram_bytes` (int or a size such as "192KiB") sets the default tiles of the schedules that size
    them from SRAM (fa1, fa2, flash_bwd, decode) and checks explicit tiles of those that only check
    (naive's matmul tile, fa2_fast); a schedule that uses no SRAM (unfused) refuses it. Each schedule
    takes its own keyword parameters (`SCHEDULES[name].parameters`: block_rows/block_cols for the
    tiled ones, matmul_tile/softmax_threads for naive, splits for decode, dropout for unfused,
    threads for fa2_fast); one that does not apply is refused by name. `method="trace"` walks the
    loop nest instead of evaluating the closed form (the two are equal; the tests prove it).

    `hardware` (a preset from `load_preset`) supplies what the schedule needs of the GPU: its SRAM
    per block when `sram_bytes` is not given (a given `sram_bytes` wins), the architecture of the
    FA2 kernel's tile table, and the register file the on-chip working set is checked against.
    Explicit tiles that do not fit are refused (ValueError with the bytes needed and available);
    tiles the paper's rule chose are kept and `Result.sram_overshoot_bytes` says by how much they
    exceed the SRAM size.

    >>> r = count("fa2", Workload(seq_len=4096, head_dim=64), sram_bytes="192KiB")
    >>> r.block_rows, r.block_cols, r.mapping.rule, r.hbm_read_bytes      # FA2's tiles: Nd(1 + 2N/Br)·2 B
    (128, 128, 'fa2', 34078720)
    >>> r = count("fa2", Workload(seq_len=4096, head_dim=64), sram_bytes="192KiB", tile_rule="fa1")
    >>> r.block_rows, r.block_cols, r.hbm_read_bytes      # the paper's rule: Tr = 64
    (64, 384, 67633152)
    """
    schedule = schedule_of(algorithm)
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a simlib.Workload, got {type(workload).__name__}")
    if method not in ("closed", "trace"):
        raise ValueError(f"method must be 'closed' or 'trace', got {method!r}")
    if hardware is not None and not isinstance(hardware, Hardware):
        raise TypeError(f"hardware must be a simlib Hardware (e.g. load_preset('h200')), got {hardware!r}")
    sram = None if sram_bytes is None else parse_size(sram_bytes, "sram_bytes")
    if sram is not None and schedule.sram == "unused":
        raise ValueError(f"sram_bytes does not apply to {algorithm} (it uses no shared-memory tiles)")
    if hardware is not None:
        if sram is None and schedule.sram != "unused":
            sram = hardware.sram_bytes
        if schedule.parameter("arch") is not None and params.get("arch") is None:
            params["arch"] = arch_of(hardware.compute_capability)
    mapping = build_mapping(schedule, workload, sram, params)
    working_set, sram_over, register_over = check_onchip(schedule, workload, mapping, sram, hardware)
    if method == "closed":
        traffic = schedule.closed_form(workload, mapping)
    else:
        check_traceable(schedule, workload, mapping)
        traffic = Traffic.from_events(schedule.trace(workload, mapping))
    return Result(algorithm, workload, sram, mapping, traffic, working_set, sram_over, register_over)
