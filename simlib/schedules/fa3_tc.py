"""FlashAttention forward on Hopper's warpgroup MMA, as the kernel `fa3_tc` runs it
(gpu_kernels/kernels/fa3_tc.py).

HBM: fa2_tc's loop nest exactly (Q_i read once, K_j and V_j once per visited tile, O_i in the dtype
and L_i in fp32 written once; a ragged block moves only its valid rows; causal: a Q block visits the
K/V blocks up to its last valid row's reach). SRAM: a block of G warpgroups owns Br = 64·G query
rows; a wgmma reads its shared-memory operands once per warpgroup, so the warpgroup is to fa3_tc
what the warp is to fa2_tc, with Q re-read for every tile (S = Q K_jᵀ takes both operands from shared
memory) and no fragment load:

    per Q block:     Q lands (writes Br·d)
    per tile (i, j): K_j, V_j land (writes 2·Bc·d); every warpgroup reads its 64 rows of Q and all of
                     K_j for S (G·(64 + Bc)·d) and all of V_j for O += P V_j (G·Bc·d)

That is fa2_tc's closed form with W = G "warps" of R = 64 rows and q_reload: this schedule is that
one with the warpgroup mapping (``Fa3Mapping``). K/V are double-buffered in shared memory (4·Bc·d).
Per score: 2·G·d/Br + d/Bc = d/32 + d/Bc reads, against fa2_tc's default 2d/32 (+ d/Bc at d = 128).
Defaults (the kernel's, measured best on the H200, run 20261202T051703Z-1ff3899ea4): G = 2, the 128-byte
swizzle; d = 64: Bc = 64, no pipeline; d = 128: Bc = 128 with the pipeline and the two warpgroups'
ping-pong (run fa3-v6-pingpong-20261203; the order moves no byte: the same counts).
Worked number (N = 4096, d = 64, G = 1, Bc = 64, Tr = Tc = 64): SRAM reads Tr·Tc·(64 + 2·64)·64 =
4096·12,288 = 50,331,648 elements; fa2_tc's default (Br = 128, Bc = 64, Q in registers, Tr = 32)
reads 262,144 + 2048·(2·4·64·64) = 67,371,008.
"""

from collections.abc import Iterator
from dataclasses import dataclass

from ..schedule_protocol import Parameter, ParamValue, Schedule, WorkingSet
from ..tiling import BLOCK_COLS, Tiling, tile_trace_size
from ..traffic import Event, Traffic
from ..workload import Workload
from . import fa2_tc
from .fa2_tc import TcMapping, check_tensor_core_workload

GROUP_ROWS = 64  # query rows per warpgroup (the M of a wgmma)
DEFAULT_WARPGROUPS = 2  # the kernel's defaults (gpu_kernels/kernels/fa3_tc.py), measured best in run 3
DEFAULT_BLOCK_COLS = {64: 64, 128: 128}
MAX_BLOCK_COLS = 256
DYNAMIC_SHARED_LIMIT = 227 * 1024
DEFAULT_OVERLAP = {64: False, 128: True}
DEFAULT_SWIZZLE = True
DEFAULT_PINGPONG = {64: False, 128: True}  # with G = 2 only (two groups take turns)
OVERLAP = Parameter(
    "overlap",
    "FA3's pipeline: S(j+1) on the tensor cores during softmax(j) (default: at d = 128)",
    kind="bool",
)
SWIZZLE = Parameter(
    "swizzle",
    "tiles in the 128-byte-swizzled layout, not padded chunk-major (default on; same counts)",
    kind="bool",
)
PINGPONG = Parameter(
    "pingpong",
    "FA3's ping-pong: the two warpgroups take turns issuing their wgmma on named barriers "
    "(default: at d = 128 with 2 warpgroups; same counts)",
    kind="bool",
)
WARPGROUPS = Parameter(
    "warpgroups", "G: consumer warpgroups per block, 1, 2 or 3 (64 query rows each; default 2)"
)


def tile_problem(
    head_dim: int,
    warpgroups: int,
    block_cols: int,
    overlap: bool = False,
    swizzle: bool = False,
    pingpong: bool = False,
) -> str | None:
    """What the kernel's Fa3Config refuses, in its words (None: a config it runs)."""
    g, bc, d = warpgroups, block_cols, head_dim
    if g not in (1, 2, 3):
        return f"warpgroups must be one of (1, 2, 3); got {g!r}"
    if pingpong and g != 2:
        return f"pingpong needs warpgroups=2 (two consumer groups take turns); got {g!r}"
    if bc % 16 or not 16 <= bc <= MAX_BLOCK_COLS:
        return f"block_cols must be a multiple of 16 (one wgmma k-step of O += P V) up to {MAX_BLOCK_COLS}; got {bc!r}"
    if (bc * d // 8) % (128 * g):
        return f"block_cols={bc}: the {bc}x{d} K/V tiles must split into 16-byte copies evenly over {128 * g} threads"
    tiles = 5 if overlap else 4  # K/V buffers: 2 + 2, or 2 + 3 with the pipeline
    pad = 0 if swizzle else tiles + 1  # chunk-major: each tile padded by one row's worth
    smem = (GROUP_ROWS * g + tiles * bc + pad) * d * 2
    if smem > DYNAMIC_SHARED_LIMIT:
        return f"block_cols={bc}, warpgroups={g}, head_dim={d} need {smem} bytes of shared memory; at most {DYNAMIC_SHARED_LIMIT}"
    return None


@dataclass(frozen=True)
class Fa3Mapping(TcMapping):
    """fa2_tc's mapping with warpgroups for warps: R = 64 rows each, Q re-read per tile; with
    `overlap` (FA3's pipeline) one more S product per Q block, thrown away."""

    overlap: bool = False
    swizzle: bool = False
    pingpong: bool = False

    @property
    def warpgroups(self) -> int:
        return self.warps

    def as_dict(self) -> dict[str, ParamValue]:
        return {
            **Tiling.as_dict(self),
            "warpgroups": self.warpgroups,
            "overlap": self.overlap,
            "swizzle": self.swizzle,
            "pingpong": self.pingpong,
        }

    def summary(self) -> str:
        ov = "; S(j+1) overlapped with softmax(j)" if self.overlap else ""
        pp = "; the two warpgroups ping-pong" if self.pingpong else ""
        return f"{Tiling.summary(self)}; {self.warpgroups} warpgroup(s) of 64 query rows; Q read from SRAM per tile{ov}{pp}"


def build(
    workload: Workload,
    sram_bytes: int | None,
    warpgroups: int | None = None,
    block_cols: int | None = None,
    overlap: bool | None = None,
    swizzle: bool | None = None,
    pingpong: bool | None = None,
) -> Fa3Mapping:
    check_tensor_core_workload(workload, "fa3_tc")
    g = DEFAULT_WARPGROUPS if warpgroups is None else warpgroups
    bc = DEFAULT_BLOCK_COLS[workload.head_dim] if block_cols is None else block_cols
    ov = DEFAULT_OVERLAP[workload.head_dim] if overlap is None else bool(overlap)
    sw = DEFAULT_SWIZZLE if swizzle is None else bool(swizzle)
    pp = (DEFAULT_PINGPONG[workload.head_dim] and g == 2) if pingpong is None else bool(pingpong)
    problem = tile_problem(workload.head_dim, g, bc, ov, sw, pp)
    if problem:
        raise ValueError(problem)
    return Fa3Mapping(
        GROUP_ROWS * g,
        bc,
        workload.nq,
        workload.nk,
        warp_rows=GROUP_ROWS,
        q_reload=True,
        overlap=ov,
        swizzle=sw,
        pingpong=pp,
    )


def _extra_s(mapping: Fa3Mapping, d: int, blocks: int) -> list[tuple[str, str, str, str, int]]:
    """The pipeline's thrown-away S of `blocks` Q blocks: its wgmma read Q and K once more."""
    if not mapping.overlap:
        return []
    return [
        ("SRAM", "read", "Q", "scores", blocks * mapping.block_rows * d),
        ("SRAM", "read", "K", "scores", blocks * mapping.warpgroups * mapping.block_cols * d),
    ]


def trace(workload: Workload, mapping: Fa3Mapping) -> Iterator[Event]:
    yield from fa2_tc.trace(workload, mapping)
    for _ in range(mapping.tr):
        for level, op, tensor, phase, n in _extra_s(mapping, workload.head_dim, 1):
            yield Event(level, op, tensor, phase, n)


def closed_form(workload: Workload, mapping: Fa3Mapping) -> Traffic:
    t = fa2_tc.closed_form(workload, mapping)
    for level, op, tensor, phase, n in _extra_s(mapping, workload.head_dim, mapping.tr):
        t.add(level, op, tensor, phase, n)
    return t


def flops(workload: Workload, mapping: Fa3Mapping) -> int:
    """fa2_tc's (4·d per computed score, padding included), plus the thrown-away S with `overlap`."""
    extra = (
        2 * mapping.tr * mapping.block_rows * mapping.block_cols * workload.head_dim if mapping.overlap else 0
    )
    return fa2_tc.flops(workload, mapping) + extra


def working_set(workload: Workload, mapping: Fa3Mapping) -> WorkingSet:
    """Qs and two buffers each of Ks, Vs (three of V with the pipeline) in shared memory (the dtype;
    chunk-major tiles carry 16 bytes of padding per 8 columns, swizzled ones none); S/P and O in fp32
    registers, P packed in the dtype. d = 64, G = 1, Bc = 64, chunk-major: 41,600 B of SRAM (swizzled
    40,960); 16,384 + 16,384 + 8,192 B of registers."""
    br, bc, d, eb = mapping.block_rows, mapping.block_cols, workload.head_dim, workload.element_bytes
    pad = 0 if mapping.swizzle else 1
    return WorkingSet(
        (
            ("Q_i", "SRAM", (br + pad) * d * eb),
            (
                "K_j, V_j (two buffers each; three of V with overlap)",
                "SRAM",
                (5 if mapping.overlap else 4) * (bc + pad) * d * eb,
            ),
            ("S/P (fp32)", "registers", br * bc * 4),
            ("O_i (fp32)", "registers", br * d * 4),
            ("P (the dtype)", "registers", br * bc * eb),
        ),
        threads=128 * mapping.warpgroups,
    )


SCHEDULE = Schedule(
    name="fa3_tc",
    description="FlashAttention forward on Hopper's wgmma (fp16/bf16) as the kernel `fa3_tc` runs it",
    parameters=(WARPGROUPS, BLOCK_COLS, OVERLAP, SWIZZLE, PINGPONG),
    sram="checks",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=fa2_tc.units,
    trace_size=tile_trace_size,
    working_set=working_set,
)
