"""`count()`: one call from (algorithm, workload, SRAM or tiles) to exact traffic."""
from dataclasses import dataclass

from .schedules import SCHEDULES
from .schedules.decode import DecodeMapping, packed_rows
from .schedules.fa2_fast import FastMapping, make_fast_mapping
from .schedules.naive import NaiveMapping
from .schedules.unfused import UnfusedMapping
from .tiling import Tiling, make_tiling, max_block, sram_elements
from .traffic import Traffic
from .units import parse_size
from .workload import Workload, check_positive_int

ALGORITHMS = tuple(SCHEDULES)
TILED = ("fa1", "fa2", "flash_bwd")
MATMUL_TILED = ("naive", "naive_bwd")
UNFUSED = ("unfused", "unfused_bwd")


@dataclass(frozen=True)
class Result:
    """Exact traffic of one algorithm on one workload. Byte totals are over all B·H heads."""

    algorithm: str
    workload: Workload
    sram_bytes: int | None
    mapping: object          # Tiling (fa1, fa2) or NaiveMapping (naive)
    traffic: Traffic         # per batch·head, in elements

    @property
    def units(self):
        """Independent units of work the per-unit traffic is multiplied by (B·H, or B·kv_heads)."""
        return SCHEDULES[self.algorithm].units(self.workload)

    def _bytes(self, level, op=None):
        return self.traffic.bytes(self.workload.element_bytes, level, op) * self.units

    @property
    def hbm_read_bytes(self):
        return self._bytes("HBM", "read")

    @property
    def hbm_write_bytes(self):
        return self._bytes("HBM", "write")

    @property
    def hbm_bytes(self):
        return self._bytes("HBM")

    @property
    def sram_read_bytes(self):
        return self._bytes("SRAM", "read")

    @property
    def sram_write_bytes(self):
        return self._bytes("SRAM", "write")

    @property
    def sram_bytes_moved(self):
        return self._bytes("SRAM")

    @property
    def flops(self):
        """Matmul FLOPs the schedule performs (masked scores inside visited tiles included)."""
        return SCHEDULES[self.algorithm].flops(self.workload, self.mapping) * self.units

    @property
    def useful_flops(self):
        """4·d per unmasked score, over all heads: what the forward pass needs, exactly."""
        return self.workload.flops

    @property
    def block_rows(self):
        return self.mapping.block_rows if isinstance(self.mapping, Tiling) else None

    @property
    def block_cols(self):
        return self.mapping.block_cols if isinstance(self.mapping, (Tiling, DecodeMapping)) else None

    @property
    def tr(self):
        return self.mapping.tr if isinstance(self.mapping, Tiling) else None

    @property
    def tc(self):
        return self.mapping.tc if isinstance(self.mapping, Tiling) else None

    def table(self):
        """Per (level, op, tensor, phase) elements and bytes, over all B·H heads, as a DataFrame."""
        return self.traffic.frame(self.workload.element_bytes, scale=self.units)

    def to_dict(self):
        w = self.workload
        out = {
            "algorithm": self.algorithm, "seq_len": w.seq_len, "head_dim": w.head_dim,
            "batch": w.batch, "heads": w.heads, "kv_heads": w.n_kv_heads, "query_len": w.nq,
            "causal": w.causal, "dtype": w.dtype, "sram_bytes": self.sram_bytes,
            "block_rows": self.block_rows, "block_cols": self.block_cols, "tr": self.tr, "tc": self.tc,
            "hbm_read_bytes": self.hbm_read_bytes, "hbm_write_bytes": self.hbm_write_bytes,
            "hbm_bytes": self.hbm_bytes, "sram_read_bytes": self.sram_read_bytes,
            "sram_write_bytes": self.sram_write_bytes, "flops": self.flops,
            "useful_flops": self.useful_flops,
        }
        if isinstance(self.mapping, NaiveMapping):
            out["matmul_tile"] = self.mapping.matmul_tile
            out["softmax_threads"] = self.mapping.softmax_threads
        if isinstance(self.mapping, DecodeMapping):
            out["splits"] = self.mapping.splits
        if isinstance(self.mapping, UnfusedMapping):
            out["dropout"] = self.mapping.dropout
        if isinstance(self.mapping, FastMapping):
            out["thread_rows"] = self.mapping.thread_rows
            out["thread_cols"] = self.mapping.thread_cols
        return out


def _refuse(algorithm, **given):
    names = [name for name, value in given.items() if value is not None]
    if names:
        raise ValueError(f"{'/'.join(names)} do(es) not apply to {algorithm}")


def _decode_mapping(workload, sram_bytes, block_cols, splits):
    if workload.causal:
        raise ValueError("causal: a decode step attends the whole cache; use causal with prefill algorithms")
    if splits is not None:
        check_positive_int("splits", splits)
    tiling = make_tiling(workload, sram_bytes, 1, block_cols)   # Bc, checked like fa2's
    if sram_bytes is not None and packed_rows(workload) > max_block(sram_bytes, workload.element_bytes,
                                                                    workload.head_dim):
        raise ValueError(f"query_len: the packed query block of group·query_len = {packed_rows(workload)} "
                         f"rows does not fit in sram_bytes={sram_bytes}")
    return DecodeMapping(tiling.block_cols, splits or 1)


def _naive_mapping(workload, sram_bytes, matmul_tile, softmax_threads):
    if matmul_tile is not None:
        check_positive_int("matmul_tile", matmul_tile)
        if sram_bytes is not None:
            m = sram_elements(sram_bytes, workload.element_bytes, workload.head_dim)
            if 2 * matmul_tile**2 > m:
                raise ValueError(f"matmul_tile={matmul_tile} does not fit in SRAM: two T×T tiles need "
                                 f"{2 * matmul_tile**2} elements, sram_bytes={sram_bytes} holds {m}")
    if softmax_threads is not None:
        check_positive_int("softmax_threads", softmax_threads)
        if softmax_threads < 2 or softmax_threads & (softmax_threads - 1):
            raise ValueError(f"softmax_threads must be a power of two ≥ 2, got {softmax_threads}")
    return NaiveMapping(matmul_tile, softmax_threads)


def make_mapping(algorithm, workload, sram_bytes=None, block_rows=None, block_cols=None,
                 matmul_tile=None, softmax_threads=None, splits=None, dropout=None, threads=None):
    """Validate the schedule's parameters and build its mapping."""
    if algorithm not in SCHEDULES:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    if algorithm == "fa2_fast":
        _refuse(algorithm, matmul_tile=matmul_tile, softmax_threads=softmax_threads, splits=splits,
                dropout=dropout)
        return make_fast_mapping(workload, sram_bytes, block_rows, block_cols, threads)
    _refuse(algorithm, threads=threads)
    if algorithm in TILED:
        _refuse(algorithm, matmul_tile=matmul_tile, softmax_threads=softmax_threads, splits=splits,
                dropout=dropout)
        return make_tiling(workload, sram_bytes, block_rows, block_cols)
    if algorithm == "decode":
        _refuse(algorithm, block_rows=block_rows, matmul_tile=matmul_tile,
                softmax_threads=softmax_threads, dropout=dropout)
        return _decode_mapping(workload, sram_bytes, block_cols, splits)
    if algorithm in UNFUSED:
        _refuse(algorithm, block_rows=block_rows, block_cols=block_cols, matmul_tile=matmul_tile,
                softmax_threads=softmax_threads, splits=splits)
        return UnfusedMapping(True if dropout is None else bool(dropout))
    _refuse(algorithm, block_rows=block_rows, block_cols=block_cols, splits=splits, dropout=dropout)
    if algorithm == "naive_bwd":
        _refuse(algorithm, softmax_threads=softmax_threads)
    return _naive_mapping(workload, sram_bytes, matmul_tile, softmax_threads)


def count(algorithm, workload, *, sram_bytes=None, block_rows=None, block_cols=None,
          matmul_tile=None, softmax_threads=None, splits=None, dropout=None, threads=None, method="closed"):
    """Exact HBM and SRAM traffic of `algorithm` on `workload`.

    `sram_bytes` (int or a size such as "192KiB") sets the paper's default tiles for fa1, fa2,
    flash_bwd and decode; explicit `block_rows`/`block_cols` are checked against it. naive and
    naive_bwd take `matmul_tile` (and naive `softmax_threads`); decode takes `splits`; unfused and
    unfused_bwd take `dropout` (default True); fa2_fast takes `threads` = (thread_rows, thread_cols)
    and explicit blocks, defaulting to the fast kernel's own (SRAM is only checked, not used to size
    its tiles). `method="trace"` walks the loop nest
    instead of evaluating the closed form (the two are equal; the tests prove it).

    >>> r = count("fa2", Workload(seq_len=4096, head_dim=64), sram_bytes="192KiB")
    >>> r.block_rows, r.block_cols, r.hbm_read_bytes      # (N·d + Tr·2·N·d)·2 B, Tr = 64
    (64, 384, 67633152)
    """
    if method not in ("closed", "trace"):
        raise ValueError(f"method must be 'closed' or 'trace', got {method!r}")
    if sram_bytes is not None:
        sram_bytes = parse_size(sram_bytes, "sram_bytes")
    mapping = make_mapping(algorithm, workload, sram_bytes, block_rows, block_cols,
                           matmul_tile, softmax_threads, splits, dropout, threads)
    schedule = SCHEDULES[algorithm]
    if method == "closed":
        traffic = schedule.closed_form(workload, mapping)
    else:
        traffic = Traffic.from_events(schedule.trace(workload, mapping))
    return Result(algorithm, workload, sram_bytes, mapping, traffic)
