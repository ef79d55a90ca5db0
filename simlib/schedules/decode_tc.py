"""Flash-decoding on tensor cores, as the kernel `decode_tc` runs it (gpu_kernels/kernels/decode_tc.py).

HBM: exactly the `decode` schedule's (this module takes its HBM events from there). One thread block
per (unit, split), a unit being one (batch, KV head) whose g query heads × q_len queries are packed
into R = g·q_len rows; each split streams its ⌈L/s⌉ keys of K and V once; with one split the block
writes O (the dtype), with s > 1 it writes an fp32 partial O and its log-sum-exp, which the combine
reads back to write O (the combine kernel, or, by default, the unit's last split block itself: the
same bytes; its arrival count, a 4-byte L2 atomic per block, is not counted). With ``tail="flagged"``
(the kernel's version-5 tail: split s − 1 polls partials that carry a 4-byte tag beside every fp32
value) the partials' HBM writes and reads count twice the elements. With ``tail="cluster"`` (version 6:
the s split blocks of a unit are one thread-block cluster, s <= 16) the partials never reach HBM: each
block writes its R·d partial O and R log-sum-exps into the shared memory of the cluster's leader
(distributed shared memory: SRAM writes), which, after a cluster barrier, reads them back to write O
(each thread 8 columns of one row: s·8 partial values and the s log-sum-exps of its row, SRAM reads).

SRAM (shared memory), what the kernel's code does, per split of c keys in T = ⌈c/Bc⌉ tiles:

    Q lands whole (zero-filled to QR = 16·⌈R/16⌉ rows, the m16 tiles of one mma): writes QR·d;
    each of the W warps loads all of it into registers once by ldmatrix:     reads W·QR·d
    per tile, K and V land whole (a short last tile zero-filled):           writes 2·Bc·d
    warp w takes keys w·Bc/W .. (w+1)·Bc/W − 1 of the tile: K read once by
    ldmatrix for S = Q Kᵀ, V once for O += P V (no key is read by two warps): reads 2·Bc·d
    at the end the W warps' running (m, l, O) meet in shared memory (fp32, the
    R valid rows only): each warp writes R·d of O and R each of m and l;
    each thread then merges one row's 8 consecutive columns, reading the W
    warps' m, l and 8 O values: reads W·R·d of O and W·R·d/8 each of m and l

S and P never leave registers. The combine kernel (s > 1) works in registers and warp shuffles: no
SRAM. Per streamed key-value pair the block reads 2·d elements of SRAM, as many as it brought from
HBM: decoding is bound by HBM, not by shared memory (fa2_tc reads K and V once per warp).

Worked number (a Llama-3-8B layer's decode step: B = 1, H = 32, H_kv = 8, L = 8192, d = 128, q_len =
1, bf16; W = 4, Bc = 64, s = 16 splits of 512 keys, 8 tiles each; per unit R = 4, QR = 16): per unit
HBM reads s·R·d + 2·L·d = 8,192 + 2,097,152 elements of Q, K, V plus the combine's s·R·(d + 1) =
8,256 fp32; SRAM writes per split 2,048 (Q) + 8·16,384 (K, V) + 4·4·130 (merge) = 135,200 elements,
reads 4·2,048 + 8·16,384 + 4·4·(128 + 2·16) = 141,824.

>>> from simlib import Workload
>>> w = Workload(8192, 128, heads=32, kv_heads=8, query_len=1, dtype="bf16")
>>> m = build(w, None, splits=16)
>>> t = closed_form(w, m)
>>> t.elements("HBM", "read", "K") + t.elements("HBM", "read", "V"), t.elements("HBM", "read", "Q")
(2097152, 8192)
>>> t.elements("SRAM", "write") // 16, t.elements("SRAM", "read") // 16
(135200, 141824)
"""

import functools
from collections.abc import Iterator
from dataclasses import dataclass

from ..schedule_protocol import Parameter, ParamValue, Schedule, WorkingSet
from ..tiling import BLOCK_COLS, block_sizes, ceil_div
from ..traffic import Event, Traffic, TrafficKey
from ..workload import Workload
from . import decode
from .decode import SPLITS, packed_rows, split_lengths
from .fa2_tc import WARPS, check_tensor_core_workload

#: The kernel's head dims, warps and tiles (gpu_kernels/kernels/decode_tc.py: DecodeConfig).
HEAD_DIMS = (64, 128)
#: Per head dim: d = 64 takes 8 warps and Bc = 128 (16 keys per warp and tile, as at d = 128: 40.43 against
#: 45.46 µs at 134 MB in run decode4-run2, 39.94 against 45.18 in decode5-run1), d = 128 4 warps, Bc = 64.
DEFAULT_WARPS = {64: 8, 128: 4}
DEFAULT_BLOCK_COLS = {64: 128, 128: 64}
DEFAULT_STAGES = {64: 4, 128: 3}  # K/V tiles in the cp.async ring (working set only, not traffic)
SPLIT_KEYS = 64  # default_splits leaves every split at least this many keys
#: The default tail is "cluster" where a unit's splits are this many (clusters of 2 always fit the H200's
#: SMs one block each: run decode5-run3, 66.9 against 68.9 µs and 69.8 against 75.2 at the two committed
#: shapes with s = 2), "atomic" elsewhere (16-block clusters pack two blocks onto some SMs or take two
#: waves: 51.4 against 39.7 µs at 134 MB; PERFORMANCE.md, decode_tc version 6).
CLUSTER_DEFAULT_SPLITS = 2


def made_splits(seq_len: int, splits: int) -> int:
    """Splits made of `splits` asked: ⌈L / ⌈L/s⌉⌉ (fewer when the last would be empty).

    >>> made_splits(40, 16), made_splits(32768, 16)
    (14, 16)
    """
    return ceil_div(seq_len, ceil_div(seq_len, splits))


def default_tail(splits_made: int) -> str:
    """The fused combine's default tail for a unit of `splits_made` splits (CLUSTER_DEFAULT_SPLITS).

    >>> default_tail(2), default_tail(16), default_tail(1)
    ('cluster', 'atomic', 'atomic')
    """
    return "cluster" if splits_made == CLUSTER_DEFAULT_SPLITS else "atomic"


MAX_ROWS = 32  # packed rows R = g·q_len: at most two m16 tiles
MAX_SPLITS = 128  # the combine kernel keeps 4 split values per lane of a warp
MERGE_COLS = 8  # columns one thread merges

STAGES = Parameter("stages", "K/V tiles in flight in the cp.async ring (default 4 at d = 64, 3 at d = 128)")
TAILS = ("atomic", "flagged", "cluster")
MAX_CLUSTER = 16  # the largest thread-block cluster of sm_90 (more than 8 is the non-portable size)
TAIL = Parameter(
    "tail",
    "the fused combine's tail (default: cluster at 2 splits, else atomic): atomic (the last split to "
    "arrive combines), flagged (split s − 1 "
    "polls the partials, each fp32 value stored with a 4-byte tag: the partials' bytes doubled) or "
    "cluster (the splits of a unit are one thread-block cluster, s <= 16: the partials go to the "
    "leader's shared memory, none to HBM)",
    kind="choice",
    choices=TAILS,
)
#: The partials' HBM keys whose elements are 8-byte (value, tag) words with the flagged tail: counted
#: as two fp32 elements each (the tag is a 4-byte word beside every value).
PARTIAL_KEYS = frozenset(
    {
        ("HBM", "write", "O_part", "store"),
        ("HBM", "write", "lse_part", "store"),
        ("HBM", "read", "O_part", "reduce"),
        ("HBM", "read", "lse_part", "reduce"),
    }
)


@dataclass(frozen=True)
class DecodeTcMapping:
    block_cols: int  # Bc: keys per tile, split over the W warps
    splits: int  # splits asked for (⌈L/s⌉ keys each; fewer are made when L < s)
    warps: int
    stages: int
    tail: str = "atomic"

    @property
    def partial_words(self) -> int:
        """4-byte words per partial value in HBM: 1, 2 with the flagged tail (value and tag), 0 with the
        cluster tail (the partials stay on chip)."""
        return {"flagged": 2, "cluster": 0}.get(self.tail, 1)

    def as_dict(self) -> dict[str, ParamValue]:
        return {
            "block_cols": self.block_cols,
            "splits": self.splits,
            "warps": self.warps,
            "stages": self.stages,
            "tail": self.tail,
        }

    def summary(self) -> str:
        return (
            f"tiles: Bc={self.block_cols} over {self.warps} warps, {self.stages} in flight; "
            f"flash-decoding splits={self.splits}" + ("" if self.tail == "atomic" else f"; {self.tail} tail")
        )

    @property
    def as_decode(self) -> decode.DecodeMapping:
        """The same splits and tile in the `decode` schedule (whose HBM events are this kernel's)."""
        return decode.DecodeMapping(self.block_cols, self.splits)


def query_rows(workload: Workload) -> int:
    """QR: the packed rows R rounded up to whole m16 tiles (what the kernel stores and multiplies)."""
    return 16 * ceil_div(packed_rows(workload), 16)


def build(
    workload: Workload,
    sram_bytes: int | None,
    warps: int | None = None,
    block_cols: int | None = None,
    splits: int | None = None,
    stages: int | None = None,
    tail: str | None = None,
) -> DecodeTcMapping:
    check_tensor_core_workload(workload, "decode_tc")
    if workload.causal:
        raise ValueError("causal: a decode step attends the whole cache; use causal with prefill algorithms")
    r = packed_rows(workload)
    if r > MAX_ROWS:
        raise ValueError(
            f"query_len: the packed rows group·query_len = {r} exceed {MAX_ROWS} (two m16 tiles of decode_tc)"
        )
    w = DEFAULT_WARPS[workload.head_dim] if warps is None else warps
    if w not in (1, 2, 4, 8):
        raise ValueError(f"warps={w} must be 1, 2, 4 or 8 (decode_tc's block sizes)")
    bc = DEFAULT_BLOCK_COLS[workload.head_dim] if block_cols is None else block_cols
    if bc % (16 * w):
        raise ValueError(
            f"block_cols={bc} must be a multiple of 16·warps = {16 * w} (16 keys per warp and mma k-step)"
        )
    s = 1 if splits is None else splits
    if s > MAX_SPLITS:
        raise ValueError(f"splits={s}: the combine kernel takes at most {MAX_SPLITS}")
    st = DEFAULT_STAGES[workload.head_dim] if stages is None else stages
    if not 2 <= st <= 8:
        raise ValueError(f"stages={st} must be in 2..8 (tiles in the cp.async ring)")
    tl = default_tail(made_splits(workload.nk, s)) if tail is None else tail
    if tl not in TAILS:
        raise ValueError(f"tail={tl!r} must be one of {', '.join(TAILS)}")
    if tl == "cluster" and made_splits(workload.nk, s) > MAX_CLUSTER:
        raise ValueError(
            f"splits={s}: tail='cluster' makes the splits of a unit one cluster, at most {MAX_CLUSTER}"
        )
    return DecodeTcMapping(bc, s, w, st, tl)


def smem_bytes(workload: Workload, mapping: DecodeTcMapping) -> int:
    """Dynamic shared memory of one block: Q and the ring (16-bit), reused by the fp32 merge and (cluster
    tail) after it the s splits' partial O and lse (fp32) that the leader gathers."""
    qr, d, bc, e = query_rows(workload), workload.head_dim, mapping.block_cols, workload.element_bytes
    ring = (qr + 2 * mapping.stages * bc) * d * e
    merge = mapping.warps * qr * (d + 2) * 4
    if mapping.tail == "cluster":
        s = made_splits(workload.nk, mapping.splits)
        merge += 0 if s == 1 else s * packed_rows(workload) * (d + 1) * 4
    return max(ring, merge)


def working_set(workload: Workload, mapping: DecodeTcMapping) -> WorkingSet:
    qr, d, bc, e = query_rows(workload), workload.head_dim, mapping.block_cols, workload.element_bytes
    w = mapping.warps
    return WorkingSet(
        (
            ("Q (QR rows)", "SRAM", qr * d * e),
            (f"K_j, V_j × {mapping.stages} stages", "SRAM", 2 * mapping.stages * bc * d * e),
            ("Q fragments (every warp)", "registers", w * qr * d * e),
            ("S/P (fp32)", "registers", qr * bc * 4),
            ("O accumulators (fp32, every warp)", "registers", w * qr * d * 4),
        ),
        note="the fp32 merge of the warps' (m, l, O) reuses the ring's shared memory",
    )


def units(workload: Workload) -> int:
    return decode.units(workload)


def _split_events(
    workload: Workload, mapping: DecodeTcMapping, tiles: int
) -> list[tuple[str, str, str, str, int]]:
    """SRAM accesses of one split block that streams `tiles` K/V tiles."""
    r, qr, d, w, bc = (
        packed_rows(workload),
        query_rows(workload),
        workload.head_dim,
        mapping.warps,
        mapping.block_cols,
    )
    return [
        ("SRAM", "write", "Q", "load_q", qr * d),
        ("SRAM", "read", "Q", "fragments", w * qr * d),
        ("SRAM", "write", "K", "load_kv", tiles * bc * d),
        ("SRAM", "write", "V", "load_kv", tiles * bc * d),
        ("SRAM", "read", "K", "scores", tiles * bc * d),
        ("SRAM", "read", "V", "pv", tiles * bc * d),
        ("SRAM", "write", "O_acc", "merge", w * r * d),
        ("SRAM", "write", "m", "merge", w * r),
        ("SRAM", "write", "l", "merge", w * r),
        ("SRAM", "read", "O_acc", "merge", w * r * d),
        ("SRAM", "read", "m", "merge", w * r * d // MERGE_COLS),
        ("SRAM", "read", "l", "merge", w * r * d // MERGE_COLS),
    ]


def _cluster_events(
    workload: Workload, mapping: DecodeTcMapping, s: int
) -> list[tuple[str, str, str, str, int]]:
    """The cluster tail's SRAM accesses of one unit of s > 1 splits (none for the other tails): every
    split's partial O and lse written into the leader's shared memory; the leader's threads, 8 columns
    of one row each, read their s·8 partial values and the row's s log-sum-exps."""
    if mapping.tail != "cluster" or s == 1:
        return []
    r, d = packed_rows(workload), workload.head_dim
    return [
        ("SRAM", "write", "O_part", "dsmem", s * r * d),
        ("SRAM", "write", "lse_part", "dsmem", s * r),
        ("SRAM", "read", "O_part", "combine", s * r * d),
        ("SRAM", "read", "lse_part", "combine", s * r * d // MERGE_COLS),
    ]


def trace(workload: Workload, mapping: DecodeTcMapping) -> Iterator[Event]:
    """decode's HBM events (the partials' twice over with the flagged tail, not at all with the cluster
    tail), then every split block's SRAM accesses, tile by tile, then the cluster tail's."""
    for e in decode.trace(workload, mapping.as_decode):
        if e.level == "HBM":
            key = (e.level, e.op, e.tensor, e.phase)
            if key not in PARTIAL_KEYS:
                yield e
            elif mapping.partial_words:
                yield Event(*key, e.elements * mapping.partial_words)
    chunks = split_lengths(workload, mapping.as_decode)
    for keys in chunks:
        tiles = len(block_sizes(int(keys), mapping.block_cols))
        for level, op, tensor, phase, n in _split_events(workload, mapping, tiles):
            yield Event(level, op, tensor, phase, n)
    for level, op, tensor, phase, n in _cluster_events(workload, mapping, len(chunks)):
        yield Event(level, op, tensor, phase, n)


def split_tiles(workload: Workload, mapping: DecodeTcMapping) -> tuple[int, int]:
    """(splits made, Σ tiles over them): s − 1 chunks of ⌈L/s⌉ keys and a last of the rest."""
    nk = workload.nk
    chunk = ceil_div(nk, mapping.splits)
    s = made_splits(nk, mapping.splits)
    return s, (s - 1) * ceil_div(chunk, mapping.block_cols) + ceil_div(
        nk - (s - 1) * chunk, mapping.block_cols
    )


def closed_form(workload: Workload, mapping: DecodeTcMapping) -> Traffic:
    counts: dict[TrafficKey, int] = {
        key: n * (mapping.partial_words if key in PARTIAL_KEYS else 1)
        for key, n in decode.closed_form(workload, mapping.as_decode).counts.items()
        if key[0] == "HBM" and (mapping.partial_words or key not in PARTIAL_KEYS)
    }
    s, tiles = split_tiles(workload, mapping)
    per_split = _split_events(workload, mapping, 0)
    per_tile = _split_events(workload, mapping, 1)
    for (level, op, tensor, phase, fixed), (*_, with_tile) in zip(per_split, per_tile):
        counts[(level, op, tensor, phase)] = s * fixed + tiles * (with_tile - fixed)
    for level, op, tensor, phase, n in _cluster_events(workload, mapping, s):
        counts[(level, op, tensor, phase)] = n
    return Traffic(counts)


def flops(workload: Workload, mapping: DecodeTcMapping) -> int:
    """Matmul FLOPs the kernel executes: QR rows (padding included) against whole tiles."""
    _, tiles = split_tiles(workload, mapping)
    return 4 * query_rows(workload) * tiles * mapping.block_cols * workload.head_dim


def trace_size(workload: Workload, mapping: DecodeTcMapping) -> tuple[int, int]:
    s, tiles = split_tiles(workload, mapping)
    return max(s, ceil_div(workload.nk, mapping.block_cols)), tiles + 2 * s


SCHEDULE = Schedule(
    name="decode_tc",
    description="flash-decoding on tensor cores (fp16/bf16) as the kernel `decode_tc` runs it",
    parameters=(WARPS, BLOCK_COLS, SPLITS, STAGES, TAIL),
    sram="checks",
    build=build,
    trace=trace,
    closed_form=closed_form,
    flops=flops,
    units=units,
    trace_size=trace_size,
    working_set=working_set,
)


def default_splits(
    batch: int, kv_heads: int, seq_len: int, head_dim: int, rows: int, dtype: str = "bf16"
) -> int:
    """s from simlib's model of the split-K time on the H200 (simlib.decode_time: waves of blocks over
    132 SMs plus the fused combine's tail, ``fused=True``): the fewest splits within 1 % of the best over 1..128 that leave
    every split at least one tile. Worked number: B = 1, H_kv = 8, L = 32768, d = 128, R = 4: 16.

    >>> default_splits(1, 8, 32768, 128, 4)
    16
    """
    return _default_splits(batch, kv_heads, seq_len, head_dim, rows, dtype)


@functools.cache
def _default_splits(batch, kv_heads, seq_len, head_dim, rows, dtype):
    from ..decode_time import split_k_time
    from ..hardware import load_preset
    from ..workload import Workload

    hw = load_preset("h200")
    group = max(1, rows)  # the model needs only R = g·q_len: one query per group member
    wl = Workload(seq_len, head_dim, batch, kv_heads * group, kv_heads=kv_heads, query_len=1, dtype=dtype)
    most = max(1, min(MAX_SPLITS, seq_len // SPLIT_KEYS))
    times = {s: split_k_time(wl, hw, s, fused=True).time_s for s in range(1, most + 1)}
    best = min(times.values())
    return min(s for s, t in times.items() if t <= best * 1.01)
