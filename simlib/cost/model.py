"""Time and energy of a launch, and of an implementation (a sequence of launches).

Per launch, each unit's time is its work over its rate (`CostHardware.rate`):

    t_dram = DRAM bytes / copy bandwidth     t_l2 = L2 bytes / L2 bandwidth
    t_shared = wavefronts / (1 per clock per SM)      t_issue = warp instructions / issue rate
    t_ffma, t_tensor, t_mufu, t_gemm = operations / their measured rate

and the launch takes

    t = t_launch + max(t_dram, t_l2, t_shared, t_issue, t_ffma, t_gemm, t_tensor ⊕ t_mufu) × q / (η·f)
          + ⌈blocks / resident blocks⌉ × t_block

where ⊕ is + for launches whose matmuls and exponentials one warp issues in turn (FlashAttention-2
kernels: `Launch.serial`) and max otherwise; q is the busiest SM's time over the even share of the blocks'
work (`simlib.cost.schedule`: ⌈blocks/SMs⌉·SMs/blocks for one wave of equal blocks; under a causal
mask the blocks' unequal works list-scheduled in launch order; since round 9, for equal-work launches,
a class's `lone` share: a CTA alone on its SM in the last wave at more than 1/resident of it,
`Calibration.lone_rate`); η is the fraction of its binding roof the launch class
reached in the committed timings, and t_block (FlashAttention-type kernels) the time each generation
of resident blocks spends loading its Q tile, filling its pipeline and writing O (both
`simlib.cost.calibration`); f (`Launch.trip_fill`, 1 unless set) the fraction of a row kernel's loop
trips that carry data (`simlib.cost.softmax_trips`: PyTorch's block softmax at N not a multiple of its trip);
the fp16 block softmax instead pays a fixed cost per row, rows × t_row, beside its per-element roof (round 7). The binding roof is named, with its
margin over the next one. A sequence takes the sum of its launches (a kernel sequence is never
one roofline: each launch is bound by its own roof).

Energy: every count × its price (`CostHardware.price`), plus the static power × the predicted time:

    E = DRAM·e_dram + (L2 − DRAM)·e_L2 + shared instructions·e_si + wavefronts·128·e_sb
        + tensor FLOPs·e_tc + FFMAs·e_ffma + MUFU·e_mufu + other instructions·e_other
        + GEMM FLOPs·e_gemm + P_static·t

(e_other: `Work.other_price`, the IMAD figure, or for the numba fp32 kernels the toggle-free one.)

(a GEMM's L2, shared-memory and instruction energy is inside its whole-GEMM figure).

Worked number: a launch that only streams 4.2 GB through DRAM at 4.2 TB/s (η = 1, no grid) takes
1 ms + t_launch (3 µs), and costs 4.2e9 × 119.5 pJ = 0.502 J plus 141.2 W × 1.003 ms = 0.142 J:

>>> from simlib.cost.calibration import Calibration
>>> from simlib.cost.rates import load_cost_hardware
>>> from simlib.cost.work import Launch, Work
>>> c = launch_cost(Launch("copy", "x", Work(dram_bytes=4.2e9)), load_cost_hardware("h200"), Calibration({}))
>>> c.bound, round(c.time_s * 1e3, 3), round(c.energy_j, 3)
('dram', 1.003, 0.644)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from .calibration import Calibration
from .common import resident_blocks
from .rates import CostHardware
from .schedule import equal_work_q, launch_q
from .work import WARP, Launch

#: Units in the order they are printed, and their labels.
UNITS = {
    "dram": "DRAM",
    "l2": "L2",
    "shared": "shared memory",
    "issue": "instruction issue",
    "ffma": "FP32 FMA",
    "tensor": "tensor cores",
    "mufu": "exp (MUFU)",
    "gemm": "library GEMM",
}
#: Energy terms in the order they are printed.
TERMS = ("dram", "l2", "shared", "tensor", "ffma", "mufu", "other_instructions", "gemm", "static")
L2_PRICE = {"ld": "l2_byte", "ld.v4": "l2_byte_v4", "cp.async": "cp_async_byte"}


@dataclass(frozen=True)
class LaunchCost:
    launch: Launch
    unit_s: dict[str, float]
    roof_s: float
    bound: str
    margin: float  # binding roof time / the next one
    waves: float
    quantization: float
    eta: float
    block_s: float
    time_s: float
    energy_terms: dict[str, float] = field(default_factory=dict)

    @property
    def energy_j(self) -> float:
        return sum(self.energy_terms.values())

    def as_dict(self) -> dict:
        return {
            "launch": self.launch.name,
            "class": self.launch.klass,
            "time_ms": self.time_s * 1e3,
            "bound": self.bound,
            "bound_margin": self.margin,
            "eta": self.eta,
            "waves": self.waves,
            "block_latency_ms": self.block_s * 1e3,
            "unit_ms": {k: v * 1e3 for k, v in self.unit_s.items()},
            "energy_j": self.energy_j,
            "energy_by_unit_j": dict(self.energy_terms),
            "work": self.launch.work.as_dict(),
            "blocks": self.launch.blocks,
            "threads": self.launch.threads,
            "registers": self.launch.registers,
            "shared_bytes": self.launch.shared_bytes,
        }


def unit_times(launch: Launch, hw: CostHardware) -> dict[str, float]:
    w = launch.work
    r = hw.rate
    return {
        "dram": w.dram_bytes / r["dram_bytes"],
        "l2": w.l2_bytes / r["l2_bytes"],
        "shared": w.shared_wavefronts / r["shared_wavefronts"],
        "issue": w.instructions / r["issue"],
        "ffma": w.ffma / r["ffma"],
        "tensor": w.tensor_flops / r["wgmma_flops" if w.tensor_unit == "wgmma" else "tensor_flops"],
        "mufu": w.mufu / r["mufu"],
        "gemm": w.gemm_flops / r[w.gemm_unit] if w.gemm_flops else 0.0,
    }


def roof(launch: Launch, unit_s: dict[str, float]) -> tuple[float, str, float]:
    """(binding time, its name, its margin over the next roof)."""
    roofs = {k: v for k, v in unit_s.items() if k not in launch.serial}
    if launch.serial:
        roofs[" + ".join(launch.serial)] = sum(unit_s[u] for u in launch.serial)
    ordered = sorted(roofs.items(), key=lambda kv: -kv[1])
    top, second = ordered[0], ordered[1] if len(ordered) > 1 else (None, 0.0)
    return top[1], top[0], (top[1] / second[1] if second[1] else math.inf)


#: Warps per SM at or below which a launch is latency-bound: with at most 2 warps per scheduler an
#: SM issues in proportion to its warps (docs: the readable kernel, 8 warps per SM, issues on 35 %
#: of cycles), so a wave with fewer blocks per SM than the full residency runs slower per block.
LATENCY_WARPS = 8


def waves(launch: Launch, hw: CostHardware, lone: float | None = None) -> tuple[float, float]:
    """(waves, quantization factor q) of a launch with a known grid; (0, 1) otherwise.

    Blocks go out `resident` at a time per SM (occupancy), in launch order, to the SMs with free
    slots (`simlib.cost.schedule`); q is the busiest SM's time over the even share Σ work / SMs.
    Blocks of equal work: in a wave of b blocks the busiest SM holds ⌈b / SMs⌉ of them and shares
    its units among them, so the wave takes ⌈b / SMs⌉ blocks' worth of one SM (1.03 for 2048 blocks
    on 132 SMs; 132/128 for 128 blocks, one per SM). A latency-bound launch (at most LATENCY_WARPS
    warps per SM when full) issues in proportion to its warps: each slot runs at 1/resident of the SM
    whatever its neighbours do, so a wave counts `resident` blocks' worth. Blocks of unequal work
    (`Launch.cta_work`: a causal mask) are list-scheduled in launch order (`schedule.launch_q`).
    `lone` (round 9, `Calibration.lone_rate`): the share of its SM a CTA of a latency-rule class reaches
    alone there, so a last wave of at most one CTA per SM runs faster than 1/resident each; equal-work
    launches only (in the causal list schedule it would move the committed short causal torch flash rows
    out of ±20 %, docs/COST.md round 9: not applied there)."""
    if not launch.blocks or not launch.threads:
        return 0.0, 1.0
    per_sm = resident_blocks(launch.threads, launch.registers, launch.shared_bytes, 1)[0]
    n = launch.blocks / (per_sm * hw.sms)
    shared = per_sm * -(-launch.threads // WARP) > LATENCY_WARPS
    work = launch.cta_work
    if work and min(work) != max(work):
        if len(work) != launch.blocks:
            raise ValueError(f"{launch.name}: cta_work has {len(work)} entries for {launch.blocks} blocks")
        return n, _launch_q(work, hw.sms, per_sm, shared)
    return n, equal_work_q(launch.blocks, hw.sms, per_sm, shared, lone)


@functools.lru_cache(maxsize=256)
def _launch_q(work: tuple[float, ...], sms: int, resident: int, shared: bool, fixed: float = 0.0) -> float:
    return launch_q(work, sms, resident, shared, fixed)


def unequal_block_time(launch: Launch, hw: CostHardware, roof_eta_s: float, t_block: float) -> float | None:
    """Under a causal mask (`Launch.cta_work` unequal): the seconds the blocks' fixed costs add, each
    CTA's t_block inside the list schedule (a light CTA pays it too, and a slot that runs many light
    CTAs pays it many times), rather than once per generation of resident blocks; None otherwise.
    `roof_eta_s`: the launch's roof time over eta (its work spread evenly over the SMs)."""
    work = launch.cta_work
    if not work or min(work) == max(work) or not t_block or not roof_eta_s:
        return None
    per_sm = resident_blocks(launch.threads, launch.registers, launch.shared_bytes, 1)[0]
    shared = per_sm * -(-launch.threads // WARP) > LATENCY_WARPS
    unit_s = roof_eta_s / (sum(work) / hw.sms)  # seconds per unit of work on one SM
    with_fixed = _launch_q(work, hw.sms, per_sm, shared, t_block / unit_s)
    without = _launch_q(work, hw.sms, per_sm, shared)
    return (with_fixed - without) * roof_eta_s


def shared_energy(w, p: dict[str, float]) -> float:
    """pJ of a launch's shared-memory instructions. Default: the energy run's conflict-free LDS.32 and
    LDS.128 on random data, split into a price per instruction and per wavefront byte. With
    `Work.shared_words` (the numba fp32 kernels, round 7): each instruction at the random-data LDS.32 figure
    of its access kind, linear in its distinct words between a broadcast (1 word, lds_bcast_rand) and a
    lane-distinct load (32 words, lds_lane_rand; run cost7-units-20261204), each wavefront past the first
    (bank conflicts) at the wavefront's byte price. Worked number: 100 instructions of 16.5 words, 150
    wavefronts: 100 · (646.4 + 213.6 · 15.5/31) + 50 · 128 · 3.786 pJ ≈ 99,550 pJ.

    >>> from simlib.cost.work import Work
    >>> p = {"lds_broadcast_random_instruction": 646.4, "lds_lane_random_instruction": 860.0, "shared_byte": 3.786}
    >>> round(shared_energy(Work(shared_instructions=100, shared_wavefronts=150, shared_words=16.5), p))
    99550
    """
    if not w.shared_words:
        return w.shared_instructions * p["shared_instruction"] + 128 * w.shared_wavefronts * p["shared_byte"]
    bcast, lane = p["lds_broadcast_random_instruction"], p["lds_lane_random_instruction"]
    per = bcast + (lane - bcast) * (min(max(w.shared_words, 1.0), 32.0) - 1) / 31
    extra = max(w.shared_wavefronts - w.shared_instructions, 0.0)
    return w.shared_instructions * per + 128 * extra * p["shared_byte"]


def energy_terms(launch: Launch, hw: CostHardware, time_s: float) -> dict[str, float]:
    w, p = launch.work, hw.price
    pj = 1e-12
    terms = dict.fromkeys(TERMS, 0.0)
    terms["dram"] = w.dram_bytes * p["dram_byte"] * pj
    terms["static"] = hw.static_w * time_s
    if w.gemm_flops:
        terms["gemm"] = w.gemm_flops * p[f"{w.gemm_unit}_flop"] * pj
        return terms
    terms["l2"] = max(w.l2_bytes - w.dram_bytes, 0.0) * p[L2_PRICE[w.global_path]] * pj
    terms["shared"] = shared_energy(w, p) * pj
    terms["tensor"] = w.tensor_flops * p["tensor_flop"] * pj
    terms["ffma"] = w.ffma * p["ffma"] * pj
    terms["mufu"] = w.mufu_instructions * p["mufu_instruction"] * pj
    width = {"ld": 4, "ld.v4": 16, "cp.async": 16}[w.global_path]
    global_inst = w.l2_bytes / (WARP * width)
    other = (
        w.instructions
        - w.shared_instructions
        - w.ffma_instructions
        - w.mufu_instructions
        - w.tensor_instructions
    )
    terms["other_instructions"] = max(other - global_inst, 0.0) * p[w.other_price] * pj
    return terms


def launch_cost(launch: Launch, hw: CostHardware, cal: Calibration) -> LaunchCost:
    unit_s = unit_times(launch, hw)
    roof_s, bound, margin = roof(launch, unit_s)
    lone = cal.lone_rate(launch.klass)
    n, q = waves(launch, hw, lone)
    eta = cal.eta(launch.klass)
    t_block = cal.block_latency(launch.klass)
    block_s = math.ceil(n) * t_block if n else 0.0
    causal_s = unequal_block_time(launch, hw, roof_s / (eta * launch.trip_fill), t_block)
    if causal_s is not None:
        block_s = causal_s
    if launch.rows:  # a row kernel's fixed cost per row (the fp16 block softmax, round 7)
        block_s += launch.rows * cal.row_latency(launch.klass)
    time_s = hw.rate["launch_s"] + roof_s * q / (eta * launch.trip_fill) + block_s
    return LaunchCost(
        launch, unit_s, roof_s, bound, margin, n, q, eta, block_s, time_s, energy_terms(launch, hw, time_s)
    )
