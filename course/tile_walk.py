"""The tile walk: naive, FA1 and FA2 over the N×N score grid, one step at a time, with the HBM bytes so far.

`draw_score_grid` draws the grid of Br×Bc tiles of S (causal: fully masked tiles hatched as skipped,
diagonal tiles, visited whole and masked inside, marked). `tile_walk` turns a schedule's own trace
(`SCHEDULES[name].trace`, the loop nest `count(..., method="trace")` walks) into steps: each array
entry of a vectorised event belongs to one tile of the inner loop, each scalar event to the first
(before the arrays) or last (after them) tile of its outer iteration. So the byte counter of the last
step is the trace's total, which `count()`'s closed form equals.
Worked number: N = 300, d = 64, fp16, fa2 with Br = Bc = 128 (Tr = Tc = 3) has 9 steps; after the
first (Q_0, K_0, V_0 loaded) 3·128·64·2 B = 49,152 B have been read; at the end
(Nd + Tr·2Nd)·2 B = 268,800 B, which `count("fa2", ...)` says too.

>>> from simlib import Workload
>>> walk = tile_walk("fa2", Workload(300, 64), block_rows=128, block_cols=128)
>>> len(walk.steps), walk.steps[0].read_so_far, walk.steps[-1].read_so_far, walk.result.hbm_read_bytes
(9, 49152, 268800, 268800)
"""

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simlib.counts import Result, count
from simlib.schedules.visits import key_blocks_seen, query_blocks_seen, starts
from simlib.tiling import Tiling, block_sizes
from simlib.traffic import Event, tensor_bytes
from simlib.workload import Workload

#: What a tile of the score grid is under the mask: visited whole, visited but partly masked, skipped.
FULL, DIAGONAL, SKIPPED = "full", "diagonal", "skipped"
WALKS = ("naive", "fa1", "fa2")
DIAGONAL_TINT = (0.58, 0.40, 0.74, 0.15)  # #9467bd, translucent


def _edges(n: int, block: int) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(block_sizes(n, block))))


def tile_status(seq_len: int, block_rows: int, block_cols: int, causal: bool = False) -> np.ndarray:
    """Tr×Tc array of FULL / DIAGONAL / SKIPPED for the score grid (self-attention, causal aligned).

    Skipped is what the tiled schedules skip (`simlib.schedules.visits.key_blocks_seen`); a visited
    tile is DIAGONAL when its last key lies beyond its first query's reach (masked inside).

    >>> tile_status(10, 4, 4, causal=True).tolist()
    [['diagonal', 'skipped', 'skipped'], ['full', 'diagonal', 'skipped'], ['full', 'full', 'diagonal']]
    """
    w = Workload(seq_len, 1, causal=causal)
    tiling = Tiling(block_rows, block_cols, seq_len, seq_len)
    rows, cols = _edges(seq_len, block_rows), _edges(seq_len, block_cols)
    status = np.full((len(rows) - 1, len(cols) - 1), FULL, dtype=object)
    for i in range(len(rows) - 1):
        seen = key_blocks_seen(w, tiling, int(rows[i + 1]) - 1)
        status[i, ~seen] = SKIPPED
        status[i, seen & (cols[1:] - 1 > rows[i]) & causal] = DIAGONAL
    return status


def _tile_ticks(ax, edges: np.ndarray, axis: str, label: str, max_labels: int) -> None:
    """Ticks at every tile edge, labels on at most about `max_labels` of them: every k-th edge, the first
    and the last, none closer than span / (1.5·max_labels) to the next label (a ragged last tile)."""
    every = max(1, -(-(len(edges) - 1) // max_labels))
    gap = edges[-1] / (1.5 * max_labels)
    shown = [0]
    for k in range(every, len(edges) - 1, every):
        if edges[k] - edges[shown[-1]] >= gap and edges[-1] - edges[k] >= gap:
            shown.append(k)
    shown.append(len(edges) - 1)
    set_ticks = ax.set_xticks if axis == "x" else ax.set_yticks
    set_ticks(edges, minor=True)
    set_ticks(edges[shown], [str(int(edges[k])) for k in shown])
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)


def draw_score_grid(ax, seq_len, block_rows, block_cols, causal=False, max_labels=8):
    """The N×N score matrix S cut into Br×Bc tiles on `ax` (queries down, keys across).

    Ticks sit at the tile edges (labels on about `max_labels` of them). Causal: tiles the schedules skip are
    grey and hatched, diagonal tiles (visited whole, masked inside) carry a dashed outline and the
    mask's diagonal. Returns the Tr×Tc status array (`tile_status`).
    """
    from matplotlib.patches import Rectangle

    rows, cols = _edges(seq_len, block_rows), _edges(seq_len, block_cols)
    status = tile_status(seq_len, block_rows, block_cols, causal)
    for (i, j), kind in np.ndenumerate(status):
        x, y, wd, ht = cols[j], rows[i], cols[j + 1] - cols[j], rows[i + 1] - rows[i]
        if kind == SKIPPED:
            ax.add_patch(Rectangle((x, y), wd, ht, facecolor="0.9", edgecolor="0.6", hatch="///", lw=0))
        elif kind == DIAGONAL:
            ax.add_patch(Rectangle((x, y), wd, ht, fc=DIAGONAL_TINT, ec="#9467bd", ls="--", lw=1.4, zorder=3))
    if causal:
        ax.plot([0, seq_len], [0, seq_len], color="#9467bd", lw=1, label="causal mask edge (key = query)")
    for r in rows:
        ax.axhline(r, color="black", lw=0.4)
    for c in cols:
        ax.axvline(c, color="black", lw=0.4)
    ax.set_xlim(0, seq_len)
    ax.set_ylim(seq_len, 0)
    ax.set_aspect("equal")
    ax.grid(False)
    _tile_ticks(ax, cols, "x", f"key index (K/V rows, Bc = {block_cols})", max_labels)
    _tile_ticks(ax, rows, "y", f"query index (Q rows, Br = {block_rows})", max_labels)
    return status


@dataclass(frozen=True)
class WalkStep:
    """One step of a walk: the score tile (i, j) it works on (None: none), what moves, what sits on chip."""

    index: int
    phase: str  # the trace's phase group: "init", "tiles" (fa1, fa2); naive: "qk", "softmax", "pv"
    tile: tuple[int, int] | None  # (Q block i, K/V block j); naive softmax: (row block i, -1)
    loaded: tuple[str, ...]  # HBM → chip in this step
    stored: tuple[str, ...]  # chip → HBM in this step
    sram: tuple[str, ...]  # what sits in shared memory
    registers: tuple[str, ...]
    read_bytes: int  # HBM bytes read in this step (all B·H units)
    write_bytes: int
    read_so_far: int  # HBM bytes read up to and including this step
    write_so_far: int


@dataclass(frozen=True)
class TileWalk:
    """The steps of one schedule over the score grid of `workload`, with `count()`'s result beside them."""

    algorithm: str
    workload: Workload
    result: Result  # the closed form the last step's counter must equal
    block_rows: int  # the grid's tiles (naive: its matmul tile T, or N for T = ∞)
    block_cols: int
    steps: tuple[WalkStep, ...] = field(repr=False)

    def frame(self) -> pd.DataFrame:
        """One row per step: tile, loads, stores and HBM bytes (this step and so far)."""
        return pd.DataFrame(
            [
                {
                    "step": s.index + 1,
                    "phase": s.phase,
                    "tile (i, j)": s.tile,
                    "loaded": ", ".join(s.loaded),
                    "stored": ", ".join(s.stored),
                    "read (B)": s.read_bytes,
                    "written (B)": s.write_bytes,
                    "read so far (B)": s.read_so_far,
                    "written so far (B)": s.write_so_far,
                }
                for s in self.steps
            ]
        ).set_index("step")


@dataclass(frozen=True)
class _Group:
    """One outer iteration of a trace: its steps' tiles and how an array event splits over them."""

    phase: str
    tiles: list[tuple[int, int] | None]
    split: str  # "entries" (one per step), "cols" (rows of a 2-D array: naive qk), "chunks" (columns:
    # naive pv), "rows" (naive softmax: per query row, summed per row block)
    row_edges: np.ndarray | None = None


#: The event that opens each outer iteration of a schedule's trace (its loop nest's first event).
GROUP_STARTS = {
    "fa2": {("HBM", "read", "Q", "load_q")},
    "fa1": {("HBM", "write", "O", "init"), ("HBM", "read", "K", "load_kv")},
    "naive": {("HBM", "read", "Q", "qk"), ("HBM", "read", "S", "softmax"), ("HBM", "read", "P", "pv")},
}


def _split_groups(events: Iterable[Event], starts_group: set) -> Iterator[list[Event]]:
    group: list[Event] = []
    for event in events:
        if (
            event.level == "HBM"
            and (event.level, event.op, event.tensor, event.phase) in starts_group
            and group
        ):
            yield group
            group = []
        if event.level == "HBM":
            group.append(event)
    if group:
        yield group


def _groups(algorithm: str, workload: Workload, tiling: Tiling, tile: int) -> Iterator[_Group]:
    """The outer iterations of `algorithm`'s trace, in the trace's order (visits as the trace decides)."""
    nq, nk = workload.nq, workload.nk
    if algorithm == "fa2":
        last = starts(block_sizes(nq, tiling.block_rows)) + block_sizes(nq, tiling.block_rows) - 1
        for i, row in enumerate(last):
            seen = np.flatnonzero(key_blocks_seen(workload, tiling, int(row)))
            yield _Group("tiles", [(i, int(j)) for j in seen], "entries")
    elif algorithm == "fa1":
        yield _Group("init", [None], "entries")
        for j, first in enumerate(starts(block_sizes(nk, tiling.block_cols))):
            seen = np.flatnonzero(query_blocks_seen(workload, tiling, int(first)))
            yield _Group("tiles", [(int(i), j) for i in seen], "entries")
    else:
        tr, tc = len(block_sizes(nq, tile)), len(block_sizes(nk, tile))
        for i in range(tr):
            yield _Group("qk", [(i, j) for j in range(tc)], "cols")
        yield _Group("softmax", [(i, -1) for i in range(tr)], "rows", _edges(nq, tile)[:-1])
        for i in range(tr):
            yield _Group("pv", [(i, j) for j in range(tc)], "chunks")


def _per_step(elements: object, group: _Group) -> np.ndarray | None:
    """An event's elements split over the group's steps, or None for a once-per-iteration event."""
    if not isinstance(elements, np.ndarray):
        return None
    if group.split == "entries":
        return elements
    if group.split == "cols":
        return elements.reshape(len(group.tiles), -1).sum(axis=1)
    if group.split == "chunks":
        return elements.sum(axis=0) if elements.ndim == 2 else None
    assert group.row_edges is not None
    return np.add.reduceat(elements, group.row_edges)


def _name(tensor: str, tile: tuple[int, int] | None) -> str:
    symbol = {"l": "ℓ"}.get(tensor, tensor)
    if tile is None:
        return f"{symbol} (all rows)"
    i, j = tile
    if tensor in ("K", "V"):
        return f"{symbol}_{j}"
    if tensor in ("S", "P"):
        return f"{symbol}_{i},{j}" if j >= 0 else f"{symbol} rows of block {i}"
    return f"{symbol}_{i}"


def _onchip(result: Result, tile: tuple[int, int] | None, level: str) -> tuple[str, ...]:
    """The schedule's own working set (`Result.working_set`) with the step's block numbers filled in."""
    if tile is None or result.working_set is None or result.algorithm == "naive":
        return ()
    i, j = tile
    return tuple(
        f"{name.replace('_ij', f'_{i},{j}').replace('_i', f'_{i}').replace('_j', f'_{j}')} "
        f"({size / 1024:g} KiB)"
        for name, where, size in result.working_set.items
        if where == level
    )


def _naive_sram(result: Result, phase: str, tile: tuple[int, int]) -> tuple[str, ...]:
    t = result.block_rows or result.mapping.as_dict()["matmul_tile"]
    i, j = tile
    if phase == "softmax":
        return ("one row of S at a time (no tile modelled)",)
    a, b = ("Q", "K") if phase == "qk" else ("P", "V")
    chunk = f"{t}×{t} chunks" if t else "whole"
    return (f"{a}_{i}, {b}_{j} ({chunk}: the matmul's A and B tiles)",)


def tile_walk(algorithm: str, workload: Workload, **count_options: object) -> TileWalk:
    """The steps of `algorithm` ("naive", "fa1", "fa2") on `workload`, tiles and mapping as `count()`
    builds them from `count_options` (sram_bytes, hardware, block_rows, block_cols, matmul_tile, ...).

    The HBM bytes of each step come from the schedule's trace (see the module docstring); the last
    step's `read_so_far` and `write_so_far` equal `result.hbm_read_bytes` and `hbm_write_bytes`.
    """
    if algorithm not in WALKS:
        raise ValueError(f"algorithm must be one of {', '.join(WALKS)}, got {algorithm!r}")
    if workload.nq != workload.nk:
        raise ValueError(f"query_len must equal seq_len for a tile walk, got {workload.nq} and {workload.nk}")
    result = count(algorithm, workload, **count_options)  # type: ignore[arg-type]
    mapping = result.mapping
    if algorithm == "naive":
        tile = mapping.as_dict()["matmul_tile"] or workload.seq_len
        assert isinstance(tile, int)
        tiling = Tiling(tile, tile, workload.nq, workload.nk)
    else:
        assert isinstance(mapping, Tiling)
        tiling, tile = mapping, 0
    units, eb = result.units, workload.element_bytes
    groups = list(_groups(algorithm, workload, tiling, tile))
    traced = list(_split_groups(result.schedule.trace(workload, mapping), GROUP_STARTS[algorithm]))
    if len(traced) != len(groups):
        raise RuntimeError(f"{algorithm}'s trace has {len(traced)} outer iterations, the walk {len(groups)}")
    steps: list[WalkStep] = []
    read_total = write_total = 0
    for group, events in zip(groups, traced):
        n = len(group.tiles)
        moved = {op: np.zeros(n, dtype=object) for op in ("read", "write")}
        names: dict[str, list[list[str]]] = {op: [[] for _ in range(n)] for op in ("read", "write")}
        arrays_seen = False
        for event in events:
            per = _per_step(event.elements, group)
            if per is None:  # once per iteration: the first step if before the tiles, else the last
                per = np.zeros(n, dtype=np.int64)
                per[-1 if arrays_seen else 0] = np.sum(event.elements)
            else:
                arrays_seen = True
            moved[event.op] += per.astype(np.int64).astype(object) * tensor_bytes(event.tensor, eb) * units
            for nonzero in np.flatnonzero(per):
                names[event.op][nonzero].append(_name(event.tensor, group.tiles[nonzero]))
        for k, t in enumerate(group.tiles):
            read_total += int(moved["read"][k])
            write_total += int(moved["write"][k])
            steps.append(
                WalkStep(
                    index=len(steps),
                    phase=group.phase,
                    tile=t,
                    loaded=tuple(dict.fromkeys(names["read"][k])),
                    stored=tuple(dict.fromkeys(names["write"][k])),
                    sram=_naive_sram(result, group.phase, t)
                    if algorithm == "naive" and t is not None
                    else _onchip(result, t, "SRAM"),
                    registers=_onchip(result, t, "registers"),
                    read_bytes=int(moved["read"][k]),
                    write_bytes=int(moved["write"][k]),
                    read_so_far=read_total,
                    write_so_far=write_total,
                )
            )
    return TileWalk(algorithm, workload, result, tiling.block_rows, tiling.block_cols, tuple(steps))


#: Colours of the walk's overlays (the naive schedule's finished tiles went to HBM, the tiled ones' were discarded).
DONE = {
    "naive": ("#e6a57e", "S/P tiles written to or read back from HBM"),
    "tiled": ("#8fbf8f", "done (S, P discarded)"),
}
#: The trace's phase groups as the titles name them.
PHASES = {
    "init": "initialise O, ℓ, m in HBM",
    "tiles": "tile",
    "qk": "S = QKᵀ",
    "softmax": "softmax",
    "pv": "O = PV",
}
SHORT_PHASES = {"init": " (init O, ℓ, m)", "qk": " (S = QKᵀ)", "softmax": " (softmax)", "pv": " (O = PV)"}
CURRENT, Q_BAND, KV_BAND = "#d62728", "#ff7f0e", "#1f77b4"
#: The on-chip blocks' bands, drawn and keyed alike (an outline: no shade the legend lacks).
BAND_STYLE = {
    "q": {"fc": "none", "ec": Q_BAND, "lw": 2.6},
    "kv": {"fc": "none", "ec": KV_BAND, "lw": 2.6, "ls": "--"},
}
#: What the row band (orange) and the column band (blue) hold on chip: naive's matmul operands change per pass.
BANDS = {
    "naive": (
        "row block on chip: Q_i (S = QKᵀ), S rows (softmax), P_i (O = PV)",
        "K_j (S = QKᵀ) or V_j (O = PV) on chip",
    ),
    "tiled": ("Q block on chip", "K/V block on chip"),
}


def _mb(b: int) -> str:
    return f"{b:,} B ({b / 1e6:.3f} MB)"


def _overlay(ax, walk: TileWalk, k: int) -> None:
    """Tiles finished before step k (of the current phase, naive), the bands in SRAM, the tile now."""
    from matplotlib.patches import Rectangle

    n = walk.workload.seq_len
    rows, cols = _edges(n, walk.block_rows), _edges(n, walk.block_cols)
    step = walk.steps[k]
    colour = DONE["naive" if walk.algorithm == "naive" else "tiled"][0]
    for s in walk.steps[:k]:
        if s.tile is None or (walk.algorithm == "naive" and s.phase != step.phase):
            continue
        i, j = s.tile
        x0, x1 = (0, n) if j < 0 else (cols[j], cols[j + 1])  # naive softmax: a whole block of rows
        ax.add_patch(Rectangle((x0, rows[i]), x1 - x0, rows[i + 1] - rows[i], fc=colour, ec="none"))
    if step.tile is None:
        return
    i, j = step.tile
    # The bands are outlines, not translucent fills: a fill over the tiles done would mix into shades
    # that the legend does not show.
    ax.add_patch(Rectangle((0, rows[i]), n, rows[i + 1] - rows[i], **BAND_STYLE["q"]))
    if j < 0:  # naive softmax: a block of rows
        return
    ax.add_patch(Rectangle((cols[j], 0), cols[j + 1] - cols[j], n, **BAND_STYLE["kv"]))
    ax.add_patch(
        Rectangle(
            (cols[j], rows[i]), cols[j + 1] - cols[j], rows[i + 1] - rows[i], fc=CURRENT, ec="black", lw=1.2
        )
    )


#: What the register line says where a schedule models nothing in registers.
NO_REGISTERS = {"naive": "none modelled", "fa1": "none: Algorithm 1 keeps S_ij, P_ij in SRAM", "fa2": ""}


def _where(s: WalkStep) -> str:
    """'S = QKᵀ, tile (i, j) = (1, 2)', 'softmax, rows of block 3', 'init O, ℓ, m'."""
    phase = PHASES.get(s.phase, s.phase)
    if s.tile is None:
        return phase
    i, j = s.tile
    return f"{phase}, rows of block {i}" if j < 0 else f"{phase} (i, j) = ({i}, {j})"


def _caption(walk: TileWalk, k: int) -> str:
    s, r = walk.steps[k], walk.result
    on_chip = "\n".join(f"    {x}" for x in s.sram) or "    —"
    regs = "\n".join(f"    {x}" for x in s.registers) or f"    — ({NO_REGISTERS[walk.algorithm]})"
    return (
        f"step {k + 1} of {len(walk.steps)}: {_where(s)}\n\n"
        f"loaded from HBM:  {', '.join(s.loaded) or '—'}\n"
        f"stored to HBM:    {', '.join(s.stored) or '—'}\n\n"
        f"in shared memory (SRAM):\n{on_chip}\n"
        f"in registers:\n{regs}\n\n"
        f"HBM read so far:    {_mb(s.read_so_far)}\n"
        f"HBM written so far: {_mb(s.write_so_far)}\n"
        f"at the end (count()): {_mb(r.hbm_read_bytes)} read,\n"
        f"                      {_mb(r.hbm_write_bytes)} written"
    )


def _title(walk: TileWalk) -> str:
    w = walk.workload
    mask = ", causal" if w.causal else ""
    return f"{walk.algorithm}: N = {w.seq_len}, d = {w.head_dim}, {w.dtype}{mask}, tiles {walk.block_rows}×{walk.block_cols}"


def _legend_handles(walk: TileWalk) -> list:
    """The colour key of the score grid's overlays (and, causal, of skipped and diagonal tiles)."""
    from matplotlib.patches import Patch

    kind = "naive" if walk.algorithm == "naive" else "tiled"
    done, (row_band, col_band) = DONE[kind], BANDS[kind]
    handles = [
        Patch(fc=CURRENT, label="tile computed now"),
        Patch(**BAND_STYLE["q"], label=row_band),
        Patch(**BAND_STYLE["kv"], label=col_band),
        Patch(fc=done[0], label=done[1]),
    ]
    if walk.workload.causal:
        handles += [
            Patch(fc="0.9", ec="0.6", hatch="///", label="skipped (fully masked)"),
            Patch(fc=DIAGONAL_TINT, ec="#9467bd", ls="--", label="diagonal (masked inside)"),
        ]
    return handles


def draw_walk_step(walk: TileWalk, k: int, axes=None):
    """Step k of `walk`: the score grid with the tiles done, the Q block (orange) and K/V block (blue)
    on chip and the tile computed now (red), beside a panel listing loads, stores, what sits in SRAM
    and registers, and the HBM bytes so far. Returns the figure."""
    import matplotlib.pyplot as plt

    if axes is None:
        fig, axes = plt.subplots(
            1, 2, figsize=(12.5, 5.6), gridspec_kw={"width_ratios": [1, 1.15]}, layout="constrained"
        )
    grid, text = axes
    draw_score_grid(grid, walk.workload.seq_len, walk.block_rows, walk.block_cols, walk.workload.causal)
    _overlay(grid, walk, k)
    grid.set_title(_title(walk), fontsize=10)
    text.axis("off")
    text.text(0, 1, _caption(walk, k), va="top", ha="left", fontsize=9, transform=text.transAxes)
    text.legend(handles=_legend_handles(walk), loc="lower left", fontsize=8.5, frameon=False)
    return grid.figure


def default_picks(walk: TileWalk) -> list[int]:
    """The steps an overview shows: first, two inside and last; naive: the middle step of each pass
    (S = QKᵀ, softmax, O = PV) and the last, so that every pass is seen.

    >>> from simlib import Workload
    >>> default_picks(tile_walk("naive", Workload(300, 64), matmul_tile=128))  # 9 + 3 + 9 steps
    [4, 10, 16, 20]
    """
    n = len(walk.steps)
    if walk.algorithm != "naive":
        return sorted({0, n // 3, (2 * n) // 3, n - 1})
    phases = [s.phase for s in walk.steps]
    return sorted({*(phases.index(p) + phases.count(p) // 2 for p in dict.fromkeys(phases)), n - 1})


def draw_walk_overview(walk: TileWalk, picks: Sequence[int] | None = None):
    """Small multiples of chosen steps (default: `default_picks`) with the HBM bytes so far: the static
    view for HTML exports and slides, where widgets do not render. Returns the figure."""
    import matplotlib.pyplot as plt

    n = len(walk.steps)
    picks = list(picks) if picks is not None else default_picks(walk)
    fig, axes = plt.subplots(
        1, len(picks), figsize=(3.6 * len(picks), 4.6), squeeze=False, layout="constrained"
    )
    for ax, k in zip(axes[0], picks):
        draw_score_grid(ax, walk.workload.seq_len, walk.block_rows, walk.block_cols, walk.workload.causal, 4)
        _overlay(ax, walk, k)
        s = walk.steps[k]
        ax.set_title(
            f"step {k + 1}/{n}{SHORT_PHASES.get(s.phase, '')}: read {s.read_so_far / 1e6:.3f} MB,\n"
            f"written {s.write_so_far / 1e6:.3f} MB",
            fontsize=9,
        )
    handles = _legend_handles(walk)
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 3), fontsize=8.5)
    fig.suptitle(
        _title(walk) + f"; at the end count() says {walk.result.hbm_read_bytes / 1e6:.3f} MB read, "
        f"{walk.result.hbm_write_bytes / 1e6:.3f} MB written",
        fontsize=10.5,
    )
    return fig


def walk_widget(walk: TileWalk, start: int = 0):
    """Play button and slider over the steps of `walk`, redrawing `draw_walk_step`; shows `start` at once."""
    from .stepper import stepper

    name = f"tile walk: {_title(walk)}"
    return stepper(
        len(walk.steps), lambda k: draw_walk_step(walk, k), start=start, description="step", name=name
    )


def walks_widget(walks: "dict[str, TileWalk]"):
    """A drop-down over named walks above `walk_widget` of the chosen one (built and drawn on first
    choice, kept afterwards: switching back shows it where it was left)."""
    import ipywidgets as widgets

    names = list(walks)
    if not names:
        raise ValueError("walks must name at least one TileWalk")
    choice = widgets.Dropdown(options=names, value=names[0], description="schedule")
    built = {names[0]: walk_widget(walks[names[0]])}
    box = widgets.VBox([choice, built[names[0]]])

    def switch(change) -> None:
        name = change["new"]
        if name not in built:
            built[name] = walk_widget(walks[name])
        box.children = (choice, built[name])

    choice.observe(switch, names="value")
    return box
