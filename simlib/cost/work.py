"""What one kernel launch does, unit by unit: the workload × mapping half of the cost model.

A `Launch` is one kernel of an implementation (naive attention is three, FlashAttention one) with
its `Work`: the counts each unit of the GPU has to serve, and the launch's geometry (blocks,
threads, registers, shared memory), from which occupancy follows. The hardware half
(`simlib.cost.rates`) turns each count into seconds and joules; `simlib.cost.model` combines
them. Nothing here knows a rate or a joule.

Units (what each count is):

========================  ===========================================================================
dram_bytes                bytes read from and written to DRAM, after the L2 served what it could
l2_bytes                  bytes the SMs requested from the L2 (32-byte sectors × 32, loads and stores;
                          the DRAM bytes pass through it too)
global_path               how the launch moves its global bytes: "ld" (4-byte loads), "ld.v4" (16-byte
                          LDG.128) or "cp.async" (16-byte copies into shared memory): the L2 price
shared_wavefronts         shared-memory wavefronts (one 128-byte bank cycle each, after conflicts)
shared_instructions       warp-level shared-memory instructions (LDS, STS, LDSM)
register_bytes            operand bytes the FMA and MMA units read from the register file (reported;
                          their energy is inside the per-FLOP figures, measured with register operands)
tensor_flops              FLOPs on the tensor cores: through mma.sync (m16n8k16), or with
tensor_unit "wgmma"       Hopper's warpgroup MMA (wgmma.mma_async, operands from shared memory),
                          at its own rate; tensor_flops_per_instruction: FLOPs per warp instruction
gemm_flops, gemm_unit     FLOPs of a library GEMM (cuBLAS), priced as a whole GEMM ("gemm16", "sgemm")
ffma                      thread-level FFMA instructions (2 FLOPs each)
mufu                      thread-level special-function operations (exp2: one per score, and the
                          rescales of the online softmax)
instructions              warp instructions issued, of every class
other_price               the price of the warp instructions no other figure covers: "other_instruction"
                          (IMAD on toggling operands) or "toggle_free_instruction" (the numba fp32
                          kernels' address arithmetic, loop counters, compares and uniform-pipe work)
shared_words              0, or (round 7, the numba fp32 kernels) the mean distinct 4-byte words a
                          shared-memory warp instruction moves, from the kernel source's access
                          pattern: 1 a broadcast, 32 lane-distinct; its instructions are then priced
                          between the random-data broadcast and lane-distinct LDS.32 figures
========================  ===========================================================================

Worked number: a launch of 2 blocks of 128 threads has 8 warps; `Work(ffma=64)` is 2 FFMA warp
instructions:

>>> w = Work(ffma=64, instructions=10)
>>> w.ffma_instructions, Launch("demo", "demo", w, blocks=2, threads=128).warps
(2.0, 8)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

WARP = 32


@dataclass(frozen=True)
class Work:
    """Counts of one launch, per unit (see the module docstring). All default to zero."""

    dram_bytes: float = 0.0
    l2_bytes: float = 0.0
    global_path: str = "ld"
    shared_wavefronts: float = 0.0
    shared_instructions: float = 0.0
    register_bytes: float = 0.0
    tensor_flops: float = 0.0
    tensor_unit: str = "mma"
    tensor_flops_per_instruction: float = 4096.0
    gemm_flops: float = 0.0
    gemm_unit: str = ""
    ffma: float = 0.0
    mufu: float = 0.0
    instructions: float = 0.0
    other_price: str = "other_instruction"
    shared_words: float = 0.0

    @property
    def ffma_instructions(self) -> float:
        return self.ffma / WARP

    @property
    def mufu_instructions(self) -> float:
        return self.mufu / WARP

    @property
    def tensor_instructions(self) -> float:
        """mma.sync m16n8k16: 2·16·8·16 = 4096 FLOPs per warp instruction (a wgmma m64nNk16: each of
        the warpgroup's 4 warps issues it, 2·64·N·16 / 4 = 512·N FLOPs per warp instruction)."""
        return self.tensor_flops / self.tensor_flops_per_instruction

    def scaled(self, factor: float) -> Work:
        """Every count × `factor` (a fraction of the launch, e.g. the tiles a causal mask keeps)."""
        keep = {
            "global_path",
            "gemm_unit",
            "tensor_unit",
            "tensor_flops_per_instruction",
            "other_price",
            "shared_words",
        }
        return replace(
            self, **{f.name: getattr(self, f.name) * factor for f in fields(self) if f.name not in keep}
        )

    def as_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


@dataclass(frozen=True)
class Launch:
    """One kernel launch: its name in the implementation, the class whose calibration it uses
    (instruction coefficients and achieved fraction of its roof, `simlib.cost.fit`), its work and
    its geometry. `serial` names units whose times add rather than overlap (FlashAttention-2's
    matmuls and its exponentials, which one warp issues in turn: FlashAttention-3, §3.1);
    `cta_work` the CTAs' relative works when they differ (a causal mask), for the wave model."""

    name: str
    klass: str
    work: Work
    blocks: int = 0
    threads: int = 0
    registers: int | None = None
    shared_bytes: int = 0
    serial: tuple[str, ...] = ()
    #: relative work of each CTA in launch order (simlib.cost.schedule.causal_cta_work); empty: all equal
    cta_work: tuple[float, ...] = ()
    #: the fraction of its threads' loop trips that carry data (1: every trip full), for a launch whose
    #: time is set by trips per thread rather than by its counts (simlib.cost.softmax_trips)
    trip_fill: float = 1.0
    #: rows of a row kernel whose class has a fixed cost per row (`t_row`, the fp16 block softmax: round 7)
    rows: float = 0.0
    note: str = ""
    detail: dict = field(default_factory=dict)

    @property
    def warps(self) -> int:
        return self.blocks * -(-self.threads // WARP)


@dataclass(frozen=True)
class Grid:
    """A launch's grid: blocks, threads per block, shared memory per block (bytes)."""

    blocks: int
    threads: int
    shared_bytes: int

    def launch(self, name: str, klass: str, work: Work, **fields) -> Launch:
        return Launch(
            name,
            klass,
            work,
            blocks=self.blocks,
            threads=self.threads,
            shared_bytes=self.shared_bytes,
            **fields,
        )
