"""One configuration from the command line's flags, evaluated: what `count`, `sweep` and `energy` share.

`evaluate` runs count() and adds the bounds and (with a preset) the roofline and the decode waves, as
one flat row: the JSON of `count --json`, a row of `sweep`'s table. `workload_of` and `options_of` turn
the parsed flags into a Workload and the schedule's keywords.
"""

from __future__ import annotations

import argparse
from typing import Any

from .bounds import compulsory_bytes, saha_ye_bytes
from .counts import Result, all_parameters, count, schedule_of
from .decode_time import split_k_time
from .hardware import Hardware
from .roofline import roofline
from .workload import Workload


def sram_source(schedule_sram: str, sram: int | None, hardware: Hardware | None) -> str | None:
    """Where the SRAM size came from: --sram wins over the preset's shared memory per block."""
    if schedule_sram == "unused":
        return None
    if sram is not None:
        return "--sram" + (f" (not {hardware.key}'s {hardware.sram_bytes:,} B)" if hardware else "")
    return f"{hardware.key} preset (shared memory per block)" if hardware is not None else None


def evaluate(
    algorithm: str,
    workload: Workload,
    sram: int | None,
    hardware: Hardware | None,
    options: dict[str, object],
    trace: bool,
) -> tuple[Result, dict[str, Any]]:
    """count() plus bounds and (with a preset) the roofline, as one flat dict."""
    schedule = schedule_of(algorithm)
    used = None if schedule.sram == "unused" else sram
    result = count(
        algorithm,
        workload,
        sram_bytes=used,
        hardware=hardware,
        method="trace" if trace else "closed",
        **options,
    )
    row = result.to_dict()
    if not schedule.sram_traffic_modelled:  # flash_bwd: HBM only; its 0 B of SRAM means "not counted"
        row["sram_read_bytes"] = row["sram_write_bytes"] = None
    row["sram_source"] = sram_source(schedule.sram, sram, hardware)
    row["compulsory_hbm_bytes"] = compulsory_bytes(workload)
    row["saha_ye_bytes_asymptotic"] = (
        saha_ye_bytes(workload, result.sram_bytes) if result.sram_bytes else None
    )
    if hardware:
        roof = roofline(result, hardware)
        row.update(
            gpu=hardware.key,
            roofline_s=roof.time_s,
            compute_s=roof.compute_s,
            hbm_s=roof.level_s.get("HBM"),
            sram_s=roof.level_s.get("SRAM"),
            bound=roof.bound,
            arithmetic_intensity=roof.arithmetic_intensity,
            ridge_point=roof.ridge_point,
        )
        if algorithm == "decode":  # the stream needs enough thread blocks: simlib.decode_time
            splits = options.get("splits")
            waves = split_k_time(workload, hardware, splits if isinstance(splits, int) else 1, used)
            row.update(
                decode_ctas=waves.ctas, decode_waves=waves.waves, decode_time_with_waves_s=waves.time_s
            )
    return result, row


def options_of(args: argparse.Namespace, algorithm: str, only_applicable: bool) -> dict[str, object]:
    """The schedule keywords from the flags; with `only_applicable`, those the algorithm takes."""
    schedule = schedule_of(algorithm)
    names = all_parameters()
    return {
        name: getattr(args, name)
        for name in names
        if not only_applicable or schedule.parameter(name) is not None
    }


def workload_of(args: argparse.Namespace) -> Workload:
    return Workload(
        args.seq_len,
        args.head_dim,
        args.batch,
        args.heads,
        args.dtype,
        kv_heads=args.kv_heads,
        causal=args.causal,
        query_len=args.query_len,
    )
