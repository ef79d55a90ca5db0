"""The step-through widgets: the tile walk's byte counter and the online softmax of one row.

Expected values come from independent derivations: the paper's HBM formulas, a dense boolean causal
mask (which tiles hold an unmasked score), and a pure-Python float64 softmax of each prefix.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from course import tile_walk as tw  # noqa: E402
from simlib import Workload, count, load_preset  # noqa: E402

H200_SRAM = load_preset("h200").sram_bytes
FP32 = 4  # the row statistics ℓ, m, L


def _blocks(n, b):
    return [min(b, n - s) for s in range(0, n, b)]


def _brute_tiles(n, br, bc, causal):
    """(visited, diagonal) tile sets from the dense mask: query q sees key k ≤ q (causal)."""
    mask = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
    visited, diagonal = set(), set()
    for i, r0 in enumerate(range(0, n, br)):
        for j, c0 in enumerate(range(0, n, bc)):
            tile = mask[r0 : r0 + br, c0 : c0 + bc]
            if tile.any():
                visited.add((i, j))
                if not tile.all():
                    diagonal.add((i, j))
    return visited, diagonal


WALK_CASES = [
    ("fa2", 256, {"sram_bytes": H200_SRAM}),
    ("fa2", 300, {"block_rows": 128, "block_cols": 128}),
    ("fa2", 1000, {"block_rows": 96, "block_cols": 160}),
    ("fa1", 1024, {"sram_bytes": H200_SRAM}),
    ("fa1", 300, {"block_rows": 64, "block_cols": 128}),
    ("fa1", 1000, {"block_rows": 96, "block_cols": 160}),
    ("naive", 300, {}),
    ("naive", 300, {"matmul_tile": 128}),
    ("naive", 260, {"matmul_tile": 32}),  # T < d: the matmuls chunk the head dimension
]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(("algorithm", "n", "options"), WALK_CASES)
def test_last_step_of_the_walk_equals_count(algorithm, n, options, causal):
    w = Workload(n, 64, causal=causal)
    walk = tw.tile_walk(algorithm, w, **options)
    r = count(algorithm, w, **options)
    last = walk.steps[-1]
    assert (last.read_so_far, last.write_so_far) == (r.hbm_read_bytes, r.hbm_write_bytes)
    assert sum(s.read_bytes for s in walk.steps) == last.read_so_far
    assert all(a.read_so_far <= b.read_so_far for a, b in zip(walk.steps, walk.steps[1:]))


def test_walk_counts_the_batch_heads_too():
    w = Workload(300, 64, batch=2, heads=3, causal=True)
    walk = tw.tile_walk("fa2", w, block_rows=128, block_cols=64)
    assert walk.steps[-1].read_so_far == count("fa2", w, block_rows=128, block_cols=64).hbm_read_bytes


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("n", "br", "bc"), [(300, 128, 128), (1000, 96, 160), (1024, 64, 454)])
def test_tiled_walks_visit_exactly_the_tiles_with_an_unmasked_score(n, br, bc, causal):
    visited, diagonal = _brute_tiles(n, br, bc, causal)
    w = Workload(n, 64, causal=causal)
    for algorithm in ("fa1", "fa2"):
        steps = tw.tile_walk(algorithm, w, block_rows=br, block_cols=bc).steps
        tiles = [s.tile for s in steps if s.tile is not None]
        assert len(tiles) == len(set(tiles)) and set(tiles) == visited
    status = tw.tile_status(n, br, bc, causal)
    assert {(i, j) for (i, j), s in np.ndenumerate(status) if s == tw.DIAGONAL} == diagonal
    assert {(i, j) for (i, j), s in np.ndenumerate(status) if s != tw.SKIPPED} == visited


def test_fa2_steps_follow_the_loop_nest_by_hand():
    """Outer loop over Q blocks: Q_i read at the row's first tile, K_j and V_j at every tile, O_i and
    L_i written at the row's last tile. Causal: row i sees key blocks up to its last row's."""
    n, d, br, bc = 300, 64, 128, 96
    w = Workload(n, d, causal=True)
    steps = tw.tile_walk("fa2", w, block_rows=br, block_cols=bc).steps
    rows, cols = _blocks(n, br), _blocks(n, bc)
    expected = []
    for i, r in enumerate(rows):
        last_row = i * br + r - 1
        seen = [j for j in range(len(cols)) if j * bc <= last_row]
        for j in seen:
            read = (r * d if j == seen[0] else 0) + 2 * cols[j] * d
            write = r * d * 2 + r * FP32 if j == seen[-1] else 0
            expected.append(((i, j), read * 2, write))
    assert [(s.tile, s.read_bytes, s.write_bytes) for s in steps] == expected
    assert steps[0].loaded == ("Q_0", "K_0", "V_0") and steps[0].stored == ()  # row 0 sees key blocks 0, 1
    assert steps[1].loaded == ("K_1", "V_1") and steps[1].stored == ("O_0", "L_0")


def test_whole_walks_match_the_papers_formulas():
    n, d, e = 1000, 64, 2
    w = Workload(n, d)
    fa2 = tw.tile_walk("fa2", w, block_rows=96, block_cols=160).steps[-1]
    tr = -(-n // 96)
    assert fa2.read_so_far == (n * d + tr * 2 * n * d) * e
    fa1 = tw.tile_walk("fa1", w, block_rows=96, block_cols=160).steps[-1]
    tc = -(-n // 160)
    assert fa1.read_so_far == (2 * n * d + tc * 2 * n * d) * e + tc * 2 * n * FP32
    assert fa1.write_so_far == (n * d + tc * n * d) * e + (2 * n + tc * 2 * n) * FP32
    naive = tw.tile_walk("naive", w).steps
    assert naive[-1].read_so_far == (3 * n * d + 2 * n * n) * e
    assert naive[-1].write_so_far == (2 * n * n + n * d) * e
    assert [s.phase for s in naive] == ["qk", "softmax", "pv"]


def test_fa1_starts_by_initialising_o_l_m_in_hbm():
    w = Workload(300, 64)
    first = tw.tile_walk("fa1", w, block_rows=64, block_cols=128).steps[0]
    assert first.tile is None and first.read_bytes == 0
    assert first.write_bytes == 300 * 64 * 2 + 2 * 300 * FP32


@pytest.mark.parametrize(
    "algorithm, causal, options",
    [("fa2", True, {"block_rows": 64, "block_cols": 64}), ("naive", False, {})],
)
def test_every_shade_on_the_score_grid_is_in_the_legend(algorithm, causal, options):
    """Issue 24: overlays must not mix into shades the legend lacks. Every filled patch drawn on the
    grid, at every step of a causal FA2 walk and of naive's, has a fill (colour and alpha) that some
    legend entry shows; the bands are outlines keyed with the same style."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Patch

    walk = tw.tile_walk(algorithm, Workload(256, 64, causal=causal), **options)
    legend = {tuple(np.round(h.get_facecolor(), 3)) for h in tw._legend_handles(walk)}
    outlines = {(tuple(np.round(h.get_edgecolor(), 3)), h.get_linestyle()) for h in tw._legend_handles(walk)}
    white = tuple(np.round(to_rgba("white"), 3))
    for k in range(len(walk.steps)):
        fig = tw.draw_walk_step(walk, k)
        grid = fig.axes[0]
        for patch in grid.patches:
            if not isinstance(patch, Patch):
                continue
            fc = tuple(np.round(patch.get_facecolor(), 3))
            if fc[3] == 0:  # an outline: keyed by its edge and line style
                assert (tuple(np.round(patch.get_edgecolor(), 3)), patch.get_linestyle()) in outlines
            else:
                assert fc in legend or fc == white, f"step {k}: fill {fc} has no legend entry"
        plt.close(fig)


def test_tile_walk_refuses_what_it_cannot_walk():
    with pytest.raises(ValueError, match="algorithm"):
        tw.tile_walk("fa2_fast", Workload(256, 64))
    with pytest.raises(ValueError, match="query_len"):
        tw.tile_walk("fa2", Workload(256, 64, query_len=1), block_rows=1, block_cols=64)


def test_score_grid_ticks_at_tile_edges_and_marks_skipped_and_diagonal_tiles():
    fig, ax = plt.subplots()
    status = tw.draw_score_grid(ax, 1000, 128, 160, causal=True)
    edges_rows = list(range(0, 1000, 128)) + [1000]
    edges_cols = list(range(0, 1000, 160)) + [1000]
    for ticks, edges in ((ax.get_yticks, edges_rows), (ax.get_xticks, edges_cols)):
        assert sorted({*ticks(), *ticks(minor=True)}) == edges  # major (labelled) and minor ticks
        assert {0, 1000} <= set(ticks())
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == int((status == tw.SKIPPED).sum()) > 0
    assert status.shape == (len(edges_rows) - 1, len(edges_cols) - 1)
    plt.close(fig)
    fig, ax = plt.subplots()
    assert (tw.draw_score_grid(ax, 256, 64, 64) == tw.FULL).all() and not ax.patches
    plt.close(fig)


@pytest.mark.parametrize("algorithm", tw.WALKS)
def test_walk_figures_draw(algorithm):
    w = Workload(300, 64, causal=True)
    walk = tw.tile_walk(
        algorithm, w, **({"matmul_tile": 128} if algorithm == "naive" else {"sram_bytes": H200_SRAM})
    )
    plt.close(tw.draw_walk_step(walk, len(walk.steps) // 2))
    fig = tw.draw_walk_overview(walk)
    assert len(fig.axes) == 4
    plt.close(fig)
    assert len(walk.frame()) == len(walk.steps)


def test_stepper_draws_before_the_first_move_and_on_every_move():
    pytest.importorskip("ipywidgets")
    from course.stepper import stepper

    drawn = []

    def draw(k):
        drawn.append(k)
        return plt.figure()

    box = stepper(5, draw, start=1)
    assert drawn == [1]
    play, slider = box.children[0].children
    slider.value = 5
    assert drawn == [1, 4] and slider.max == play.max == 5
    with pytest.raises(ValueError, match="start"):
        stepper(3, draw, start=3)


# --- the online softmax of one row ---------------------------------------------------------------

from course import online_softmax_steps as oss  # noqa: E402


def _softmax_py(row):
    """Exact softmax in float64, pure Python: shift by the maximum of the finite entries, math.fsum."""
    import math

    finite = [x for x in row if x != -math.inf]
    top = max(finite)
    e = [0.0 if x == -math.inf else math.exp(x - top) for x in row]
    total = math.fsum(e)
    return np.array([t / total for t in e])


def _rows():
    rng = np.random.default_rng(16)
    plain = rng.standard_normal(300)
    shifted = 1000.0 + 3.0 * rng.standard_normal(300)  # exp overflows even in float64 without the max
    rising = np.linspace(-5, 5, 300) + 0.1 * rng.standard_normal(300)  # the max moves up every tile
    masked = plain.copy()
    masked[:150] = -np.inf  # the first two tiles of 64 entirely masked
    return {"plain": plain, "shifted by 1000": shifted, "rising": rising, "first 150 masked": masked}


@pytest.mark.parametrize("name", list(_rows()))
@pytest.mark.parametrize("block", [64, 37, 300, 1])
def test_every_step_is_the_exact_softmax_of_the_prefix(name, block):
    row = _rows()[name]
    steps = oss.online_softmax_steps(row, block)
    assert len(steps) == -(-len(row) // block) and steps[-1].keys == len(row)
    for s in steps:
        prefix = row[: s.keys]
        if np.isneginf(prefix).all():
            assert s.m == -np.inf and s.ell == 0.0 and not s.weights.any()
            continue
        np.testing.assert_allclose(s.weights, _softmax_py(prefix), rtol=1e-12, atol=1e-300)
        assert s.m == max(prefix) and s.ell == pytest.approx(
            float(np.exp(prefix - max(prefix)).sum()), rel=1e-12
        )
    np.testing.assert_allclose(steps[-1].weights, _softmax_py(row), rtol=1e-12, atol=1e-300)


def test_outputs_converge_to_softmax_times_v_and_the_rescale_factor_is_e_to_the_max_change():
    rng = np.random.default_rng(3)
    row, v = 8.0 * rng.standard_normal(200), rng.standard_normal((200, 16))
    steps = oss.online_softmax_steps(row, 50, values=v)
    for s in steps:
        np.testing.assert_allclose(s.output, _softmax_py(row[: s.keys]) @ v[: s.keys], rtol=1e-11, atol=1e-14)
    for before, after in zip(steps, steps[1:]):
        assert after.rescale == pytest.approx(np.exp(before.m - after.m), rel=1e-15)
    assert steps[0].rescale == 0.0  # e^(−inf − m_1): the empty sum is not carried


def test_a_row_that_is_not_one_hot_still_matches():
    """Logits ×100 with a spread of 0.01 (before scaling): several weights stay non-negligible."""
    rng = np.random.default_rng(5)
    row = 100.0 * (1.0 + 0.01 * rng.standard_normal(256))
    exact = _softmax_py(row)
    assert (exact > 1e-3).sum() >= 10  # not one-hot
    np.testing.assert_allclose(oss.online_softmax_steps(row, 64)[-1].weights, exact, rtol=1e-12)


def test_online_softmax_refuses_bad_rows():
    with pytest.raises(ValueError, match="scores"):
        oss.online_softmax_steps(np.zeros((2, 2)), 4)
    with pytest.raises(ValueError, match="scores"):
        oss.online_softmax_steps(np.array([0.0, np.nan]), 4)
    with pytest.raises(ValueError, match="block"):
        oss.online_softmax_steps(np.zeros(4), 0)
    with pytest.raises(ValueError, match="values"):
        oss.online_softmax_steps(np.zeros(4), 2, values=np.zeros((3, 2)))


def test_softmax_figures_draw():
    row = _rows()["first 150 masked"]
    steps = oss.online_softmax_steps(row, 64)
    for k in (0, 2, len(steps) - 1):
        plt.close(oss.draw_softmax_step(steps, k, exact=_softmax_py(row)))
    fig = oss.draw_softmax_overview(steps, exact=_softmax_py(row))
    assert len(fig.axes) == 4
    plt.close(fig)


def test_walks_widget_draws_the_chosen_walk_at_once(monkeypatch):
    pytest.importorskip("ipywidgets")
    drawn = []

    def fake_draw(walk, k, axes=None):
        drawn.append((walk.algorithm, k))
        return plt.figure()

    monkeypatch.setattr(tw, "draw_walk_step", fake_draw)
    w = Workload(256, 64)
    walks = {"fa2": tw.tile_walk("fa2", w, block_rows=128, block_cols=128), "naive": tw.tile_walk("naive", w)}
    box = tw.walks_widget(walks)
    assert drawn == [("fa2", 0)]
    box.children[0].value = "naive"
    assert drawn == [("fa2", 0), ("naive", 0)] and box.children[1].children[0].children[1].max == 3
    with pytest.raises(ValueError, match="walks"):
        tw.walks_widget({})


@pytest.mark.parametrize("module", [tw, oss], ids=lambda m: m.__name__)
def test_worked_numbers_in_the_docstrings_run(module):
    import doctest

    failed, attempted = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert attempted >= 1 and failed == 0
