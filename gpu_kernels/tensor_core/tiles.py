"""Tiles in shared memory for the tensor-core kernels: the swizzled layout and the cp.async copier.

A tile is ROWS × COLS 16-bit elements stored row by row (COLS a multiple of 64). Its 16-byte chunk c
of row r lives at chunk c ^ (r mod 8): the 8 rows one ldmatrix matrix reads (8 consecutive rows, one
chunk column) then fall into 8 different groups of 4 banks, with no padding (a row of 128 or 256
bytes would otherwise put all 8 in the same banks: an 8-way conflict). Worked number: row 9, chunk 2
of a 64-wide tile is stored at element 9·64 + (2 ^ 1)·8 = 600.
"""

from __future__ import annotations

from numba import cuda


def _swizzled(row, chunk, cols):
    """Element index of 16-byte chunk `chunk` of row `row` in a swizzled tile `cols` wide."""
    return row * cols + ((chunk ^ (row & 7)) << 3)


swizzled = cuda.jit(device=True, inline=True)(_swizzled)


def tile_copier(cp_async16, ROWS, COLS, NT, simulator, ragged_cols=False):
    """A device function: my share of the cp.async copies of a ROWS × COLS tile into shared memory.

    ``copy(smem, src, first, ld, col0, valid_rows, valid_cols, tid)`` copies rows first .. first +
    ROWS − 1 of the row-major source (row length `ld`), columns col0 .. col0 + COLS − 1. Thread t takes
    chunks t, t + NT, ... in row-major order (consecutive threads read consecutive 16 bytes: coalesced).
    Rows at or past `valid_rows` and columns at or past `valid_cols` are zero-filled by the copy itself
    (fewer source bytes; none from a row past the end, whose source address is the tile's first row).
    Returns (global bytes read, shared bytes written): what the counting builds add up.

    ``ragged_cols=False`` (a compile-time choice: Q, K, V tiles are always d wide) leaves out the
    per-chunk column arithmetic: with it fa2_tc measured 14 % slower than without (the first tensor-core
    bench, archived tc_bench_h200.csv).
    """
    RAGGED = ragged_cols
    CH = COLS // 8
    ITERS = ROWS * CH // NT

    def copy(smem, src, first, ld, col0, valid_rows, valid_cols, tid):
        got = 0
        for it in range(ITERS):
            c = tid + NT * it
            row = c // CH
            ch = c - row * CH
            nbytes = 0
            if row < valid_rows:
                nbytes = 2 * min(8, max(0, valid_cols - 8 * ch)) if RAGGED else 16
            gidx = (first + row) * ld + col0 + 8 * ch if nbytes > 0 else first * ld + col0  # a valid address
            cp_async16(smem, swizzled(row, ch, COLS), src, gidx, nbytes)
            got += nbytes
        return got, 16 * ITERS

    return cuda.jit(device=True)(copy) if simulator else cuda.jit(device=True, inline=True)(copy)


def block_copiers(cp_async16, cp_async16z, ROWS, COLS, NT, simulator, layout=None):
    """fa2_tc's two copiers of a ROWS × COLS tile (COLS the head dim, so whole rows) through a 32-bit
    shared base (``addressed_ops``): ``full(base, sidx, src, gfirst, tid)`` for a tile of ROWS valid
    rows, and ``ragged(base, sidx, src, gfirst, valid_rows, tid)`` for the one tile of a launch's
    sequence that ends early (zero-filled past `valid_rows`). `sidx` is the tile's element offset in
    shared memory, `gfirst` the element index of its first row in `src`.

    Thread t copies chunk t mod (COLS/8) of rows t // (COLS/8) + k·NT/(COLS/8): its column and, when
    NT/(COLS/8) is a multiple of 8, its swizzle are the same in every iteration, so each copy is the
    thread's one shared and one global address plus a compile-time offset (no per-chunk index math,
    no row test in the full copier). Both return (global bytes read, shared bytes written).
    Worked number: d = 64, 128 threads: 8 chunks per row, 16 rows per iteration; a 64-row K tile is
    4 copies per thread, 64 bytes read and 64 written.

    `layout` (a device function ``(row, chunk) -> element index``) places the chunks otherwise than
    ``swizzled``: fa3_tc's wgmma tiles are chunk-major (``wgmma_ops.core_matrix_index``).
    """
    CH = COLS // 8
    jit = cuda.jit(device=True) if simulator else cuda.jit(device=True, inline=True)
    if layout is None:

        def place(row, ch):
            return swizzled(row, ch, COLS)

        layout = jit(place)
    RPI = NT // CH  # rows per iteration
    ITERS = ROWS * CH // NT

    def full(base, sidx, src, gfirst, tid):
        r0 = tid // CH
        ch = tid - r0 * CH
        for it in range(ITERS):
            row = r0 + RPI * it
            cp_async16(base, sidx + layout(row, ch), src, gfirst + row * COLS + 8 * ch)
        return 16 * ITERS, 16 * ITERS

    def ragged(base, sidx, src, gfirst, valid_rows, tid):
        r0 = tid // CH
        ch = tid - r0 * CH
        got = 0
        for it in range(ITERS):
            row = r0 + RPI * it
            ok = row < valid_rows
            nbytes = 16 if ok else 0
            gidx = gfirst + row * COLS + 8 * ch if ok else gfirst  # a valid address either way
            cp_async16z(base, sidx + layout(row, ch), src, gidx, nbytes)
            got += nbytes
        return got, 16 * ITERS

    return jit(full), jit(ragged)
