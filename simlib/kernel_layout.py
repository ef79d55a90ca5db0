"""The numba kernels' layout rules, in one place (plain Python: no numba).

gpu_kernels compiles its kernels from these rules; simlib.physical predicts Nsight Compute's counters
from the same rules; simlib.schedules.fa2_fast counts the fast kernel's accesses with the same
shape. Nothing here is measured: each rule is a choice the kernels make, with the reason next to it.

* **Item size**: the kernels are fp32 only (the statistics ℓ, m and L too): 4 bytes per element.
* **Shared-memory limits**: 48 KiB of static shared memory per block without opting in (CUDA C++
  Programming Guide), 227 KiB of dynamic shared memory with the opt-in on compute capability 9.0.
* **Readable kernel** (``tiled``): Qs[Br][d + 4], Ks[Bc][d], Vs[Bc][d], Ss[Br][Bc + 1], padded
  only if the padded tiles fit in 48 KiB. Default blocks: the FlashAttention paper's for 48 KiB
  (``simlib.tiling.make_tiling``, the paper's Algorithm 1 rule).
* **Naive kernel**: a T×T matmul tile (As[T][T], Bs[T][T + 1]) and t softmax threads per row.
* **Fast kernel** (``fast``): ``FastConfig`` (micro-tile TM×TN, thread grid NTY×NTX, shared layout)
  and ``fast_default_config(d)``, the configuration the H200 tuning runs chose.

Worked number: the readable kernel's default blocks at d = 64 are 48×48 (M = 12,288 floats,
Bc = ⌈12288 / 256⌉ = 48, Br = min(48, 64)); padded they need (48·68 + 2·48·64 + 48·49)·4 = 47,040 B,
under 48 KiB, so the rows are padded:

>>> tiled_default_blocks(4096, 64), tiled_shared_bytes(48, 48, 64), tiled_layout(48, 48, 64)
((48, 48), 47040, (68, 49))
"""

from __future__ import annotations

from dataclasses import dataclass

from .tiling import make_tiling
from .units import DTYPE_BYTES, TENSOR_CORE_DTYPES
from .workload import Workload

#: Bytes per element: the kernels are fp32 only (ℓ, m, L are fp32 as well).
ITEM_BYTES = 4
#: Static shared memory one thread block may use without opting in to more (CUDA's 48 KiB).
STATIC_SHARED_LIMIT_BYTES = 48 * 1024
#: Most dynamic shared memory one block may use on compute capability 9.0, with the opt-in.
OPTIN_SHARED_LIMIT_BYTES = 227 * 1024
#: Threads per block on every CUDA GPU since compute capability 2.0.
MAX_THREADS_PER_BLOCK = 1024
#: Grid y and z dimensions are limited to 65535.
MAX_GRID_YZ = 65535
#: 64K 32-bit registers per SM (compute capability 9.0): a block of T threads gets at most 65536/T each.
REGISTERS_PER_SM = 65536


# --- readable kernel (gpu_kernels/kernels/tiled.py) ---------------------------------------------------------

#: Padding of a Qs row, in floats: keeps rows 16-byte aligned (so the compiler can read Q with
#: 16-byte LDS.128 loads) and puts the 8 rows read by a quarter-warp in 8 different bank groups.
TILED_Q_PAD = 4
#: Padding of an Ss row: an odd row stride puts the 32 rows a warp reads in 32 different banks.
TILED_S_PAD = 1


def tiled_contract_bytes(block_rows: int, block_cols: int, head_dim: int) -> int:
    """Shared memory of the readable kernel by the counting contract's formula (no padding):
    Qs, Ks, Vs and the S tile, (Br·d + 2·Bc·d + Br·Bc)·4 bytes.

    >>> tiled_contract_bytes(48, 48, 64)
    46080
    """
    br, bc, d = block_rows, block_cols, head_dim
    return (br * d + 2 * bc * d + br * bc) * ITEM_BYTES


def _padded_bytes(block_rows: int, block_cols: int, head_dim: int) -> int:
    br, bc, d = block_rows, block_cols, head_dim
    return (br * (d + TILED_Q_PAD) + 2 * bc * d + br * (bc + TILED_S_PAD)) * ITEM_BYTES


def tiled_pad(block_rows: int, block_cols: int, head_dim: int) -> int:
    """1 if the padded Qs and Ss rows still fit in 48 KiB, else 0 (no padding).

    Thread t reads row t of Qs and Ss. With a row length that is a multiple of 32 floats, all 32
    threads of a warp hit the same bank (a 32-way conflict). Ss rows get one float more (odd stride:
    each thread its own bank); Qs rows get four, because the compiler reads four consecutive Q floats
    with one 16-byte load only at a 16-byte aligned address: a quarter-warp's 8 rows then start 4 banks
    apart and cover all 32. Padding changes no count.

    >>> tiled_pad(48, 48, 64), tiled_pad(64, 64, 64)
    (1, 0)
    """
    return 1 if _padded_bytes(block_rows, block_cols, head_dim) <= STATIC_SHARED_LIMIT_BYTES else 0


def tiled_layout(block_rows: int, block_cols: int, head_dim: int) -> tuple[int, int]:
    """(Qs row stride, Ss row stride) in floats, padding included when it fits."""
    pad = tiled_pad(block_rows, block_cols, head_dim)
    return head_dim + TILED_Q_PAD * pad, block_cols + TILED_S_PAD * pad


def tiled_shared_bytes(block_rows: int, block_cols: int, head_dim: int) -> int:
    """Bytes of Qs, Ks, Vs and Ss as the kernel lays them out (Br = 128, Bc = 8, d = 64: 43,520 B).

    >>> tiled_shared_bytes(128, 8, 64)
    43520
    """
    qs_cols, ss_cols = tiled_layout(block_rows, block_cols, head_dim)
    return (block_rows * qs_cols + 2 * block_cols * head_dim + block_rows * ss_cols) * ITEM_BYTES


def tiled_default_blocks(
    seq_len: int, head_dim: int, query_len: int | None = None, sram_bytes: int = STATIC_SHARED_LIMIT_BYTES
) -> tuple[int, int]:
    """The readable kernel's default (Br, Bc): the FlashAttention paper's Algorithm 1 rule
    (``simlib.tiling.make_tiling``, tile rule "fa1") for 48 KiB of fp32 shared memory, Br capped at
    N_q (``query_len``, default N) and Bc at N_k = N. (simlib's fa2 schedule defaults to FA2's own
    tile table instead; the kernels' counts are compared with simlib at the tiles they ran.)

    >>> tiled_default_blocks(4096, 128), tiled_default_blocks(20, 64)
    ((24, 24), (20, 20))
    """
    nq = None if query_len is None or int(query_len) == int(seq_len) else int(query_len)
    workload = Workload(seq_len=int(seq_len), head_dim=int(head_dim), dtype="fp32", query_len=nq)
    tiling = make_tiling(workload, sram_bytes=int(sram_bytes))
    return tiling.block_rows, tiling.block_cols


def tiled_wide_blocks(seq_len: int, head_dim: int, block_cols: int = 8) -> tuple[int, int]:
    """Blocks that keep more threads of the readable kernel resident: Bc = 8 K/V rows and the largest
    Br (a multiple of 32 threads, one per query row) whose laid-out shared memory fits in 48 KiB.
    Same kernel, same counted arithmetic; only the mapping changes.

    >>> tiled_wide_blocks(4096, 64), tiled_wide_blocks(4096, 128)
    ((128, 8), (64, 8))
    """
    br = 32
    while (
        br + 32 <= MAX_THREADS_PER_BLOCK
        and tiled_shared_bytes(br + 32, block_cols, head_dim) <= STATIC_SHARED_LIMIT_BYTES
    ):
        br += 32
    return min(br, seq_len), min(block_cols, seq_len)


# --- naive kernel (gpu_kernels/kernels/naive.py) ------------------------------------------------------------

#: Padding of a Bs row of the naive matmul: the transposed store writes a column of Bs, and a row
#: stride of T + 1 floats puts those writes in different banks.
MATMUL_B_PAD = 1
#: Naive defaults: on a GPU a 16×16 matmul tile (256 threads) and 128 softmax threads per row;
#: under the CUDA simulator (a Python thread per CUDA thread) much smaller ones.
NAIVE_DEFAULTS_GPU = {"matmul_tile": 16, "softmax_threads": 128}
NAIVE_DEFAULTS_SIM = {"matmul_tile": 4, "softmax_threads": 4}


def matmul_shared_bytes(tile: int) -> int:
    """As (T×T) and Bs (T×(T+1)) in fp32: T = 16 → 2112 bytes.

    >>> matmul_shared_bytes(16)
    2112
    """
    return (tile * tile + tile * (tile + MATMUL_B_PAD)) * ITEM_BYTES


# --- fast kernel (gpu_kernels/kernels/fast.py) --------------------------------------------------------------


@dataclass(frozen=True)
class FastConfig:
    """Compile-time shape of one fast kernel: head_dim d, micro-tile TM×TN, thread grid NTY×NTX.

    Shared memory (one dynamic array, every offset and stride a multiple of 4 floats: 16-byte
    aligned): Qs[Br][d + 4], Ks[Bc][d + 4], Vs[Bc][d], Ps[Br][p_stride], Red[Br][NTX].

    >>> cfg = fast_default_config(64)
    >>> cfg.block_rows, cfg.block_cols, cfg.threads, cfg.smem_bytes   # 107 KiB
    (128, 64, 256, 109568)
    """

    head_dim: int
    tm: int = 4
    tn: int = 8
    ntx: int = 8
    nty: int = 32
    max_registers: int | None = None  # ptxas register cap (None: the compiler's choice)
    async_copy: bool = True  # K_j+1 / V_j+1 copied with cp.async while tile j is computed
    vector_loads: bool = True  # 16-byte loads/stores (False: four 4-byte ones; an ablation)
    unroll: int = 1  # steps of the S and O loops per loop trip (1, 2, 4)

    @property
    def block_rows(self) -> int:
        return self.nty * self.tm

    @property
    def block_cols(self) -> int:
        return self.ntx * self.tn

    @property
    def threads(self) -> int:
        return self.nty * self.ntx

    @property
    def register_cap(self) -> int | None:
        """max_registers, or the most a block of this size can have (64K registers per SM)."""
        if self.max_registers is not None:
            return self.max_registers
        return REGISTERS_PER_SM // self.threads if self.threads > 256 else None

    @property
    def o_groups(self) -> int:
        """float4 groups of output columns per thread: d / (4·NTX)."""
        return self.head_dim // (4 * self.ntx)

    @property
    def q_stride(self) -> int:
        return self.head_dim + 4

    @property
    def k_stride(self) -> int:
        return self.head_dim + 4

    @property
    def v_stride(self) -> int:
        return self.head_dim

    @property
    def p_stride(self) -> int:
        """Bc rounded up to NTX (mod 32): the 32/NTX row groups of a warp store P into disjoint banks."""
        return self.block_cols + (self.ntx - self.block_cols) % 32

    @property
    def r_stride(self) -> int:
        return self.ntx

    def offsets(self) -> tuple[int, int, int, int, int, int]:
        """Float offsets of Qs, Ks, Vs, Ps, Red in the dynamic array, and its end."""
        q = 0
        k = q + self.block_rows * self.q_stride
        v = k + self.block_cols * self.k_stride
        p = v + self.block_cols * self.v_stride
        r = p + self.block_rows * self.p_stride
        end = r + self.block_rows * self.r_stride
        return q, k, v, p, r, end

    @property
    def smem_elements(self) -> int:
        return self.offsets()[-1]

    @property
    def smem_bytes(self) -> int:
        return self.smem_elements * ITEM_BYTES

    def check(self) -> FastConfig:
        """self, or ValueError naming the field the kernel cannot be built with."""
        d = self.head_dim
        if self.max_registers is not None and not (
            isinstance(self.max_registers, int) and 32 <= self.max_registers <= 255
        ):
            raise ValueError(f"max_registers must be None or an int in [32, 255]; got {self.max_registers!r}")
        for name in ("head_dim", "tm", "tn", "ntx", "nty"):
            x = getattr(self, name)
            if not _is_int(x) or x < 1:
                raise ValueError(f"{name} must be a positive integer; got {x!r}")
        if self.ntx not in (4, 8, 16, 32):
            raise ValueError(
                f"ntx must be 4, 8, 16 or 32 (threads sharing a row sit in one warp); got {self.ntx}"
            )
        if d % (4 * self.ntx):
            raise ValueError(
                f"head_dim={d} must be a multiple of 4*ntx={4 * self.ntx} (float4 output columns)"
            )
        if self.threads > MAX_THREADS_PER_BLOCK:
            raise ValueError(f"ntx*nty={self.threads} threads per block; at most {MAX_THREADS_PER_BLOCK}")
        if self.block_cols % 4:
            raise ValueError(f"block_cols = ntx*tn = {self.block_cols} must be a multiple of 4")
        if self.unroll not in (1, 2, 4) or (d // 4) % self.unroll or (self.block_cols // 4) % self.unroll:
            raise ValueError(f"unroll={self.unroll} must be 1, 2 or 4 and divide head_dim/4 and block_cols/4")
        rows_per_pass = self.threads // (d // 4) if self.threads % (d // 4) == 0 else 0
        if not rows_per_pass or self.block_rows % rows_per_pass or self.block_cols % rows_per_pass:
            raise ValueError(
                f"tile copies: threads={self.threads} must be a multiple of head_dim/4={d // 4}, and "
                f"block_rows={self.block_rows}, block_cols={self.block_cols} multiples of "
                f"threads/(head_dim/4)"
            )
        if self.smem_bytes > OPTIN_SHARED_LIMIT_BYTES:
            raise ValueError(
                f"config {self} needs {self.smem_bytes} bytes of shared memory; "
                f"at most {OPTIN_SHARED_LIMIT_BYTES}"
            )
        return self


def fast_default_config(head_dim: int) -> FastConfig:
    """The configuration the H200 tuning runs chose (docs/performance.md).

    d = 64 (and d = 16, 32): 32×8 threads, TM×TN = 4×8 → Br = 128, Bc = 64, plain loads, 4 steps per
    loop trip (NTX = 4 when d is not a multiple of 32). d a multiple of 64 above 64 (128): 16×16
    threads, TM×TN = 8×4 → Br = 128, Bc = 64, cp.async copies, 2 steps per loop trip. Not checked:
    simlib counts any d, ``FastConfig.check()`` says whether the kernel can be built (d = 48 cannot).

    >>> c = fast_default_config(128)
    >>> (c.tm, c.tn, c.nty, c.ntx, c.async_copy, c.unroll)
    (8, 4, 16, 16, True, 2)
    """
    if head_dim % 64 == 0 and head_dim > 64:
        return FastConfig(head_dim, tm=8, tn=4, ntx=16, nty=16, async_copy=True, unroll=2)
    ntx = 8
    while ntx > 4 and head_dim % (4 * ntx):
        ntx //= 2
    return FastConfig(head_dim, tm=4, tn=8, ntx=ntx, nty=32, async_copy=False, unroll=4)


def _is_int(x) -> bool:
    import numbers

    return isinstance(x, numbers.Integral) and not isinstance(x, bool) and type(x).__name__ != "bool_"


# --- tensor-core kernels (fa2_tc, naive_tc): the configs gpu_kernels.kernels' TcConfig.check and
# NaiveTcConfig.check accept, so that simlib counts no configuration the kernels refuse
# (tests/test_tc_config_rules.py compares the two over a grid).

TC_HEAD_DIMS = (64, 128)
TC_MAX_WARPS = 8
TC_ELEMENT_BYTES = DTYPE_BYTES[TENSOR_CORE_DTYPES[0]]  # bf16 and fp16 alike: 2
#: Bc must be a multiple of this: fa2_tc one mma k-step (16), naive_tc a swizzled P tile (64).
TC_BLOCK_MULTIPLE = {"fa2_tc": (16, "one mma k-step"), "naive_tc": (64, "a swizzled P tile")}
#: Query rows per warp: fa2_tc one or two m16 tiles, naive_tc one.
TC_WARP_ROWS = {"fa2_tc": (16, 32), "naive_tc": (16,)}


def tc_tile_problem(
    kernel: str, head_dim: int, warps: object, block_cols: object, warp_rows: object = 16, kv_stages: int = 2
) -> str | None:
    """Why fa2_tc or naive_tc cannot run W = `warps`, Bc = `block_cols`, R = `warp_rows` query rows per
    warp at d = `head_dim` (None: it can).

    The rules: d ∈ {64, 128}; W an int in 1..8 (Br = R·W); Bc a positive multiple of 16 (fa2_tc) or 64
    (naive_tc); R 16 or 32 (naive_tc: 16); every tile (Q: Br × d, K and V: Bc × d, naive_tc's P: Br × Bc)
    splits into 16-byte copies evenly over the 32·W threads; the tiles fit in the 227 KiB of dynamic
    shared memory (fa2_tc: (Br + 2·S·Bc)·d·2 B with S = `kv_stages` buffers each of K and V; naive_tc:
    the larger matmul's tiles).
    Worked number: fa2_tc, d = 128, W = 8, R = 32, Bc = 128, S = 2 needs (256 + 512)·128·2 = 196,608 B: runs.

    >>> tc_tile_problem("fa2_tc", 64, 9, 64)
    'warps must be an int in 1..8; got 9'
    """
    multiple, why = TC_BLOCK_MULTIPLE[kernel]
    d, w, bc, r = head_dim, warps, block_cols, warp_rows
    if d not in TC_HEAD_DIMS:
        return f"head_dim={d}: the tensor-core kernels support head_dim 64 and 128 only"
    if not isinstance(w, int) or isinstance(w, bool) or not 1 <= w <= TC_MAX_WARPS:
        return f"warps must be an int in 1..{TC_MAX_WARPS}; got {w!r}"
    if not isinstance(bc, int) or isinstance(bc, bool) or bc < multiple or bc % multiple:
        return f"block_cols must be a positive multiple of {multiple} ({why}); got {bc!r}"
    if r not in TC_WARP_ROWS[kernel]:
        return f"warp_rows must be one of {TC_WARP_ROWS[kernel]}; got {r!r}"
    assert isinstance(r, int)
    br, threads = r * w, 32 * w
    tiles = [(br, d), (bc, d)] + ([(br, bc)] if kernel == "naive_tc" else [])
    if any((rows * cols // 8) % threads for rows, cols in tiles):
        return (
            f"block_cols={bc}: the tiles {tuple(tiles)} must split into 16-byte copies evenly over "
            f"{threads} threads"
        )
    if kernel == "fa2_tc":
        smem = (br + 2 * kv_stages * bc) * d * TC_ELEMENT_BYTES
    else:
        smem = max((br + bc) * d, br * bc + bc * d) * TC_ELEMENT_BYTES
    if smem > OPTIN_SHARED_LIMIT_BYTES:
        return (
            f"block_cols={bc}, warps={w}, head_dim={d} need {smem} bytes of shared memory; at most "
            f"{OPTIN_SHARED_LIMIT_BYTES}"
        )
    return None
