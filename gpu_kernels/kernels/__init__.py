"""The attention kernels, one file each, and `KERNELS`: the one registry of them.

`naive` (Algorithm 0, three launches), `tiled` (readable FlashAttention-2), `fast` (register-tiled
FlashAttention-2), all fp32 on CUDA cores; `naive_tc`, `fa2_tc`, `fa3_tc` (Hopper's wgmma) and `decode_tc` (flash-decoding) in
fp16/bf16 on tensor cores. Each
entry says which simlib schedule counts the kernel (its counters must equal that schedule's `count()`
to the byte), which dtypes it runs, its mapping parameters (named as the schedule's), its physical
model (simlib.physical, by the kernel's name), where the simulator twins of its inline-PTX helpers
are, and, for the 16-bit kernels, its compile-time config class. `python -m gpu_kernels run`, the
prediction of a run (`gpu_kernels.prediction`) and the profiler's counting builds read it.

**Adding a kernel** (docs/ARCHITECTURE.md, tests/test_kernel_registry.py does it with a toy): write
`gpu_kernels/kernels/<name>.py` with `plan_<name>(q, k, v, *, counting=False, causal=False, **mapping)`
and `run_<name>(q, k, v, *, count=False, causal=False, **mapping)`, whose result has `.o` (and `.lse`
where the kernel writes it) and `.counts` (the four byte counters), and add one `Kernel(...)` line
below. Importing this package imports no kernel, nor numba: a kernel's module loads on first use.

>>> KERNELS["tiled"].schedule, KERNELS["fa2_tc"].dtypes, KERNELS["naive"].physical_launches
('fa2', ('bf16', 'fp16'), ('qk', 'softmax', 'pv'))
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from simlib import Workload, count
from simlib.physical.launches import KERNEL_LAUNCHES
from simlib.units import TENSOR_CORE_DTYPES

from ..counting import COUNT_KEYS

FP32 = ("fp32",)
SIXTEEN_BIT = TENSOR_CORE_DTYPES
WARP_OPS = "gpu_kernels.tensor_core.warp_ops"
#: A schedule parameter whose config field has another name or sense: parameter -> (field, value of it).
CONFIG_FIELDS = {"q_reload": ("q_in_regs", lambda reload: not reload)}


@dataclass(frozen=True)
class Kernel:
    name: str
    schedule: str  # the simlib schedule whose count() the kernel's counters equal
    dtypes: tuple[str, ...]  # the input dtypes it runs, the default first
    parameters: tuple[str, ...] = ()  # its mapping parameters, named as the schedule's
    twins: str | None = None  # the module of its inline-PTX helpers and their simulator twins
    config: str | None = None  # 16-bit kernels: the compile-time config class in its module
    tolerance_u: int = 0  # 16-bit kernels: O's error limit in unit roundoffs of the dtype (its roundings)
    in_run_command: bool = True  # offered by `python -m gpu_kernels run`
    run_parameters: tuple[str, ...] = ()  # mapping parameters the runner takes beside its config
    module: str = ""  # default gpu_kernels.kernels.<name>

    @property
    def module_name(self) -> str:
        return self.module or f"{__name__}.{self.name}"

    @property
    def physical_launches(self) -> tuple[str, ...]:
        """The launches simlib.physical predicts for it (empty: no physical model)."""
        return tuple(KERNEL_LAUNCHES.get(self.name, ()))

    @property
    def sixteen_bit(self) -> bool:
        return self.dtypes != FP32

    def load(self) -> ModuleType:
        return importlib.import_module(self.module_name)

    def plan(self, q, k, v, **options):
        return getattr(self.load(), f"plan_{self.name}")(q, k, v, **options)

    def config_for(self, head_dim: int, **mapping):
        """A 16-bit kernel's checked compile-time config from its mapping, named as the schedule's
        parameters (CONFIG_FIELDS translates the ones the config names otherwise); ValueError naming a
        bad one."""
        fields = {}
        for name, value in mapping.items():
            if name in self.run_parameters:
                continue
            field, convert = CONFIG_FIELDS.get(name, (name, lambda x: x))
            fields[field] = convert(value)
        return getattr(self.load(), self.config)(head_dim, **fields).check()

    def run(self, q, k, v, *, count=False, causal=False, dtype=None, config=None, **mapping):
        """Run on host arrays: a 16-bit kernel in `dtype` with `config` (or one built from `mapping`);
        an fp32 kernel with its mapping as keywords."""
        runner = getattr(self.load(), f"run_{self.name}")
        if self.config is None:
            return runner(q, k, v, count=count, causal=causal, **mapping)
        config = config if config is not None else self.config_for(q.shape[-1], **mapping)
        extra = {name: mapping[name] for name in self.run_parameters if name in mapping}
        return runner(
            q, k, v, dtype=dtype or self.dtypes[0], config=config, count=count, causal=causal, **extra
        )

    def counts(self, workload: Workload, **mapping) -> dict[str, int]:
        """simlib's four byte counts (totals over B·H) of this kernel on `workload`, from the mapping
        parameters it takes (others are ignored; None: the schedule's default)."""
        given = {p: mapping[p] for p in self.parameters if p in mapping}
        result = count(self.schedule, workload, **given)
        return {key: int(getattr(result, key)) for key in COUNT_KEYS}


KERNELS: dict[str, Kernel] = {
    k.name: k
    for k in (
        Kernel("naive", "naive", FP32, ("matmul_tile", "softmax_threads")),
        Kernel("tiled", "fa2", FP32, ("block_rows", "block_cols")),
        Kernel("fast", "fa2_fast", FP32, twins=f"{__name__}.fast", in_run_command=False),
        Kernel(
            "fa2_tc",
            "fa2_tc",
            SIXTEEN_BIT,
            ("warps", "block_cols", "warp_rows", "q_reload", "kv_stages"),
            WARP_OPS,
            "TcConfig",
            tolerance_u=2,  # O rounded once to the dtype, P too (about 0.6 u seen)
        ),
        Kernel(
            "fa3_tc",
            "fa3_tc",
            SIXTEEN_BIT,
            ("warpgroups", "block_cols", "overlap", "swizzle", "pingpong"),
            "gpu_kernels.tensor_core.wgmma_ops",
            "Fa3Config",
            tolerance_u=2,  # O rounded once to the dtype, P too (as fa2_tc)
        ),
        Kernel(
            "naive_tc",
            "naive_tc",
            SIXTEEN_BIT,
            ("warps", "block_cols", "softmax_threads"),
            WARP_OPS,
            "NaiveTcConfig",
            tolerance_u=4,  # S, P and O each rounded to the dtype
        ),
        Kernel(
            "decode_tc",
            "decode_tc",
            SIXTEEN_BIT,
            ("warps", "block_cols", "stages", "splits", "tail"),
            WARP_OPS,
            "DecodeConfig",
            tolerance_u=2,  # O rounded once to the dtype, P too
            run_parameters=("splits",),  # how the cache is split is the launch's, not the compiled kernel's
        ),
    )
}


def kernel(name: str) -> Kernel:
    """The registered kernel `name`; ValueError listing the names otherwise."""
    if name not in KERNELS:
        raise ValueError(f"unknown kernel {name!r}; choose from {', '.join(KERNELS)}")
    return KERNELS[name]
