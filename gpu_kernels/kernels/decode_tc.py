"""Flash-decoding on tensor cores: a few query tokens against a long 16-bit KV cache (kernel ``decode_tc``).

A decode step has q_len (1 to a few) new queries per head and L cached keys. Its arithmetic is
4·R·L·d FLOPs for 2·L·d·2 bytes of K and V per KV head, about R FLOP per byte: far below the H200's
~200 FLOP/B ridge, so the step is bound by how fast HBM delivers the cache, and the kernel's job is
to keep HBM busy. Three things do that (Dao et al., "Flash-Decoding for long-context inference", 2023):

* **GQA packing**: the g = H/H_kv query heads that share a KV head, times q_len, are R = g·q_len rows of
  one block (rows of one m16 mma tile, or two), so the cache of a KV head is read once, not g times.
* **Split over the sequence**: B·H_kv units are too few blocks for 132 SMs (a Llama-3-8B layer at batch
  1 has 8), so each unit's keys are cut into s splits of ⌈L/s⌉ and each (split, unit) is one block; each
  writes a partial O (fp32) and its log-sum-exp, and the unit's last split to finish combines them
  (an atomic count of arrivals per unit: one launch; ``fused_combine=False``: a second kernel does, as
  version 1 did; the split kernel writes O itself when s = 1). ``default_splits`` picks s from
  simlib's model of the time on 132 SMs.
* **Bytes in flight**: every thread streams K and V through a ring of `stages` tiles with 16-byte
  ``cp.async`` copies, so stages − 1 tiles are in flight while one is multiplied.

Mapping (compile-time constants of ``DecodeConfig`` and the packed rows):

    split kernel  grid = (s, B·H_kv), block = W warps; shared = Q[QR×d] | stages × (K[Bc×d], V[Bc×d])
                  (16-bit, rows swizzled as fa2_tc's: tiles.swizzled); QR = 16·⌈R/16⌉ rows
    per tile      warp w takes keys w·Bc/W .. (w+1)·Bc/W − 1: S = Q Kᵀ (ldmatrix of K, mma), mask keys
                  past the split, online softmax (m, l per row, base 2), O += P V (ldmatrix.trans of V)
    at the end    the W warps' (m, l, O) meet in shared memory (fp32, reusing the ring) and each thread
                  merges 8 columns of one row: O = Σ_w 2^(m_w − M) O_w / Σ_w 2^(m_w − M) l_w
    combine       (``combine_row_op``) one warp per output row: lane j holds the log-sum-exp of splits
                  j, j + 32, ... (at most 128), the weights 2^(lse_j − lse) go to every lane by
                  shuffle, each lane sums its d/32 columns of the s partial rows; the lse and the
                  first COMBINE_BATCH = 16 partial rows are loaded together (one L2 round trip at
                  s <= 16). Fused: after its partials and a block barrier, thread 0 counts the block
                  in (``arrive_acq_rel``: ``atom.acq_rel.gpu`` on the unit's arrival count, which
                  publishes the block's partials and, in the last block, makes the others' visible);
                  the block that arrives s-th runs the combine of the unit's R rows on its W warps
                  (the partials are in L2) and sets the count back to 0. Two kernels: grid
                  ⌈B·H·q_len / k⌉ blocks of k warps (k = 4 at d = 128, 8 at d = 64, as FA2's combine
                  kernel and simlib.decode_time)
    flagged tail  (``DecodeConfig(tail="flagged")``, version 5) no arrival count: every block stores its
                  partials as 8-byte (fp32 value, tag) words (``tagged_ops``), the tag the launch's epoch
                  (one more than the unit's entry of the epoch array, which the combiner advances at its
                  end); split s − 1 of each unit combines, its warps re-loading each group of partials
                  until every tag is this launch's. No block waits for its stores' acknowledgement or an
                  atomic's round trip; the partials' bytes double; every block must be resident at once
                  (``plan_decode_tc`` refuses a grid of more blocks than SMs)
    cluster tail  (``DecodeConfig(tail="cluster")``, version 6; the default where a unit has 2 splits) the
                  s <= 16 split blocks of a unit are one thread-block cluster (``.reqnctapercluster s``,
                  ``cluster_ops``): every block arrives at a cluster barrier when its ring is drained,
                  waits for the cluster, stores its partial O and lse into the leader's shared memory
                  (rank s − 1; ``st.shared::cluster`` after the merge's region, over the leader's ring),
                  arrives (release) and waits (acquire) again; the leader's threads combine 8 columns of
                  one row each from their own shared memory and store O: no partial in HBM, no atomic.
                  Faster than the atomic tail where the clusters fit the SMs one block each (2 splits:
                  −2.0 and −5.4 µs at 269 MB), slower where 16-block clusters must share SMs or wait for
                  a second wave (+12 µs at 134 MB; PERFORMANCE.md, version 6)
    kv_groups     (version 5) K and V of a tile in two cp.async groups: S = Q Kᵀ and the softmax start
                  when K has landed, P V after V has (one more block barrier per tile; same bytes)

Rows past R and keys past a split's end are zero-filled in shared memory and computed whole (keys
masked with −∞); they are never written. Packed row r of unit (b, h_kv) is query head h_kv·g + r // q_len,
token r mod q_len: in Q's (B, H, q_len, d) layout the unit's R rows are consecutive, so Q and O are
addressed as (B·H_kv, R, d).

Counting build: every thread counts the bytes it moves (registers and shuffles are free; an ldmatrix.x4
reads 16 bytes per lane; a cp.async of 16 bytes is 16 bytes read from global memory, or none when it
zero-fills, and 16 bytes written to shared memory; fp32 stores and loads 4 bytes) and adds them with one
atomic per counter at the end. simlib's ``decode_tc`` schedule counts the same, and its HBM events are
the ``decode`` schedule's; the fused combine reads and writes exactly what the combine kernel does
(its 4-byte arrival count, an L2 atomic per block like the counters' own, is not counted); with the
flagged tail every partial value is 8 bytes (its tag beside it), counted once per value: the polls that
found a stale tag and were repeated are not counted (like the arrival count); with the cluster tail the
partials are shared-memory traffic (each block writes R·d + R fp32 into the leader's, which reads s·8
values and s lse per 8 columns of a row) and none is HBM's. Head dims 64 and 128; no causal mask (a decode step sees the whole cache).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, int32, uint16, uint32  # module globals: the simulator swaps `cuda`

from simlib.schedules import decode_tc as schedule

from ..counting import counts_from, new_counters, simulator_enabled
from ..flush import flush_counters
from ..tensor_core.addressed_ops import addressed_ops
from ..tensor_core.cluster_ops import allow_cluster, cluster_ops
from ..tensor_core.dtypes import check_dtype, from_bits, to_bits
from ..tensor_core.flash_tile import flash_tile_ops
from ..tensor_core.tc_plan import upload
from ..tensor_core.tiles import block_copiers
from ..tensor_core.warp_ops import arrive_acq_rel, cp_wait_group, lane_broadcast, tagged_ops, warp_ops
from ..timers import block_clocks
from .fa2_tc import DYNAMIC_SHARED_LIMIT, LOG2E, allow_dynamic_smem

HEAD_DIMS = schedule.HEAD_DIMS
MAX_ROWS = schedule.MAX_ROWS
MAX_SPLITS = schedule.MAX_SPLITS
default_splits = schedule.default_splits  # simlib's choice (no numba): `run` picks it before compiling
MERGE_COLS = schedule.MERGE_COLS
#: Partial rows each lane of the combine loads at once, the first group issued with the log-sum-exps:
#: the default splits (at most 16 where the cache is small) are combined after one L2 round trip.
COMBINE_BATCH = 16
LN2 = 0.6931471805599453
TAILS = schedule.TAILS
MAX_CLUSTER = schedule.MAX_CLUSTER
#: The stamps build's points, in order (%globaltimer of thread 0; the last slot says whether it combined):
#: the block's start, tile 0 landed, the last tile landed, the last tile's math done (every warp), the
#: warps' (m, l, O) in shared memory, the merged partial stored, the arrival's answer (atomic tail), the end.
STAMP_POINTS = (
    "start",
    "tile0",
    "last_tile",
    "math_done",
    "merge_in_smem",
    "partial_stored",
    "arrived",
    "end",
)
STAMPS = len(STAMP_POINTS) + 1


@dataclass(frozen=True)
class DecodeConfig:
    """Compile-time shape of the split kernel: head dim d, W warps, Bc keys per tile (Bc/W per warp, a
    multiple of 16), `stages` tiles in the cp.async ring; `fused_combine`: the last split of a unit to
    finish combines the unit's partials itself (one launch), else the combine kernel does (two)."""

    head_dim: int
    warps: int = 4
    block_cols: int = 64
    stages: int = 3
    fused_combine: bool = True
    tail: str = "atomic"
    kv_groups: bool = False

    # kv_groups (version 5): K and V of a tile in two cp.async groups, so S = Q Kᵀ and the softmax of a
    # tile start when its K has landed and only P V waits for its V (one more block barrier per tile):
    # the last tile's math after the last byte lands shrinks to its P V

    # tail (the fused combine, s > 1): "atomic": the unit's last split to take a ticket of the arrival
    # count combines (version 3); "flagged" (version 5): split s − 1 of every unit combines, polling the
    # others' partials, stored as 8-byte (value, tag) words whose tag is the launch's epoch, so no
    # block waits for its stores' acknowledgement and an atomic's round trip before the combine can
    # start; it needs every block of the grid resident at once (DecodePlan checks: blocks <= SMs);
    # "cluster" (version 6): the s <= 16 split blocks of a unit are one thread-block cluster; each
    # writes its partial O and lse into the shared memory of the leader (rank s − 1) by DSMEM stores,
    # a cluster barrier, and the leader combines: no partial in HBM, no atomic, no L2 round trip

    @property
    def threads(self) -> int:
        return 32 * self.warps

    def merge_words(self, rows: int) -> int:
        """fp32 words of the merge's region (every warp's O, m and l of QR rows) at the start of shared
        memory; the cluster tail's gathered partials follow it."""
        return self.warps * 16 * (-(-rows // 16)) * (self.head_dim + 2)

    def smem_bytes(self, rows: int, splits: int = 1) -> int:
        """Dynamic shared memory for `rows` packed query rows (Q and the ring, or the fp32 merge and,
        with the cluster tail, after it the `splits` partial rows and lse the leader gathers)."""
        qr = 16 * (-(-rows // 16))
        ring = (qr + 2 * self.stages * self.block_cols) * self.head_dim * 2
        gathered = splits * rows * (self.head_dim + 1) if self.tail == "cluster" and splits > 1 else 0
        return max(ring, 4 * (self.merge_words(rows) + gathered))

    def check(self, rows: int = 1, splits: int = 1):
        """This config, checked for `rows` packed rows and `splits` splits made (a ValueError naming the
        field that is wrong)."""
        d, w, bc, st = self.head_dim, self.warps, self.block_cols, self.stages
        if d not in HEAD_DIMS:
            raise ValueError(f"head_dim={d}: the tensor-core kernels support head_dim 64 and 128 only")
        if w not in (1, 2, 4, 8) or isinstance(w, bool):
            raise ValueError(f"warps must be 1, 2, 4 or 8; got {w!r}")
        if not isinstance(bc, int) or isinstance(bc, bool) or bc < 16 * w or bc % (16 * w):
            raise ValueError(f"block_cols must be a positive multiple of 16·warps = {16 * w}; got {bc!r}")
        if not isinstance(st, int) or isinstance(st, bool) or not 2 <= st <= 8:
            raise ValueError(f"stages must be an int in 2..8; got {st!r}")
        if not isinstance(self.fused_combine, bool):
            raise ValueError(f"fused_combine must be True or False; got {self.fused_combine!r}")
        if not isinstance(self.kv_groups, bool):
            raise ValueError(f"kv_groups must be True or False; got {self.kv_groups!r}")
        if self.kv_groups and st > 4:
            raise ValueError(
                f"kv_groups: stages={st} would need cp.async.wait_group {2 * st - 2} > 7; at most 4"
            )
        if self.tail not in TAILS:
            raise ValueError(f"tail must be one of {', '.join(TAILS)}; got {self.tail!r}")
        if self.tail != "atomic" and not self.fused_combine:
            raise ValueError(f"tail={self.tail!r} is the fused combine's: it needs fused_combine=True")
        if self.tail == "cluster" and splits > MAX_CLUSTER:
            raise ValueError(
                f"splits: tail='cluster' makes the {splits} splits of a unit one cluster; at most {MAX_CLUSTER}"
            )
        if self.smem_bytes(rows, splits) > DYNAMIC_SHARED_LIMIT:
            raise ValueError(
                f"block_cols={bc}, stages={st}, head_dim={d} need {self.smem_bytes(rows, splits)} bytes of "
                f"shared memory; at most {DYNAMIC_SHARED_LIMIT}"
            )
        return self

    @property
    def name(self) -> str:
        tail = {"atomic": "", "flagged": "_fl", "cluster": "_cl"}[self.tail] + (
            "_kvg" if self.kv_groups else ""
        )
        return f"w{self.warps}_bc{self.block_cols}_st{self.stages}{'' if self.fused_combine else '_2k'}{tail}"

    @property
    def flagged(self) -> bool:
        return self.tail == "flagged"

    def cluster_size(self, splits: int) -> int:
        """Blocks per thread-block cluster for `splits` splits made: all of them with the cluster tail
        (s > 1), else 0 (no cluster)."""
        return splits if self.tail == "cluster" and splits > 1 else 0


def default_config(head_dim: int, splits: int = 1) -> DecodeConfig:
    """simlib's defaults: at d = 64 8 warps, Bc = 128 keys per tile, a ring of 4 tiles (128 KiB: one block
    per SM; version 6, measured faster than 4 warps at 134 MB in three runs), at d = 128 4 warps, Bc = 64,
    a ring of 3 (96 KiB); for `splits` splits made, the cluster tail at 2 splits, else the atomic one
    (schedule.default_tail)."""
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim={head_dim}: the tensor-core kernels support head_dim 64 and 128 only")
    return DecodeConfig(
        head_dim,
        warps=schedule.DEFAULT_WARPS[head_dim],
        block_cols=schedule.DEFAULT_BLOCK_COLS[head_dim],
        stages=schedule.DEFAULT_STAGES[head_dim],
        tail=schedule.default_tail(splits),
    ).check(1, splits)


@functools.cache
def split_kernel(
    cfg: DecodeConfig,
    dtype: str,
    mt: int,
    counting: bool,
    simulator: bool,
    cluster: int = 0,
    stamps: bool = False,
):
    """The split kernel for one (config, dtype, m16 tiles of packed rows, build); `cluster`: the cluster
    tail's blocks per cluster, which must equal the splits made (``DecodeConfig.cluster_size``);
    `stamps` (a probe's build, not counting): thread 0 of block (sp, u) writes %globaltimer (ns) at the
    STAMP_POINTS into ``counters[(u·s + sp)·STAMPS + k]`` and, in slot STAMPS − 1, 1 if the block
    combined (one more block barrier after the partials' stores; the outputs are the same)."""
    if stamps and counting:
        raise ValueError("stamps: the stamped build writes its times into the counters; counting must be off")
    D, BC, W, NT, STAGES = cfg.head_dim, cfg.block_cols, cfg.warps, cfg.threads, cfg.stages
    KW = BC // W  # keys per warp per tile
    MT, QR = mt, 16 * mt
    KQ, NS, NO, KP = D // 16, KW // 8, D // 8, KW // 16  # Q k-steps, S n-tiles, O n-tiles, P k-steps
    QA, S_T, P_T, O_T, ROWS2 = MT * KQ, MT * NS, MT * KP, MT * NO, 2 * MT
    Q_ELEMS, STAGE = QR * D, 2 * BC * D  # 16-bit elements: Q, then the ring's stages of K | V
    F_M = W * QR * D  # fp32 offsets of the merge: O of every warp, then m, then l
    F_L = F_M + W * QR
    CPR = D // MERGE_COLS  # merge items per row
    COUNTING, FUSED = counting, cfg.fused_combine
    STAMPING, NSTAMP = stamps, STAMPS
    _, now = block_clocks()
    _, _, _, _, _, _, pack2, _, _, quad_sum, _, _ = warp_ops(dtype, simulator)
    smem_base, ldsm_x4, _, cp16, cp16z, _, ex2, fmax = addressed_ops(dtype, simulator)
    FLAGGED = cfg.flagged
    PB = 8 if FLAGGED else 4  # bytes of one partial value in global memory
    combine_row = combine_row_op(D, dtype, counting, simulator, FLAGGED)
    st_tagged, _ = tagged_ops(simulator)
    NTQ = min(NT, QR * D // 8)  # threads that copy Q: at W = 8, d = 64 one m16 tile is 128 copies of 16 B
    copy_q, copy_q_ragged = block_copiers(cp16, cp16z, QR, D, NTQ, simulator)
    copy_kv, copy_kv_ragged = block_copiers(cp16, cp16z, BC, D, NT, simulator)
    cp_commit = warp_ops(dtype, simulator).cp_commit
    cp_wait_all = warp_ops(dtype, simulator).cp_wait_all
    KV_GROUPS = cfg.kv_groups
    # my groups still in flight when tile j's K (or, kv_groups, its V) has landed: stages − 2 tiles of one
    # group each; kv_groups: two per tile, and the K wait comes before tile j + stages − 1 is issued
    cp_wait_ring = cp_wait_group(2 * STAGES - 3 if KV_GROUPS else STAGES - 2, simulator)
    cp_wait_v = cp_wait_group(2 * STAGES - 2 if KV_GROUPS else 0, simulator)
    arrive = arrive_acq_rel(simulator)
    CS = cluster  # blocks per cluster = splits (the cluster tail), else 0
    WTS = max(1, CS)
    cl_shape, cl_arrive, cl_wait, st_cluster, ld_gathered = cluster_ops(WTS, simulator)
    LEADER = uint32(CS - 1) if CS else uint32(0)  # the cluster's rank that combines: its last split
    F_G = cfg.merge_words(16 * mt)  # fp32 word where the gathered partials start (after the merge)
    ALIGN = None if simulator else 128
    C = np.float32(LOG2E / math.sqrt(D))  # softmax scale in base 2: exp(s/√d) = exp2(s·c)
    load_q, qk_step, softmax_update, pack_p, pv_products = flash_tile_ops(dtype, simulator, MT, NS, NO, D, C)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)
    LOW = np.uint32(0xFFFF)
    SIXTEEN = np.uint32(16)

    def issue_half(base, so, x, g, ck, tid):
        """My cp.async copies of one tile of K (or V) (rows from element g, ck of them valid: the rest
        zero-filled) into shared memory at element so; (global bytes read, shared bytes written)."""
        if ck == BC:
            return copy_kv(base, so, x, g, tid)
        return copy_kv_ragged(base, so, x, g, ck, tid)

    jit_device = cuda.jit(device=True) if simulator else cuda.jit(device=True, inline=True)
    issue_half = jit_device(issue_half)

    def issue_tile(base, so, k, v, g, ck, tid):
        """K and V of one tile into the stage at element so, as one group of copies (or, with
        ``kv_groups``, two: K's committed before V's are issued); (global bytes read, shared written)."""
        got, put = issue_half(base, so, k, g, ck, tid)
        if KV_GROUPS:
            cp_commit()
        got2, put2 = issue_half(base, so + BC * D, v, g, ck, tid)
        return got + got2, put + put2

    issue_tile = jit_device(issue_tile)

    def decode_split(q, k, v, o, o_part, lse_part, counters, arrivals, n_k, chunk, n_splits, rows):
        # q, o: flat (units·R·d,) uint16 bits; k, v: flat (units·L·d,); o_part: (units·R·s·d,) fp32,
        # lse_part (units·R·s,) fp32: log2 of the split's softmax sum in base-2 score units (s > 1 only);
        # arrivals (units,) int32, zero between launches: splits of the unit done (fused combine only)
        if CS:
            cl_shape()  # this kernel is launched in clusters of CS blocks along x (.reqnctapercluster)
        sm = cuda.shared.array(0, uint16, alignment=ALIGN)  # Q | ring: dynamic shared memory
        last = cuda.shared.array(1, int32)  # fused combine: 1 when this block is its unit's last split
        smf = cuda.shared.array(0, float32, alignment=ALIGN)  # the same bytes as fp32, for the merge
        base = smem_base(sm)
        qa = cuda.local.array((QA, 4), uint32)  # Q fragments (A operand), all of d
        s = cuda.local.array((S_T, 4), float32)  # S, then P, of my KW keys
        pa = cuda.local.array((P_T, 4), uint32)  # P in the dtype: the A fragments of PV
        acc = cuda.local.array((O_T, 4), float32)  # my unnormalised O over my keys
        m = cuda.local.array(ROWS2, float32)  # running max of my rows (base-2 units)
        lsum = cuda.local.array(ROWS2, float32)  # my partial running sums (my columns only)
        alpha = cuda.local.array(W, float32)  # the merge's weights 2^(m_w − M)
        wts = cuda.local.array(WTS, float32)  # the cluster tail's weights 2^(lse_j − M)
        xa = cuda.local.array(4, int32)  # swizzled chunk offsets of my ldmatrix rows (Q and V)
        xk = cuda.local.array(4, int32)  # the same for K

        tid = cuda.threadIdx.x
        lane = tid & 31
        w = tid >> 5
        g = lane >> 2  # my rows in m-tile mt: 16·mt + g and + 8
        tq = lane & 3  # my columns inside each 8-wide n-tile: 2tq, 2tq + 1
        sp = cuda.blockIdx.x  # which split
        u = cuda.blockIdx.y  # which unit (batch, KV head)
        k0 = sp * chunk
        c = min(chunk, n_k - k0)  # keys of this split (at least 1)
        nt = (c + BC - 1) // BC
        kvg = (u * n_k + k0) * D
        # the flagged tail's epoch: one more than the last launch's (its combiners left it in arrivals)
        ep = uint32(arrivals[u] + 1) if FLAGGED else uint32(0)

        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        stamp0 = (u * n_splits + sp) * NSTAMP  # the stamps build: my slots in counters
        if STAMPING and tid == 0:
            counters[stamp0] = now()

        # --- Q (zero-filled past R) and the first stages − 1 tiles in flight, one group each
        if tid < NTQ:
            got, put = copy_q_ragged(base, 0, q, u * rows * D, rows, tid)
            if COUNTING:
                n_gr += got
                n_sw += put
        for st in range(STAGES - 1):
            if st < nt:
                got, put = issue_tile(
                    base, Q_ELEMS + st * STAGE, k, v, kvg + st * BC * D, min(BC, c - st * BC), tid
                )
                if COUNTING:
                    n_gr += got
                    n_sw += put
            elif KV_GROUPS:
                cp_commit()  # K's empty group
            cp_commit()  # an empty group past the end keeps the count of groups the same

        # ldmatrix lane roles and swizzled offsets as in fa2_tc (every row index used is ≡ lane mod 8)
        swz = lane & 7
        for cc in range(4):
            xa[cc] = ((2 * cc + (lane >> 4)) ^ swz) << 3
            xk[cc] = ((2 * cc + ((lane >> 3) & 1)) ^ swz) << 3
        q_lane = ((lane & 7) + ((lane >> 3) & 1) * 8) * D
        k_lane = (w * KW + (lane & 7) + (lane >> 4) * 8) * D
        v_lane = BC * D + (w * KW + (lane & 7) + ((lane >> 3) & 1) * 8) * D

        for e in range(ROWS2):
            m[e] = NEG_INF
            lsum[e] = ZERO
        for t in range(O_T):
            for e in range(4):
                acc[t, e] = ZERO

        for j in range(nt):
            cp_wait_ring()  # my copies of tile j (and Q) have landed
            cuda.syncthreads()  # everyone's; and everyone is done with tile j − 1's stage
            if STAMPING and tid == 0:
                if j == 0:
                    counters[stamp0 + 1] = now()
                if j == nt - 1:
                    counters[stamp0 + 2] = now()
            if j == 0:
                load_q(qa, base, q_lane, xa)
                if COUNTING:
                    n_sr += 16 * MT * KQ
            nx = j + STAGES - 1  # refill the stage tile j − 1 used
            if nx < nt:
                so = Q_ELEMS + (nx % STAGES) * STAGE
                got, put = issue_tile(base, so, k, v, kvg + nx * BC * D, min(BC, c - nx * BC), tid)
                if COUNTING:
                    n_gr += got
                    n_sw += put
            elif KV_GROUPS:
                cp_commit()
            cp_commit()
            so = Q_ELEMS + (j % STAGES) * STAGE

            # --- S = Q K_jᵀ over my KW keys
            for t in range(S_T):
                for e in range(4):
                    s[t, e] = ZERO
            for kk in range(KQ):
                qk_step(s, qa, kk, KQ, base, so + k_lane, xk, kk)
            if COUNTING:
                n_sr += 16 * KQ * (NS // 2)

            # --- keys past the split's end (only in its last tile) get −∞
            kw0 = j * BC + w * KW  # my first key, counted from the split's start
            if kw0 + KW > c:
                for mt in range(MT):
                    for t in range(NS):
                        for e in range(2):
                            if kw0 + 8 * t + 2 * tq + e >= c:
                                s[mt * NS + t, e] = NEG_INF
                                s[mt * NS + t, 2 + e] = NEG_INF

            # --- online softmax of my 2·MT rows over my keys (a quad of lanes shares a row), P in the dtype
            softmax_update(s, m, lsum, acc)
            pack_p(s, pa)

            # --- O += P V_j over my KW keys (kv_groups: once everyone's copies of V_j have landed)
            if KV_GROUPS:
                cp_wait_v()
                cuda.syncthreads()
            pv_products(acc, pa, base, so + v_lane, xa)
            if COUNTING:
                n_sr += 16 * KP * (NO // 2)

        # --- the warps' (m, l, O) into shared memory (fp32, over the ring: everyone is done with it)
        cp_wait_all()
        if CS:
            # cluster tail, phase 1: I am done with my ring, which the leader's gathered partials
            # overlap; every block waits until the leader is too before it stores into the leader's
            cl_arrive()
        cuda.syncthreads()
        if STAMPING and tid == 0:
            counters[stamp0 + 3] = now()
        for mt in range(MT):
            for h in range(2):
                row = 16 * mt + 8 * h + g
                lt = quad_sum(lsum[2 * mt + h])
                if row < rows:
                    for t in range(NO):
                        col = 8 * t + 2 * tq
                        smf[(w * QR + row) * D + col] = acc[mt * NO + t, 2 * h]
                        smf[(w * QR + row) * D + col + 1] = acc[mt * NO + t, 2 * h + 1]
                    if COUNTING:
                        n_sw += 8 * NO
                    if tq == 0:
                        smf[F_M + w * QR + row] = m[2 * mt + h]
                        smf[F_L + w * QR + row] = lt
                        if COUNTING:
                            n_sw += 8
        cuda.syncthreads()
        if CS:
            cl_wait()
        if STAMPING and tid == 0:
            counters[stamp0 + 4] = now()
        gat = (F_G + sp * rows * D) if CS else 0  # cluster tail: my partial rows in the leader's memory
        gat_lse = F_G + CS * rows * D + sp * rows

        # --- merge: each item is MERGE_COLS consecutive columns of one valid row
        item = tid
        while item < rows * CPR:
            row = item // CPR
            c0 = (item - row * CPR) * MERGE_COLS
            mx = NEG_INF
            for ww in range(W):
                alpha[ww] = smf[F_M + ww * QR + row]
                mx = fmax(mx, alpha[ww])
            total = ZERO
            for ww in range(W):
                alpha[ww] = ex2(alpha[ww] - mx)  # a warp that saw no key: 2^(−∞) = 0
                total += alpha[ww] * smf[F_L + ww * QR + row]
            if COUNTING:
                n_sr += 8 * W + 4 * W * MERGE_COLS
            inv = ONE / total
            out = (u * rows + row) * D + c0
            for e in range(0, MERGE_COLS, 2):
                x0 = ZERO
                x1 = ZERO
                for ww in range(W):
                    x0 += alpha[ww] * smf[(ww * QR + row) * D + c0 + e]
                    x1 += alpha[ww] * smf[(ww * QR + row) * D + c0 + e + 1]
                if n_splits == 1:
                    pair = pack2(x0 * inv, x1 * inv)
                    o[out + e] = pair & LOW
                    o[out + e + 1] = pair >> SIXTEEN
                else:
                    part = ((u * rows + row) * n_splits + sp) * D + c0
                    if CS:
                        g0 = gat + row * D + c0 + e
                        st_cluster(base, g0, LEADER, x0 * inv, o_part, part + e)
                        st_cluster(base, g0 + 1, LEADER, x1 * inv, o_part, part + e + 1)
                    elif FLAGGED:
                        st_tagged(o_part, part + e, x0 * inv, ep)
                        st_tagged(o_part, part + e + 1, x1 * inv, ep)
                    else:
                        o_part[part + e] = x0 * inv
                        o_part[part + e + 1] = x1 * inv
            if COUNTING:
                if n_splits == 1:
                    n_gw += 2 * MERGE_COLS
                elif CS:
                    n_sw += 4 * MERGE_COLS  # into the leader's shared memory
                else:
                    n_gw += PB * MERGE_COLS
            if n_splits > 1 and c0 == 0:
                lse = mx + float32(math.log2(total))
                if CS:
                    st_cluster(base, gat_lse + row, LEADER, lse, lse_part, (u * rows + row) * n_splits + sp)
                    if COUNTING:
                        n_sw += 4
                else:
                    if FLAGGED:
                        st_tagged(lse_part, (u * rows + row) * n_splits + sp, lse, ep)
                    else:
                        lse_part[(u * rows + row) * n_splits + sp] = lse
                    if COUNTING:
                        n_gw += PB
            item += NT
        if STAMPING:
            cuda.syncthreads()
            if tid == 0:
                counters[stamp0 + 5] = now()

        # --- fused combine: the unit's last split to finish (an atomic count of arrivals) combines the
        # s partials of its rows, one warp per row, as the combine kernel would (they are in L2 by then)
        if CS:
            # the cluster tail, phase 2: every block's partials are in the leader's shared memory once
            # every thread of the cluster has arrived (release: my DSMEM stores; the leader's wait
            # acquires them); the leader's threads combine 8 columns of one row each
            cl_arrive()
            cl_wait()
            if sp == CS - 1:
                item = tid
                while item < rows * CPR:
                    row = item // CPR
                    c0 = (item - row * CPR) * MERGE_COLS
                    gp = (u * rows + row) * n_splits  # the same values' place among global partials
                    mx = NEG_INF
                    for j in range(CS):
                        wts[j] = ld_gathered(smf, F_G + CS * rows * D + j * rows + row, lse_part, gp + j)
                        mx = fmax(mx, wts[j])
                    total = ZERO
                    for j in range(CS):
                        wts[j] = ex2(wts[j] - mx)
                        total += wts[j]
                    inv = ONE / total
                    out = (u * rows + row) * D + c0
                    for e in range(0, MERGE_COLS, 2):
                        x0 = ZERO
                        x1 = ZERO
                        for j in range(CS):
                            wi = F_G + (j * rows + row) * D + c0 + e
                            gi = (gp + j) * D + c0 + e
                            x0 += wts[j] * ld_gathered(smf, wi, o_part, gi)
                            x1 += wts[j] * ld_gathered(smf, wi + 1, o_part, gi + 1)
                        pair = pack2(x0 * inv, x1 * inv)
                        o[out + e] = pair & LOW
                        o[out + e + 1] = pair >> SIXTEEN
                    if COUNTING:
                        n_sr += 4 * CS * (1 + MERGE_COLS)
                        n_gw += 2 * MERGE_COLS
                    item += NT
        elif FLAGGED and n_splits > 1:
            # the flagged tail: split s − 1 combines (no arrival count): its warps poll the partials'
            # tags until all s are this launch's, then combine as below; the others are done
            if sp == n_splits - 1:
                for rr in range(w, rows, W):
                    got, put = combine_row(o_part, lse_part, o, u * rows + rr, n_splits, lane, True, ep)
                    if COUNTING:
                        n_gr += got
                        n_gw += put
                if tid == 0:
                    arrivals[u] = int32(ep)  # the next launch's blocks tag with ep + 1
        elif FUSED and n_splits > 1:
            cuda.syncthreads()  # every thread's partial stores are made before the block counts itself in
            if tid == 0:  # release (publishes the block's partials), acquire (sees the earlier arrivals')
                last[0] = 1 if arrive(arrivals, u) == n_splits - 1 else 0
            cuda.syncthreads()
            if STAMPING and tid == 0:
                counters[stamp0 + 6] = now()
                counters[stamp0 + NSTAMP - 1] = last[0]
            if last[0] == 1:
                for rr in range(w, rows, W):
                    got, put = combine_row(o_part, lse_part, o, u * rows + rr, n_splits, lane, True, ep)
                    if COUNTING:
                        n_gr += got
                        n_gw += put
                if tid == 0:
                    arrivals[u] = 0  # ready for the next launch
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)
        if STAMPING and tid == 0:
            counters[stamp0 + 7] = now()

    decode_split.__name__ = decode_split.__qualname__ = (
        f"decode_split_{dtype}_d{D}_{cfg.name}_mt{MT}{'_count' if COUNTING else ''}{'_stamps' if STAMPING else ''}"
    )
    return cuda.jit(decode_split)


def combine_rows(head_dim: int) -> int:
    """Rows (warps) per block of the combine kernel: FA2's kBlockM, as simlib.decode_time models it."""
    from simlib.decode_time import combine_rows_per_cta

    return combine_rows_per_cta(head_dim)


@functools.cache
def combine_row_op(head_dim: int, dtype: str, counting: bool, simulator: bool, flagged: bool = False):
    """A device function ``(o_part, lse_part, o, row, n_splits, lane, ok, ep) -> (global bytes read,
    written)``:
    one warp writes output row `row` from its s partial rows: lane j holds the log-sum-exps of splits
    j, j + 32, ... (at most 128), the weights 2^(lse_j − lse) go to every lane by shuffle, each lane sums
    its d/32 columns. The lse and the first U = COMBINE_BATCH partial rows are loaded before any is used
    (at s <= U the combine waits for one L2 round trip), each later group of U in one more. A warp with
    ``ok`` False (a short last block of the combine kernel) takes part in the shuffles and reads and
    writes nothing. ``flagged``: the partials are 8-byte (value, tag) words (``tagged_ops``) and each
    group of loads is repeated until every tag read equals the launch's epoch `ep` (the flagged tail:
    the partials of other blocks still on their way); the bytes counted are those of the last pass."""
    D = head_dim
    FLAGGED = flagged
    PB = 8 if flagged else 4  # bytes of one partial value in global memory
    _, ld_tagged = tagged_ops(simulator)
    MAX_POLLS = 1 << 20 if flagged else 1 << 30  # flagged: ≈ 1 s of L2 round trips, then O is NaN
    NAN = np.float32(np.nan)
    CPL = D // 32  # columns per lane
    SLOTS = MAX_SPLITS // 32
    U = COMBINE_BATCH  # partial rows loaded at once (divides 32)
    COUNTING = counting
    _, _, _, _, _, _, pack2, _, _, _, warp_max, warp_sum = warp_ops(dtype, simulator)
    ex2 = addressed_ops(dtype, simulator).ex2
    fmax = addressed_ops(dtype, simulator).fmax
    bcast = lane_broadcast(simulator)
    NEG_INF = np.float32(-np.inf)
    ZERO = np.float32(0.0)
    ONE = np.float32(1.0)
    LOW = np.uint32(0xFFFF)
    SIXTEEN = np.uint32(16)

    def ld_part(a, i, ep):
        """(value, ready): a plain fp32 load, or a tagged one and whether its tag is this launch's."""
        if FLAGGED:
            val, tag = ld_tagged(a, i)
            return val, tag == ep
        return a[i], True

    ld_part = (cuda.jit(device=True) if simulator else cuda.jit(device=True, inline=True))(ld_part)

    def combine_row(o_part, lse_part, o, row, n_splits, lane, ok, ep):
        x = cuda.local.array(SLOTS, float32)  # lse of splits lane, lane + 32, ...; then their weights
        acc = cuda.local.array(CPL, float32)
        vals = cuda.local.array((U, CPL), float32)  # my columns of U partial rows, loaded together
        n_gr = 0
        n_gw = 0
        # every load of the first U splits is issued here, before any value is used: the lse and the
        # partial rows do not depend on each other, so for s <= U the combine waits for one L2 round
        # trip (version 2 waited for the lse, then for each group of 8 rows)
        # (flagged: again, all of them, until every tag read is this launch's; plain: once)
        ready = False
        polls = 0
        while not ready and polls < MAX_POLLS:
            ready = True
            polls += 1
            for sl in range(SLOTS):
                j = lane + 32 * sl
                x[sl] = NEG_INF
                if ok and j < n_splits:
                    val, got = ld_part(lse_part, row * n_splits + j, ep)
                    x[sl] = val
                    ready = ready and got
            for uu in range(U):
                part = (row * n_splits + uu) * D + lane * CPL
                for e in range(CPL):
                    vals[uu, e] = ZERO
                    if ok and uu < n_splits:
                        val, got = ld_part(o_part, part + e, ep)
                        vals[uu, e] = val
                        ready = ready and got
        if COUNTING and ok:
            for sl in range(SLOTS):
                if lane + 32 * sl < n_splits:
                    n_gr += PB
            n_gr += PB * CPL * min(U, n_splits)
        mx = NEG_INF
        for sl in range(SLOTS):
            mx = fmax(mx, x[sl])
        mx = warp_max(mx)
        if not ok:
            mx = ZERO
        total = ZERO
        for sl in range(SLOTS):
            x[sl] = ex2(x[sl] - mx)  # 2^(−∞) = 0 past the last split
            total += x[sl]
        total = warp_sum(total)
        inv = ONE / total if ok else ZERO
        for e in range(CPL):
            acc[e] = ZERO
        # U splits at a time (lanes past the last split hold weight 0: their partial reads as 0, unread);
        # the first U are already in registers, each later group is one more round trip
        for j0 in range(0, n_splits, U):
            xs = x[0]  # the slot that holds the weights of splits j0 .. j0 + U − 1 (U divides 32)
            for sl in range(1, SLOTS):
                if j0 >= 32 * sl:
                    xs = x[sl]
            if j0 > 0:
                ready = False
                while not ready and polls < MAX_POLLS:
                    ready = True
                    polls += 1
                    for uu in range(U):
                        part = (row * n_splits + j0 + uu) * D + lane * CPL
                        for e in range(CPL):
                            vals[uu, e] = ZERO
                            if ok and j0 + uu < n_splits:
                                val, got = ld_part(o_part, part + e, ep)
                                vals[uu, e] = val
                                ready = ready and got
                if COUNTING and ok:
                    n_gr += PB * CPL * min(U, n_splits - j0)
            for uu in range(U):
                wj = bcast(xs, (j0 + uu) & 31) * inv
                for e in range(CPL):
                    acc[e] += wj * vals[uu, e]
        if polls >= MAX_POLLS:  # a partial that never came (a bug, or a grid not resident): NaN, not a hang
            for e in range(CPL):
                acc[e] = NAN
        if ok:
            for e in range(0, CPL, 2):
                pair = pack2(acc[e], acc[e + 1])
                o[row * D + lane * CPL + e] = pair & LOW
                o[row * D + lane * CPL + e + 1] = pair >> SIXTEEN
            if COUNTING:
                n_gw += 2 * CPL
        return n_gr, n_gw

    return (cuda.jit(device=True) if simulator else cuda.jit(device=True, inline=True))(combine_row)


@functools.cache
def combine_kernel(head_dim: int, dtype: str, counting: bool, simulator: bool):
    """O from the s partial rows of every output row: one warp per row, combine_rows(d) per block."""
    D, RB = head_dim, combine_rows(head_dim)
    COUNTING = counting
    combine_row = combine_row_op(D, dtype, counting, simulator)
    EP0 = np.uint32(0)  # plain fp32 partials: no epoch

    def decode_combine(o_part, lse_part, o, counters, n_rows, n_splits):
        tid = cuda.threadIdx.x
        row = cuda.blockIdx.x * RB + (tid >> 5)
        # a short last block: its spare warps still take part in the shuffles
        n_gr, n_gw = combine_row(o_part, lse_part, o, row, n_splits, tid & 31, row < n_rows, EP0)
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, 0, 0)

    decode_combine.__name__ = decode_combine.__qualname__ = (
        f"decode_combine_{dtype}_d{D}{'_count' if COUNTING else ''}"
    )
    return cuda.jit(decode_combine)


def split_signature(flagged: bool = False):
    """The split kernel's argument types; ``flagged``: the partials are uint64 (value, tag) words."""
    from numba.cuda import types

    u16 = types.Array(types.uint16, 1, "C")
    part = types.Array(types.uint64 if flagged else types.float32, 1, "C")
    i64 = types.int64
    c64, c32 = types.Array(types.int64, 1, "C"), types.Array(types.int32, 1, "C")
    return (u16, u16, u16, u16, part, part, c64, c32, i64, i64, i64, i64)


def combine_signature():
    from numba.cuda import types

    u16, f32 = types.Array(types.uint16, 1, "C"), types.Array(types.float32, 1, "C")
    return (f32, f32, u16, types.Array(types.int64, 1, "C"), types.int64, types.int64)


def ptx_of(
    cfg: DecodeConfig, dtype: str, rows: int, counting: bool, cc=(9, 0), splits: int = 1
) -> tuple[str, str]:
    """The PTX of the split and combine kernels of one build (NVVM only; no GPU needed); `splits`: the
    splits made (the cluster tail's cluster size)."""
    mt = -(-rows // 16)
    split = split_kernel(
        cfg.check(rows, splits), check_dtype(dtype), mt, counting, False, cfg.cluster_size(splits)
    )
    comb = combine_kernel(cfg.head_dim, dtype, counting, False)
    return (
        cuda.compile_ptx(split.py_func, split_signature(cfg.flagged), cc=cc)[0],
        cuda.compile_ptx(comb.py_func, combine_signature(), cc=cc)[0],
    )


@dataclass
class DecodeResult:
    o: np.ndarray  # (B, H, q_len, d) fp32 (the dtype's values)
    config: DecodeConfig
    splits: int  # splits made
    counts: dict | None = None  # bytes, both kernels


@dataclass(frozen=True)
class DecodePlan:
    """One decode step: the split kernel, then (s > 1) the combine kernel. shape = (B, H, H_kv, q_len, L, d)."""

    shape: tuple
    config: DecodeConfig
    dtype: str
    splits: int  # splits asked for
    counting: bool = False

    @property
    def rows(self) -> int:
        b, h, hkv, ql, _, _ = self.shape
        return (h // hkv) * ql

    @property
    def units(self) -> int:
        return self.shape[0] * self.shape[2]

    @property
    def chunk(self) -> int:
        return -(-self.shape[4] // self.splits)

    @property
    def splits_made(self) -> int:
        return schedule.made_splits(self.shape[4], self.splits)

    @property
    def smem_bytes(self) -> int:
        return self.config.smem_bytes(self.rows, self.splits_made)

    @property
    def cluster(self) -> int:
        """Blocks per thread-block cluster (the cluster tail: the splits made), or 0."""
        return self.config.cluster_size(self.splits_made)

    def partial_sizes(self) -> tuple[int, int]:
        """Elements of the partial O and lse buffers (1 each when s = 1: not used): fp32, or with
        ``tail="flagged"`` uint64 (value, tag) words, which must start with tags no epoch of
        `arrival_counts` (``flagged=True``) has reached yet: zero (``new_partials``)."""
        s = self.splits_made
        if s == 1:
            return 1, 1
        return self.units * self.rows * s * self.shape[5], self.units * self.rows * s

    def kernels(self):
        sim = simulator_enabled()
        mt = -(-self.rows // 16)
        split = split_kernel(self.config, self.dtype, mt, self.counting, sim, self.cluster)
        comb = combine_kernel(self.config.head_dim, self.dtype, self.counting, sim)
        return split, comb

    def new_partials(self, poison: bool = False):
        """Device buffers for the partial O and lse: fp32 NaN, or (flagged) tag 0 with a NaN value."""
        n_part, n_lse = self.partial_sizes()
        if self.config.flagged:
            fill = np.uint64(0x7FC00000) if poison else np.uint64(0)
            return tuple(cuda.to_device(np.full(n, fill, np.uint64)) for n in (n_part, n_lse))
        return tuple(cuda.to_device(np.full(n, np.nan, np.float32)) for n in (n_part, n_lse))

    def launch(self, q, k, v, o, o_part, lse_part, counters):
        """Flat device arrays (uint16 bits for q, k, v, o; fp32 partials); no checks, no sync. With the
        fused combine, one launch (the split kernel's arrival counts: ``arrival_counts``), else two."""
        self.launch_split(q, k, v, o, o_part, lse_part, counters)
        if self.splits_made > 1 and not self.config.fused_combine:
            self.launch_combine(o, o_part, lse_part, counters)

    def launch_split(self, q, k, v, o, o_part, lse_part, counters):
        """The split kernel alone (with the fused combine: the whole step)."""
        split, _ = self.kernels()
        nk, s, rows = self.shape[4], self.splits_made, self.rows
        flagged = self.config.flagged
        if not simulator_enabled():
            allow_dynamic_smem(split, self.smem_bytes, split_signature(flagged))
            allow_cluster(split, self.cluster, split_signature(flagged))
        split[(s, self.units), self.config.threads, 0, self.smem_bytes](
            q,
            k,
            v,
            o,
            o_part,
            lse_part,
            counters,
            arrival_counts(self.units, flagged),
            nk,
            self.chunk,
            s,
            rows,
        )

    def launch_combine(self, o, o_part, lse_part, counters):
        """The combine kernel alone (s > 1), on the partials the split kernel left."""
        _, comb = self.kernels()
        n_rows, rb = self.units * self.rows, combine_rows(self.shape[5])
        comb[(-(-n_rows // rb),), 32 * rb](o_part, lse_part, o, counters, n_rows, self.splits_made)


_ARRIVALS: dict = {}


def arrival_counts(units: int, flagged: bool = False):
    """A zeroed int32 device array of at least `units` counts, made once per process (and per simulator
    mode) and reused: the fused combine's last block sets its unit's count back to 0, so launches
    queued on one stream may share it (launches on concurrent streams may not). ``flagged``: a separate
    array of per-unit epochs (the flagged tail's combiner leaves the launch's epoch there, the next
    launch tags its partials with one more), under the same rule."""
    key = (simulator_enabled(), units, flagged)
    if key not in _ARRIVALS:
        _ARRIVALS[key] = cuda.to_device(np.zeros(max(1, units), np.int32))
    return _ARRIVALS[key]


def plan_decode_tc(
    q, k, v, *, dtype="bf16", config: DecodeConfig | None = None, splits=None, counting=False, causal=False
):
    """A checked plan from host or device q (B, H, q_len, d), k and v (B, H_kv, L, d). A bad dtype,
    shape, head dim, config or split count is a ValueError naming it, before anything is compiled."""
    from ..checks import check_attention_inputs

    if causal:
        raise ValueError("causal: a decode step attends the whole cache (decode_tc has no mask)")
    check_dtype(dtype)
    shape = check_attention_inputs(q, k, v)
    b, h, nk, d = shape.batch, shape.heads, shape.seq_len, shape.head_dim
    hkv, ql = shape.kv_heads or h, shape.query_len or nk
    rows = (h // hkv) * ql
    if rows > MAX_ROWS:
        raise ValueError(
            f"query_len: the packed rows (heads/kv_heads)·query_len = {rows} exceed {MAX_ROWS} (two m16 tiles)"
        )
    cfg = default_config(d) if config is None else config
    cfg.check(rows)
    if cfg.head_dim != d:
        raise ValueError(f"config.head_dim={cfg.head_dim} does not match the inputs' head_dim={d}")
    if splits is None:
        splits = default_splits(b, hkv, nk, d, rows, dtype)
        if cfg.tail == "cluster":  # one cluster per unit: at most 16 blocks
            splits = min(splits, MAX_CLUSTER)
    if not isinstance(splits, (int, np.integer)) or isinstance(splits, bool) or not 1 <= splits <= MAX_SPLITS:
        raise ValueError(f"splits must be an int in 1..{MAX_SPLITS}; got {splits!r}")
    if config is None:  # the default tail depends on the splits made (cluster at 2)
        cfg = default_config(d, schedule.made_splits(nk, int(splits)))
    plan = DecodePlan((b, h, hkv, ql, nk, d), cfg, dtype, int(splits), bool(counting))
    cfg.check(rows, plan.splits_made)
    if cfg.flagged and not simulator_enabled():  # the combiners poll: every block must be resident
        blocks, sms = plan.splits_made * plan.units, cuda.get_current_device().MULTIPROCESSOR_COUNT
        if blocks > sms:
            raise ValueError(
                f"config.tail='flagged': {blocks} blocks ({plan.splits_made} splits × {plan.units} units) "
                f"exceed the {sms} SMs; its combiners wait for every split, so the grid must fit one wave"
            )
    return plan


def run_decode_tc(
    q, k, v, *, dtype="bf16", config: DecodeConfig | None = None, splits=None, count=False, causal=False
):
    """Flash-decoding for host fp32 arrays rounded to `dtype` on the way in: q (B, H, q_len, d), k and v
    (B, H_kv, L, d). O comes back as the fp32 values of the dtype's result; it is poisoned with the
    dtype's NaN bits before the launch, the partials with fp32 NaN."""
    plan = plan_decode_tc(q, k, v, dtype=dtype, config=config, splits=splits, counting=count, causal=causal)
    b, h, _, ql, _, d = plan.shape
    dq, dk, dv = upload(dtype, q, k, v)
    do = cuda.to_device(to_bits(np.full(b * h * ql * d, np.nan, np.float32), dtype))
    dp, dl = plan.new_partials(poison=True)
    counters = new_counters()
    plan.launch(dq, dk, dv, do, dp, dl, counters)
    if not simulator_enabled():
        cuda.synchronize()
    return DecodeResult(
        o=from_bits(do.copy_to_host(), dtype).reshape(b, h, ql, d),
        config=plan.config,
        splits=plan.splits_made,
        counts=counts_from(counters, unit_bytes=1) if count else None,
    )
